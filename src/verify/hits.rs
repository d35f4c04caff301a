//! Checking the base rows given for re-ranking the hits of an index search (the Hamming
//! candidates an index found for each query, scored by [`RerankIds`](super::RerankIds)): they
//! must be the rows the index was built from.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::index::{Hit, Id};
use crate::signature::SignatureMatrix;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{HammingIndex, LinearScan};

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
}
