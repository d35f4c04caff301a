//! `simlsh index verify`: checks an index file completely.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;

use crate::common::{Ctx, print_line};

const VERIFY_EXAMPLE: &str = "Example:
  simlsh index verify codes.idx
Opening an index checks its header and section bounds only (so that opening a large index
costs no pass over it); verify reads every byte: the checksum, then every invariant of the
index. Exit status 1 and the first problem found when the file is corrupt. `index add` and
`index remove` verify the file the same way before changing it.";

/// Checks an index file completely: checksum and contents.
#[derive(Parser, Debug)]
#[command(after_help = VERIFY_EXAMPLE)]
pub(super) struct VerifyArgs {
    /// The index file.
    pub(super) index: PathBuf,
}

pub(super) fn run(a: VerifyArgs, ctx: &mut Ctx) -> Result<()> {
    ctx.phase("verify", |_| {
        simlsh::persist::verify_index(&a.index)
            .with_context(|| format!("verifying index {}", a.index.display()))
    })?;
    print_line(format_args!("{}: ok", a.index.display()))
}
