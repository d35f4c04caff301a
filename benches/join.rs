//! Cosine-threshold joins on planted sparse data (300k documents of 60 weighted features,
//! 2% of them near-copies of another at cosine 0.8 … 1), threshold τ = 0.8, recall target 0.95
//! at τ, single thread (a 1-thread rayon pool on the benchmark's own thread), timed by the
//! thread's CPU time (Linux), which is what to quote on a machine shared with other jobs:
//!
//! * `join_300k`: the banded join as planned for 256 and 1024 bits (candidates only), the
//!   same with multi-probe bands (`probes/…`: keys one bit apart probed too, planned with
//!   `probes(1)`, so longer bands at the same recall: at 256 bits, where the planner takes
//!   them), and the verified join (banded candidates, exact sparse cosine) at 1024 bits and
//!   at 256 bits, plain and probed;
//! * `join_50k`: the exact Hamming join at the radius reaching the target at 256 bits (it
//!   compares all pairs there) against the banded join on the same rows.
//!
//! Every join's answer is checked before timing: the verified join finds the planted pairs it
//! is expected to (all copies at cosine ≥ 0.85, at least 95% of those at 0.8). Run with
//! `cargo bench --bench join -- --warm-up-time 1 --measurement-time 5`.

use std::hint::black_box;
use std::sync::OnceLock;

use criterion::measurement::Measurement;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::estimate::{BandingPlanner, JoinPlanner, banding_recall, binomial_quantile};
use simlsh::join::{Banding, Scheme, banded_join_each, self_join_each};
use simlsh::rng::Rng;
use simlsh::verify::{SparseVectors, Vectors, VerifiedJoin};
use simlsh::{HashingTrick, SignatureMatrix, Signer};

const THRESHOLD: f64 = 0.8;
const RECALL: f64 = 0.95;

/// Cosines of the planted copies.
const PLANTED: [f64; 5] = [0.8, 0.85, 0.9, 0.95, 1.0];

/// A document's `(key, weight)` pairs.
type Row = Vec<(u64, f32)>;

/// Planted documents: `(key, weight)` rows and the planted pairs `(original, copy, cosine)`.
/// Originals draw 60 keys below 2^40; a copy is `c·u + √(1 − c²)·v` with `v` a fresh unit
/// document on keys at or above 2^40, disjoint from every original, so `cos(u, copy) = c`.
fn planted(n: usize, seed: u64) -> (Vec<Row>, Vec<(u32, u32, f64)>) {
    let mut rng = Rng::new(seed);
    let doc = |rng: &mut Rng, base: u64| -> Vec<(u64, f64)> {
        let mut d: Vec<(u64, f64)> = (0..60)
            .map(|_| (base + (rng.next_u64() >> 24), 0.5 + rng.uniform()))
            .collect();
        d.sort_unstable_by_key(|e| e.0);
        d.dedup_by_key(|e| e.0);
        let norm = d.iter().map(|e| e.1 * e.1).sum::<f64>().sqrt();
        d.iter_mut().for_each(|e| e.1 /= norm);
        d
    };
    let mut rows: Vec<Row> = Vec::with_capacity(n);
    let mut pairs = Vec::new();
    for i in 0..n {
        if i > 0 && rng.below(50) == 0 {
            let orig = rng.below(i as u64) as usize;
            let c = PLANTED[rng.below(PLANTED.len() as u64) as usize];
            let s = (1.0 - c * c).sqrt();
            let mut row: Vec<(u64, f32)> = rows[orig]
                .iter()
                .map(|&(k, w)| (k, (f64::from(w) * c) as f32))
                .collect();
            if s > 0.0 {
                row.extend(
                    doc(&mut rng, 1 << 40)
                        .into_iter()
                        .map(|(k, w)| (k, (w * s) as f32)),
                );
            }
            row.sort_unstable_by_key(|e| e.0);
            pairs.push((orig as u32, i as u32, c));
            rows.push(row);
        } else {
            rows.push(
                doc(&mut rng, 0)
                    .into_iter()
                    .map(|(k, w)| (k, w as f32))
                    .collect(),
            );
        }
    }
    (rows, pairs)
}

/// Signs the rows with the hashing trick (seed 1), in parallel.
fn sign(rows: &[Row], bits: usize) -> SignatureMatrix {
    let signer = HashingTrick::builder().bits(bits).seed(1).build().unwrap();
    let sigs: Vec<_> = rows
        .par_iter()
        .map(|r| {
            let (ids, w): (Vec<u64>, Vec<f32>) = r.iter().copied().unzip();
            signer.sign_sparse(&ids, &w).unwrap()
        })
        .collect();
    SignatureMatrix::from_signatures(bits, &sigs).unwrap()
}

struct Setup {
    vectors: SparseVectors,
    planted: Vec<(u32, u32, f64)>,
    sigs256: SignatureMatrix,
    sigs1024: SignatureMatrix,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let (rows, planted) = planted(300_000, 42);
        let sigs256 = sign(&rows, 256);
        let sigs1024 = sign(&rows, 1024);
        let vectors = SparseVectors::from_rows(rows).unwrap();
        Setup {
            vectors,
            planted,
            sigs256,
            sigs1024,
        }
    })
}

fn banding(bits: usize, n: usize) -> Banding {
    planned(bits, n, 0)
}

/// The banding planned for `n` rows of `bits` bits with multi-probe distance at most
/// `probes`; with `probes > 0` the plan must use it (else the bench would time plain bands).
fn planned(bits: usize, n: usize, probes: u32) -> Banding {
    let plan = BandingPlanner::new(THRESHOLD)
        .recall(RECALL)
        .rows(n as u64)
        .bits(bits)
        .probes(probes)
        .plan()
        .unwrap();
    eprintln!(
        "{n} rows, {bits} bits, probes {}: {} bands of {} bits, filter {:?}, recall at τ {:.4}, {:.3e} random candidates",
        plan.probes, plan.bands, plan.width, plan.max_distance, plan.recall, plan.candidates
    );
    assert_eq!(
        plan.probes, probes,
        "the plan at {bits} bits does not probe"
    );
    plan.banding().unwrap()
}

/// Checks the verified join's answer against the planted pairs: every pair found is at
/// cosine ≥ τ, and at each planted cosine the share found is within the binomial bound of the
/// banding's recall there (plain or probed, with its filters), failing with probability
/// below 1e-6 per level.
fn check_verified(s: &Setup, join: &VerifiedJoin, sigs: &SignatureMatrix) {
    let Scheme::Bands(b) = join.candidates() else {
        unreachable!("a banded join")
    };
    let (pairs, report) = pool().install(|| join.pairs(sigs, &s.vectors).unwrap());
    assert!(pairs.iter().all(|p| p.cosine >= THRESHOLD));
    let found: std::collections::HashSet<(u32, u32)> = pairs.iter().map(|p| (p.i, p.j)).collect();
    for c in PLANTED {
        // The true pairs planted at `c` (about half of those at exactly τ round below it).
        let level: Vec<_> = s
            .planted
            .iter()
            .filter(|p| p.2 == c && s.vectors.cosine(p.0 as usize, p.1 as usize) >= THRESHOLD)
            .collect();
        let hit = level.iter().filter(|p| found.contains(&(p.0, p.1))).count();
        let recall = banding_recall(b, c).unwrap();
        let need = binomial_quantile(1e-6, level.len() as u64, recall).unwrap();
        assert!(
            hit as u64 >= need,
            "cosine {c}: {hit} of {} found, planned recall {recall}",
            level.len()
        );
        eprintln!(
            "cosine {c}: {hit} of {} planted pairs found (planned recall {recall:.4})",
            level.len()
        );
    }
    eprintln!(
        "verified: {} candidates, {} pairs",
        report.candidates, report.pairs
    );
}

fn joins<M: Measurement>(c: &mut Criterion<M>, prefix: &str) {
    let s = setup();
    let n = s.vectors.len();
    let mut g = c.benchmark_group(format!("{prefix}join_300k"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(n as u64));
    for (bits, sigs) in [(256, &s.sigs256), (1024, &s.sigs1024)] {
        let b = banding(bits, n);
        g.bench_function(BenchmarkId::new("banded", format!("f{bits}")), |bench| {
            bench.iter(|| {
                pool().install(|| {
                    let mut count = 0u64;
                    banded_join_each(black_box(sigs), &b, |_| count += 1).unwrap();
                    count
                })
            })
        });
    }
    // At 1024 bits the planner keeps plain bands (probing is not cheaper there).
    {
        let (bits, sigs) = (256, &s.sigs256);
        let b = planned(bits, n, 1);
        g.bench_function(BenchmarkId::new("probes", format!("f{bits}")), |bench| {
            bench.iter(|| {
                pool().install(|| {
                    let mut count = 0u64;
                    banded_join_each(black_box(sigs), &b, |_| count += 1).unwrap();
                    count
                })
            })
        });
    }
    for (name, bits, sigs, probes) in [
        ("verified_banded", 1024, &s.sigs1024, 0),
        ("verified_banded", 256, &s.sigs256, 0),
        ("verified_probes", 256, &s.sigs256, 1),
    ] {
        let join = VerifiedJoin::builder()
            .threshold(THRESHOLD)
            .candidates(Scheme::Bands(planned(bits, n, probes)))
            .build()
            .unwrap();
        check_verified(s, &join, sigs);
        g.bench_function(BenchmarkId::new(name, format!("f{bits}")), |bench| {
            bench.iter(|| {
                pool().install(|| {
                    let mut count = 0u64;
                    join.run(black_box(sigs), &s.vectors, |_| count += 1)
                        .unwrap();
                    count
                })
            })
        });
    }
    g.finish();

    // The exact Hamming join where it compares all pairs, on the first 50k rows.
    let small = 50_000;
    let sigs = s.sigs256.slice_rows(0..small);
    let plan = JoinPlanner::new(THRESHOLD)
        .recall(RECALL)
        .rows(small as u64)
        .bits(256)
        .plan()
        .unwrap();
    let r = plan.hamming.radius as u32;
    eprintln!(
        "{small} rows, 256 bits: Hamming radius {r} ({:.3e} pair checks); chosen {:?}",
        plan.hamming.pair_checks, plan.choice
    );
    let b = banding(256, small);
    let mut g = c.benchmark_group(format!("{prefix}join_50k"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(small as u64));
    g.bench_function(BenchmarkId::new("hamming", format!("f256_r{r}")), |bench| {
        bench.iter(|| pool().install(|| self_join_each(black_box(&sigs), r, |_| {}).unwrap()))
    });
    g.bench_function(BenchmarkId::new("banded", "f256"), |bench| {
        bench.iter(|| {
            pool().install(|| {
                let mut count = 0u64;
                banded_join_each(black_box(&sigs), &b, |_| count += 1).unwrap();
                count
            })
        })
    });
    g.finish();
}

fn cpu(c: &mut Criterion<CpuTime>) {
    joins(c, "cpu_");
}

criterion_group! {
    name = cpu_benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = cpu
}
criterion_main!(cpu_benches);
