//! Signers: vectors in, f-bit signatures out.
//!
//! Every signer is a linear map followed by a sign: for an input `x` it computes
//! `V = Σ_i x_i · r_i` (an `f`-vector; `r_i` is the signer's *column* for feature `i`) and sets
//! bit `j` of the signature to `V[j] > 0`. The signers differ in where `r_i` comes from:
//!
//! | signer | `r_i` | memory | cost per nonzero |
//! |---|---|---|---|
//! | [`HyperplaneSigner`] Gaussian / super-bit | stored `D × f` floats | `4·D·f` bytes | `f` multiply-adds |
//! | [`HyperplaneSigner`] Rademacher | stored `D × f` signs | `D·f/8` bytes | `f` adds |
//! | [`HyperplaneSigner`] very sparse | stored nonzeros, density `p = 1/√D` | `4·(D + 1) + 4·p·D·f` bytes (`≈ 4·D + 4·f·√D`) | `p·f` adds |
//! | [`HashingTrick`] | XXH3 hash of the feature, `±1` | none | `f` adds + `f/64` hash words |
//! | [`PooledSigner`] | hashed picks from a pool of `m` Gaussians | `4·m` bytes | `f` multiply-adds + `f/2` hash words |
//! | [`HashedGaussian`] | XXH3 + 2 AES rounds of the feature, 16-level quantised Gaussian values | 96 bytes of tables | `f` adds (table lookups) + `f/16` hash words |
//! | [`FwhtSigner`] | a hashed bucket of `d` with a sign, then `⌈f/d⌉` rotations `H·D₃·H·D₂·H·D₁` | `12·f` bytes of diagonals (`d ≥ f`: `12·d`) | 1 add + 1 hash word, plus `3·⌈f/d⌉·d·log₂ d` adds per vector |
//!
//! **Ties.** All signers share one rule: bit `j` is 1 if and only if `V[j] > 0` strictly. So a
//! zero vector, an empty document, or any `V[j] = 0` (including `−0.0`) gives bit 0, and NaN
//! never arises because inputs are checked to be finite.
//!
//! **Order and reproducibility.** `V` is accumulated in `f32`, one feature at a time in
//! increasing feature order (for sparse rows, the order given, which must be strictly
//! increasing), as `V[j] = V[j] + x_i · r_ij` with a separate multiply and add. Every kernel
//! (scalar, AVX2) performs exactly these operations, and the dense matrix-product path checks
//! every bit whose value is too close to zero to be certain against this canonical order, so
//! dense and sparse input of the same vector, streaming and batch signing, any thread count and
//! any platform all give the same bits.

mod accumulator;
mod aes;
mod any;
mod dense;
pub mod fwht;
pub mod hashed_gaussian;
mod hashing;
mod hyperplane;
pub(crate) mod kernels;
mod pooled;
pub mod sparse;
mod spec;

pub use crate::util::spec::{KindInfo, ParamInfo};
pub use accumulator::Accumulator;
pub use any::AnySigner;
pub use fwht::{FwhtBuilder, FwhtSigner};
pub use hashed_gaussian::{HashedGaussian, HashedGaussianBuilder};
pub use hashing::{HashingTrick, HashingTrickBuilder};
pub use hyperplane::{
    Distribution, HyperplaneBuilder, HyperplaneSigner, ZERO_TARGET, zero_projection_fraction,
};
pub use kernels::kernel_name;
pub use pooled::{PooledBuilder, PooledSigner};
pub use spec::{DEFAULT_POOL, FWHT_TEXT_BITS, InputKind, SignerKind, SignerSpec, kinds};

use ndarray::ArrayRef2;
use rayon::prelude::*;
use sprs::{CsMatViewI, SpIndex};

use crate::error::{Error, Result};
use crate::signature::{Signature, SignatureMatrix, words_for};

/// Rows signed per parallel task in batch signing.
pub(crate) const BATCH_ROWS: usize = 256;

/// What a signer is and what it costs: its parameters, the bytes it holds and the work it does
/// per input nonzero, for memory-versus-hash-cost studies.
#[derive(Clone, Debug, PartialEq)]
pub struct SignerInfo {
    /// Short name: `gaussian`, `rademacher`, `very-sparse`, `super-bit`, `custom`,
    /// `hashing-trick`, `pooled`, `hashed-gaussian` or `fwht`.
    pub kind: &'static str,
    /// Signature width `f`.
    pub bits: usize,
    /// Input dimension `D`, or `None` when unbounded (hashed features).
    pub dim: Option<u64>,
    /// The seed.
    pub seed: u64,
    /// Bytes of projection data held (matrix, pool, tables).
    pub bytes: usize,
    /// Expected floating-point additions into `V` per input nonzero.
    pub adds_per_nonzero: f64,
    /// Floating-point additions per vector whatever its nonzeros (the rotations of
    /// [`FwhtSigner`]; 0 for the signers that project feature by feature).
    pub adds_per_vector: f64,
    /// Expected 64-bit hash words computed per input nonzero.
    pub hash_words_per_nonzero: f64,
    /// Other parameters, as `(name, value)` pairs.
    pub params: Vec<(&'static str, String)>,
}

/// A signer maps vectors to `f`-bit signatures. See the [module docs](self) for the
/// definition shared by all signers.
///
/// The trait is dyn-compatible: every method here can be called on a `&dyn Signer` or a
/// `Box<dyn Signer>`, and the generic conveniences (CSR matrices of any index type, the
/// streaming [`Accumulator`]) come from [`SignerExt`], implemented for every signer, trait
/// objects included. A signer implements only this trait.
///
/// ```
/// use simlsh::signers::{HashingTrick, PooledSigner, Signer, SignerExt};
/// let signers: Vec<Box<dyn Signer>> = vec![
///     Box::new(HashingTrick::builder().bits(64).seed(1).build()?),
///     Box::new(PooledSigner::builder().bits(64).seed(1).build()?),
/// ];
/// let x = sprs::CsMat::new((1, 10), vec![0, 2], vec![3usize, 7], vec![1.0f32, 0.5]);
/// for s in &signers {
///     let sigs = s.sign_csr(x.view())?;
///     let mut acc = s.accumulator();
///     acc.add_chunk(&[3, 7], &[1.0, 0.5])?;
///     assert_eq!(acc.signature(), sigs.get(0));
/// }
/// # Ok::<(), simlsh::Error>(())
/// ```
pub trait Signer: Send + Sync {
    /// Signature width `f`.
    fn bits(&self) -> usize;

    /// Input dimension `D`, or `None` if any `u64` feature id is accepted.
    fn dim(&self) -> Option<u64>;

    /// Parameters, memory and cost.
    fn info(&self) -> SignerInfo;

    /// Adds `weights[i] · r_{ids[i]}` into `acc`, in order of `i`. `acc` has
    /// `64 · words_for(bits)` lanes (lanes past `f` stay unused). Callers have checked that ids
    /// are in range and weights finite.
    fn accumulate(&self, ids: &[u64], weights: &[f32], acc: &mut [f32]);

    /// Like [`accumulate`](Self::accumulate) for string features (tokens). Only signers that
    /// hash their features support it; the others return [`Error::Unsupported`].
    fn accumulate_tokens(&self, tokens: &[&str], weights: &[f32], acc: &mut [f32]) -> Result<()> {
        let _ = (tokens, weights, acc);
        Err(Error::Unsupported(format!(
            "the {} signer takes feature indices, not tokens",
            self.info().kind
        )))
    }

    /// Signs one sparse vector given by strictly increasing `ids` and their `weights`.
    fn sign_sparse(&self, ids: &[u64], weights: &[f32]) -> Result<Signature> {
        check_sparse_row(0, ids, weights, self.dim())?;
        let mut acc = self.new_acc();
        self.accumulate(ids, weights, &mut acc);
        Ok(self.finish(&mut acc))
    }

    /// Signs one weighted bag of tokens (the classic text simhash). Repeated tokens add up.
    fn sign_tokens(&self, tokens: &[&str], weights: &[f32]) -> Result<Signature> {
        check_weights(0, weights, tokens.len())?;
        let mut acc = self.new_acc();
        self.accumulate_tokens(tokens, weights, &mut acc)?;
        Ok(self.finish(&mut acc))
    }

    /// Signs one dense vector (column `i` is feature `i`; zeros are skipped).
    fn sign_dense_row(&self, x: &[f32]) -> Result<Signature> {
        let m = ndarray::ArrayView2::from_shape((1, x.len()), x).expect("1 × n");
        let s = self.sign_dense(&m)?;
        Ok(s.get(0))
    }

    /// Signs every row of a dense `N × D` matrix, in parallel. The result does not depend on
    /// the number of threads.
    fn sign_dense(&self, x: &ArrayRef2<f32>) -> Result<SignatureMatrix> {
        sign_dense_gather(self, x)
    }

    /// A zeroed accumulation buffer: `64 · words_for(f)` lanes for the signers that project
    /// feature by feature; [`FwhtSigner`] holds its hashed buckets and a scratch area.
    fn new_acc(&self) -> Vec<f32> {
        vec![0.0; 64 * words_for(self.bits())]
    }

    /// How many leading lanes of the buffer hold the accumulated values
    /// ([`Accumulator::values`]): `f` projections, or [`FwhtSigner`]'s `d` buckets.
    fn acc_values(&self) -> usize {
        self.bits()
    }

    /// Writes the signature of an accumulation buffer (from [`new_acc`](Self::new_acc) and
    /// [`accumulate`](Self::accumulate)) into `out` (`words_for(f)` words): the signs of its
    /// first `f` lanes, or, for [`FwhtSigner`], of its rotated buckets. Only lanes past
    /// [`acc_values`](Self::acc_values) may be overwritten (scratch), so accumulation can go
    /// on after.
    fn finish_into(&self, acc: &mut [f32], out: &mut [u64]) {
        pack_into(acc, self.bits(), out)
    }

    /// [`finish_into`](Self::finish_into) into a new [`Signature`].
    fn finish(&self, acc: &mut [f32]) -> Signature {
        let mut out = vec![0; words_for(self.bits())];
        self.finish_into(acc, &mut out);
        Signature::from_words(self.bits(), out).expect("pack keeps padding bits zero")
    }
}

/// The generic conveniences of every [`Signer`], trait objects included (`dyn Signer`):
/// sparse matrices and rows of any index type, and the streaming [`Accumulator`].
/// Implemented for every signer; bring it into scope with the trait:
/// `use simlsh::signers::{Signer, SignerExt}`.
pub trait SignerExt: Signer {
    /// [`accumulate`](Signer::accumulate) for ids of any sparse index type (a CSR row's own
    /// indices): they are converted to `u64` in chunks on the stack. Ids are non-negative and
    /// in range (checked by callers).
    fn accumulate_indices<I: SpIndex>(&self, ids: &[I], weights: &[f32], acc: &mut [f32]) {
        let mut buf = [0u64; 256];
        for (ids, ws) in ids.chunks(buf.len()).zip(weights.chunks(buf.len())) {
            let buf = &mut buf[..ids.len()];
            buf.iter_mut()
                .zip(ids)
                .for_each(|(b, i)| *b = i.index() as u64);
            self.accumulate(buf, ws, acc);
        }
    }

    /// Signs every row of a sparse CSR matrix, in parallel. Indices within each row must be
    /// strictly increasing (see [`sparse::sort_and_merge`]). The result does not depend on the
    /// number of threads.
    fn sign_csr<I: SpIndex, Iptr: SpIndex>(
        &self,
        x: CsMatViewI<'_, f32, I, Iptr>,
    ) -> Result<SignatureMatrix> {
        if !x.is_csr() {
            return Err(Error::Unsupported(
                "sparse input must be CSR (row-major), not CSC".into(),
            ));
        }
        if let Some(d) = self.dim()
            && x.cols() as u64 > d
        {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: x.cols() as u64,
            });
        }
        let bits = self.bits();
        let w = words_for(bits);
        let mut out = SignatureMatrix::zeros(x.rows(), bits)?;
        out.as_mut_slice()
            .par_chunks_mut(w * BATCH_ROWS)
            .enumerate()
            .try_for_each(|(c, chunk)| {
                let mut acc = self.new_acc();
                for (r, dst) in chunk.chunks_exact_mut(w).enumerate() {
                    let row = c * BATCH_ROWS + r;
                    let v = x.outer_view(row).expect("row in range");
                    // sprs guarantees strictly increasing indices below `x.cols()`, and the
                    // width was checked against the dimension above: only values remain.
                    check_finite(row, v.indices(), v.data())?;
                    acc.fill(0.0);
                    self.accumulate_indices(v.indices(), v.data(), &mut acc);
                    self.finish_into(&mut acc, dst);
                }
                Ok(())
            })?;
        Ok(out)
    }

    /// A streaming accumulator: add features one at a time or in chunks, read the signature
    /// at any point.
    fn accumulator(&self) -> Accumulator<'_, Self> {
        Accumulator::new(self)
    }
}

impl<S: Signer + ?Sized> SignerExt for S {}

/// Signs a dense matrix row by row through [`Signer::accumulate`] (the canonical order),
/// skipping zero entries. The default [`Signer::sign_dense`].
pub(crate) fn sign_dense_gather<S: Signer + ?Sized>(
    signer: &S,
    x: &ArrayRef2<f32>,
) -> Result<SignatureMatrix> {
    check_dense(x, signer.dim())?;
    let bits = signer.bits();
    let mut out = SignatureMatrix::zeros(x.nrows(), bits)?;
    let w = words_for(bits);
    out.as_mut_slice()
        .par_chunks_mut(w * BATCH_ROWS)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut acc = signer.new_acc();
            let (mut ids, mut vals) = (Vec::new(), Vec::new());
            for (r, dst) in chunk.chunks_exact_mut(w).enumerate() {
                let row = x.row(c * BATCH_ROWS + r);
                ids.clear();
                vals.clear();
                for (i, &v) in row.iter().enumerate() {
                    if v != 0.0 {
                        ids.push(i as u64);
                        vals.push(v);
                    }
                }
                acc.fill(0.0);
                signer.accumulate(&ids, &vals, &mut acc);
                signer.finish_into(&mut acc, dst);
            }
        });
    Ok(out)
}

/// Packs the signs of `acc` (`bit j = acc[j] > 0`) into the `words_for(bits)` words of `out`.
pub(crate) fn pack_into(acc: &[f32], bits: usize, out: &mut [u64]) {
    kernels::pack_signs(acc, bits, out)
}

/// Checks one sparse row: equal lengths, strictly increasing ids, ids below `dim`, finite
/// weights. `row` is used in error messages.
pub(crate) fn check_sparse_row(
    row: usize,
    ids: &[u64],
    weights: &[f32],
    dim: Option<u64>,
) -> Result<()> {
    check_row(row, ids, weights, dim)
}

/// The largest magnitude of an input value the signers take, `2^64`. A projection sums a
/// row's values times the matrix's entries in `f32`; with every value within `2^64` no sum can
/// overflow (`f32` reaches `2^128`), where values near `f32::MAX` would overflow to infinity
/// and flip bits. A signature depends only on a vector's direction: scale larger vectors down
/// (by a power of two, exactly).
pub const MAX_VALUE: f32 = 18_446_744_073_709_551_616.0;

/// Whether the signers take value `w`: finite and within [`MAX_VALUE`] (false for NaN).
#[inline(always)]
fn in_range(w: f32) -> bool {
    w.abs() <= MAX_VALUE
}

/// The error of a value outside [`in_range`].
fn out_of_range(row: usize, col: u64, value: f32) -> Error {
    let value = f64::from(value);
    if value.is_finite() {
        Error::ValueTooLarge { row, col, value }
    } else {
        Error::NonFinite { row, col, value }
    }
}

/// Checks that a row's weights are finite and within [`MAX_VALUE`] (branch-free pass first).
fn check_finite<I: SpIndex>(row: usize, ids: &[I], weights: &[f32]) -> Result<()> {
    if weights.iter().fold(true, |ok, w| ok & in_range(*w)) {
        return Ok(());
    }
    let k = weights
        .iter()
        .position(|w| !in_range(*w))
        .expect("a weight out of range");
    Err(out_of_range(row, ids[k].index() as u64, weights[k]))
}

/// [`check_sparse_row`] for any sparse index type. Branch-free passes first (they vectorise);
/// the offender is located only on failure.
fn check_row<I: SpIndex>(row: usize, ids: &[I], weights: &[f32], dim: Option<u64>) -> Result<()> {
    let col = |k: usize| ids[k].try_index().map_or(u64::MAX, |i| i as u64);
    if ids.len() != weights.len() {
        return Err(Error::LengthMismatch {
            what: "feature ids vs weights",
            left: ids.len(),
            right: weights.len(),
        });
    }
    if !weights.iter().fold(true, |ok, w| ok & in_range(*w)) {
        let k = weights
            .iter()
            .position(|w| !in_range(*w))
            .expect("a weight out of range");
        return Err(out_of_range(row, col(k), weights[k]));
    }
    let tail = &ids[1.min(ids.len())..];
    if !tail.iter().zip(ids).fold(true, |ok, (b, a)| ok & (a < b)) {
        let k = ids
            .windows(2)
            .position(|p| p[0] >= p[1])
            .expect("an offending pair")
            + 1;
        return Err(Error::UnsortedIndices {
            row,
            col: col(k),
            prev: col(k - 1),
        });
    }
    if ids.first().is_some_and(|&first| first < I::zero()) {
        return Err(Error::param(
            "indices",
            format!("row {row}: negative feature index"),
        ));
    }
    if let (Some(d), Some(&last)) = (dim, ids.last())
        && last.try_index().is_none_or(|l| l as u64 >= d)
    {
        return Err(Error::IndexOutOfRange {
            row,
            col: col(ids.len() - 1),
            dim: d,
        });
    }
    Ok(())
}

/// Checks lengths and finiteness of a row given as ids and weights (any order).
pub(crate) fn check_weights_ids(row: usize, ids: &[u64], weights: &[f32]) -> Result<()> {
    if ids.len() != weights.len() {
        return Err(Error::LengthMismatch {
            what: "feature ids vs weights",
            left: ids.len(),
            right: weights.len(),
        });
    }
    if let Some(k) = weights.iter().position(|w| !in_range(*w)) {
        return Err(out_of_range(row, ids[k], weights[k]));
    }
    Ok(())
}

/// Checks lengths and finiteness of token weights.
pub(crate) fn check_weights(row: usize, weights: &[f32], n: usize) -> Result<()> {
    if n != weights.len() {
        return Err(Error::LengthMismatch {
            what: "tokens vs weights",
            left: n,
            right: weights.len(),
        });
    }
    if let Some(k) = weights.iter().position(|w| !in_range(*w)) {
        return Err(out_of_range(row, k as u64, weights[k]));
    }
    Ok(())
}

/// Checks a dense matrix: width within `dim`, all values finite.
pub(crate) fn check_dense(x: &ArrayRef2<f32>, dim: Option<u64>) -> Result<()> {
    if let Some(d) = dim
        && x.ncols() as u64 != d
    {
        return Err(Error::DimensionMismatch {
            expected: d,
            got: x.ncols() as u64,
        });
    }
    // A branch-free pass per row first (it vectorises); locate the offender only on failure.
    for (r, row) in x.rows().into_iter().enumerate() {
        let finite = match row.as_slice() {
            Some(s) => s.iter().fold(true, |ok, v| ok & in_range(*v)),
            None => row.iter().all(|v| in_range(*v)),
        };
        if !finite {
            let c = row
                .iter()
                .position(|v| !in_range(*v))
                .expect("a value out of range");
            return Err(out_of_range(r, c as u64, row[c]));
        }
    }
    Ok(())
}

/// The width a signer builder was given: required, in `1..=MAX_BITS`
/// ([`check_bits`](crate::signature::check_bits)), the one rule of every signer.
pub(crate) fn required_bits(bits: Option<usize>) -> crate::error::Result<usize> {
    let bits = bits.ok_or_else(|| crate::error::Error::param("bits", "required"))?;
    crate::signature::check_bits(bits)?;
    Ok(bits)
}
