//! Near-duplicate text at 64 bits, in English and Chinese, with the classic pipeline: segment,
//! weight by TF-IDF, 64-bit simhash (hashing trick), all pairs within Hamming distance 3.
//!
//! `cargo run --release --example dedup_text`

use anyhow::Result;
use simlsh::io::documents::{TextOptions, read_documents};
use simlsh::io::input::InputFormat;
use simlsh::text::{Idf, Mode, Tokenizer};
use simlsh::{HashingTrick, estimate, join};

fn dedup(path: &str, mode: Mode, show: usize) -> Result<()> {
    let p = std::path::Path::new(path);
    let (docs, _) = read_documents(p, InputFormat::from_path(p)?, &TextOptions::default())?;
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let plain = Tokenizer::builder().mode(mode).build()?;
    let tok = Tokenizer::builder()
        .mode(mode)
        .idf(Idf::fit(&plain, texts.iter()))
        .build()?;
    let signer = HashingTrick::builder().bits(64).seed(1).build()?;
    let sigs = tok.sign_corpus(&signer, &texts)?;
    let pairs = join::self_join(&sigs, 3)?;
    let labels = join::clusters(docs.len(), &pairs)?;
    let removed = labels
        .iter()
        .enumerate()
        .filter(|&(i, &l)| l as usize != i)
        .count();
    println!(
        "{path}: {} documents, {} pairs within distance 3, {removed} near-duplicates removed",
        docs.len(),
        pairs.len()
    );
    let short = |s: &str| s.chars().take(70).collect::<String>().replace('\n', " ");
    for p in pairs.iter().filter(|p| p.distance > 0).take(show) {
        println!(
            "  h = {} (cosine ≈ {:.3})",
            p.distance,
            estimate::cosine(p.distance as u64, 64)
        );
        println!("    {}", short(texts[p.i as usize]));
        println!("    {}", short(texts[p.j as usize]));
    }
    Ok(())
}

fn main() -> Result<()> {
    dedup(
        "datasets/healthtweets-10k/healthtweets-10k.csv",
        Mode::Words,
        4,
    )?;
    dedup("datasets/chinese-poetry-3k/poems.jsonl", Mode::Cjk, 4)?;
    Ok(())
}
