//! [`SignerRecord`]: the signer that made an index's codes, recorded with the index (in
//! memory and in its file), so that queries are signed like the index without repeating the
//! signer's options.
//!
//! An index file records the `signer.*` parameters of [`SignerSpec::to_params`] (the same
//! keys a signature file records), and for text the `text.*` options of the tokenizer that
//! made the features (mode, n-gram, weighting, ...). Files without them (written before they
//! were recorded, or of codes whose signer is unknown) load with no record.
//!
//! ```
//! use simlsh::index::{HammingIndex, LinearScan, SignerRecord};
//! use simlsh::signers::{Signer, SignerSpec};
//! use ndarray::array;
//!
//! let spec = "gaussian".parse::<SignerSpec>()?.bits(64).seed(3).dim(2);
//! let signer = spec.build(None)?;
//! let mut idx = LinearScan::build(&signer.sign_dense(&array![[1.0f32, 0.0], [0.0, 1.0]])?)?;
//! idx.set_signer(Some(SignerRecord::from_spec(&spec)))?;
//! // A loaded index gives the spec back; building it signs queries as the index's codes.
//! assert_eq!(idx.signer_spec().transpose()?, Some(spec));
//! # Ok::<(), simlsh::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::signers::{SignerInfo, SignerSpec};

/// Prefix of the signer's parameters.
const SIGNER: &str = "signer.";
/// Prefix of the text options.
const TEXT: &str = "text.";

/// The signer of an index's codes: the `signer.*` parameters (as [`SignerSpec::to_params`]
/// and [`SignerInfo::to_params`] write them) and, for text, the `text.*` tokenizer options.
/// [`spec`](Self::spec) rebuilds the signer; [`HammingIndex::signer`](super::HammingIndex::signer)
/// gives an index's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignerRecord {
    params: BTreeMap<String, String>,
}

impl SignerRecord {
    /// The record of `spec` (its width, seed and dimension included).
    pub fn from_spec(spec: &SignerSpec) -> Self {
        SignerRecord {
            params: spec.to_params(),
        }
    }

    /// The record of a built signer ([`Signer::info`](crate::signers::Signer::info)).
    pub fn from_info(info: &SignerInfo) -> Self {
        SignerRecord {
            params: info.to_params(),
        }
    }

    /// The record in a file's parameters (a signature or index file): its `signer.*` and
    /// `text.*` keys, other keys ignored; `None` when no `signer.kind` is recorded.
    pub fn from_params(params: &BTreeMap<String, String>) -> Option<Self> {
        params.contains_key("signer.kind").then(|| SignerRecord {
            params: params
                .iter()
                .filter(|(k, _)| k.starts_with(SIGNER) || k.starts_with(TEXT))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
    }

    /// Adds a text option, recorded as `text.KEY` (`key` of `a-z`, `0-9` and `_`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an empty key or one with other characters.
    pub fn text_option(mut self, key: &str, value: impl ToString) -> Result<Self> {
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(Error::param(
                "text option",
                format!("{key:?}: expected one or more of a-z, 0-9 and `_`"),
            ));
        }
        self.params
            .insert(format!("{TEXT}{key}"), value.to_string().replace('\n', " "));
        Ok(self)
    }

    /// Every recorded parameter (`signer.*` and `text.*` keys), as written in the file.
    pub fn params(&self) -> &BTreeMap<String, String> {
        &self.params
    }

    /// The signer's kind as recorded (`gaussian`, `hashing-trick`, `custom`, ...).
    pub fn kind(&self) -> &str {
        self.params.get("signer.kind").map_or("", String::as_str)
    }

    /// The recorded signature width, if recorded and a number.
    pub fn bits(&self) -> Option<usize> {
        self.params.get("signer.bits")?.parse().ok()
    }

    /// The text options (`text.*` keys without their prefix); empty for vectors.
    pub fn text_options(&self) -> BTreeMap<&str, &str> {
        self.params
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(TEXT)?, v.as_str())))
            .collect()
    }

    /// The spec that rebuilds the signer ([`SignerSpec::from_params`]).
    ///
    /// # Errors
    /// Those of [`SignerSpec::from_params`]: a missing or malformed value, a `custom` matrix
    /// (not drawn from a seed), a hash other than this release's.
    pub fn spec(&self) -> Result<SignerSpec> {
        SignerSpec::from_params(&self.params)
    }

    /// Whether the two records name the same signer ([`SignerSpec::same_signer`]): compared
    /// by parameters, never by building either signer, so that a record naming a huge matrix
    /// or pool is compared at no cost. Records whose `signer.*` parameters are equal are the
    /// same signer; records that do not rebuild (a `custom` matrix, a malformed record) are
    /// the same only when equal.
    pub fn same_signer(&self, other: &SignerRecord) -> bool {
        let signer = |r: &SignerRecord| -> BTreeMap<String, String> {
            r.params
                .iter()
                .filter(|(k, _)| k.starts_with(SIGNER))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        if signer(self) == signer(other) {
            return true;
        }
        match (self.spec(), other.spec()) {
            (Ok(a), Ok(b)) => a.same_signer(&b),
            _ => false,
        }
    }

    /// Checks the record against an index of `bits`-bit codes: its width must be `bits`.
    pub(crate) fn check_width(&self, bits: usize) -> Result<()> {
        match self.bits() {
            Some(b) if b == bits => Ok(()),
            Some(b) => Err(Error::param(
                "signer.bits",
                format!("the signer makes {b}-bit codes, the index holds {bits}-bit codes"),
            )),
            None => Err(Error::param(
                "signer.bits",
                "missing or not a number in the signer record",
            )),
        }
    }
}

/// Replaces `slot` (an index's record) with `new`, checked against the index's width.
pub(crate) fn set(
    slot: &mut Option<SignerRecord>,
    bits: usize,
    new: Option<SignerRecord>,
) -> Result<()> {
    if let Some(r) = &new {
        r.check_width(bits)?;
    }
    *slot = new;
    Ok(())
}

impl fmt::Display for SignerRecord {
    /// The signer's text form with its width, seed and dimension (`gaussian (f=128, seed=7,
    /// D=50)`), or the recorded kind when the spec does not rebuild (a `custom` matrix).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.spec() {
            Ok(s) => {
                write!(f, "{s} (f={}, seed={}", s.bits, s.seed)?;
                if let Some(d) = s.dim {
                    write!(f, ", D={d}")?;
                }
                f.write_str(")")
            }
            Err(_) => write!(f, "{} (not rebuildable)", self.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_file_parameters() {
        let spec = "super-bit:depth=8"
            .parse::<SignerSpec>()
            .unwrap()
            .bits(96)
            .seed(11)
            .dim(30);
        let rec = SignerRecord::from_spec(&spec)
            .text_option("mode", "words")
            .unwrap();
        let mut file = rec.params().clone();
        file.insert("bits".into(), "96".into());
        file.insert("len".into(), "4".into());
        let back = SignerRecord::from_params(&file).unwrap();
        assert_eq!(back, rec);
        assert_eq!(back.spec().unwrap(), spec);
        assert_eq!(back.bits(), Some(96));
        assert_eq!(back.kind(), "super-bit");
        assert_eq!(
            back.text_options().into_iter().collect::<Vec<_>>(),
            vec![("mode", "words")]
        );
        assert_eq!(back.to_string(), "super-bit:depth=8 (f=96, seed=11, D=30)");
        back.check_width(96).unwrap();
        assert!(
            back.check_width(64)
                .unwrap_err()
                .to_string()
                .contains("96-bit")
        );
        // No signer recorded: no record.
        file.retain(|k, _| !k.starts_with("signer."));
        assert_eq!(SignerRecord::from_params(&file), None);
        assert!(rec.clone().text_option("Mode", 1).is_err());
    }

    /// Every kind saves its record and loads it back, keeps it through inserts, removals and
    /// merges; a file without a record (as written before records existed) loads with none;
    /// a record of another width is refused.
    #[test]
    fn every_index_kind_keeps_its_signer_through_changes_and_files() {
        use crate::index::IndexSpec;
        use crate::signature::SignatureMatrix;
        use crate::signers::Signer;

        let dir = std::env::temp_dir().join(format!("simlsh-signer-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = "pooled:pool=500"
            .parse::<SignerSpec>()
            .unwrap()
            .bits(128)
            .seed(5);
        let signer = spec.build(None).unwrap();
        let mut codes = SignatureMatrix::new(128).unwrap();
        for i in 0..300u64 {
            codes
                .push(
                    &signer
                        .sign_sparse(&[i, i + 1, 1000], &[1.0, 2.0, 0.5])
                        .unwrap(),
                )
                .unwrap();
        }
        let rec = SignerRecord::from_spec(&spec)
            .text_option("ngram", 2)
            .unwrap();
        for kind in ["linear", "manku:k=2", "mih", "permutation:q=4"] {
            let mut idx = kind.parse::<IndexSpec>().unwrap().build(&codes).unwrap();
            assert!(idx.signer().is_none() && idx.signer_spec().is_none());
            let plain = dir.join(format!("{kind}-plain.idx"));
            idx.save(&plain).unwrap();
            assert!(
                crate::io::load_index(&plain).unwrap().signer().is_none(),
                "{kind}"
            );

            let wrong = SignerRecord::from_spec(&spec.clone().bits(64));
            assert!(idx.set_signer(Some(wrong)).is_err(), "{kind}");
            idx.set_signer(Some(rec.clone())).unwrap();
            let extra: Vec<u64> = codes.as_slice()[..2 * 50].to_vec();
            let ids: Vec<u32> = (1000..1050).collect();
            idx.insert_batch(&ids, &extra).unwrap();
            idx.remove_batch(&[3, 1001]).unwrap();
            assert_eq!(idx.signer(), Some(&rec), "{kind}");
            let p = dir.join(format!("{kind}.idx"));
            idx.save(&p).unwrap();
            let mut back = crate::io::load_index(&p).unwrap();
            assert_eq!(back.signer(), Some(&rec), "{kind}");
            assert_eq!(back.signer_spec().unwrap().unwrap(), spec, "{kind}");
            assert_eq!(back.len(), idx.len());
            // A loaded index keeps it through a change and a second save.
            back.insert(2000, codes.row(7)).unwrap();
            back.save(&p).unwrap();
            assert_eq!(crate::io::load_index(&p).unwrap().signer(), Some(&rec));
            crate::io::verify_index(&p).unwrap();
            back.set_signer(None).unwrap();
            assert!(back.signer().is_none());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
