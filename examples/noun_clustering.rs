//! Noun similarity lists in the manner of Ravichandran, Pantel & Hovy (2005): word × context
//! feature vectors from a corpus, signed with thousands of bits, each word's nearest
//! neighbours found by permutation search over the signatures, and compared with the exact
//! cosine neighbours.
//!
//! `cargo run --release --example noun_clustering`
//!
//! Corpus: the bundled health-news tweets. Without a part-of-speech tagger, the "nouns" are
//! the 400 most frequent words of four or more letters that are not stop words; a context
//! feature is a non-stop word within three positions, weighted by positive pointwise mutual
//! information, as in the paper. The corpus is small, so the vectors are sparse and most
//! cosines are low: the comparison with the exact cosine neighbours shows how far 4096 bits
//! go at that resolution.

use std::collections::HashMap;

use anyhow::Result;
use simlsh::index::{HammingIndex, LinearScan, PermutationIndex, recall_at_k};
use simlsh::io::documents::{TextOptions, read_documents};
use simlsh::io::input::InputFormat;
use simlsh::text::{StopWords, Tokenizer};
use simlsh::{HashingTrick, Signature, SignatureMatrix, Signer};

fn main() -> Result<()> {
    let path = std::path::Path::new("datasets/healthtweets-10k/healthtweets-10k.csv");
    let (docs, _) = read_documents(path, InputFormat::from_path(path)?, &TextOptions::default())?;
    let tok = Tokenizer::builder().build()?;
    let sentences: Vec<Vec<String>> = docs.iter().map(|d| tok.tokens(&d.text)).collect();
    let stop = StopWords::english();
    let mut freq: HashMap<&str, usize> = HashMap::new();
    for s in &sentences {
        for w in s {
            *freq.entry(w.as_str()).or_default() += 1;
        }
    }
    let mut nouns: Vec<(&str, usize)> = freq
        .iter()
        .filter(|(w, _)| {
            w.chars().count() >= 4 && w.chars().all(char::is_alphabetic) && !stop.contains(w)
        })
        .map(|(w, c)| (*w, *c))
        .collect();
    nouns.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    nouns.truncate(400);
    let noun_id: HashMap<&str, usize> = nouns
        .iter()
        .enumerate()
        .map(|(i, (w, _))| (*w, i))
        .collect();
    // Co-occurrence counts (noun, context word).
    let mut counts: Vec<HashMap<String, f64>> = vec![HashMap::new(); nouns.len()];
    let mut ctx_total: HashMap<String, f64> = HashMap::new();
    let mut total = 0.0;
    for s in &sentences {
        for (i, w) in s.iter().enumerate() {
            let Some(&n) = noun_id.get(w.as_str()) else {
                continue;
            };
            for off in [-3i64, -2, -1, 1, 2, 3] {
                let j = i as i64 + off;
                if j >= 0 && (j as usize) < s.len() && !stop.contains(&s[j as usize]) {
                    let f = s[j as usize].clone();
                    *counts[n].entry(f.clone()).or_default() += 1.0;
                    *ctx_total.entry(f).or_default() += 1.0;
                    total += 1.0;
                }
            }
        }
    }
    // Positive PMI weights.
    let row_total: Vec<f64> = counts.iter().map(|c| c.values().sum()).collect();
    let vectors: Vec<Vec<(String, f32)>> = counts
        .iter()
        .enumerate()
        .map(|(n, c)| {
            let mut v: Vec<(String, f32)> = c
                .iter()
                .filter_map(|(f, &k)| {
                    let pmi = (k * total / (row_total[n] * ctx_total[f])).ln();
                    (pmi > 0.0).then(|| (f.clone(), pmi as f32))
                })
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        })
        .collect();
    // Sign with 4096 bits (the hashing trick on string features).
    let bits = 4096;
    let signer = HashingTrick::builder().bits(bits).seed(3).build()?;
    let mut sigs = SignatureMatrix::new(bits)?;
    for v in &vectors {
        let toks: Vec<&str> = v.iter().map(|p| p.0.as_str()).collect();
        let w: Vec<f32> = v.iter().map(|p| p.1).collect();
        let s: Signature = signer.sign_tokens(&toks, &w)?;
        sigs.push(&s)?;
    }
    // Exact cosine neighbours (the reference) and permutation search on the signatures.
    let exact_cos = |a: &[(String, f32)], b: &[(String, f32)]| {
        let bm: HashMap<&str, f32> = b.iter().map(|p| (p.0.as_str(), p.1)).collect();
        let dot: f64 = a
            .iter()
            .filter_map(|p| bm.get(p.0.as_str()).map(|&y| (p.1 * y) as f64))
            .sum();
        let na: f64 = a.iter().map(|p| (p.1 as f64).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|p| (p.1 as f64).powi(2)).sum::<f64>().sqrt();
        if na == 0.0 || nb == 0.0 {
            0.0
        } else {
            dot / (na * nb)
        }
    };
    let k = 10;
    let perm = PermutationIndex::builder()
        .permutations(16)
        .beam(32)
        .seed(1)
        .build(&sigs)?;
    let approx = perm.knn_batch(sigs.as_slice(), k + 1)?;
    let exact_sig = LinearScan::build(&sigs)?.knn_batch(sigs.as_slice(), k + 1)?;
    let drop_self = |lists: Vec<Vec<simlsh::Hit>>| -> Vec<Vec<simlsh::Hit>> {
        lists
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                l.into_iter()
                    .filter(|h| h.id as usize != i)
                    .take(k)
                    .collect()
            })
            .collect()
    };
    let (approx, exact_sig) = (drop_self(approx), drop_self(exact_sig));
    println!(
        "{} words, {} context features; 4096-bit signatures; permutation search (q = 16, B = 32) recall@{k} against the exact signature search: {:.3}",
        nouns.len(),
        ctx_total.len(),
        recall_at_k(&approx, &exact_sig)
    );
    let mut agree = 0.0;
    for n in 0..nouns.len() {
        let mut by_cos: Vec<(f64, usize)> = (0..nouns.len())
            .filter(|&m| m != n)
            .map(|m| (exact_cos(&vectors[n], &vectors[m]), m))
            .collect();
        by_cos.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let top: Vec<usize> = by_cos.iter().take(k).map(|p| p.1).collect();
        agree += approx[n]
            .iter()
            .filter(|h| top.contains(&(h.id as usize)))
            .count() as f64
            / k as f64;
    }
    println!(
        "overlap of the signature neighbours with the exact-cosine top-{k}: {:.3}",
        agree / nouns.len() as f64
    );
    for w in ["cancer", "health", "study", "women", "heart", "food"] {
        if let Some(&n) = noun_id.get(w) {
            let list: Vec<String> = approx[n]
                .iter()
                .take(6)
                .map(|h| {
                    format!(
                        "{} ({:.2})",
                        nouns[h.id as usize].0,
                        exact_cos(&vectors[n], &vectors[h.id as usize])
                    )
                })
                .collect();
            println!("  {w}: {}", list.join(", "));
        }
    }
    Ok(())
}
