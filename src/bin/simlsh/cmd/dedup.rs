//! `simlsh dedup`: near-duplicate detection of text: pairs, clusters, deduplicated output.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Parser;
use simlsh::io::documents::{TextOptions, read_documents};
use simlsh::io::input::{InputFormat, VectorOptions, read_vectors};
use simlsh::io::lines::OnBadLine;
use simlsh::io::npy::read_signatures_npy;
use simlsh::{SignatureMatrix, Signer};

use super::sign::{self, TextArgs};
use crate::common::{Ctx, SignerArgs, write_file};

const EXAMPLE: &str = "Examples:
  simlsh dedup datasets/healthtweets-10k/healthtweets-10k.csv --radius 3 --pairs pairs.tsv --output unique.txt
  simlsh dedup datasets/chinese-poetry-3k/poems.jsonl --mode cjk --cosine 0.95 --clusters clusters.tsv";

/// Finds near-duplicates: signs each document (weighted tokens, hashing trick) or vector (any
/// signer), or takes a `.npy` of `uint64` codes as they are; joins all pairs within a Hamming
/// radius, groups them into clusters, and writes the deduplicated output (the first member of
/// each cluster kept: its text for documents, its row number for vectors and codes).
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// Input: documents (text, one per line; JSON Lines; CSV/TSV, see --field), vectors (.npy,
    /// .npz, .svm, .mtx, .fvecs) or signatures (.npy of uint64).
    input: PathBuf,
    /// Input format (default: from the extension).
    #[arg(long)]
    format: Option<InputFormat>,
    #[command(flatten)]
    text: TextArgs,
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

/// What was read: signatures, each row's name in the outputs (its line, or its row number),
/// and the texts of text input (for the deduplicated output).
struct Input {
    sigs: SignatureMatrix,
    names: Vec<usize>,
    texts: Option<Vec<String>>,
    signer: String,
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    let format = match a.format {
        Some(f) => f,
        None => InputFormat::from_path(&a.input)?,
    };
    let on_bad = if a.skip_bad {
        OnBadLine::Skip
    } else {
        OnBadLine::Fail
    };
    let input = if format.is_text() {
        read_text(&a, format, on_bad, ctx)?
    } else {
        read_vectors_or_codes(&a, format, on_bad, ctx)?
    };
    let Input {
        sigs,
        names,
        texts,
        signer,
    } = input;
    let radius = match (a.radius, a.cosine) {
        (Some(r), _) => r,
        (None, Some(c)) => simlsh::estimate::max_hamming_for_cosine(c, ctx.bits as u64)? as u32,
        (None, None) => 3,
    };
    let pairs = ctx.phase("join", |_| Ok(simlsh::join::self_join(&sigs, radius)?))?;
    let n = sigs.len();
    let labels = simlsh::join::clusters(n, &pairs)?;
    let bits = sigs.bits() as u64;
    let unit = if texts.is_some() { "line" } else { "row" };
    if let Some(p) = &a.pairs {
        write_file(p, |w| {
            writeln!(w, "{unit}_a\t{unit}_b\tdistance\tcosine")?;
            for pr in &pairs {
                let c = simlsh::estimate::cosine(pr.distance as u64, bits);
                let (x, y) = (names[pr.i as usize], names[pr.j as usize]);
                writeln!(w, "{x}\t{y}\t{}\t{c:.4}", pr.distance)?;
            }
            Ok(())
        })?;
    }
    if let Some(p) = &a.clusters {
        write_file(p, |w| {
            writeln!(w, "{unit}\tcluster")?;
            for (&name, &l) in names.iter().zip(&labels) {
                writeln!(w, "{name}\t{}", names[l as usize])?;
            }
            Ok(())
        })?;
    }
    let keep: Vec<usize> = (0..n).filter(|&i| labels[i] as usize == i).collect();
    if let Some(p) = &a.output {
        if same_file(p, &a.input) {
            bail!("--output {} would overwrite the input", p.display());
        }
        // Text input: the kept documents' text; vectors or codes: the kept rows' numbers.
        write_file(p, |w| {
            for &i in &keep {
                match &texts {
                    Some(t) => writeln!(w, "{}", t[i].replace('\n', " "))?,
                    None => writeln!(w, "{}", names[i])?,
                }
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
    let removed = n - keep.len();
    ctx.record("documents", n);
    ctx.record("pairs", pairs.len());
    ctx.record("clusters", in_clusters);
    ctx.record("removed", removed);
    ctx.record("radius", radius);
    println!(
        "documents {n}  pairs {}  clusters {in_clusters}  removed {removed}  (f = {bits}, radius {radius}, signer {signer})",
        pairs.len()
    );
    Ok(())
}

fn read_text(a: &Args, format: InputFormat, on_bad: OnBadLine, ctx: &mut Ctx) -> Result<Input> {
    let opts = TextOptions {
        field: a.text.field.clone(),
        on_bad,
    };
    let (docs, bad) = ctx.phase("read", |_| Ok(read_documents(&a.input, format, &opts)?))?;
    if bad.count > 0 {
        ctx.say(format!(
            "skipped {} malformed lines; first: {}",
            bad.count, bad.first[0]
        ));
    }
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let tokenizer = sign::tokenizer(&a.text, &texts, ctx)?;
    let signer = a.signer.build(a.signer.signer, None, ctx.bits, ctx.seed)?;
    let sigs = sign::sign_texts(&tokenizer, &signer, &texts, ctx)?;
    Ok(Input {
        sigs,
        names: docs.iter().map(|d| d.line).collect(),
        texts: Some(docs.into_iter().map(|d| d.text).collect()),
        signer: signer.info().kind.to_string(),
    })
}

/// Vectors (signed with the chosen signer) or a `.npy` of `uint64` codes (used as they are).
fn read_vectors_or_codes(
    a: &Args,
    format: InputFormat,
    on_bad: OnBadLine,
    ctx: &mut Ctx,
) -> Result<Input> {
    if format == InputFormat::Npy {
        if let Ok(codes) = read_signatures_npy(&a.input, None) {
            let sigs = SignatureMatrix::from_parts(codes.bits(), codes.as_slice().to_vec())?;
            let names = (0..sigs.len()).collect();
            return Ok(Input {
                sigs,
                names,
                texts: None,
                signer: "none (codes given)".into(),
            });
        }
    }
    let opts = VectorOptions {
        on_bad,
        ..VectorOptions::default()
    };
    let v = ctx.phase("read", |_| Ok(read_vectors(&a.input, format, &opts)?))?;
    if v.bad.count > 0 {
        ctx.say(format!(
            "skipped {} malformed lines; first: {}",
            v.bad.count, v.bad.first[0]
        ));
    }
    let signer = a.signer.build(
        a.signer.signer,
        Some(v.vectors.cols() as u64),
        ctx.bits,
        ctx.seed,
    )?;
    let sigs = ctx.phase("sign", |_| Ok(v.vectors.sign(&signer)?))?;
    let names = match &v.lines {
        Some(lines) => lines.clone(),
        None => (0..sigs.len()).collect(),
    };
    Ok(Input {
        sigs,
        names,
        texts: None,
        signer: signer.info().kind.to_string(),
    })
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
