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
//!    [`Tf`](Weighting::Tf) (default) its count in the document,
//!    [`TfIdf`](Weighting::TfIdf) count × [`Idf::idf`] (no normalisation: a signature does
//!    not depend on the scale of its input), or
//!    [`JiebaKeywords`](Weighting::JiebaKeywords) jieba's own keyword weights (its bundled
//!    IDF table and stop words, Python's `jieba.analyse.extract_tags`). Features are listed
//!    in order of first occurrence.
//! 6. **Top K** ([`top_k`](TokenizerBuilder::top_k)): keep the `K` heaviest features; among
//!    equal weights the one occurring first in the document wins. The kept features stay in
//!    order of first occurrence, the order in which they are added into a signature.
//!
//! The result, [`Features`], goes to [`Signer::sign_tokens`]; features are hashed by the
//! signer (the hashing trick), so no vocabulary is held. Document frequencies are counted per
//! token hash ([`idf_key`], a fixed XXH3 independent of any signer seed) in a sorted
//! `Vec<(u64, u32)>`.
//!
//! **One pass per document.** [`Tokenizer::sign_corpus`] runs the whole pipeline and the
//! signer's accumulation in one pass per document, in buffers each thread reuses: features
//! are byte spans of the normalised text, their distinct set is a hash table keyed by
//! [`idf_key`] (bytes compared on a key match, so two features are never merged), and no
//! string is allocated per token. The time is linear in the length of a document, however
//! long. [`Tokenizer::sign_corpus_with`] returns, from the same pass, each document's
//! feature count — a document without features (empty, punctuation or stop words only) has
//! the all-zero signature and must not be paired with other such documents — and on request
//! the weighted features as sparse rows ([`FeatureRows`]) for exact cosines.
//!
//! The classic Chinese near-duplicate pipeline (segment, TF-IDF keywords, 64-bit simhash,
//! Hamming distance ≤ 3):
//!
//! ```
//! # #[cfg(feature = "cjk")] {
//! use simlsh::text::{Idf, Mode, Tokenizer, Weighting};
//! use simlsh::{HashingTrick, Signer};
//!
//! let docs = ["我们中出了一个叛徒", "我们中出了一个叛徒！", "今天天气很好"];
//! let base = Tokenizer::builder().mode(Mode::Cjk).build()?;
//! let idf = Idf::fit(&base, docs);
//! let tok = base.to_builder().idf(idf).top_k(Some(20)).build()?;
//! let signer = HashingTrick::builder().bits(64).seed(1).build()?;
//! let sigs = tok.sign_corpus(&signer, &docs)?;
//! assert_eq!(sigs.distance(0, 1), 0); // punctuation is dropped
//!
//! // jieba's own keywords, without fitting anything: its IDF table, its stop words.
//! let jieba = base.to_builder().weighting(Weighting::JiebaKeywords).top_k(Some(20)).build()?;
//! assert_eq!(jieba.features(docs[0]).tokens, ["我们", "中出", "一个", "叛徒"]);
//! # }
//! # Ok::<(), simlsh::Error>(())
//! ```
//!
//! Jieba (the modes [`Cjk`](Mode::Cjk) and [`Auto`](Mode::Auto), and
//! [`JiebaKeywords`](Weighting::JiebaKeywords)) is the crate's `cjk` feature, on by default;
//! without it, [`TokenizerBuilder::build`] refuses them with [`Error::Unsupported`](crate::Error::Unsupported).

mod bags;
mod config;
mod corpus;
mod counted;
mod idf;
#[cfg(feature = "cjk")]
mod keywords;
mod scan;
mod segment;
mod spec;
mod stopwords;

pub use bags::TokenBags;
pub use config::{Mode, TokenizerBuilder, Weighting};
pub use corpus::{FeatureRows, SignOptions, SignedCorpus};
pub use counted::CountedCorpus;
pub use idf::{DfCounter, IDF_FILE_VERSION, IDF_HASH_SEED, Idf, PENDING_KEY_BYTES, idf_key};
pub use spec::{FEATURE_SAMPLE, TokenizerSpec, WeightingKind, feature_sample_step, mean_features};
pub use stopwords::{ENGLISH, StopWords};

use crate::error::Result;
use crate::signature::Signature;
use crate::signers::Signer;
use scan::Scratch;

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

    /// True when the document has no feature: its signature is all zeros, whatever the
    /// signer, and says nothing about its similarity to anything.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Signs the features.
    pub fn sign<S: Signer + ?Sized>(&self, signer: &S) -> Result<Signature> {
        signer.sign_tokens(&self.token_refs(), &self.weights)
    }

    /// The features as a sparse row: `(key, weight)` pairs sorted by key, the key of a
    /// feature being [`idf_key`] of its text (the same row as [`FeatureRows`] holds).
    pub fn sparse_row(&self) -> (Vec<u64>, Vec<f32>) {
        let pairs = self
            .tokens
            .iter()
            .map(|t| idf_key(t))
            .zip(self.weights.iter().copied());
        corpus::sorted_row(pairs.collect())
    }
}

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

    /// The stop words.
    pub fn stop_words(&self) -> &StopWords {
        &self.b.stop_words
    }

    /// The features of `text` before weighting, in document order, repeats included.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut s = Scratch::default();
        let source = scan::features(&self.b, text, &mut s);
        let t = s.bufs.get(text, source);
        s.feats.iter().map(|f| f.get(t).to_string()).collect()
    }

    /// The weighted distinct features of `text` (see the [module docs](self)).
    pub fn features(&self, text: &str) -> Features {
        let mut s = Scratch::default();
        let source = scan::scan(&self.b, text, &mut s);
        let t = s.bufs.get(text, source);
        Features {
            tokens: s
                .kept
                .iter()
                .map(|&j| s.distinct.first[j as usize].get(t).to_string())
                .collect(),
            weights: s.weights,
        }
    }

    /// Signs one document.
    pub fn sign<S: Signer + ?Sized>(&self, signer: &S, text: &str) -> Result<Signature> {
        let mut s = Scratch::default();
        let source = scan::scan(&self.b, text, &mut s);
        scan::with_refs(text, source, &mut s, |t, w| signer.sign_tokens(t, w))
    }
}
