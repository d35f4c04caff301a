//! Angle and cosine estimates from the Hamming distance of two f-bit random-hyperplane
//! signatures, with confidence intervals, exact binomial helpers, and planners for the Hamming
//! radius and for the number of bits.
//!
//! # The model
//!
//! With f independent random hyperplanes (Gaussian normals), each bit of the signatures of u and
//! v differs with probability p = θ/π, where θ ∈ [0, π] is the angle between u and v (Charikar
//! 2002, after Goemans–Williamson). The Hamming distance h is therefore Binomial(f, p) and
//!
//! * θ̂ = π·h/f is an unbiased estimate of θ, with Var(θ̂) = θ(π − θ)/f ([`angle`]);
//! * ĉ = cos(π·h/f) estimates the cosine ([`cosine`]), with Var(ĉ) ≈ sin²θ·θ(π − θ)/f (delta
//!   method) and a small bias of about −½·cos θ·Var(θ̂);
//! * a confidence interval for p (Wilson or Clopper–Pearson, [`IntervalMethod`]) maps to one for
//!   θ = π·p (increasing) and for cos θ (decreasing), see [`estimate`].
//!
//! # What is here
//!
//! * conversions: [`angle`], [`cosine`], [`cosine_to_angle`], [`angle_to_cosine`],
//!   [`expected_hamming`], [`max_hamming_for_cosine`];
//! * [`estimate`] → [`Estimate`]: point estimates with angle and cosine confidence intervals;
//! * exact binomial helpers, also the tolerances of the crate's statistical tests:
//!   [`binomial_pmf`], [`binomial_cdf`], [`binomial_sf`], [`binomial_quantile`],
//!   [`binomial_interval`];
//! * [`RadiusPlanner`]: the Hamming radius for a cosine threshold, with its recall / precision / F1
//!   table, and [`recall_at`] / [`manku_table`];
//! * [`BitsPlanner`]: the number of bits for a target confidence-interval half-width;
//! * [`BandingPlanner`]: bands and widths of a banded join for a cosine threshold and a recall
//!   target ([`band_recall`], [`filtered_band_recall`], [`background_candidates`]), and
//!   [`JoinPlanner`]: the exact Hamming join or banding, whichever is cheaper.
//!
//! # Binomial helpers
//!
//! [`binomial_cdf`], [`binomial_sf`], [`binomial_quantile`] and [`binomial_interval`] are the
//! tolerances of the statistical tests across the crate, so they are exact rather than a normal
//! approximation:
//!
//! * each probability P(X = k) comes from Loader's saddle-point formula (C. Loader, *Fast and
//!   Accurate Computation of Binomial Probabilities*, 2000), which forms no ln-gamma
//!   differences: ln P(X = k) is accurate to a few ulps of |ln P(X = k)| for any n, i.e. about
//!   1e-15 relative for probabilities down to 1e-10 and 1e-13 around 1e-100;
//! * a tail P(X ≤ k) or P(X ≥ k) is summed in log space, relative to its first term, always on
//!   the side of the mode where the terms decrease away from k, by the ratio recurrence
//!   P(X = j − 1) / P(X = j) = j·q / ((n − j + 1)·p), re-anchored on the exact formula every 32
//!   terms, with compensated (Neumaier) summation, and stopped when a geometric bound on the
//!   remaining terms falls below 1e-17 of the sum.
//!
//! A tail therefore has the relative accuracy of its terms (about 1e-15 for tails above 1e-10,
//! checked against direct summation for n <= 60, against 40-digit references and the
//! central-term asymptotics up to n = 3·10⁸, and against the incomplete-beta continued
//! fraction); the complement is taken only for the half that is at least about ½, where it loses
//! nothing. One tail costs O(√(n·p·q)) terms (about 40,000 for n = 10⁸, p = ½; a handful for
//! tails far from the mean), so n of 10⁹ and beyond is practical; n must stay below 2⁵³ so that
//! counts are exact in `f64`.
//!
//! # Example
//!
//! ```
//! use simlsh::estimate::{estimate, IntervalMethod};
//! // 3 differing bits out of 64:
//! let e = estimate(3, 64, 0.95, IntervalMethod::ClopperPearson)?;
//! assert!((e.cosine - 0.98918).abs() < 1e-5);
//! assert!(e.cosine_interval.lo < e.cosine && e.cosine < e.cosine_interval.hi);
//! assert!(e.angle_interval.contains(e.angle));
//! # Ok::<(), simlsh::Error>(())
//! ```

mod binomial;
mod interval;
mod plan;
mod quality;
mod special;

use std::f64::consts::PI;

pub use binomial::{
    MAX_TRIALS, binomial_cdf, binomial_interval, binomial_pmf, binomial_quantile, binomial_sf,
};
pub use interval::{Interval, IntervalMethod};
pub use plan::{
    BAND_ROW_NS, BandingPlan, BandingPlanner, BitsPlan, BitsPlanner, COSINE_BITS, DEFAULT_PROBES,
    DEFAULT_RECALL, DEFAULT_WIDTHS, ErrorTarget, HalfWidth, HammingJoinPlan, JoinChoice, JoinPlan,
    JoinPlanner, KERNEL_PAIR_NS, KERNEL_WORD_NS, MANKU_COSINES, MEMORY_COST_FACTOR, PAIR_NS,
    PAIR_WORD_NS, PLANNED_WIDTHS, PLANNER_MAX_BITS, PREFIX_WORDS, PROBE_KEY_NS, PROBE_ROW_NS,
    PairDistribution, PlanInputs, PlanRow, RADIUS_PLANNER_BITS, RadiusPlan, RadiusPlanner,
    RadiusRule, RecallPoint, SIGN_NS_PER_FEATURE_BIT, background_candidates, band_recall,
    banding_recall, expected_half_width, filtered_band_recall, manku_table,
    probed_background_candidates, recall_at,
};
pub use quality::{MeanInterval, QualityCheck, median, quality_check, student_t_975};

use crate::error::{Error, Result};
use interval::{cospi, proportion_bounds};

/// How far outside [−1, 1] a cosine (or outside [0, π] an angle) may lie and still be accepted
/// (and clamped): rounding in a dot product of unit vectors can exceed 1 by a few ulps.
pub const CLAMP_SLACK: f64 = 1e-9;

/// Validates a cosine and clamps it into [−1, 1].
pub(crate) fn check_cosine(name: &'static str, c: f64) -> Result<f64> {
    if c.is_nan() || c.abs() > 1.0 + CLAMP_SLACK {
        return Err(Error::param(
            name,
            format!("a cosine must lie in [-1, 1], got {c}"),
        ));
    }
    Ok(c.clamp(-1.0, 1.0))
}

/// Validates an angle in radians and clamps it into [0, π].
fn check_angle(name: &'static str, theta: f64) -> Result<f64> {
    if theta.is_nan() || !(-CLAMP_SLACK..=PI + CLAMP_SLACK).contains(&theta) {
        return Err(Error::param(
            name,
            format!("an angle must lie in [0, pi] radians, got {theta}"),
        ));
    }
    Ok(theta.clamp(0.0, PI))
}

/// Default confidence level of the intervals ([`estimate`], [`expected_half_width`],
/// [`BitsPlanner`]): 95%. The default method is [`IntervalMethod::default`], Clopper–Pearson.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// Validates a confidence level.
pub(crate) fn check_level(level: f64) -> Result<()> {
    if !(level > 0.0 && level < 1.0) {
        return Err(Error::param(
            "level",
            format!("must lie strictly between 0 and 1, got {level}"),
        ));
    }
    Ok(())
}

/// Validates a signature width.
pub(crate) fn check_bits(f: u64) -> Result<()> {
    if f == 0 || f >= MAX_TRIALS {
        return Err(Error::param(
            "bits",
            format!("the signature width must be in 1..2^53, got {f}"),
        ));
    }
    Ok(())
}

/// Checks that `h` differing bits out of `f` is a Hamming distance between `f`-bit
/// signatures: `1 ≤ f < 2^53` and `h ≤ f`. What [`estimate`] and the front ends' vectorised
/// [`angle`] and [`cosine`] check; the two functions themselves clamp, for callers whose
/// distances come from signatures of width `f`.
///
/// ```
/// use simlsh::estimate::check_distance;
/// assert!(check_distance(3, 64).is_ok());
/// assert!(check_distance(65, 64).is_err() && check_distance(0, 0).is_err());
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] naming the width or the distance.
pub fn check_distance(h: u64, f: u64) -> Result<()> {
    check_bits(f)?;
    if h > f {
        return Err(Error::param(
            "hamming",
            format!("a Hamming distance of {h} exceeds the width of {f} bits"),
        ));
    }
    Ok(())
}

/// The angle estimate θ̂ = π·h/f in radians, from h differing bits out of f.
///
/// Unbiased for θ, with variance θ(π − θ)/f.
///
/// # Edge cases
///
/// h is clamped to f (a Hamming distance cannot exceed the width). f = 0 carries no information
/// and gives NaN; [`estimate`] reports both as errors instead, and [`check_distance`] checks
/// them for callers whose `h` and `f` are not from signatures of width `f`.
///
/// # Example
///
/// ```
/// use simlsh::estimate::angle;
/// assert_eq!(angle(0, 64), 0.0);
/// assert_eq!(angle(32, 64), std::f64::consts::FRAC_PI_2);
/// assert!((angle(16, 64).to_degrees() - 45.0).abs() < 1e-12);
/// ```
pub fn angle(h: u64, f: u64) -> f64 {
    if f == 0 {
        return f64::NAN;
    }
    PI * (h.min(f) as f64 / f as f64)
}

/// The cosine estimate ĉ = cos(π·h/f), from h differing bits out of f.
///
/// Computed as cos(π·x) with the argument reduced to the nearest quarter turn, so that
/// h = f/2 gives exactly 0.
///
/// # Edge cases
///
/// As for [`angle`]: h is clamped to f, and f = 0 gives NaN.
///
/// # Example
///
/// ```
/// use simlsh::estimate::cosine;
/// assert_eq!(cosine(0, 64), 1.0);
/// assert_eq!(cosine(32, 64), 0.0);
/// assert_eq!(cosine(64, 64), -1.0);
/// assert!((cosine(3, 64) - 0.9892).abs() < 1e-4);
/// ```
pub fn cosine(h: u64, f: u64) -> f64 {
    if f == 0 {
        return f64::NAN;
    }
    cospi(h.min(f) as f64 / f as f64)
}

/// The exact cosine of two vectors, accumulated in `f64`: the oracle that the estimates are
/// measured against. `0` when either vector is all zeros (no direction); the pairs are taken
/// up to the shorter vector.
///
/// # Example
///
/// ```
/// use simlsh::estimate::exact_cosine;
/// assert_eq!(exact_cosine(&[3.0, 4.0], &[4.0, 3.0]), 24.0 / 25.0);
/// assert_eq!(exact_cosine(&[1.0, 0.0], &[0.0, 2.0]), 0.0);
/// assert!((exact_cosine(&[1.0, 2.0], &[-2.0, -4.0]) + 1.0).abs() < 1e-15);
/// assert_eq!(exact_cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
/// ```
pub fn exact_cosine<'a>(
    a: impl IntoIterator<Item = &'a f32>,
    b: impl IntoIterator<Item = &'a f32>,
) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&p, &q) in a.into_iter().zip(b) {
        let (p, q) = (f64::from(p), f64::from(q));
        dot += p * q;
        na += p * p;
        nb += q * q;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// The angle θ = acos(c) in radians of a cosine c.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if c is NaN or outside [−1, 1] by more than [`CLAMP_SLACK`]
/// (values within the slack are clamped).
///
/// # Example
///
/// ```
/// use simlsh::estimate::cosine_to_angle;
/// assert_eq!(cosine_to_angle(1.0)?, 0.0);
/// assert!((cosine_to_angle(0.5)?.to_degrees() - 60.0).abs() < 1e-12);
/// assert_eq!(cosine_to_angle(1.0 + 1e-12)?, 0.0); // rounding excess is clamped
/// assert!(cosine_to_angle(1.5).is_err());
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn cosine_to_angle(c: f64) -> Result<f64> {
    Ok(check_cosine("cosine", c)?.acos())
}

/// The cosine cos θ of an angle θ in radians, θ ∈ [0, π].
///
/// # Errors
///
/// [`Error::InvalidParameter`] if θ is NaN or outside [0, π] by more than [`CLAMP_SLACK`]
/// (values within the slack are clamped).
///
/// # Example
///
/// ```
/// use simlsh::estimate::angle_to_cosine;
/// assert!((angle_to_cosine(60f64.to_radians())? - 0.5).abs() < 1e-15);
/// assert_eq!(angle_to_cosine(std::f64::consts::FRAC_PI_2)?, 0.0);
/// assert!(angle_to_cosine(-1.0).is_err());
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn angle_to_cosine(theta: f64) -> Result<f64> {
    let theta = check_angle("angle", theta)?;
    Ok(cospi(theta / PI))
}

/// The expected Hamming distance f·acos(c)/π between f-bit signatures of two vectors with
/// cosine c.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if c is NaN or outside [−1, 1] (beyond [`CLAMP_SLACK`]).
///
/// # Example
///
/// ```
/// use simlsh::estimate::expected_hamming;
/// assert_eq!(expected_hamming(0.0, 64)?, 32.0);
/// assert!((expected_hamming(0.5, 64)? - 64.0 / 3.0).abs() < 1e-12);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn expected_hamming(c: f64, f: u64) -> Result<f64> {
    let c = check_cosine("cosine", c)?;
    Ok(f as f64 * (c.acos() / PI))
}

/// The largest Hamming distance h <= f whose cosine estimate [`cosine`]`(h, f)` is still >= c
/// (it exists: h = 0 has estimate 1). Searching with this radius is the same as thresholding the point estimate at c. It equals
/// ⌊f·acos(c)/π⌋ up to rounding, and is checked exactly against [`cosine`].
///
/// # Errors
///
/// [`Error::InvalidParameter`] if c is NaN or outside [−1, 1] (beyond [`CLAMP_SLACK`]).
///
/// # Example
///
/// ```
/// use simlsh::estimate::{cosine, max_hamming_for_cosine};
/// let h = max_hamming_for_cosine(0.95, 64)?;
/// assert_eq!(h, 6);
/// assert!(cosine(6, 64) >= 0.95 && cosine(7, 64) < 0.95);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn max_hamming_for_cosine(c: f64, f: u64) -> Result<u64> {
    let c = check_cosine("cosine", c)?;
    let guess = (f as f64 * (c.acos() / PI)).floor().clamp(0.0, f as f64) as u64;
    let mut h = guess;
    while h < f && cosine(h + 1, f) >= c {
        h += 1;
    }
    while h > 0 && cosine(h, f) < c {
        h -= 1;
    }
    Ok(h)
}

/// Estimates of the angle and cosine between two vectors from the Hamming distance of their
/// signatures, with confidence intervals. Built by [`estimate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The Hamming distance h.
    pub hamming: u64,
    /// The signature width f.
    pub bits: u64,
    /// θ̂ = π·h/f, radians.
    pub angle: f64,
    /// ĉ = cos(π·h/f).
    pub cosine: f64,
    /// Confidence interval for p = θ/π.
    pub p_interval: Interval,
    /// Confidence interval for θ in radians: π × `p_interval`.
    pub angle_interval: Interval,
    /// Confidence interval for cos θ: [cos(π·p_hi), cos(π·p_lo)].
    pub cosine_interval: Interval,
    /// The confidence level, e.g. 0.95.
    pub level: f64,
    /// The interval method.
    pub method: IntervalMethod,
}

impl Estimate {
    /// θ̂ in degrees.
    pub fn angle_degrees(&self) -> f64 {
        self.angle.to_degrees()
    }

    /// The angle interval in degrees.
    pub fn angle_interval_degrees(&self) -> Interval {
        Interval {
            lo: self.angle_interval.lo.to_degrees(),
            hi: self.angle_interval.hi.to_degrees(),
        }
    }
}

/// Estimates θ and cos θ from h differing bits out of f, with a `level` confidence interval by
/// `method`.
///
/// The interval [p_lo, p_hi] for p = θ/π (see [`IntervalMethod`] for the formulas) is mapped
/// monotonically: θ ∈ [π·p_lo, π·p_hi] and cos θ ∈ [cos(π·p_hi), cos(π·p_lo)], so each has
/// exactly the coverage of the p interval. [`IntervalMethod::ClopperPearson`] (the default)
/// guarantees that coverage is at least `level`; [`IntervalMethod::Wilson`] is shorter on
/// average but only approximately at the level.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if f = 0 or f >= 2⁵³, h > f, or `level` is not strictly between
/// 0 and 1.
///
/// # Example
///
/// ```
/// use simlsh::estimate::{estimate, IntervalMethod};
/// let cp = estimate(0, 64, 0.95, IntervalMethod::ClopperPearson)?;
/// assert_eq!(cp.cosine, 1.0);
/// // For h = 0 the upper bound on p is 1 − (α/2)^(1/f).
/// assert!((cp.p_interval.hi - (1.0 - 0.025f64.powf(1.0 / 64.0))).abs() < 1e-14);
/// // Wilson is usually shorter (here [0.0161, 0.1290] against [0.0098, 0.1309] for p).
/// let cp = estimate(3, 64, 0.95, IntervalMethod::ClopperPearson)?;
/// let wilson = estimate(3, 64, 0.95, IntervalMethod::Wilson)?;
/// assert!(wilson.p_interval.width() < cp.p_interval.width());
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn estimate(h: u64, f: u64, level: f64, method: IntervalMethod) -> Result<Estimate> {
    check_distance(h, f)?;
    check_level(level)?;
    let p_interval = proportion_bounds(h as f64, f as f64, level, method);
    Ok(Estimate {
        hamming: h,
        bits: f,
        angle: angle(h, f),
        cosine: cosine(h, f),
        p_interval,
        angle_interval: Interval {
            lo: PI * p_interval.lo,
            hi: PI * p_interval.hi,
        },
        cosine_interval: Interval {
            lo: cospi(p_interval.hi),
            hi: cospi(p_interval.lo),
        },
        level,
        method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn angle_and_cosine_of_hamming_distances() {
        for &f in &[1u64, 3, 64, 256, 65_536] {
            for h in [0, 1, f / 4, f / 3, f / 2, f - 1, f] {
                let theta = PI * h as f64 / f as f64;
                assert!((angle(h, f) - theta).abs() <= 1e-15 * theta.max(1.0));
                assert!((cosine(h, f) - theta.cos()).abs() <= 4e-16, "{h}/{f}");
            }
            assert_eq!(cosine(f / 2, f) == 0.0, f % 2 == 0);
            // h is clamped to f.
            assert_eq!(angle(f + 5, f), PI);
            assert_eq!(cosine(f + 5, f), -1.0);
        }
        // The f = 64 column of the Hamming → cosine table in the research notes.
        let table = [
            (1, 0.9988),
            (2, 0.9952),
            (3, 0.9892),
            (4, 0.9808),
            (6, 0.9569),
            (8, 0.9239),
            (16, std::f64::consts::FRAC_1_SQRT_2),
            (32, 0.0),
        ];
        for (h, c) in table {
            assert!((cosine(h, 64) - c).abs() < 5e-5, "{h}");
        }
        assert!(angle(1, 0).is_nan() && cosine(1, 0).is_nan());
    }

    #[test]
    fn conversions_validate_and_clamp() {
        for bad in [f64::NAN, 1.5, -1.0 - 1e-6, f64::INFINITY] {
            assert!(cosine_to_angle(bad).is_err());
            assert!(expected_hamming(bad, 64).is_err());
            assert!(max_hamming_for_cosine(bad, 64).is_err());
        }
        for bad in [f64::NAN, -0.1, PI + 1e-6, f64::NEG_INFINITY] {
            assert!(angle_to_cosine(bad).is_err());
        }
        assert_eq!(cosine_to_angle(1.0 + 1e-12).unwrap(), 0.0);
        assert_eq!(cosine_to_angle(-1.0 - 1e-12).unwrap(), PI);
        assert_eq!(angle_to_cosine(-1e-12).unwrap(), 1.0);
        assert_eq!(angle_to_cosine(PI + 1e-12).unwrap(), -1.0);
        assert_eq!(expected_hamming(-1.0, 256).unwrap(), 256.0);
        assert_eq!(expected_hamming(1.0, 256).unwrap(), 0.0);
    }

    #[test]
    fn max_hamming_for_cosine_matches_brute_force() {
        for f in 1..=130u64 {
            for i in -40..=40 {
                let c = f64::from(i) / 40.0;
                let want = (0..=f).filter(|&h| cosine(h, f) >= c).max().unwrap();
                assert_eq!(max_hamming_for_cosine(c, f).unwrap(), want, "c={c} f={f}");
            }
            // Thresholds exactly at a representable estimate.
            for h in 0..=f {
                assert!(max_hamming_for_cosine(cosine(h, f), f).unwrap() >= h);
            }
        }
    }

    #[test]
    fn estimate_validates_its_inputs() {
        assert!(estimate(1, 0, 0.95, IntervalMethod::Wilson).is_err());
        assert!(estimate(65, 64, 0.95, IntervalMethod::Wilson).is_err());
        for bad in [0.0, 1.0, f64::NAN, -0.5, 2.0] {
            assert!(estimate(3, 64, bad, IntervalMethod::ClopperPearson).is_err());
        }
        assert!(estimate(0, MAX_TRIALS, 0.95, IntervalMethod::Wilson).is_err());
    }

    #[test]
    fn intervals_widen_with_the_level() {
        for method in [IntervalMethod::Wilson, IntervalMethod::ClopperPearson] {
            for h in [0u64, 5, 32, 63] {
                let mut prev: Option<Interval> = None;
                for level in [0.5, 0.8, 0.9, 0.95, 0.99, 0.999] {
                    let e = estimate(h, 64, level, method).unwrap();
                    if let Some(p) = prev {
                        assert!(e.p_interval.lo <= p.lo && e.p_interval.hi >= p.hi);
                    }
                    prev = Some(e.p_interval);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn intervals_map_monotonically(
            f in 1u64..100_000,
            frac in 0.0f64..=1.0,
            level in 0.5f64..0.9999,
            wilson in any::<bool>(),
        ) {
            let h = ((f as f64) * frac).round() as u64;
            let method = if wilson { IntervalMethod::Wilson } else { IntervalMethod::ClopperPearson };
            let e = estimate(h, f, level, method).unwrap();
            let p = e.p_interval;
            prop_assert!(0.0 <= p.lo && p.lo <= p.hi && p.hi <= 1.0);
            prop_assert!(p.contains(h as f64 / f as f64));
            prop_assert_eq!(e.angle_interval.lo, PI * p.lo);
            prop_assert_eq!(e.angle_interval.hi, PI * p.hi);
            prop_assert!(e.angle_interval.contains(e.angle));
            prop_assert!(e.cosine_interval.lo <= e.cosine && e.cosine <= e.cosine_interval.hi);
            prop_assert!((e.cosine_interval.lo - (PI * p.hi).cos()).abs() <= 1e-15);
            prop_assert!((e.cosine_interval.hi - (PI * p.lo).cos()).abs() <= 1e-15);
            // The estimate inverts the expected distance.
            let back = expected_hamming(e.cosine, f).unwrap();
            prop_assert!((back - h as f64).abs() <= 1e-6 * (f as f64));
        }
    }
}
