//! Choosing the Hamming radius for a cosine threshold, and the recall / precision trade-off.

use std::f64::consts::{FRAC_PI_2, PI};

use crate::error::{Error, Result};
use crate::estimate::binomial::{cdf_row, cdf_unchecked};
use crate::estimate::{check_bits, check_cosine};

/// Largest signature width the radius [`RadiusPlanner`] accepts (its table can have f + 1 rows).
pub const PLANNER_MAX_BITS: u64 = 1 << 20;

/// Default signature width of the [`RadiusPlanner`] (Manku et al.'s 64-bit fingerprints).
pub const RADIUS_PLANNER_BITS: u64 = 64;

/// Worst-case recall beyond which the [`RadiusPlanner`] table stops: past it the recall is saturated
/// to within this margin and precision can only fall.
const SATURATED_RECALL: f64 = 1.0 - 1e-12;

/// The true cosines of Manku et al.'s near-duplicate setting (f = 64, radius 3) in
/// [`manku_table`].
pub const MANKU_COSINES: [f64; 6] = [0.999, 0.995, 0.99, 0.98, 0.95, 0.90];

/// A point of a recall curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecallPoint {
    /// True cosine of the pair.
    pub cosine: f64,
    /// Probability that the pair's signatures are within the radius.
    pub recall: f64,
}

/// The probability that two vectors with cosine c have f-bit signatures within Hamming distance
/// r: P(Bin(f, acos(c)/π) <= r), computed exactly.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if f = 0 or f >= 2⁵³, or c is NaN or outside [−1, 1].
///
/// # Example
///
/// ```
/// use simlsh::estimate::recall_at;
/// // Manku et al.'s rule "within 3 of 64 bits" finds a pair with cosine 0.99 two times in three.
/// assert!((recall_at(64, 3, 0.99)? - 0.674).abs() < 5e-4);
/// assert_eq!(recall_at(64, 64, -1.0)?, 1.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
pub fn recall_at(bits: u64, radius: u64, cosine: f64) -> Result<f64> {
    check_bits(bits)?;
    let c = check_cosine("cosine", cosine)?;
    Ok(cdf_unchecked(radius, bits, c.acos() / PI))
}

/// The sanity table of Manku et al.'s near-duplicate rule (f = 64 bits, Hamming radius 3): the
/// recall P(Bin(64, θ/π) <= 3) at each of [`MANKU_COSINES`]. Rounded to three decimals it reads
/// 0.987, 0.853, 0.674, 0.411, 0.101, 0.013: a very tight near-duplicate test.
///
/// # Example
///
/// ```
/// use simlsh::estimate::manku_table;
/// let table = manku_table();
/// assert_eq!(table.len(), 6);
/// assert_eq!(table[0].cosine, 0.999);
/// assert!((table[0].recall - 0.987).abs() < 5e-4);
/// ```
pub fn manku_table() -> Vec<RecallPoint> {
    MANKU_COSINES
        .iter()
        .map(|&c| RecallPoint {
            cosine: c,
            recall: cdf_unchecked(3, 64, c.acos() / PI),
        })
        .collect()
}

/// How the [`RadiusPlanner`] picks the Hamming radius r.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum RadiusRule {
    /// r = round(f·acos(t)/π), the expected distance at the threshold rounded to the nearest
    /// integer (halves away from zero). The default: it needs no assumption on the pairs and
    /// mirrors thresholding the point estimate ĉ = cos(π·h/f) at t (which corresponds to the
    /// radius ⌊f·acos(t)/π⌋). Pairs exactly at the threshold are then found about half the time;
    /// pairs well above it almost always.
    #[default]
    ExpectedDistance,
    /// The smallest r whose worst-case recall P(Bin(f, acos(t)/π) <= r) (pairs exactly at the
    /// threshold) reaches the target, in (0, 1).
    TargetRecall(f64),
    /// The r maximising F1 = 2·precision·recall / (precision + recall) under the planner's
    /// [`PairDistribution`] (the smallest such r on ties).
    MaxF1,
    /// A given radius r <= f, to read its row.
    Fixed(u64),
}

impl RadiusRule {
    /// The rules' names, as [`name`](Self::name) spells them.
    pub const NAMES: [&'static str; 4] = ["expected-distance", "target-recall", "max-f1", "fixed"];

    /// `expected-distance`, `target-recall`, `max-f1` or `fixed`: the text form of the rule.
    pub fn name(&self) -> &'static str {
        match self {
            RadiusRule::ExpectedDistance => "expected-distance",
            RadiusRule::TargetRecall(_) => "target-recall",
            RadiusRule::MaxF1 => "max-f1",
            RadiusRule::Fixed(_) => "fixed",
        }
    }

    /// The rule of a [`name`](Self::name) (`None`: the default rule's) with its argument:
    /// `target-recall` takes `target_recall`, `fixed` takes `radius`, the others neither (the
    /// keyword arguments of a front end).
    ///
    /// ```
    /// use simlsh::estimate::RadiusRule;
    ///
    /// assert_eq!(RadiusRule::from_args(None, None, None)?, RadiusRule::default());
    /// assert_eq!(
    ///     RadiusRule::from_args(Some("target-recall"), Some(0.99), None)?,
    ///     RadiusRule::TargetRecall(0.99)
    /// );
    /// assert!(RadiusRule::from_args(Some("fixed"), None, None).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`rule`) for an unknown name, or an argument missing or
    /// given to a rule that takes none, naming the rules and their arguments.
    pub fn from_args(
        name: Option<&str>,
        target_recall: Option<f64>,
        radius: Option<u64>,
    ) -> Result<Self> {
        let name = name.unwrap_or(RadiusRule::default().name());
        match (name, target_recall, radius) {
            ("expected-distance", None, None) => Ok(RadiusRule::ExpectedDistance),
            ("target-recall", Some(r), None) => Ok(RadiusRule::TargetRecall(r)),
            ("max-f1", None, None) => Ok(RadiusRule::MaxF1),
            ("fixed", None, Some(r)) => Ok(RadiusRule::Fixed(r)),
            _ => Err(Error::param(
                "rule",
                format!(
                    "`{name}` with these arguments (expected-distance; target-recall with \
                     target_recall; max-f1; fixed with radius)"
                ),
            )),
        }
    }
}

/// The distribution of the cosines of the pairs a search will meet, for the expected recall,
/// precision and false-positive rate. Pairs with cosine >= the threshold are the true pairs.
#[derive(Debug, Clone, PartialEq)]
pub enum PairDistribution {
    /// Pair angles uniform on [0, `max_angle`] (radians, in (0, π]). The default is
    /// `max_angle` = π/2 (cosines in [0, 1], uniform in angle). Within each class the angles stay
    /// uniform; `true_fraction`, if given, overrides the share of true pairs (otherwise it is
    /// the share of [0, `max_angle`] below the threshold angle). The averages are computed in
    /// closed form: with p uniform on [a, b],
    /// ∫ₐᵇ P(Bin(f, p) <= r) dp = (1/(f + 1))·Σₖ₌₀ʳ (P(Bin(f + 1, a) <= k) − P(Bin(f + 1, b) <= k)).
    UniformAngle {
        /// Largest pair angle, radians.
        max_angle: f64,
        /// Share of true pairs, in [0, 1]; `None` for the uniform share.
        true_fraction: Option<f64>,
    },
    /// A sample of pair cosines (each counted once), e.g. measured on a subset of the data.
    Cosines(Vec<f64>),
    /// Weighted cosines `(cosine, weight)`, e.g. a histogram as (bin centre, count). Weights are
    /// finite and >= 0.
    Weighted(Vec<(f64, f64)>),
}

impl Default for PairDistribution {
    fn default() -> Self {
        PairDistribution::UniformAngle {
            max_angle: FRAC_PI_2,
            true_fraction: None,
        }
    }
}

impl PairDistribution {
    /// The distribution of a front end's keyword arguments: a sample of `cosines`, or angles
    /// uniform up to `max_angle` (default π/2) with `true_fraction` of true pairs (default the
    /// uniform share); all `None` is the [default](Self::default).
    ///
    /// ```
    /// use simlsh::estimate::PairDistribution;
    ///
    /// assert_eq!(PairDistribution::from_args(None, None, None)?, PairDistribution::default());
    /// assert!(PairDistribution::from_args(Some(vec![0.9]), Some(1.0), None).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`cosines`) when `cosines` comes with `max_angle` or
    /// `true_fraction`.
    pub fn from_args(
        cosines: Option<Vec<f64>>,
        max_angle: Option<f64>,
        true_fraction: Option<f64>,
    ) -> Result<Self> {
        match (cosines, max_angle, true_fraction) {
            (Some(c), None, None) => Ok(PairDistribution::Cosines(c)),
            (None, a, t) => Ok(PairDistribution::UniformAngle {
                max_angle: a.unwrap_or(FRAC_PI_2),
                true_fraction: t,
            }),
            _ => Err(Error::param(
                "cosines",
                "give either cosines or max_angle/true_fraction",
            )),
        }
    }
}

/// One row of a [`RadiusPlan`]: what searching within Hamming radius r achieves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanRow {
    /// The Hamming radius r.
    pub radius: u64,
    /// Worst-case recall over pairs with cosine >= t, attained at cosine t:
    /// P(Bin(f, acos(t)/π) <= r).
    pub recall_at_threshold: f64,
    /// Expected recall averaged over the true pairs of the distribution.
    pub recall: f64,
    /// Expected precision: accepted true pairs / all accepted pairs (1 when nothing is
    /// accepted).
    pub precision: f64,
    /// Expected false-positive rate: the share of false pairs accepted (0 when there are none).
    pub false_positive_rate: f64,
    /// F1 = 2·precision·recall / (precision + recall) (0 when both are 0).
    pub f1: f64,
}

/// The result of [`RadiusPlanner::plan`]: the chosen radius and the whole trade-off table.
#[derive(Debug, Clone, PartialEq)]
pub struct RadiusPlan {
    /// The cosine threshold t.
    pub threshold: f64,
    /// The signature width f.
    pub bits: u64,
    /// The rule used to choose the radius.
    pub rule: RadiusRule,
    /// f·acos(t)/π, the expected Hamming distance at the threshold.
    pub expected_distance: f64,
    /// The chosen radius.
    pub radius: u64,
    /// The share of true pairs (cosine >= t) in the pair distribution.
    pub true_fraction: f64,
    /// Rows for r = 0, 1, …: `rows[r].radius == r`. The table extends to the first radius whose
    /// worst-case recall is within 1e-12 of 1 (or to f, and at least to the chosen radius).
    pub rows: Vec<PlanRow>,
}

impl RadiusPlan {
    /// The row of the chosen radius.
    ///
    /// # Panics
    ///
    /// If `radius` is not a row of `rows`, which [`RadiusPlanner::plan`] never produces (only a plan
    /// assembled by hand can be inconsistent).
    pub fn chosen(&self) -> &PlanRow {
        &self.rows[self.radius as usize]
    }
}

/// Planner for the Hamming radius of a cosine-threshold search.
///
/// Pairs with cosine >= t are wanted. A pair with cosine c is found within radius r with
/// probability P(Bin(f, acos(c)/π) <= r), which decreases with the angle, so the worst case
/// over the wanted pairs is the pair exactly at t. The plan tabulates, for every radius, that
/// worst-case recall, the recall averaged over the true pairs of a [`PairDistribution`], the
/// expected precision, false-positive rate and F1, and picks a radius by a [`RadiusRule`].
///
/// Defaults: f = [`RADIUS_PLANNER_BITS`] (64), [`RadiusRule::ExpectedDistance`], and pairs uniform in angle on
/// [0, π/2]. Settings are validated once, in [`plan`](Self::plan).
///
/// # Example
///
/// ```
/// use simlsh::estimate::{RadiusPlanner, RadiusRule};
/// let plan = RadiusPlanner::new(0.9).bits(256).rule(RadiusRule::TargetRecall(0.99)).plan()?;
/// let row = plan.chosen();
/// assert!(row.recall_at_threshold >= 0.99);
/// assert!(plan.rows[plan.radius as usize - 1].recall_at_threshold < 0.99);
/// // The expected-distance rule finds pairs at the threshold about half the time.
/// let plan = RadiusPlanner::new(0.9).bits(256).plan()?;
/// assert_eq!(plan.radius, 37); // round(256 · acos(0.9) / π) = round(36.77)
/// assert!((plan.chosen().recall_at_threshold - 0.5).abs() < 0.1);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RadiusPlanner {
    threshold: f64,
    bits: u64,
    rule: RadiusRule,
    pairs: PairDistribution,
}

impl RadiusPlanner {
    /// A planner for the cosine threshold t (in [−1, 1]), with the defaults above.
    pub fn new(threshold: f64) -> Self {
        RadiusPlanner {
            threshold,
            bits: RADIUS_PLANNER_BITS,
            rule: RadiusRule::default(),
            pairs: PairDistribution::default(),
        }
    }

    /// Sets the signature width f (1 ..= 2²⁰).
    pub fn bits(mut self, bits: u64) -> Self {
        self.bits = bits;
        self
    }

    /// Sets the radius rule.
    pub fn rule(mut self, rule: RadiusRule) -> Self {
        self.rule = rule;
        self
    }

    /// Sets the distribution of pair cosines.
    pub fn pairs(mut self, pairs: PairDistribution) -> Self {
        self.pairs = pairs;
        self
    }

    /// Validates the settings and computes the plan.
    ///
    /// Cost: O(rows) for [`PairDistribution::UniformAngle`], O(rows × distinct cosines) for
    /// samples and histograms (pass a histogram for large samples).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a threshold or cosine outside [−1, 1] or NaN, f outside
    /// 1 ..= 2²⁰, a target recall outside (0, 1), a fixed radius above f, a `max_angle` outside
    /// (0, π], a `true_fraction` outside [0, 1], negative or non-finite weights, or a
    /// distribution without true pairs (or with a `true_fraction` < 1 but no false pairs).
    pub fn plan(&self) -> Result<RadiusPlan> {
        let t = check_cosine("threshold", self.threshold)?;
        check_bits(self.bits)?;
        let f = self.bits;
        if f > PLANNER_MAX_BITS {
            return Err(Error::param(
                "bits",
                format!("the radius planner supports up to 2^20 bits, got {f}"),
            ));
        }
        let p_t = t.acos() / PI;
        let expected_distance = f as f64 * p_t;
        let mut saturation = SATURATED_RECALL;
        let mut min_rows = 0;
        match self.rule {
            RadiusRule::TargetRecall(target) => {
                if !(target > 0.0 && target < 1.0) {
                    return Err(Error::param(
                        "target_recall",
                        format!("must lie strictly between 0 and 1, got {target}"),
                    ));
                }
                saturation = saturation.max(target);
            }
            RadiusRule::Fixed(r) => {
                if r > f {
                    return Err(Error::param(
                        "radius",
                        format!("a radius of {r} exceeds the width of {f} bits"),
                    ));
                }
                min_rows = r;
            }
            RadiusRule::ExpectedDistance | RadiusRule::MaxF1 => {}
        }
        let expected_radius = (expected_distance.round() as u64).min(f);
        let r_end = crate::estimate::binomial_quantile(saturation, f, p_t)?
            .max(min_rows)
            .max(expected_radius);

        let threshold_row = cdf_row(f, p_t, r_end);
        let (true_fraction, classes) = self.class_rates(t, f, r_end)?;
        let rows: Vec<PlanRow> = (0..=r_end)
            .map(|r| {
                let i = r as usize;
                let recall = classes.recall[i];
                let fpr = classes.false_accept[i];
                let tp = true_fraction * recall;
                let fp = (1.0 - true_fraction) * fpr;
                let precision = if tp + fp > 0.0 { tp / (tp + fp) } else { 1.0 };
                let f1 = if precision + recall > 0.0 {
                    2.0 * precision * recall / (precision + recall)
                } else {
                    0.0
                };
                PlanRow {
                    radius: r,
                    recall_at_threshold: threshold_row[i],
                    recall,
                    precision,
                    false_positive_rate: fpr,
                    f1,
                }
            })
            .collect();

        let radius = match self.rule {
            RadiusRule::ExpectedDistance => expected_radius,
            RadiusRule::Fixed(r) => r,
            RadiusRule::TargetRecall(target) => rows
                .iter()
                .find(|row| row.recall_at_threshold >= target)
                .map_or(r_end, |row| row.radius),
            RadiusRule::MaxF1 => {
                let mut best = 0;
                for row in &rows {
                    if row.f1 > rows[best].f1 {
                        best = row.radius as usize;
                    }
                }
                best as u64
            }
        };
        Ok(RadiusPlan {
            threshold: t,
            bits: f,
            rule: self.rule,
            expected_distance,
            radius,
            true_fraction,
            rows,
        })
    }

    /// The share of true pairs, and per radius 0..=r_end the mean recall of the true pairs and
    /// the mean acceptance rate of the false ones.
    fn class_rates(&self, t: f64, f: u64, r_end: u64) -> Result<(f64, ClassRates)> {
        match &self.pairs {
            PairDistribution::UniformAngle {
                max_angle,
                true_fraction,
            } => uniform_angle_rates(t, f, r_end, *max_angle, *true_fraction),
            PairDistribution::Cosines(cosines) => {
                let weighted: Vec<(f64, f64)> = cosines.iter().map(|&c| (c, 1.0)).collect();
                weighted_rates(t, f, r_end, &weighted)
            }
            PairDistribution::Weighted(weighted) => weighted_rates(t, f, r_end, weighted),
        }
    }
}

/// Per-radius rates of the two classes of pairs.
struct ClassRates {
    /// Mean P(accept) over the true pairs.
    recall: Vec<f64>,
    /// Mean P(accept) over the false pairs (0 when there are none).
    false_accept: Vec<f64>,
}

fn no_true_pairs() -> Error {
    Error::param(
        "pairs",
        "the distribution has no pairs at or above the threshold, so recall is undefined",
    )
}

/// Closed-form class rates for pair angles uniform on [0, max_angle]; see
/// [`PairDistribution::UniformAngle`].
fn uniform_angle_rates(
    t: f64,
    f: u64,
    r_end: u64,
    max_angle: f64,
    true_fraction: Option<f64>,
) -> Result<(f64, ClassRates)> {
    if !(max_angle > 0.0 && max_angle <= PI) {
        return Err(Error::param(
            "max_angle",
            format!("must lie in (0, pi], got {max_angle}"),
        ));
    }
    if let Some(w) = true_fraction
        && !(0.0..=1.0).contains(&w)
    {
        return Err(Error::param(
            "true_fraction",
            format!("must lie in [0, 1], got {w}"),
        ));
    }
    let theta_t = t.acos();
    let p_t = theta_t / PI;
    let p_m = max_angle / PI;
    let p_true_end = p_t.min(p_m);
    let has_false = p_t < p_m;
    let share = true_fraction.unwrap_or(p_true_end / p_m);
    if share <= 0.0 {
        return Err(no_true_pairs());
    }
    if share < 1.0 && !has_false {
        return Err(Error::param(
            "true_fraction",
            "the pair angles never exceed the threshold angle, so there are no false pairs",
        ));
    }
    let len = r_end as usize + 1;
    let scale = (f + 1) as f64;
    // True pairs: p uniform on [0, p_true_end] (a point mass at 0 if that is empty).
    let recall = if p_true_end > 0.0 {
        let row = cdf_row(f + 1, p_true_end, r_end);
        let mut acc = 0.0;
        row.iter()
            .map(|&c| {
                acc += 1.0 - c;
                (acc / (scale * p_true_end)).min(1.0)
            })
            .collect()
    } else {
        vec![1.0; len]
    };
    // False pairs: p uniform on (p_t, p_m].
    let false_accept = if has_false {
        let lo = cdf_row(f + 1, p_t, r_end);
        let hi = cdf_row(f + 1, p_m, r_end);
        let mut acc = 0.0;
        lo.iter()
            .zip(&hi)
            .map(|(&a, &b)| {
                acc += (a - b).max(0.0);
                (acc / (scale * (p_m - p_t))).min(1.0)
            })
            .collect()
    } else {
        vec![0.0; len]
    };
    Ok((
        share,
        ClassRates {
            recall,
            false_accept,
        },
    ))
}

/// Class rates for weighted pair cosines.
fn weighted_rates(t: f64, f: u64, r_end: u64, pairs: &[(f64, f64)]) -> Result<(f64, ClassRates)> {
    let mut clean = Vec::with_capacity(pairs.len());
    for &(c, w) in pairs {
        let c = check_cosine("cosine", c)?;
        if !(w.is_finite() && w >= 0.0) {
            return Err(Error::param(
                "weight",
                format!("weights must be finite and >= 0, got {w}"),
            ));
        }
        if w > 0.0 {
            clean.push((c, w));
        }
    }
    // Merge equal cosines so that each distinct one costs one table row.
    clean.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(clean.len());
    for (c, w) in clean {
        match merged.last_mut() {
            Some(last) if last.0 == c => last.1 += w,
            _ => merged.push((c, w)),
        }
    }
    let len = r_end as usize + 1;
    let mut tp = vec![0.0; len];
    let mut fp = vec![0.0; len];
    let (mut w_true, mut w_false) = (0.0, 0.0);
    for &(c, w) in &merged {
        let row = cdf_row(f, c.acos() / PI, r_end);
        let (acc, total) = if c >= t {
            (&mut tp, &mut w_true)
        } else {
            (&mut fp, &mut w_false)
        };
        *total += w;
        for (a, &v) in acc.iter_mut().zip(&row) {
            *a += w * v;
        }
    }
    if w_true <= 0.0 {
        return Err(no_true_pairs());
    }
    let recall = tp.iter().map(|&v| (v / w_true).min(1.0)).collect();
    let false_accept = if w_false > 0.0 {
        fp.iter().map(|&v| (v / w_false).min(1.0)).collect()
    } else {
        vec![0.0; len]
    };
    Ok((
        w_true / (w_true + w_false),
        ClassRates {
            recall,
            false_accept,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::binomial_cdf;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn manku_table_reproduces_the_research_notes() {
        let want = [0.987, 0.853, 0.674, 0.411, 0.101, 0.013];
        let table = manku_table();
        for (row, w) in table.iter().zip(want) {
            assert!((row.recall - w).abs() < 5e-4, "{row:?}");
            assert_eq!((row.recall * 1000.0).round() / 1000.0, w);
            assert_eq!(row.recall, recall_at(64, 3, row.cosine).unwrap());
        }
    }

    #[test]
    fn rows_are_exact_and_monotone() {
        for &(t, f) in &[
            (0.9, 64u64),
            (0.5, 256),
            (0.99, 1024),
            (0.0, 128),
            (-0.5, 64),
        ] {
            let plan = RadiusPlanner::new(t).bits(f).plan().unwrap();
            let p_t = t.acos() / PI;
            for (r, row) in plan.rows.iter().enumerate() {
                assert_eq!(row.radius, r as u64);
                let want = binomial_cdf(r as u64, f, p_t).unwrap();
                assert!(
                    (row.recall_at_threshold - want).abs() <= 1e-14,
                    "{t} {f} {r}"
                );
                // Averaged recall over pairs at or above t is at least the worst case.
                assert!(row.recall >= row.recall_at_threshold - 1e-14);
                if r > 0 {
                    let prev = &plan.rows[r - 1];
                    assert!(row.recall_at_threshold >= prev.recall_at_threshold);
                    assert!(row.recall >= prev.recall);
                    assert!(row.false_positive_rate >= prev.false_positive_rate);
                }
            }
            let last = plan.rows.last().unwrap();
            assert!(last.recall_at_threshold >= SATURATED_RECALL || last.radius == f);
            assert!(plan.rows.len() as u64 <= f + 1);
        }
    }

    /// Composite Simpson rule for ∫ₐᵇ g.
    fn simpson(g: impl Fn(f64) -> f64, a: f64, b: f64, panels: usize) -> f64 {
        let h = (b - a) / panels as f64;
        let mut s = g(a) + g(b);
        for i in 1..panels {
            s += g(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0
    }

    #[test]
    fn uniform_angle_closed_form_matches_quadrature() {
        // Mean P[Bin(f, θ/π) <= r] over θ uniform on each class, by numerical integration of
        // the exact CDF (a polynomial in θ/π of degree f; Simpson's error is below 1e-9 here).
        for &(t, f, max_angle) in &[(0.9, 64u64, FRAC_PI_2), (0.7, 128, PI), (0.95, 32, 1.0)] {
            let plan = RadiusPlanner::new(t)
                .bits(f)
                .pairs(PairDistribution::UniformAngle {
                    max_angle,
                    true_fraction: None,
                })
                .plan()
                .unwrap();
            let theta_t = t.acos();
            assert!((plan.true_fraction - theta_t / max_angle).abs() <= 1e-15);
            for row in plan.rows.iter().step_by(3) {
                let accept = |theta: f64| binomial_cdf(row.radius, f, theta / PI).unwrap();
                let recall = simpson(accept, 0.0, theta_t, 4000) / theta_t;
                let fpr = simpson(accept, theta_t, max_angle, 4000) / (max_angle - theta_t);
                assert!((row.recall - recall).abs() <= 1e-9, "{t} r={}", row.radius);
                assert!(
                    (row.false_positive_rate - fpr).abs() <= 1e-9,
                    "{t} r={}",
                    row.radius
                );
                let share = plan.true_fraction;
                let precision = share * recall / (share * recall + (1.0 - share) * fpr);
                assert!((row.precision - precision).abs() <= 1e-8);
            }
        }
    }

    #[test]
    fn weighted_pairs_match_brute_force() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let pairs: Vec<(f64, f64)> = (0..300)
            .map(|_| (rng.random_range(0.6..1.0), rng.random_range(0.0..3.0)))
            .collect();
        let (t, f) = (0.9, 64u64);
        let plan = RadiusPlanner::new(t)
            .bits(f)
            .pairs(PairDistribution::Weighted(pairs.clone()))
            .plan()
            .unwrap();
        let w_true: f64 = pairs.iter().filter(|p| p.0 >= t).map(|p| p.1).sum();
        let w_false: f64 = pairs.iter().filter(|p| p.0 < t).map(|p| p.1).sum();
        assert!((plan.true_fraction - w_true / (w_true + w_false)).abs() <= 1e-12);
        for row in &plan.rows {
            let accept = |c: f64| binomial_cdf(row.radius, f, c.acos() / PI).unwrap();
            let tp: f64 = pairs
                .iter()
                .filter(|p| p.0 >= t)
                .map(|p| p.1 * accept(p.0))
                .sum();
            let fp: f64 = pairs
                .iter()
                .filter(|p| p.0 < t)
                .map(|p| p.1 * accept(p.0))
                .sum();
            assert!((row.recall - tp / w_true).abs() <= 1e-12);
            assert!((row.false_positive_rate - fp / w_false).abs() <= 1e-12);
            assert!((row.precision - tp / (tp + fp)).abs() <= 1e-12);
            let f1 = 2.0 * row.precision * row.recall / (row.precision + row.recall);
            assert!((row.f1 - f1).abs() <= 1e-12);
        }
        // A plain sample is the same as unit weights.
        let cosines: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        let sample = RadiusPlanner::new(t)
            .bits(f)
            .pairs(PairDistribution::Cosines(cosines.clone()))
            .plan()
            .unwrap();
        let unit = RadiusPlanner::new(t)
            .bits(f)
            .pairs(PairDistribution::Weighted(
                cosines.iter().map(|&c| (c, 1.0)).collect(),
            ))
            .plan()
            .unwrap();
        assert_eq!(sample.rows, unit.rows);
    }

    #[test]
    fn radius_rules() {
        let base = RadiusPlanner::new(0.9).bits(256);
        // Expected distance, rounded: 256·acos(0.9)/π = 36.77.
        let plan = base.clone().plan().unwrap();
        assert_eq!(plan.radius, 37);
        assert!((plan.expected_distance - 256.0 * 0.9f64.acos() / PI).abs() < 1e-12);
        // Target recall: the smallest radius reaching it.
        for target in [0.5, 0.9, 0.99, 0.999_999] {
            let plan = base
                .clone()
                .rule(RadiusRule::TargetRecall(target))
                .plan()
                .unwrap();
            let r = plan.radius as usize;
            assert!(plan.rows[r].recall_at_threshold >= target);
            assert!(r == 0 || plan.rows[r - 1].recall_at_threshold < target);
        }
        // Max F1: no row beats the chosen one.
        let plan = base.clone().rule(RadiusRule::MaxF1).plan().unwrap();
        let best = plan.chosen().f1;
        assert!(plan.rows.iter().all(|row| row.f1 <= best));
        assert!(
            plan.rows[..plan.radius as usize]
                .iter()
                .all(|row| row.f1 < best)
        );
        // Fixed.
        let plan = base.clone().rule(RadiusRule::Fixed(200)).plan().unwrap();
        assert_eq!(plan.radius, 200);
        assert_eq!(plan.chosen().radius, 200);
    }

    #[test]
    fn true_fraction_sets_precision() {
        let plan = RadiusPlanner::new(0.9)
            .pairs(PairDistribution::UniformAngle {
                max_angle: FRAC_PI_2,
                true_fraction: Some(0.01),
            })
            .plan()
            .unwrap();
        assert_eq!(plan.true_fraction, 0.01);
        let row = plan.chosen();
        let want = 0.01 * row.recall / (0.01 * row.recall + 0.99 * row.false_positive_rate);
        assert!((row.precision - want).abs() <= 1e-15);
        // With fewer true pairs the same radius is less precise.
        let natural = RadiusPlanner::new(0.9).plan().unwrap();
        assert!(natural.chosen().precision > row.precision);
    }

    #[test]
    fn invalid_settings_are_rejected() {
        let bad = [
            RadiusPlanner::new(f64::NAN),
            RadiusPlanner::new(1.5),
            RadiusPlanner::new(0.9).bits(0),
            RadiusPlanner::new(0.9).bits(PLANNER_MAX_BITS + 1),
            RadiusPlanner::new(0.9).rule(RadiusRule::TargetRecall(1.0)),
            RadiusPlanner::new(0.9).rule(RadiusRule::TargetRecall(0.0)),
            RadiusPlanner::new(0.9).rule(RadiusRule::Fixed(65)),
            RadiusPlanner::new(0.9).pairs(PairDistribution::UniformAngle {
                max_angle: 0.0,
                true_fraction: None,
            }),
            RadiusPlanner::new(0.9).pairs(PairDistribution::UniformAngle {
                max_angle: FRAC_PI_2,
                true_fraction: Some(1.5),
            }),
            // All pair angles are below the threshold angle: no false pairs for the fraction.
            RadiusPlanner::new(0.0).pairs(PairDistribution::UniformAngle {
                max_angle: 1.0,
                true_fraction: Some(0.5),
            }),
            RadiusPlanner::new(1.0),
            RadiusPlanner::new(0.9).pairs(PairDistribution::Cosines(vec![0.1, 0.2])),
            RadiusPlanner::new(0.9).pairs(PairDistribution::Cosines(vec![0.95, f64::NAN])),
            RadiusPlanner::new(0.9).pairs(PairDistribution::Weighted(vec![(0.95, -1.0)])),
        ];
        for planner in bad {
            assert!(planner.plan().is_err(), "{planner:?}");
        }
    }

    #[test]
    fn rules_parse_from_their_name_and_argument() {
        let all = [
            RadiusRule::ExpectedDistance,
            RadiusRule::TargetRecall(0.9),
            RadiusRule::MaxF1,
            RadiusRule::Fixed(4),
        ];
        for (rule, name) in all.into_iter().zip(RadiusRule::NAMES) {
            assert_eq!(rule.name(), name);
            let (t, r) = match rule {
                RadiusRule::TargetRecall(t) => (Some(t), None),
                RadiusRule::Fixed(r) => (None, Some(r)),
                _ => (None, None),
            };
            assert_eq!(RadiusRule::from_args(Some(name), t, r).unwrap(), rule);
        }
        // No name is the default rule, which takes no argument.
        assert_eq!(
            RadiusRule::from_args(None, None, None).unwrap(),
            RadiusRule::default()
        );
        for (name, t, r) in [
            (None, Some(0.9), None),
            (Some("fixed"), None, None),
            (Some("fixed"), Some(0.9), Some(3)),
            (Some("target-recall"), None, Some(3)),
            (Some("max-f1"), Some(0.9), None),
            (Some("Max-F1"), None, None),
        ] {
            let e = RadiusRule::from_args(name, t, r).unwrap_err().to_string();
            let shown = name.unwrap_or("expected-distance");
            assert!(
                e.contains("`rule`")
                    && e.contains(&format!("`{shown}`"))
                    && e.contains("fixed with radius"),
                "{e}"
            );
        }
    }

    #[test]
    fn pair_distributions_from_arguments_and_the_default_width() {
        assert_eq!(
            PairDistribution::from_args(Some(vec![0.5, 0.9]), None, None).unwrap(),
            PairDistribution::Cosines(vec![0.5, 0.9])
        );
        assert_eq!(
            PairDistribution::from_args(None, None, Some(0.1)).unwrap(),
            PairDistribution::UniformAngle {
                max_angle: FRAC_PI_2,
                true_fraction: Some(0.1)
            }
        );
        for (a, t) in [(Some(1.0), None), (None, Some(0.5))] {
            let e = PairDistribution::from_args(Some(vec![0.9]), a, t).unwrap_err();
            assert!(e.to_string().contains("`cosines`"), "{e}");
        }
        // The planner's default width is the constant: the same plan as with it set.
        assert_eq!(
            RadiusPlanner::new(0.9).plan().unwrap(),
            RadiusPlanner::new(0.9)
                .bits(RADIUS_PLANNER_BITS)
                .plan()
                .unwrap()
        );
        assert_eq!(RadiusPlanner::new(0.9).plan().unwrap().bits, 64);
    }
}
