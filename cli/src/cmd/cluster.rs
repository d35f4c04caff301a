//! `simlsh cluster`: clusters of the pairs within a Hamming radius or above a cosine threshold.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;

use crate::common::{Ctx, SignerArgs, print_line, to_stdout};
use crate::input::prepare;
use crate::join::{Clusters, JoinArgs, cluster_sizes, write_clusters};
use crate::sign::InputArgs;

const EXAMPLE: &str = "Examples:
  simlsh cluster datasets/glove-6B-50d-10k/vectors.fvecs --signer super-bit --bits 256 --cosine 0.8 --clustering leader --out clusters.tsv
  simlsh cluster glove.npy --bits 128 --radius 10

With --cosine and the input's vectors at hand, pairs are exact (candidates from the
signatures, verified by exact cosine). Connected components chain (A≈B, B≈C put A, B and C
together even when A≉C); --clustering leader or star gives clusters whose every member is
within the threshold of its leader. Rows without a direction (all-zero vectors, empty
documents, and all-zero stored codes unless --zero-codes) are never paired: each is its own
cluster.";

/// Clusters the points: every pair within the Hamming radius or above the cosine threshold is
/// an edge; clusters are the connected components, or leader clusters (non-chaining). Writes
/// TSV `record, cluster` (cluster = the row naming it: its smallest member, or its leader) and
/// a summary line. INPUT as for `simlsh knn`.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    join: JoinArgs,
    /// Documents: name rows by this JSON field or CSV column instead of record numbers.
    #[arg(long)]
    id_field: Option<String>,
    /// Write the clusters here, TSV or .parquet (default: standard output; the summary then
    /// goes to stderr).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    signer: SignerArgs,
}

pub fn run(mut a: Args, ctx: &mut Ctx) -> Result<()> {
    let _spool = a.input.spool_stdin()?;
    let outputs: Vec<&std::path::Path> = a.out.iter().map(PathBuf::as_path).collect();
    a.input.check_paths(ctx, &outputs)?;
    let mut p = prepare(
        &a.input,
        &a.signer,
        a.join.signing(),
        a.id_field.as_deref(),
        ctx,
    )?;
    let mode = a.join.mode(&p, None)?;
    let mut clusters = Clusters::new(p.len(), a.join.clustering)?;
    let outcome = crate::join::run(&mut p, &mode, ctx, |f| clusters.add(f.i, f.j))?;
    let labels = clusters.labels()?;
    let (multi, largest) = cluster_sizes(&labels);
    let target = a.out.clone().unwrap_or_default();
    let body = |w: &mut dyn Write| write_clusters(&target, w, &p.names, &labels);
    let summary = format!(
        "points {}  empty {}  pairs {}  clusters {}  largest {}  (f = {}, {})",
        p.len(),
        p.empty.len(),
        outcome.pairs,
        multi,
        largest,
        p.sigs.bits(),
        outcome.how
    );
    match &a.out {
        Some(path) => {
            ctx.write_file(path, body)?;
            print_line(summary)?;
        }
        None => {
            to_stdout(body)?;
            ctx.say(summary);
        }
    }
    ctx.record("points", p.len());
    ctx.record("empty", p.empty.len());
    ctx.record("pairs", outcome.pairs);
    ctx.record("clusters", multi);
    ctx.record("largest", largest);
    Ok(())
}
