//! Exact near-duplicate documents without signatures: the prefix-filtered cosine join
//! ([`PrefixJoin`]) against the verified banded join the planner picks (signatures at the
//! planned width, candidates from bands, the same exact cosine), on the same TF-IDF rows.
//!
//! `cargo run --release --example prefix_join [-- DOCS [TOKENIZER] [COSINE]]`
//!
//! `DOCS` is any text input of the command line (plain text, JSON Lines with a `text`
//! field, CSV/TSV with a `text` column; default `datasets/chinese-poetry-3k/poems.jsonl`),
//! `TOKENIZER` a tokenizer spec (default `chars:ngram=2`), `COSINE` the threshold (default
//! 0.8). It prints each step's CPU time, the pairs both joins found, and checks that the
//! prefix join's pairs contain the banded join's, with the same cosines bit for bit (the
//! banded join's recall is planned at 0.99; the prefix join's is 1).

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Result, ensure};
use simlsh::estimate::JoinPlanner;
use simlsh::io::documents::{TextOptions, read_documents};
use simlsh::io::input::InputFormat;
use simlsh::signers::{InputKind, SignerKind, SignerSpec};
use simlsh::text::TokenizerSpec;
use simlsh::verify::{PrefixJoin, SparseVectors, Vectors, VerifiedJoin};

/// Process CPU seconds (user + system), from `/proc/self/stat`; 0 where it is missing.
fn cpu() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let f: Vec<&str> = s
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = PathBuf::from(
        args.first()
            .map_or("datasets/chinese-poetry-3k/poems.jsonl", String::as_str),
    );
    let spec: TokenizerSpec = args
        .get(1)
        .map_or("chars:ngram=2", String::as_str)
        .parse()?;
    let t: f64 = args.get(2).map_or(Ok(0.8), |s| s.parse())?;

    let c = cpu();
    let (docs, _) = read_documents(
        &path,
        InputFormat::from_path(&path)?,
        &TextOptions::default(),
    )?;
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let read = cpu() - c;
    let c = cpu();
    let tok = spec.fit(&texts)?;
    let idf = cpu() - c;
    let c = cpu();
    let v = SparseVectors::from_feature_rows(tok.feature_rows(&texts))?;
    let rows = cpu() - c;
    println!(
        "{} documents, {} features ({spec}); read {read:.2} s, IDF {idf:.2} s, rows {rows:.2} s CPU",
        v.len(),
        v.nnz()
    );

    let join = PrefixJoin::builder().threshold(t).build()?;
    let c = cpu();
    let (exact, r) = join.pairs(&v)?;
    println!(
        "prefix join: {} pairs at cosine >= {t} in {:.2} s CPU ({} prefix features, {} pairs of postings examined, {} candidates verified, {} passes)",
        exact.len(),
        cpu() - c,
        r.indexed,
        r.examined,
        r.candidates,
        r.passes
    );

    // The banded join the planner picks for these rows, on the same vectors.
    let c = cpu();
    // As `simlsh dedup` plans it: the width priced with the rows' mean features.
    let mean = v.nnz() as f64 / v.len().max(1) as f64;
    let plan = JoinPlanner::new(t)
        .recall(0.99)
        .rows(v.len().max(2) as u64)
        .features(mean)
        .plan()?;
    let signer = SignerSpec::new(SignerKind::default_for(InputKind::Text, plan.bits))
        .bits(plan.bits)
        .seed(0)
        .build(None)?;
    let sigs = tok.sign_corpus(&signer, &texts)?;
    let sign = cpu() - c;
    let c = cpu();
    let banded = VerifiedJoin::from_plan(t, &plan)?;
    let (found, report) = banded.pairs(&sigs, &v)?;
    println!(
        "banded join ({}): {} pairs in {:.2} s CPU, signing {} bits {sign:.2} s CPU ({} candidates)",
        banded.candidates(),
        found.len(),
        cpu() - c,
        plan.bits,
        report.candidates
    );

    let by_pair: HashMap<(u32, u32), f64> = exact.iter().map(|p| ((p.i, p.j), p.cosine)).collect();
    for p in &found {
        let c = by_pair.get(&(p.i, p.j));
        ensure!(
            c.map(|c| c.to_bits()) == Some(p.cosine.to_bits()),
            "the banded join found ({}, {}) at {}, the prefix join {c:?}",
            p.i,
            p.j,
            p.cosine
        );
    }
    println!(
        "every banded pair is a prefix pair with the same cosine; banded recall {:.4}",
        found.len() as f64 / exact.len().max(1) as f64
    );
    Ok(())
}
