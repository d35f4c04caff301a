//! A band's `(key, row)` entries: the band bits of a row, the per-band radix sort and the
//! grouping of bands read in one pass over the rows.

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

/// Sorts `(key, row)` entries by key, then row: stable LSD radix passes over the `bits` key
/// bits when the rows come in increasing order, a comparison sort for long keys.
pub(super) fn sort_entries(
    entries: &mut Vec<(u64, u32)>,
    bits: u32,
    scratch: &mut Vec<(u64, u32)>,
) {
    if bits > RADIX_MAX_KEY_BITS || entries.len() < 256 {
        entries.sort_unstable();
        return;
    }
    scratch.resize(entries.len(), (0, 0));
    let mut count = vec![0usize; 1 << DIGIT];
    let mut shift = 0;
    while shift < bits {
        let d = DIGIT.min(bits - shift);
        let mask = (1u64 << d) - 1;
        count[..1 << d].fill(0);
        for e in entries.iter() {
            count[((e.0 >> shift) & mask) as usize] += 1;
        }
        let mut sum = 0;
        for c in &mut count[..1 << d] {
            let t = *c;
            *c = sum;
            sum += t;
        }
        for &e in entries.iter() {
            let slot = &mut count[((e.0 >> shift) & mask) as usize];
            scratch[*slot] = e;
            *slot += 1;
        }
        std::mem::swap(entries, scratch);
        shift += d;
    }
}

/// A band's `(key, row)` entries sorted by key, and its capped runs.
pub(super) type SortedBand = (Vec<(u64, u32)>, Vec<CappedGroup>);

/// Most bands grouped at once by [`banded_join_map`] (their keys are read in one pass over
/// the rows, and their sorted entries held together).
pub(super) const CHUNK_BANDS: usize = 8;

/// Bytes of sorted entries a chunk of bands may hold without a memory budget (16 per row and
/// band).
pub(super) const CHUNK_BYTES: usize = 256 << 20;

/// Bytes of one `(key, row)` entry of a band (padded): 16.
pub const BAND_ENTRY_BYTES: u64 = std::mem::size_of::<(u64, u32)>() as u64;

/// Bytes the banded join holds for a chunk of `bands` bands of `rows` rows sorted by `threads`
/// threads: every band's entries ([`BAND_ENTRY_BYTES`] per row), and the radix sort's scratch
/// of each band sorted at once (as many as threads). The banded join takes bands by chunks of
/// this size at most when given a memory budget ([`band_chunk`]).
pub fn band_chunk_bytes(rows: usize, bands: usize, threads: usize) -> u64 {
    let sorting = bands.min(threads.max(1));
    ((bands + sorting) as u64)
        .saturating_mul(rows as u64)
        .saturating_mul(BAND_ENTRY_BYTES)
}

/// The most bands a chunk of `rows` rows takes within `bytes` ([`band_chunk_bytes`] with the
/// current thread pool), at most 8; 0 when not even one band fits.
pub fn band_chunk(rows: usize, bytes: u64) -> usize {
    let threads = rayon::current_num_threads().max(1);
    (1..=CHUNK_BANDS)
        .take_while(|&k| band_chunk_bytes(rows, k, threads) <= bytes)
        .last()
        .unwrap_or(0)
}

/// Number of bands grouped at once for `n` rows: at least two per thread (so that every
/// thread has bands to sort and scan), at most [`CHUNK_BANDS`] and [`CHUNK_BYTES`]; within
/// `budget` bytes ([`band_chunk`], at least one band) when one is given.
pub(super) fn chunk_bands(n: usize, budget: Option<u64>) -> usize {
    if let Some(bytes) = budget {
        return band_chunk(n, bytes).max(1);
    }
    let threads = rayon::current_num_threads().max(1);
    let by_memory = CHUNK_BYTES / (16 * n.max(1));
    by_memory.clamp(1, CHUNK_BANDS).max(2 * threads)
}

/// The `(key, row)` entries of the bands `bands` (consecutive) for `rows`, one vector per band,
/// read in one pass over the rows per group of bands, the groups in parallel.
pub(super) fn band_entries<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    rows: &[u32],
    bands: std::ops::Range<usize>,
) -> Vec<Vec<(u64, u32)>> {
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
            let mut out: Vec<Vec<(u64, u32)>> =
                g.clone().map(|_| Vec::with_capacity(rows.len())).collect();
            for &i in rows {
                let r = sigs.row(i as usize);
                for (e, band) in out.iter_mut().zip(g.clone()) {
                    e.push((band_bits(r, band * w as usize, w), i));
                }
            }
            out
        })
        .collect()
}
