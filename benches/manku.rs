//! Manku's permuted tables on the fixed workloads, single thread (a 1-thread rayon pool that
//! runs on the benchmark's own thread):
//!
//! * W3: 10,000 radius-3 queries over 1M 64-bit codes, with the 4-table index (41 bytes per
//!   code) and the 10-table one, one query at a time (`radius_into`) and as one batch
//!   (`radius_batch`); the linear scan on the first 640 queries for context. Every result is
//!   checked against the W3 truth before timing (recall 1.0 and nothing else).
//! * W4: the self-join of 1M 64-bit codes at radius 3 (90,112 pairs, checked).
//! * Builds of the tables over W3's codes.
//!
//! Throughput is in queries (W3) or codes (W4, builds) per second. Every benchmark runs twice:
//! under wall-clock time (groups `w3_radius3`, `w4_self_join`, `build_w3`) and under the
//! thread's CPU time (the same names prefixed `cpu_`, Linux only), which is what to quote on a
//! machine shared with other jobs. Run briefly with
//! `cargo bench --bench manku -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::sync::OnceLock;

use criterion::measurement::Measurement;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::index::{HammingIndex, Hit, LinearScan, PermutedTables};
use simlsh::join::self_join;
use simlsh::{SignatureMatrix, hamming};
use simlsh_workloads::{W3, W4, w3, w4};

/// W3, its codes, and the checked 4- and 10-table indexes.
struct W3Setup {
    w: W3,
    sigs: SignatureMatrix,
    indexes: Vec<PermutedTables>,
    linear: LinearScan,
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

fn w3_setup() -> &'static W3Setup {
    static SETUP: OnceLock<W3Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let w = w3();
        let sigs = SignatureMatrix::from_parts(64, w.index.clone()).unwrap();
        eprintln!("kernels: {}", hamming::kernel_name());
        let indexes: Vec<PermutedTables> = [4usize, 5]
            .iter()
            .map(|&blocks| {
                let idx = pool().install(|| {
                    PermutedTables::builder()
                        .radius(W3::RADIUS)
                        .blocks(blocks)
                        .build(&sigs)
                        .unwrap()
                });
                let mut out = Vec::new();
                for j in 0..w.queries.len() {
                    idx.radius_into(&w.queries[j..j + 1], W3::RADIUS, &mut out)
                        .unwrap();
                    assert_eq!(
                        out,
                        truth(&w, j),
                        "query {j}: recall and precision must be 1"
                    );
                }
                let batch = pool().install(|| idx.radius_batch(&w.queries, W3::RADIUS).unwrap());
                assert!(batch.iter().enumerate().all(|(j, h)| *h == truth(&w, j)));
                eprintln!(
                    "manku {} tables (levels {:?}, key bits {:?}): {:.3} bytes per code, {} bytes",
                    idx.num_tables(),
                    idx.levels(),
                    idx.key_bits(),
                    idx.bytes() as f64 / sigs.len() as f64,
                    idx.bytes()
                );
                idx
            })
            .collect();
        let linear = LinearScan::build(&sigs).unwrap();
        W3Setup {
            w,
            sigs,
            indexes,
            linear,
        }
    })
}

fn w3_queries<M: Measurement>(c: &mut Criterion<M>, prefix: &str) {
    let s = w3_setup();
    let queries = &s.w.queries;
    let mut g = c.benchmark_group(format!("{prefix}w3_radius3"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(queries.len() as u64));
    for idx in &s.indexes {
        let name = format!("manku_{}tables", idx.num_tables());
        let mut out = Vec::new();
        g.bench_function(BenchmarkId::new(name.clone(), "radius_into"), |b| {
            b.iter(|| {
                let mut hits = 0usize;
                for q in queries.chunks_exact(1) {
                    idx.radius_into(black_box(q), W3::RADIUS, &mut out).unwrap();
                    hits += out.len();
                }
                hits
            })
        });
        g.bench_function(BenchmarkId::new(name, "radius_batch"), |b| {
            b.iter(|| pool().install(|| idx.radius_batch(black_box(queries), W3::RADIUS).unwrap()))
        });
    }
    // The linear scan on 640 queries, for context (same throughput unit: queries).
    let few = &queries[..640];
    g.throughput(Throughput::Elements(few.len() as u64));
    g.bench_function(BenchmarkId::new("linear", "radius_batch_640q"), |b| {
        b.iter(|| pool().install(|| s.linear.radius_batch(black_box(few), W3::RADIUS).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group(format!("{prefix}build_w3"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(s.sigs.len() as u64));
    for blocks in [4usize, 5] {
        g.bench_function(BenchmarkId::new("manku", format!("{blocks}blocks")), |b| {
            b.iter(|| {
                pool().install(|| {
                    PermutedTables::builder()
                        .radius(W3::RADIUS)
                        .blocks(blocks)
                        .build(black_box(&s.sigs))
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

fn w4_setup() -> &'static (W4, SignatureMatrix) {
    static SETUP: OnceLock<(W4, SignatureMatrix)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let w = w4();
        let sigs = SignatureMatrix::from_parts(64, w.codes.clone()).unwrap();
        let pairs = pool().install(|| self_join(&sigs, W4::RADIUS).unwrap());
        assert_eq!(pairs.len(), 90_112);
        assert!(
            pairs
                .iter()
                .zip(&w.truth_pairs)
                .all(|(p, &(i, j))| (p.i, p.j) == (i, j))
        );
        (w, sigs)
    })
}

fn w4_self_join<M: Measurement>(c: &mut Criterion<M>, prefix: &str) {
    let (_, sigs) = w4_setup();
    let mut g = c.benchmark_group(format!("{prefix}w4_self_join"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(sigs.len() as u64));
    g.bench_function("manku_r3", |b| {
        b.iter(|| pool().install(|| self_join(black_box(sigs), W4::RADIUS).unwrap()))
    });
    g.finish();
}

fn wall(c: &mut Criterion) {
    w3_queries(c, "");
    w4_self_join(c, "");
}

fn cpu(c: &mut Criterion<CpuTime>) {
    w3_queries(c, "cpu_");
    w4_self_join(c, "cpu_");
}

criterion_group!(wall_benches, wall);
criterion_group! {
    name = cpu_benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = cpu
}
criterion_main!(wall_benches, cpu_benches);
