//! `simlsh index build`: builds an index of codes, vectors or documents and saves it atomically.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Parser;
use simlsh::HammingIndex;
use simlsh::index::{IndexSpec, SignerRecord};
use simlsh::signers::SignerKind;
use simlsh::text::Tokenizer;

use super::shared::{
    check_kind, parse_signer, read_stored, record_graph, save_index, sign_input, verify_carried,
};
use super::{index_help, parse_index, seeded};
use crate::common::{Ctx, human_bytes};
use crate::sign::{InputArgs, TextArgs};

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
pub(super) struct BuildArgs {
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

pub(super) fn run(mut a: BuildArgs, ctx: &mut Ctx) -> Result<()> {
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

/// The text options of documents signed here, as recorded with the index: tokenizer mode,
/// n-gram, weighting, top-k, and the tables the tokenizer used, embedded (the stop words, the
/// TF-IDF table fitted on the documents or given with --idf): never a path, since an index
/// file must not make a query read another file.
fn record_text(rec: SignerRecord, t: &TextArgs, tokenizer: &Tokenizer) -> Result<SignerRecord> {
    Ok(rec.with_tokenizer(&t.spec()?, tokenizer)?)
}
