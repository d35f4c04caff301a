//! Planning a banded cosine join: the bands and widths that reach a recall target at the
//! threshold at the least expected cost, and the recall of a banding.

use std::f64::consts::PI;

use super::{BAND_ROW_NS, PROBE_KEY_NS, PROBE_ROW_NS, PlanInputs, pair_ns, plan_input_setters};
use crate::error::{Error, Result};
use crate::estimate::binomial::{binomial_quantile, cdf_unchecked};
use crate::estimate::{check_bits, check_cosine};

/// Signature widths a [`BandingPlanner`] considers by default.
pub const DEFAULT_WIDTHS: [usize; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

/// Share of the miss budget `1 − target` given to the Hamming filter of a banded plan.
const FILTER_SHARE: f64 = 0.01;

/// Share of the miss budget given to the prefix filter of a banded plan on wide signatures.
const PREFIX_SHARE: f64 = 0.01;

/// The largest mean run of a band key a plan may have, as a fraction of the hot-key cap
/// ([`crate::join::DEFAULT_MAX_GROUP`]): a band of `w` bits over `n` rows puts about
/// `n·2^−w` rows on a key, and the join skips runs longer than the cap (their pairs are
/// listed as capped, not compared), so a layout whose keys hold about the cap compares almost
/// nothing and reaches none of its recall. At a tenth of the cap, a key's run (Poisson about
/// its mean) passes the cap with probability below 10⁻¹⁰⁰⁰ for random keys; only hot keys
/// (many rows sharing one band) are capped.
const MAX_MEAN_RUN_OF_CAP: f64 = 0.1;

/// Words of the prefix filter: plans of signatures wider than this many 64-bit words check
/// the first ones first ([`crate::join::BandingBuilder::prefix_filter`]).
pub const PREFIX_WORDS: usize = 4;

/// The probability that one bit of the signatures of two vectors with cosine `c` agrees:
/// `1 − acos(c)/π`.
fn agree(c: f64) -> f64 {
    1.0 - c.acos() / PI
}

/// The probability that two vectors with cosine `c` agree on at least one of `bands` bands
/// of `width` bits: `1 − (1 − p^w)^b` with `p = 1 − acos(c)/π`.
///
/// ```
/// use simlsh::estimate::band_recall;
/// // 16 bands of 8 bits at cosine 0.8 (p = 0.795 per bit, p^8 = 0.16).
/// let r = band_recall(16, 8, 0.8)?;
/// assert!((r - 0.93836).abs() < 1e-5);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] for a cosine outside [−1, 1] or NaN, or `width` outside
/// 1 ..= 64.
pub fn band_recall(bands: usize, width: u32, cosine: f64) -> Result<f64> {
    let c = check_cosine("cosine", cosine)?;
    check_width(width)?;
    Ok(any_band(agree(c), bands, width))
}

fn check_width(width: u32) -> Result<()> {
    if !(1..=64).contains(&width) {
        return Err(Error::param(
            "width",
            format!("bits per band must be 1 ..= 64, got {width}"),
        ));
    }
    Ok(())
}

/// `1 − (1 − p^w)^b`, accurate for small `p^w`.
fn any_band(p: f64, bands: usize, width: u32) -> f64 {
    any_of(band_hit(p, width, 0), bands)
}

/// The probability that a pair at per-bit agreement `p` collides in one band of `width` bits
/// probed within `probes` bits: `Σ_{k ≤ t} C(w, k) p^(w−k) (1−p)^k`.
fn band_hit(p: f64, width: u32, probes: u32) -> f64 {
    let w = width as i32;
    let mut c = 1.0;
    let mut sum = 0.0;
    for k in 0..=probes.min(width) as i32 {
        if k > 0 {
            c = c * f64::from(w - k + 1) / f64::from(k);
        }
        sum += c * p.powi(w - k) * (1.0 - p).powi(k);
    }
    sum.min(1.0)
}

/// `1 − (1 − h)^b`, accurate for small `h`.
fn any_of(h: f64, bands: usize) -> f64 {
    if h >= 1.0 {
        return if bands > 0 { 1.0 } else { 0.0 };
    }
    -(bands as f64 * (-h).ln_1p()).exp_m1()
}

/// The expected number of candidate pairs among `n` rows whose pairs are all random (cosine 0,
/// each bit agreeing with probability ½): `n(n−1)/2 · (1 − (1 − 2^−w)^b)`. Real data adds the
/// pairs above cosine 0; [`crate::join::sample_candidates`] measures the rate on a sample.
///
/// ```
/// use simlsh::estimate::background_candidates;
/// let c = background_candidates(1000, 1, 10);
/// assert!((c - 999.0 * 500.0 / 1024.0).abs() < 1e-6);
/// ```
pub fn background_candidates(n: u64, bands: usize, width: u32) -> f64 {
    probed_background_candidates(n, bands, width, 0)
}

/// [`background_candidates`] of a multi-probe banding
/// ([`BandingBuilder::probes`](crate::join::BandingBuilder::probes)): a random pair collides
/// in a band when its keys lie within `probes` bits, with probability
/// `Σ_{k ≤ t} C(w, k) 2^−w`.
///
/// ```
/// use simlsh::estimate::probed_background_candidates;
/// let c = probed_background_candidates(1000, 1, 10, 1);
/// assert!((c - 999.0 * 500.0 * 11.0 / 1024.0).abs() < 1e-6);
/// ```
pub fn probed_background_candidates(n: u64, bands: usize, width: u32, probes: u32) -> f64 {
    let pairs = n as f64 * (n.max(1) - 1) as f64 / 2.0;
    pairs * any_of(band_hit(0.5, width.clamp(1, 64), probes), bands)
}

/// The probability that two vectors with cosine `c` agree on at least one of `bands` bands of
/// `width` bits **and** have `bits`-bit signatures within Hamming distance `radius`: the
/// recall of a banded join with a Hamming filter, computed exactly (the bands are disjoint
/// runs of bits, so their distances are independent binomials; a dynamic programme over the
/// bands carries the distance so far and whether a band agreed, then the bits outside the
/// bands are added).
///
/// ```
/// use simlsh::estimate::{band_recall, filtered_band_recall};
/// let full = filtered_band_recall(256, 16, 8, 256, 0.8)?;
/// assert!((full - band_recall(16, 8, 0.8)?).abs() < 1e-12);
/// assert!(filtered_band_recall(256, 16, 8, 52, 0.8)? < full);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] for a cosine outside [−1, 1] or NaN, `width` outside 1 ..= 64,
/// `bits` 0, or `bands · width > bits`.
pub fn filtered_band_recall(
    bits: usize,
    bands: usize,
    width: u32,
    radius: u64,
    cosine: f64,
) -> Result<f64> {
    let c = check_cosine("cosine", cosine)?;
    check_width(width)?;
    check_bits(bits as u64)?;
    if bands.saturating_mul(width as usize) > bits {
        return Err(Error::param(
            "bands",
            format!("{bands} bands of {width} bits do not fit in {bits} bits"),
        ));
    }
    Ok(filtered(bits, bands, width, radius, 1.0 - agree(c), 0))
}

/// The recall at cosine `c` of a [`Banding`](crate::join::Banding) with its filters: the
/// probability that a pair at `c` agrees on some band (its keys within the probe distance)
/// and passes the Hamming filter ([`filtered_band_recall`], computed the same way), less the probability that it fails the prefix filter if the
/// banding has one (a lower bound, by the union bound).
///
/// ```
/// use simlsh::estimate::{BandingPlanner, banding_recall};
///
/// let plan = BandingPlanner::new(0.8).rows(1_000_000).bits(2048).plan()?;
/// assert!(plan.prefix.is_some());
/// let r = banding_recall(&plan.banding()?, 0.8)?;
/// assert!((r - plan.recall).abs() < 1e-12 && r >= 0.99);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] for a cosine outside [−1, 1] or NaN.
pub fn banding_recall(b: &crate::join::Banding, c: f64) -> Result<f64> {
    let c = check_cosine("cosine", c)?;
    let q = 1.0 - agree(c);
    let full = filtered(
        b.bits(),
        b.bands(),
        b.width(),
        u64::from(b.max_distance()),
        q,
        b.probes(),
    );
    let miss = b
        .prefix_filter()
        .map_or(0.0, |(words, r)| prefix_miss(words, r, q));
    Ok((full - miss).max(0.0))
}

/// [`filtered_band_recall`] for a per-bit disagreement probability `q`, a band agreeing when
/// its distance is at most `probes`.
fn filtered(bits: usize, bands: usize, width: u32, radius: u64, q: f64, probes: u32) -> f64 {
    let w = width as usize;
    let r = radius.min(bits as u64) as usize;
    // Distribution of one band's distance.
    let pmf: Vec<f64> = (0..=w)
        .map(|d| {
            let below = if d == 0 {
                0.0
            } else {
                cdf_unchecked(d as u64 - 1, w as u64, q)
            };
            (cdf_unchecked(d as u64, w as u64, q) - below).max(0.0)
        })
        .collect();
    // none[s], some[s]: P(distance so far = s ≤ r, no band / some band agreed so far).
    let mut none = vec![0.0; r + 1];
    let mut some = vec![0.0; r + 1];
    none[0] = 1.0;
    for _ in 0..bands {
        let mut n2 = vec![0.0; r + 1];
        let mut s2 = vec![0.0; r + 1];
        for s in 0..=r {
            let (a, b) = (none[s], some[s]);
            if a == 0.0 && b == 0.0 {
                continue;
            }
            for (d, &pd) in pmf.iter().enumerate() {
                if s + d > r {
                    break;
                }
                if d <= probes as usize {
                    s2[s + d] += (a + b) * pd;
                } else {
                    n2[s + d] += a * pd;
                    s2[s + d] += b * pd;
                }
            }
        }
        none = n2;
        some = s2;
    }
    let rest = (bits - bands * w) as u64;
    some.iter()
        .enumerate()
        .map(|(s, &v)| {
            if v == 0.0 {
                0.0
            } else {
                v * cdf_unchecked((r - s) as u64, rest, q)
            }
        })
        .sum::<f64>()
        .min(1.0)
}

/// A banded join's parameters and expected figures, from [`BandingPlanner::plan`].
#[derive(Clone, Debug, PartialEq)]
pub struct BandingPlan {
    /// The cosine threshold τ.
    pub threshold: f64,
    /// The recall target at τ.
    pub target: f64,
    /// Signature width `f`.
    pub bits: usize,
    /// Number of bands `b`.
    pub bands: usize,
    /// Bits per band `w`.
    pub width: u32,
    /// The multi-probe distance `t`: keys within `t` bits collide
    /// ([`BandingBuilder::probes`](crate::join::BandingBuilder::probes)).
    pub probes: u32,
    /// The Hamming filter's radius, if any: candidates farther apart are dropped before
    /// verification (it costs at most 1% of the miss budget `1 − target`).
    pub max_distance: Option<u32>,
    /// The prefix filter, if any, `(words, radius)`: on signatures wider than
    /// [`PREFIX_WORDS`] words, candidates whose first [`PREFIX_WORDS`] words are farther
    /// apart than the radius are dropped first (cheaply: random candidates are rejected after
    /// a few words); a pair at τ fails it with probability ≤ 1% of `1 − target`.
    pub prefix: Option<(usize, u32)>,
    /// Probability that a pair at τ becomes a candidate, `1 − (1 − h)^b` with `h` a band's
    /// collision probability (`p^w`, or `Σ_{k ≤ t} C(w, k) p^(w−k)(1−p)^k` when probing).
    pub band_recall: f64,
    /// Probability that a pair at τ becomes a candidate and passes the filters: the plan's
    /// recall at τ, ≥ the target ([`filtered_band_recall`], less the prefix filter's miss
    /// probability: a lower bound).
    pub recall: f64,
    /// Expected candidate pairs among random pairs (before the filters),
    /// [`probed_background_candidates`].
    pub candidates: f64,
    /// Expected time on one core, nanoseconds, by the cost model ([`BAND_ROW_NS`], the pair
    /// checks of small or big runs, and the signing cost if set).
    pub cost_ns: f64,
}

impl BandingPlan {
    /// The [`Banding`](crate::join::Banding) of this plan (default hot-key cap).
    ///
    /// # Errors
    /// Never for a plan from [`BandingPlanner::plan`].
    pub fn banding(&self) -> Result<crate::join::Banding> {
        let mut b = crate::join::Banding::builder()
            .bits(self.bits)
            .bands(self.bands)
            .width(self.width)
            .probes(self.probes);
        if let Some(r) = self.max_distance {
            b = b.max_distance(r);
        }
        if let Some((words, r)) = self.prefix {
            b = b.prefix_filter(words, r);
        }
        b.build()
    }
}

/// Planner of a banded join: for a cosine threshold τ, a recall target at τ (default 0.99)
/// and `n` rows, picks the signature width `f` (among the allowed widths, or the one given),
/// the number of bands `b` and their width `w` so that a pair at τ becomes a candidate with
/// probability ≥ the target, at the least expected cost.
///
/// For each `f` and `w`, `b` is the smallest with `1 − (1 − p^w)^b` ≥ the target (plus the
/// filter's share), `p = 1 − acos(τ)/π`; the layout must fit, `b·w ≤ f`. The cost is `b·n`
/// band insertions plus the expected random candidates `n²/2 · (1 − (1 − 2^−w)^b)`, each a
/// pair check of `f` bits, plus (if set with [`sign_cost`](Self::sign_cost)) signing `n`
/// rows at `f` bits. Longer bands give fewer random candidates but need more bands, hence
/// wider signatures.
///
/// With the Hamming filter (default on) the plan also sets a radius that a pair at τ exceeds
/// with probability ≤ 1% of `1 − target`, dropping random candidates (at distance ≈ `f/2`)
/// before they are verified; its recall is computed exactly.
///
/// ```
/// use simlsh::estimate::BandingPlanner;
///
/// let plan = BandingPlanner::new(0.8).recall(0.95).rows(312_000).bits(1024).plan()?;
/// assert!(plan.recall >= 0.95 && plan.bands * plan.width as usize <= 1024);
/// assert!(plan.candidates < 312_000f64 * 312_000.0 / 2.0 / 50.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BandingPlanner {
    inputs: PlanInputs,
    filter: bool,
}

impl BandingPlanner {
    /// A planner for the threshold τ: recall 0.99, one million rows, the widths
    /// [`DEFAULT_WIDTHS`], the Hamming filter on, signing not counted.
    pub fn new(threshold: f64) -> Self {
        Self::from_inputs(PlanInputs::new(threshold, &DEFAULT_WIDTHS))
    }

    /// A planner for `inputs`, the Hamming filter on.
    pub fn from_inputs(inputs: PlanInputs) -> Self {
        BandingPlanner {
            inputs,
            filter: true,
        }
    }

    plan_input_setters!();

    /// Use the Hamming filter (default true).
    pub fn filter(mut self, on: bool) -> Self {
        self.filter = on;
        self
    }

    /// The cheapest plan.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a threshold outside [−1, 1], a recall target outside
    /// (0, 1), no widths or a width of 0, a negative or non-finite signing cost, or when no
    /// layout of the allowed widths reaches the target with band keys narrow enough for the
    /// rows (a key's mean run at most a tenth of the hot-key cap,
    /// [`crate::join::DEFAULT_MAX_GROUP`]: wider runs would be skipped, not compared).
    pub fn plan(&self) -> Result<BandingPlan> {
        let (t, target) = self.inputs.check()?;
        let p = agree(t);
        let q = 1.0 - p;
        let miss = 1.0 - target;
        let n = self.inputs.rows as f64;
        let mut best: Option<Best> = None;
        for &f in &self.inputs.widths {
            check_bits(f as u64)?;
            let (radius, mut need) = if self.filter && q > 0.0 {
                let r = binomial_quantile(1.0 - FILTER_SHARE * miss, f as u64, q)?;
                (Some(r.min(f as u64) as u32), target + FILTER_SHARE * miss)
            } else {
                (None, target)
            };
            let prefix = prefix_filter(self.filter, f, q, miss)?;
            if prefix.is_some() {
                need += PREFIX_SHARE * miss;
            }
            // Random candidates are rejected by the prefix when there is one.
            let checked_bits = if prefix.is_some() {
                64 * PREFIX_WORDS
            } else {
                f
            };
            let max_run = MAX_MEAN_RUN_OF_CAP * crate::join::DEFAULT_MAX_GROUP as f64;
            for probes in 0..=self.inputs.probes {
                for w in 1..=f.min(64) as u32 {
                    if n * 0.5f64.powi(w as i32) > max_run {
                        continue;
                    }
                    let h = band_hit(p, w, probes);
                    let b = if h >= 1.0 {
                        1
                    } else if h <= 0.0 {
                        continue;
                    } else {
                        let b = ((1.0 - need).ln() / (-h).ln_1p()).ceil().max(1.0);
                        if b * w as f64 > f as f64 {
                            continue;
                        }
                        b as usize
                    };
                    let cost = banding_cost(self.inputs.rows, b, w, probes, checked_bits)
                        + self.inputs.sign_ns_per_bit * f as f64 * n;
                    if best.is_none_or(|x| cost < x.0) {
                        best = Some((cost, f, b, w, probes, radius, prefix));
                    }
                }
            }
        }
        let Some((cost_ns, bits, bands, width, probes, max_distance, prefix)) = best else {
            return Err(Error::param(
                "widths",
                format!(
                    "no band layout within widths {:?} reaches recall {target} at cosine {t}",
                    self.inputs.widths
                ),
            ));
        };
        let band_recall = any_of(band_hit(p, width, probes), bands);
        let recall = match max_distance {
            Some(r) => filtered(bits, bands, width, u64::from(r), q, probes),
            None => band_recall,
        } - prefix.map_or(0.0, |(words, r)| prefix_miss(words, r, q));
        Ok(BandingPlan {
            threshold: t,
            target,
            bits,
            bands,
            width,
            probes,
            max_distance,
            prefix,
            band_recall,
            recall: recall.max(0.0),
            candidates: probed_background_candidates(self.inputs.rows, bands, width, probes),
            cost_ns,
        })
    }
}

/// A candidate plan: cost, f, b, w, probes, filter radius, prefix filter.
type Best = (
    f64,
    usize,
    usize,
    u32,
    u32,
    Option<u32>,
    Option<(usize, u32)>,
);

/// The cost model of a banded join of `n` rows (nanoseconds on one core, signing left out):
/// `b·n` band insertions, the probes of each band (its rows' first words gathered,
/// [`PROBE_ROW_NS`], and one merge step per distinct key and bit, [`PROBE_KEY_NS`]), and the random candidates, each a pair check of
/// `checked_bits` bits: those of equal keys in runs of `n·2^−w` rows on average, those of keys
/// one bit apart across two runs (the small-run check).
fn banding_cost(n: u64, bands: usize, width: u32, probes: u32, checked_bits: usize) -> f64 {
    let nf = n as f64;
    let run = nf * 0.5f64.powi(width as i32);
    let exact = background_candidates(n, bands, width);
    let mut cost = bands as f64 * nf * BAND_ROW_NS + exact * pair_ns(checked_bits, run);
    if probes > 0 {
        let distinct = nf.min(2f64.powi(width as i32));
        let probed = probed_background_candidates(n, bands, width, probes) - exact;
        cost += bands as f64 * nf * PROBE_ROW_NS
            + bands as f64 * distinct * f64::from(width) * PROBE_KEY_NS
            + probed.max(0.0) * pair_ns(checked_bits, 0.0);
    }
    cost
}

/// The prefix filter of a plan of `f`-bit signatures (with the filter on, wider than
/// [`PREFIX_WORDS`] words): the radius a pair at per-bit disagreement `q` exceeds on the
/// prefix with probability ≤ [`PREFIX_SHARE`] of the miss budget.
fn prefix_filter(filter: bool, f: usize, q: f64, miss: f64) -> Result<Option<(usize, u32)>> {
    if !filter || q <= 0.0 || f.div_ceil(64) <= PREFIX_WORDS {
        return Ok(None);
    }
    let bits = 64 * PREFIX_WORDS as u64;
    let r = binomial_quantile(1.0 - PREFIX_SHARE * miss, bits, q)?;
    Ok(Some((PREFIX_WORDS, r.min(bits) as u32)))
}

/// `P(Bin(64·words, q) > r)`: the probability that a pair misses the prefix filter.
fn prefix_miss(words: usize, r: u32, q: f64) -> f64 {
    1.0 - cdf_unchecked(u64::from(r), 64 * words as u64, q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::binomial::cdf_unchecked;
    use crate::estimate::{JoinChoice, JoinPlanner, SIGN_NS_PER_FEATURE_BIT};

    /// `P(some band agrees ∧ distance ≤ r)` by enumerating every pattern of per-band
    /// distances (tiny layouts only).
    fn brute_filtered(bits: usize, bands: usize, width: u32, r: u64, q: f64) -> f64 {
        let w = width as u64;
        let pmf = |d: u64, n: u64| {
            let below = if d == 0 {
                0.0
            } else {
                cdf_unchecked(d - 1, n, q)
            };
            cdf_unchecked(d, n, q) - below
        };
        let rest = (bits - bands * width as usize) as u64;
        let mut total = 0.0;
        let combos = (w + 1).pow(bands as u32);
        for code in 0..combos {
            let mut c = code;
            let (mut sum, mut prob, mut any) = (0, 1.0, false);
            for _ in 0..bands {
                let d = c % (w + 1);
                c /= w + 1;
                sum += d;
                prob *= pmf(d, w);
                any |= d == 0;
            }
            if any && sum <= r {
                total += prob * cdf_unchecked(r - sum, rest, q);
            }
        }
        total
    }

    #[test]
    fn filtered_recall_matches_enumeration() {
        for &(f, b, w, r, c) in &[
            (12usize, 3usize, 3u32, 4u64, 0.7f64),
            (10, 2, 4, 3, 0.9),
            (16, 4, 2, 6, 0.5),
            (9, 3, 3, 9, 0.8),
            (20, 3, 4, 0, 0.95),
        ] {
            let q = c.acos() / PI;
            let got = filtered_band_recall(f, b, w, r, c).unwrap();
            let want = brute_filtered(f, b, w, r, q);
            assert!(
                (got - want).abs() < 1e-12,
                "{f} {b} {w} {r} {c}: {got} vs {want}"
            );
        }
        // Without a binding radius the filter is the plain band recall.
        let plain = band_recall(10, 6, 0.9).unwrap();
        assert!((filtered_band_recall(64, 10, 6, 64, 0.9).unwrap() - plain).abs() < 1e-12);
    }

    #[test]
    fn plans_reach_the_target_with_the_fewest_bands() {
        for &(t, target, f) in &[
            (0.8, 0.99, 4096usize),
            (0.9, 0.95, 256),
            (0.5, 0.9, 1024),
            (0.95, 0.999, 512),
        ] {
            let plan = BandingPlanner::new(t)
                .recall(target)
                .rows(100_000)
                .bits(f)
                .plan()
                .unwrap();
            assert!(plan.recall >= target, "{plan:?}");
            assert!(plan.band_recall >= plan.recall);
            assert!(plan.bands * plan.width as usize <= f);
            // One band fewer misses the target (with the filters' shares).
            let q = 1.0 - agree(t);
            let mut need = target + FILTER_SHARE * (1.0 - target);
            if let Some((words, pr)) = plan.prefix {
                assert_eq!(words, PREFIX_WORDS);
                assert!(f > 64 * PREFIX_WORDS);
                let miss = 1.0 - cdf_unchecked(u64::from(pr), 64 * words as u64, q);
                assert!(miss <= PREFIX_SHARE * (1.0 - target));
                need += PREFIX_SHARE * (1.0 - target);
            } else {
                assert!(f <= 64 * PREFIX_WORDS);
            }
            assert!(any_band(agree(t), plan.bands - 1, plan.width) < need);
            let r = plan.max_distance.unwrap() as u64;
            assert!(1.0 - cdf_unchecked(r, f as u64, q) <= FILTER_SHARE * (1.0 - target));
            // The recall reported is the banding's, with its filters.
            let b = plan.banding().unwrap();
            assert!((banding_recall(&b, t).unwrap() - plan.recall).abs() < 1e-12);
        }
        // Nothing fits: cosine 0.5 at recall 0.999 needs 7 one-bit bands, more than 4 bits
        // (1,000 rows: one-bit keys hold 500 rows each, within a tenth of the cap).
        assert!(
            BandingPlanner::new(0.5)
                .recall(0.999)
                .rows(1000)
                .bits(4)
                .plan()
                .is_err()
        );
        assert!(
            BandingPlanner::new(0.5)
                .recall(0.999)
                .rows(1000)
                .bits(7)
                .plan()
                .is_ok()
        );
    }

    #[test]
    fn band_keys_are_narrow_enough_for_the_rows() {
        let cap = crate::join::DEFAULT_MAX_GROUP as f64;
        for rows in [1_000u64, 100_000, 10_000_000, 1_000_000_000] {
            for f in [256usize, 1024, 4096] {
                // Keys of fewer bits than this hold more than a tenth of the cap on average.
                let narrowest = (rows as f64 / (MAX_MEAN_RUN_OF_CAP * cap))
                    .log2()
                    .ceil()
                    .max(1.0);
                match BandingPlanner::new(0.8).rows(rows).bits(f).plan() {
                    Ok(plan) => {
                        assert!(f64::from(plan.width) >= narrowest, "{rows} rows, {plan:?}");
                        let run = rows as f64 * 0.5f64.powi(plan.width as i32);
                        assert!(run <= MAX_MEAN_RUN_OF_CAP * cap, "{rows} rows, {plan:?}");
                    }
                    // No layout of keys that narrow reaches the target within `f` bits: at
                    // cosine 0.8, recall 0.99 needs b ≥ ln 0.01 / ln(1 − p^w) bands of w bits.
                    Err(e) => {
                        let p = agree(0.8);
                        let w = narrowest as i32;
                        let bands = (0.01f64.ln() / (-p.powi(w)).ln_1p()).ceil();
                        assert!(
                            bands * f64::from(w) > f as f64,
                            "{rows} rows, {f} bits: {e}"
                        );
                    }
                }
            }
        }
        // 10⁷ rows at 256 bits: the layout of 27 bands of 8 bits (keys of ~39,000 rows, every
        // one over the cap) is not offered; nothing at 256 bits is.
        assert!(
            BandingPlanner::new(0.8)
                .rows(10_000_000)
                .bits(256)
                .plan()
                .is_err()
        );
    }

    #[test]
    fn chooser_prefers_hamming_near_one_and_bands_far_from_it() {
        let near = JoinPlanner::new(0.98)
            .rows(1_000_000)
            .bits(64)
            .plan()
            .unwrap();
        assert_eq!(near.choice, JoinChoice::Hamming);
        let far = JoinPlanner::new(0.8)
            .rows(300_000)
            .bits(2048)
            .plan()
            .unwrap();
        assert_eq!(far.choice, JoinChoice::Banded);
        // The radius is the smallest reaching the target.
        let r = far.hamming.radius;
        let q = 0.8f64.acos() / PI;
        assert!(cdf_unchecked(r, 2048, q) >= 0.99 && cdf_unchecked(r - 1, 2048, q) < 0.99);
    }

    #[test]
    fn the_planned_width_grows_with_the_rows_and_is_the_cheapest() {
        let widths = [256usize, 512, 1024, 2048, 4096];
        let mut last = 0;
        for n in [10_000u64, 300_000, 3_000_000, 10_000_000, 30_000_000] {
            let planner = JoinPlanner::new(0.8)
                .rows(n)
                .widths(&widths)
                .sign_cost(SIGN_NS_PER_FEATURE_BIT * 40.0);
            let plan = planner.plan().unwrap();
            assert!(plan.bits >= last, "{n}: {} after {last}", plan.bits);
            last = plan.bits;
            // No single width is cheaper.
            for &f in &widths {
                let at = planner.clone().widths(&[f]).plan().unwrap();
                assert_eq!(at.bits, f);
                assert!(plan.cost_ns <= at.cost_ns, "{n}: {f} is cheaper");
            }
        }
        assert_eq!(
            JoinPlanner::new(0.8)
                .rows(10_000)
                .widths(&widths)
                .plan()
                .unwrap()
                .bits,
            256
        );
        assert!(last >= 2048);
    }

    #[test]
    fn invalid_settings_are_rejected() {
        assert!(BandingPlanner::new(1.5).plan().is_err());
        assert!(BandingPlanner::new(0.8).recall(1.0).plan().is_err());
        assert!(BandingPlanner::new(0.8).widths(&[]).plan().is_err());
        assert!(BandingPlanner::new(0.8).widths(&[0]).plan().is_err());
        assert!(BandingPlanner::new(0.8).sign_cost(f64::NAN).plan().is_err());
        assert!(JoinPlanner::new(0.8).bits(0).plan().is_err());
        assert!(JoinPlanner::new(0.8).widths(&[]).plan().is_err());
        assert!(JoinPlanner::new(0.8).sign_cost(-1.0).plan().is_err());
        assert!(band_recall(4, 0, 0.5).is_err());
        assert!(filtered_band_recall(16, 5, 4, 3, 0.5).is_err());
    }
}
