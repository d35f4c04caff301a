//! Portable reference kernels.
//!
//! Everything here is plain safe Rust built for the baseline target, so it compiles and is
//! correct on every platform. On x86-64 the baseline target has no `POPCNT`, and
//! [`u64::count_ones`] compiles to a SWAR bit trick (about a dozen instructions per word): this
//! set is the reference the SIMD kernels are tested against, and the fallback when the CPU has
//! nothing better (or when `SIMLSH_FORCE_SCALAR` is set, see [`super`]).
//!
//! The loop bodies are `#[inline(always)]` generic functions (crate-private) so that the x86-64
//! `popcnt` kernel set can instantiate the very same loops inside
//! `#[target_feature(enable = "popcnt")]` functions, where `count_ones` becomes one `POPCNT`
//! instruction. The public functions below validate their input exactly like the top-level
//! functions of [`super`] and always run the portable code, whatever the CPU.

use super::{Kernels, Neighbor, TopK};
use crate::error::Result;

/// Bytes of codes per cache tile of the batched scans: a tile stays in L1 while every query of
/// the batch is compared against it.
pub(crate) const TILE_BYTES: usize = 16 * 1024;

/// Codes per group of the widest layout of the kernel sets (the `avx512` set's: word `j` of
/// eight codes in one 512-bit vector). Tiles, and the codes the pair pass of
/// [`super::self_knn`] gives the kernels, come in multiples of it.
pub(crate) const GROUP_CODES: usize = 8;

/// Number of codes of `words` words in one tile (a positive multiple of [`GROUP_CODES`]).
#[inline]
pub(crate) fn tile_codes(words: usize, tile_bytes: usize) -> usize {
    (tile_bytes / (8 * words.max(1))).max(GROUP_CODES) / GROUP_CODES * GROUP_CODES
}

/// Expands to a `match` on the code width that calls `$body::<W>` with a compile-time width
/// for the common widths (64, 128, 192, 256, 384 and 512 bits) and `$body::<0>` (width read at run
/// time) otherwise. Bodies compute `let w = if W == 0 { words } else { W };` so the constant
/// folds away in the specialised copies.
macro_rules! by_words {
    ($words:expr, $body:ident ( $($arg:expr),* $(,)? )) => {
        match $words {
            1 => $body::<1>($($arg),*),
            2 => $body::<2>($($arg),*),
            3 => $body::<3>($($arg),*),
            4 => $body::<4>($($arg),*),
            6 => $body::<6>($($arg),*),
            8 => $body::<8>($($arg),*),
            _ => $body::<0>($($arg),*),
        }
    };
}
pub(crate) use by_words;

/// Hamming distance of the first `w` words of `a` and `b` (`w` is a constant in the
/// specialised callers, so the loop unrolls).
#[inline(always)]
pub(crate) fn dist_words(a: &[u64], b: &[u64], w: usize) -> u32 {
    a[..w]
        .iter()
        .zip(&b[..w])
        .map(|(x, y)| (x ^ y).count_ones())
        .sum()
}

/// Body of [`distance`]: fast paths for 1, 2 and 4 words, a plain loop otherwise. Slices of
/// different lengths are compared on their common prefix.
#[inline(always)]
pub(crate) fn distance_body(a: &[u64], b: &[u64]) -> u32 {
    match (a, b) {
        ([a0], [b0]) => (a0 ^ b0).count_ones(),
        ([a0, a1], [b0, b1]) => (a0 ^ b0).count_ones() + (a1 ^ b1).count_ones(),
        ([a0, a1, a2, a3], [b0, b1, b2, b3]) => {
            (a0 ^ b0).count_ones()
                + (a1 ^ b1).count_ones()
                + (a2 ^ b2).count_ones()
                + (a3 ^ b3).count_ones()
        }
        _ => a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum(),
    }
}

/// The Hamming distance of `a` and `b` if it is at most `max`; else some value above `max`
/// (the distance of a prefix, four words at a time: the pair checks of the joins stop there).
/// Compiled with `POPCNT` where the caller is (see [`crate::cpu::with_popcnt`]).
#[inline(always)]
pub(crate) fn distance_upto(a: &[u64], b: &[u64], max: u32) -> u32 {
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut d = 0;
    for (x, y) in ca.zip(cb) {
        d += (x[0] ^ y[0]).count_ones()
            + (x[1] ^ y[1]).count_ones()
            + (x[2] ^ y[2]).count_ones()
            + (x[3] ^ y[3]).count_ones();
        if d > max {
            return d;
        }
    }
    d + ra
        .iter()
        .zip(rb)
        .map(|(x, y)| (x ^ y).count_ones())
        .sum::<u32>()
}

/// Body of [`popcount`]: four independent accumulators so that a hardware `POPCNT` is not
/// serialised on one register.
#[inline(always)]
pub(crate) fn popcount_body(words: &[u64]) -> u64 {
    let mut acc = [0u64; 4];
    let mut chunks = words.chunks_exact(4);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += u64::from(x.count_ones());
        }
    }
    let tail: u64 = chunks
        .remainder()
        .iter()
        .map(|x| u64::from(x.count_ones()))
        .sum();
    acc.iter().sum::<u64>() + tail
}

/// Body of [`distances`] for width `W` (0: `words`, read at run time).
#[inline(always)]
pub(crate) fn distances_body<const W: usize>(
    query: &[u64],
    codes: &[u64],
    words: usize,
    out: &mut [u32],
) {
    let w = if W == 0 { words } else { W };
    for (c, o) in codes.chunks_exact(w).zip(out.iter_mut()) {
        *o = dist_words(query, c, w);
    }
}

/// Queries compared together against each code in the one-word radius scan: the code is
/// loaded once and stays in a register for all of them.
const RADIUS_BLOCK: usize = 8;

/// Body of [`scan_radius`] for width `W` (0: `words`, read at run time).
///
/// Codes are processed in tiles of [`TILE_BYTES`]; for each tile every query is compared
/// against every code of the tile before the next tile is touched, so the codes are read from
/// memory once per call whatever the number of queries. For one-word codes the queries are
/// register-blocked by [`RADIUS_BLOCK`].
#[inline(always)]
pub(crate) fn scan_radius_body<const W: usize>(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    let w = if W == 0 { words } else { W };
    let n = codes.len() / w;
    let tile = tile_codes(w, TILE_BYTES);
    let mut t0 = 0;
    while t0 < n {
        let t1 = n.min(t0 + tile);
        let tcodes = &codes[t0 * w..t1 * w];
        if w == 1 {
            let mut blocks = queries.chunks_exact(RADIUS_BLOCK);
            for (b, qs) in (&mut blocks).enumerate() {
                for (i, &c) in tcodes.iter().enumerate() {
                    for (j, &q) in qs.iter().enumerate() {
                        let d = (c ^ q).count_ones();
                        if d <= radius {
                            emit(b * RADIUS_BLOCK + j, t0 + i, d);
                        }
                    }
                }
            }
            let q0 = queries.len() - blocks.remainder().len();
            for (j, &q) in blocks.remainder().iter().enumerate() {
                for (i, &c) in tcodes.iter().enumerate() {
                    let d = (c ^ q).count_ones();
                    if d <= radius {
                        emit(q0 + j, t0 + i, d);
                    }
                }
            }
        } else {
            for (qi, q) in queries.chunks_exact(w).enumerate() {
                for (i, c) in tcodes.chunks_exact(w).enumerate() {
                    let d = dist_words(q, c, w);
                    if d <= radius {
                        emit(qi, t0 + i, d);
                    }
                }
            }
        }
        t0 = t1;
    }
}

/// Body of [`scan_knn`] for width `W` (0: `words`, read at run time): one pass over the codes
/// in tiles of [`TILE_BYTES`], every query's running top-k updated tile after tile.
///
/// Each query sees the codes in increasing index order, which is what makes the strict
/// `d < threshold` test of [`TopK`] exact (see there).
#[inline(always)]
pub(crate) fn scan_knn_body<const W: usize>(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    heaps: &mut [TopK],
) {
    let w = if W == 0 { words } else { W };
    let n = codes.len() / w;
    let tile = tile_codes(w, TILE_BYTES);
    let mut t0 = 0;
    while t0 < n {
        let t1 = n.min(t0 + tile);
        let tcodes = &codes[t0 * w..t1 * w];
        for (q, heap) in queries.chunks_exact(w).zip(heaps.iter_mut()) {
            let mut thr = heap.threshold();
            for (i, c) in tcodes.chunks_exact(w).enumerate() {
                let d = dist_words(q, c, w);
                if u64::from(d) < thr {
                    heap.push(d, t0 + i);
                    thr = heap.threshold();
                }
            }
        }
        t0 = t1;
    }
}

/// One query against a tile of codes in the pass of [`super::self_knn`]: the `col.len()`
/// codes of `tile` (a multiple of [`GROUP_CODES`]; row-major, or in the kernel set's
/// layout), the query's threshold `thr` and each code's own threshold `col[j]`.
#[derive(Clone, Copy)]
pub(crate) struct PairTile<'a> {
    pub(crate) tile: &'a [u64],
    pub(crate) words: usize,
    pub(crate) query: &'a [u64],
    pub(crate) thr: u32,
    pub(crate) col: &'a [u32],
}

/// Body of the pair tile for width `W` (0: `words`), row-major codes: the distances into
/// `out[..col.len()]`, and the groups of four codes `g` with some code `j = 4g + l` closer
/// than `thr` or than its own `col[j]` listed in `groups`. Returns the number listed.
#[inline(always)]
pub(crate) fn pair_tile_body<const W: usize>(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    let w = if W == 0 { p.words } else { W };
    let mut hits = 0;
    for (g, ((codes, o), c)) in p
        .tile
        .chunks_exact(4 * w)
        .zip(out.chunks_exact_mut(4))
        .zip(p.col.chunks_exact(4))
        .enumerate()
    {
        let mut any = false;
        for l in 0..4 {
            let d = dist_words(p.query, &codes[l * w..], w);
            o[l] = d;
            any |= d < p.thr || d < c[l];
        }
        groups[hits] = g as u32;
        hits += usize::from(any);
    }
    hits
}

pub(crate) fn pair_tile_raw(p: &PairTile<'_>, out: &mut [u32], groups: &mut [u32]) -> usize {
    by_words!(p.words, pair_tile_body(p, out, groups))
}

pub(crate) fn distance_raw(a: &[u64], b: &[u64]) -> u32 {
    distance_body(a, b)
}

pub(crate) fn popcount_raw(words: &[u64]) -> u64 {
    popcount_body(words)
}

pub(crate) fn distances_raw(query: &[u64], codes: &[u64], words: usize, out: &mut [u32]) {
    by_words!(words, distances_body(query, codes, words, out))
}

pub(crate) fn scan_radius_raw(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    by_words!(words, scan_radius_body(queries, codes, words, radius, emit))
}

pub(crate) fn scan_knn_raw(queries: &[u64], codes: &[u64], words: usize, heaps: &mut [TopK]) {
    by_words!(words, scan_knn_body(queries, codes, words, heaps))
}

/// Portable [`super::distance`]: Hamming distance of two equal-length codes.
///
/// # Errors
/// As [`super::distance`].
pub fn distance(a: &[u64], b: &[u64]) -> Result<u32> {
    Kernels::scalar().distance(a, b)
}

/// Portable [`super::popcount`]: number of set bits in `words`.
pub fn popcount(words: &[u64]) -> u64 {
    Kernels::scalar().popcount(words)
}

/// Portable [`super::distances`]: distance of `query` to every code.
///
/// # Errors
/// As [`super::distances`].
pub fn distances(query: &[u64], codes: &[u64], words: usize, out: &mut [u32]) -> Result<()> {
    Kernels::scalar().distances(query, codes, words, out)
}

/// Portable [`super::scan_radius`]: every `(query, code, distance)` with distance `<= radius`.
///
/// # Errors
/// As [`super::scan_radius`].
pub fn scan_radius(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    radius: u32,
    emit: impl FnMut(usize, usize, u32),
) -> Result<()> {
    Kernels::scalar().scan_radius(queries, codes, words, radius, emit)
}

/// Portable [`super::scan_knn`]: the `k` nearest codes of every query.
///
/// # Errors
/// As [`super::scan_knn`].
pub fn scan_knn(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    k: usize,
) -> Result<Vec<Vec<Neighbor>>> {
    Kernels::scalar().scan_knn(queries, codes, words, k)
}
