//! The Tang + Song poems (312k documents): loading, char bigram TF-IDF features (tokenised
//! once), and the exact all-pairs truth at a cosine threshold, cached under the target
//! directory.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rayon::prelude::*;
use simlsh::signature::words_for;
use simlsh::text::{Features, Idf, Mode, Tokenizer, Weighting, idf_key};
use simlsh::verify::{SparseVectors, Vectors};
use simlsh::{SignatureMatrix, Signer};

/// The poem files, Song first (the 254,248), then Tang.
pub const FILES: [&str; 2] = ["poet.song.jsonl.gz", "poet.tang.jsonl.gz"];

/// Where the data set lives: `../shared/datasets/chinese-poetry-tang-song` beside the
/// checkout, or `SIMLSH_POEMS`.
pub fn data_dir() -> PathBuf {
    if let Ok(d) = std::env::var("SIMLSH_POEMS") {
        return d.into();
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for up in [
        here.join("../shared"),
        here.join("../../shared"),
        "/work/shared".into(),
    ] {
        let d = up.join("datasets/chinese-poetry-tang-song");
        if d.is_dir() {
            return d;
        }
    }
    here.join("../shared/datasets/chinese-poetry-tang-song")
}

/// The `text` field of every line of the given files (in order), at most `limit` poems.
pub fn load(files: &[&str], limit: usize) -> Result<Vec<String>> {
    let dir = data_dir();
    let mut out = Vec::new();
    for f in files {
        let path = dir.join(f);
        let file = std::fs::File::open(&path).with_context(|| path.display().to_string())?;
        let reader = BufReader::new(flate2::read::GzDecoder::new(file));
        for (i, line) in reader.lines().enumerate() {
            if out.len() >= limit {
                return Ok(out);
            }
            let line = line.with_context(|| format!("{}:{}", path.display(), i + 1))?;
            let v: serde_json::Value = serde_json::from_str(&line)
                .with_context(|| format!("{}:{}", path.display(), i + 1))?;
            out.push(v["text"].as_str().unwrap_or_default().to_string());
        }
    }
    Ok(out)
}

/// Char bigram features with TF-IDF weights, tokenising each poem once: TF features, then
/// document frequencies counted from them and the weights multiplied by the smoothed IDF
/// (the same features as a TF-IDF tokenizer fitted on the poems).
pub fn features(docs: &[String]) -> Result<Vec<Features>> {
    let tok = Tokenizer::builder()
        .mode(Mode::Chars)
        .ngram(2)
        .weighting(Weighting::Tf)
        .build()?;
    let mut feats: Vec<Features> = docs.par_iter().map(|d| tok.features(d)).collect();
    let mut df: HashMap<u64, u32> = HashMap::new();
    for f in &feats {
        for t in &f.tokens {
            *df.entry(idf_key(t)).or_default() += 1;
        }
    }
    let mut entries: Vec<(u64, u32)> = df.into_iter().collect();
    entries.sort_unstable();
    let idf = Idf::from_parts(docs.len() as u64, entries, tok.config())?;
    let weight: HashMap<u64, f64> = idf
        .entries()
        .iter()
        .map(|&(k, _)| (k, idf.idf_key(k)))
        .collect();
    feats.par_iter_mut().for_each(|f| {
        for (t, w) in f.tokens.iter().zip(f.weights.iter_mut()) {
            *w = (f64::from(*w) * weight[&idf_key(t)]) as f32;
        }
    });
    Ok(feats)
}

/// Signs the features (in parallel; the result does not depend on the number of threads).
pub fn sign<S: Signer>(signer: &S, feats: &[Features]) -> Result<SignatureMatrix> {
    let bits = signer.bits();
    let w = words_for(bits);
    let mut out = vec![0u64; feats.len() * w];
    out.par_chunks_mut(w * 64)
        .enumerate()
        .try_for_each(|(c, chunk)| {
            for (r, dst) in chunk.chunks_exact_mut(w).enumerate() {
                let f = &feats[c * 64 + r];
                dst.copy_from_slice(signer.sign_tokens(&f.token_refs(), &f.weights)?.words());
            }
            Ok::<(), simlsh::Error>(())
        })?;
    Ok(SignatureMatrix::from_parts(bits, out)?)
}

/// Every pair `(i, j)`, `i < j`, with exact cosine ≥ `t`, sorted: an exact sparse all-pairs
/// search with L2 prefix filtering (features ordered rarest first; a row indexes its
/// rarest features until the rest has norm < t, so two rows with cosine ≥ t share a feature
/// indexed by the later one). Every candidate's cosine is computed by `vectors`.
pub fn exact_pairs(vectors: &SparseVectors, t: f64) -> Vec<(u32, u32)> {
    let n = vectors.len();
    // Document frequency per key, and each row's keys ordered rarest first.
    let mut df: HashMap<u64, u32> = HashMap::new();
    for i in 0..n {
        for &k in vectors.row(i).0 {
            *df.entry(k).or_default() += 1;
        }
    }
    let mut order: Vec<(u64, u32)> = df.iter().map(|(&k, &d)| (k, d)).collect();
    order.sort_unstable_by_key(|&(k, d)| (d, k));
    let rank: HashMap<u64, u32> = order
        .iter()
        .enumerate()
        .map(|(r, &(k, _))| (k, r as u32))
        .collect();
    let rows: Vec<Vec<(u32, f32)>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let (ks, ws) = vectors.row(i);
            let mut r: Vec<(u32, f32)> = ks.iter().zip(ws).map(|(k, &w)| (rank[k], w)).collect();
            r.sort_unstable_by_key(|e| e.0);
            r
        })
        .collect();
    // Prefix index: feature rank -> rows indexing it.
    let mut postings: Vec<Vec<u32>> = vec![Vec::new(); order.len()];
    for (i, r) in rows.iter().enumerate() {
        let total: f64 = r.iter().map(|e| f64::from(e.1).powi(2)).sum();
        let mut rest = total;
        for &(f, w) in r {
            // A margin for rounding: index a little more rather than too little.
            if rest.sqrt() < t * (1.0 - 1e-6) {
                break;
            }
            postings[f as usize].push(i as u32);
            rest -= f64::from(w).powi(2);
        }
    }
    let mut pairs: Vec<(u32, u32)> = (0..n)
        .into_par_iter()
        .map_init(Vec::new, |seen: &mut Vec<u32>, i| {
            seen.clear();
            for &(f, _) in &rows[i] {
                seen.extend(postings[f as usize].iter().filter(|&&j| j as usize > i));
            }
            seen.sort_unstable();
            seen.dedup();
            seen.iter()
                .filter(|&&j| vectors.cosine(i, j as usize) >= t)
                .map(|&j| (i as u32, j))
                .collect::<Vec<_>>()
        })
        .flatten()
        .collect();
    pairs.par_sort_unstable();
    pairs
}

/// [`exact_pairs`], cached in `dir` under a name of the documents' count and threshold.
pub fn exact_pairs_cached(
    vectors: &SparseVectors,
    t: f64,
    tag: &str,
    dir: &Path,
) -> Result<Vec<(u32, u32)>> {
    let path = dir.join(format!("poems-truth-{tag}-{}-{t}.bin", vectors.len()));
    if let Ok(mut f) = std::fs::File::open(&path) {
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        return Ok(buf
            .chunks_exact(8)
            .map(|c| {
                (
                    u32::from_le_bytes(c[..4].try_into().expect("4 bytes")),
                    u32::from_le_bytes(c[4..].try_into().expect("4 bytes")),
                )
            })
            .collect());
    }
    let pairs = exact_pairs(vectors, t);
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension("tmp");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    for &(i, j) in &pairs {
        f.write_all(&i.to_le_bytes())?;
        f.write_all(&j.to_le_bytes())?;
    }
    f.flush()?;
    drop(f);
    std::fs::rename(&tmp, &path)?;
    Ok(pairs)
}

/// The target directory (for caches).
pub fn target_dir() -> PathBuf {
    std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}
