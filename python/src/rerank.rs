//! Re-ranking candidates by exact cosine: the k-NN users want, from the Hamming candidates of
//! an index's `search` (FAISS-shaped ids, `-1` for missing).

use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::arrays::contiguous;
use crate::arrays::result_array;
use crate::errors::value_error;
use crate::threads::Threads;

type Reranked<'py> = (Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<i64>>);

/// One query's candidates scored by `cosine(id)`, sorted by cosine (highest first, ties by the
/// smaller id), duplicates dropped, the best `k` kept; `-1` ids skipped; an id outside
/// `0..n` is an error naming the query row and column.
fn best<E>(
    q: usize,
    ids: &[i64],
    n: usize,
    k: usize,
    mut cosine: impl FnMut(usize) -> Result<f64, E>,
) -> Result<Vec<(i64, f64)>, String>
where
    E: std::fmt::Display,
{
    let mut scored = Vec::with_capacity(ids.len());
    for (c, &id) in ids.iter().enumerate() {
        if id == -1 {
            continue;
        }
        if id < 0 || id as u64 >= n as u64 {
            return Err(format!(
                "ids[{q}, {c}] = {id} has no row among the {n} base vectors"
            ));
        }
        let cos = cosine(id as usize).map_err(|e| e.to_string())?;
        scored.push((id, cos));
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.dedup_by_key(|s| s.0);
    scored.truncate(k);
    Ok(scored)
}

/// Lays the per-query results out as `(D, I)` of shape `(nq, k)`, `-inf`/`-1` where a query
/// has fewer than `k` candidates.
fn layout<'py>(py: Python<'py>, rows: Vec<Vec<(i64, f64)>>, k: usize) -> PyResult<Reranked<'py>> {
    let nq = rows.len();
    let mut d = result_array(nq, k, f32::NEG_INFINITY, "re-ranked cosines")?;
    let mut i = result_array(nq, k, -1i64, "re-ranked ids")?;
    for (q, row) in rows.into_iter().enumerate() {
        for (c, (id, cos)) in row.into_iter().enumerate() {
            d[q * k + c] = cos as f32;
            i[q * k + c] = id;
        }
    }
    Ok(crate::arrays::layout(py, k, d, i))
}

/// Scores every query (`f(q)`: its best candidates) in parallel, in chunks between which
/// Ctrl-C is noticed.
fn score_all<F>(py: Python<'_>, t: &Threads, nq: usize, f: F) -> PyResult<Vec<Vec<(i64, f64)>>>
where
    F: Fn(usize) -> Result<Vec<(i64, f64)>, String> + Sync,
{
    let mut out = Vec::with_capacity(nq);
    t.chunked(py, nq, 2048, |r| {
        let part: Result<Vec<_>, String> = r.into_par_iter().map(&f).collect();
        out.extend(part.map_err(value_error)?);
        Ok(())
    })?;
    Ok(out)
}

fn check_finite(what: &str, row: usize, values: &[f32]) -> Result<f64, String> {
    let mut s = 0f64;
    for (c, &v) in values.iter().enumerate() {
        if !v.is_finite() {
            return Err(format!("{what}[{row}, {c}] = {v} is not finite"));
        }
        s += f64::from(v) * f64::from(v);
    }
    Ok(s.sqrt())
}

fn common_checks(nq: usize, id_rows: usize, k: usize) -> PyResult<()> {
    if k == 0 {
        return Err(value_error("k must be at least 1"));
    }
    if id_rows != nq {
        return Err(value_error(format!(
            "ids has {id_rows} rows for {nq} queries"
        )));
    }
    Ok(())
}

/// Re-ranks dense candidates: for query row `q`, the ids `ids[q]` scored by the exact cosine
/// of `queries[q]` with `base[id]` (in `f64`), the best `k` returned.
#[pyfunction]
#[pyo3(signature = (queries, base, ids, k, threads = None))]
pub fn rerank_dense<'py>(
    py: Python<'py>,
    queries: PyReadonlyArray2<'py, f32>,
    base: PyReadonlyArray2<'py, f32>,
    ids: PyReadonlyArray2<'py, i64>,
    k: usize,
    threads: Option<i64>,
) -> PyResult<Reranked<'py>> {
    let t = Threads::new(threads)?;
    let (qv, bv, iv) = (queries.as_array(), base.as_array(), ids.as_array());
    common_checks(qv.nrows(), iv.nrows(), k)?;
    if qv.ncols() != bv.ncols() {
        return Err(value_error(format!(
            "queries have {} columns and base vectors {}",
            qv.ncols(),
            bv.ncols()
        )));
    }
    let n = bv.nrows();
    let rows = score_all(py, &t, qv.nrows(), |q| {
        let qrow = qv.row(q).to_vec();
        let qn = check_finite("queries", q, &qrow)?;
        let cand = iv.row(q).to_vec();
        best(q, &cand, n, k, |id| -> Result<f64, String> {
            let row = bv.row(id);
            // Rows of a C-contiguous base are read in place; others gathered once.
            let b = row.as_slice().map_or_else(
                || std::borrow::Cow::Owned(row.to_vec()),
                std::borrow::Cow::Borrowed,
            );
            let bn = simlsh::verify::dot(&b, &b);
            if !bn.is_finite() {
                check_finite("base", id, &b)?;
            }
            let norm = qn * bn.sqrt();
            Ok(if norm > 0.0 {
                simlsh::verify::dot(&qrow, &b) / norm
            } else {
                0.0
            })
        })
    })?;
    layout(py, rows, k)
}

/// A CSR matrix's row `r` as `(indices, data)`.
struct Csr<'a> {
    indptr: &'a [i64],
    indices: &'a [i64],
    data: &'a [f32],
}

impl Csr<'_> {
    fn rows(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }

    fn row(&self, what: &str, r: usize) -> Result<(&[i64], &[f32]), String> {
        let (a, b) = (self.indptr[r], self.indptr[r + 1]);
        if a < 0 || b < a || b as u64 > self.indices.len().min(self.data.len()) as u64 {
            return Err(format!(
                "{what}: indptr[{r}..={}] = {a}, {b} out of range",
                r + 1
            ));
        }
        let (idx, val) = (
            &self.indices[a as usize..b as usize],
            &self.data[a as usize..b as usize],
        );
        if let Some(w) = idx.windows(2).position(|w| w[0] >= w[1]) {
            return Err(format!(
                "{what}: row {r} has unsorted or duplicate column indices at position {}",
                w + 1
            ));
        }
        Ok((idx, val))
    }
}

/// Sparse dot product of two rows with sorted indices, in `f64`.
fn sparse_dot(a: (&[i64], &[f32]), b: (&[i64], &[f32])) -> f64 {
    let (mut i, mut j, mut s) = (0, 0, 0f64);
    while i < a.0.len() && j < b.0.len() {
        match a.0[i].cmp(&b.0[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                s += f64::from(a.1[i]) * f64::from(b.1[j]);
                i += 1;
                j += 1;
            }
        }
    }
    s
}

/// Re-ranks sparse candidates: queries and base as CSR matrices (sorted indices, `float32`
/// data), otherwise as [`rerank_dense`].
#[pyfunction]
#[pyo3(signature = (q_indptr, q_indices, q_data, b_indptr, b_indices, b_data, ids, k, threads = None))]
#[allow(clippy::too_many_arguments)]
pub fn rerank_csr<'py>(
    py: Python<'py>,
    q_indptr: PyReadonlyArray1<'py, i64>,
    q_indices: PyReadonlyArray1<'py, i64>,
    q_data: PyReadonlyArray1<'py, f32>,
    b_indptr: PyReadonlyArray1<'py, i64>,
    b_indices: PyReadonlyArray1<'py, i64>,
    b_data: PyReadonlyArray1<'py, f32>,
    ids: PyReadonlyArray2<'py, i64>,
    k: usize,
    threads: Option<i64>,
) -> PyResult<Reranked<'py>> {
    let t = Threads::new(threads)?;
    let qm = Csr {
        indptr: contiguous(&q_indptr, "queries.indptr")?,
        indices: contiguous(&q_indices, "queries.indices")?,
        data: contiguous(&q_data, "queries.data")?,
    };
    let bm = Csr {
        indptr: contiguous(&b_indptr, "base.indptr")?,
        indices: contiguous(&b_indices, "base.indices")?,
        data: contiguous(&b_data, "base.data")?,
    };
    let iv = ids.as_array();
    common_checks(qm.rows(), iv.nrows(), k)?;
    let n = bm.rows();
    let rows = score_all(py, &t, qm.rows(), |q| {
        let qr = qm.row("queries", q)?;
        let qn = check_finite("queries.data", q, qr.1)?;
        let cand = iv.row(q).to_vec();
        best(q, &cand, n, k, |id| -> Result<f64, String> {
            let br = bm.row("base", id)?;
            let bn = check_finite("base.data", id, br.1)?;
            let norm = qn * bn;
            Ok(if norm > 0.0 {
                sparse_dot(qr, br) / norm
            } else {
                0.0
            })
        })
    })?;
    layout(py, rows, k)
}
