//! The planners, one per decision: the Hamming radius for a cosine threshold
//! ([`RadiusPlanner`], [`radius`]), the signature width for an error target ([`BitsPlanner`],
//! [`bits`]), the bands of a banded join ([`BandingPlanner`], [`banding`]) and the choice
//! between the exact Hamming join and banding ([`JoinPlanner`], [`join`]). The banding and
//! join planners plan for the same [`PlanInputs`] (threshold, recall target, rows, widths,
//! signing cost), set by the same chained setters, and share the cost model below.

mod banding;
mod bits;
mod join;
mod radius;

pub use banding::{
    BandingPlan, BandingPlanner, DEFAULT_WIDTHS, PREFIX_WORDS, background_candidates, band_recall,
    banding_recall, filtered_band_recall, probed_background_candidates,
};
pub use bits::{BitsPlan, BitsPlanner, ErrorTarget, HalfWidth, expected_half_width};
pub use join::{
    HammingJoinPlan, JoinChoice, JoinPlan, JoinPlanner, MEMORY_COST_FACTOR, PLANNED_WIDTHS,
    SIGN_NS_PER_FEATURE_BIT,
};
pub use radius::{
    MANKU_COSINES, PLANNER_MAX_BITS, PairDistribution, PlanRow, RADIUS_PLANNER_BITS, RadiusPlan,
    RadiusPlanner, RadiusRule, RecallPoint, manku_table, recall_at,
};

use super::check_cosine;
use crate::error::{Error, Result};

/// The width of a cosine join whose signatures are not planned (no vectors to verify with, or
/// verification off): at 64 bits a cosine threshold such as 0.8 is a Hamming radius of 13,
/// and LSH bands reaching the planned recall are 4 bits wide, so narrow that on a large input
/// most band keys are shared by more rows than a group may hold; 256 bits give bands of 7–12
/// bits.
pub const COSINE_BITS: usize = 256;

/// Default recall target of the planners: pairs exactly at the threshold are found with
/// probability at least 0.99 (pairs above it more often).
pub const DEFAULT_RECALL: f64 = 0.99;

/// Cost model (nanoseconds on one core, fitted to `benches/join.rs` on 300k planted rows):
/// putting one row into one band (key, radix sort, run scan, fetching the row).
pub const BAND_ROW_NS: f64 = 35.0;

/// Cost model: one step of a multi-probe band's merge, per distinct key and key bit (the
/// keys one bit apart are found by one pass over a band's sorted distinct keys per bit).
pub const PROBE_KEY_NS: f64 = 2.0;

/// Cost model: gathering one row's first words into a multi-probe band's order (a random
/// fetch per row and band; fitted with [`PROBE_KEY_NS`] to `simlsh dedup` on 10⁶ planted
/// documents, 49 bands of 18 bits probed: 12.3 s of join on one core).
pub const PROBE_ROW_NS: f64 = 30.0;

/// Default of [`PlanInputs::probes`]: the largest multi-probe distance a plan may use. Plain
/// bands, in every front end, so that the same rows get the same plan (width, bands) and the
/// same pairs from the library, `simlsh dedup`, Python and Spark at any size; a plan's scheme
/// can then be joined by `(band, key)` partitions (a distributed job) too. A join in one
/// process may allow 1 (`simlsh dedup --probes 1`), which the planner takes when its cost
/// model finds it cheaper: measured on the planted corpus at 10⁶ documents, cosine 0.8, one
/// thread, 1,024 bits with 49 bands of 18 bits probed against 2,048 bits with 113 bands of 14
/// bits, recall 0.99988 against 0.99981 (precision 1 both), 20.4 s CPU against 24.1 s,
/// 0.98 GB peak against 1.07.
pub const DEFAULT_PROBES: u32 = 0;

/// Cost model: one pair check of `f`-bit codes in a run of fewer than 48 rows (XOR, popcount
/// with early exit, first-band test), fixed part.
pub const PAIR_NS: f64 = 2.5;

/// Cost model: one pair check in a small run, per 64-bit word of the codes.
pub const PAIR_WORD_NS: f64 = 0.5;

/// Cost model: one pair check in a run of 48 rows or more of codes of at most 8 words (the
/// batched scan kernel, specialised up to 8 words; it also compares each pair in both orders
/// within a tile), fixed part.
pub const KERNEL_PAIR_NS: f64 = 0.0;

/// Cost model: one pair check in a big run, per 64-bit word of the codes.
pub const KERNEL_WORD_NS: f64 = 0.4;

/// Nanoseconds of one pair check of `bits`-bit codes in runs of `run` rows on average.
pub(super) fn pair_ns(bits: usize, run: f64) -> f64 {
    let words = bits.div_ceil(64) as f64;
    if run >= crate::join::BIG_RUN as f64 && words <= 8.0 {
        KERNEL_PAIR_NS + KERNEL_WORD_NS * words
    } else {
        PAIR_NS + PAIR_WORD_NS * words
    }
}

/// Validates a recall target.
pub(super) fn check_recall(target: f64) -> Result<f64> {
    if !(target > 0.0 && target < 1.0) {
        return Err(Error::param(
            "recall",
            format!("the recall target must lie strictly between 0 and 1, got {target}"),
        ));
    }
    Ok(target)
}

/// Validates a planner's allowed widths (not empty) and signing cost (finite, ≥ 0).
pub(super) fn check_widths_and_cost(widths: &[usize], sign_ns_per_bit: f64) -> Result<()> {
    if widths.is_empty() {
        return Err(Error::param("widths", "no signature width to choose from"));
    }
    if !(sign_ns_per_bit.is_finite() && sign_ns_per_bit >= 0.0) {
        return Err(Error::param(
            "sign_cost",
            format!("must be finite and >= 0, got {sign_ns_per_bit}"),
        ));
    }
    Ok(())
}

/// What the banding and join planners plan for: a cosine threshold τ, a recall target at τ,
/// `n` rows, the signature widths to choose from and the cost of signing. Both planners hold
/// one and set it with the same chained setters (`recall`, `rows`, `bits`, `widths`,
/// `sign_cost`); [`BandingPlanner::from_inputs`] and [`JoinPlanner::from_inputs`] take one
/// whole.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanInputs {
    /// The cosine threshold τ, in [−1, 1].
    pub threshold: f64,
    /// The recall target at τ, in (0, 1) (default [`DEFAULT_RECALL`]).
    pub recall: f64,
    /// The number of rows `n` (default one million).
    pub rows: u64,
    /// The signature widths to choose from; one when the signatures exist.
    pub widths: Vec<usize>,
    /// Nanoseconds of signing per row per signature bit (default 0: signing not counted).
    pub sign_ns_per_bit: f64,
    /// The largest multi-probe distance a banded plan may use, 0 ..=
    /// [`MAX_PROBES`](crate::join::MAX_PROBES) (default [`DEFAULT_PROBES`]): the planner
    /// weighs probing (longer bands, fewer bits) against plain bands by cost.
    pub probes: u32,
}

impl PlanInputs {
    /// Inputs for the threshold τ choosing among `widths`: recall [`DEFAULT_RECALL`], one
    /// million rows, signing not counted.
    pub fn new(threshold: f64, widths: &[usize]) -> Self {
        PlanInputs {
            threshold,
            recall: DEFAULT_RECALL,
            rows: 1_000_000,
            widths: widths.to_vec(),
            sign_ns_per_bit: 0.0,
            probes: DEFAULT_PROBES,
        }
    }

    /// The threshold and the recall target, validated with the widths, the signing cost and
    /// the probe distance.
    fn check(&self) -> Result<(f64, f64)> {
        let t = check_cosine("threshold", self.threshold)?;
        let target = check_recall(self.recall)?;
        check_widths_and_cost(&self.widths, self.sign_ns_per_bit)?;
        if self.probes > crate::join::MAX_PROBES {
            return Err(Error::param(
                "probes",
                format!(
                    "the multi-probe distance must be 0 ..= {}, got {}",
                    crate::join::MAX_PROBES,
                    self.probes
                ),
            ));
        }
        Ok((t, target))
    }
}

/// The setters of [`PlanInputs`], written once for the planners that hold one in a field
/// `inputs`.
macro_rules! plan_input_setters {
    () => {
        /// The recall target at τ, in (0, 1).
        pub fn recall(mut self, target: f64) -> Self {
            self.inputs.recall = target;
            self
        }

        /// The number of rows `n`.
        pub fn rows(mut self, n: u64) -> Self {
            self.inputs.rows = n;
            self
        }

        /// A fixed signature width `f` (the signatures exist).
        pub fn bits(mut self, f: usize) -> Self {
            self.inputs.widths = vec![f];
            self
        }

        /// The signature widths to choose from (the signatures are yet to be made), e.g.
        /// [`DEFAULT_WIDTHS`](crate::estimate::DEFAULT_WIDTHS) less those that do not fit in
        /// memory.
        pub fn widths(mut self, widths: &[usize]) -> Self {
            self.inputs.widths = widths.to_vec();
            self
        }

        /// Counts signing in the cost: nanoseconds per row per signature bit
        /// ([`SIGN_NS_PER_FEATURE_BIT`](crate::estimate::SIGN_NS_PER_FEATURE_BIT) × the mean
        /// features, i.e. nonzeros, per row).
        pub fn sign_cost(mut self, ns_per_row_per_bit: f64) -> Self {
            self.inputs.sign_ns_per_bit = ns_per_row_per_bit;
            self
        }

        /// The largest multi-probe distance a banded plan may use (0: plain bands; 1: keys one
        /// bit apart probed too, when that is cheaper).
        pub fn probes(mut self, t: u32) -> Self {
            self.inputs.probes = t;
            self
        }

        /// What the planner plans for.
        pub fn inputs(&self) -> &PlanInputs {
            &self.inputs
        }
    };
}
use plan_input_setters;
