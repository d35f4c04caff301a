//! Wide signatures: ns per document of the structured-rotation signer (`fwht`, cost
//! `nnz + f·log d`) against the hashed Gaussian signer (`f` additions per nonzero) at
//! f = 256, 1,024 and 4,096 bits, on the same TF-IDF rows: the bundled poems
//! (`datasets/chinese-poetry-3k/poems.jsonl`), two poems per document, character bigrams
//! weighted by TF-IDF fitted on them (≈ 110 nonzeros per row). `fwht` runs with its default
//! 1,024 buckets and with 256 and 4,096, to show the choice of the default.
//!
//! One thread (a 1-thread rayon pool on the benchmark's own thread), timed by the thread's
//! CPU time, which other jobs on a shared machine do not inflate. The time per iteration is
//! that of all the rows: divide by the row count printed at the start for ns per document.
//!
//! `cargo bench --bench fwht -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::measurement::Measurement;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::SignerExt;
use simlsh::io::{InputFormat, TextOptions, read_documents};
use simlsh::rng::hash_bytes;
use simlsh::signers::{FwhtSigner, HashedGaussian};
use simlsh::text::TokenizerSpec;

/// The TF-IDF rows as a CSR matrix of hashed feature ids (`u64` keys, sorted).
fn rows() -> sprs::CsMatI<f32, u64, usize> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/chinese-poetry-3k/poems.jsonl");
    let (docs, _) = read_documents(&p, InputFormat::JsonLines, &TextOptions::default()).unwrap();
    let docs: Vec<String> = docs
        .chunks_exact(2)
        .map(|d| format!("{}\n{}", d[0].text, d[1].text))
        .collect();
    // Character bigrams with TF-IDF weights fitted on the poems.
    let t = "chars:ngram=2"
        .parse::<TokenizerSpec>()
        .unwrap()
        .fit(&docs)
        .unwrap();
    let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
    for d in &docs {
        let f = t.features(d);
        let mut row: Vec<(u64, f32)> = f
            .tokens
            .iter()
            .map(|s| hash_bytes(s.as_bytes(), 1) >> 1)
            .zip(f.weights.iter().copied())
            .collect();
        row.sort_unstable_by_key(|p| p.0);
        row.dedup_by_key(|p| p.0);
        indices.extend(row.iter().map(|p| p.0));
        data.extend(row.iter().map(|p| p.1));
        indptr.push(indices.len());
    }
    let dim = indices.iter().max().map_or(1, |&m| m as usize + 1);
    sprs::CsMatI::new((docs.len(), dim), indptr, indices, data)
}

fn bench<M: Measurement + 'static>(c: &mut Criterion<M>) {
    let csr = rows();
    eprintln!(
        "{} rows, {:.1} nonzeros per row",
        csr.rows(),
        csr.nnz() as f64 / csr.rows() as f64
    );
    let mut g = c.benchmark_group("wide");
    g.sample_size(10)
        .throughput(Throughput::Elements(csr.rows() as u64));
    for f in [256, 1024, 4096] {
        let hg = HashedGaussian::builder().bits(f).build().unwrap();
        g.bench_function(format!("hashed-gaussian/f{f}"), |b| {
            b.iter(|| pool().install(|| black_box(hg.sign_csr(csr.view()).unwrap())))
        });
        for d in [256, 1024, 4096] {
            let s = FwhtSigner::builder().bits(f).buckets(d).build().unwrap();
            g.bench_function(format!("fwht-d{d}/f{f}"), |b| {
                b.iter(|| pool().install(|| black_box(s.sign_csr(csr.view()).unwrap())))
            });
        }
    }
    g.finish();
}

fn cpu() -> Criterion<CpuTime> {
    Criterion::default().with_measurement(CpuTime)
}

criterion_group! {
    name = benches;
    config = cpu();
    targets = bench
}
criterion_main!(benches);
