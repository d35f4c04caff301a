//! # simlsh
//!
//! Random-hyperplane locality-sensitive hashing ("simhash"): `f`-bit signatures of dense and
//! sparse vectors whose Hamming distance `h` estimates the angle θ between the vectors,
//! `θ ≈ π·h/f` and `cos θ ≈ cos(π·h/f)` (Charikar 2002), with calibrated estimates and exact
//! Hamming search.
//!
//! # Overview
//!
//! | layer | module | main types |
//! |---|---|---|
//! | signatures | [`signature`] | [`Signature`], [`SignatureMatrix`] |
//! | signers | [`signers`] | the [`Signer`] trait, [`HyperplaneSigner`], [`HashingTrick`], [`PooledSigner`], [`Accumulator`] |
//! | estimates | [`estimate`] | [`estimate::estimate`], [`estimate::Planner`], [`estimate::BitsPlanner`] |
//! | CPU dispatch | [`cpu`] | [`cpu::features`], the scalar / x86 kernel layer |
//! | popcount kernels | [`hamming`] | [`hamming::distance`], [`hamming::scan_radius`], [`hamming::scan_knn`] |
//! | indexes | [`index`] | the [`HammingIndex`] trait, [`LinearScan`] |
//! | joins | [`join`] | [`join::self_join`], [`join::banded_join`], [`join::leader_clusters`] |
//! | exact answers | [`verify`] | [`verify::VerifiedJoin`], [`verify::rerank`], [`verify::Vectors`] |
//! | files | [`io`] | the versioned format, [`io::save_signatures`], [`io::load_index`] |
//! | randomness | [`rng`] | platform-independent seeded generators and hashes |
//!
//! Sign, compare, estimate:
//!
//! ```
//! use simlsh::{HyperplaneSigner, Signer, estimate};
//! use ndarray::array;
//!
//! let x = array![[1.0f32, 0.0, 2.0], [1.0, 0.1, 2.0], [-2.0, 1.0, 0.0]];
//! let s = HyperplaneSigner::builder().dim(3).bits(256).seed(7).build()?;
//! let sigs = s.sign_dense(&x)?;
//! let h = sigs.distance(0, 1);
//! let e = estimate::estimate(h as u64, 256, 0.95, estimate::IntervalMethod::ClopperPearson)?;
//! assert!(e.cosine > 0.9 && e.cosine_interval.contains(0.99));
//! # Ok::<(), simlsh::Error>(())
//! ```
//!
//! # Choosing a signer
//!
//! All signers compute `V = Σ_i x_i · r_i` and set bit `j` to `V[j] > 0`; they differ in the
//! columns `r_i` (see [`signers`] for the full table):
//!
//! - **Dense vectors of moderate dimension** (embeddings, d ≤ a few thousand):
//!   [`HyperplaneSigner`] with [`Distribution::SuperBit`](signers::Distribution::SuperBit) gives
//!   the lowest estimation error (its hyperplanes are orthogonal in batches: about a third less
//!   mean squared angle error than Gaussian at `f = D`), signed by a matrix product.
//!   `Gaussian` is the textbook reference.
//! - **Sparse, high-dimensional or unbounded features** (TF-IDF, tokens, feature hashing):
//!   [`HashingTrick`] holds no matrix at all, takes `u64` ids or strings, and is the fastest
//!   per nonzero. Its `±1` columns are slightly biased when a few features dominate every row;
//!   [`PooledSigner`] (Gaussian values from a 40 KB pool) is unbiased there, at a higher cost.
//! - **Explicit sparse matrices**: [`Distribution::Rademacher`](signers::Distribution::Rademacher)
//!   stores one bit per entry; [`Distribution::VerySparse`](signers::Distribution::VerySparse)
//!   stores `≈ f·√D` entries but, at its default density, sees too few of a sparse row's
//!   features: use it for dense inputs.
//! - **Streams**: every signer's [`Accumulator`] takes features one at a time and gives the
//!   signature at any point, bit-identical to batch signing.
//!
//! # Choosing an index
//!
//! Every index implements [`HammingIndex`] with the same exact semantics: radius search
//! returns every stored signature at distance `≤ r` (inclusive), k-NN breaks ties by id.
//! [`LinearScan`] compares every stored code by hardware popcount, sharing one pass over the
//! data between a batch of queries: exact for any radius or `k`, no build, `8·⌈f/64⌉ + 4`
//! bytes per code. [`index::IndexSpec`] names every kind and its parameters in one compact
//! text form (`manku:k=3`, `mih:m=4`, `permutation:q=64,beam=128`) and builds it;
//! [`index::kinds`] describes them.
//!
//! # Memory
//!
//! Every signer reports the bytes it holds ([`Signer::info`]): a Gaussian matrix is `4·D·f`
//! bytes (1 GiB for `D = 2^20`, `f = 256`), a Rademacher matrix `D·f/8`, the pooled signer
//! `4·m` (40 KB at `m = 10,000`), the hashing trick nothing. A signature takes `8·⌈f/64⌉`
//! bytes; indexes report theirs through [`HammingIndex::bytes`]. Index files are memory-mapped
//! on load ([`storage::Buf`]), so opening a large index costs no copy and its pages are shared
//! between processes.
#![deny(missing_docs)]

pub mod cpu;
pub mod error;
pub mod estimate;
pub mod hamming;
pub mod index;
pub mod io;
pub mod join;
pub mod rng;
pub mod signature;
// The lints that `rust-version = "1.89"` turns on are fixed everywhere but here, where a signer
// is being added in parallel: remove this once `src/signers` has its `if let` chains.
#[allow(clippy::collapsible_if)]
pub mod signers;
pub mod storage;
pub mod text;
pub(crate) mod util;
pub mod verify;

pub use error::{Error, Result};
pub use index::{HammingIndex, Hit, Id, LinearScan, MultiIndex};
pub use signature::{Signature, SignatureMatrix};
pub use signers::{
    Accumulator, HashingTrick, HyperplaneSigner, PooledSigner, Signer, SignerExt, SignerInfo,
    SignerSpec,
};

/// The README's code examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
