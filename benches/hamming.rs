//! Hamming kernels side by side (scalar / popcnt / avx2 / avx512, as available on the CPU).
//!
//! Throughput is in code comparisons (query-code pairs) per second: for a batch of `q` queries
//! over `n` codes that is `n * q` elements, so codes scanned per second is the reported rate
//! divided by `q`.
//!
//! Run briefly with `cargo bench --bench hamming -- --warm-up-time 1 --measurement-time 3`.
//! Criterion measures wall time: on a shared machine compare kernels within one run (ratios),
//! or measure process CPU time instead.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::hamming::Kernels;

fn random_words(seed: u64, len: usize) -> Vec<u64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..len).map(|_| rng.random::<u64>()).collect()
}

/// 64-bit codes, radius 3: 1M codes (8 MiB, cache) and 16M codes (128 MiB, DRAM), one query
/// per pass and batches of 8 and 64 queries sharing one pass.
fn scan64_radius3(c: &mut Criterion) {
    let mut g = c.benchmark_group("scan64_radius3");
    g.sample_size(10);
    for n in [1usize << 20, 16 << 20] {
        let codes = random_words(1, n);
        let queries = random_words(2, 64);
        for nq in [1usize, 8, 64] {
            g.throughput(Throughput::Elements((n * nq) as u64));
            for kern in Kernels::available() {
                let id = BenchmarkId::new(kern.name(), format!("{}M/{nq}q", n >> 20));
                g.bench_with_input(id, &nq, |b, &nq| {
                    b.iter(|| {
                        let mut hits = 0u64;
                        kern.scan_radius(&queries[..nq], black_box(&codes), 1, 3, |_, _, d| {
                            hits += u64::from(d) + 1;
                        })
                        .unwrap();
                        hits
                    })
                });
            }
        }
    }
    g.finish();
}

/// 256-bit codes, 10 nearest neighbours of 64 and 1000 queries among 1M codes (32 MiB).
fn knn256_k10(c: &mut Criterion) {
    let mut g = c.benchmark_group("knn256_k10");
    g.sample_size(10);
    let n = 1usize << 20;
    let codes = random_words(3, 4 * n);
    let queries = random_words(4, 4 * 1000);
    for nq in [64usize, 1000] {
        g.throughput(Throughput::Elements((n * nq) as u64));
        for kern in Kernels::available() {
            if nq > 64 && kern.name() == "scalar" {
                continue;
            }
            let id = BenchmarkId::new(kern.name(), format!("1M/{nq}q"));
            g.bench_with_input(id, &nq, |b, &nq| {
                b.iter(|| {
                    kern.scan_knn(&queries[..4 * nq], black_box(&codes), 4, 10)
                        .unwrap()
                })
            });
        }
    }
    g.finish();
}

/// One query against 1M codes into a distance buffer, 64- and 256-bit codes.
fn distances_1m(c: &mut Criterion) {
    let mut g = c.benchmark_group("distances");
    g.sample_size(20);
    let n = 1usize << 20;
    for words in [1usize, 4] {
        let codes = random_words(5, words * n);
        let query = random_words(6, words);
        let mut out = vec![0u32; n];
        g.throughput(Throughput::Elements(n as u64));
        for kern in Kernels::available() {
            let id = BenchmarkId::new(kern.name(), format!("{}bit/1M", 64 * words));
            g.bench_function(id, |b| {
                b.iter(|| {
                    kern.distances(&query, black_box(&codes), words, &mut out)
                        .unwrap();
                    out[n / 2]
                })
            });
        }
    }
    g.finish();
}

/// Popcount of a 4 KiB and a 256 B slice (throughput in bytes).
fn popcount(c: &mut Criterion) {
    let mut g = c.benchmark_group("popcount");
    for len in [32usize, 512] {
        let v = random_words(7, len);
        g.throughput(Throughput::Bytes(8 * len as u64));
        for kern in Kernels::available() {
            let id = BenchmarkId::new(kern.name(), format!("{}B", 8 * len));
            g.bench_function(id, |b| b.iter(|| kern.popcount(black_box(&v))));
        }
    }
    g.finish();
}

criterion_group!(benches, scan64_radius3, knn256_k10, distances_1m, popcount);
criterion_main!(benches);
