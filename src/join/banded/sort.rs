//! A band's `(key, row)` entries (one word for bands of at most 32 bits, two beyond): the band
//! bits of a row, the per-band radix sort and the grouping of bands read in one pass over the
//! rows.

use super::*;

/// Radix digit of the per-band sort, bits.
pub(super) const DIGIT: u32 = 11;

/// Keys longer than this are sorted by comparison instead of radix passes.
pub(super) const RADIX_MAX_KEY_BITS: u32 = 4 * DIGIT;

/// Bits `start .. start + w` of `sig` as a number (`w ≤ 64`).
#[inline(always)]
pub(super) fn band_bits(sig: &[u64], start: usize, w: u32) -> u64 {
    let (wi, sh) = (start / 64, (start % 64) as u32);
    let mut v = sig[wi] >> sh;
    if sh + w > 64 {
        v |= sig[wi + 1] << (64 - sh);
    }
    if w == 64 { v } else { v & ((1u64 << w) - 1) }
}

/// A band's entry: a row's key in the band and the row, ordered by key then row.
///
/// Two forms, chosen per banding by its width ([`banded_join_map`]): [`Packed`], one `u64`
/// for keys of at most 32 bits, and `(u64, u32)` (16 bytes with its padding) for wider keys.
pub(crate) trait Entry: Copy + Ord + Default + Send + Sync {
    /// The widest key the form holds, bits.
    const KEY_BITS: u32;

    /// Bytes of an entry (with its padding).
    const BYTES: u64 = std::mem::size_of::<Self>() as u64;

    /// The entry of `row` with `key` (at most [`KEY_BITS`](Self::KEY_BITS) bits).
    fn new(key: u64, row: u32) -> Self;

    /// The key.
    fn key(self) -> u64;

    /// The row.
    fn row(self) -> u32;

    /// Whether two entries have the same key.
    #[inline(always)]
    fn same_key(self, other: Self) -> bool {
        self.key() == other.key()
    }
}

impl Entry for (u64, u32) {
    const KEY_BITS: u32 = 64;

    #[inline(always)]
    fn new(key: u64, row: u32) -> Self {
        (key, row)
    }

    #[inline(always)]
    fn key(self) -> u64 {
        self.0
    }

    #[inline(always)]
    fn row(self) -> u32 {
        self.1
    }
}

/// An entry of a band of at most 32 bits in one word, `key << 32 | row`: ordering the words
/// orders by key, then row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Packed(u64);

impl Entry for Packed {
    const KEY_BITS: u32 = 32;

    #[inline(always)]
    fn new(key: u64, row: u32) -> Self {
        debug_assert!(key >> 32 == 0, "a key of more than 32 bits");
        Packed(key << 32 | u64::from(row))
    }

    #[inline(always)]
    fn key(self) -> u64 {
        self.0 >> 32
    }

    #[inline(always)]
    fn row(self) -> u32 {
        self.0 as u32
    }

    #[inline(always)]
    fn same_key(self, other: Self) -> bool {
        (self.0 ^ other.0) >> 32 == 0
    }
}

/// Bytes of one band entry of a banding whose bands are `width` bits wide: 8 up to 32 bits
/// (key and row in one word), 16 beyond (a `(u64, u32)` pair with its padding).
pub fn band_entry_bytes(width: u32) -> u64 {
    if width <= Packed::KEY_BITS {
        Packed::BYTES
    } else {
        <(u64, u32)>::BYTES
    }
}

/// Sorts entries by key, then row: stable LSD radix passes over the `bits` key bits when the
/// rows come in increasing order, a comparison sort for long keys.
pub(super) fn sort_entries<E: Entry>(entries: &mut Vec<E>, bits: u32, scratch: &mut Vec<E>) {
    if bits > RADIX_MAX_KEY_BITS || entries.len() < 256 {
        entries.sort_unstable();
        return;
    }
    scratch.resize(entries.len(), E::default());
    let mut count = vec![0usize; 1 << DIGIT];
    let mut shift = 0;
    while shift < bits {
        let d = DIGIT.min(bits - shift);
        let mask = (1u64 << d) - 1;
        count[..1 << d].fill(0);
        for e in entries.iter() {
            count[((e.key() >> shift) & mask) as usize] += 1;
        }
        let mut sum = 0;
        for c in &mut count[..1 << d] {
            let t = *c;
            *c = sum;
            sum += t;
        }
        for &e in entries.iter() {
            let slot = &mut count[((e.key() >> shift) & mask) as usize];
            scratch[*slot] = e;
            *slot += 1;
        }
        std::mem::swap(entries, scratch);
        shift += d;
    }
}

/// A band's `(key, row)` entries sorted by key, and its capped runs.
pub(super) type SortedBand<E> = (Vec<E>, Vec<CappedGroup>);

/// Most bands grouped at once by [`banded_join_map`] (their keys are read in one pass over
/// the rows, and their sorted entries held together).
pub(super) const CHUNK_BANDS: usize = 8;

/// Bytes of sorted entries a chunk of bands may hold without a memory budget
/// ([`band_entry_bytes`] per row and band).
pub(super) const CHUNK_BYTES: usize = 256 << 20;

/// Bytes the banded join holds for a chunk of `bands` bands of `width` bits of `rows` rows
/// sorted by `threads` threads: every band's entries ([`band_entry_bytes`] per row), and the
/// radix sort's scratch of each band sorted at once (as many as threads). The banded join
/// takes bands by chunks of this size at most when given a memory budget ([`band_chunk`]).
pub fn band_chunk_bytes(rows: usize, bands: usize, threads: usize, width: u32) -> u64 {
    chunk_bytes(rows, bands, threads, band_entry_bytes(width))
}

/// [`band_chunk_bytes`] of entries of `entry` bytes.
fn chunk_bytes(rows: usize, bands: usize, threads: usize, entry: u64) -> u64 {
    let sorting = bands.min(threads.max(1));
    ((bands + sorting) as u64)
        .saturating_mul(rows as u64)
        .saturating_mul(entry)
}

/// The most bands of `width` bits a chunk of `rows` rows takes within `bytes`
/// ([`band_chunk_bytes`] with the current thread pool), at most 8; 0 when not even one band
/// fits.
pub fn band_chunk(rows: usize, bytes: u64, width: u32) -> usize {
    chunk_within(rows, bytes, band_entry_bytes(width))
}

/// [`band_chunk`] of entries of `entry` bytes.
fn chunk_within(rows: usize, bytes: u64, entry: u64) -> usize {
    let threads = rayon::current_num_threads().max(1);
    (1..=CHUNK_BANDS)
        .take_while(|&k| chunk_bytes(rows, k, threads, entry) <= bytes)
        .last()
        .unwrap_or(0)
}

/// Number of bands grouped at once for `n` rows whose entries take `entry` bytes: at least
/// two per thread (so that every thread has bands to sort and scan), at most [`CHUNK_BANDS`]
/// and [`CHUNK_BYTES`]; within `budget` bytes ([`band_chunk`], at least one band) when one is
/// given.
pub(super) fn chunk_bands(n: usize, entry: u64, budget: Option<u64>) -> usize {
    if let Some(bytes) = budget {
        return chunk_within(n, bytes, entry).max(1);
    }
    let threads = rayon::current_num_threads().max(1);
    let by_memory = CHUNK_BYTES / (entry as usize * n.max(1));
    by_memory.clamp(1, CHUNK_BANDS).max(2 * threads)
}

/// The entries of the bands `bands` (consecutive) for `rows`, one vector per band, read in
/// one pass over the rows per group of bands, the groups in parallel.
pub(super) fn band_entries<E: Entry, S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    rows: &[u32],
    bands: std::ops::Range<usize>,
) -> Vec<Vec<E>> {
    let w = banding.width;
    let threads = rayon::current_num_threads().max(1);
    let per = bands.len().div_ceil(threads).max(1);
    let groups: Vec<std::ops::Range<usize>> = bands
        .clone()
        .step_by(per)
        .map(|b0| b0..(b0 + per).min(bands.end))
        .collect();
    groups
        .into_par_iter()
        .flat_map_iter(|g| {
            let mut out: Vec<Vec<E>> = g.clone().map(|_| Vec::with_capacity(rows.len())).collect();
            for &i in rows {
                let r = sigs.row(i as usize);
                for (e, band) in out.iter_mut().zip(g.clone()) {
                    e.push(E::new(band_bits(r, band * w as usize, w), i));
                }
            }
            out
        })
        .collect()
}
