//! `simlsh dedup`: near-duplicate detection: pairs, clusters, deduplicated output.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Parser;
use simlsh::fs::OutputSet;

use crate::common::{Ctx, SignerArgs, print_line};
use crate::input::{Prepared, Signing, prepare};
use crate::join::{Clusters, Found, JoinArgs, Mode, cluster_sizes, write_clusters};
use crate::names::Names;
use crate::parquet::Shape;
use crate::sign::InputArgs;
use crate::table::Rows;

const EXAMPLE: &str = "Examples:
  simlsh dedup datasets/healthtweets-10k/healthtweets-10k.csv --radius 3 --pairs pairs.tsv --output unique.txt
  simlsh dedup datasets/healthtweets-10k/healthtweets-10k.csv --cosine 0.8 --bits 256 --pairs pairs.tsv
  simlsh dedup datasets/chinese-poetry-3k/poems.jsonl --mode chars --ngram 2 --cosine 0.9 --bits 256 --id-field id --clusters clusters.tsv

Rows are named by their 0-based record number (column `record`), or by the value of
--id-field (the column takes the field's name). Documents without features (empty,
punctuation or stop words only) and all-zero vectors are never paired: they are counted
apart (`empty` in the summary, listed with --empty), each its own cluster. So are the
all-zero codes of stored codes (the code a simlsh signer gives such rows), unless
--zero-codes.";

/// Finds near-duplicates: signs each document (weighted tokens) or vector (any signer), or
/// takes stored signature codes as they are; finds the pairs within a Hamming radius, or at
/// a cosine threshold (exact: candidates from the signatures, verified by the exact cosine of
/// the input's vectors), groups them into clusters, and writes the deduplicated output (the
/// first member of each cluster kept: its text for documents, its name for vectors and codes).
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// Input: documents (text, one per line; JSON Lines; CSV/TSV, see --field), vectors (.npy,
    /// .npz, .svm, .mtx, .fvecs) or signatures (.npy of uint64, or a .simlsh file).
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    join: JoinArgs,
    /// Documents: name rows by this JSON field or CSV column (unique values) instead of record
    /// numbers.
    #[arg(long)]
    id_field: Option<String>,
    /// Write the pairs (TSV: a, b, Hamming distance, cosine: exact when verified, else
    /// `estimated_cosine`; Parquet when the name ends in .parquet).
    #[arg(long)]
    pairs: Option<PathBuf>,
    /// Write each row's cluster (TSV or .parquet: row, cluster = the row naming it: its
    /// smallest member, or its leader).
    #[arg(long)]
    clusters: Option<PathBuf>,
    /// Write the deduplicated output, one line per kept row: the document's text (text
    /// input), else the row's name.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Write the rows without features (empty documents, all-zero vectors), one name per line.
    #[arg(long)]
    empty: Option<PathBuf>,
    /// Leave the rows without features out of --output.
    #[arg(long)]
    drop_empty: bool,
    /// Memory budget (bytes, or with a suffix: 512M, 2G), split by the library between the
    /// run's parts (the row names, IDF table and clusters; the signatures, whose width is
    /// planned within their share; the band entries the join sorts at once; the candidate
    /// pairs, spilled to a temporary file in the system's temporary directory beyond their
    /// share; the vectors of the candidate rows). Documents (text input) are streamed instead
    /// of held: read again to verify the candidate pairs and to write --output. The pairs are
    /// those found without a budget. An error naming what does not fit.
    #[arg(long, value_parser = crate::common::parse_bytes)]
    memory: Option<u64>,
    #[command(flatten)]
    signer: SignerArgs,
}

pub fn run(mut a: Args, ctx: &mut Ctx) -> Result<()> {
    let _spool = a.input.spool_stdin()?;
    let outputs: Vec<&Path> = [&a.pairs, &a.clusters, &a.output, &a.empty]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    a.input.check_paths(ctx, &outputs)?;
    let signing = Signing {
        memory: a.memory,
        ..a.join.signing()
    };
    let mut p = prepare(&a.input, &a.signer, signing, a.id_field.as_deref(), ctx)?;
    let mode = a.join.mode(&p, Some(3))?;
    let n = p.len();
    let bits = p.sigs.bits();
    let mut clusters = Clusters::new(n, a.join.clustering)?;
    let mut set = OutputSet::new();
    let outcome = match &a.pairs {
        Some(path) => {
            let exact = matches!(mode, Mode::Verified { .. });
            let mut result = None;
            // The names apart from `p`, which the join may change (dropping the signatures).
            let names = std::mem::replace(&mut p.names, Names::rows(0));
            set.write(path, |w| {
                let mut rows = Rows::new(path, w, &names, Shape::Pairs, exact)?;
                let mut err = Ok(());
                let r = crate::join::run(&mut p, &mode, ctx, |f: Found| {
                    clusters.add(f.i, f.j);
                    if err.is_ok() {
                        err = rows.push(f.i, f.j, f.distance, f.cosine);
                    }
                });
                result = Some(r);
                err?;
                rows.finish()
            })?;
            p.names = names;
            result.expect("the join ran")?
        }
        None => crate::join::run(&mut p, &mode, ctx, |f| clusters.add(f.i, f.j))?,
    };
    let labels = clusters.labels()?;
    write_outputs(&a, &p, &labels, &mut set)?;
    ctx.append_outputs(set)?;

    let kept = (0..n)
        .filter(|&i| labels[i] as usize == i && !(a.drop_empty && is_empty(&p, i)))
        .count();
    let (in_clusters, _) = cluster_sizes(&labels);
    let removed = n - kept;
    ctx.record("documents", n);
    ctx.record("empty", p.empty.len());
    ctx.record("pairs", outcome.pairs);
    ctx.record("clusters", in_clusters);
    ctx.record("removed", removed);
    if let Mode::Hamming { radius } = mode {
        ctx.record("radius", radius);
    }
    print_line(format_args!(
        "documents {n}  empty {}  pairs {}  clusters {in_clusters}  removed {removed}  (f = {}, {}; signer {})",
        p.empty.len(),
        outcome.pairs,
        bits,
        outcome.how,
        p.signer
    ))
}

fn is_empty(p: &Prepared, i: usize) -> bool {
    p.empty.binary_search(&(i as u32)).is_ok()
}

/// Stages --clusters, --output and --empty in `set`.
fn write_outputs(a: &Args, p: &Prepared, labels: &[u32], set: &mut OutputSet) -> Result<()> {
    let h = p.names.header();
    if let Some(path) = &a.clusters {
        set.write(path, |w| write_clusters(path, w, &p.names, labels))?;
    }
    if let Some(path) = &a.output {
        // Text input: the kept documents' text; vectors or codes: the kept rows' names.
        let kept = |i: usize| labels[i] as usize == i && !(a.drop_empty && is_empty(p, i));
        match &p.reread {
            // Streamed documents: their texts from a pass over the input.
            Some(reread) => set.write(path, |w| {
                reread
                    .for_each_chunk(|first, docs| {
                        for (k, d) in docs.iter().enumerate() {
                            if kept(first + k) {
                                writeln!(w, "{}", d.text.replace('\n', " "))?;
                            }
                        }
                        Ok(())
                    })
                    .map_err(std::io::Error::other)
            })?,
            None => set.write(path, |w| {
                for i in (0..labels.len()).filter(|&i| kept(i)) {
                    match &p.texts {
                        Some(t) => writeln!(w, "{}", t[i].replace('\n', " "))?,
                        None => writeln!(w, "{}", p.names.name(i))?,
                    }
                }
                Ok(())
            })?,
        }
    }
    if let Some(path) = &a.empty {
        set.write(path, |w| {
            writeln!(w, "{h}")?;
            for &i in &p.empty {
                writeln!(w, "{}", p.names.name(i as usize))?;
            }
            Ok(())
        })?;
    }
    Ok(())
}
