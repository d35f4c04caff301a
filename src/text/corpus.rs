//! Signing a corpus in parallel, one pass per document: the signatures, which documents had
//! no feature, and optionally each document's weighted features as a sparse row, for exact
//! cosines.

use rayon::prelude::*;

use super::Tokenizer;
use super::scan::{self, Scratch};
use crate::error::{Error, Result};
use crate::signature::{SignatureMatrix, words_for};
use crate::signers::Signer;

/// Documents signed per parallel task.
const DOCS_PER_TASK: usize = 64;

/// What [`Tokenizer::sign_corpus_with`] returns besides the signatures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignOptions {
    rows: bool,
}

impl SignOptions {
    /// Also return each document's weighted features as a sparse row ([`FeatureRows`])
    /// (default `false`: the pass then keeps nothing but the signature and the feature count).
    pub fn rows(mut self, on: bool) -> Self {
        self.rows = on;
        self
    }
}

/// A signed corpus: row `i` of each part is document `i`.
#[derive(Clone, Debug, PartialEq)]
pub struct SignedCorpus {
    /// The signatures.
    pub signatures: SignatureMatrix,
    /// The number of features each document was signed with (distinct, after top K). A
    /// document with none (empty, punctuation only, stop words only, no jieba keyword) has
    /// the all-zero signature: it is at distance 0 from every other such document without
    /// being similar to it, and should be reported apart, not paired.
    pub features: Vec<u32>,
    /// The weighted features, with [`SignOptions::rows`].
    pub rows: Option<FeatureRows>,
}

impl SignedCorpus {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.features.len()
    }

    /// True when there are no documents.
    pub fn is_empty(&self) -> bool {
        self.features.is_empty()
    }

    /// True when document `i` had no feature (see [`features`](SignedCorpus::features)).
    pub fn is_featureless(&self, i: usize) -> bool {
        self.features[i] == 0
    }

    /// The documents that had no feature, in increasing order.
    pub fn featureless(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.is_featureless(i))
            .collect()
    }

    /// Appends the documents of `other` (signed with the same signature width, and with rows
    /// on both or neither), as if both had been signed in one call.
    pub fn append(&mut self, other: SignedCorpus) -> Result<()> {
        if self.signatures.bits() != other.signatures.bits() {
            return Err(Error::param(
                "append",
                format!(
                    "signature widths differ: {} and {}",
                    self.signatures.bits(),
                    other.signatures.bits()
                ),
            ));
        }
        match (&mut self.rows, other.rows) {
            (Some(a), Some(b)) => a.append(b),
            (None, None) => {}
            _ => {
                return Err(Error::param(
                    "append",
                    "one corpus has feature rows and the other has not",
                ));
            }
        }
        for row in other.signatures.rows() {
            self.signatures.push_words(other.signatures.bits(), row)?;
        }
        self.features.extend(other.features);
        Ok(())
    }
}

/// Each document's weighted features as a sparse row, in compressed-row form: row `i` is the
/// `(key, weight)` pairs `indptr[i]..indptr[i + 1]`, keys strictly increasing. The key of a
/// feature is [`idf_key`](super::idf_key) of its text (XXH3-64, seed 0, independent of any
/// signer), the weight the one the signature was computed with (after top K). Two documents'
/// rows give the exact cosine of their weighted feature vectors ([`cosine`](Self::cosine)),
/// up to a key collision (probability about `2^-64` per pair of distinct features), in which
/// case the two features' weights are added in one entry.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureRows {
    indptr: Vec<usize>,
    keys: Vec<u64>,
    weights: Vec<f32>,
}

impl Default for FeatureRows {
    fn default() -> Self {
        FeatureRows {
            indptr: vec![0],
            keys: Vec::new(),
            weights: Vec::new(),
        }
    }
}

impl FeatureRows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Rows from their arrays, as [`parts`](Self::parts) gives them (each row's keys strictly
    /// increasing, as the callers make them).
    pub(crate) fn from_raw(indptr: Vec<usize>, keys: Vec<u64>, weights: Vec<f32>) -> Self {
        debug_assert_eq!(indptr.last(), Some(&keys.len()));
        debug_assert_eq!(keys.len(), weights.len());
        FeatureRows {
            indptr,
            keys,
            weights,
        }
    }

    /// Empties the rows, keeping their allocations.
    pub(crate) fn clear(&mut self) {
        self.indptr.truncate(1);
        self.keys.clear();
        self.weights.clear();
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of stored `(key, weight)` pairs.
    pub fn nnz(&self) -> usize {
        self.keys.len()
    }

    /// Row `i`: its keys (strictly increasing) and weights.
    pub fn row(&self, i: usize) -> (&[u64], &[f32]) {
        let (a, b) = (self.indptr[i], self.indptr[i + 1]);
        (&self.keys[a..b], &self.weights[a..b])
    }

    /// Row offsets (`len() + 1` of them), keys and weights: the compressed-row arrays.
    pub fn parts(&self) -> (&[usize], &[u64], &[f32]) {
        (&self.indptr, &self.keys, &self.weights)
    }

    /// The rows' arrays, moved out: `(indptr, keys, weights)` as [`parts`](Self::parts).
    pub fn into_parts(self) -> (Vec<usize>, Vec<u64>, Vec<f32>) {
        (self.indptr, self.keys, self.weights)
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        8 * self.indptr.capacity() + 8 * self.keys.capacity() + 4 * self.weights.capacity()
    }

    /// The exact cosine of rows `i` and `j`, accumulated in `f64`; 0 when either row is empty.
    pub fn cosine(&self, i: usize, j: usize) -> f64 {
        let ((ka, wa), (kb, wb)) = (self.row(i), self.row(j));
        let dot = crate::verify::dot_sparse(ka, wa, kb, wb);
        let norm = |w: &[f32]| w.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>();
        let (na, nb) = (norm(wa), norm(wb));
        if na == 0.0 || nb == 0.0 {
            0.0
        } else {
            dot / (na.sqrt() * nb.sqrt())
        }
    }

    /// Appends the row of the document last scanned into `s` (its kept features' keys and
    /// weights), `pairs` a reused buffer.
    fn push_scanned(&mut self, s: &Scratch, pairs: &mut Vec<(u64, f32)>) {
        pairs.clear();
        pairs.extend(
            s.kept
                .iter()
                .map(|&j| s.distinct.keys[j as usize])
                .zip(s.weights.iter().copied()),
        );
        self.push_pairs(pairs);
    }

    /// Appends a row from `(key, weight)` pairs in any order (sorted here; the weights of one
    /// key added).
    pub(crate) fn push_pairs(&mut self, pairs: &mut [(u64, f32)]) {
        pairs.sort_unstable_by_key(|p| p.0);
        for &(k, w) in pairs.iter() {
            if self.keys.len() > *self.indptr.last().expect("indptr starts at 0")
                && self.keys.last() == Some(&k)
            {
                *self.weights.last_mut().expect("a weight per key") += w;
            } else {
                self.keys.push(k);
                self.weights.push(w);
            }
        }
        self.indptr.push(self.keys.len());
    }

    /// The rows as a matrix over their distinct keys: the keys sorted, and the column (the
    /// position among them) of each entry's key, in entry order.
    ///
    /// ```
    /// use simlsh::text::Tokenizer;
    ///
    /// let rows = Tokenizer::default().feature_rows(&["b a", "a c"]);
    /// let (keys, cols) = rows.columns();
    /// assert_eq!(keys.len(), 3);
    /// let (_, entry_keys, _) = rows.parts();
    /// assert!(entry_keys.iter().zip(&cols).all(|(k, &c)| keys[c] == *k));
    /// ```
    pub fn columns(&self) -> (Vec<u64>, Vec<usize>) {
        let mut keys = self.keys.clone();
        keys.par_sort_unstable();
        keys.dedup();
        let cols = self
            .keys
            .par_iter()
            .map(|k| keys.binary_search(k).expect("a key of the rows"))
            .collect();
        (keys, cols)
    }

    /// Reserves room for `rows` more rows of `entries` entries in all, exactly: rows
    /// [`append`](Self::append)ed within it take no more memory than their entries.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) naming the feature rows.
    pub fn reserve(&mut self, rows: usize, entries: usize) -> crate::Result<()> {
        crate::memory::reserve(&mut self.indptr, rows, "the feature rows")?;
        crate::memory::reserve(&mut self.keys, entries, "the feature rows")?;
        crate::memory::reserve(&mut self.weights, entries, "the feature rows")
    }

    /// Appends the rows of `other`.
    pub fn append(&mut self, other: FeatureRows) {
        let base = self.keys.len();
        self.indptr
            .extend(other.indptr[1..].iter().map(|&p| p + base));
        self.keys.extend(other.keys);
        self.weights.extend(other.weights);
    }
}

/// `(key, weight)` pairs as one sorted, merged row.
pub(crate) fn sorted_row(mut pairs: Vec<(u64, f32)>) -> (Vec<u64>, Vec<f32>) {
    let mut r = FeatureRows::default();
    r.push_pairs(&mut pairs);
    (r.keys, r.weights)
}

impl Tokenizer {
    /// The weighted features of every document (in parallel), row `i` that of `docs[i]`
    /// ([`Features::sparse_row`](super::Features::sparse_row)): the vectors whose exact cosines
    /// the verified join computes.
    pub fn feature_rows<T: AsRef<str> + Sync>(&self, docs: &[T]) -> FeatureRows {
        // The pass of `sign_corpus_with` without a signer: one scan per document, tasks of
        // `DOCS_PER_TASK` documents appended in order.
        let parts: Vec<FeatureRows> = docs
            .par_chunks(DOCS_PER_TASK)
            .map_init(
                || (Scratch::default(), Vec::new()),
                |(s, pairs), chunk| {
                    let mut rows = FeatureRows::default();
                    for d in chunk {
                        scan::scan(&self.b, d.as_ref(), s);
                        rows.push_scanned(s, pairs);
                    }
                    rows
                },
            )
            .collect();
        let mut out = FeatureRows::default();
        for p in parts {
            out.append(p);
        }
        out
    }

    /// Signs every document in parallel; row `i` is `self.sign(signer, docs[i])`, and the
    /// result does not depend on the number of threads. The signer must take tokens
    /// ([`HashingTrick`](crate::HashingTrick) or [`PooledSigner`](crate::PooledSigner)).
    pub fn sign_corpus<S: Signer + ?Sized, T: AsRef<str> + Sync>(
        &self,
        signer: &S,
        docs: &[T],
    ) -> Result<SignatureMatrix> {
        Ok(self
            .sign_corpus_with(signer, docs, SignOptions::default())?
            .signatures)
    }

    /// [`sign_corpus`](Self::sign_corpus), also giving each document's feature count and,
    /// with [`SignOptions::rows`], its weighted features, from the same single pass.
    ///
    /// ```
    /// use simlsh::text::{SignOptions, Tokenizer};
    /// use simlsh::HashingTrick;
    ///
    /// let docs = ["the cat sat", "the cat sat down", "?!", ""];
    /// let signer = HashingTrick::builder().bits(64).seed(1).build()?;
    /// let c = Tokenizer::default().sign_corpus_with(&signer, &docs, SignOptions::default().rows(true))?;
    /// assert_eq!(c.features, [3, 4, 0, 0]);
    /// assert_eq!(c.featureless(), [2, 3]); // all-zero signatures, not duplicates
    /// let rows = c.rows.as_ref().unwrap();
    /// assert!((rows.cosine(0, 1) - 3f64 / 12f64.sqrt()).abs() < 1e-12);
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    pub fn sign_corpus_with<S: Signer + ?Sized, T: AsRef<str> + Sync>(
        &self,
        signer: &S,
        docs: &[T],
        opts: SignOptions,
    ) -> Result<SignedCorpus> {
        let bits = signer.bits();
        let w = words_for(bits);
        let mut signatures = SignatureMatrix::zeros(docs.len(), bits)?;
        let mut features = vec![0u32; docs.len()];
        let parts: Vec<Option<FeatureRows>> = signatures
            .as_mut_slice()
            .par_chunks_mut(w * DOCS_PER_TASK)
            .zip(features.par_chunks_mut(DOCS_PER_TASK))
            .enumerate()
            .map_init(
                || (Scratch::default(), signer.new_acc(), Vec::new()),
                |(s, acc, pairs), (c, (sigs, counts))| {
                    let mut rows = opts.rows.then(FeatureRows::default);
                    for (r, (dst, count)) in sigs.chunks_exact_mut(w).zip(counts).enumerate() {
                        let text = docs[c * DOCS_PER_TASK + r].as_ref();
                        let source = scan::scan(&self.b, text, s);
                        acc.fill(0.0);
                        scan::with_refs(text, source, s, |t, w| {
                            signer.accumulate_tokens(t, w, acc)
                        })?;
                        signer.finish_into(acc, dst);
                        *count = u32::try_from(s.kept.len()).unwrap_or(u32::MAX);
                        if let Some(rows) = &mut rows {
                            rows.push_scanned(s, pairs);
                        }
                    }
                    Ok(rows)
                },
            )
            .collect::<Result<_>>()?;
        let rows = opts.rows.then(|| {
            let mut all = FeatureRows::default();
            for p in parts.into_iter().flatten() {
                all.append(p);
            }
            all
        });
        Ok(SignedCorpus {
            signatures,
            features,
            rows,
        })
    }
}
