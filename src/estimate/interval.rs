//! Confidence intervals for the collision parameter p = θ/π from h ~ Bin(f, p).

use std::f64::consts::PI;

use super::special::{beta_lower_inv, ppnd16};

/// How to compute a confidence interval for a binomial proportion.
///
/// The default is [`ClopperPearson`](IntervalMethod::ClopperPearson): it *guarantees* coverage
/// (the true p lies inside with probability at least the level, for every p and f), which is what
/// a tolerance or a reported error bar must promise. [`Wilson`](IntervalMethod::Wilson) is
/// shorter on average and its coverage is close to the level on average over p, but it dips below
/// the level for some p (notably near p = 0, i.e. near-duplicate pairs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IntervalMethod {
    /// Wilson score interval: inverts the normal approximation of the score test,
    /// with z = Φ⁻¹(1 − α/2), p̂ = h/f:
    ///
    /// (p̂ + z²/(2f) ± z·√(p̂(1 − p̂)/f + z²/(4f²))) / (1 + z²/f).
    ///
    /// Evaluated as lo = 2h² / (f·(2h + z² + z·S)), hi = (2h + z² + z·S) / (2(f + z²)) with
    /// S = √(z² + 4h(f − h)/f), which is the same interval without cancellation.
    Wilson,
    /// Clopper–Pearson "exact" interval: inverts the two one-sided binomial tests,
    ///
    /// lo solves P(Bin(f, lo) >= h) = α/2, i.e. lo = I⁻¹(α/2; h, f − h + 1) (0 if h = 0),
    ///
    /// hi solves P(Bin(f, hi) <= h) = α/2, i.e. hi = 1 − I⁻¹(α/2; f − h, h + 1) (1 if h = f),
    ///
    /// with I⁻¹ the inverse regularized incomplete beta function.
    /// For h = 0 this gives hi = 1 − (α/2)^(1/f).
    #[default]
    ClopperPearson,
}

impl IntervalMethod {
    /// Every method, as [`name`](Self::name) and [`FromStr`](std::str::FromStr) spell them.
    pub const ALL: [IntervalMethod; 2] = [IntervalMethod::ClopperPearson, IntervalMethod::Wilson];

    /// `clopper-pearson` or `wilson`: the text form.
    pub fn name(self) -> &'static str {
        match self {
            IntervalMethod::ClopperPearson => "clopper-pearson",
            IntervalMethod::Wilson => "wilson",
        }
    }
}

impl std::str::FromStr for IntervalMethod {
    type Err = crate::Error;

    /// The method of a [`name`](IntervalMethod::name).
    ///
    /// ```
    /// use simlsh::estimate::IntervalMethod;
    ///
    /// assert_eq!("wilson".parse::<IntervalMethod>()?, IntervalMethod::Wilson);
    /// assert!("exact".parse::<IntervalMethod>().is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    fn from_str(s: &str) -> crate::Result<Self> {
        IntervalMethod::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                crate::Error::param(
                    "method",
                    format!("unknown interval method `{s}` (clopper-pearson, wilson)"),
                )
            })
    }
}

/// A closed interval [lo, hi] of reals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

impl Interval {
    /// hi − lo.
    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }

    /// (hi − lo) / 2.
    pub fn half_width(&self) -> f64 {
        0.5 * (self.hi - self.lo)
    }

    /// Whether lo <= x <= hi.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

/// cos(π·x) for x in [0, 1], exact at x = ½ (cos(π/2) evaluates to 6e-17 otherwise) and
/// accurate near the quarter points by reducing to sin / cos of the smallest argument.
pub(crate) fn cospi(x: f64) -> f64 {
    if x <= 0.25 {
        (PI * x).cos()
    } else if x <= 0.75 {
        (PI * (0.5 - x)).sin()
    } else {
        -(PI * (1.0 - x)).cos()
    }
}

/// Confidence bounds for p from h successes out of f trials (h real in [0, f], f > 0; the
/// Clopper–Pearson bounds extend to real h through the incomplete beta function), at confidence
/// `level` in (0, 1). Inputs are validated by the callers.
pub(crate) fn proportion_bounds(h: f64, f: f64, level: f64, method: IntervalMethod) -> Interval {
    let half_alpha = 0.5 * (1.0 - level);
    match method {
        IntervalMethod::Wilson => {
            let z = -ppnd16(half_alpha);
            let z2 = z * z;
            let s = (z2 + 4.0 * h * (f - h) / f).sqrt();
            let big = 2.0 * h + z2 + z * s;
            // At h = 0 and h = f the bounds are exactly 0 and 1; the formulas give them only up
            // to rounding (256 of 256 at level 0.5 gave hi = 1 − 2⁻⁵³, an interval without p̂).
            Interval {
                lo: if h <= 0.0 {
                    0.0
                } else {
                    (2.0 * h * h / (f * big)).clamp(0.0, 1.0)
                },
                hi: if h >= f {
                    1.0
                } else {
                    (big / (2.0 * (f + z2))).clamp(0.0, 1.0)
                },
            }
        }
        IntervalMethod::ClopperPearson => {
            let lo = if h <= 0.0 {
                0.0
            } else {
                beta_lower_inv(h, f - h + 1.0, half_alpha).0
            };
            let hi = if h >= f {
                1.0
            } else {
                beta_lower_inv(f - h, h + 1.0, half_alpha).1
            };
            Interval { lo, hi }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{binomial_cdf, binomial_pmf, binomial_sf, estimate};

    const WIDTHS: [u64; 8] = [1, 2, 7, 64, 100, 256, 1000, 65_536];

    fn counts(f: u64) -> Vec<u64> {
        let mut hs: Vec<u64> = [0, 1, 2, 3, f / 10, f / 3, f / 2, f - f / 4, f - 1, f]
            .into_iter()
            .filter(|&h| h <= f)
            .collect();
        hs.sort_unstable();
        hs.dedup();
        hs
    }

    /// Whether `value(p) = target` holds to 1e-9 relative at p, or p is within 2 ulps of the root
    /// (near p = 1 an ulp of p moves a tail by more than 1e-9: f·pmf/tail × 1.1e-16).
    fn solves(value: impl Fn(f64) -> f64, p: f64, target: f64) -> bool {
        if (value(p) / target - 1.0).abs() <= 1e-9 {
            return true;
        }
        let (below, above) = (
            f64::from_bits(p.to_bits() - 2),
            f64::from_bits(p.to_bits() + 2),
        );
        let (a, b) = (value(below), value(above.min(1.0)));
        a.min(b) <= target && target <= a.max(b)
    }

    #[test]
    fn clopper_pearson_solves_its_defining_equations() {
        // P[X >= h | p_lo] = α/2 and P[X <= h | p_hi] = α/2, checked with the binomial tail sums.
        for &level in &[0.9, 0.95, 0.999] {
            let half = (1.0 - level) / 2.0;
            for &f in &WIDTHS {
                for h in counts(f) {
                    let e = estimate(h, f, level, IntervalMethod::ClopperPearson).unwrap();
                    let (lo, hi) = (e.p_interval.lo, e.p_interval.hi);
                    if h == 0 {
                        assert_eq!(lo, 0.0);
                    } else {
                        let upper = |p| binomial_sf(h - 1, f, p).unwrap();
                        assert!(solves(upper, lo, half), "lo f={f} h={h}: {}", upper(lo));
                    }
                    if h == f {
                        assert_eq!(hi, 1.0);
                    } else {
                        let lower = |p| binomial_cdf(h, f, p).unwrap();
                        assert!(solves(lower, hi, half), "hi f={f} h={h}: {}", lower(hi));
                    }
                    let p_hat = h as f64 / f as f64;
                    assert!(lo <= p_hat && p_hat <= hi);
                }
            }
        }
    }

    #[test]
    fn clopper_pearson_edge_cases_match_closed_forms() {
        // h = 0: (1 − p_hi)^f = α/2, so p_hi = 1 − (α/2)^(1/f); h = f mirrors it.
        for &f in &WIDTHS {
            for &level in &[0.9, 0.95, 0.999] {
                let half: f64 = (1.0 - level) / 2.0;
                let want = -(half.ln() / f as f64).exp_m1();
                let e = estimate(0, f, level, IntervalMethod::ClopperPearson).unwrap();
                assert!((e.p_interval.hi / want - 1.0).abs() <= 1e-13, "f={f}");
                let e = estimate(f, f, level, IntervalMethod::ClopperPearson).unwrap();
                assert!(
                    ((1.0 - e.p_interval.lo) / want - 1.0).abs() <= 1e-11,
                    "f={f}"
                );
                assert_eq!(e.p_interval.hi, 1.0);
            }
        }
        // A textbook value: 0 successes in 10 trials, 95%: upper bound 0.3085.
        let e = estimate(0, 10, 0.95, IntervalMethod::ClopperPearson).unwrap();
        assert!((e.p_interval.hi - 0.308_5).abs() < 5e-5);
    }

    #[test]
    fn wilson_matches_the_textbook_formula() {
        // (p̂ + z²/(2f) ± z √(p̂(1 − p̂)/f + z²/(4f²))) / (1 + z²/f) with z for 95%.
        let z = 1.959_963_984_540_054_f64;
        for &f in &WIDTHS {
            for h in counts(f) {
                let (hf, ff) = (h as f64, f as f64);
                let p_hat = hf / ff;
                let denom = 1.0 + z * z / ff;
                let centre = (p_hat + z * z / (2.0 * ff)) / denom;
                let half =
                    z / denom * (p_hat * (1.0 - p_hat) / ff + z * z / (4.0 * ff * ff)).sqrt();
                let e = estimate(h, f, 0.95, IntervalMethod::Wilson).unwrap();
                assert!(
                    (e.p_interval.lo - (centre - half).max(0.0)).abs() <= 1e-14,
                    "{h}/{f}"
                );
                assert!(
                    (e.p_interval.hi - (centre + half).min(1.0)).abs() <= 1e-14,
                    "{h}/{f}"
                );
            }
        }
        // The ends hold the estimate exactly, whatever the rounding of the formula.
        for f in [1u64, 64, 256, 1000, 99_999] {
            for level in [0.5, 0.8, 0.95, 0.9999] {
                let all = estimate(f, f, level, IntervalMethod::Wilson)
                    .unwrap()
                    .p_interval;
                let none = estimate(0, f, level, IntervalMethod::Wilson)
                    .unwrap()
                    .p_interval;
                assert_eq!((all.hi, none.lo), (1.0, 0.0), "f={f} level={level}");
            }
        }
        // Symmetry: the interval for f − h is the mirror image.
        for h in 0..=64 {
            let a = estimate(h, 64, 0.99, IntervalMethod::Wilson)
                .unwrap()
                .p_interval;
            let b = estimate(64 - h, 64, 0.99, IntervalMethod::Wilson)
                .unwrap()
                .p_interval;
            assert!((a.lo - (1.0 - b.hi)).abs() <= 1e-15 && (a.hi - (1.0 - b.lo)).abs() <= 1e-15);
        }
    }

    /// Exact coverage P(p ∈ CI(X)) for X ~ Bin(f, p), summing the pmf over all outcomes.
    fn coverage(f: u64, p: f64, level: f64, method: IntervalMethod) -> f64 {
        (0..=f)
            .filter(|&h| {
                let e = estimate(h, f, level, method).unwrap();
                e.p_interval.contains(p)
            })
            .map(|h| binomial_pmf(h, f, p).unwrap())
            .sum()
    }

    #[test]
    fn exact_coverage_of_clopper_pearson_is_at_least_the_level() {
        // Clopper–Pearson guarantees coverage for every p; Wilson does not, and dips below the
        // level somewhere on the same grid (it is an approximation, not a bound).
        for &f in &[64u64, 256] {
            let mut wilson_min: f64 = 1.0;
            for i in 1..400 {
                let p = f64::from(i) / 400.0;
                let cp = coverage(f, p, 0.95, IntervalMethod::ClopperPearson);
                assert!(cp >= 0.95 - 1e-12, "f={f} p={p}: {cp}");
                wilson_min = wilson_min.min(coverage(f, p, 0.95, IntervalMethod::Wilson));
            }
            assert!(wilson_min < 0.95, "f={f}: {wilson_min}");
        }
    }

    #[test]
    fn cospi_is_accurate_and_exact_at_the_quarter_points() {
        assert_eq!(cospi(0.0), 1.0);
        assert_eq!(cospi(0.5), 0.0);
        assert_eq!(cospi(1.0), -1.0);
        for i in 0..=1000 {
            let x = f64::from(i) / 1000.0;
            assert!((cospi(x) - (PI * x).cos()).abs() <= 4e-16, "{x}");
        }
    }

    #[test]
    fn methods_parse_from_their_names_only() {
        for m in IntervalMethod::ALL {
            assert_eq!(m.name().parse::<IntervalMethod>().unwrap(), m);
        }
        let e = "Wilson".parse::<IntervalMethod>().unwrap_err().to_string();
        assert!(e.contains("unknown interval method `Wilson`"), "{e}");
    }
}
