//! Hamming search: indexes answering radius and k-nearest-neighbour queries over stored
//! signatures.
//!
//! Every index implements [`HammingIndex`] with the same exact semantics, checked by one
//! conformance suite against the [`LinearScan`] oracle:
//!
//! - **Radius search** returns *every* stored signature at Hamming distance `≤ r` (inclusive:
//!   FAISS and gaoya return `< r`; here `r = 3` means distances 0, 1, 2 and 3). Identical
//!   signatures stored under different ids are all returned.
//! - **k-NN** returns the `k` nearest stored signatures (all of them if fewer are stored);
//!   ties at the `k`-th distance are broken by the smaller id.
//! - Results are [`Hit`]s sorted by `(distance, id)`.
//! - Ids are `u32` ([`Id`]), chosen by the caller at insertion (a batch build numbers rows
//!   `0..N`); an id is stored at most once.
//! - Indexes are **dynamic**: [`insert`](HammingIndex::insert) and
//!   [`remove`](HammingIndex::remove) may follow the build, and every search is exact at every
//!   point.

mod linear;
pub mod manku;
pub(crate) mod mih;
mod permutation;
pub mod spec;

pub use linear::LinearScan;
pub use manku::{PermutedTables, PermutedTablesBuilder, Plan};
pub use mih::{MultiIndex, MultiIndexBuilder, auto_substrings};
pub use permutation::{
    DEFAULT_BEAM, DEFAULT_PERMUTATIONS, DEFAULT_SEED, PermutationBuilder, PermutationIndex,
    recall_at_k,
};
pub use spec::{
    IndexSpec, KindInfo, MankuDesign, MankuSpec, MihSpec, ParamInfo, PermutationSpec, kinds,
};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::signature::words_for;

/// Identifier of a stored signature.
pub type Id = u32;

/// One search result: a stored signature's id and its Hamming distance to the query. Ordered
/// by `(distance, id)`, the order of every result list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hit {
    /// Hamming distance to the query.
    pub distance: u32,
    /// Id of the stored signature.
    pub id: Id,
}

/// An index of `f`-bit signatures answering exact radius and k-NN queries (approximate k-NN
/// for indexes that say so in [`exact_knn`](Self::exact_knn)).
pub trait HammingIndex: Send + Sync {
    /// Short name of the index type (`linear`, `manku`, `mih`, `permutation`).
    fn kind(&self) -> &'static str;

    /// The kind and parameters of this index ([`IndexSpec`]): building the same signatures
    /// with it gives the same index (for Manku, the planned design written out).
    fn spec(&self) -> IndexSpec;

    /// Signature width `f`.
    fn bits(&self) -> usize;

    /// Number of stored signatures.
    fn len(&self) -> usize;

    /// True when nothing is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory held (heap plus mapped data).
    fn bytes(&self) -> usize;

    /// Stores `code` under `id`. Fails if `id` is already stored or the code's width differs.
    fn insert(&mut self, id: Id, code: &[u64]) -> Result<()>;

    /// Removes `id`; returns whether it was stored.
    fn remove(&mut self, id: Id) -> Result<bool>;

    /// Replaces `out` with every stored signature within distance `r` of `query` (inclusive),
    /// sorted by `(distance, id)`.
    fn radius_into(&self, query: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()>;

    /// Replaces `out` with the `k` nearest stored signatures, sorted by `(distance, id)`, ties
    /// at the `k`-th distance broken by the smaller id.
    fn knn_into(&self, query: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()>;

    /// Saves the index to `path` in the [file format](crate::io::format), atomically; load it
    /// back with [`crate::io::load_index`] (or the type's own `load`), memory-mapped.
    fn save(&self, path: &std::path::Path) -> Result<()>;

    /// True when [`knn_into`](Self::knn_into) is exact (false for permutation search).
    fn exact_knn(&self) -> bool {
        true
    }

    /// [`radius_into`](Self::radius_into), allocating the result.
    fn radius(&self, query: &[u64], r: u32) -> Result<Vec<Hit>> {
        let mut out = Vec::new();
        self.radius_into(query, r, &mut out)?;
        Ok(out)
    }

    /// [`knn_into`](Self::knn_into), allocating the result.
    fn knn(&self, query: &[u64], k: usize) -> Result<Vec<Hit>> {
        let mut out = Vec::new();
        self.knn_into(query, k, &mut out)?;
        Ok(out)
    }

    /// Radius search for every query of `queries` (row-major, `words_for(f)` words each), in
    /// parallel.
    fn radius_batch(&self, queries: &[u64], r: u32) -> Result<Vec<Vec<Hit>>> {
        let w = check_queries(self.bits(), queries)?;
        queries
            .par_chunks(w)
            .map_init(Vec::new, |buf, q| {
                self.radius_into(q, r, buf)?;
                Ok(buf.clone())
            })
            .collect()
    }

    /// k-NN search for every query of `queries`, in parallel.
    fn knn_batch(&self, queries: &[u64], k: usize) -> Result<Vec<Vec<Hit>>> {
        let w = check_queries(self.bits(), queries)?;
        queries.par_chunks(w).map(|q| self.knn(q, k)).collect()
    }
}

/// Checks that `queries` holds whole `bits`-bit codes; returns the words per code.
pub(crate) fn check_queries(bits: usize, queries: &[u64]) -> Result<usize> {
    let w = words_for(bits);
    if queries.len() % w != 0 {
        return Err(Error::LengthMismatch {
            what: "queries (words) are not a whole number of codes",
            left: queries.len(),
            right: w,
        });
    }
    Ok(w)
}

/// Checks one code's length and padding for a `bits`-bit index.
pub(crate) fn check_code(bits: usize, code: &[u64]) -> Result<()> {
    let w = words_for(bits);
    if code.len() != w {
        return Err(Error::LengthMismatch {
            what: "code words vs the index's signature width",
            left: code.len(),
            right: w,
        });
    }
    if code[w - 1] & !crate::signature::last_word_mask(bits) != 0 {
        return Err(Error::PaddingBits { row: 0, bits });
    }
    Ok(())
}

/// A set of ids: a bitset indexed by id, with a count (`max id / 8` bytes). Indexes use it
/// to know which ids are stored and which are removed.
#[derive(Clone, Debug, Default)]
pub struct IdSet {
    words: Vec<u64>,
    count: usize,
}

impl IdSet {
    /// True if `id` is in the set.
    pub fn contains(&self, id: Id) -> bool {
        let i = id as usize;
        self.words
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Adds `id`; false if it was present.
    pub fn insert(&mut self, id: Id) -> bool {
        let i = id as usize;
        if i / 64 >= self.words.len() {
            self.words.resize(i / 64 + 1, 0);
        }
        let m = 1u64 << (i % 64);
        if self.words[i / 64] & m != 0 {
            return false;
        }
        self.words[i / 64] |= m;
        self.count += 1;
        true
    }

    /// Removes `id`; false if it was absent.
    pub fn remove(&mut self, id: Id) -> bool {
        if !self.contains(id) {
            return false;
        }
        let i = id as usize;
        self.words[i / 64] &= !(1u64 << (i % 64));
        self.count -= 1;
        true
    }

    /// Number of ids in the set.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_set_tracks_membership_and_count() {
        let mut s = IdSet::default();
        assert!(s.is_empty() && !s.contains(5));
        assert!(s.insert(5) && s.insert(1000) && !s.insert(5));
        assert_eq!(s.len(), 2);
        assert!(s.contains(1000) && !s.contains(999));
        assert!(s.remove(5) && !s.remove(5) && !s.remove(70_000));
        assert_eq!(s.len(), 1);
    }
}
