//! The durable store (`simlsh.Store`): a mapping onto `simlsh::store`. Items are signed and
//! checked on rayon's threads and every call runs off the GIL.

use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use simlsh::store::{
    Content, Durability, Item, Match, Op, OpenOptions, Outcome, Payload, Prepared, Store, Within,
};

use crate::errors::{IntoPy, value_error};
use crate::text::PyTokenizer;

/// A match: `(id, distance, cosine or None)`.
type PyMatch = (u64, u32, Option<f64>);

fn matches(m: &[Match]) -> Vec<PyMatch> {
    m.iter().map(|m| (m.id, m.distance, m.cosine)).collect()
}

/// A store of codes, vectors or documents under `u64` ids.
#[pyclass(name = "Store", module = "simlsh._simlsh", frozen)]
pub struct PyStore {
    inner: Store,
}

/// The items of a call, as owned inputs (one of the three).
enum Items {
    Codes(Vec<u64>, usize),
    Vectors(Vec<f32>, usize),
    Texts(Vec<String>),
}

impl Items {
    fn from_args(
        codes: Option<PyReadonlyArray2<'_, u64>>,
        vectors: Option<PyReadonlyArray2<'_, f32>>,
        texts: Option<Vec<String>>,
    ) -> PyResult<Items> {
        match (codes, vectors, texts) {
            (Some(c), None, None) => {
                let a = c.as_array();
                let w = a.ncols();
                Ok(Items::Codes(a.iter().copied().collect(), w))
            }
            (None, Some(v), None) => {
                let a = v.as_array();
                let d = a.ncols();
                Ok(Items::Vectors(a.iter().copied().collect(), d))
            }
            (None, None, Some(t)) => Ok(Items::Texts(t)),
            _ => Err(value_error(
                "give exactly one of `codes`, `vectors` and `texts`",
            )),
        }
    }

    fn len(&self) -> usize {
        match self {
            Items::Codes(c, w) => c.len().checked_div(*w).unwrap_or(0),
            Items::Vectors(v, d) => v.len().checked_div(*d).unwrap_or(0),
            Items::Texts(t) => t.len(),
        }
    }

    /// Signs and checks every item in parallel (`query`: codes accepted by every store).
    fn prepare(&self, store: &Store, query: bool) -> simlsh::Result<Vec<Prepared>> {
        let one = |item: Item<'_>| {
            if query {
                store.prepare_query(item)
            } else {
                store.prepare(item)
            }
        };
        match self {
            Items::Codes(c, w) if *w > 0 => c.par_chunks(*w).map(|x| one(Item::Code(x))).collect(),
            Items::Vectors(v, d) if *d > 0 => {
                v.par_chunks(*d).map(|x| one(Item::Vector(x))).collect()
            }
            Items::Texts(t) => t.par_iter().map(|x| one(Item::Text(x))).collect(),
            _ => Ok(Vec::new()),
        }
    }
}

impl PyStore {
    /// Applies `op` to each id and its item (signed and checked in parallel), in one group.
    fn apply_items(
        &self,
        py: Python<'_>,
        ids: PyReadonlyArray1<'_, u64>,
        items: Items,
        op: impl Fn(u64, Prepared) -> Op + Send + Sync,
    ) -> PyResult<Vec<Outcome>> {
        let ids = ids.as_array().to_vec();
        if ids.len() != items.len() {
            return Err(value_error(format!(
                "{} ids for {} items: give one id per item",
                ids.len(),
                items.len()
            )));
        }
        py.detach(|| {
            let p = items.prepare(&self.inner, false)?;
            let ops = ids.iter().zip(p).map(|(&id, item)| op(id, item));
            self.inner.apply(ops.collect())
        })
        .py()
    }
}

#[pymethods]
impl PyStore {
    /// Creates a store in the empty (or new) directory `path` and opens it.
    #[staticmethod]
    #[pyo3(signature = (path, content = None, bits = None, dim = None, tokenizer = None,
        index = None, signer = None, seed = None, recall = None, delta_limit = None))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        path: std::path::PathBuf,
        content: Option<&str>,
        bits: Option<usize>,
        dim: Option<usize>,
        tokenizer: Option<&PyTokenizer>,
        index: Option<&str>,
        signer: Option<&str>,
        seed: Option<u64>,
        recall: Option<f64>,
        delta_limit: Option<usize>,
    ) -> PyResult<Self> {
        let mut b = Store::builder();
        if let Some(s) = seed {
            b = b.seed(s);
        }
        if let Some(c) = content {
            b = b.content(Content::from_name(c, dim).py()?);
        }
        if let Some(t) = tokenizer {
            let tok = t.inner.clone().ok_or_else(|| {
                value_error(
                    "invalid parameter `tokenizer`: its TF-IDF weights have no table yet; a \
                     store records its text model when created: fit the tokenizer first \
                     (Tokenizer.fit) or choose weighting='tf'",
                )
            })?;
            b = b.tokenizer(tok);
        }
        if let Some(f) = bits {
            b = b.bits(f);
        }
        if let Some(i) = index {
            b = b.index(i.parse().py()?);
        }
        if let Some(s) = signer {
            b = b.signer(s.parse().py()?);
        }
        if let Some(r) = recall {
            b = b.recall(r);
        }
        if let Some(n) = delta_limit {
            b = b.delta_limit(n);
        }
        let store = py.detach(|| b.create(&path)).py()?;
        Ok(PyStore { inner: store })
    }

    /// Opens the store at `path`: `durability` sync (the default) or os; `read_only` opens
    /// its last checkpoint without the lock.
    #[staticmethod]
    #[pyo3(signature = (path, durability = None, read_only = false, verify = None))]
    fn open(
        py: Python<'_>,
        path: std::path::PathBuf,
        durability: Option<&str>,
        read_only: bool,
        verify: Option<bool>,
    ) -> PyResult<Self> {
        let o = OpenOptions::new();
        let d: Durability = durability.map_or(Ok(o.durability_of()), str::parse).py()?;
        let verify = verify.unwrap_or(o.verifies());
        let store = py
            .detach(|| {
                if read_only {
                    Store::open_read_only(&path)
                } else {
                    OpenOptions::new().durability(d).verify(verify).open(&path)
                }
            })
            .py()?;
        Ok(PyStore { inner: store })
    }

    /// Inserts (or replaces) items under `ids`; per item, whether it replaced one.
    #[pyo3(signature = (ids, codes = None, vectors = None, texts = None))]
    fn insert(
        &self,
        py: Python<'_>,
        ids: PyReadonlyArray1<'_, u64>,
        codes: Option<PyReadonlyArray2<'_, u64>>,
        vectors: Option<PyReadonlyArray2<'_, f32>>,
        texts: Option<Vec<String>>,
    ) -> PyResult<Vec<bool>> {
        let items = Items::from_args(codes, vectors, texts)?;
        let out = self.apply_items(py, ids, items, |id, item| Op::Insert { id, item })?;
        Ok(out
            .iter()
            .map(|o| matches!(o, Outcome::Inserted { replaced: true }))
            .collect())
    }

    /// Removes `ids`; per id, whether it was stored.
    fn remove(&self, py: Python<'_>, ids: PyReadonlyArray1<'_, u64>) -> PyResult<Vec<bool>> {
        let store = &self.inner;
        let ops = ids.as_array().iter().map(|&id| Op::Remove { id }).collect();
        let out = py.detach(|| store.apply(ops)).py()?;
        Ok(out
            .iter()
            .map(|o| matches!(o, Outcome::Removed { found: true }))
            .collect())
    }

    /// Check-and-insert: per item, `(inserted, matches)`.
    #[pyo3(signature = (ids, codes = None, vectors = None, texts = None, radius = None,
        cosine = None, k = None))]
    #[allow(clippy::too_many_arguments)]
    fn check_insert(
        &self,
        py: Python<'_>,
        ids: PyReadonlyArray1<'_, u64>,
        codes: Option<PyReadonlyArray2<'_, u64>>,
        vectors: Option<PyReadonlyArray2<'_, f32>>,
        texts: Option<Vec<String>>,
        radius: Option<u32>,
        cosine: Option<f64>,
        k: Option<usize>,
    ) -> PyResult<Vec<(bool, Vec<PyMatch>)>> {
        let within = Within::one_of(radius, cosine, k).py()?;
        let items = Items::from_args(codes, vectors, texts)?;
        let out = self.apply_items(py, ids, items, |id, item| Op::InsertIfNew {
            id,
            item,
            within,
        })?;
        Ok(out
            .iter()
            .map(|o| match o {
                Outcome::Checked(c) => (c.inserted, matches(&c.matches)),
                _ => (false, Vec::new()),
            })
            .collect())
    }

    /// Per query, its matches.
    #[pyo3(signature = (codes = None, vectors = None, texts = None, radius = None,
        cosine = None, k = None))]
    #[allow(clippy::too_many_arguments)]
    fn query(
        &self,
        py: Python<'_>,
        codes: Option<PyReadonlyArray2<'_, u64>>,
        vectors: Option<PyReadonlyArray2<'_, f32>>,
        texts: Option<Vec<String>>,
        radius: Option<u32>,
        cosine: Option<f64>,
        k: Option<usize>,
    ) -> PyResult<Vec<Vec<PyMatch>>> {
        let (store, w) = (&self.inner, Within::one_of(radius, cosine, k).py()?);
        let items = Items::from_args(codes, vectors, texts)?;
        let out = py
            .detach(|| {
                let p = items.prepare(store, true)?;
                store.query_batch(&p, w)
            })
            .py()?;
        Ok(out.iter().map(|m| matches(m)).collect())
    }

    /// The item under `id`: `(code words, payload)` where the payload is None, a list of
    /// floats (a vector store) or `(keys, weights)` (a text store); None when absent.
    #[allow(clippy::type_complexity)]
    fn get(&self, id: u64) -> PyResult<Option<(Vec<u64>, Py<PyAny>)>> {
        let store = &self.inner;
        Python::attach(|py| {
            Ok(store.get(id).map(|r| {
                let pay = match r.payload {
                    Payload::None => py.None(),
                    Payload::Dense(v) => v
                        .into_pyobject(py)
                        .map(|o| o.into_any().unbind())
                        .unwrap_or(py.None()),
                    Payload::Sparse(k, w) => (k, w)
                        .into_pyobject(py)
                        .map(|o| o.into_any().unbind())
                        .unwrap_or(py.None()),
                };
                (r.code, pay)
            }))
        })
    }

    /// Figures of the store, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("items", s.items)?;
        d.set_item("bits", s.bits)?;
        d.set_item("content", s.content)?;
        d.set_item("segments", s.segments)?;
        d.set_item("delta", s.delta)?;
        d.set_item("dead", s.dead)?;
        d.set_item("lsn", s.lsn)?;
        d.set_item("checkpoint_lsn", s.checkpoint_lsn)?;
        d.set_item("log_bytes", s.log_bytes)?;
        d.set_item("heap_bytes", s.heap_bytes)?;
        d.set_item("mapped_bytes", s.mapped_bytes)?;
        d.set_item("writes", s.writes)?;
        d.set_item("merges", s.merges)?;
        d.set_item("checkpoints", s.checkpoints)?;
        d.set_item("read_only", s.read_only)?;
        Ok(d)
    }

    /// Checkpoints and stops the writer: later writes raise; queries still answer.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = &self.inner;
        py.detach(|| store.stop()).py()
    }

    /// Writes a checkpoint now.
    fn checkpoint(&self, py: Python<'_>) -> PyResult<()> {
        let store = &self.inner;
        py.detach(|| store.checkpoint()).py()
    }

    /// Live items.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.inner.len() as usize)
    }

    /// Code width.
    #[getter]
    fn bits(&self) -> PyResult<usize> {
        Ok(self.inner.bits())
    }

    /// `codes`, `vectors` or `text`.
    #[getter]
    fn content(&self) -> PyResult<&'static str> {
        Ok(self.inner.content().name())
    }
}
