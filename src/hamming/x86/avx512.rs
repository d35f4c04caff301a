//! The `avx512` kernel set's own kernels: AVX-512F vectors of eight 64-bit lanes and the
//! `vpopcntq` of AVX512_VPOPCNTDQ, which counts the bits of all eight lanes in one
//! instruction (the `avx2` set needs about eight instructions per vector of four: a
//! `vpshufb` nibble table and byte sums).
//!
//! * The k-NN scan and the pair tiles of [`super::super::self_knn`] read codes transposed in
//!   groups of eight ([`transpose_groups8`]: word `j` of eight codes is one vector), so that
//!   one `vpxorq`, one `vpopcntq` and one `vpaddq` a word give the distances of eight codes;
//!   the eight distances are compared with the thresholds by mask.
//! * [`distances_avx512`] (one query, row-major codes): one-word codes eight to a vector;
//!   wider codes a vector of eight words at a time (a masked load for the last words), the
//!   lanes of eight codes summed by a tree of unpacks and lane shuffles.
//!
//! The other operations of the set (radius scans, one distance, popcount) are the `avx2`
//! set's: 512-bit vectors did not pay there (see [`super::super`]).

use core::arch::x86_64::*;

use super::super::TopK;
use super::super::scalar::{
    GROUP_CODES, PairTile, TILE_BYTES, by_words, dist_words, scan_knn_body, tile_codes,
};
use super::{TRANSPOSE_MIN_QUERIES, transpose_lanes};

/// Codes per vector: eight 64-bit lanes (the widest layout, [`GROUP_CODES`]).
const LANES: usize = 8;
const _: () = assert!(LANES == GROUP_CODES);

/// Loads eight words from `p[0..8]`.
///
/// # Safety
/// The CPU has AVX-512F and `p.len() >= 8`.
#[inline(always)]
unsafe fn load8(p: &[u64]) -> __m512i {
    debug_assert!(p.len() >= 8);
    // SAFETY: the caller guarantees AVX-512F and eight readable words; `loadu` has no
    // alignment requirement.
    unsafe { _mm512_loadu_si512(p.as_ptr().cast()) }
}

/// Narrows the eight 64-bit lanes of `d` (each below 2^32) to eight `u32` at `out[0..8]`.
///
/// # Safety
/// The CPU has AVX-512F; `out.len() >= 8`.
#[inline(always)]
unsafe fn store_u32x8(d: __m512i, out: &mut [u32]) {
    debug_assert!(out.len() >= 8);
    // SAFETY: the caller guarantees AVX-512F and room for eight u32 (32 bytes); `storeu` has
    // no alignment requirement.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm512_cvtepi64_epi32(d)) }
}

/// A query broadcast word by word (`W` words in registers; with `W == 0` each word is
/// broadcast from memory when used).
struct Query8<'a, const W: usize> {
    words: &'a [u64],
    splat: [__m512i; W],
}

impl<'a, const W: usize> Query8<'a, W> {
    /// # Safety
    /// The CPU has AVX-512F; `words.len() >= W`.
    #[inline(always)]
    unsafe fn new(words: &'a [u64]) -> Self {
        // SAFETY: the caller guarantees AVX-512F. A loop, not `array::from_fn`, which was
        // left as a call (its array through the stack at every tile).
        unsafe {
            let mut splat = [_mm512_setzero_si512(); W];
            for (s, &x) in splat.iter_mut().zip(words) {
                *s = _mm512_set1_epi64(x as i64);
            }
            Query8 { words, splat }
        }
    }

    /// Word `j` of the query in every lane.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[inline(always)]
    unsafe fn word(&self, j: usize) -> __m512i {
        if W == 0 {
            // SAFETY: the caller guarantees AVX-512F.
            unsafe { _mm512_set1_epi64(self.words[j] as i64) }
        } else {
            self.splat[j]
        }
    }
}

/// Distances of the query to the eight codes of a transposed group `grp` (`8 * w` words).
///
/// # Safety
/// The CPU has AVX-512F and AVX512_VPOPCNTDQ; `grp.len() == 8 * w`, `w <=` query length.
#[inline(always)]
unsafe fn group_distances8<const W: usize>(grp: &[u64], q: &Query8<'_, W>, w: usize) -> __m512i {
    // SAFETY: the caller guarantees the features; word j of the group is grp[8j..8j+8], in
    // bounds for j < w.
    unsafe {
        let mut acc = _mm512_setzero_si512();
        for j in 0..w {
            let x = _mm512_xor_si512(load8(&grp[LANES * j..]), q.word(j));
            acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(x));
        }
        acc
    }
}

/// Distances of the query to the codes of a tile transposed in groups of eight (`8 * w`
/// words each) into `out[..tile.len() / w]`; the groups of **four** codes with a distance
/// below the query's `thr`, or with `COLS` below the code's own threshold in `col`, are
/// listed in `groups` (as the other sets list them: without a branch, each written and the
/// count advanced when it has such a distance), sixteen codes at a time: sixteen without any
/// such distance, most of them in the pair tiles and late in a scan, skip the listing by one
/// well-predicted branch. Returns the number listed. The buffered
/// k-NN scan's tiles (`COLS = false`) and the pair tiles of [`super::super::self_knn`].
///
/// Two groups at a time: their sixteen 64-bit distances are packed into one vector of
/// sixteen `u32` (one `vpermt2d`), stored, and compared with the thresholds as `u32` (the
/// codes' own thresholds loaded as they are), a 16-bit mask.
///
/// # Safety
/// The CPU has AVX-512F and AVX512_VPOPCNTDQ; the tile's length is a multiple of `8 * w`,
/// the query has `w` words, `out.len() >= tile.len() / w`, `groups.len() >= tile.len() /
/// (4 * w)`, and with `COLS` `col.len() >= tile.len() / w`.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[inline(never)]
unsafe fn tile_distances8<const W: usize, const COLS: bool>(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    let w = if W == 0 { p.words } else { W };
    let ngroups = p.tile.len() / (LANES * w);
    let mut hits = 0;
    // Lists the groups of four of the 4 * `quads` codes from group of four `first` on, with
    // bit l of `below` set for code l below a threshold.
    let mut list = |first: usize, quads: usize, below: u32| {
        for h in 0..quads {
            groups[hits] = (first + h) as u32;
            hits += usize::from((below >> (4 * h)) & 0xf != 0);
        }
    };
    // SAFETY: the caller guarantees the features and the shapes: group g is
    // tile[8wg..8w(g+1)], its thresholds col[8g..8g+8], its distances go to out[8g..8g+8]
    // (unaligned loads and stores of 8 or 16 u32 within these bounds), and its groups of four
    // 2g, 2g + 1 to groups[hits] with hits <= 2g + 1.
    unsafe {
        let q = Query8::<W>::new(p.query);
        let grp = |g: usize| &p.tile[LANES * w * g..LANES * w * (g + 1)];
        let t16 = _mm512_set1_epi32(p.thr as i32);
        // Lanes 0, 2, .., 14 of the first vector (as u32), then of the second.
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let mut g = 0;
        while g + 2 <= ngroups {
            let d0 = group_distances8(grp(g), &q, w);
            let d1 = group_distances8(grp(g + 1), &q, w);
            let d = _mm512_permutex2var_epi32(d0, even, d1);
            let o = &mut out[LANES * g..LANES * (g + 2)];
            _mm512_storeu_si512(o.as_mut_ptr().cast(), d);
            let mut below = _mm512_cmplt_epu32_mask(d, t16);
            if COLS {
                let c = &p.col[LANES * g..LANES * (g + 2)];
                below |= _mm512_cmplt_epu32_mask(d, _mm512_loadu_si512(c.as_ptr().cast()));
            }
            // Most sixteens have no code below a threshold: their listing (four writes and
            // counts) is skipped.
            if below != 0 {
                list(2 * g, 4, u32::from(below));
            }
            g += 2;
        }
        if g < ngroups {
            let d = group_distances8(grp(g), &q, w);
            store_u32x8(d, &mut out[LANES * g..LANES * (g + 1)]);
            let mut below = _mm512_cmplt_epu64_mask(d, _mm512_set1_epi64(i64::from(p.thr)));
            if COLS {
                let c = &p.col[LANES * g..LANES * (g + 1)];
                let ct = _mm512_cvtepu32_epi64(_mm256_loadu_si256(c.as_ptr().cast()));
                below |= _mm512_cmplt_epu64_mask(d, ct);
            }
            list(2 * g, 2, u32::from(below));
        }
    }
    hits
}

/// [`transpose_lanes`] into the `avx512` layout (groups of eight codes).
///
/// # Safety
/// As [`transpose_lanes`] with `G = 8`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn transpose_groups8(src: &[u64], w: usize, dst: &mut [u64]) {
    // SAFETY: the caller's contract.
    unsafe { transpose_lanes::<8>(src, w, dst) }
}

/// [`tile_distances8`] with the codes' own thresholds, for [`by_words`].
///
/// # Safety
/// As [`tile_distances8`].
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[inline]
unsafe fn pair_tile_t8<const W: usize>(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    // SAFETY: the caller's contract.
    unsafe { tile_distances8::<W, true>(p, out, groups) }
}

#[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,popcnt")]
pub(crate) unsafe fn pair_tile_avx512(
    p: &PairTile<'_>,
    out: &mut [u32],
    groups: &mut [u32],
) -> usize {
    // SAFETY: the features are enabled in this function; shapes are the caller's contract.
    unsafe { by_words!(p.words, pair_tile_t8(p, out, groups)) }
}

#[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,popcnt")]
pub(crate) unsafe fn scan_knn_avx512(
    queries: &[u64],
    codes: &[u64],
    words: usize,
    heaps: &mut [TopK],
) {
    if words > 1 && queries.len() / words < TRANSPOSE_MIN_QUERIES {
        by_words!(words, scan_knn_body(queries, codes, words, heaps));
        return;
    }
    // SAFETY: the features are enabled in this function; shapes are the caller's contract.
    unsafe { by_words!(words, scan_knn_t8(queries, codes, words, heaps)) }
}

/// k-NN scan of codes of `W` words (0: `words`) through tiles transposed in groups of eight
/// (one-word codes need no transposition): every query's distances to a tile are stored
/// ([`tile_distances8`], the groups below its threshold listed), then offered
/// ([`TopK::offer_groups`]), as the `avx2` set's buffered path does.
///
/// # Safety
/// The CPU has AVX-512F, AVX512_VPOPCNTDQ, AVX2 and POPCNT; shapes as checked by the public
/// functions, one heap per query.
#[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,popcnt")]
#[inline]
unsafe fn scan_knn_t8<const W: usize>(
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
        vec![0u64; tile.min(n) / LANES * LANES * w]
    };
    let mut dists = vec![0u32; tile.min(n)];
    let mut groups = vec![0u32; dists.len() / 4];
    let mut t0 = 0;
    while t0 < n {
        let t1 = n.min(t0 + tile);
        let full = (t1 - t0) / LANES * LANES;
        let src = &codes[t0 * w..t1 * w];
        let tbuf: &[u64] = if w == 1 {
            &src[..full]
        } else {
            // SAFETY: AVX2 is enabled in this function; equal lengths, a multiple of 8 * w.
            unsafe { transpose_lanes::<LANES>(&src[..full * w], w, &mut buf[..full * w]) };
            &buf[..full * w]
        };
        for (q, heap) in queries.chunks_exact(w).zip(heaps.iter_mut()) {
            let dists = &mut dists[..t1 - t0];
            let tile = PairTile {
                tile: tbuf,
                words: w,
                query: q,
                // Distances are below 2^32 - 1 (codes of at most `MAX_WORDS` words), so the
                // clamped "no threshold yet" still lets every code through.
                thr: u32::try_from(heap.threshold()).unwrap_or(u32::MAX),
                col: &[],
            };
            // SAFETY: the features are enabled in this function; `tbuf` holds `full` codes
            // in groups of 8 * w words, `dists` has room for every code of the tile and
            // `groups` for every group of four.
            let hits = unsafe { tile_distances8::<W, false>(&tile, dists, &mut groups) };
            for i in full..t1 - t0 {
                dists[i] = dist_words(q, &src[i * w..], w);
            }
            heap.prime(dists);
            heap.offer_groups(dists, &groups[..hits], full, t0);
        }
        t0 = t1;
    }
}

/// Lane `2m` of the result: lanes `2m` and `2m + 1` of `x` added; lane `2m + 1`: those of `y`.
///
/// # Safety
/// The CPU has AVX-512F.
#[inline(always)]
unsafe fn add_pairs(x: __m512i, y: __m512i) -> __m512i {
    // SAFETY: the caller guarantees AVX-512F; register-only operations.
    unsafe { _mm512_add_epi64(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y)) }
}

/// 128-bit lane `m` of the result (`m < 2`): 128-bit lanes `2m` and `2m + 1` of `x` added;
/// lane `2 + m`: those of `y`.
///
/// # Safety
/// The CPU has AVX-512F.
#[inline(always)]
unsafe fn add_halves(x: __m512i, y: __m512i) -> __m512i {
    // SAFETY: the caller guarantees AVX-512F; register-only operations.
    unsafe {
        _mm512_add_epi64(
            _mm512_shuffle_i64x2::<0b10_00_10_00>(x, y),
            _mm512_shuffle_i64x2::<0b11_01_11_01>(x, y),
        )
    }
}

/// The sums of the lanes of eight vectors: lane `i` of the result is the sum of the eight
/// lanes of `v[i]` (a tree of unpacks and 128-bit lane shuffles, 14 shuffles and 7 adds).
///
/// # Safety
/// The CPU has AVX-512F.
#[inline(always)]
unsafe fn sum_lanes8(v: [__m512i; 8]) -> __m512i {
    // SAFETY: the caller guarantees AVX-512F; register-only operations.
    unsafe {
        let b0123 = add_halves(add_pairs(v[0], v[1]), add_pairs(v[2], v[3]));
        let b4567 = add_halves(add_pairs(v[4], v[5]), add_pairs(v[6], v[7]));
        add_halves(b0123, b4567)
    }
}

/// Distances of one query to row-major codes of `W` words (0: `words`), `w >= 2`: each code
/// is read eight words at a time (the last `w % 8` by a masked load), and the lane sums of
/// eight codes are added up by [`sum_lanes8`].
///
/// # Safety
/// The CPU has AVX-512F and AVX512_VPOPCNTDQ; the query has `w` words, `codes.len() ==
/// out.len() * w`.
#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
#[inline]
unsafe fn distances_rows8<const W: usize>(
    query: &[u64],
    codes: &[u64],
    words: usize,
    out: &mut [u32],
) {
    let w = if W == 0 { words } else { W };
    let (w8, rest) = (w / LANES * LANES, w % LANES);
    let mask: __mmask8 = (1u8 << rest).wrapping_sub(1);
    let full = out.len() / LANES * LANES;
    let (head, tail) = out.split_at_mut(full);
    // SAFETY: the caller guarantees the features; the full loads read words j..j+8 <= w8 of
    // a code or of the query, the masked loads only the `rest` words after w8 (the masked-off
    // lanes are not read, so they cannot fault); output chunks have eight slots.
    unsafe {
        let q_rest = _mm512_maskz_loadu_epi64(mask, query[w8..].as_ptr().cast());
        let code_sums = |row: &[u64]| {
            let mut acc = _mm512_setzero_si512();
            for j in (0..w8).step_by(LANES) {
                let x = _mm512_xor_si512(load8(&row[j..]), load8(&query[j..]));
                acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(x));
            }
            if rest > 0 {
                let c = _mm512_maskz_loadu_epi64(mask, row[w8..].as_ptr().cast());
                acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_xor_si512(c, q_rest)));
            }
            acc
        };
        for (rows, o) in codes
            .chunks_exact(LANES * w)
            .zip(head.chunks_exact_mut(LANES))
        {
            let v: [__m512i; LANES] =
                core::array::from_fn(|l| code_sums(&rows[l * w..(l + 1) * w]));
            store_u32x8(sum_lanes8(v), o);
        }
    }
    for (i, o) in tail.iter_mut().enumerate() {
        *o = dist_words(query, &codes[(full + i) * w..], w);
    }
}

/// Distances of one query to one-word codes: eight codes per vector.
///
/// # Safety
/// The CPU has AVX-512F and AVX512_VPOPCNTDQ; `codes.len() == out.len()`.
#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
#[inline]
unsafe fn distances1(q: u64, codes: &[u64], out: &mut [u32]) {
    let full = codes.len() / LANES * LANES;
    let (head, tail) = out.split_at_mut(full);
    // SAFETY: the caller guarantees the features; each chunk has eight words and each output
    // chunk eight slots.
    unsafe {
        let qv = _mm512_set1_epi64(q as i64);
        for (grp, o) in codes.chunks_exact(LANES).zip(head.chunks_exact_mut(LANES)) {
            store_u32x8(_mm512_popcnt_epi64(_mm512_xor_si512(load8(grp), qv)), o);
        }
    }
    for (&c, o) in codes[full..].iter().zip(tail) {
        *o = (c ^ q).count_ones();
    }
}

#[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,popcnt")]
pub(crate) unsafe fn distances_avx512(query: &[u64], codes: &[u64], words: usize, out: &mut [u32]) {
    // SAFETY: the features are enabled in this function; shapes are the caller's contract.
    unsafe {
        match words {
            1 => distances1(query[0], codes, out),
            4 => distances_rows8::<4>(query, codes, words, out),
            6 => distances_rows8::<6>(query, codes, words, out),
            8 => distances_rows8::<8>(query, codes, words, out),
            _ => distances_rows8::<0>(query, codes, words, out),
        }
    }
}
