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
use simlsh::estimate::BandingPlanner;
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

#[test]
fn planned_recall_and_candidates_match_measurement() {
    let (background, planted, c) = (6000usize, 1500usize, 0.8);
    let n = background + 2 * planted;
    let sigs = corpus(background, planted, c, 42);
    let mut probed_seen = false;
    for (target, probes) in [(0.9, 0u32), (0.9, 1), (0.99, 0), (0.99, 1)] {
        let plan = BandingPlanner::new(c)
            .recall(target)
            .rows(n as u64)
            .bits(BITS)
            .probes(probes)
            .plan()
            .unwrap();
        assert!(plan.probes <= probes);
        probed_seen |= plan.probes == 1;
        // Recall: the planted pairs found by the plan's banding (with its Hamming filter).
        let (pairs, _) = banded_join(&sigs, &plan.banding().unwrap()).unwrap();
        let found: BTreeSet<(u32, u32)> = pairs.iter().map(|p| (p.i, p.j)).collect();
        let hits = (0..planted)
            .filter(|&k| {
                let a = (background + 2 * k) as u32;
                found.contains(&(a, a + 1))
            })
            .count();
        let what = format!("recall of {target} with probes {}", plan.probes);
        within_4_sigma(&what, hits as f64, planted as f64, plan.recall);
        // Candidates: the same bands without the filter, all pairs counted.
        let raw = Banding::builder()
            .bits(BITS)
            .bands(plan.bands)
            .width(plan.width)
            .probes(plan.probes)
            .build()
            .unwrap();
        let (all, stats) = banded_join(&sigs, &raw).unwrap();
        assert_eq!(stats.candidates, all.len() as u64);
        let total = n as f64 * (n - 1) as f64 / 2.0;
        let random = total - planted as f64;
        let p_random = plan.candidates / total;
        let planted_found = (0..planted)
            .filter(|&k| {
                let a = (background + 2 * k) as u32;
                all.binary_search_by_key(&(a, a + 1), |p| (p.i, p.j))
                    .is_ok()
            })
            .count();
        let what = format!("random candidates of {target} with probes {}", plan.probes);
        within_4_sigma(&what, (all.len() - planted_found) as f64, random, p_random);
        within_4_sigma(
            &format!("band recall of {target} with probes {}", plan.probes),
            planted_found as f64,
            planted as f64,
            plan.band_recall,
        );
    }
    assert!(probed_seen, "no plan chose multi-probe bands");
}
