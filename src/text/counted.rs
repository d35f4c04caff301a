//! A corpus tokenised once for its feature rows: the pass that counts document frequencies
//! keeps each document's distinct features (keys and counts), and the rows are weighed from
//! them once the TF-IDF table is known, instead of tokenising every document a second time.

use rayon::prelude::*;

use super::scan::{self, Scratch};
use super::{DfCounter, FeatureRows, Idf, Tokenizer};
use crate::error::{Error, Result};
use crate::memory;

/// What the allocations are named in errors.
const WHAT: &str = "the counted corpus";

/// Makes room for `more` values in `v`, doubling its capacity when it can (else exactly),
/// fallibly.
fn grow<T>(v: &mut Vec<T>, more: usize) -> Result<()> {
    if v.capacity() - v.len() >= more {
        return Ok(());
    }
    memory::reserve(v, more.max(v.len()), WHAT).or_else(|_| memory::reserve(v, more, WHAT))
}

/// Documents tokenised per parallel task.
const DOCS_PER_TASK: usize = 64;

/// Documents tokenised in parallel before they are appended (in document order).
const BATCH_DOCS: usize = 4096;

/// The distinct features of a run of documents, in order of first occurrence.
#[derive(Debug, Default)]
struct Part {
    /// Distinct features of each document.
    lens: Vec<u32>,
    /// Whether two of a document's distinct features have one key.
    collided: Vec<bool>,
    keys: Vec<u64>,
    counts: Vec<u32>,
}

impl Part {
    fn of<T: AsRef<str>>(tokenizer: &Tokenizer, docs: &[T], s: &mut Scratch) -> Part {
        let mut p = Part::default();
        for d in docs {
            scan::counted(&tokenizer.b, d.as_ref(), s);
            let dd = &s.distinct;
            p.lens.push(dd.len() as u32);
            p.collided.push(dd.collided);
            p.keys.extend_from_slice(&dd.keys);
            p.counts.extend_from_slice(&dd.counts);
        }
        p
    }
}

/// Weighs the rows `indptr` (offsets into `keys` and `counts`, relative to them) in place, as
/// [`Tokenizer::feature_rows`] makes them: each row's kept features sorted by key (entries of
/// one key merged), written from the start of the slices, the weights as `f32` bits in
/// `counts`. Returns each row's kept length, or `None` for a weighting that needs the text.
fn weigh_in_place(
    tokenizer: &Tokenizer,
    indptr: &[usize],
    keys: &mut [u64],
    counts: &mut [u32],
) -> Option<Vec<u32>> {
    let b = &tokenizer.b;
    let base = indptr[0];
    let (mut idf, mut w, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    let mut row = FeatureRows::default();
    let mut pairs = Vec::new();
    let mut lens = Vec::with_capacity(indptr.len() - 1);
    let mut out = 0;
    for r in indptr.windows(2) {
        let range = r[0] - base..r[1] - base;
        w.clear();
        let k = &keys[range.clone()];
        if !scan::weigh_counts(&b.weighting, k, &counts[range.clone()], &mut idf, &mut w) {
            return None;
        }
        scan::keep(b.top_k, &mut w, &mut kept);
        pairs.clear();
        pairs.extend(kept.iter().map(|&j| k[j as usize]).zip(w.iter().copied()));
        row.clear();
        row.push_pairs(&mut pairs);
        let (rk, rw) = row.row(0);
        // The row is no longer than its counts, and rows are written in order: `out` stays at
        // or before the row's start, so nothing unread is overwritten.
        keys[out..out + rk.len()].copy_from_slice(rk);
        for (c, v) in counts[out..out + rw.len()].iter_mut().zip(rw) {
            *c = v.to_bits();
        }
        out += rk.len();
        lens.push(rk.len() as u32);
    }
    Some(lens)
}

/// The documents of a corpus tokenised once: each one's distinct features, their keys
/// ([`idf_key`](super::idf_key)) and counts, from the pass that also counted the corpus's
/// document frequencies ([`Tokenizer::count_corpus`]). Its [`feature_rows`](Self::feature_rows)
/// are those of [`Tokenizer::feature_rows`] on the same documents, without tokenising them
/// again.
///
/// **Memory.** 12 bytes per distinct feature of each document (its key and count), about
/// what the rows themselves take.
///
/// ```
/// use std::sync::Arc;
/// use simlsh::text::{Idf, TokenizerSpec, WeightingKind};
///
/// let docs = ["the cat sat", "the cat sat down", "a dog"];
/// let spec = TokenizerSpec { weighting: WeightingKind::TfIdf, ..TokenizerSpec::default() };
/// let counting = spec.counting()?;
/// let (idf, corpus) = counting.count_corpus(&docs)?;
/// assert_eq!(idf.entries(), Idf::fit(&counting, docs).entries());
/// let tok = spec.build(Some(Arc::new(idf)))?;
/// assert_eq!(corpus.feature_rows(&tok)?, tok.feature_rows(&docs));
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Debug)]
pub struct CountedCorpus {
    /// [`Tokenizer::config`] of the tokenizer that counted it.
    config: String,
    /// Document `i`'s features are `indptr[i]..indptr[i + 1]` of `keys` and `counts`.
    indptr: Vec<usize>,
    keys: Vec<u64>,
    counts: Vec<u32>,
}

impl Tokenizer {
    /// Tokenises every document once (in parallel; the result does not depend on the number
    /// of threads): the corpus's document frequencies, the table [`Idf::fit`] gives, and each
    /// document's distinct features with their counts, from which
    /// [`CountedCorpus::feature_rows`] weighs the rows. The weighting and top K of this
    /// tokenizer play no part.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the documents' features cannot be held.
    pub fn count_corpus<T: AsRef<str> + Sync>(&self, docs: &[T]) -> Result<(Idf, CountedCorpus)> {
        let mut c = CountedCorpus {
            config: self.config(),
            indptr: Vec::new(),
            keys: Vec::new(),
            counts: Vec::new(),
        };
        memory::reserve(&mut c.indptr, docs.len() + 1, WHAT)?;
        c.indptr.push(0);
        let mut df = DfCounter::new(self);
        let mut seen = Vec::new();
        for batch in docs.chunks(BATCH_DOCS) {
            let parts: Vec<Part> = batch
                .par_chunks(DOCS_PER_TASK)
                .map_init(Scratch::default, |s, chunk| Part::of(self, chunk, s))
                .collect();
            for p in parts {
                grow(&mut c.keys, p.keys.len())?;
                grow(&mut c.counts, p.counts.len())?;
                let mut at = 0;
                for (&len, &collided) in p.lens.iter().zip(&p.collided) {
                    let keys = &p.keys[at..at + len as usize];
                    at += len as usize;
                    if collided {
                        // Two different features with one key: the key counts once.
                        seen.clear();
                        seen.extend_from_slice(keys);
                        seen.sort_unstable();
                        seen.dedup();
                        df.add_keys(&seen);
                    } else {
                        df.add_keys(keys);
                    }
                    c.indptr
                        .push(c.indptr.last().expect("starts at 0") + len as usize);
                }
                c.keys.extend_from_slice(&p.keys);
                c.counts.extend_from_slice(&p.counts);
            }
        }
        Ok((df.finish(), c))
    }
}

impl CountedCorpus {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.indptr.len() - 1
    }

    /// True when there are no documents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        8 * self.indptr.capacity() + 8 * self.keys.capacity() + 4 * self.counts.capacity()
    }

    /// The documents' weighted features as [`Tokenizer::feature_rows`] gives them with
    /// `tokenizer` (its weighting, top K and IDF table), consuming the counts as it goes.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `tokenizer` tokenises otherwise than the one that
    /// counted the corpus (another mode, n-gram, case, punctuation or stop words), or weighs
    /// by jieba's keywords, which need the text; [`Error::OutOfMemory`] when the rows cannot
    /// be allocated.
    pub fn feature_rows(self, tokenizer: &Tokenizer) -> Result<FeatureRows> {
        let mine = tokenizer.config();
        if mine != self.config {
            return Err(Error::param(
                "tokenizer",
                format!(
                    "the corpus was counted by `{}`, not `{mine}`: the features differ",
                    self.config
                ),
            ));
        }
        let CountedCorpus {
            mut indptr,
            mut keys,
            mut counts,
            ..
        } = self;
        // Tasks of `DOCS_PER_TASK` rows, each weighing its rows within its own part of the
        // arrays; then the parts moved together, in order.
        let n = indptr.len() - 1;
        let firsts: Vec<usize> = (0..n).step_by(DOCS_PER_TASK).collect();
        let starts: Vec<usize> = firsts.iter().map(|&r| indptr[r]).collect();
        let lens: Vec<Option<Vec<u32>>> = {
            let mut tasks = Vec::with_capacity(firsts.len());
            let (mut k, mut c) = (keys.as_mut_slice(), counts.as_mut_slice());
            for &r in &firsts {
                let rows = &indptr[r..=(r + DOCS_PER_TASK).min(n)];
                let len = rows[rows.len() - 1] - rows[0];
                let (tk, rest_k) = std::mem::take(&mut k).split_at_mut(len);
                let (tc, rest_c) = std::mem::take(&mut c).split_at_mut(len);
                (k, c) = (rest_k, rest_c);
                tasks.push((rows, tk, tc));
            }
            tasks
                .into_par_iter()
                .map(|(rows, k, c)| weigh_in_place(tokenizer, rows, k, c))
                .collect()
        };
        let mut at = 0;
        for ((lens, &first), &start) in lens.into_iter().zip(&firsts).zip(&starts) {
            let lens = lens.ok_or_else(|| {
                Error::param(
                    "tokenizer",
                    "jieba's keyword weights need the text: take Tokenizer::feature_rows",
                )
            })?;
            let kept: usize = lens.iter().map(|&l| l as usize).sum();
            keys.copy_within(start..start + kept, at);
            counts.copy_within(start..start + kept, at);
            for (i, &l) in lens.iter().enumerate() {
                at += l as usize;
                indptr[first + i + 1] = at;
            }
        }
        keys.truncate(at);
        counts.truncate(at);
        let weights: Vec<f32> = counts.into_iter().map(f32::from_bits).collect();
        Ok(FeatureRows::from_raw(indptr, keys, weights))
    }
}
