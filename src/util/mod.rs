//! Small pieces shared by the kernels and the indexes, written once: a bounded top-k
//! ([`topk::TopK`]), a pool of reusable per-query scratch values ([`pool::Pool`]) and exact
//! binomial coefficients ([`binomial`]), a fast hasher for in-memory tables ([`hash`]), and the one grammar of the specs' text forms
//! ([`spec`]).

pub(crate) mod hash;
pub(crate) mod pool;
pub(crate) mod spec;
pub(crate) mod topk;

/// `C(n, k)`, exactly, or `None` when it exceeds `u64` (0 for `k > n`).
pub(crate) fn binomial(n: u64, k: u64) -> Option<u64> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut c: u128 = 1;
    for i in 0..k {
        // c · (n − i) / (i + 1) is C(n, i + 1): exact at every step.
        c = c * u128::from(n - i) / u128::from(i + 1);
        if c > u128::from(u64::MAX) {
            return None;
        }
    }
    Some(c as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomials_match_pascals_triangle() {
        let mut row = vec![1u64];
        for n in 0..=66u64 {
            for (k, &c) in row.iter().enumerate() {
                assert_eq!(binomial(n, k as u64), Some(c), "C({n}, {k})");
            }
            assert_eq!(binomial(n, n + 1), Some(0));
            let mut next = vec![1u64; row.len() + 1];
            for k in 1..row.len() {
                next[k] = row[k - 1].saturating_add(row[k]);
            }
            row = next;
        }
        assert_eq!(binomial(64, 32), Some(1_832_624_140_942_590_534));
        assert_eq!(binomial(68, 34), None);
        assert_eq!(binomial(u64::MAX, 1), Some(u64::MAX));
    }
}
