//! `simlsh dedup`: near-duplicate detection of text: pairs, clusters, deduplicated output.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Parser, ValueEnum};
use simlsh::Signer;
use simlsh::io::documents::{TextOptions, read_documents};
use simlsh::io::input::InputFormat;
use simlsh::io::lines::OnBadLine;
use simlsh::text::{Idf, Mode, Tokenizer};

use crate::common::{Ctx, SignerArgs, write_file};

const EXAMPLE: &str = "Examples:
  simlsh dedup datasets/healthtweets-10k/healthtweets-10k.csv --radius 3 --pairs pairs.tsv --output unique.txt
  simlsh dedup datasets/chinese-poetry-3k/poems.jsonl --mode cjk --cosine 0.95 --clusters clusters.tsv";

/// Finds near-duplicate documents: signs each document (weighted tokens, hashing trick),
/// joins all pairs within a Hamming radius, groups them into clusters, and writes the
/// deduplicated documents (the first member of each cluster kept).
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// Input documents: text (one per line), JSON Lines or CSV/TSV (see --field).
    input: PathBuf,
    /// Input format (default: from the extension).
    #[arg(long)]
    format: Option<InputFormat>,
    /// JSON field or CSV column holding the text.
    #[arg(long, default_value = "text")]
    field: String,
    /// Tokenizer: words (UAX #29), cjk (jieba), auto (jieba for Han runs), chars.
    #[arg(long, default_value = "auto")]
    mode: Mode,
    /// Shingles of n units (words or characters).
    #[arg(long, default_value_t = 1)]
    ngram: usize,
    /// Feature weights.
    #[arg(long, value_enum, default_value = "tfidf")]
    weighting: WeightingArg,
    /// Keep only the K heaviest features of each document (the keyword step).
    #[arg(long)]
    top_k: Option<usize>,
    /// Hamming radius of a near-duplicate pair (inclusive).
    #[arg(long, conflicts_with = "cosine")]
    radius: Option<u32>,
    /// Or: the cosine threshold, turned into the radius whose estimated cosine is ≥ it.
    #[arg(long)]
    cosine: Option<f64>,
    /// Write the pairs (TSV: line, line, distance, estimated cosine).
    #[arg(long)]
    pairs: Option<PathBuf>,
    /// Write each document's cluster (TSV: line, cluster = line of its first member).
    #[arg(long)]
    clusters: Option<PathBuf>,
    /// Write the deduplicated documents' text, one per line.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Skip malformed lines (counted and reported) instead of failing.
    #[arg(long)]
    skip_bad: bool,
    #[command(flatten)]
    signer: SignerArgs,
}

/// Feature weights.
#[derive(ValueEnum, Clone, Copy, Debug)]
enum WeightingArg {
    Binary,
    Tf,
    Tfidf,
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    let format = match a.format {
        Some(f) => f,
        None => InputFormat::from_path(&a.input)?,
    };
    let opts = TextOptions {
        field: a.field.clone(),
        on_bad: if a.skip_bad {
            OnBadLine::Skip
        } else {
            OnBadLine::Fail
        },
    };
    let (docs, bad) = ctx.phase("read", |_| Ok(read_documents(&a.input, format, &opts)?))?;
    if bad.count > 0 {
        ctx.say(format!(
            "skipped {} malformed lines; first: {}",
            bad.count, bad.first[0]
        ));
    }
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let mut b = Tokenizer::builder()
        .mode(a.mode)
        .ngram(a.ngram)
        .top_k(a.top_k);
    b = match a.weighting {
        WeightingArg::Binary => b.weighting(simlsh::text::Weighting::Binary),
        WeightingArg::Tf => b.weighting(simlsh::text::Weighting::Tf),
        WeightingArg::Tfidf => {
            let plain = b.clone().build()?;
            let idf = ctx.phase("idf", |_| Ok(Idf::fit(&plain, texts.iter())))?;
            b.idf(idf)
        }
    };
    let tokenizer = b.build()?;
    let signer = a.signer.build(a.signer.signer, None, ctx.bits, ctx.seed)?;
    let sigs = ctx.phase("sign", |ctx| {
        // In chunks, for the progress bar; rows are signed independently, so the result is
        // the same as one call.
        let pb = ctx.progress(texts.len() as u64, "signing");
        let mut sigs = simlsh::SignatureMatrix::new(signer.bits())?;
        for chunk in texts.chunks(20_000) {
            let part = tokenizer.sign_corpus(&signer, chunk)?;
            for row in part.rows() {
                sigs.push_words(part.bits(), row)?;
            }
            pb.inc(chunk.len() as u64);
        }
        pb.finish_and_clear();
        Ok(sigs)
    })?;
    let radius = match (a.radius, a.cosine) {
        (Some(r), _) => r,
        (None, Some(c)) => simlsh::estimate::max_hamming_for_cosine(c, ctx.bits as u64)? as u32,
        (None, None) => 3,
    };
    let pairs = ctx.phase("join", |_| Ok(simlsh::join::self_join(&sigs, radius)?))?;
    let labels = simlsh::join::clusters(docs.len(), &pairs)?;
    let bits = signer.bits() as u64;
    if let Some(p) = &a.pairs {
        write_file(p, |w| {
            writeln!(w, "line_a\tline_b\tdistance\tcosine")?;
            for pr in &pairs {
                let c = simlsh::estimate::cosine(pr.distance as u64, bits);
                writeln!(
                    w,
                    "{}\t{}\t{}\t{c:.4}",
                    docs[pr.i as usize].line, docs[pr.j as usize].line, pr.distance
                )?;
            }
            Ok(())
        })?;
    }
    if let Some(p) = &a.clusters {
        write_file(p, |w| {
            writeln!(w, "line\tcluster")?;
            for (d, &l) in docs.iter().zip(&labels) {
                writeln!(w, "{}\t{}", d.line, docs[l as usize].line)?;
            }
            Ok(())
        })?;
    }
    let keep: Vec<usize> = (0..docs.len())
        .filter(|&i| labels[i] as usize == i)
        .collect();
    if let Some(p) = &a.output {
        if same_file(p, &a.input) {
            bail!("--output {} would overwrite the input", p.display());
        }
        write_file(p, |w| {
            for &i in &keep {
                writeln!(w, "{}", docs[i].text.replace('\n', " "))?;
            }
            Ok(())
        })?;
    }
    let in_clusters = {
        let mut sizes = std::collections::BTreeMap::<u32, usize>::new();
        labels
            .iter()
            .for_each(|&l| *sizes.entry(l).or_default() += 1);
        sizes.values().filter(|&&s| s > 1).count()
    };
    let removed = docs.len() - keep.len();
    ctx.record("documents", docs.len());
    ctx.record("pairs", pairs.len());
    ctx.record("clusters", in_clusters);
    ctx.record("removed", removed);
    ctx.record("radius", radius);
    println!(
        "documents {}  pairs {}  clusters {}  removed {}  (f = {}, radius {}, signer {})",
        docs.len(),
        pairs.len(),
        in_clusters,
        removed,
        bits,
        radius,
        signer.info().kind
    );
    Ok(())
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
