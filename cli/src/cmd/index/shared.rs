//! What the `index` subcommands share: opening, locking and saving index files, reading codes
//! or signing inputs for an index, and checking a `--signer` against a recorded one.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use simlsh::HammingIndex;
use simlsh::index::SignerRecord;
use simlsh::persist::{IndexFile, LoadOptions, load_index_with};
use simlsh::signature::SignatureMatrix;
use simlsh::signers::SignerKind;

use crate::common::{Ctx, SignerArgs, read_codes};
use crate::input::{Exact, Signing, prepare};
use crate::sign::InputArgs;

pub(super) fn open_index(path: &Path, opts: &LoadOptions) -> Result<Box<dyn HammingIndex>> {
    load_index_with(path, opts).with_context(|| format!("loading index {}", path.display()))
}

/// Stages `idx` to replace `path` at the end of the run, with the run's other outputs (the
/// library's atomic write also removes the temporary files that killed runs left beside it).
pub(super) fn save_index(idx: &dyn HammingIndex, path: &Path, ctx: &mut Ctx) -> Result<()> {
    ctx.stage(path, |set| simlsh::persist::stage_index(idx, set, path))
        .with_context(|| format!("writing index {}", path.display()))
}

/// Takes the index file's advisory lock for a read-modify-write and holds it until the new
/// file is in place (the end of the run), so that concurrent `add`s and `remove`s on one
/// index run one after the other and none is lost. The lock is the file's own: nothing is
/// created beside it, and a path that is not an index file fails here.
pub(super) fn lock(path: &Path, ctx: &mut Ctx) -> Result<()> {
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
pub(super) fn open_for_update(path: &Path) -> Result<Box<dyn HammingIndex>> {
    open_index(path, &LoadOptions::default().verify(true))
}

/// Records how a graph index answers k-NN (`--stats`): by the graph or by the scan, and the
/// figures of its check.
pub(super) fn record_graph(g: &simlsh::index::GraphIndex, ctx: &mut Ctx) {
    let c = g.check();
    ctx.record("knn_mode", g.mode().name());
    ctx.record("knn_mode_reason", g.describe_mode());
    ctx.record("check_recall", c.recall);
    ctx.record("check_distances", c.distances);
    ctx.record("graph_nodes", g.nodes());
    ctx.record("graph_ef", g.ef());
}

/// Parses a signer kind (`KIND` or `KIND:key=value,...`).
pub(super) fn parse_signer(s: &str) -> std::result::Result<SignerKind, String> {
    s.parse().map_err(|e: simlsh::Error| e.to_string())
}

/// An input read for an index: its codes, the signer that made them when known, and the
/// vectors when asked for.
pub(super) struct Signed {
    pub(super) sigs: SignatureMatrix,
    pub(super) record: Option<SignerRecord>,
    pub(super) exact: Option<Exact>,
    /// Rows without features (documents, zero vectors) signed here: they have the all-zero
    /// signature and, as in joins, match nothing. Empty for stored codes.
    pub(super) empty: Vec<u32>,
}

/// Reads stored codes (a `.npy` of uint64 words, a simlsh signature file) of width `bits`
/// when known: `None` when `input` is not codes (or is Parquet, whose column type decides).
pub(super) fn read_stored(
    input: &InputArgs,
    bits: Option<usize>,
    source: &str,
) -> Result<Option<Signed>> {
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

/// Signs vectors or documents with `kind` (`None`: the default for the input) at the width and seed of `spec` (the global
/// `--bits` and `--seed` when building), keeping the vectors when asked.
pub(super) fn sign_input(
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
    let signing = Signing::vectors(vectors);
    let p = prepare(input, &SignerArgs { signer: kind }, signing, None, ctx);
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

/// Checks a `--signer` against a recorded signer: same kind, and the parameters it sets equal
/// to the recorded ones.
pub(super) fn check_kind(kind: &SignerKind, rec: &SignerRecord, source: &Path) -> Result<()> {
    let same = rec
        .agrees_with(kind)
        .with_context(|| format!("{}: the recorded signer does not rebuild", source.display()))?;
    ensure!(
        same,
        "--signer {kind} disagrees with the signer {} records: {rec}",
        source.display()
    );
    Ok(())
}

/// `path` opened as a simlsh file (`None` for other files: `.npy`, vectors, documents).
pub(super) fn simlsh_file(path: &Path) -> Result<Option<IndexFile>> {
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

/// Verifies the checksum of a simlsh signature file whose codes go into an index file, so
/// that corrupt codes are not written into an index with a fresh checksum (a `.npy` array
/// has no checksum to verify).
pub(super) fn verify_carried(path: &Path) -> Result<()> {
    if let Some(f) = simlsh_file(path)? {
        f.verify()
            .with_context(|| format!("verifying {}", path.display()))?;
    }
    Ok(())
}

/// The width of codes for index `idx`: its own; a `--bits` that disagrees is an error.
pub(super) fn index_bits(idx: &dyn HammingIndex, ctx: &Ctx) -> Result<Option<usize>> {
    match ctx.bits_given {
        Some(b) if b != idx.bits() => bail!(
            "--bits {b} disagrees with the index, which holds {}-bit codes",
            idx.bits()
        ),
        _ => Ok(Some(idx.bits())),
    }
}
