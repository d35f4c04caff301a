//! `simlsh index info`: describes an index file.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use simlsh::persist::IndexFile;

use super::LoadArgs;
use super::shared::open_index;
use crate::common::to_stdout;

const INFO_EXAMPLE: &str = "Example:
  simlsh index info codes.idx
  simlsh index info codes.idx --verify
The line `verified` says whether the file's checksum and contents were checked: `no` for the
O(1) open, `yes` with --verify (which fails, exit status 1, on a corrupt file).";

/// Describes an index file: kind, width, count, memory and the recorded parameters.
#[derive(Parser, Debug)]
#[command(after_help = INFO_EXAMPLE)]
pub(super) struct InfoArgs {
    /// The index file.
    index: PathBuf,
    /// Verify the whole file first (checksum and every invariant, as `index verify`).
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    load: LoadArgs,
}

pub(super) fn run(a: InfoArgs) -> Result<()> {
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
