//! `simlsh index`: build, change, query and describe Hamming indexes stored on disk.
//!
//! Every write stages the index in the run's outputs ([`HammingIndex::stage`]): a temporary
//! file beside the index, synced, renamed over the index at the end of the run together with
//! the other outputs (`--stats`): a run killed at any moment leaves either the old index or
//! the new one, both loadable. A killed run can leave its temporary file behind; the next
//! write of the same index deletes the temporary files of processes that no longer run.
//!
//! `add` and `remove` hold the index file's own advisory lock from before they read it until
//! the new file is in place, and verify the whole file (checksum and invariants) before
//! changing it: a corrupt index is never rewritten as sound. Queries open an index in
//! `O(1)`, without verifying it (`index verify`, `index info --verify`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use clap::{Parser, Subcommand, ValueEnum};
use rayon::prelude::*;
use simlsh::HammingIndex;
use simlsh::Hit;
use simlsh::estimate;
use simlsh::index::{IndexSpec, SignerRecord};
use simlsh::io::input::InputFormat;
use simlsh::persist::{IndexFile, LoadOptions, load_index_with};
use simlsh::signature::SignatureMatrix;
use simlsh::signers::{SignerKind, SignerSpec};
use simlsh::storage::Buf;
use simlsh::text::Tokenizer;
use simlsh::verify::{CsrVectors, Vectors};

use crate::common::{
    Ctx, SignerArgs, check_distinct, human_bytes, print_line, read_codes, to_stdout,
};
use crate::input::{Exact, prepare};
use crate::sign::{InputArgs, TextArgs, WeightingArg};

const EXAMPLE: &str = "Examples:
  simlsh index build codes.npy codes.idx --kind manku:k=3
  simlsh index build glove.fvecs glove.idx --kind mih --signer super-bit --bits 128
  simlsh index build glove.fvecs glove.idx --kind graph --signer super-bit --bits 256
  simlsh index query codes.idx queries.npy --radius 3 --out hits.tsv
  simlsh index query glove.idx queries.fvecs --k 10 --ef 96
  simlsh index query glove.idx queries.fvecs --k 10 --rerank 100 --vectors glove.fvecs
  simlsh index add codes.idx more.npy --first-id 1000000
  simlsh index remove codes.idx --ids 4,8,15
  simlsh index info codes.idx
  simlsh index verify codes.idx
  simlsh index kinds";

/// Build, change, query and describe Hamming indexes stored on disk.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand, Debug)]
enum Action {
    Build(BuildArgs),
    Add(AddArgs),
    Remove(RemoveArgs),
    Query(QueryArgs),
    Info(InfoArgs),
    Verify(VerifyArgs),
    /// Lists every index kind with its parameters (the text form of --kind).
    Kinds,
}

const VERIFY_EXAMPLE: &str = "Example:
  simlsh index verify codes.idx
Opening an index checks its header and section bounds only (so that opening a large index
costs no pass over it); verify reads every byte: the checksum, then every invariant of the
index. Exit status 1 and the first problem found when the file is corrupt. `index add` and
`index remove` verify the file the same way before changing it.";

/// Checks an index file completely: checksum and contents.
#[derive(Parser, Debug)]
#[command(after_help = VERIFY_EXAMPLE)]
struct VerifyArgs {
    /// The index file.
    index: PathBuf,
}

const BUILD_EXAMPLE: &str = "Example:
  simlsh index build codes.npy codes.idx --kind manku:k=3
  simlsh index build codes.simlsh codes.idx --kind permutation:q=16,beam=32 --seed 7
  simlsh index build glove.fvecs glove.idx --kind mih --signer gaussian --bits 128 --seed 3
  simlsh index build glove.fvecs glove.idx --kind graph:m=32 --signer super-bit --bits 256
  simlsh index build docs.jsonl docs.idx --kind manku --ngram 2 --save-idf docs.idf
INPUT is stored codes (a .npy array of uint64, N x words, width --bits, default 64 x words; or
a simlsh signature file), or vectors or documents, signed here with --signer, --bits and
--seed. Row i gets id i. The index records the signer of its codes (what a signature file
records, or the signer used here, and for documents the tokenizer options), so that `index
query` signs vectors and documents like the index. For documents, the index embeds the tables
its tokenizer used (the TF-IDF table, fitted on the documents or given by --idf, and a file of
--stop-words), so that queries are weighted the same way: an index never names other files.";

/// Builds an index of codes, vectors or documents (ids 0..N) and saves it atomically.
#[derive(Parser, Debug)]
#[command(after_help = BUILD_EXAMPLE)]
struct BuildArgs {
    #[command(flatten)]
    input: InputArgs,
    /// The index file to write.
    out: PathBuf,
    /// The index: KIND or KIND:key=value,... (see --help).
    #[arg(long, value_parser = parse_index, long_help = index_help())]
    kind: IndexSpec,
    /// Vectors or documents: the signer, KIND or KIND:key=value,... (default hashing-trick;
    /// see `simlsh sign --help`). Codes: must be the signer their signature file records.
    #[arg(long, value_parser = parse_signer)]
    signer: Option<SignerKind>,
}

const ADD_EXAMPLE: &str = "Example:
  simlsh index add codes.idx more.npy --first-id 1000000
The codes of SIGS get ids FIRST_ID, FIRST_ID+1, ... The index is verified whole (a corrupt
file is refused, never rewritten) and replaced atomically, under its advisory lock (concurrent
`add`s and `remove`s, and Python's `simlsh.update_index`, follow one another).";

/// Inserts codes into an index file, replacing it atomically.
#[derive(Parser, Debug)]
#[command(after_help = ADD_EXAMPLE)]
struct AddArgs {
    /// The index file (changed in place, atomically).
    index: PathBuf,
    /// Signatures to insert: `.npy` of uint64 codes or a simlsh signature file.
    sigs: PathBuf,
    /// Id of the first inserted code; the others follow consecutively.
    #[arg(long)]
    first_id: u32,
}

const REMOVE_EXAMPLE: &str = "Example:
  simlsh index remove codes.idx --ids 4,8,15
  simlsh index remove codes.idx --ids-file stale.txt
An ids file holds ids separated by whitespace or commas. The index is verified whole and
replaced atomically, under its advisory lock, as by `index add`.";

/// Removes ids from an index file, replacing it atomically.
#[derive(Parser, Debug)]
#[command(after_help = REMOVE_EXAMPLE)]
struct RemoveArgs {
    /// The index file (changed in place, atomically).
    index: PathBuf,
    /// Ids to remove, comma separated.
    #[arg(long, value_delimiter = ',', required_unless_present = "ids_file")]
    ids: Vec<u32>,
    /// A file of ids to remove (whitespace or comma separated).
    #[arg(long, conflicts_with = "ids")]
    ids_file: Option<PathBuf>,
}

/// Output format of `query`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
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
struct QueryArgs {
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

const INFO_EXAMPLE: &str = "Example:
  simlsh index info codes.idx
  simlsh index info codes.idx --verify
The line `verified` says whether the file's checksum and contents were checked: `no` for the
O(1) open, `yes` with --verify (which fails, exit status 1, on a corrupt file).";

/// Describes an index file: kind, width, count, memory and the recorded parameters.
#[derive(Parser, Debug)]
#[command(after_help = INFO_EXAMPLE)]
struct InfoArgs {
    /// The index file.
    index: PathBuf,
    /// Verify the whole file first (checksum and every invariant, as `index verify`).
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    load: LoadArgs,
}

/// How an index file is opened by commands that only read it.
#[derive(clap::Args, Debug)]
struct LoadArgs {
    /// Read the index into memory instead of mapping it (O(file size)): a mapped file that
    /// another program truncates or rewrites in place (`cp`, `truncate`, a shell's `>`)
    /// kills the process with SIGBUS, a copy is not affected.
    #[arg(long)]
    copy_on_load: bool,
}

impl LoadArgs {
    fn options(&self) -> LoadOptions {
        LoadOptions::default().copy(self.copy_on_load)
    }
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    match a.action {
        Action::Build(b) => build(b, ctx),
        Action::Add(b) => add(b, ctx),
        Action::Remove(b) => remove(b, ctx),
        Action::Query(b) => query(b, ctx),
        Action::Info(b) => info(b),
        Action::Verify(b) => verify(b, ctx),
        Action::Kinds => to_stdout(|w| w.write_all(index_help().as_bytes())),
    }
}

/// Reads signature codes (a `.npy` of uint64 words or a simlsh signature file) of width
/// `bits` when known (an index's width, or `--bits`).
fn read_sigs(path: &Path, bits: Option<usize>, source: &str) -> Result<SignatureMatrix<Buf<u64>>> {
    match read_codes(path, bits, source)? {
        Some(c) => Ok(c.sigs),
        None => bail!(
            "{}: not signature codes (a .npy array of uint64 words or a simlsh signature file)",
            path.display()
        ),
    }
}

/// `path` opened as a simlsh file (`None` for other files: `.npy`, vectors, documents).
fn simlsh_file(path: &Path) -> Result<Option<IndexFile>> {
    let mut magic = [0u8; 8];
    let is_file = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok();
    if !is_file || &magic != b"SIMLSH\r\n" {
        return Ok(None);
    }
    let f = IndexFile::open(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Some(f))
}

/// The signer a simlsh signature file records (`None` for other files or none recorded).
fn signature_record(path: &Path) -> Result<Option<SignerRecord>> {
    Ok(simlsh_file(path)?.and_then(|f| SignerRecord::from_params(f.params())))
}

/// Verifies the checksum of a simlsh signature file whose codes go into an index file, so
/// that corrupt codes are not written into an index with a fresh checksum (a `.npy` array
/// has no checksum to verify).
fn verify_carried(path: &Path) -> Result<()> {
    if let Some(f) = simlsh_file(path)? {
        f.verify()
            .with_context(|| format!("verifying {}", path.display()))?;
    }
    Ok(())
}

/// The width of codes for index `idx`: its own; a `--bits` that disagrees is an error.
fn index_bits(idx: &dyn HammingIndex, ctx: &Ctx) -> Result<Option<usize>> {
    match ctx.bits_given {
        Some(b) if b != idx.bits() => bail!(
            "--bits {b} disagrees with the index, which holds {}-bit codes",
            idx.bits()
        ),
        _ => Ok(Some(idx.bits())),
    }
}

/// The `--kind` help: every kind of the library's table, with its parameters.
pub fn index_help() -> String {
    let mut h = String::from(
        "The index: KIND or KIND:key=value,... (parameters left out take their defaults).\n",
    );
    for k in simlsh::index::kinds() {
        h.push_str(&format!("\n  {}: {}", k.name, k.summary));
        for p in k.params {
            h.push_str(&format!(
                "\n      {}:{}=…: {} (default {})",
                k.name, p.name, p.summary, p.default
            ));
        }
    }
    h
}

/// Parses an index spec; `exact` is another name of `linear`.
pub fn parse_index(s: &str) -> std::result::Result<IndexSpec, String> {
    let s = if s == "exact" { "linear" } else { s };
    s.parse().map_err(|e: simlsh::Error| e.to_string())
}

/// The spec with the global `--seed` for kinds that draw random numbers, unless the spec sets
/// its own seed.
pub fn seeded(spec: IndexSpec, ctx: &Ctx) -> IndexSpec {
    match &spec {
        IndexSpec::Permutation(p) if p.seed == simlsh::index::DEFAULT_SEED => {
            spec.with_seed(ctx.seed)
        }
        _ => spec,
    }
}

fn open_index(path: &Path, opts: &LoadOptions) -> Result<Box<dyn HammingIndex>> {
    load_index_with(path, opts).with_context(|| format!("loading index {}", path.display()))
}

/// Stages `idx` to replace `path` at the end of the run, with the run's other outputs (the
/// library's atomic write also removes the temporary files that killed runs left beside it).
fn save_index(idx: &dyn HammingIndex, path: &Path, ctx: &mut Ctx) -> Result<()> {
    ctx.stage(path, |set| simlsh::persist::stage_index(idx, set, path))
        .with_context(|| format!("writing index {}", path.display()))
}

/// Takes the index file's advisory lock for a read-modify-write and holds it until the new
/// file is in place (the end of the run), so that concurrent `add`s and `remove`s on one
/// index run one after the other and none is lost. The lock is the file's own: nothing is
/// created beside it, and a path that is not an index file fails here.
fn lock(path: &Path, ctx: &mut Ctx) -> Result<()> {
    let guard = match simlsh::fs::try_lock_exclusive(path)
        .with_context(|| format!("locking index {}", path.display()))?
    {
        Some(guard) => guard,
        None => {
            ctx.say(format!(
                "waiting for another run changing {} to finish",
                path.display()
            ));
            simlsh::fs::lock_exclusive(path)
                .with_context(|| format!("locking index {}", path.display()))?
        }
    };
    ctx.hold(guard);
    Ok(())
}

/// Loads an index to change it: verified whole first (checksum and invariants), so that a
/// corrupt file is refused instead of rewritten with a fresh checksum.
fn open_for_update(path: &Path) -> Result<Box<dyn HammingIndex>> {
    open_index(path, &LoadOptions::default().verify(true))
}

/// Records how a graph index answers k-NN (`--stats`): by the graph or by the scan, and the
/// figures of its check.
fn record_graph(g: &simlsh::index::GraphIndex, ctx: &mut Ctx) {
    let c = g.check();
    ctx.record("knn_mode", g.mode().name());
    ctx.record("knn_mode_reason", g.describe_mode());
    ctx.record("check_recall", c.recall);
    ctx.record("check_distances", c.distances);
    ctx.record("graph_nodes", g.nodes());
    ctx.record("graph_ef", g.ef());
}

/// Parses a signer kind (`KIND` or `KIND:key=value,...`).
fn parse_signer(s: &str) -> std::result::Result<SignerKind, String> {
    s.parse().map_err(|e: simlsh::Error| e.to_string())
}

/// An input read for an index: its codes, the signer that made them when known, and the
/// vectors when asked for.
struct Signed {
    sigs: SignatureMatrix,
    record: Option<SignerRecord>,
    exact: Option<Exact>,
    /// Rows without features (documents, zero vectors) signed here: they have the all-zero
    /// signature and, as in joins, match nothing. Empty for stored codes.
    empty: Vec<u32>,
}

/// Reads stored codes (a `.npy` of uint64 words, a simlsh signature file) of width `bits`
/// when known: `None` when `input` is not codes (or is Parquet, whose column type decides).
fn read_stored(input: &InputArgs, bits: Option<usize>, source: &str) -> Result<Option<Signed>> {
    if input.format.is_some() || crate::parquet::is_parquet(&input.input) {
        return Ok(None);
    }
    let Some(c) = read_codes(&input.input, bits, source)? else {
        return Ok(None);
    };
    // A signature file records its signer: carried over whole (`signer.*`, `text.*`).
    let record = match c.signer {
        Some(_) => SignerRecord::from_params(
            IndexFile::open(&input.input)
                .with_context(|| format!("reading {}", input.input.display()))?
                .params(),
        ),
        None => None,
    };
    let sigs = SignatureMatrix::from_parts(c.sigs.bits(), c.sigs.as_slice().to_vec())?;
    Ok(Some(Signed {
        sigs,
        record,
        exact: None,
        empty: Vec::new(),
    }))
}

/// The text options of documents signed here, as recorded with the index: tokenizer mode,
/// n-gram, weighting, top-k, and the tables the tokenizer used, embedded (the stop words, the
/// TF-IDF table fitted on the documents or given with --idf): never a path, since an index
/// file must not make a query read another file.
fn record_text(rec: SignerRecord, t: &TextArgs, tokenizer: &Tokenizer) -> Result<SignerRecord> {
    Ok(rec.with_tokenizer(&t.spec()?, tokenizer)?)
}

/// The tokenizer options recorded with the index of `a` (see [`record_text`]), reading
/// documents from `a.field`. An index of an earlier release that recorded the path of its
/// TF-IDF table or stop words is refused unless the file is given on the command line
/// (`--idf`, `--stop-words`): a recorded path is never followed.
fn text_args(rec: &SignerRecord, a: &QueryArgs) -> Result<TextArgs> {
    let name = a.index.display();
    let spec = rec
        .tokenizer_options()
        .with_context(|| format!("reading the tokenizer options {name} records"))?;
    let opts = rec.text_options();
    ensure!(
        spec.is_some(),
        "{name} records no tokenizer options (its codes were not signed from documents by \
         `simlsh index build`): sign the documents with the index's options and query with \
         the codes"
    );
    let spec = spec.expect("checked");
    let get = |k: &str| opts.get(k).copied();
    let weighting = WeightingArg::from(spec.weighting);
    let (mut idf, mut embedded_idf) = (None, None);
    if matches!(weighting, WeightingArg::Tfidf) {
        match (rec.recorded_path("idf"), &a.idf, get("idf")) {
            (Some(_), Some(given), _) => idf = Some(given.clone()),
            (Some(p), None, _) => bail!(
                "{name} records its TF-IDF table as the path {p:?} (an index of an earlier \
                 release); an index never makes simlsh read another file: give the table with \
                 --idf FILE, or rebuild the index (it then embeds the table)"
            ),
            (None, _, Some("fitted") | None) => bail!(
                "{name} was built from documents weighted by a TF-IDF table fitted on them and \
                 not kept (an index of an earlier release): rebuild it, it then embeds the table"
            ),
            (None, Some(_), _) => bail!(
                "{name} embeds its TF-IDF table: --idf applies to indexes of earlier releases \
                 that recorded a path"
            ),
            (None, None, _) => {
                embedded_idf = Some(
                    rec.idf()
                        .with_context(|| format!("reading the TF-IDF table {name} embeds"))?
                        .ok_or_else(|| anyhow::anyhow!("{name} embeds no TF-IDF table"))?,
                );
            }
        }
    } else {
        ensure!(
            a.idf.is_none(),
            "--idf applies to an index of documents weighted by tfidf; {name} records {}",
            weighting.name()
        );
    }
    let (mut stop_words, mut embedded_stop_words) = (None, None);
    match (rec.recorded_path("stop_words"), &a.stop_words) {
        (Some(_), Some(given)) => stop_words = Some(given.display().to_string()),
        (Some(p), None) => bail!(
            "{name} records its stop words as the path {p:?} (an index of an earlier release); \
             an index never makes simlsh read another file: give the file with --stop-words \
             FILE, or rebuild the index (it then embeds them)"
        ),
        (None, Some(_)) => bail!(
            "--stop-words applies to indexes of earlier releases that recorded a path; {name} \
             records its stop words itself"
        ),
        (None, None) => {
            embedded_stop_words = rec
                .stop_words()
                .with_context(|| format!("reading the stop words {name} embeds"))?;
        }
    }
    Ok(TextArgs {
        field: a.field.clone(),
        mode: spec.mode,
        ngram: spec.ngram,
        weighting,
        top_k: spec.top_k,
        stop_words,
        idf,
        save_idf: None,
        embedded_idf,
        embedded_stop_words,
    })
}

/// Signs vectors or documents with `kind` (`None`: the default for the input) at the width and seed of `spec` (the global
/// `--bits` and `--seed` when building), keeping the vectors when asked.
fn sign_input(
    input: &InputArgs,
    kind: Option<SignerKind>,
    width_seed: Option<(usize, u64)>,
    vectors: bool,
    ctx: &mut Ctx,
) -> Result<(crate::input::Prepared, SignerRecord)> {
    let saved = (ctx.bits_given, ctx.seed);
    if let Some((bits, seed)) = width_seed {
        ctx.bits_given = Some(bits);
        ctx.seed = seed;
    }
    let p = prepare(input, &SignerArgs { signer: kind }, vectors, None, ctx);
    (ctx.bits_given, ctx.seed) = saved;
    let p = p?;
    let Some(info) = &p.info else {
        bail!(
            "{}: holds signature codes, where vectors or documents were expected",
            input.input.display()
        );
    };
    let rec = SignerRecord::from_info(info);
    Ok((p, rec))
}

fn build(mut a: BuildArgs, ctx: &mut Ctx) -> Result<()> {
    let _spool = a.input.spool_stdin()?;
    a.input.check_paths(ctx, &[&a.out])?;
    let bits = ctx.bits_given;
    let read = ctx.phase("read", |_| read_stored(&a.input, bits, "--bits"))?;
    let (sigs, record) = match read {
        Some(s) => {
            verify_carried(&a.input.input)?;
            if let Some(k) = &a.signer {
                match &s.record {
                    Some(r) => check_kind(k, r, &a.input.input)?,
                    None => bail!(
                        "--signer applies to vectors and documents: {} holds codes whose \
                         signer is not recorded",
                        a.input.input.display()
                    ),
                }
            }
            (s.sigs, s.record)
        }
        None => {
            let (p, rec) = sign_input(&a.input, a.signer.clone(), None, false, ctx)?;
            let rec = match &p.tokenizer {
                Some(tokenizer) => record_text(rec, &a.input.text, tokenizer)?,
                None => rec,
            };
            (p.sigs, Some(rec))
        }
    };
    let spec = seeded(a.kind.clone(), ctx);
    let mut idx: Box<dyn HammingIndex> = ctx
        .phase("build", |ctx| {
            let what = format!("building the {} index", spec.kind());
            Ok(ctx.spin(&what, || spec.build(&sigs))?)
        })
        .with_context(|| format!("building a {spec} index of {}", a.input.input.display()))?;
    idx.set_signer(record)?;
    ctx.phase("save", |ctx| save_index(idx.as_ref(), &a.out, ctx))?;
    ctx.record("codes", idx.len());
    ctx.record("index_bytes", idx.bytes());
    if let Some(g) = idx.as_graph() {
        record_graph(g, ctx);
        ctx.say(format!("k-NN: {}", g.describe_mode()));
    }
    ctx.say(format!(
        "{} index of {} {}-bit codes, {} in memory, signer {}, written to {}",
        idx.kind(),
        idx.len(),
        idx.bits(),
        human_bytes(idx.bytes()),
        idx.signer()
            .map_or_else(|| "not recorded".to_string(), ToString::to_string),
        a.out.display()
    ));
    Ok(())
}

/// Checks a `--signer` against a recorded signer: same kind, and the parameters it sets equal
/// to the recorded ones.
fn check_kind(kind: &SignerKind, rec: &SignerRecord, source: &Path) -> Result<()> {
    let recorded = rec
        .spec()
        .with_context(|| format!("{}: the recorded signer does not rebuild", source.display()))?;
    // The recorded spec writes defaults out: compared with them resolved, nothing built.
    let given = SignerSpec {
        kind: kind.clone(),
        ..recorded.clone()
    };
    let same = given.same_signer(&recorded);
    ensure!(
        same,
        "--signer {kind} disagrees with the signer {} records: {rec}",
        source.display()
    );
    Ok(())
}

fn add(a: AddArgs, ctx: &mut Ctx) -> Result<()> {
    check_distinct(&[&a.sigs], &[&a.index])?;
    lock(&a.index, ctx)?;
    let mut idx = ctx.phase("load", |_| open_for_update(&a.index))?;
    let bits = index_bits(idx.as_ref(), ctx)?;
    let sigs = ctx.phase("read", |_| {
        verify_carried(&a.sigs)?;
        read_sigs(&a.sigs, bits, "the index")
    })?;
    // Codes of a signature file must come from the index's signer, when both record one.
    if let Some(ours) = idx.signer()
        && let Some(theirs) = signature_record(&a.sigs)?
        && !theirs.same_signer(ours)
    {
        bail!(
            "{} was signed by {theirs}, the index {} records {ours}",
            a.sigs.display(),
            a.index.display()
        );
    }
    let n = sigs.len();
    if n > 0
        && u32::try_from(n - 1)
            .ok()
            .and_then(|m| a.first_id.checked_add(m))
            .is_none()
    {
        bail!(
            "--first-id {} + {n} codes exceeds the largest id {}",
            a.first_id,
            u32::MAX
        );
    }
    // One batch: every index inserts it in one pass (at most one merge), all or nothing.
    let ids: Vec<u32> = (0..n as u32).map(|i| a.first_id + i).collect();
    ctx.phase("insert", |ctx| {
        ctx.spin("inserting", || idx.insert_batch(&ids, sigs.as_slice()))
            .with_context(|| format!("inserting the codes of {}", a.sigs.display()))
    })?;
    ctx.phase("save", |ctx| save_index(idx.as_ref(), &a.index, ctx))?;
    ctx.record("added", n);
    ctx.record("codes", idx.len());
    ctx.say(format!(
        "added {n} codes to {} ({} codes now)",
        a.index.display(),
        idx.len()
    ));
    Ok(())
}

fn parse_ids(path: &Path) -> Result<Vec<u32>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u32>()
                .with_context(|| format!("{}: `{t}` is not an id", path.display()))
        })
        .collect()
}

fn remove(a: RemoveArgs, ctx: &mut Ctx) -> Result<()> {
    let ids = match &a.ids_file {
        Some(p) => parse_ids(p)?,
        None => a.ids.clone(),
    };
    lock(&a.index, ctx)?;
    let mut idx = ctx.phase("load", |_| open_for_update(&a.index))?;
    let removed = ctx.phase("remove", |ctx| {
        Ok(ctx.spin("removing", || idx.remove_batch(&ids))?)
    })?;
    ctx.phase("save", |ctx| save_index(idx.as_ref(), &a.index, ctx))?;
    ctx.record("removed", removed);
    ctx.record("codes", idx.len());
    ctx.say(format!(
        "removed {removed} of {} ids from {} ({} not stored; {} codes now)",
        ids.len(),
        a.index.display(),
        ids.len() - removed,
        idx.len()
    ));
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

/// Queries answered per batch: one step of the progress bar, large enough that the index
/// answers a batch on many cores in parallel.
pub const QUERY_BATCH: usize = 8192;

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
            embedded_idf: None,
            embedded_stop_words: None,
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
        // Documents: the index must record how its documents were tokenised.
        text_args(rec, a)?;
    }
    let (p, signed_by) = sign_input(
        &input,
        Some(spec.kind.clone()),
        Some((spec.bits, spec.seed)),
        vectors,
        ctx,
    )?;
    if p.texts.is_some() {
        // Documents: the index must record how its documents were tokenised.
        text_args(rec, a)?;
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
    fn score<V: Vectors>(
        found: &[Vec<Hit>],
        qs: &SignatureMatrix,
        bs: &SignatureMatrix,
        qv: &V,
        bv: &V,
        k: usize,
        base_path: &Path,
    ) -> Result<Vec<Vec<Row>>> {
        found
            .par_iter()
            .enumerate()
            .map(|(q, hits)| {
                let mut scored = Vec::with_capacity(hits.len());
                for h in hits {
                    let i = h.id as usize;
                    ensure!(
                        i < bs.len(),
                        "the index holds id {}, {} has {} rows",
                        h.id,
                        base_path.display(),
                        bs.len()
                    );
                    let d = simlsh::hamming::distance(qs.row(q), bs.row(i))?;
                    ensure!(
                        d == h.distance,
                        "row {i} of {} is not the code the index stores under id {i} \
                         (Hamming distance {d} to query {q}, the index says {}): give the \
                         vectors the index was built from",
                        base_path.display(),
                        h.distance
                    );
                    scored.push((h.id, d, qv.cosine_with(q, bv, i)));
                }
                scored.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
                scored.truncate(k);
                Ok(scored)
            })
            .collect()
    }
    let (qs, bs) = (&queries.sigs, &base.sigs);
    let dims = |a: usize, b: usize| -> Result<()> {
        ensure!(
            a == b,
            "the queries have {a} columns, {} has {b}",
            base_path.display()
        );
        Ok(())
    };
    match (&queries.exact, &base.exact) {
        (Some(Exact::Dense(q)), Some(Exact::Dense(b))) => {
            dims(q.dim(), b.dim())?;
            score(found, qs, bs, q, b, k, base_path)
        }
        (Some(Exact::Sparse(q)), Some(Exact::Sparse(b))) => {
            score(found, qs, bs, q, b, k, base_path)
        }
        (Some(Exact::Csr(q)), Some(Exact::Csr(b))) => {
            dims(q.cols(), b.cols())?;
            let (q, b) = (CsrVectors::new(q.view())?, CsrVectors::new(b.view())?);
            score(found, qs, bs, &q, &b, k, base_path)
        }
        _ => bail!(
            "the queries and {} are not vectors of one kind (both dense, both sparse, or both \
             documents)",
            base_path.display()
        ),
    }
}

fn query(a: QueryArgs, ctx: &mut Ctx) -> Result<()> {
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

fn verify(a: VerifyArgs, ctx: &mut Ctx) -> Result<()> {
    ctx.phase("verify", |_| {
        simlsh::persist::verify_index(&a.index)
            .with_context(|| format!("verifying index {}", a.index.display()))
    })?;
    print_line(format_args!("{}: ok", a.index.display()))
}

fn info(a: InfoArgs) -> Result<()> {
    let idx = open_index(&a.index, &a.load.options().verify(a.verify))?;
    let file = if a.load.copy_on_load {
        IndexFile::open_copied(&a.index)
    } else {
        IndexFile::open(&a.index)
    }
    .with_context(|| format!("reading index {}", a.index.display()))?;
    let per_code = if idx.is_empty() {
        0.0
    } else {
        idx.bytes() as f64 / idx.len() as f64
    };
    let mut out = String::new();
    out.push_str(&format!("kind\t{}\n", idx.kind()));
    out.push_str(&format!("spec\t{}\n", idx.spec()));
    out.push_str(&format!("bits\t{}\n", idx.bits()));
    out.push_str(&format!(
        "signer\t{}\n",
        idx.signer()
            .map_or_else(|| "none".to_string(), ToString::to_string)
    ));
    out.push_str(&format!("len\t{}\n", idx.len()));
    out.push_str(&format!(
        "verified\t{}\n",
        if idx.is_verified() {
            "yes"
        } else {
            "no (opened without reading the data: index info --verify)"
        }
    ));
    out.push_str(&format!("bytes\t{}\n", idx.bytes()));
    out.push_str(&format!("bytes_per_code\t{per_code:.2}\n"));
    if let Some(g) = idx.as_graph() {
        out.push_str(&format!("nodes\t{}\n", g.nodes()));
        out.push_str(&format!("knn\t{}\n", g.describe_mode()));
    }
    for (k, v) in file.params() {
        out.push_str(&format!("param.{k}\t{v}\n"));
    }
    to_stdout(|w| w.write_all(out.as_bytes()))
}
