//! Segments: immutable sets of rows sorted by external id, each with a Hamming index over
//! its rows (ids `0..n`), written once as two files of the [format](crate::persist::format): the
//! rows (`seg-N.rows.simlsh`, kind [`FileKind::Store`]) and the index
//! (`seg-N.index.simlsh`, the index's own kind), both memory-mapped when loaded.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::rows::{Content, Pay, Rows};
use crate::error::{Error, Result};
use crate::index::{HammingIndex, IndexSpec};
use crate::persist::{FileKind, IndexFile, Writer};
use crate::signature::SignatureMatrix;
use crate::storage::Buf;

/// What loading a segment checks besides the shapes of its arrays (always checked, `O(1)`
/// in the data apart from the ids' order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Nothing more.
    Shapes,
    /// The checksums of both files (reads them once): detects damage.
    Checksums,
    /// The checksums and every invariant of the index (`O(N log N)`): also rejects a
    /// crafted file with a valid checksum.
    Full,
}

/// A blocked Bloom filter of a segment's ids (Putze, Sanders and Singler, *Cache-,
/// hash- and space-efficient Bloom filters*, 2007): 4 bits of one 512-bit block per id,
/// about 10 bits per id, so that an id absent from the segment (the common case for new
/// ids) is told in one cache line instead of a binary search (false positives about 1%,
/// then searched). Built by the writer when it first looks an id up in the segment; held
/// in memory only.
pub(crate) struct IdFilter {
    blocks: Vec<[u64; 8]>,
}

impl IdFilter {
    fn new(ids: &[u64]) -> IdFilter {
        let n = (ids.len() * 10).div_ceil(512).max(1).next_power_of_two();
        let mut f = IdFilter {
            blocks: vec![[0u64; 8]; n],
        };
        for &id in ids {
            let (b, bits) = f.probe(id);
            for x in bits {
                f.blocks[b][x / 64] |= 1 << (x % 64);
            }
        }
        f
    }

    /// The block of `id` and its 4 bits in it.
    #[inline]
    fn probe(&self, id: u64) -> (usize, [usize; 4]) {
        let mut h = id ^ 0x243F_6A88_85A3_08D3;
        h = (h ^ (h >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h = (h ^ (h >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        h ^= h >> 33;
        let b = (h as usize) & (self.blocks.len() - 1);
        let g = h >> 28;
        let bit = |i: u32| ((g >> (9 * i)) & 511) as usize;
        (b, [bit(0), bit(1), bit(2), bit(3)])
    }

    #[inline]
    fn may_contain(&self, id: u64) -> bool {
        let (b, bits) = self.probe(id);
        let blk = &self.blocks[b];
        bits.iter().all(|&x| blk[x / 64] >> (x % 64) & 1 == 1)
    }
}

/// An immutable segment.
pub(crate) struct Segment {
    /// Its number (names its files; larger is newer).
    pub(crate) no: u64,
    /// The rows, strictly increasing ids.
    pub(crate) rows: Rows,
    /// The index of the rows' codes, ids `0..n`.
    pub(crate) index: Box<dyn HammingIndex>,
    /// The writer's filter of the ids, built when first needed.
    filter: OnceLock<IdFilter>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("no", &self.no)
            .field("rows", &self.len())
            .field("index", &self.index.spec())
            .finish()
    }
}

/// The file of segment `no`'s rows.
pub(crate) fn rows_path(dir: &Path, no: u64) -> PathBuf {
    dir.join(format!("seg-{no:016x}.rows.simlsh"))
}

/// The file of segment `no`'s index.
pub(crate) fn index_path(dir: &Path, no: u64) -> PathBuf {
    dir.join(format!("seg-{no:016x}.index.simlsh"))
}

impl Segment {
    /// A segment of `rows` (ids strictly increasing, checked by the caller), its index built
    /// by `spec`.
    pub(crate) fn build(no: u64, bits: usize, spec: &IndexSpec, rows: Rows) -> Result<Segment> {
        let sigs = SignatureMatrix::from_parts(bits, &rows.codes[..])?;
        let index = spec.build(&sigs)?;
        Ok(Segment {
            no,
            rows,
            index,
            filter: OnceLock::new(),
        })
    }

    /// Number of rows (dead ones included).
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The row of external id `id`.
    pub(crate) fn find(&self, id: u64) -> Option<usize> {
        let ids = &self.rows.ids;
        // Outside the segment's range of ids (new ids, most often): no search.
        if ids.first().is_none_or(|&f| id < f) || ids.last().is_none_or(|&l| id > l) {
            return None;
        }
        ids.binary_search(&id).ok()
    }

    /// [`find`](Self::find), asking the segment's id filter first (built on the first call
    /// for an id within the segment's range: the writer's lookups).
    pub(crate) fn find_filtered(&self, id: u64) -> Option<usize> {
        let ids = &self.rows.ids;
        if ids.first().is_none_or(|&f| id < f) || ids.last().is_none_or(|&l| id > l) {
            return None;
        }
        if !self
            .filter
            .get_or_init(|| IdFilter::new(ids))
            .may_contain(id)
        {
            return None;
        }
        ids.binary_search(&id).ok()
    }

    /// Bytes of heap memory and of mapped files held.
    pub(crate) fn bytes(&self) -> (usize, usize) {
        let (h, m) = self.rows.bytes();
        // The index reports heap and mapped bytes together; a loaded index is mapped.
        let ix = self.index.bytes();
        if self.rows.ids.is_mapped() {
            (h, m + ix)
        } else {
            (h + ix, m)
        }
    }

    /// Writes the segment's two files (each atomically; the index first, so that a rows
    /// file is never present without its index).
    pub(crate) fn write(&self, dir: &Path, content: Content) -> Result<()> {
        crate::persist::save_index(self.index.as_ref(), &index_path(dir, self.no))?;
        let mut w = Writer::new(FileKind::Store);
        w.param("part", "segment")?
            .param("segment", self.no)?
            .param("bits", self.index.bits())?
            .param("rows", self.len())?
            .param("content", content.name())?;
        w.u64s("ids", &self.rows.ids)?
            .u64s("codes", &self.rows.codes)?;
        match &self.rows.pay {
            Pay::None => {}
            Pay::Dense { dim, data } => {
                w.param("dim", dim)?;
                w.f32s("vectors", data)?;
            }
            Pay::Sparse {
                offsets,
                keys,
                weights,
            } => {
                w.u64s("offsets", offsets)?
                    .u64s("keys", keys)?
                    .f32s("weights", weights)?;
            }
        }
        w.write(&rows_path(dir, self.no))
    }

    /// Loads segment `no` (memory-mapped), checking its shapes and, as `check` says, the
    /// checksums of both files and the index's invariants.
    pub(crate) fn load(
        dir: &Path,
        no: u64,
        bits: usize,
        content: Content,
        check: Check,
    ) -> Result<Segment> {
        let path = rows_path(dir, no);
        let f = IndexFile::open(&path)?;
        f.expect_kind(FileKind::Store)?;
        if check != Check::Shapes {
            f.verify()?;
        }
        let bad = |field: &str, reason: String| f.field_error(field, reason);
        if f.param_opt("part") != Some("segment") {
            return Err(bad("param part", "not a segment file".into()));
        }
        let b: usize = f.param("bits")?;
        if b != bits {
            return Err(bad(
                "param bits",
                format!("{b}, the store's codes have {bits}"),
            ));
        }
        let got = f.param_opt("content").unwrap_or("");
        if got != content.name() {
            return Err(bad(
                "param content",
                format!("`{got}`, the store holds {}", content.name()),
            ));
        }
        let n: usize = f.param("rows")?;
        let words = crate::signature::words_for(bits);
        let ids = f.u64s("ids")?;
        let codes = f.u64s("codes")?;
        if ids.len() != n || codes.len() != n.saturating_mul(words) {
            return Err(bad(
                "section ids",
                format!(
                    "{} ids and {} code words for {n} rows of {words} words",
                    ids.len(),
                    codes.len()
                ),
            ));
        }
        if let Some(i) = ids.windows(2).position(|p| p[0] >= p[1]) {
            return Err(bad(
                "section ids",
                format!("not strictly increasing at row {}", i + 1),
            ));
        }
        let pay = match content {
            Content::Codes => Pay::None,
            Content::Vectors { dim } => {
                let d: usize = f.param("dim")?;
                let data = f.f32s("vectors")?;
                if d != dim || data.len() != n.saturating_mul(dim) {
                    return Err(bad(
                        "section vectors",
                        format!("{} values for {n} rows of dimension {dim}", data.len()),
                    ));
                }
                Pay::Dense { dim, data }
            }
            Content::Text => {
                let offsets = f.u64s("offsets")?;
                let keys = f.u64s("keys")?;
                let weights = f.f32s("weights")?;
                check_offsets(&offsets, n, keys.len(), weights.len())
                    .map_err(|r| bad("section offsets", r))?;
                Pay::Sparse {
                    offsets,
                    keys,
                    weights,
                }
            }
        };
        let ipath = index_path(dir, no);
        match check {
            Check::Shapes => {}
            Check::Checksums => IndexFile::open(&ipath)?.verify()?,
            Check::Full => crate::persist::verify_index(&ipath)?,
        }
        let index = crate::persist::load_index(&ipath)?;
        if index.bits() != bits || index.len() != n {
            return Err(Error::Format {
                path: ipath,
                reason: format!(
                    "an index of {} codes of {} bits for a segment of {n} rows of {bits} bits",
                    index.len(),
                    index.bits()
                ),
            });
        }
        Ok(Segment {
            no,
            rows: Rows {
                words,
                ids,
                codes,
                pay,
            },
            index,
            filter: OnceLock::new(),
        })
    }
}

/// Checks a sparse payload's offsets: `n + 1` of them, from 0, non-decreasing, ending at the
/// number of keys (and weights).
fn check_offsets(
    offsets: &Buf<u64>,
    n: usize,
    keys: usize,
    weights: usize,
) -> std::result::Result<(), String> {
    if offsets.len() != n + 1 || offsets[0] != 0 || keys != weights {
        return Err(format!(
            "{} offsets, {keys} keys and {weights} weights for {n} rows",
            offsets.len()
        ));
    }
    if offsets.windows(2).any(|p| p[0] > p[1]) || offsets[n] != keys as u64 {
        return Err("offsets decrease or do not end at the number of keys".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_filter_holds_every_id_and_few_others() {
        let mut rng = crate::rng::Rng::new(5);
        for n in [0usize, 1, 100, 20_000] {
            let ids: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let f = IdFilter::new(&ids);
            assert!(ids.iter().all(|&id| f.may_contain(id)));
            let false_positives = (0..100_000)
                .filter(|_| f.may_contain(rng.next_u64()))
                .count();
            // 10 bits per id and 4 bits per id in a 512-bit block: about 1% (more for
            // the tiny filters, whose one block is nearly empty).
            assert!(
                false_positives < 3_000,
                "{n} ids: {false_positives} in 100,000"
            );
        }
    }
}
