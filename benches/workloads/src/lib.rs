#![deny(missing_docs)]
//! The fixed benchmark workloads W1–W5, generated bit-for-bit as defined in the peer harness
//! (`../shared/peers/README.md`, section "Workload definitions").
//!
//! Every value comes from one counter-based generator, [`stream`] (the definition's
//! `R(s, i)`), built on the splitmix64 finaliser [`mix64`]. No floating-point transcendental
//! is involved, so the data are identical on every machine and in every language; the
//! harness publishes the SHA-256 of every file (`../shared/peers/expected-sha256.txt`) and
//! the test suite checks this module against all of them.
//!
//! | workload | what | generator |
//! |---|---|---|
//! | W1 | sparse CSR, 100,000 rows x 2^20 features, Zipf-like ids, positive weights | [`w1`] |
//! | W2 | dense 100,000 x 384 `f32`, approximately N(0, 1) | [`w2`] |
//! | W3 | 1,000,000 64-bit codes + 10,000 queries, radius 3, planted truth | [`w3`] |
//! | W4 | 1,000,000 distinct 64-bit codes, all pairs within distance 3 | [`w4`] |
//! | W5 | 1,000,000 256-bit codes + 1,000 queries, planted 10 nearest neighbours | [`w5`] |
//!
//! The [`dominance`] set (pairs whose few shared heavy coordinates decide `±1` signatures,
//! and a near-duplicate corpus of such documents) tests the collision law of the signers.
//!
//! Smaller variants with the same construction ([`W3::generate`], [`W4::generate`],
//! [`W5::generate`], and a row prefix for [`w1`] / [`w2`]) serve smoke runs; only the
//! default sizes reproduce the published hashes (a W1 or W2 prefix is exactly the prefix
//! of the published matrix).
//!
//! [`stats`] summarises repeated measurements (a mean with its 95% interval over seeds, a
//! median of timings) for the studies that compare signers.
//!
//! [`write_raw`] writes the harness's raw files (little-endian, row-major, no header) so
//! that the Python peers read exactly the same data.
//!
//! # Example
//!
//! ```
//! use simlsh_workloads::{self as workloads, W3};
//!
//! // A small radius-query workload with the published construction.
//! let w = W3::generate(5_000, 100).unwrap();
//! assert_eq!(w.index.len(), 5_000);
//! for j in 0..w.queries.len() {
//!     let (ids, dists) = w.truth(j);
//!     for (&id, &d) in ids.iter().zip(dists) {
//!         let h = (w.queries[j] ^ w.index[id as usize]).count_ones();
//!         assert_eq!(h, u32::from(d));
//!         assert!(h <= W3::RADIUS);
//!     }
//! }
//!
//! // The generator itself: R(0, 0) is the first splitmix64 output for seed 0.
//! assert_eq!(workloads::stream(0, 0), 0xE220_A839_7B1D_CDAF);
//! ```

use std::borrow::Cow;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use sprs::{CsMatI, CsMatViewI};

use simlsh::error::{Error, Result};
use simlsh::rng::GOLDEN;

/// Multiplier applied to the stream id in [`stream`].
const STREAM_MUL: u64 = 0xD1B5_4A32_D192_ED03;
/// Counters reserved for one item in [`flip_mask`]: item `id` owns `id * 1024 ..`.
const FLIP_BLOCK: u64 = 1024;

/// The names accepted by [`write_raw`], in order.
pub const WORKLOADS: [&str; 5] = ["w1", "w2", "w3", "w4", "w5"];

/// Number of row pairs `(2k, 2k + 1)` used by the published W1 / W2 quality check.
pub const QUALITY_PAIRS: usize = 1_000;

pub use simlsh::estimate::{QualityCheck, quality_check};
pub use simlsh::rng::mix64;

pub mod dominance;
pub mod stats;

/// The counter-based generator `R(s, i) = mix64(s * 0xD1B54A32D192ED03 + (i + 1) * 0x9E3779B97F4A7C15)`
/// of stream `s` at counter `i` (64-bit wrapping arithmetic).
///
/// For a fixed stream the values at distinct counters are distinct (the map from `i` is a
/// composition of bijections), so `R(0, i)` is exactly the splitmix64 sequence of seed 0.
#[inline]
pub const fn stream(s: u64, i: u64) -> u64 {
    mix64(
        s.wrapping_mul(STREAM_MUL)
            .wrapping_add(i.wrapping_add(1).wrapping_mul(GOLDEN)),
    )
}

/// Candidate bit position number `c` of item `id` in a code of `nbits` bits:
/// `((R(s, id * 1024 + c) >> 32) * nbits) >> 32`. Requires `nbits <= 2^32`.
#[inline]
fn flip_candidate(s: u64, id: u64, c: u64, nbits: u64) -> u64 {
    let x = stream(s, id.wrapping_mul(FLIP_BLOCK).wrapping_add(c));
    ((x >> 32) * nbits) >> 32
}

/// XORs into `mask` (whose length is `nbits.div_ceil(64)` words, initially zero) the flip
/// mask of item `id`: the first `d` distinct candidate positions. Returns `false` when the
/// 1024 candidates owned by `id` hold fewer than `d` distinct positions.
fn flip_into(s: u64, id: u64, d: usize, nbits: u64, mask: &mut [u64]) -> bool {
    let mut found = 0;
    let mut c = 0;
    while found < d && c < FLIP_BLOCK {
        let pos = flip_candidate(s, id, c, nbits);
        let (w, b) = ((pos / 64) as usize, pos % 64);
        if mask[w] >> b & 1 == 0 {
            mask[w] |= 1 << b;
            found += 1;
        }
        c += 1;
    }
    found == d
}

/// The flip mask of item `id` in stream `s`: a code of `nbits` bits (`nbits.div_ceil(64)`
/// words, bit `b` in word `b / 64` at position `b % 64`) with exactly `d` bits set.
///
/// Candidate positions are `pos_c = ((R(s, id * 1024 + c) >> 32) * nbits) >> 32` for
/// `c = 0, 1, 2, ...`; the first `d` distinct ones (in `c` order) are set. The published
/// definition stops at `c < max(16, 4 * max d)` (the reference generator fails beyond it);
/// wherever that bound suffices the result is the same, and this function looks at all
/// 1024 counters owned by `id`.
///
/// Returns `None` if `nbits` is 0 or above 2^32, or if those 1024 candidates hold fewer than
/// `d` distinct positions (always the case when `d > nbits`).
pub fn flip_mask(s: u64, id: u64, d: usize, nbits: usize) -> Option<Vec<u64>> {
    let nbits64 = u64::try_from(nbits).ok()?;
    if nbits == 0 || nbits64 > 1 << 32 {
        return None;
    }
    let mut mask = vec![0u64; nbits.div_ceil(64)];
    flip_into(s, id, d, nbits64, &mut mask).then_some(mask)
}

/// The permutation of stream `s` over `n` items: the stable argsort of
/// `[R(s, 0), ..., R(s, n - 1)]`. In a permuted workload, final position `j` holds item
/// `perm[j]`.
///
/// # Panics
///
/// If `n > 2^32` (the items would not fit in `u32`).
pub fn permutation(s: u64, n: usize) -> Vec<u32> {
    assert!(
        n as u64 <= 1 << 32,
        "permutation: {n} items do not fit in u32"
    );
    let mut keyed: Vec<(u64, u32)> = (0..n)
        .into_par_iter()
        .map(|i| (stream(s, i as u64), i as u32))
        .collect();
    // Sorting (value, index) pairs is the stable argsort (ties, which cannot even occur
    // within one stream, are broken by the index).
    keyed.par_sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// The inverse of a permutation: `inv[perm[j]] = j`.
fn inverse(perm: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; perm.len()];
    for (j, &p) in perm.iter().enumerate() {
        inv[p as usize] = j as u32;
    }
    inv
}

/// Checks that `n` items can be numbered with `u32`.
fn check_u32_count(name: &'static str, n: usize) -> Result<()> {
    if n as u64 > 1 << 32 {
        return Err(Error::param(
            name,
            format!("{n} items do not fit in u32 ids (at most 2^32)"),
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------ W1

/// W1, sparse signing: a CSR matrix of `rows` x 2^20 with positive `f32` weights.
///
/// Row `r` makes 240 draws `t` at counter `i = 240 r + t`. With `x = R(11, i)`: level
/// `L = 1 + ((x & 0xFFFFFFFF) * 20 >> 32)` in 1..=20, rank
/// `(2^(L-1) - 1) + ((x >> 32) mod 2^(L-1))` (log-uniform, Zipf-like with exponent ~1),
/// feature id `(rank * 0x9E3779B1) mod 2^20`; the draw's weight is
/// `0.5 + (R(12, i) >> 40) * 2^-24` in `[0.5, 1.5)`. Draws of the same id in a row are
/// merged by summing their weights (exactly, in `f64`), then rounded to `f32`. Ids are
/// strictly increasing within a row.
///
/// The published workload ([`W1::ROWS`] rows) has 19,730,861 nonzeros (168..=222 per row).
#[derive(Clone, Debug, PartialEq)]
pub struct W1 {
    /// Number of columns (features), always [`W1::DIM`] = 2^20.
    pub dim: usize,
    /// Row pointers: row `r` is `indptr[r]..indptr[r + 1]` of `indices` / `data`
    /// (`rows + 1` entries, starting at 0).
    pub indptr: Vec<usize>,
    /// Feature ids, strictly increasing within each row.
    pub indices: Vec<u32>,
    /// Weights, parallel to `indices`.
    pub data: Vec<f32>,
}

/// Draws per W1 row.
const W1_DRAWS: u64 = 240;
/// Levels of the log-uniform rank distribution of W1.
const W1_LEVELS: u64 = 20;

impl W1 {
    /// Rows of the published workload.
    pub const ROWS: usize = 100_000;
    /// Number of features, 2^20.
    pub const DIM: usize = 1 << 20;

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    /// Row `r` as `(ids, weights)`.
    ///
    /// # Panics
    ///
    /// If `r >= self.rows()`.
    pub fn row(&self, r: usize) -> (&[u32], &[f32]) {
        let range = self.indptr[r]..self.indptr[r + 1];
        (&self.indices[range.clone()], &self.data[range])
    }

    /// An owned `sprs` CSR copy of the matrix (shape `rows x dim`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the public fields were changed into an invalid CSR
    /// structure.
    pub fn to_csr(&self) -> Result<CsMatI<f32, u32, usize>> {
        CsMatI::try_new(
            (self.rows(), self.dim),
            self.indptr.clone(),
            self.indices.clone(),
            self.data.clone(),
        )
        .map_err(|(_, _, _, e)| Error::param("W1", format!("not a valid CSR matrix: {e}")))
    }

    /// A borrowed `sprs` CSR view of the matrix (shape `rows x dim`); the structure is
    /// checked in O(nnz).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the public fields were changed into an invalid CSR
    /// structure.
    pub fn view(&self) -> Result<CsMatViewI<'_, f32, u32, usize>> {
        CsMatViewI::try_new(
            (self.rows(), self.dim),
            &self.indptr[..],
            &self.indices[..],
            &self.data[..],
        )
        .map_err(|(_, _, _, e)| Error::param("W1", format!("not a valid CSR matrix: {e}")))
    }

    /// The exact weighted cosine (in `f64`) of the row pairs `(2k, 2k + 1)`, for
    /// `k < rows / 2`, clamped to `[-1, 1]`; NaN for a pair with an all-zero row (generated
    /// rows are never empty). The published quality check uses the first [`QUALITY_PAIRS`].
    ///
    /// # Panics
    ///
    /// If the public fields were changed so that `indptr` points outside `indices` / `data`.
    pub fn pairs_cosine(&self) -> Vec<f64> {
        (0..self.rows() / 2)
            .map(|k| {
                let (ia, wa) = self.row(2 * k);
                let (ib, wb) = self.row(2 * k + 1);
                sparse_cosine(ia, wa, ib, wb)
            })
            .collect()
    }

    /// The harness files `w1.indptr.i64`, `w1.indices.u32`, `w1.data.f32`.
    pub fn raw_files(&self) -> Vec<RawFile<'_>> {
        vec![
            RawFile {
                name: "w1.indptr.i64",
                shape: vec![self.indptr.len()],
                data: RawData::I64(Cow::Borrowed(&self.indptr)),
            },
            RawFile {
                name: "w1.indices.u32",
                shape: vec![self.indices.len()],
                data: RawData::U32(Cow::Borrowed(&self.indices)),
            },
            RawFile {
                name: "w1.data.f32",
                shape: vec![self.data.len()],
                data: RawData::F32(Cow::Borrowed(&self.data)),
            },
        ]
    }
}

/// Cosine of two sparse vectors with sorted ids, in `f64`, clamped to `[-1, 1]`.
fn sparse_cosine(ia: &[u32], wa: &[f32], ib: &[u32], wb: &[f32]) -> f64 {
    let (mut x, mut y, mut dot) = (0, 0, 0.0f64);
    while x < ia.len() && y < ib.len() {
        match ia[x].cmp(&ib[y]) {
            std::cmp::Ordering::Less => x += 1,
            std::cmp::Ordering::Greater => y += 1,
            std::cmp::Ordering::Equal => {
                dot += f64::from(wa[x]) * f64::from(wb[y]);
                x += 1;
                y += 1;
            }
        }
    }
    let na: f64 = wa.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
    let nb: f64 = wb.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
    (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
}

/// Appends W1 row `r` to `indices` / `data`, using `draws` as scratch.
///
/// A draw's weight is `0.5 + m * 2^-24` with the 24-bit integer `m = R(12, i) >> 40`, so a
/// merged weight is exactly `count * 0.5 + (sum of m) * 2^-24`: every term and partial sum
/// is representable in `f64` (at most 33 significant bits), which makes this the exact
/// `f64` sum of the draws' weights in any order, before the one rounding to `f32`. Draws
/// are packed as `id << 24 | m` so that one integer sort groups them by id.
fn w1_row(r: usize, draws: &mut Vec<u64>, indices: &mut Vec<u32>, data: &mut Vec<f32>) {
    draws.clear();
    let base = r as u64 * W1_DRAWS;
    for t in 0..W1_DRAWS {
        let i = base + t;
        let x = stream(11, i);
        let level = 1 + (((x & 0xFFFF_FFFF) * W1_LEVELS) >> 32);
        let span = 1u64 << (level - 1);
        let rank = (span - 1) + ((x >> 32) & (span - 1));
        let id = rank.wrapping_mul(0x9E37_79B1) & (W1::DIM as u64 - 1);
        draws.push(id << 24 | stream(12, i) >> 40);
    }
    draws.sort_unstable();
    for group in draws.chunk_by(|a, b| a >> 24 == b >> 24) {
        let m_sum: u64 = group.iter().map(|&k| k & 0xFF_FFFF).sum();
        let weight = group.len() as f64 * 0.5 + m_sum as f64 * (1.0 / (1u64 << 24) as f64);
        indices.push((group[0] >> 24) as u32);
        data.push(weight as f32);
    }
}

/// Generates the first `rows` rows of W1 (see [`W1`]); row `r` depends only on `r`, so any
/// prefix of the published [`W1::ROWS`] rows is exact, and larger `rows` extend it with the
/// same construction.
pub fn w1(rows: usize) -> W1 {
    const BLOCK: usize = 256;
    let blocks: Vec<(Vec<usize>, Vec<u32>, Vec<f32>)> = (0..rows.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let (lo, hi) = (b * BLOCK, ((b + 1) * BLOCK).min(rows));
            let mut draws = Vec::with_capacity(W1_DRAWS as usize);
            let mut lens = Vec::with_capacity(hi - lo);
            let mut indices = Vec::with_capacity((hi - lo) * 200);
            let mut data = Vec::with_capacity((hi - lo) * 200);
            for r in lo..hi {
                let before = indices.len();
                w1_row(r, &mut draws, &mut indices, &mut data);
                lens.push(indices.len() - before);
            }
            (lens, indices, data)
        })
        .collect();
    let nnz = blocks.iter().map(|b| b.1.len()).sum();
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices = Vec::with_capacity(nnz);
    let mut data = Vec::with_capacity(nnz);
    indptr.push(0);
    for (lens, ids, ws) in blocks {
        for len in lens {
            indptr.push(indptr[indptr.len() - 1] + len);
        }
        indices.extend_from_slice(&ids);
        data.extend_from_slice(&ws);
    }
    W1 {
        dim: W1::DIM,
        indptr,
        indices,
        data,
    }
}

// ------------------------------------------------------------------------------------ W2

/// Rows of the published W2.
pub const W2_ROWS: usize = 100_000;
/// Columns of W2.
pub const W2_DIM: usize = 384;

/// The W2 value of row-major element `e`: twelve 16-bit integers from `R(21, 3e + r)`,
/// `r = 0, 1, 2` (four per word), summed, times 2^-16, minus 6 (exact in `f32`).
#[inline]
fn w2_value(e: u64) -> f32 {
    let mut acc = 0u64;
    for r in 0..3 {
        let x = stream(21, 3 * e + r);
        acc += (x & 0xFFFF) + (x >> 16 & 0xFFFF) + (x >> 32 & 0xFFFF) + (x >> 48);
    }
    // acc < 12 * 2^16, so acc - 6 * 2^16 has at most 20 significant bits: exact in f32.
    (acc as i64 - 6 * 65_536) as f32 * (1.0 / 65_536.0)
}

/// Generates the first `rows` rows of W2, dense signing: `rows x 384` `f32`, row-major.
///
/// Element `e` (row-major) uses `R(21, 3e + r)`, `r = 0, 1, 2`; each 64-bit word gives four
/// 16-bit integers, and the value is their sum times 2^-16 minus 6 (Irwin-Hall(12) - 6:
/// mean 0, variance 1, `|x| < 6`). Rows depend only on their number, so a prefix of the
/// published [`W2_ROWS`] rows is exact.
pub fn w2(rows: usize) -> Array2<f32> {
    const CHUNK: usize = 1 << 14;
    let mut v = vec![0f32; rows * W2_DIM];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let base = (c * CHUNK) as u64;
        for (k, x) in chunk.iter_mut().enumerate() {
            *x = w2_value(base + k as u64);
        }
    });
    Array2::from_shape_vec((rows, W2_DIM), v).expect("the buffer has rows * 384 elements")
}

/// The harness file `w2.x.f32` of a W2 matrix (copied only if `x` is not in standard
/// row-major layout).
pub fn w2_raw_file(x: ArrayView2<'_, f32>) -> RawFile<'_> {
    let data = match x.to_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(x.iter().copied().collect()),
    };
    RawFile {
        name: "w2.x.f32",
        shape: vec![x.nrows(), x.ncols()],
        data: RawData::F32(data),
    }
}

/// The exact cosine (in `f64`) of the dense row pairs `(2k, 2k + 1)`, `k < rows / 2`,
/// clamped to `[-1, 1]`; NaN for a pair with an all-zero row. Used for the W2 quality
/// check (the published one uses the first [`QUALITY_PAIRS`]).
pub fn dense_pairs_cosine(x: ArrayView2<'_, f32>) -> Vec<f64> {
    (0..x.nrows() / 2)
        .map(|k| {
            let (a, b) = (x.row(2 * k), x.row(2 * k + 1));
            let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
            for (&u, &v) in a.iter().zip(b.iter()) {
                let (u, v) = (f64::from(u), f64::from(v));
                dot += u * v;
                na += u * u;
                nb += v * v;
            }
            (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
        })
        .collect()
}

// ------------------------------------------------------------------------------------ W3

/// W3, radius queries: an index of 64-bit codes, queries, and for each query its planted
/// codes within Hamming distance [`W3::RADIUS`].
///
/// Query `j` is `R(31, j)`; it gets `k_j = 1 + (R(32, j) mod 5)` planted codes. Planted code
/// `p` (numbered in query order) is `q_j XOR flip_mask(34, p, d_p, 64)` with
/// `d_p = 1 + (R(33, p) mod 3)`. The background is `R(35, i)` for `i < n - planted`; the
/// index is `[background, planted]` permuted by `permutation(36, n)`.
///
/// In the published workload ([`w3`]) no background code is within the radius of any query,
/// so the planted codes (30,096) are the complete answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct W3 {
    /// The index codes.
    pub index: Vec<u64>,
    /// The query codes.
    pub queries: Vec<u64>,
    /// Query `j`'s planted codes are `truth_indptr[j]..truth_indptr[j + 1]` of `truth_ids`
    /// / `truth_dist` (`queries + 1` entries).
    pub truth_indptr: Vec<usize>,
    /// Index position of each planted code.
    pub truth_ids: Vec<u32>,
    /// Hamming distance of each planted code to its query (1..=3).
    pub truth_dist: Vec<u8>,
}

impl W3 {
    /// Index size of the published workload.
    pub const N: usize = 1_000_000;
    /// Queries of the published workload.
    pub const QUERIES: usize = 10_000;
    /// Query radius (inclusive).
    pub const RADIUS: u32 = 3;

    /// A W3 workload with `n_index` codes and `n_queries` queries, by the published
    /// construction. Only `W3::generate(W3::N, W3::QUERIES)` (= [`w3`]) matches the published
    /// hashes; for other sizes the queries and planted codes are a prefix of the published
    /// ones, but the background and the permutation differ.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `n_index` is smaller than the number of planted codes
    /// (about `3 n_queries`) or above 2^32.
    pub fn generate(n_index: usize, n_queries: usize) -> Result<W3> {
        check_u32_count("n_index", n_index)?;
        if n_queries > n_index {
            // Every query plants at least one code.
            return Err(Error::param(
                "n_index",
                format!("{n_index} codes cannot hold the planted codes of {n_queries} queries"),
            ));
        }
        let queries: Vec<u64> = (0..n_queries as u64).map(|j| stream(31, j)).collect();
        let mut truth_indptr = Vec::with_capacity(n_queries + 1);
        truth_indptr.push(0usize);
        for j in 0..n_queries as u64 {
            let k = 1 + (stream(32, j) % 5) as usize;
            truth_indptr.push(truth_indptr[truth_indptr.len() - 1] + k);
        }
        let planted = truth_indptr[n_queries];
        if planted > n_index {
            return Err(Error::param(
                "n_index",
                format!("{n_index} codes cannot hold the {planted} planted codes"),
            ));
        }
        let nbg = n_index - planted;
        let mut all: Vec<u64> = Vec::with_capacity(n_index);
        all.par_extend((0..nbg as u64).into_par_iter().map(|i| stream(35, i)));
        let mut truth_dist = Vec::with_capacity(planted);
        for (j, &q) in queries.iter().enumerate() {
            for p in truth_indptr[j]..truth_indptr[j + 1] {
                let d = 1 + (stream(33, p as u64) % 3) as usize;
                let mut mask = [0u64];
                let ok = flip_into(34, p as u64, d, 64, &mut mask);
                assert!(ok, "3 distinct positions among 1024 candidates");
                all.push(q ^ mask[0]);
                truth_dist.push(d as u8);
            }
        }
        let perm = permutation(36, n_index);
        let index = perm.iter().map(|&i| all[i as usize]).collect();
        let inv = inverse(&perm);
        let truth_ids = inv[nbg..].to_vec();
        Ok(W3 {
            index,
            queries,
            truth_indptr,
            truth_ids,
            truth_dist,
        })
    }

    /// Query `j`'s planted codes: `(index positions, distances)`.
    ///
    /// # Panics
    ///
    /// If `j >= self.queries.len()`.
    pub fn truth(&self, j: usize) -> (&[u32], &[u8]) {
        let range = self.truth_indptr[j]..self.truth_indptr[j + 1];
        (&self.truth_ids[range.clone()], &self.truth_dist[range])
    }

    /// The harness files `w3.index.u64`, `w3.queries.u64`, `w3.truth_indptr.i64`,
    /// `w3.truth_ids.u32`, `w3.truth_dist.u8`.
    pub fn raw_files(&self) -> Vec<RawFile<'_>> {
        vec![
            RawFile {
                name: "w3.index.u64",
                shape: vec![self.index.len()],
                data: RawData::U64(Cow::Borrowed(&self.index)),
            },
            RawFile {
                name: "w3.queries.u64",
                shape: vec![self.queries.len()],
                data: RawData::U64(Cow::Borrowed(&self.queries)),
            },
            RawFile {
                name: "w3.truth_indptr.i64",
                shape: vec![self.truth_indptr.len()],
                data: RawData::I64(Cow::Borrowed(&self.truth_indptr)),
            },
            RawFile {
                name: "w3.truth_ids.u32",
                shape: vec![self.truth_ids.len()],
                data: RawData::U32(Cow::Borrowed(&self.truth_ids)),
            },
            RawFile {
                name: "w3.truth_dist.u8",
                shape: vec![self.truth_dist.len()],
                data: RawData::U8(Cow::Borrowed(&self.truth_dist)),
            },
        ]
    }
}

/// The published W3: 1,000,000 codes, 10,000 queries, 30,096 planted codes.
pub fn w3() -> W3 {
    W3::generate(W3::N, W3::QUERIES).expect("the published W3 sizes are valid")
}

// ------------------------------------------------------------------------------------ W4

/// W4, self-join: distinct 64-bit codes and all unordered pairs within Hamming distance
/// [`W4::RADIUS`].
///
/// Cluster `c` has centre `R(41, c)` and size `2 + (R(42, c) mod 5)`. Member `t0`
/// (0-based, `t0 < size - 1`) at attempt `a` is `centre XOR flip_mask(44, id, d, 64)` with
/// `id = (8c + t0) * 4 + a` and `d = 1 + (R(43, id) mod 3)`. Attempts proceed in rounds as
/// in the reference generator: all members start at attempt 0; after each round, every
/// member equal to an earlier member of its cluster is redrawn with the next attempt. The
/// codes are `[background R(45, i), centres, members]` permuted by `permutation(46, n)`.
///
/// The truth is computed by [`selfjoin_oracle`]; the published workload has 90,112 pairs
/// (20,688 at distance 1, 30,252 at 2, 39,172 at 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct W4 {
    /// The codes, all distinct.
    pub codes: Vec<u64>,
    /// All pairs `(i, j)`, `i < j`, with `popcount(codes[i] ^ codes[j]) <= 3`, sorted.
    pub truth_pairs: Vec<(u32, u32)>,
}

impl W4 {
    /// Codes of the published workload.
    pub const N: usize = 1_000_000;
    /// Clusters of the published workload.
    pub const CLUSTERS: usize = 20_000;
    /// Join radius (inclusive).
    pub const RADIUS: u32 = 3;

    /// A W4 workload of `n` codes with `clusters` clusters, by the published construction.
    /// Only `W4::generate(W4::N, W4::CLUSTERS)` (= [`w4`]) matches the published hashes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `n` is smaller than the number of planted codes (about
    /// `5 clusters`) or above 2^32, or (never seen in practice) if a cluster's members still
    /// clash after 4 attempts or two codes coincide.
    pub fn generate(n: usize, clusters: usize) -> Result<W4> {
        check_u32_count("n", n)?;
        if clusters > n / 2 {
            // Every cluster holds at least two codes.
            return Err(Error::param(
                "n",
                format!("{n} codes cannot hold {clusters} clusters of at least 2 codes"),
            ));
        }
        let centres: Vec<u64> = (0..clusters as u64).map(|c| stream(41, c)).collect();
        // first[c]..first[c + 1] are cluster c's members.
        let mut first = Vec::with_capacity(clusters + 1);
        first.push(0usize);
        for c in 0..clusters as u64 {
            let members = 1 + (stream(42, c) % 5) as usize;
            first.push(first[first.len() - 1] + members);
        }
        let n_members = first[clusters];
        let planted = clusters + n_members;
        if planted > n {
            return Err(Error::param(
                "n",
                format!("{n} codes cannot hold the {planted} cluster codes"),
            ));
        }
        let mut owner = Vec::with_capacity(n_members);
        for c in 0..clusters {
            owner.extend(std::iter::repeat_n(c, first[c + 1] - first[c]));
        }
        let mut members = vec![0u64; n_members];
        let mut pending: Vec<usize> = (0..n_members).collect();
        let mut attempt = 0u64;
        while !pending.is_empty() {
            if attempt == 4 {
                return Err(Error::param(
                    "clusters",
                    "cluster members still coincide after 4 attempts",
                ));
            }
            for &m in &pending {
                let c = owner[m];
                let id = ((8 * c + (m - first[c])) as u64) * 4 + attempt;
                let d = 1 + (stream(43, id) % 3) as usize;
                let mut mask = [0u64];
                let ok = flip_into(44, id, d, 64, &mut mask);
                assert!(ok, "3 distinct positions among 1024 candidates");
                members[m] = centres[c] ^ mask[0];
            }
            let mut touched: Vec<usize> = pending.iter().map(|&m| owner[m]).collect();
            touched.dedup();
            pending.clear();
            for c in touched {
                for m in first[c]..first[c + 1] {
                    if members[first[c]..m].contains(&members[m]) {
                        pending.push(m);
                    }
                }
            }
            attempt += 1;
        }
        let nbg = n - planted;
        let mut all: Vec<u64> = Vec::with_capacity(n);
        all.par_extend((0..nbg as u64).into_par_iter().map(|i| stream(45, i)));
        all.extend_from_slice(&centres);
        all.extend_from_slice(&members);
        let perm = permutation(46, n);
        let codes: Vec<u64> = perm.iter().map(|&i| all[i as usize]).collect();
        let mut sorted = codes.clone();
        sorted.par_sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::param(
                "n",
                "the generated codes are not all distinct",
            ));
        }
        let truth_pairs = selfjoin_oracle(&codes, W4::RADIUS)?;
        Ok(W4 { codes, truth_pairs })
    }

    /// The harness files `w4.codes.u64`, `w4.truth_pairs.u32` (pairs as rows of 2).
    pub fn raw_files(&self) -> Vec<RawFile<'_>> {
        vec![
            RawFile {
                name: "w4.codes.u64",
                shape: vec![self.codes.len()],
                data: RawData::U64(Cow::Borrowed(&self.codes)),
            },
            RawFile {
                name: "w4.truth_pairs.u32",
                shape: vec![self.truth_pairs.len(), 2],
                data: RawData::U32Pairs(Cow::Borrowed(&self.truth_pairs)),
            },
        ]
    }
}

/// The published W4: 1,000,000 distinct codes, 20,000 clusters, 90,112 pairs.
pub fn w4() -> W4 {
    W4::generate(W4::N, W4::CLUSTERS).expect("the published W4 sizes are valid")
}

/// All pairs `(i, j)`, `i < j`, with `popcount(codes[i] ^ codes[j]) <= radius`, sorted:
/// the exact self-join oracle.
///
/// Pigeonhole on the four 16-bit blocks: two codes within distance 3 agree on at least one
/// block, so for each block the codes are grouped by that block's value, every pair inside
/// a group is verified by popcount, and the union is sorted and deduplicated. Fast for
/// spread-out codes; quadratic when many codes share a block value.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `radius > 3` (the pigeonhole argument needs
/// `radius < 4`) or there are more than 2^32 codes.
pub fn selfjoin_oracle(codes: &[u64], radius: u32) -> Result<Vec<(u32, u32)>> {
    if radius > 3 {
        return Err(Error::param(
            "radius",
            format!("{radius}: the 4-block pigeonhole oracle needs radius <= 3"),
        ));
    }
    check_u32_count("codes", codes.len())?;
    let per_block: Vec<Vec<(u32, u32)>> = (0..4u32)
        .into_par_iter()
        .map(|b| {
            let mut keyed: Vec<(u16, u32)> = codes
                .iter()
                .enumerate()
                .map(|(i, &c)| ((c >> (16 * b)) as u16, i as u32))
                .collect();
            keyed.sort_unstable();
            let mut found = Vec::new();
            for group in keyed.chunk_by(|x, y| x.0 == y.0) {
                for (x, &(_, i)) in group.iter().enumerate() {
                    for &(_, j) in &group[x + 1..] {
                        if (codes[i as usize] ^ codes[j as usize]).count_ones() <= radius {
                            found.push((i.min(j), i.max(j)));
                        }
                    }
                }
            }
            found
        })
        .collect();
    let mut pairs = per_block.concat();
    pairs.sort_unstable();
    pairs.dedup();
    Ok(pairs)
}

// ------------------------------------------------------------------------------------ W5

/// W5, k-NN: 256-bit codes (4 words each, row-major), queries, and for each query its
/// [`W5::K`] planted nearest neighbours.
///
/// Query `j` is the words `R(51, 4j .. 4j + 3)`. Planted code `p = 10j + m` (`m < 10`) is
/// `q_j XOR flip_mask(53, p, d_p, 256)` with `d_p = 1 + (R(52, p) mod 64)`. The background
/// words are `R(54, 0..)`; the index is `[background, planted]` permuted by
/// `permutation(55, n)`. Random codes lie at distance about 128 +- 8 from a query, so the
/// planted codes (distance <= 64) are exactly the true 10 nearest neighbours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct W5 {
    /// The index codes, `n x 4` words, row-major.
    pub index: Vec<u64>,
    /// The query codes, `queries x 4` words, row-major.
    pub queries: Vec<u64>,
    /// Index positions of the planted codes, `queries x 10`, row-major (in planting order,
    /// not sorted by distance).
    pub truth_ids: Vec<u32>,
    /// Hamming distance of each planted code to its query (1..=64), parallel to
    /// `truth_ids`.
    pub truth_dist: Vec<u8>,
}

impl W5 {
    /// Codes of the published workload.
    pub const N: usize = 1_000_000;
    /// Queries of the published workload.
    pub const QUERIES: usize = 1_000;
    /// Neighbours per query.
    pub const K: usize = 10;
    /// Bits per code.
    pub const BITS: usize = 256;
    /// Words per code.
    pub const WORDS: usize = 4;

    /// A W5 workload with `n_index` codes and `n_queries` queries, by the published
    /// construction. Only `W5::generate(W5::N, W5::QUERIES)` (= [`w5`]) matches the published
    /// hashes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `n_index < 10 n_queries` or `n_index > 2^32`.
    pub fn generate(n_index: usize, n_queries: usize) -> Result<W5> {
        const WORDS: usize = W5::WORDS;
        check_u32_count("n_index", n_index)?;
        let planted = n_queries.saturating_mul(W5::K);
        if planted > n_index {
            return Err(Error::param(
                "n_index",
                format!(
                    "{n_index} codes cannot hold the {} planted codes of {n_queries} queries",
                    W5::K
                ),
            ));
        }
        let queries: Vec<u64> = (0..(n_queries * WORDS) as u64)
            .map(|i| stream(51, i))
            .collect();
        let nbg = n_index - planted;
        let mut all: Vec<u64> = Vec::with_capacity(n_index * WORDS);
        all.par_extend(
            (0..(nbg * WORDS) as u64)
                .into_par_iter()
                .map(|i| stream(54, i)),
        );
        let mut truth_dist = Vec::with_capacity(planted);
        for p in 0..planted {
            let j = p / W5::K;
            let d = 1 + (stream(52, p as u64) % 64) as usize;
            let mut mask = [0u64; WORDS];
            let ok = flip_into(53, p as u64, d, W5::BITS as u64, &mut mask);
            assert!(ok, "64 distinct positions among 1024 candidates");
            all.extend((0..WORDS).map(|w| queries[j * WORDS + w] ^ mask[w]));
            truth_dist.push(d as u8);
        }
        let perm = permutation(55, n_index);
        let mut index = Vec::with_capacity(n_index * WORDS);
        for &i in &perm {
            let i = i as usize;
            index.extend_from_slice(&all[i * WORDS..(i + 1) * WORDS]);
        }
        let inv = inverse(&perm);
        let truth_ids = inv[nbg..].to_vec();
        Ok(W5 {
            index,
            queries,
            truth_ids,
            truth_dist,
        })
    }

    /// Query `j`'s code (4 words).
    ///
    /// # Panics
    ///
    /// If `j` is not a query number.
    pub fn query(&self, j: usize) -> &[u64] {
        &self.queries[j * W5::WORDS..(j + 1) * W5::WORDS]
    }

    /// Index code `i` (4 words).
    ///
    /// # Panics
    ///
    /// If `i` is not an index position.
    pub fn code(&self, i: usize) -> &[u64] {
        &self.index[i * W5::WORDS..(i + 1) * W5::WORDS]
    }

    /// Query `j`'s planted neighbours: `(index positions, distances)`.
    ///
    /// # Panics
    ///
    /// If `j` is not a query number.
    pub fn truth(&self, j: usize) -> (&[u32], &[u8]) {
        let range = j * W5::K..(j + 1) * W5::K;
        (&self.truth_ids[range.clone()], &self.truth_dist[range])
    }

    /// The harness files `w5.index.u64`, `w5.queries.u64`, `w5.truth_ids.u32`,
    /// `w5.truth_dist.u8`.
    pub fn raw_files(&self) -> Vec<RawFile<'_>> {
        vec![
            RawFile {
                name: "w5.index.u64",
                shape: vec![self.index.len() / W5::WORDS, W5::WORDS],
                data: RawData::U64(Cow::Borrowed(&self.index)),
            },
            RawFile {
                name: "w5.queries.u64",
                shape: vec![self.queries.len() / W5::WORDS, W5::WORDS],
                data: RawData::U64(Cow::Borrowed(&self.queries)),
            },
            RawFile {
                name: "w5.truth_ids.u32",
                shape: vec![self.truth_ids.len() / W5::K, W5::K],
                data: RawData::U32(Cow::Borrowed(&self.truth_ids)),
            },
            RawFile {
                name: "w5.truth_dist.u8",
                shape: vec![self.truth_dist.len() / W5::K, W5::K],
                data: RawData::U8(Cow::Borrowed(&self.truth_dist)),
            },
        ]
    }
}

/// The published W5: 1,000,000 codes of 256 bits, 1,000 queries, k = 10.
pub fn w5() -> W5 {
    W5::generate(W5::N, W5::QUERIES).expect("the published W5 sizes are valid")
}

// ------------------------------------------------------------------------------ raw files

/// The contents of one harness file, by element type; serialised little-endian with
/// [`RawData::write_le`].
#[derive(Clone, Debug, PartialEq)]
pub enum RawData<'a> {
    /// `usize` values stored as little-endian `i64` (row pointers).
    I64(Cow<'a, [usize]>),
    /// Little-endian `u64`.
    U64(Cow<'a, [u64]>),
    /// Little-endian `u32`.
    U32(Cow<'a, [u32]>),
    /// Pairs stored as two little-endian `u32` each (an `n x 2` array).
    U32Pairs(Cow<'a, [(u32, u32)]>),
    /// Little-endian IEEE `f32`.
    F32(Cow<'a, [f32]>),
    /// Bytes.
    U8(Cow<'a, [u8]>),
}

/// Serialises `values` through `to_bytes` into `w`, in buffered chunks.
fn write_chunks<T: Copy, const B: usize>(
    values: &[T],
    w: &mut impl Write,
    to_bytes: impl Fn(T) -> [u8; B],
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in values.chunks((1 << 16) / B) {
        buf.clear();
        for &v in chunk {
            buf.extend_from_slice(&to_bytes(v));
        }
        w.write_all(&buf)?;
    }
    Ok(())
}

impl RawData<'_> {
    /// Size of the serialised file in bytes.
    pub fn byte_len(&self) -> usize {
        match self {
            RawData::I64(v) => 8 * v.len(),
            RawData::U64(v) => 8 * v.len(),
            RawData::U32(v) => 4 * v.len(),
            RawData::U32Pairs(v) => 8 * v.len(),
            RawData::F32(v) => 4 * v.len(),
            RawData::U8(v) => v.len(),
        }
    }

    /// Writes the raw little-endian bytes (no header) to `w`.
    ///
    /// # Errors
    ///
    /// Any error of `w`, or [`io::ErrorKind::InvalidData`] if an [`RawData::I64`] value
    /// exceeds `i64::MAX`.
    pub fn write_le(&self, w: &mut impl Write) -> io::Result<()> {
        match self {
            RawData::I64(v) => {
                if v.iter().any(|&x| i64::try_from(x).is_err()) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a row pointer exceeds i64::MAX",
                    ));
                }
                write_chunks(v, w, |x| (x as i64).to_le_bytes())
            }
            RawData::U64(v) => write_chunks(v, w, u64::to_le_bytes),
            RawData::U32(v) => write_chunks(v, w, u32::to_le_bytes),
            RawData::U32Pairs(v) => write_chunks(v, w, |(a, b)| {
                let mut out = [0u8; 8];
                out[..4].copy_from_slice(&a.to_le_bytes());
                out[4..].copy_from_slice(&b.to_le_bytes());
                out
            }),
            RawData::F32(v) => write_chunks(v, w, f32::to_le_bytes),
            RawData::U8(v) => w.write_all(v),
        }
    }
}

/// One harness file: its name, its array shape (row-major) and its contents.
#[derive(Clone, Debug, PartialEq)]
pub struct RawFile<'a> {
    /// File name, e.g. `w3.index.u64` (the suffix names the element type).
    pub name: &'static str,
    /// Array shape, e.g. `[1000000, 4]` for `w5.index.u64`.
    pub shape: Vec<usize>,
    /// The contents.
    pub data: RawData<'a>,
}

/// Generates the published workloads named in `which` (`"w1"` .. `"w5"`, see
/// [`WORKLOADS`]) and writes their harness files into `dir` (created if missing): raw
/// little-endian arrays, row-major, no header, named as the harness names them
/// (`w1.indptr.i64`, `w1.indices.u32`, `w1.data.f32`, `w2.x.f32`, `w3.index.u64`, ...). Each
/// file is written atomically (temporary file in `dir`, fsync, rename). No manifest is
/// written.
///
/// # Errors
///
/// [`Error::InvalidParameter`] for an unknown workload name (before anything is written),
/// [`Error::Io`] with the file concerned if creating `dir` or writing a file fails.
pub fn write_raw(dir: &Path, which: &[&str]) -> Result<()> {
    if let Some(bad) = which.iter().find(|w| !WORKLOADS.contains(w)) {
        return Err(Error::param(
            "which",
            format!("unknown workload {bad:?} (expected one of {WORKLOADS:?})"),
        ));
    }
    fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let write_all = |files: Vec<RawFile<'_>>| -> Result<()> {
        for f in files {
            simlsh::fs::write_atomic(&dir.join(f.name), |mut w| f.data.write_le(&mut w))?;
        }
        Ok(())
    };
    for &w in which {
        match w {
            "w1" => write_all(w1(W1::ROWS).raw_files())?,
            "w2" => {
                let x = w2(W2_ROWS);
                write_all(vec![w2_raw_file(x.view())])?
            }
            "w3" => write_all(w3().raw_files())?,
            "w4" => write_all(w4().raw_files())?,
            "w5" => write_all(w5().raw_files())?,
            other => return Err(Error::param("which", format!("unknown workload {other:?}"))),
        }
    }
    Ok(())
}
