//! The mapping between the kinds of the file format ([`FileKind`]) and the index specs
//! ([`IndexSpec`]): which spec a file's parameters record.

use std::collections::BTreeMap;

use super::format::{FileKind, IndexFile};
use crate::error::{Error, Result};
use crate::index::{GraphSpec, IndexSpec, MankuDesign, MankuSpec, MihSpec, PermutationSpec};

/// The spec recorded in an index file's parameters, for an index of `kind`.
///
/// # Errors
/// [`Error::InvalidParameter`] naming the parameter that is missing or not valid, or
/// `kind` when `kind` is not an index.
fn from_params(kind: FileKind, params: &BTreeMap<String, String>) -> Result<IndexSpec> {
    let get = |key: &'static str| -> Result<&str> {
        params
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| Error::param(key, "missing from the file's parameters"))
    };
    let parse = |key: &'static str| -> Result<u64> {
        let v = get(key)?;
        v.parse()
            .map_err(|_| Error::param(key, format!("`{v}` is not a valid number")))
    };
    let flag = |key: &'static str| -> Result<bool> {
        let v = get(key)?;
        v.parse()
            .map_err(|_| Error::param(key, format!("`{v}` is not true or false")))
    };
    let size = |key: &'static str| -> Result<usize> {
        usize::try_from(parse(key)?).map_err(|_| Error::param(key, "too large"))
    };
    Ok(match kind {
        FileKind::LinearScan => IndexSpec::Linear,
        FileKind::PermutedTables => IndexSpec::Manku(MankuSpec {
            radius: u32::try_from(parse("radius")?)
                .map_err(|_| Error::param("radius", "too large"))?,
            design: MankuDesign::Levels(levels(get("levels")?)?),
        }),
        FileKind::MultiIndex => IndexSpec::Mih(MihSpec {
            substrings: (!flag("auto_substrings")?)
                .then(|| size("substrings"))
                .transpose()?,
            delta_limit: params
                .contains_key("delta_limit")
                .then(|| size("delta_limit"))
                .transpose()?,
            fallback: flag("fallback")?,
        }),
        FileKind::Permutation => IndexSpec::Permutation(PermutationSpec {
            permutations: size("permutations")?,
            beam: size("beam")?,
            seed: parse("seed")?,
        }),
        FileKind::Graph => IndexSpec::Graph(GraphSpec {
            m: size("m")?,
            ef: size("ef")?,
            ef_construction: size("ef_construction")?,
            seed: parse("seed")?,
            fallback: flag("fallback")?,
        }),
        FileKind::Signatures => {
            return Err(Error::param("kind", "a signature file is not an index"));
        }
        FileKind::Store => {
            return Err(Error::param("kind", "a part of a store is not an index"));
        }
    })
}

/// The block counts of a Manku design as the file writes them: comma-separated, empty for a
/// scan.
fn levels(raw: &str) -> Result<Vec<usize>> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    raw.split(',')
        .map(|v| match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::param("levels", "not a list of block counts")),
        })
        .collect()
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
            let bits = super::codecs::width(self)?;
            let perms = self.section_len("perms")?;
            params.insert("permutations".into(), (perms / bits).to_string());
        }
        from_params(self.kind(), &params).map_err(|e| match e {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_as_the_file_writes_them() {
        assert_eq!(levels("").unwrap(), Vec::<usize>::new());
        assert_eq!(levels("6").unwrap(), vec![6]);
        assert_eq!(levels("4,3").unwrap(), vec![4, 3]);
        assert!(levels("4,0").is_err() && levels("4,x").is_err() && levels("4+3").is_err());
    }

    #[test]
    fn every_index_kind_maps_to_its_spec_and_back() {
        let codes = crate::SignatureMatrix::from_parts(64, (0..40u64).collect::<Vec<_>>()).unwrap();
        for spec in ["linear", "manku:k=2", "mih", "permutation:q=4", "graph"] {
            let spec: IndexSpec = spec.parse().unwrap();
            let idx = spec.build(&codes).unwrap();
            let mut bytes = Vec::new();
            super::super::write_index(idx.as_ref(), &mut bytes).unwrap();
            let f = IndexFile::from_bytes(bytes.into()).unwrap();
            assert_eq!(f.spec().unwrap(), idx.spec(), "{spec}");
        }
        let mut w = super::super::Writer::new(FileKind::Signatures);
        w.param("bits", 64).unwrap();
        let mut bytes = Vec::new();
        w.write_to(&mut bytes).unwrap();
        let f = IndexFile::from_bytes(bytes.into()).unwrap();
        assert!(matches!(f.spec(), Err(Error::Format { .. })));
    }
}
