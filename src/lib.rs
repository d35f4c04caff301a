//! # simlsh
//!
//! Random-hyperplane locality-sensitive hashing ("simhash"): `f`-bit signatures of dense and
//! sparse vectors whose Hamming distance `h` estimates the angle θ between the vectors,
//! `θ ≈ π·h/f` and `cos θ ≈ cos(π·h/f)` (Charikar 2002), with calibrated estimates and exact
//! Hamming search.
//!
//! # Overview
//!
//! | layer | module | main items |
//! |---|---|---|
//! | signatures | [`signature`] | [`Signature`], [`SignatureMatrix`] (packed `u64` words, views, `ndarray` conversions) |
//! | signers | [`signers`] | the [`Signer`] trait, [`HyperplaneSigner`], [`HashingTrick`], [`HashedGaussian`], [`PooledSigner`], [`signers::FwhtSigner`], streaming [`Accumulator`]; [`SignerSpec`] and [`signers::kinds`] name every kind in one text form (`super-bit:depth=16`); [`signers::sparse`] checks and sorts sparse rows, a crate-private `signers::kernels` holds the accumulation kernels |
//! | estimates and plans | [`estimate`] | [`estimate::estimate`] (angle and cosine with intervals), binomial tails; [`estimate::RadiusPlanner`] (Hamming radius for a cosine threshold), [`estimate::BitsPlanner`] (width for an error), [`estimate::BandingPlanner`] and [`estimate::JoinPlanner`] (banding, and banded or Hamming join, for a recall at a threshold) |
//! | CPU dispatch | [`cpu`] | [`cpu::features`] and `SIMLSH_FORCE_SCALAR`: the one choice of scalar or x86 kernels, and the prefetch and POPCNT helpers every index and join shares |
//! | popcount kernels | [`hamming`] | [`hamming::distance`], [`hamming::scan_radius`], [`hamming::scan_knn`]; [`hamming::scalar`] is the reference set |
//! | indexes | [`index`] | the [`HammingIndex`] trait, [`LinearScan`], [`index::PermutedTables`] ([`index::permuted_tables`]), [`MultiIndex`], [`index::PermutationIndex`]; [`index::IndexSpec`] ([`index::spec`]) names and builds any kind (`manku:k=3`); [`index::results`] holds flat batch results |
//! | joins | [`join`] | exact [`join::self_join`] by Hamming radius, [`join::banded_join`] candidates by band agreement ([`join::Banding`], partitionable with [`join::band_partition`]), [`join::clusters`], [`join::knn_graph`], [`join::UnionFind`], [`join::leader_clusters`] |
//! | exact answers | [`verify`] | [`verify::VerifiedJoin`] (signature candidates, exact cosine decides), [`verify::rerank`], the [`verify::Vectors`] trait |
//! | text | [`text`] | [`text::Tokenizer`] (words, n-grams, jieba, stop words, TF-IDF, top-K), [`text::Idf`], [`text::StopWords`] |
//! | inputs | [`io`] | readers of every input format ([`io::read_vectors`], [`io::documents()`]), signatures as `.npy` |
//! | persistence | [`persist`] | the versioned index format over files, writers and bytes ([`persist::save_index`], [`persist::load_index`], [`persist::write_index`], [`persist::read_index`], [`persist::save_signatures`]) |
//! | file system | [`fs`] | atomic writes ([`fs::write_atomic`], [`fs::OutputSet`]), advisory locks ([`fs::lock_exclusive`]) |
//! | online dedup | [`store`] | [`store::Store`]: a durable store of codes, vectors or documents under `u64` ids (write-ahead log, group commit, segments, compaction) with radius, cosine and k-NN queries and an atomic check-and-insert |
//! | memory maps | [`storage`] | [`storage::Buf`]: an array owned or borrowed from shared [`storage::Bytes`] (a mapped file, a buffer) |
//! | memory limits | [`memory`] | [`memory::available`]: what the process may still allocate (system, control group, `ulimit`); builders check against it |
//! | errors | [`error`] | [`Error`] (typed, naming the file, row or value), [`Result`] |
//! | randomness | [`rng`] | platform-independent seeded generators and hashes (Xoshiro256++, XXH3) |
//!
//! Result types name their fields one way: `distance` is always a Hamming distance (`cosine`
//! an exact cosine); `i < j` are the two ends of a pair (rows in [`join::Pair`] and
//! [`verify::VerifiedPair`], caller ids in [`join::IdPair`]); `row` is one position in the
//! searched rows ([`hamming::Neighbor`]), `query` a query's row ([`join::Match`]) and `id` a
//! stored id ([`index::Hit`], [`store::Match`]).
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
//! Find every pair of vectors with cosine ≥ τ: the signatures give candidate pairs (a Hamming
//! radius or a banding, planned for a recall at τ), and the exact cosine of each candidate
//! decides ([`verify`]):
//!
//! ```
//! use simlsh::ndarray::Array2;
//! use simlsh::rng::Rng;
//! use simlsh::verify::{DenseVectors, Vectors, VerifiedJoin};
//! use simlsh::{HyperplaneSigner, Signer};
//!
//! // 300 random vectors of dimension 64; rows 200.. are noisy copies of rows 0..100.
//! let mut rng = Rng::new(1);
//! let mut x = Array2::from_shape_fn((300, 64), |_| rng.gaussian() as f32);
//! for i in 200..300 {
//!     for k in 0..64 {
//!         x[[i, k]] = x[[i - 200, k]] + 0.3 * rng.gaussian() as f32;
//!     }
//! }
//! let (tau, bits) = (0.9, 256);
//! let signer = HyperplaneSigner::builder().dim(64).bits(bits).seed(7).build()?;
//! let sigs = signer.sign_dense(&x)?;
//! let vectors = DenseVectors::new(x.view())?;
//! let join = VerifiedJoin::planned(tau, 0.99, bits, vectors.len())?;
//! let (pairs, report) = join.pairs(&sigs, &vectors)?;
//! // Exactly the pairs brute force finds, from a small share of the 44,850 pairs.
//! let brute: Vec<(u32, u32)> = (0..300u32)
//!     .flat_map(|i| (i + 1..300).map(move |j| (i, j)))
//!     .filter(|&(i, j)| vectors.cosine(i as usize, j as usize) >= tau)
//!     .collect();
//! assert_eq!(brute.len(), 100);
//! assert_eq!(pairs.iter().map(|p| (p.i, p.j)).collect::<Vec<_>>(), brute);
//! assert!(pairs.iter().all(|p| p.cosine >= tau));
//! assert!(report.candidates < 1_000, "{} candidates", report.candidates);
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
//!   [`HashedGaussian`] holds no matrix, takes `u64` ids or strings, and keeps the collision
//!   law when a few shared features dominate (e-mail boilerplate), at ≈ 1.4× the cost of
//!   [`HashingTrick`], the fastest per nonzero, whose `±1` columns let such features decide
//!   the bits (18× too many near-duplicate pairs on the dominance corpus, see
//!   [`signers::hashed_gaussian`]).
//! - **Wide signatures** (a thousand bits and more, e.g. as the join planner asks for at
//!   10^7 rows): [`signers::FwhtSigner`] (`fwht`) hashes the features into `d` buckets and
//!   rotates them with fast Walsh–Hadamard transforms, `nnz + f·log d` per row instead of
//!   `nnz·f`: 4.0× faster than [`HashedGaussian`] at 4,096 bits on 118-feature TF-IDF rows.
//! - **Explicit sparse matrices**: [`Distribution::Rademacher`](signers::Distribution::Rademacher)
//!   stores one bit per entry; [`Distribution::VerySparse`](signers::Distribution::VerySparse)
//!   stores `≈ f·√D` entries but, at its default density, sees too few of a sparse row's
//!   features (most projections are 0): use it for dense inputs, or give the expected row
//!   length ([`HyperplaneBuilder::expected_nnz`](signers::HyperplaneBuilder::expected_nnz)).
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
//! bytes (1 GiB for `D = 2^20`, `f = 256`), a Rademacher matrix `8·D·⌈f/64⌉` (`D·f/8` when
//! 64 divides `f`), a very sparse one `4·(D + 1) + 4·p·D·f` at density `p` (a `u32` offset per
//! feature and a `u32` per nonzero entry, see
//! [`Distribution::VerySparse`](signers::Distribution::VerySparse)): `≈ 4·D + 4·f·√D` at the
//! default `p = 1/√D`, 5 MiB for `D = 2^20`, `f = 256`, where the offsets dominate unless
//! `f > √D`. The pooled signer holds `4·m` (40 KB at `m = 10,000`), the hashed Gaussian 96
//! bytes of tables, the hashing trick nothing. A signature takes `8·⌈f/64⌉` bytes; indexes report theirs through [`HammingIndex::bytes`]. Index files are memory-mapped
//! on load ([`storage::Buf`]), so opening a large index costs no copy and its pages are shared
//! between processes.
//!
//! # Cargo features
//!
//! Everything is on by default (`default = ["cjk", "npz", "documents"]`); each feature only
//! adds readers or text modes, never changes a result:
//!
//! | feature | adds | brings in |
//! |---|---|---|
//! | `cjk` | jieba segmentation of Chinese ([`text::Mode::Cjk`], [`text::Mode::Auto`]) and jieba's keyword weights | `jieba-rs` |
//! | `npz` | `.npz` archives: SciPy sparse matrices and `np.savez` arrays ([`io::read_npz`]) | `zip` (deflate only) |
//! | `documents` | JSON Lines, CSV and TSV documents ([`io::documents()`]; plain text needs nothing) | `serde_json`, `csv` |
//!
//! A user of signatures, estimates, indexes and joins alone can take
//! `simlsh = { version = "0.1", default-features = false }`: about 30 crates in all (build
//! tools included) instead of about 70. Without a feature, its formats and modes are an
//! [`Error::Unsupported`] naming the feature.
//!
//! # `ndarray` and `sprs`
//!
//! Dense inputs are [`ndarray`] arrays and sparse ones [`sprs`] CSR matrices, of the versions
//! re-exported here as [`simlsh::ndarray`](ndarray) and [`simlsh::sprs`](sprs). Code that
//! depends on another version of either can build its matrices through these re-exports
//! (e.g. `simlsh::ndarray::Array2::from_shape_vec` from a `Vec<f32>`, or
//! `simlsh::sprs::CsMat::new` from the raw arrays), or use the slice-based entry points
//! ([`Signer::sign_sparse`], [`Signer::sign_dense_row`], the
//! [`Accumulator`]) that take no matrix type at all.
#![deny(missing_docs)]

pub mod cpu;
pub mod error;
pub mod estimate;
pub mod fs;
pub mod hamming;
pub mod index;
pub mod io;
pub mod join;
pub mod memory;
pub mod persist;
pub mod rng;
pub mod signature;
pub mod signers;
pub mod storage;
pub mod store;
pub mod text;
pub(crate) mod util;
pub mod verify;

/// The `ndarray` version whose arrays the signers, readers and exact vectors take: build
/// dense inputs with it when your own code depends on another `ndarray`.
pub use ndarray;
/// The `sprs` version whose CSR matrices the signers and readers take: build sparse inputs
/// with it when your own code depends on another `sprs`.
pub use sprs;

pub use error::{Error, Result};
pub use index::{HammingIndex, Hit, Id, LinearScan, MultiIndex};
pub use signature::{Signature, SignatureMatrix};
pub use signers::{
    Accumulator, HashedGaussian, HashingTrick, HyperplaneSigner, PooledSigner, Signer, SignerExt,
    SignerInfo, SignerSpec,
};

/// The README's code examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
