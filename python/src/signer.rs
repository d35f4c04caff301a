//! Signers: every signer of the library, and signing of dense, sparse, token and text input.

use std::ops::Range;
use std::sync::Arc;

use ndarray::{Array2, ArrayView2, CowArray, Ix2, s};
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use simlsh::io::float::{F32Values, rows_to_f32};
use simlsh::signature::{check_bits, words_for};
use simlsh::signers::sparse::{CsrArrays, CsrIndex};
use simlsh::signers::{AnySigner, SignerKind, SignerSpec};
use simlsh::text::TokenBags;
use simlsh::{Error, SignatureMatrix, Signer};
use sprs::SpIndex;

use crate::arrays::contiguous;
use crate::errors::{IntoPy, to_py};
use crate::text::PyTokenizer;
use crate::threads::Threads;

/// Multiply-adds per chunk of rows (between two checks for Ctrl-C): a fraction of a second
/// on one core, and few enough chunks that their joins cost nothing.
const CHUNK_WORK: usize = 1 << 31;

/// Rows per chunk when a row costs `per_row` multiply-adds: a multiple of the library's
/// parallel blocks of 256 rows, at least one block.
fn sign_chunk(per_row: usize) -> usize {
    (CHUNK_WORK / per_row.max(1)).clamp(256, 1 << 20) / 256 * 256
}

/// Bytes of `f32` a chunk of converted `float64` input may take.
const CONVERT_BYTES: usize = 16 << 20;

/// Documents signed per chunk.
const TEXT_CHUNK: usize = 8_192;

/// The Python constructors' names of the spec keys they name otherwise: `(key, name)`
/// (`PooledSigner`'s `pool_size` is the `pool` of its spec).
const CONSTRUCTOR_NAMES: &[(&str, &str)] = &[("pool", "pool_size")];

/// A signer of the library (any kind), shared between threads.
#[pyclass(name = "Signer", module = "simlsh._simlsh", frozen)]
pub struct PySigner {
    pub inner: Arc<AnySigner>,
}

/// Output buffer of `n` signatures of `w` words, filled chunk by chunk.
struct Out {
    data: Vec<u64>,
    w: usize,
}

impl Out {
    fn new(n: usize, bits: usize) -> Self {
        let w = words_for(bits);
        Out {
            data: vec![0; n * w],
            w,
        }
    }

    /// Stores the signatures of rows `lo..`.
    fn put(&mut self, lo: usize, sigs: &SignatureMatrix) {
        let a = lo * self.w;
        self.data[a..a + sigs.as_slice().len()].copy_from_slice(sigs.as_slice());
    }

    fn into_py(self, py: Python<'_>) -> Bound<'_, PyArray2<u64>> {
        let n = self.data.len() / self.w;
        Array2::from_shape_vec((n, self.w), self.data)
            .expect("n × w words")
            .into_pyarray(py)
    }
}

/// Checks a dense input's width against the signer's dimension.
fn check_width(signer: &AnySigner, cols: usize) -> PyResult<()> {
    match signer.dim() {
        Some(d) if d != cols as u64 => Err(to_py(Error::DimensionMismatch {
            expected: d,
            got: cols as u64,
        })),
        _ => Ok(()),
    }
}

impl PySigner {
    fn bits(&self) -> usize {
        self.inner.bits()
    }

    /// Signs a dense matrix of any layout, in chunks of rows of at most `chunk_bytes` of
    /// `f32` (beyond what signing bounds) given to the signer by `f32s` (`float64` rows
    /// converted, numbered from the chunk's first row).
    fn dense<'py, T>(
        &self,
        py: Python<'py>,
        x: ArrayView2<'_, T>,
        t: &Threads,
        chunk_bytes: usize,
        f32s: impl Fn(ArrayView2<'_, T>, usize) -> simlsh::Result<CowArray<'_, f32, Ix2>> + Send + Sync,
    ) -> PyResult<Bound<'py, PyArray2<u64>>>
    where
        T: Sync,
    {
        check_width(&self.inner, x.ncols())?;
        let mut out = Out::new(x.nrows(), self.bits());
        let (signer, d) = (&*self.inner, x.ncols());
        let chunk =
            sign_chunk(d * self.bits()).min((chunk_bytes / (4 * d.max(1))).max(256) / 256 * 256);
        t.chunked(py, x.nrows(), chunk, |r: Range<usize>| {
            let rows = f32s(x.slice(s![r.clone(), ..]), r.start).py()?;
            let sigs = signer
                .sign_dense(&rows)
                .map_err(|e| to_py(e.offset_rows(r.start)))?;
            out.put(r.start, &sigs);
            Ok(())
        })?;
        Ok(out.into_py(py))
    }

    /// Signs a CSR matrix given by its arrays, in chunks of rows. `data` is converted to
    /// `f32` chunk by chunk when it is not already.
    fn csr<'py, I: CsrIndex, P: SpIndex + Sync, T: F32Values>(
        &self,
        py: Python<'py>,
        m: CsrArrays<'_, P, I, T>,
        t: &Threads,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let (rows, bits) = (m.rows(), self.bits());
        // Checks the width even without rows.
        m.sign_rows(&*self.inner, 0..0, &mut []).py()?;
        let mut out = Out::new(rows, bits);
        let w = out.w;
        let per_row = m.indices().len().div_ceil(rows.max(1)) * bits;
        t.chunked(py, rows, sign_chunk(per_row), |r: Range<usize>| {
            let dst = &mut out.data[r.start * w..r.end * w];
            m.sign_rows(&*self.inner, r, dst).py()
        })?;
        Ok(out.into_py(py))
    }

    /// Signs documents given as `&str`, in chunks, with a tokenizer.
    fn texts<'py>(
        &self,
        py: Python<'py>,
        docs: &[&str],
        tokenizer: &simlsh::text::Tokenizer,
        t: &Threads,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let mut out = Out::new(docs.len(), self.bits());
        let signer = &*self.inner;
        t.chunked(py, docs.len(), TEXT_CHUNK, |r: Range<usize>| {
            let sigs = tokenizer
                .sign_corpus(signer, &docs[r.clone()])
                .map_err(|e| to_py(e.offset_rows(r.start)))?;
            out.put(r.start, &sigs);
            Ok(())
        })?;
        Ok(out.into_py(py))
    }
}

#[pymethods]
impl PySigner {
    /// A signer from its specification, the library's `SignerSpec` text form (`gaussian`,
    /// `super-bit:depth=32`, `very-sparse:density=0.01`, `pooled:pool=10000`, ...), at width
    /// `bits` and `seed` (the library's default when `None`), for inputs of dimension `dim`
    /// (which the explicit matrices need and hashed signers ignore).
    #[staticmethod]
    #[pyo3(signature = (spec, bits, seed = None, dim = None))]
    fn from_spec(
        py: Python<'_>,
        spec: &str,
        bits: usize,
        seed: Option<u64>,
        dim: Option<u64>,
    ) -> PyResult<Self> {
        let mut s: SignerSpec = spec.parse().py()?;
        check_bits(bits).py()?;
        s.bits = bits;
        s.seed = seed.unwrap_or(s.seed);
        Ok(PySigner {
            inner: Arc::new(py.detach(|| s.build(dim)).py()?),
        })
    }

    /// The kind and parameters of a signer specification (`gaussian`, `super-bit:depth=32`,
    /// `very-sparse:density=0.01`, `pooled:pool=10000`, ...) with parameters given apart from
    /// it (`params`, by the constructors' names; None values left out), as the library
    /// merges them (`SignerKind::parse_with`): `(kind, {parameter: value})` with the
    /// constructors' names (`depth`, `density`, `nnz`, `pool_size`, `buckets`), only those
    /// given.
    #[staticmethod]
    #[pyo3(signature = (spec, params = None))]
    fn parse_spec<'py>(
        py: Python<'py>,
        spec: &str,
        params: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(String, Bound<'py, PyDict>)> {
        // A keyword the kind does not take is Python's TypeError, as its constructor's.
        let keys = spec.parse::<SignerKind>().py()?.info().keys();
        let mut texts = Vec::new();
        for (k, v) in params.into_iter().flatten().filter(|(_, v)| !v.is_none()) {
            let k: String = k.extract()?;
            let key = CONSTRUCTOR_NAMES
                .iter()
                .find(|n| n.1 == k)
                .map_or(&*k, |n| n.0);
            if !keys.contains(&key) {
                let e = format!("the `{}` signer takes no parameter `{k}`", spec.trim());
                return Err(PyTypeError::new_err(e));
            }
            texts.push((key.to_string(), v.str()?.to_string()));
        }
        let pairs: Vec<(&str, &str)> = texts.iter().map(|(k, v)| (&**k, &**v)).collect();
        let (kind, given) = SignerKind::parse_with(spec, &pairs).py()?;
        let values: Vec<(&str, Bound<'py, PyAny>)> = match &kind {
            SignerKind::SuperBit { depth } => vec![("depth", depth.into_pyobject(py)?)],
            SignerKind::VerySparse { density, nnz } => vec![
                ("density", density.into_pyobject(py)?),
                ("nnz", nnz.into_pyobject(py)?),
            ],
            SignerKind::Pooled { pool } => vec![("pool", pool.into_pyobject(py)?.into_any())],
            SignerKind::Fwht { buckets } => {
                vec![("buckets", buckets.into_pyobject(py)?.into_any())]
            }
            _ => Vec::new(),
        };
        let d = PyDict::new(py);
        for (key, v) in values.into_iter().filter(|(k, _)| given.contains(k)) {
            let name = CONSTRUCTOR_NAMES
                .iter()
                .find(|n| n.0 == key)
                .map_or(key, |n| n.1);
            d.set_item(name, v)?;
        }
        Ok((kind.name().to_string(), d))
    }

    /// The signer's specification in the library's text form (its kind and parameters; width
    /// and seed are separate).
    fn spec(&self) -> PyResult<String> {
        Ok(self.inner.spec().py()?.to_string())
    }

    /// Signature width `f`.
    #[getter(bits)]
    fn get_bits(&self) -> usize {
        self.inner.bits()
    }

    /// Input dimension, or None for hashed features.
    #[getter]
    fn dim(&self) -> Option<u64> {
        self.inner.dim()
    }

    /// Parameters, memory and cost: a dict with `kind`, `bits`, `dim`, `seed`, `bytes`,
    /// `adds_per_nonzero`, `hash_words_per_nonzero` and `params`.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let i = self.inner.info();
        let d = PyDict::new(py);
        d.set_item("kind", i.kind)?;
        d.set_item("bits", i.bits)?;
        d.set_item("dim", i.dim)?;
        d.set_item("seed", i.seed)?;
        d.set_item("bytes", i.bytes)?;
        d.set_item("adds_per_nonzero", i.adds_per_nonzero)?;
        d.set_item("hash_words_per_nonzero", i.hash_words_per_nonzero)?;
        let p = PyDict::new(py);
        for (k, v) in &i.params {
            p.set_item(*k, v)?;
        }
        d.set_item("params", p)?;
        Ok(d)
    }

    /// Signs a dense `float32` matrix (any layout).
    #[pyo3(signature = (x, threads = None))]
    fn sign_dense_f32<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        self.dense(py, x.as_array(), &t, usize::MAX, |x, _| Ok(x.into()))
    }

    /// Signs a dense `float64` matrix (any layout), converted to `float32` chunk by chunk.
    #[pyo3(signature = (x, threads = None))]
    fn sign_dense_f64<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        // Also bounded by memory: a converted chunk takes at most CONVERT_BYTES.
        self.dense(
            py,
            x.as_array(),
            &t,
            CONVERT_BYTES,
            |x: ArrayView2<'_, f64>, first| rows_to_f32(x, first).map(CowArray::from),
        )
    }

    /// Signs a CSR matrix from its arrays: `indptr` and `indices` of `int32` or `int64`,
    /// `data` of `float32` or `float64`, `cols` columns.
    #[pyo3(signature = (indptr, indices, data, cols, threads = None))]
    fn sign_csr<'py>(
        &self,
        py: Python<'py>,
        indptr: &Bound<'py, PyAny>,
        indices: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        cols: usize,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        macro_rules! go {
            ($p:ty, $i:ty) => {{
                let p = indptr.extract::<PyReadonlyArray1<'py, $p>>()?;
                let i = indices.extract::<PyReadonlyArray1<'py, $i>>()?;
                let (p, i) = (contiguous(&p, "indptr")?, contiguous(&i, "indices")?);
                if let Ok(d) = data.extract::<PyReadonlyArray1<'py, f32>>() {
                    let m = CsrArrays::new(p, i, contiguous(&d, "data")?, cols).py()?;
                    self.csr(py, m, &t)
                } else {
                    let d = data.extract::<PyReadonlyArray1<'py, f64>>()?;
                    let m = CsrArrays::new(p, i, contiguous(&d, "data")?, cols).py()?;
                    self.csr(py, m, &t)
                }
            }};
        }
        let p64 = indptr.extract::<PyReadonlyArray1<'py, i64>>().is_ok();
        let i64_ = indices.extract::<PyReadonlyArray1<'py, i64>>().is_ok();
        match (p64, i64_) {
            (false, false) => go!(i32, i32),
            (false, true) => go!(i32, i64),
            (true, false) => go!(i64, i32),
            (true, true) => go!(i64, i64),
        }
    }

    /// Signs weighted bags of tokens: `docs` a list of lists of strings, `weights` None
    /// (weight 1 each) or a list of lists of floats of the same lengths.
    #[pyo3(signature = (docs, weights = None, threads = None))]
    fn sign_tokens<'py>(
        &self,
        py: Python<'py>,
        docs: Vec<Vec<String>>,
        weights: Option<Vec<Vec<f32>>>,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        let bags = TokenBags::new(&docs, weights.as_deref()).py()?;
        let mut out = Out::new(bags.len(), self.bits());
        t.chunked(py, bags.len(), TEXT_CHUNK, |r: Range<usize>| {
            out.put(r.start, &bags.sign_rows(&*self.inner, r).py()?);
            Ok(())
        })?;
        Ok(out.into_py(py))
    }

    /// Signs documents (a list of strings) with a tokenizer.
    #[pyo3(signature = (docs, tokenizer, threads = None))]
    fn sign_texts<'py>(
        &self,
        py: Python<'py>,
        docs: Vec<String>,
        tokenizer: &PyTokenizer,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let tok = tokenizer.for_docs(py, &refs, &t)?;
        self.texts(py, &refs, &tok, &t)
    }

    /// Signs an Arrow string column given by its buffers: `offsets` (`int32` or `int64`,
    /// one per row plus one) into the UTF-8 bytes `data` (`uint8`).
    #[pyo3(signature = (offsets, data, tokenizer, threads = None))]
    fn sign_arrow_strings<'py>(
        &self,
        py: Python<'py>,
        offsets: &Bound<'py, PyAny>,
        data: PyReadonlyArray1<'py, u8>,
        tokenizer: &PyTokenizer,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        let docs = crate::partition::strings(offsets, contiguous(&data, "data")?)?;
        self.texts(py, &docs, tokenizer.fitted()?, &t)
    }

    /// Bit-for-bit identity of two signers (same kind and parameters).
    fn __eq__(&self, other: &Self) -> bool {
        self.inner.info() == other.inner.info()
    }
}

/// The kind of the signer used when none is chosen, for `input` (`dense`, `sparse` or
/// `text`) signed at `bits` bits: the library's `SignerKind::default_for`, as the command
/// line's default.
#[pyfunction]
pub fn default_signer(input: &str, bits: usize) -> PyResult<String> {
    Ok(SignerKind::default_for(input.parse().py()?, bits).to_string())
}

/// The library's signer kinds (`signers::kinds()`): a list of dicts `name`, `summary`,
/// `needs_dim` (an explicit matrix of the input dimension) and `params` (`name`, `default`,
/// `summary`), the table the command line's `--signer` and `SignerSpec` use.
#[pyfunction]
pub fn signer_kinds(py: Python<'_>) -> PyResult<Vec<Bound<'_, pyo3::types::PyDict>>> {
    use pyo3::types::PyDict;
    simlsh::signers::kinds()
        .iter()
        .map(|k| {
            let d = PyDict::new(py);
            d.set_item("name", k.name)?;
            d.set_item("summary", k.summary)?;
            let kind: SignerKind = k.name.parse().map_err(to_py)?;
            d.set_item("needs_dim", kind.needs_dim())?;
            let params: Vec<Bound<'_, PyDict>> = k
                .params
                .iter()
                .map(|p| {
                    let q = PyDict::new(py);
                    q.set_item("name", p.name)?;
                    q.set_item("default", p.default)?;
                    q.set_item("summary", p.summary)?;
                    Ok(q)
                })
                .collect::<PyResult<_>>()?;
            d.set_item("params", params)?;
            Ok(d)
        })
        .collect()
}

/// The canonical form of a CSR matrix (`int64` indptr and indices, `float32` data): each row's
/// indices sorted, duplicates summed by the library's rule (in `f64`, rounded once), as every
/// reader of the command line and `Signer.sign` give them; `(indptr, indices, data)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn canonical_csr<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, f32>,
) -> PyResult<(
    Bound<'py, numpy::PyArray1<i64>>,
    Bound<'py, numpy::PyArray1<i64>>,
    Bound<'py, numpy::PyArray1<f32>>,
)> {
    let (p, i, d) = (
        contiguous(&indptr, "indptr")?,
        contiguous(&indices, "indices")?,
        contiguous(&data, "data")?,
    );
    // Indices are checked against the largest representable column (SciPy checked them
    // against its shape).
    let m = CsrArrays::new(p, i, d, usize::MAX).py()?;
    let (rp, ri, rd) = py.detach(|| m.canonical(0..m.rows())).py()?.into_parts();
    let rp: Vec<i64> = rp.into_iter().map(|x| x as i64).collect();
    let ri: Vec<i64> = bytemuck::cast_vec(ri);
    Ok((
        rp.into_pyarray(py),
        ri.into_pyarray(py),
        rd.into_pyarray(py),
    ))
}
