//! `simlsh index`: build, change, query and describe Hamming indexes stored on disk.
//!
//! Every write goes through [`HammingIndex::save`], which writes a temporary file
//! `.NAME.tmp-PID` beside the index, syncs it and renames it over the index: a run killed at
//! any moment leaves either the old index or the new one, both loadable. A killed run can
//! leave its temporary file behind; the next `add` or `remove` on the same index deletes the
//! temporary files of processes that no longer run.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use simlsh::HammingIndex;
use simlsh::Hit;
use simlsh::estimate;
use simlsh::index::IndexSpec;
use simlsh::io::{IndexFile, load_index};
use simlsh::signature::SignatureMatrix;
use simlsh::storage::Buf;

use crate::common::{
    Ctx, check_distinct, human_bytes, print_line, read_codes, to_stdout, write_file,
};

const EXAMPLE: &str = "Examples:
  simlsh index build codes.npy codes.idx --kind manku:k=3
  simlsh index query codes.idx queries.npy --radius 3 --out hits.tsv
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
    Kinds,
}

const VERIFY_EXAMPLE: &str = "Example:
  simlsh index verify codes.idx
Opening an index checks its header and section bounds only (so that opening a large index
costs no pass over it); verify reads every byte: the checksum, then every invariant of the
index. Exit status 1 and the first problem found when the file is corrupt.";

/// Checks an index file completely: checksum and contents.
#[derive(Parser, Debug)]
#[command(after_help = VERIFY_EXAMPLE)]
struct VerifyArgs {
    /// The index file.
    index: PathBuf,
}

const BUILD_EXAMPLE: &str = "Example:
  simlsh index build codes.npy codes.idx --kind manku:k=3
  simlsh index build codes.npy codes.idx --kind permutation:q=16,beam=32 --seed 7
SIGS is a .npy array of uint64 (N x words; the width is --bits, default 64 x words) or a
simlsh signature file. Codes get ids 0..N.";

/// Builds an index of a signature file (ids 0..N) and saves it atomically.
#[derive(Parser, Debug)]
#[command(after_help = BUILD_EXAMPLE)]
struct BuildArgs {
    /// Signatures: `.npy` of uint64 codes or a simlsh signature file.
    sigs: PathBuf,
    /// The index file to write.
    out: PathBuf,
    /// The index: KIND or KIND:key=value,... (see --help).
    #[arg(long, value_parser = parse_index, long_help = index_help())]
    kind: IndexSpec,
}

const ADD_EXAMPLE: &str = "Example:
  simlsh index add codes.idx more.npy --first-id 1000000
The codes of SIGS get ids FIRST_ID, FIRST_ID+1, ... The index is replaced atomically.";

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
An ids file holds ids separated by whitespace or commas. The index is replaced atomically.";

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
    /// `query\thit\tdistance\tcosine` with a header line.
    Tsv,
    /// One JSON object per hit: `{"query", "hit", "distance", "cosine"}`.
    Jsonl,
}

const QUERY_EXAMPLE: &str = "Example:
  simlsh index query codes.idx queries.npy --radius 3 --out hits.tsv
  simlsh index query codes.idx queries.npy --k 10 --format jsonl
QUERIES is a .npy of uint64 codes or a simlsh signature file, of the index's width. Query i is
row i; the cosine column is the estimate cos(pi h / f) of the Hamming distance h.";

/// Radius or k-NN search of every query (in parallel), as TSV or JSON Lines.
#[derive(Parser, Debug)]
#[command(after_help = QUERY_EXAMPLE)]
struct QueryArgs {
    /// The index file.
    index: PathBuf,
    /// Query codes: `.npy` of uint64 codes or a simlsh signature file.
    queries: PathBuf,
    /// Every stored code within this Hamming distance.
    #[arg(long, required_unless_present = "k", conflicts_with = "k")]
    radius: Option<u32>,
    /// The k nearest stored codes.
    #[arg(long)]
    k: Option<usize>,
    /// Write the results here (atomically) instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "tsv")]
    format: Format,
}

const INFO_EXAMPLE: &str = "Example:
  simlsh index info codes.idx";

/// Describes an index file: kind, width, count, memory and the recorded parameters.
#[derive(Parser, Debug)]
#[command(after_help = INFO_EXAMPLE)]
struct InfoArgs {
    /// The index file.
    index: PathBuf,
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
        h.push_str(&format!("\n  {}: {}", k.name, k.description));
        for p in k.params {
            h.push_str(&format!(
                "\n      {}:{}=…: {} (default {})",
                k.name, p.key, p.description, p.default
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

fn open_index(path: &Path) -> Result<Box<dyn HammingIndex>> {
    load_index(path).with_context(|| format!("loading index {}", path.display()))
}

/// Saves `idx` over `path` atomically (the library's atomic write also removes the
/// temporary files that killed runs left beside it).
fn save_index(idx: &dyn HammingIndex, path: &Path) -> Result<()> {
    idx.save(path)
        .with_context(|| format!("writing index {}", path.display()))
}

/// Holds the index's advisory lock for a read-modify-write, so that concurrent `add`s and
/// `remove`s on one index run one after the other and none is lost.
fn lock(path: &Path, ctx: &Ctx) -> Result<simlsh::io::LockGuard> {
    if let Some(guard) = simlsh::io::try_lock_exclusive(path)
        .with_context(|| format!("locking {}", path.display()))?
    {
        return Ok(guard);
    }
    ctx.say(format!(
        "waiting for another run changing {} to finish",
        path.display()
    ));
    simlsh::io::lock_exclusive(path).with_context(|| format!("locking {}", path.display()))
}

fn build(a: BuildArgs, ctx: &mut Ctx) -> Result<()> {
    let outs: Vec<&Path> = std::iter::once(a.out.as_path())
        .chain(ctx.stats.as_deref())
        .collect();
    check_distinct(&[&a.sigs], &outs)?;
    let bits = ctx.bits_given;
    let sigs = ctx.phase("read", |_| read_sigs(&a.sigs, bits, "--bits"))?;
    let spec = seeded(a.kind.clone(), ctx);
    let idx: Box<dyn HammingIndex> = ctx
        .phase("build", |ctx| {
            let what = format!("building the {} index", spec.kind());
            Ok(ctx.spin(&what, || spec.build(&sigs))?)
        })
        .with_context(|| format!("building a {spec} index of {}", a.sigs.display()))?;
    ctx.phase("save", |_| save_index(idx.as_ref(), &a.out))?;
    ctx.record("codes", idx.len());
    ctx.record("index_bytes", idx.bytes());
    ctx.say(format!(
        "{} index of {} {}-bit codes, {} in memory, written to {}",
        idx.kind(),
        idx.len(),
        idx.bits(),
        human_bytes(idx.bytes()),
        a.out.display()
    ));
    Ok(())
}

fn add(a: AddArgs, ctx: &mut Ctx) -> Result<()> {
    check_distinct(&[&a.sigs], &[&a.index])?;
    let _lock = lock(&a.index, ctx)?;
    let mut idx = ctx.phase("load", |_| open_index(&a.index))?;
    let bits = index_bits(idx.as_ref(), ctx)?;
    let sigs = ctx.phase("read", |_| read_sigs(&a.sigs, bits, "the index"))?;
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
    ctx.phase("save", |_| save_index(idx.as_ref(), &a.index))?;
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
    let _lock = lock(&a.index, ctx)?;
    let mut idx = ctx.phase("load", |_| open_index(&a.index))?;
    let removed = ctx.phase("remove", |ctx| {
        Ok(ctx.spin("removing", || idx.remove_batch(&ids))?)
    })?;
    ctx.phase("save", |_| save_index(idx.as_ref(), &a.index))?;
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

fn write_hits(
    w: &mut dyn Write,
    results: &[Vec<Hit>],
    f: u64,
    format: Format,
) -> std::io::Result<()> {
    if format == Format::Tsv {
        writeln!(w, "query\thit\tdistance\tcosine")?;
    }
    for (q, hits) in results.iter().enumerate() {
        for h in hits {
            let c = estimate::cosine(u64::from(h.distance), f);
            match format {
                Format::Tsv => writeln!(w, "{q}\t{}\t{}\t{c:.6}", h.id, h.distance)?,
                Format::Jsonl => writeln!(
                    w,
                    "{}",
                    serde_json::json!({"query": q, "hit": h.id, "distance": h.distance, "cosine": c})
                )?,
            }
        }
    }
    Ok(())
}

/// Queries answered per batch: one step of the progress bar, large enough that the index
/// answers a batch on many cores in parallel.
pub const QUERY_BATCH: usize = 8192;

fn query(a: QueryArgs, ctx: &mut Ctx) -> Result<()> {
    let outs: Vec<&Path> = a
        .out
        .iter()
        .map(PathBuf::as_path)
        .chain(ctx.stats.as_deref())
        .collect();
    check_distinct(&[&a.index, &a.queries], &outs)?;
    let idx = ctx.phase("load", |_| open_index(&a.index))?;
    let bits = index_bits(idx.as_ref(), ctx)?;
    let queries = ctx.phase("read", |_| read_sigs(&a.queries, bits, "the index"))?;
    let results = ctx.phase("search", |ctx| {
        type Search<'a> = Box<dyn Fn(&[u64]) -> simlsh::Result<Vec<Vec<Hit>>> + 'a>;
        let index = idx.as_ref();
        let search: Search = match (a.radius, a.k) {
            (Some(r), _) => Box::new(move |q| index.radius_batch(q, r)),
            (None, Some(k)) => Box::new(move |q| index.knn_batch(q, k)),
            (None, None) => bail!("give --radius or --k"),
        };
        ctx.batched(queries.len(), QUERY_BATCH, "searching", |r| {
            Ok(search(queries.slice_rows(r).as_slice())?)
        })
    })?;
    let f = idx.bits() as u64;
    let hits: usize = results.iter().map(Vec::len).sum();
    ctx.phase("write", |_| match &a.out {
        Some(p) => write_file(p, |w| write_hits(w, &results, f, a.format)),
        None => to_stdout(|w| write_hits(w, &results, f, a.format)),
    })?;
    ctx.record("queries", queries.len());
    ctx.record("hits", hits);
    if a.out.is_some() {
        ctx.say(format!("{} queries, {hits} hits", queries.len()));
    }
    Ok(())
}

fn verify(a: VerifyArgs, ctx: &mut Ctx) -> Result<()> {
    ctx.phase("verify", |_| {
        simlsh::io::verify_index(&a.index)
            .with_context(|| format!("verifying index {}", a.index.display()))
    })?;
    print_line(format_args!("{}: ok", a.index.display()))
}

fn info(a: InfoArgs) -> Result<()> {
    let idx = open_index(&a.index)?;
    let file = IndexFile::open(&a.index)
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
    out.push_str(&format!("len\t{}\n", idx.len()));
    out.push_str(&format!("bytes\t{}\n", idx.bytes()));
    out.push_str(&format!("bytes_per_code\t{per_code:.2}\n"));
    for (k, v) in file.params() {
        out.push_str(&format!("param.{k}\t{v}\n"));
    }
    to_stdout(|w| w.write_all(out.as_bytes()))
}
