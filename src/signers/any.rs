//! One type for any signer, for code that picks the signer at run time (the command line).

use sprs::SpIndex;

use super::{HashingTrick, HyperplaneSigner, PooledSigner, Signer, SignerInfo};
use crate::error::Result;

/// Any of the signers, dispatching every [`Signer`] method to the one it holds.
#[derive(Clone, Debug)]
pub enum AnySigner {
    /// An explicit-matrix signer.
    Hyperplane(HyperplaneSigner),
    /// The hashing trick.
    HashingTrick(HashingTrick),
    /// The pooled signer.
    Pooled(PooledSigner),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            AnySigner::Hyperplane($s) => $e,
            AnySigner::HashingTrick($s) => $e,
            AnySigner::Pooled($s) => $e,
        }
    };
}

impl Signer for AnySigner {
    fn bits(&self) -> usize {
        dispatch!(self, s => s.bits())
    }

    fn dim(&self) -> Option<u64> {
        dispatch!(self, s => s.dim())
    }

    fn info(&self) -> SignerInfo {
        dispatch!(self, s => s.info())
    }

    fn accumulate(&self, ids: &[u64], weights: &[f32], acc: &mut [f32]) {
        dispatch!(self, s => s.accumulate(ids, weights, acc))
    }

    fn accumulate_indices<I: SpIndex>(&self, ids: &[I], weights: &[f32], acc: &mut [f32]) {
        dispatch!(self, s => s.accumulate_indices(ids, weights, acc))
    }

    fn accumulate_tokens(&self, tokens: &[&str], weights: &[f32], acc: &mut [f32]) -> Result<()> {
        dispatch!(self, s => s.accumulate_tokens(tokens, weights, acc))
    }

    fn sign_dense(&self, x: &ndarray::ArrayRef2<f32>) -> Result<crate::SignatureMatrix> {
        dispatch!(self, s => s.sign_dense(x))
    }
}

impl From<HyperplaneSigner> for AnySigner {
    fn from(s: HyperplaneSigner) -> Self {
        AnySigner::Hyperplane(s)
    }
}

impl From<HashingTrick> for AnySigner {
    fn from(s: HashingTrick) -> Self {
        AnySigner::HashingTrick(s)
    }
}

impl From<PooledSigner> for AnySigner {
    fn from(s: PooledSigner) -> Self {
        AnySigner::Pooled(s)
    }
}
