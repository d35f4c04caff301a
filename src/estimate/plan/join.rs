//! Choosing the join of a cosine threshold: the exact Hamming join at the planned radius or
//! the banded join, whichever is cheaper, and the signature width when it is yet to be made.

use super::banding::BandingPlan;
use super::{
    BandingPlanner, PlanInputs, RadiusPlanner, RadiusRule, check_recall, pair_ns,
    plan_input_setters,
};
use crate::error::{Error, Result};

/// The widths a verified cosine join chooses from when the signatures are yet to be made
/// ([`JoinPlanner::features`]): 256 bits up to tens of thousands of rows, wider as the rows
/// grow (banding more rows needs longer bands to keep random candidates down).
pub const PLANNED_WIDTHS: [usize; 5] = [256, 512, 1024, 2048, 4096];

/// A memory budget ([`JoinPlanner::memory`]) may make the join this many times costlier
/// than the cheapest plan at any width; beyond, planning fails with an error naming both
/// plans, rather than a run that would take that much longer (on 10⁷ planted documents at
/// cosine 0.8, 2 GB of signatures allow 1,024 bits, where no banding's keys are narrow enough
/// and the radius join is predicted at ~10⁵ s against ~300 s for 4,096 bits banded).
pub const MEMORY_COST_FACTOR: f64 = 4.0;

/// Which join a [`JoinPlanner`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinChoice {
    /// The exact Hamming join at [`HammingJoinPlan::radius`].
    Hamming,
    /// The banded join of [`JoinPlan::banded`].
    Banded,
}

impl JoinChoice {
    /// Both choices, as [`name`](Self::name) and [`FromStr`](std::str::FromStr) spell them.
    pub const ALL: [JoinChoice; 2] = [JoinChoice::Hamming, JoinChoice::Banded];

    /// `hamming` or `bands`: the text form.
    pub fn name(self) -> &'static str {
        match self {
            JoinChoice::Hamming => "hamming",
            JoinChoice::Banded => "bands",
        }
    }
}

impl std::fmt::Display for JoinChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for JoinChoice {
    type Err = Error;

    /// The choice of a [`name`](JoinChoice::name).
    ///
    /// ```
    /// use simlsh::estimate::JoinChoice;
    ///
    /// assert_eq!("bands".parse::<JoinChoice>()?, JoinChoice::Banded);
    /// assert_eq!(JoinChoice::Hamming.to_string(), "hamming");
    /// assert!("banded".parse::<JoinChoice>().is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        JoinChoice::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| Error::param("choice", format!("unknown join `{s}` (hamming, bands)")))
    }
}

/// The exact Hamming join's side of a [`JoinPlan`].
#[derive(Clone, Debug, PartialEq)]
pub struct HammingJoinPlan {
    /// The smallest radius whose binomial recall at τ reaches the target
    /// ([`RadiusRule::TargetRecall`]).
    pub radius: u64,
    /// Its recall at τ, `P(Bin(f, acos(τ)/π) ≤ r)`.
    pub recall: f64,
    /// Expected pair checks of the join's design, [`crate::index::Plan::join_cost`].
    pub pair_checks: f64,
    /// Expected time on one core, nanoseconds, by the same cost model as banding.
    pub cost_ns: f64,
}

/// The result of [`JoinPlanner::plan`]: the signature width, both options at that width and
/// the cheaper one.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinPlan {
    /// The signature width `f` chosen (the one given, or the cheapest of the allowed widths).
    pub bits: usize,
    /// The cheaper option.
    pub choice: JoinChoice,
    /// The exact Hamming join.
    pub hamming: HammingJoinPlan,
    /// The banded join, if a layout of the signatures' width reaches the target.
    pub banded: Option<BandingPlan>,
    /// Expected time on one core, nanoseconds: the chosen join's cost plus signing `n` rows
    /// at `f` bits ([`JoinPlanner::sign_cost`]).
    pub cost_ns: f64,
}

impl JoinPlan {
    /// The chosen join's candidate [`Scheme`](crate::join::Scheme): the radius of the exact
    /// Hamming join, or the banding.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when banding was chosen without a layout (never for a plan
    /// made by [`JoinPlanner::plan`]).
    pub fn scheme(&self) -> Result<crate::join::Scheme> {
        use crate::join::Scheme;
        match (self.choice, &self.banded) {
            (JoinChoice::Hamming, _) => Ok(Scheme::Radius {
                radius: u32::try_from(self.hamming.radius)
                    .map_err(|_| Error::param("radius", "over 2^32"))?,
            }),
            (JoinChoice::Banded, Some(b)) => Ok(Scheme::Bands(b.banding()?)),
            (JoinChoice::Banded, None) => {
                Err(Error::param("bits", "no banding fits these signatures"))
            }
        }
    }
}

/// Cost model of signing (nanoseconds per feature, i.e. nonzero, per signature bit): the
/// marginal cost of a wider signature with the hashed Gaussian signer on documents as
/// `simlsh dedup` signs them (10⁶ documents of 40 words: 8.6 s at 1,024 bits, 17.5 s at
/// 4,096). Times the mean number of features per row, it is [`JoinPlanner::sign_cost`].
pub const SIGN_NS_PER_FEATURE_BIT: f64 = 0.075;

/// Chooses between the exact Hamming join and the banded join for a cosine threshold τ, a
/// recall target at τ (default 0.99), `n` rows and `f`-bit signatures, and, when the
/// signatures are yet to be made, the width `f` itself among the allowed widths
/// ([`widths`](Self::widths)), signing counted ([`sign_cost`](Self::sign_cost)).
///
/// The Hamming join finds a pair when its distance is within the radius; the radius that
/// reaches the target grows with `f·acos(τ)/π`, and its cost with the radius relative to
/// `f`: cheap near τ = 1 (small `r/f`, many permuted tables with long keys), all `n²/2`
/// pairs when `r/f` approaches ¼ or so. Banding's cost depends on τ and `n` only through the
/// layout; it wins for thresholds far from 1 on wide signatures. Banding on more rows needs
/// longer bands to keep the random candidates (`n²/2 · 2^−w` per band) down, hence more
/// bands and wider signatures: the chosen width grows with `n`.
///
/// ```
/// use simlsh::estimate::{JoinChoice, JoinPlanner};
///
/// // Near-duplicates at 64 bits: the exact join.
/// let near = JoinPlanner::new(0.99).rows(1_000_000).bits(64).plan()?;
/// assert_eq!(near.choice, JoinChoice::Hamming);
/// // Cosine 0.8 on 312k rows of 1024 bits: banding.
/// let far = JoinPlanner::new(0.8).recall(0.95).rows(312_000).bits(1024).plan()?;
/// assert_eq!(far.choice, JoinChoice::Banded);
/// assert!(far.banded.unwrap().cost_ns < far.hamming.cost_ns / 10.0);
/// // Choosing the width for rows of 40 features: wider for more rows.
/// let widths = [256, 512, 1024, 2048, 4096];
/// let plan = |n| JoinPlanner::new(0.8).rows(n).widths(&widths).sign_cost(0.075 * 40.0).plan();
/// let (small, large) = (plan(100_000)?, plan(10_000_000)?);
/// assert!(small.bits < large.bits);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct JoinPlanner {
    inputs: PlanInputs,
    memory: Option<u64>,
}

impl JoinPlanner {
    /// A planner for the threshold τ: recall 0.99, one million rows, 256 bits, signing not
    /// counted.
    pub fn new(threshold: f64) -> Self {
        Self::from_inputs(PlanInputs::new(threshold, &[256]))
    }

    /// A planner for `inputs`, no memory budget.
    pub fn from_inputs(inputs: PlanInputs) -> Self {
        JoinPlanner {
            inputs,
            memory: None,
        }
    }

    plan_input_setters!();

    /// The signatures are yet to be made from rows of `mean` features (nonzeros) on average:
    /// the width is chosen among [`PLANNED_WIDTHS`], signing counted at
    /// [`SIGN_NS_PER_FEATURE_BIT`] per feature and bit (rows of fewer than one feature count
    /// as one). The same as `.widths(&PLANNED_WIDTHS).sign_cost(SIGN_NS_PER_FEATURE_BIT ×
    /// mean)`, the plan of `simlsh dedup --cosine` without `--bits`.
    pub fn features(self, mean: f64) -> Self {
        let mean = if mean.is_finite() { mean.max(1.0) } else { 1.0 };
        self.widths(&PLANNED_WIDTHS)
            .sign_cost(SIGN_NS_PER_FEATURE_BIT * mean)
    }

    /// Only widths whose signatures of the planned rows fit in `bytes` (`rows · f / 8`) are
    /// considered; the narrowest allowed width is always kept. Callers pass the signatures'
    /// share of the memory they may use: [`MemoryBudget::signatures`](crate::verify::MemoryBudget::signatures)
    /// of a budget (the command line's: `--memory`, or what is available). When the widths
    /// that fit make the cheapest plan more than [`MEMORY_COST_FACTOR`] times costlier than
    /// the cheapest at any width, [`plan`](Self::plan) fails instead.
    pub fn memory(mut self, bytes: u64) -> Self {
        self.memory = Some(bytes);
        self
    }

    /// The widths considered: the allowed ones that fit the memory budget (the narrowest
    /// always).
    fn fitting_widths(&self) -> Vec<usize> {
        let narrowest = self.inputs.widths.iter().copied().min();
        self.inputs
            .widths
            .iter()
            .copied()
            .filter(|&f| {
                Some(f) == narrowest
                    || self
                        .memory
                        .is_none_or(|m| self.inputs.rows.saturating_mul(f as u64 / 8) <= m)
            })
            .collect()
    }

    /// Plans both joins at each allowed width and picks the cheapest (join and signing).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a threshold outside [−1, 1], a recall target outside
    /// (0, 1), no widths, a width outside 1 ..= 2²⁰, or a negative or non-finite signing cost;
    /// [`Error::InvalidParameter`] (`memory`) when the memory budget makes the plan more than
    /// [`MEMORY_COST_FACTOR`] times costlier than the cheapest at any width.
    pub fn plan(&self) -> Result<JoinPlan> {
        self.inputs.check()?;
        // Each allowed width planned once; the cheapest overall and among those that fit.
        let fitting = self.fitting_widths();
        let mut free: Option<JoinPlan> = None;
        let mut best: Option<JoinPlan> = None;
        for &f in &self.inputs.widths {
            let plan = self.plan_at(f)?;
            if fitting.contains(&f) && best.as_ref().is_none_or(|b| plan.cost_ns < b.cost_ns) {
                best = Some(plan.clone());
            }
            if free.as_ref().is_none_or(|b| plan.cost_ns < b.cost_ns) {
                free = Some(plan);
            }
        }
        let (best, free) = (
            best.expect("the narrowest width fits"),
            free.expect("at least one width"),
        );
        if let Some(m) = self.memory
            && best.cost_ns > MEMORY_COST_FACTOR * free.cost_ns
        {
            return Err(Error::param(
                "memory",
                format!(
                    "{m} bytes of signatures allow at most {} bits for {} rows, where the \
                     cheapest plan ({} join at {} bits) is predicted to cost {:.0} s, {:.0}× \
                     the cheapest plan ({} join at {} bits: {:.0} s, {} bytes of \
                     signatures); give more memory or choose the width",
                    fitting.iter().max().expect("at least one width"),
                    self.inputs.rows,
                    best.choice,
                    best.bits,
                    best.cost_ns / 1e9,
                    best.cost_ns / free.cost_ns,
                    free.choice,
                    free.bits,
                    free.cost_ns / 1e9,
                    self.inputs.rows.saturating_mul(free.bits as u64 / 8),
                ),
            ));
        }
        Ok(best)
    }

    /// Both joins at width `f`.
    fn plan_at(&self, f: usize) -> Result<JoinPlan> {
        let target = check_recall(self.inputs.recall)?;
        let radius = RadiusPlanner::new(self.inputs.threshold)
            .bits(f as u64)
            .rule(RadiusRule::TargetRecall(target))
            .plan()?;
        let r = radius.radius;
        let design = crate::join::self_join_plan(f, r as u32, self.inputs.rows as usize)?;
        let pair_checks = design.join_cost();
        let hamming = HammingJoinPlan {
            radius: r,
            recall: radius.chosen().recall_at_threshold,
            pair_checks,
            cost_ns: pair_checks * pair_ns(f, f64::INFINITY),
        };
        // Banding's own cost, signing left out: it is the same for both joins at `f`.
        let banded = BandingPlanner::from_inputs(PlanInputs {
            recall: target,
            widths: vec![f],
            sign_ns_per_bit: 0.0,
            ..self.inputs.clone()
        })
        .plan()
        .ok();
        let (choice, join_ns) = match &banded {
            Some(b) if b.cost_ns < hamming.cost_ns => (JoinChoice::Banded, b.cost_ns),
            _ => (JoinChoice::Hamming, hamming.cost_ns),
        };
        Ok(JoinPlan {
            bits: f,
            choice,
            hamming,
            banded,
            cost_ns: join_ns + self.inputs.sign_ns_per_bit * f as f64 * self.inputs.rows as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_that_makes_the_join_far_costlier_is_an_error() {
        let plan = |memory: Option<u64>| {
            let p = JoinPlanner::new(0.8)
                .recall(0.99)
                .rows(10_000_000)
                .features(40.0);
            match memory {
                Some(m) => p.memory(m).plan(),
                None => p.plan(),
            }
        };
        // Unbudgeted: 4,096 bits banded (5.1 GB of signatures).
        let free = plan(None).unwrap();
        assert_eq!((free.bits, free.choice), (4096, JoinChoice::Banded));
        // Room for all of them: the same plan.
        assert_eq!(plan(Some(10_000_000 * 512)).unwrap(), free);
        // 2 GB: at most 1,024 bits, where no banding has keys narrow enough for 10⁷ rows
        // and the radius join costs far more: an error naming the budget and both plans.
        let e = plan(Some(2 << 30)).unwrap_err().to_string();
        assert!(
            e.contains("memory") && e.contains("at most 1024 bits"),
            "{e}"
        );
        assert!(
            e.contains("at 4096 bits") && e.contains("5120000000 bytes"),
            "{e}"
        );
        // A budget that costs less than the factor is planned within (2,048 bits: the
        // cheapest that fits, within the factor of the unbudgeted plan).
        let two = plan(Some(10_000_000 * 256)).unwrap();
        assert_eq!(two.bits, 2048);
        assert!(two.cost_ns <= MEMORY_COST_FACTOR * free.cost_ns);
    }

    #[test]
    fn choices_read_back_their_names() {
        for c in JoinChoice::ALL {
            assert_eq!(c.name().parse::<JoinChoice>().unwrap(), c);
            assert_eq!(c.to_string(), c.name());
        }
        assert_eq!(JoinChoice::ALL.map(JoinChoice::name), ["hamming", "bands"]);
        let e = "Bands".parse::<JoinChoice>().unwrap_err().to_string();
        assert!(e.contains("`Bands`") && e.contains("hamming, bands"), "{e}");
    }
}
