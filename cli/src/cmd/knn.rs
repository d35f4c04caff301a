//! `simlsh knn`: the k-nearest-neighbour graph of signatures.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Parser;
use simlsh::estimate;
use simlsh::index::{HammingIndex, IndexSpec};
use simlsh::{Hit, SignatureMatrix};

use super::index::QUERY_BATCH;
use super::sign::{InputArgs, codes_or_sign};
use crate::common::{Ctx, SignerArgs, to_stdout, write_file};

const EXAMPLE: &str = "Examples:
  simlsh knn datasets/glove-6B-50d-10k/vectors.fvecs --k 10 --signer gaussian --bits 128 --out knn.tsv
  simlsh knn glove.npy --k 5 --index mih --bits 128";

/// For each point, its k nearest other points by Hamming distance of the signatures (ties
/// broken by the smaller row), as TSV `row, neighbor, distance, cosine` (the cosine estimated
/// from the distance). INPUT is vectors or documents (signed with --signer), or stored codes:
/// a `.npy` of uint64 words (width --bits when it fits) or a `.simlsh` signature file.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// Neighbours per point.
    #[arg(long)]
    k: usize,
    /// The index searched: KIND or KIND:key=value,... as for `index build --kind` (linear,
    /// alias exact: the exact scan; mih: multi-index hashing, exact; permutation: approximate).
    #[arg(long, alias = "method", default_value = "linear", value_parser = super::index::parse_index)]
    index: IndexSpec,
    /// Write the graph here (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    signer: SignerArgs,
}

/// The k-NN graph of the rows of `sigs` in the index built from them, searched in batches
/// of rows with a progress bar.
fn knn_graph(
    index: &dyn HammingIndex,
    sigs: &SignatureMatrix,
    k: usize,
    ctx: &Ctx,
) -> Result<Vec<Vec<Hit>>> {
    ctx.batched(sigs.len(), QUERY_BATCH, "searching", |r| {
        Ok(simlsh::join::knn_graph_rows(index, sigs, r, k)?)
    })
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    if a.k == 0 {
        bail!("--k must be at least 1");
    }
    let (sigs, _) = codes_or_sign(&a.input, &a.signer, ctx)?;
    let spec = super::index::seeded(a.index.clone(), ctx);
    let index: Box<dyn HammingIndex> = ctx.phase("index", |ctx| {
        Ok(ctx.spin("building the index", || spec.build(&sigs))?)
    })?;
    let graph = ctx.phase("knn", |ctx| knn_graph(index.as_ref(), &sigs, a.k, ctx))?;
    let bits = sigs.bits() as u64;
    let body = |w: &mut dyn Write| -> std::io::Result<()> {
        writeln!(w, "row\tneighbor\tdistance\tcosine")?;
        for (i, hits) in graph.iter().enumerate() {
            for h in hits {
                let c = estimate::cosine(h.distance as u64, bits);
                writeln!(w, "{i}\t{}\t{}\t{c:.4}", h.id, h.distance)?;
            }
        }
        Ok(())
    };
    match &a.out {
        Some(p) => write_file(p, body)?,
        None => to_stdout(body)?,
    }
    ctx.record("points", sigs.len());
    ctx.record("k", a.k);
    ctx.say(format!(
        "points {}  k {}  (f = {}, method {})",
        sigs.len(),
        a.k,
        bits,
        index.kind()
    ));
    Ok(())
}
