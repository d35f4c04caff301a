//! The signers on the dominance set (`simlsh_workloads::dominance`): where a few shared heavy
//! coordinates decide `±1` signatures.
//!
//! `cargo run --release --example dominance [PAIRS] [DOCS]`
//!
//! 1. **Collision law.** For every cell of the set (family × target cosine), `PAIRS` pairs
//!    (default 1,000) signed at f = 256, each pair with its own seed: the fraction of equal
//!    bits minus its expectation `1 − θ/π`, and the standard error of that difference.
//! 2. **Near-duplicates.** `DOCS` templated documents (default 4,000; `dominance_corpus`),
//!    self-joined at f = 256 and radius 36 (cosine ≥ 0.9): pairs found by each signer, and
//!    precision, recall and F1 against the exact cosines.

use std::time::Instant;

use anyhow::Result;
use rayon::prelude::*;
use simlsh::join::self_join;
use simlsh::signers::{SignerKind, SignerSpec};
use simlsh::{Signer, SignerInfo};
use simlsh_workloads::dominance::{
    CORPUS_DIM, Family, SparseVec, TARGETS, dominance_corpus, dominance_pairs,
};

const BITS: usize = 256;

fn collision_law(pairs_per_cell: usize) -> Result<()> {
    let kinds = [
        SignerKind::HashedGaussian,
        SignerKind::HashingTrick,
        SignerKind::Pooled { pool: 10_000 },
    ];
    println!("## Collision law, f = {BITS}, {pairs_per_cell} pairs per cell");
    println!();
    println!("equal bits − (1 − θ/π), ± standard error");
    println!();
    let names: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
    println!("| family | cosine | {} |", names.join(" | "));
    println!("|---|---|{}", "---|".repeat(kinds.len()));
    for family in Family::ALL {
        for &t in &TARGETS {
            let pairs = dominance_pairs(family, t, pairs_per_cell);
            let mut cells = Vec::new();
            for kind in &kinds {
                let (equal, expected, var) = pairs
                    .par_iter()
                    .enumerate()
                    .map(|(k, p)| {
                        let s = SignerSpec::new(kind.clone())
                            .bits(BITS)
                            .seed(k as u64)
                            .build(None)
                            .expect("hashed signers build");
                        let a = s.sign_sparse(&p.u.ids, &p.u.weights).expect("valid");
                        let b = s.sign_sparse(&p.v.ids, &p.v.weights).expect("valid");
                        let q = 1.0 - p.cosine().clamp(-1.0, 1.0).acos() / std::f64::consts::PI;
                        let eq = (BITS as u32 - a.distance(&b).expect("same width")) as f64;
                        (eq, BITS as f64 * q, BITS as f64 * q * (1.0 - q))
                    })
                    .reduce(|| (0.0, 0.0, 0.0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2));
                let n = (pairs.len() * BITS) as f64;
                cells.push(format!(
                    "{:+.4} ± {:.4}",
                    (equal - expected) / n,
                    var.sqrt() / n
                ));
            }
            println!("| {family:?} | {t} | {} |", cells.join(" | "));
        }
    }
    println!();
    Ok(())
}

/// Pairs `(i, j)`, `i < j`, of rows with exact cosine at least `c`.
fn truth(rows: &[SparseVec], c: f64) -> Vec<(u32, u32)> {
    (0..rows.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            (i + 1..rows.len())
                .filter(move |&j| rows[i].cosine(&rows[j]) >= c)
                .map(move |j| (i as u32, j as u32))
        })
        .collect()
}

fn near_duplicates(docs: usize) -> Result<()> {
    let corpus = dominance_corpus(docs);
    let rows: Vec<SparseVec> = (0..corpus.rows())
        .map(|r| {
            let v = corpus.outer_view(r).expect("row");
            SparseVec {
                ids: v.indices().iter().map(|&i| i as u64).collect(),
                weights: v.data().to_vec(),
            }
        })
        .collect();
    let mean_nnz = corpus.nnz() as f64 / docs as f64;
    let cos = 0.9f64;
    let radius = (BITS as f64 * cos.acos() / std::f64::consts::PI).floor() as u32;
    let t = Instant::now();
    let truth = truth(&rows, cos);
    println!(
        "## Near-duplicates: {docs} documents, {:.0} nonzeros per row, D = {CORPUS_DIM}",
        mean_nnz
    );
    println!();
    println!(
        "cosine ≥ {cos}: {} pairs (exact, {:.1} s); f = {BITS}, radius {radius}",
        truth.len(),
        t.elapsed().as_secs_f64()
    );
    println!();
    println!("| signer | bytes | pairs found | precision | recall | F1 |");
    println!("|---|---|---|---|---|---|");
    let specs = [
        "gaussian",
        "super-bit",
        "rademacher",
        "very-sparse",
        &format!("very-sparse:nnz={}", mean_nnz.round()),
        "hashing-trick",
        "pooled",
        "hashed-gaussian",
    ];
    let truth: std::collections::HashSet<(u32, u32)> = truth.into_iter().collect();
    for spec in specs {
        let s = spec
            .parse::<SignerSpec>()?
            .bits(BITS)
            .seed(1)
            .build(Some(CORPUS_DIM as u64))?;
        let info: SignerInfo = s.info();
        let sigs = s.sign_csr(corpus.view())?;
        let found = self_join(&sigs, radius)?;
        let hits = found.iter().filter(|p| truth.contains(&(p.i, p.j))).count();
        let precision = hits as f64 / found.len().max(1) as f64;
        let recall = hits as f64 / truth.len().max(1) as f64;
        let f1 = 2.0 * precision * recall / (precision + recall).max(f64::MIN_POSITIVE);
        println!(
            "| {spec} | {} | {} | {precision:.3} | {recall:.3} | {f1:.3} |",
            info.bytes,
            found.len()
        );
    }
    println!();
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let pairs: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let docs: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(4000);
    collision_law(pairs)?;
    near_duplicates(docs)?;
    Ok(())
}
