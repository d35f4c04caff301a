//! Re-ranking the hits of an index search: the Hamming candidates an index found for each
//! query, scored by the exact cosine of the vectors the index was built from.

use rayon::prelude::*;

use super::Vectors;
use super::rerank::{check_ids, top_by_cosine};
use crate::error::{Error, Result};
use crate::index::{Hit, Id};
use crate::signature::SignatureMatrix;

/// A hit re-ranked by exact cosine: the stored id, its Hamming distance to the query (as the
/// index reported it), and the exact cosine of the query's vector with the base row `id`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reranked {
    /// The stored id (row `id` of the base).
    pub id: Id,
    /// Hamming distance of the stored code to the query's.
    pub distance: u32,
    /// Exact cosine of the query's vector with the base row.
    pub cosine: f64,
}

/// How the base rows given for a re-rank disagree with the index that found the hits: they
/// are not the rows the index was built from (row `i` stored under id `i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseMismatch {
    /// The index returned an id that is no row of the base.
    NoRow {
        /// The id.
        id: Id,
        /// The base's number of rows.
        rows: usize,
    },
    /// The base row of a hit is not at the Hamming distance the index reported.
    Distance {
        /// The query (its row).
        query: usize,
        /// The base row (the hit's id).
        row: usize,
        /// The distance of the base row's code to the query's.
        found: u32,
        /// The distance the index reported.
        reported: u32,
    },
}

/// Checks the hits `found[q]` of each query (row `q` of `query_sigs`) against the base's
/// codes: every id must be a row of `base_sigs`, and that row's code must be at the Hamming
/// distance the index reported. `Ok(None)` when the base is consistent with the hits, else
/// the first mismatch (in query order, then hit order). In parallel over the queries.
///
/// ```
/// use simlsh::index::{HammingIndex, LinearScan};
/// use simlsh::verify::{BaseMismatch, check_base};
/// use simlsh::SignatureMatrix;
///
/// let base = SignatureMatrix::from_parts(64, vec![0b1u64, 0b11, 0b111])?;
/// let queries = SignatureMatrix::from_parts(64, vec![0b1u64])?;
/// let found = LinearScan::build(&base)?.knn_batch(queries.as_slice(), 2)?;
/// assert_eq!(check_base(&found, &queries, &base)?, None);
/// let other = SignatureMatrix::from_parts(64, vec![0b1u64, 0b1111, 0b111])?;
/// assert_eq!(
///     check_base(&found, &queries, &other)?,
///     Some(BaseMismatch::Distance { query: 0, row: 1, found: 3, reported: 1 })
/// );
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::LengthMismatch`] if `found` and `query_sigs` have different numbers of rows;
/// [`Error::BitsMismatch`] if the queries and the base have different widths.
pub fn check_base<S: AsRef<[u64]> + Sync, T: AsRef<[u64]> + Sync>(
    found: &[Vec<Hit>],
    query_sigs: &SignatureMatrix<S>,
    base_sigs: &SignatureMatrix<T>,
) -> Result<Option<BaseMismatch>> {
    if found.len() != query_sigs.len() {
        return Err(Error::LengthMismatch {
            what: "hit lists vs query signatures",
            left: found.len(),
            right: query_sigs.len(),
        });
    }
    if query_sigs.bits() != base_sigs.bits() {
        return Err(Error::BitsMismatch {
            expected: base_sigs.bits(),
            got: query_sigs.bits(),
        });
    }
    let rows = base_sigs.len();
    let first: Vec<Option<BaseMismatch>> = found
        .par_iter()
        .enumerate()
        .map(|(q, hits)| -> Result<Option<BaseMismatch>> {
            for h in hits {
                let row = h.id as usize;
                if row >= rows {
                    return Ok(Some(BaseMismatch::NoRow { id: h.id, rows }));
                }
                let d = crate::hamming::distance(query_sigs.row(q), base_sigs.row(row))?;
                if d != h.distance {
                    return Ok(Some(BaseMismatch::Distance {
                        query: q,
                        row,
                        found: d,
                        reported: h.distance,
                    }));
                }
            }
            Ok(None)
        })
        .collect::<Result<_>>()?;
    Ok(first.into_iter().flatten().next())
}

/// The hits `found[q]` of each query (row `q` of `queries`) scored by the exact cosine of
/// `queries` row `q` with `base` row `id` (the index stores row `i` of `base` under id `i`;
/// [`check_base`] checks it from the codes), the `k` of highest cosine kept, highest first,
/// ties by the smaller id. In parallel over the queries. [`rerank`](super::rerank) searches
/// and re-ranks in one call; this takes the hits of a search already made (by radius, by
/// k-NN, with the [`Featureless`](crate::index::Featureless) rule, in batches).
///
/// ```
/// use simlsh::index::{HammingIndex, LinearScan};
/// use simlsh::verify::{DenseVectors, rerank_hits};
/// use simlsh::{HyperplaneSigner, Signer};
/// use ndarray::array;
///
/// let base = array![[1.0f32, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]];
/// let signer = HyperplaneSigner::builder().dim(2).bits(64).seed(3).build()?;
/// let index = LinearScan::build(&signer.sign_dense(&base)?)?;
/// let q = array![[0.9f32, 0.5]];
/// let found = index.knn_batch(signer.sign_dense(&q)?.as_slice(), 4)?;
/// let top = rerank_hits(&found, &DenseVectors::new(q.view())?, &DenseVectors::new(base.view())?, 2)?;
/// assert_eq!(top[0].iter().map(|h| h.id).collect::<Vec<_>>(), vec![1, 0]);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::LengthMismatch`] if `found` and `queries` have different numbers of rows;
/// [`Error::InvalidParameter`] if a hit's id has no row in `base`.
pub fn rerank_hits<V: Vectors>(
    found: &[Vec<Hit>],
    queries: &V,
    base: &V,
    k: usize,
) -> Result<Vec<Vec<Reranked>>> {
    if found.len() != queries.len() {
        return Err(Error::LengthMismatch {
            what: "hit lists vs query vectors",
            left: found.len(),
            right: queries.len(),
        });
    }
    found
        .par_iter()
        .enumerate()
        .map(|(q, hits)| {
            check_ids(hits, base.len())?;
            let scored = hits
                .iter()
                .map(|h| (h.id, queries.cosine_with(q, base, h.id as usize)))
                .collect();
            Ok(top_by_cosine(scored, k)
                .into_iter()
                .map(|(id, cosine)| Reranked {
                    id,
                    // Ids are distinct in one hit list.
                    distance: hits.iter().find(|h| h.id == id).map_or(0, |h| h.distance),
                    cosine,
                })
                .collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{HammingIndex, LinearScan};
    use crate::verify::DenseVectors;
    use ndarray::Array2;

    /// A brute-force oracle: every hit scored by the exact cosine of the raw rows (f64), sorted
    /// by cosine descending then id, cut to k.
    fn oracle(
        found: &[Vec<Hit>],
        q: &Array2<f32>,
        b: &Array2<f32>,
        k: usize,
    ) -> Vec<Vec<(Id, u32)>> {
        let cos = |x: ndarray::ArrayView1<f32>, y: ndarray::ArrayView1<f32>| {
            let d: f64 = x
                .iter()
                .zip(y)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum();
            let n = |v: ndarray::ArrayView1<f32>| {
                v.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt()
            };
            d / (n(x) * n(y))
        };
        found
            .iter()
            .enumerate()
            .map(|(qi, hits)| {
                let mut s: Vec<(Id, u32, f64)> = hits
                    .iter()
                    .map(|h| (h.id, h.distance, cos(q.row(qi), b.row(h.id as usize))))
                    .collect();
                s.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
                s.into_iter().take(k).map(|(i, d, _)| (i, d)).collect()
            })
            .collect()
    }

    fn data(n: usize, dim: usize, seed: u64) -> Array2<f32> {
        let mut rng = crate::rng::Rng::new(seed);
        Array2::from_shape_fn((n, dim), |_| (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0)
    }

    #[test]
    fn reranked_hits_are_the_oracles_top_k_with_the_reported_distances() {
        let (base, queries) = (data(300, 12, 1), data(40, 12, 2));
        let signer = crate::HyperplaneSigner::builder()
            .dim(12)
            .bits(64)
            .seed(5)
            .build()
            .unwrap();
        let (bs, qs) = (
            crate::Signer::sign_dense(&signer, &base).unwrap(),
            crate::Signer::sign_dense(&signer, &queries).unwrap(),
        );
        let index = LinearScan::build(&bs).unwrap();
        let found = index.knn_batch(qs.as_slice(), 30).unwrap();
        assert_eq!(check_base(&found, &qs, &bs).unwrap(), None);
        let (qv, bv) = (
            DenseVectors::new(queries.view()).unwrap(),
            DenseVectors::new(base.view()).unwrap(),
        );
        for k in [1, 7, 30, 50] {
            let got = rerank_hits(&found, &qv, &bv, k).unwrap();
            let got: Vec<Vec<(Id, u32)>> = got
                .iter()
                .map(|h| h.iter().map(|r| (r.id, r.distance)).collect())
                .collect();
            assert_eq!(got, oracle(&found, &queries, &base, k), "k = {k}");
        }
    }

    #[test]
    fn a_base_other_than_the_indexed_rows_is_found() {
        let base = SignatureMatrix::from_parts(64, vec![0b1u64, 0b11, 0b111, 0]).unwrap();
        let qs = SignatureMatrix::from_parts(64, vec![0b1u64, 0b111]).unwrap();
        let found = LinearScan::build(&base)
            .unwrap()
            .knn_batch(qs.as_slice(), 4)
            .unwrap();
        // Fewer rows than the index's ids: the first hit beyond them, in hit order (query 0
        // finds 0, then 1 and 3 at distance 1, then 2).
        let short = SignatureMatrix::from_parts(64, vec![0b1u64, 0b11]).unwrap();
        assert_eq!(
            check_base(&found, &qs, &short).unwrap(),
            Some(BaseMismatch::NoRow { id: 3, rows: 2 })
        );
        // One row changed: the first query naming it, in query order.
        let changed = SignatureMatrix::from_parts(64, vec![0b1u64, 0b11, 0b111, 0b1111]).unwrap();
        assert_eq!(
            check_base(&found, &qs, &changed).unwrap(),
            Some(BaseMismatch::Distance {
                query: 0,
                row: 3,
                found: 3,
                reported: 1
            })
        );
        // Widths and lengths are checked first.
        let wide = SignatureMatrix::from_parts(128, vec![0u64; 8]).unwrap();
        assert!(matches!(
            check_base(&found, &qs, &wide),
            Err(Error::BitsMismatch { .. })
        ));
        assert!(matches!(
            check_base(&found[..1], &qs, &base),
            Err(Error::LengthMismatch { .. })
        ));
    }

    #[test]
    fn hits_beyond_the_base_are_an_error() {
        let x = data(3, 4, 9);
        let v = DenseVectors::new(x.view()).unwrap();
        let found = vec![vec![Hit { id: 3, distance: 0 }]; 3];
        assert!(matches!(
            rerank_hits(&found, &v, &v, 1),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            rerank_hits(&found[..2], &v, &v, 1),
            Err(Error::LengthMismatch { .. })
        ));
    }
}
