//! `simlsh index query`: radius or k-NN search of every query, re-ranked by exact cosine on
//! request.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use clap::{Parser, ValueEnum};
use simlsh::HammingIndex;
use simlsh::Hit;
use simlsh::estimate;
use simlsh::index::SignerRecord;
use simlsh::io::input::InputFormat;
use simlsh::signers::SignerKind;
use simlsh::text::{Idf, StopWords};
use simlsh::verify::{BaseMismatch, CsrVectors, RerankIds};

use super::shared::{
    Signed, check_kind, index_bits, open_index, parse_signer, read_stored, record_graph, sign_input,
};
use super::{LoadArgs, QUERY_BATCH};
use crate::common::{Ctx, check_distinct, to_stdout};
use crate::input::Exact;
use crate::sign::{InputArgs, TextArgs, WeightingArg};

/// Output format of `query`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    /// `query\thit\tdistance\tcosine` with a header line (`exact_cosine` with --rerank).
    Tsv,
    /// One JSON object per hit: `{"query", "hit", "distance", "cosine"}` (`exact_cosine`
    /// with --rerank).
    Jsonl,
}

const QUERY_EXAMPLE: &str = "Example:
  simlsh index query codes.idx queries.npy --radius 3 --out hits.tsv
  simlsh index query codes.idx queries.npy --k 10 --format jsonl
  simlsh index query glove.idx queries.fvecs --k 10
  simlsh index query glove.idx queries.fvecs --k 10 --rerank 100 --vectors glove.fvecs
  simlsh index query graph.idx queries.fvecs --k 10 --ef 128 --rerank 40 --vectors glove.fvecs
QUERIES is codes of the index's width (a .npy of uint64 words or a simlsh signature file), or
vectors or documents (any input `simlsh sign` reads), signed with the signer the index records
(its kind, width, seed and dimension; for documents its tokenizer options). Query i is row i;
the cosine column is the estimate cos(pi h / f) of the Hamming distance h. With --rerank M
and --vectors BASE (the vectors or documents the index was built from: id i is row i of BASE),
the M nearest by Hamming distance are re-ranked by exact cosine and the k highest kept, as
`query, hit, distance, exact_cosine`, highest first. A graph index searches with its
recorded beam `ef` (`index info`), or --ef: larger finds more true neighbours, slower.";

/// Radius or k-NN search of every query (in parallel), as TSV or JSON Lines.
#[derive(Parser, Debug)]
#[command(after_help = QUERY_EXAMPLE)]
pub(super) struct QueryArgs {
    /// The index file.
    index: PathBuf,
    /// Queries: codes (`.npy` of uint64 words, a simlsh signature file), or vectors or
    /// documents signed like the index (`-`: standard input, with --input-format).
    queries: PathBuf,
    /// Every stored code within this Hamming distance.
    #[arg(long, required_unless_present = "k", conflicts_with_all = ["k", "rerank"])]
    radius: Option<u32>,
    /// The k nearest stored codes.
    #[arg(long)]
    k: Option<usize>,
    /// All-zero codes are codes like any other (by default they are rows without features,
    /// as in joins: an all-zero query has no hits and a stored all-zero code is never one).
    #[arg(long)]
    zero_codes: bool,
    /// Graph index: the search beam (nodes a search keeps; the index's own by default).
    #[arg(long, requires = "k")]
    ef: Option<usize>,
    /// Re-rank: take the M nearest by Hamming distance and keep the k of highest exact cosine
    /// with the rows of --vectors (needs vectors or documents as QUERIES).
    #[arg(long, value_name = "M", requires_all = ["k", "vectors"])]
    rerank: Option<usize>,
    /// The vectors or documents the index was built from (row i is id i), for --rerank.
    #[arg(long, value_name = "BASE", requires = "rerank")]
    vectors: Option<PathBuf>,
    /// Format of QUERIES and BASE (default: from the extension).
    #[arg(long)]
    input_format: Option<InputFormat>,
    /// Documents: JSON field or CSV column holding the text.
    #[arg(long, default_value = "text")]
    field: String,
    /// Skip malformed lines of QUERIES and BASE (counted and reported) instead of failing.
    #[arg(long)]
    skip_bad: bool,
    /// The signer the index records, checked (an error when it disagrees); by default the
    /// recorded one is used.
    #[arg(long, value_parser = parse_signer)]
    signer: Option<SignerKind>,
    /// Documents, for an index of an earlier release that recorded its TF-IDF table as a
    /// path (never read): the table. Indexes built now embed it.
    #[arg(long, value_name = "FILE")]
    idf: Option<PathBuf>,
    /// Documents, for an index of an earlier release that recorded its stop words as a path
    /// (never read): the file. Indexes built now embed them.
    #[arg(long, value_name = "FILE")]
    stop_words: Option<PathBuf>,
    #[command(flatten)]
    load: LoadArgs,
    /// Write the results here (atomically) instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "tsv")]
    format: Format,
}

pub(super) fn run(a: QueryArgs, ctx: &mut Ctx) -> Result<()> {
    let outs: Vec<&Path> = a
        .out
        .iter()
        .map(PathBuf::as_path)
        .chain(ctx.stats.as_deref())
        .collect();
    let mut ins: Vec<&Path> = vec![&a.index, &a.queries];
    ins.extend(a.vectors.as_deref());
    ins.extend(a.idf.as_deref());
    ins.extend(a.stop_words.as_deref());
    check_distinct(&ins, &outs)?;
    if a.k == Some(0) {
        bail!("--k must be at least 1");
    }
    if let (Some(m), Some(k)) = (a.rerank, a.k) {
        ensure!(m >= k, "--rerank {m} must be at least --k {k}");
    }
    let mut idx = ctx.phase("load", |_| open_index(&a.index, &a.load.options()))?;
    if let Some(ef) = a.ef {
        let kind = idx.kind();
        match idx.as_graph_mut() {
            Some(g) => g.set_ef(ef)?,
            None => bail!(
                "--ef sets the beam of a graph index; {} is a {kind} index",
                a.index.display()
            ),
        }
    }
    if let Some(g) = idx.as_graph() {
        record_graph(g, ctx);
    }
    let rerank = a.rerank.is_some();
    let queries = ctx.phase("read", |ctx| {
        read_for_index(&a, &a.queries, idx.as_ref(), rerank, ctx)
    })?;
    let base = match &a.vectors {
        Some(p) => {
            let b = ctx.phase("read", |ctx| read_for_index(&a, p, idx.as_ref(), true, ctx))?;
            ensure!(
                idx.len() <= b.sigs.len(),
                "the index holds {} codes, {} has {} rows: give the vectors the index was \
                 built from",
                idx.len(),
                p.display(),
                b.sigs.len()
            );
            Some(b)
        }
        None => None,
    };
    let sigs = &queries.sigs;
    // Rows without features (all-zero codes: empty documents, zero vectors) are no one's
    // neighbours, as in joins: the library's rule, as Python's searches follow it.
    let featureless = if a.zero_codes {
        simlsh::index::Featureless::none()
    } else {
        simlsh::index::Featureless::of(idx.as_ref())?
    };
    let wanted = a.rerank.or(a.k);
    let found = ctx.phase("search", |ctx| {
        type Search<'a> = Box<dyn Fn(&[u64]) -> simlsh::Result<Vec<Vec<Hit>>> + 'a>;
        let (index, rule) = (idx.as_ref(), &featureless);
        let search: Search = match (a.radius, wanted) {
            (Some(r), _) => Box::new(move |q| rule.radius_batch(index, q, r)),
            (None, Some(k)) => Box::new(move |q| rule.knn_batch(index, q, k)),
            (None, None) => bail!("give --radius or --k"),
        };
        ctx.batched(sigs.len(), QUERY_BATCH, "searching", |r| {
            Ok(search(sigs.slice_rows(r).as_slice())?)
        })
    })?;
    let f = idx.bits() as u64;
    let results: Vec<Vec<Row>> = match (&base, a.k) {
        (Some(base), Some(k)) => ctx.phase("rerank", |_| {
            rerank_hits(
                &found,
                &queries,
                base,
                k,
                a.vectors.as_deref().unwrap_or(&a.index),
            )
        })?,
        _ => found
            .iter()
            .map(|hits| {
                hits.iter()
                    .map(|h| {
                        let c = estimate::cosine(u64::from(h.distance), f);
                        (h.id, h.distance, c)
                    })
                    .collect()
            })
            .collect(),
    };
    // Queries without features match nothing (as rows without features pair with no one in
    // joins): their all-zero signature says nothing of their direction.
    let mut results = results;
    if !a.zero_codes {
        for &q in &queries.empty {
            results[q as usize].clear();
        }
    }
    let hits: usize = results.iter().map(Vec::len).sum();
    ctx.phase("write", |ctx| match &a.out {
        Some(p) => ctx.write_file(p, |w| write_hits(w, &results, rerank, a.format)),
        None => to_stdout(|w| write_hits(w, &results, rerank, a.format)),
    })?;
    ctx.record("queries", sigs.len());
    ctx.record("queries_without_features", queries.empty.len());
    ctx.record("hits", hits);
    if a.out.is_some() {
        ctx.say(format!("{} queries, {hits} hits", sigs.len()));
    }
    Ok(())
}

/// One result line: query, hit id, Hamming distance, cosine (estimated from the distance, or
/// exact when re-ranked).
type Row = (u32, u32, f64);

fn write_hits(
    w: &mut dyn Write,
    results: &[Vec<Row>],
    exact: bool,
    format: Format,
) -> std::io::Result<()> {
    let cos = if exact { "exact_cosine" } else { "cosine" };
    if format == Format::Tsv {
        writeln!(w, "query\thit\tdistance\t{cos}")?;
    }
    for (q, hits) in results.iter().enumerate() {
        for &(id, d, c) in hits {
            match format {
                Format::Tsv if exact => writeln!(w, "{q}\t{id}\t{d}\t{c:.9}")?,
                Format::Tsv => writeln!(w, "{q}\t{id}\t{d}\t{c:.6}")?,
                Format::Jsonl => writeln!(
                    w,
                    "{}",
                    serde_json::json!({"query": q, "hit": id, "distance": d, cos: c})
                )?,
            }
        }
    }
    Ok(())
}

/// The input options of QUERIES or BASE, with the index's tokenizer options for documents.
fn query_input(a: &QueryArgs, path: &Path, rec: Option<&SignerRecord>) -> Result<InputArgs> {
    let text = match rec.filter(|r| !r.text_options().is_empty()) {
        Some(r) => text_args(r, a)?,
        // Not documents, or documents the index cannot sign (an error once known).
        None => TextArgs {
            field: a.field.clone(),
            mode: None,
            ngram: 1,
            weighting: WeightingArg::Binary,
            top_k: None,
            stop_words: None,
            idf: None,
            save_idf: None,
            recorded: None,
        },
    };
    Ok(InputArgs {
        input: path.to_path_buf(),
        format: a.input_format,
        skip_bad: a.skip_bad,
        text,
    })
}

/// Reads QUERIES or BASE for the index `idx`: codes as they are (a signature file's signer
/// must be the index's), vectors or documents signed with the index's recorded signer.
fn read_for_index(
    a: &QueryArgs,
    path: &Path,
    idx: &dyn HammingIndex,
    vectors: bool,
    ctx: &mut Ctx,
) -> Result<Signed> {
    let rec = idx.signer();
    let input = query_input(a, path, rec)?;
    let bits = index_bits(idx, ctx)?;
    if let Some(s) = read_stored(&input, bits, "the index")? {
        ensure!(
            !vectors,
            "{}: --rerank needs vectors or documents, and stored codes have none",
            path.display()
        );
        if let (Some(theirs), Some(ours)) = (&s.record, rec)
            && !theirs.same_signer(ours)
        {
            bail!(
                "{} was signed by {theirs}, the index {} records {ours}",
                path.display(),
                a.index.display()
            );
        }
        return Ok(s);
    }
    let Some(rec) = rec else {
        bail!(
            "{} records no signer (built from codes whose signer is unknown, or by an earlier \
             release): give {} as codes signed like the index",
            a.index.display(),
            path.display()
        );
    };
    let spec = rec.spec().with_context(|| {
        format!(
            "{}: the recorded signer {} does not rebuild",
            a.index.display(),
            rec.kind()
        )
    })?;
    if let Some(k) = &a.signer {
        check_kind(k, rec, &a.index)?;
    }
    if !crate::parquet::is_parquet(path) && crate::sign::format_of(path, a.input_format)?.is_text()
    {
        // Documents: the index must record how its documents were tokenised (when it does,
        // `query_input` has read its tokenizer; when not, this says so).
        if rec.text_options().is_empty() {
            text_args(rec, a)?;
        }
    }
    let (p, signed_by) = sign_input(
        &input,
        Some(spec.kind.clone()),
        Some((spec.bits, spec.seed)),
        vectors,
        ctx,
    )?;
    if p.texts.is_some() {
        // Documents: the index must record how its documents were tokenised (when it does,
        // `query_input` has read its tokenizer; when not, this says so).
        if rec.text_options().is_empty() {
            text_args(rec, a)?;
        }
    } else {
        ensure!(
            rec.text_options().is_empty(),
            "{} holds codes of documents, {} holds vectors",
            a.index.display(),
            path.display()
        );
    }
    let signed_by = signed_by.spec()?;
    if signed_by != spec {
        match (spec.dim, signed_by.dim) {
            (Some(want), Some(got)) if want != got => bail!(
                "{} has {got} columns, the {} signer of {} was drawn for {want}",
                path.display(),
                spec.kind,
                a.index.display()
            ),
            _ => bail!(
                "{} signed by {}, not by the signer {} records ({rec})",
                path.display(),
                signed_by.kind,
                a.index.display()
            ),
        }
    }
    Ok(Signed {
        sigs: p.sigs,
        record: Some(rec.clone()),
        exact: p.exact,
        empty: p.empty,
    })
}

/// Scores each query's Hamming candidates by exact cosine with the base rows and keeps the
/// `k` highest (ties by the smaller id). Each candidate is checked against BASE: its id must
/// be a row, and the Hamming distance of BASE's row to the query the one the index reports
/// (BASE is what the index was built from).
fn rerank_hits(
    found: &[Vec<Hit>],
    queries: &Signed,
    base: &Signed,
    k: usize,
    base_path: &Path,
) -> Result<Vec<Vec<Row>>> {
    let (qs, bs) = (&queries.sigs, &base.sigs);
    let dims = |a: usize, b: usize| -> Result<()> {
        ensure!(
            a == b,
            "the queries have {a} columns, {} has {b}",
            base_path.display()
        );
        Ok(())
    };
    let check = || -> Result<()> {
        match simlsh::verify::check_base(found, qs, bs)? {
            None => Ok(()),
            Some(BaseMismatch::NoRow { id, rows }) => bail!(
                "the index holds id {id}, {} has {rows} rows",
                base_path.display()
            ),
            Some(BaseMismatch::Distance {
                query,
                row,
                found,
                reported,
            }) => bail!(
                "row {row} of {} is not the code the index stores under id {row} (Hamming \
                 distance {found} to query {query}, the index says {reported}): give the \
                 vectors the index was built from",
                base_path.display()
            ),
        }
    };
    let ranked = match (&queries.exact, &base.exact) {
        (Some(Exact::Dense(q)), Some(Exact::Dense(b))) => {
            dims(q.dim(), b.dim())?;
            check()?;
            RerankIds::new(q, b, found, k)?.all()?
        }
        (Some(Exact::Sparse(q)), Some(Exact::Sparse(b))) => {
            check()?;
            RerankIds::new(q, b, found, k)?.all()?
        }
        (Some(Exact::Csr(q)), Some(Exact::Csr(b))) => {
            dims(q.cols(), b.cols())?;
            let (q, b) = (CsrVectors::new(q.view())?, CsrVectors::new(b.view())?);
            check()?;
            RerankIds::new(&q, &b, found, k)?.all()?
        }
        _ => bail!(
            "the queries and {} are not vectors of one kind (both dense, both sparse, or both \
             documents)",
            base_path.display()
        ),
    };
    // With the Hamming distance the index reported (ids are distinct in one hit list).
    Ok(ranked
        .into_iter()
        .zip(found)
        .map(|(best, hits)| {
            best.into_iter()
                .map(|(id, c)| {
                    let h = hits.iter().find(|h| h.id as usize == id).expect("a hit");
                    (h.id, h.distance, c)
                })
                .collect()
        })
        .collect())
}

/// The text options of QUERIES and BASE: the tokenizer the index of `a` records (the
/// library's reading, [`SignerRecord::tokenizer_given`]), reading documents from `a.field`.
/// An index of an earlier release that recorded the path of its TF-IDF table or stop words is
/// refused unless the file is given on the command line (`--idf`, `--stop-words`): a recorded
/// path is never followed.
fn text_args(rec: &SignerRecord, a: &QueryArgs) -> Result<TextArgs> {
    let name = a.index.display();
    let Some(spec) = rec
        .tokenizer_options()
        .with_context(|| format!("reading the tokenizer options {name} records"))?
    else {
        bail!(
            "{name} records no tokenizer options (its codes were not signed from documents by \
             `simlsh index build`): sign the documents with the index's options and query with \
             the codes"
        );
    };
    let idf = a.idf.as_deref().map(Idf::load).transpose()?;
    let stop_words = match a.stop_words.as_deref() {
        Some(p) => Some(StopWords::from_file(p)?),
        None => None,
    };
    let recorded = rec.tokenizer_given(idf, stop_words).map_err(|e| {
        let hint = match &e {
            simlsh::Error::InvalidParameter {
                name: "text.idf", ..
            } => {
                "; --idf FILE gives the table of an index of an earlier release that recorded its \
                 path (or rebuild the index: it then embeds the table)"
            }
            simlsh::Error::InvalidParameter {
                name: "text.stop_words",
                ..
            } => {
                "; --stop-words FILE gives the stop words of an index of an earlier release that \
                 recorded their path (or rebuild the index: it then embeds them)"
            }
            _ => "",
        };
        anyhow::anyhow!("{name}: reading the tokenizer it records: {e}{hint}")
    })?;
    Ok(TextArgs {
        field: a.field.clone(),
        mode: spec.mode,
        ngram: spec.ngram,
        weighting: WeightingArg::from(spec.weighting),
        top_k: spec.top_k,
        stop_words: None,
        idf: None,
        save_idf: None,
        recorded,
    })
}
