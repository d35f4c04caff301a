//! `simlsh sign`: signatures of vectors or documents, written as `.npy` or a signature file.

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;
use simlsh::io;

use crate::common::{Ctx, SignerArgs};
use crate::input::Signing;
use crate::sign::InputArgs;

const EXAMPLE: &str = "Examples:
  simlsh sign datasets/glove-6B-50d-10k/vectors.fvecs glove.npy --signer gaussian --bits 256
  simlsh sign datasets/glove-6B-50d-10k/vectors.fvecs glove.simlsh --signer super-bit
  simlsh sign datasets/healthtweets-10k/healthtweets-10k.csv tweets.npy --ngram 2 --top-k 20
  simlsh sign datasets/chinese-poetry-3k/poems.jsonl poems.npy --weighting jieba --top-k 20";

/// Signs every vector (npy, npz, svmlight, mtx, fvecs/ivecs/bvecs) or document (text, jsonl,
/// csv, tsv) of INPUT and writes the signatures: a `.npy` array of uint64 words (N × words),
/// or a simlsh signature file (recording the signer) when OUT ends in `.simlsh`.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// Output: `.npy` (uint64 words) or `.simlsh` (signature file).
    out: PathBuf,
    #[command(flatten)]
    signer: SignerArgs,
}

pub fn run(mut a: Args, ctx: &mut Ctx) -> Result<()> {
    let _spool = a.input.spool_stdin()?;
    a.input.check_paths(ctx, &[&a.out])?;
    let p = crate::input::prepare(&a.input, &a.signer, Signing::default(), None, ctx)?;
    let Some(info) = &p.info else {
        anyhow::bail!(
            "{}: already signature codes: nothing to sign",
            a.input.input.display()
        );
    };
    let sigs = &p.sigs;
    let simlsh_file = a
        .out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("simlsh"));
    ctx.phase("write", |ctx| {
        ctx.stage(&a.out, |set| {
            if simlsh_file {
                simlsh::persist::stage_signatures(set, &a.out, sigs, Some(info))
            } else {
                io::stage_signatures_npy(set, &a.out, sigs)
            }
        })
    })?;
    ctx.say(format!(
        "signed {} rows of {} into {} (f = {}, signer {}{})",
        sigs.len(),
        a.input.input.display(),
        a.out.display(),
        sigs.bits(),
        info.kind,
        match p.origin.as_deref() {
            Some(o) if o.starts_with("default") => format!(", the {o}"),
            _ => String::new(),
        }
    ));
    Ok(())
}
