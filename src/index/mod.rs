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
//!   point; [`insert_batch`](HammingIndex::insert_batch) and
//!   [`remove_batch`](HammingIndex::remove_batch) change many ids with one merge.
//! - Batches of queries also come as flat arrays in FAISS's shapes
//!   ([`radius_flat`](HammingIndex::radius_flat), [`knn_flat`](HammingIndex::knn_flat)).
//! - [`IndexSpec`] is every kind with its parameters, in a compact text form shared by the
//!   command line and the bindings; [`HammingIndex::spec`] gives it back from an index.
//! - [`SignerRecord`] is the signer that made the stored codes, when known: kept with the
//!   index and in its file, so that queries are signed like the index
//!   ([`HammingIndex::signer`], [`HammingIndex::signer_spec`]).

mod featureless;
pub mod graph;
mod ids;
pub mod linear;
pub mod meta;
pub mod mih;
pub mod permutation;
pub mod permuted_tables;
mod recall;
pub mod results;
mod rows;
pub mod signer;
pub mod spec;

pub use crate::util::spec::{KindInfo, ParamInfo};
pub use featureless::Featureless;
pub use graph::{GraphBuilder, GraphIndex};
pub use ids::{NextIds, consecutive_ids, parse_ids, past_largest_id};
pub use linear::LinearScan;
pub use meta::IndexMeta;
pub use mih::{MultiIndex, MultiIndexBuilder, auto_substrings};
pub use permutation::{
    DEFAULT_BEAM, DEFAULT_PERMUTATIONS, DEFAULT_SEED, PermutationBuilder, PermutationIndex,
};
pub use permuted_tables::{DEFAULT_RADIUS, PermutedTables, PermutedTablesBuilder, Plan};
pub use recall::{Recall, recall, recall_at_k};
pub use results::{KnnResults, NO_DISTANCE, NO_ID, RangeResults};
pub use signer::SignerRecord;
pub use spec::{GraphSpec, IndexSpec, MankuDesign, MankuSpec, MihSpec, PermutationSpec, kinds};

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
    /// Short name of the index type (`linear`, `manku`, `mih`, `permutation`, `graph`): the
    /// kind of its [`spec`](Self::spec).
    fn kind(&self) -> &'static str {
        self.spec().kind()
    }

    /// The kind and parameters of this index ([`IndexSpec`]): building the same signatures
    /// with it gives the same index (for Manku, the planned design written out).
    fn spec(&self) -> IndexSpec;

    /// Signature width `f`.
    fn bits(&self) -> usize;

    /// The signer that made the stored codes, when recorded ([`SignerRecord`]): saved in the
    /// index file and loaded back, kept through inserts and removals. Indexes of files
    /// written before it was recorded, or of codes whose signer is unknown, have none.
    fn signer(&self) -> Option<&SignerRecord> {
        self.meta().signer()
    }

    /// Records the signer that made the stored codes (`None` forgets it).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when the record's width is not the index's.
    fn set_signer(&mut self, signer: Option<SignerRecord>) -> Result<()> {
        let bits = self.bits();
        self.meta_mut().set_signer(bits, signer)
    }

    /// What the index keeps besides its search structure ([`IndexMeta`]: the signer record,
    /// the source it was loaded from).
    fn meta(&self) -> &IndexMeta;

    /// [`meta`](Self::meta), mutable.
    fn meta_mut(&mut self) -> &mut IndexMeta;

    /// The index as [`Any`](std::any::Any), so that code that knows the concrete types (the
    /// [persistence module](crate::persist)) can reach them.
    fn as_any(&self) -> &dyn std::any::Any;

    /// The spec of the recorded signer, which [`SignerSpec::build`] turns into the signer of
    /// the stored codes: `None` when none is recorded, an error when the record does not
    /// rebuild (a `custom` matrix, a hash of another release).
    ///
    /// [`SignerSpec::build`]: crate::signers::SignerSpec::build
    fn signer_spec(&self) -> Option<Result<crate::signers::SignerSpec>> {
        self.signer().map(SignerRecord::spec)
    }

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

    /// Verifies the file (or bytes) a loaded index was opened from, once: its checksum and
    /// every invariant of what it holds (as [`crate::persist::verify_index`],
    /// `O(file size)`). Loading opens a file in `O(1)` without reading its data, so a corrupt
    /// file answers queries wrongly until verified; [`save_index`](crate::persist::save_index)
    /// and every other writer of an index call this first, so that a corrupt file is never
    /// rewritten as sound. `Ok` at once for an index built in memory or already verified.
    ///
    /// # Errors
    /// [`Error::Checksum`] or
    /// [`Error::InvalidField`] naming the file.
    fn verify_source(&self) -> Result<()> {
        self.meta().verify_source()
    }

    /// False for an index loaded from a file whose checksum and contents have not been
    /// verified yet ([`verify_source`](Self::verify_source)); true otherwise.
    fn is_verified(&self) -> bool {
        self.meta().is_verified()
    }

    /// Checks every invariant of the index's arrays (sorted ids, table directories, each
    /// table a permutation of the rows, ...): `O(N)`. An index built or changed in this
    /// process always passes. A loaded index is only checked for the shape of its arrays
    /// when opened (`O(1)` in the data); its searches never panic or read out of bounds
    /// whatever the contents, but a corrupt file can give wrong answers until this check
    /// (or [`crate::persist::verify_index`], which also verifies the checksum) rejects it. It
    /// runs once before the first change of a loaded index.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the array whose contents are inconsistent.
    fn validate(&self) -> Result<()>;

    /// Queries a front end answers between two checks for an interruption (Ctrl-C): about
    /// 2^28 code comparisons, a fraction of a second, for the kinds that compare every code
    /// (a linear scan, permutation search's candidates, a graph's scan), 256 to 16,384
    /// queries; 16,384 for the probing indexes, which answer a query in microseconds.
    fn queries_per_chunk(&self) -> usize {
        const MOST: usize = 16_384;
        match self.kind() {
            "linear" | "permutation" | "graph" => {
                ((1usize << 28) / self.len().max(1)).clamp(256, MOST)
            }
            _ => MOST,
        }
    }

    /// True when [`knn_into`](Self::knn_into) is exact (false for permutation search).
    fn exact_knn(&self) -> bool {
        true
    }

    /// The index as a [`GraphIndex`], for its own knobs (the search beam, the check);
    /// `None` for other kinds.
    fn as_graph(&self) -> Option<&GraphIndex> {
        None
    }

    /// [`as_graph`](Self::as_graph), mutable.
    fn as_graph_mut(&mut self) -> Option<&mut GraphIndex> {
        None
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

    /// [`radius_batch`](Self::radius_batch) as flat arrays (`lims`, `ids`, `distances`, as
    /// FAISS `range_search` returns them).
    fn radius_flat(&self, queries: &[u64], r: u32) -> Result<RangeResults> {
        Ok(RangeResults::from_hits(&self.radius_batch(queries, r)?))
    }

    /// [`knn_batch`](Self::knn_batch) as two `N × k` arrays, padded with `-1` ids and
    /// `u32::MAX` distances where fewer than `k` codes are stored (as FAISS `search`).
    ///
    /// # Errors
    /// As [`knn_batch`](Self::knn_batch); [`Error::OutOfMemory`] when the `N × k` arrays
    /// cannot be allocated.
    fn knn_flat(&self, queries: &[u64], k: usize) -> Result<KnnResults> {
        KnnResults::from_hits(&self.knn_batch(queries, k)?, k)
    }

    /// Stores `codes` (row-major, one code per id) under `ids`: all of them, or none when
    /// an id is already stored or repeated, or a code is malformed. Indexes merge a batch
    /// into their tables at most once, where a loop of [`insert`](Self::insert) may merge
    /// many times.
    ///
    /// # Errors
    /// As [`insert`](Self::insert); [`Error::LengthMismatch`] when `codes` does not hold one
    /// code per id.
    fn insert_batch(&mut self, ids: &[Id], codes: &[u64]) -> Result<()> {
        check_batch(self.bits(), ids, codes)?;
        for (&id, code) in ids.iter().zip(codes.chunks_exact(words_for(self.bits()))) {
            self.insert(id, code)?;
        }
        Ok(())
    }

    /// Removes every id of `ids` that is stored (ids not stored, or repeated, are skipped);
    /// returns how many were removed. One pass over the index, where a loop of
    /// [`remove`](Self::remove) may rewrite it per id.
    fn remove_batch(&mut self, ids: &[Id]) -> Result<usize> {
        let mut n = 0;
        for &id in ids {
            n += usize::from(self.remove(id)?);
        }
        Ok(n)
    }
}

/// Largest signature width an index accepts: distances must fit in a `u32`
/// ([`crate::hamming::MAX_WORDS`] words).
pub const MAX_BITS: usize = crate::hamming::MAX_WORDS * 64;

/// Checks a signature width: `1 ..= MAX_BITS`.
pub(crate) fn check_bits(bits: usize) -> Result<()> {
    if bits == 0 || bits > MAX_BITS {
        return Err(Error::param(
            "bits",
            format!("{bits}: a signature width must lie in 1..={MAX_BITS}"),
        ));
    }
    Ok(())
}

/// Checks every row of `codes` (whole `bits`-bit codes, zero padding bits); returns the
/// number of rows.
pub(crate) fn check_codes(bits: usize, codes: &[u64]) -> Result<usize> {
    let w = check_queries(bits, codes)?;
    let mask = crate::signature::last_word_mask(bits);
    if let Some(row) = codes.chunks_exact(w).position(|c| c[w - 1] & !mask != 0) {
        return Err(Error::PaddingBits { row, bits });
    }
    Ok(codes.len() / w)
}

/// Checks a batch of inserts: one well-formed code per id, no id repeated.
pub(crate) fn check_batch(bits: usize, ids: &[Id], codes: &[u64]) -> Result<()> {
    let rows = check_codes(bits, codes)?;
    if rows != ids.len() {
        return Err(Error::LengthMismatch {
            what: "codes vs ids of a batch",
            left: rows,
            right: ids.len(),
        });
    }
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    if let Some(p) = sorted.windows(2).find(|p| p[0] == p[1]) {
        return Err(Error::param(
            "id",
            format!("id {} is repeated in the batch", p[0]),
        ));
    }
    Ok(())
}

/// The error of inserting an id that is stored.
pub(crate) fn duplicate(id: Id) -> Error {
    Error::param("id", format!("id {id} is already stored"))
}

/// Checks every query of a batch (whole codes, zero padding bits); returns the words per
/// code.
pub(crate) fn check_query_rows(bits: usize, queries: &[u64]) -> Result<usize> {
    check_codes(bits, queries)?;
    Ok(words_for(bits))
}

/// Checks that `ids` are strictly increasing; `field` names the array.
pub(crate) fn check_increasing(field: &'static str, ids: &[u32]) -> Result<()> {
    if let Some(i) = ids.windows(2).position(|p| p[0] >= p[1]) {
        return Err(Error::param(
            field,
            format!("not strictly increasing at position {}", i + 1),
        ));
    }
    Ok(())
}

/// Checks that `queries` holds whole `bits`-bit codes; returns the words per code.
pub(crate) fn check_queries(bits: usize, queries: &[u64]) -> Result<usize> {
    let w = words_for(bits);
    if !queries.len().is_multiple_of(w) {
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

/// A set of ids, compressed (a Roaring bitmap: per block of 2^16 ids, a sorted array of
/// up to 4,096 ids or a 8 KiB bitset): memory grows with the number of ids, not with the
/// largest one (a few bytes per id for scattered ids, 1 bit per id for dense runs). Indexes
/// use it for the ids they store or have removed.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdSet {
    set: roaring::RoaringBitmap,
}

impl IdSet {
    /// The set of `ids`, which must be strictly increasing (a fast bulk build).
    pub(crate) fn from_sorted(ids: &[Id]) -> Self {
        IdSet {
            set: roaring::RoaringBitmap::from_sorted_iter(ids.iter().copied())
                .expect("strictly increasing ids"),
        }
    }

    /// True if `id` is in the set.
    #[inline]
    pub fn contains(&self, id: Id) -> bool {
        self.set.contains(id)
    }

    /// Adds `id`; false if it was present.
    pub fn insert(&mut self, id: Id) -> bool {
        self.set.insert(id)
    }

    /// Removes `id`; false if it was absent.
    #[cfg(test)]
    pub fn remove(&mut self, id: Id) -> bool {
        self.set.remove(id)
    }

    /// Number of ids in the set.
    pub fn len(&self) -> usize {
        self.set.len() as usize
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The ids, increasing.
    pub fn iter(&self) -> impl Iterator<Item = Id> + '_ {
        self.set.iter()
    }

    /// Bytes of memory held (the containers' payload plus a small header per block).
    pub fn bytes(&self) -> usize {
        self.set.serialized_size() + std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_take_chunks_of_about_2_to_the_28_comparisons() {
        let codes: Vec<u64> = (0..70_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let sigs = crate::SignatureMatrix::from_parts(64, codes).unwrap();
        let scan = LinearScan::build(&sigs).unwrap();
        assert_eq!(scan.queries_per_chunk(), (1 << 28) / 70_000);
        assert_eq!(
            LinearScan::build(&sigs.slice_rows(0..10))
                .unwrap()
                .queries_per_chunk(),
            16_384
        );
        let mih = IndexSpec::Mih(Default::default()).build(&sigs).unwrap();
        assert_eq!(mih.queries_per_chunk(), 16_384);
    }

    #[test]
    fn id_set_tracks_membership_and_count() {
        let mut s = IdSet::default();
        assert!(s.is_empty() && !s.contains(5));
        assert!(s.insert(5) && s.insert(1000) && !s.insert(5));
        assert_eq!(s.len(), 2);
        assert!(s.contains(1000) && !s.contains(999));
        assert!(s.remove(5) && !s.remove(5) && !s.remove(70_000));
        assert_eq!(s.len(), 1);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![1000]);
    }

    /// Memory follows the number of ids, not the largest id (a bitset sized by the
    /// largest id held 512 MB for one id near 2^32).
    #[test]
    fn id_set_memory_grows_with_the_count_not_the_largest_id() {
        let mut s = IdSet::default();
        for i in 0..1000u32 {
            assert!(s.insert(u32::MAX - 7 * i));
        }
        assert!(
            s.bytes() < 4 * 1024,
            "{} bytes for 1,000 ids near 2^32",
            s.bytes()
        );
        // A dense run: about one bit per id.
        let mut d = IdSet::default();
        for i in 0..1_000_000u32 {
            d.insert(4_000_000_000 - i);
        }
        assert!(d.bytes() < 1_000_000 / 8 + 64 * 1024, "{} bytes", d.bytes());
        assert_eq!(d.len(), 1_000_000);
    }
}
