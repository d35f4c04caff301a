//! The tokenizer's settings: segmentation [`Mode`], [`Weighting`], and the
//! [`TokenizerBuilder`] that validates them.

use std::sync::Arc;

use super::{Idf, StopWords, Tokenizer};
use crate::error::{Error, Result};

/// How text is split into units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// UAX #29 words (the default).
    #[default]
    Words,
    /// jieba word segmentation of the whole text (Chinese).
    Cjk,
    /// jieba for runs of Han characters, UAX #29 for the rest.
    Auto,
    /// Grapheme clusters of the whitespace-collapsed text (character shingles with `ngram`).
    Chars,
}

impl Mode {
    /// `words`, `cjk`, `auto` or `chars`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Words => "words",
            Mode::Cjk => "cjk",
            Mode::Auto => "auto",
            Mode::Chars => "chars",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = Error;

    /// `words`, `cjk`, `auto` or `chars` (any case).
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "words" => Ok(Mode::Words),
            "cjk" => Ok(Mode::Cjk),
            "auto" => Ok(Mode::Auto),
            "chars" => Ok(Mode::Chars),
            _ => Err(Error::param(
                "mode",
                format!("unknown tokenizer mode `{s}` (words, cjk, auto, chars)"),
            )),
        }
    }
}

/// How features are weighted.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Weighting {
    /// Weight 1 per distinct feature (set semantics).
    Binary,
    /// The feature's count in the document (the default).
    #[default]
    Tf,
    /// Count × smoothed IDF of a fitted table.
    TfIdf(Arc<Idf>),
    /// jieba's keyword weights, as Python's `jieba.analyse.extract_tags`: count × the IDF of
    /// jieba's bundled table (the table's median for words it lacks) / the number of keyword
    /// occurrences, over the words of at least two characters that are not jieba's stop
    /// words (the others are dropped). Needs [`Mode::Cjk`] with `ngram(1)` (and the `cjk`
    /// feature); with [`top_k`](TokenizerBuilder::top_k) it keeps `extract_tags`'s `topK`
    /// keywords (equal weights: the first occurring, as Python's stable sort does).
    JiebaKeywords,
}

/// Builder of a [`Tokenizer`]: `Default`, chained setters, [`build`](TokenizerBuilder::build).
#[derive(Clone, Debug)]
pub struct TokenizerBuilder {
    pub(crate) mode: Mode,
    pub(crate) ngram: usize,
    pub(crate) lowercase: bool,
    pub(crate) keep_punctuation: bool,
    pub(crate) stop_words: StopWords,
    pub(crate) hmm: bool,
    pub(crate) weighting: Weighting,
    pub(crate) top_k: Option<usize>,
}

impl Default for TokenizerBuilder {
    fn default() -> Self {
        TokenizerBuilder {
            mode: Mode::Words,
            ngram: 1,
            lowercase: true,
            keep_punctuation: false,
            stop_words: StopWords::none(),
            hmm: true,
            weighting: Weighting::Tf,
            top_k: None,
        }
    }
}

impl TokenizerBuilder {
    /// Segmentation mode (default [`Mode::Words`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Shingle size `n ≥ 1` (default 1: single units).
    pub fn ngram(mut self, n: usize) -> Self {
        self.ngram = n;
        self
    }

    /// Lower-case the text first (default `true`).
    pub fn lowercase(mut self, on: bool) -> Self {
        self.lowercase = on;
        self
    }

    /// Keep tokens with no letter or digit (default `false`: they are dropped).
    pub fn keep_punctuation(mut self, on: bool) -> Self {
        self.keep_punctuation = on;
        self
    }

    /// Stop words to drop (default none).
    pub fn stop_words(mut self, words: StopWords) -> Self {
        self.stop_words = words;
        self
    }

    /// Use jieba's HMM for words not in its dictionary (default `true`, as jieba's `cut`).
    pub fn hmm(mut self, on: bool) -> Self {
        self.hmm = on;
        self
    }

    /// Feature weighting (default [`Weighting::Tf`]).
    pub fn weighting(mut self, w: Weighting) -> Self {
        self.weighting = w;
        self
    }

    /// Shorthand for `weighting(Weighting::TfIdf(Arc::new(idf)))`.
    pub fn idf(self, idf: Idf) -> Self {
        self.weighting(Weighting::TfIdf(Arc::new(idf)))
    }

    /// Keep only the `K` heaviest features of each document (default `None`: all).
    pub fn top_k(mut self, k: Option<usize>) -> Self {
        self.top_k = k;
        self
    }

    pub(crate) fn config(&self) -> String {
        let stop = if self.stop_words.is_empty() {
            "none".to_string()
        } else {
            format!("xxh3:{:016x}", self.stop_words.fingerprint())
        };
        format!(
            "mode={} ngram={} lowercase={} punctuation={} stopwords={stop} hmm={}",
            self.mode.name(),
            self.ngram,
            u8::from(self.lowercase),
            if self.keep_punctuation {
                "keep"
            } else {
                "drop"
            },
            u8::from(self.hmm)
        )
    }

    /// Checks the settings: `ngram ≥ 1`, `top_k ≥ 1` when set, an IDF table fitted with the
    /// same tokenizer configuration ([`Tokenizer::config`]), and the jieba modes only when
    /// the crate is built with its `cjk` feature ([`Error::Unsupported`] otherwise).
    pub fn build(self) -> Result<Tokenizer> {
        if !cfg!(feature = "cjk") && matches!(self.mode, Mode::Cjk | Mode::Auto) {
            return Err(Error::Unsupported(format!(
                "tokenizer mode `{}` needs jieba: build simlsh with its `cjk` feature",
                self.mode.name()
            )));
        }
        if self.ngram == 0 {
            return Err(Error::param("ngram", "must be at least 1"));
        }
        if matches!(self.weighting, Weighting::JiebaKeywords) {
            if !cfg!(feature = "cjk") {
                return Err(Error::Unsupported(
                    "jieba keyword weights need jieba: build simlsh with its `cjk` feature".into(),
                ));
            }
            if self.mode != Mode::Cjk || self.ngram != 1 {
                return Err(Error::param(
                    "weighting",
                    format!(
                        "jieba keyword weights need mode cjk and ngram 1, not mode {} and ngram {}",
                        self.mode.name(),
                        self.ngram
                    ),
                ));
            }
        }
        if self.top_k == Some(0) {
            return Err(Error::param(
                "top_k",
                "must be at least 1 (or None for all)",
            ));
        }
        if let Weighting::TfIdf(idf) = &self.weighting {
            let mine = self.config();
            if idf.config() != mine {
                return Err(Error::param(
                    "idf",
                    format!(
                        "the IDF table was fitted with tokenizer `{}`, but this tokenizer is `{mine}`",
                        idf.config()
                    ),
                ));
            }
        }
        Ok(Tokenizer { b: self })
    }
}
