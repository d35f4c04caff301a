//! Streaming signatures.

use super::{Signer, check_weights, check_weights_ids};
use crate::error::{Error, Result};
use crate::signature::Signature;

/// Accumulates a signature from features given one at a time or in chunks (a document read
/// as a stream, a vector arriving in pieces), and gives the signature at any point.
///
/// Adding the features of a vector in the same order as batch signing (increasing feature
/// index for sparse rows) gives a signature bit-identical to
/// [`Signer::sign_sparse`], however the features are chunked.
/// Two accumulators over the same signer can be [merged](Self::merge) (two parts of one
/// document, or shards): the merged values are the elementwise sums, equal to accumulating
/// both parts in one stream up to floating-point rounding.
///
/// ```
/// use simlsh::{HashingTrick, Signer, SignerExt};
/// let s = HashingTrick::builder().bits(128).seed(3).build()?;
/// let mut acc = s.accumulator();
/// acc.add(10, 1.0)?;
/// acc.add_chunk(&[20, 30], &[0.5, -2.0])?;
/// assert_eq!(acc.signature(), s.sign_sparse(&[10, 20, 30], &[1.0, 0.5, -2.0])?);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Accumulator<'s, S: Signer + ?Sized> {
    signer: &'s S,
    acc: Vec<f32>,
    features: u64,
}

impl<'s, S: Signer + ?Sized> Accumulator<'s, S> {
    /// An empty accumulator (its signature is all zeros).
    pub fn new(signer: &'s S) -> Self {
        Accumulator {
            signer,
            acc: signer.new_acc(),
            features: 0,
        }
    }

    /// Adds one feature with weight `w`.
    pub fn add(&mut self, id: u64, w: f32) -> Result<()> {
        self.add_chunk(&[id], &[w])
    }

    /// Adds features in the order given (any order; repeated ids add up).
    pub fn add_chunk(&mut self, ids: &[u64], weights: &[f32]) -> Result<()> {
        check_weights_ids(0, ids, weights)?;
        if let Some(d) = self.signer.dim()
            && let Some(&bad) = ids.iter().find(|&&i| i >= d)
        {
            return Err(Error::IndexOutOfRange {
                row: 0,
                col: bad,
                dim: d,
            });
        }
        self.signer.accumulate(ids, weights, &mut self.acc);
        self.features += ids.len() as u64;
        Ok(())
    }

    /// Adds tokens with their weights (signers that hash features only).
    pub fn add_tokens(&mut self, tokens: &[&str], weights: &[f32]) -> Result<()> {
        check_weights(0, weights, tokens.len())?;
        self.signer
            .accumulate_tokens(tokens, weights, &mut self.acc)?;
        self.features += tokens.len() as u64;
        Ok(())
    }

    /// Adds another accumulator's values (same signer parameters required).
    pub fn merge(&mut self, other: &Accumulator<'_, S>) -> Result<()> {
        let (a, b) = (self.signer.info(), other.signer.info());
        if a != b {
            return Err(Error::param(
                "merge",
                format!("signers differ: {a:?} vs {b:?}"),
            ));
        }
        self.acc
            .iter_mut()
            .zip(&other.acc)
            .for_each(|(x, y)| *x += *y);
        self.features += other.features;
        Ok(())
    }

    /// The signature of everything added so far.
    pub fn signature(&self) -> Signature {
        // Finishing may use the buffer's scratch lanes: finish a copy.
        let mut acc = self.acc.clone();
        self.signer.finish(&mut acc)
    }

    /// The accumulated values: the projections `V[0..f]`, or the hashed buckets of a
    /// [`FwhtSigner`](super::FwhtSigner) (see [`Signer::acc_values`]).
    pub fn values(&self) -> &[f32] {
        &self.acc[..self.signer.acc_values()]
    }

    /// Number of features added (counting repeats).
    pub fn features(&self) -> u64 {
        self.features
    }

    /// Clears the accumulator for reuse.
    pub fn reset(&mut self) {
        self.acc.fill(0.0);
        self.features = 0;
    }
}
