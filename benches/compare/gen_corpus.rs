//! A generated corpus with planted near-duplicate clusters and its exact truth, for the
//! 10-million-document run of the comparison (`benches/compare/scale.py corpus`).
//!
//! ```text
//! cargo run --release --example compare_corpus -- OUT_DIR [--docs 10000000] [--seed 1]
//!     [--vocab 1048576] [--clustered 0.1] [--threads T]
//! ```
//!
//! Writes `OUT_DIR/corpus.txt` (one document per line: lower-case words of letters `a`–`z`
//! separated by single spaces, so that `simlsh dedup --mode words` reads exactly the
//! generated words), `OUT_DIR/planted.u32` (every pair `i < j` of two documents of one
//! planted cluster, little-endian `u32` pairs), `OUT_DIR/planted.cos.f64` (their exact TF-IDF
//! cosines, the command line's weights: raw count × `ln((1 + N) / (1 + df)) + 1`) and
//! `OUT_DIR/corpus.json` (parameters and counts).
//!
//! Every document has 20–60 words drawn from a Zipf(1) law over the vocabulary. A fraction
//! `--clustered` of the documents (placed at random positions) fall into clusters of 2–8
//! members: each member is the cluster's base document with 0–4 random edits (a word
//! replaced, deleted or inserted), so pairs of a cluster have cosines around 0.7–1. Every
//! document is a pure function of the seed and its cluster or position (seeded Xoshiro256++
//! streams), so the output is the same for every thread count.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use simlsh::rng::{Rng, hash_u64, ln};

struct Args {
    out: PathBuf,
    docs: usize,
    seed: u64,
    vocab: usize,
    clustered: f64,
    threads: Option<usize>,
}

fn args() -> Result<Args> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        out: PathBuf::new(),
        docs: 10_000_000,
        seed: 1,
        vocab: 1 << 20,
        clustered: 0.1,
        threads: None,
    };
    let mut out = None;
    while let Some(k) = it.next() {
        let mut val = || it.next().with_context(|| format!("{k} needs a value"));
        match k.as_str() {
            "--docs" => a.docs = val()?.parse()?,
            "--seed" => a.seed = val()?.parse()?,
            "--vocab" => a.vocab = val()?.parse()?,
            "--clustered" => a.clustered = val()?.parse()?,
            "--threads" => a.threads = Some(val()?.parse()?),
            s if s.starts_with("--") => bail!("unknown option {s}"),
            s => out = Some(PathBuf::from(s)),
        }
    }
    a.out = out.context(
        "usage: compare_corpus OUT_DIR [--docs N] [--seed S] [--vocab V] [--clustered F]",
    )?;
    if a.docs == 0
        || a.docs > u32::MAX as usize
        || a.vocab < 2
        || !(0.0..=1.0).contains(&a.clustered)
    {
        bail!("need 0 < docs < 2^32, vocab >= 2, 0 <= clustered <= 1");
    }
    Ok(a)
}

/// Zipf(1) over `0..v` by inversion: the cumulative weights, and a table of 2^16 starting
/// points for the binary search.
struct Zipf {
    cdf: Vec<f64>,
    start: Vec<u32>,
}

impl Zipf {
    const CELLS: usize = 1 << 16;

    fn new(v: usize) -> Self {
        let mut cdf = Vec::with_capacity(v);
        let mut s = 0.0;
        for k in 0..v {
            s += 1.0 / (k + 1) as f64;
            cdf.push(s);
        }
        for c in &mut cdf {
            *c /= s;
        }
        let start = (0..Self::CELLS)
            .map(|c| cdf.partition_point(|&x| x < c as f64 / Self::CELLS as f64) as u32)
            .collect();
        Zipf { cdf, start }
    }

    fn draw(&self, rng: &mut Rng) -> u32 {
        let u = rng.uniform();
        let c = ((u * Self::CELLS as f64) as usize).min(Self::CELLS - 1);
        let lo = self.start[c] as usize;
        let hi = if c + 1 < Self::CELLS {
            (self.start[c + 1] as usize + 1).min(self.cdf.len())
        } else {
            self.cdf.len()
        };
        (lo + self.cdf[lo..hi].partition_point(|&x| x < u)).min(self.cdf.len() - 1) as u32
    }
}

/// Where each position's document comes from: its own stream, or member `m` of cluster `c`.
#[derive(Clone, Copy)]
enum Origin {
    Single,
    Member { cluster: u32, member: u8 },
}

const STREAM_SINGLE: u64 = 1;
const STREAM_BASE: u64 = 2;
const STREAM_EDIT: u64 = 3;
const STREAM_LAYOUT: u64 = 4;

fn stream(seed: u64, kind: u64, id: u64) -> Rng {
    Rng::new(hash_u64(hash_u64(id, kind), seed))
}

fn random_doc(zipf: &Zipf, rng: &mut Rng, out: &mut Vec<u32>) {
    out.clear();
    let len = 20 + rng.below(41) as usize;
    out.extend((0..len).map(|_| zipf.draw(rng)));
}

/// The words of the document at a position.
fn document(seed: u64, zipf: &Zipf, origin: Origin, pos: usize, out: &mut Vec<u32>) {
    match origin {
        Origin::Single => random_doc(zipf, &mut stream(seed, STREAM_SINGLE, pos as u64), out),
        Origin::Member { cluster, member } => {
            random_doc(zipf, &mut stream(seed, STREAM_BASE, cluster as u64), out);
            let mut rng = stream(seed, STREAM_EDIT, ((cluster as u64) << 8) | member as u64);
            for _ in 0..rng.below(5) {
                let at = rng.below(out.len() as u64) as usize;
                match rng.below(3) {
                    0 => out[at] = zipf.draw(&mut rng),
                    1 if out.len() > 1 => {
                        out.remove(at);
                    }
                    _ => out.insert(at, zipf.draw(&mut rng)),
                }
            }
        }
    }
}

/// Word `w` as letters: bijective base 26, so that distinct ids give distinct words.
fn push_word(mut w: u64, line: &mut Vec<u8>) {
    let at = line.len();
    w += 1;
    while w > 0 {
        w -= 1;
        line.push(b'a' + (w % 26) as u8);
        w /= 26;
    }
    line[at..].reverse();
}

/// Sorted (word, count) of a document.
fn counts(words: &[u32]) -> Vec<(u32, u32)> {
    let mut w = words.to_vec();
    w.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for x in w {
        match out.last_mut() {
            Some((y, c)) if *y == x => *c += 1,
            _ => out.push((x, 1)),
        }
    }
    out
}

fn cosine(a: &[(u32, u32)], b: &[(u32, u32)], idf: &[f64]) -> f64 {
    let norm = |v: &[(u32, u32)]| {
        v.iter()
            .map(|&(w, c)| (c as f64 * idf[w as usize]).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let (mut i, mut j, mut dot) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                let x = idf[a[i].0 as usize];
                dot += a[i].1 as f64 * x * b[j].1 as f64 * x;
                i += 1;
                j += 1;
            }
        }
    }
    dot / (norm(a) * norm(b))
}

fn main() -> Result<()> {
    let a = args()?;
    if let Some(t) = a.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()?;
    }
    std::fs::create_dir_all(&a.out)?;
    let t0 = std::time::Instant::now();
    let n = a.docs;
    let zipf = Zipf::new(a.vocab);

    // Layout: a seeded shuffle of the positions; its first `clustered · n` entries are cut
    // into clusters of 2-8 members.
    let mut rng = stream(a.seed, STREAM_LAYOUT, 0);
    let mut perm: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        perm.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut origin = vec![Origin::Single; n];
    let mut clusters: Vec<Vec<u32>> = Vec::new();
    let target = (a.clustered * n as f64) as usize;
    let mut at = 0;
    while at + 2 <= target {
        let size = (2 + rng.below(7) as usize).min(target - at);
        let mut members: Vec<u32> = perm[at..at + size].to_vec();
        members.sort_unstable();
        for (m, &p) in members.iter().enumerate() {
            origin[p as usize] = Origin::Member {
                cluster: clusters.len() as u32,
                member: m as u8,
            };
        }
        clusters.push(members);
        at += size;
    }
    drop(perm);

    // The text, in blocks generated in parallel and written in order; document frequencies
    // counted on the way.
    let path = a.out.join("corpus.txt");
    let mut w = BufWriter::with_capacity(
        1 << 22,
        File::create(&path).with_context(|| path.display().to_string())?,
    );
    let mut df = vec![0u32; a.vocab];
    let mut words_total = 0u64;
    const BLOCK: usize = 1 << 16;
    const GROUP: usize = 16;
    for group in (0..n).step_by(BLOCK * GROUP) {
        let blocks: Vec<(Vec<u8>, Vec<u32>, u64)> = (group..(group + BLOCK * GROUP).min(n))
            .step_by(BLOCK)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|b0| {
                let mut text = Vec::with_capacity(BLOCK * 200);
                let mut distinct = Vec::new();
                let mut words = Vec::new();
                let mut total = 0u64;
                let end = (b0 + BLOCK).min(n);
                for (pos, &o) in origin.iter().enumerate().take(end).skip(b0) {
                    document(a.seed, &zipf, o, pos, &mut words);
                    total += words.len() as u64;
                    for (k, &x) in words.iter().enumerate() {
                        if k > 0 {
                            text.push(b' ');
                        }
                        push_word(x as u64, &mut text);
                    }
                    text.push(b'\n');
                    words.sort_unstable();
                    words.dedup();
                    distinct.extend_from_slice(&words);
                }
                (text, distinct, total)
            })
            .collect();
        for (text, distinct, total) in blocks {
            w.write_all(&text)?;
            for x in distinct {
                df[x as usize] += 1;
            }
            words_total += total;
        }
    }
    w.flush()?;
    let t_text = t0.elapsed().as_secs_f64();

    // The truth: every pair of a cluster with its exact TF-IDF cosine.
    let idf: Vec<f64> = df
        .iter()
        .map(|&d| ln((1.0 + n as f64) / (1.0 + d as f64)) + 1.0)
        .collect();
    let pairs: Vec<(u32, u32, f64)> = clusters
        .par_iter()
        .enumerate()
        .flat_map_iter(|(c, members)| {
            let mut words = Vec::new();
            let docs: Vec<Vec<(u32, u32)>> = members
                .iter()
                .map(|&p| {
                    document(a.seed, &zipf, origin[p as usize], p as usize, &mut words);
                    debug_assert!(matches!(origin[p as usize], Origin::Member { cluster, .. } if cluster as usize == c));
                    counts(&words)
                })
                .collect();
            let mut out = Vec::new();
            for x in 0..members.len() {
                for y in x + 1..members.len() {
                    out.push((members[x], members[y], cosine(&docs[x], &docs[y], &idf)));
                }
            }
            out
        })
        .collect();
    let mut pw = BufWriter::new(File::create(a.out.join("planted.u32"))?);
    let mut cw = BufWriter::new(File::create(a.out.join("planted.cos.f64"))?);
    for &(i, j, c) in &pairs {
        pw.write_all(&i.to_le_bytes())?;
        pw.write_all(&j.to_le_bytes())?;
        cw.write_all(&c.to_le_bytes())?;
    }
    pw.flush()?;
    cw.flush()?;
    let summary = serde_json::json!({
        "docs": n,
        "seed": a.seed,
        "vocab": a.vocab,
        "clustered_fraction": a.clustered,
        "clusters": clusters.len(),
        "clustered_docs": clusters.iter().map(Vec::len).sum::<usize>(),
        "words": words_total,
        "planted_pairs": pairs.len(),
        "bytes": std::fs::metadata(&path)?.len(),
        "seconds_text": t_text,
        "seconds_total": t0.elapsed().as_secs_f64(),
    });
    std::fs::write(
        a.out.join("corpus.json"),
        serde_json::to_string_pretty(&summary)?,
    )?;
    println!("{summary}");
    Ok(())
}
