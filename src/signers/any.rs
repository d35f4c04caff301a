//! One concrete type for any signer, for code that picks the signer at run time (the command
//! line, [`SignerSpec::build`](super::SignerSpec::build)).

use sprs::{CsMatViewI, SpIndex};

use super::{
    Accumulator, FwhtSigner, HashedGaussian, HashingTrick, HyperplaneSigner, PooledSigner, Signer,
    SignerExt, SignerInfo,
};
use crate::error::Result;
use crate::signature::SignatureMatrix;

/// Any of the signers, dispatching every [`Signer`] method to the one it holds. Unlike a
/// `Box<dyn Signer>` it is `Clone` and `Debug`, needs no allocation, and can be matched to
/// reach the concrete signer.
#[derive(Clone, Debug)]
pub enum AnySigner {
    /// An explicit-matrix signer.
    Hyperplane(HyperplaneSigner),
    /// The hashing trick.
    HashingTrick(HashingTrick),
    /// The pooled signer.
    Pooled(PooledSigner),
    /// The hashed Gaussian signer.
    HashedGaussian(HashedGaussian),
    /// The structured-rotation signer.
    Fwht(FwhtSigner),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            AnySigner::Hyperplane($s) => $e,
            AnySigner::HashingTrick($s) => $e,
            AnySigner::Pooled($s) => $e,
            AnySigner::HashedGaussian($s) => $e,
            AnySigner::Fwht($s) => $e,
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

    fn accumulate_tokens(&self, tokens: &[&str], weights: &[f32], acc: &mut [f32]) -> Result<()> {
        dispatch!(self, s => s.accumulate_tokens(tokens, weights, acc))
    }

    fn sign_dense(&self, x: &ndarray::ArrayRef2<f32>) -> Result<SignatureMatrix> {
        dispatch!(self, s => s.sign_dense(x))
    }

    fn new_acc(&self) -> Vec<f32> {
        dispatch!(self, s => s.new_acc())
    }

    fn acc_values(&self) -> usize {
        dispatch!(self, s => s.acc_values())
    }

    fn finish_into(&self, acc: &mut [f32], out: &mut [u64]) {
        dispatch!(self, s => s.finish_into(acc, out))
    }
}

impl AnySigner {
    /// [`SignerExt::sign_csr`], callable without importing [`SignerExt`].
    pub fn sign_csr<I: SpIndex, Iptr: SpIndex>(
        &self,
        x: CsMatViewI<'_, f32, I, Iptr>,
    ) -> Result<SignatureMatrix> {
        SignerExt::sign_csr(self, x)
    }

    /// [`SignerExt::accumulator`], callable without importing [`SignerExt`].
    pub fn accumulator(&self) -> Accumulator<'_, Self> {
        Accumulator::new(self)
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

impl From<HashedGaussian> for AnySigner {
    fn from(s: HashedGaussian) -> Self {
        AnySigner::HashedGaussian(s)
    }
}

impl From<FwhtSigner> for AnySigner {
    fn from(s: FwhtSigner) -> Self {
        AnySigner::Fwht(s)
    }
}
