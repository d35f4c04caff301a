//! Indexes: any kind of the library behind one class, FAISS-shaped results.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use simlsh::Error;
use simlsh::fs::LockGuard;
use simlsh::index::{Featureless, HammingIndex, Id, IndexSpec, NextIds};
use simlsh::persist::LoadOptions;

use crate::arrays::{Knn, KnnOut, codes, contiguous, ids_u32};
use crate::errors::{IntoPy, to_py, value_error};
use crate::join::{FeaturelessArg, featureless_arg};
use crate::text::PyTokenizer;
use crate::threads::Threads;

/// A recorded signer: its spec's text form, width, seed and dimension.
type SignerParts = (String, usize, u64, Option<u64>);

/// An index of any kind, behind a lock: searches and saves share it, `add` and `remove` hold
/// it alone for their whole call, so that an add is seen (and saved) whole or not at all.
#[pyclass(name = "Index", module = "simlsh._simlsh", frozen)]
pub struct PyIndex {
    inner: RwLock<Box<dyn HammingIndex>>,
    spec: IndexSpec,
    /// The default ids of the next add (the library's rule; changed only under the index's
    /// write lock).
    next_id: Mutex<NextIds>,
    /// The featureless-row rule of the stored codes, found on the first search after a change.
    featureless: Mutex<Option<Arc<Featureless>>>,
}

impl PyIndex {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Box<dyn HammingIndex>> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Box<dyn HammingIndex>> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn wrap(idx: Box<dyn HammingIndex>, spec: IndexSpec) -> Self {
        PyIndex {
            inner: RwLock::new(idx),
            spec,
            next_id: Mutex::new(NextIds::default()),
            featureless: Mutex::new(None),
        }
    }

    /// The featureless-row rule of the stored codes and the queries named featureless, from
    /// Python's `featureless`: none (codes as codes), `"zero"` (the library's rule), or the
    /// row numbers of the queries without features (under the rule), checked for `n` queries.
    fn rule(&self, f: Option<FeaturelessArg>, n: usize) -> PyResult<(Arc<Featureless>, Vec<Id>)> {
        let Some(rows) = featureless_arg(f)?.map(Option::unwrap_or_default) else {
            return Ok((Arc::new(Featureless::none()), Vec::new()));
        };
        // The index's lock first, as `add` and `remove` take them.
        let idx = self.read();
        let mut cached = self.featureless.lock().unwrap_or_else(|p| p.into_inner());
        if cached.is_none() {
            *cached = Some(Arc::new(Featureless::of(&**idx).py()?));
        }
        let rule = cached.clone().expect("set above");
        rule.check_rows(n, &rows).py()?;
        Ok((rule, rows))
    }

    /// Forgets the featureless rule (the stored codes changed), under the write lock.
    fn changed(&self) {
        *self.featureless.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// The rows of `rows` (increasing) in the part `r` of the queries, numbered within it.
fn part(rows: &[u32], r: &std::ops::Range<usize>) -> Vec<u32> {
    let at = |x: usize| rows.partition_point(|&row| (row as usize) < x);
    rows[at(r.start)..at(r.end)]
        .iter()
        .map(|&row| row - r.start as u32)
        .collect()
}

#[pymethods]
impl PyIndex {
    /// An empty index of `bits`-bit codes from an index specification (`linear`, `manku:k=3`,
    /// `mih`, `permutation:q=64,beam=128`, …).
    /// `None` is the library's default specification.
    #[new]
    #[pyo3(signature = (spec, bits))]
    fn new(spec: Option<&str>, bits: usize) -> PyResult<Self> {
        let spec: IndexSpec = spec.map_or(Ok(IndexSpec::default()), str::parse).py()?;
        simlsh::signature::check_bits(bits).py()?;
        let idx = spec.empty(bits).py()?;
        Ok(Self::wrap(idx, spec))
    }

    /// Builds the index of `codes` (ids `0..N`) from a specification, in one pass (faster than
    /// inserting one code at a time).
    #[staticmethod]
    #[pyo3(signature = (spec, codes, bits, threads = None))]
    fn build(
        py: Python<'_>,
        spec: &str,
        codes: PyReadonlyArray2<'_, u64>,
        bits: usize,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let spec: IndexSpec = spec.parse().py()?;
        let t = Threads::new(threads)?;
        let m = self::codes(&codes, bits)?;
        if u32::try_from(m.len()).is_err() {
            return Err(value_error("more than 2^32 codes"));
        }
        let idx = t.run(py, || spec.build(&m)).py()?;
        Ok(Self::wrap(idx, spec))
    }

    /// Loads an index file (any kind, as written by `save` or the command line),
    /// memory-mapped, or read into memory with `copy`; verified whole first with `verify`
    /// (`None`: the library's `LoadOptions::default()`).
    #[staticmethod]
    #[pyo3(signature = (path, verify = None, copy = None))]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        verify: Option<bool>,
        copy: Option<bool>,
    ) -> PyResult<Self> {
        let d = LoadOptions::default();
        let opts = d
            .verify(verify.unwrap_or(d.verifies()))
            .copy(copy.unwrap_or(d.copies()));
        let idx = py
            .detach(|| simlsh::persist::load_index_with(&path, &opts))
            .py()?;
        let spec = idx.spec();
        Ok(Self::wrap(idx, spec))
    }

    /// False for an index loaded from a file not verified yet (its checksum and contents are
    /// verified before it is first saved).
    #[getter]
    fn verified(&self) -> bool {
        self.read().is_verified()
    }

    /// Checks an index file whole: its checksum and every invariant of the index it holds
    /// (`O(file size)`; loading checks the header, parameters and section lengths only).
    #[staticmethod]
    fn verify(py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| simlsh::persist::verify_index(&path)).py()
    }

    /// Saves the index in the library's file format, atomically.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| simlsh::persist::save_index(self.read().as_ref(), &path))
            .py()
    }

    /// The index file's bytes (for pickling): the bytes `save` writes, made in memory.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let r = py.detach(|| -> simlsh::Result<Vec<u8>> {
            let mut out = Vec::new();
            simlsh::persist::write_index(self.read().as_ref(), &mut out)?;
            Ok(out)
        });
        Ok(PyBytes::new(py, &r.py()?))
    }

    /// An index from `to_bytes` output, read in memory.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let idx = py
            .detach(|| {
                // Bytes from a pickle are checked whole before use; the index keeps a copy.
                let bytes = simlsh::storage::Bytes::copied(data);
                simlsh::persist::read_index_with(bytes, &LoadOptions::default().verify(true))
            })
            .py()?;
        let spec = idx.spec();
        Ok(Self::wrap(idx, spec))
    }

    /// Stores `codes` under `ids` (`int64` values in `0..2^32`, one per row; `None`: the ids
    /// following the largest ever stored, `0, 1, ...` for a new index, which is then built in
    /// one pass). All or nothing, under the index's lock for the whole call: a failing add (an id
    /// already stored, a malformed code) stores none of its codes, and concurrent searches
    /// and saves see the index before or after the add, never half of it.
    #[pyo3(signature = (codes, ids = None, threads = None))]
    fn add(
        &self,
        py: Python<'_>,
        codes: PyReadonlyArray2<'_, u64>,
        ids: Option<PyReadonlyArray1<'_, i64>>,
        threads: Option<i64>,
    ) -> PyResult<()> {
        let t = Threads::new(threads)?;
        let bits = self.read().bits();
        let m = self::codes(&codes, bits)?;
        let n = m.len();
        if u32::try_from(n).is_err() {
            return Err(value_error("more than 2^32 codes"));
        }
        let ids = match &ids {
            Some(ids) => {
                let ids = ids_u32(contiguous(ids, "ids")?)?;
                if ids.len() != n {
                    return Err(to_py(Error::lengths("codes vs ids", n, ids.len())));
                }
                Some(ids)
            }
            None => None,
        };
        let spec = &self.spec;
        t.run(py, || -> simlsh::Result<()> {
            let mut idx = self.write();
            self.changed();
            let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
            let (default, ids) = match ids {
                Some(ids) => (false, ids),
                None => (true, next.ids(&**idx, n)?),
            };
            if default && idx.is_empty() && ids.first() == Some(&0) {
                // A new index of ids 0..n: built in one pass.
                let mut built = spec.build(&m)?;
                built.set_signer(idx.signer().cloned())?;
                *idx = built;
            } else {
                idx.insert_batch(&ids, m.as_slice())?;
            }
            next.stored(&ids);
            Ok(())
        })
        .py()
    }

    /// Removes `ids`; returns how many were stored.
    fn remove(&self, py: Python<'_>, ids: PyReadonlyArray1<'_, i64>) -> PyResult<usize> {
        let ids = ids_u32(contiguous(&ids, "ids")?)?;
        py.detach(|| {
            let mut idx = self.write();
            self.changed();
            idx.remove_batch(&ids)
        })
        .py()
    }

    /// The `k` nearest stored codes of each query: `(D, I)`, `(n, k)` arrays of distances
    /// (`int32`) and ids (`int64`), sorted by (distance, id); missing neighbours (fewer than
    /// `k` stored) have id -1 and distance 2^31 - 1. `featureless`: none (codes as codes),
    /// `"zero"` (the library's rule, [`Featureless`]: all-zero codes are no one's
    /// neighbours), or the rows of the queries without features, under that rule
    /// ([`Featureless::knn_batch_except`]).
    #[pyo3(signature = (queries, k, featureless = None, threads = None))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        queries: PyReadonlyArray2<'py, u64>,
        k: usize,
        featureless: Option<FeaturelessArg<'py>>,
        threads: Option<i64>,
    ) -> PyResult<Knn<'py>> {
        let t = Threads::new(threads)?;
        let (bits, chunk, len) = self.with(|i| (i.bits(), i.queries_per_chunk(), i.len()));
        let q = self::codes(&queries, bits)?;
        let (rule, named) = self.rule(featureless, q.len())?;
        // The arrays have FAISS's k columns, padded; the search asks for at most as many
        // neighbours as are stored, so a k far beyond them costs only the arrays (or a
        // MemoryError when they cannot be allocated).
        let mut out = KnnOut::new(q.len(), k, "search")?;
        t.chunked(py, q.len(), chunk, |r| {
            let rows = q.slice_rows(r.clone());
            let hits = rule
                .knn_batch_except(
                    &**self.read(),
                    rows.as_slice(),
                    k.min(len),
                    &part(&named, &r),
                )
                .py()?;
            out.put(r.start, &hits);
            Ok(())
        })?;
        Ok(out.into_py(py))
    }

    /// Every stored code within distance `radius` (inclusive) of each query, FAISS's
    /// `(lims, D, I)`: the hits of query `q` are `D[lims[q]:lims[q+1]]`,
    /// `I[lims[q]:lims[q+1]]`, sorted by (distance, id). `featureless` as in `search`.
    #[pyo3(signature = (queries, radius, featureless = None, threads = None))]
    #[allow(clippy::type_complexity)]
    fn range_search<'py>(
        &self,
        py: Python<'py>,
        queries: PyReadonlyArray2<'py, u64>,
        radius: u32,
        featureless: Option<FeaturelessArg<'py>>,
        threads: Option<i64>,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i32>>,
        Bound<'py, PyArray1<i64>>,
    )> {
        let t = Threads::new(threads)?;
        let (bits, chunk) = self.with(|i| (i.bits(), i.queries_per_chunk()));
        let q = self::codes(&queries, bits)?;
        let (rule, named) = self.rule(featureless, q.len())?;
        let mut lims = vec![0i64];
        let (mut d, mut ids) = (Vec::new(), Vec::new());
        t.chunked(py, q.len(), chunk, |r| {
            let part = part(&named, &r);
            let hits = rule
                .radius_batch_except(&**self.read(), q.slice_rows(r).as_slice(), radius, &part)
                .py()?;
            for h in hits.iter() {
                ids.extend(h.iter().map(|h| i64::from(h.id)));
                d.extend(h.iter().map(|h| h.distance as i32));
                lims.push(ids.len() as i64);
            }
            Ok(())
        })?;
        Ok((
            lims.into_pyarray(py),
            d.into_pyarray(py),
            ids.into_pyarray(py),
        ))
    }

    /// Number of stored codes.
    fn __len__(&self) -> usize {
        self.read().len()
    }

    /// Bytes of memory held (heap plus mapped data).
    fn bytes(&self) -> usize {
        self.read().bytes()
    }

    /// Signature width `f`.
    #[getter]
    fn bits(&self) -> usize {
        self.read().bits()
    }

    /// Kind: linear, manku, mih or permutation.
    #[getter]
    fn kind(&self) -> &'static str {
        self.read().kind()
    }

    /// The specification the index was created with (as given).
    #[getter]
    fn spec(&self) -> String {
        self.spec.to_string()
    }

    /// The specification of the index as built (a planned design written out).
    #[getter]
    fn built_spec(&self) -> String {
        self.read().spec().to_string()
    }

    /// Whether `search` is exact (false for permutation search).
    #[getter]
    fn exact_knn(&self) -> bool {
        self.read().exact_knn()
    }

    /// The signer recorded with the codes, `None` when unknown: `(spec, bits, seed, dim)`,
    /// `spec` in the library's text form (`super-bit:depth=32`). A `FormatError` when the
    /// record cannot rebuild it (a matrix not drawn from a seed).
    #[getter]
    fn signer_record(&self) -> PyResult<Option<SignerParts>> {
        let idx = self.read();
        let Some(rec) = idx.signer() else {
            return Ok(None);
        };
        let spec = rec.spec().py()?;
        Ok(Some((spec.to_string(), spec.bits, spec.seed, spec.dim)))
    }

    /// The tokenizer recorded with the codes of documents (its options, stop words and TF-IDF
    /// table embedded in the index), `None` for codes of vectors or of unknown origin.
    #[getter]
    fn tokenizer(&self) -> PyResult<Option<PyTokenizer>> {
        let idx = self.read();
        let Some(rec) = idx.signer() else {
            return Ok(None);
        };
        let (Some(spec), Some(tok)) = (rec.tokenizer_spec().py()?, rec.tokenizer().py()?) else {
            return Ok(None);
        };
        Ok(Some(PyTokenizer {
            spec,
            inner: Some(tok),
        }))
    }

    /// A graph index's search beam (`None` for other kinds).
    #[getter]
    fn ef(&self) -> Option<usize> {
        self.read().as_graph().map(simlsh::index::GraphIndex::ef)
    }

    /// Sets a graph index's search beam (a `ValueError` for other kinds, or 0).
    fn set_ef(&self, ef: usize) -> PyResult<()> {
        let mut idx = self.write();
        let kind = idx.kind();
        match idx.as_graph_mut() {
            Some(g) => g.set_ef(ef).py(),
            None => Err(value_error(format!(
                "ef is the search beam of a graph index, not of a {kind} index"
            ))),
        }
    }

    /// A graph index's check against the scan (`None` for other kinds): `mode` (`graph` or
    /// `scan`: how k-NN is answered), `reason`, `recall`, `distances`, `sample`, `nodes`.
    fn graph_check<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let idx = self.read();
        let Some(g) = idx.as_graph() else {
            return Ok(None);
        };
        let c = g.check();
        let d = PyDict::new(py);
        d.set_item("mode", g.mode().name())?;
        d.set_item("reason", g.describe_mode())?;
        d.set_item("recall", c.recall)?;
        d.set_item("distances", c.distances)?;
        d.set_item("sample", c.sample)?;
        d.set_item("nodes", c.nodes)?;
        Ok(Some(d))
    }
}

impl PyIndex {
    /// Runs `f` on the index, shared.
    pub fn with<T>(&self, f: impl FnOnce(&dyn HammingIndex) -> T) -> T {
        f(&**self.read())
    }
}

/// An exclusive advisory lock on an index file, the one `simlsh index add` and `index remove`
/// take (the file's own lock, `simlsh::fs::lock_exclusive`): held from before the file is read
/// until its new version is in place, so that read-modify-writes by Python and the command
/// line follow one another and none is lost. Released by `release()` or when collected.
#[pyclass(name = "FileLock", module = "simlsh._simlsh", frozen)]
pub struct PyFileLock {
    guard: Mutex<Option<LockGuard>>,
}

#[pymethods]
impl PyFileLock {
    /// Takes the lock of the existing file `path`, waiting (without the GIL) for other
    /// holders, or raising `BlockingIOError` when `blocking` is false and it is held.
    #[new]
    #[pyo3(signature = (path, blocking = true))]
    fn new(py: Python<'_>, path: PathBuf, blocking: bool) -> PyResult<Self> {
        let guard = if blocking {
            py.detach(|| simlsh::fs::lock_exclusive(&path)).py()?
        } else {
            match simlsh::fs::try_lock_exclusive(&path).py()? {
                Some(g) => g,
                None => {
                    return Err(pyo3::exceptions::PyBlockingIOError::new_err(format!(
                        "{}: locked by another run changing it",
                        path.display()
                    )));
                }
            }
        };
        Ok(PyFileLock {
            guard: Mutex::new(Some(guard)),
        })
    }

    /// Releases the lock (again: nothing).
    fn release(&self) {
        self.guard.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// Whether the lock is held.
    #[getter]
    fn locked(&self) -> bool {
        self.guard
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }
}
