//! Permutation search against the linear scan, single thread (a 1-thread rayon pool).
//!
//! - W5 (`simlsh_workloads::w5()`: 1M 256-bit codes, 1,000 queries, k = 10, planted
//!   neighbours at distances 1..=64) for several `(q, B)`;
//! - wide signatures: 100k codes of 1024 and 4096 bits, 1,000 queries with 10 planted
//!   neighbours each at distances uniform in `1..=f/8`, exact truth from the linear scan.
//!
//! Before the timings, each configuration prints its recall@10 ([`recall_at_k`]), bytes per
//! code and build time (median of 3 single-thread builds). Criterion times the k-NN of a batch
//! of queries; throughput is in queries. The linear scan runs on the first 128 queries (two
//! full batches of its 64-query tiles).
//!
//! Run briefly with
//! `cargo bench --bench permutation -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::ThreadPool;
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::index::{HammingIndex, Hit, LinearScan, PermutationIndex, recall_at_k};
use simlsh::rng::Rng;
use simlsh::signature::{SignatureMatrix, words_for};
use simlsh_workloads::{W5, w5};

const K: usize = 10;
const LINEAR_QUERIES: usize = 128;

/// Builds `(q, B)` three times on one thread; returns the index and the median build time.
fn build(pool: &ThreadPool, data: &SignatureMatrix, q: usize, b: usize) -> (PermutationIndex, f64) {
    let mut times = Vec::new();
    let mut idx = None;
    for _ in 0..3 {
        let t = Instant::now();
        let built = pool.install(|| {
            PermutationIndex::builder()
                .permutations(q)
                .beam(b)
                .seed(1)
                .build(data)
                .expect("valid parameters")
        });
        times.push(t.elapsed().as_secs_f64());
        idx = Some(built);
    }
    times.sort_by(f64::total_cmp);
    (idx.expect("built three times"), times[1])
}

/// Times the configurations on one workload and prints their recall, memory and build time.
fn run(
    c: &mut Criterion,
    name: &str,
    data: &SignatureMatrix,
    queries: &[u64],
    truth: &[Vec<Hit>],
    configs: &[(usize, usize)],
) {
    let pool = pool();
    let w = data.words_per_row();
    let nq = queries.len() / w;
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    g.throughput(Throughput::Elements(nq as u64));
    for &(q, b) in configs {
        let (idx, build_s) = build(pool, data, q, b);
        let got = pool.install(|| idx.knn_batch(queries, K).expect("valid queries"));
        eprintln!(
            "{name} permutation q={q} B={b}: recall@{K} {:.4}, {:.1} bytes/code, build {:.3} s (1 thread, median of 3)",
            recall_at_k(&got, truth),
            idx.bytes() as f64 / data.len() as f64,
            build_s,
        );
        g.bench_function(
            BenchmarkId::new("permutation", format!("q{q}-B{b}")),
            |bch| {
                bch.iter(|| pool.install(|| idx.knn_batch(black_box(queries), K).expect("valid")))
            },
        );
    }
    let lin = LinearScan::build(data).expect("valid data");
    eprintln!(
        "{name} linear: {:.1} bytes/code",
        lin.bytes() as f64 / data.len() as f64
    );
    let lq = &queries[..LINEAR_QUERIES.min(nq) * w];
    g.throughput(Throughput::Elements((lq.len() / w) as u64));
    g.bench_function(BenchmarkId::new("linear", "exact"), |bch| {
        bch.iter(|| pool.install(|| lin.knn_batch(black_box(lq), K).expect("valid")))
    });
    g.finish();
}

fn w5_knn10(c: &mut Criterion) {
    let w = w5();
    let data = SignatureMatrix::from_parts(W5::BITS, w.index.clone()).expect("valid codes");
    let truth: Vec<Vec<Hit>> = (0..W5::QUERIES)
        .map(|j| {
            let (ids, dist) = w.truth(j);
            let mut t: Vec<Hit> = ids
                .iter()
                .zip(dist)
                .map(|(&id, &d)| Hit {
                    distance: u32::from(d),
                    id,
                })
                .collect();
            t.sort_unstable();
            t
        })
        .collect();
    let configs = [(8, 16), (16, 32), (32, 64), (32, 256), (64, 128), (64, 512)];
    run(c, "w5_knn10", &data, &w.queries, &truth, &configs);
}

/// `n` random `f`-bit codes holding, for each of `nq` random queries, 10 codes at distances
/// uniform in `1..=f/8` (positions shuffled in); returns the codes and the queries.
fn planted_wide(f: usize, n: usize, nq: usize, seed: u64) -> (SignatureMatrix, Vec<u64>) {
    let w = words_for(f);
    let mut rng = Rng::new(seed);
    let queries: Vec<u64> = (0..nq * w).map(|_| rng.next_u64()).collect();
    let mut rows: Vec<u64> = (0..(n - K * nq) * w).map(|_| rng.next_u64()).collect();
    let mut pos: Vec<usize> = (0..f).collect();
    for qc in queries.chunks_exact(w) {
        for _ in 0..K {
            let d = 1 + rng.below((f / 8) as u64) as usize;
            let mut c = qc.to_vec();
            for i in 0..d {
                let j = i + rng.below((f - i) as u64) as usize;
                pos.swap(i, j);
                c[pos[i] / 64] ^= 1 << (pos[i] % 64);
            }
            rows.extend(c);
        }
    }
    // Shuffle the rows so that planted codes are not at the end.
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        for x in 0..w {
            rows.swap(i * w + x, j * w + x);
        }
    }
    (
        SignatureMatrix::from_parts(f, rows).expect("valid codes"),
        queries,
    )
}

fn wide_knn10(c: &mut Criterion) {
    for f in [1024usize, 4096] {
        let (data, queries) = planted_wide(f, 100_000, 1_000, f as u64);
        let truth = LinearScan::build(&data)
            .expect("valid data")
            .knn_batch(&queries, K)
            .expect("valid queries");
        let configs = [(8, 16), (16, 32), (32, 64)];
        run(
            c,
            &format!("wide{f}_knn10"),
            &data,
            &queries,
            &truth,
            &configs,
        );
    }
}

criterion_group!(benches, w5_knn10, wide_knn10);
criterion_main!(benches);
