//! The batch functions of a distributed near-duplicate join, engine-free (arrays in, arrays
//! out): documents signed with their feature counts, row hashes for exact duplicates, and
//! exact cosines of paired rows (the keys and pairs of a partition are the `Scheme`'s).

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;
use simlsh::signature::words_for;
use simlsh::text::SignOptions;
use simlsh::verify::{paired_cosines, paired_text_cosines};

use crate::arrays::{Vecs, VectorsArg, contiguous};
use crate::errors::{IntoPy, value_error};
use crate::signer::PySigner;
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
    let rows = simlsh::io::ragged::rows(o, data).py()?;
    let h: Vec<u64> = py.detach(|| {
        rows.iter()
            .map(|r| simlsh::rng::hash_bytes(r, seed))
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
    use simlsh::io::ragged::utf8_rows;
    match offsets.extract::<PyReadonlyArray1<'_, i32>>() {
        Ok(o) => utf8_rows(contiguous(&o, "offsets")?, data).py(),
        Err(_) => {
            let o = offsets.extract::<PyReadonlyArray1<'_, i64>>()?;
            utf8_rows(contiguous(&o, "offsets")?, data).py()
        }
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
    let t = Threads::new(threads)?;
    let a = strings(a_offsets, contiguous(&a_data, "a_data")?)?;
    let b = strings(b_offsets, contiguous(&b_data, "b_data")?)?;
    let tok = tokenizer.fitted()?;
    let c = t.run(py, || paired_text_cosines(tok, &a, &b)).py()?;
    Ok(c.into_pyarray(py))
}

/// The exact cosine of each pair of rows (`a[i]`, `b[i]`), vectors of one kind (dense
/// `float32` of equal shape, or CSR matrices of sorted rows with as many rows): the verified
/// join's cosine, bit for bit.
#[pyfunction]
#[pyo3(signature = (a, b, threads = None))]
pub fn cosines<'py>(
    py: Python<'py>,
    a: VectorsArg<'py>,
    b: VectorsArg<'py>,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (t, ra, rb) = (Threads::new(threads)?, a.rows("a")?, b.rows("b")?);
    let c = t.run(py, || match (ra.vectors("a")?, rb.vectors("b")?) {
        (Vecs::Dense(a), Vecs::Dense(b)) => paired_cosines(&a, &b).py(),
        (Vecs::Csr(a), Vecs::Csr(b)) => paired_cosines(&a, &b).py(),
        _ => Err(value_error(
            "a and b must be vectors of one kind (dense or CSR)",
        )),
    })?;
    Ok(c.into_pyarray(py))
}
