//! `simlsh index add`: inserts codes into an index file, replacing it atomically.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Parser;
use simlsh::index::{NextIds, SignerRecord};
use simlsh::signature::SignatureMatrix;
use simlsh::storage::Buf;

use super::shared::{index_bits, lock, open_for_update, save_index, simlsh_file, verify_carried};
use crate::common::{Ctx, check_distinct, read_codes};

const ADD_EXAMPLE: &str = "Example:
  simlsh index add codes.idx more.npy --first-id 1000000
The codes of SIGS get ids FIRST_ID, FIRST_ID+1, ...; without --first-id, the ids following the
largest one stored (as Python's Index.add without ids). The index is verified whole (a corrupt
file is refused, never rewritten) and replaced atomically, under its advisory lock (concurrent
`add`s and `remove`s, and Python's `simlsh.update_index`, follow one another).";

/// Inserts codes into an index file, replacing it atomically.
#[derive(Parser, Debug)]
#[command(after_help = ADD_EXAMPLE)]
pub(super) struct AddArgs {
    /// The index file (changed in place, atomically).
    index: PathBuf,
    /// Signatures to insert: `.npy` of uint64 codes or a simlsh signature file.
    sigs: PathBuf,
    /// Id of the first inserted code; the others follow consecutively [default: one past the
    /// largest id stored].
    #[arg(long)]
    first_id: Option<u32>,
}

pub(super) fn run(a: AddArgs, ctx: &mut Ctx) -> Result<()> {
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
    let ids = match a.first_id {
        Some(first) => simlsh::index::consecutive_ids(first, n).with_context(|| {
            format!(
                "--first-id {first} + {n} codes exceeds the largest id {}",
                u32::MAX
            )
        })?,
        None => NextIds::default().ids(idx.as_ref(), n)?,
    };
    // One batch: every index inserts it in one pass (at most one merge), all or nothing.
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

/// The signer a simlsh signature file records (`None` for other files or none recorded).
fn signature_record(path: &Path) -> Result<Option<SignerRecord>> {
    Ok(simlsh_file(path)?.and_then(|f| SignerRecord::from_params(f.params())))
}
