//! `simlsh knn`: the k-nearest-neighbour graph of signatures.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Parser;
use simlsh::estimate;
use simlsh::index::{HammingIndex, IndexSpec};
use simlsh::join::{ApproxKnn, KnnMethod, knn_graph_active};
use simlsh::{Hit, SignatureMatrix};

use super::index::QUERY_BATCH;
use crate::common::{Ctx, SignerArgs, to_stdout};
use crate::input::{Exact, Signing, prepare};
use crate::parquet::Shape;
use crate::sign::InputArgs;
use crate::table::Rows;
use simlsh::verify::{CsrVectors, rerank_graph};

const EXAMPLE: &str = "Examples:
  simlsh knn datasets/glove-6B-50d-10k/vectors.fvecs --k 10 --signer gaussian --bits 128 --out knn.tsv
  simlsh knn glove.npy --k 5 --index mih --bits 128
  simlsh knn datasets/glove-6B-50d-10k/vectors.fvecs --k 10 --rerank 100 --signer super-bit --bits 256
  simlsh knn embeddings.fvecs --k 10 --rerank 100 --signer super-bit --bits 384 --out knn.tsv
  simlsh knn glove.fvecs --k 10 --method approx --signer super-bit --bits 256 --out knn.tsv

Dense embeddings (e.g. 384-d sentence embeddings): `--signer super-bit --bits 384 --rerank 100`
gave recall@10 0.955 against the exact cosine top 10 on 60,418 MiniLM tweet embeddings (one
thread: 5.5 s CPU, FAISS IndexFlatIP 34-38 s); --bits 512 --rerank 100 gave 0.972 (6.6 s),
--bits 256 --rerank 300 0.960 (6.8 s). On 50-d GloVe, --bits 256 --rerank 100 (20k words: 0.981) or 150 (100k: 0.971). The
graph compares every pair of points once (O(n^2)); the re-rank costs M exact cosines a point.
--method approx builds the graph without comparing every pair: random partition trees (every
pair within a leaf compared) refined by NN-Descent rounds, about O(n) with exact distances but
lists that may miss true neighbours (recall figures in benches/compare/results.md).
Rows without a direction (all-zero vectors, empty documents, and all-zero stored codes unless
--zero-codes) have no neighbours and are no one's.";

/// For each point, its k nearest other points by Hamming distance of the signatures (ties
/// broken by the smaller row), as TSV `record, neighbor, distance, estimated_cosine`; with
/// --rerank M, the k of highest exact cosine among the M nearest by Hamming distance
/// (`cosine` column, highest first). INPUT is vectors or documents (signed with --signer), or stored codes:
/// a `.npy` of uint64 words (width --bits when it fits) or a `.simlsh` signature file.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// Neighbours per point.
    #[arg(long)]
    k: usize,
    /// How the graph is found: the library's methods, `exact` (every pair compared once) or
    /// `approx` (partition trees and NN-Descent, approximate), or the index searched, KIND or
    /// KIND:key=value,... as for `index build --kind` (linear: as exact; mih: multi-index
    /// hashing, exact; permutation and graph: approximate).
    #[arg(
        long,
        alias = "index",
        default_value = KnnMethod::default().name(),
        value_parser = parse_method
    )]
    method: Method,
    /// Re-rank: take the M nearest by Hamming distance and keep the k of highest exact cosine
    /// (needs the input's vectors: dense, sparse, or the weighted features of text).
    #[arg(long, value_name = "M")]
    rerank: Option<usize>,
    /// Documents: name rows by this JSON field or CSV column instead of record numbers.
    #[arg(long)]
    id_field: Option<String>,
    /// Write the graph here, TSV or .parquet (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Stored codes: all-zero codes are codes like any other, neighbours of each other (by
    /// default they are rows without features, as a simlsh signer gives them to empty
    /// documents and zero vectors: no neighbours and no one's neighbour).
    #[arg(long)]
    zero_codes: bool,
    #[command(flatten)]
    signer: SignerArgs,
}

/// How `knn` finds the graph.
#[derive(Clone, Debug)]
enum Method {
    /// The library's approximate k-NN graph (its parameters; the seed is `--seed`).
    Approx(ApproxKnn),
    /// Searches of an index of the rows (linear: the exact graph without an index).
    Index(IndexSpec),
}

/// The library's methods by their names ([`KnnMethod`]'s), else an index spec.
fn parse_method(s: &str) -> std::result::Result<Method, String> {
    match s.parse::<KnnMethod>() {
        Ok(KnnMethod::Exact) => Ok(Method::Index(IndexSpec::Linear)),
        Ok(KnnMethod::Approx(approx)) => Ok(Method::Approx(approx)),
        Err(_) => super::index::parse_index(s.trim()).map(Method::Index),
    }
}

/// The k-NN graph of the rows of `sigs` in the index built from them, searched in batches
/// of rows with a progress bar.
fn knn_graph<S: AsRef<[u64]>>(
    index: &dyn HammingIndex,
    sigs: &SignatureMatrix<S>,
    k: usize,
    ctx: &Ctx,
) -> Result<Vec<Vec<Hit>>> {
    ctx.batched(sigs.len(), QUERY_BATCH, "searching", |r| {
        Ok(simlsh::join::knn_graph_rows(index, sigs, r, k)?)
    })
}

pub fn run(mut a: Args, ctx: &mut Ctx) -> Result<()> {
    let _spool = a.input.spool_stdin()?;
    if a.k == 0 {
        bail!("--k must be at least 1");
    }
    if let Some(m) = a.rerank
        && m < a.k
    {
        bail!("--rerank {m} must be at least --k {}", a.k);
    }
    let outputs: Vec<&std::path::Path> = a.out.iter().map(PathBuf::as_path).collect();
    a.input.check_paths(ctx, &outputs)?;
    let signing = Signing {
        zero_codes: a.zero_codes,
        ..Signing::vectors(a.rerank.is_some())
    };
    let p = prepare(&a.input, &a.signer, signing, a.id_field.as_deref(), ctx)?;
    if a.rerank.is_some() && p.exact.is_none() {
        bail!(
            "--rerank needs the input's vectors, and stored signature codes have none: give the \
             vectors or documents themselves"
        );
    }
    let sigs = &p.sigs;
    let m = a.rerank.unwrap_or(a.k);
    // Rows without features (empty documents, zero vectors, all-zero stored codes) have no
    // neighbours and are no one's: the graph is the graph of the other rows.
    let (graph, how) = match &a.method {
        Method::Approx(approx) => {
            let method = KnnMethod::Approx(ApproxKnn {
                seed: ctx.seed,
                ..approx.clone()
            });
            let mut stats = None;
            let graph = ctx.phase("knn", |ctx| {
                knn_graph_active(sigs, &p.empty, |sigs| {
                    let (graph, s) =
                        ctx.spin("refining", || simlsh::join::knn_graph_by(sigs, m, &method))?;
                    stats = Some(s);
                    Ok::<_, anyhow::Error>(graph)
                })
            })?;
            if let Some(stats) = stats {
                ctx.record("rounds", stats.rounds);
                ctx.record("distances", stats.distances);
            }
            (graph, "approx".to_string())
        }
        Method::Index(spec) => {
            let spec = super::index::seeded(spec.clone(), ctx);
            let graph = knn_graph_active(sigs, &p.empty, |sigs| {
                if spec == IndexSpec::Linear {
                    // The exact scan needs no index: every pair compared once.
                    ctx.phase("knn", |ctx| {
                        Ok(ctx.spin("searching", || simlsh::join::knn_graph(sigs, m))?)
                    })
                } else {
                    let index: Box<dyn HammingIndex> = ctx.phase("index", |ctx| {
                        Ok(ctx.spin("building the index", || spec.build(sigs))?)
                    })?;
                    ctx.phase("knn", |ctx| knn_graph(index.as_ref(), sigs, m, ctx))
                }
            })?;
            (graph, format!("index {spec}"))
        }
    };
    let bits = sigs.bits() as u64;
    // Each row's neighbours: (id, Hamming distance, cosine: exact when re-ranked, else
    // estimated from the distance).
    let rows: Vec<Vec<(u32, u32, f64)>> = match (a.rerank, &p.exact) {
        (Some(_), Some(exact)) => {
            let ranked = ctx.phase("rerank", |_| {
                Ok(match exact {
                    Exact::Dense(v) => rerank_graph(&graph, v, a.k)?,
                    Exact::Sparse(v) => rerank_graph(&graph, v, a.k)?,
                    Exact::Csr(x) => rerank_graph(&graph, &CsrVectors::new(x.view())?, a.k)?,
                })
            })?;
            ranked
                .into_iter()
                .enumerate()
                .map(|(i, hits)| {
                    hits.into_iter()
                        .map(|(id, c)| (id, sigs.distance(i, id as usize), c))
                        .collect()
                })
                .collect()
        }
        _ => graph
            .iter()
            .map(|hits| {
                hits.iter()
                    .map(|h| {
                        (
                            h.id,
                            h.distance,
                            estimate::cosine(u64::from(h.distance), bits),
                        )
                    })
                    .collect()
            })
            .collect(),
    };
    let target = a.out.clone().unwrap_or_default();
    let body = |w: &mut dyn Write| -> std::io::Result<()> {
        let mut out = Rows::new(&target, w, &p.names, Shape::Neighbors, a.rerank.is_some())?;
        for (i, hits) in rows.iter().enumerate() {
            for &(id, d, c) in hits {
                out.push(i as u32, id, d, c)?;
            }
        }
        out.finish()
    };
    match &a.out {
        Some(path) => ctx.write_file(path, body)?,
        None => to_stdout(body)?,
    }
    ctx.record("points", sigs.len());
    ctx.record("k", a.k);
    ctx.say(format!(
        "points {}  k {}  (f = {}, {}{})",
        sigs.len(),
        a.k,
        bits,
        how,
        match a.rerank {
            Some(m) => format!(", the {m} nearest by Hamming re-ranked by exact cosine"),
            None => String::new(),
        }
    ));
    Ok(())
}
