//! `simlsh dedup`: near-duplicate detection: pairs, clusters, deduplicated output.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Parser;
use simlsh::fs::OutputSet;
use simlsh::io::input::Vectors as InputVectors;
use simlsh::verify::{PrefixJoin, SparseVectors, Vectors};

use crate::common::{Ctx, SignerArgs, print_line, read_codes};
use crate::input::{Reread, Signing, prepare, read_input_vectors, read_texts, text_options};
use crate::join::{Clusters, Found, JoinArgs, Mode, cluster_sizes, write_clusters};
use crate::names::Names;
use crate::parquet::Shape;
use crate::sign::{self, InputArgs};
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
    /// Every pair at exact cosine ≥ --cosine (recall 1), found without signatures: by prefix
    /// filtering of the sparse vectors (documents' weighted features, or a sparse matrix),
    /// each candidate verified by the same exact cosine. Cheaper than signatures when the
    /// rows' rare features carry their weight (short documents at high thresholds); the
    /// work is reported in --stats (`examined`, `candidates`). The pairs have no `distance`
    /// column.
    #[arg(
        long,
        requires = "cosine",
        conflicts_with_all = ["memory", "radius", "no_verify", "probes", "signer"]
    )]
    exact: bool,
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
    if a.exact {
        return run_exact(&a, ctx);
    }
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
    let kept = Kept {
        names: &p.names,
        texts: p.texts.as_deref(),
        reread: p.reread.as_ref(),
        empty: &p.empty,
    };
    if let Mode::Hamming { radius } = mode {
        ctx.record("radius", radius);
    }
    let how = format!("f = {bits}, {}; signer {}", outcome.how, p.signer);
    finish(&a, &kept, clusters, set, outcome.pairs, &how, ctx)
}

/// Writes the outputs other than the pairs (staged in `set` with the pairs), records the
/// summary and prints its line, `how` saying how the pairs were found.
fn finish(
    a: &Args,
    kept: &Kept,
    clusters: Clusters,
    mut set: OutputSet,
    pairs: u64,
    how: &str,
    ctx: &mut Ctx,
) -> Result<()> {
    let labels = clusters.labels()?;
    write_outputs(a, kept, &labels, &mut set)?;
    ctx.append_outputs(set)?;
    let n = labels.len();
    let left = (0..n)
        .filter(|&i| labels[i] as usize == i && !(a.drop_empty && is_empty(kept.empty, i)))
        .count();
    let (in_clusters, _) = cluster_sizes(&labels);
    let removed = n - left;
    ctx.record("documents", n);
    ctx.record("empty", kept.empty.len());
    ctx.record("pairs", pairs);
    ctx.record("clusters", in_clusters);
    ctx.record("removed", removed);
    print_line(format_args!(
        "documents {n}  empty {}  pairs {pairs}  clusters {in_clusters}  removed {removed}  ({how})",
        kept.empty.len(),
    ))
}

fn is_empty(empty: &[u32], i: usize) -> bool {
    empty.binary_search(&(i as u32)).is_ok()
}

/// What the outputs other than the pairs are made of.
struct Kept<'a> {
    names: &'a Names,
    /// The documents' texts (text input held).
    texts: Option<&'a [String]>,
    /// Where to read the documents again (text input streamed).
    reread: Option<&'a Reread>,
    /// The rows without features, increasing.
    empty: &'a [u32],
}

/// `dedup --exact`: the rows' sparse vectors (no signatures), every pair at exact cosine ≥ τ
/// by [`PrefixJoin`], then the clusters and outputs as for the other joins.
fn run_exact(a: &Args, ctx: &mut Ctx) -> Result<()> {
    if ctx.bits_given.is_some() {
        bail!("--exact finds pairs without signatures: leave out --bits");
    }
    let t = a.join.cosine.expect("clap requires --cosine with --exact");
    let join = PrefixJoin::builder().threshold(t).build()?;
    let path = &a.input.input;
    if a.input.format.is_none() && read_codes(path, None, "--bits")?.is_some() {
        bail!(
            "--exact needs the input's vectors, and stored signature codes have none: give the vectors or documents themselves"
        );
    }
    let format = sign::format_of(path, a.input.format)?;
    let (v, names, texts) = if format.is_text() {
        let opts = text_options(&a.input);
        let (texts, names) = read_texts(&a.input, format, &opts, a.id_field.as_deref(), ctx)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        // A table fitted on the documents: their features kept from that pass and weighed
        // once it is known, each document tokenised once.
        let mut counted = None;
        let tokenizer = sign::tokenizer_with(&a.input.text, ctx, |counting| {
            let (idf, corpus) = counting.count_corpus(&refs)?;
            counted = Some(corpus);
            Ok(idf)
        })?;
        let v = ctx.phase("vectors", |_| {
            let rows = match counted {
                Some(corpus) => corpus.feature_rows(&tokenizer)?,
                None => tokenizer.feature_rows(&refs),
            };
            Ok(SparseVectors::from_feature_rows(rows)?)
        })?;
        drop(refs);
        (v, names, Some(texts))
    } else {
        let input = read_input_vectors(&a.input, format, a.id_field.as_deref(), ctx)?;
        let m = match input.vectors {
            InputVectors::Sparse(m) => m,
            InputVectors::Dense(_) => bail!(
                "--exact pairs rows by the features they share, and dense vectors share every coordinate: leave out --exact (candidates from signatures)"
            ),
        };
        let v = ctx.phase("vectors", |_| Ok(SparseVectors::from_csr(m.view())?))?;
        let n = v.len();
        (v, Names::rows(n), None)
    };
    let n = v.len();
    ctx.record("rows", n);
    let empty = v.zero_rows();
    let mut clusters = Clusters::new(n, a.join.clustering)?;
    let mut set = OutputSet::new();
    let mut on_pair = |i: u32, j: u32, cosine: f64, rows: Option<&mut Rows>| {
        clusters.add(i, j);
        rows.map_or(Ok(()), |r| r.push(i, j, 0, cosine))
    };
    let report = match &a.pairs {
        Some(out) => {
            let mut result = None;
            set.write(out, |w| {
                let mut rows = Rows::new(out, w, &names, Shape::CosinePairs, true)?;
                let mut err = Ok(());
                let r = ctx.phase("join", |_| {
                    Ok(join.run(&v, |p| {
                        if err.is_ok() {
                            err = on_pair(p.i, p.j, p.cosine, Some(&mut rows));
                        }
                    })?)
                });
                result = Some(r);
                err?;
                rows.finish()
            })?;
            result.expect("the join ran")?
        }
        None => ctx.phase("join", |_| {
            Ok(join.run(&v, |p| {
                let _ = on_pair(p.i, p.j, p.cosine, None);
            })?)
        })?,
    };
    drop(v);
    let kept = Kept {
        names: &names,
        texts: texts.as_deref(),
        reread: None,
        empty: &empty,
    };
    ctx.record("scheme", "prefix");
    ctx.record("indexed", report.indexed);
    ctx.record("examined", report.examined);
    ctx.record("candidates", report.candidates);
    ctx.record("passes", report.passes);
    let how = format!(
        "exact cosine ≥ {t} by prefix filtering, no signatures: {} candidates verified of {} pairs of prefix features examined, recall 1",
        report.candidates, report.examined
    );
    finish(a, &kept, clusters, set, report.pairs, &how, ctx)
}

/// Stages --clusters, --output and --empty in `set`.
fn write_outputs(a: &Args, p: &Kept, labels: &[u32], set: &mut OutputSet) -> Result<()> {
    let h = p.names.header();
    if let Some(path) = &a.clusters {
        set.write(path, |w| write_clusters(path, w, p.names, labels))?;
    }
    if let Some(path) = &a.output {
        // Text input: the kept documents' text; vectors or codes: the kept rows' names.
        let kept = |i: usize| labels[i] as usize == i && !(a.drop_empty && is_empty(p.empty, i));
        match p.reread {
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
                    match p.texts {
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
            for &i in p.empty {
                writeln!(w, "{}", p.names.name(i as usize))?;
            }
            Ok(())
        })?;
    }
    Ok(())
}
