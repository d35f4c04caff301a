//! `simlsh dedup`: near-duplicate detection of text: pairs, clusters, deduplicated output.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Parser;
use simlsh::io::documents::{TextOptions, read_documents};
use simlsh::io::input::InputFormat;
use simlsh::{SignatureMatrix, Signer};

use super::sign::{self, InputArgs};
use crate::common::{Ctx, SignerArgs, print_line, read_codes, write_file};

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
    /// .npz, .svm, .mtx, .fvecs) or signatures (.npy of uint64, or a .simlsh file).
    #[command(flatten)]
    input: InputArgs,
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
    let codes = match a.input.format {
        None => read_codes(&a.input.input, ctx.bits_given, "--bits")?,
        Some(_) => None,
    };
    let input = if let Some(c) = codes {
        let sigs = SignatureMatrix::from_parts(c.sigs.bits(), c.sigs.as_slice().to_vec())?;
        let names = (0..sigs.len()).collect();
        Input {
            sigs,
            names,
            texts: None,
            signer: c.signer.unwrap_or_else(|| "none (codes given)".into()),
        }
    } else if sign::format_of(&a.input.input, a.input.format)?.is_text() {
        let format = sign::format_of(&a.input.input, a.input.format)?;
        read_text(&a, format, ctx)?
    } else {
        let (sigs, signer) = sign::sign_input(&a.input, &a.signer, ctx)?;
        let names = (0..sigs.len()).collect();
        Input {
            sigs,
            names,
            texts: None,
            signer: signer.info().kind.to_string(),
        }
    };
    let Input {
        sigs,
        names,
        texts,
        signer,
    } = input;
    let radius = match (a.radius, a.cosine) {
        (Some(r), _) => r,
        (None, Some(c)) => simlsh::estimate::max_hamming_for_cosine(c, sigs.bits() as u64)? as u32,
        (None, None) => 3,
    };
    let pairs = ctx.phase("join", |ctx| {
        Ok(ctx.spin("joining pairs", || simlsh::join::self_join(&sigs, radius))?)
    })?;
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
        if same_file(p, &a.input.input) {
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
    print_line(format_args!(
        "documents {n}  pairs {}  clusters {in_clusters}  removed {removed}  (f = {bits}, radius {radius}, signer {signer})",
        pairs.len()
    ))?;
    Ok(())
}

fn read_text(a: &Args, format: InputFormat, ctx: &mut Ctx) -> Result<Input> {
    let opts = TextOptions {
        field: a.input.text.field.clone(),
        on_bad: a.input.on_bad(),
    };
    let (docs, bad) = ctx.phase("read", |_| {
        Ok(read_documents(&a.input.input, format, &opts)?)
    })?;
    sign::report_bad(ctx, &bad);
    let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let tokenizer = sign::tokenizer(&a.input.text, &texts, ctx)?;
    let signer = a.signer.build(None, ctx.bits(), ctx.seed)?;
    let sigs = sign::sign_texts(&tokenizer, &signer, &texts, ctx)?;
    Ok(Input {
        sigs,
        names: docs.iter().map(|d| d.line).collect(),
        texts: Some(docs.into_iter().map(|d| d.text).collect()),
        signer: signer.info().kind.to_string(),
    })
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
