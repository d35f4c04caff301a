//! Choosing the number of bits for a target confidence-interval half-width.

use std::f64::consts::PI;

use crate::error::{Error, Result};
use crate::estimate::interval::{cospi, proportion_bounds};
use crate::estimate::{IntervalMethod, check_bits, check_cosine, check_level};

/// The precision target of a [`BitsPlanner`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ErrorTarget {
    /// Largest half-width of the angle interval, in degrees (> 0).
    AngleDegrees(f64),
    /// Largest half-width of the cosine interval (> 0).
    Cosine(f64),
}

impl ErrorTarget {
    /// The target of exactly one given half-width: of the angle in degrees, or of the cosine
    /// (the keyword arguments of a front end).
    ///
    /// ```
    /// use simlsh::estimate::ErrorTarget;
    ///
    /// assert_eq!(ErrorTarget::one_of(Some(2.0), None)?, ErrorTarget::AngleDegrees(2.0));
    /// assert!(ErrorTarget::one_of(Some(2.0), Some(0.1)).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`target`) unless exactly one is given.
    pub fn one_of(angle_degrees: Option<f64>, cosine: Option<f64>) -> Result<Self> {
        match (angle_degrees, cosine) {
            (Some(a), None) => Ok(ErrorTarget::AngleDegrees(a)),
            (None, Some(c)) => Ok(ErrorTarget::Cosine(c)),
            _ => Err(Error::param(
                "target",
                "give exactly one target: angle_degrees or cosine_half_width",
            )),
        }
    }
}

/// Half-widths of the angle and cosine confidence intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HalfWidth {
    /// Half-width of the angle interval, degrees: (θ_hi − θ_lo)/2.
    pub angle_degrees: f64,
    /// Half-width of the cosine interval: (c_hi − c_lo)/2.
    pub cosine: f64,
}

impl HalfWidth {
    fn get(&self, target: ErrorTarget) -> f64 {
        match target {
            ErrorTarget::AngleDegrees(_) => self.angle_degrees,
            ErrorTarget::Cosine(_) => self.cosine,
        }
    }
}

/// The half-widths of the angle and cosine confidence intervals expected with f bits for a pair
/// with true cosine c: the intervals of [`estimate`](crate::estimate::estimate) computed at the expected Hamming
/// distance h = f·acos(c)/π.
///
/// h need not be an integer: the Wilson formula takes any real h, and the Clopper–Pearson bounds
/// extend to real h through the incomplete beta function (lo = I⁻¹(α/2; h, f − h + 1),
/// hi = 1 − I⁻¹(α/2; f − h, h + 1)), so the half-width is a smooth, decreasing function of f.
/// Where f·acos(c)/π is an integer it is exactly the half-width [`estimate`](crate::estimate::estimate) reports.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if f = 0 or f >= 2⁵³, c is NaN or outside [−1, 1], or `level` is
/// not strictly between 0 and 1.
///
/// # Example
///
/// ```
/// use simlsh::estimate::{estimate, expected_half_width, IntervalMethod};
/// let hw = expected_half_width(256, 0.0, 0.95, IntervalMethod::ClopperPearson)?;
/// // At cosine 0 the expected distance is 128 of 256: the same as estimating from h = 128.
/// let e = estimate(128, 256, 0.95, IntervalMethod::ClopperPearson)?;
/// assert!((hw.cosine - e.cosine_interval.half_width()).abs() < 1e-15);
/// assert!((hw.angle_degrees - 11.0).abs() < 0.5); // about 1.96 · 5.6° (SD at 90°, 256 bits)
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn expected_half_width(
    bits: u64,
    cosine: f64,
    level: f64,
    method: IntervalMethod,
) -> Result<HalfWidth> {
    check_bits(bits)?;
    let c = check_cosine("cosine", cosine)?;
    check_level(level)?;
    Ok(half_width_unchecked(bits, c, level, method))
}

fn half_width_unchecked(bits: u64, c: f64, level: f64, method: IntervalMethod) -> HalfWidth {
    let f = bits as f64;
    let h = (f * (c.acos() / PI)).clamp(0.0, f);
    let p = proportion_bounds(h, f, level, method);
    HalfWidth {
        angle_degrees: (0.5 * PI * (p.hi - p.lo)).to_degrees(),
        cosine: 0.5 * (cospi(p.lo) - cospi(p.hi)),
    }
}

/// The result of [`BitsPlanner::plan`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BitsPlan {
    /// The smallest number of bits f meeting the target.
    pub bits: u64,
    /// ⌈f/64⌉: the u64 words a signature of f bits occupies (64 × words bits cost the same
    /// memory and only narrow the interval further).
    pub words: u64,
    /// The true cosine the half-width was evaluated at (0 for the worst case).
    pub cosine: f64,
    /// The expected half-widths with `bits` bits.
    pub half_width: HalfWidth,
    /// The target.
    pub target: ErrorTarget,
    /// The confidence level.
    pub level: f64,
    /// The interval method.
    pub method: IntervalMethod,
}

/// Planner for the signature width: the smallest f such that the expected confidence-interval
/// half-width (see [`expected_half_width`]) of the angle (degrees) or of the cosine is at most
/// a target, at a given true cosine and confidence level.
///
/// Without a cosine the worst case over all cosines is planned for, which is cosine 0 (θ = 90°):
/// both intervals are mapped from the interval for p = θ/π, whose width is largest at p = ½
/// (binomial variance p(1 − p) is largest there); the angle half-width is π/2 times the p width,
/// and the cosine half-width is sin(π·(p_lo + p_hi)/2)·sin(π·(p_hi − p_lo)/2), whose two factors
/// are both largest at p = ½ (the interval is centred there).
///
/// The half-width decreases with f, so the search (doubling, then bisection) returns the
/// smallest f: with f − 1 bits the target is missed.
///
/// Defaults: level [`DEFAULT_LEVEL`](crate::estimate::DEFAULT_LEVEL) (0.95),
/// [`IntervalMethod::default`] (Clopper–Pearson), worst-case cosine, at most 2³²
/// bits.
///
/// # Example
///
/// ```
/// use simlsh::estimate::{BitsPlanner, ErrorTarget, expected_half_width, IntervalMethod};
/// // Bits to know the angle of a pair near cosine 0.9 to ±2° (95%)?
/// let plan = BitsPlanner::new(ErrorTarget::AngleDegrees(2.0)).at_cosine(0.9).plan()?;
/// assert!(plan.half_width.angle_degrees <= 2.0);
/// let fewer = expected_half_width(plan.bits - 1, 0.9, 0.95, IntervalMethod::ClopperPearson)?;
/// assert!(fewer.angle_degrees > 2.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BitsPlanner {
    target: ErrorTarget,
    cosine: Option<f64>,
    level: f64,
    method: IntervalMethod,
    max_bits: u64,
}

impl BitsPlanner {
    /// A planner for the given target, with the defaults above.
    pub fn new(target: ErrorTarget) -> Self {
        BitsPlanner {
            target,
            cosine: None,
            level: crate::estimate::DEFAULT_LEVEL,
            method: IntervalMethod::default(),
            max_bits: 1 << 32,
        }
    }

    /// Plans for pairs with this true cosine instead of the worst case.
    pub fn at_cosine(mut self, cosine: f64) -> Self {
        self.cosine = Some(cosine);
        self
    }

    /// Sets the confidence level, in (0, 1).
    pub fn level(mut self, level: f64) -> Self {
        self.level = level;
        self
    }

    /// Sets the interval method.
    pub fn method(mut self, method: IntervalMethod) -> Self {
        self.method = method;
        self
    }

    /// Sets the largest width to consider (1 ..= 2⁴⁰).
    pub fn max_bits(mut self, max_bits: u64) -> Self {
        self.max_bits = max_bits;
        self
    }

    /// Validates the settings and finds the smallest f.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a target that is not finite and > 0, a cosine outside
    /// [−1, 1] or NaN, a level outside (0, 1), `max_bits` outside 1 ..= 2⁴⁰, or a target that
    /// `max_bits` bits cannot reach.
    pub fn plan(&self) -> Result<BitsPlan> {
        let goal = match self.target {
            ErrorTarget::AngleDegrees(v) | ErrorTarget::Cosine(v) => v,
        };
        if !(goal.is_finite() && goal > 0.0) {
            return Err(Error::param(
                "target",
                format!("the half-width target must be finite and > 0, got {goal}"),
            ));
        }
        let c = match self.cosine {
            Some(c) => check_cosine("cosine", c)?,
            None => 0.0,
        };
        check_level(self.level)?;
        if self.max_bits == 0 || self.max_bits > 1 << 40 {
            return Err(Error::param(
                "max_bits",
                format!("must lie in 1..=2^40, got {}", self.max_bits),
            ));
        }
        let width = |f: u64| half_width_unchecked(f, c, self.level, self.method);
        let meets = |f: u64| width(f).get(self.target) <= goal;
        // Doubling to bracket: meets(hi) and !meets(lo) (lo = 0 stands for "none tried").
        let mut lo = 0u64;
        let mut hi = 1u64;
        while !meets(hi) {
            if hi >= self.max_bits {
                return Err(Error::param(
                    "target",
                    format!(
                        "a half-width of {goal} needs more than max_bits = {} bits",
                        self.max_bits
                    ),
                ));
            }
            lo = hi;
            hi = (hi * 2).min(self.max_bits);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if meets(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(BitsPlan {
            bits: hi,
            words: hi.div_ceil(64),
            cosine: c,
            half_width: width(hi),
            target: self.target,
            level: self.level,
            method: self.method,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::estimate;

    const METHODS: [IntervalMethod; 2] = [IntervalMethod::Wilson, IntervalMethod::ClopperPearson];

    #[test]
    fn planned_width_is_minimal() {
        let targets = [
            ErrorTarget::AngleDegrees(10.0),
            ErrorTarget::AngleDegrees(2.0),
            ErrorTarget::AngleDegrees(0.5),
            ErrorTarget::Cosine(0.05),
            ErrorTarget::Cosine(0.01),
        ];
        for method in METHODS {
            for target in targets {
                for cosine in [
                    None,
                    Some(0.99),
                    Some(0.9),
                    Some(0.5),
                    Some(-0.7),
                    Some(1.0),
                ] {
                    let mut planner = BitsPlanner::new(target).method(method).level(0.99);
                    if let Some(c) = cosine {
                        planner = planner.at_cosine(c);
                    }
                    let plan = planner.plan().unwrap();
                    let c = cosine.unwrap_or(0.0);
                    let goal = match target {
                        ErrorTarget::AngleDegrees(v) | ErrorTarget::Cosine(v) => v,
                    };
                    let at = expected_half_width(plan.bits, c, 0.99, method).unwrap();
                    assert_eq!(at, plan.half_width);
                    assert!(at.get(target) <= goal, "{target:?} {cosine:?} {method:?}");
                    if plan.bits > 1 {
                        let below = expected_half_width(plan.bits - 1, c, 0.99, method).unwrap();
                        assert!(below.get(target) > goal, "{target:?} {cosine:?} {method:?}");
                    }
                    assert_eq!(plan.words, plan.bits.div_ceil(64));
                }
            }
        }
    }

    #[test]
    fn half_width_decreases_with_bits() {
        // The bisection relies on it.
        for method in METHODS {
            for c in [-1.0, -0.9, 0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                let mut prev = expected_half_width(1, c, 0.95, method).unwrap();
                for f in 2..=3000 {
                    let hw = expected_half_width(f, c, 0.95, method).unwrap();
                    assert!(
                        hw.angle_degrees <= prev.angle_degrees,
                        "{method:?} c={c} f={f}"
                    );
                    assert!(hw.cosine <= prev.cosine + 1e-15, "{method:?} c={c} f={f}");
                    prev = hw;
                }
            }
        }
    }

    #[test]
    fn cosine_zero_is_the_worst_case() {
        for method in METHODS {
            for f in [16u64, 64, 256, 1000, 65_536] {
                let worst = expected_half_width(f, 0.0, 0.95, method).unwrap();
                for i in -200..=200 {
                    let c = f64::from(i) / 200.0;
                    let hw = expected_half_width(f, c, 0.95, method).unwrap();
                    assert!(
                        hw.angle_degrees <= worst.angle_degrees * (1.0 + 1e-12),
                        "{c} {f}"
                    );
                    assert!(hw.cosine <= worst.cosine * (1.0 + 1e-12), "{c} {f}");
                }
            }
        }
    }

    #[test]
    fn half_width_agrees_with_estimate_at_integer_distances() {
        for method in METHODS {
            for f in [2u64, 64, 1000, 65_536] {
                for (c, h) in [(1.0, 0), (0.0, f / 2), (-1.0, f)] {
                    let hw = expected_half_width(f, c, 0.9, method).unwrap();
                    let e = estimate(h, f, 0.9, method).unwrap();
                    // The estimate's ends are rounded near 180° and −1, hence the absolute slack.
                    let angle = e.angle_interval_degrees().half_width();
                    assert!((hw.angle_degrees - angle).abs() <= 1e-12 * angle + 1e-13);
                    let cos = e.cosine_interval.half_width();
                    assert!((hw.cosine - cos).abs() <= 1e-12 * cos + 1e-15, "{f} {c}");
                }
            }
        }
    }

    #[test]
    fn research_notes_scale() {
        // SD(θ̂) at θ = 90° is 90°/√f, so the 95% half-width is about 1.96·90°/√f: for 0.1°
        // that is about (1764)² = 3.11M bits.
        let plan = BitsPlanner::new(ErrorTarget::AngleDegrees(0.1))
            .method(IntervalMethod::Wilson)
            .plan()
            .unwrap();
        let normal = (1.959_963_984_540_054 * 90.0 / 0.1f64).powi(2);
        assert!(
            (plan.bits as f64 / normal - 1.0).abs() < 1e-3,
            "{}",
            plan.bits
        );
    }

    #[test]
    fn invalid_settings_are_rejected() {
        let bad = [
            BitsPlanner::new(ErrorTarget::AngleDegrees(0.0)),
            BitsPlanner::new(ErrorTarget::Cosine(f64::NAN)),
            BitsPlanner::new(ErrorTarget::Cosine(-1.0)),
            BitsPlanner::new(ErrorTarget::Cosine(0.1)).at_cosine(2.0),
            BitsPlanner::new(ErrorTarget::Cosine(0.1)).level(1.0),
            BitsPlanner::new(ErrorTarget::Cosine(0.1)).max_bits(0),
            BitsPlanner::new(ErrorTarget::AngleDegrees(0.01)).max_bits(1000),
        ];
        for planner in bad {
            assert!(planner.plan().is_err(), "{planner:?}");
        }
        assert!(expected_half_width(0, 0.5, 0.95, IntervalMethod::Wilson).is_err());
    }

    #[test]
    fn a_target_is_exactly_one_half_width_and_the_defaults_are_the_constants() {
        assert_eq!(
            ErrorTarget::one_of(None, Some(0.05)).unwrap(),
            ErrorTarget::Cosine(0.05)
        );
        for (a, c) in [(None, None), (Some(1.0), Some(0.1))] {
            let e = ErrorTarget::one_of(a, c).unwrap_err().to_string();
            assert!(e.contains("exactly one target"), "{e}");
        }
        // The planner's defaults are the library's: the same plan as with them set.
        let t = ErrorTarget::AngleDegrees(3.0);
        assert_eq!(
            BitsPlanner::new(t).plan().unwrap(),
            BitsPlanner::new(t)
                .level(crate::estimate::DEFAULT_LEVEL)
                .method(IntervalMethod::ClopperPearson)
                .plan()
                .unwrap()
        );
        assert_eq!(crate::estimate::DEFAULT_LEVEL, 0.95);
        assert_eq!(IntervalMethod::default(), IntervalMethod::ClopperPearson);
    }
}
