//! Near-duplicate text at 64 bits, in English and Chinese, with the classic pipeline: segment,
//! weight, 64-bit simhash (the hashing trick; on the poems also the hashed Gaussian signer,
//! the command line's default for text), all pairs within Hamming distance 3. Documents
//! without features (empty, punctuation or stop words only) have the all-zero signature and
//! are left out of the pairs.
//!
//! On the bundled Chinese poems it compares three weightings against the poems' reference
//! near duplicates (pairs with the same first clause, up to the first `，`, `。` or line
//! break, and different text): jieba words with TF-IDF fitted on the poems, jieba's own
//! keyword weights (its bundled IDF table and stop words, `Weighting::JiebaKeywords`), and
//! character bigrams with TF-IDF, each keeping the 20 heaviest features, each signed by both
//! signers.
//!
//! `cargo run --release --example dedup_text [-- PYTHON_TAGS.jsonl]`
//!
//! With a file of Python jieba keywords (one JSON list of `[word, weight]` per poem, in file
//! order), it also signs those with the same signers and reports how many of the reference
//! pairs they find and how often the two keyword sets agree. The file is written by
//!
//! ```text
//! import json, jieba.analyse
//! with open("tags.jsonl", "w") as out:
//!     for line in open("datasets/chinese-poetry-3k/poems.jsonl"):
//!         tags = jieba.analyse.extract_tags(json.loads(line)["text"], topK=20, withWeight=True)
//!         out.write(json.dumps(tags, ensure_ascii=False) + "\n")
//! ```

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result};
use simlsh::io::documents::{TextOptions, read_documents};
use simlsh::io::input::InputFormat;
use simlsh::join::Pair;
use simlsh::signers::{AnySigner, HashedGaussian};
use simlsh::text::{Idf, Mode, SignOptions, Tokenizer, Weighting};
use simlsh::{HashingTrick, SignatureMatrix, Signer, estimate, join};

/// All pairs within distance 3, without the documents that had no feature.
fn pairs(sigs: &SignatureMatrix, featureless: &[bool]) -> Result<Vec<Pair>> {
    let mut p = join::self_join(sigs, 3)?;
    p.retain(|p| !featureless[p.i as usize] && !featureless[p.j as usize]);
    Ok(p)
}

fn read(path: &str) -> Result<Vec<String>> {
    let p = std::path::Path::new(path);
    let (docs, _) = read_documents(p, InputFormat::from_path(p)?, &TextOptions::default())?;
    Ok(docs.into_iter().map(|d| d.text).collect())
}

fn english() -> Result<()> {
    let path = "datasets/healthtweets-10k/healthtweets-10k.csv";
    let docs = read(path)?;
    let plain = Tokenizer::builder().mode(Mode::Words).build()?;
    let tok = plain
        .to_builder()
        .idf(Idf::fit(&plain, docs.iter()))
        .build()?;
    let signer = HashingTrick::builder().bits(64).seed(1).build()?;
    let c = tok.sign_corpus_with(&signer, &docs, SignOptions::default())?;
    let featureless: Vec<bool> = c.features.iter().map(|&n| n == 0).collect();
    let pairs = pairs(&c.signatures, &featureless)?;
    let labels = join::clusters(docs.len(), &pairs)?;
    let removed = labels
        .iter()
        .enumerate()
        .filter(|&(i, &l)| l as usize != i)
        .count();
    println!(
        "{path}: {} documents ({} without features), {} pairs within distance 3, {removed} near-duplicates removed",
        docs.len(),
        c.featureless().len(),
        pairs.len()
    );
    let short = |s: &str| s.chars().take(70).collect::<String>().replace('\n', " ");
    for p in pairs.iter().filter(|p| p.distance > 0).take(4) {
        println!(
            "  h = {} (cosine ≈ {:.3})",
            p.distance,
            estimate::cosine(p.distance as u64, 64)
        );
        println!("    {}", short(&docs[p.i as usize]));
        println!("    {}", short(&docs[p.j as usize]));
    }
    Ok(())
}

/// The reference near duplicates of the poems: same first clause, different text.
fn reference_pairs(docs: &[String]) -> BTreeSet<(u32, u32)> {
    let mut by_first: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (i, d) in docs.iter().enumerate() {
        let first = d.split(['，', '。', '\n']).next().unwrap_or("");
        by_first.entry(first).or_default().push(i as u32);
    }
    let mut out = BTreeSet::new();
    for g in by_first.values() {
        for (a, &i) in g.iter().enumerate() {
            for &j in &g[a + 1..] {
                if docs[i as usize] != docs[j as usize] {
                    out.insert((i, j));
                }
            }
        }
    }
    out
}

fn report(name: &str, docs: &[String], found: &[Pair], reference: &BTreeSet<(u32, u32)>) {
    let near = found
        .iter()
        .filter(|p| reference.contains(&(p.i, p.j)))
        .count();
    let exact = found
        .iter()
        .filter(|p| docs[p.i as usize] == docs[p.j as usize])
        .count();
    println!(
        "  {name:<36} {:>5} pairs: {exact:>4} identical poems, {near:>3}/{} reference near duplicates",
        found.len(),
        reference.len()
    );
}

fn chinese(python_tags: Option<&str>) -> Result<()> {
    let path = "datasets/chinese-poetry-3k/poems.jsonl";
    let docs = read(path)?;
    let reference = reference_pairs(&docs);
    println!(
        "{path}: {} poems, {} reference near-duplicate pairs; 64 bits, distance ≤ 3, top 20 features",
        docs.len(),
        reference.len()
    );
    let signers: [(&str, AnySigner); 2] = [
        (
            "hashing-trick",
            HashingTrick::builder().bits(64).seed(1).build()?.into(),
        ),
        (
            "hashed-gaussian",
            HashedGaussian::builder().bits(64).seed(1).build()?.into(),
        ),
    ];
    let top = Some(20);
    let cjk = Tokenizer::builder().mode(Mode::Cjk).build()?;
    let bigrams = Tokenizer::builder().mode(Mode::Chars).ngram(2).build()?;
    let keywords = cjk
        .to_builder()
        .weighting(Weighting::JiebaKeywords)
        .top_k(top)
        .build()?;
    let pipelines = [
        (
            "jieba words, TF-IDF fitted",
            cjk.to_builder()
                .idf(Idf::fit(&cjk, docs.iter()))
                .top_k(top)
                .build()?,
        ),
        ("jieba keywords (JiebaKeywords)", keywords.clone()),
        (
            "character bigrams, TF-IDF fitted",
            bigrams
                .to_builder()
                .idf(Idf::fit(&bigrams, docs.iter()))
                .top_k(top)
                .build()?,
        ),
    ];
    for (signer_name, signer) in &signers {
        println!(" {signer_name}:");
        for (name, tok) in &pipelines {
            let c = tok.sign_corpus_with(signer, &docs, SignOptions::default())?;
            let featureless: Vec<bool> = c.features.iter().map(|&n| n == 0).collect();
            report(
                name,
                &docs,
                &pairs(&c.signatures, &featureless)?,
                &reference,
            );
        }
    }
    let Some(tags) = python_tags else {
        return Ok(());
    };
    let text = std::fs::read_to_string(tags).with_context(|| format!("reading {tags}"))?;
    let lists: Vec<Vec<(String, f32)>> = text
        .lines()
        .map(|l| {
            let v: Vec<(String, f64)> = serde_json::from_str(l)?;
            Ok(v.into_iter().map(|(w, x)| (w, x as f32)).collect())
        })
        .collect::<Result<_>>()?;
    anyhow::ensure!(
        lists.len() == docs.len(),
        "{tags}: one line per poem expected"
    );
    let featureless: Vec<bool> = lists.iter().map(Vec::is_empty).collect();
    for (signer_name, signer) in &signers {
        let mut sigs = SignatureMatrix::new(64)?;
        for list in &lists {
            let words: Vec<&str> = list.iter().map(|(w, _)| w.as_str()).collect();
            let weights: Vec<f32> = list.iter().map(|&(_, x)| x).collect();
            sigs.push(&signer.sign_tokens(&words, &weights)?)?;
        }
        report(
            &format!("Python extract_tags, {signer_name}"),
            &docs,
            &pairs(&sigs, &featureless)?,
            &reference,
        );
    }
    let (mut same, mut jaccard) = (0usize, 0f64);
    for (d, list) in docs.iter().zip(&lists) {
        let words: Vec<&str> = list.iter().map(|(w, _)| w.as_str()).collect();
        let ours: BTreeSet<String> = keywords.features(d).tokens.into_iter().collect();
        let theirs: BTreeSet<String> = words.iter().map(|w| w.to_string()).collect();
        same += usize::from(ours == theirs);
        let union = ours.union(&theirs).count();
        jaccard += if union == 0 {
            1.0
        } else {
            ours.intersection(&theirs).count() as f64 / union as f64
        };
    }
    println!(
        "  keyword sets, JiebaKeywords against Python: identical for {same} of {} poems, mean Jaccard {:.4}",
        docs.len(),
        jaccard / docs.len() as f64
    );
    Ok(())
}

fn main() -> Result<()> {
    english()?;
    chinese(std::env::args().nth(1).as_deref())
}
