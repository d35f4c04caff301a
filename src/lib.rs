//! simlsh: random-hyperplane locality-sensitive hashing ("simhash").
#![deny(missing_docs)]

pub mod error;
pub mod hamming;
pub mod index;
pub mod rng;
pub mod signature;
pub mod signers;
pub mod storage;
pub mod workloads;

pub use error::{Error, Result};
pub use index::{HammingIndex, Hit, Id, LinearScan, MultiIndex};
pub use signature::{Signature, SignatureMatrix};
pub use signers::{Accumulator, HashingTrick, HyperplaneSigner, PooledSigner, Signer, SignerInfo};
