//! Multi-index hashing against the linear scan on the fixed workloads, single thread:
//!
//! * W5: 10 nearest neighbours of 1,000 queries among 1,000,000 256-bit codes. `mih` is the
//!   default index (probing, or a batched scan for the queries the cost model sends there),
//!   `mih-probe` always probes (no scan fallback; first 200 queries), `linear` is
//!   `LinearScan::knn_batch`.
//! * W3: radius 3 around 10,000 queries among 1,000,000 64-bit codes (`linear` on the first
//!   500 queries).
//! * Build time of the index on both.
//!
//! Throughput is in queries per second. Recall against the planted truth and bytes per code
//! are printed once before the measurements.
//!
//! `cargo bench --bench mih` (filter with e.g. `-- w5`).

use std::hint::black_box;
use std::time::Instant;

use criterion::measurement::Measurement;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::index::{HammingIndex, Hit, LinearScan, MultiIndex};
use simlsh::signature::SignatureMatrix;
use simlsh_workloads::{W3, W5, w3, w5};

/// Fraction of the planted neighbours found in the top 10.
fn recall_w5(w: &W5, res: &[Vec<Hit>]) -> f64 {
    let mut found = 0usize;
    for (j, hits) in res.iter().enumerate() {
        let (ids, _) = w.truth(j);
        found += hits.iter().filter(|h| ids.contains(&h.id)).count();
    }
    found as f64 / (res.len() * W5::K) as f64
}

/// Fraction of the planted codes found, and whether nothing else was returned.
fn recall_w3(w: &W3, res: &[Vec<Hit>]) -> (f64, bool) {
    let (mut found, mut total, mut exact) = (0usize, 0usize, true);
    for (j, hits) in res.iter().enumerate() {
        let (ids, _) = w.truth(j);
        total += ids.len();
        found += hits.iter().filter(|h| ids.contains(&h.id)).count();
        exact &= hits.len() == ids.len();
    }
    (found as f64 / total as f64, exact)
}

fn bench_w5(c: &mut Criterion) {
    let pool = pool();
    let w = w5();
    let sigs = SignatureMatrix::from_parts(W5::BITS, w.index.clone()).unwrap();
    let t = Instant::now();
    let mih = pool.install(|| MultiIndex::build(&sigs).unwrap());
    eprintln!(
        "w5: MultiIndex built in {:.3} s (1 thread), m = {}, widths {:?}",
        t.elapsed().as_secs_f64(),
        mih.substrings(),
        mih.substring_widths()
    );
    let probe = MultiIndex::builder().fallback(false).build(&sigs).unwrap();
    let linear = LinearScan::build(&sigs).unwrap();
    let n = W5::N as f64;
    for (name, idx) in [
        ("mih", &mih as &dyn HammingIndex),
        ("mih-probe", &probe),
        ("linear", &linear),
    ] {
        let res = pool.install(|| idx.knn_batch(&w.queries, W5::K).unwrap());
        let recall = recall_w5(&w, &res);
        eprintln!(
            "w5 {name}: recall@10 {recall}, {:.1} bytes per code",
            idx.bytes() as f64 / n
        );
        assert_eq!(recall, 1.0, "{name}: recall@10");
    }
    let mut g = c.benchmark_group("w5_knn10");
    g.sample_size(10);
    g.throughput(Throughput::Elements(W5::QUERIES as u64));
    g.bench_function("mih", |b| {
        b.iter(|| pool.install(|| black_box(mih.knn_batch(&w.queries, W5::K).unwrap())))
    });
    g.bench_function("linear", |b| {
        b.iter(|| pool.install(|| black_box(linear.knn_batch(&w.queries, W5::K).unwrap())))
    });
    let few = 200;
    g.throughput(Throughput::Elements(few as u64));
    g.bench_function("mih-probe", |b| {
        let qs = &w.queries[..few * W5::WORDS];
        b.iter(|| pool.install(|| black_box(probe.knn_batch(qs, W5::K).unwrap())))
    });
    g.finish();
}

fn bench_w3<M: Measurement>(c: &mut Criterion<M>, prefix: &str) {
    let pool = pool();
    let w = w3();
    let sigs = SignatureMatrix::from_parts(64, w.index.clone()).unwrap();
    let mih = pool.install(|| MultiIndex::build(&sigs).unwrap());
    let linear = LinearScan::build(&sigs).unwrap();
    eprintln!(
        "w3: m = {}, widths {:?}, probe radii for r = 3: {:?}",
        mih.substrings(),
        mih.substring_widths(),
        mih.probe_radii(W3::RADIUS)
    );
    let res = pool.install(|| mih.radius_batch(&w.queries, W3::RADIUS).unwrap());
    let (recall, exact) = recall_w3(&w, &res);
    eprintln!(
        "w3 mih: recall {recall}, exact {exact}, {:.1} bytes per code (linear {:.1})",
        mih.bytes() as f64 / W3::N as f64,
        linear.bytes() as f64 / W3::N as f64
    );
    assert!(
        recall == 1.0 && exact,
        "w3: MIH must return exactly the planted codes"
    );
    let mut g = c.benchmark_group(format!("{prefix}w3_radius3"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(W3::QUERIES as u64));
    g.bench_function("mih", |b| {
        b.iter(|| pool.install(|| black_box(mih.radius_batch(&w.queries, W3::RADIUS).unwrap())))
    });
    let few = 500;
    g.throughput(Throughput::Elements(few as u64));
    g.bench_function("linear", |b| {
        let qs = &w.queries[..few];
        b.iter(|| pool.install(|| black_box(linear.radius_batch(qs, W3::RADIUS).unwrap())))
    });
    g.finish();
}

fn bench_build(c: &mut Criterion) {
    let pool = pool();
    let mut g = c.benchmark_group("mih_build");
    g.sample_size(10);
    let w = w3();
    let sigs = SignatureMatrix::from_parts(64, w.index.clone()).unwrap();
    g.throughput(Throughput::Elements(W3::N as u64));
    g.bench_function("w3", |b| {
        b.iter(|| pool.install(|| black_box(MultiIndex::build(&sigs).unwrap())))
    });
    let w = w5();
    let sigs = SignatureMatrix::from_parts(W5::BITS, w.index.clone()).unwrap();
    g.bench_function("w5", |b| {
        b.iter(|| pool.install(|| black_box(MultiIndex::build(&sigs).unwrap())))
    });
    g.finish();
}

fn bench_w3_wall(c: &mut Criterion) {
    bench_w3(c, "");
}

/// W3 again under the thread's CPU time (groups prefixed `cpu_`, Linux only), the figure to
/// quote on a machine shared with other jobs.
fn bench_w3_cpu(c: &mut Criterion<CpuTime>) {
    bench_w3(c, "cpu_");
}

criterion_group!(benches, bench_w5, bench_w3_wall, bench_build);
criterion_group! {
    name = cpu_benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = bench_w3_cpu
}
criterion_main!(benches, cpu_benches);
