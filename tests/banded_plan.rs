//! The banding planner's predictions against measurement: on random signatures with planted
//! pairs at the threshold's angle, the measured recall of the planted pairs and the measured
//! number of candidates lie within 4 standard deviations of the binomial law the plan
//! predicts, for plain bands and for multi-probe bands.
//!
//! Hyperplane bits of two vectors at angle θ agree independently with probability
//! `1 − θ/π`, so the rows are drawn bit by bit: background rows uniform (θ = π/2), and
//! each planted pair a uniform row and a copy with each bit flipped with probability θ/π.
//! Background pairs collide on a band independently of each other (given one row, the other
//! rows' keys are independent and uniform), so the count of random candidates is a sum of
//! pairwise independent indicators: its variance is the binomial one.

use std::collections::BTreeSet;

use simlsh::SignatureMatrix;
use simlsh::estimate::{BandingPlanner, banding_recall, probed_background_candidates};
use simlsh::join::{Banding, banded_join};
use simlsh::rng::Rng;

const BITS: usize = 256;

/// `background` uniform rows then `planted` pairs at cosine `c` (rows `background + 2k` and
/// `background + 2k + 1`).
fn corpus(background: usize, planted: usize, c: f64, seed: u64) -> SignatureMatrix {
    let q = c.acos() / std::f64::consts::PI;
    let mut rng = Rng::new(seed);
    let w = BITS / 64;
    let mut data = Vec::with_capacity((background + 2 * planted) * w);
    for _ in 0..background * w {
        data.push(rng.next_u64());
    }
    for _ in 0..planted {
        let a: Vec<u64> = (0..w).map(|_| rng.next_u64()).collect();
        let b: Vec<u64> = a
            .iter()
            .map(|&x| {
                let mut flip = 0u64;
                for bit in 0..64 {
                    if rng.uniform() < q {
                        flip |= 1 << bit;
                    }
                }
                x ^ flip
            })
            .collect();
        data.extend_from_slice(&a);
        data.extend_from_slice(&b);
    }
    SignatureMatrix::from_parts(BITS, data).unwrap()
}

/// Asserts `measured` lies within 4 binomial standard deviations of `trials · p` (and a
/// half-count for the integer).
fn within_4_sigma(what: &str, measured: f64, trials: f64, p: f64) {
    let mean = trials * p;
    let sd = (trials * p * (1.0 - p)).sqrt();
    assert!(
        (measured - mean).abs() <= 4.0 * sd + 0.5,
        "{what}: measured {measured}, predicted {mean} ± {sd}"
    );
}

/// The predicted figures of a banding: recall at τ with its filter, the probability that a
/// pair at τ shares a band (within the probe distance), and the random candidates among `n`
/// rows (before the filter).
struct Predicted {
    recall: f64,
    band_recall: f64,
    candidates: f64,
}

/// Measures `banding` (and the same bands without the filter) on the corpus and checks the
/// predictions.
fn check(sigs: &SignatureMatrix, background: usize, planted: usize, b: &Banding, want: &Predicted) {
    let n = sigs.len();
    let what = format!(
        "{} bands of {} bits, probes {}",
        b.bands(),
        b.width(),
        b.probes()
    );
    // Recall: the planted pairs found by the banding (with its Hamming filter).
    let (pairs, _) = banded_join(sigs, b).unwrap();
    let found: BTreeSet<(u32, u32)> = pairs.iter().map(|p| (p.i, p.j)).collect();
    let is_planted = |k: usize| ((background + 2 * k) as u32, (background + 2 * k + 1) as u32);
    let hits = (0..planted)
        .filter(|&k| found.contains(&is_planted(k)))
        .count();
    within_4_sigma(
        &format!("recall, {what}"),
        hits as f64,
        planted as f64,
        want.recall,
    );
    // Candidates: the same bands without the filter, all pairs counted.
    let raw = Banding::builder()
        .bits(BITS)
        .bands(b.bands())
        .width(b.width())
        .probes(b.probes())
        .build()
        .unwrap();
    let (all, stats) = banded_join(sigs, &raw).unwrap();
    assert_eq!(stats.candidates, all.len() as u64);
    let all: BTreeSet<(u32, u32)> = all.iter().map(|p| (p.i, p.j)).collect();
    let planted_found = (0..planted)
        .filter(|&k| all.contains(&is_planted(k)))
        .count();
    let total = n as f64 * (n - 1) as f64 / 2.0;
    within_4_sigma(
        &format!("band recall, {what}"),
        planted_found as f64,
        planted as f64,
        want.band_recall,
    );
    within_4_sigma(
        &format!("random candidates, {what}"),
        (all.len() - planted_found) as f64,
        total - planted as f64,
        want.candidates / total,
    );
}

#[test]
fn planned_recall_and_candidates_match_measurement() {
    let (background, planted, c) = (6000usize, 1500usize, 0.8);
    let n = background + 2 * planted;
    let sigs = corpus(background, planted, c, 42);
    // The planner's own plans, plain and allowed to probe.
    for (target, probes) in [(0.9, 0u32), (0.9, 1), (0.99, 0), (0.99, 1)] {
        let plan = BandingPlanner::new(c)
            .recall(target)
            .rows(n as u64)
            .bits(BITS)
            .probes(probes)
            .plan()
            .unwrap();
        assert!(plan.probes <= probes && plan.recall >= target);
        let b = plan.banding().unwrap();
        assert_eq!(banding_recall(&b, c).unwrap(), plan.recall);
        let want = Predicted {
            recall: plan.recall,
            band_recall: plan.band_recall,
            candidates: plan.candidates,
        };
        check(&sigs, background, planted, &b, &want);
    }
    // Multi-probe layouts, with the planner's formulas: recall with and without a filter
    // radius, random candidates.
    for &(bands, width, radius) in &[(8usize, 16u32, 256u32), (12, 14, 70), (6, 20, 60)] {
        let b = Banding::builder()
            .bits(BITS)
            .bands(bands)
            .width(width)
            .max_distance(radius)
            .probes(1)
            .build()
            .unwrap();
        let unfiltered = Banding::builder()
            .bits(BITS)
            .bands(bands)
            .width(width)
            .probes(1)
            .build()
            .unwrap();
        let want = Predicted {
            recall: banding_recall(&b, c).unwrap(),
            band_recall: banding_recall(&unfiltered, c).unwrap(),
            candidates: probed_background_candidates(n as u64, bands, width, 1),
        };
        assert!(want.band_recall > 0.3 && want.candidates > 1000.0);
        check(&sigs, background, planted, &b, &want);
    }
}
