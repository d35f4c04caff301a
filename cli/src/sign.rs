//! The signing shared by the subcommands that sign (`sign`, `dedup`, `knn`, `cluster`,
//! `index build`, `store`): the input options, the tokenizer of the text options, and signing
//! vectors and documents in chunks.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args as ClapArgs, ValueEnum};
use ndarray::{ArrayRef2, s};
use rayon::prelude::*;
use simlsh::SignatureMatrix;
use simlsh::io::input::{InputFormat, Vectors};
use simlsh::io::lines::OnBadLine;
use simlsh::signature::words_for;
use simlsh::signers::{AnySigner, Signer};
use simlsh::text::{
    Idf, Mode, SignOptions, SignedCorpus, StopWords, Tokenizer, TokenizerSpec, WeightingKind,
};

use crate::common::{Ctx, check_distinct};

/// The input options shared by the subcommands that sign.
#[derive(ClapArgs, Debug, Clone)]
pub struct InputArgs {
    /// Input vectors or documents (`-`: standard input, with --format).
    pub input: PathBuf,
    /// Input format (default: from the extension).
    #[arg(long)]
    pub format: Option<InputFormat>,
    /// Skip malformed lines (counted and reported) instead of failing.
    #[arg(long)]
    pub skip_bad: bool,
    #[command(flatten)]
    pub text: TextArgs,
}

impl InputArgs {
    /// What readers do with a malformed line.
    pub fn on_bad(&self) -> OnBadLine {
        if self.skip_bad {
            OnBadLine::Skip
        } else {
            OnBadLine::Fail
        }
    }
}

/// Reports skipped lines on stderr and in `--stats`.
pub fn report_bad(ctx: &mut Ctx, bad: &simlsh::io::lines::BadLines) {
    ctx.record("skipped_lines", bad.count);
    if let Some(first) = bad.first.first() {
        ctx.say(format!(
            "skipped {} malformed lines; first: {first}",
            bad.count
        ));
    }
}

/// Tokenizer options, for text inputs (as in `simlsh dedup`).
#[derive(ClapArgs, Debug, Clone)]
pub struct TextArgs {
    /// Text input: JSON field or CSV column holding the text.
    #[arg(long, default_value = "text")]
    pub field: String,
    /// Text input: tokenizer: words (UAX #29), cjk (jieba), auto (jieba for Han runs), chars
    /// [default: auto; cjk with --weighting jieba].
    #[arg(long)]
    pub mode: Option<Mode>,
    /// Text input: shingles of n units (words or characters).
    #[arg(long, default_value_t = TokenizerSpec::default().ngram)]
    pub ngram: usize,
    /// Text input: feature weights: binary (1), tf (count), tfidf (count × IDF fitted on the
    /// input, or --idf), jieba (jieba's own keyword weights: its bundled IDF table and stop
    /// words, as Python's `jieba.analyse.extract_tags`; mode cjk, words of one character
    /// dropped).
    #[arg(long, value_enum, default_value_t = TokenizerSpec::default().weighting.into())]
    pub weighting: WeightingArg,
    /// Text input: keep only the K heaviest features of each document (with --weighting
    /// jieba: `extract_tags`'s topK).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Text input: stop words, `english` (a built-in list) or a file of words, one per line.
    #[arg(long)]
    pub stop_words: Option<String>,
    /// Text input: use this saved IDF table instead of fitting one on the input (TF-IDF).
    #[arg(long, conflicts_with = "save_idf")]
    pub idf: Option<PathBuf>,
    /// Text input: save the IDF table fitted on the input, to reuse on other documents.
    #[arg(long)]
    pub save_idf: Option<PathBuf>,
    /// The tokenizer an index records (queries are tokenized and weighted as its documents
    /// were): the options above are then not read.
    #[arg(skip)]
    pub recorded: Option<Tokenizer>,
}

/// The tokenizer of the text options; a TF-IDF table is loaded (`--idf`) or fitted on `texts`
/// (and saved with `--save-idf`).
pub fn tokenizer(t: &TextArgs, texts: &[&str], ctx: &mut Ctx) -> Result<Tokenizer> {
    tokenizer_with(t, ctx, |counting| Ok(Idf::fit(counting, texts.iter())))
}

/// [`tokenizer`], the TF-IDF table (when one is fitted) made by `fit` from the counting
/// tokenizer (e.g. with a [`simlsh::text::DfCounter`] fed by a pass over the input).
pub fn tokenizer_with(
    t: &TextArgs,
    ctx: &mut Ctx,
    fit: impl FnOnce(&Tokenizer) -> Result<Idf>,
) -> Result<Tokenizer> {
    if let Some(recorded) = &t.recorded {
        return Ok(recorded.clone());
    }
    let spec = t.spec()?;
    anyhow::ensure!(
        spec.weighting != WeightingKind::Jieba || (spec.mode() == Mode::Cjk && spec.ngram == 1),
        "--weighting jieba weighs jieba's words: it needs --mode cjk (its default) and --ngram 1"
    );
    if !spec.needs_idf() {
        for (given, flag) in [(&t.idf, "--idf"), (&t.save_idf, "--save-idf")] {
            anyhow::ensure!(
                given.is_none(),
                "{flag} applies to --weighting tfidf, not {}",
                spec.weighting
            );
        }
        return Ok(spec.build(None)?);
    }
    let idf = match &t.idf {
        Some(p) => Idf::load(p)?,
        None => {
            let counting = spec.counting()?;
            let idf = ctx.phase("idf", |_| fit(&counting))?;
            if let Some(p) = &t.save_idf {
                ctx.write_file(p, |w| idf.write_to(w))?;
            }
            idf
        }
    };
    Ok(spec.build(Some(std::sync::Arc::new(idf)))?)
}

/// Signs documents in chunks, with a progress bar on a terminal; rows are signed
/// independently, so the result equals one `sign_corpus_with` call.
pub fn sign_corpus(
    tokenizer: &Tokenizer,
    signer: &AnySigner,
    texts: &[&str],
    opts: SignOptions,
    ctx: &mut Ctx,
) -> Result<SignedCorpus> {
    ctx.phase("sign", |ctx| {
        let pb = ctx.progress(texts.len() as u64, "signing");
        let mut all: Option<SignedCorpus> = None;
        for chunk in texts.chunks(20_000) {
            let part = tokenizer.sign_corpus_with(signer, chunk, opts)?;
            match &mut all {
                Some(c) => c.append(part)?,
                None => all = Some(part),
            }
            pb.inc(chunk.len() as u64);
        }
        pb.finish_and_clear();
        match all {
            Some(c) => Ok(c),
            None => Ok(tokenizer.sign_corpus_with(signer, &[] as &[&str], opts)?),
        }
    })
}

/// Rows signed per chunk of [`sign_vectors`] (a multiple of the library's parallel blocks).
const SIGN_CHUNK: usize = 8192;

/// Signs every vector of `v` (as [`Vectors::sign`]) in chunks of rows, the chunks in
/// parallel, with a progress bar on a terminal. Rows are signed independently, so the result
/// is bit for bit that of one call, for any chunking and thread count; an error names the
/// row of the whole input.
pub fn sign_vectors(v: &Vectors, signer: &AnySigner, ctx: &Ctx) -> Result<SignatureMatrix> {
    match v {
        Vectors::Dense(x) => sign_dense(x, signer, ctx),
        Vectors::Sparse(m) => sign_chunked(m.rows(), signer.bits(), ctx, |r| {
            signer.sign_csr(m.slice_outer(r))
        }),
    }
}

/// [`sign_vectors`] of a dense matrix.
pub fn sign_dense(x: &ArrayRef2<f32>, signer: &AnySigner, ctx: &Ctx) -> Result<SignatureMatrix> {
    sign_chunked(x.nrows(), signer.bits(), ctx, |r| {
        signer.sign_dense(&x.slice(s![r, ..]))
    })
}

/// Signs `rows` rows by chunks: `sign(range)` signs the rows of `range`.
fn sign_chunked(
    rows: usize,
    bits: usize,
    ctx: &Ctx,
    sign: impl Fn(Range<usize>) -> simlsh::Result<SignatureMatrix> + Sync,
) -> Result<SignatureMatrix> {
    let w = words_for(bits);
    let pb = ctx.progress(rows as u64, "signing");
    let mut data = vec![0u64; rows * w];
    let done: Vec<simlsh::Result<()>> = data
        .par_chunks_mut(w * SIGN_CHUNK)
        .enumerate()
        .map(|(c, dst)| {
            let lo = c * SIGN_CHUNK;
            let part = sign(lo..lo + dst.len() / w).map_err(|e| e.offset_rows(lo))?;
            dst.copy_from_slice(part.as_slice());
            pb.inc(part.len() as u64);
            Ok(())
        })
        .collect();
    pb.finish_and_clear();
    // The first failing chunk in row order, as one call would report it.
    done.into_iter().collect::<simlsh::Result<()>>()?;
    Ok(SignatureMatrix::from_parts(bits, data)?)
}

/// Feature weights.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum WeightingArg {
    /// 1 per distinct feature.
    Binary,
    /// The feature's count.
    Tf,
    /// Count × IDF (fitted on the input, or --idf).
    Tfidf,
    /// jieba's keyword weights (its IDF table and stop words; mode cjk).
    Jieba,
}

impl TextArgs {
    /// The library's tokenizer spec of these options (stop words read from their file).
    pub fn spec(&self) -> Result<TokenizerSpec> {
        let stop_words = match self.stop_words.as_deref() {
            None => StopWords::none(),
            Some("english") => StopWords::english(),
            Some(file) => StopWords::from_file(Path::new(file))?,
        };
        Ok(TokenizerSpec {
            mode: self.mode,
            ngram: self.ngram,
            stop_words,
            weighting: self.weighting.into(),
            top_k: self.top_k,
            ..TokenizerSpec::default()
        })
    }
}

impl From<WeightingKind> for WeightingArg {
    fn from(w: WeightingKind) -> Self {
        match w {
            WeightingKind::Binary => WeightingArg::Binary,
            WeightingKind::Tf => WeightingArg::Tf,
            WeightingKind::TfIdf => WeightingArg::Tfidf,
            WeightingKind::Jieba => WeightingArg::Jieba,
        }
    }
}

impl From<WeightingArg> for WeightingKind {
    fn from(w: WeightingArg) -> Self {
        match w {
            WeightingArg::Binary => WeightingKind::Binary,
            WeightingArg::Tf => WeightingKind::Tf,
            WeightingArg::Tfidf => WeightingKind::TfIdf,
            WeightingArg::Jieba => WeightingKind::Jieba,
        }
    }
}

impl WeightingArg {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WeightingArg::Binary => "binary",
            WeightingArg::Tf => "tf",
            WeightingArg::Tfidf => "tfidf",
            WeightingArg::Jieba => "jieba",
        }
    }
}

/// Format of `path`: `explicit`, else from the extension.
pub fn format_of(path: &Path, explicit: Option<InputFormat>) -> Result<InputFormat> {
    Ok(match explicit {
        Some(f) => f,
        None if simlsh::io::is_stdin(path) => {
            anyhow::bail!("reading standard input (-) needs --format")
        }
        None => InputFormat::from_path(path)?,
    })
}

/// Documents from standard input, copied to a temporary file first (the document readers
/// read a file: CSV errors are located by a second pass); deleted when dropped.
pub struct Spool(Option<PathBuf>);

impl Drop for Spool {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl InputArgs {
    /// When the input is standard input holding documents, copies it to a temporary file and
    /// points the input at it (vector formats stream from standard input directly).
    pub fn spool_stdin(&mut self) -> Result<Spool> {
        if !simlsh::io::is_stdin(&self.input) {
            return Ok(Spool(None));
        }
        let format = format_of(&self.input, self.format)?;
        if !format.is_text() {
            return Ok(Spool(None));
        }
        let path = std::env::temp_dir().join(format!(
            "simlsh-stdin-{}.{}",
            std::process::id(),
            format.name()
        ));
        let spool = Spool(Some(path.clone()));
        let mut file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        std::io::copy(&mut std::io::stdin().lock(), &mut file)
            .context("reading documents from standard input")?;
        self.input = path;
        Ok(spool)
    }
}

impl InputArgs {
    /// Refuses to run when an output is an input (or two outputs are one file), through
    /// links: the input's files (the input, a saved IDF table read), `outputs`, and the run's
    /// own outputs (`--stats`, `--save-idf`).
    pub fn check_paths(&self, ctx: &Ctx, outputs: &[&Path]) -> Result<()> {
        let mut ins: Vec<&Path> = vec![&self.input];
        ins.extend(self.text.idf.as_deref());
        if let Some(f) = self.text.stop_words.as_deref().filter(|f| *f != "english") {
            ins.push(Path::new(f));
        }
        let mut outs = outputs.to_vec();
        outs.extend(ctx.stats.as_deref());
        outs.extend(self.text.save_idf.as_deref());
        check_distinct(&ins, &outs)
    }
}
