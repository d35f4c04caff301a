//! [`TokenizerSpec`]: every tokenizer option as one value with the defaults of the command
//! line (`simlsh dedup` on text), a text form in the grammar of the other specs, and the one
//! way to make a [`Tokenizer`] from it: TF-IDF tables are fitted on the documents to be
//! signed ([`TokenizerSpec::fit`]) unless one is given ([`TokenizerSpec::build`]). The
//! command line, the Python package and Spark all start from this spec, so the same options
//! give the same features everywhere.
//!
//! # The text form
//!
//! `MODE[:KEY=VALUE[,KEY=VALUE]...]`: the segmentation [`Mode`] (`words`, `cjk`, `auto`,
//! `chars`), then the options that differ from their defaults:
//!
//! | key | values (default) |
//! |---|---|
//! | `ngram` | shingle size (1) |
//! | `weighting` | `binary`, `tf`, `tfidf`, `jieba` (`tfidf`, fitted on the documents) |
//! | `top_k` | features kept per document (all) |
//! | `stop_words` | `none`, `english` (`none`; a custom list prints as `custom:HASH`, which does not parse back) |
//! | `lowercase` | `true`, `false` (`true`) |
//! | `punctuation` | `drop`, `keep` (`drop`) |
//! | `hmm` | `true`, `false` (`true`: jieba's HMM for unknown words) |
//!
//! The default mode is `auto` (jieba for runs of Han characters, words for the rest), `cjk`
//! with `weighting=jieba`, and `words` when the crate is built without its `cjk` feature.
//!
//! ```
//! use simlsh::text::{TokenizerSpec, WeightingKind};
//!
//! let spec: TokenizerSpec = "words:ngram=2,weighting=tf".parse()?;
//! assert_eq!((spec.ngram, spec.weighting), (2, WeightingKind::Tf));
//! assert_eq!(spec.to_string(), "words:ngram=2,weighting=tf");
//! // The defaults: TF-IDF fitted on the documents, as `simlsh dedup` does.
//! let docs = ["the quick brown fox", "the lazy dog", "a quick brown dog"];
//! let tok = TokenizerSpec::default().fit(&docs)?;
//! let f = tok.features("the quick fox");
//! assert!(f.weights[0] < f.weights[2]); // "the" is in 2 of 3 documents, "fox" in 1
//! # Ok::<(), simlsh::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::{Idf, Mode, StopWords, Tokenizer, TokenizerBuilder, Weighting};
use crate::error::{Error, Result};
use crate::util::spec::{SpecText, write};

/// A weighting, without the fitted table ([`Weighting`] holds the table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WeightingKind {
    /// Weight 1 per distinct feature.
    Binary,
    /// The feature's count.
    Tf,
    /// Count × smoothed IDF, the table fitted on the documents or given (the default).
    #[default]
    TfIdf,
    /// jieba's keyword weights ([`Weighting::JiebaKeywords`]).
    Jieba,
}

impl WeightingKind {
    /// `binary`, `tf`, `tfidf` or `jieba`.
    pub fn name(self) -> &'static str {
        match self {
            WeightingKind::Binary => "binary",
            WeightingKind::Tf => "tf",
            WeightingKind::TfIdf => "tfidf",
            WeightingKind::Jieba => "jieba",
        }
    }
}

impl FromStr for WeightingKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "binary" => Ok(WeightingKind::Binary),
            "tf" => Ok(WeightingKind::Tf),
            "tfidf" => Ok(WeightingKind::TfIdf),
            "jieba" => Ok(WeightingKind::Jieba),
            _ => Err(Error::param(
                "weighting",
                format!("unknown weighting `{s}` (binary, tf, tfidf, jieba)"),
            )),
        }
    }
}

impl fmt::Display for WeightingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every tokenizer option, with the command line's defaults. See the
/// [module documentation](crate::text).
#[derive(Clone, Debug)]
pub struct TokenizerSpec {
    /// Segmentation mode; `None`: the default for the weighting ([`mode`](Self::mode)).
    pub mode: Option<Mode>,
    /// Shingle size `n ≥ 1` (default 1).
    pub ngram: usize,
    /// Lower-case first (default `true`).
    pub lowercase: bool,
    /// Keep tokens without a letter or digit (default `false`).
    pub keep_punctuation: bool,
    /// Stop words (default none).
    pub stop_words: StopWords,
    /// jieba's HMM for unknown words (default `true`).
    pub hmm: bool,
    /// The weighting (default TF-IDF).
    pub weighting: WeightingKind,
    /// Keep only the `K` heaviest features of each document (default all).
    pub top_k: Option<usize>,
}

impl Default for TokenizerSpec {
    fn default() -> Self {
        TokenizerSpec {
            mode: None,
            ngram: 1,
            lowercase: true,
            keep_punctuation: false,
            stop_words: StopWords::none(),
            hmm: true,
            weighting: WeightingKind::TfIdf,
            top_k: None,
        }
    }
}

impl PartialEq for TokenizerSpec {
    /// Specs are equal when they make the same tokenizer (the mode resolved).
    fn eq(&self, o: &Self) -> bool {
        (
            self.mode(),
            self.ngram,
            self.lowercase,
            self.keep_punctuation,
            &self.stop_words,
            self.hmm,
            self.weighting,
            self.top_k,
        ) == (
            o.mode(),
            o.ngram,
            o.lowercase,
            o.keep_punctuation,
            &o.stop_words,
            o.hmm,
            o.weighting,
            o.top_k,
        )
    }
}

impl TokenizerSpec {
    /// The mode used: the one given, else `cjk` for jieba weights, `auto` (jieba for Han runs,
    /// words for the rest) with the `cjk` feature, `words` without it.
    pub fn mode(&self) -> Mode {
        match self.mode {
            Some(m) => m,
            None if self.weighting == WeightingKind::Jieba => Mode::Cjk,
            None if cfg!(feature = "cjk") => Mode::Auto,
            None => Mode::Words,
        }
    }

    /// True when the weighting needs an IDF table (TF-IDF).
    pub fn needs_idf(&self) -> bool {
        self.weighting == WeightingKind::TfIdf
    }

    /// The builder of the options, with the weighting `w`.
    fn builder(&self, w: Weighting) -> TokenizerBuilder {
        Tokenizer::builder()
            .mode(self.mode())
            .ngram(self.ngram)
            .lowercase(self.lowercase)
            .keep_punctuation(self.keep_punctuation)
            .stop_words(self.stop_words.clone())
            .hmm(self.hmm)
            .top_k(self.top_k)
            .weighting(w)
    }

    /// The tokenizer whose document frequencies an IDF table of this spec counts (the
    /// features before weighting; its [`config`](Tokenizer::config) is the one IDF tables
    /// record).
    ///
    /// # Errors
    /// As [`TokenizerBuilder::build`].
    pub fn counting(&self) -> Result<Tokenizer> {
        self.builder(Weighting::Tf).top_k(None).build()
    }

    /// Checks the options (those [`build`](Self::build) checks, the table aside).
    ///
    /// # Errors
    /// As [`TokenizerBuilder::build`].
    pub fn check(&self) -> Result<()> {
        let w = match self.weighting {
            WeightingKind::Jieba => Weighting::JiebaKeywords,
            _ => Weighting::Tf,
        };
        self.builder(w).build().map(|_| ())
    }

    /// The tokenizer, with `idf` for TF-IDF weights.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for TF-IDF without a table, a table with another weighting,
    /// or a table fitted with other tokenizer options; [`TokenizerBuilder::build`]'s.
    pub fn build(&self, idf: Option<Arc<Idf>>) -> Result<Tokenizer> {
        let w = match (self.weighting, idf) {
            (WeightingKind::TfIdf, Some(idf)) => Weighting::TfIdf(idf),
            (WeightingKind::TfIdf, None) => {
                return Err(Error::param(
                    "idf",
                    "TF-IDF weights need an IDF table: fit one on the documents",
                ));
            }
            (w, Some(_)) => {
                return Err(Error::param(
                    "idf",
                    format!("an IDF table is used only with weighting tfidf, not {w}"),
                ));
            }
            (WeightingKind::Binary, None) => Weighting::Binary,
            (WeightingKind::Tf, None) => Weighting::Tf,
            (WeightingKind::Jieba, None) => Weighting::JiebaKeywords,
        };
        self.builder(w).build()
    }

    /// The tokenizer for signing `docs`: with TF-IDF weights, the IDF table fitted on `docs`
    /// ([`Idf::fit`], in parallel), as the command line does without `--idf`.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn fit<T: AsRef<str> + Sync>(&self, docs: &[T]) -> Result<Tokenizer> {
        if self.needs_idf() {
            let idf = Idf::fit(&self.counting()?, docs.iter().map(AsRef::as_ref));
            self.build(Some(Arc::new(idf)))
        } else {
            self.build(None)
        }
    }
}

/// Documents sampled by [`mean_features`]: at most this many, evenly spaced.
pub const FEATURE_SAMPLE: usize = 1000;

/// The step of [`mean_features`]'s sample of `n` documents: rows `0, step, 2·step, …`
/// (at most [`FEATURE_SAMPLE`] of them).
pub fn feature_sample_step(n: usize) -> usize {
    n.div_ceil(FEATURE_SAMPLE).max(1)
}

/// The mean number of weighted features of `docs` (the documents a join's width is planned
/// for, [`JoinPlanner::features`](crate::estimate::JoinPlanner::features)), from the sample
/// of rows `0, step, 2·step, …` ([`feature_sample_step`]): the command line's rule, which a
/// distributed job reproduces by taking the same rows.
pub fn mean_features<T: AsRef<str> + Sync>(tokenizer: &Tokenizer, docs: &[T]) -> f64 {
    use rayon::prelude::*;
    let step = feature_sample_step(docs.len());
    let counts: Vec<usize> = docs
        .par_iter()
        .step_by(step)
        .map(|t| tokenizer.features(t.as_ref()).len())
        .collect();
    counts.iter().sum::<usize>() as f64 / counts.len().max(1) as f64
}

impl FromStr for TokenizerSpec {
    type Err = Error;

    /// Parses the text form (see the [module documentation](crate::text)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`tokenizer spec`) naming the unknown mode, key or value.
    fn from_str(s: &str) -> Result<Self> {
        let t = SpecText::parse("tokenizer spec", s)?;
        t.only(&[
            "ngram",
            "weighting",
            "top_k",
            "stop_words",
            "lowercase",
            "punctuation",
            "hmm",
        ])?;
        let mut spec = TokenizerSpec {
            mode: Some(t.kind.parse()?),
            ..TokenizerSpec::default()
        };
        if let Some(n) = t.get("ngram", "a shingle size of at least 1")? {
            spec.ngram = n;
        }
        if let Some(w) = t.raw("weighting") {
            spec.weighting = w.parse()?;
        }
        spec.top_k = t.get("top_k", "a number of features")?;
        spec.stop_words = match t.raw("stop_words") {
            None | Some("none") => StopWords::none(),
            Some("english") => StopWords::english(),
            Some(v) => {
                return Err(t.bad(format!(
                    "`stop_words={v}`: expected none or english (a list of words is given to the builder, not in text)"
                )));
            }
        };
        if let Some(b) = t.get("lowercase", "true or false")? {
            spec.lowercase = b;
        }
        spec.keep_punctuation = match t.raw("punctuation") {
            None | Some("drop") => false,
            Some("keep") => true,
            Some(v) => return Err(t.bad(format!("`punctuation={v}`: expected drop or keep"))),
        };
        if let Some(b) = t.get("hmm", "true or false")? {
            spec.hmm = b;
        }
        Ok(spec)
    }
}

impl fmt::Display for TokenizerSpec {
    /// The text form: the mode and the options that differ from their defaults.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = TokenizerSpec::default();
        let mut p: Vec<(&str, String)> = Vec::new();
        if self.ngram != d.ngram {
            p.push(("ngram", self.ngram.to_string()));
        }
        if self.weighting != d.weighting {
            p.push(("weighting", self.weighting.to_string()));
        }
        if let Some(k) = self.top_k {
            p.push(("top_k", k.to_string()));
        }
        if !self.stop_words.is_empty() {
            let v = if self.stop_words == StopWords::english() {
                "english".to_string()
            } else {
                format!("custom:{:016x}", self.stop_words.fingerprint())
            };
            p.push(("stop_words", v));
        }
        if self.lowercase != d.lowercase {
            p.push(("lowercase", self.lowercase.to_string()));
        }
        if self.keep_punctuation {
            p.push(("punctuation", "keep".into()));
        }
        if self.hmm != d.hmm {
            p.push(("hmm", self.hmm.to_string()));
        }
        write(f, self.mode().name(), &p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip_and_defaults_resolve() {
        for s in [
            "words",
            "chars:ngram=3,weighting=binary",
            "words:weighting=tf,top_k=20,stop_words=english,lowercase=false,punctuation=keep",
            "cjk:weighting=jieba,top_k=20,hmm=false",
        ] {
            let spec: TokenizerSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(s.parse::<TokenizerSpec>().unwrap(), spec);
        }
        let d = TokenizerSpec::default();
        let auto = if cfg!(feature = "cjk") {
            "auto"
        } else {
            "words"
        };
        assert_eq!(d.to_string(), auto);
        assert_eq!(d, auto.parse().unwrap());
        let jieba = TokenizerSpec {
            weighting: WeightingKind::Jieba,
            ..TokenizerSpec::default()
        };
        assert_eq!(jieba.mode(), Mode::Cjk);
        for bad in [
            "sentences",
            "words:ngram=two",
            "words:weighting=bm25",
            "words:stop_words=french",
            "words:punctuation=maybe",
            "words:idf=x",
        ] {
            assert!(bad.parse::<TokenizerSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn tf_idf_is_fitted_on_the_documents_and_equals_a_fitted_builder() {
        let docs = ["the quick brown fox", "the lazy dog", "a quick brown dog"];
        let spec: TokenizerSpec = "words".parse().unwrap();
        let tok = spec.fit(&docs).unwrap();
        let plain = Tokenizer::builder().mode(Mode::Words).build().unwrap();
        let idf = Idf::fit(&plain, docs.iter());
        let want = Tokenizer::builder()
            .mode(Mode::Words)
            .idf(idf)
            .build()
            .unwrap();
        for d in docs.iter().chain(["fox dog unseen"].iter()) {
            assert_eq!(tok.features(d).weights, want.features(d).weights, "{d}");
        }
        assert!(spec.build(None).is_err());
        let tf: TokenizerSpec = "words:weighting=tf".parse().unwrap();
        assert!(
            tf.build(Some(Arc::new(Idf::fit(&plain, docs.iter()))))
                .is_err()
        );
        assert_eq!(
            tf.fit(&docs).unwrap().features("the the fox").weights,
            vec![2.0, 1.0]
        );
    }
}
