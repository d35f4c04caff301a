//! Signers: every signer of the library, and signing of dense, sparse, token and text input.

use std::ops::Range;
use std::sync::Arc;

use ndarray::{Array2, ArrayView2, Axis, s};
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use simlsh::signature::{check_bits, words_for};
use simlsh::signers::{
    AnySigner, Distribution, HashingTrick, HyperplaneSigner, PooledSigner, SignerKind, SignerSpec,
};
use simlsh::{Error, SignatureMatrix, Signer};
use sprs::{CompressedStorage, CsMatViewI, SpIndex};

use crate::errors::{IntoPy, shift_rows, to_py, value_error};
use crate::text::PyTokenizer;
use crate::threads::Threads;

/// Rows signed per chunk (between two checks for Ctrl-C; a multiple of the library's
/// parallel blocks of 256 rows).
const SIGN_CHUNK: usize = 16_384;

/// Documents signed per chunk.
const TEXT_CHUNK: usize = 8_192;

/// A signer of the library (any kind), shared between threads.
#[pyclass(name = "Signer", module = "simlsh._simlsh", frozen)]
pub struct PySigner {
    pub inner: Arc<AnySigner>,
}

fn distribution(name: &str, density: Option<f64>, depth: Option<usize>) -> PyResult<Distribution> {
    let d = match name {
        "gaussian" => Distribution::Gaussian,
        "super-bit" => Distribution::SuperBit { depth },
        "rademacher" => Distribution::Rademacher,
        "very-sparse" => Distribution::VerySparse { density },
        _ => {
            return Err(value_error(format!(
                "invalid parameter `distribution`: unknown distribution `{name}` (gaussian, super-bit, rademacher, very-sparse)"
            )));
        }
    };
    if density.is_some() && name != "very-sparse" {
        return Err(value_error(
            "invalid parameter `density`: only the very-sparse distribution takes a density",
        ));
    }
    if depth.is_some() && name != "super-bit" {
        return Err(value_error(
            "invalid parameter `depth`: only the super-bit distribution takes a depth",
        ));
    }
    Ok(d)
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

/// Checks the structure of a CSR matrix (`indptr`, `indices` of a matrix with `cols`
/// columns) and returns whether every row's indices are strictly increasing. Errors are the
/// library's, naming the row: indptr not starting at 0, decreasing or beyond the indices;
/// an index negative or not below `cols`.
fn check_csr<I: SpIndex, P: SpIndex>(
    indptr: &[P],
    indices: &[I],
    cols: usize,
) -> Result<bool, Error> {
    let bad = |reason: String| Error::param("indptr", reason);
    if indptr.is_empty() {
        return Err(bad(
            "indptr is empty (it has one entry per row plus one)".into()
        ));
    }
    let at = |k: usize| indptr[k].try_index();
    if at(0) != Some(0) {
        return Err(bad("indptr must start at 0".into()));
    }
    let rows = indptr.len() - 1;
    if let Some(r) = (0..rows).find(|&r| match (at(r), at(r + 1)) {
        (Some(a), Some(b)) => a > b,
        _ => true,
    }) {
        return Err(bad(format!("row {r}: indptr decreases (or is negative)")));
    }
    let nnz = at(rows).expect("checked above");
    if nnz > indices.len() {
        return Err(Error::LengthMismatch {
            what: "indptr[-1] vs the number of indices",
            left: nnz,
            right: indices.len(),
        });
    }
    let row = |r: usize| &indices[at(r).expect("checked")..at(r + 1).expect("checked")];
    // One branch-free pass per row (it vectorises): sorted, and within 0..cols.
    let row_ok = |r: usize| -> (bool, bool) {
        let ids = row(r);
        let sorted = ids[1.min(ids.len())..]
            .iter()
            .zip(ids)
            .fold(true, |ok, (b, a)| ok & (a < b));
        let in_range = ids.iter().fold(true, |ok, &c| {
            ok & (c >= I::zero()) & c.try_index().is_some_and(|c| c < cols)
        });
        (sorted, in_range)
    };
    let (sorted, in_range) = (0..rows)
        .into_par_iter()
        .map(row_ok)
        .reduce(|| (true, true), |a, b| (a.0 & b.0, a.1 & b.1));
    if !in_range {
        let r = (0..rows)
            .into_par_iter()
            .find_first(|&r| !row_ok(r).1)
            .expect("a row out of range");
        let ids = row(r);
        let k = ids
            .iter()
            .position(|&c| c < I::zero() || c.try_index().is_none_or(|c| c >= cols))
            .expect("an index out of range");
        return Err(match ids[k].try_index() {
            Some(c) if ids[k] >= I::zero() => Error::IndexOutOfRange {
                row: r,
                col: c as u64,
                dim: cols as u64,
            },
            _ => Error::param("indices", format!("row {r}: negative feature index")),
        });
    }
    Ok(sorted)
}

/// Rows `lo..hi` of a CSR matrix whose rows may be unsorted or hold duplicate indices, sorted
/// and with duplicates summed (SciPy's meaning of duplicates): `(indptr, indices, data)` of the
/// chunk, indptr from 0.
fn sorted_rows<I: SpIndex + Sync + Send, P: SpIndex + Sync>(
    indptr: &[P],
    indices: &[I],
    data: &[f32],
    base: usize,
) -> (Vec<usize>, Vec<I>, Vec<f32>) {
    let rows: Vec<(Vec<I>, Vec<f32>)> = (0..indptr.len() - 1)
        .into_par_iter()
        .map(|r| {
            let (a, b) = (indptr[r].index() - base, indptr[r + 1].index() - base);
            let mut e: Vec<(I, f32)> = indices[a..b]
                .iter()
                .copied()
                .zip(data[a..b].iter().copied())
                .collect();
            e.sort_by_key(|x| x.0);
            let mut ids: Vec<I> = Vec::with_capacity(e.len());
            let mut vals: Vec<f32> = Vec::with_capacity(e.len());
            for (i, v) in e {
                if ids.last() == Some(&i) {
                    *vals.last_mut().expect("paired") += v;
                } else {
                    ids.push(i);
                    vals.push(v);
                }
            }
            (ids, vals)
        })
        .collect();
    let mut p = Vec::with_capacity(rows.len() + 1);
    p.push(0usize);
    let (mut ids, mut vals) = (Vec::new(), Vec::new());
    for (i, v) in rows {
        ids.extend(i);
        vals.extend(v);
        p.push(ids.len());
    }
    (p, ids, vals)
}

impl PySigner {
    fn bits(&self) -> usize {
        self.inner.bits()
    }

    /// Signs a dense `f32` matrix of any layout, in chunks of rows.
    fn dense_f32<'py>(
        &self,
        py: Python<'py>,
        x: ArrayView2<'_, f32>,
        t: &Threads,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        check_width(&self.inner, x.ncols())?;
        let mut out = Out::new(x.nrows(), self.bits());
        let signer = &*self.inner;
        t.chunked(py, x.nrows(), SIGN_CHUNK, |r: Range<usize>| {
            let sigs = signer
                .sign_dense(&x.slice(s![r.clone(), ..]))
                .map_err(|e| to_py(shift_rows(e, r.start)))?;
            out.put(r.start, &sigs);
            Ok(())
        })?;
        Ok(out.into_py(py))
    }

    /// Signs a dense `f64` matrix of any layout: each chunk of rows is converted to `f32`
    /// (the library's input type), so the extra memory is one chunk, not the whole input.
    fn dense_f64<'py>(
        &self,
        py: Python<'py>,
        x: ArrayView2<'_, f64>,
        t: &Threads,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        check_width(&self.inner, x.ncols())?;
        let mut out = Out::new(x.nrows(), self.bits());
        let signer = &*self.inner;
        let d = x.ncols();
        t.chunked(py, x.nrows(), SIGN_CHUNK, |r: Range<usize>| {
            let src = x.slice(s![r.clone(), ..]);
            let mut conv = Array2::<f32>::zeros((r.len(), d));
            conv.axis_iter_mut(Axis(0))
                .into_par_iter()
                .zip(src.axis_iter(Axis(0)).into_par_iter())
                .for_each(|(mut dst, src)| dst.zip_mut_with(&src, |a, &b| *a = b as f32));
            // A finite f64 beyond the f32 range would become infinite: name it as it was.
            if let Some((i, j)) = conv
                .indexed_iter()
                .find(|(_, v)| !v.is_finite())
                .map(|(ij, _)| ij)
            {
                let v = src[[i, j]];
                return Err(if v.is_finite() {
                    value_error(format!(
                        "row {}, column {j}: value {v:e} is beyond the range of float32",
                        r.start + i
                    ))
                } else {
                    to_py(Error::NonFinite {
                        row: r.start + i,
                        col: j as u64,
                        value: v,
                    })
                });
            }
            let sigs = signer
                .sign_dense(&conv)
                .map_err(|e| to_py(shift_rows(e, r.start)))?;
            out.put(r.start, &sigs);
            Ok(())
        })?;
        Ok(out.into_py(py))
    }

    /// Signs a CSR matrix given by its arrays, in chunks of rows. `data` is converted to
    /// `f32` chunk by chunk when it is not already.
    fn csr<'py, I: Idx, P: SpIndex + Sync, T: Data>(
        &self,
        py: Python<'py>,
        indptr: &[P],
        indices: &[I],
        data: &[T],
        cols: usize,
        t: &Threads,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        if indices.len() != data.len() {
            return Err(to_py(Error::LengthMismatch {
                what: "sparse indices vs data",
                left: indices.len(),
                right: data.len(),
            }));
        }
        let sorted = t.run(py, || check_csr(indptr, indices, cols)).py()?;
        if let Some(d) = self.inner.dim() {
            if cols as u64 > d {
                return Err(to_py(Error::DimensionMismatch {
                    expected: d,
                    got: cols as u64,
                }));
            }
        }
        // Checked non-negative: the same values as unsigned integers, whose conversion to
        // an index is free in the signers' inner loops (a signed one is checked).
        let indices = I::unsigned(indices);
        let rows = indptr.len() - 1;
        let mut out = Out::new(rows, self.bits());
        let signer = &*self.inner;
        t.chunked(py, rows, SIGN_CHUNK, |r: Range<usize>| {
            let (a, b) = (indptr[r.start].index(), indptr[r.end].index());
            let vals = T::as_f32(&data[a..b]);
            let sigs = if sorted {
                // SAFETY: `check_csr` verified the whole matrix: indptr starts at 0, never
                // decreases and ends within the indices; each row's indices are
                // non-negative, strictly increasing (`sorted`) and below `cols`. A chunk of
                // rows keeps these properties, with `indptr[r.start..=r.end]` offset by `a`,
                // the start of its indices and data (sprs subtracts the first indptr entry,
                // as in its own `slice_outer`).
                let m: CsMatViewI<'_, f32, I::U, P> = unsafe {
                    CsMatViewI::new_unchecked(
                        CompressedStorage::CSR,
                        (r.len(), cols),
                        &indptr[r.start..=r.end],
                        &indices[a..b],
                        &vals[..],
                    )
                };
                signer.sign_csr(m)
            } else {
                let (p, ids, v) = sorted_rows(&indptr[r.start..=r.end], &indices[a..b], &vals, a);
                // SAFETY: as above, and `sorted_rows` made each row strictly increasing
                // (sorted, duplicates merged) with indptr from 0 to the length of `ids`.
                let m: CsMatViewI<'_, f32, I::U, usize> = unsafe {
                    CsMatViewI::new_unchecked(
                        CompressedStorage::CSR,
                        (r.len(), cols),
                        &p[..],
                        &ids[..],
                        &v[..],
                    )
                };
                signer.sign_csr(m)
            }
            .map_err(|e| to_py(shift_rows(e, r.start)))?;
            out.put(r.start, &sigs);
            Ok(())
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
                .map_err(|e| to_py(shift_rows(e, r.start)))?;
            out.put(r.start, &sigs);
            Ok(())
        })?;
        Ok(out.into_py(py))
    }
}

/// A signed index type of SciPy's arrays and its unsigned twin.
trait Idx: SpIndex + Sync + Send {
    /// The unsigned type of the same width.
    type U: SpIndex + Sync + Send;
    /// The same bits as the unsigned type (equal values for non-negative indices).
    fn unsigned(s: &[Self]) -> &[Self::U];
}

impl Idx for i32 {
    type U = u32;
    fn unsigned(s: &[i32]) -> &[u32] {
        bytemuck::cast_slice(s)
    }
}

impl Idx for i64 {
    type U = u64;
    fn unsigned(s: &[i64]) -> &[u64] {
        bytemuck::cast_slice(s)
    }
}

/// A value type of sparse data: `f32` is read in place, `f64` converted chunk by chunk.
trait Data: Copy + Sync {
    /// The values as `f32`.
    fn as_f32(d: &[Self]) -> std::borrow::Cow<'_, [f32]>;
}

impl Data for f32 {
    fn as_f32(d: &[f32]) -> std::borrow::Cow<'_, [f32]> {
        std::borrow::Cow::Borrowed(d)
    }
}

impl Data for f64 {
    fn as_f32(d: &[f64]) -> std::borrow::Cow<'_, [f32]> {
        std::borrow::Cow::Owned(d.iter().map(|&v| v as f32).collect())
    }
}

/// A string column in the Arrow layout: `offsets` (`n + 1` entries) into UTF-8 `data`.
fn arrow_strings<'a, O: SpIndex>(offsets: &[O], data: &'a [u8]) -> PyResult<Vec<&'a str>> {
    if offsets.is_empty() {
        return Err(value_error(
            "offsets is empty (it has one entry per row plus one)",
        ));
    }
    let n = offsets.len() - 1;
    (0..n)
        .map(|r| {
            let (a, b) = (offsets[r].try_index(), offsets[r + 1].try_index());
            let (a, b) = match (a, b) {
                (Some(a), Some(b)) if a <= b && b <= data.len() => (a, b),
                _ => {
                    return Err(value_error(format!(
                        "row {r}: string offsets out of order or beyond the data"
                    )));
                }
            };
            std::str::from_utf8(&data[a..b])
                .map_err(|e| value_error(format!("row {r}: not valid UTF-8 ({e})")))
        })
        .collect()
}

#[pymethods]
impl PySigner {
    /// An explicit-matrix signer (`HyperplaneSigner`): `distribution` is `gaussian`,
    /// `super-bit`, `rademacher` or `very-sparse`.
    #[staticmethod]
    #[pyo3(signature = (dim, bits, seed = 0, distribution = "gaussian", density = None, depth = None))]
    fn hyperplane(
        py: Python<'_>,
        dim: u64,
        bits: usize,
        seed: u64,
        distribution: &str,
        density: Option<f64>,
        depth: Option<usize>,
    ) -> PyResult<Self> {
        let d = self::distribution(distribution, density, depth)?;
        check_bits(bits).py()?;
        let s = py
            .detach(|| {
                HyperplaneSigner::builder()
                    .dim(dim)
                    .bits(bits)
                    .seed(seed)
                    .distribution(d)
                    .build()
            })
            .py()?;
        Ok(PySigner {
            inner: Arc::new(s.into()),
        })
    }

    /// The hashing trick (`HashingTrick`).
    #[staticmethod]
    #[pyo3(signature = (bits, seed = 0))]
    fn hashing_trick(bits: usize, seed: u64) -> PyResult<Self> {
        check_bits(bits).py()?;
        let s = HashingTrick::builder().bits(bits).seed(seed).build().py()?;
        Ok(PySigner {
            inner: Arc::new(s.into()),
        })
    }

    /// The pooled signer (`PooledSigner`).
    #[staticmethod]
    #[pyo3(signature = (bits, seed = 0, pool_size = 10_000))]
    fn pooled(bits: usize, seed: u64, pool_size: usize) -> PyResult<Self> {
        check_bits(bits).py()?;
        let s = PooledSigner::builder()
            .bits(bits)
            .seed(seed)
            .pool_size(pool_size)
            .build()
            .py()?;
        Ok(PySigner {
            inner: Arc::new(s.into()),
        })
    }

    /// The kind and parameters of a signer specification (`gaussian`, `super-bit:depth=32`,
    /// `very-sparse:density=0.01`, `pooled:pool=10000`, ...), as the library parses it:
    /// `(kind, {parameter: value})` with the constructor's parameter names (`depth`,
    /// `density`, `pool_size`), only those given.
    #[staticmethod]
    fn parse_spec<'py>(py: Python<'py>, spec: &str) -> PyResult<(String, Bound<'py, PyDict>)> {
        let s: SignerSpec = spec.parse().py()?;
        let d = PyDict::new(py);
        match &s.kind {
            SignerKind::SuperBit { depth: Some(v) } => d.set_item("depth", v)?,
            SignerKind::VerySparse { density: Some(v) } => d.set_item("density", v)?,
            SignerKind::Pooled { pool } => d.set_item("pool_size", pool)?,
            _ => {}
        }
        Ok((s.kind.name().to_string(), d))
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
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        self.dense_f32(py, x.as_array(), &t)
    }

    /// Signs a dense `float64` matrix (any layout), converted to `float32` chunk by chunk.
    #[pyo3(signature = (x, threads = None))]
    fn sign_dense_f64<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        self.dense_f64(py, x.as_array(), &t)
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
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        macro_rules! go {
            ($p:ty, $i:ty) => {{
                let p = indptr.extract::<PyReadonlyArray1<'py, $p>>()?;
                let i = indices.extract::<PyReadonlyArray1<'py, $i>>()?;
                let (p, i) = (contiguous(&p, "indptr")?, contiguous(&i, "indices")?);
                if let Ok(d) = data.extract::<PyReadonlyArray1<'py, f32>>() {
                    self.csr(py, p, i, contiguous(&d, "data")?, cols, &t)
                } else {
                    let d = data.extract::<PyReadonlyArray1<'py, f64>>()?;
                    self.csr(py, p, i, contiguous(&d, "data")?, cols, &t)
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
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        if let Some(w) = &weights {
            if w.len() != docs.len() {
                return Err(to_py(Error::LengthMismatch {
                    what: "documents vs weight lists",
                    left: docs.len(),
                    right: w.len(),
                }));
            }
            if let Some(r) = (0..docs.len()).find(|&r| docs[r].len() != w[r].len()) {
                return Err(value_error(format!(
                    "row {r}: {} tokens but {} weights",
                    docs[r].len(),
                    w[r].len()
                )));
            }
        }
        let mut out = Out::new(docs.len(), self.bits());
        let signer = &*self.inner;
        let (docs, weights) = (&docs, &weights);
        t.chunked(py, docs.len(), TEXT_CHUNK, |r: Range<usize>| {
            let sigs: Vec<simlsh::Signature> = r
                .clone()
                .into_par_iter()
                .map(|i| {
                    let toks: Vec<&str> = docs[i].iter().map(String::as_str).collect();
                    let ones;
                    let ws = match weights {
                        Some(w) => &w[i][..],
                        None => {
                            ones = vec![1.0f32; toks.len()];
                            &ones[..]
                        }
                    };
                    signer.sign_tokens(&toks, ws).map_err(|e| shift_rows(e, i))
                })
                .collect::<simlsh::Result<_>>()
                .map_err(to_py)?;
            let m = SignatureMatrix::from_signatures(signer.bits(), sigs.iter()).py()?;
            out.put(r.start, &m);
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
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        self.texts(py, &refs, &tokenizer.inner, &t)
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
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let t = Threads::new(threads)?;
        let data = contiguous(&data, "data")?;
        let docs = if let Ok(o) = offsets.extract::<PyReadonlyArray1<'py, i32>>() {
            arrow_strings(contiguous(&o, "offsets")?, data)?
        } else {
            let o = offsets.extract::<PyReadonlyArray1<'py, i64>>()?;
            arrow_strings(contiguous(&o, "offsets")?, data)?
        };
        self.texts(py, &docs, &tokenizer.inner, &t)
    }

    /// Bit-for-bit identity of two signers (same kind and parameters).
    fn __eq__(&self, other: &Self) -> bool {
        self.inner.info() == other.inner.info()
    }
}

/// The elements of a 1-D array that must be contiguous.
pub fn contiguous<'a, T: numpy::Element>(
    a: &'a PyReadonlyArray1<'_, T>,
    name: &str,
) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| {
        value_error(format!(
            "{name} must be a contiguous array (use numpy.ascontiguousarray)"
        ))
    })
}
