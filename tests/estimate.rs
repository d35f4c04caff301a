//! Integration tests of `simlsh::estimate`: simulated coverage of the confidence intervals and
//! of the binomial acceptance intervals, with fixed seeds and tolerances from the binomial law.

use std::f64::consts::PI;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::estimate::{
    IntervalMethod, Planner, RadiusRule, binomial_interval, binomial_quantile, estimate,
    manku_table,
};

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
    let plan = Planner::new(t)
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
