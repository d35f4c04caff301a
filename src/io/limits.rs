//! Limits on what a reader allocates for data it has not seen yet.
//!
//! Readers check every size a header claims against the bytes the input really holds before
//! allocating (a regular file's size, a stored archive member's size), and grow their buffers
//! as data arrives when the size cannot be known (standard input, a pipe). A compressed
//! archive is the one input whose real content can legitimately be far larger than the file:
//! [`Limits`] caps what its members may decompress to, so that a small zip bomb is an error
//! naming the member instead of gigabytes of memory.

/// Limits of the readers (see the [module docs](self)). The defaults suit any real data;
/// raise [`max_ratio`](Limits::max_ratio) for archives of extremely repetitive arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The members of a compressed `.npz` archive may decompress to at most `max_ratio` times
    /// the archive's size, in total (default 100: real matrices compress 1–10×, a deflate
    /// bomb about 1000×).
    pub max_ratio: u64,
    /// ... or to `min_decompressed` bytes, whichever is larger (default 16 MiB), so that
    /// small archives of zeros still read.
    pub min_decompressed: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_ratio: 100,
            min_decompressed: 16 << 20,
        }
    }
}

impl Limits {
    /// Bytes the members of a compressed archive of `archive_len` bytes may decompress to.
    pub fn decompressed(&self, archive_len: u64) -> u64 {
        self.max_ratio
            .saturating_mul(archive_len)
            .max(self.min_decompressed)
    }
}
