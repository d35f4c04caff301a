//! `simlsh index remove`: removes ids from an index file, replacing it atomically.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser;

use super::shared::{lock, open_for_update, save_index};
use crate::common::Ctx;

const REMOVE_EXAMPLE: &str = "Example:
  simlsh index remove codes.idx --ids 4,8,15
  simlsh index remove codes.idx --ids-file stale.txt
An ids file holds ids separated by whitespace or commas. The index is verified whole and
replaced atomically, under its advisory lock, as by `index add`.";

/// Removes ids from an index file, replacing it atomically.
#[derive(Parser, Debug)]
#[command(after_help = REMOVE_EXAMPLE)]
pub(super) struct RemoveArgs {
    /// The index file (changed in place, atomically).
    index: PathBuf,
    /// Ids to remove, comma separated.
    #[arg(long, value_delimiter = ',', required_unless_present = "ids_file")]
    ids: Vec<u32>,
    /// A file of ids to remove (whitespace or comma separated).
    #[arg(long, conflicts_with = "ids")]
    ids_file: Option<PathBuf>,
}

pub(super) fn run(a: RemoveArgs, ctx: &mut Ctx) -> Result<()> {
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

fn parse_ids(path: &Path) -> Result<Vec<u32>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    simlsh::index::parse_ids(&text).map_err(|(t, e)| {
        anyhow::Error::new(e).context(format!("{}: `{t}` is not an id", path.display()))
    })
}
