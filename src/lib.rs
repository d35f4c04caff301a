//! simlsh: random-hyperplane locality-sensitive hashing ("simhash").
#![deny(missing_docs)]

pub mod error;
pub mod estimate;
pub mod hamming;
pub mod index;
pub mod io;
pub mod rng;
pub mod signature;
pub mod signers;
pub mod storage;
pub mod workloads;

pub use error::{Error, Result};
pub use index::{HammingIndex, Hit, Id, LinearScan};
pub use signature::{Signature, SignatureMatrix};
pub use signers::{Accumulator, HashingTrick, HyperplaneSigner, PooledSigner, Signer, SignerInfo};

/// The README's code examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
