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

mod add;
mod build;
mod info;
mod query;
mod remove;
mod shared;
mod verify;

use anyhow::Result;
use clap::{Parser, Subcommand};
use simlsh::index::IndexSpec;
use simlsh::persist::LoadOptions;

use crate::common::{Ctx, to_stdout};

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
    Build(build::BuildArgs),
    Add(add::AddArgs),
    Remove(remove::RemoveArgs),
    Query(query::QueryArgs),
    Info(info::InfoArgs),
    Verify(verify::VerifyArgs),
    /// Lists every index kind with its parameters (the text form of --kind).
    Kinds,
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    match a.action {
        Action::Build(b) => build::run(b, ctx),
        Action::Add(b) => add::run(b, ctx),
        Action::Remove(b) => remove::run(b, ctx),
        Action::Query(b) => query::run(b, ctx),
        Action::Info(b) => info::run(b),
        Action::Verify(b) => verify::run(b, ctx),
        Action::Kinds => to_stdout(|w| w.write_all(index_help().as_bytes())),
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

/// Queries answered per batch: one step of the progress bar, large enough that the index
/// answers a batch on many cores in parallel.
pub const QUERY_BATCH: usize = 8192;

/// How an index file is opened by commands that only read it.
#[derive(clap::Args, Debug)]
pub(super) struct LoadArgs {
    /// Read the index into memory instead of mapping it (O(file size)): a mapped file that
    /// another program truncates or rewrites in place (`cp`, `truncate`, a shell's `>`)
    /// kills the process with SIGBUS, a copy is not affected.
    #[arg(long)]
    pub(super) copy_on_load: bool,
}

impl LoadArgs {
    pub(super) fn options(&self) -> LoadOptions {
        LoadOptions::default().copy(self.copy_on_load)
    }
}
