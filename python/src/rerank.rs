//! Re-ranking candidates by exact cosine (the library's one re-ranker, `verify::RerankIds`): the k-NN users
//! want, from the Hamming candidates of an index's `search` (FAISS-shaped ids, `-1` for missing).

use numpy::{PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;
use simlsh::verify::{CsrRows, DenseRows, RerankIds, Vectors};

use crate::arrays::{Rows, VectorsArg, result_array};
use crate::errors::{IntoPy, value_error};
use crate::threads::Threads;

type Reranked<'py> = (Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<i64>>);

/// The best `k` of each query's candidates, in chunks of queries between which Ctrl-C is
/// noticed, laid out as `(D, I)` of shape `(nq, k)` (`-inf`/`-1` where a query has fewer).
fn rerank_rows<'py, V: Vectors>(
    py: Python<'py>,
    t: &Threads,
    r: &RerankIds<'_, V, ndarray::ArrayView2<'_, i64>>,
    nq: usize,
    k: usize,
) -> PyResult<Reranked<'py>> {
    let mut d = result_array(nq, k, f32::NEG_INFINITY, "re-ranked cosines")?;
    let mut i = result_array(nq, k, -1i64, "re-ranked ids")?;
    t.chunked(py, nq, 2048, |rows| {
        for (q, best) in (rows.start..).zip(r.rows(rows).py()?) {
            for (c, (id, cos)) in best.into_iter().enumerate() {
                (d[q * k + c], i[q * k + c]) = (cos as f32, id as i64);
            }
        }
        Ok(())
    })?;
    Ok(crate::arrays::layout(py, k, d, i))
}

/// Re-ranks candidates: for query row `q`, the ids `ids[q]` scored by the exact cosine of
/// `queries[q]` with `base[id]` (in `f64`), the best `k` returned; `queries` and `base` both
/// dense or both CSR.
#[pyfunction]
#[pyo3(signature = (queries, base, ids, k, threads = None))]
pub fn rerank<'py>(
    py: Python<'py>,
    queries: VectorsArg<'py>,
    base: VectorsArg<'py>,
    ids: PyReadonlyArray2<'py, i64>,
    k: usize,
    threads: Option<i64>,
) -> PyResult<Reranked<'py>> {
    let t = Threads::new(threads)?;
    let ids = ids.as_array();
    match (queries.rows("queries")?, base.rows("base")?) {
        (Rows::Dense(q), Rows::Dense(b)) => {
            let (q, b) = (DenseRows::new(q).py()?, DenseRows::new(b).py()?);
            rerank_rows(py, &t, &RerankIds::new(&q, &b, &ids, k).py()?, q.len(), k)
        }
        (Rows::Csr(q), Rows::Csr(b)) => {
            let (q, b) = (CsrRows::new(q).py()?, CsrRows::new(b).py()?);
            rerank_rows(py, &t, &RerankIds::new(&q, &b, &ids, k).py()?, q.len(), k)
        }
        _ => Err(value_error(
            "queries and base must be vectors of one kind (dense or CSR)",
        )),
    }
}
