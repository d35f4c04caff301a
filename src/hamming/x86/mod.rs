//! x86-64 kernel sets: `popcnt`, `avx2` and `avx512` (see the table in [`super`]; the
//! `avx512` set's own kernels are in [`avx512`], its other entries are the `avx2` set's).
//!
//! Every entry point is an `unsafe fn` with `#[target_feature(enable = ...)]`: calling it is
//! sound only on a CPU with those features, which [`super::Kernels`] checks at run time before
//! handing out the function table. The smallest helpers holding AVX2 intrinsics are
//! `#[inline(always)]` `unsafe fn`s without target features of their own, only called from
//! AVX2 functions, into which they are inlined (the `memchr` crate uses the same pattern).
//!
//! The `popcnt` set is the portable loops of [`super::scalar`] instantiated inside
//! `#[target_feature(enable = "popcnt")]` functions, so that `u64::count_ones` becomes one
//! `POPCNT` instruction.
//!
//! # Structure of the AVX2 scans
//!
//! The hot loops ([`next_hit1`], [`next_below`]) are small `#[inline(never)]` functions that
//! run over a tile and return at the first group of four codes with a candidate (a distance
//! within the radius, or below the query's k-NN threshold); the caller handles the rare hits
//! (`emit`, heap insertion) and resumes after that group. Inlined into a loop that also
//! contains those calls, LLVM reloads the query vectors and the popcount constants from
//! memory at every group, which measured 5-25% slower. The functions that call them own
//! nothing that needs dropping: rustc attaches `noinline` to call sites, and a call that may
//! unwind through a cleanup (an `invoke`) did not get it, so LLVM inlined the loop again.

use core::arch::x86_64::*;

mod avx512;
pub(crate) use avx512::{distances_avx512, pair_tile_avx512, scan_knn_avx512, transpose_groups8};

use super::TopK;
use super::scalar::{
    PairTile, TILE_BYTES, by_words, dist_words, distance_body, distances_body, pair_tile_body,
    popcount_body, scan_knn_body, scan_radius_body, tile_codes,
};

// ------------------------------------------------------------------------------------------
// popcnt set

/// Also the short-input path of the `avx2` set, hence `#[inline(never)]`: inlined into an
/// AVX2 function, the loop gets vectorized with `vpshufb`, which is slower than `POPCNT` on
/// short inputs.
#[target_feature(enable = "popcnt")]
#[inline(never)]
pub(crate) unsafe fn distance_popcnt(a: &[u64], b: &[u64]) -> u32 {
    distance_body(a, b)
}

/// Also the short-input path of the `avx2` set (see [`distance_popcnt`]).
#[target_feature(enable = "popcnt")]
#[inline(never)]
pub(crate) unsafe fn popcount_popcnt(words: &[u64]) -> u64 {
    popcount_body(words)
}

#[target_feature(enable = "popcnt")]
pub(crate) unsafe fn distances_popcnt(query: &[u64], codes: &[u64], words: usize, out: &mut [u32]) {
    by_words!(words, distances_body(query, codes, words, out))
}

#[target_feature(enable = "popcnt")]
pub(crate) unsafe fn scan_radius_popcnt(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    by_words!(words, scan_radius_body(queries, codes, words, radius, emit))
}

#[target_feature(enable = "popcnt")]
pub(crate) unsafe fn scan_knn_popcnt(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    heaps: &mut [TopK],
) {
    by_words!(words, scan_knn_body(queries, codes, words, heaps))
}

#[target_feature(enable = "popcnt")]
pub(crate) unsafe fn pair_tile_popcnt(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    by_words!(p.words, pair_tile_body(p, out, groups))
}

// ------------------------------------------------------------------------------------------
// AVX2 building blocks

/// Slices of at least this many words use the Harley–Seal popcount (512 bytes, libpopcnt's
/// crossover); shorter ones use `POPCNT` per word.
const HARLEY_SEAL_MIN_WORDS: usize = 64;

/// Queries register-blocked against each vector of four 64-bit codes in the one-word radius
/// scan.
const RADIUS1_BLOCK: usize = 8;

/// Batches of fewer queries do not amortise the transposition of the tiles of codes wider
/// than one word: they use `POPCNT` per word instead (the loops of the `popcnt` set). On Zen
/// 3, with 256-bit codes, one query ran at 0.4G pairs/s transposed against 0.65G with
/// `POPCNT`, and the transposed scan overtakes from about 4 queries on (0.75G against 0.65G,
/// then 0.9G with 8 and 1.05G with 64).
const TRANSPOSE_MIN_QUERIES: usize = 4;

/// The constants of the nibble-table popcount.
#[derive(Clone, Copy)]
struct Nibble {
    low_mask: __m256i,
    table: __m256i,
}

impl Nibble {
    /// # Safety
    /// The CPU has AVX2.
    #[inline(always)]
    unsafe fn new() -> Self {
        // SAFETY: the caller guarantees AVX2.
        unsafe {
            Nibble {
                low_mask: _mm256_set1_epi8(0x0f),
                table: _mm256_setr_epi8(
                    0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2,
                    2, 3, 2, 3, 3, 4,
                ),
            }
        }
    }

    /// Popcount of each byte of `x` (values 0..=8).
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[inline(always)]
    unsafe fn bytes(self, x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2; register-only operations.
        unsafe {
            let lo = _mm256_and_si256(x, self.low_mask);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(x), self.low_mask);
            _mm256_add_epi8(
                _mm256_shuffle_epi8(self.table, lo),
                _mm256_shuffle_epi8(self.table, hi),
            )
        }
    }
}

/// Sums each group of 8 bytes of `x` into the corresponding 64-bit lane.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn sum_bytes(x: __m256i) -> __m256i {
    // SAFETY: the caller guarantees AVX2; register-only operation.
    unsafe { _mm256_sad_epu8(x, _mm256_setzero_si256()) }
}

/// Loads four words from `p[0..4]`.
///
/// # Safety
/// The CPU has AVX2 and `p.len() >= 4`.
#[inline(always)]
unsafe fn load4(p: &[u64]) -> __m256i {
    debug_assert!(p.len() >= 4);
    // SAFETY: the caller guarantees AVX2 and four readable words; `loadu` has no alignment
    // requirement.
    unsafe { _mm256_loadu_si256(p.as_ptr().cast()) }
}

/// The four 64-bit lanes of `x`.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn lanes(x: __m256i) -> [u64; 4] {
    let mut out = [0u64; 4];
    // SAFETY: the caller guarantees AVX2; `out` has room for 32 bytes.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), x) };
    out
}

/// Broadcast of a distance threshold for the signed 64-bit compare (distances are far below
/// `i64::MAX`, so clamping keeps the order).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn splat_threshold(thr: u64) -> __m256i {
    // SAFETY: the caller guarantees AVX2.
    unsafe { _mm256_set1_epi64x(thr.min(i64::MAX as u64) as i64) }
}

/// Carry-save adder: `(high, low)` bits of `a + b + c`, bitwise.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn csa(a: __m256i, b: __m256i, c: __m256i) -> (__m256i, __m256i) {
    // SAFETY: the caller guarantees AVX2; register-only operations.
    unsafe {
        let u = _mm256_xor_si256(a, b);
        let high = _mm256_or_si256(_mm256_and_si256(a, b), _mm256_and_si256(u, c));
        (high, _mm256_xor_si256(u, c))
    }
}

/// Total popcount of `nvec` vectors produced by `load(0..nvec)`: the AVX2 Harley–Seal
/// algorithm (Muła, Kurz, Lemire 2018), 16 vectors per step through a tree of carry-save
/// adders, so only one in 16 vectors goes through the nibble-table popcount.
///
/// # Safety
/// The CPU has AVX2 and `load(i)` is sound for every `i < nvec`.
#[inline(always)]
unsafe fn harley_seal(nvec: usize, load: impl Fn(usize) -> __m256i) -> u64 {
    // SAFETY: the caller guarantees AVX2 and valid loads for i < nvec; the loop only asks for
    // indices below nvec.
    unsafe {
        let nib = Nibble::new();
        let zero = _mm256_setzero_si256();
        let (mut total, mut ones, mut twos, mut fours, mut eights) = (zero, zero, zero, zero, zero);
        let mut i = 0;
        while i + 16 <= nvec {
            let (twos_a, o) = csa(ones, load(i), load(i + 1));
            let (twos_b, o) = csa(o, load(i + 2), load(i + 3));
            let (fours_a, t) = csa(twos, twos_a, twos_b);
            let (twos_a, o) = csa(o, load(i + 4), load(i + 5));
            let (twos_b, o) = csa(o, load(i + 6), load(i + 7));
            let (fours_b, t) = csa(t, twos_a, twos_b);
            let (eights_a, f) = csa(fours, fours_a, fours_b);
            let (twos_a, o) = csa(o, load(i + 8), load(i + 9));
            let (twos_b, o) = csa(o, load(i + 10), load(i + 11));
            let (fours_a, t) = csa(t, twos_a, twos_b);
            let (twos_a, o) = csa(o, load(i + 12), load(i + 13));
            let (twos_b, o) = csa(o, load(i + 14), load(i + 15));
            let (fours_b, t) = csa(t, twos_a, twos_b);
            let (eights_b, f) = csa(f, fours_a, fours_b);
            let (sixteens, e) = csa(eights, eights_a, eights_b);
            total = _mm256_add_epi64(total, sum_bytes(nib.bytes(sixteens)));
            (ones, twos, fours, eights) = (o, t, f, e);
            i += 16;
        }
        total = _mm256_slli_epi64::<4>(total);
        total = _mm256_add_epi64(total, _mm256_slli_epi64::<3>(sum_bytes(nib.bytes(eights))));
        total = _mm256_add_epi64(total, _mm256_slli_epi64::<2>(sum_bytes(nib.bytes(fours))));
        total = _mm256_add_epi64(total, _mm256_slli_epi64::<1>(sum_bytes(nib.bytes(twos))));
        total = _mm256_add_epi64(total, sum_bytes(nib.bytes(ones)));
        while i < nvec {
            total = _mm256_add_epi64(total, sum_bytes(nib.bytes(load(i))));
            i += 1;
        }
        lanes(total).iter().sum()
    }
}

// ------------------------------------------------------------------------------------------
// avx2 set: distance, popcount, distances

/// Harley–Seal distance of two slices of at least [`HARLEY_SEAL_MIN_WORDS`] words, out of
/// line so that the short path of [`distance_avx2`] stays a leaf without the stack frame of
/// the carry-save tree.
///
/// # Safety
/// The CPU has AVX2 and POPCNT; `a.len() == b.len()`.
#[target_feature(enable = "avx2,popcnt")]
#[inline(never)]
unsafe fn distance_harley_seal(a: &[u64], b: &[u64]) -> u32 {
    let n = a.len();
    let nvec = n / 4;
    // SAFETY: the caller guarantees AVX2; for i < nvec, words 4i..4i+4 lie within both
    // slices of length n >= 4 * nvec.
    let head = unsafe {
        harley_seal(nvec, |i| {
            _mm256_xor_si256(load4(&a[4 * i..]), load4(&b[4 * i..]))
        })
    };
    head as u32 + dist_words(&a[4 * nvec..], &b[4 * nvec..], n - 4 * nvec)
}

#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn distance_avx2(a: &[u64], b: &[u64]) -> u32 {
    let n = a.len().min(b.len());
    if n < 8 {
        // SAFETY: POPCNT is enabled in this function.
        unsafe { distance_popcnt(a, b) }
    } else if n < HARLEY_SEAL_MIN_WORDS {
        // Vectorized by LLVM here (`vpshufb`), which beats `POPCNT` from about 16 words on.
        distance_body(a, b)
    } else {
        // SAFETY: AVX2 and POPCNT are enabled in this function; equal lengths.
        unsafe { distance_harley_seal(&a[..n], &b[..n]) }
    }
}

#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn popcount_avx2(words: &[u64]) -> u64 {
    if words.len() < HARLEY_SEAL_MIN_WORDS {
        // SAFETY: POPCNT is enabled in this function.
        return unsafe { popcount_popcnt(words) };
    }
    let nvec = words.len() / 4;
    // SAFETY: AVX2 is enabled in this function; words 4i..4i+4 exist for i < nvec.
    let head = unsafe { harley_seal(nvec, |i| load4(&words[4 * i..])) };
    head + popcount_body(&words[4 * nvec..])
}

// ------------------------------------------------------------------------------------------
// avx2 set: batched scans

/// Emits every pair of `qs` (queries `q0..`) and `codes` (codes `i0..`, one word each) within
/// `radius`: the exact re-check after a vector compare reported a hit, and the tail of a tile.
#[target_feature(enable = "popcnt")]
#[inline(never)]
unsafe fn emit_within1(
    qs: &[u64],
    q0: usize,
    codes: &[u64],
    i0: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    for (j, &q) in qs.iter().enumerate() {
        for (l, &c) in codes.iter().enumerate() {
            let d = (c ^ q).count_ones();
            if d <= radius {
                emit(q0 + j, i0 + l, d);
            }
        }
    }
}

/// First group of four one-word codes at or after group `g` of `groups` where some query of
/// `qv` is within the radius (`r1` is `radius + 1` in every lane), if any.
///
/// Not inlined, so that its loop keeps the queries and constants in registers (see the
/// module documentation); hits are handled by the caller, which resumes after the returned
/// group.
///
/// # Safety
/// The CPU has AVX2; every group has four words.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn next_hit1<const Q: usize>(
    nib: Nibble,
    groups: &[[u64; 4]],
    mut g: usize,
    qv: &[__m256i; Q],
    r1: __m256i,
) -> Option<usize> {
    // SAFETY: the caller guarantees AVX2; `load4` reads the four words of a group.
    unsafe {
        while g < groups.len() {
            let c = load4(&groups[g]);
            let mut hit = _mm256_setzero_si256();
            for &q in qv {
                let d = sum_bytes(nib.bytes(_mm256_xor_si256(c, q)));
                hit = _mm256_or_si256(hit, _mm256_cmpgt_epi64(r1, d));
            }
            if _mm256_testz_si256(hit, hit) == 0 {
                return Some(g);
            }
            g += 1;
        }
        None
    }
}

/// One-word radius scan of the tile `tile` (codes `t0..`) for the `Q` queries `qs` (queries
/// `q0..`): each vector of four codes is loaded once and compared with all `Q` queries.
///
/// # Safety
/// The CPU has AVX2 and POPCNT; `qs.len() == Q`.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn radius1_block<const Q: usize>(
    qs: &[u64],
    q0: usize,
    tile: &[u64],
    t0: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    debug_assert_eq!(qs.len(), Q);
    let (groups, rem) = tile.split_at(tile.len() / 4 * 4);
    let groups: &[[u64; 4]] = bytemuck::cast_slice(groups);
    // SAFETY: the caller guarantees AVX2 and POPCNT (for `emit_within1`); every group has 4
    // words.
    unsafe {
        let nib = Nibble::new();
        let qv: [__m256i; Q] = core::array::from_fn(|j| _mm256_set1_epi64x(qs[j] as i64));
        let r1 = _mm256_set1_epi64x(i64::from(radius) + 1);
        let mut g = 0;
        while let Some(hit) = next_hit1(nib, groups, g, &qv, r1) {
            emit_within1(qs, q0, &groups[hit], t0 + 4 * hit, radius, emit);
            g = hit + 1;
        }
        emit_within1(qs, q0, rem, t0 + 4 * groups.len(), radius, emit);
    }
}

/// One-word radius scan: tiles of [`TILE_BYTES`], queries in register blocks of 8 (then 4,
/// then 1 for the rest).
///
/// # Safety
/// The CPU has AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn scan_radius1(
    queries: &[u64],
    codes: &[u64],
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    let tile = tile_codes(1, TILE_BYTES);
    for (t, tcodes) in codes.chunks(tile).enumerate() {
        let t0 = t * tile;
        let mut q0 = 0;
        // SAFETY: the caller guarantees AVX2 and POPCNT; each call gets exactly Q queries.
        unsafe {
            while q0 + RADIUS1_BLOCK <= queries.len() {
                let qs = &queries[q0..q0 + RADIUS1_BLOCK];
                radius1_block::<RADIUS1_BLOCK>(qs, q0, tcodes, t0, radius, emit);
                q0 += RADIUS1_BLOCK;
            }
            if q0 + 4 <= queries.len() {
                radius1_block::<4>(&queries[q0..q0 + 4], q0, tcodes, t0, radius, emit);
                q0 += 4;
            }
            while q0 < queries.len() {
                radius1_block::<1>(&queries[q0..q0 + 1], q0, tcodes, t0, radius, emit);
                q0 += 1;
            }
        }
    }
}

/// Copies the row-major codes `src` (a multiple of `G` codes of `w` words, `G` a multiple of
/// 4) into `dst` group by group: within a group of `G` codes, word `j` of code `l` goes to
/// `G * j + l`, so that word `j` of the group's codes is one vector (`G = 4`: the `avx2`
/// layout, 256-bit vectors; `G = 8`: the `avx512` layout).
///
/// Blocks of 4 words by 4 codes are transposed in registers (two unpacks and two lane
/// permutes per output vector pair), the last `w % 4` words of each code one by one. A scalar
/// copy took about 7 cycles per 256-bit code, as much as comparing it with one query.
///
/// # Safety
/// The CPU has AVX2; `dst.len() == src.len()`, a multiple of `G * w`.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn transpose_lanes<const G: usize>(src: &[u64], w: usize, dst: &mut [u64]) {
    const { assert!(G > 0 && G.is_multiple_of(4)) };
    let w4 = w / 4 * 4;
    for (s, d) in src.chunks_exact(G * w).zip(dst.chunks_exact_mut(G * w)) {
        for h in (0..G).step_by(4) {
            // Codes h..h + 4 of the group, to lanes h..h + 4 of each word's vector.
            let s = &s[h * w..(h + 4) * w];
            // SAFETY: the caller guarantees AVX2; the loads read words j..j+4 < w4 <= w of
            // each of the four codes, the stores write 4 words at G(j + k) + h + 4 <= G * w.
            unsafe {
                for j in (0..w4).step_by(4) {
                    let r0 = load4(&s[j..]);
                    let r1 = load4(&s[w + j..]);
                    let r2 = load4(&s[2 * w + j..]);
                    let r3 = load4(&s[3 * w + j..]);
                    let t0 = _mm256_unpacklo_epi64(r0, r1);
                    let t1 = _mm256_unpackhi_epi64(r0, r1);
                    let t2 = _mm256_unpacklo_epi64(r2, r3);
                    let t3 = _mm256_unpackhi_epi64(r2, r3);
                    let cols = [
                        _mm256_permute2x128_si256::<0x20>(t0, t2),
                        _mm256_permute2x128_si256::<0x20>(t1, t3),
                        _mm256_permute2x128_si256::<0x31>(t0, t2),
                        _mm256_permute2x128_si256::<0x31>(t1, t3),
                    ];
                    for (k, c) in cols.into_iter().enumerate() {
                        let at = G * (j + k) + h;
                        _mm256_storeu_si256(d[at..at + 4].as_mut_ptr().cast(), c);
                    }
                }
            }
            for j in w4..w {
                for l in 0..4 {
                    d[G * j + h + l] = s[l * w + j];
                }
            }
        }
    }
}

/// [`transpose_lanes`] into the `avx2` layout (groups of four codes).
///
/// # Safety
/// As [`transpose_lanes`] with `G = 4`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn transpose_groups(src: &[u64], w: usize, dst: &mut [u64]) {
    // SAFETY: the caller's contract.
    unsafe { transpose_lanes::<4>(src, w, dst) }
}

/// A query broadcast word by word (`W` words in registers; with `W == 0` the words are
/// broadcast from memory as needed).
#[derive(Clone, Copy)]
struct QueryVec<'a, const W: usize> {
    words: &'a [u64],
    splat: [__m256i; W],
}

impl<'a, const W: usize> QueryVec<'a, W> {
    /// # Safety
    /// The CPU has AVX2; `words.len() >= W`.
    #[inline(always)]
    unsafe fn new(words: &'a [u64]) -> Self {
        // SAFETY: the caller guarantees AVX2.
        let splat = core::array::from_fn(|j| unsafe { _mm256_set1_epi64x(words[j] as i64) });
        QueryVec { words, splat }
    }

    /// Word `j` of the query in every lane.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[inline(always)]
    unsafe fn word(&self, j: usize) -> __m256i {
        if W == 0 {
            // SAFETY: the caller guarantees AVX2.
            unsafe { _mm256_set1_epi64x(self.words[j] as i64) }
        } else {
            self.splat[j]
        }
    }
}

/// Distances of the query to the four codes of a transposed group `grp` (`4 * w` words):
/// byte counts of up to 31 words are added as bytes (at most 8 * 31 = 248) before one
/// `vpsadbw`.
///
/// # Safety
/// The CPU has AVX2; `grp.len() == 4 * w`, `w <= query length`.
#[inline(always)]
unsafe fn group_distances<const W: usize>(
    nib: Nibble,
    grp: &[u64],
    q: &QueryVec<'_, W>,
    w: usize,
) -> __m256i {
    // SAFETY: the caller guarantees AVX2; word j of the group is grp[4j..4j+4], in bounds for
    // j < w.
    unsafe {
        let mut acc = _mm256_setzero_si256();
        let mut j0 = 0;
        while j0 < w {
            let j1 = w.min(j0 + 31);
            let mut bytes = _mm256_setzero_si256();
            for j in j0..j1 {
                let x = _mm256_xor_si256(load4(&grp[4 * j..]), q.word(j));
                bytes = _mm256_add_epi8(bytes, nib.bytes(x));
            }
            acc = _mm256_add_epi64(acc, sum_bytes(bytes));
            j0 = j1;
        }
        acc
    }
}

/// First group at or after group `g` of the transposed tile `tbuf` (groups of `4 * w` words)
/// with some distance to the query below `thr` (signed 64-bit compare in every lane), with
/// the group's four distances.
///
/// Not inlined (see the module documentation); hits are handled by the caller, which
/// resumes after the returned group.
///
/// # Safety
/// The CPU has AVX2; `tbuf.len()` is a multiple of `4 * w` and the query has `w` words.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn next_below<const W: usize>(
    nib: Nibble,
    tbuf: &[u64],
    w: usize,
    mut g: usize,
    q: &QueryVec<'_, W>,
    thr: __m256i,
) -> Option<(usize, [u64; 4])> {
    let groups = tbuf.len() / (4 * w);
    // SAFETY: the caller guarantees AVX2; group g < groups is tbuf[4wg..4w(g+1)].
    unsafe {
        while g < groups {
            let d = group_distances(nib, &tbuf[4 * w * g..4 * w * (g + 1)], q, w);
            let below = _mm256_cmpgt_epi64(thr, d);
            if _mm256_testz_si256(below, below) == 0 {
                return Some((g, lanes(d)));
            }
            g += 1;
        }
        None
    }
}

/// Radius scan of codes of `W` words (0: `words`) through transposed tiles.
///
/// # Safety
/// The CPU has AVX2 and POPCNT; shapes as checked by the public functions.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn scan_radius_t<const W: usize>(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    let w = if W == 0 { words } else { W };
    let n = codes.len() / w;
    let tile = tile_codes(w, TILE_BYTES);
    let mut buf = vec![0u64; tile.min(n) / 4 * 4 * w];
    let mut t0 = 0;
    while t0 < n {
        let t1 = n.min(t0 + tile);
        let full = (t1 - t0) / 4 * 4;
        let src = &codes[t0 * w..t1 * w];
        // SAFETY: the caller guarantees AVX2 and POPCNT; `buf[..full * w]` has the length of
        // the first `full` codes of `src`, and then holds them transposed.
        unsafe {
            transpose_groups(&src[..full * w], w, &mut buf[..full * w]);
            radius_tile::<W>(queries, src, &buf[..full * w], t0, w, radius, emit);
        }
        t0 = t1;
    }
}

/// The radius scan of one tile: codes `t0..` given row-major in `src` and, for the first
/// `tbuf.len() / w` of them, transposed in `tbuf`. A separate function owning nothing, so
/// that its calls to [`next_below`] stay calls (see the module documentation).
///
/// # Safety
/// The CPU has AVX2 and POPCNT; `tbuf.len()` is a multiple of `4 * w`, `src` holds at least
/// `tbuf.len() / w` codes, the queries have `w` words.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn radius_tile<const W: usize>(
    queries: &[u64],
    src: &[u64],
    tbuf: &[u64],
    t0: usize,
    w: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    let full = tbuf.len() / w;
    for (qi, q) in queries.chunks_exact(w).enumerate() {
        // SAFETY: the caller guarantees AVX2 and POPCNT; groups have 4 * w words and the
        // query has w words.
        unsafe {
            let nib = Nibble::new();
            let qv = QueryVec::<W>::new(q);
            let r1 = _mm256_set1_epi64x(i64::from(radius) + 1);
            let mut g = 0;
            while let Some((hit, d)) = next_below(nib, tbuf, w, g, &qv, r1) {
                for (l, &dl) in d.iter().enumerate() {
                    if dl <= u64::from(radius) {
                        emit(qi, t0 + 4 * hit + l, dl as u32);
                    }
                }
                g = hit + 1;
            }
        }
        for i in full..src.len() / w {
            let d = dist_words(q, &src[i * w..], w);
            if d <= radius {
                emit(qi, t0 + i, d);
            }
        }
    }
}

#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn scan_radius_avx2(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    radius: u32,
    emit: &mut dyn FnMut(usize, usize, u32),
) {
    // SAFETY: AVX2 and POPCNT are enabled in this function; shapes are the caller's contract.
    unsafe {
        if words == 1 {
            scan_radius1(queries, codes, radius, emit);
        } else if queries.len() / words < TRANSPOSE_MIN_QUERIES {
            by_words!(words, scan_radius_body(queries, codes, words, radius, emit));
        } else {
            by_words!(words, scan_radius_t(queries, codes, words, radius, emit));
        }
    }
}

/// k-NN scan of codes of `W` words (0: `words`) through transposed tiles (one-word codes
/// need no transposition).
///
/// # Safety
/// The CPU has AVX2 and POPCNT; shapes as checked by the public functions, one heap per
/// query.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn scan_knn_t<const W: usize>(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    heaps: &mut [TopK],
) {
    let w = if W == 0 { words } else { W };
    let n = codes.len() / w;
    let tile = tile_codes(w, TILE_BYTES);
    let mut buf = if w == 1 {
        Vec::new()
    } else {
        vec![0u64; tile.min(n) / 4 * 4 * w]
    };
    let mut dbuf = if heaps.iter().any(|h| h.k() >= BUFFERED_MIN_K) {
        vec![0u32; tile.min(n)]
    } else {
        Vec::new()
    };
    let mut groups = vec![0u32; dbuf.len() / 4];
    let mut t0 = 0;
    while t0 < n {
        let t1 = n.min(t0 + tile);
        let full = (t1 - t0) / 4 * 4;
        let src = &codes[t0 * w..t1 * w];
        let tbuf: &[u64] = if w == 1 {
            &src[..full]
        } else {
            // SAFETY: the caller guarantees AVX2; equal lengths, a multiple of 4 * w.
            unsafe { transpose_groups(&src[..full * w], w, &mut buf[..full * w]) };
            &buf[..full * w]
        };
        // SAFETY: the caller guarantees AVX2 and POPCNT; `tbuf` holds the first `full` codes
        // of `src`, transposed.
        unsafe { knn_tile::<W>(queries, src, tbuf, t0, w, heaps, (&mut dbuf, &mut groups)) };
        t0 = t1;
    }
}

/// The k-NN scan of one tile: codes `t0..` given row-major in `src` and, for the first
/// `tbuf.len() / w` of them, transposed in `tbuf`.
///
/// A separate function owning nothing, so that its calls to [`next_below`] stay calls (see
/// the module documentation).
///
/// # Safety
/// The CPU has AVX2 and POPCNT; `tbuf.len()` is a multiple of `4 * w`, `src` holds at least
/// `tbuf.len() / w` codes, the queries have `w` words, one heap per query; `dbuf` has room
/// for the distances of a tile, `groups` for its groups of four (the buffered path).
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn knn_tile<const W: usize>(
    queries: &[u64],
    src: &[u64],
    tbuf: &[u64],
    t0: usize,
    w: usize,
    heaps: &mut [TopK],
    (dbuf, groups): (&mut [u32], &mut [u32]),
) {
    let full = tbuf.len() / w;
    for (q, heap) in queries.chunks_exact(w).zip(heaps.iter_mut()) {
        if heap.k() >= BUFFERED_MIN_K {
            let dists = &mut dbuf[..src.len() / w];
            // SAFETY: the caller guarantees AVX2 and POPCNT; `tbuf` holds `full` codes in
            // groups of 4 * w words, `dists` has room for every code of the tile and
            // `groups` for every group.
            let tile = PairTile {
                tile: tbuf,
                words: w,
                query: q,
                // Distances are below 2^32 - 1 (codes of at most `MAX_WORDS` words), so the
                // clamped "no threshold yet" still lets every code through.
                thr: u32::try_from(heap.threshold()).unwrap_or(u32::MAX),
                col: &[],
            };
            let hits = unsafe { tile_distances::<W, false>(&tile, dists, &mut groups[..]) };
            for i in full..src.len() / w {
                dists[i] = dist_words(q, &src[i * w..], w);
            }
            heap.prime(dists);
            heap.offer_groups(dists, &groups[..hits], full, t0);
            continue;
        }
        // SAFETY: the caller guarantees AVX2 and POPCNT; groups have 4 * w words and the
        // query has w words.
        unsafe {
            let nib = Nibble::new();
            let qv = QueryVec::<W>::new(q);
            let mut g = 0;
            while let Some((hit, d)) =
                next_below(nib, tbuf, w, g, &qv, splat_threshold(heap.threshold()))
            {
                for (l, &dl) in d.iter().enumerate() {
                    if dl < heap.threshold() {
                        heap.push(dl as u32, t0 + 4 * hit + l);
                    }
                }
                g = hit + 1;
            }
        }
        for i in full..src.len() / w {
            let d = dist_words(q, &src[i * w..], w);
            if u64::from(d) < heap.threshold() {
                heap.push(d, t0 + i);
            }
        }
    }
}

/// Queries asking for at least this many neighbours (all but `k = 0`) take the buffered
/// path of the k-NN scan: the distances of a whole tile are stored first
/// ([`tile_distances`], no branch, the groups below the threshold listed), then offered
/// ([`TopK::offer_groups`]). Returning from [`next_below`] at each group with a candidate
/// cost as much as the scan itself for `k` in the hundreds (256-bit codes, 100 neighbours
/// among 20,000: 0.9 s against 0.66 s buffered), and the buffered path was faster for
/// `k = 10` too (0.435 s against 0.525 s on the same codes).
const BUFFERED_MIN_K: usize = 1;

/// Packs the four 64-bit lanes of `d` (each below 2^32) into four `u32` at `out[0..4]`.
///
/// # Safety
/// The CPU has AVX2; `out.len() >= 4`.
#[inline(always)]
unsafe fn store_u32x4(d: __m256i, out: &mut [u32]) {
    debug_assert!(out.len() >= 4);
    // SAFETY: the caller guarantees AVX2 and room for four u32 (16 bytes); `storeu` has no
    // alignment requirement.
    unsafe {
        let even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        let packed = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(d, even));
        _mm_storeu_si128(out.as_mut_ptr().cast(), packed);
    }
}

/// Distances of one query to one-word codes: four codes per vector.
///
/// # Safety
/// The CPU has AVX2 and POPCNT; `codes.len() == out.len()`.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn distances1(q: u64, codes: &[u64], out: &mut [u32]) {
    let full = codes.len() / 4 * 4;
    let (head, tail) = out.split_at_mut(full);
    // SAFETY: the caller guarantees AVX2; each group has 4 words and each output chunk 4 slots.
    unsafe {
        let nib = Nibble::new();
        let qv = _mm256_set1_epi64x(q as i64);
        for (grp, o) in codes.chunks_exact(4).zip(head.chunks_exact_mut(4)) {
            store_u32x4(sum_bytes(nib.bytes(_mm256_xor_si256(load4(grp), qv))), o);
        }
    }
    for (&c, o) in codes[full..].iter().zip(tail) {
        *o = (c ^ q).count_ones();
    }
}

/// Distances of one query to codes whose width `w` is a multiple of 4 (`W`, or `words` when
/// `W == 0`), code by code ("horizontal"): the byte counts of a code's vectors are added up,
/// `vpsadbw` leaves four partial sums per code, and two unpacks and two lane permutes turn
/// the partial sums of four codes into their four distances. No transposition: a single
/// query would not amortise it.
///
/// # Safety
/// The CPU has AVX2 and POPCNT; `w % 4 == 0`, the query has `w` words, `codes.len() ==
/// out.len() * w`.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn distances_rows<const W: usize>(
    query: &[u64],
    codes: &[u64],
    words: usize,
    out: &mut [u32],
) {
    let w = if W == 0 { words } else { W };
    debug_assert_eq!(w % 4, 0);
    let q = &query[..w];
    let full = out.len() / 4 * 4;
    let (head, tail) = out.split_at_mut(full);
    // SAFETY: the caller guarantees AVX2; every load reads four words inside a code of `w`
    // words (a multiple of 4) or inside the query; output chunks have four slots.
    unsafe {
        let nib = Nibble::new();
        let code_sums = |row: &[u64]| {
            let mut acc = _mm256_setzero_si256();
            let mut j0 = 0;
            while j0 < w {
                // At most 31 vectors of byte counts (8 each) per byte before `vpsadbw`.
                let j1 = w.min(j0 + 4 * 31);
                let mut bytes = _mm256_setzero_si256();
                for j in (j0..j1).step_by(4) {
                    let x = _mm256_xor_si256(load4(&row[j..]), load4(&q[j..]));
                    bytes = _mm256_add_epi8(bytes, nib.bytes(x));
                }
                acc = _mm256_add_epi64(acc, sum_bytes(bytes));
                j0 = j1;
            }
            acc
        };
        for (rows, o) in codes.chunks_exact(4 * w).zip(head.chunks_exact_mut(4)) {
            let s0 = code_sums(&rows[..w]);
            let s1 = code_sums(&rows[w..2 * w]);
            let s2 = code_sums(&rows[2 * w..3 * w]);
            let s3 = code_sums(&rows[3 * w..]);
            // [s0.0+s0.1, s1.0+s1.1 | s0.2+s0.3, s1.2+s1.3], and the same for codes 2, 3.
            let t01 =
                _mm256_add_epi64(_mm256_unpacklo_epi64(s0, s1), _mm256_unpackhi_epi64(s0, s1));
            let t23 =
                _mm256_add_epi64(_mm256_unpacklo_epi64(s2, s3), _mm256_unpackhi_epi64(s2, s3));
            let d = _mm256_add_epi64(
                _mm256_permute2x128_si256::<0x20>(t01, t23),
                _mm256_permute2x128_si256::<0x31>(t01, t23),
            );
            store_u32x4(d, o);
        }
    }
    for (i, o) in tail.iter_mut().enumerate() {
        *o = dist_words(q, &codes[(full + i) * w..], w);
    }
}

/// AVX2 `distances`: vertical for one-word codes, horizontal for widths that are multiples
/// of 4 words; other widths use `POPCNT` per word (the loop of the `popcnt` set).
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn distances_avx2(query: &[u64], codes: &[u64], words: usize, out: &mut [u32]) {
    // SAFETY: AVX2 and POPCNT are enabled in this function; shapes are the caller's contract,
    // and the width conditions of each kernel are checked here.
    unsafe {
        match words {
            1 => distances1(query[0], codes, out),
            4 => distances_rows::<4>(query, codes, words, out),
            8 => distances_rows::<8>(query, codes, words, out),
            w if w % 4 == 0 => distances_rows::<0>(query, codes, words, out),
            _ => by_words!(words, distances_body(query, codes, words, out)),
        }
    }
}

#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn scan_knn_avx2(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    heaps: &mut [TopK],
) {
    if words > 1 && queries.len() / words < TRANSPOSE_MIN_QUERIES {
        by_words!(words, scan_knn_body(queries, codes, words, heaps));
        return;
    }
    // SAFETY: AVX2 and POPCNT are enabled in this function; shapes are the caller's contract.
    unsafe { by_words!(words, scan_knn_t(queries, codes, words, heaps)) }
}

/// Distances of the query to the codes of a transposed tile (groups of `4 * w` words) into
/// `out[..tile.len() / w]`; the groups with a distance below the query's `thr`, or with
/// `COLS` below the code's own threshold in `col` (four `u32` widened to the four 64-bit
/// lanes), are listed in `groups` (without a branch: each group is written, and the count
/// advances when it has such a distance). Returns the number of groups listed. The buffered
/// k-NN scan's tiles (`COLS = false`) and the pair tiles of [`super::self_knn`].
///
/// # Safety
/// The CPU has AVX2; the tile's length is a multiple of `4 * w`, the query has `w` words,
/// `out.len() >= tile.len() / w`, `groups.len() >= tile.len() / (4 * w)`, and with `COLS`
/// `col.len() >= tile.len() / w`.
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn tile_distances<const W: usize, const COLS: bool>(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    let w = if W == 0 { p.words } else { W };
    let mut hits = 0;
    // SAFETY: the caller guarantees AVX2 and the shapes: group g is tile[4wg..4w(g+1)], its
    // thresholds col[4g..4g+4] (16 bytes, unaligned load), its distances go to
    // out[4g..4g+4] and its number to groups[hits] with hits <= g.
    unsafe {
        let nib = Nibble::new();
        let qv = QueryVec::<W>::new(p.query);
        let t = splat_threshold(u64::from(p.thr));
        for (g, (grp, o)) in p
            .tile
            .chunks_exact(4 * w)
            .zip(out.chunks_exact_mut(4))
            .enumerate()
        {
            let d = group_distances(nib, grp, &qv, w);
            store_u32x4(d, o);
            let mut below = _mm256_cmpgt_epi64(t, d);
            if COLS {
                let c = &p.col[4 * g..4 * g + 4];
                let ct = _mm256_cvtepu32_epi64(_mm_loadu_si128(c.as_ptr().cast()));
                below = _mm256_or_si256(below, _mm256_cmpgt_epi64(ct, d));
            }
            groups[hits] = g as u32;
            hits += usize::from(_mm256_testz_si256(below, below) == 0);
        }
    }
    hits
}

/// [`tile_distances`] with the codes' own thresholds, for [`by_words`].
///
/// # Safety
/// As [`tile_distances`].
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn pair_tile_t<const W: usize>(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    // SAFETY: the caller's contract.
    unsafe { tile_distances::<W, true>(p, out, groups) }
}

#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn pair_tile_avx2(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    // SAFETY: AVX2 and POPCNT are enabled in this function; shapes are the caller's contract.
    unsafe { by_words!(p.words, pair_tile_t(p, out, groups)) }
}
