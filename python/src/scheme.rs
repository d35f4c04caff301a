//! The library's join scheme and join plan: `Scheme` (a radius, a banding or permuted tables,
//! with the library's text form), its keys and the pairs of one partition of a distributed
//! join, and `plan_join`, the planner the command line uses.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use simlsh::estimate::{IntervalMethod, JoinPlanner, RadiusRule};
use simlsh::join::{Banding, CappedGroup, Pass, Scheme, TableKeys, partition};
use simlsh::verify::MemoryBudget;

use crate::arrays::{codes, contiguous, u32s};
use crate::errors::{IntoPy, value_error};
use crate::threads::Threads;

/// A join's candidate scheme ([`simlsh::join::Scheme`]).
#[pyclass(name = "Scheme", module = "simlsh._simlsh", frozen, eq)]
#[derive(PartialEq)]
pub struct PyScheme {
    pub inner: Scheme,
}

/// Pairs by id and the runs capped: `(a, b, distance, capped_group, capped_key, capped_rows)`.
type PartitionArrays<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i64>>,
);

impl PyScheme {
    fn bits_or_err(&self) -> PyResult<usize> {
        self.inner.bits().ok_or_else(|| {
            value_error("a radius scheme has no keys: make its permuted tables with keyed()")
        })
    }
}

#[pymethods]
impl PyScheme {
    /// The scheme of a text form (`radius:r=3`, `bands:f=256,b=20,w=12`, ...).
    #[new]
    fn new(text: &str) -> PyResult<Self> {
        Ok(PyScheme {
            inner: text.parse().py()?,
        })
    }

    /// Every pair within Hamming distance `r`.
    #[staticmethod]
    fn radius(r: u32) -> Self {
        PyScheme {
            inner: Scheme::Radius { radius: r },
        }
    }

    /// A banding of `bits`-bit signatures (see the library's `BandingBuilder`).
    #[staticmethod]
    #[pyo3(signature = (bits, bands, width, max_distance = None, max_group = None, prefix = None))]
    fn bands(
        bits: usize,
        bands: usize,
        width: u32,
        max_distance: Option<u32>,
        max_group: Option<usize>,
        prefix: Option<(usize, u32)>,
    ) -> PyResult<Self> {
        let mut b = Banding::builder().bits(bits).bands(bands).width(width);
        if let Some(r) = max_distance {
            b = b.max_distance(r);
        }
        if let Some((w, r)) = prefix {
            b = b.prefix_filter(w, r);
        }
        if let Some(g) = max_group {
            b = b.max_group(g);
        }
        Ok(PyScheme {
            inner: Scheme::Bands(b.build().py()?),
        })
    }

    /// Permuted tables for the radius join (see the library's `TableKeysBuilder`).
    #[staticmethod]
    #[pyo3(signature = (bits, radius, levels = None, rows = None, max_group = None))]
    fn tables(
        bits: usize,
        radius: u32,
        levels: Option<Vec<usize>>,
        rows: Option<u64>,
        max_group: Option<usize>,
    ) -> PyResult<Self> {
        let mut b = TableKeys::builder().bits(bits).radius(radius);
        if let Some(l) = levels {
            b = b.levels(l);
        }
        if let Some(n) = rows {
            b = b.rows(n);
        }
        if let Some(g) = max_group {
            b = b.max_group(g);
        }
        Ok(PyScheme {
            inner: Scheme::Tables(b.build().py()?),
        })
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Scheme('{}')", self.inner)
    }

    fn __hash__(&self) -> u64 {
        simlsh::rng::hash_bytes(self.inner.to_string().as_bytes(), 0)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        Ok((slf.get_type().into_any(), (slf.get().inner.to_string(),)))
    }

    /// `radius`, `bands` or `tables`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// The signature width of a banding or tables (`None` for a radius).
    #[getter]
    fn bits(&self) -> Option<usize> {
        self.inner.bits()
    }

    /// Groups (bands or tables) per row (`None` for a radius).
    #[getter]
    fn groups(&self) -> Option<usize> {
        self.inner.groups().ok()
    }

    /// The largest run of equal keys compared (`None`: no cap).
    #[getter]
    fn max_group(&self) -> Option<usize> {
        self.inner.max_group()
    }

    /// One line for people.
    fn describe(&self) -> String {
        self.inner.describe()
    }

    /// The scheme of a distributed join over `rows` rows of `bits`-bit signatures: a radius
    /// becomes the permuted tables planned for as many rows.
    fn keyed(&self, bits: usize, rows: u64) -> PyResult<Self> {
        Ok(PyScheme {
            inner: self.inner.keyed(bits, rows).py()?,
        })
    }

    /// The planned recall at cosine `threshold` of `bits`-bit signatures.
    fn recall(&self, threshold: f64, bits: usize) -> PyResult<f64> {
        self.inner.recall(threshold, bits).py()
    }

    /// The key of every row of `codes` in every group: an `(N, groups)` `uint64` array.
    #[pyo3(signature = (codes, threads = None))]
    fn keys<'py>(
        &self,
        py: Python<'py>,
        codes: PyReadonlyArray2<'py, u64>,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        let bits = self.bits_or_err()?;
        let m = self::codes(&codes, bits)?;
        let g = self.inner.groups().py()?;
        let keys = t.run(py, || self.inner.keys(m.as_slice())).py()?;
        let keys = ndarray::Array2::from_shape_vec((m.len(), g), keys).expect("rows × groups");
        Ok(keys.into_pyarray(py))
    }

    /// The candidate pairs of one partition of `(group, key)` rows (the library's
    /// `join::partition`): `(a, b, distance)` by id and the runs capped here (`group`,
    /// `key`, `rows`). `capped_group`/`capped_key` list the runs capped over the whole data
    /// set; `missed=True` is the second pass, reporting only the pairs they hid.
    #[pyo3(signature = (group, ids, codes, capped_group = None, capped_key = None, missed = false))]
    #[allow(clippy::too_many_arguments)]
    fn partition<'py>(
        &self,
        py: Python<'py>,
        group: PyReadonlyArray1<'py, i32>,
        ids: PyReadonlyArray1<'py, u64>,
        codes: PyReadonlyArray2<'py, u64>,
        capped_group: Option<PyReadonlyArray1<'py, i32>>,
        capped_key: Option<PyReadonlyArray1<'py, u64>>,
        missed: bool,
    ) -> PyResult<PartitionArrays<'py>> {
        let bits = self.bits_or_err()?;
        let m = self::codes(&codes, bits)?;
        let groups = u32s(contiguous(&group, "group")?, "group")?;
        let cg = capped_group.as_ref().map(|g| contiguous(g, "capped_group"));
        let ck = capped_key.as_ref().map(|k| contiguous(k, "capped_key"));
        let cg = u32s(cg.transpose()?.unwrap_or(&[]), "capped_group")?;
        let capped = CappedGroup::from_columns(&cg, ck.transpose()?.unwrap_or(&[])).py()?;
        let pass = if missed { Pass::Missed } else { Pass::First };
        let ids = contiguous(&ids, "ids")?;
        let found = py
            .detach(|| partition(&self.inner, &groups, ids, m.as_slice(), &capped, pass))
            .py()?;
        let a: Vec<u64> = found.pairs.iter().map(|p| p.i).collect();
        let b: Vec<u64> = found.pairs.iter().map(|p| p.j).collect();
        let d: Vec<i32> = found.pairs.iter().map(|p| p.distance as i32).collect();
        let cg: Vec<i32> = found.capped.iter().map(|c| c.band as i32).collect();
        let ck: Vec<u64> = found.capped.iter().map(|c| c.key).collect();
        let cr: Vec<i64> = found.capped.iter().map(|c| c.rows as i64).collect();
        Ok((
            a.into_pyarray(py),
            b.into_pyarray(py),
            d.into_pyarray(py),
            cg.into_pyarray(py),
            ck.into_pyarray(py),
            cr.into_pyarray(py),
        ))
    }
}

/// The library's join plan for threshold `threshold` over `rows` rows: at `bits` when the
/// signatures exist, else the width chosen for rows of `features` nonzeros on average
/// (signing counted) among those whose signatures fit `memory` bytes; `recall` at the
/// threshold (the library's default when `None`); `probes` the multi-probe distance the
/// banding may use (the library's default when `None`). A dict: `bits`, `scheme` (a `Scheme`),
/// `choice` (`hamming` or `bands`), `recall` (the scheme's planned recall), `cost_ns`.
#[pyfunction]
#[pyo3(signature = (threshold, rows, bits = None, features = None, recall = None, memory = None, probes = None))]
#[allow(clippy::too_many_arguments)]
pub fn plan_join<'py>(
    py: Python<'py>,
    threshold: f64,
    rows: u64,
    bits: Option<usize>,
    features: Option<f64>,
    recall: Option<f64>,
    memory: Option<u64>,
    probes: Option<u32>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut p = JoinPlanner::new(threshold).rows(rows.max(2));
    if let Some(t) = probes {
        p = p.probes(t);
    }
    if let Some(r) = recall {
        p = p.recall(r);
    }
    p = match (bits, features) {
        (Some(f), None) => p.bits(f),
        (None, Some(m)) => p.features(m),
        _ => {
            return Err(value_error(
                "give bits (the signatures exist) or features (their mean per row: the width is planned)",
            ));
        }
    };
    // The run's budget (or the library's default: what is available), split as every front
    // end splits it: the planner takes the signatures' share.
    let rows_n = usize::try_from(rows).unwrap_or(usize::MAX);
    p = p.memory(MemoryBudget::planner_memory(memory, rows_n, 0).py()?);
    let plan = p.plan().py()?;
    let scheme = plan.scheme().py()?;
    let d = PyDict::new(py);
    d.set_item("bits", plan.bits)?;
    d.set_item("recall", scheme.recall(threshold, plan.bits).py()?)?;
    d.set_item("choice", plan.choice.name())?;
    d.set_item("cost_ns", plan.cost_ns)?;
    d.set_item("scheme", PyScheme { inner: scheme })?;
    Ok(d)
}

/// The library's defaults that the Python layer maps onto (it states none of its own): `seed`
/// (signers), `bits` (signing), `distribution` (an explicit matrix's kind), `cosine_bits` (a cosine join without planning), `recall`
/// (planners), `planned_widths`, `feature_sample` (documents sampled for the mean features),
/// `level` and `interval_method` (estimates), `radius_bits` and `radius_rule` (`plan_radius`),
/// `index` (the index specification), `manku_radius`, `permutations`, `beam` and
/// `permutation_seed` (index parameters), `load_verify` and `load_copy` (`LoadOptions`),
/// `knn_method` and `knn_seed` (`knn_graph`), `store_durability`, `store_verify` and
/// `store_seed` (stores), `listen` (the address `simlsh serve` listens on, `Client`'s URL).
#[pyfunction]
pub fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let spec = simlsh::signers::SignerSpec::default();
    d.set_item("seed", spec.seed)?;
    d.set_item("bits", spec.bits)?;
    let matrix = simlsh::signers::SignerKind::from(simlsh::signers::Distribution::default());
    d.set_item("distribution", matrix.name())?;
    d.set_item("cosine_bits", simlsh::estimate::COSINE_BITS)?;
    d.set_item("recall", simlsh::estimate::DEFAULT_RECALL)?;
    d.set_item("planned_widths", simlsh::estimate::PLANNED_WIDTHS.to_vec())?;
    d.set_item("feature_sample", simlsh::text::FEATURE_SAMPLE)?;
    d.set_item("level", simlsh::estimate::DEFAULT_LEVEL)?;
    d.set_item("interval_method", IntervalMethod::default().name())?;
    d.set_item("radius_bits", simlsh::estimate::RADIUS_PLANNER_BITS)?;
    d.set_item("radius_rule", RadiusRule::default().name())?;
    d.set_item("index", simlsh::index::IndexSpec::default().to_string())?;
    d.set_item("manku_radius", simlsh::index::DEFAULT_RADIUS)?;
    d.set_item("permutations", simlsh::index::DEFAULT_PERMUTATIONS)?;
    d.set_item("beam", simlsh::index::DEFAULT_BEAM)?;
    d.set_item("permutation_seed", simlsh::index::DEFAULT_SEED)?;
    d.set_item("knn_method", simlsh::join::KnnMethod::default().name())?;
    d.set_item("knn_seed", simlsh::join::ApproxKnn::default().seed)?;
    let store = simlsh::store::OpenOptions::new();
    d.set_item("store_durability", store.durability_of().name())?;
    d.set_item("store_verify", store.verifies())?;
    d.set_item("store_seed", simlsh::store::Store::builder().seed_of())?;
    d.set_item("listen", simlsh::store::DEFAULT_LISTEN.to_string())?;
    let load = simlsh::persist::LoadOptions::default();
    d.set_item("load_verify", load.verifies())?;
    d.set_item("load_copy", load.copies())?;
    Ok(d)
}

/// The step of the library's sample of `n` documents for their mean feature count (rows
/// `0, step, 2·step, …`).
#[pyfunction]
pub fn feature_sample_step(n: usize) -> usize {
    simlsh::text::feature_sample_step(n)
}

/// The mean number of weighted features of `docs` by `tokenizer` (fitted), over the rows the
/// library samples (all of `docs` when they are that sample already, as
/// `feature_sample_step(len(docs)) == 1`).
#[pyfunction]
pub fn mean_features(
    py: Python<'_>,
    tokenizer: &crate::text::PyTokenizer,
    docs: Vec<String>,
) -> PyResult<f64> {
    let tok = tokenizer.fitted()?;
    Ok(py.detach(|| simlsh::text::mean_features(tok, &docs)))
}
