//! NumPy arguments read once for every entry point: contiguous 1-D arrays, codes, ids, one
//! vector argument type for dense and CSR rows ([`VectorsArg`]), and FAISS's `(n, k)` layout.

use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use simlsh::index::Hit;
use simlsh::signature::words_for;
use simlsh::signers::sparse::CsrArrays;
use simlsh::verify::{CsrVectors, DenseVectors};
use simlsh::{Error, SignatureMatrix};

use crate::errors::{IntoPy, to_py, value_error};

/// The elements of a 1-D array that must be contiguous.
pub fn contiguous<'a, T: numpy::Element>(
    a: &'a PyReadonlyArray1<'_, T>,
    name: &str,
) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| {
        value_error(format!(
            "{name} must be a contiguous array (use numpy.ascontiguousarray)"
        ))
    })
}

/// A `(N, words)` array of `uint64` codes as a signature matrix of `bits` bits (borrowed, not
/// copied): it must be C-contiguous, with `words_for(bits)` columns and no bit set beyond
/// `bits`.
pub fn codes<'a>(
    a: &'a PyReadonlyArray2<'_, u64>,
    bits: usize,
) -> PyResult<SignatureMatrix<&'a [u64]>> {
    let (_, w) = a.as_array().dim();
    simlsh::signature::check_bits(bits).py()?;
    if w != words_for(bits) {
        return Err(value_error(format!(
            "codes have {w} words per row, but {bits}-bit signatures have {}",
            words_for(bits)
        )));
    }
    let s = a.as_slice().map_err(|_| {
        value_error("codes must be a C-contiguous array (use numpy.ascontiguousarray)")
    })?;
    SignatureMatrix::from_parts(bits, s).py()
}

/// Ids as `u32`.
pub fn ids_u32(ids: &[i64]) -> PyResult<Vec<u32>> {
    u32s(ids, "ids")
}

/// Signed integers as `u32` (ids, group numbers), naming the first out of range.
pub fn u32s<T: Copy + std::fmt::Display + TryInto<u32>>(v: &[T], what: &str) -> PyResult<Vec<u32>> {
    v.iter()
        .enumerate()
        .map(|(k, &i)| {
            i.try_into().map_err(|_| {
                value_error(format!(
                    "{what}[{k}] = {i} is not in 0..2^32 (uint32 values)"
                ))
            })
        })
        .collect()
}

/// A `rows × k` result array filled with `fill`, allocated fallibly: a `MemoryError` naming
/// `what` when the process cannot hold it (a `k` far beyond the stored codes), never an abort.
pub fn result_array<T: Clone>(rows: usize, k: usize, fill: T, what: &str) -> PyResult<Vec<T>> {
    let what = format!("{what} of {rows} rows × k = {k}");
    simlsh::memory::filled(rows.saturating_mul(k), fill, &what).py()
}

/// FAISS's `(D, I)`: distances (`int32`) and ids (`int64`), `(n, k)`.
pub type Knn<'py> = (Bound<'py, PyArray2<i32>>, Bound<'py, PyArray2<i64>>);

/// Distance reported for a missing neighbour (fewer than k stored), as FAISS does.
pub const NO_DISTANCE: i32 = i32::MAX;

/// `(n, k)` arrays of `D` and `I` from row-major vectors.
pub fn layout<T: numpy::Element>(
    py: Python<'_>,
    k: usize,
    d: Vec<T>,
    ids: Vec<i64>,
) -> (Bound<'_, PyArray2<T>>, Bound<'_, PyArray2<i64>>) {
    let n = ids.len().checked_div(k).unwrap_or(0);
    let shape = (n, k);
    (
        ndarray::Array2::from_shape_vec(shape, d)
            .expect("n × k")
            .into_pyarray(py),
        ndarray::Array2::from_shape_vec(shape, ids)
            .expect("n × k")
            .into_pyarray(py),
    )
}

/// FAISS's `(D, I)` of `n` queries × `k` being filled: `-1` ids and distance 2^31 - 1 where a
/// row has fewer than `k` hits (searches and graphs alike).
pub struct KnnOut {
    d: Vec<i32>,
    ids: Vec<i64>,
    k: usize,
}

impl KnnOut {
    /// The padded arrays, allocated fallibly (`what` names them in a `MemoryError`).
    pub fn new(n: usize, k: usize, what: &str) -> PyResult<Self> {
        Ok(KnnOut {
            d: result_array(n, k, NO_DISTANCE, &format!("{what} distances"))?,
            ids: result_array(n, k, -1i64, &format!("{what} ids"))?,
            k,
        })
    }

    /// Writes the hits of rows `first..` (at most `k` per row).
    pub fn put(&mut self, first: usize, hits: &[Vec<Hit>]) {
        for (q, hs) in hits.iter().enumerate() {
            let at = (first + q) * self.k;
            for (c, h) in hs.iter().take(self.k).enumerate() {
                // Every real distance fits an i32.
                self.d[at + c] = i32::try_from(h.distance).unwrap_or(NO_DISTANCE);
                self.ids[at + c] = i64::from(h.id);
            }
        }
    }

    /// The `(n, k)` arrays.
    pub fn into_py(self, py: Python<'_>) -> Knn<'_> {
        layout(py, self.k, self.d, self.ids)
    }
}

/// A CSR matrix's arrays from Python: `(indptr, indices, data, cols)`.
pub type CsrArg<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, f32>,
    usize,
);

/// One vector argument of every entry point that takes vectors: a dense `float32` matrix, or a
/// CSR matrix `(indptr, indices, data, cols)` (`int64` indices, `float32` data, sorted rows).
#[derive(FromPyObject)]
pub enum VectorsArg<'py> {
    /// Dense rows.
    Dense(PyReadonlyArray2<'py, f32>),
    /// Sparse rows.
    Csr(CsrArg<'py>),
}

/// The library's vectors of a [`VectorsArg`].
pub enum Vecs<'a> {
    /// Dense rows, normalised.
    Dense(DenseVectors),
    /// CSR rows, borrowed.
    Csr(CsrVectors<'a, u64, i64>),
}

/// The arrays of a [`VectorsArg`], read (and checked as arrays) with the GIL held; their
/// [`vectors`](Rows::vectors) are computed without it.
pub enum Rows<'a> {
    /// Dense rows.
    Dense(ndarray::ArrayView2<'a, f32>),
    /// CSR rows, checked as arrays (`indptr`, lengths).
    Csr(CsrArrays<'a, i64, i64>),
}

impl VectorsArg<'_> {
    /// The arrays; `what` names the argument in errors.
    pub fn rows(&self, what: &str) -> PyResult<Rows<'_>> {
        Ok(match self {
            VectorsArg::Dense(x) => Rows::Dense(x.as_array()),
            VectorsArg::Csr((p, i, d, cols)) => {
                let (p, i, d) = (
                    contiguous(p, "indptr")?,
                    contiguous(i, "indices")?,
                    contiguous(d, "data")?,
                );
                Rows::Csr(CsrArrays::new(p, i, d, *cols).map_err(|e| named(what, e))?)
            }
        })
    }
}

fn named(what: &str, e: Error) -> PyErr {
    to_py(Error::param("vectors", format!("{what}: {e}")))
}

impl Rows<'_> {
    /// The library's vectors (norms computed, every value checked, CSR rows sorted);
    /// `what` names the argument in errors.
    pub fn vectors(&self, what: &str) -> PyResult<Vecs<'_>> {
        Ok(match self {
            Rows::Dense(x) => Vecs::Dense(DenseVectors::new(*x).py()?),
            Rows::Csr(m) => Vecs::Csr(CsrVectors::new(m.view().map_err(|e| named(what, e))?).py()?),
        })
    }
}

/// Runs `$f` (a generic function or closure body over `&impl Vectors`) on the vectors of
/// `$v`, dense or CSR.
#[macro_export]
macro_rules! with_vectors {
    ($v:expr, |$x:ident| $body:expr) => {
        match $v {
            $crate::arrays::Vecs::Dense($x) => $body,
            $crate::arrays::Vecs::Csr($x) => $body,
        }
    };
}
