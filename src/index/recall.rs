//! Recall@k of approximate k-NN answers: tie-aware ([`recall_at_k`]) and plain, side by
//! side ([`recall`]).

use crate::index::{Hit, Id};

/// Recall@k of approximate k-NN results against exact ones, over all queries: the fraction
/// of the exact results matched, where a returned hit counts as correct if its id is among
/// the exact results *or* its distance is at most the exact `k`-th distance (so a different
/// id tied at the `k`-th distance is not a miss). At most `exact[i].len()` hits count per
/// query, each id once.
///
/// Queries are paired by position; a query missing from `approx` counts as all missed, extra
/// entries of `approx` are ignored. Returns 1 when `exact` holds no hit at all.
pub fn recall_at_k(approx: &[Vec<Hit>], exact: &[Vec<Hit>]) -> f64 {
    let (mut found, mut total) = (0usize, 0usize);
    let mut good: Vec<Id> = Vec::new();
    for (i, ex) in exact.iter().enumerate() {
        total += ex.len();
        let Some(kth) = ex.iter().map(|h| h.distance).max() else {
            continue;
        };
        good.clear();
        if let Some(ap) = approx.get(i) {
            good.extend(
                ap.iter()
                    .filter(|h| h.distance <= kth || ex.iter().any(|e| e.id == h.id))
                    .map(|h| h.id),
            );
        }
        good.sort_unstable();
        good.dedup();
        found += good.len().min(ex.len());
    }
    if total == 0 {
        1.0
    } else {
        found as f64 / total as f64
    }
}

/// Recall@k two ways, over all queries (see [`recall`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recall {
    /// The fraction of the exact ids returned.
    pub plain: f64,
    /// [`recall_at_k`]: a returned hit at most at the exact `k`-th distance counts too (a
    /// different id tied at the `k`-th distance is not a miss), as Vespa measures.
    pub tie_aware: f64,
}

/// Plain and tie-aware recall@k of `approx` against `exact` (queries paired by position, as
/// [`recall_at_k`]). On wide codes many neighbours tie at the `k`-th distance, and which of
/// them the exact scan lists is the tie-break by id: the plain measure counts an equally
/// near neighbour as a miss, the tie-aware one does not.
///
/// ```
/// use simlsh::index::{Hit, recall};
/// let h = |distance, id| Hit { distance, id };
/// let exact = vec![vec![h(1, 4), h(3, 7)]];
/// let r = recall(&[vec![h(1, 4), h(3, 9)]], &exact);
/// assert_eq!((r.plain, r.tie_aware), (0.5, 1.0));
/// ```
pub fn recall(approx: &[Vec<Hit>], exact: &[Vec<Hit>]) -> Recall {
    let (mut found, mut total) = (0usize, 0usize);
    for (i, ex) in exact.iter().enumerate() {
        total += ex.len();
        if let Some(ap) = approx.get(i) {
            let mut ids: Vec<Id> = ap
                .iter()
                .filter(|h| ex.iter().any(|e| e.id == h.id))
                .map(|h| h.id)
                .collect();
            ids.sort_unstable();
            ids.dedup();
            found += ids.len();
        }
    }
    Recall {
        plain: if total == 0 {
            1.0
        } else {
            found as f64 / total as f64
        },
        tie_aware: recall_at_k(approx, exact),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_counts_ties_at_the_kth_distance() {
        let h = |distance, id| Hit { distance, id };
        let exact = vec![vec![h(1, 4), h(2, 7), h(3, 1)], vec![h(0, 2)], vec![]];
        // Query 0: id 9 at the k-th distance counts (tie), id 5 at 4 does not.
        let approx = vec![vec![h(1, 4), h(3, 9), h(4, 5)], vec![h(0, 2)], vec![]];
        assert!((recall_at_k(&approx, &exact) - 3.0 / 4.0).abs() < 1e-12);
        assert_eq!(recall_at_k(&exact, &exact), 1.0);
        assert_eq!(recall_at_k(&[], &exact), 0.0);
        assert_eq!(recall_at_k(&[], &[]), 1.0);
        // A repeated id counts once.
        let dup = vec![vec![h(1, 4), h(1, 4), h(1, 4)]];
        assert!((recall_at_k(&dup, &exact[..1]) - 1.0 / 3.0).abs() < 1e-12);
        // Plain recall counts the ids only: query 0 finds 4 of 4, 7, 1; query 1 finds 2.
        let r = recall(&approx, &exact);
        assert!((r.plain - 2.0 / 4.0).abs() < 1e-12 && r.tie_aware == recall_at_k(&approx, &exact));
        assert!((recall(&dup, &exact[..1]).plain - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(recall(&[], &[]).plain, 1.0);
    }
}
