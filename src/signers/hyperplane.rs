//! Random hyperplanes (Charikar 2002): an explicit, seeded `D × f` matrix.

use ndarray::{ArrayRef2, s};
use rayon::prelude::*;

use super::dense::Projector;
use super::kernels::{add_signed_rows, axpy};
use super::{BATCH_ROWS, Signer, SignerInfo, check_dense};
use crate::error::{Error, Result};
use crate::memory;
use crate::rng::{Rng, expand};
use crate::signature::{SignatureMatrix, last_word_mask, words_for};

/// How the entries of a [`HyperplaneSigner`]'s matrix are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Distribution {
    /// Independent standard normal entries: the exact `1 − θ/π` collision law.
    #[default]
    Gaussian,
    /// Independent `±1` entries (Achlioptas): stored as bits, 32× smaller than Gaussian.
    Rademacher,
    /// Very sparse projections (Li, Hastie & Church 2006): each entry is `±1` with
    /// probability `density` (half each) and `0` otherwise. `None` means `1/√D`, or, with
    /// [`HyperplaneBuilder::expected_nnz`], the density that keeps a sparse row's projections
    /// from vanishing.
    ///
    /// **Sparse rows.** A projection of a row with `k` nonzeros is exactly 0 when the column
    /// has no entry on any of them, with probability [`zero_projection_fraction`]`(k, p)` =
    /// `(1 − p)^k`; such bits are 0 for every row that misses them, so two unrelated sparse
    /// rows collide there. At `p = 1/√D` and `D = 2^20`, a row of 200 nonzeros has 82% of its
    /// projections at 0. Use it for dense inputs, or set the expected row length. That removes
    /// the zeros, not the bias of sparse `±1` columns when a few features dominate (a shared
    /// heavy coordinate mostly has entry 0, so such pairs collide too rarely: on W1,
    /// rmse/ideal 1.9 at f = 64, `examples/tradeoff.rs`): for sparse rows prefer
    /// [`HashedGaussian`](super::HashedGaussian).
    ///
    /// **Memory.** `4·(D + 1) + 4·nnz` bytes: a row offset per feature plus one `u32` per
    /// nonzero entry, `nnz ≈ p·D·f`, so `≈ 4·D + 4·f·√D` at the default density (the offsets
    /// dominate unless `f > √D`).
    VerySparse {
        /// Fraction of nonzero entries, in (0, 1]; `None` for `1/√D`.
        density: Option<f64>,
    },
    /// Super-bit LSH (Ji et al. 2012): Gaussian hyperplanes orthonormalised (Gram–Schmidt) in
    /// batches of `depth` consecutive bits; `None` means `min(D, f)`. Same collision law,
    /// lower variance of the angle estimate.
    SuperBit {
        /// Batch size `N`, `1 ≤ N ≤ min(D, f)`; `None` for `min(D, f)`.
        depth: Option<usize>,
    },
}

/// Builder for [`HyperplaneSigner`]: `HyperplaneSigner::builder().dim(384).bits(256).seed(7).build()`.
#[derive(Clone, Debug, Default)]
pub struct HyperplaneBuilder {
    bits: Option<usize>,
    dim: Option<u64>,
    seed: u64,
    distribution: Distribution,
    expected_nnz: Option<u64>,
    max_bytes: Option<u64>,
}

/// `ln 100`: with density `ZERO_TARGET / k`, at most `e^-ZERO_TARGET` = 1% of the
/// projections of a row of `k` nonzeros are exactly 0 (since `(1 − c/k)^k ≤ e^-c`).
pub const ZERO_TARGET: f64 = 4.605_170_185_988_092;

/// The expected fraction of a very sparse signer's projections of a row of `nnz` nonzeros
/// that are exactly 0 (no entry of the column on any of them), `(1 − density)^nnz`: those
/// bits are 0 whatever the row, a source of false collisions between sparse rows. Callers
/// can warn when it is large; [`HyperplaneBuilder::expected_nnz`] keeps it below 1%.
///
/// ```
/// use simlsh::signers::zero_projection_fraction;
/// let d = (1u64 << 20) as f64;
/// assert!(zero_projection_fraction(200, 1.0 / d.sqrt()) > 0.8);
/// assert!(zero_projection_fraction(200, 4.61 / 200.0) < 0.01);
/// ```
pub fn zero_projection_fraction(nnz: u64, density: f64) -> f64 {
    let p = density.clamp(0.0, 1.0);
    // Square-and-multiply: exact operations, the same value on every platform.
    let (mut base, mut e, mut out) = (1.0 - p, nnz, 1.0);
    while e > 0 {
        if e & 1 == 1 {
            out *= base;
        }
        base *= base;
        e >>= 1;
    }
    out
}

impl HyperplaneBuilder {
    /// Signature width `f` (required, ≥ 1).
    pub fn bits(mut self, f: usize) -> Self {
        self.bits = Some(f);
        self
    }

    /// Input dimension `D` (required, ≥ 1).
    pub fn dim(mut self, d: u64) -> Self {
        self.dim = Some(d);
        self
    }

    /// Seed of the matrix (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Entry distribution (default Gaussian).
    pub fn distribution(mut self, d: Distribution) -> Self {
        self.distribution = d;
        self
    }

    /// Expected nonzeros `k` per input row, for [`Distribution::VerySparse`] without an
    /// explicit density: the density becomes `max(1/√D, min(1, ln 100 / k))`, so that at
    /// most 1% of the projections of a row of `k` (or more) nonzeros are exactly 0 (see
    /// [`zero_projection_fraction`]). The matrix then holds `≈ ln 100 · D·f / k` entries.
    pub fn expected_nnz(mut self, k: u64) -> Self {
        self.expected_nnz = Some(k);
        self
    }

    /// The most memory the matrix may take (default: no limit but the allocator's, whose
    /// failure is an error, not an abort). [`build`](Self::build) checks
    /// [`matrix_bytes`](Self::matrix_bytes) against it before drawing anything, so that a
    /// dimension read from a file cannot make a matrix larger than the machine.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// The bytes the matrix needs, known before it is drawn: `4·D·f` (Gaussian, super-bit),
    /// `8·D·⌈f/64⌉` (Rademacher), `4·(D + 1) + 4·p·D·f` for very sparse at density `p`, plus
    /// `24·D` while it is built (its rows are drawn in parallel). `None` when it does not fit
    /// in `u64` (or `bits`/`dim` are missing).
    pub fn matrix_bytes(&self) -> Option<u64> {
        let (f, d) = (self.bits? as u64, self.dim?);
        match self.distribution {
            Distribution::Gaussian | Distribution::SuperBit { .. } => {
                d.checked_mul(f)?.checked_mul(4)
            }
            Distribution::Rademacher => d.checked_mul(f.div_ceil(64))?.checked_mul(8),
            Distribution::VerySparse { density } => {
                let p = density.unwrap_or_else(|| {
                    let default = 1.0 / (d as f64).sqrt();
                    match self.expected_nnz {
                        Some(k) if k > 0 => default.max((ZERO_TARGET / k as f64).min(1.0)),
                        _ => default,
                    }
                });
                let entries = 4.0 * p.clamp(0.0, 1.0) * d as f64 * f as f64;
                let fixed = d
                    .checked_add(1)?
                    .checked_mul(4)?
                    .checked_add(d.checked_mul(24)?)?;
                if entries >= u64::MAX as f64 {
                    return None;
                }
                fixed.checked_add(entries.ceil() as u64)
            }
        }
    }

    /// Validates the parameters and draws the matrix.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a missing or bad parameter, or a matrix larger than
    /// [`max_bytes`](Self::max_bytes); [`Error::OutOfMemory`] for one larger than the process
    /// may allocate ([`memory::available`](crate::memory::available)) or the allocator grants.
    pub fn build(self) -> Result<HyperplaneSigner> {
        let bits = super::required_bits(self.bits)?;
        let dim = self.dim.ok_or_else(|| Error::param("dim", "required"))?;
        if dim == 0 {
            return Err(Error::param("dim", "must be at least 1"));
        }
        let d =
            usize::try_from(dim).map_err(|_| Error::param("dim", "too large for this platform"))?;
        let too_large = |need: String, limit: String| {
            Error::param(
                "dim",
                format!(
                    "a {} matrix of D = {dim} × f = {bits} needs {need} bytes, more than {limit}; \
                     signers without a matrix (hashed-gaussian, hashing-trick, pooled) take any \
                     dimension",
                    match self.distribution {
                        Distribution::Gaussian => "Gaussian",
                        Distribution::SuperBit { .. } => "super-bit",
                        Distribution::Rademacher => "Rademacher",
                        Distribution::VerySparse { .. } => "very sparse",
                    }
                ),
            )
        };
        match self.matrix_bytes() {
            None => return Err(too_large("over 2^64".into(), "any machine".into())),
            Some(b) if self.max_bytes.is_some_and(|m| b > m) => {
                return Err(too_large(
                    b.to_string(),
                    format!("the limit of {}", self.max_bytes.unwrap_or(u64::MAX)),
                ));
            }
            Some(b) => {
                // More than the process may allocate, or an allocation the allocator refuses,
                // is an error here, not an abort later.
                let what = format!("a matrix of D = {dim} × f = {bits}");
                memory::check(&what, b)?;
                let mut probe: Vec<u8> = Vec::new();
                let n = usize::try_from(b).unwrap_or(usize::MAX);
                probe
                    .try_reserve_exact(n)
                    .map_err(|e| memory::refused(&what, b, e))?;
            }
        }
        let seed = self.seed;
        // The distribution is stored resolved (depth and density as used), so `info` reports
        // the parameters that rebuild this matrix.
        let mut distribution = self.distribution;
        if self.expected_nnz.is_some()
            && !matches!(self.distribution, Distribution::VerySparse { .. })
        {
            return Err(Error::param(
                "expected_nnz",
                "applies to the very sparse distribution only",
            ));
        }
        let matrix = match self.distribution {
            Distribution::Gaussian => Matrix::Dense(gaussian_rows(d, bits, seed)),
            Distribution::SuperBit { depth } => {
                let depth = depth.unwrap_or(d.min(bits));
                distribution = Distribution::SuperBit { depth: Some(depth) };
                if depth == 0 || depth > d.min(bits) {
                    return Err(Error::param(
                        "depth",
                        format!("must be in 1..={} (min(D, f))", d.min(bits)),
                    ));
                }
                let mut m = gaussian_rows(d, bits, seed);
                orthonormalise(&mut m, d, bits, depth);
                Matrix::Dense(m)
            }
            Distribution::Rademacher => {
                let w = words_for(bits);
                let mut words = vec![0u64; d * w];
                words.par_chunks_mut(w).enumerate().for_each(|(i, row)| {
                    let mut rng = Rng::new(expand(seed, i as u64));
                    row.iter_mut().for_each(|x| *x = rng.next_u64());
                    row[w - 1] &= last_word_mask(bits);
                });
                Matrix::Signs(words)
            }
            Distribution::VerySparse { density } => {
                let default = 1.0 / (d as f64).sqrt();
                let p = match (density, self.expected_nnz) {
                    (Some(_), Some(_)) => {
                        return Err(Error::param(
                            "expected_nnz",
                            "set either the density or the expected row length, not both",
                        ));
                    }
                    (Some(p), None) => p,
                    (None, Some(0)) => {
                        return Err(Error::param("expected_nnz", "must be at least 1"));
                    }
                    (None, Some(k)) => default.max((ZERO_TARGET / k as f64).min(1.0)),
                    (None, None) => default,
                };
                if !(p > 0.0 && p <= 1.0) {
                    return Err(Error::param("density", format!("{p} is not in (0, 1]")));
                }
                distribution = Distribution::VerySparse { density: Some(p) };
                very_sparse(d, bits, p, seed)?
            }
        };
        Ok(HyperplaneSigner {
            bits,
            dim,
            seed,
            distribution: Some(distribution),
            matrix,
        })
    }
}

/// Row `i` of a seeded matrix uses its own generator `Rng::new(expand(seed, i))`, so rows can
/// be drawn in parallel and the matrix does not depend on the thread count.
fn gaussian_rows(d: usize, f: usize, seed: u64) -> Vec<f32> {
    let mut m = vec![0f32; d * f];
    m.par_chunks_mut(f).enumerate().for_each(|(i, row)| {
        let mut rng = Rng::new(expand(seed, i as u64));
        row.iter_mut().for_each(|x| *x = rng.gaussian() as f32);
    });
    m
}

/// Modified Gram–Schmidt (in `f64`) of the columns of the row-major `d × f` matrix `m`, in
/// batches of `depth` consecutive columns; each column ends with unit norm.
fn orthonormalise(m: &mut [f32], d: usize, f: usize, depth: usize) {
    for start in (0..f).step_by(depth) {
        let end = (start + depth).min(f);
        let mut cols: Vec<Vec<f64>> = (start..end)
            .map(|j| (0..d).map(|i| m[i * f + j] as f64).collect())
            .collect();
        for a in 0..cols.len() {
            let (done, rest) = cols.split_at_mut(a);
            let c = &mut rest[0];
            for q in done.iter() {
                let dot: f64 = c.iter().zip(q).map(|(x, y)| x * y).sum();
                c.iter_mut().zip(q).for_each(|(x, y)| *x -= dot * y);
            }
            let norm = c.iter().map(|x| x * x).sum::<f64>().sqrt();
            c.iter_mut().for_each(|x| *x /= norm);
        }
        for (k, c) in cols.iter().enumerate() {
            for (i, &v) in c.iter().enumerate() {
                m[i * f + start + k] = v as f32;
            }
        }
    }
}

/// The entries of row `i` of a very sparse matrix, in order: `emit(j, negative)` for each
/// nonzero column `j < f`.
fn very_sparse_row(i: usize, f: usize, p: f64, seed: u64, mut emit: impl FnMut(u64, u32)) {
    let mut rng = Rng::new(expand(seed, i as u64));
    let mut j = rng.geometric(p);
    while j < f as u64 {
        let negative = (rng.next_u64() >> 63) as u32;
        emit(j, negative);
        j = j.saturating_add(1).saturating_add(rng.geometric(p));
    }
}

/// The number of nonzero entries of the very sparse `d × f` matrix of density `p` drawn from
/// `seed`, counted without storing the matrix (the draws of [`very_sparse`]).
pub(crate) fn very_sparse_nonzeros(d: usize, f: usize, p: f64, seed: u64) -> u64 {
    (0..d)
        .into_par_iter()
        .map(|i| {
            let mut n = 0u64;
            very_sparse_row(i, f, p, seed, |_, _| n += 1);
            n
        })
        .sum()
}

fn very_sparse(d: usize, f: usize, p: f64, seed: u64) -> Result<Matrix> {
    let rows: Vec<Vec<u32>> = (0..d)
        .into_par_iter()
        .map(|i| {
            let mut row = Vec::new();
            very_sparse_row(i, f, p, seed, |j, negative| {
                row.push((j as u32) << 1 | negative)
            });
            row
        })
        .collect();
    let total: usize = rows.iter().map(Vec::len).sum();
    if total > u32::MAX as usize || f > (u32::MAX >> 1) as usize {
        return Err(Error::param(
            "density",
            "the sparse matrix would have more than 2^32 nonzeros",
        ));
    }
    let mut offsets = Vec::with_capacity(d + 1);
    let mut entries = Vec::with_capacity(total);
    offsets.push(0u32);
    for r in rows {
        entries.extend_from_slice(&r);
        offsets.push(entries.len() as u32);
    }
    Ok(Matrix::Sparse { offsets, entries })
}

#[derive(Clone, Debug)]
enum Matrix {
    /// `D × f` floats, row-major: row `i` is the column `r_i` of feature `i`.
    Dense(Vec<f32>),
    /// `D × words_for(f)` sign words: bit `j` of row `i` set means `r_ij = +1`, else `−1`.
    Signs(Vec<u64>),
    /// CSR by feature: entries `offsets[i]..offsets[i+1]` hold `j << 1 | negative`.
    Sparse {
        offsets: Vec<u32>,
        entries: Vec<u32>,
    },
}

/// An explicit random-hyperplane signer: `D × f` matrix, drawn from a seed. See
/// [`Distribution`] for the choices and [`HyperplaneSigner::builder`].
///
/// ```
/// use simlsh::{HyperplaneSigner, Signer, signers::Distribution};
/// let s = HyperplaneSigner::builder().dim(3).bits(64).seed(1)
///     .distribution(Distribution::SuperBit { depth: None }).build()?;
/// let a = s.sign_dense_row(&[1.0, 2.0, 3.0])?;
/// let b = s.sign_dense_row(&[2.0, 4.0, 6.0])?; // same direction, same signature
/// assert_eq!(a.distance(&b)?, 0);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct HyperplaneSigner {
    bits: usize,
    dim: u64,
    seed: u64,
    distribution: Option<Distribution>,
    matrix: Matrix,
}

impl HyperplaneSigner {
    /// A builder with the defaults (Gaussian, seed 0); `dim` and `bits` must be set.
    pub fn builder() -> HyperplaneBuilder {
        HyperplaneBuilder::default()
    }

    /// A signer from a given `D × f` matrix (row `i` is the column of feature `i`).
    pub fn from_matrix(matrix: &ArrayRef2<f32>) -> Result<Self> {
        let (d, f) = matrix.dim();
        if d == 0 || f == 0 {
            return Err(Error::param(
                "matrix",
                "must have at least one row and one column",
            ));
        }
        check_dense(matrix, None)?;
        Ok(HyperplaneSigner {
            bits: f,
            dim: d as u64,
            seed: 0,
            distribution: None,
            matrix: Matrix::Dense(matrix.iter().copied().collect()),
        })
    }

    /// A `±1` signer from sign words (`D × words_for(bits)`, bit set means `+1`). Its
    /// [`info`](Signer::info) kind is `custom` (like [`from_matrix`](Self::from_matrix)): the
    /// matrix is the caller's, not one drawn from the seed.
    pub fn from_sign_words(dim: u64, bits: usize, words: Vec<u64>, seed: u64) -> Result<Self> {
        let w = words_for(bits);
        if bits == 0 || dim == 0 || words.len() as u64 != dim * w as u64 {
            return Err(Error::LengthMismatch {
                what: "sign words vs dim × words",
                left: words.len(),
                right: (dim as usize) * w,
            });
        }
        let mask = last_word_mask(bits);
        let words = words
            .chunks_exact(w)
            .flat_map(|r| {
                let mut r = r.to_vec();
                r[w - 1] &= mask;
                r
            })
            .collect();
        Ok(HyperplaneSigner {
            bits,
            dim,
            seed,
            distribution: None,
            matrix: Matrix::Signs(words),
        })
    }

    /// The resolved density of a very sparse matrix (`None` for the other distributions), for
    /// [`zero_projection_fraction`].
    pub fn density(&self) -> Option<f64> {
        match self.distribution {
            Some(Distribution::VerySparse { density }) => density,
            _ => None,
        }
    }

    /// The column `r_i` of feature `i` as floats (`f` values).
    pub fn column(&self, i: u64) -> Result<Vec<f32>> {
        if i >= self.dim {
            return Err(Error::IndexOutOfRange {
                row: 0,
                col: i,
                dim: self.dim,
            });
        }
        let (i, f) = (i as usize, self.bits);
        Ok(match &self.matrix {
            Matrix::Dense(m) => m[i * f..(i + 1) * f].to_vec(),
            Matrix::Signs(s) => {
                let w = words_for(f);
                (0..f)
                    .map(|j| {
                        if s[i * w + j / 64] >> (j % 64) & 1 == 1 {
                            1.0
                        } else {
                            -1.0
                        }
                    })
                    .collect()
            }
            Matrix::Sparse { offsets, entries } => {
                let mut c = vec![0f32; f];
                for &e in &entries[offsets[i] as usize..offsets[i + 1] as usize] {
                    c[(e >> 1) as usize] = if e & 1 == 1 { -1.0 } else { 1.0 };
                }
                c
            }
        })
    }

    /// The matrix as a dense `D × f` array of floats, borrowed when stored densely.
    fn dense_matrix(&self) -> Option<std::borrow::Cow<'_, [f32]>> {
        match &self.matrix {
            Matrix::Dense(m) => Some(std::borrow::Cow::Borrowed(m)),
            Matrix::Signs(_) if self.dim as usize * self.bits <= 1 << 26 => {
                let mut m = Vec::with_capacity(self.dim as usize * self.bits);
                for i in 0..self.dim {
                    m.extend(self.column(i).expect("in range"));
                }
                Some(std::borrow::Cow::Owned(m))
            }
            _ => None,
        }
    }
}

impl Signer for HyperplaneSigner {
    fn bits(&self) -> usize {
        self.bits
    }

    fn dim(&self) -> Option<u64> {
        Some(self.dim)
    }

    fn info(&self) -> SignerInfo {
        let (d, f) = (self.dim as f64, self.bits as f64);
        let mut params = vec![("dim", self.dim.to_string())];
        let (kind, bytes, adds) = match (&self.matrix, self.distribution) {
            (Matrix::Dense(m), Some(Distribution::SuperBit { depth })) => {
                let depth = depth.expect("stored resolved");
                params.push(("depth", depth.to_string()));
                ("super-bit", m.len() * 4, f)
            }
            (Matrix::Dense(m), Some(_)) => ("gaussian", m.len() * 4, f),
            (Matrix::Dense(m), None) => ("custom", m.len() * 4, f),
            (Matrix::Signs(s), Some(_)) => ("rademacher", s.len() * 8, f),
            (Matrix::Signs(s), None) => {
                params.push(("entries", "signs".into()));
                ("custom", s.len() * 8, f)
            }
            (Matrix::Sparse { offsets, entries }, distribution) => {
                let density = entries.len() as f64 / (d * f);
                params.push(("density", format!("{density:.6}")));
                if let Some(Distribution::VerySparse { density: Some(p) }) = distribution {
                    params.push(("density_param", p.to_string()));
                }
                (
                    "very-sparse",
                    offsets.len() * 4 + entries.len() * 4,
                    entries.len() as f64 / d,
                )
            }
        };
        SignerInfo {
            kind,
            bits: self.bits,
            dim: Some(self.dim),
            seed: self.seed,
            bytes,
            adds_per_nonzero: adds,
            adds_per_vector: 0.0,
            hash_words_per_nonzero: 0.0,
            params,
        }
    }

    fn accumulate(&self, ids: &[u64], weights: &[f32], acc: &mut [f32]) {
        let f = self.bits;
        match &self.matrix {
            Matrix::Dense(m) => {
                for (&i, &w) in ids.iter().zip(weights) {
                    let i = i as usize;
                    axpy(&mut acc[..f], &m[i * f..(i + 1) * f], w);
                }
            }
            Matrix::Signs(s) => {
                let nw = words_for(f);
                add_signed_rows(acc, weights, |i, k| s[ids[i] as usize * nw + k]);
            }
            Matrix::Sparse { offsets, entries } => {
                for (&i, &w) in ids.iter().zip(weights) {
                    let i = i as usize;
                    for &e in &entries[offsets[i] as usize..offsets[i + 1] as usize] {
                        let t = if e & 1 == 1 { -w } else { w };
                        acc[(e >> 1) as usize] += t;
                    }
                }
            }
        }
    }

    /// Dense batches go through a register-blocked matrix product fused with the sign test
    /// (see `signers::dense`), in parallel blocks of rows; bits too close to zero to be certain
    /// are recomputed in the canonical order, so the result equals the sparse path bit for bit.
    fn sign_dense(&self, x: &ArrayRef2<f32>) -> Result<SignatureMatrix> {
        let Some(m) = self.dense_matrix() else {
            return super::sign_dense_gather(self, x);
        };
        check_dense(x, Some(self.dim))?;
        let (d, f) = (self.dim as usize, self.bits);
        let proj = Projector::new(&m, d, f);
        let w = words_for(f);
        let mut out = SignatureMatrix::zeros(x.nrows(), f)?;
        out.as_mut_slice()
            .par_chunks_mut(w * BATCH_ROWS)
            .enumerate()
            .for_each(|(c, chunk)| {
                let a = c * BATCH_ROWS;
                let xb = x.slice(s![a..a + chunk.len() / w, ..]);
                match xb.as_slice() {
                    Some(rows) => proj.sign_rows(rows, chunk),
                    None => proj.sign_rows(
                        xb.as_standard_layout().as_slice().expect("standard layout"),
                        chunk,
                    ),
                }
            });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_beyond_the_limit_or_u64_are_errors_before_allocation() {
        let b = HyperplaneSigner::builder().dim(1 << 16).bits(64);
        assert_eq!(b.matrix_bytes(), Some(4 << 22));
        let err = b
            .clone()
            .max_bytes(1 << 20)
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("needs 16777216 bytes, more than the limit of 1048576"),
            "{err}"
        );
        assert!(b.max_bytes(1 << 28).build().is_ok());
        let r = HyperplaneSigner::builder()
            .dim(1000)
            .bits(65)
            .distribution(Distribution::Rademacher);
        assert_eq!(r.matrix_bytes(), Some(1000 * 2 * 8));
        let huge = HyperplaneSigner::builder().dim(u64::MAX).bits(1 << 20);
        assert_eq!(huge.matrix_bytes(), None);
        let err = huge.build().unwrap_err().to_string();
        assert!(err.contains("over 2^64"), "{err}");
        // The very sparse estimate bounds what the signer holds once built.
        let vs = HyperplaneSigner::builder()
            .dim(5000)
            .bits(128)
            .distribution(Distribution::VerySparse { density: None });
        let bound = vs.matrix_bytes().unwrap();
        let held = vs.build().unwrap().info().bytes as u64;
        assert!(
            held <= bound && bound < 2 * held + 24 * 5000,
            "{held} vs {bound}"
        );
    }
}
