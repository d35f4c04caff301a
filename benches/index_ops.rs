//! Index files and updates on W3's 1,000,000 64-bit codes, single thread (a 1-thread rayon
//! pool on the benchmark's thread), for every index kind:
//!
//! * `open_1m`: loading a saved index (`persist::load_index`).
//! * `remove_loop_1m`: ids removed one `remove` call at a time (a fixed pseudo-random
//!   sample of ids, enough calls to include the index's periodic merges), from a fresh
//!   copy of the index each time.
//! * `insert_loop_1m`: new ids inserted one `insert` call at a time.
//! * `remove_batch_1m`, `insert_batch_1m`: 200,000 ids in one `remove_batch` /
//!   `insert_batch` call.
//! * `open_1m/*/verify_index`: the checksum and every invariant (`persist::verify_index`).
//!
//! Throughput is in operations (files opened, ids removed or inserted) per second.
//! `cargo bench --bench index_ops` (filter with e.g. `-- open`).

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::OnceLock;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::index::{HammingIndex, LinearScan, MultiIndex, PermutationIndex, PermutedTables};
use simlsh::persist::load_index;
use simlsh::rng::Rng;
use simlsh::signature::SignatureMatrix;
use simlsh_workloads::{W3, w3};

/// One index kind: its name, the built index, its file, and how many single removals and
/// insertions one measurement makes (enough to include the periodic merges).
struct Setup {
    name: &'static str,
    index: Box<dyn HammingIndex>,
    path: PathBuf,
    removals: usize,
    inserts: usize,
}

fn setups() -> &'static Vec<Setup> {
    static SETUPS: OnceLock<Vec<Setup>> = OnceLock::new();
    SETUPS.get_or_init(|| {
        let w = w3();
        let sigs = SignatureMatrix::from_parts(64, w.index.clone()).unwrap();
        let dir =
            std::env::temp_dir().join(format!("simlsh-bench-index-ops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let built: Vec<(&'static str, Box<dyn HammingIndex>, usize, usize)> =
            pool().install(|| {
                vec![
                    (
                        "linear",
                        Box::new(LinearScan::build(&sigs).unwrap()) as Box<dyn HammingIndex>,
                        2_000,
                        2_000,
                    ),
                    (
                        "manku",
                        Box::new(
                            PermutedTables::builder()
                                .radius(W3::RADIUS)
                                .blocks(4)
                                .build(&sigs)
                                .unwrap(),
                        ),
                        32_768,
                        2_048,
                    ),
                    (
                        "mih",
                        Box::new(MultiIndex::build(&sigs).unwrap()),
                        131_072,
                        16_384,
                    ),
                    (
                        "permutation",
                        Box::new(PermutationIndex::build(&sigs).unwrap()),
                        4_096,
                        4_096,
                    ),
                ]
            });
        built
            .into_iter()
            .map(|(name, index, removals, inserts)| {
                let path = dir.join(format!("{name}.simlsh"));
                simlsh::persist::save_index(index.as_ref(), &path).unwrap();
                eprintln!(
                    "{name}: {} codes, file {} bytes",
                    index.len(),
                    std::fs::metadata(&path).unwrap().len()
                );
                Setup {
                    name,
                    index,
                    path,
                    removals,
                    inserts,
                }
            })
            .collect()
    })
}

/// `n` distinct ids of `0..W3::N`, in a fixed pseudo-random order.
fn sample_ids(n: usize) -> Vec<u32> {
    let mut all: Vec<u32> = (0..W3::N as u32).collect();
    let mut rng = Rng::new(17);
    for i in 0..n {
        let j = i + rng.below((all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(n);
    all
}

/// `n` random 64-bit codes.
fn new_codes(n: usize) -> Vec<u64> {
    let mut rng = Rng::new(23);
    (0..n).map(|_| rng.next_u64()).collect()
}

fn bench_open(c: &mut Criterion) {
    let mut g = c.benchmark_group("open_1m");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1));
    for s in setups() {
        g.bench_function(BenchmarkId::new(s.name, "load_index"), |b| {
            b.iter(|| load_index(black_box(&s.path)).unwrap())
        });
        g.bench_function(BenchmarkId::new(s.name, "verify_index"), |b| {
            b.iter(|| simlsh::persist::verify_index(black_box(&s.path)).unwrap())
        });
    }
    g.finish();
}

/// A fresh copy of the index, loaded from its file as the command line does (mapped arrays
/// are copied on the first change).
fn copy(s: &Setup) -> Box<dyn HammingIndex> {
    simlsh::persist::load_index(&s.path).unwrap()
}

fn bench_updates(c: &mut Criterion) {
    let mut g = c.benchmark_group("remove_loop_1m");
    g.sample_size(10);
    for s in setups() {
        let ids = sample_ids(s.removals);
        g.throughput(Throughput::Elements(ids.len() as u64));
        g.bench_function(BenchmarkId::new(s.name, ids.len()), |b| {
            b.iter_batched(
                || copy(s),
                |mut idx| {
                    pool().install(|| {
                        for &id in &ids {
                            idx.remove(id).unwrap();
                        }
                    });
                    idx
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();

    let mut g = c.benchmark_group("insert_loop_1m");
    g.sample_size(10);
    for s in setups() {
        let codes = new_codes(s.inserts);
        g.throughput(Throughput::Elements(codes.len() as u64));
        g.bench_function(BenchmarkId::new(s.name, codes.len()), |b| {
            b.iter_batched(
                || copy(s),
                |mut idx| {
                    pool().install(|| {
                        for (i, c) in codes.chunks_exact(1).enumerate() {
                            idx.insert(W3::N as u32 + i as u32, c).unwrap();
                        }
                    });
                    idx
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();

    // 200,000 ids at once.
    let ids = sample_ids(200_000);
    let mut g = c.benchmark_group("remove_batch_1m");
    g.sample_size(10);
    g.throughput(Throughput::Elements(ids.len() as u64));
    for s in setups() {
        g.bench_function(BenchmarkId::new(s.name, ids.len()), |b| {
            b.iter_batched(
                || copy(s),
                |mut idx| {
                    assert_eq!(
                        pool().install(|| idx.remove_batch(&ids)).unwrap(),
                        ids.len()
                    );
                    idx
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
    let codes = new_codes(200_000);
    let new_ids: Vec<u32> = (0..codes.len() as u32).map(|i| W3::N as u32 + i).collect();
    let mut g = c.benchmark_group("insert_batch_1m");
    g.sample_size(10);
    g.throughput(Throughput::Elements(codes.len() as u64));
    for s in setups() {
        g.bench_function(BenchmarkId::new(s.name, codes.len()), |b| {
            b.iter_batched(
                || copy(s),
                |mut idx| {
                    pool()
                        .install(|| idx.insert_batch(&new_ids, &codes))
                        .unwrap();
                    idx
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
    assert!(setups().iter().all(|s| s.index.len() == W3::N));
}

criterion_group!(benches, bench_open, bench_updates);
criterion_main!(benches);
