//! `simlsh cluster`: connected components of the pairs within a Hamming radius.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;
use simlsh::estimate;
use simlsh::join::{clusters, self_join};

use super::sign::{InputArgs, codes_or_sign};
use crate::common::{Ctx, SignerArgs, print_line, to_stdout, write_file};

const EXAMPLE: &str = "Examples:
  simlsh cluster datasets/glove-6B-50d-10k/vectors.fvecs --signer gaussian --bits 128 --cosine 0.9 --out clusters.tsv
  simlsh cluster glove.npy --bits 128 --radius 10";

/// Clusters the points: every pair of signatures within the Hamming radius is joined, and the
/// connected components are the clusters. Writes TSV `row, cluster` (cluster = its smallest
/// row) and a summary line. INPUT as for `simlsh knn`.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// Hamming radius of a pair (inclusive).
    #[arg(long, conflicts_with = "cosine", required_unless_present = "cosine")]
    radius: Option<u32>,
    /// Or: the cosine threshold, turned into the largest radius whose estimated cosine is ≥ it.
    #[arg(long)]
    cosine: Option<f64>,
    /// Write the clusters here (default: standard output; the summary then goes to stderr).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    signer: SignerArgs,
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    let (sigs, _) = codes_or_sign(&a.input, &a.signer, ctx)?;
    let bits = sigs.bits() as u64;
    let radius = match (a.radius, a.cosine) {
        (Some(r), _) => r,
        (None, Some(c)) => estimate::max_hamming_for_cosine(c, bits)? as u32,
        (None, None) => anyhow::bail!("give --radius or --cosine"),
    };
    let pairs = ctx.phase("join", |ctx| {
        Ok(ctx.spin("joining pairs", || self_join(&sigs, radius))?)
    })?;
    let labels = clusters(sigs.len(), &pairs)?;
    let mut sizes = BTreeMap::<u32, usize>::new();
    labels
        .iter()
        .for_each(|&l| *sizes.entry(l).or_default() += 1);
    let multi = sizes.values().filter(|&&s| s > 1).count();
    let largest = sizes.values().copied().max().unwrap_or(0);
    let body = |w: &mut dyn Write| -> std::io::Result<()> {
        writeln!(w, "row\tcluster")?;
        for (i, l) in labels.iter().enumerate() {
            writeln!(w, "{i}\t{l}")?;
        }
        Ok(())
    };
    let summary = format!(
        "points {}  pairs {}  clusters {}  largest {}  (f = {}, radius {})",
        sigs.len(),
        pairs.len(),
        multi,
        largest,
        bits,
        radius
    );
    match &a.out {
        Some(p) => {
            write_file(p, body)?;
            print_line(summary)?;
        }
        None => {
            to_stdout(body)?;
            ctx.say(summary);
        }
    }
    ctx.record("points", sigs.len());
    ctx.record("pairs", pairs.len());
    ctx.record("clusters", multi);
    ctx.record("largest", largest);
    ctx.record("radius", radius);
    Ok(())
}
