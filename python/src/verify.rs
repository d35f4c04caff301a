//! The banded join and the verified (exact-cosine) join, candidates from a `Scheme`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::slice::ParallelSliceMut;
use simlsh::join::{self, CappedGroup, Scheme};
use simlsh::verify::{CosinePair, PrefixJoin, SparseVectors, Vectors, VerifiedJoin, VerifiedPair};

use crate::arrays::{Rows, VectorsArg, codes};
use crate::errors::{IntoPy, value_error};
use crate::join::{FeaturelessArg, PairArrays, featureless_rows, pair_arrays};
use crate::scheme::PyScheme;
use crate::threads::Threads;
use crate::with_vectors;

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

/// The banded self-join of a banding `scheme`: `(i, j, distance)` of the pairs agreeing on
/// some band's key (within its filters), each once, sorted; and the statistics. Rows without
/// features (`featureless`) pair with no row (`join::banded_join_active`).
#[pyfunction]
#[pyo3(signature = (codes, bits, scheme, featureless = None, threads = None))]
pub fn banded_join<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    scheme: &PyScheme,
    featureless: Option<FeaturelessArg<'py>>,
    threads: Option<i64>,
) -> PyResult<(PairArrays<'py>, Bound<'py, PyDict>)> {
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let Scheme::Bands(b) = &scheme.inner else {
        return Err(value_error(format!(
            "the banded join needs a banding, not `{}`",
            scheme.inner
        )));
    };
    let featureless = featureless_rows(featureless, &m)?;
    py.check_signals()?;
    let (pairs, stats) = t
        .run(py, || {
            let mut pairs = Vec::new();
            let stats = join::banded_join_active(&m, b, &featureless, |p| pairs.push(p))?;
            pairs.par_sort_unstable();
            Ok::<_, simlsh::Error>((pairs, stats))
        })
        .py()?;
    let s = PyDict::new(py);
    s.set_item("checked", stats.checked)?;
    s.set_item("candidates", stats.candidates)?;
    s.set_item("capped", capped_list(py, &stats.capped)?)?;
    Ok((pair_arrays(py, &pairs), s))
}

/// Row numbers as the `int64` array NumPy indexes with.
fn rows_array(py: Python<'_>, rows: impl Iterator<Item = u32>) -> Bound<'_, PyArray1<i64>> {
    rows.map(i64::from).collect::<Vec<_>>().into_pyarray(py)
}

/// The report entries of every exact-cosine join: its rows of norm 0, cosines computed and
/// pairs kept.
fn report_dict<'py>(
    py: Python<'py>,
    zero_rows: &[u32],
    candidates: u64,
    pairs: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let r = PyDict::new(py);
    r.set_item("zero_rows", rows_array(py, zero_rows.iter().copied()))?;
    r.set_item("candidates", candidates)?;
    r.set_item("pairs", pairs)?;
    Ok(r)
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
    let d: Vec<i32> = pairs.iter().map(|p| p.distance as i32).collect();
    let c: Vec<f64> = pairs.iter().map(|p| p.cosine).collect();
    let r = report_dict(py, &report.zero_rows, report.candidates, report.pairs)?;
    r.set_item("capped", capped_list(py, &report.capped)?)?;
    r.set_item(
        "scheme",
        PyScheme {
            inner: join.candidates().clone(),
        },
    )?;
    Ok((
        (
            rows_array(py, pairs.iter().map(|p| p.i)),
            rows_array(py, pairs.iter().map(|p| p.j)),
            d.into_pyarray(py),
            c.into_pyarray(py),
        ),
        r,
    ))
}

/// The verified self-join of vectors (dense `float32` rows, or a CSR matrix with sorted
/// indices): the pairs whose exact cosine reaches `threshold` among the candidates of their
/// signatures.
#[pyfunction]
#[pyo3(signature = (codes, bits, x, threshold, scheme = None, recall = None, threads = None))]
#[allow(clippy::too_many_arguments)]
pub fn verified_join<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    x: VectorsArg<'py>,
    threshold: f64,
    scheme: Option<PyRef<'py, PyScheme>>,
    recall: Option<f64>,
    threads: Option<i64>,
) -> PyResult<(Verified<'py>, Bound<'py, PyDict>)> {
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let scheme = scheme.map(|s| s.inner.clone());
    let join = VerifiedJoin::scheme_or_planned(threshold, bits, m.len(), scheme, recall).py()?;
    let rows = x.rows("x")?;
    let vectors = t.run(py, || rows.vectors("x"))?;
    with_vectors!(&vectors, |v| run_verified(py, &t, &join, &m, v))
}

type CosinePairs<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
);

/// The exact cosine self-join of sparse rows without signatures (the library's
/// `PrefixJoin`): every pair at exact cosine ≥ `threshold`, `(i, j, cosine)` sorted by
/// `(i, j)`, and the report.
#[pyfunction]
#[pyo3(signature = (x, threshold, threads = None))]
pub fn cosine_join<'py>(
    py: Python<'py>,
    x: VectorsArg<'py>,
    threshold: f64,
    threads: Option<i64>,
) -> PyResult<(CosinePairs<'py>, Bound<'py, PyDict>)> {
    let t = Threads::new(threads)?;
    let join = PrefixJoin::builder().threshold(threshold).build().py()?;
    let rows = x.rows("x")?;
    let Rows::Csr(m) = &rows else {
        return Err(value_error(
            "the exact join pairs rows by the features they share, and dense rows share every \
             coordinate: give a CSR matrix, or take verified_join (candidates from signatures)",
        ));
    };
    // Unsorted rows are a bad value, as for the other entry points (`Rows::vectors`).
    let view = m.view().map_err(|e| value_error(format!("x: {e}")))?;
    let (pairs, report) = t
        .run(py, || {
            let v = SparseVectors::from_csr(view)?;
            let mut pairs: Vec<CosinePair> = Vec::new();
            let report = join.run(&v, |p| pairs.push(p))?;
            pairs.par_sort_unstable_by_key(|p| (p.i, p.j));
            Ok::<_, simlsh::Error>((pairs, report))
        })
        .py()?;
    let c: Vec<f64> = pairs.iter().map(|p| p.cosine).collect();
    let r = report_dict(py, &report.zero_rows, report.candidates, report.pairs)?;
    r.set_item("indexed", report.indexed)?;
    r.set_item("examined", report.examined)?;
    r.set_item("passes", report.passes)?;
    Ok((
        (
            rows_array(py, pairs.iter().map(|p| p.i)),
            rows_array(py, pairs.iter().map(|p| p.j)),
            c.into_pyarray(py),
        ),
        r,
    ))
}
