//! Saving and loading signature matrices and indexes in the [format](super::format).

use std::collections::BTreeMap;
use std::path::Path;

use super::format::{FileKind, IndexFile, Writer};
use crate::error::Result;
use crate::index::{HammingIndex, LinearScan};
use crate::signature::SignatureMatrix;
use crate::signers::SignerInfo;
use crate::storage::Buf;

/// Records a signer's parameters as `signer.*` file parameters.
pub fn signer_params(w: &mut Writer<'_>, info: &SignerInfo) {
    w.param("signer.kind", info.kind)
        .param("signer.seed", info.seed)
        .param("signer.bits", info.bits);
    if let Some(d) = info.dim {
        w.param("signer.dim", d);
    }
    for (k, v) in &info.params {
        w.param(&format!("signer.{k}"), v);
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
        if idx.len() != f.param::<usize>("len")? {
            return Err(f.error("stored count differs from the recorded one"));
        }
        Ok(idx)
    }
}

/// Loads any index file, whatever its kind.
pub fn load_index(path: &Path) -> Result<Box<dyn HammingIndex>> {
    let f = IndexFile::open(path)?;
    match f.kind() {
        FileKind::LinearScan => Ok(Box::new(LinearScan::from_file(&f)?)),
        other => Err(f.error(format!("holds {other:?}, not an index this build can load"))),
    }
}
