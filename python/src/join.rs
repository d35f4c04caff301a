//! Joins and graphs: the self-join, connected components, the k-NN graph.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use rayon::slice::ParallelSliceMut;
use simlsh::SignatureMatrix;
use simlsh::index::{Featureless, HammingIndex, Id};
use simlsh::join::{self, Pair};

use crate::arrays::{Knn, KnnOut, codes, contiguous, u32s};
use crate::errors::{IntoPy, to_py, value_error};
use crate::index::PyIndex;
use crate::threads::Threads;

/// Rows of the k-NN graph per chunk (between two checks for Ctrl-C).
const GRAPH_CHUNK: usize = 4_096;

pub type PairArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i32>>,
);

/// Pairs as `(i, j, distance)` arrays.
pub fn pair_arrays<'py>(py: Python<'py>, pairs: &[Pair]) -> PairArrays<'py> {
    let i: Vec<i64> = pairs.iter().map(|p| i64::from(p.i)).collect();
    let j: Vec<i64> = pairs.iter().map(|p| i64::from(p.j)).collect();
    let d: Vec<i32> = pairs.iter().map(|p| p.distance as i32).collect();
    (i.into_pyarray(py), j.into_pyarray(py), d.into_pyarray(py))
}

/// The rows without features of a join or graph, as Python gives them: `"zero"` for the
/// library's rule of codes (`Featureless::of_codes`: the all-zero rows), or their row
/// numbers (which the library checks: increasing, below the number of rows).
#[derive(FromPyObject)]
pub enum FeaturelessArg<'py> {
    Rule(String),
    Rows(PyReadonlyArray1<'py, i64>),
}

/// Python's `featureless` read: `None` for none (codes as codes), `Some(None)` for the
/// library's rule of codes (`"zero"`), `Some(Some(rows))` for row numbers given.
pub fn featureless_arg(arg: Option<FeaturelessArg<'_>>) -> PyResult<Option<Option<Vec<Id>>>> {
    match arg {
        None => Ok(None),
        Some(FeaturelessArg::Rule(r)) if r == "zero" => Ok(Some(None)),
        Some(FeaturelessArg::Rule(r)) => Err(value_error(format!(
            "featureless must be 'zero', False, a mask or row numbers, got '{r}'"
        ))),
        Some(FeaturelessArg::Rows(a)) => Ok(Some(Some(u32s(
            contiguous(&a, "featureless")?,
            "featureless",
        )?))),
    }
}

/// The rows without features of `m` (none for `None`).
pub fn featureless_rows(
    arg: Option<FeaturelessArg<'_>>,
    m: &SignatureMatrix<&[u64]>,
) -> PyResult<Vec<Id>> {
    Ok(match featureless_arg(arg)? {
        None => Vec::new(),
        Some(None) => Featureless::of_codes(m).stored().to_vec(),
        Some(Some(rows)) => rows,
    })
}

/// Every pair of rows within `radius` (inclusive), each once with `i < j`, sorted by
/// `(i, j)`: `(i, j, distance)` arrays. Rows without features (`featureless`) pair with no
/// row (`join::self_join_active`).
#[pyfunction]
#[pyo3(signature = (codes, bits, radius, featureless = None, threads = None))]
pub fn self_join<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    radius: u32,
    featureless: Option<FeaturelessArg<'py>>,
    threads: Option<i64>,
) -> PyResult<PairArrays<'py>> {
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let featureless = featureless_rows(featureless, &m)?;
    py.check_signals()?;
    let pairs = t.run(py, || {
        let mut pairs = Vec::new();
        join::self_join_active(&m, radius, &featureless, |p| pairs.push(p))?;
        pairs.par_sort_unstable();
        Ok(pairs)
    });
    Ok(pair_arrays(py, &pairs.py()?))
}

/// Connected components of the graph on `0..n` with edges `(i[k], j[k])`: `labels[v]` is
/// the smallest member of `v`'s component.
#[pyfunction]
pub fn clusters<'py>(
    py: Python<'py>,
    n: usize,
    i: PyReadonlyArray1<'py, i64>,
    j: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let (i, j) = (contiguous(&i, "i")?, contiguous(&j, "j")?);
    if i.len() != j.len() {
        return Err(to_py(simlsh::Error::lengths("i vs j", i.len(), j.len())));
    }
    let point = |k: usize, v: i64| {
        u32::try_from(v).map_err(|_| value_error(format!("edge {k}: point {v} is not in 0..2^32")))
    };
    let pairs: Vec<Pair> = (0..i.len())
        .map(|k| {
            Ok(Pair {
                i: point(k, i[k])?,
                j: point(k, j[k])?,
                distance: 0,
            })
        })
        .collect::<PyResult<_>>()?;
    let labels = py.detach(|| join::clusters(n, &pairs)).py()?;
    let labels: Vec<i64> = labels.into_iter().map(i64::from).collect();
    Ok(labels.into_pyarray(py))
}

/// The k-NN graph of the rows of `codes`: `(D, I)` `(N, k)` arrays of each row's `k` nearest
/// other rows (id -1, distance 2^31 - 1 where fewer exist); exact by `join::knn_graph` (every
/// pair compared once), approximate by `join::knn_graph_by` (`method = "approx"`, seeded by
/// `seed`), or by `index` (which must hold row `i` under id `i`). Without an index, rows
/// without features (`featureless`) have no neighbours and are no one's
/// (`join::knn_graph_active`).
#[pyfunction]
#[pyo3(signature = (codes, bits, k, index = None, featureless = None, threads = None, method = None, seed = None))]
#[allow(clippy::too_many_arguments)]
pub fn knn_graph<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    bits: usize,
    k: usize,
    index: Option<&PyIndex>,
    featureless: Option<FeaturelessArg<'py>>,
    threads: Option<i64>,
    method: Option<&str>,
    seed: Option<u64>,
) -> PyResult<Knn<'py>> {
    let method: join::KnnMethod = method
        .map_or(Ok(join::KnnMethod::default()), str::parse)
        .py()?;
    if index.is_some() && (method != join::KnnMethod::Exact || featureless.is_some()) {
        return Err(value_error(
            "give an index or method=\"approx\" (or featureless rows), not both (an index's \
             searches decide)",
        ));
    }
    let t = Threads::new(threads)?;
    let m = self::codes(&codes, bits)?;
    let featureless = featureless_rows(featureless, &m)?;
    let n = m.len();
    let mut out = KnnOut::new(n, k, "k-NN graph")?;
    match index {
        // The exact graph in one call: every pair compared once (`hamming::self_knn`).
        None => {
            let method = match method {
                join::KnnMethod::Approx(p) => {
                    let seed = seed.unwrap_or(p.seed);
                    join::KnnMethod::Approx(join::ApproxKnn { seed, ..p })
                }
                exact => exact,
            };
            let graph = t.run(py, || {
                join::knn_graph_active(&m, &featureless, |s| {
                    join::knn_graph_by(s, k, &method).map(|g| g.0)
                })
            });
            out.put(0, &graph.py()?)
        }
        Some(ix) => t.chunked(py, n, GRAPH_CHUNK, |r| {
            let first = r.start;
            let hits = ix
                .with(|idx: &dyn HammingIndex| join::knn_graph_rows(idx, &m, r, k))
                .py()?;
            out.put(first, &hits);
            Ok(())
        })?,
    }
    Ok(out.into_py(py))
}
