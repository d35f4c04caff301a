//! Exact binomial probabilities: pmf, CDF, survival function, quantiles and two-sided
//! acceptance intervals for X ~ Bin(n, p). How they are computed, and how accurately, is
//! described in the "Binomial helpers" section of the parent module's documentation.

use crate::error::{Error, Result};

use super::check_level;
use super::special::{ln_dbinom, ppnd16};

/// Largest supported number of trials: counts must be exact in an `f64`.
pub const MAX_TRIALS: u64 = 1 << 53;

/// Re-anchor the ratio recurrence on the exact formula every this many terms.
const ANCHOR_EVERY: u64 = 32;

/// Stop a tail sum when the remaining terms are below this fraction of the sum.
const TAIL_EPS: f64 = 1e-17;

fn check_n(n: u64) -> Result<()> {
    if n >= MAX_TRIALS {
        return Err(Error::param(
            "n",
            format!("number of trials must be below 2^53, got {n}"),
        ));
    }
    Ok(())
}

fn check_p(p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::param(
            "p",
            format!("must be a probability in [0, 1], got {p}"),
        ));
    }
    Ok(())
}

/// ln P(X = k) for 0 <= k <= n and 0 < p < 1, q = 1 − p.
pub(crate) fn ln_pmf(k: u64, n: u64, p: f64, q: f64) -> f64 {
    ln_dbinom(k as f64, (n - k) as f64, p, q)
}

/// The mode ⌊(n + 1)·p⌋ (clamped to n): the pmf increases up to it and decreases after it.
pub(crate) fn mode(n: u64, p: f64) -> u64 {
    (((n as f64 + 1.0) * p).floor() as u64).min(n)
}

/// ln P(X <= k) for k <= mode(n, p), 0 < p < 1: summing j = k, k − 1, …, 0, where the terms
/// decrease.
fn ln_lower_tail(k: u64, n: u64, p: f64, q: f64) -> f64 {
    let ln_anchor = ln_pmf(k, n, p, q);
    let nf = n as f64;
    let mut sum = Neumaier::new(1.0);
    let mut term = 1.0;
    let mut j = k;
    while j > 0 {
        let jf = j as f64;
        term *= jf * q / ((nf - jf + 1.0) * p);
        j -= 1;
        if (k - j).is_multiple_of(ANCHOR_EVERY) {
            term = (ln_pmf(j, n, p, q) - ln_anchor).exp();
        }
        sum.add(term);
        if j == 0 || term == 0.0 {
            break;
        }
        // Later ratios are smaller than this one, so the rest is at most a geometric series.
        let jf = j as f64;
        let r = jf * q / ((nf - jf + 1.0) * p);
        if r < 1.0 && term * r / (1.0 - r) <= sum.value() * TAIL_EPS {
            break;
        }
    }
    ln_anchor + sum.value().ln()
}

/// Neumaier's compensated summation: the rounding error of a long sum stays at an ulp or two
/// instead of growing with the square root of the number of terms.
struct Neumaier {
    sum: f64,
    comp: f64,
}

impl Neumaier {
    fn new(first: f64) -> Self {
        Neumaier {
            sum: first,
            comp: 0.0,
        }
    }

    fn add(&mut self, v: f64) {
        let t = self.sum + v;
        self.comp += if self.sum.abs() >= v.abs() {
            (self.sum - t) + v
        } else {
            (v - t) + self.sum
        };
        self.sum = t;
    }

    fn value(&self) -> f64 {
        self.sum + self.comp
    }
}

/// ln P(X >= k) for k >= mode(n, p), 0 < p < 1, as the lower tail of n − X ~ Bin(n, q).
fn ln_upper_tail(k: u64, n: u64, p: f64, q: f64) -> f64 {
    ln_lower_tail(n - k, n, q, p)
}

/// (P(X <= k), P(X > k)) for X ~ Bin(n, p), with q = 1 − p passed separately, 0 < p < 1 and
/// k < n; each value accurate in relative terms in its tail.
pub(crate) fn tails(k: u64, n: u64, p: f64, q: f64) -> (f64, f64) {
    if k < mode(n, p) {
        let l = ln_lower_tail(k, n, p, q);
        (l.exp(), -l.exp_m1())
    } else {
        let u = ln_upper_tail(k + 1, n, p, q);
        (-u.exp_m1(), u.exp())
    }
}

/// The binomial probability mass P(X = k) for X ~ Bin(n, p).
///
/// Loader's saddle-point formula, evaluated in log space: ln P is accurate to a few ulps of
/// |ln P| for every n < 2⁵³ (it does not form ln-gamma differences, which lose about lg(n)
/// digits), so P is accurate to about 1e-15 relative down to 1e-10 and 1e-13 around 1e-100.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if p is NaN or outside [0, 1], or n >= 2⁵³.
///
/// # Example
///
/// ```
/// use simlsh::estimate::binomial_pmf;
/// // C(10, 3) / 2^10
/// assert!((binomial_pmf(3, 10, 0.5)? / (120.0 / 1024.0) - 1.0).abs() < 1e-14);
/// assert_eq!(binomial_pmf(11, 10, 0.5)?, 0.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn binomial_pmf(k: u64, n: u64, p: f64) -> Result<f64> {
    check_n(n)?;
    check_p(p)?;
    if k > n {
        return Ok(0.0);
    }
    Ok(ln_pmf(k, n, p, 1.0 - p).exp())
}

/// The binomial cumulative distribution function P(X <= k) for X ~ Bin(n, p).
///
/// Exact summation in log space on the decreasing side of the pmf (see "Binomial helpers" in the
/// [module documentation](crate::estimate)); accurate to about 1e-15 relative in the lower tail
/// (1e-13 for tails around 1e-100) and 1e-16 absolute near 1.
/// Use [`binomial_sf`] for upper-tail probabilities, which would be lost to rounding in 1 − CDF.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if p is NaN or outside [0, 1], or n >= 2⁵³.
///
/// # Example
///
/// ```
/// use simlsh::estimate::binomial_cdf;
/// // P(Bin(64, 0.05) <= 3), the sum of the pmf over 0..=3
/// let c = binomial_cdf(3, 64, 0.05)?;
/// assert!((c - 0.601_409_264_851_612).abs() < 1e-15);
/// assert_eq!(binomial_cdf(64, 64, 0.3)?, 1.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn binomial_cdf(k: u64, n: u64, p: f64) -> Result<f64> {
    check_n(n)?;
    check_p(p)?;
    Ok(cdf_unchecked(k, n, p))
}

pub(crate) fn cdf_unchecked(k: u64, n: u64, p: f64) -> f64 {
    if k >= n || p == 0.0 {
        return 1.0;
    }
    if p == 1.0 {
        return 0.0;
    }
    tails(k, n, p, 1.0 - p).0
}

/// The binomial survival function P(X > k) for X ~ Bin(n, p), accurate in relative terms in the
/// upper tail (unlike 1 − [`binomial_cdf`]).
///
/// # Errors
///
/// [`Error::InvalidParameter`] if p is NaN or outside [0, 1], or n >= 2⁵³.
///
/// # Example
///
/// ```
/// use simlsh::estimate::{binomial_cdf, binomial_sf};
/// // P(Bin(1000, 0.01) > 40) = 1.1006e-13: near the resolution limit of 1 − CDF.
/// let s = binomial_sf(40, 1000, 0.01)?;
/// assert!((s / 1.100_642_853_048_845e-13 - 1.0).abs() < 1e-13);
/// assert!((binomial_cdf(5, 20, 0.3)? + binomial_sf(5, 20, 0.3)? - 1.0).abs() < 1e-15);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn binomial_sf(k: u64, n: u64, p: f64) -> Result<f64> {
    check_n(n)?;
    check_p(p)?;
    Ok(sf_unchecked(k, n, p))
}

pub(crate) fn sf_unchecked(k: u64, n: u64, p: f64) -> f64 {
    if k >= n || p == 0.0 {
        return 0.0;
    }
    if p == 1.0 {
        return 1.0;
    }
    tails(k, n, p, 1.0 - p).1
}

/// Normal approximation (with a Cornish–Fisher skewness correction) to the count at CDF level
/// `prob`: only a starting point for the exact searches.
fn normal_guess(prob: f64, n: u64, p: f64) -> u64 {
    let nf = n as f64;
    let sd = (nf * p * (1.0 - p)).sqrt();
    let z = ppnd16(prob.clamp(1e-300, 1.0 - 1e-16));
    let skew = if sd > 0.0 { (1.0 - 2.0 * p) / sd } else { 0.0 };
    let k = nf * p + sd * (z + skew * (z * z - 1.0) / 6.0) - 0.5;
    if k.is_nan() || k <= 0.0 {
        0
    } else if k >= nf {
        n
    } else {
        k.round() as u64
    }
}

/// Smallest k in [0, n] with `pred(k)`, for a predicate that is monotone (false then true) and
/// true at n. Gallops away from `guess` to bracket the switch, then bisects.
fn smallest_true(n: u64, guess: u64, pred: impl Fn(u64) -> bool) -> u64 {
    let guess = guess.min(n);
    // Bracket the switch: pred(lo) false, pred(hi) true.
    let (lo, hi) = if pred(guess) {
        let mut hi = guess;
        let mut step = 1u64;
        loop {
            if hi == 0 {
                return 0;
            }
            let cand = hi.saturating_sub(step);
            if !pred(cand) {
                break (cand, hi);
            }
            hi = cand;
            step = step.saturating_mul(2);
        }
    } else {
        let mut lo = guess;
        let mut step = 1u64;
        loop {
            let cand = lo.saturating_add(step).min(n);
            if cand == n || pred(cand) {
                break (lo, cand);
            }
            lo = cand;
            step = step.saturating_mul(2);
        }
    };
    let (mut lo, mut hi) = (lo, hi);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The binomial quantile: the smallest k with P(X <= k) >= `prob` for X ~ Bin(n, p) (the
/// generalized inverse of [`binomial_cdf`], consistent with it exactly: the CDF evaluated by
/// this module is what is inverted).
///
/// Starts from a Cornish–Fisher normal approximation, brackets the answer by galloping and
/// finishes by bisection, so it costs O(log(error of the guess)) exact CDF evaluations.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `prob` or p is NaN or outside [0, 1], or n >= 2⁵³.
///
/// # Example
///
/// ```
/// use simlsh::estimate::{binomial_cdf, binomial_quantile};
/// let k = binomial_quantile(0.5, 64, 0.25)?;
/// assert_eq!(k, 16); // the median of Bin(64, 1/4)
/// assert!(binomial_cdf(k, 64, 0.25)? >= 0.5 && binomial_cdf(k - 1, 64, 0.25)? < 0.5);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn binomial_quantile(prob: f64, n: u64, p: f64) -> Result<u64> {
    check_n(n)?;
    check_p(p)?;
    if !(0.0..=1.0).contains(&prob) {
        return Err(Error::param(
            "prob",
            format!("must be a probability in [0, 1], got {prob}"),
        ));
    }
    if prob == 0.0 || p == 0.0 {
        return Ok(0);
    }
    if p == 1.0 {
        return Ok(n);
    }
    let guess = normal_guess(prob, n, p);
    Ok(smallest_true(n, guess, |k| cdf_unchecked(k, n, p) >= prob))
}

/// Two-sided acceptance interval for a binomial count: the counts (lo, hi) such that
/// P(lo <= X <= hi) >= `level` for X ~ Bin(n, p).
///
/// Equal-tailed and as short as possible under that constraint: with α = 1 − level, `lo` is the
/// largest count with P(X < lo) <= α/2 and `hi` the smallest with P(X > hi) <= α/2, both
/// tails computed exactly (so the coverage is guaranteed, not approximate). This is the tolerance
/// to use in statistical tests, e.g. "the number of equal bits among n lies inside the 99.9%
/// binomial interval of 1 − θ/π": a correct implementation fails such a test with probability at
/// most 1 − level.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if p is NaN or outside [0, 1], `level` is not strictly between 0
/// and 1, or n >= 2⁵³.
///
/// # Example
///
/// ```
/// use simlsh::estimate::{binomial_cdf, binomial_interval, binomial_sf};
/// let (lo, hi) = binomial_interval(10_000, 0.25, 0.999)?;
/// // Both excluded tails have probability at most 0.0005 ...
/// assert!(binomial_cdf(lo - 1, 10_000, 0.25)? <= 0.0005);
/// assert!(binomial_sf(hi, 10_000, 0.25)? <= 0.0005);
/// // ... and the interval is the shortest such: one step inwards breaks it.
/// assert!(binomial_cdf(lo, 10_000, 0.25)? > 0.0005);
/// assert!(binomial_sf(hi - 1, 10_000, 0.25)? > 0.0005);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn binomial_interval(n: u64, p: f64, level: f64) -> Result<(u64, u64)> {
    check_n(n)?;
    check_p(p)?;
    check_level(level)?;
    if p == 0.0 {
        return Ok((0, 0));
    }
    if p == 1.0 {
        return Ok((n, n));
    }
    let half_alpha = (1.0 - level) / 2.0;
    let lo = smallest_true(n, normal_guess(half_alpha, n, p), |k| {
        cdf_unchecked(k, n, p) > half_alpha
    });
    let hi = smallest_true(n, normal_guess(1.0 - half_alpha, n, p), |k| {
        sf_unchecked(k, n, p) <= half_alpha
    });
    Ok((lo, hi))
}

/// P(X <= k) for k = 0, 1, …, `kmax` (X ~ Bin(n, p)) in one pass, for tables: the pmf by the
/// anchored ratio recurrence outwards from the mode, accumulated with compensated (Neumaier)
/// summation, so every entry is accurate to about 1e-16 absolute (and relative in the lower
/// tail). O(kmax + 1) time.
pub(crate) fn cdf_row(n: u64, p: f64, kmax: u64) -> Vec<f64> {
    let kmax = kmax.min(n);
    let len = kmax as usize + 1;
    if p == 0.0 {
        return vec![1.0; len];
    }
    if p == 1.0 {
        let mut row = vec![0.0; len];
        if kmax == n {
            row[len - 1] = 1.0;
        }
        return row;
    }
    let q = 1.0 - p;
    let nf = n as f64;
    let mut pmf = vec![0.0; len];
    let k0 = mode(n, p).min(kmax);
    let ln0 = ln_pmf(k0, n, p, q);
    pmf[k0 as usize] = ln0.exp();
    // Downwards from k0.
    let mut term = pmf[k0 as usize];
    let mut j = k0;
    while j > 0 && term > 0.0 {
        let jf = j as f64;
        term *= jf * q / ((nf - jf + 1.0) * p);
        j -= 1;
        if (k0 - j).is_multiple_of(ANCHOR_EVERY) {
            term = ln_pmf(j, n, p, q).exp();
        }
        pmf[j as usize] = term;
    }
    // Upwards from k0 (only when the mode lies beyond kmax is k0 = kmax and nothing is left).
    let mut term = pmf[k0 as usize];
    let mut j = k0;
    while j < kmax && term > 0.0 {
        let jf = j as f64;
        term *= (nf - jf) * p / ((jf + 1.0) * q);
        j += 1;
        if (j - k0).is_multiple_of(ANCHOR_EVERY) {
            term = ln_pmf(j, n, p, q).exp();
        }
        pmf[j as usize] = term;
    }
    let mut sum = Neumaier::new(0.0);
    for v in pmf.iter_mut() {
        sum.add(*v);
        *v = sum.value().min(1.0);
    }
    pmf
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Exact binomial coefficients C(n, k) for n <= 60 (they fit in u64; the conversion to f64
    /// rounds by at most half an ulp).
    fn choose(n: u64, k: u64) -> f64 {
        let k = k.min(n - k);
        let mut c: u128 = 1;
        for i in 0..k {
            c = c * u128::from(n - i) / u128::from(i + 1);
        }
        c as f64
    }

    /// P(X = k) by the textbook formula C(n, k)·p^k·q^(n−k) (error of a few ulps for n <= 60).
    fn pmf_direct(k: u64, n: u64, p: f64) -> f64 {
        choose(n, k) * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32)
    }

    const PS: [f64; 10] = [
        1e-6,
        0.01,
        0.1,
        0.25,
        1.0 / 3.0,
        0.5,
        0.7,
        0.9,
        0.99,
        1.0 - 1e-6,
    ];

    /// Relative tolerance for a probability P computed in log space: ln P carries an absolute
    /// error of a few ulps of the largest terms of its formula, which are about |ln P|, plus
    /// the oracle's own few ulps.
    /// Values below 1e-290 are compared in absolute terms: the oracle's products reach the
    /// subnormal range, where f64 loses relative precision.
    fn close(got: f64, want: f64) -> bool {
        if want < 1e-290 {
            (got - want).abs() <= 1e-300
        } else {
            (got - want).abs() <= 1e-15 * (want.ln().abs() + 30.0) * want
        }
    }

    #[test]
    fn pmf_and_tails_match_direct_summation() {
        // Each tail is compared in relative terms with the direct sum over that tail (at most 61
        // positive terms of a few ulps each).
        for n in 0..=60u64 {
            for &p in &PS {
                for k in 0..=n {
                    let want = pmf_direct(k, n, p);
                    let got = binomial_pmf(k, n, p).unwrap();
                    assert!(close(got, want), "pmf {k} {n} {p}: {got} vs {want}");
                    let lower: f64 = (0..=k).map(|j| pmf_direct(j, n, p)).sum();
                    let upper: f64 = (k + 1..=n).map(|j| pmf_direct(j, n, p)).sum();
                    let cdf = binomial_cdf(k, n, p).unwrap();
                    let sf = binomial_sf(k, n, p).unwrap();
                    assert!(close(cdf, lower), "cdf {k} {n} {p}: {cdf} vs {lower}");
                    assert!(close(sf, upper), "sf {k} {n} {p}: {sf} vs {upper}");
                }
            }
        }
    }

    #[test]
    fn degenerate_parameters() {
        assert_eq!(binomial_cdf(0, 0, 0.3).unwrap(), 1.0);
        assert_eq!(binomial_sf(0, 0, 0.3).unwrap(), 0.0);
        assert_eq!(binomial_cdf(0, 10, 0.0).unwrap(), 1.0);
        assert_eq!(binomial_cdf(9, 10, 1.0).unwrap(), 0.0);
        assert_eq!(binomial_cdf(10, 10, 1.0).unwrap(), 1.0);
        assert_eq!(binomial_sf(9, 10, 1.0).unwrap(), 1.0);
        assert_eq!(binomial_cdf(20, 10, 0.5).unwrap(), 1.0);
        assert_eq!(binomial_pmf(0, 10, 0.0).unwrap(), 1.0);
        assert_eq!(binomial_pmf(10, 10, 1.0).unwrap(), 1.0);
        assert_eq!(binomial_pmf(3, 10, 1.0).unwrap(), 0.0);
        assert_eq!(binomial_quantile(0.7, 10, 0.0).unwrap(), 0);
        assert_eq!(binomial_quantile(0.7, 10, 1.0).unwrap(), 10);
        assert_eq!(binomial_quantile(0.0, 10, 0.5).unwrap(), 0);
        assert_eq!(binomial_interval(10, 0.0, 0.9).unwrap(), (0, 0));
        assert_eq!(binomial_interval(10, 1.0, 0.9).unwrap(), (10, 10));
        for bad in [f64::NAN, -0.5, 1.5] {
            assert!(binomial_cdf(1, 10, bad).is_err());
            assert!(binomial_sf(1, 10, bad).is_err());
            assert!(binomial_pmf(1, 10, bad).is_err());
            assert!(binomial_quantile(bad, 10, 0.5).is_err());
            assert!(binomial_interval(10, 0.5, bad).is_err());
        }
        assert!(binomial_interval(10, 0.5, 1.0).is_err());
        assert!(binomial_interval(10, 0.5, 0.0).is_err());
        assert!(binomial_cdf(1, MAX_TRIALS, 0.5).is_err());
    }

    #[test]
    fn symmetry_identities() {
        // X ~ Bin(n, p) ⇔ n − X ~ Bin(n, 1 − p) (p and 1 − p both exact here), and the two
        // tails add up to one.
        for &n in &[1u64, 7, 64, 1000, 65_536, 10_000_000] {
            for &p in &[0.125, 0.25, 0.375, 0.5] {
                let nf = n as f64;
                let sd = (nf * p * (1.0 - p)).sqrt();
                for i in -12..=12 {
                    let k = (nf * p + f64::from(i) * sd).round().clamp(0.0, nf - 1.0) as u64;
                    let cdf = binomial_cdf(k, n, p).unwrap();
                    let mirrored = binomial_sf(n - k - 1, n, 1.0 - p).unwrap();
                    assert!((cdf - mirrored).abs() <= 1e-14 * cdf, "{k} {n} {p}");
                    let sf = binomial_sf(k, n, p).unwrap();
                    assert!((cdf + sf - 1.0).abs() <= 2.0 * f64::EPSILON, "{k} {n} {p}");
                    // Consecutive values of the CDF differ by the pmf.
                    if k > 0 && cdf < 0.5 {
                        let step = cdf - binomial_cdf(k - 1, n, p).unwrap();
                        let pmf = binomial_pmf(k, n, p).unwrap();
                        assert!((step - pmf).abs() <= 1e-13 * cdf, "{k} {n} {p}");
                    }
                }
            }
        }
    }

    #[test]
    fn central_term_for_large_n() {
        // For n = 2m and p = ½: P[X = m] = C(2m, m)/4^m
        // = (1 − 1/(8m) + 1/(128m²) + 5/(1024m³) − …)/√(πm), and by symmetry
        // P[X <= m] = (1 + P[X = m])/2.
        for &m in &[500_000u64, 50_000_000, 150_000_000] {
            let mf = m as f64;
            let pmf = (1.0 - 1.0 / (8.0 * mf) + 1.0 / (128.0 * mf * mf))
                / (std::f64::consts::PI * mf).sqrt();
            let got = binomial_pmf(m, 2 * m, 0.5).unwrap();
            assert!(
                (got - pmf).abs() <= 1e-14 * pmf,
                "pmf m={m}: {got} vs {pmf}"
            );
            let cdf = binomial_cdf(m, 2 * m, 0.5).unwrap();
            let want = 0.5 * (1.0 + pmf);
            assert!(
                (cdf - want).abs() <= 1e-14 * want,
                "cdf m={m}: {cdf} vs {want}"
            );
        }
    }

    #[test]
    fn tails_agree_with_continued_fraction_for_large_n() {
        // Two independent methods: the exact tail sums and the incomplete-beta continued
        // fraction, whose own rounding error grows to about 1e-13 at n = 10⁶ and 1e-11 at 10⁸.
        use super::super::special::beta_inc_cf;
        for &n in &[1_000_000u64, 100_000_000] {
            for &p in &[1e-6, 0.01, 0.3, 0.5] {
                let nf = n as f64;
                let sd = (nf * p * (1.0 - p)).sqrt();
                for i in [-8.0, -3.0, -1.0, 0.0, 1.0, 3.0, 8.0] {
                    let k = (nf * p + i * sd).round();
                    if k < 0.0 {
                        continue;
                    }
                    let k = k as u64;
                    // P[X > k] = I_p(k + 1, n − k).
                    let (below, above) = beta_inc_cf((k + 1) as f64, (n - k) as f64, p, 1.0 - p);
                    let sf = binomial_sf(k, n, p).unwrap();
                    let cdf = binomial_cdf(k, n, p).unwrap();
                    let tol = if n <= 1_000_000 { 1e-12 } else { 2e-11 };
                    assert!(
                        (sf - below).abs() <= tol * sf,
                        "sf {k} {n} {p}: {sf} vs {below}"
                    );
                    assert!(
                        (cdf - above).abs() <= tol * cdf,
                        "cdf {k} {n} {p}: {cdf} vs {above}"
                    );
                }
            }
        }
    }

    #[test]
    fn intervals_are_exact_and_tight() {
        // P[X < lo] <= α/2 < P[X <= lo] and P[X > hi] <= α/2 < P[X >= hi], checked with the
        // direct sums for small n and with the tail functions for large n.
        for &level in &[0.9, 0.99, 0.999] {
            let half = (1.0 - level) / 2.0;
            for n in 1..=60u64 {
                for &p in &PS {
                    let (lo, hi) = binomial_interval(n, p, level).unwrap();
                    assert!(lo <= hi && hi <= n);
                    let below: f64 = (0..lo).map(|j| pmf_direct(j, n, p)).sum();
                    let above: f64 = (hi + 1..=n).map(|j| pmf_direct(j, n, p)).sum();
                    assert!(below <= half * (1.0 + 1e-12), "{n} {p} {level}");
                    assert!(above <= half * (1.0 + 1e-12), "{n} {p} {level}");
                    assert!(below + pmf_direct(lo, n, p) > half * (1.0 - 1e-12));
                    assert!(above + pmf_direct(hi, n, p) > half * (1.0 - 1e-12));
                }
            }
            for &n in &[100_000u64, 100_000_000] {
                for &p in &[1e-7, 0.01, 0.25, 0.5, 0.9] {
                    let (lo, hi) = binomial_interval(n, p, level).unwrap();
                    if lo > 0 {
                        assert!(binomial_cdf(lo - 1, n, p).unwrap() <= half);
                    }
                    assert!(binomial_cdf(lo, n, p).unwrap() > half);
                    assert!(binomial_sf(hi, n, p).unwrap() <= half);
                    if hi > 0 {
                        assert!(binomial_sf(hi - 1, n, p).unwrap() > half);
                    }
                }
            }
        }
    }

    #[test]
    fn cdf_row_matches_pointwise_cdf() {
        for &(n, p, kmax) in &[
            (64u64, 0.05, 64u64),
            (64, 0.9, 40),
            (1000, 0.3, 1000),
            (65_537, 0.143, 12_000),
            (65_537, 0.5, 100),
        ] {
            let row = cdf_row(n, p, kmax);
            assert_eq!(row.len() as u64, kmax.min(n) + 1);
            for (k, &v) in row.iter().enumerate() {
                let want = binomial_cdf(k as u64, n, p).unwrap();
                assert!(
                    (v - want).abs() <= 1e-13 * want.min(1.0 - want) + 4.0 * f64::EPSILON,
                    "{n} {p} {k}: {v} vs {want}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn quantile_inverts_the_cdf(
            n in prop_oneof![0u64..200, 200u64..100_000, 100_000u64..200_000_000],
            p in 0.0f64..=1.0,
            q in 0.0f64..=1.0,
        ) {
            let k = binomial_quantile(q, n, p).unwrap();
            prop_assert!(k <= n);
            prop_assert!(binomial_cdf(k, n, p).unwrap() >= q);
            if k > 0 {
                prop_assert!(binomial_cdf(k - 1, n, p).unwrap() < q);
            }
        }

        #[test]
        fn interval_covers_level(
            n in 1u64..10_000_000,
            p in 0.0f64..=1.0,
            level in 0.5f64..0.9999,
        ) {
            let (lo, hi) = binomial_interval(n, p, level).unwrap();
            let outside = if lo > 0 { binomial_cdf(lo - 1, n, p).unwrap() } else { 0.0 }
                + binomial_sf(hi, n, p).unwrap();
            prop_assert!(outside <= 1.0 - level + 1e-15);
        }
    }
}
