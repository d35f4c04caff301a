//! The banded join, the verified (exact-cosine) join and the per-partition pieces of a
//! distributed banded join.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use simlsh::Error;
use simlsh::join::{self, Banding, CappedGroup};
use simlsh::verify::{Candidates, CsrVectors, DenseVectors, Vectors, VerifiedJoin, VerifiedPair};
use sprs::{CompressedStorage, CsMatViewI};

use crate::errors::{IntoPy, to_py, value_error};
use crate::index::codes;
use crate::signer::{Idx, check_indptr, check_rows, contiguous};
use crate::threads::Threads;

type PairArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i32>>,
);

/// A banding of `bits`-bit signatures.
fn banding(
    bits: usize,
    bands: usize,
    width: u32,
    max_distance: Option<u32>,
    max_group: Option<usize>,
    prefix: (Option<usize>, Option<u32>),
) -> PyResult<Banding> {
    let mut b = Banding::builder().bits(bits).bands(bands).width(width);
    if let Some(r) = max_distance {
        b = b.max_distance(r);
    }
    match prefix {
        (Some(w), Some(r)) => b = b.prefix_filter(w, r),
        (None, None) => {}
        _ => {
            return Err(value_error(
                "prefix_words and prefix_radius go together (the prefix filter)",
            ));
        }
    }
    if let Some(g) = max_group {
        b = b.max_group(g);
    }
    b.build().py()
}

fn capped_list<'py>(py: Python<'py>, capped: &[CappedGroup]) -> PyResult<Vec<Bound<'py, PyDict>>> {
    capped
        .iter()
        .map(|g| {
            let d = PyDict::new(py);
            d.set_item("band", g.band)?;
            d.set_item("key", g.key)?;
            d.set_item("rows", g.rows)?;
            Ok(d)
        })
        .collect()
}

/// The banded self-join: `(i, j, distance)` of the pairs agreeing on some band's key (within
/// `max_distance` when given), each once, sorted; and the statistics.
#[pyfunction]
#[pyo3(signature = (codes, bits, bands, width, max_distance = None, max_group = None, threads = None, prefix_words = None, prefix_radius = None))]
#[allow(clippy::too_many_arguments)]
pub fn banded_join<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    bands: usize,
    width: u32,
    max_distance: Option<u32>,
    max_group: Option<usize>,
    threads: Option<i64>,
    prefix_words: Option<usize>,
    prefix_radius: Option<u32>,
) -> PyResult<(PairArrays<'py>, Bound<'py, PyDict>)> {
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let b = banding(
        bits,
        bands,
        width,
        max_distance,
        max_group,
        (prefix_words, prefix_radius),
    )?;
    py.check_signals()?;
    let (pairs, stats) = t.run(py, || join::banded_join(&m, &b)).py()?;
    let i: Vec<i64> = pairs.iter().map(|p| i64::from(p.i)).collect();
    let j: Vec<i64> = pairs.iter().map(|p| i64::from(p.j)).collect();
    let d: Vec<i32> = pairs.iter().map(|p| p.distance as i32).collect();
    let s = PyDict::new(py);
    s.set_item("checked", stats.checked)?;
    s.set_item("candidates", stats.candidates)?;
    s.set_item("capped", capped_list(py, &stats.capped)?)?;
    Ok((
        (i.into_pyarray(py), j.into_pyarray(py), d.into_pyarray(py)),
        s,
    ))
}

type Verified<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<f64>>,
);

/// Runs a verified join over `vectors`, collecting the pairs as arrays and the report.
fn run_verified<'py, V: Vectors>(
    py: Python<'py>,
    t: &Threads,
    join: &VerifiedJoin,
    sigs: &simlsh::SignatureMatrix<&[u64]>,
    vectors: &V,
) -> PyResult<(Verified<'py>, Bound<'py, PyDict>)> {
    let (pairs, report): (Vec<VerifiedPair>, _) = t.run(py, || join.pairs(sigs, vectors)).py()?;
    let i: Vec<i64> = pairs.iter().map(|p| i64::from(p.i)).collect();
    let j: Vec<i64> = pairs.iter().map(|p| i64::from(p.j)).collect();
    let d: Vec<i32> = pairs.iter().map(|p| p.distance as i32).collect();
    let c: Vec<f64> = pairs.iter().map(|p| p.cosine).collect();
    let r = PyDict::new(py);
    let zero: Vec<i64> = report.zero_rows.iter().map(|&z| i64::from(z)).collect();
    r.set_item("zero_rows", zero.into_pyarray(py))?;
    r.set_item("candidates", report.candidates)?;
    r.set_item("pairs", report.pairs)?;
    r.set_item("capped", capped_list(py, &report.capped)?)?;
    r.set_item(
        "source",
        match join.candidates() {
            Candidates::Hamming { radius } => format!("hamming:radius={radius}"),
            Candidates::Banded(b) => format!(
                "banded:bands={},width={},max_distance={}",
                b.bands(),
                b.width(),
                b.max_distance()
            ),
        },
    )?;
    Ok((
        (
            i.into_pyarray(py),
            j.into_pyarray(py),
            d.into_pyarray(py),
            c.into_pyarray(py),
        ),
        r,
    ))
}

/// The join of `threshold` with candidates: a radius, a banding, or the planner's choice
/// for `recall`.
#[allow(clippy::too_many_arguments)]
fn verified_join_spec(
    threshold: f64,
    bits: usize,
    n: usize,
    radius: Option<u32>,
    bands: Option<usize>,
    width: Option<u32>,
    max_distance: Option<u32>,
    recall: f64,
) -> PyResult<VerifiedJoin> {
    let candidates = match (radius, bands, width) {
        (Some(r), None, None) => Candidates::Hamming { radius: r },
        (None, Some(b), Some(w)) => {
            Candidates::Banded(banding(bits, b, w, max_distance, None, (None, None))?)
        }
        (None, None, None) => return VerifiedJoin::planned(threshold, recall, bits, n).py(),
        _ => {
            return Err(value_error(
                "give either radius, or bands and width, or neither (the planner chooses)",
            ));
        }
    };
    VerifiedJoin::builder()
        .threshold(threshold)
        .candidates(candidates)
        .build()
        .py()
}

/// The verified self-join of dense `float32` vectors: the pairs whose exact cosine reaches
/// `threshold` among the candidates of their signatures.
#[pyfunction]
#[pyo3(signature = (codes, bits, x, threshold, radius = None, bands = None, width = None,
    max_distance = None, recall = 0.99, threads = None))]
#[allow(clippy::too_many_arguments)]
pub fn verified_join_dense<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    x: PyReadonlyArray2<'py, f32>,
    threshold: f64,
    radius: Option<u32>,
    bands: Option<usize>,
    width: Option<u32>,
    max_distance: Option<u32>,
    recall: f64,
    threads: Option<i64>,
) -> PyResult<(Verified<'py>, Bound<'py, PyDict>)> {
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let join = verified_join_spec(
        threshold,
        bits,
        m.len(),
        radius,
        bands,
        width,
        max_distance,
        recall,
    )?;
    let view = x.as_array();
    let vectors = t.run(py, || DenseVectors::new(view)).py()?;
    run_verified(py, &t, &join, &m, &vectors)
}

/// The verified self-join of the rows of a CSR matrix (sorted indices, `float32` data).
#[pyfunction]
#[pyo3(signature = (codes, bits, indptr, indices, data, cols, threshold, radius = None,
    bands = None, width = None, max_distance = None, recall = 0.99, threads = None))]
#[allow(clippy::too_many_arguments)]
pub fn verified_join_csr<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, f32>,
    cols: usize,
    threshold: f64,
    radius: Option<u32>,
    bands: Option<usize>,
    width: Option<u32>,
    max_distance: Option<u32>,
    recall: f64,
    threads: Option<i64>,
) -> PyResult<(Verified<'py>, Bound<'py, PyDict>)> {
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let join = verified_join_spec(
        threshold,
        bits,
        m.len(),
        radius,
        bands,
        width,
        max_distance,
        recall,
    )?;
    let (p, i, d) = (
        contiguous(&indptr, "indptr")?,
        contiguous(&indices, "indices")?,
        contiguous(&data, "data")?,
    );
    if i.len() != d.len() {
        return Err(to_py(Error::LengthMismatch {
            what: "sparse indices vs data",
            left: i.len(),
            right: d.len(),
        }));
    }
    check_indptr(p, i.len()).py()?;
    let rows = p.len() - 1;
    if !t.run(py, || check_rows(p, i, 0..rows, cols)).py()? {
        return Err(value_error(
            "the verified join needs sorted sparse indices without duplicates (X.sort_indices(), X.sum_duplicates())",
        ));
    }
    let nnz = p[rows] as usize;
    let u = <i64 as Idx>::unsigned(i);
    // SAFETY: `check_indptr` and `check_rows` verified indptr (from 0, non-decreasing, within
    // the indices) and every row (strictly increasing, in 0..cols, so equal as unsigned).
    let mat: CsMatViewI<'_, f32, u64, i64> = unsafe {
        CsMatViewI::new_unchecked(
            CompressedStorage::CSR,
            (rows, cols),
            p,
            &u[..nnz],
            &d[..nnz],
        )
    };
    let vectors = t.run(py, || CsrVectors::new(mat)).py()?;
    run_verified(py, &t, &join, &m, &vectors)
}

/// Bands and keys, one per row and band.
type BandKeys<'py> = (Bound<'py, PyArray1<i32>>, Bound<'py, PyArray1<u64>>);

/// Pairs by id (`a`, `b`, distance) and the capped runs.
type BandPairs<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i32>>,
    Vec<Bound<'py, PyDict>>,
);

/// The band keys of signatures, for a distributed banded join: `(row, band, key)` arrays,
/// one entry per row and band (`rows × bands` entries, row-major).
#[pyfunction]
#[pyo3(signature = (codes, bits, bands, width, threads = None))]
pub fn band_keys<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    bands: usize,
    width: u32,
    threads: Option<i64>,
) -> PyResult<BandKeys<'py>> {
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let b = banding(bits, bands, width, None, None, (None, None))?;
    let (band, key): (Vec<i32>, Vec<u64>) = t.run(py, || {
        m.rows()
            .flat_map(|row| {
                b.keys(row)
                    .map(|(band, key)| (band as i32, key))
                    .collect::<Vec<_>>()
            })
            .unzip()
    });
    Ok((band.into_pyarray(py), key.into_pyarray(py)))
}

/// The candidate pairs of one band among rows grouped by a job (any keys of that band, any
/// order): `(a, b, distance)` by the caller's ids, `a < b`, a pair reported only by the first
/// band its signatures agree on; and the runs skipped for their size.
#[pyfunction]
#[pyo3(signature = (ids, codes, bits, bands, width, band, max_distance = None, max_group = None))]
#[allow(clippy::too_many_arguments)]
pub fn band_partition<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, u64>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    bands: usize,
    width: u32,
    band: usize,
    max_distance: Option<u32>,
    max_group: Option<usize>,
) -> PyResult<BandPairs<'py>> {
    let m = self::codes(&codes, bits)?;
    let ids = contiguous(&ids, "ids")?;
    let b = banding(bits, bands, width, max_distance, max_group, (None, None))?;
    let (mut a, mut bb, mut d) = (Vec::new(), Vec::new(), Vec::new());
    let capped = py
        .detach(|| {
            join::band_partition(&b, band, ids, m.as_slice(), &[], |p| {
                a.push(p.a);
                bb.push(p.b);
                d.push(p.distance as i32);
            })
        })
        .py()?;
    Ok((
        a.into_pyarray(py),
        bb.into_pyarray(py),
        d.into_pyarray(py),
        capped_list(py, &capped)?,
    ))
}
