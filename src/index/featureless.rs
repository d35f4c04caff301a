//! Rows without features in index searches: the one rule of every front end.
//!
//! A simlsh signer gives the all-zero code to every row without features (an empty document,
//! a zero vector), and to a row with features only with probability `2^-f` for Gaussian
//! hyperplanes: the all-zero code says nothing of a direction. As rows without features pair
//! with no one in joins, they are no one's neighbours in searches: an all-zero query has no
//! hits, and a stored all-zero code is never returned. The rule holds for every index,
//! whether or not it records the signer of its codes (codes added from Python record none).
//! [`Featureless::none`] searches codes as codes, for codes that are not signatures.
//!
//! ```
//! use simlsh::index::{Featureless, HammingIndex, LinearScan};
//! use simlsh::SignatureMatrix;
//!
//! let codes = SignatureMatrix::from_parts(64, vec![0u64, 0b1, 0b11])?;
//! let index = LinearScan::build(&codes)?;
//! let rule = Featureless::of(&index)?;
//! assert_eq!(rule.stored(), &[0]);
//! // The nearest of 0b1: 0b1 itself, then 0b11; the all-zero code at distance 1 is left out.
//! let hits = rule.knn_batch(&index, &[0b1, 0], 2)?;
//! assert_eq!(hits[0].iter().map(|h| h.id).collect::<Vec<_>>(), vec![1, 2]);
//! assert!(hits[1].is_empty()); // an all-zero query has no neighbours
//! // Codes as codes: the all-zero code is a neighbour like any other.
//! let all = Featureless::none().knn_batch(&index, &[0b1], 2)?;
//! assert_eq!(all[0].iter().map(|h| h.id).collect::<Vec<_>>(), vec![1, 0]);
//! # Ok::<(), simlsh::Error>(())
//! ```

use super::{HammingIndex, Hit, Id, check_queries};
use crate::error::Result;
use crate::signature::SignatureMatrix;

/// The featureless-row rule of one index's searches: the ids of its stored all-zero codes
/// (found once, with one exact radius-0 search), left out of every result, and all-zero
/// queries answered with no hits. Computed again after the index changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Featureless {
    /// Whether the rule applies (false: codes as codes).
    active: bool,
    /// Ids of the stored all-zero codes, sorted.
    stored: Vec<Id>,
}

impl Featureless {
    /// The rule for `index`: its stored all-zero codes are featureless.
    ///
    /// # Errors
    /// The index's errors.
    pub fn of(index: &dyn HammingIndex) -> Result<Self> {
        let mut stored: Vec<Id> = if index.is_empty() {
            Vec::new()
        } else {
            let zero = vec![0u64; crate::signature::words_for(index.bits())];
            index.radius(&zero, 0)?.into_iter().map(|h| h.id).collect()
        };
        stored.sort_unstable();
        Ok(Featureless {
            active: true,
            stored,
        })
    }

    /// The rule for a matrix of codes whose row `i` has id `i` (the input of a join or a k-NN
    /// graph): its all-zero rows are featureless ([`stored`](Self::stored) lists them), and a
    /// join or graph leaves them out ([`join::self_join_active`](crate::join::self_join_active),
    /// [`join::knn_graph_active`](crate::join::knn_graph_active)), as searches do.
    ///
    /// ```
    /// use simlsh::index::Featureless;
    /// use simlsh::SignatureMatrix;
    ///
    /// let codes = SignatureMatrix::from_parts(128, vec![0u64, 0, 5, 0, 0, 1])?;
    /// assert_eq!(Featureless::of_codes(&codes).stored(), &[0]);
    /// assert!(Featureless::none().stored().is_empty());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    pub fn of_codes<S: AsRef<[u64]>>(codes: &SignatureMatrix<S>) -> Self {
        let rule = Featureless {
            active: true,
            stored: Vec::new(),
        };
        let stored = codes
            .rows()
            .enumerate()
            .filter(|(_, c)| rule.is_featureless(c))
            .map(|(i, _)| i as Id)
            .collect();
        Featureless { stored, ..rule }
    }

    /// No rule: every code is searched as a code (codes that are not signatures of vectors).
    pub fn none() -> Self {
        Featureless::default()
    }

    /// Checks the rows without features that a caller names among `n` queries (for
    /// [`knn_batch_except`](Self::knn_batch_except) and
    /// [`radius_batch_except`](Self::radius_batch_except), before searching the queries in
    /// parts): increasing, each below `n`, and none under [`none`](Self::none).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) naming the first bad row.
    pub fn check_rows(&self, n: usize, rows: &[u32]) -> Result<()> {
        if !self.active && !rows.is_empty() {
            let reason = "rows without features given where codes are searched as codes";
            return Err(crate::error::Error::param("featureless", reason));
        }
        crate::join::check_featureless(n, rows)
    }

    /// Whether the rule applies.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// The ids of the stored featureless codes, sorted.
    pub fn stored(&self) -> &[Id] {
        &self.stored
    }

    /// Whether `code` is a featureless row's code under this rule (all zero).
    pub fn is_featureless(&self, code: &[u64]) -> bool {
        self.active && code.iter().all(|&w| w == 0)
    }

    /// Whether a hit is a stored featureless code.
    fn hides(&self, h: &Hit) -> bool {
        self.stored.binary_search(&h.id).is_ok()
    }

    /// The `k` nearest stored codes of each query (row-major), as
    /// [`HammingIndex::knn_batch`], the featureless ones left out: `k` plus their number are
    /// asked for, so that each query still gets its `k` nearest others.
    ///
    /// # Errors
    /// As [`HammingIndex::knn_batch`].
    pub fn knn_batch(
        &self,
        index: &dyn HammingIndex,
        queries: &[u64],
        k: usize,
    ) -> Result<Vec<Vec<Hit>>> {
        self.knn_batch_except(index, queries, k, &[])
    }

    /// As [`knn_batch`](Self::knn_batch), the queries at `rows` (row numbers, increasing)
    /// also featureless whatever their codes: a caller's rows without features (the empty
    /// documents of a dedup's result, say), which get no hits. Under [`none`](Self::none)
    /// no query is featureless and `rows` must be empty.
    ///
    /// # Errors
    /// As [`HammingIndex::knn_batch`]; [`Error::InvalidParameter`](crate::Error::InvalidParameter)
    /// if `rows` is not increasing, names a query beyond the last, or is given under
    /// [`none`](Self::none).
    pub fn knn_batch_except(
        &self,
        index: &dyn HammingIndex,
        queries: &[u64],
        k: usize,
        rows: &[u32],
    ) -> Result<Vec<Vec<Hit>>> {
        let ask = k.saturating_add(self.stored.len()).min(index.len().max(k));
        self.filtered(index, queries, rows, |q| index.knn_batch(q, ask), Some(k))
    }

    /// Every stored code within `r` of each query, as [`HammingIndex::radius_batch`], the
    /// featureless ones left out.
    ///
    /// # Errors
    /// As [`HammingIndex::radius_batch`].
    pub fn radius_batch(
        &self,
        index: &dyn HammingIndex,
        queries: &[u64],
        r: u32,
    ) -> Result<Vec<Vec<Hit>>> {
        self.radius_batch_except(index, queries, r, &[])
    }

    /// As [`radius_batch`](Self::radius_batch), the queries at `rows` also featureless (see
    /// [`knn_batch_except`](Self::knn_batch_except)).
    ///
    /// # Errors
    /// As [`knn_batch_except`](Self::knn_batch_except).
    pub fn radius_batch_except(
        &self,
        index: &dyn HammingIndex,
        queries: &[u64],
        r: u32,
        rows: &[u32],
    ) -> Result<Vec<Vec<Hit>>> {
        self.filtered(index, queries, rows, |q| index.radius_batch(q, r), None)
    }

    /// `search` of the queries that have features (neither all zero nor in `rows`), their
    /// hits filtered (and cut to `k`).
    fn filtered(
        &self,
        index: &dyn HammingIndex,
        queries: &[u64],
        rows: &[u32],
        search: impl Fn(&[u64]) -> Result<Vec<Vec<Hit>>>,
        k: Option<usize>,
    ) -> Result<Vec<Vec<Hit>>> {
        let w = check_queries(index.bits(), queries)?;
        self.check_rows(queries.len() / w, rows)?;
        if !self.active {
            return search(queries);
        }
        let has = crate::join::with_features_flags(queries.len() / w, rows)?;
        let zero: Vec<bool> = queries
            .chunks_exact(w)
            .zip(has)
            .map(|(q, has)| !has || self.is_featureless(q))
            .collect();
        let found = if zero.iter().any(|&z| z) {
            let kept: Vec<u64> = queries
                .chunks_exact(w)
                .zip(&zero)
                .filter(|(_, z)| !**z)
                .flat_map(|(q, _)| q.iter().copied())
                .collect();
            let mut hits = search(&kept)?.into_iter();
            zero.iter()
                .map(|&z| {
                    if z {
                        Vec::new()
                    } else {
                        hits.next().unwrap_or_default()
                    }
                })
                .collect()
        } else {
            search(queries)?
        };
        Ok(found
            .into_iter()
            .map(|mut hits| {
                if !self.stored.is_empty() {
                    hits.retain(|h| !self.hides(h));
                }
                if let Some(k) = k {
                    hits.truncate(k);
                }
                hits
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SignatureMatrix;
    use crate::index::{LinearScan, MultiIndex};
    use crate::rng::mix64;

    /// The rule by brute force: featureless queries have no hits, featureless stored codes
    /// are none; the others by (distance, id).
    fn oracle(codes: &[u64], w: usize, q: &[u64], within: impl Fn(usize, u32) -> bool) -> Vec<Hit> {
        if q.iter().all(|&x| x == 0) {
            return Vec::new();
        }
        let mut hits: Vec<Hit> = codes
            .chunks_exact(w)
            .enumerate()
            .filter(|(_, c)| c.iter().any(|&x| x != 0))
            .map(|(id, c)| Hit {
                distance: c.iter().zip(q).map(|(a, b)| (a ^ b).count_ones()).sum(),
                id: id as Id,
            })
            .collect();
        hits.sort();
        hits.into_iter()
            .enumerate()
            .filter(|(rank, h)| within(*rank, h.distance))
            .map(|(_, h)| h)
            .collect()
    }

    #[test]
    fn searches_leave_featureless_rows_out_as_brute_force_does() {
        let (bits, n, w) = (128, 300, 2);
        // Few random bits set, so that radius searches find many; every 7th code all zero.
        let codes: Vec<u64> = (0..n * w)
            .map(|i| {
                let r = mix64(i as u64 + 11);
                if (i / w) % 7 == 3 {
                    0
                } else {
                    r & mix64(r) & mix64(r ^ 5)
                }
            })
            .collect();
        let queries: Vec<u64> = codes[..40 * w].to_vec();
        let sigs = SignatureMatrix::from_parts(bits, codes.clone()).unwrap();
        let indexes: Vec<Box<dyn HammingIndex>> = vec![
            Box::new(LinearScan::build(&sigs).unwrap()),
            Box::new(MultiIndex::build(&sigs).unwrap()),
        ];
        for index in &indexes {
            let rule = Featureless::of(index.as_ref()).unwrap();
            assert_eq!(rule.stored().len(), n.div_ceil(7));
            let knn = rule.knn_batch(index.as_ref(), &queries, 5).unwrap();
            let radius = rule.radius_batch(index.as_ref(), &queries, 20).unwrap();
            for (q, code) in queries.chunks_exact(w).enumerate() {
                assert_eq!(
                    knn[q],
                    oracle(&codes, w, code, |rank, _| rank < 5),
                    "knn {q}"
                );
                assert_eq!(
                    radius[q],
                    oracle(&codes, w, code, |_, d| d <= 20),
                    "radius {q}"
                );
            }
            // Queries named featureless (whatever their codes) get no hits; the others
            // are answered as without names.
            let named = [0u32, 2, 17, 39];
            let knn_named = rule
                .knn_batch_except(index.as_ref(), &queries, 5, &named)
                .unwrap();
            let radius_named = rule
                .radius_batch_except(index.as_ref(), &queries, 20, &named)
                .unwrap();
            for q in 0..40 {
                let hidden = named.contains(&(q as u32));
                assert!(!hidden || knn_named[q].is_empty() && radius_named[q].is_empty());
                assert!(hidden || knn_named[q] == knn[q] && radius_named[q] == radius[q]);
            }
            assert!(named.iter().any(|&q| !knn[q as usize].is_empty()));
            // Without the rule: the index's own answers.
            let none = Featureless::none();
            assert_eq!(
                none.knn_batch(index.as_ref(), &queries, 5).unwrap(),
                index.knn_batch(&queries, 5).unwrap()
            );
            // Named rows out of order, beyond the queries, or where codes are codes: errors.
            for (rule, rows, says) in [
                (
                    &rule,
                    &[3u32, 2][..],
                    "rows must be increasing, 2 comes after 3",
                ),
                (&rule, &[40u32][..], "row 40 beyond the 40 rows"),
                (&none, &[1u32][..], "searched as codes"),
            ] {
                let e = rule
                    .knn_batch_except(index.as_ref(), &queries, 5, rows)
                    .unwrap_err();
                assert!(e.to_string().contains(says), "{e}");
                assert!(
                    rule.radius_batch_except(index.as_ref(), &queries, 5, rows)
                        .is_err()
                );
            }
        }
    }
}
