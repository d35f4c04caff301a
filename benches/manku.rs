//! Manku's permuted tables on the fixed workloads, single thread (a 1-thread rayon pool):
//!
//! * W3: 10,000 radius-3 queries over 1M 64-bit codes, with the 4-table index (48 bytes per
//!   code) and with 10 and 20 tables; the linear scan on the first 640 queries for context.
//!   Every result is checked against the W3 truth before timing (recall 1.0, nothing else).
//! * W4: the self-join of 1M 64-bit codes at radius 3 (90,112 pairs, checked).
//! * Builds of the tables over W3's codes.
//!
//! Throughput is in queries (W3) or codes (W4, builds) per second. Run briefly with
//! `cargo bench --bench manku -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::ThreadPool;
use simlsh::index::{HammingIndex, Hit, LinearScan, PermutedTables};
use simlsh::join::self_join;
use simlsh::workloads::{W3, w3, w4};
use simlsh::{SignatureMatrix, hamming};

fn one_thread() -> ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a 1-thread pool")
}

/// The expected answer of W3 query `j`: its planted codes (the published W3 has no other
/// code within the radius), sorted by (distance, id).
fn truth(w: &W3, j: usize) -> Vec<Hit> {
    let (ids, dists) = w.truth(j);
    let mut t: Vec<Hit> = ids
        .iter()
        .zip(dists)
        .map(|(&id, &d)| Hit {
            distance: u32::from(d),
            id,
        })
        .collect();
    t.sort_unstable();
    t
}

fn w3_queries(c: &mut Criterion) {
    let pool = one_thread();
    let w = w3();
    let sigs = SignatureMatrix::from_parts(64, w.index.clone()).unwrap();
    let nq = w.queries.len();
    let mut g = c.benchmark_group("w3_radius3");
    g.sample_size(10);
    g.throughput(Throughput::Elements(nq as u64));
    eprintln!("kernels: {}", hamming::kernel_name());
    for blocks in [4usize, 5, 6] {
        let idx = pool.install(|| {
            PermutedTables::builder()
                .radius(W3::RADIUS)
                .blocks(blocks)
                .build(&sigs)
                .unwrap()
        });
        let mut out = Vec::new();
        for j in 0..nq {
            idx.radius_into(&w.queries[j..j + 1], W3::RADIUS, &mut out)
                .unwrap();
            assert_eq!(
                out,
                truth(&w, j),
                "query {j}: recall and precision must be 1"
            );
        }
        let batch = pool.install(|| idx.radius_batch(&w.queries, W3::RADIUS).unwrap());
        assert!(batch.iter().enumerate().all(|(j, h)| *h == truth(&w, j)));
        eprintln!(
            "manku {} tables: {:.3} bytes per code, {} bytes",
            idx.num_tables(),
            idx.bytes() as f64 / sigs.len() as f64,
            idx.bytes()
        );
        let name = format!("manku_{}tables", idx.num_tables());
        g.bench_function(BenchmarkId::new(name.clone(), "radius_into"), |b| {
            b.iter(|| {
                let mut hits = 0usize;
                for q in w.queries.chunks_exact(1) {
                    idx.radius_into(black_box(q), W3::RADIUS, &mut out).unwrap();
                    hits += out.len();
                }
                hits
            })
        });
        g.bench_function(BenchmarkId::new(name, "radius_batch"), |b| {
            b.iter(|| pool.install(|| idx.radius_batch(black_box(&w.queries), W3::RADIUS).unwrap()))
        });
    }
    // The linear scan on 640 queries, for context (same throughput unit: queries).
    let lin = LinearScan::build(&sigs).unwrap();
    let few = &w.queries[..640];
    g.throughput(Throughput::Elements(few.len() as u64));
    g.bench_function(BenchmarkId::new("linear", "radius_batch_640q"), |b| {
        b.iter(|| pool.install(|| lin.radius_batch(black_box(few), W3::RADIUS).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("build_w3");
    g.sample_size(10);
    g.throughput(Throughput::Elements(sigs.len() as u64));
    for blocks in [4usize, 5] {
        g.bench_function(BenchmarkId::new("manku", format!("{blocks}blocks")), |b| {
            b.iter(|| {
                pool.install(|| {
                    PermutedTables::builder()
                        .radius(W3::RADIUS)
                        .blocks(blocks)
                        .build(black_box(&sigs))
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

fn w4_self_join(c: &mut Criterion) {
    let pool = one_thread();
    let w = w4();
    let sigs = SignatureMatrix::from_parts(64, w.codes.clone()).unwrap();
    let pairs = pool.install(|| self_join(&sigs, 3).unwrap());
    assert_eq!(pairs.len(), 90_112);
    assert!(
        pairs
            .iter()
            .zip(&w.truth_pairs)
            .all(|(p, &(i, j))| (p.i, p.j) == (i, j))
    );
    let mut g = c.benchmark_group("w4_self_join");
    g.sample_size(10);
    g.throughput(Throughput::Elements(sigs.len() as u64));
    g.bench_function("manku_r3", |b| {
        b.iter(|| pool.install(|| self_join(black_box(&sigs), 3).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, w3_queries, w4_self_join);
criterion_main!(benches);
