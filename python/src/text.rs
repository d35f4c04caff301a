//! The text front-end: tokenizer and IDF table.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use simlsh::text::{Idf, Mode, StopWords, Tokenizer, TokenizerSpec, Weighting, WeightingKind};

use crate::arrays::contiguous;
use crate::errors::{IntoPy, value_error};
use crate::threads::Threads;

/// A tokenizer (documents to weighted features): the library's spec and, once its weights are
/// known (TF-IDF fitted or given, or another weighting), the tokenizer itself.
#[pyclass(name = "Tokenizer", module = "simlsh._simlsh", frozen)]
pub struct PyTokenizer {
    pub spec: TokenizerSpec,
    /// `None` for TF-IDF weights without a table yet.
    pub inner: Option<Tokenizer>,
}

/// A table of document frequencies.
#[pyclass(name = "Idf", module = "simlsh._simlsh", frozen)]
pub struct PyIdf {
    pub inner: Arc<Idf>,
}

impl PyTokenizer {
    fn from_spec(spec: TokenizerSpec, idf: Option<Arc<Idf>>) -> PyResult<Self> {
        let inner = match (spec.needs_idf(), idf) {
            (true, None) => {
                // Check the options now; the weights wait for the table.
                spec.check().py()?;
                None
            }
            (_, idf) => Some(spec.build(idf).py()?),
        };
        Ok(PyTokenizer { spec, inner })
    }

    /// The tokenizer, which must know its weights.
    pub fn fitted(&self) -> PyResult<&Tokenizer> {
        self.inner.as_ref().ok_or_else(|| {
            value_error(
                "this tokenizer's TF-IDF weights need an IDF table: fit it on the corpus \
                 (Tokenizer.fit(docs)) or give idf=",
            )
        })
    }

    /// The tokenizer for signing `docs`: this one, or, for TF-IDF weights without a table,
    /// one whose table is fitted on `docs` (as the command line fits on its input).
    pub fn for_docs<T: AsRef<str> + Sync>(
        &self,
        py: Python<'_>,
        docs: &[T],
        t: &Threads,
    ) -> PyResult<Tokenizer> {
        match &self.inner {
            Some(tok) => Ok(tok.clone()),
            None => t.run(py, || self.spec.fit(docs)).py(),
        }
    }
}

#[pymethods]
impl PyTokenizer {
    /// The library's `TokenizerSpec` defaults with these options changed: `mode` words, cjk,
    /// auto or chars; `stop_words` "english", "none" or a list of words; `weighting` binary,
    /// tf, tfidf or jieba; `idf` a fitted table for tfidf.
    #[new]
    #[pyo3(signature = (mode = None, ngram = None, lowercase = None, keep_punctuation = None,
        stop_words = None, hmm = None, weighting = None, idf = None, top_k = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        mode: Option<&str>,
        ngram: Option<usize>,
        lowercase: Option<bool>,
        keep_punctuation: Option<bool>,
        stop_words: Option<&Bound<'_, PyAny>>,
        hmm: Option<bool>,
        weighting: Option<&str>,
        idf: Option<&PyIdf>,
        top_k: Option<usize>,
    ) -> PyResult<Self> {
        let mut spec = TokenizerSpec::default();
        if let Some(m) = mode {
            spec.mode = Some(m.parse::<Mode>().py()?);
        }
        if let Some(n) = ngram {
            spec.ngram = n;
        }
        if let Some(b) = lowercase {
            spec.lowercase = b;
        }
        if let Some(b) = keep_punctuation {
            spec.keep_punctuation = b;
        }
        if let Some(s) = stop_words {
            spec.stop_words = match s.extract::<String>() {
                Ok(name) => StopWords::named(&name).py()?,
                Err(_) => StopWords::from_words(s.extract::<Vec<String>>()?),
            };
        }
        if let Some(b) = hmm {
            spec.hmm = b;
        }
        spec.top_k = top_k;
        match weighting {
            Some(w) => spec.weighting = w.parse::<WeightingKind>().py()?,
            // A table given without a weighting means TF-IDF, the default anyway.
            None if idf.is_some() => spec.weighting = WeightingKind::TfIdf,
            None => {}
        }
        Self::from_spec(spec, idf.map(|i| i.inner.clone()))
    }

    /// The options as the library's text form (`auto`, `words:ngram=2,weighting=tf`).
    #[getter]
    fn spec(&self) -> String {
        self.spec.to_string()
    }

    /// The options as constructor arguments: `mode`, `ngram`, `lowercase`,
    /// `keep_punctuation`, `stop_words` ("english", "none" or the list), `hmm`, `weighting`,
    /// `top_k` (the resolved values, defaults included).
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let s = &self.spec;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("mode", s.mode().name())?;
        d.set_item("ngram", s.ngram)?;
        d.set_item("lowercase", s.lowercase)?;
        d.set_item("keep_punctuation", s.keep_punctuation)?;
        match s.stop_words.name() {
            Some(name) => d.set_item("stop_words", name)?,
            None => d.set_item("stop_words", s.stop_words.words())?,
        }
        d.set_item("hmm", s.hmm)?;
        d.set_item("weighting", s.weighting.name())?;
        d.set_item("top_k", s.top_k)?;
        Ok(d)
    }

    /// True when the tokenizer knows its weights (a TF-IDF table fitted or given, or another
    /// weighting).
    #[getter]
    fn is_fitted(&self) -> bool {
        self.inner.is_some()
    }

    /// The IDF table of TF-IDF weights, once fitted or given.
    #[getter]
    fn idf(&self) -> Option<PyIdf> {
        match self.inner.as_ref().map(Tokenizer::weighting) {
            Some(Weighting::TfIdf(idf)) => Some(PyIdf { inner: idf.clone() }),
            _ => None,
        }
    }

    /// This tokenizer with TF-IDF weights fitted on `docs` (unchanged for other weightings).
    #[pyo3(signature = (docs, threads = None))]
    fn fit(&self, py: Python<'_>, docs: Vec<String>, threads: Option<i64>) -> PyResult<Self> {
        let t = Threads::new(threads)?;
        let tok = t.run(py, || self.spec.fit(&docs)).py()?;
        Ok(PyTokenizer {
            spec: self.spec.clone(),
            inner: Some(tok),
        })
    }

    /// The features of `text` before weighting, in document order, repeats included.
    fn tokens(&self, text: &str) -> PyResult<Vec<String>> {
        Ok(match &self.inner {
            Some(t) => t.tokens(text),
            None => self.spec.counting().py()?.tokens(text),
        })
    }

    /// The weighted distinct features of `text`: `(tokens, weights)`.
    fn features(&self, text: &str) -> PyResult<(Vec<String>, Vec<f32>)> {
        let f = self.fitted()?.features(text);
        Ok((f.tokens, f.weights))
    }

    /// The weighted features of `docs` as a sparse matrix for exact cosines: `(indptr,
    /// indices, data, keys)`, one row per document, column `c` the feature whose 64-bit key is
    /// `keys[c]` (keys sorted); `float32` weights as the verified join computes them.
    #[pyo3(signature = (docs, threads = None))]
    #[allow(clippy::type_complexity)]
    fn transform<'py>(
        &self,
        py: Python<'py>,
        docs: Vec<String>,
        threads: Option<i64>,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<f32>>,
        Bound<'py, PyArray1<u64>>,
    )> {
        let t = Threads::new(threads)?;
        let tok = self.fitted()?;
        let (rows, (keys, cols)) = t.run(py, || {
            let rows = tok.feature_rows(&docs);
            let cols = rows.columns();
            (rows, cols)
        });
        let (indptr, _, data) = rows.into_parts();
        let as_i64 = |v: Vec<usize>| -> Vec<i64> { v.into_iter().map(|x| x as i64).collect() };
        Ok((
            as_i64(indptr).into_pyarray(py),
            as_i64(cols).into_pyarray(py),
            data.into_pyarray(py),
            keys.into_pyarray(py),
        ))
    }

    /// The settings that determine the features, as one line (recorded in IDF tables).
    fn config(&self) -> PyResult<String> {
        Ok(self.spec.counting().py()?.config())
    }
}

impl PyIdf {
    fn fit_docs<T: AsRef<str> + Sync>(
        py: Python<'_>,
        tokenizer: &PyTokenizer,
        docs: &[T],
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let t = Threads::new(threads)?;
        let tok = tokenizer.spec.counting().py()?;
        let idf = t.run(py, || Idf::fit(&tok, docs.iter().map(AsRef::as_ref)));
        Ok(PyIdf {
            inner: Arc::new(idf),
        })
    }
}

#[pymethods]
impl PyIdf {
    /// Fits document frequencies on `docs` tokenised by `tokenizer`.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, docs, threads = None))]
    fn fit(
        py: Python<'_>,
        tokenizer: &PyTokenizer,
        docs: Vec<String>,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        PyIdf::fit_docs(py, tokenizer, &docs, threads)
    }

    /// Fits document frequencies on an Arrow string column given by its buffers (`offsets`,
    /// `int32` or `int64`, into the UTF-8 `data`), tokenised by `tokenizer`.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, offsets, data, threads = None))]
    fn fit_arrow<'py>(
        py: Python<'py>,
        tokenizer: &PyTokenizer,
        offsets: &Bound<'py, PyAny>,
        data: PyReadonlyArray1<'py, u8>,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let docs = crate::partition::strings(offsets, contiguous(&data, "data")?)?;
        PyIdf::fit_docs(py, tokenizer, &docs, threads)
    }

    /// One table of several fitted on parts of a corpus (the library's `Idf::merge`).
    #[staticmethod]
    fn merge(py: Python<'_>, tables: Vec<PyRef<'_, PyIdf>>) -> PyResult<Self> {
        let owned: Vec<Idf> = tables.iter().map(|t| (*t.inner).clone()).collect();
        Ok(PyIdf {
            inner: Arc::new(py.detach(|| Idf::merge(&owned)).py()?),
        })
    }

    /// A table from its parts (see `parts`).
    #[staticmethod]
    fn from_parts(
        docs: u64,
        keys: PyReadonlyArray1<'_, u64>,
        dfs: PyReadonlyArray1<'_, u32>,
        config: String,
    ) -> PyResult<Self> {
        let (k, d) = (contiguous(&keys, "keys")?, contiguous(&dfs, "dfs")?);
        if k.len() != d.len() {
            return Err(value_error("keys and dfs differ in length"));
        }
        let entries = k.iter().copied().zip(d.iter().copied()).collect();
        Ok(PyIdf {
            inner: Arc::new(Idf::from_parts(docs, entries, config).py()?),
        })
    }

    /// `(docs, keys, dfs, config)`: the table's parts, for pickling.
    fn parts<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        u64,
        Bound<'py, PyArray1<u64>>,
        Bound<'py, PyArray1<u32>>,
        String,
    ) {
        let e = self.inner.entries();
        let keys: Vec<u64> = e.iter().map(|x| x.0).collect();
        let dfs: Vec<u32> = e.iter().map(|x| x.1).collect();
        (
            self.inner.docs(),
            keys.into_pyarray(py),
            dfs.into_pyarray(py),
            self.inner.config().to_string(),
        )
    }

    /// Loads a table saved by `save` (or by the command line's `--save-idf`).
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Self> {
        Ok(PyIdf {
            inner: Arc::new(Idf::load(&path).py()?),
        })
    }

    /// Saves the table (text format), atomically.
    fn save(&self, path: PathBuf) -> PyResult<()> {
        self.inner.save(&path).py()
    }

    /// Number of documents counted.
    #[getter]
    fn docs(&self) -> u64 {
        self.inner.docs()
    }

    /// The tokenizer configuration it was fitted with.
    #[getter]
    fn config(&self) -> String {
        self.inner.config().to_string()
    }

    /// Number of distinct features.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Document frequency of `token`.
    fn df(&self, token: &str) -> u32 {
        self.inner.df(token)
    }

    /// `ln((1 + N) / (1 + df)) + 1` for `token`.
    fn idf(&self, token: &str) -> f64 {
        self.inner.idf(token)
    }
}
