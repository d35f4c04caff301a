//! Text front-end: documents to weighted features for [`Signer::sign_tokens`], the classic
//! text simhash.
//!
//! A [`Tokenizer`] turns a document into *units*, optionally joins `n` consecutive units into
//! shingles, weights the distinct features and optionally keeps the `K` heaviest:
//!
//! 1. **Normalise**: lower-case (Unicode `to_lowercase`, on by default).
//! 2. **Segment** ([`Mode`]):
//!    - [`Words`](Mode::Words) (default): UAX #29 word segmentation (`unicode-segmentation`);
//!      each Han character is its own word there.
//!    - [`Cjk`](Mode::Cjk): jieba word segmentation (`jieba-rs`, default dictionary, precise
//!      mode, HMM for unknown words unless [`hmm(false)`](TokenizerBuilder::hmm)) of the
//!      whole text.
//!    - [`Auto`](Mode::Auto): jieba for each maximal run of Han characters, UAX #29 for the
//!      rest: the mode for mixed Chinese and Western text.
//!    - [`Chars`](Mode::Chars): extended grapheme clusters of the text with every run of
//!      whitespace collapsed to one space and both ends trimmed; with
//!      [`ngram(n)`](TokenizerBuilder::ngram) these are the character `n`-gram shingles.
//! 3. **Filter** (word modes): punctuation-only tokens — with no letter or digit
//!    (`char::is_alphanumeric`) — are dropped unless
//!    [`keep_punctuation`](TokenizerBuilder::keep_punctuation); stop words
//!    ([`StopWords`], case-insensitive, none by default) are dropped. In `Chars` mode stop
//!    words do not apply and a shingle is dropped if it has no letter or digit.
//! 4. **Shingle**: with `ngram(n)`, `n > 1`, each feature is `n` consecutive units, joined
//!    by one space (words) or nothing (characters). A document with fewer than `n` units gives
//!    one feature, all of them.
//! 5. **Weight** ([`Weighting`]) each distinct feature: [`Binary`](Weighting::Binary) 1,
//!    [`Tf`](Weighting::Tf) (default) its count in the document, or
//!    [`TfIdf`](Weighting::TfIdf) count × [`Idf::idf`] (no normalisation: a signature does
//!    not depend on the scale of its input). Features are listed in order of first
//!    occurrence.
//! 6. **Top K** ([`top_k`](TokenizerBuilder::top_k)): keep the `K` heaviest features; among
//!    equal weights the one occurring first in the document wins. The kept features stay in
//!    order of first occurrence.
//!
//! The result, [`Features`], goes to [`Signer::sign_tokens`]; features are hashed by the
//! signer (the hashing trick), so no vocabulary is held. Document frequencies are counted per
//! token hash ([`idf_key`], a fixed XXH3 independent of any signer seed) in a sorted
//! `Vec<(u64, u32)>`.
//!
//! The classic Chinese near-duplicate pipeline (segment, TF-IDF keywords, 64-bit simhash,
//! Hamming distance ≤ 3):
//!
//! ```
//! use simlsh::text::{Idf, Mode, Tokenizer};
//! use simlsh::{HashingTrick, Signer};
//!
//! let docs = ["我们中出了一个叛徒", "我们中出了一个叛徒！", "今天天气很好"];
//! let base = Tokenizer::builder().mode(Mode::Cjk).build()?;
//! let idf = Idf::fit(&base, docs);
//! let tok = base.to_builder().idf(idf).top_k(Some(20)).build()?;
//! let signer = HashingTrick::builder().bits(64).seed(1).build()?;
//! let sigs = tok.sign_corpus(&signer, &docs)?;
//! assert_eq!(sigs.distance(0, 1), 0); // punctuation is dropped
//! # Ok::<(), simlsh::Error>(())
//! ```

mod idf;
mod segment;
mod stopwords;

pub use idf::{DfCounter, IDF_FILE_VERSION, IDF_HASH_SEED, Idf, idf_key};
pub use stopwords::{ENGLISH, StopWords};

use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::signature::{Signature, SignatureMatrix, words_for};
use crate::signers::{Signer, pack_into};

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
    fn name(self) -> &'static str {
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
}

/// Builder of a [`Tokenizer`]: `Default`, chained setters, [`build`](TokenizerBuilder::build).
#[derive(Clone, Debug)]
pub struct TokenizerBuilder {
    mode: Mode,
    ngram: usize,
    lowercase: bool,
    keep_punctuation: bool,
    stop_words: StopWords,
    hmm: bool,
    weighting: Weighting,
    top_k: Option<usize>,
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

    fn config(&self) -> String {
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

    /// Checks the settings: `ngram ≥ 1`, `top_k ≥ 1` when set, and an IDF table fitted with
    /// the same tokenizer configuration ([`Tokenizer::config`]).
    pub fn build(self) -> Result<Tokenizer> {
        if self.ngram == 0 {
            return Err(Error::param("ngram", "must be at least 1"));
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

/// Documents to weighted features. See the [module docs](self) for the pipeline.
#[derive(Clone, Debug)]
pub struct Tokenizer {
    b: TokenizerBuilder,
}

impl Default for Tokenizer {
    /// UAX #29 words, lower-cased, punctuation dropped, no stop words, TF weights, all
    /// features.
    fn default() -> Self {
        Tokenizer {
            b: TokenizerBuilder::default(),
        }
    }
}

/// The weighted features of one document, in order of first occurrence, ready for
/// [`Signer::sign_tokens`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Features {
    /// Distinct features.
    pub tokens: Vec<String>,
    /// Their weights.
    pub weights: Vec<f32>,
}

impl Features {
    /// The features as `&str`, for [`Signer::sign_tokens`].
    pub fn token_refs(&self) -> Vec<&str> {
        self.tokens.iter().map(String::as_str).collect()
    }

    /// Number of features.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when the document has no feature.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Signs the features.
    pub fn sign<S: Signer + ?Sized>(&self, signer: &S) -> Result<Signature> {
        signer.sign_tokens(&self.token_refs(), &self.weights)
    }
}

/// Documents signed per parallel task in [`Tokenizer::sign_corpus`].
const DOCS_PER_TASK: usize = 64;

impl Tokenizer {
    /// A builder with the default settings.
    pub fn builder() -> TokenizerBuilder {
        TokenizerBuilder::default()
    }

    /// A builder with this tokenizer's settings, to change some.
    pub fn to_builder(&self) -> TokenizerBuilder {
        self.b.clone()
    }

    /// The settings that determine the features (everything but weighting and top K), as one
    /// line, e.g. `mode=words ngram=1 lowercase=1 punctuation=drop stopwords=none hmm=1`
    /// (stop words as a fingerprint, [`StopWords::fingerprint`]). Recorded in IDF files.
    pub fn config(&self) -> String {
        self.b.config()
    }

    /// The weighting.
    pub fn weighting(&self) -> &Weighting {
        &self.b.weighting
    }

    /// The features of `text` before weighting, in document order, repeats included.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let b = &self.b;
        let lowered;
        let text = if b.lowercase {
            lowered = text.to_lowercase();
            lowered.as_str()
        } else {
            text
        };
        let mut units: Vec<&str> = Vec::new();
        let collapsed;
        match b.mode {
            Mode::Words => segment::uax29(text, b.keep_punctuation, &mut units),
            Mode::Cjk => segment::cjk(text, b.hmm, &mut units),
            Mode::Auto => segment::auto(text, b.hmm, b.keep_punctuation, &mut units),
            Mode::Chars => {
                collapsed = segment::collapse_whitespace(text);
                segment::graphemes(&collapsed, &mut units);
            }
        }
        let chars = b.mode == Mode::Chars;
        if !chars {
            units.retain(|u| {
                (b.keep_punctuation || segment::has_alnum(u)) && !b.stop_words.contains(u)
            });
        }
        let n = b.ngram;
        let sep = if chars { "" } else { " " };
        let mut out: Vec<String> = if n == 1 || units.is_empty() {
            units.iter().map(|u| u.to_string()).collect()
        } else if units.len() < n {
            vec![units.join(sep)]
        } else {
            units.windows(n).map(|w| w.join(sep)).collect()
        };
        if chars && !b.keep_punctuation {
            out.retain(|s| segment::has_alnum(s));
        }
        out
    }

    /// The weighted distinct features of `text` (see the [module docs](self)).
    pub fn features(&self, text: &str) -> Features {
        let tokens = self.tokens(text);
        // Distinct features with counts, in order of first occurrence (by sorting, so that no
        // hash map order can leak into the result).
        let mut order: Vec<u32> = (0..tokens.len() as u32).collect();
        order.sort_by(|&a, &b| tokens[a as usize].cmp(&tokens[b as usize]).then(a.cmp(&b)));
        let mut distinct: Vec<(u32, u32)> = Vec::new(); // (first position, count)
        for (k, &i) in order.iter().enumerate() {
            if k > 0 && tokens[order[k - 1] as usize] == tokens[i as usize] {
                distinct.last_mut().expect("a previous entry").1 += 1;
            } else {
                distinct.push((i, 1));
            }
        }
        distinct.sort_unstable_by_key(|d| d.0);
        let mut weights: Vec<f32> = distinct
            .iter()
            .map(|&(i, count)| match &self.b.weighting {
                Weighting::Binary => 1.0,
                Weighting::Tf => count as f32,
                Weighting::TfIdf(idf) => (count as f64 * idf.idf(&tokens[i as usize])) as f32,
            })
            .collect();
        let mut keep: Vec<usize> = (0..distinct.len()).collect();
        if let Some(k) = self.b.top_k {
            if k < keep.len() {
                // Heaviest first; ties by first occurrence; then back to document order.
                keep.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
                keep.truncate(k);
                keep.sort_unstable();
                weights = keep.iter().map(|&j| weights[j]).collect();
            }
        }
        let mut tokens: Vec<Option<String>> = tokens.into_iter().map(Some).collect();
        Features {
            tokens: keep
                .iter()
                .map(|&j| tokens[distinct[j].0 as usize].take().expect("distinct"))
                .collect(),
            weights,
        }
    }

    /// Signs one document.
    pub fn sign<S: Signer + ?Sized>(&self, signer: &S, text: &str) -> Result<Signature> {
        self.features(text).sign(signer)
    }

    /// Signs every document in parallel; row `i` is `self.sign(signer, docs[i])`, and the
    /// result does not depend on the number of threads. The signer must take tokens
    /// ([`HashingTrick`](crate::HashingTrick) or [`PooledSigner`](crate::PooledSigner)).
    pub fn sign_corpus<S: Signer + ?Sized, T: AsRef<str> + Sync>(
        &self,
        signer: &S,
        docs: &[T],
    ) -> Result<SignatureMatrix> {
        let bits = signer.bits();
        let w = words_for(bits);
        let mut out = SignatureMatrix::zeros(docs.len(), bits)?;
        out.as_mut_slice()
            .par_chunks_mut(w * DOCS_PER_TASK)
            .enumerate()
            .try_for_each(|(c, chunk)| {
                let mut acc = signer.new_acc();
                for (r, dst) in chunk.chunks_exact_mut(w).enumerate() {
                    let f = self.features(docs[c * DOCS_PER_TASK + r].as_ref());
                    acc.fill(0.0);
                    signer.accumulate_tokens(&f.token_refs(), &f.weights, &mut acc)?;
                    pack_into(&acc, bits, dst);
                }
                Ok::<(), Error>(())
            })?;
        Ok(out)
    }
}
