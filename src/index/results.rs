//! Flat result arrays for batches of queries, in the shapes FAISS returns, so that bindings
//! hand them over as arrays without reshaping: [`RangeResults`] (`lims`, `ids`,
//! `distances`, as `range_search`) and [`KnnResults`] (`N × k` row-major `ids` and
//! `distances`, padded, as `search`).

use super::Hit;
use crate::error::Result;
use crate::memory;

/// Id written where a query has fewer than `k` neighbours (FAISS's `-1` label).
pub const NO_ID: i64 = -1;

/// Distance written where a query has fewer than `k` neighbours (`u32::MAX`, FAISS's largest
/// distance of binary indexes).
pub const NO_DISTANCE: u32 = u32::MAX;

/// Radius results of a batch of queries, flat (FAISS `RangeSearchResult`): the hits of
/// query `i` are `ids[lims[i]..lims[i + 1]]` and `distances[lims[i]..lims[i + 1]]`, sorted by
/// `(distance, id)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeResults {
    /// `N + 1` offsets, `lims[0] = 0`, `lims[N]` the number of hits.
    pub lims: Vec<usize>,
    /// Ids of the hits, query after query (`i64`, as FAISS labels).
    pub ids: Vec<i64>,
    /// Hamming distances of the hits.
    pub distances: Vec<u32>,
}

impl RangeResults {
    /// The flat form of per-query hit lists.
    pub fn from_hits(hits: &[Vec<Hit>]) -> Self {
        let total = hits.iter().map(Vec::len).sum();
        let mut r = RangeResults {
            lims: Vec::with_capacity(hits.len() + 1),
            ids: Vec::with_capacity(total),
            distances: Vec::with_capacity(total),
        };
        r.lims.push(0);
        for hs in hits {
            r.ids.extend(hs.iter().map(|h| i64::from(h.id)));
            r.distances.extend(hs.iter().map(|h| h.distance));
            r.lims.push(r.ids.len());
        }
        r
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.lims.len().saturating_sub(1)
    }

    /// True when there is no query.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// k-NN results of a batch of queries as two `N × k` row-major arrays (FAISS `search`):
/// row `i` holds query `i`'s neighbours sorted by `(distance, id)`; a query with fewer than
/// `k` stored codes is padded with [`NO_ID`] (`-1`) and [`NO_DISTANCE`] (`u32::MAX`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnnResults {
    /// Neighbours per query.
    pub k: usize,
    /// `N × k` ids (`i64`, `-1` for padding).
    pub ids: Vec<i64>,
    /// `N × k` distances (`u32::MAX` for padding).
    pub distances: Vec<u32>,
}

impl KnnResults {
    /// The padded form of per-query hit lists (each at most `k` long).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) when the `N × k` arrays cannot be allocated (a `k` far beyond
    /// the number of stored codes: ask for at most that many and pad, as FAISS shapes need).
    pub fn from_hits(hits: &[Vec<Hit>], k: usize) -> Result<Self> {
        let cells = hits.len().saturating_mul(k);
        let what = format!("k-NN results of {} queries × k = {k}", hits.len());
        memory::check(&what, memory::bytes_of::<(i64, u32)>(cells))?;
        let mut r = KnnResults {
            k,
            ids: memory::filled(cells, NO_ID, &what)?,
            distances: memory::filled(cells, NO_DISTANCE, &what)?,
        };
        for (i, hs) in hits.iter().enumerate() {
            for (j, h) in hs.iter().take(k).enumerate() {
                r.ids[i * k + j] = i64::from(h.id);
                r.distances[i * k + j] = h.distance;
            }
        }
        Ok(r)
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.ids.len().checked_div(self.k).unwrap_or(0)
    }

    /// True when there is no query (or `k = 0`).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_forms_follow_faiss() {
        let h = |distance, id| Hit { distance, id };
        let hits = vec![vec![h(0, 4), h(2, 1)], vec![], vec![h(1, 7)]];
        let r = RangeResults::from_hits(&hits);
        assert_eq!(r.lims, vec![0, 2, 2, 3]);
        assert_eq!(r.ids, vec![4, 1, 7]);
        assert_eq!(r.distances, vec![0, 2, 1]);
        assert_eq!(r.len(), 3);
        let k = KnnResults::from_hits(&hits, 2).unwrap();
        assert_eq!(k.ids, vec![4, 1, -1, -1, 7, -1]);
        assert_eq!(k.distances, vec![0, 2, u32::MAX, u32::MAX, 1, u32::MAX]);
        assert_eq!(k.len(), 3);
        assert!(
            RangeResults::from_hits(&[]).is_empty()
                && KnnResults::from_hits(&[], 0).unwrap().is_empty()
        );
        // A k no memory holds is an error, not an abort or an overflow.
        for k in [1 << 40, usize::MAX] {
            let e = KnnResults::from_hits(&hits, k).unwrap_err();
            assert!(matches!(e, crate::Error::OutOfMemory { .. }), "{e}");
        }
    }
}
