//! Saving and loading signature matrices and indexes in the [format](super::format).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::atomic::OutputSet;
use super::format::{FileKind, IndexFile, Writer};
use crate::error::{Error, Result};
use crate::index::graph::{Check, GraphParts};
use crate::index::mih::MultiIndexParts;
use crate::index::{
    GraphIndex, HammingIndex, IndexSpec, LinearScan, MultiIndex, PermutationIndex, PermutedTables,
    SignerRecord, check_bits,
};
use crate::signature::SignatureMatrix;
use crate::signers::SignerInfo;
use crate::storage::Buf;

/// Records a signer's parameters as `signer.*` file parameters ([`SignerInfo::to_params`];
/// [`SignerSpec::from_params`](crate::signers::SignerSpec::from_params) reads them back).
///
/// # Errors
/// [`Error::InvalidParameter`] for a signer parameter whose name is not a valid key.
pub fn signer_params(w: &mut Writer<'_>, info: &SignerInfo) -> Result<()> {
    for (k, v) in info.to_params() {
        w.param(&k, v)?;
    }
    Ok(())
}

/// Saves a signature matrix, with the parameters of the signer that made it when known.
pub fn save_signatures<S: AsRef<[u64]>>(
    path: &Path,
    sigs: &SignatureMatrix<S>,
    signer: Option<&SignerInfo>,
) -> Result<()> {
    signatures_writer(sigs, signer)?.write(path)
}

/// Stages the signature file of [`save_signatures`] in `set`, to replace `path` when the set
/// is committed with its other outputs.
pub fn stage_signatures<S: AsRef<[u64]>>(
    set: &mut OutputSet,
    path: &Path,
    sigs: &SignatureMatrix<S>,
    signer: Option<&SignerInfo>,
) -> Result<()> {
    signatures_writer(sigs, signer)?.stage(set, path)
}

fn signatures_writer<'a, S: AsRef<[u64]>>(
    sigs: &'a SignatureMatrix<S>,
    signer: Option<&SignerInfo>,
) -> Result<Writer<'a>> {
    let mut w = Writer::new(FileKind::Signatures);
    w.param("bits", sigs.bits())?.param("rows", sigs.len())?;
    if let Some(info) = signer {
        signer_params(&mut w, info)?;
    }
    w.u64s("codes", sigs.as_slice())?;
    Ok(w)
}

/// A loaded signature matrix (memory-mapped, not copied) and the file's parameters.
#[derive(Debug)]
pub struct SignatureFile {
    /// The signatures.
    pub matrix: SignatureMatrix<Buf<u64>>,
    /// Every parameter recorded in the file (`bits`, `rows`, `signer.*`).
    pub params: BTreeMap<String, String>,
}

/// Loads a signature matrix saved by [`save_signatures`].
pub fn load_signatures(path: &Path) -> Result<SignatureFile> {
    let f = IndexFile::open(path)?;
    f.expect_kind(FileKind::Signatures)?;
    let bits = width(&f)?;
    let rows: usize = f.param("rows")?;
    let matrix =
        SignatureMatrix::from_parts(bits, f.u64s("codes")?).map_err(|e| f.error(e.to_string()))?;
    if matrix.len() != rows {
        return Err(f.error(format!("{} rows stored, {rows} recorded", matrix.len())));
    }
    Ok(SignatureFile {
        matrix,
        params: f.params().clone(),
    })
}

/// The `bits` parameter, checked: `1 ..= MAX_BITS`.
fn width(f: &IndexFile) -> Result<usize> {
    let raw = f
        .param_opt("bits")
        .ok_or_else(|| f.field_error("param bits", "missing"))?;
    let bits: usize = raw
        .parse()
        .map_err(|_| f.field_error("param bits", format!("`{raw}` is not a number")))?;
    check_bits(bits).map_err(|e| match e {
        Error::InvalidParameter { reason, .. } => f.field_error("param bits", reason),
        other => f.error(other.to_string()),
    })?;
    Ok(bits)
}

/// A parameter, parsed, or an error naming it.
fn param<T: std::str::FromStr>(f: &IndexFile, key: &str) -> Result<T> {
    let raw = f
        .param_opt(key)
        .ok_or_else(|| f.field_error(format!("param {key}"), "missing"))?;
    raw.parse()
        .map_err(|_| f.field_error(format!("param {key}"), format!("`{raw}` is not valid")))
}

/// An index's validation error as an error naming the file and the field.
fn into_field(f: &IndexFile, e: Error) -> Error {
    match e {
        Error::InvalidParameter { name, reason } => f.field_error(name, reason),
        Error::LengthMismatch { what, left, right } => {
            f.field_error(what, format!("lengths differ ({left} vs {right})"))
        }
        other => f.error(other.to_string()),
    }
}

impl LinearScan {
    /// Saves the index (after verifying the file it was loaded from, if any: see
    /// [`HammingIndex::verify_source`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.with_writer(|w| w.write(path))
    }

    /// Stages the index file in `set`, to replace `path` when the set is committed.
    pub fn stage(&self, set: &mut OutputSet, path: &Path) -> Result<()> {
        self.with_writer(|w| w.stage(set, path))
    }

    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
        verify_origin(self.origin.as_ref())?;
        let mut w = Writer::new(FileKind::LinearScan);
        w.param("bits", self.bits())?.param("len", self.len())?;
        w.u64s("codes", self.codes())?.u32s("ids", self.ids())?;
        record_signer(&mut w, self.signer())?;
        f(&w)
    }

    /// Loads an index saved by [`save`](Self::save); its arrays are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = Arc::new(IndexFile::open(path)?);
        f.expect_kind(FileKind::LinearScan)?;
        Self::from_file(&f)
    }

    fn from_file(f: &Arc<IndexFile>) -> Result<Self> {
        let mut idx = LinearScan::from_parts(width(f)?, f.u64s("codes")?, f.u32s("ids")?)
            .map_err(|e| into_field(f, e))?;
        check_len(f, idx.len())?;
        idx.origin = Some(Origin(Arc::clone(f)));
        with_signer(f, idx)
    }
}

impl PermutedTables {
    /// Saves the index (tables, pending inserts and removals included), after verifying the
    /// file it was loaded from, if any ([`HammingIndex::verify_source`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.with_writer(|w| w.write(path))
    }

    /// Stages the index file in `set`, to replace `path` when the set is committed.
    pub fn stage(&self, set: &mut OutputSet, path: &Path) -> Result<()> {
        self.with_writer(|w| w.stage(set, path))
    }

    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
        verify_origin(self.origin.as_ref())?;
        let (dir, keys, vals, codes, row_ids, delta_codes, delta_ids, dead) = self.parts();
        let levels: Vec<String> = self.levels().iter().map(ToString::to_string).collect();
        let mut w = Writer::new(FileKind::PermutedTables);
        w.param("bits", self.bits())?
            .param("radius", self.built_radius())?
            .param("levels", levels.join(","))?
            .param("len", self.len())?;
        w.u32s("dir", dir)?
            .u8s("keys", keys)?
            .u32s("vals", vals)?
            .u64s("codes", codes)?
            .u32s("row_ids", row_ids)?;
        w.u64s("delta_codes", delta_codes)?
            .u32s("delta_ids", delta_ids)?
            .u32s("dead", &dead)?;
        record_signer(&mut w, self.signer())?;
        f(&w)
    }

    /// Loads an index saved by [`save`](Self::save); its tables are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = Arc::new(IndexFile::open(path)?);
        f.expect_kind(FileKind::PermutedTables)?;
        Self::from_file(&f)
    }

    fn from_file(f: &Arc<IndexFile>) -> Result<Self> {
        let raw: String = param(f, "levels")?;
        let levels = raw
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<usize>()
                    .map_err(|_| f.field_error("param levels", format!("bad level {s:?}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut idx = PermutedTables::from_parts(
            width(f)?,
            param(f, "radius")?,
            levels,
            f.u32s("dir")?,
            f.u8s("keys")?,
            f.u32s("vals")?,
            f.u64s("codes")?,
            f.u32s("row_ids")?,
            f.u64s("delta_codes")?.to_vec(),
            f.u32s("delta_ids")?.to_vec(),
            &f.u32s("dead")?,
        )
        .map_err(|e| into_field(f, e))?;
        check_len(f, idx.len())?;
        idx.origin = Some(Origin(Arc::clone(f)));
        with_signer(f, idx)
    }
}

impl MultiIndex {
    /// Saves the index (tables, pending inserts and removals included), after verifying the
    /// file it was loaded from, if any ([`HammingIndex::verify_source`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.with_writer(|w| w.write(path))
    }

    /// Stages the index file in `set`, to replace `path` when the set is committed.
    pub fn stage(&self, set: &mut OutputSet, path: &Path) -> Result<()> {
        self.with_writer(|w| w.stage(set, path))
    }

    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
        verify_origin(self.origin.as_ref())?;
        let p = self.to_parts();
        let mut w = Writer::new(FileKind::MultiIndex);
        w.param("bits", p.bits)?
            .param("substrings", p.substrings)?
            .param("auto_substrings", p.auto_substrings)?
            .param("fallback", p.fallback)?
            .param("len", self.len())?;
        if let Some(l) = p.delta_limit {
            w.param("delta_limit", l)?;
        }
        w.u64s("codes", &p.codes)?
            .u32s("ids", &p.ids)?
            .u64s("dead", &p.dead)?
            .u32s("rows", &p.rows)?;
        w.u32s("dirs", &p.dirs)?
            .u64s("keys", &p.keys)?
            .u64s("delta_codes", &p.delta_codes)?
            .u32s("delta_ids", &p.delta_ids)?;
        record_signer(&mut w, self.signer())?;
        f(&w)
    }

    /// Loads an index saved by [`save`](Self::save); its tables are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = Arc::new(IndexFile::open(path)?);
        f.expect_kind(FileKind::MultiIndex)?;
        Self::from_file(&f)
    }

    fn from_file(f: &Arc<IndexFile>) -> Result<Self> {
        let parts = MultiIndexParts {
            bits: width(f)?,
            substrings: param(f, "substrings")?,
            auto_substrings: param(f, "auto_substrings")?,
            delta_limit: f
                .param_opt("delta_limit")
                .map(|_| param(f, "delta_limit"))
                .transpose()?,
            fallback: param(f, "fallback")?,
            codes: f.u64s("codes")?,
            ids: f.u32s("ids")?,
            dead: f.u64s("dead")?,
            rows: f.u32s("rows")?,
            dirs: f.u32s("dirs")?,
            keys: f.u64s("keys")?,
            delta_codes: f.u64s("delta_codes")?.to_vec(),
            delta_ids: f.u32s("delta_ids")?.to_vec(),
        };
        let mut idx = MultiIndex::from_parts(parts).map_err(|e| into_field(f, e))?;
        check_len(f, idx.len())?;
        idx.origin = Some(Origin(Arc::clone(f)));
        with_signer(f, idx)
    }
}

impl PermutationIndex {
    /// Saves the index, after verifying the file it was loaded from, if any
    /// ([`HammingIndex::verify_source`]). Pending inserts and removals are merged first (into
    /// a copy when the index is not compact, so `self` is unchanged).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.with_writer(|w| w.write(path))
    }

    /// Stages the index file in `set`, to replace `path` when the set is committed.
    pub fn stage(&self, set: &mut OutputSet, path: &Path) -> Result<()> {
        self.with_writer(|w| w.stage(set, path))
    }

    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
        verify_origin(self.origin.as_ref())?;
        if !self.is_compact() {
            let mut c = self.clone();
            c.compact()?;
            return c.with_writer(f);
        }
        let mut w = Writer::new(FileKind::Permutation);
        w.param("bits", self.bits())?
            .param("beam", self.beam())?
            .param("seed", self.seed())?
            .param("permutations", self.permutations())?
            .param("len", self.len())?;
        w.u32s("perms", self.perms())?
            .u64s("codes", self.codes())?
            .u32s("ids", self.ids())?;
        w.u64s("keys", self.keys())?.u32s("order", self.order())?;
        record_signer(&mut w, self.signer())?;
        f(&w)
    }

    /// Loads an index saved by [`save`](Self::save); its arrays are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = Arc::new(IndexFile::open(path)?);
        f.expect_kind(FileKind::Permutation)?;
        Self::from_file(&f)
    }

    fn from_file(f: &Arc<IndexFile>) -> Result<Self> {
        let mut idx = PermutationIndex::from_parts(
            width(f)?,
            param(f, "beam")?,
            param(f, "seed")?,
            f.u32s("perms")?,
            f.u64s("codes")?,
            f.u32s("ids")?,
            f.u64s("keys")?,
            f.u32s("order")?,
        )
        .map_err(|e| into_field(f, e))?;
        if let Some(q) = f.param_opt("permutations")
            && q.parse::<usize>().ok() != Some(idx.permutations())
        {
            return Err(f.field_error(
                "param permutations",
                format!("{q} recorded, {} stored", idx.permutations()),
            ));
        }
        check_len(f, idx.len())?;
        idx.origin = Some(Origin(Arc::clone(f)));
        with_signer(f, idx)
    }
}

impl GraphIndex {
    /// Saves the index: its arrays as they are (the graph, the exact-code table, the entry
    /// points), and the last check.
    pub fn save(&self, path: &Path) -> Result<()> {
        let p = self.parts();
        let mut w = Writer::new(FileKind::Graph);
        w.param("bits", p.bits)?
            .param("m", p.m)?
            .param("ef", p.ef)?
            .param("ef_construction", p.ef_construction)?
            .param("seed", p.seed)?
            .param("fallback", p.fallback)?
            .param("len", self.len())?
            .param("nodes", self.nodes())?;
        w.param("check.mode", p.check.mode.name())?
            .param("check.nodes", p.check.nodes)?
            .param("check.sample", p.check.sample)?
            .param("check.recall", p.check.recall)?
            .param("check.distances", p.check.distances)?;
        w.u64s("codes", &p.codes)?
            .u32s("adj", &p.adj)?
            .u32s("node_ids", &p.node_ids)?
            .u32s("dup_nodes", &p.dup_nodes)?
            .u32s("dup_ids", &p.dup_ids)?
            .u32s("table", &p.table)?
            .u32s("entries", &p.entries)?
            .u64s("entry_codes", &p.entry_codes)?;
        record_signer(&mut w, self.signer())?;
        w.write(path)
    }

    /// Loads an index saved by [`save`](Self::save); its arrays are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = IndexFile::open(path)?;
        f.expect_kind(FileKind::Graph)?;
        Self::from_file(&f)
    }

    fn from_file(f: &IndexFile) -> Result<Self> {
        let check = Check {
            mode: param(f, "check.mode")?,
            nodes: param(f, "check.nodes")?,
            sample: param(f, "check.sample")?,
            recall: param(f, "check.recall")?,
            distances: param(f, "check.distances")?,
        };
        let idx = GraphIndex::from_parts(GraphParts {
            bits: width(f)?,
            m: param(f, "m")?,
            ef: param(f, "ef")?,
            ef_construction: param(f, "ef_construction")?,
            seed: param(f, "seed")?,
            fallback: param(f, "fallback")?,
            codes: f.u64s("codes")?,
            adj: f.u32s("adj")?,
            node_ids: f.u32s("node_ids")?,
            dup_nodes: f.u32s("dup_nodes")?,
            dup_ids: f.u32s("dup_ids")?,
            table: f.u32s("table")?,
            entries: f.u32s("entries")?,
            entry_codes: f.u64s("entry_codes")?,
            check,
        })
        .map_err(|e| into_field(f, e))?;
        check_len(f, idx.len())?;
        with_signer(f, idx)
    }
}

/// Records the signer of an index's codes ([`SignerRecord::params`]), when known.
fn record_signer<'a>(w: &mut Writer<'a>, signer: Option<&'a SignerRecord>) -> Result<()> {
    let Some(rec) = signer else { return Ok(()) };
    for (k, v) in rec.params() {
        w.param(k, v)?;
    }
    for (name, table) in rec.tables() {
        w.u8s(name, table)?;
    }
    Ok(())
}

/// The index with the signer its file records, if any (files written before the signer was
/// recorded have none), and the tables it embeds.
fn with_signer<I: HammingIndex>(f: &IndexFile, mut idx: I) -> Result<I> {
    let mut rec = SignerRecord::from_params(f.params());
    if let Some(r) = rec.as_mut() {
        let names: Vec<String> = f
            .section_names()
            .filter(|n| SignerRecord::is_table(n))
            .map(str::to_string)
            .collect();
        for name in names {
            r.add_table(&name, f.u8s(&name)?);
        }
    }
    idx.set_signer(rec).map_err(|e| into_field(f, e))?;
    Ok(idx)
}

fn check_len(f: &IndexFile, len: usize) -> Result<()> {
    let recorded: usize = param(f, "len")?;
    if len != recorded {
        return Err(f.field_error("param len", format!("{recorded} recorded, {len} stored")));
    }
    Ok(())
}

impl IndexFile {
    /// The [`IndexSpec`] recorded in the file's parameters: the kind and parameters the
    /// index was built with (files of earlier builds without a `permutations` parameter get
    /// it from the length of the `perms` section).
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming the file and the parameter that is missing or not
    /// valid, or [`Error::Format`] when the file holds signatures.
    pub fn spec(&self) -> Result<IndexSpec> {
        let mut params = self.params().clone();
        if self.kind() == FileKind::Permutation && !params.contains_key("permutations") {
            let bits = width(self)?;
            let perms = self.section_len("perms")?;
            params.insert("permutations".into(), (perms / bits).to_string());
        }
        IndexSpec::from_params(self.kind(), &params).map_err(|e| match e {
            Error::InvalidParameter {
                name: "kind",
                reason,
            } => self.error(reason),
            Error::InvalidParameter { name, reason } => {
                self.field_error(format!("param {name}"), reason)
            }
            other => self.error(other.to_string()),
        })
    }
}

/// The file a loaded index was opened from (shared by the index's copies), kept so that
/// the contents it carries over are verified before they are written anywhere
/// ([`HammingIndex::verify_source`]): an index opened in `O(1)` whose file is corrupt must not
/// be saved with a fresh, valid checksum.
#[derive(Clone, Debug)]
pub(crate) struct Origin(Arc<IndexFile>);

impl Origin {
    /// Verifies the file once (checksum, then every invariant of what it holds).
    pub(crate) fn verify(&self) -> Result<()> {
        verify_file(&self.0)
    }

    /// True once the file has been verified.
    pub(crate) fn is_verified(&self) -> bool {
        self.0.is_sound()
    }
}

/// Verifies the origin of an index, if it has one (see [`Origin`]).
pub(crate) fn verify_origin(origin: Option<&Origin>) -> Result<()> {
    origin.map_or(Ok(()), Origin::verify)
}

/// Verifies `f` whole (checksum, then the invariants of the index it holds), once.
fn verify_file(f: &Arc<IndexFile>) -> Result<()> {
    if f.is_sound() {
        return Ok(());
    }
    f.verify()?;
    load_from(f)?.validate().map_err(|e| into_field(f, e))?;
    f.mark_sound();
    Ok(())
}

/// How [`load_index_with`] opens an index file.
///
/// ```
/// use simlsh::io::{LoadOptions, load_index_with};
/// # let dir = std::env::temp_dir().join(format!("simlsh-doc-load-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let path = dir.join("codes.idx");
/// # let codes = simlsh::SignatureMatrix::from_parts(64, vec![1u64, 2, 3])?;
/// # simlsh::LinearScan::build(&codes)?.save(&path)?;
/// // Read into memory and checked whole: safe from files truncated in place by other tools.
/// let idx = load_index_with(&path, &LoadOptions::default().copy(true).verify(true))?;
/// assert!(idx.is_verified());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    verify: bool,
    copy: bool,
}

impl LoadOptions {
    /// Verifies the file whole before returning (its checksum, then every invariant of the
    /// index: `O(file size)`, as [`verify_index`]); default `false`, the `O(1)` open. An index
    /// loaded without it is verified before its first save ([`HammingIndex::verify_source`]).
    pub fn verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Reads the file into memory instead of mapping it ([`IndexFile::open_copied`]):
    /// `O(file size)`, and the index no longer depends on the file, which another program may
    /// then truncate or rewrite in place without harm (a mapped file truncated in place kills
    /// the process with `SIGBUS`: see the [format docs](super::format)). Default `false`.
    pub fn copy(mut self, on: bool) -> Self {
        self.copy = on;
        self
    }
}

/// Loads any index file, whatever its kind. Opening checks the header and the section
/// table, loading checks every parameter and the length of every section against them,
/// without reading the data (the contents are checked by [`verify_index`], and before the
/// index is first saved: [`HammingIndex::verify_source`]). The arrays are memory-mapped (see
/// the [format docs](super::format) for files changed in place; [`load_index_with`] copies).
pub fn load_index(path: &Path) -> Result<Box<dyn HammingIndex>> {
    load_index_with(path, &LoadOptions::default())
}

/// Loads any index file as [`load_index`] does, with [`LoadOptions`]: verified whole first,
/// read into memory instead of mapped.
///
/// # Errors
/// Those of [`load_index`], and with [`verify`](LoadOptions::verify) those of
/// [`verify_index`].
pub fn load_index_with(path: &Path, opts: &LoadOptions) -> Result<Box<dyn HammingIndex>> {
    let f = Arc::new(if opts.copy {
        IndexFile::open_copied(path)?
    } else {
        IndexFile::open(path)?
    });
    if opts.verify {
        verify_file(&f)?;
    }
    load_from(&f)
}

fn load_from(f: &Arc<IndexFile>) -> Result<Box<dyn HammingIndex>> {
    Ok(match f.kind() {
        FileKind::LinearScan => Box::new(LinearScan::from_file(f)?),
        FileKind::PermutedTables => Box::new(PermutedTables::from_file(f)?),
        FileKind::MultiIndex => Box::new(MultiIndex::from_file(f)?),
        FileKind::Permutation => Box::new(PermutationIndex::from_file(f)?),
        FileKind::Graph => Box::new(GraphIndex::from_file(f)?),
        FileKind::Signatures => return Err(f.error("holds signatures, not an index")),
        FileKind::Store => return Err(f.error("holds a part of a store, not an index")),
    })
}

/// Verifies an index file completely: its checksum ([`IndexFile::verify`]), then every
/// invariant of the index it holds ([`HammingIndex::validate`]): `O(file size)`. What the
/// command line's `index verify` runs.
///
/// # Errors
/// [`Error::Checksum`] for a corrupt file, [`Error::InvalidField`] naming the file and the
/// section whose contents are inconsistent, or the errors of [`load_index`].
pub fn verify_index(path: &Path) -> Result<()> {
    verify_file(&Arc::new(IndexFile::open(path)?))
}
