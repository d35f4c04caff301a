//! The cost model of probing against scanning (see the documentation of
//! [`MultiIndex`](super::MultiIndex)): estimated nanoseconds of each probe shell and of a
//! scan, and the probing rule that decides how far each substring is probed.

use super::layout::Substring;
use crate::util::binomial;

/// Cost model, in estimated nanoseconds per operation (see the documentation of [`MultiIndex`]),
/// calibrated on 10^6 codes whose tables do not fit in cache (W5: probing 256-bit codes costs
/// about 20 ns per probe and per candidate, the batched scan 1 ns per code). A probe of a
/// dense table: one directory lookup, a cache miss overlapped with the other probes of its
/// block.
pub(super) const COST_PROBE: f64 = 12.0;
/// Extra cost of a probe of a sparse table (binary search in a bucket of keys).
pub(super) const COST_SPARSE_PROBE: f64 = 10.0;
/// Cost of one candidate row: the rows entry, the visited stamp and the code, all random
/// accesses.
pub(super) const COST_CANDIDATE: f64 = 24.0;
/// Cost per candidate per code word (the distance).
pub(super) const COST_CANDIDATE_WORD: f64 = 1.0;
/// Scan cost per code word for one query (the dispatched distance kernel).
pub(super) const COST_SCAN_WORD: f64 = 0.5;
/// Scan cost per code word per query when a batch of queries shares each pass over the codes
/// (the tiled kernels).
pub(super) const COST_SCAN_WORD_BATCH: f64 = 0.25;

/// Number of shells (radii `0..shells`) substring `t` is probed at for radius `r`: the rule
/// documented on [`MultiIndex`], `r' + 1` for `t ≤ a` and `r'` for the others.
pub(super) fn shells_for(r: u64, m: usize, t: usize) -> u64 {
    let (rp, a) = (r / m as u64, (r % m as u64) as usize);
    if t <= a { rp + 1 } else { rp }
}

/// Estimated costs of probing (see the documentation of [`MultiIndex`]).
#[derive(Clone, Debug, Default)]
pub(super) struct Costs {
    /// `cum[t][j]`: cost of probing substring `t` at radii `0..=j`.
    pub(super) cum: Vec<Vec<f64>>,
    /// Scan of the stored codes for one query.
    pub(super) scan: f64,
    /// Scan of the stored codes per query, in a batch.
    pub(super) scan_batch: f64,
}

impl Costs {
    pub(super) fn new(subs: &[Substring], n: usize, words: usize) -> Self {
        let cand = COST_CANDIDATE + COST_CANDIDATE_WORD * words as f64;
        let cum = subs
            .iter()
            .map(|s| {
                let probe = COST_PROBE + if s.dense() { 0.0 } else { COST_SPARSE_PROBE };
                let per_probe = probe + cand * n as f64 / 2f64.powi(s.width as i32);
                let mut acc = 0.0;
                (0..=s.width)
                    .map(|j| {
                        acc += binomial(u64::from(s.width), u64::from(j)).unwrap_or(u64::MAX)
                            as f64
                            * per_probe;
                        acc
                    })
                    .collect()
            })
            .collect();
        Costs {
            cum,
            scan: n as f64 * words as f64 * COST_SCAN_WORD,
            scan_batch: n as f64 * words as f64 * COST_SCAN_WORD_BATCH,
        }
    }

    /// Cost of probing substring `t` at radii `0..shells`.
    pub(super) fn probed(&self, t: usize, shells: u64) -> f64 {
        let c = &self.cum[t];
        match shells {
            0 => 0.0,
            s => c[(s as usize - 1).min(c.len() - 1)],
        }
    }

    /// Cost of the probe plan certifying radius `r` (every code at distance `≤ r` found).
    pub(super) fn plan(&self, r: u64) -> f64 {
        let m = self.cum.len();
        (0..m).map(|t| self.probed(t, shells_for(r, m, t))).sum()
    }

    /// Cost of the k-NN steps before step `(s, t)`: the plan certifying `s·m + t − 1`.
    pub(super) fn before(&self, s: u32, t: usize) -> f64 {
        let r = u64::from(s) * self.cum.len() as u64 + t as u64;
        if r == 0 { 0.0 } else { self.plan(r - 1) }
    }

    /// Cost of step `(s, t)`: substring `t` at exactly radius `s`.
    pub(super) fn shell(&self, t: usize, s: u32) -> f64 {
        self.probed(t, u64::from(s) + 1) - self.probed(t, u64::from(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probing rule is exact (every split of a distance `≤ r` into substring distances
    /// has a substring within its probe radius) and tight (lowering any radius loses one).
    #[test]
    pub(super) fn probe_rule_is_exact_and_tight() {
        fn splits(m: usize, total: u64, cap: u64, f: &mut impl FnMut(&[u64])) {
            fn rec(m: usize, left: u64, cap: u64, cur: &mut Vec<u64>, f: &mut impl FnMut(&[u64])) {
                if cur.len() == m {
                    f(cur);
                    return;
                }
                for d in 0..=left.min(cap) {
                    cur.push(d);
                    rec(m, left - d, cap, cur, f);
                    cur.pop();
                }
            }
            rec(m, total, cap, &mut Vec::new(), f);
        }
        for m in 1..=5usize {
            for r in 0..=14u64 {
                let shells: Vec<u64> = (0..m).map(|t| shells_for(r, m, t)).collect();
                // Exact: no split of any d <= r escapes.
                splits(m, r, r, &mut |ds: &[u64]| {
                    assert!(
                        ds.iter().zip(&shells).any(|(&d, &s)| d < s),
                        "m={m} r={r} split {ds:?} missed"
                    );
                });
                // Tight: lowering shell t by one misses the split (s_t - 1, s_u elsewhere).
                for t in 0..m {
                    if shells[t] == 0 {
                        continue;
                    }
                    let ds: Vec<u64> = (0..m)
                        .map(|u| if u == t { shells[t] - 1 } else { shells[u] })
                        .collect();
                    assert_eq!(ds.iter().sum::<u64>(), r, "m={m} r={r} t={t}");
                }
                // Coarser than the plain pigeonhole rule never, finer whenever a < m - 1.
                assert!(shells.iter().all(|&s| s <= r / m as u64 + 1));
            }
        }
    }
}
