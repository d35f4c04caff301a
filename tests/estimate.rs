//! Integration tests of `simlsh::estimate`: simulated coverage of the confidence intervals and
//! of the binomial acceptance intervals, with fixed seeds and tolerances from the binomial law.

use std::f64::consts::PI;

use ndarray::Array2;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::estimate::{
    BandingPlanner, IntervalMethod, JoinChoice, JoinPlanner, RadiusPlanner, RadiusRule,
    binomial_interval, binomial_quantile, estimate, manku_table,
};
use simlsh::join::{Banding, banded_join};
use simlsh::{HyperplaneSigner, SignatureMatrix, Signer};

/// A Hamming distance between two f-bit signatures whose bits differ independently with
/// probability p.
fn draw_hamming(rng: &mut Xoshiro256PlusPlus, f: u64, p: f64) -> u64 {
    (0..f).filter(|_| rng.random::<f64>() < p).count() as u64
}

/// The smallest number of successes out of `draws` that a procedure with success probability
/// at least `level` reaches except with probability 1e-6: Bin(draws, c) dominates
/// Bin(draws, level) whenever c is at least `level`.
fn min_covered(draws: u64, level: f64) -> u64 {
    binomial_quantile(1e-6, draws, level).unwrap()
}

#[test]
fn clopper_pearson_coverage_simulation() {
    const DRAWS: u64 = 4000;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x5eed_c0de);
    for &f in &[64u64, 256] {
        for &p in &[0.005, 0.03, 0.1, 0.25, 0.5] {
            for &level in &[0.9, 0.95] {
                let theta = PI * p;
                let mut covered = 0;
                for _ in 0..DRAWS {
                    let h = draw_hamming(&mut rng, f, p);
                    let e = estimate(h, f, level, IntervalMethod::ClopperPearson).unwrap();
                    let in_p = e.p_interval.contains(p);
                    // The angle and cosine intervals are monotone images of the p interval, so
                    // they cover exactly when it does (up to rounding at the ends).
                    assert_eq!(e.angle_interval.contains(theta), in_p);
                    covered += u64::from(in_p);
                }
                let need = min_covered(DRAWS, level);
                assert!(
                    covered >= need,
                    "f={f} p={p} level={level}: {covered}/{DRAWS} covered, need {need}"
                );
            }
        }
    }
}

#[test]
fn binomial_interval_coverage_simulation() {
    // The helper other modules use as a test tolerance: a count drawn from Bin(n, p) falls in
    // binomial_interval(n, p, level) with probability >= level.
    const DRAWS: u64 = 2000;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    for &(n, p) in &[(64u64, 0.5), (256, 1.0 / 6.0), (1000, 0.01)] {
        let level = 0.9;
        let (lo, hi) = binomial_interval(n, p, level).unwrap();
        let inside = (0..DRAWS)
            .filter(|_| (lo..=hi).contains(&draw_hamming(&mut rng, n, p)))
            .count() as u64;
        assert!(inside >= min_covered(DRAWS, level), "n={n} p={p}: {inside}");
    }
}

#[test]
fn radius_plan_recall_matches_simulation() {
    // Pairs exactly at the threshold are found with probability recall_at_threshold.
    const DRAWS: u64 = 20_000;
    let (t, f) = (0.9, 64u64);
    let plan = RadiusPlanner::new(t)
        .bits(f)
        .rule(RadiusRule::TargetRecall(0.9))
        .plan()
        .unwrap();
    let recall = plan.chosen().recall_at_threshold;
    let p = t.acos() / PI;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let found = (0..DRAWS)
        .filter(|_| draw_hamming(&mut rng, f, p) <= plan.radius)
        .count() as u64;
    let (lo, hi) = binomial_interval(DRAWS, recall, 1.0 - 1e-6).unwrap();
    assert!((lo..=hi).contains(&found), "{found} not in [{lo}, {hi}]");
}

#[test]
fn manku_sanity_table() {
    let want = [0.987, 0.853, 0.674, 0.411, 0.101, 0.013];
    for (row, w) in manku_table().iter().zip(want) {
        assert!((row.recall - w).abs() < 5e-4, "{row:?}");
    }
}

/// `pairs` pairs of unit vectors in `dim` dimensions at cosine `c` (up to f32 rounding), each
/// pair in a random orientation, as rows `2k` and `2k + 1`.
fn pairs_at(c: f64, pairs: usize, dim: usize, seed: u64) -> Array2<f32> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let gauss = |rng: &mut Xoshiro256PlusPlus| -> Vec<f64> {
        // Box-Muller: the test's own normals, independent of the crate's generators.
        (0..dim)
            .map(|_| {
                let (u, v): (f64, f64) = (rng.random(), rng.random());
                (-2.0 * (1.0 - u).ln()).sqrt() * (2.0 * PI * v).cos()
            })
            .collect()
    };
    let mut x = Array2::<f32>::zeros((2 * pairs, dim));
    for k in 0..pairs {
        let u = gauss(&mut rng);
        let un = u.iter().map(|a| a * a).sum::<f64>().sqrt();
        let u: Vec<f64> = u.iter().map(|a| a / un).collect();
        let r = gauss(&mut rng);
        let d: f64 = r.iter().zip(&u).map(|(a, b)| a * b).sum();
        let w: Vec<f64> = r.iter().zip(&u).map(|(a, b)| a - d * b).collect();
        let wn = w.iter().map(|a| a * a).sum::<f64>().sqrt();
        let s = (1.0 - c * c).sqrt();
        for j in 0..dim {
            x[[2 * k, j]] = u[j] as f32;
            x[[2 * k + 1, j]] = (c * u[j] + s * w[j] / wn) as f32;
        }
    }
    x
}

/// Whether each pair `(2k, 2k + 1)` is found by `banding`, by the banded join itself.
fn found_pairs(sigs: &SignatureMatrix, banding: &Banding) -> u64 {
    let (pairs, _) = banded_join(sigs, banding).unwrap();
    pairs
        .iter()
        .filter(|p| p.i % 2 == 0 && p.j == p.i + 1)
        .count() as u64
}

#[test]
fn banding_plan_recall_matches_simulation() {
    // Pairs exactly at the threshold, signed by Gaussian hyperplanes, become candidates with
    // the probability the plan predicts: the measured count lies in the two-sided binomial
    // interval of the predicted recall (a correct planner fails with probability 1e-6 per
    // case). The target is low so that misses are frequent enough to measure.
    const PAIRS: usize = 3000;
    for (case, &(t, f, filter)) in [(0.8, 1024usize, true), (0.9, 256, true), (0.8, 512, false)]
        .iter()
        .enumerate()
    {
        let plan = BandingPlanner::new(t)
            .recall(0.8)
            .rows(2 * PAIRS as u64)
            .bits(f)
            .filter(filter)
            .plan()
            .unwrap();
        assert!(plan.recall >= 0.8 && plan.recall < 0.95, "{plan:?}");
        let x = pairs_at(t, PAIRS, 32, 10 + case as u64);
        let signer = HyperplaneSigner::builder()
            .dim(32)
            .bits(f)
            .seed(100 + case as u64)
            .build()
            .unwrap();
        let sigs = signer.sign_dense(&x).unwrap();
        let found = found_pairs(&sigs, &plan.banding().unwrap());
        let (lo, hi) = binomial_interval(PAIRS as u64, plan.recall, 1.0 - 1e-6).unwrap();
        assert!(
            (lo..=hi).contains(&found),
            "τ={t} f={f}: {found} of {PAIRS} found, predicted {:.4} → [{lo}, {hi}]",
            plan.recall
        );
    }
}

#[test]
fn join_planner_radius_matches_the_radius_planner() {
    // The chooser's Hamming side is the radius planner's TargetRecall radius, and the choice
    // follows the costs.
    for &(t, f, n) in &[
        (0.95, 64usize, 100_000u64),
        (0.8, 256, 300_000),
        (0.9, 1024, 50_000),
    ] {
        let plan = JoinPlanner::new(t)
            .recall(0.99)
            .rows(n)
            .bits(f)
            .plan()
            .unwrap();
        let radius = RadiusPlanner::new(t)
            .bits(f as u64)
            .rule(RadiusRule::TargetRecall(0.99))
            .plan()
            .unwrap();
        assert_eq!(plan.hamming.radius, radius.radius);
        assert_eq!(plan.hamming.recall, radius.chosen().recall_at_threshold);
        match (plan.choice, &plan.banded) {
            (JoinChoice::Banded, Some(b)) => assert!(b.cost_ns < plan.hamming.cost_ns),
            (JoinChoice::Hamming, Some(b)) => assert!(b.cost_ns >= plan.hamming.cost_ns),
            (JoinChoice::Hamming, None) => {}
            (JoinChoice::Banded, None) => panic!("banded without a plan"),
        }
    }
}
