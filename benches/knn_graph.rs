//! The exact k-NN graph of 20,000 signatures, for the `k` of a plain k-NN (10) and of the
//! candidates of a re-ranked one (`knn --rerank 100`: 100), at 256, 384 and 512 bits: by
//! `join::knn_graph` (`hamming::self_knn`, each pair's distance computed once: `self`) and by
//! the batched scan of every row against every row (`join::knn_graph_with` a `LinearScan`:
//! `scan`), the ratio of the two measured in one run; `self_knn` by each vector kernel set
//! of the CPU (`self_f{bits}_avx2`, `self_f{bits}_avx512`); and the re-ranking of such a
//! graph by exact cosine (`verify::rerank_graph`) on 20,000 unit vectors of 384 dimensions.
//! One thread (a 1-thread rayon pool on the benchmark's own thread), timed by the thread's
//! CPU time.
//!
//! The codes sign clustered vectors (200 centres, each row a centre plus noise), so that
//! distances spread as on real embeddings and the threshold of a large `k` takes a while to
//! settle. Every graph is checked against brute force on a few rows before timing. Run with
//! `cargo bench --bench knn_graph -- --warm-up-time 1 --measurement-time 5`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "../tests/oracle/mod.rs"]
mod oracle;
#[path = "common/pool.rs"]
mod pool;
use ndarray::Array2;
use pool::pool;
use simlsh::LinearScan;
use simlsh::hamming::Kernels;
use simlsh::join::{knn_graph, knn_graph_with};
use simlsh::rng::Rng;
use simlsh::verify::{DenseVectors, rerank_graph};
use simlsh::{Hit, HyperplaneSigner, SignatureMatrix, Signer};

const N: usize = 20_000;
const DIM: usize = 384;
const DIM_U64: u64 = DIM as u64;

/// `N` clustered rows of `DIM` dimensions: one of 200 centres plus Gaussian noise.
fn vectors() -> Array2<f32> {
    let mut rng = Rng::new(17);
    let mut gauss = move || {
        let (u, v) = (rng.uniform().max(1e-300), rng.uniform());
        ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    };
    let centres = Array2::from_shape_fn((200, DIM), |_| gauss());
    let mut pick = Rng::new(18);
    let mut x = Array2::zeros((N, DIM));
    for mut row in x.rows_mut() {
        let c = centres.row(pick.below(200) as usize);
        for (o, &m) in row.iter_mut().zip(c) {
            *o = m + 0.8 * gauss();
        }
    }
    x
}

fn check(sigs: &SignatureMatrix, graph: &[Vec<Hit>], k: usize) {
    for i in (0..N).step_by(4999) {
        assert_eq!(graph[i], oracle::brute_knn(sigs, i, k), "row {i}");
    }
}

fn graphs(c: &mut Criterion<CpuTime>) {
    let x = vectors();
    let mut g = c.benchmark_group("knn_graph_20k");
    g.sample_size(10);
    g.throughput(Throughput::Elements((N * N) as u64));
    for bits in [256usize, 384, 512] {
        let signer = HyperplaneSigner::builder()
            .dim(DIM_U64)
            .bits(bits)
            .seed(1)
            .build()
            .unwrap();
        let sigs = signer.sign_dense(&x).unwrap();
        let scan = LinearScan::build(&sigs).unwrap();
        for k in [10usize, 100] {
            check(&sigs, &pool().install(|| knn_graph(&sigs, k)).unwrap(), k);
            check(
                &sigs,
                &pool().install(|| knn_graph_with(&scan, &sigs, k)).unwrap(),
                k,
            );
            g.bench_function(
                BenchmarkId::new(format!("self_f{bits}"), format!("k{k}")),
                |b| b.iter(|| pool().install(|| knn_graph(black_box(&sigs), k).unwrap())),
            );
            // `self_knn` by each vector kernel set the CPU has, side by side.
            let (codes, w) = (sigs.as_slice(), sigs.words_per_row());
            for kern in [Kernels::avx2(), Kernels::avx512()].into_iter().flatten() {
                g.bench_function(
                    BenchmarkId::new(format!("self_f{bits}_{}", kern.name()), format!("k{k}")),
                    |b| {
                        b.iter(|| pool().install(|| kern.self_knn(black_box(codes), w, k).unwrap()))
                    },
                );
            }
            g.bench_function(
                BenchmarkId::new(format!("scan_f{bits}"), format!("k{k}")),
                |b| {
                    b.iter(|| {
                        pool().install(|| knn_graph_with(&scan, black_box(&sigs), k).unwrap())
                    })
                },
            );
        }
    }
    g.finish();

    let mut g = c.benchmark_group("rerank_graph_20k");
    g.sample_size(10);
    let signer = HyperplaneSigner::builder()
        .dim(DIM_U64)
        .bits(256)
        .seed(1)
        .build()
        .unwrap();
    let sigs = signer.sign_dense(&x).unwrap();
    let graph = pool().install(|| knn_graph(&sigs, 100)).unwrap();
    let v = DenseVectors::new(x.view()).unwrap();
    g.throughput(Throughput::Elements((N * 100) as u64));
    g.bench_function(BenchmarkId::new("d384", "m100_k10"), |b| {
        b.iter(|| pool().install(|| rerank_graph(black_box(&graph), &v, 10).unwrap()))
    });
    g.finish();
}

criterion_group! {
    name = cpu_benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = graphs
}
criterion_main!(cpu_benches);
