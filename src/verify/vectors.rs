//! The input vectors, with an exact cosine between any two rows: the [`Vectors`] trait and its
//! dense, borrowed-CSR and owned-sparse implementations.

use ndarray::ArrayView2;
use rayon::prelude::*;
use sprs::{CsMatViewI, SpIndex};

use crate::error::{Error, Result};
use crate::text::{FeatureRows, Features, idf_key};

/// Rows of vectors with an exact cosine between any two: the oracle that verifies the
/// candidates found by signatures.
///
/// A row of norm 0 (an empty document, an all-zero vector) has no direction: it is
/// [`is_zero`](Self::is_zero), its cosine with anything is 0, and the verified joins never
/// pair it (they report such rows apart).
pub trait Vectors: Sync {
    /// Number of rows.
    fn len(&self) -> usize;

    /// True when there are no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of columns, when the rows have a fixed number (dense rows, CSR matrices; owned
    /// sparse rows keyed by hashes have none): the shape that
    /// [`check_pairable`](Self::check_pairable) compares.
    fn cols(&self) -> Option<usize> {
        None
    }

    /// Checks row `i`: rows read in place ([`DenseRows`](super::DenseRows),
    /// [`CsrRows`](super::CsrRows)) are checked, and their norm computed, on first use, here;
    /// rows checked when built accept every row. [`RerankIds`](super::RerankIds) checks each
    /// row before its cosines.
    ///
    /// # Errors
    /// The row's defect ([`Error::NonFinite`] naming its row and column, bad CSR indices).
    ///
    /// # Panics
    /// If `i` is out of range.
    fn check_row(&self, i: usize) -> Result<()> {
        let _ = i;
        Ok(())
    }

    /// True when row `i` has norm 0.
    fn is_zero(&self, i: usize) -> bool;

    /// The exact cosine of row `i` of `self` and row `j` of `other` (e.g. a query set against
    /// a base set of the same kind), accumulated in `f64`; 0 when either row is zero.
    ///
    /// # Panics
    /// If `i` or `j` is out of range.
    fn cosine_with(&self, i: usize, other: &Self, j: usize) -> f64;

    /// The exact cosine of rows `i` and `j`.
    ///
    /// # Panics
    /// If `i` or `j` is out of range.
    fn cosine(&self, i: usize, j: usize) -> f64 {
        self.cosine_with(i, self, j)
    }

    /// Hints the CPU to start loading row `i` (the re-ranking calls it a few candidates
    /// ahead); never changes a result. The default does nothing.
    fn prefetch(&self, i: usize) {
        let _ = i;
    }

    /// Checks that rows of `self` can be paired with rows of `other` by
    /// [`cosine_with`](Self::cosine_with), the one shape rule of the verifiers
    /// ([`paired_cosines`](super::paired_cosines), [`RerankIds`](super::RerankIds)): rows of
    /// a fixed number of columns ([`cols`](Self::cols): dense rows, CSR matrices) pair with
    /// rows of as many; rows without (owned sparse rows keyed by hashes) with any. It is
    /// derived from [`cols`](Self::cols), which implementations give instead.
    ///
    /// ```
    /// use simlsh::verify::{DenseVectors, SparseVectors, Vectors};
    /// use ndarray::Array2;
    ///
    /// let (a, b) = (Array2::<f32>::ones((2, 4)), Array2::<f32>::ones((2, 5)));
    /// let (a, b) = (DenseVectors::new(a.view())?, DenseVectors::new(b.view())?);
    /// let e = a.check_pairable(&b, "a vs b columns").unwrap_err();
    /// assert_eq!(e.to_string(), "a vs b columns: lengths differ (4 vs 5)");
    /// let s = SparseVectors::from_rows([vec![(3u64, 1.0f32)], vec![(1 << 40, 2.0)]])?;
    /// assert!(s.check_pairable(&s, "a vs b columns").is_ok());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] naming `what` (the two sets) and both numbers of columns.
    fn check_pairable(&self, other: &Self, what: &'static str) -> Result<()> {
        match (self.cols(), other.cols()) {
            (Some(left), Some(right)) if left != right => {
                Err(Error::LengthMismatch { what, left, right })
            }
            _ => Ok(()),
        }
    }

    /// The rows of norm 0, in increasing order.
    fn zero_rows(&self) -> Vec<u32> {
        (0..self.len())
            .filter(|&i| self.is_zero(i))
            .map(|i| i as u32)
            .collect()
    }
}

/// `1 / ‖x‖` from the sum of squares (0 for a zero row).
fn inverse_norm(sum_sq: f64) -> f64 {
    if sum_sq > 0.0 {
        1.0 / sum_sq.sqrt()
    } else {
        0.0
    }
}

/// Checks that every value is finite; names the first bad one by row and column.
fn check_finite(row: usize, entries: impl Iterator<Item = (u64, f32)>) -> Result<()> {
    for (c, v) in entries {
        if !v.is_finite() {
            return Err(Error::NonFinite {
                row,
                col: c,
                value: f64::from(v),
            });
        }
    }
    Ok(())
}

/// Dense rows (e.g. sentence embeddings), copied and normalised to unit length once, in
/// `f32`; the cosine of two rows is the dot product of their normalised copies accumulated in
/// `f64` (within a few `f32` ulps of the cosine of the originals).
///
/// ```
/// use simlsh::verify::{DenseVectors, Vectors};
/// use ndarray::array;
///
/// let v = DenseVectors::new(array![[3.0f32, 4.0], [4.0, 3.0], [0.0, 0.0]].view())?;
/// assert!((v.cosine(0, 1) - 0.96).abs() < 1e-6);
/// assert!(v.is_zero(2) && v.cosine(0, 2) == 0.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DenseVectors {
    dim: usize,
    data: Vec<f32>,
    zero: Vec<bool>,
}

impl DenseVectors {
    /// Copies and normalises the rows of `x` (in parallel).
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the first NaN or infinite value.
    pub fn new(x: ArrayView2<'_, f32>) -> Result<Self> {
        let (n, dim) = x.dim();
        let mut data = vec![0f32; n * dim];
        let mut zero = vec![false; n];
        if dim > 0 {
            data.par_chunks_mut(dim)
                .zip(zero.par_iter_mut())
                .enumerate()
                .try_for_each(|(i, (dst, z))| {
                    let row = x.row(i);
                    check_finite(i, (0u64..).zip(row.iter().copied()))?;
                    let ss: f64 = row.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
                    let inv = inverse_norm(ss);
                    *z = inv == 0.0;
                    for (d, &v) in dst.iter_mut().zip(row.iter()) {
                        *d = (f64::from(v) * inv) as f32;
                    }
                    Ok::<(), Error>(())
                })?;
        } else {
            zero.fill(true);
        }
        Ok(DenseVectors { dim, data, zero })
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Normalised row `i`.
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// Lanes of the dot product's canonical summation order: element `k` (of the first
/// `LANES·⌊n/LANES⌋`) is added to lane `k % LANES`; the lanes are summed pairwise
/// (`(l0 + l8) …`, halving), then the remainder in order. Every product of two `f32` is exact
/// in `f64` (24 + 24 bits ≤ 53), so a fused multiply-add rounds exactly as a multiply then an
/// add: the scalar reference and the AVX2 kernel give the same bits.
const LANES: usize = 16;

/// Dot product of two `f32` slices in `f64` (over the shorter length), in one canonical
/// summation order whatever the CPU: the AVX2 kernel and the scalar reference give the same
/// bits. The exact cosines of [`DenseVectors`] are made of it.
///
/// ```
/// assert_eq!(simlsh::verify::dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
/// ```
pub fn dot(a: &[f32], b: &[f32]) -> f64 {
    dot_dense(a, b)
}

/// [`dot`], by the kernel chosen once for this CPU.
fn dot_dense(a: &[f32], b: &[f32]) -> f64 {
    dot_kernel()(a, b)
}

type DotKernel = fn(&[f32], &[f32]) -> f64;

fn dot_kernel() -> DotKernel {
    static K: std::sync::OnceLock<DotKernel> = std::sync::OnceLock::new();
    *K.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::features().avx512f && crate::cpu::features().avx2_fma() {
            return x86::dot512_safe;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::features().avx2_fma() {
            return x86::dot_safe;
        }
        dot_scalar
    })
}

/// The lanes summed pairwise, halving: the canonical reduction.
fn reduce(mut acc: [f64; LANES]) -> f64 {
    let mut n = LANES;
    while n > 1 {
        n /= 2;
        for l in 0..n {
            acc[l] += acc[l + n];
        }
    }
    acc[0]
}

/// Scalar reference of the dot product.
fn dot_scalar(a: &[f32], b: &[f32]) -> f64 {
    let mut acc = [0f64; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] += f64::from(x[l]) * f64::from(y[l]);
        }
    }
    let mut s = reduce(acc);
    for (&x, &y) in ra.iter().zip(rb) {
        s += f64::from(x) * f64::from(y);
    }
    s
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{LANES, reduce};
    use std::arch::x86_64::*;

    /// The AVX2 + FMA dot product (four registers of four `f64` lanes: lane `l` of register
    /// `r` is canonical lane `4r + l`).
    pub fn dot_safe(a: &[f32], b: &[f32]) -> f64 {
        // SAFETY: chosen only when `cpu::features()` reports AVX2 and FMA.
        unsafe { dot(a, b) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot(a: &[f32], b: &[f32]) -> f64 {
        let n = a.len().min(b.len());
        let full = n / LANES * LANES;
        let mut acc = [_mm256_setzero_pd(); 4];
        let mut k = 0;
        while k < full {
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: k + 4r + 4 ≤ full ≤ n: four f32 in bounds of both slices
                // (unaligned loads).
                let (x, y) = unsafe {
                    (
                        _mm256_cvtps_pd(_mm_loadu_ps(a.as_ptr().add(k + 4 * r))),
                        _mm256_cvtps_pd(_mm_loadu_ps(b.as_ptr().add(k + 4 * r))),
                    )
                };
                *acc = _mm256_fmadd_pd(x, y, *acc);
            }
            k += LANES;
        }
        let mut lanes = [0f64; LANES];
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: 4 f64 stored at lanes[4r..4r + 4], in bounds (r < 4, LANES = 16).
            unsafe { _mm256_storeu_pd(lanes.as_mut_ptr().add(4 * r), *acc) };
        }
        let mut s = reduce(lanes);
        for (&x, &y) in a[full..n].iter().zip(&b[full..n]) {
            s += f64::from(x) * f64::from(y);
        }
        s
    }

    /// The AVX-512F dot product (two registers of eight `f64` lanes: lane `l` of register `r`
    /// is canonical lane `8r + l`), the same bits as the AVX2 one with half the conversions
    /// and multiply-adds.
    pub fn dot512_safe(a: &[f32], b: &[f32]) -> f64 {
        // SAFETY: chosen only when `cpu::features()` reports AVX-512F (and AVX2 and FMA).
        unsafe { dot512(a, b) }
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn dot512(a: &[f32], b: &[f32]) -> f64 {
        let n = a.len().min(b.len());
        let full = n / LANES * LANES;
        let mut acc = [_mm512_setzero_pd(); 2];
        let mut k = 0;
        while k < full {
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: k + 8r + 8 ≤ full ≤ n: eight f32 in bounds of both slices
                // (unaligned loads).
                let (x, y) = unsafe {
                    (
                        _mm512_cvtps_pd(_mm256_loadu_ps(a.as_ptr().add(k + 8 * r))),
                        _mm512_cvtps_pd(_mm256_loadu_ps(b.as_ptr().add(k + 8 * r))),
                    )
                };
                *acc = _mm512_fmadd_pd(x, y, *acc);
            }
            k += LANES;
        }
        let mut lanes = [0f64; LANES];
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: 8 f64 stored at lanes[8r..8r + 8], in bounds (r < 2, LANES = 16).
            unsafe { _mm512_storeu_pd(lanes.as_mut_ptr().add(8 * r), *acc) };
        }
        let mut s = reduce(lanes);
        for (&x, &y) in a[full..n].iter().zip(&b[full..n]) {
            s += f64::from(x) * f64::from(y);
        }
        s
    }
}

impl Vectors for DenseVectors {
    fn len(&self) -> usize {
        self.zero.len()
    }

    fn cols(&self) -> Option<usize> {
        Some(self.dim)
    }

    fn is_zero(&self, i: usize) -> bool {
        self.zero[i]
    }

    /// # Panics
    /// Also if the dimensions differ.
    fn cosine_with(&self, i: usize, other: &Self, j: usize) -> f64 {
        assert_eq!(self.dim, other.dim, "dense vectors of different dimensions");
        dot_dense(self.row(i), other.row(j))
    }

    fn prefetch(&self, i: usize) {
        if i < self.zero.len() {
            // Every cache line of the row (64 bytes = 16 values).
            for v in self.row(i).iter().step_by(16) {
                crate::cpu::prefetch(v);
            }
        }
    }
}

/// Dot product of two sparse rows `(keys, weights)` with strictly increasing keys (a merge of
/// the keys), accumulated in `f64` in key order: the sparse cosines of [`CsrVectors`],
/// [`SparseVectors`] and [`CsrRows`](super::CsrRows) are made of it.
///
/// ```
/// let d = simlsh::verify::dot_sparse(&[1u32, 4, 9], &[1.0, 2.0, 3.0], &[4u32, 9], &[0.5, 2.0]);
/// assert_eq!(d, 7.0);
/// ```
pub fn dot_sparse<K: Ord + Copy>(ka: &[K], wa: &[f32], kb: &[K], wb: &[f32]) -> f64 {
    let (mut p, mut q) = (0, 0);
    let mut s = 0f64;
    while p < ka.len() && q < kb.len() {
        match ka[p].cmp(&kb[q]) {
            std::cmp::Ordering::Less => p += 1,
            std::cmp::Ordering::Greater => q += 1,
            std::cmp::Ordering::Equal => {
                s += f64::from(wa[p]) * f64::from(wb[q]);
                p += 1;
                q += 1;
            }
        }
    }
    s
}

/// A borrowed sparse CSR matrix (any `sprs` index types), with the inverse norms of its rows
/// computed once; the cosine of two rows is their sparse dot product (a merge of the sorted
/// indices) accumulated in `f64`, times the inverse norms. Nothing is copied.
///
/// ```
/// use simlsh::verify::{CsrVectors, Vectors};
/// use sprs::CsMat;
///
/// let m = CsMat::new((3, 4), vec![0, 2, 4, 4], vec![0usize, 3, 0, 2], vec![1.0f32, 1.0, 1.0, 1.0]);
/// let v = CsrVectors::new(m.view())?;
/// assert!((v.cosine(0, 1) - 0.5).abs() < 1e-12);
/// assert_eq!(v.zero_rows(), vec![2]);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CsrVectors<'a, I: SpIndex = usize, Iptr: SpIndex = usize> {
    m: CsMatViewI<'a, f32, I, Iptr>,
    inv_norm: Vec<f64>,
}

impl<'a, I: SpIndex, Iptr: SpIndex> CsrVectors<'a, I, Iptr> {
    /// Wraps `m` and computes the norms of its rows (in parallel).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a CSC matrix; [`Error::NonFinite`] naming the first NaN or
    /// infinite value.
    pub fn new(m: CsMatViewI<'a, f32, I, Iptr>) -> Result<Self> {
        if !m.is_csr() {
            return Err(Error::Unsupported(
                "sparse input must be CSR (row-major), not CSC".into(),
            ));
        }
        let inv_norm = (0..m.rows())
            .into_par_iter()
            .map(|i| {
                let row = m.outer_view(i).expect("row in range");
                check_finite(
                    i,
                    row.indices()
                        .iter()
                        .map(|c| c.index() as u64)
                        .zip(row.data().iter().copied()),
                )?;
                let ss: f64 = row.data().iter().map(|&v| f64::from(v).powi(2)).sum();
                Ok(inverse_norm(ss))
            })
            .collect::<Result<Vec<f64>>>()?;
        Ok(CsrVectors { m, inv_norm })
    }
}

impl<I: SpIndex, Iptr: SpIndex> Vectors for CsrVectors<'_, I, Iptr> {
    fn len(&self) -> usize {
        self.inv_norm.len()
    }

    fn cols(&self) -> Option<usize> {
        Some(self.m.cols())
    }

    fn is_zero(&self, i: usize) -> bool {
        self.inv_norm[i] == 0.0
    }

    fn cosine_with(&self, i: usize, other: &Self, j: usize) -> f64 {
        let (a, b) = (
            self.m.outer_view(i).expect("row in range"),
            other.m.outer_view(j).expect("row in range"),
        );
        let dot = dot_sparse(a.indices(), a.data(), b.indices(), b.data());
        dot * self.inv_norm[i] * other.inv_norm[j]
    }
}

/// Owned sparse rows of `(u64 feature key, f32 weight)`, as the text front-end produces them:
/// each row sorted by key with repeated keys summed, zero weights dropped, and normalised to
/// unit length once. The cosine of two rows is their sparse dot product in `f64`.
///
/// ```
/// use simlsh::verify::{SparseVectors, Vectors};
///
/// let v = SparseVectors::from_rows([
///     vec![(7u64, 1.0f32), (3, 1.0)],
///     vec![(3, 2.0), (9, 2.0)],
///     vec![],
/// ])?;
/// assert!((v.cosine(0, 1) - 0.5).abs() < 1e-7);
/// assert_eq!(v.row(0).0, &[3, 7]);
/// assert_eq!(v.zero_rows(), vec![2]);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparseVectors {
    offsets: Vec<usize>,
    keys: Vec<u64>,
    weights: Vec<f32>,
}

impl SparseVectors {
    /// Rows from any iterables of `(key, weight)` pairs, in any order (sorted here, repeated
    /// keys summed, zeros dropped, then normalised).
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the row and key of the first NaN or infinite weight (or of
    /// a sum of repeated keys that overflows).
    pub fn from_rows<R, T>(rows: R) -> Result<Self>
    where
        R: IntoIterator<Item = T>,
        T: IntoIterator<Item = (u64, f32)>,
    {
        let mut out = SparseVectors {
            offsets: vec![0],
            ..SparseVectors::default()
        };
        let mut buf: Vec<(u64, f32)> = Vec::new();
        for (r, row) in rows.into_iter().enumerate() {
            buf.clear();
            buf.extend(row);
            out.push_row(r, &mut buf)?;
        }
        Ok(out)
    }

    /// The rows of documents' features ([`Features`]), each token keyed by
    /// [`idf_key`] (a fixed XXH3, the key of the IDF tables), weighted as the tokenizer
    /// weighted it (e.g. TF-IDF): the exact cosine of the vectors the signatures sketch.
    ///
    /// # Errors
    /// As [`from_rows`](Self::from_rows).
    pub fn from_features<'a>(docs: impl IntoIterator<Item = &'a Features>) -> Result<Self> {
        Self::from_rows(docs.into_iter().map(|f| {
            f.tokens
                .iter()
                .zip(&f.weights)
                .map(|(t, &w)| (idf_key(t), w))
        }))
    }

    /// The weighted features of signed documents ([`FeatureRows`] from
    /// [`Tokenizer::sign_corpus_with`](crate::text::Tokenizer::sign_corpus_with)), taken
    /// without a copy: each row normalised in place, zero weights dropped. The cosine of two
    /// rows is the exact cosine of the documents' weighted feature vectors, the vectors the
    /// signatures sketch.
    ///
    /// ```
    /// use simlsh::text::{SignOptions, Tokenizer};
    /// use simlsh::verify::{SparseVectors, Vectors};
    /// use simlsh::HashingTrick;
    ///
    /// let tok = Tokenizer::builder().build()?;
    /// let signer = HashingTrick::builder().bits(64).build()?;
    /// let docs = ["a b c", "a b d", ""];
    /// let corpus = tok.sign_corpus_with(&signer, &docs, SignOptions::default().rows(true))?;
    /// let v = SparseVectors::from_feature_rows(corpus.rows.unwrap())?;
    /// assert!((v.cosine(0, 1) - 2.0 / 3.0).abs() < 1e-6);
    /// assert_eq!(v.zero_rows(), vec![2]);
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the row and key of a non-finite weight.
    pub fn from_feature_rows(rows: FeatureRows) -> Result<Self> {
        let (indptr, mut keys, mut weights) = rows.into_parts();
        let mut offsets = Vec::with_capacity(indptr.len());
        offsets.push(0);
        let mut out = 0;
        for (r, w) in indptr.windows(2).enumerate() {
            let start = out;
            let mut ss = 0f64;
            for p in w[0]..w[1] {
                let v = weights[p];
                if !v.is_finite() {
                    return Err(Error::NonFinite {
                        row: r,
                        col: keys[p],
                        value: f64::from(v),
                    });
                }
                if v != 0.0 {
                    keys[out] = keys[p];
                    weights[out] = v;
                    ss += f64::from(v) * f64::from(v);
                    out += 1;
                }
            }
            let inv = inverse_norm(ss);
            for v in &mut weights[start..out] {
                *v = (f64::from(*v) * inv) as f32;
            }
            offsets.push(out);
        }
        keys.truncate(out);
        weights.truncate(out);
        Ok(SparseVectors {
            offsets,
            keys,
            weights,
        })
    }

    /// A copy of a CSR matrix of any `sprs` index types, keyed by column.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a CSC matrix; as [`from_rows`](Self::from_rows).
    pub fn from_csr<I: SpIndex, Iptr: SpIndex>(m: CsMatViewI<'_, f32, I, Iptr>) -> Result<Self> {
        if !m.is_csr() {
            return Err(Error::Unsupported(
                "sparse input must be CSR (row-major), not CSC".into(),
            ));
        }
        Self::from_rows(m.outer_iterator().map(|row| {
            row.indices()
                .iter()
                .zip(row.data())
                .map(|(c, &v)| (c.index() as u64, v))
                .collect::<Vec<_>>()
        }))
    }

    fn push_row(&mut self, r: usize, buf: &mut [(u64, f32)]) -> Result<()> {
        check_finite(r, buf.iter().copied())?;
        buf.sort_unstable_by_key(|e| e.0);
        let start = self.keys.len();
        for &(k, w) in buf.iter() {
            if self.keys.len() > start && self.keys[self.keys.len() - 1] == k {
                *self.weights.last_mut().expect("a previous entry") += w;
            } else {
                self.keys.push(k);
                self.weights.push(w);
            }
        }
        // Drop zeros (also sums that cancelled), then normalise.
        let mut keep = start;
        for p in start..self.keys.len() {
            let w = self.weights[p];
            if !w.is_finite() {
                return Err(Error::NonFinite {
                    row: r,
                    col: self.keys[p],
                    value: f64::from(w),
                });
            }
            if w != 0.0 {
                self.keys[keep] = self.keys[p];
                self.weights[keep] = w;
                keep += 1;
            }
        }
        self.keys.truncate(keep);
        self.weights.truncate(keep);
        let ss: f64 = self.weights[start..]
            .iter()
            .map(|&w| f64::from(w).powi(2))
            .sum();
        let inv = inverse_norm(ss);
        for w in &mut self.weights[start..] {
            *w = (f64::from(*w) * inv) as f32;
        }
        self.offsets.push(self.keys.len());
        Ok(())
    }

    /// Row `i`: its keys (strictly increasing) and normalised weights.
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn row(&self, i: usize) -> (&[u64], &[f32]) {
        let (a, b) = (self.offsets[i], self.offsets[i + 1]);
        (&self.keys[a..b], &self.weights[a..b])
    }

    /// Total number of stored entries.
    pub fn nnz(&self) -> usize {
        self.keys.len()
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> usize {
        self.offsets.capacity() * 8 + self.keys.capacity() * 8 + self.weights.capacity() * 4
    }
}

impl Vectors for SparseVectors {
    fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    fn is_zero(&self, i: usize) -> bool {
        self.offsets[i] == self.offsets[i + 1]
    }

    fn cosine_with(&self, i: usize, other: &Self, j: usize) -> f64 {
        let ((ka, wa), (kb, wb)) = (self.row(i), other.row(j));
        dot_sparse(ka, wa, kb, wb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::exact_cosine;
    use ndarray::Array2;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use sprs::TriMat;

    #[test]
    fn dot_kernels_equal_the_scalar_reference_bit_for_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for n in (0..70).chain([383, 384, 385, 1000]) {
            let a: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..3.0)).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..3.0)).collect();
            let want = dot_scalar(&a, &b);
            // The dispatched kernel (AVX-512F or AVX2 + FMA where present) gives the same bits.
            assert_eq!(dot_dense(&a, &b).to_bits(), want.to_bits(), "n = {n}");
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::detected().avx2_fma() {
                assert_eq!(x86::dot_safe(&a, &b).to_bits(), want.to_bits(), "n = {n}");
            }
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::detected().avx2_fma() && crate::cpu::detected().avx512f {
                assert_eq!(
                    x86::dot512_safe(&a, &b).to_bits(),
                    want.to_bits(),
                    "n = {n}"
                );
            }
            // And the value is the dot product, to the rounding of f64 sums.
            let naive: f64 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum();
            assert!(
                (want - naive).abs() <= 1e-12 * (1.0 + naive.abs()),
                "n = {n}"
            );
        }
    }

    /// Random sparse rows over `dim` columns, about `density` filled, some rows empty.
    fn random_dense(
        rng: &mut Xoshiro256PlusPlus,
        n: usize,
        dim: usize,
        density: f64,
    ) -> Array2<f32> {
        Array2::from_shape_fn((n, dim), |(i, _)| {
            if i % 7 == 3 || rng.random::<f64>() > density {
                0.0
            } else {
                rng.random_range(-2.0f32..2.0)
            }
        })
    }

    #[test]
    fn every_kind_agrees_with_the_f64_oracle() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let x = random_dense(&mut rng, 30, 40, 0.3);
        let dense = DenseVectors::new(x.view()).unwrap();
        let mut tri = TriMat::new((30, 40));
        let mut tri32 = sprs::TriMatI::<f32, u32>::new((30, 40));
        for ((i, j), &v) in x.indexed_iter() {
            if v != 0.0 {
                tri.add_triplet(i, j, v);
                tri32.add_triplet(i, j, v);
            }
        }
        let csr = tri.to_csr::<usize>();
        let csr32: sprs::CsMatI<f32, u32, u32> = tri32.to_csr();
        let borrowed = CsrVectors::new(csr.view()).unwrap();
        let borrowed32 = CsrVectors::new(csr32.view()).unwrap();
        let owned = SparseVectors::from_csr(csr32.view()).unwrap();
        // Scrambled keys, given out of order and with a repeated key split in two.
        let scrambled = SparseVectors::from_rows(x.rows().into_iter().map(|row| {
            let mut e: Vec<(u64, f32)> = Vec::new();
            for (j, &v) in row.iter().enumerate().rev() {
                if v != 0.0 {
                    let key = crate::rng::mix64(j as u64);
                    e.push((key, v / 2.0));
                    e.push((key, v / 2.0));
                }
            }
            e
        }))
        .unwrap();
        let zeros: Vec<u32> = (0..30u32).filter(|i| i % 7 == 3).collect();
        for v in [
            dense.zero_rows(),
            borrowed.zero_rows(),
            borrowed32.zero_rows(),
            owned.zero_rows(),
            scrambled.zero_rows(),
        ] {
            assert_eq!(v, zeros);
        }
        for i in 0..30 {
            for j in 0..30 {
                let want = exact_cosine(x.row(i), x.row(j));
                for got in [
                    dense.cosine(i, j),
                    borrowed.cosine(i, j),
                    borrowed32.cosine(i, j),
                    owned.cosine(i, j),
                    scrambled.cosine(i, j),
                ] {
                    assert!((got - want).abs() < 1e-6, "{i} {j}: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn non_finite_values_are_named() {
        let mut x = Array2::<f32>::ones((3, 4));
        x[[2, 1]] = f32::NAN;
        match DenseVectors::new(x.view()) {
            Err(Error::NonFinite { row: 2, col: 1, .. }) => {}
            other => panic!("{other:?}"),
        }
        match SparseVectors::from_rows([vec![(5u64, 1.0f32)], vec![(9, f32::INFINITY)]]) {
            Err(Error::NonFinite { row: 1, col: 9, .. }) => {}
            other => panic!("{other:?}"),
        }
        // A sum of repeated keys that overflows.
        match SparseVectors::from_rows([vec![(5u64, f32::MAX), (5, f32::MAX)]]) {
            Err(Error::NonFinite { row: 0, col: 5, .. }) => {}
            other => panic!("{other:?}"),
        }
        let csc = sprs::CsMat::<f32>::eye(3).to_csc();
        assert!(CsrVectors::new(csc.view()).is_err());
        assert!(SparseVectors::from_csr(csc.view()).is_err());
    }

    #[test]
    fn features_are_keyed_by_the_idf_key() {
        let f = Features {
            tokens: vec!["a".into(), "b".into()],
            weights: vec![3.0, 4.0],
        };
        let g = Features {
            tokens: vec!["b".into()],
            weights: vec![1.0],
        };
        let v = SparseVectors::from_features([&f, &g]).unwrap();
        assert!((v.cosine(0, 1) - 0.8).abs() < 1e-7);
        let (keys, _) = v.row(1);
        assert_eq!(keys, &[idf_key("b")]);
    }
}
