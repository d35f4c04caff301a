//! The batch functions of a distributed near-duplicate join, engine-free (arrays in, arrays
//! out): documents signed with their feature counts, row hashes for exact duplicates, and
//! exact cosines of paired rows (the keys and pairs of a partition are the `Scheme`'s).

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use simlsh::Error;
use simlsh::signature::words_for;
use simlsh::text::SignOptions;
use simlsh::verify::{CsrVectors, DenseVectors, SparseVectors, Vectors};
use sprs::{CompressedStorage, CsMatViewI};

use crate::errors::{IntoPy, to_py, value_error};
use crate::signer::{Idx, PySigner, arrow_strings, check_indptr, check_rows, contiguous};
use crate::text::PyTokenizer;
use crate::threads::Threads;

/// Signatures and feature counts of [`sign_text_counts`].
type CodesCounts<'py> = (Bound<'py, PyArray2<u64>>, Bound<'py, PyArray1<u32>>);

/// A 64-bit hash of each row of a ragged byte array (`offsets`, `n + 1` entries, into
/// `data`): XXH3-64 with `seed`. Two seeds give a 128-bit row identity for exact duplicates.
#[pyfunction]
#[pyo3(signature = (offsets, data, seed))]
pub fn row_hashes<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, u8>,
    seed: u64,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (o, data) = (contiguous(&offsets, "offsets")?, contiguous(&data, "data")?);
    if o.is_empty() {
        return Err(value_error("offsets is empty (one entry per row plus one)"));
    }
    if let Some(r) = (0..o.len() - 1)
        .find(|&r| o[r] < 0 || o[r] > o[r + 1] || o[r + 1] as u64 > data.len() as u64)
    {
        return Err(value_error(format!(
            "row {r}: offsets out of order or beyond the data"
        )));
    }
    let h: Vec<u64> = py.detach(|| {
        o.windows(2)
            .map(|w| simlsh::rng::hash_bytes(&data[w[0] as usize..w[1] as usize], seed))
            .collect()
    });
    Ok(h.into_pyarray(py))
}

/// Signs an Arrow string column (`offsets` into UTF-8 `data`) with a tokenizer: the
/// signatures and each document's feature count (0 for documents without features, whose
/// all-zero signature must not be paired).
#[pyfunction]
#[pyo3(signature = (signer, offsets, data, tokenizer, threads = None))]
pub fn sign_text_counts<'py>(
    py: Python<'py>,
    signer: &PySigner,
    offsets: &Bound<'py, PyAny>,
    data: PyReadonlyArray1<'py, u8>,
    tokenizer: &PyTokenizer,
    threads: Option<i64>,
) -> PyResult<CodesCounts<'py>> {
    let t = Threads::new(threads)?;
    let data = contiguous(&data, "data")?;
    let docs = strings(offsets, data)?;
    let s = &*signer.inner;
    let tok = tokenizer.fitted()?;
    let corpus = t
        .run(py, || {
            tok.sign_corpus_with(s, &docs, SignOptions::default())
        })
        .py()?;
    let w = words_for(corpus.signatures.bits());
    let n = corpus.len();
    let codes = ndarray::Array2::from_shape_vec((n, w), corpus.signatures.as_slice().to_vec())
        .expect("n × w words");
    Ok((codes.into_pyarray(py), corpus.features.into_pyarray(py)))
}

/// An Arrow string column's rows (`int32` or `int64` offsets).
pub(crate) fn strings<'a>(offsets: &Bound<'_, PyAny>, data: &'a [u8]) -> PyResult<Vec<&'a str>> {
    if let Ok(o) = offsets.extract::<PyReadonlyArray1<'_, i32>>() {
        arrow_strings(contiguous(&o, "offsets")?, data)
    } else {
        let o = offsets.extract::<PyReadonlyArray1<'_, i64>>()?;
        arrow_strings(contiguous(&o, "offsets")?, data)
    }
}

/// The exact cosine of each pair of documents (`a[i]`, `b[i]`), two Arrow string columns of
/// equal length, of their weighted features as `tokenizer` gives them: the cosine the
/// verified join of the same documents computes, bit for bit.
#[pyfunction]
#[pyo3(signature = (tokenizer, a_offsets, a_data, b_offsets, b_data, threads = None))]
pub fn cosines_text<'py>(
    py: Python<'py>,
    tokenizer: &PyTokenizer,
    a_offsets: &Bound<'py, PyAny>,
    a_data: PyReadonlyArray1<'py, u8>,
    b_offsets: &Bound<'py, PyAny>,
    b_data: PyReadonlyArray1<'py, u8>,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    use rayon::prelude::*;
    let t = Threads::new(threads)?;
    let a = strings(a_offsets, contiguous(&a_data, "a_data")?)?;
    let b = strings(b_offsets, contiguous(&b_data, "b_data")?)?;
    if a.len() != b.len() {
        return Err(to_py(Error::LengthMismatch {
            what: "a vs b rows",
            left: a.len(),
            right: b.len(),
        }));
    }
    let tok = tokenizer.fitted()?;
    let c = t.run(py, || -> simlsh::Result<Vec<f64>> {
        let fa: Vec<_> = a.par_iter().map(|d| tok.features(d)).collect();
        let fb: Vec<_> = b.par_iter().map(|d| tok.features(d)).collect();
        let (va, vb) = (
            SparseVectors::from_features(fa.iter())?,
            SparseVectors::from_features(fb.iter())?,
        );
        Ok((0..a.len()).map(|i| va.cosine_with(i, &vb, i)).collect())
    });
    Ok(c.py()?.into_pyarray(py))
}

/// The exact cosine of each pair of dense rows (`a[i]`, `b[i]`), `float32` matrices of
/// equal shape: the verified join's cosine, bit for bit.
#[pyfunction]
pub fn cosines_dense<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f32>,
    b: PyReadonlyArray2<'py, f32>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (a, b) = (a.as_array(), b.as_array());
    if a.dim() != b.dim() {
        return Err(value_error(format!(
            "a and b differ in shape: {:?} and {:?}",
            a.dim(),
            b.dim()
        )));
    }
    let c = py.detach(|| -> simlsh::Result<Vec<f64>> {
        let (va, vb) = (DenseVectors::new(a)?, DenseVectors::new(b)?);
        Ok((0..va.len()).map(|i| va.cosine_with(i, &vb, i)).collect())
    });
    Ok(c.py()?.into_pyarray(py))
}

/// One side of [`cosines_csr`]: a checked CSR view.
fn csr_view<'a>(
    indptr: &'a [i64],
    indices: &'a [i64],
    data: &'a [f32],
    cols: usize,
    side: &str,
) -> PyResult<CsMatViewI<'a, f32, u64, i64>> {
    if indices.len() != data.len() {
        return Err(to_py(Error::LengthMismatch {
            what: "sparse indices vs data",
            left: indices.len(),
            right: data.len(),
        }));
    }
    check_indptr(indptr, indices.len()).py()?;
    let rows = indptr.len() - 1;
    if !check_rows(indptr, indices, 0..rows, cols).py()? {
        return Err(value_error(format!(
            "{side}: exact cosines need sorted sparse indices without duplicates"
        )));
    }
    let nnz = indptr[rows] as usize;
    let u = <i64 as Idx>::unsigned(indices);
    // SAFETY: `check_indptr` and `check_rows` verified indptr (from 0, non-decreasing, within
    // the indices) and every row (strictly increasing, in 0..cols, so equal as unsigned).
    Ok(unsafe {
        CsMatViewI::new_unchecked(
            CompressedStorage::CSR,
            (rows, cols),
            indptr,
            &u[..nnz],
            &data[..nnz],
        )
    })
}

/// The exact cosine of each pair of sparse rows (`a[i]`, `b[i]`), two CSR matrices (sorted
/// indices, `float32` data) with the same number of rows: the verified join's cosine, bit for
/// bit.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn cosines_csr<'py>(
    py: Python<'py>,
    a_indptr: PyReadonlyArray1<'py, i64>,
    a_indices: PyReadonlyArray1<'py, i64>,
    a_data: PyReadonlyArray1<'py, f32>,
    b_indptr: PyReadonlyArray1<'py, i64>,
    b_indices: PyReadonlyArray1<'py, i64>,
    b_data: PyReadonlyArray1<'py, f32>,
    cols: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let a = csr_view(
        contiguous(&a_indptr, "a_indptr")?,
        contiguous(&a_indices, "a_indices")?,
        contiguous(&a_data, "a_data")?,
        cols,
        "a",
    )?;
    let b = csr_view(
        contiguous(&b_indptr, "b_indptr")?,
        contiguous(&b_indices, "b_indices")?,
        contiguous(&b_data, "b_data")?,
        cols,
        "b",
    )?;
    if a.rows() != b.rows() {
        return Err(to_py(Error::LengthMismatch {
            what: "a vs b rows",
            left: a.rows(),
            right: b.rows(),
        }));
    }
    let c = py.detach(|| -> simlsh::Result<Vec<f64>> {
        let (va, vb) = (CsrVectors::new(a)?, CsrVectors::new(b)?);
        Ok((0..va.len()).map(|i| va.cosine_with(i, &vb, i)).collect())
    });
    Ok(c.py()?.into_pyarray(py))
}
