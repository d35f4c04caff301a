//! `simlsh store`: create, verify and describe a store served by `simlsh serve`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use simlsh::index::IndexSpec;
use simlsh::signers::SignerSpec;
use simlsh::store::{Content, Store};

use crate::common::Ctx;
use crate::sign::{TextArgs, WeightingArg, tokenizer};

/// Create, verify or describe a store: the durable, incremental index that `simlsh serve`
/// serves (codes, vectors or documents under u64 ids, a write-ahead log, segments).
#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Create(Box<CreateArgs>),
    Verify(PathArgs),
    Stats(PathArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum ContentArg {
    Codes,
    Vectors,
    Text,
}

/// Create an empty store (or one holding the codes of a file), with its code width
/// (--bits, default 64 for codes and 256 for vectors and text), seed (--seed) and text model
/// fixed and recorded in it.
#[derive(ClapArgs)]
struct CreateArgs {
    /// The store's directory (created; it must be empty).
    store: PathBuf,
    /// What the store keeps: codes (radius and k queries), vectors (exact cosines; --dim),
    /// text (documents' weighted features; exact cosines).
    #[arg(long, value_enum, default_value = "codes")]
    content: ContentArg,
    /// Dimension of a vector store.
    #[arg(long)]
    dim: Option<usize>,
    /// Index of each segment (default: manku:k=3 up to 64 bits, mih above).
    #[arg(long)]
    index: Option<IndexSpec>,
    /// Signer kind of a vector or text store (default hashed-gaussian).
    #[arg(long)]
    signer: Option<SignerSpec>,
    /// Recall target of cosine queries at their threshold (default 0.99).
    #[arg(long)]
    recall: Option<f64>,
    /// Items of the in-memory delta before it becomes a segment.
    #[arg(long)]
    delta_limit: Option<usize>,
    /// Fill a code store with the signatures of this file (`.npy` of uint64 or a simlsh
    /// signature file), under ids 0..N.
    #[arg(long)]
    codes: Option<PathBuf>,
    #[command(flatten)]
    text: TextArgs,
}

#[derive(ClapArgs)]
struct PathArgs {
    /// The store's directory.
    store: PathBuf,
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    match a.command {
        Command::Create(c) => create(*c, ctx),
        Command::Verify(p) => {
            let r = simlsh::store::verify(&p.store)
                .with_context(|| format!("verifying the store {}", p.store.display()))?;
            println!("{}", serde_json::to_string_pretty(&verify_json(&r))?);
            if let Some(t) = &r.torn {
                eprintln!(
                    "simlsh: warning: {}: a torn tail of {} bytes at byte {} (an interrupted, \
                     unacknowledged write): opening the store for writing cuts it",
                    t.file.display(),
                    t.dropped,
                    t.offset
                );
            }
            Ok(())
        }
        Command::Stats(p) => {
            let s = Store::open_read_only(&p.store)?.stats();
            let v = serde_json::json!({
                "items": s.items, "bits": s.bits, "content": s.content, "segments": s.segments,
                "dead": s.dead, "checkpoint_lsn": s.lsn, "heap_bytes": s.heap_bytes,
                "mapped_bytes": s.mapped_bytes,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(())
        }
    }
}

fn verify_json(r: &simlsh::store::Verified) -> serde_json::Value {
    serde_json::json!({
        "items": r.items,
        "segments": r.segments,
        "checkpoint_lsn": r.checkpoint_lsn,
        "log_records": r.log_records,
        "last_lsn": r.last_lsn,
        "torn_tail_bytes": r.torn.as_ref().map(|t| t.dropped),
    })
}

fn create(c: CreateArgs, ctx: &mut Ctx) -> Result<()> {
    let mut b = Store::builder().seed(ctx.seed);
    if let Some(bits) = ctx.bits_given {
        b = b.bits(bits);
    }
    if let Some(i) = c.index {
        b = b.index(i);
    }
    if let Some(s) = c.signer {
        b = b.signer(s);
    }
    if let Some(r) = c.recall {
        b = b.recall(r);
    }
    if let Some(n) = c.delta_limit {
        b = b.delta_limit(n);
    }
    b = match c.content {
        ContentArg::Codes => b.content(Content::Codes),
        ContentArg::Vectors => {
            let dim = c.dim.context("a vector store needs --dim")?;
            b.content(Content::Vectors { dim })
        }
        ContentArg::Text => {
            if matches!(c.text.weighting, WeightingArg::Tfidf) && c.text.idf.is_none() {
                bail!(
                    "a text store with --weighting tfidf needs a fitted table (--idf FILE, saved \
                     by `simlsh sign --save-idf`); its contents are recorded in the store. Or \
                     choose --weighting tf or binary"
                );
            }
            b.tokenizer(tokenizer(&c.text, &[], ctx)?)
        }
    };
    match &c.codes {
        Some(path) => {
            let sigs = match simlsh::io::read_signatures_npy(path, ctx.bits_given) {
                Ok(s) => s.as_slice().to_vec(),
                Err(_) => simlsh::persist::load_signatures(path)?
                    .matrix
                    .as_slice()
                    .to_vec(),
            };
            let words = simlsh::signature::words_for(ctx.bits_given.unwrap_or(64));
            let ids: Vec<u64> = (0..(sigs.len() / words) as u64).collect();
            b.create_with_codes(&c.store, &ids, &sigs)?;
        }
        None => b.create(&c.store)?.close()?,
    }
    if !ctx.quiet {
        eprintln!("simlsh: created the store {}", c.store.display());
    }
    Ok(())
}
