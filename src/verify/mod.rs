//! Exact answers from signature candidates: the signatures generate candidate pairs (or
//! neighbours), and the exact cosine of the input vectors decides.
//!
//! | task | function | candidates from |
//! |---|---|---|
//! | all pairs with cosine ≥ τ | [`VerifiedJoin`] | the exact Hamming join at a planned radius, or banding |
//! | the same, vectors of the candidate rows only | [`VerifiedJoin::candidate_pairs`], [`CandidatePairs::verify`] (in blocks: [`CandidatePairs::verify_blocks`]) | as above, collected (and spilled) first |
//! | k nearest by cosine | [`rerank`], [`rerank_graph`] | the `m` nearest by Hamming distance |
//! | k best of given candidates | [`RerankIds`] (and [`check_base`]) | the hits of any search of an index, or ids |
//! | the cosine of given pairs | [`paired_cosines`], [`paired_text_cosines`] | pairs found elsewhere (a distributed join) |
//!
//! The input vectors implement [`Vectors`]: dense rows ([`DenseVectors`], normalised once),
//! a borrowed CSR matrix of any index types ([`CsrVectors`]), owned sparse rows of
//! `(u64 key, f32 weight)` as the text front-end produces them ([`SparseVectors`]), or rows
//! read in place and checked on first use ([`DenseRows`], [`CsrRows`]: NumPy and SciPy
//! arrays). Rows of norm 0 are never paired: a verified join reports them apart.
//!
//! Pairs stream to a sink: feed a [`UnionFind`](crate::join::UnionFind) for connected
//! components without holding the pair list, or collect them for non-chaining
//! [`leader_clusters`](crate::join::leader_clusters).
//!
//! ```
//! use simlsh::join::{LeaderOrder, UnionFind, leader_clusters};
//! use simlsh::verify::{SparseVectors, VerifiedJoin, Vectors};
//! use simlsh::{HashingTrick, Signer};
//!
//! // Three documents as weighted features: 0 ≈ 1, 1 ≈ 2, 0 ≉ 2; document 3 is empty.
//! let docs: Vec<Vec<(u64, f32)>> = vec![
//!     vec![(1, 1.0), (2, 1.0), (3, 1.0)],
//!     vec![(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0)],
//!     vec![(2, 1.0), (3, 1.0), (4, 1.0)],
//!     vec![],
//! ];
//! let signer = HashingTrick::builder().bits(256).seed(7).build()?;
//! let sigs = simlsh::SignatureMatrix::from_signatures(
//!     256,
//!     &docs.iter().map(|d| {
//!         let (ids, w): (Vec<u64>, Vec<f32>) = d.iter().copied().unzip();
//!         signer.sign_sparse(&ids, &w)
//!     }).collect::<Result<Vec<_>, _>>()?,
//! )?;
//! let vectors = SparseVectors::from_rows(docs)?;
//! let join = VerifiedJoin::planned(0.8, 0.99, 256, vectors.len())?;
//! let mut uf = UnionFind::new(vectors.len())?;
//! let mut edges = Vec::new();
//! let report = join.run(&sigs, &vectors, |p| {
//!     uf.union(p.i, p.j);
//!     edges.push((p.i, p.j));
//! })?;
//! assert_eq!(report.zero_rows, vec![3]);
//! assert_eq!(uf.labels()?, vec![0, 0, 0, 3]); // components chain 0 ≈ 1 ≈ 2
//! assert_eq!(leader_clusters(4, edges, LeaderOrder::Id)?, vec![0, 0, 2, 3]);
//! # Ok::<(), simlsh::Error>(())
//! ```

mod hits;
mod in_place;
mod join;
mod paired;
mod prefix;
mod rerank;
mod stream;
mod vectors;

pub use in_place::{CsrRows, DenseRows};

pub use hits::{BaseMismatch, check_base};
pub use join::{VerifiedJoin, VerifiedJoinBuilder, VerifiedPair, VerifyReport};
pub use paired::{paired_cosines, paired_text_cosines};
pub use prefix::{CosinePair, PrefixCost, PrefixJoin, PrefixJoinBuilder, PrefixReport};
pub use rerank::{Candidates, RerankIds, rerank, rerank_graph};
pub use stream::{
    BlockedReport, CANDIDATE_BYTES, CandidatePairs, JOIN_ROW_BYTES, MemoryBudget, sparse_row_bytes,
};
pub use vectors::{CsrVectors, DenseVectors, SparseVectors, Vectors, dot, dot_sparse};
