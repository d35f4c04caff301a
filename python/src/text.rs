//! The text front-end: tokenizer and IDF table.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use simlsh::text::{Idf, Mode, StopWords, Tokenizer, Weighting};

use crate::errors::{IntoPy, value_error};
use crate::signer::contiguous;
use crate::threads::Threads;

/// A tokenizer (documents to weighted features).
#[pyclass(name = "Tokenizer", module = "simlsh._simlsh", frozen)]
pub struct PyTokenizer {
    pub inner: Tokenizer,
}

/// A table of document frequencies.
#[pyclass(name = "Idf", module = "simlsh._simlsh", frozen)]
pub struct PyIdf {
    pub inner: Arc<Idf>,
}

#[pymethods]
impl PyTokenizer {
    /// `mode`: words, cjk, auto or chars; `stop_words`: None, "english" or a list of words;
    /// `weighting`: binary, tf or tfidf (tfidf needs `idf`).
    #[new]
    #[pyo3(signature = (mode = "words", ngram = 1, lowercase = true, keep_punctuation = false,
        stop_words = None, hmm = true, weighting = "tf", idf = None, top_k = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        mode: &str,
        ngram: usize,
        lowercase: bool,
        keep_punctuation: bool,
        stop_words: Option<&Bound<'_, PyAny>>,
        hmm: bool,
        weighting: &str,
        idf: Option<&PyIdf>,
        top_k: Option<usize>,
    ) -> PyResult<Self> {
        let mode: Mode = mode.parse().py()?;
        let stop = match stop_words {
            None => StopWords::none(),
            Some(s) => match s.extract::<String>() {
                Ok(name) if name == "english" => StopWords::english(),
                Ok(name) => {
                    return Err(value_error(format!(
                        "invalid parameter `stop_words`: `{name}` is not a built-in list (english); give a list of words"
                    )));
                }
                Err(_) => StopWords::from_words(s.extract::<Vec<String>>()?),
            },
        };
        let b = Tokenizer::builder()
            .mode(mode)
            .ngram(ngram)
            .lowercase(lowercase)
            .keep_punctuation(keep_punctuation)
            .stop_words(stop)
            .hmm(hmm)
            .top_k(top_k);
        let b = match (weighting, idf) {
            ("binary", None) => b.weighting(Weighting::Binary),
            ("tf", None) => b.weighting(Weighting::Tf),
            ("tfidf", Some(idf)) => b.weighting(Weighting::TfIdf(idf.inner.clone())),
            ("tfidf", None) => {
                return Err(value_error(
                    "invalid parameter `idf`: weighting `tfidf` needs an IDF table (Idf.fit)",
                ));
            }
            ("binary" | "tf", Some(_)) => {
                return Err(value_error(format!(
                    "invalid parameter `idf`: an IDF table is used only with weighting `tfidf`, not `{weighting}`"
                )));
            }
            _ => {
                return Err(value_error(format!(
                    "invalid parameter `weighting`: unknown weighting `{weighting}` (binary, tf, tfidf)"
                )));
            }
        };
        Ok(PyTokenizer {
            inner: b.build().py()?,
        })
    }

    /// The features of `text` before weighting, in document order, repeats included.
    fn tokens(&self, text: &str) -> Vec<String> {
        self.inner.tokens(text)
    }

    /// The weighted distinct features of `text`: `(tokens, weights)`.
    fn features(&self, text: &str) -> (Vec<String>, Vec<f32>) {
        let f = self.inner.features(text);
        (f.tokens, f.weights)
    }

    /// The settings that determine the features, as one line (recorded in IDF tables).
    fn config(&self) -> String {
        self.inner.config()
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
        let t = Threads::new(threads)?;
        let tok = &tokenizer.inner;
        let idf = t.run(py, || Idf::fit(tok, docs.iter()));
        Ok(PyIdf {
            inner: Arc::new(idf),
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
