//! Rows read in place for re-ranking given candidates ([`RerankIds`]): a borrowed dense matrix
//! ([`DenseRows`]) or the arrays of a CSR matrix ([`CsrRows`]). Nothing is copied; each row is
//! checked and its norm computed on its first use, once, so that scoring a few candidates of a
//! large base reads only their rows.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::ArrayView2;
use rayon::prelude::*;
use sprs::SpIndex;

use super::rerank::top_by_cosine;
use super::{dot, dot_sparse};
use crate::error::{Error, Result};
use crate::signers::sparse::{CsrArrays, CsrIndex};

/// Rows read in place, each checked and its norm computed on its first use: the inputs of
/// [`RerankIds`]. The cosine of row `i` of one set and row `j` of another of the same kind is
/// `dot_with(i, other, j) / (norm(i) · other.norm(j))`, 0 when either norm is 0.
pub trait RowsInPlace: Sync {
    /// Number of rows.
    fn len(&self) -> usize;

    /// True when there are no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of columns.
    fn cols(&self) -> usize;

    /// The Euclidean norm of row `i` in `f64`, computed on the first call (later calls return
    /// it), the row checked then.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the row and column of a NaN or infinite value; for CSR
    /// rows also [`CsrArrays::check_rows`]'s errors, and [`Error::InvalidParameter`] for a
    /// row with unsorted or repeated indices.
    ///
    /// # Panics
    /// If `i` is out of range.
    fn norm(&self, i: usize) -> Result<f64>;

    /// The dot product of row `i` and row `j` of `other` in `f64` (rows [`norm`](Self::norm)
    /// has checked).
    ///
    /// # Panics
    /// If `i` or `j` is out of range.
    fn dot_with(&self, i: usize, other: &Self, j: usize) -> f64;
}

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

/// Dense rows borrowed in place (any layout; rows of a C-contiguous matrix are read without a
/// copy): the norm of a row is `√dot(x, x)` by [`dot`], the dot product of two rows [`dot`].
///
/// ```
/// use simlsh::verify::{DenseRows, RowsInPlace};
/// use ndarray::array;
///
/// let x = array![[3.0f32, 4.0], [0.0, 0.0]];
/// let rows = DenseRows::new(x.view())?;
/// assert_eq!((rows.norm(0)?, rows.norm(1)?), (5.0, 0.0));
/// assert_eq!(rows.dot_with(0, &rows, 0), 25.0);
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

impl RowsInPlace for DenseRows<'_> {
    fn len(&self) -> usize {
        self.x.nrows()
    }

    fn cols(&self) -> usize {
        self.x.ncols()
    }

    fn norm(&self, i: usize) -> Result<f64> {
        self.norms.get(i, || {
            let r = self.row(i);
            let ss = dot(&r, &r);
            if !ss.is_finite() {
                return Err(non_finite(i, (0u64..).zip(r.iter().copied())));
            }
            Ok(ss.sqrt())
        })
    }

    fn dot_with(&self, i: usize, other: &Self, j: usize) -> f64 {
        dot(&self.row(i), &other.row(j))
    }
}

/// The rows of a CSR matrix's arrays, read in place: the norm of a row is the square root of
/// its values' squares summed in `f64` in order, the dot product of two rows [`dot_sparse`].
///
/// ```
/// use simlsh::signers::sparse::CsrArrays;
/// use simlsh::verify::{CsrRows, RowsInPlace};
///
/// let m = CsrArrays::new(&[0i64, 2, 3][..], &[0i64, 3, 3][..], &[3.0f32, 4.0, 2.0][..], 4)?;
/// let rows = CsrRows::new(m)?;
/// assert_eq!((rows.norm(0)?, rows.norm(1)?), (5.0, 2.0));
/// assert_eq!(rows.dot_with(0, &rows, 1), 8.0);
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

impl<P: SpIndex + Sync, I: CsrIndex> RowsInPlace for CsrRows<'_, P, I> {
    fn len(&self) -> usize {
        self.m.rows()
    }

    fn cols(&self) -> usize {
        self.m.cols()
    }

    fn norm(&self, i: usize) -> Result<f64> {
        self.norms.get(i, || {
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
        })
    }

    fn dot_with(&self, i: usize, other: &Self, j: usize) -> f64 {
        let ((ka, wa), (kb, wb)) = (self.row(i), other.row(j));
        dot_sparse(ka, wa, kb, wb)
    }
}

/// Re-ranking of given candidates by exact cosine, the arguments checked once
/// ([`new`](Self::new)): for query row `q`, the ids `ids[q]` (FAISS's layout: `-1` for none,
/// repeats counted once) scored by the exact cosine of `queries` row `q` with `base` row `id`
/// in `f64`, the best `k` kept, highest first, ties by the smaller id. Rows are read in place
/// and checked as they are used: a NaN in a base row no query names is never read.
///
/// ```
/// use simlsh::verify::{DenseRows, RerankIds};
/// use ndarray::array;
///
/// let base = array![[1.0f32, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]];
/// let q = array![[0.9f32, 0.5]];
/// let (qr, br) = (DenseRows::new(q.view())?, DenseRows::new(base.view())?);
/// let ids = array![[3i64, 0, -1, 1, 0]];
/// let found = RerankIds::new(&qr, &br, ids.view(), 2)?.rows(0..1)?;
/// assert_eq!(found[0].iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 0]);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub struct RerankIds<'a, R> {
    queries: &'a R,
    base: &'a R,
    ids: ArrayView2<'a, i64>,
    k: usize,
}

/// An error of a row of `what` (`queries` or `base`).
fn of(what: &'static str, e: Error) -> Error {
    match e {
        Error::OutOfMemory { .. } => e,
        e => Error::param(what, e.to_string()),
    }
}

impl<'a, R: RowsInPlace> RerankIds<'a, R> {
    /// Checks the arguments.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `k` is 0, `ids` has not one row per query, or the
    /// queries and base rows differ in columns.
    pub fn new(queries: &'a R, base: &'a R, ids: ArrayView2<'a, i64>, k: usize) -> Result<Self> {
        if k == 0 {
            return Err(Error::param("k", "k must be at least 1"));
        }
        if ids.nrows() != queries.len() {
            return Err(Error::param(
                "ids",
                format!("ids has {} rows for {} queries", ids.nrows(), queries.len()),
            ));
        }
        if queries.cols() != base.cols() {
            return Err(Error::param(
                "queries",
                format!(
                    "queries have {} columns and base vectors {}",
                    queries.cols(),
                    base.cols()
                ),
            ));
        }
        Ok(RerankIds {
            queries,
            base,
            ids,
            k,
        })
    }

    /// The `k` best `(id, cosine)` of each query row of `rows` (in parallel), so that a caller
    /// may re-rank in chunks; errors name rows of the whole input.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming an id beyond the base (`ids[q, c]`), a row of
    /// `queries` or `base` with a non-finite value (or, for CSR rows, bad indices), or
    /// `rows` beyond the queries.
    pub fn rows(&self, rows: Range<usize>) -> Result<Vec<Vec<(usize, f64)>>> {
        if rows.end > self.queries.len() {
            return Err(Error::param(
                "rows",
                format!("{rows:?} beyond the {} queries", self.queries.len()),
            ));
        }
        rows.into_par_iter().map(|q| self.one(q)).collect()
    }

    fn one(&self, q: usize) -> Result<Vec<(usize, f64)>> {
        let n = self.base.len();
        let mut cand = Vec::with_capacity(self.ids.ncols());
        for (c, &id) in self.ids.row(q).iter().enumerate() {
            match usize::try_from(id) {
                Ok(i) if i < n => cand.push(i),
                _ if id == -1 => {}
                _ => {
                    return Err(Error::param(
                        "ids",
                        format!("ids[{q}, {c}] = {id} has no row among the {n} base vectors"),
                    ));
                }
            }
        }
        cand.sort_unstable();
        cand.dedup();
        let qn = self.queries.norm(q).map_err(|e| of("queries", e))?;
        let scored = cand
            .into_iter()
            .map(|id| {
                let norm = qn * self.base.norm(id).map_err(|e| of("base", e))?;
                let cos = if norm > 0.0 {
                    self.queries.dot_with(q, self.base, id) / norm
                } else {
                    0.0
                };
                Ok((id, cos))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(top_by_cosine(scored, self.k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// The oracle: each query's distinct candidates scored by the cosine of the rows in `f64`
    /// computed the straightforward way, sorted by (cosine descending, id), the best `k`.
    fn oracle(
        q: &Array2<f32>,
        b: &Array2<f32>,
        ids: &Array2<i64>,
        k: usize,
    ) -> Vec<Vec<(usize, f64)>> {
        let norm = |r: ndarray::ArrayView1<f32>| {
            r.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt()
        };
        (0..q.nrows())
            .map(|r| {
                let mut c: Vec<usize> = ids
                    .row(r)
                    .iter()
                    .filter(|&&i| i >= 0)
                    .map(|&i| i as usize)
                    .collect();
                c.sort_unstable();
                c.dedup();
                let mut s: Vec<(usize, f64)> = c
                    .into_iter()
                    .map(|i| {
                        let dot: f64 = q
                            .row(r)
                            .iter()
                            .zip(b.row(i))
                            .map(|(&x, &y)| f64::from(x) * f64::from(y))
                            .sum();
                        let n = norm(q.row(r)) * norm(b.row(i));
                        (i, if n > 0.0 { dot / n } else { 0.0 })
                    })
                    .collect();
                s.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                s.truncate(k);
                s
            })
            .collect()
    }

    fn csr(x: &Array2<f32>) -> (Vec<i64>, Vec<i64>, Vec<f32>) {
        let (mut p, mut i, mut d) = (vec![0i64], Vec::new(), Vec::new());
        for row in x.rows() {
            for (c, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    i.push(c as i64);
                    d.push(v);
                }
            }
            p.push(i.len() as i64);
        }
        (p, i, d)
    }

    #[test]
    fn dense_and_csr_equal_the_f64_oracle() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let sparse = |rng: &mut Xoshiro256PlusPlus, n| {
            Array2::from_shape_fn((n, 24), |_| {
                if rng.random::<f64>() < 0.5 {
                    0.0
                } else {
                    rng.random_range(-2.0f32..2.0)
                }
            })
        };
        let mut b = sparse(&mut rng, 200);
        b.row_mut(5).fill(0.0);
        let q = sparse(&mut rng, 30);
        let ids = Array2::from_shape_fn((30, 40), |_| rng.random_range(-1i64..200));
        for k in [1, 10, 40] {
            let want = oracle(&q, &b, &ids, k);
            let (dq, db) = (
                DenseRows::new(q.view()).unwrap(),
                DenseRows::new(b.view()).unwrap(),
            );
            let dense = RerankIds::new(&dq, &db, ids.view(), k).unwrap();
            // In chunks, twice (the second time from the norms computed the first).
            for got in [
                dense.rows(0..30).unwrap(),
                [dense.rows(0..7).unwrap(), dense.rows(7..30).unwrap()].concat(),
            ] {
                assert_eq!(got.len(), 30);
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(
                        g.iter().map(|h| h.0).collect::<Vec<_>>(),
                        w.iter().map(|h| h.0).collect::<Vec<_>>()
                    );
                    assert!(g.iter().zip(w).all(|(g, w)| (g.1 - w.1).abs() < 1e-12));
                }
            }
            // A strided (Fortran-order) copy gives the same bits.
            let qt = q.t().as_standard_layout().into_owned();
            let fq = DenseRows::new(qt.t()).unwrap();
            assert_eq!(
                RerankIds::new(&fq, &db, ids.view(), k)
                    .unwrap()
                    .rows(0..30)
                    .unwrap(),
                dense.rows(0..30).unwrap()
            );
            let ((qp, qi, qd), (bp, bi, bd)) = (csr(&q), csr(&b));
            let cq = CsrRows::new(CsrArrays::new(&qp[..], &qi[..], &qd[..], 24).unwrap()).unwrap();
            let cb = CsrRows::new(CsrArrays::new(&bp[..], &bi[..], &bd[..], 24).unwrap()).unwrap();
            let got = RerankIds::new(&cq, &cb, ids.view(), k)
                .unwrap()
                .rows(0..30)
                .unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(
                    g.iter().map(|h| h.0).collect::<Vec<_>>(),
                    w.iter().map(|h| h.0).collect::<Vec<_>>()
                );
                assert!(g.iter().zip(w).all(|(g, w)| (g.1 - w.1).abs() < 1e-12));
            }
        }
    }

    #[test]
    fn bad_arguments_and_rows_are_named() {
        let mut b = Array2::<f32>::ones((4, 3));
        b[[2, 1]] = f32::NAN;
        let q = Array2::<f32>::ones((2, 3));
        let (qr, br) = (
            DenseRows::new(q.view()).unwrap(),
            DenseRows::new(b.view()).unwrap(),
        );
        let ids = ndarray::array![[0i64, 1], [3, -1]];
        // Row 2 of the base holds a NaN but no query names it.
        let found = RerankIds::new(&qr, &br, ids.view(), 1)
            .unwrap()
            .rows(0..2)
            .unwrap();
        assert_eq!(found[1][0].0, 3);
        assert!((found[1][0].1 - 1.0).abs() < 1e-15);
        let err = |ids: Array2<i64>, k| {
            RerankIds::new(&qr, &br, ids.view(), k)
                .and_then(|r| r.rows(0..2))
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(ndarray::array![[0, 2], [0, 0]], 1)
                .contains("base`: row 2, column 1: value NaN is not finite")
        );
        assert!(
            err(ndarray::array![[0, 0], [0, 4]], 1)
                .contains("ids[1, 1] = 4 has no row among the 4 base vectors")
        );
        assert!(err(ndarray::array![[0, 0], [-2, 0]], 1).contains("ids[1, 0] = -2 has no row"));
        assert!(err(ids.clone(), 0).contains("k must be at least 1"));
        assert!(err(ndarray::array![[0, 0]], 1).contains("ids has 1 rows for 2 queries"));
        let narrow = Array2::<f32>::ones((2, 2));
        let nr = DenseRows::new(narrow.view()).unwrap();
        assert!(RerankIds::new(&nr, &br, ids.view(), 1).is_err());
        // A CSR row with a repeated index.
        let m = CsrArrays::new(&[0i64, 2][..], &[1i64, 1][..], &[1.0f32, 2.0][..], 3).unwrap();
        let rows = CsrRows::new(m).unwrap();
        assert!(
            rows.norm(0)
                .unwrap_err()
                .to_string()
                .contains("row 0 has unsorted or repeated")
        );
    }
}
