//! The codecs: signature matrices and every index kind to and from the
//! [format](super::format), through files, writers and bytes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::{FileKind, IndexFile, Writer};
use crate::error::{Error, Result};
use crate::fs::OutputSet;
use crate::index::graph::{Check, GraphParts};
use crate::index::meta::Origin;
use crate::index::mih::MultiIndexParts;
use crate::index::{
    GraphIndex, HammingIndex, LinearScan, MultiIndex, PermutationIndex, PermutedTables,
    SignerRecord, check_bits,
};
use crate::signature::SignatureMatrix;
use crate::signers::SignerInfo;
use crate::storage::{Buf, Bytes};

/// Records a signer's parameters as `signer.*` file parameters ([`SignerInfo::to_params`];
/// [`SignerSpec::from_params`](crate::signers::SignerSpec::from_params) reads them back).
///
/// # Errors
/// [`Error::InvalidParameter`] for a signer parameter whose name is not a valid key.
pub(crate) fn signer_params(w: &mut Writer<'_>, info: &SignerInfo) -> Result<()> {
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
pub(super) fn width(f: &IndexFile) -> Result<usize> {
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
    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
        let mut w = Writer::new(FileKind::LinearScan);
        w.param("bits", self.bits())?.param("len", self.len())?;
        w.u64s("codes", self.codes())?.u32s("ids", self.ids())?;
        record_signer(&mut w, self.signer())?;
        f(&w)
    }

    fn from_file(f: &Arc<IndexFile>) -> Result<Self> {
        let mut idx = LinearScan::from_parts(width(f)?, f.u64s("codes")?, f.u32s("ids")?)
            .map_err(|e| into_field(f, e))?;
        check_len(f, idx.len())?;
        idx.meta.set_origin(Arc::new(FileOrigin(Arc::clone(f))));
        with_signer(f, idx)
    }
}

impl PermutedTables {
    /// The tables, pending inserts and removals included.
    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
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
        idx.meta.set_origin(Arc::new(FileOrigin(Arc::clone(f))));
        with_signer(f, idx)
    }
}

impl MultiIndex {
    /// The tables, pending inserts and removals included.
    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
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
        idx.meta.set_origin(Arc::new(FileOrigin(Arc::clone(f))));
        with_signer(f, idx)
    }
}

impl PermutationIndex {
    /// Pending inserts and removals are merged first (into a copy when the index is not
    /// compact, so `self` is unchanged).
    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
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
        idx.meta.set_origin(Arc::new(FileOrigin(Arc::clone(f))));
        with_signer(f, idx)
    }
}

impl GraphIndex {
    /// The arrays as they are (the graph, the exact-code table, the entry points), and the
    /// last check.
    fn with_writer<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
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
        f(&w)
    }

    fn from_file(f: &Arc<IndexFile>) -> Result<Self> {
        let check = Check {
            mode: param(f, "check.mode")?,
            nodes: param(f, "check.nodes")?,
            sample: param(f, "check.sample")?,
            recall: param(f, "check.recall")?,
            distances: param(f, "check.distances")?,
        };
        let mut idx = GraphIndex::from_parts(GraphParts {
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
        idx.meta.set_origin(Arc::new(FileOrigin(Arc::clone(f))));
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

/// The file a loaded index was opened from (shared by the index's copies), kept so that
/// the contents it carries over are verified before they are written anywhere
/// ([`HammingIndex::verify_source`]): an index opened in `O(1)` whose file is corrupt must not
/// be saved with a fresh, valid checksum.
#[derive(Debug)]
struct FileOrigin(Arc<IndexFile>);

impl Origin for FileOrigin {
    fn verify(&self) -> Result<()> {
        verify_file(&self.0)
    }

    fn is_verified(&self) -> bool {
        self.0.is_sound()
    }
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

/// The file of `idx`, as the closure `f` takes it, after verifying the source `idx` was
/// loaded from, if any ([`HammingIndex::verify_source`]).
fn with_writer<R>(idx: &dyn HammingIndex, f: impl FnOnce(&Writer<'_>) -> Result<R>) -> Result<R> {
    idx.verify_source()?;
    let any = idx.as_any();
    if let Some(i) = any.downcast_ref::<LinearScan>() {
        i.with_writer(f)
    } else if let Some(i) = any.downcast_ref::<PermutedTables>() {
        i.with_writer(f)
    } else if let Some(i) = any.downcast_ref::<MultiIndex>() {
        i.with_writer(f)
    } else if let Some(i) = any.downcast_ref::<PermutationIndex>() {
        i.with_writer(f)
    } else if let Some(i) = any.downcast_ref::<GraphIndex>() {
        i.with_writer(f)
    } else {
        Err(Error::Unsupported(format!(
            "saving an index of kind {}: only the crate's index kinds have a file format",
            idx.kind()
        )))
    }
}

/// Saves an index to `path` in the [file format](super::format), atomically (a temporary
/// file, fsynced and renamed: a crash leaves the old file or the new one); load it back with
/// [`load_index`], memory-mapped. An index loaded from a file or bytes first verifies them
/// ([`HammingIndex::verify_source`]), so that a corrupt file is never rewritten with a fresh
/// checksum. The tables, pending inserts and removals are saved as they are (a permutation
/// index merges its pending changes into a copy first).
///
/// ```
/// use simlsh::HammingIndex;
/// use simlsh::persist::{load_index, save_index};
/// # let dir = std::env::temp_dir().join(format!("simlsh-doc-save-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let codes = simlsh::SignatureMatrix::from_parts(64, vec![1u64, 2, 3])?;
/// let idx = simlsh::LinearScan::build(&codes)?;
/// let path = dir.join("codes.idx");
/// save_index(&idx, &path)?;
/// assert_eq!(load_index(&path)?.knn(&[3], 1)?, idx.knn(&[3], 1)?);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Io`] naming `path`; those of [`HammingIndex::verify_source`];
/// [`Error::Unsupported`] for an index type outside the crate.
pub fn save_index(idx: &dyn HammingIndex, path: &Path) -> Result<()> {
    with_writer(idx, |w| w.write(path))
}

/// Stages the index file of [`save_index`] in `set` (an [`OutputSet`]): it replaces `path`
/// when the set is committed, together with the set's other outputs, or never if the set is
/// dropped.
///
/// # Errors
/// As [`save_index`].
pub fn stage_index(idx: &dyn HammingIndex, set: &mut OutputSet, path: &Path) -> Result<()> {
    with_writer(idx, |w| w.stage(set, path))
}

/// Writes the index file of [`save_index`] to `out`, from the header to the footer: the same
/// bytes, to any writer (a buffer, a socket); [`read_index`] opens them.
///
/// ```
/// use simlsh::persist::{read_index, write_index};
/// use simlsh::storage::Bytes;
///
/// let codes = simlsh::SignatureMatrix::from_parts(64, vec![1u64, 2, 3])?;
/// let idx = simlsh::index::IndexSpec::Linear.build(&codes)?;
/// let mut bytes = Vec::new();
/// write_index(idx.as_ref(), &mut bytes)?;
/// let back = read_index(Bytes::from(bytes))?;
/// assert_eq!(back.knn(&[3], 2)?, idx.knn(&[3], 2)?);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::Io`] (naming `<writer>`) when `out` fails; those of
/// [`HammingIndex::verify_source`]; [`Error::Unsupported`] for an index type outside the
/// crate.
pub fn write_index(idx: &dyn HammingIndex, out: &mut dyn Write) -> Result<()> {
    with_writer(idx, |w| {
        w.write_to(out).map_err(|source| Error::Io {
            path: PathBuf::from("<writer>"),
            source,
        })
    })
}

/// How [`load_index_with`] opens an index file, and [`read_index_with`] index bytes.
///
/// ```
/// use simlsh::persist::{LoadOptions, load_index_with, save_index};
/// # let dir = std::env::temp_dir().join(format!("simlsh-doc-load-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let path = dir.join("codes.idx");
/// # let codes = simlsh::SignatureMatrix::from_parts(64, vec![1u64, 2, 3])?;
/// # save_index(&simlsh::LinearScan::build(&codes)?, &path)?;
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
    /// the process with `SIGBUS`: see the [format docs](super::format)). Default `false`. For
    /// bytes ([`read_index_with`]), copies them into a buffer of the index's own.
    pub fn copy(mut self, on: bool) -> Self {
        self.copy = on;
        self
    }

    /// Whether the file is verified whole before returning ([`verify`](Self::verify)).
    pub fn verifies(&self) -> bool {
        self.verify
    }

    /// Whether the file is read into memory ([`copy`](Self::copy)).
    pub fn copies(&self) -> bool {
        self.copy
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
    let f = if opts.copy {
        IndexFile::open_copied(path)?
    } else {
        IndexFile::open(path)?
    };
    open_index(f, opts)
}

/// Opens the bytes of an index file ([`write_index`], [`save_index`] or the command line
/// wrote them) exactly as [`load_index`] opens a file: the header, version, section table,
/// every parameter and the length of every section are checked, in `O(1)` of the data; the
/// checksum and contents are verified before the index is first saved, or at once with
/// [`read_index_with`] and [`LoadOptions::verify`]. The arrays are borrowed from `bytes`
/// without copying (see [`IndexFile::from_bytes`]). Errors name the file `<bytes>`.
///
/// # Errors
/// As [`load_index`].
pub fn read_index(bytes: Bytes) -> Result<Box<dyn HammingIndex>> {
    read_index_with(bytes, &LoadOptions::default())
}

/// [`read_index`] with [`LoadOptions`]: verified whole first, or copied.
///
/// # Errors
/// As [`load_index_with`].
pub fn read_index_with(bytes: Bytes, opts: &LoadOptions) -> Result<Box<dyn HammingIndex>> {
    let bytes = if opts.copy {
        Bytes::copied(&bytes)
    } else {
        bytes
    };
    open_index(IndexFile::from_bytes(bytes)?, opts)
}

fn open_index(f: IndexFile, opts: &LoadOptions) -> Result<Box<dyn HammingIndex>> {
    let f = Arc::new(f);
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
