//! The input of `dedup`, `cluster` and `knn`: signatures, and when the input has them, the
//! vectors the signatures sketch (for exact cosines), which rows have no direction, and how
//! rows are named in the outputs.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rayon::prelude::*;
use simlsh::SignatureMatrix;
use simlsh::estimate::{JoinPlan, JoinPlanner};
use simlsh::index::Featureless;
use simlsh::io::Csr;
use simlsh::io::InputFormat;
use simlsh::io::documents::{Document, TextOptions, documents, read_documents_with_ids};
use simlsh::io::input::{VectorInput, VectorOptions, Vectors as InputVectors, read_vectors};
use simlsh::io::lines::BadLines;
use simlsh::text::{DfCounter, FeatureRows, SignOptions, Tokenizer};
use simlsh::verify::{DenseVectors, MemoryBudget, SparseVectors};

use crate::common::{Ctx, DEFAULT_BITS, InputShape, SignerArgs, human_bytes, read_codes};
use crate::names::Names;
use crate::parquet::Table;
use crate::sign::{self, InputArgs};

/// The input vectors, for exact cosines.
pub enum Exact {
    /// Dense rows, normalised.
    Dense(DenseVectors),
    /// Sparse rows (text features, or a sparse matrix), normalised.
    Sparse(SparseVectors),
    /// A sparse matrix as read (borrowed by `CsrVectors` when used).
    Csr(Csr),
}

/// A verified cosine join to plan before signing: its threshold and recall target.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedRequest {
    pub threshold: f64,
    pub recall: f64,
    /// The largest multi-probe distance the plan may use (`None`: the library's default).
    pub probes: Option<u32>,
}

/// How an input is signed: the width without `--bits`, the verified join whose plan chooses
/// the width instead, and whether the vectors are kept (for exact cosines).
#[derive(Clone, Copy, Debug)]
pub struct Signing {
    /// The width when `--bits` is not given and no join is planned.
    pub default_bits: usize,
    /// A verified join: planned once, from the input's size, before signing.
    pub join: Option<VerifiedRequest>,
    /// Keep the input's vectors.
    pub vectors: bool,
    /// Stored codes: all-zero codes are codes like any other (`--zero-codes`), instead of rows
    /// without features (the library's rule, [`Featureless::of_codes`]).
    pub zero_codes: bool,
    /// The memory budget (`--memory`), split by the library's [`MemoryBudget`]: the signatures
    /// of the planned width take at most their share, and documents are streamed (neither their
    /// texts nor their vectors kept: read again for verification and output, [`Reread`]).
    pub memory: Option<u64>,
}

impl Default for Signing {
    /// Signing alone: 64 bits, no vectors kept.
    fn default() -> Self {
        Signing {
            default_bits: DEFAULT_BITS,
            join: None,
            vectors: false,
            zero_codes: false,
            memory: None,
        }
    }
}

impl Signing {
    /// Signing at the default width, the vectors kept when asked.
    pub fn vectors(vectors: bool) -> Self {
        Signing {
            vectors,
            ..Signing::default()
        }
    }

    /// The budget of a run over `n` rows whose caller holds `held` bytes throughout: `--memory`,
    /// or the library's default ([`MemoryBudget::of_run`]).
    fn budget(&self, n: usize, held: u64) -> Result<MemoryBudget> {
        MemoryBudget::of_run(self.memory, n, held).with_context(|| self.too_small(n))
    }

    /// The context of a budget too small for `n` rows.
    fn too_small(&self, n: usize) -> String {
        let total = self.memory.unwrap_or_else(simlsh::memory::available);
        format!(
            "--memory {} is too small for {n} rows",
            human_bytes(total as usize)
        )
    }

    /// The width to sign `n` rows of `features()` nonzeros on average at, and the join's plan
    /// when one is requested: with `--bits`, the plan at that width; without, the width the
    /// planner finds cheapest (join and signing counted) among those whose signatures fit
    /// their share of the budget ([`MemoryBudget::signatures`]; `held` bytes held by the
    /// caller throughout). Under `--memory`, an error when the signatures do not fit, or (a
    /// streamed run) the banded join beside them.
    fn width(
        &self,
        n: usize,
        features: impl FnOnce() -> f64,
        held: u64,
        streamed: bool,
        ctx: &mut Ctx,
    ) -> Result<(usize, Option<JoinPlan>)> {
        // Without --memory, a budget too small for the rows' state plans the narrowest width.
        let budget = match (self.budget(n, held), self.memory) {
            (Ok(b), _) => Some(b),
            (Err(e), Some(_)) => return Err(e),
            (Err(_), None) => None,
        };
        let fits = |bits: usize| -> Result<()> {
            if let (Some(b), Some(total)) = (&budget, self.memory) {
                let fit = match streamed {
                    true => b.bands(n, bits),
                    false => b.check_signatures(n, bits),
                };
                fit.with_context(|| {
                    format!("--memory {} is too small", human_bytes(total as usize))
                })?;
            }
            Ok(())
        };
        let Some(j) = self.join else {
            let bits = ctx.bits_given.unwrap_or(self.default_bits);
            fits(bits)?;
            return Ok((bits, None));
        };
        let planner = JoinPlanner::new(j.threshold)
            .recall(j.recall)
            .rows(n.max(2) as u64)
            .probes(j.probes.unwrap_or(simlsh::estimate::DEFAULT_PROBES));
        let plan = match ctx.bits_given {
            Some(f) => planner.bits(f).plan()?,
            None => {
                let plan = planner
                    .features(features())
                    .memory(
                        MemoryBudget::planner_memory(self.memory, n, held)
                            .with_context(|| self.too_small(n))?,
                    )
                    .plan()?;
                ctx.record("bits_planned", plan.bits);
                if plan.bits != self.default_bits {
                    ctx.say(format!(
                        "signing at {} bits, the width planned for {n} rows at cosine {} \
                         (--bits to choose)",
                        plan.bits, j.threshold
                    ));
                }
                plan
            }
        };
        fits(plan.bits)?;
        Ok((plan.bits, Some(plan)))
    }
}

/// A prepared input.
pub struct Prepared {
    /// One signature per row.
    pub sigs: SignatureMatrix,
    /// The vectors, when the input has them and they were asked for.
    pub exact: Option<Exact>,
    /// Rows without a direction (documents without features, all-zero vectors), in
    /// increasing order: they have the all-zero signature and are never paired. Stored codes: the all-zero codes (none with
    /// `--zero-codes`).
    pub empty: Vec<u32>,
    /// Row names.
    pub names: Names,
    /// The documents' texts (text input), for the deduplicated output.
    pub texts: Option<Vec<String>>,
    /// The signer's name (or what the codes record).
    pub signer: String,
    /// The signer's parameters, when the input was signed here.
    pub info: Option<simlsh::signers::SignerInfo>,
    /// Where the signer came from (`--signer`, `default for text`, …), when signed here.
    pub origin: Option<String>,
    /// The verified join's plan, made before signing (the signatures' width is its width).
    pub plan: Option<JoinPlan>,
    /// The tokenizer of documents signed here (with its stop words and IDF table).
    pub tokenizer: Option<simlsh::text::Tokenizer>,
    /// Documents streamed under a memory budget: where to read them again (their vectors
    /// for verification, their texts for the output), instead of `exact` and `texts`.
    pub reread: Option<Reread>,
}

impl Prepared {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.sigs.len()
    }
}

/// Reads the input: stored codes as they are, or vectors or documents signed as `signing`
/// says (at the default width or `--bits`, or the width of a verified join planned before
/// signing); with `signing.vectors`, also keeps the vectors (text: the weighted features) for
/// exact cosines. `id_field` names text rows by a JSON field or CSV column instead of record
/// numbers.
pub fn prepare(
    a: &InputArgs,
    s: &SignerArgs,
    signing: Signing,
    id_field: Option<&str>,
    ctx: &mut Ctx,
) -> Result<Prepared> {
    if a.format.is_none() && crate::parquet::is_parquet(&a.input) {
        return prepare_parquet(a, s, signing, id_field, ctx);
    }
    if a.format.is_none()
        && let Some(c) = read_codes(&a.input, ctx.bits_given, "--bits")?
    {
        anyhow::ensure!(
            id_field.is_none(),
            "--id-field applies to documents, not to stored codes"
        );
        let sigs = SignatureMatrix::from_parts(c.sigs.bits(), c.sigs.as_slice().to_vec())?;
        let signer = c.signer.unwrap_or_else(|| "none (codes given)".into());
        return Ok(codes(sigs, signer, signing.zero_codes, ctx));
    }
    let format = sign::format_of(&a.input, a.format)?;
    if format.is_text() {
        let opts = text_options(a);
        if signing.memory.is_some() {
            let reread = Reread {
                path: a.input.clone(),
                format,
                opts,
                id_field: id_field.map(str::to_string),
                budget: None,
            };
            return prepare_streamed(a, s, reread, signing, ctx);
        }
        let (texts, names) = read_texts(a, format, &opts, id_field, ctx)?;
        return prepare_texts(a, s, texts, names, signing, ctx);
    }
    let v = read_input_vectors(a, format, id_field, ctx)?;
    let n = v.vectors.rows();
    prepare_vectors(a, s, v.vectors, Names::rows(n), signing, ctx)
}

/// The options of reading `a`'s documents.
pub fn text_options(a: &InputArgs) -> TextOptions {
    TextOptions {
        field: a.text.field.clone(),
        on_bad: a.on_bad(),
    }
}

/// Reads all of `a`'s documents (text input in `format`): their texts, and their names (by
/// record, or by the field `id_field`).
pub fn read_texts(
    a: &InputArgs,
    format: InputFormat,
    opts: &TextOptions,
    id_field: Option<&str>,
    ctx: &mut Ctx,
) -> Result<(Vec<String>, Names)> {
    let (docs, bad) = ctx.phase("read", |_| {
        Ok(read_documents_with_ids(&a.input, format, opts, id_field)?)
    })?;
    sign::report_bad(ctx, &bad);
    let names = match id_field {
        Some(field) => Names::Ids {
            field: field.to_string(),
            ids: docs
                .iter()
                .map(|d| d.id.clone().unwrap_or_default())
                .collect(),
        },
        None => Names::Records(docs.iter().map(|d| d.record).collect()),
    };
    Ok((docs.into_iter().map(|d| d.text).collect(), names))
}

/// Reads `a`'s vectors (a vector input in `format`; rows are named by number, so `id_field`
/// is an error).
pub fn read_input_vectors(
    a: &InputArgs,
    format: InputFormat,
    id_field: Option<&str>,
    ctx: &mut Ctx,
) -> Result<VectorInput> {
    anyhow::ensure!(
        id_field.is_none(),
        "--id-field applies to documents; vector rows are named by their 0-based row number"
    );
    let opts = VectorOptions {
        on_bad: a.on_bad(),
        ..VectorOptions::default()
    };
    let v = ctx.phase("read", |_| Ok(read_vectors(&a.input, format, &opts)?))?;
    sign::report_bad(ctx, &v.bad);
    Ok(v)
}

/// Stored codes: nothing to sign, no vectors; the rows without features are the all-zero
/// codes (the library's rule, as in index searches and Python's joins), unless `zero_codes`.
fn codes(sigs: SignatureMatrix, signer: String, zero_codes: bool, ctx: &mut Ctx) -> Prepared {
    ctx.record("rows", sigs.len());
    let rule = if zero_codes {
        Featureless::none()
    } else {
        Featureless::of_codes(&sigs)
    };
    Prepared {
        names: Names::rows(sigs.len()),
        empty: rule.stored().to_vec(),
        sigs,
        exact: None,
        texts: None,
        signer,
        info: None,
        origin: None,
        plan: None,
        tokenizer: None,
        reread: None,
    }
}

/// A Parquet input: documents, vectors or codes by the type of the --field column.
fn prepare_parquet(
    a: &InputArgs,
    s: &SignerArgs,
    signing: Signing,
    id_field: Option<&str>,
    ctx: &mut Ctx,
) -> Result<Prepared> {
    let field = a.text.field.clone();
    let input = ctx.phase("read", |ctx| {
        crate::parquet::read(&a.input, &field, id_field, ctx.bits_given)
    })?;
    let n = match &input.table {
        Table::Texts(t) => t.len(),
        Table::Dense(x) => x.nrows(),
        Table::Sparse(m) => m.rows(),
        Table::Codes(c) => c.len(),
    };
    if let (Some(ids), Some(field)) = (&input.ids, id_field)
        && let Some((row, id, why)) = ids
            .iter()
            .enumerate()
            .find_map(|(row, id)| simlsh::io::check_id(id).err().map(|why| (row, id, why)))
    {
        anyhow::bail!(
            "{}: row {row}: id {id:?} in `{field}` {why}",
            a.input.display()
        );
    }
    let names = match (input.ids, id_field) {
        (Some(ids), Some(field)) => Names::Ids {
            field: field.to_string(),
            ids,
        },
        _ => Names::rows(n),
    };
    match input.table {
        Table::Texts(texts) => prepare_texts(a, s, texts, names, signing, ctx),
        Table::Dense(x) => prepare_vectors(a, s, InputVectors::Dense(x), names, signing, ctx),
        Table::Sparse(m) => prepare_vectors(a, s, InputVectors::Sparse(m), names, signing, ctx),
        Table::Codes(sigs) => {
            let mut p = codes(sigs, "none (codes given)".into(), signing.zero_codes, ctx);
            p.names = names;
            Ok(p)
        }
    }
}

/// Vectors: signed, and kept for exact cosines when asked.
fn prepare_vectors(
    a: &InputArgs,
    s: &SignerArgs,
    v: InputVectors,
    names: Names,
    signing: Signing,
    ctx: &mut Ctx,
) -> Result<Prepared> {
    let dim = v.cols() as u64;
    let shape = match &v {
        InputVectors::Dense(_) => InputShape::Dense { dim },
        InputVectors::Sparse(m) => InputShape::Sparse {
            dim,
            mean_nnz: m.nnz() as f64 / m.rows().max(1) as f64,
        },
    };
    let features = match shape {
        InputShape::Sparse { mean_nnz, .. } => mean_nnz,
        _ => dim as f64,
    };
    let (bits, plan) = signing.width(v.rows(), || features, 0, false, ctx)?;
    let signer = ctx.phase("signer", |ctx| s.build_for(shape, bits, ctx))?;
    let sigs = ctx
        .phase("sign", |ctx| sign::sign_vectors(&v, &signer, ctx))
        .with_context(|| format!("signing {}", a.input.display()))?;
    ctx.record("rows", sigs.len());
    ctx.record("dim", v.cols());
    let empty = zero_rows(&v);
    let exact = if signing.vectors {
        Some(ctx.phase("vectors", |_| {
            Ok(match v {
                InputVectors::Dense(x) => Exact::Dense(DenseVectors::new(x.view())?),
                InputVectors::Sparse(m) => Exact::Csr(m),
            })
        })?)
    } else {
        None
    };
    let info = simlsh::Signer::info(&signer);
    Ok(Prepared {
        names,
        sigs,
        exact,
        empty,
        texts: None,
        signer: info.kind.to_string(),
        info: Some(info),
        origin: Some(s.origin(shape)),
        plan,
        tokenizer: None,
        reread: None,
    })
}

/// The rows of `v` that are all zeros.
fn zero_rows(v: &InputVectors) -> Vec<u32> {
    match v {
        InputVectors::Dense(x) => x
            .rows()
            .into_iter()
            .enumerate()
            .filter(|(_, r)| r.iter().all(|&x| x == 0.0))
            .map(|(i, _)| i as u32)
            .collect(),
        InputVectors::Sparse(m) => m
            .outer_iterator()
            .enumerate()
            .filter(|(_, r)| r.data().iter().all(|&x| x == 0.0))
            .map(|(i, _)| i as u32)
            .collect(),
    }
}

/// Documents: tokenised (a TF-IDF table fitted or loaded), signed in one pass, the weighted
/// features kept for exact cosines when asked.
fn prepare_texts(
    a: &InputArgs,
    s: &SignerArgs,
    texts: Vec<String>,
    names: Names,
    signing: Signing,
    ctx: &mut Ctx,
) -> Result<Prepared> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokenizer = sign::tokenizer(&a.text, &refs, ctx)?;
    let (bits, plan) = signing.width(
        refs.len(),
        || simlsh::text::mean_features(&tokenizer, &refs),
        0,
        false,
        ctx,
    )?;
    let signer = s.build_for(InputShape::Text, bits, ctx)?;
    let corpus = sign::sign_corpus(
        &tokenizer,
        &signer,
        &refs,
        SignOptions::default().rows(signing.vectors),
        ctx,
    )?;
    ctx.record("rows", corpus.len());
    let empty: Vec<u32> = corpus.featureless().into_iter().map(|i| i as u32).collect();
    let exact = match corpus.rows {
        Some(rows) => Some(ctx.phase("vectors", |_| {
            Ok(Exact::Sparse(SparseVectors::from_feature_rows(rows)?))
        })?),
        None => None,
    };
    let info = simlsh::Signer::info(&signer);
    drop(refs);
    Ok(Prepared {
        sigs: corpus.signatures,
        exact,
        empty,
        names,
        texts: Some(texts),
        signer: info.kind.to_string(),
        info: Some(info),
        origin: Some(s.origin(InputShape::Text)),
        plan,
        tokenizer: Some(tokenizer),
        reread: None,
    })
}

/// Documents read again from their file, in chunks: the passes of a streamed run (fitting the
/// IDF table, sampling the mean number of features, signing, the vectors of the candidate
/// rows, the texts of the output), so that no pass holds the whole corpus. Row `k` is the
/// `k`-th document read (bad lines skipped as in the first pass).
#[derive(Clone, Debug)]
pub struct Reread {
    path: PathBuf,
    format: InputFormat,
    opts: TextOptions,
    id_field: Option<String>,
    /// The split of the run's memory budget (`--memory`), once the rows are counted and the names and IDF table made.
    pub budget: Option<MemoryBudget>,
}

/// Documents read at once by a streamed pass.
const REREAD_CHUNK: usize = 20_000;

impl Reread {
    /// Calls `f(first, docs)` for each chunk of documents in order, `first` the row of the
    /// chunk's first document.
    pub fn for_each_chunk(
        &self,
        mut f: impl FnMut(usize, Vec<Document>) -> Result<()>,
    ) -> Result<()> {
        let mut docs = documents(&self.path, self.format, &self.opts)?;
        if let Some(field) = &self.id_field {
            docs = docs.with_ids(field)?;
        }
        let mut bad = BadLines::default();
        let mut first = 0;
        loop {
            let chunk = docs.next_chunk(REREAD_CHUNK, self.opts.on_bad, &mut bad)?;
            if chunk.is_empty() {
                return Ok(());
            }
            let n = chunk.len();
            f(first, chunk)?;
            first += n;
        }
    }

    /// The weighted features of the documents of `rows` (increasing), row `k` that of
    /// `rows[k]`, as the signing pass made them: the vectors the verified join's cosines take,
    /// when they fit `limit` bytes; else (from the same pass, the vectors dropped as soon as
    /// they exceed it) the number of entries of each row's vector, to verify in blocks.
    pub fn vectors_within(&self, tokenizer: &Tokenizer, rows: &[u32], limit: u64) -> Result<Made> {
        let mut all = Some(FeatureRows::default());
        let mut entries: Vec<u32> = Vec::new();
        simlsh::memory::reserve(&mut entries, rows.len(), "the candidate rows' sizes")?;
        self.read_rows(rows, |texts| {
            let part = tokenizer.feature_rows(texts);
            let (indptr, _, _) = part.parts();
            entries.extend(indptr.windows(2).map(|w| (w[1] - w[0]) as u32));
            if let Some(a) = &mut all {
                a.append(part);
                if a.bytes() as u64 > limit {
                    all = None;
                }
            }
        })?;
        Ok(match all {
            Some(a) => Made::All(SparseVectors::from_feature_rows(a)?),
            None => Made::Entries(entries),
        })
    }

    /// The weighted features of the documents of `rows` (increasing), as
    /// [`vectors_within`](Self::vectors_within) made them, held in exactly `entries` entries
    /// (their number, known from that pass).
    pub fn vectors_of(
        &self,
        tokenizer: &Tokenizer,
        rows: &[u32],
        entries: usize,
    ) -> Result<SparseVectors> {
        let mut all = FeatureRows::default();
        all.reserve(rows.len(), entries)?;
        self.read_rows(rows, |texts| all.append(tokenizer.feature_rows(texts)))?;
        anyhow::ensure!(
            all.nnz() == entries,
            "{} changed while it was read: the candidate rows have {} features, then {entries}",
            self.path.display(),
            all.nnz()
        );
        Ok(SparseVectors::from_feature_rows(all)?)
    }

    /// Calls `f` with the texts of the documents of `rows` (increasing), in order, a chunk's
    /// at a time.
    fn read_rows(&self, rows: &[u32], mut f: impl FnMut(&[&str])) -> Result<()> {
        let mut next = 0;
        self.for_each_chunk(|first, docs| {
            let end = first + docs.len();
            let mut texts = Vec::new();
            while next < rows.len() && (rows[next] as usize) < end {
                texts.push(docs[rows[next] as usize - first].text.as_str());
                next += 1;
            }
            if !texts.is_empty() {
                f(&texts);
            }
            Ok(())
        })?;
        anyhow::ensure!(
            next == rows.len(),
            "{} changed while it was read: row {} is gone",
            self.path.display(),
            rows.get(next).copied().unwrap_or_default()
        );
        Ok(())
    }
}

/// The candidate rows' vectors from one pass ([`Reread::vectors_within`]).
pub enum Made {
    /// All of them, within the limit.
    All(SparseVectors),
    /// Beyond the limit: the number of entries of each row's vector.
    Entries(Vec<u32>),
}

/// Documents under a memory budget, streamed: the names kept, the IDF table fitted in one pass
/// and the documents signed in another, their texts and vectors not kept (read again,
/// [`Prepared::reread`]).
fn prepare_streamed(
    a: &InputArgs,
    s: &SignerArgs,
    mut reread: Reread,
    signing: Signing,
    ctx: &mut Ctx,
) -> Result<Prepared> {
    simlsh::memory::return_freed_memory();
    let mut ids = Vec::new();
    let mut records = Vec::new();
    let mut named = false;
    let mut idf_bytes = 0;
    let mut name = |docs: &[Document]| {
        for d in docs {
            match &reread.id_field {
                Some(_) => ids.push(d.id.clone().unwrap_or_default()),
                None => records.push(d.record),
            }
        }
    };
    let tokenizer = sign::tokenizer_with(&a.text, ctx, |counting| {
        let mut c = DfCounter::new(counting);
        if let Some(total) = signing.memory {
            c = c.memory(MemoryBudget::idf_fit(total));
        }
        reread.for_each_chunk(|_, docs| {
            name(&docs);
            let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
            c.add_batch(&texts);
            Ok(())
        })?;
        named = true;
        let idf = c.finish();
        idf_bytes = idf.bytes();
        Ok(idf)
    })?;
    if !named {
        ctx.phase("read", |_| {
            reread.for_each_chunk(|_, docs| {
                name(&docs);
                Ok(())
            })
        })?;
    }
    let names = match &reread.id_field {
        Some(field) => Names::Ids {
            field: field.clone(),
            ids,
        },
        None => Names::Records(records),
    };
    let n = names.len();
    // What fitting the IDF table freed.
    simlsh::memory::return_freed_memory();
    // Held throughout: the names, the IDF table and the clusters.
    let held = names.bytes() + idf_bytes + crate::join::Clusters::bytes(n);
    let (bits, plan) = signing.width(
        n,
        || {
            // The sample of `mean_features`: rows 0, step, 2·step, …
            let step = simlsh::text::feature_sample_step(n);
            let mut counts = Vec::new();
            let read = reread.for_each_chunk(|first, docs| {
                let texts: Vec<&str> = (first.div_ceil(step) * step..first + docs.len())
                    .step_by(step)
                    .map(|r| docs[r - first].text.as_str())
                    .collect();
                counts.par_extend(texts.par_iter().map(|t| tokenizer.features(t).len()));
                Ok(())
            });
            match read {
                Ok(()) => counts.iter().sum::<usize>() as f64 / counts.len().max(1) as f64,
                // Read again at signing, where the error is reported.
                Err(_) => 1.0,
            }
        },
        held,
        true,
        ctx,
    )?;
    reread.budget = Some(signing.budget(n, held)?);
    let signer = s.build_for(InputShape::Text, bits, ctx)?;
    // The signatures' words reserved once (a growing matrix would hold up to twice them),
    // and the rows without features noted chunk by chunk.
    let words = simlsh::signature::words_for(bits);
    let mut data = Vec::new();
    simlsh::memory::reserve(&mut data, n.saturating_mul(words), "the signatures")?;
    let mut empty = Vec::new();
    let signed = ctx.phase("sign", |ctx| {
        let pb = ctx.progress(n as u64, "signing");
        let mut signed = 0;
        reread.for_each_chunk(|first, docs| {
            let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
            let part = tokenizer.sign_corpus_with(&signer, &texts, SignOptions::default())?;
            empty.extend(part.featureless().into_iter().map(|i| (first + i) as u32));
            if data.len() + part.signatures.as_slice().len() <= data.capacity() {
                data.extend_from_slice(part.signatures.as_slice());
            }
            signed += part.len();
            pb.inc(texts.len() as u64);
            Ok(())
        })?;
        pb.finish_and_clear();
        Ok(signed)
    })?;
    anyhow::ensure!(
        signed == n,
        "{} changed while it was read: {} documents, then {}",
        reread.path.display(),
        n,
        signed
    );
    let sigs = SignatureMatrix::from_parts(bits, data)?;
    ctx.record("rows", n);
    let info = simlsh::Signer::info(&signer);
    Ok(Prepared {
        sigs,
        exact: None,
        empty,
        names,
        texts: None,
        signer: info.kind.to_string(),
        info: Some(info),
        origin: Some(s.origin(InputShape::Text)),
        plan,
        tokenizer: Some(tokenizer),
        reread: Some(reread),
    })
}
