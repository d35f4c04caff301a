//! [`Vectors`] read in place, for re-ranking given candidates ([`RerankIds`](super::RerankIds)):
//! a borrowed dense matrix ([`DenseRows`]) or the arrays of a CSR matrix ([`CsrRows`]). Nothing
//! is copied; each row is checked and its norm computed on its first use
//! ([`Vectors::check_row`]), once, so that scoring a few candidates of a large base reads only
//! their rows.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::ArrayView2;
use sprs::SpIndex;

use super::{Vectors, dot, dot_sparse};
use crate::error::{Error, Result};
use crate::signers::sparse::{CsrArrays, CsrIndex};

/// Norms of rows, each computed on first use (a racing second computation stores the same
/// bits).
struct Norms(Vec<AtomicU64>);

/// Marks a norm not computed yet: a NaN, which no norm is.
const UNKNOWN: u64 = u64::MAX;

impl Norms {
    fn new(n: usize) -> Result<Self> {
        let mut v = Vec::new();
        crate::memory::reserve::<AtomicU64>(&mut v, n, "row norms")?;
        v.extend((0..n).map(|_| AtomicU64::new(UNKNOWN)));
        Ok(Norms(v))
    }

    #[inline]
    fn get(&self, i: usize, compute: impl FnOnce() -> Result<f64>) -> Result<f64> {
        let bits = self.0[i].load(Ordering::Relaxed);
        if bits != UNKNOWN {
            return Ok(f64::from_bits(bits));
        }
        let norm = compute()?;
        self.0[i].store(norm.to_bits(), Ordering::Relaxed);
        Ok(norm)
    }
}

/// The first non-finite value of `values` (entries `(column, value)`) as the error of row `row`.
fn non_finite(row: usize, values: impl Iterator<Item = (u64, f32)>) -> Error {
    let (col, v) = values
        .into_iter()
        .find(|(_, v)| !v.is_finite())
        .expect("a sum of squares of finite f32 values is finite");
    Error::NonFinite {
        row,
        col,
        value: f64::from(v),
    }
}

/// What [`DenseRows`] and [`CsrRows`] differ in: their shape, the norm of a row (computed
/// once, the row checked then) and the dot product of two rows. Their [`Vectors`]
/// implementation is written once over it, below; a caller generic over [`Vectors`] (e.g.
/// [`RerankIds`](super::RerankIds)) is compiled for each kind, its loops calling that kind's
/// methods directly.
trait InPlace: Sync {
    /// Rows and columns.
    fn shape(&self) -> (usize, usize);

    /// The norms computed so far.
    fn norms(&self) -> &Norms;

    /// The norm of row `i`, computed (the row checked): called once per row, by
    /// [`checked_norm`](Self::checked_norm).
    fn compute_norm(&self, i: usize) -> Result<f64>;

    /// The dot product of row `i` of `self` and row `j` of `other`.
    fn dot(&self, i: usize, other: &Self, j: usize) -> f64;

    /// Hints the CPU to start loading row `i` ([`Vectors::prefetch`]); the default does
    /// nothing.
    fn prefetch_row(&self, i: usize) {
        let _ = i;
    }

    /// The norm of row `i`, computed on first use (the kind's `norm`).
    #[inline]
    fn checked_norm(&self, i: usize) -> Result<f64> {
        self.norms().get(i, || self.compute_norm(i))
    }
}

/// Rows read in place: a row [`check_row`](Vectors::check_row) refuses is not zero and its
/// cosines are NaN.
impl<T: InPlace> Vectors for T {
    fn len(&self) -> usize {
        self.shape().0
    }

    fn cols(&self) -> Option<usize> {
        Some(self.shape().1)
    }

    fn prefetch(&self, i: usize) {
        if i < self.shape().0 {
            crate::cpu::prefetch(&self.norms().0[i]);
            self.prefetch_row(i);
        }
    }

    fn check_row(&self, i: usize) -> Result<()> {
        self.checked_norm(i).map(drop)
    }

    fn is_zero(&self, i: usize) -> bool {
        self.checked_norm(i).is_ok_and(|n| n == 0.0)
    }

    /// 0 when a norm is 0, NaN when a row was refused.
    fn cosine_with(&self, i: usize, other: &Self, j: usize) -> f64 {
        match (self.checked_norm(i), other.checked_norm(j)) {
            (Ok(a), Ok(b)) => {
                let norm = a * b;
                if norm > 0.0 {
                    self.dot(i, other, j) / norm
                } else {
                    0.0
                }
            }
            _ => f64::NAN,
        }
    }
}

/// Dense rows borrowed in place (any layout; rows of a C-contiguous matrix are read without a
/// copy): the norm of a row is `√dot(x, x)` by [`dot`], the dot product of two rows [`dot`].
///
/// ```
/// use simlsh::verify::{DenseRows, Vectors};
/// use ndarray::array;
///
/// let x = array![[3.0f32, 4.0], [4.0, 3.0], [0.0, 0.0]];
/// let rows = DenseRows::new(x.view())?;
/// assert_eq!((rows.norm(0)?, rows.norm(2)?), (5.0, 0.0));
/// assert_eq!(rows.cosine(0, 1), 24.0 / 25.0);
/// assert!(rows.is_zero(2) && rows.cosine(0, 2) == 0.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub struct DenseRows<'a> {
    x: ArrayView2<'a, f32>,
    norms: Norms,
}

impl<'a> DenseRows<'a> {
    /// The rows of `x` (nothing is read yet).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the norms (8 bytes a row) cannot be allocated.
    pub fn new(x: ArrayView2<'a, f32>) -> Result<Self> {
        Ok(DenseRows {
            norms: Norms::new(x.nrows())?,
            x,
        })
    }

    fn row(&self, i: usize) -> Cow<'_, [f32]> {
        let row = self.x.row(i);
        match row.to_slice() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(row.to_vec()),
        }
    }
}

impl DenseRows<'_> {
    /// The Euclidean norm of row `i` in `f64` (`√dot(x, x)` by [`dot`]), computed on the first
    /// call (later calls return it), the row checked then.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the row and column of a NaN or infinite value.
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn norm(&self, i: usize) -> Result<f64> {
        self.checked_norm(i)
    }
}

impl InPlace for DenseRows<'_> {
    #[inline]
    fn shape(&self) -> (usize, usize) {
        self.x.dim()
    }

    #[inline]
    fn norms(&self) -> &Norms {
        &self.norms
    }

    fn compute_norm(&self, i: usize) -> Result<f64> {
        let r = self.row(i);
        let ss = dot(&r, &r);
        if !ss.is_finite() {
            return Err(non_finite(i, (0u64..).zip(r.iter().copied())));
        }
        Ok(ss.sqrt())
    }

    #[inline]
    fn dot(&self, i: usize, other: &Self, j: usize) -> f64 {
        dot(&self.row(i), &other.row(j))
    }

    fn prefetch_row(&self, i: usize) {
        // Every cache line of a contiguous row (64 bytes = 16 values).
        if let Some(r) = self.x.row(i).to_slice() {
            for v in r.iter().step_by(16) {
                crate::cpu::prefetch(v);
            }
        }
    }
}

/// The rows of a CSR matrix's arrays, read in place: the norm of a row is the square root of
/// its values' squares summed in `f64` in order, the dot product of two rows [`dot_sparse`].
///
/// ```
/// use simlsh::signers::sparse::CsrArrays;
/// use simlsh::verify::{CsrRows, Vectors};
///
/// let m = CsrArrays::new(&[0i64, 2, 3][..], &[0i64, 3, 3][..], &[3.0f32, 4.0, 2.0][..], 4)?;
/// let rows = CsrRows::new(m)?;
/// assert_eq!((rows.norm(0)?, rows.norm(1)?), (5.0, 2.0));
/// assert_eq!(rows.cosine(0, 1), 8.0 / 10.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub struct CsrRows<'a, P, I> {
    m: CsrArrays<'a, P, I, f32>,
    norms: Norms,
}

impl<'a, P: SpIndex + Sync, I: CsrIndex> CsrRows<'a, P, I> {
    /// The rows of `m` (its rows are checked on first use).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the norms (8 bytes a row) cannot be allocated.
    pub fn new(m: CsrArrays<'a, P, I, f32>) -> Result<Self> {
        Ok(CsrRows {
            norms: Norms::new(m.rows())?,
            m,
        })
    }

    fn row(&self, i: usize) -> (&'a [I::U], &'a [f32]) {
        let s = self.m.span(i);
        (&self.m.indices()[s.clone()], &self.m.data()[s])
    }
}

impl<P: SpIndex + Sync, I: CsrIndex> CsrRows<'_, P, I> {
    /// The Euclidean norm of row `i` in `f64` (its values' squares summed in order), computed
    /// on the first call (later calls return it), the row checked then.
    ///
    /// # Errors
    /// [`CsrArrays::check_rows`]'s errors; [`Error::InvalidParameter`] for a row with unsorted
    /// or repeated indices; [`Error::NonFinite`] naming the row and column of a NaN or infinite
    /// value.
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn norm(&self, i: usize) -> Result<f64> {
        self.checked_norm(i)
    }
}

impl<P: SpIndex + Sync, I: CsrIndex> InPlace for CsrRows<'_, P, I> {
    #[inline]
    fn shape(&self) -> (usize, usize) {
        (self.m.rows(), self.m.cols())
    }

    #[inline]
    fn norms(&self) -> &Norms {
        &self.norms
    }

    fn compute_norm(&self, i: usize) -> Result<f64> {
        if !self.m.check_rows(i..i + 1)? {
            return Err(Error::param(
                "indices",
                format!("row {i} has unsorted or repeated column indices"),
            ));
        }
        let (idx, val) = self.row(i);
        let ss: f64 = val.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        if !ss.is_finite() {
            let cols = idx.iter().map(|c| c.index() as u64);
            return Err(non_finite(i, cols.zip(val.iter().copied())));
        }
        Ok(ss.sqrt())
    }

    fn dot(&self, i: usize, other: &Self, j: usize) -> f64 {
        let ((ka, wa), (kb, wb)) = (self.row(i), other.row(j));
        dot_sparse(ka, wa, kb, wb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn prefetching_rows_changes_no_cosine_and_ignores_rows_beyond() {
        let x = Array2::from_shape_fn((40, 37), |(i, j)| ((i * 31 + j * 7) % 13) as f32 - 6.0);
        let xt = x.t().to_owned();
        // A C-contiguous matrix (rows prefetched) and a transposed view (rows not contiguous:
        // nothing prefetched), each against a fresh copy never prefetched.
        for view in [x.view(), xt.t()] {
            let (a, b) = (DenseRows::new(view).unwrap(), DenseRows::new(view).unwrap());
            for i in 0..45 {
                a.prefetch(i);
            }
            for i in 0..40 {
                for j in 0..40 {
                    assert_eq!(
                        a.cosine(i, j).to_bits(),
                        b.cosine(i, j).to_bits(),
                        "{i} {j}"
                    );
                }
            }
        }
    }
}
