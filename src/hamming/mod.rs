//! Hamming-distance kernels over packed `u64` codes, with run-time SIMD dispatch.
//!
//! A code of `words` words is `words` consecutive `u64` (bit `j` of a signature lives in word
//! `j / 64` at bit `j % 64`); a set of `n` codes is one row-major slice of `n * words` words.
//! The distance of two codes is the number of differing bits, `sum((a[i] ^ b[i]).count_ones())`.
//!
//! # Operations
//!
//! * [`distance`]: one pair of codes (fast paths for 1, 2 and 4 words).
//! * [`distances`]: one query against every code, into a caller's buffer.
//! * [`scan_radius`]: a batch of queries against every code, reporting every
//!   `(query, code, distance)` with `distance <= radius` (inclusive) through a callback.
//! * [`scan_knn`]: a batch of queries against every code, returning the `k` nearest codes of
//!   each query sorted by `(distance, index)`: ties are broken by the smaller index, so the
//!   result is exactly that of sorting all `n` codes by `(distance, index)` and keeping `k`.
//! * [`scan_knn_batched`]: [`scan_knn`] of many queries, batches of [`SCAN_QUERY_BATCH`] in
//!   parallel, each answer mapped by the caller (the indexes' batched scans).
//! * [`self_knn`]: the `k` nearest *other* codes of every code of one set (the k-NN graph),
//!   equal to [`scan_knn`] of the set against itself but computing each pair's distance
//!   once: thresholds guessed from a sample, one parallel pass over the pairs that records
//!   the pairs below either row's threshold, and an exact rescan of the rare row whose guess
//!   kept fewer than `k` codes.
//! * [`popcount`]: the number of set bits of a whole slice.
//!
//! The batched scans make **one pass over the codes per call**, whatever the number of
//! queries: the codes are cut into tiles of 16 KiB (2,048 64-bit codes, 512 256-bit codes;
//! L1-resident) and every query of the batch is compared against a tile before the next tile
//! is read. A batch
//! of 64 queries thus reads the codes from memory once instead of 64 times, and the scan is
//! bound by arithmetic rather than memory bandwidth. Pass as many queries per call as you
//! have (the per-query state is a few words, plus the k-NN candidate buffer and its histogram of distances).
//!
//! # The SIMD layer
//!
//! Four kernel sets implement the same operations ([`Kernels`]):
//!
//! | name | built for | how the distance of a pair is computed |
//! |---|---|---|
//! | `scalar` | every target (baseline) | `u64::count_ones` per word; on baseline x86-64 this is a SWAR bit trick of about a dozen instructions |
//! | `popcnt` | x86-64 with `POPCNT` | the very same loops compiled with `#[target_feature(enable = "popcnt")]`: one `POPCNT` per word |
//! | `avx2` | x86-64 with `AVX2` and `POPCNT` | explicit AVX2: four codes per 256-bit vector ("vertical" layout), a `vpshufb` nibble-table popcount, `vpsadbw` to sum the bytes of each code; AVX2 Harley–Seal for long slices |
//! | `avx512` | x86-64 with `AVX-512F`, `AVX512_VPOPCNTDQ`, `AVX2` and `POPCNT` | the `avx2` set, but eight codes per 512-bit vector and one `vpopcntq` per vector in the k-NN scans, the pair pass of [`self_knn`] and [`distances`] |
//!
//! The choice is made **once per process**, at the first call, from the extensions the CPU
//! dispatch layer allows ([`crate::cpu::features`]), and cached (a [`std::sync::OnceLock`]
//! holding a reference to a static table of function pointers). The best set the CPU
//! supports is used: `avx512`, else `avx2`, else `popcnt`, else `scalar`. Compile-time `target_feature` settings play no part: a binary
//! built for baseline x86-64 still gets hardware popcount and AVX2 where the CPU has them,
//! which is the point of the dispatch, since the baseline `count_ones` is the slow SWAR trick.
//! [`kernel_name`] tells which set was chosen. On other architectures only `scalar` exists
//! (it is always built and is the reference the other sets are tested against).
//!
//! Setting the environment variable **`SIMLSH_FORCE_SCALAR`** to any non-empty value other
//! than `0` (e.g. `SIMLSH_FORCE_SCALAR=1`) before the first call forces the `scalar` set, to
//! compare results or speed. It is read once, when the choice is made. Every set can also be
//! called explicitly: [`Kernels::scalar`], [`Kernels::popcnt`], [`Kernels::avx2`] and
//! [`Kernels::avx512`] (the last three return `None` when the CPU lacks the features), and the
//! [`scalar`] module.
//!
//! What the `avx2` set does per operation:
//!
//! * 64-bit codes (`words == 1`): the codes are already "vertical" (four consecutive codes
//!   fill one vector), so each load serves four codes; [`scan_radius`] compares up to 8
//!   queries against each loaded vector (register blocking).
//! * wider codes in [`scan_radius`] and [`scan_knn`] with at least 4 queries: each tile is
//!   first transposed (4x4 blocks of words, in registers) into groups of four codes stored
//!   word by word, so that word `j` of four codes is one vector. The byte counts of all the
//!   words of a group are added up before one `vpsadbw`, which yields the four distances in
//!   one vector. The transposition is shared by all the queries of the batch; with fewer
//!   than 4 queries it does not pay, and `POPCNT` per word is used instead.
//! * the per-pair test (`distance <= radius`, or `distance <` the query's current k-th
//!   distance) is one vector compare per four codes. The loop stops only at a group with a
//!   candidate, which is rare once a k-NN threshold has settled.
//! * [`distances`] (one query): vertical for one-word codes; for widths that are multiples of
//!   4 words, code by code, with the partial sums of four codes combined by two unpacks and
//!   two lane permutes; `POPCNT` per word otherwise.
//! * [`popcount`] and long [`distance`]s (at least 64 words, 512 bytes) use the AVX2
//!   Harley–Seal carry-save-adder popcount of Muła, Kurz and Lemire (2018); below that,
//!   `POPCNT` per word is faster, as in libpopcnt.
//!
//! What the `avx512` set does differently (its other operations are the `avx2` set's):
//!
//! * [`scan_knn`] with at least 4 queries (and every width), and the pair pass of
//!   [`self_knn`]: tiles transposed into groups of **eight** codes (word `j` of eight codes
//!   is one 512-bit vector); per word one `vpxorq`, one `vpopcntq` and one `vpaddq` give the
//!   eight codes' distances, stored as `u32` and compared with the thresholds by mask.
//! * [`distances`] (one query): eight one-word codes per vector; wider codes eight words at a
//!   time (a masked load for the rest), the lanes of eight codes summed by a tree of
//!   unpacks and lane shuffles.
//!
//! # Speed
//!
//! Measured on one core of a 2.6 GHz AMD Zen 3 (EPYC), in process CPU time (the benchmark is
//! `benches/hamming.rs`), `avx2` / `popcnt` / `scalar` sets:
//!
//! * 64-bit codes, radius 3, batches of 8 or 64 queries: 3.9G / 2.4G / 0.63G comparisons
//!   per second, from cache (1M codes) or memory (16M codes) alike;
//! * 64-bit codes, one query: 3.5G / 1.7G / 0.54G codes per second from cache, 2.7G / 1.7G /
//!   0.57G from memory;
//! * 256-bit codes, 10 nearest neighbours, 1M codes and 64 or 1,000 queries: 1.1G / 0.66G /
//!   0.36G comparisons per second;
//! * the k-NN graph of 20,000 clustered 384-bit codes, `avx2`, k = 10 / 100
//!   (`benches/knn_graph.rs`): 0.40 s / 0.70 s by [`self_knn`], against 0.77 s / 0.90 s by
//!   [`scan_knn`] of the set against itself.
//!
//! [`distance`] on one pair costs one indirect call plus a handful of instructions; for many
//! pairs use the batched functions.
//!
//! # Limits
//!
//! Distances are `u32`, so codes are limited to [`MAX_WORDS`] words (just under 2^32 bits);
//! functions that take `words` check it.

use std::fmt;
use std::sync::OnceLock;

use crate::error::{Error, Result};

pub mod scalar;
mod self_knn;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests;

/// Name of the environment variable that forces the portable `scalar` kernels when set to a
/// non-empty value other than `0` (the crate-wide switch of [`crate::cpu`]).
pub use crate::cpu::FORCE_SCALAR_ENV;

/// Largest code width, in words, accepted by the functions that take `words`: distances
/// must fit in a `u32`.
pub const MAX_WORDS: usize = (u32::MAX / 64) as usize;

/// One result of a k-nearest-neighbour scan: a code's row and its distance to the query.
///
/// The derived order is by `distance`, then by `row`, which is the order of [`scan_knn`]'s
/// results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Neighbor {
    /// Hamming distance to the query.
    pub distance: u32,
    /// Row of the code (0-based position in the scanned codes).
    pub row: usize,
}

/// Codes of at most this many bits keep a distance histogram in [`TopK`] (4 bytes per
/// possible distance and query); wider codes fall back to a lazy top-k.
const HIST_MAX_BITS: usize = 1 << 13;

/// A query's running k nearest codes and the threshold a new distance must beat.
///
/// Kernels feed each query the codes in increasing index order, and offer a code only when
/// its distance is below [`threshold`](Self::threshold). Once `k` codes were offered, the
/// threshold is the distance `c` of the `k`-th nearest so far: a later code at distance `c`
/// has a larger index than every kept code at `c` and loses the tie, so the strict test
/// `d < threshold()` drops only codes that cannot be in the result. Until then the threshold
/// is `u64::MAX` (every code enters); for `k == 0` it is 0 (none does).
///
/// Offered codes are **appended** to a buffer (a store, no heap sift: with `k` in the
/// hundreds, the candidates of a re-ranked k-NN graph, a heap's `O(log k)` sift with its
/// unpredictable branches cost as much as the scan), and the threshold is kept exact by a
/// **counting histogram** of the offered distances: `below` counts the offered codes
/// closer than `cut`, and `cut` steps down while `below >= k`. `cut` only decreases, so the
/// steps cost `O(f)` per query in all. The buffer is cut back to the codes at distance
/// `<= cut` when it doubles. Codes wider than [`HIST_MAX_BITS`] use a lazy top-k
/// ([`crate::util::topk::LazyTopK`]) instead.
#[derive(Debug)]
pub(crate) struct TopK {
    k: usize,
    sel: Select,
    thr: u64,
}

#[derive(Debug)]
enum Select {
    /// Offered codes, `hist[d]` of them at distance `d`, `below` of them closer than `cut`.
    Hist {
        buf: Vec<Neighbor>,
        hist: Vec<u32>,
        below: usize,
        cut: usize,
        /// Buffer length at which the buffer is cut back.
        limit: usize,
    },
    Lazy(crate::util::topk::LazyTopK<Neighbor>),
}

impl TopK {
    /// The top-`k` of a scan of codes of `words` words.
    pub(crate) fn new(k: usize, words: usize) -> Self {
        let bits = words.saturating_mul(64);
        let sel = if bits <= HIST_MAX_BITS {
            Select::Hist {
                buf: Vec::new(),
                hist: Vec::new(),
                below: 0,
                cut: bits + 1,
                limit: Self::first_limit(k),
            }
        } else {
            Select::Lazy(crate::util::topk::LazyTopK::new(k))
        };
        TopK {
            k,
            sel,
            thr: if k == 0 { 0 } else { u64::MAX },
        }
    }

    /// The buffer length of the first cut: room for `k` codes and as many ties (saturating:
    /// `k` may be any size asked for, such as `usize::MAX` for "every code").
    fn first_limit(k: usize) -> usize {
        k.saturating_mul(2).saturating_add(64)
    }

    /// A code at distance `d` can enter iff `u64::from(d) < threshold()`.
    #[inline(always)]
    pub(crate) fn threshold(&self) -> u64 {
        self.thr
    }

    /// Offers code `row` at distance `distance`; the caller has checked `distance < threshold()`
    /// and offers codes in increasing row order.
    #[inline]
    pub(crate) fn push(&mut self, distance: u32, row: usize) {
        let k = self.k;
        match &mut self.sel {
            Select::Hist {
                buf,
                hist,
                below,
                cut,
                limit,
            } => {
                if hist.is_empty() {
                    hist.resize(*cut, 0);
                }
                buf.push(Neighbor { distance, row });
                hist[distance as usize] += 1;
                *below += 1;
                if *below >= k {
                    while *below >= k {
                        *cut -= 1;
                        *below -= hist[*cut] as usize;
                    }
                    self.thr = self.thr.min(*cut as u64);
                    if buf.len() >= *limit {
                        let c = *cut as u32;
                        buf.retain(|n| n.distance <= c);
                        *limit = buf.len().saturating_mul(2).max(Self::first_limit(k));
                    }
                }
            }
            Select::Lazy(top) => {
                top.offer(Neighbor { distance, row });
                if let Some(worst) = top.worst() {
                    self.thr = self.thr.min(u64::from(worst.distance));
                }
            }
        }
    }

    /// The `k` of this query.
    #[inline(always)]
    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// Before the first cut (threshold `u64::MAX`), when a tile of codes at distances `dists`
    /// holds at least `k` codes: sets the threshold to one more than the tile's `k`-th
    /// smallest distance `c`. The tile has `k` codes at distance `<= c`, so no code farther
    /// than `c` can be in the result; this spares appending a whole first tile.
    pub(crate) fn prime(&mut self, dists: &[u32]) {
        let k = self.k();
        if self.thr != u64::MAX || k == 0 || dists.len() < k {
            return;
        }
        let c = match &mut self.sel {
            // The k-th smallest by counting (the histogram spans every distance of the
            // codes), then the counts taken back out: no allocation, O(tile + f).
            Select::Hist { hist, cut, .. } => {
                if hist.is_empty() {
                    hist.resize(*cut, 0);
                }
                for &d in dists {
                    hist[d as usize] += 1;
                }
                let mut seen = 0;
                let c = hist
                    .iter()
                    .position(|&h| {
                        seen += h as usize;
                        seen >= k
                    })
                    .unwrap_or(hist.len() - 1);
                for &d in dists {
                    hist[d as usize] -= 1;
                }
                c as u32
            }
            Select::Lazy(_) => {
                let mut scratch = dists.to_vec();
                let (_, &mut c, _) = scratch.select_nth_unstable(k - 1);
                c
            }
        };
        self.thr = u64::from(c) + 1;
    }

    /// Offers, of the codes `t0..t0 + dists.len()` at distances `dists` (in increasing index
    /// order, after every code offered before), those of the groups of four `groups` (group
    /// `g` is codes `4g..4g + 4` of the tile) and those from `tail` on, that are below the
    /// threshold. The caller lists every group with a code below the threshold.
    pub(crate) fn offer_groups(&mut self, dists: &[u32], groups: &[u32], tail: usize, t0: usize) {
        for &g in groups {
            let g = g as usize;
            for (l, &d) in dists[4 * g..4 * g + 4].iter().enumerate() {
                if u64::from(d) < self.thr {
                    self.push(d, t0 + 4 * g + l);
                }
            }
        }
        for (i, &d) in dists.iter().enumerate().skip(tail) {
            if u64::from(d) < self.thr {
                self.push(d, t0 + i);
            }
        }
    }

    /// The kept codes sorted by `(dist, index)`.
    pub(crate) fn into_sorted(self) -> Vec<Neighbor> {
        match self.sel {
            Select::Hist { mut buf, cut, .. } => {
                // Every code closer than `cut`, and the first (smallest indexes) at `cut`.
                let c = cut as u32;
                buf.retain(|n| n.distance <= c);
                buf.sort_unstable();
                buf.truncate(self.k);
                buf
            }
            Select::Lazy(top) => top.into_sorted_vec(),
        }
    }
}

type DistanceFn = unsafe fn(&[u64], &[u64]) -> u32;
type PopcountFn = unsafe fn(&[u64]) -> u64;
type DistancesFn = unsafe fn(&[u64], &[u64], usize, &mut [u32]);
type RadiusFn = unsafe fn(&[u64], &[u64], usize, u32, &mut dyn FnMut(usize, usize, u32));
type KnnFn = unsafe fn(&[u64], &[u64], usize, &mut [TopK]);
type TransposeFn = unsafe fn(&[u64], usize, &mut [u64]);
type PairTileFn = unsafe fn(&scalar::PairTile<'_>, &mut [u32], &mut [u32]) -> usize;

/// One kernel set: a table of functions implementing every operation of this module for one
/// instruction-set level (see the [module documentation](self)).
///
/// A `&'static Kernels` is only handed out by [`Kernels::scalar`], [`Kernels::popcnt`],
/// [`Kernels::avx2`], [`Kernels::avx512`], [`Kernels::best_available`] and [`Kernels::dispatched`], which check
/// that the CPU has the features the set was compiled for; its methods are therefore safe to
/// call. The top-level functions of this module are `Kernels::dispatched()` plus the method.
pub struct Kernels {
    name: &'static str,
    distance: DistanceFn,
    popcount: PopcountFn,
    distances: DistancesFn,
    scan_radius: RadiusFn,
    scan_knn: KnnFn,
    /// The layout of the tiles of `pair_tile` (`None`: row-major).
    transpose: Option<TransposeFn>,
    pair_tile: PairTileFn,
}

impl fmt::Debug for Kernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernels").field("name", &self.name).finish()
    }
}

static SCALAR: Kernels = Kernels {
    name: "scalar",
    distance: scalar::distance_raw,
    popcount: scalar::popcount_raw,
    distances: scalar::distances_raw,
    scan_radius: scalar::scan_radius_raw,
    scan_knn: scalar::scan_knn_raw,
    transpose: None,
    pair_tile: scalar::pair_tile_raw,
};

#[cfg(target_arch = "x86_64")]
static POPCNT: Kernels = Kernels {
    name: "popcnt",
    distance: x86::distance_popcnt,
    popcount: x86::popcount_popcnt,
    distances: x86::distances_popcnt,
    scan_radius: x86::scan_radius_popcnt,
    scan_knn: x86::scan_knn_popcnt,
    transpose: None,
    pair_tile: x86::pair_tile_popcnt,
};

#[cfg(target_arch = "x86_64")]
static AVX2: Kernels = Kernels {
    name: "avx2",
    distance: x86::distance_avx2,
    popcount: x86::popcount_avx2,
    distances: x86::distances_avx2,
    scan_radius: x86::scan_radius_avx2,
    scan_knn: x86::scan_knn_avx2,
    transpose: Some(x86::transpose_groups),
    pair_tile: x86::pair_tile_avx2,
};

/// The `avx2` set with AVX-512 kernels where they pay (see the module documentation).
#[cfg(target_arch = "x86_64")]
static AVX512: Kernels = Kernels {
    name: "avx512",
    distance: x86::distance_avx2,
    popcount: x86::popcount_avx2,
    distances: x86::distances_avx512,
    scan_radius: x86::scan_radius_avx2,
    scan_knn: x86::scan_knn_avx512,
    transpose: Some(x86::transpose_groups8),
    pair_tile: x86::pair_tile_avx512,
};

static DISPATCHED: OnceLock<&'static Kernels> = OnceLock::new();

/// The best set the extensions `f` allow.
fn best_for(f: crate::cpu::Features) -> &'static Kernels {
    #[cfg(target_arch = "x86_64")]
    if f.avx512_popcnt() {
        return &AVX512;
    }
    #[cfg(target_arch = "x86_64")]
    if f.avx2 && f.popcnt {
        return &AVX2;
    }
    #[cfg(target_arch = "x86_64")]
    if f.popcnt {
        return &POPCNT;
    }
    let _ = f;
    &SCALAR
}

impl Kernels {
    /// The portable reference set, available everywhere.
    pub fn scalar() -> &'static Kernels {
        &SCALAR
    }

    /// The `popcnt` set (the portable loops compiled with hardware `POPCNT`), or `None` when
    /// not on x86-64 or the CPU lacks `POPCNT`.
    pub fn popcnt() -> Option<&'static Kernels> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::detected().popcnt {
            return Some(&POPCNT);
        }
        None
    }

    /// The `avx2` set, or `None` when not on x86-64 or the CPU lacks `AVX2` or `POPCNT`.
    pub fn avx2() -> Option<&'static Kernels> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::detected().avx2 && crate::cpu::detected().popcnt {
            return Some(&AVX2);
        }
        None
    }

    /// The `avx512` set, or `None` when not on x86-64 or the CPU lacks one of `AVX-512F`,
    /// `AVX512_VPOPCNTDQ`, `AVX2` and `POPCNT`.
    pub fn avx512() -> Option<&'static Kernels> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::detected().avx512_popcnt() {
            return Some(&AVX512);
        }
        None
    }

    /// Every set this CPU can run, slowest first (`scalar` first).
    pub fn available() -> Vec<&'static Kernels> {
        let mut v = vec![Kernels::scalar()];
        v.extend(Kernels::popcnt());
        v.extend(Kernels::avx2());
        v.extend(Kernels::avx512());
        v
    }

    /// The fastest set this CPU can run (`avx512`, else `avx2`, else `popcnt`, else
    /// `scalar`), ignoring
    /// [`FORCE_SCALAR_ENV`] ([`crate::cpu::detected`]).
    pub fn best_available() -> &'static Kernels {
        best_for(crate::cpu::detected())
    }

    /// The set used by the top-level functions of this module: the best one
    /// [`crate::cpu::features`] allows (`scalar` if [`FORCE_SCALAR_ENV`] is set). Chosen at
    /// the first call and cached for the life of the process.
    pub fn dispatched() -> &'static Kernels {
        DISPATCHED.get_or_init(|| best_for(crate::cpu::features()))
    }

    /// The set's name: `"scalar"`, `"popcnt"`, `"avx2"` or `"avx512"`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Hamming distance of two codes of the same length. See [`distance`].
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if the slices differ in length.
    #[inline]
    pub fn distance(&self, a: &[u64], b: &[u64]) -> Result<u32> {
        if a.len() != b.len() {
            return Err(Error::LengthMismatch {
                what: "hamming::distance: words of the two codes",
                left: a.len(),
                right: b.len(),
            });
        }
        Ok(self.distance_eq(a, b))
    }

    /// [`distance`](Self::distance) of two slices the caller knows to have the same length
    /// (checked in debug builds only).
    #[inline]
    pub(crate) fn distance_eq(&self, a: &[u64], b: &[u64]) -> u32 {
        debug_assert_eq!(a.len(), b.len(), "hamming::distance: lengths differ");
        // SAFETY: `self` comes from a constructor that checked the CPU features this set was
        // compiled for; the kernel accepts slices of any lengths.
        unsafe { (self.distance)(a, b) }
    }

    /// Number of set bits in `words`. See [`popcount`].
    #[inline]
    pub fn popcount(&self, words: &[u64]) -> u64 {
        // SAFETY: as in `distance`; any slice is valid.
        unsafe { (self.popcount)(words) }
    }

    /// Distance of `query` to every code. See [`distances`].
    ///
    /// # Errors
    /// As [`distances`].
    pub fn distances(
        &self,
        query: &[u64],
        codes: &[u64],
        words: usize,
        out: &mut [u32],
    ) -> Result<()> {
        check_distances(query, codes, words, out)?;
        // SAFETY: features checked at construction (see `distance`); shapes checked above.
        unsafe { (self.distances)(query, codes, words, out) };
        Ok(())
    }

    /// Every `(query, code, distance)` with `distance <= radius`. See [`scan_radius`].
    ///
    /// # Errors
    /// As [`scan_radius`].
    pub fn scan_radius(
        &self,
        queries: &[u64],
        codes: &[u64],
        words: usize,
        radius: u32,
        mut emit: impl FnMut(usize, usize, u32),
    ) -> Result<()> {
        check_scan(queries, codes, words)?;
        // SAFETY: features checked at construction (see `distance`); shapes checked above.
        unsafe { (self.scan_radius)(queries, codes, words, radius, &mut emit) };
        Ok(())
    }

    /// The `k` nearest codes of every query. See [`scan_knn`].
    ///
    /// # Errors
    /// As [`scan_knn`].
    pub fn scan_knn(
        &self,
        queries: &[u64],
        codes: &[u64],
        words: usize,
        k: usize,
    ) -> Result<Vec<Vec<Neighbor>>> {
        check_scan(queries, codes, words)?;
        Ok(self.scan_knn_unchecked(queries, codes, words, k))
    }

    /// [`scan_knn`](Self::scan_knn) of shapes the caller has checked (`words` in
    /// `1..=MAX_WORDS`, whole codes).
    pub(crate) fn scan_knn_unchecked(
        &self,
        queries: &[u64],
        codes: &[u64],
        words: usize,
        k: usize,
    ) -> Vec<Vec<Neighbor>> {
        let mut heaps: Vec<TopK> = (0..queries.len() / words)
            .map(|_| TopK::new(k, words))
            .collect();
        // SAFETY: features checked at construction (see `distance`); shapes checked by the
        // caller, one heap per query.
        unsafe { (self.scan_knn)(queries, codes, words, &mut heaps) };
        heaps.into_iter().map(TopK::into_sorted).collect()
    }

    /// The `k` nearest other codes of every code of one set. See [`self_knn`].
    ///
    /// # Errors
    /// As [`self_knn`].
    pub fn self_knn(
        &'static self,
        codes: &[u64],
        words: usize,
        k: usize,
    ) -> Result<Vec<Vec<Neighbor>>> {
        check_scan(&[], codes, words)?;
        if codes.len() / words > u32::MAX as usize {
            return Err(Error::param(
                "codes",
                format!("{} codes exceed the limit of 2^32", codes.len() / words),
            ));
        }
        Ok(self.self_knn_unchecked(codes, words, k))
    }
}

fn check_words(words: usize) -> Result<()> {
    if words == 0 {
        return Err(Error::param("words", "a code has at least one word"));
    }
    if words > MAX_WORDS {
        return Err(Error::param(
            "words",
            format!("{words} words exceed the limit of {MAX_WORDS} (distances are u32)"),
        ));
    }
    Ok(())
}

fn check_multiple(name: &'static str, len: usize, words: usize) -> Result<()> {
    if !len.is_multiple_of(words) {
        return Err(Error::param(
            name,
            format!("length {len} is not a multiple of words = {words}"),
        ));
    }
    Ok(())
}

fn check_distances(query: &[u64], codes: &[u64], words: usize, out: &[u32]) -> Result<()> {
    check_words(words)?;
    if query.len() != words {
        return Err(Error::LengthMismatch {
            what: "query length vs words",
            left: query.len(),
            right: words,
        });
    }
    check_multiple("codes", codes.len(), words)?;
    if codes.len() / words != out.len() {
        return Err(Error::LengthMismatch {
            what: "number of codes vs out.len()",
            left: codes.len() / words,
            right: out.len(),
        });
    }
    Ok(())
}

fn check_scan(queries: &[u64], codes: &[u64], words: usize) -> Result<()> {
    check_words(words)?;
    check_multiple("queries", queries.len(), words)?;
    check_multiple("codes", codes.len(), words)
}

/// Name of the kernel set the dispatched functions use: `"avx512"`, `"avx2"`, `"popcnt"` or
/// `"scalar"` (see the [module documentation](self) for how it is chosen).
pub fn kernel_name() -> &'static str {
    Kernels::dispatched().name()
}

/// Hamming distance of two codes of the same length (any number of words).
///
/// Dispatched; the 1-, 2- and 4-word cases are unrolled, and codes of 64 words or more use
/// the AVX2 Harley–Seal popcount of the XOR when available.
///
/// # Errors
/// [`Error::LengthMismatch`] if the slices differ in length.
#[inline]
pub fn distance(a: &[u64], b: &[u64]) -> Result<u32> {
    Kernels::dispatched().distance(a, b)
}

/// Number of set bits in `words` (e.g. the weight of a signature, or of many at once).
///
/// Dispatched: `POPCNT` per word, and the AVX2 Harley–Seal popcount from 64 words (512 bytes)
/// on, the crossover libpopcnt uses.
#[inline]
pub fn popcount(words: &[u64]) -> u64 {
    Kernels::dispatched().popcount(words)
}

/// Writes to `out[i]` the distance of `query` (one code of `words` words) to code `i` of
/// `codes` (`out.len()` codes, row-major).
///
/// # Errors
/// [`Error::InvalidParameter`] if `words` is 0 or above [`MAX_WORDS`], or `codes.len()` is
/// not a multiple of `words`; [`Error::LengthMismatch`] if `query.len() != words` or
/// `codes.len() != out.len() * words`.
pub fn distances(query: &[u64], codes: &[u64], words: usize, out: &mut [u32]) -> Result<()> {
    Kernels::dispatched().distances(query, codes, words, out)
}

/// Calls `emit(query_index, code_index, distance)` for exactly every pair of a query of
/// `queries` and a code of `codes` (both row-major, `words` words each) at distance
/// `<= radius` (inclusive).
///
/// All queries share one pass over the codes (see the [module documentation](self)), so
/// batching queries is much faster than calling this once per query. The order of the calls
/// is unspecified (it follows the tiling); sort the pairs if you need an order.
///
/// # Errors
/// [`Error::InvalidParameter`] if `words` is 0 or above [`MAX_WORDS`], or the length of
/// `queries` or `codes` is not a multiple of `words`. Nothing is emitted then.
pub fn scan_radius(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    radius: u32,
    emit: impl FnMut(usize, usize, u32),
) -> Result<()> {
    Kernels::dispatched().scan_radius(queries, codes, words, radius, emit)
}

/// For every query of `queries`, its `k` nearest codes of `codes` (both row-major, `words`
/// words each), as [`Neighbor`]s sorted by `(dist, index)`.
///
/// Exact: the result of query `q` equals sorting all codes by `(distance, index)` and keeping
/// the first `min(k, n)`; ties at the k-th distance keep the smaller indices. One pass over
/// the codes serves all queries (see the [module documentation](self)); each query keeps a
/// bounded max-heap and a running threshold, so a code costs one compare unless it enters.
///
/// # Errors
/// [`Error::InvalidParameter`] if `words` is 0 or above [`MAX_WORDS`], or the length of
/// `queries` or `codes` is not a multiple of `words`.
pub fn scan_knn(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    k: usize,
) -> Result<Vec<Vec<Neighbor>>> {
    Kernels::dispatched().scan_knn(queries, codes, words, k)
}

/// Queries per pass over the codes in the batched scans of the indexes
/// ([`scan_knn_batched`], and the radius scans of [`LinearScan`](crate::index::LinearScan)
/// and [`MultiIndex`](crate::index::MultiIndex)): the queries of a batch share each tile of
/// codes, and the batches run in parallel.
pub const SCAN_QUERY_BATCH: usize = 64;

/// [`scan_knn`] of many queries in parallel, [`SCAN_QUERY_BATCH`] queries per pass over the
/// codes, each query's neighbours turned into the caller's result by `answer` (in query
/// order). Runs in the current rayon pool.
///
/// ```
/// use simlsh::hamming;
/// let codes = [0b0000u64, 0b0001, 0b0111, 0b0011];
/// let rows = hamming::scan_knn_batched(&[0b0110, 0b0000], &codes, 1, 1, |nbs| nbs[0].row)?;
/// assert_eq!(rows, [2, 0]);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// As [`scan_knn`].
pub fn scan_knn_batched<R: Send>(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    k: usize,
    answer: impl Fn(&[Neighbor]) -> R + Sync,
) -> Result<Vec<R>> {
    use rayon::prelude::*;
    check_scan(queries, codes, words)?;
    let kernels = Kernels::dispatched();
    let chunks: Vec<Vec<R>> = queries
        .par_chunks(words * SCAN_QUERY_BATCH)
        .map(|qs| {
            kernels
                .scan_knn_unchecked(qs, codes, words, k)
                .iter()
                .map(|nbs| answer(nbs))
                .collect()
        })
        .collect();
    Ok(chunks.into_iter().flatten().collect())
}

/// For every code of `codes` (row-major, `words` words each), its `k` nearest **other** codes
/// (the code itself left out, by position), as [`Neighbor`]s sorted by `(dist, index)`: ties
/// broken by the smaller index, all of them if fewer than `k`. The k-nearest-neighbour graph
/// of a set of codes.
///
/// Equal to [`scan_knn`] of the set against itself with `k + 1` and the query removed from
/// its own list, at about half the cost on large sets: each pair's distance is computed once
/// (see the design in the source of `hamming::self_knn`: guessed thresholds from a sample,
/// one parallel pass over the pairs, and an exact scan again for the rare row the guess
/// failed). Runs in the current rayon pool.
///
/// ```
/// use simlsh::hamming;
/// let codes = [0b0000u64, 0b0001, 0b0111, 0b0011];
/// let knn = hamming::self_knn(&codes, 1, 2)?;
/// assert_eq!(knn[0].iter().map(|nb| nb.row).collect::<Vec<_>>(), [1, 3]);
/// assert_eq!(knn[2].iter().map(|nb| (nb.row, nb.distance)).collect::<Vec<_>>(), [(3, 1), (1, 2)]);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `words` is 0 or above [`MAX_WORDS`], the length of `codes`
/// is not a multiple of `words`, or there are more than `2^32` codes.
pub fn self_knn(codes: &[u64], words: usize, k: usize) -> Result<Vec<Vec<Neighbor>>> {
    Kernels::dispatched().self_knn(codes, words, k)
}
