//! Saving and loading signature matrices and indexes in the [format](super::format).

use std::collections::BTreeMap;
use std::path::Path;

use super::format::{FileKind, IndexFile, Writer};
use crate::error::Result;
use crate::index::mih::MultiIndexParts;
use crate::index::{
    HammingIndex, IndexSpec, LinearScan, MultiIndex, PermutationIndex, PermutedTables,
};
use crate::signature::SignatureMatrix;
use crate::signers::SignerInfo;
use crate::storage::Buf;

/// Records a signer's parameters as `signer.*` file parameters ([`SignerInfo::to_params`];
/// [`SignerSpec::from_params`](crate::signers::SignerSpec::from_params) reads them back).
pub fn signer_params(w: &mut Writer<'_>, info: &SignerInfo) {
    for (k, v) in info.to_params() {
        w.param(&k, v);
    }
}

/// Saves a signature matrix, with the parameters of the signer that made it when known.
pub fn save_signatures<S: AsRef<[u64]>>(
    path: &Path,
    sigs: &SignatureMatrix<S>,
    signer: Option<&SignerInfo>,
) -> Result<()> {
    let mut w = Writer::new(FileKind::Signatures);
    w.param("bits", sigs.bits()).param("rows", sigs.len());
    if let Some(info) = signer {
        signer_params(&mut w, info);
    }
    w.u64s("codes", sigs.as_slice());
    w.write(path)
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
    let bits: usize = f.param("bits")?;
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

impl LinearScan {
    /// Saves the index.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut w = Writer::new(FileKind::LinearScan);
        w.param("bits", self.bits()).param("len", self.len());
        w.u64s("codes", self.codes()).u32s("ids", self.ids());
        w.write(path)
    }

    /// Loads an index saved by [`save`](Self::save); its arrays are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = IndexFile::open(path)?;
        f.expect_kind(FileKind::LinearScan)?;
        Self::from_file(&f)
    }

    fn from_file(f: &IndexFile) -> Result<Self> {
        let idx = LinearScan::from_parts(f.param("bits")?, f.u64s("codes")?, f.u32s("ids")?)
            .map_err(|e| f.error(e.to_string()))?;
        check_len(f, idx.len())?;
        Ok(idx)
    }
}

impl PermutedTables {
    /// Saves the index (tables, pending inserts and removals included).
    pub fn save(&self, path: &Path) -> Result<()> {
        let (dir, keys, vals, codes, row_ids, delta_codes, delta_ids, dead) = self.parts();
        let levels: Vec<String> = self.levels().iter().map(ToString::to_string).collect();
        let mut w = Writer::new(FileKind::PermutedTables);
        w.param("bits", self.bits())
            .param("radius", self.built_radius())
            .param("levels", levels.join(","))
            .param("len", self.len());
        w.u32s("dir", dir)
            .u8s("keys", keys)
            .u32s("vals", vals)
            .u64s("codes", codes)
            .u32s("row_ids", row_ids);
        w.u64s("delta_codes", delta_codes)
            .u32s("delta_ids", delta_ids)
            .u32s("dead", &dead);
        w.write(path)
    }

    /// Loads an index saved by [`save`](Self::save); its tables are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = IndexFile::open(path)?;
        f.expect_kind(FileKind::PermutedTables)?;
        Self::from_file(&f)
    }

    fn from_file(f: &IndexFile) -> Result<Self> {
        let levels = f
            .param::<String>("levels")?
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<usize>()
                    .map_err(|_| f.error(format!("bad level {s:?}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let idx = PermutedTables::from_parts(
            f.param("bits")?,
            f.param("radius")?,
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
        .map_err(|e| f.error(e.to_string()))?;
        check_len(f, idx.len())?;
        Ok(idx)
    }
}

impl MultiIndex {
    /// Saves the index (tables, pending inserts and removals included).
    pub fn save(&self, path: &Path) -> Result<()> {
        let p = self.to_parts();
        let mut w = Writer::new(FileKind::MultiIndex);
        w.param("bits", p.bits)
            .param("substrings", p.substrings)
            .param("auto_substrings", p.auto_substrings)
            .param("fallback", p.fallback)
            .param("len", self.len());
        if let Some(l) = p.delta_limit {
            w.param("delta_limit", l);
        }
        w.u64s("codes", &p.codes)
            .u32s("ids", &p.ids)
            .u64s("dead", &p.dead)
            .u32s("rows", &p.rows);
        w.u32s("dirs", &p.dirs)
            .u64s("keys", &p.keys)
            .u64s("delta_codes", &p.delta_codes)
            .u32s("delta_ids", &p.delta_ids);
        w.write(path)
    }

    /// Loads an index saved by [`save`](Self::save); its tables are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = IndexFile::open(path)?;
        f.expect_kind(FileKind::MultiIndex)?;
        Self::from_file(&f)
    }

    fn from_file(f: &IndexFile) -> Result<Self> {
        let parts = MultiIndexParts {
            bits: f.param("bits")?,
            substrings: f.param("substrings")?,
            auto_substrings: f.param("auto_substrings")?,
            delta_limit: f
                .param_opt("delta_limit")
                .map(|_| f.param("delta_limit"))
                .transpose()?,
            fallback: f.param("fallback")?,
            codes: f.u64s("codes")?,
            ids: f.u32s("ids")?,
            dead: f.u64s("dead")?,
            rows: f.u32s("rows")?,
            dirs: f.u32s("dirs")?,
            keys: f.u64s("keys")?,
            delta_codes: f.u64s("delta_codes")?.to_vec(),
            delta_ids: f.u32s("delta_ids")?.to_vec(),
        };
        let idx = MultiIndex::from_parts(parts).map_err(|e| f.error(e.to_string()))?;
        check_len(f, idx.len())?;
        Ok(idx)
    }
}

impl PermutationIndex {
    /// Saves the index. Pending inserts and removals are merged first (into a copy when the
    /// index is not compact, so `self` is unchanged).
    pub fn save(&self, path: &Path) -> Result<()> {
        if !self.is_compact() {
            let mut c = self.clone();
            c.compact();
            return c.save(path);
        }
        let mut w = Writer::new(FileKind::Permutation);
        w.param("bits", self.bits())
            .param("beam", self.beam())
            .param("seed", self.seed())
            .param("permutations", self.permutations())
            .param("len", self.len());
        w.u32s("perms", self.perms())
            .u64s("codes", self.codes())
            .u32s("ids", self.ids());
        w.u64s("keys", self.keys()).u32s("order", self.order());
        w.write(path)
    }

    /// Loads an index saved by [`save`](Self::save); its arrays are memory-mapped.
    pub fn load(path: &Path) -> Result<Self> {
        let f = IndexFile::open(path)?;
        f.expect_kind(FileKind::Permutation)?;
        Self::from_file(&f)
    }

    fn from_file(f: &IndexFile) -> Result<Self> {
        let idx = PermutationIndex::from_parts(
            f.param("bits")?,
            f.param("beam")?,
            f.param("seed")?,
            f.u32s("perms")?,
            f.u64s("codes")?,
            f.u32s("ids")?,
            f.u64s("keys")?,
            f.u32s("order")?,
        )
        .map_err(|e| f.error(e.to_string()))?;
        check_len(f, idx.len())?;
        Ok(idx)
    }
}

fn check_len(f: &IndexFile, len: usize) -> Result<()> {
    if len != f.param::<usize>("len")? {
        return Err(f.error("stored count differs from the recorded one"));
    }
    Ok(())
}

impl IndexFile {
    /// The [`IndexSpec`] recorded in the file's parameters: the kind and parameters the
    /// index was built with (files of earlier builds without a `permutations` parameter get
    /// it from the length of the `perms` section).
    ///
    /// # Errors
    /// [`Error::Format`](crate::Error::Format) naming the file and the parameter that is
    /// missing or not valid, or when the file holds signatures.
    pub fn spec(&self) -> Result<IndexSpec> {
        let mut params = self.params().clone();
        if self.kind() == FileKind::Permutation && !params.contains_key("permutations") {
            let bits: usize = self.param("bits")?;
            let perms = self.section_len("perms")?;
            params.insert("permutations".into(), (perms / bits.max(1)).to_string());
        }
        IndexSpec::from_params(self.kind(), &params).map_err(|e| self.error(e.to_string()))
    }
}

/// Loads any index file, whatever its kind.
pub fn load_index(path: &Path) -> Result<Box<dyn HammingIndex>> {
    let f = IndexFile::open(path)?;
    Ok(match f.kind() {
        FileKind::LinearScan => Box::new(LinearScan::from_file(&f)?),
        FileKind::PermutedTables => Box::new(PermutedTables::from_file(&f)?),
        FileKind::MultiIndex => Box::new(MultiIndex::from_file(&f)?),
        FileKind::Permutation => Box::new(PermutationIndex::from_file(&f)?),
        FileKind::Signatures => return Err(f.error("holds signatures, not an index")),
    })
}
