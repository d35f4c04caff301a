//! Documents given as weighted bags of tokens (already tokenized), checked once and signed.

use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::signature::SignatureMatrix;
use crate::signers::Signer;

/// Documents as bags of tokens, each token with a weight (1 each when no weights are given):
/// the input of the classic text simhash when the caller has tokenized. The lengths are
/// checked once, in [`new`](Self::new); [`sign_rows`](Self::sign_rows) signs any range of
/// the documents (a front end signs them chunk by chunk).
///
/// ```
/// use simlsh::text::TokenBags;
/// use simlsh::{HashingTrick, Signer};
///
/// let signer = HashingTrick::builder().bits(64).seed(1).build()?;
/// let docs = vec![vec!["a", "b"], vec!["a", "b", "b"]];
/// let weights = vec![vec![1.0, 2.0], vec![1.0, 1.0, 1.0]];
/// let bags = TokenBags::new(&docs, Some(&weights))?;
/// let sigs = bags.sign_rows(&signer, 0..bags.len())?;
/// assert_eq!(sigs.get(0), sigs.get(1)); // repeated tokens add up
/// assert!(TokenBags::new(&docs, Some(&weights[..1])).is_err());
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TokenBags<'a, S> {
    docs: &'a [Vec<S>],
    weights: Option<&'a [Vec<f32>]>,
}

impl<'a, S: AsRef<str> + Sync> TokenBags<'a, S> {
    /// The bags of `docs` (lists of tokens) with `weights` (`None`: 1 each; else one list per
    /// document, as long as its tokens).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when the weight lists are not one per document;
    /// [`Error::InvalidParameter`] (`weights`) naming the first document whose weights are
    /// not one per token.
    pub fn new(docs: &'a [Vec<S>], weights: Option<&'a [Vec<f32>]>) -> Result<Self> {
        if let Some(w) = weights {
            if w.len() != docs.len() {
                return Err(Error::LengthMismatch {
                    what: "documents vs weight lists",
                    left: docs.len(),
                    right: w.len(),
                });
            }
            if let Some(r) = (0..docs.len()).find(|&r| docs[r].len() != w[r].len()) {
                return Err(Error::param(
                    "weights",
                    format!(
                        "row {r}: {} tokens but {} weights",
                        docs[r].len(),
                        w[r].len()
                    ),
                ));
            }
        }
        Ok(TokenBags { docs, weights })
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True when there are no documents.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The signatures of documents `rows`, in parallel ([`Signer::sign_tokens`]).
    ///
    /// # Errors
    /// The signer's errors (a non-finite weight, a signer that takes no tokens), naming the
    /// row in the whole input.
    ///
    /// # Panics
    /// If `rows` is not within `0..len()`.
    pub fn sign_rows<G: Signer + ?Sized>(
        &self,
        signer: &G,
        rows: Range<usize>,
    ) -> Result<SignatureMatrix> {
        let sigs = rows
            .into_par_iter()
            .map(|i| {
                let toks: Vec<&str> = self.docs[i].iter().map(AsRef::as_ref).collect();
                let ones;
                let ws = match self.weights {
                    Some(w) => &w[i][..],
                    None => {
                        ones = vec![1.0f32; toks.len()];
                        &ones[..]
                    }
                };
                signer.sign_tokens(&toks, ws).map_err(|e| e.offset_rows(i))
            })
            .collect::<Result<Vec<_>>>()?;
        SignatureMatrix::from_signatures(signer.bits(), sigs.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signers::HashingTrick;

    #[test]
    fn bags_sign_as_one_document_at_a_time_and_check_their_lengths() {
        let signer = HashingTrick::builder().bits(128).seed(3).build().unwrap();
        let docs: Vec<Vec<String>> = (0..40)
            .map(|d| {
                (0..d % 7)
                    .map(|t| format!("t{}", (d * 3 + t) % 11))
                    .collect()
            })
            .collect();
        let weights: Vec<Vec<f32>> = docs
            .iter()
            .enumerate()
            .map(|(d, toks)| {
                (0..toks.len())
                    .map(|t| (d + t) as f32 * 0.5 - 3.0)
                    .collect()
            })
            .collect();
        for w in [None, Some(&weights[..])] {
            let bags = TokenBags::new(&docs, w).unwrap();
            // Any range, as one document at a time (the oracle).
            let sigs = bags.sign_rows(&signer, 5..33).unwrap();
            for i in 5..33 {
                let toks: Vec<&str> = docs[i].iter().map(String::as_str).collect();
                let ones = vec![1.0; toks.len()];
                let ws = w.map_or(&ones[..], |w| &w[i][..]);
                assert_eq!(
                    sigs.get(i - 5),
                    signer.sign_tokens(&toks, ws).unwrap(),
                    "row {i}"
                );
            }
        }
        let e = TokenBags::new(&docs, Some(&weights[..39])).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    left: 40,
                    right: 39,
                    ..
                }
            ),
            "{e}"
        );
        let mut short = weights.clone();
        short[9].pop();
        let e = TokenBags::new(&docs, Some(&short)).unwrap_err().to_string();
        assert!(e.contains("row 9: 2 tokens but 1 weights"), "{e}");
        // A bad weight is named by its row in the whole input.
        let mut bad = weights.clone();
        bad[20][1] = f32::NAN;
        let bags = TokenBags::new(&docs, Some(&bad)).unwrap();
        let e = bags.sign_rows(&signer, 16..24).unwrap_err();
        assert!(e.to_string().contains("row 20"), "{e}");
    }
}
