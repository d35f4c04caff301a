//! The batch functions of a distributed near-duplicate join, engine-free (arrays in, arrays
//! out): documents signed with their feature counts, row hashes for exact duplicates, the
//! `(group, key)` rows of a banding or of permuted tables, the pairs of one partition of those
//! rows (each pair reported by its first agreeing group), and exact cosines of paired rows.

use std::collections::HashMap;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use simlsh::Error;
use simlsh::join::{Banding, CappedGroup, IdPair, TableKeys, band_partition, table_partition};
use simlsh::signature::words_for;
use simlsh::text::SignOptions;
use simlsh::verify::{Candidates, CsrVectors, DenseVectors, SparseVectors, Vectors, VerifiedJoin};
use sprs::{CompressedStorage, CsMatViewI};

use crate::errors::{IntoPy, to_py, value_error};
use crate::index::codes;
use crate::signer::{Idx, PySigner, arrow_strings, check_indptr, check_rows, contiguous};
use crate::text::PyTokenizer;
use crate::threads::Threads;

/// How documents are grouped into candidate pairs: a banding, or permuted tables.
enum Scheme {
    Bands(Banding),
    Tables(TableKeys),
}

/// A key scheme of a distributed join: `groups` bands or tables per document, each giving a
/// `(group, key)` row; rows sharing a group and key are compared.
#[pyclass(name = "KeyScheme", module = "simlsh._simlsh", frozen)]
pub struct PyKeyScheme {
    scheme: Scheme,
}

/// Pairs by id and the runs skipped for their size: `(a, b, distance, capped_group,
/// capped_key, capped_rows)`.
type PartitionPairs<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i64>>,
);

/// The `(group, key)` arrays of [`PyKeyScheme::keys`].
type GroupKeys<'py> = (Bound<'py, PyArray1<i32>>, Bound<'py, PyArray1<u64>>);

/// Signatures and feature counts of [`sign_text_counts`].
type CodesCounts<'py> = (Bound<'py, PyArray2<u64>>, Bound<'py, PyArray1<u32>>);

impl PyKeyScheme {
    fn bits(&self) -> usize {
        match &self.scheme {
            Scheme::Bands(b) => b.bits(),
            Scheme::Tables(t) => t.bits(),
        }
    }

    fn group_count(&self) -> usize {
        match &self.scheme {
            Scheme::Bands(b) => b.bands(),
            Scheme::Tables(t) => t.tables(),
        }
    }

    fn key(&self, g: usize, sig: &[u64]) -> u64 {
        match &self.scheme {
            Scheme::Bands(b) => b.key(g, sig),
            Scheme::Tables(t) => t.key(g, sig),
        }
    }

    /// The first group on which `a` and `b` agree, ignoring caps.
    fn first_agreeing(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        match &self.scheme {
            Scheme::Bands(s) => s.first_agreeing_band(a, b),
            Scheme::Tables(t) => t.first_agreeing_table(a, b),
        }
    }

    /// The pairs of group `g` among `ids`/`sigs`, with `capped` known; the runs capped here.
    fn group_pairs(
        &self,
        g: usize,
        ids: &[u64],
        sigs: &[u64],
        capped: &[CappedGroup],
        sink: impl FnMut(IdPair),
    ) -> simlsh::Result<Vec<CappedGroup>> {
        match &self.scheme {
            Scheme::Bands(b) => band_partition(b, g, ids, sigs, capped, sink),
            Scheme::Tables(t) => table_partition(t, g, ids, sigs, capped, sink),
        }
    }
}

#[pymethods]
impl PyKeyScheme {
    /// A banding: `bands` bands of `width` bits of `bits`-bit signatures, candidates within
    /// `max_distance` (default: no filter) and, with `prefix_words`, whose first
    /// `prefix_words` 64-bit words are within `prefix_radius` (the planner's prefix filter of
    /// wide signatures), runs longer than `max_group` skipped (default the library's).
    #[staticmethod]
    #[pyo3(signature = (bits, bands, width, max_distance = None, max_group = None, prefix_words = None, prefix_radius = None))]
    #[allow(clippy::too_many_arguments)]
    fn bands(
        bits: usize,
        bands: usize,
        width: u32,
        max_distance: Option<u32>,
        max_group: Option<usize>,
        prefix_words: Option<usize>,
        prefix_radius: Option<u32>,
    ) -> PyResult<Self> {
        let mut b = Banding::builder().bits(bits).bands(bands).width(width);
        if let Some(r) = max_distance {
            b = b.max_distance(r);
        }
        match (prefix_words, prefix_radius) {
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
        Ok(PyKeyScheme {
            scheme: Scheme::Bands(b.build().py()?),
        })
    }

    /// Permuted tables for the radius join at `radius`: the design `levels`, or the one the
    /// single-machine join plans for `rows` rows; runs longer than `max_group` skipped
    /// (default: none).
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
        Ok(PyKeyScheme {
            scheme: Scheme::Tables(b.build().py()?),
        })
    }

    /// What the scheme is: `kind` ("bands" or "tables"), `bits`, `groups`, and `bands`,
    /// `width`, `max_distance`, `max_group` or `radius`, `levels`, `key_bits`, `max_group`.
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("bits", self.bits())?;
        d.set_item("groups", self.group_count())?;
        let cap = |g: usize| (g != usize::MAX).then_some(g);
        match &self.scheme {
            Scheme::Bands(b) => {
                d.set_item("kind", "bands")?;
                d.set_item("bands", b.bands())?;
                d.set_item("width", b.width())?;
                d.set_item("max_distance", b.max_distance())?;
                d.set_item("max_group", cap(b.max_group()))?;
                d.set_item("prefix_words", b.prefix_filter().map(|p| p.0))?;
                d.set_item("prefix_radius", b.prefix_filter().map(|p| p.1))?;
            }
            Scheme::Tables(t) => {
                d.set_item("kind", "tables")?;
                d.set_item("radius", t.radius())?;
                d.set_item("levels", t.levels().to_vec())?;
                let kb: Vec<u32> = (0..t.tables()).map(|k| t.key_bits(k)).collect();
                d.set_item("key_bits", kb)?;
                d.set_item("max_group", cap(t.max_group()))?;
            }
        }
        Ok(d)
    }

    /// The `(group, key)` of every group for each row of `codes`: `(group, key)` arrays of
    /// `rows × groups` entries, row-major.
    #[pyo3(signature = (codes, threads = None))]
    fn keys<'py>(
        &self,
        py: Python<'py>,
        codes: PyReadonlyArray2<'py, u64>,
        threads: Option<i64>,
    ) -> PyResult<GroupKeys<'py>> {
        use rayon::prelude::*;
        let t = Threads::new(threads)?;
        let m = self::codes(&codes, self.bits())?;
        let g = self.group_count();
        let mut group = vec![0i32; m.len() * g];
        let mut key = vec![0u64; m.len() * g];
        t.run(py, || {
            group
                .par_chunks_mut(g.max(1))
                .zip(key.par_chunks_mut(g.max(1)))
                .enumerate()
                .for_each(|(r, (gs, ks))| {
                    let row = m.row(r);
                    for k in 0..g {
                        gs[k] = k as i32;
                        ks[k] = self.key(k, row);
                    }
                })
        });
        Ok((group.into_pyarray(py), key.into_pyarray(py)))
    }

    /// The candidate pairs of one partition of `(group, key)` rows (`group`, `ids` and
    /// `codes`, one per row; any groups and keys, any order): `(a, b, distance)` by id,
    /// `a < b`, each pair reported only by the first group its signatures agree on; and the
    /// runs of this partition skipped for their size (`group`, `key`, `rows`).
    ///
    /// With `capped` (`(group, key)` arrays of the runs capped over the whole data set) and
    /// `missed_only`, only the pairs a first pass without that list missed: those whose
    /// first agreeing group is capped, reported by their first agreeing group that is not.
    #[pyo3(signature = (group, ids, codes, capped_group = None, capped_key = None, missed_only = false))]
    #[allow(clippy::too_many_arguments)]
    fn partition<'py>(
        &self,
        py: Python<'py>,
        group: PyReadonlyArray1<'py, i32>,
        ids: PyReadonlyArray1<'py, u64>,
        codes: PyReadonlyArray2<'py, u64>,
        capped_group: Option<PyReadonlyArray1<'py, i32>>,
        capped_key: Option<PyReadonlyArray1<'py, u64>>,
        missed_only: bool,
    ) -> PyResult<PartitionPairs<'py>> {
        let m = self::codes(&codes, self.bits())?;
        let (group, ids) = (contiguous(&group, "group")?, contiguous(&ids, "ids")?);
        if group.len() != ids.len() || ids.len() != m.len() {
            return Err(to_py(Error::LengthMismatch {
                what: "group, ids and codes rows",
                left: group.len(),
                right: m.len().min(ids.len()),
            }));
        }
        let capped: Vec<CappedGroup> = match (&capped_group, &capped_key) {
            (Some(g), Some(k)) => {
                let (g, k) = (contiguous(g, "capped_group")?, contiguous(k, "capped_key")?);
                if g.len() != k.len() {
                    return Err(value_error("capped_group and capped_key differ in length"));
                }
                g.iter()
                    .zip(k)
                    .map(|(&band, &key)| CappedGroup {
                        band: band as u32,
                        key,
                        rows: 0,
                    })
                    .collect()
            }
            (None, None) => Vec::new(),
            _ => {
                return Err(value_error(
                    "give both capped_group and capped_key, or neither",
                ));
            }
        };
        let groups = self.group_count();
        if let Some(r) = group.iter().position(|&g| g < 0 || g as usize >= groups) {
            return Err(value_error(format!(
                "row {r}: group {} of a scheme with {groups} groups",
                group[r]
            )));
        }
        let w = words_for(self.bits());
        let out = py.detach(|| -> simlsh::Result<_> {
            let mut capped_set: Vec<(u32, u64)> = capped.iter().map(|c| (c.band, c.key)).collect();
            capped_set.sort_unstable();
            // Rows by group (stable: the library orders runs by id anyway).
            let mut order: Vec<usize> = (0..ids.len()).collect();
            order.sort_by_key(|&r| group[r]);
            let (mut a, mut b, mut d) = (Vec::new(), Vec::new(), Vec::new());
            let mut caps = Vec::new();
            let (mut gid, mut gsig) = (Vec::new(), Vec::new());
            for run in order.chunk_by(|&x, &y| group[x] == group[y]) {
                let g = group[run[0]] as usize;
                gid.clear();
                gsig.clear();
                for &r in run {
                    gid.push(ids[r]);
                    gsig.extend_from_slice(m.row(r));
                }
                let rows: HashMap<u64, usize> = if missed_only {
                    gid.iter().enumerate().map(|(i, &id)| (id, i)).collect()
                } else {
                    HashMap::new()
                };
                let mine = self.group_pairs(g, &gid, &gsig, &capped, |p| {
                    if missed_only {
                        // Keep the pair only if its first agreeing group is capped.
                        let (ra, rb) = (rows[&p.a], rows[&p.b]);
                        let (sa, sb) = (&gsig[ra * w..(ra + 1) * w], &gsig[rb * w..(rb + 1) * w]);
                        let first = self.first_agreeing(sa, sb).expect("the pair agrees on g");
                        let k = self.key(first, sa);
                        if capped_set.binary_search(&(first as u32, k)).is_err() {
                            return;
                        }
                    }
                    a.push(p.a);
                    b.push(p.b);
                    d.push(p.distance as i32);
                })?;
                caps.extend(mine);
            }
            Ok((a, b, d, caps))
        });
        let (a, b, d, caps) = out.py()?;
        let cg: Vec<i32> = caps.iter().map(|c| c.band as i32).collect();
        let ck: Vec<u64> = caps.iter().map(|c| c.key).collect();
        let cr: Vec<i64> = caps.iter().map(|c| c.rows as i64).collect();
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

/// The candidates the single-machine verified join plans for `rows` rows of `bits`-bit
/// signatures, threshold `threshold` and recall `recall` at it: `kind` "hamming" with
/// `radius`, or "bands" with `bands`, `width`, `max_distance`, `prefix_words` and
/// `prefix_radius` (None without a prefix filter).
#[pyfunction]
pub fn plan_join<'py>(
    py: Python<'py>,
    threshold: f64,
    recall: f64,
    bits: usize,
    rows: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let join = VerifiedJoin::planned(threshold, recall, bits, rows).py()?;
    let d = PyDict::new(py);
    match join.candidates() {
        Candidates::Hamming { radius } => {
            d.set_item("kind", "hamming")?;
            d.set_item("radius", *radius)?;
        }
        Candidates::Banded(b) => {
            d.set_item("kind", "bands")?;
            d.set_item("bands", b.bands())?;
            d.set_item("width", b.width())?;
            d.set_item("max_distance", b.max_distance())?;
            d.set_item("prefix_words", b.prefix_filter().map(|p| p.0))?;
            d.set_item("prefix_radius", b.prefix_filter().map(|p| p.1))?;
        }
    }
    Ok(d)
}

/// A 64-bit hash of each row of a ragged byte array (`offsets`, `n + 1` entries, into
/// `data`): XXH3-64 with `seed`. Two seeds give a 128-bit row identity for exact duplicates.
#[pyfunction]
#[pyo3(signature = (offsets, data, seed))]
pub fn row_hashes<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, u8>,
    seed: u64,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (o, data) = (contiguous(&offsets, "offsets")?, contiguous(&data, "data")?);
    if o.is_empty() {
        return Err(value_error("offsets is empty (one entry per row plus one)"));
    }
    if let Some(r) = (0..o.len() - 1)
        .find(|&r| o[r] < 0 || o[r] > o[r + 1] || o[r + 1] as u64 > data.len() as u64)
    {
        return Err(value_error(format!(
            "row {r}: offsets out of order or beyond the data"
        )));
    }
    let h: Vec<u64> = py.detach(|| {
        o.windows(2)
            .map(|w| simlsh::rng::hash_bytes(&data[w[0] as usize..w[1] as usize], seed))
            .collect()
    });
    Ok(h.into_pyarray(py))
}

/// Signs an Arrow string column (`offsets` into UTF-8 `data`) with a tokenizer: the
/// signatures and each document's feature count (0 for documents without features, whose
/// all-zero signature must not be paired).
#[pyfunction]
#[pyo3(signature = (signer, offsets, data, tokenizer, threads = None))]
pub fn sign_text_counts<'py>(
    py: Python<'py>,
    signer: &PySigner,
    offsets: &Bound<'py, PyAny>,
    data: PyReadonlyArray1<'py, u8>,
    tokenizer: &PyTokenizer,
    threads: Option<i64>,
) -> PyResult<CodesCounts<'py>> {
    let t = Threads::new(threads)?;
    let data = contiguous(&data, "data")?;
    let docs = strings(offsets, data)?;
    let s = &*signer.inner;
    let tok = &tokenizer.inner;
    let corpus = t
        .run(py, || {
            tok.sign_corpus_with(s, &docs, SignOptions::default())
        })
        .py()?;
    let w = words_for(corpus.signatures.bits());
    let n = corpus.len();
    let codes = ndarray::Array2::from_shape_vec((n, w), corpus.signatures.as_slice().to_vec())
        .expect("n × w words");
    Ok((codes.into_pyarray(py), corpus.features.into_pyarray(py)))
}

/// An Arrow string column's rows (`int32` or `int64` offsets).
fn strings<'a>(offsets: &Bound<'_, PyAny>, data: &'a [u8]) -> PyResult<Vec<&'a str>> {
    if let Ok(o) = offsets.extract::<PyReadonlyArray1<'_, i32>>() {
        arrow_strings(contiguous(&o, "offsets")?, data)
    } else {
        let o = offsets.extract::<PyReadonlyArray1<'_, i64>>()?;
        arrow_strings(contiguous(&o, "offsets")?, data)
    }
}

/// The exact cosine of each pair of documents (`a[i]`, `b[i]`), two Arrow string columns of
/// equal length, of their weighted features as `tokenizer` gives them: the cosine the
/// verified join of the same documents computes, bit for bit.
#[pyfunction]
#[pyo3(signature = (tokenizer, a_offsets, a_data, b_offsets, b_data, threads = None))]
pub fn cosines_text<'py>(
    py: Python<'py>,
    tokenizer: &PyTokenizer,
    a_offsets: &Bound<'py, PyAny>,
    a_data: PyReadonlyArray1<'py, u8>,
    b_offsets: &Bound<'py, PyAny>,
    b_data: PyReadonlyArray1<'py, u8>,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    use rayon::prelude::*;
    let t = Threads::new(threads)?;
    let a = strings(a_offsets, contiguous(&a_data, "a_data")?)?;
    let b = strings(b_offsets, contiguous(&b_data, "b_data")?)?;
    if a.len() != b.len() {
        return Err(to_py(Error::LengthMismatch {
            what: "a vs b rows",
            left: a.len(),
            right: b.len(),
        }));
    }
    let tok = &tokenizer.inner;
    let c = t.run(py, || -> simlsh::Result<Vec<f64>> {
        let fa: Vec<_> = a.par_iter().map(|d| tok.features(d)).collect();
        let fb: Vec<_> = b.par_iter().map(|d| tok.features(d)).collect();
        let (va, vb) = (
            SparseVectors::from_features(fa.iter())?,
            SparseVectors::from_features(fb.iter())?,
        );
        Ok((0..a.len()).map(|i| va.cosine_with(i, &vb, i)).collect())
    });
    Ok(c.py()?.into_pyarray(py))
}

/// The exact cosine of each pair of dense rows (`a[i]`, `b[i]`), `float32` matrices of
/// equal shape: the verified join's cosine, bit for bit.
#[pyfunction]
pub fn cosines_dense<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f32>,
    b: PyReadonlyArray2<'py, f32>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (a, b) = (a.as_array(), b.as_array());
    if a.dim() != b.dim() {
        return Err(value_error(format!(
            "a and b differ in shape: {:?} and {:?}",
            a.dim(),
            b.dim()
        )));
    }
    let c = py.detach(|| -> simlsh::Result<Vec<f64>> {
        let (va, vb) = (DenseVectors::new(a)?, DenseVectors::new(b)?);
        Ok((0..va.len()).map(|i| va.cosine_with(i, &vb, i)).collect())
    });
    Ok(c.py()?.into_pyarray(py))
}

/// One side of [`cosines_csr`]: a checked CSR view.
fn csr_view<'a>(
    indptr: &'a [i64],
    indices: &'a [i64],
    data: &'a [f32],
    cols: usize,
    side: &str,
) -> PyResult<CsMatViewI<'a, f32, u64, i64>> {
    if indices.len() != data.len() {
        return Err(to_py(Error::LengthMismatch {
            what: "sparse indices vs data",
            left: indices.len(),
            right: data.len(),
        }));
    }
    check_indptr(indptr, indices.len()).py()?;
    let rows = indptr.len() - 1;
    if !check_rows(indptr, indices, 0..rows, cols).py()? {
        return Err(value_error(format!(
            "{side}: exact cosines need sorted sparse indices without duplicates"
        )));
    }
    let nnz = indptr[rows] as usize;
    let u = <i64 as Idx>::unsigned(indices);
    // SAFETY: `check_indptr` and `check_rows` verified indptr (from 0, non-decreasing, within
    // the indices) and every row (strictly increasing, in 0..cols, so equal as unsigned).
    Ok(unsafe {
        CsMatViewI::new_unchecked(
            CompressedStorage::CSR,
            (rows, cols),
            indptr,
            &u[..nnz],
            &data[..nnz],
        )
    })
}

/// The exact cosine of each pair of sparse rows (`a[i]`, `b[i]`), two CSR matrices (sorted
/// indices, `float32` data) with the same number of rows: the verified join's cosine, bit for
/// bit.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn cosines_csr<'py>(
    py: Python<'py>,
    a_indptr: PyReadonlyArray1<'py, i64>,
    a_indices: PyReadonlyArray1<'py, i64>,
    a_data: PyReadonlyArray1<'py, f32>,
    b_indptr: PyReadonlyArray1<'py, i64>,
    b_indices: PyReadonlyArray1<'py, i64>,
    b_data: PyReadonlyArray1<'py, f32>,
    cols: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let a = csr_view(
        contiguous(&a_indptr, "a_indptr")?,
        contiguous(&a_indices, "a_indices")?,
        contiguous(&a_data, "a_data")?,
        cols,
        "a",
    )?;
    let b = csr_view(
        contiguous(&b_indptr, "b_indptr")?,
        contiguous(&b_indices, "b_indices")?,
        contiguous(&b_data, "b_data")?,
        cols,
        "b",
    )?;
    if a.rows() != b.rows() {
        return Err(to_py(Error::LengthMismatch {
            what: "a vs b rows",
            left: a.rows(),
            right: b.rows(),
        }));
    }
    let c = py.detach(|| -> simlsh::Result<Vec<f64>> {
        let (va, vb) = (CsrVectors::new(a)?, CsrVectors::new(b)?);
        Ok((0..va.len()).map(|i| va.cosine_with(i, &vb, i)).collect())
    });
    Ok(c.py()?.into_pyarray(py))
}
