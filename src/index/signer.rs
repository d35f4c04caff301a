//! [`SignerRecord`]: the signer that made an index's codes, recorded with the index (in
//! memory and in its file), so that queries are signed like the index without repeating the
//! signer's options.
//!
//! An index file records the `signer.*` parameters of [`SignerSpec::to_params`] (the same
//! keys a signature file records), and for text the `text.*` options of the tokenizer that
//! made the features (mode, n-gram, weighting, ...). Files without them (written before they
//! were recorded, or of codes whose signer is unknown) load with no record.
//!
//! The tables a tokenizer uses, the TF-IDF table and a list of stop words, are embedded in the
//! record ([`with_idf`](SignerRecord::with_idf), [`with_stop_words`](SignerRecord::with_stop_words))
//! and saved as sections of the index file, never as paths: an index file is a shared artifact,
//! and a data file never makes simlsh read another file. Files of earlier releases that
//! recorded a path load, but [`idf`](SignerRecord::idf) and
//! [`stop_words`](SignerRecord::stop_words) refuse them (the table must then be given by the
//! user).
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
use crate::signers::{SignerInfo, SignerKind, SignerSpec};
use crate::storage::Buf;
use std::sync::Arc;

use crate::text::{Idf, StopWords, Tokenizer, TokenizerSpec, Weighting};

/// Prefix of the signer's parameters.
const SIGNER: &str = "signer.";
/// Prefix of the text options, and of the names of embedded tables.
const TEXT: &str = "text.";
/// The value of `text.idf` and `text.stop_words` whose table is embedded.
const EMBEDDED: &str = "embedded";
/// Table of the embedded IDF table: `(key, df)` entries, 8 + 4 bytes little-endian each.
const IDF_TABLE: &str = "text.idf";
/// Table of the embedded stop words: the sorted words joined by `\n`.
const STOP_TABLE: &str = "text.stop_words";

/// The signer of an index's codes: the `signer.*` parameters (as [`SignerSpec::to_params`]
/// and [`SignerInfo::to_params`] write them) and, for text, the `text.*` tokenizer options
/// and the tables they use (embedded: see the [module docs](self)).
/// [`spec`](Self::spec) rebuilds the signer; [`HammingIndex::signer`](super::HammingIndex::signer)
/// gives an index's record.
#[derive(Clone, Debug)]
pub struct SignerRecord {
    params: BTreeMap<String, String>,
    /// Embedded tables by section name (`text.*`), as bytes.
    tables: BTreeMap<String, Buf<u8>>,
}

impl PartialEq for SignerRecord {
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params
            && self.tables.len() == other.tables.len()
            && self
                .tables
                .iter()
                .zip(&other.tables)
                .all(|((a, x), (b, y))| a == b && x[..] == y[..])
    }
}

impl Eq for SignerRecord {}

impl SignerRecord {
    /// The record of `spec` (its width, seed and dimension included).
    pub fn from_spec(spec: &SignerSpec) -> Self {
        SignerRecord {
            params: spec.to_params(),
            tables: BTreeMap::new(),
        }
    }

    /// The record of a built signer ([`Signer::info`](crate::signers::Signer::info)).
    pub fn from_info(info: &SignerInfo) -> Self {
        SignerRecord {
            params: info.to_params(),
            tables: BTreeMap::new(),
        }
    }

    /// Embeds the TF-IDF table the documents were weighted with (`text.idf=embedded`, the
    /// document count and tokenizer description as `text.idf_docs` and `text.idf_config`, the
    /// entries as a table): [`idf`](Self::idf) gives it back.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the record cannot hold it (not expected).
    pub fn with_idf(self, idf: &Idf) -> Result<Self> {
        let mut bytes = Vec::with_capacity(idf.len() * 12);
        for &(key, df) in idf.entries() {
            bytes.extend_from_slice(&key.to_le_bytes());
            bytes.extend_from_slice(&df.to_le_bytes());
        }
        let mut r = self
            .text_option("idf", EMBEDDED)?
            .text_option("idf_docs", idf.docs())?
            .text_option("idf_config", idf.config())?;
        r.tables.insert(IDF_TABLE.into(), Buf::owned(bytes));
        Ok(r)
    }

    /// Embeds a list of stop words (`text.stop_words=embedded`); the built-in English list is
    /// recorded by name (`english`). [`stop_words`](Self::stop_words) gives it back.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the record cannot hold it (not expected).
    pub fn with_stop_words(self, words: &StopWords) -> Result<Self> {
        if *words == StopWords::english() {
            return self.text_option("stop_words", "english");
        }
        let mut r = self.text_option("stop_words", EMBEDDED)?;
        r.tables.insert(
            STOP_TABLE.into(),
            Buf::owned(words.words().join("\n").into_bytes()),
        );
        Ok(r)
    }

    /// The embedded TF-IDF table, `None` when none is recorded (or the record's text options
    /// say the table was not kept: `text.idf=fitted`, written by earlier releases).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `text.idf` when the record names a file (an earlier
    /// release's record: the file is not read; the table must be given by the user), or when
    /// the embedded table is malformed.
    pub fn idf(&self) -> Result<Option<Idf>> {
        let bad = |reason: String| Error::param("text.idf", reason);
        match self.params.get("text.idf").map(String::as_str) {
            None | Some("fitted") => Ok(None),
            Some(EMBEDDED) => {
                let table = self
                    .tables
                    .get(IDF_TABLE)
                    .ok_or_else(|| bad("the embedded table is missing".into()))?;
                if table.len() % 12 != 0 {
                    return Err(bad(format!(
                        "the embedded table holds {} bytes, not a multiple of 12",
                        table.len()
                    )));
                }
                let docs = self
                    .params
                    .get("text.idf_docs")
                    .and_then(|d| d.parse().ok())
                    .ok_or_else(|| bad("text.idf_docs is missing or not a count".into()))?;
                let config = self
                    .params
                    .get("text.idf_config")
                    .ok_or_else(|| bad("text.idf_config is missing".into()))?;
                let entries = table
                    .chunks_exact(12)
                    .map(|e| {
                        let key = u64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
                        let df = u32::from_le_bytes(e[8..].try_into().expect("4 bytes"));
                        (key, df)
                    })
                    .collect();
                Idf::from_parts(docs, entries, config.clone())
                    .map(Some)
                    .map_err(|e| bad(format!("the embedded table is malformed: {e}")))
            }
            Some(path) => Err(bad(format!(
                "the table is recorded as the path {path:?} (by an earlier release), which is \
                 not read: a data file never makes simlsh read another file"
            ))),
        }
    }

    /// The stop words the documents were tokenized with: `None` when none are recorded,
    /// the built-in English list for `english`, or the embedded list.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `text.stop_words` when the record names a file (an
    /// earlier release's record: the file is not read), or when the embedded list is not
    /// UTF-8.
    pub fn stop_words(&self) -> Result<Option<StopWords>> {
        let bad = |reason: String| Error::param("text.stop_words", reason);
        match self.params.get("text.stop_words").map(String::as_str) {
            None => Ok(None),
            Some("english") => Ok(Some(StopWords::english())),
            Some(EMBEDDED) => {
                let table = self
                    .tables
                    .get(STOP_TABLE)
                    .ok_or_else(|| bad("the embedded list is missing".into()))?;
                let text = std::str::from_utf8(table)
                    .map_err(|_| bad("the embedded list is not UTF-8".into()))?;
                Ok(Some(StopWords::from_words(
                    text.split('\n').filter(|w| !w.is_empty()),
                )))
            }
            Some(path) => Err(bad(format!(
                "the list is recorded as the path {path:?} (by an earlier release), which is \
                 not read: a data file never makes simlsh read another file"
            ))),
        }
    }

    /// Records the tokenizer that made the documents' features: the options of `spec`
    /// (`text.mode` resolved, `text.ngram`, `text.weighting`, `text.top_k`, and
    /// `text.lowercase`, `text.punctuation`, `text.hmm` when they differ from their defaults)
    /// and the tables `tokenizer` uses, embedded (its stop words, its TF-IDF table).
    /// [`tokenizer`](Self::tokenizer) gives the tokenizer back.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the record cannot hold them (not expected).
    pub fn with_tokenizer(self, spec: &TokenizerSpec, tokenizer: &Tokenizer) -> Result<Self> {
        let d = TokenizerSpec::default();
        let mut r = self
            .text_option("mode", spec.mode().name())?
            .text_option("ngram", spec.ngram)?
            .text_option("weighting", spec.weighting)?;
        if let Some(k) = spec.top_k {
            r = r.text_option("top_k", k)?;
        }
        if spec.lowercase != d.lowercase {
            r = r.text_option("lowercase", spec.lowercase)?;
        }
        if spec.keep_punctuation {
            r = r.text_option("punctuation", "keep")?;
        }
        if spec.hmm != d.hmm {
            r = r.text_option("hmm", spec.hmm)?;
        }
        if !tokenizer.stop_words().is_empty() {
            r = r.with_stop_words(tokenizer.stop_words())?;
        }
        if let Weighting::TfIdf(idf) = tokenizer.weighting() {
            r = r.with_idf(idf)?;
        }
        Ok(r)
    }

    /// The recorded tokenizer options as a spec, the tables aside (its stop words are
    /// empty: [`stop_words`](Self::stop_words) gives them): `None` for a record of vectors
    /// (no text options). Options not recorded take their defaults (a record of an earlier
    /// release without `text.weighting` was weighted by TF-IDF).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the `text.*` option whose value is not valid.
    pub fn tokenizer_options(&self) -> Result<Option<TokenizerSpec>> {
        let opts = self.text_options();
        if opts.is_empty() {
            return Ok(None);
        }
        fn value<T: std::str::FromStr>(
            opts: &BTreeMap<&str, &str>,
            key: &str,
        ) -> Result<Option<T>> {
            opts.get(key)
                .map(|v| {
                    v.parse().map_err(|_| {
                        Error::param(
                            "text option",
                            format!("recorded text.{key}={v:?} is not valid"),
                        )
                    })
                })
                .transpose()
        }
        let mut spec = TokenizerSpec::default();
        if let Some(m) = opts.get("mode") {
            spec.mode = Some(m.parse().map_err(|_| {
                Error::param(
                    "text option",
                    format!("recorded text.mode={m:?} is not valid"),
                )
            })?);
        }
        if let Some(n) = value::<usize>(&opts, "ngram")? {
            spec.ngram = n;
        }
        if let Some(w) = opts.get("weighting") {
            spec.weighting = w.parse()?;
        }
        spec.top_k = value(&opts, "top_k")?;
        if let Some(b) = value(&opts, "lowercase")? {
            spec.lowercase = b;
        }
        spec.keep_punctuation = match opts.get("punctuation") {
            None | Some(&"drop") => false,
            Some(&"keep") => true,
            Some(v) => {
                return Err(Error::param(
                    "text option",
                    format!("recorded text.punctuation={v:?} is not valid"),
                ));
            }
        };
        if let Some(b) = value(&opts, "hmm")? {
            spec.hmm = b;
        }
        Ok(Some(spec))
    }

    /// The recorded tokenizer options with the recorded stop words: the spec of
    /// [`tokenizer`](Self::tokenizer) (`None` for a record of vectors).
    ///
    /// # Errors
    /// As [`tokenizer_options`](Self::tokenizer_options) and [`stop_words`](Self::stop_words).
    pub fn tokenizer_spec(&self) -> Result<Option<TokenizerSpec>> {
        let Some(mut spec) = self.tokenizer_options()? else {
            return Ok(None);
        };
        if let Some(words) = self.stop_words()? {
            spec.stop_words = words;
        }
        Ok(Some(spec))
    }

    /// The tokenizer recorded with the codes, built from the recorded options and the
    /// embedded tables (stop words, TF-IDF table): it turns query documents into the features
    /// the stored codes were signed from. `None` for a record of vectors.
    /// [`tokenizer_given`](Self::tokenizer_given) without tables given.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid option, a table recorded as a path by an
    /// earlier release (never read), or TF-IDF weights whose table was not kept.
    pub fn tokenizer(&self) -> Result<Option<Tokenizer>> {
        self.tokenizer_given(None, None)
    }

    /// [`tokenizer`](Self::tokenizer) for a record of any release: a table that an earlier
    /// release recorded as a path (never followed) is taken from `idf` or `stop_words`, the
    /// user's copy of that file; a table given for a record that names none by path is refused.
    /// The one reading of a record's tokenizer (`simlsh index query` and Python's
    /// `Index.tokenizer` go through it).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `text.idf` or `text.stop_words` for a table recorded
    /// as a path and not given, or one given that the record does not name by path (the
    /// reason says which); as [`tokenizer`](Self::tokenizer) otherwise.
    pub fn tokenizer_given(
        &self,
        idf: Option<Idf>,
        stop_words: Option<StopWords>,
    ) -> Result<Option<Tokenizer>> {
        let Some(mut spec) = self.tokenizer_options()? else {
            return Ok(None);
        };
        let words = match (self.recorded_path("stop_words"), stop_words) {
            (Some(_), Some(given)) => Some(given),
            (None, Some(_)) => {
                return Err(Error::param(
                    "text.stop_words",
                    "stop words are given only for a record that names its list by path (an \
                     earlier release's); this one records its stop words itself",
                ));
            }
            (_, None) => self.stop_words()?,
        };
        if let Some(words) = words {
            spec.stop_words = words;
        }
        let idf = match (spec.needs_idf(), self.recorded_path("idf"), idf) {
            (false, _, Some(_)) => {
                return Err(Error::param(
                    "text.idf",
                    format!(
                        "a TF-IDF table is given for documents weighted by {}",
                        spec.weighting
                    ),
                ));
            }
            (false, _, None) => None,
            (true, Some(_), Some(given)) => Some(given),
            (true, None, Some(_)) => {
                return Err(Error::param(
                    "text.idf",
                    "a TF-IDF table is given only for a record that names its table by path \
                     (an earlier release's); this one embeds its table",
                ));
            }
            (true, _, None) => Some(self.idf()?.ok_or_else(|| {
                Error::param(
                    "text.idf",
                    "the documents were weighted by a TF-IDF table that was not kept (a record \
                     of an earlier release): rebuild the index, it then embeds the table",
                )
            })?),
        };
        spec.build(idf.map(Arc::new)).map(Some)
    }

    /// The value of text option `key` when it names a file (a record of an earlier release):
    /// `idf` or `stop_words` holding a path.
    pub fn recorded_path(&self, key: &str) -> Option<&str> {
        let v = self.params.get(&format!("{TEXT}{key}"))?.as_str();
        match (key, v) {
            ("idf", EMBEDDED | "fitted") | ("stop_words", EMBEDDED | "english") => None,
            ("idf" | "stop_words", path) => Some(path),
            _ => None,
        }
    }

    /// The embedded tables, by section name (`text.idf`, `text.stop_words`), as saved in an
    /// index file.
    pub(crate) fn tables(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.tables.iter().map(|(k, v)| (k.as_str(), &v[..]))
    }

    /// Adds an embedded table read from an index file's section `name` (`text.*`).
    pub(crate) fn add_table(&mut self, name: &str, data: Buf<u8>) {
        self.tables.insert(name.to_string(), data);
    }

    /// True for the name of a section holding an embedded table.
    pub(crate) fn is_table(name: &str) -> bool {
        name.starts_with(TEXT)
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
            tables: BTreeMap::new(),
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

    /// Whether a signer kind given by a user (`KIND` or `KIND:key=value,...`, as a command
    /// line's `--signer`) names the recorded signer: the same kind, and every parameter it sets
    /// equal to the recorded one, the parameters it leaves out taking their defaults (resolved
    /// at the recorded width, seed and dimension, as the record writes them out). Nothing is
    /// built.
    ///
    /// ```
    /// use simlsh::index::SignerRecord;
    /// use simlsh::signers::{SignerKind, SignerSpec};
    ///
    /// let rec = SignerRecord::from_spec(&"gaussian".parse::<SignerSpec>()?.bits(64).seed(3).dim(8));
    /// assert!(rec.agrees_with(&"gaussian".parse::<SignerKind>()?)?);
    /// assert!(!rec.agrees_with(&"super-bit".parse::<SignerKind>()?)?);
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`spec`](Self::spec): the record does not rebuild.
    pub fn agrees_with(&self, kind: &SignerKind) -> Result<bool> {
        let recorded = self.spec()?;
        let given = SignerSpec {
            kind: kind.clone(),
            ..recorded.clone()
        };
        Ok(given.same_signer(&recorded))
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

    /// `kind` at 96 bits, seed 11, dimension 30.
    fn spec(kind: &str) -> SignerSpec {
        kind.parse::<SignerSpec>()
            .unwrap()
            .bits(96)
            .seed(11)
            .dim(30)
    }

    #[test]
    fn a_given_kind_agrees_when_every_parameter_it_sets_is_recorded() {
        let rec = SignerRecord::from_spec(&spec("super-bit:depth=8"));
        let agrees = |k: &str| rec.agrees_with(&k.parse::<SignerKind>().unwrap()).unwrap();
        assert!(agrees("super-bit:depth=8"));
        assert!(!agrees("super-bit:depth=4"));
        assert!(!agrees("gaussian"));
        // Parameters left out take their defaults: the record of the default depth agrees
        // with the bare kind.
        let default = SignerRecord::from_spec(&spec("super-bit"));
        assert!(default.agrees_with(&"super-bit".parse().unwrap()).unwrap());
        assert_eq!(agrees("super-bit"), default.same_signer(&rec));
        // A record that does not rebuild: an error, not an answer.
        let mut params = rec.params().clone();
        params.insert("signer.kind".into(), "no-such-kind".into());
        let broken = SignerRecord::from_params(&params).unwrap();
        assert!(broken.agrees_with(&"super-bit".parse().unwrap()).is_err());
    }

    #[test]
    fn records_round_trip_through_file_parameters() {
        let spec = spec("super-bit:depth=8");
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
            crate::persist::save_index(idx.as_ref(), &plain).unwrap();
            assert!(
                crate::persist::load_index(&plain)
                    .unwrap()
                    .signer()
                    .is_none(),
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
            crate::persist::save_index(idx.as_ref(), &p).unwrap();
            let mut back = crate::persist::load_index(&p).unwrap();
            assert_eq!(back.signer(), Some(&rec), "{kind}");
            assert_eq!(back.signer_spec().unwrap().unwrap(), spec, "{kind}");
            assert_eq!(back.len(), idx.len());
            // A loaded index keeps it through a change and a second save.
            back.insert(2000, codes.row(7)).unwrap();
            crate::persist::save_index(back.as_ref(), &p).unwrap();
            assert_eq!(crate::persist::load_index(&p).unwrap().signer(), Some(&rec));
            crate::persist::verify_index(&p).unwrap();
            back.set_signer(None).unwrap();
            assert!(back.signer().is_none());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The tables of a text record are embedded in the index file and come back equal
    /// (memory-mapped), through changes and saves; a path recorded by an earlier release is
    /// refused, never read.
    #[test]
    fn text_tables_are_embedded_and_recorded_paths_refused() {
        use crate::index::IndexSpec;
        use crate::signature::SignatureMatrix;
        use crate::text::{Idf, StopWords, Tokenizer};

        let dir = std::env::temp_dir().join(format!("simlsh-signer-tab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stop = StopWords::from_words(["the", "of", "zebra"]);
        let tok = Tokenizer::builder()
            .stop_words(stop.clone())
            .build()
            .unwrap();
        let idf = Idf::fit(&tok, ["a b c", "b c d", "the zebra of c"]);
        let spec = "hashing-trick"
            .parse::<SignerSpec>()
            .unwrap()
            .bits(64)
            .seed(1);
        let rec = SignerRecord::from_spec(&spec)
            .text_option("mode", "words")
            .unwrap()
            .with_stop_words(&stop)
            .unwrap()
            .with_idf(&idf)
            .unwrap();
        assert_eq!(rec.idf().unwrap().unwrap(), idf);
        assert_eq!(rec.stop_words().unwrap().unwrap(), stop);
        let codes = SignatureMatrix::from_parts(64, vec![1u64, 2, 3]).unwrap();
        let p = dir.join("text.idx");
        for kind in ["linear", "manku:k=2", "mih", "permutation:q=4"] {
            let mut idx = kind.parse::<IndexSpec>().unwrap().build(&codes).unwrap();
            idx.set_signer(Some(rec.clone())).unwrap();
            crate::persist::save_index(idx.as_ref(), &p).unwrap();
            let mut back = crate::persist::load_index(&p).unwrap();
            assert_eq!(back.signer(), Some(&rec), "{kind}");
            back.insert(9, &[4]).unwrap();
            crate::persist::save_index(back.as_ref(), &p).unwrap();
            let back = crate::persist::load_index(&p).unwrap();
            let got = back.signer().unwrap();
            assert_eq!(got.idf().unwrap().unwrap(), idf, "{kind}");
            assert_eq!(got.stop_words().unwrap().unwrap(), stop, "{kind}");
            assert!(!got.params().values().any(|v| v.contains('/')), "{kind}");
        }
        // The built-in list is recorded by name.
        let english = SignerRecord::from_spec(&spec)
            .with_stop_words(&StopWords::english())
            .unwrap();
        assert_eq!(english.params()["text.stop_words"], "english");
        assert_eq!(english.stop_words().unwrap().unwrap(), StopWords::english());
        // A record of an earlier release: paths, refused by name, never opened.
        for (key, path) in [("idf", "/etc/passwd"), ("stop_words", "/dev/zero")] {
            let old = SignerRecord::from_spec(&spec)
                .text_option(key, path)
                .unwrap();
            assert_eq!(old.recorded_path(key), Some(path));
            let e = if key == "idf" {
                old.idf().map(drop).unwrap_err()
            } else {
                old.stop_words().map(drop).unwrap_err()
            };
            assert!(e.to_string().contains(path), "{e}");
            assert!(e.to_string().contains("not read"), "{e}");
        }
        assert_eq!(rec.recorded_path("idf"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A record made by `with_tokenizer` gives back, through an index file, a tokenizer that
    /// makes the same features of every document (options off their defaults, custom stop
    /// words and a TF-IDF table included); a record of vectors has none; a bad recorded
    /// option is an error naming it.
    #[test]
    fn tokenizer_round_trips_through_an_index_file() {
        use crate::index::IndexSpec;
        use crate::signature::SignatureMatrix;
        use crate::text::{Mode, StopWords, TokenizerSpec, WeightingKind};

        let docs = [
            "The Quick brown fox, jumps!",
            "the quick BROWN dog ... jumps",
            "lorem ipsum dolor sit amet",
            "a zebra of the plains",
        ];
        let spec = "hashed-gaussian"
            .parse::<SignerSpec>()
            .unwrap()
            .bits(64)
            .seed(5);
        let dir = std::env::temp_dir().join(format!("simlsh-signer-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.idx");
        let codes = SignatureMatrix::from_parts(64, vec![1u64, 2]).unwrap();
        for (i, weighting) in [
            WeightingKind::TfIdf,
            WeightingKind::Tf,
            WeightingKind::Binary,
        ]
        .into_iter()
        .enumerate()
        {
            let tspec = TokenizerSpec {
                mode: Some(Mode::Words),
                ngram: 1 + i,
                lowercase: i != 1,
                keep_punctuation: i == 2,
                stop_words: StopWords::from_words(["of", "zebra"]),
                weighting,
                top_k: (i == 0).then_some(3),
                ..TokenizerSpec::default()
            };
            let tok = tspec.fit(&docs).unwrap();
            let rec = SignerRecord::from_spec(&spec)
                .with_tokenizer(&tspec, &tok)
                .unwrap();
            let mut idx = "linear"
                .parse::<IndexSpec>()
                .unwrap()
                .build(&codes)
                .unwrap();
            idx.set_signer(Some(rec)).unwrap();
            crate::persist::save_index(idx.as_ref(), &p).unwrap();
            let back = crate::persist::load_index(&p).unwrap();
            let got = back.signer().unwrap();
            let mut want = tspec.clone();
            want.stop_words = StopWords::none();
            assert_eq!(
                got.tokenizer_options().unwrap().unwrap(),
                want,
                "{weighting}"
            );
            let t2 = got.tokenizer().unwrap().unwrap();
            for d in docs {
                assert_eq!(t2.features(d), tok.features(d), "{weighting}: {d}");
            }
        }
        // Vectors: no tokenizer.
        let vectors = SignerRecord::from_spec(&spec);
        assert!(vectors.tokenizer_options().unwrap().is_none());
        assert!(vectors.tokenizer().unwrap().is_none());
        // A bad recorded value names its option; TF-IDF without its table is refused.
        let bad = SignerRecord::from_spec(&spec)
            .text_option("ngram", "x")
            .unwrap();
        let e = bad.tokenizer().map(drop).unwrap_err().to_string();
        assert!(e.contains("text.ngram"), "{e}");
        let unkept = SignerRecord::from_spec(&spec)
            .text_option("weighting", "tfidf")
            .unwrap();
        let e = unkept.tokenizer().map(drop).unwrap_err().to_string();
        assert!(e.contains("text.idf"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
