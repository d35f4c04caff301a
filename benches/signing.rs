//! Signing throughput on the fixed workloads of `../shared/peers/README.md`, single thread:
//! W1 (100,000 sparse rows, D = 2^20, ~197 nonzeros each; throughput in nonzeros) and W2
//! (100,000 dense rows, d = 384; throughput in rows).
//!
//! `w1-cpu/…` times the per-nonzero kernels of the hashed signers (hashing trick, hashed
//! Gaussian) on W1 by the CPU time of the one thread that signs, which other jobs on a shared
//! machine do not inflate the way they inflate wall-clock time.
//!
//! `cargo bench --bench signing` (filter with e.g. `-- w1/hashing`). Set `SIMLSH_BENCH_ROWS`
//! to a smaller row count for a quick run.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::signers::{Distribution, HashedGaussian, HashingTrick, HyperplaneSigner, PooledSigner};
use simlsh::{Signer, SignerExt};
use simlsh_workloads::{W1, W2_DIM, w1, w2};
use std::hint::black_box;
use std::time::Duration;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::{CpuTime, thread_cpu_ns};

fn rows() -> usize {
    std::env::var("SIMLSH_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

fn bench_w1(c: &mut Criterion) {
    let w = w1(rows());
    let csr = w.to_csr().unwrap();
    let mut g = c.benchmark_group("w1");
    g.sample_size(10)
        .throughput(Throughput::Elements(w.nnz() as u64));
    for f in [64, 256] {
        let ht = HashingTrick::builder().bits(f).build().unwrap();
        g.bench_function(format!("hashing-trick/f{f}"), |b| {
            b.iter(|| pool().install(|| black_box(ht.sign_csr(csr.view()).unwrap())))
        });
        let hg = HashedGaussian::builder().bits(f).build().unwrap();
        g.bench_function(format!("hashed-gaussian/f{f}"), |b| {
            b.iter(|| pool().install(|| black_box(hg.sign_csr(csr.view()).unwrap())))
        });
        let pooled = PooledSigner::builder().bits(f).build().unwrap();
        g.bench_function(format!("pooled/f{f}"), |b| {
            b.iter(|| pool().install(|| black_box(pooled.sign_csr(csr.view()).unwrap())))
        });
        let rad = HyperplaneSigner::builder()
            .dim(W1::DIM as u64)
            .bits(f)
            .distribution(Distribution::Rademacher)
            .build()
            .unwrap();
        g.bench_function(format!("rademacher/f{f}"), |b| {
            b.iter(|| pool().install(|| black_box(rad.sign_csr(csr.view()).unwrap())))
        });
    }
    let gauss = HyperplaneSigner::builder()
        .dim(W1::DIM as u64)
        .bits(64)
        .build()
        .unwrap();
    g.bench_function("gaussian/f64", |b| {
        b.iter(|| pool().install(|| black_box(gauss.sign_csr(csr.view()).unwrap())))
    });
    g.finish();
}

fn bench_w2(c: &mut Criterion) {
    let x = w2(rows());
    let mut g = c.benchmark_group("w2");
    g.sample_size(10)
        .throughput(Throughput::Elements(x.nrows() as u64));
    for f in [64, 256] {
        for (name, d) in [
            ("gaussian", Distribution::Gaussian),
            ("super-bit", Distribution::SuperBit { depth: None }),
            ("rademacher", Distribution::Rademacher),
        ] {
            let s = HyperplaneSigner::builder()
                .dim(W2_DIM as u64)
                .bits(f)
                .distribution(d)
                .build()
                .unwrap();
            g.bench_function(format!("{name}/f{f}"), |b| {
                b.iter(|| pool().install(|| black_box(s.sign_dense(&x).unwrap())))
            });
        }
    }
    g.finish();
}

/// The hashed signers on W1 by thread CPU time: each iteration signs every row on a
/// one-thread pool and counts the CPU time of that pool's thread.
fn bench_w1_cpu(c: &mut Criterion<CpuTime>) {
    let w = w1(rows());
    let csr = w.to_csr().unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut g = c.benchmark_group("w1-cpu");
    g.sample_size(10)
        .throughput(Throughput::Elements(w.nnz() as u64));
    for f in [64, 256] {
        let ht = HashingTrick::builder().bits(f).build().unwrap();
        let hg = HashedGaussian::builder().bits(f).build().unwrap();
        let signers: [(&str, &dyn Signer); 2] = [("hashing-trick", &ht), ("hashed-gaussian", &hg)];
        for (name, s) in signers {
            g.bench_function(format!("{name}/f{f}"), |b| {
                b.iter_custom(|iters| {
                    pool.install(|| {
                        let t = thread_cpu_ns();
                        for _ in 0..iters {
                            black_box(s.sign_csr(csr.view()).unwrap());
                        }
                        thread_cpu_ns() - t
                    })
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_w1, bench_w2);
criterion_group! {
    name = cpu_benches;
    config = Criterion::default()
        .with_measurement(CpuTime)
        .warm_up_time(Duration::from_secs(1));
    targets = bench_w1_cpu
}
criterion_main!(benches, cpu_benches);
