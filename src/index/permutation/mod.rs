//! Permutation search: approximate k-nearest neighbours for wide signatures by random bit
//! permutations and sorted lists (see [`PermutationIndex`]).

use std::cmp::Ordering;

use rayon::prelude::*;

use super::{HammingIndex, Hit, Id, check_code};
use crate::error::{Error, Result};
use crate::signature::{SignatureMatrix, words_for};
use crate::storage::Buf;
use crate::util::pool::Pool;

mod builder;
mod keys;
mod search;

pub use self::builder::PermutationBuilder;
use self::keys::{KeyTable, bucket_sort, cmp_entry, prefix_key};
use self::search::Scratch;

/// Default number of permutations `q`.
pub const DEFAULT_PERMUTATIONS: usize = 16;
/// Default beam `B` (codes compared above and below the query in each sorted list).
pub const DEFAULT_BEAM: usize = 32;
/// Default seed of the permutations.
pub const DEFAULT_SEED: u64 = 0;

/// Permuted bits held in a sort key.
pub(super) const KEY_BITS: usize = 64;
/// Queries per parallel task in batch radius searches: they share one pass over the codes.
const RADIUS_BATCH: usize = 64;
/// Queries per parallel task in batch k-NN searches: they share one scratch.
const KNN_BATCH: usize = 16;
/// Smallest delta-plus-tombstone count that triggers a merge.
const MIN_MERGE: usize = 64;

/// Permutation search (Charikar 2002, §5; Ravichandran, Pantel & Hovy 2005): approximate
/// k-nearest neighbours for wide signatures (hundreds to thousands of bits).
///
/// # Method
///
/// `q` random permutations of the `f` bit positions are drawn from the seed. For each
/// permutation `t` the stored codes are sorted by the lexicographic order of their permuted
/// bits (permuted position 0, i.e. source bit `perm_t[0]`, is the most significant). Codes at
/// a small Hamming distance agree on a long common prefix under a random permutation with a
/// good probability (`P(prefix of length ℓ agrees) = C(f−d, ℓ)/C(f, ℓ) ≤ (1 − d/f)^ℓ`), so
/// they sit close together in at least one of the `q` sorted lists.
///
/// A k-NN query binary-searches its own position in each sorted list and compares itself with
/// the `B` (the *beam*) stored codes just above and the `B` just below it, by exact Hamming
/// distance on the full codes; candidates seen in several lists are compared once (a
/// generation-stamped visited array, reused across queries). The `k` candidates nearest by
/// `(distance, id)` are returned. This is the fixed-window variant of Ravichandran et al.;
/// Charikar's walk in order of longest matching prefix is not implemented. Candidates are
/// compared nearest list rank first, all lists interleaved, into a running top-k, and codes
/// wider than a cache line are compared line by line and dropped as soon as they exceed the
/// current k-th distance (for 4096-bit codes about 2.6 of their 8 lines are read), which
/// changes nothing in the result.
///
/// The returned distances are always exact; only the *set* may miss true neighbours, so
/// [`exact_knn`](HammingIndex::exact_knn) is false. With `B ≥ N` every list is read whole and
/// the answer equals the exact k-NN. The window is widened to `⌈k/2⌉` per side when `k > 2B`,
/// and shifted at the ends of a list, so a query always gets `min(k, len)` results. Recall
/// grows with `q` and `B` (see [`recall_at_k`](crate::index::recall_at_k)): the permutations of a seed for `q` are the
/// first `q` of those for any larger `q`, and a wider beam reads a superset of the window, so
/// with the same seed a larger `q` or `B` never lowers recall.
///
/// **Radius search is exact** and does not use the sorted lists: permutation search is a k-NN
/// method, and a radius query is answered by a linear scan of the stored codes with the
/// dispatched popcount kernels (batches of queries share one pass).
///
/// # Memory
///
/// The full codes are stored once, row-major, in increasing id order (`8 · words` bytes per
/// code) with their ids (4 bytes). Each permutation keeps, per code, only a 64-bit key (the
/// first 64 permuted bits) and the code's slot in the sorted order (4 bytes): full permuted
/// codes are never materialised; the rare ties of two keys are broken by reading the permuted
/// bits of the full codes from position 64 on, then by id. Per code: `8 · words + 4 + 12 · q`
/// bytes (228 for 256-bit codes with `q = 16`), plus `4 · f · q` bytes for the permutations.
/// Each thread that has run a k-NN query also keeps a 4-byte stamp per code (query scratch,
/// not counted in [`bytes`](HammingIndex::bytes)).
///
/// # Updates
///
/// Inserted codes go to an unsorted *delta* that every k-NN query scans in full (so they are
/// always candidates); removals of sorted codes are tombstones that the list walk skips. When
/// delta plus tombstones exceed `max(64, 2·q·B, √N)` (about the number of codes a query
/// compares anyway) they are merged into the sorted arrays in one linear pass per permutation
/// ([`compact`](PermutationIndex::compact) forces it). A compacted index has exactly the arrays
/// a fresh build of the same `(id, code)` pairs has.
///
/// # Determinism
///
/// The permutations depend only on `(seed, f, q)` through [`crate::rng::Rng`] (Fisher–Yates
/// with `Rng::below`); the sorted orders are total (ties by id); every query is answered on
/// its own; so arrays and results are identical on every platform and for every thread
/// count.
///
/// # Construction
///
/// Build with [`PermutationIndex::builder`]; [`PermutationIndex::build`] and
/// [`PermutationIndex::new`] use the defaults (`q` = 16, `B` = 32, seed 0).
///
/// Internally each code has a *slot*: sorted slots `0..n` hold the codes merged into the
/// sorted lists, in increasing id order; slots from `n` on are the unsorted delta.
#[derive(Clone)]
pub struct PermutationIndex {
    bits: usize,
    q: usize,
    beam: usize,
    seed: u64,
    /// `q × bits`: `perms[t·bits + j]` is the source bit at permuted position `j`.
    perms: Buf<u32>,
    /// Codes by slot, row-major: `n` sorted slots (increasing id), then the delta.
    codes: Buf<u64>,
    /// Id of each slot; strictly increasing over the sorted slots.
    ids: Buf<u32>,
    /// `q × n`: the prefix key of the code at each position of each sorted list.
    keys: Buf<u64>,
    /// `q × n`: the slot at each position of each sorted list.
    order: Buf<u32>,
    /// Number of sorted slots.
    n: usize,
    /// Tombstones over the sorted slots (bitset; empty when there are none).
    dead: Vec<u64>,
    n_dead: usize,
    /// Query scratch, reused across queries (one per concurrent query).
    pool: Pool<Scratch>,
    /// Whether the contents are known to be valid (built here, or checked).
    validated: bool,
    /// The signer of the codes and the source of a loaded index.
    pub(crate) meta: crate::index::IndexMeta,
}

impl std::fmt::Debug for PermutationIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermutationIndex")
            .field("bits", &self.bits)
            .field("permutations", &self.q)
            .field("beam", &self.beam)
            .field("seed", &self.seed)
            .field("sorted", &self.n)
            .field("delta", &(self.ids.len() - self.n))
            .field("tombstones", &self.n_dead)
            .finish()
    }
}

impl PermutationIndex {
    /// A builder with the defaults.
    pub fn builder() -> PermutationBuilder {
        PermutationBuilder::default()
    }

    /// An empty index of `bits`-bit codes with the default parameters.
    pub fn new(bits: usize) -> Result<Self> {
        PermutationBuilder::default().empty(bits)
    }

    /// An index of the rows of `sigs` (ids `0..N`) with the default parameters.
    pub fn build<S: AsRef<[u64]>>(sigs: &SignatureMatrix<S>) -> Result<Self> {
        PermutationBuilder::default().build(sigs)
    }

    /// Sorts `codes` (slots in increasing id order) into the `q` lists.
    fn assemble(
        bits: usize,
        q: usize,
        beam: usize,
        seed: u64,
        perms: Vec<u32>,
        codes: Vec<u64>,
        ids: Vec<u32>,
    ) -> Self {
        let n = ids.len();
        let w = words_for(bits);
        let mut keys = vec![0u64; q * n];
        let mut order = vec![0u32; q * n];
        if n > 0 {
            keys.par_chunks_mut(n)
                .zip(order.par_chunks_mut(n))
                .enumerate()
                .for_each(|(t, (kt, ot))| {
                    let perm = &perms[t * bits..(t + 1) * bits];
                    let table = KeyTable::new(&perm[..bits.min(KEY_BITS)]);
                    let raw: Vec<u64> = codes.par_chunks_exact(w).map(|c| table.key(c)).collect();
                    let pairs = bucket_sort(&raw, |a, b| cmp_entry(perm, &codes, w, a, b));
                    for ((k, o), (key, slot)) in kt.iter_mut().zip(ot.iter_mut()).zip(pairs) {
                        *k = key;
                        *o = slot;
                    }
                });
        }
        PermutationIndex {
            bits,
            q,
            beam,
            seed,
            perms: perms.into(),
            codes: codes.into(),
            ids: ids.into(),
            keys: keys.into(),
            order: order.into(),
            n,
            dead: Vec::new(),
            n_dead: 0,
            pool: Pool::default(),
            validated: true,
            meta: crate::index::IndexMeta::default(),
        }
    }

    /// An index over arrays from an index file; they must describe a compacted index (no
    /// delta, no tombstones; see [`compact`](Self::compact)):
    ///
    /// - `perms`: `q × bits`, each row a permutation of `0..bits` (`q` ≥ 1 is read from its
    ///   length);
    /// - `codes`: `n × words_for(bits)`, row-major, zero padding bits, in increasing id order;
    /// - `ids`: `n`, strictly increasing;
    /// - `keys`, `order`: `q × n`; row `t` of `order` a permutation of `0..n` (slots), row `t`
    ///   of `keys` non-decreasing (the prefix keys of those slots' codes under permutation
    ///   `t`).
    ///
    /// Structure is validated in `O(q·n)`; keys are not recomputed: keys that disagree with
    /// the codes can lower recall but never give a wrong distance (distances are always
    /// computed on the codes).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        bits: usize,
        beam: usize,
        seed: u64,
        perms: Buf<u32>,
        codes: Buf<u64>,
        ids: Buf<u32>,
        keys: Buf<u64>,
        order: Buf<u32>,
    ) -> Result<Self> {
        let bad = |field: &'static str, what: &str| Error::param(field, what.to_string());
        super::check_bits(bits)?;
        if perms.is_empty() || !perms.len().is_multiple_of(bits) {
            return Err(bad("section perms", "permutations do not match the width"));
        }
        if beam == 0 {
            return Err(Error::param("param beam", "must be at least 1"));
        }
        let q = perms.len() / bits;
        // The permutations are small (q · f entries) and every query reads them: checked here.
        let mut seen = vec![false; bits];
        for p in perms.chunks_exact(bits) {
            seen.fill(false);
            for &j in p {
                match seen.get_mut(j as usize) {
                    Some(s) if !*s => *s = true,
                    _ => {
                        return Err(bad(
                            "section perms",
                            "a permutation is not a permutation of the bits",
                        ));
                    }
                }
            }
        }
        let w = words_for(bits);
        let n = ids.len();
        if n >= u32::MAX as usize || n.checked_mul(w) != Some(codes.len()) {
            return Err(bad("section codes", "one code per id expected"));
        }
        if q.checked_mul(n) != Some(keys.len()) {
            return Err(bad(
                "section keys",
                "one key per code and permutation expected",
            ));
        }
        if order.len() != keys.len() {
            return Err(bad(
                "section order",
                "one slot per code and permutation expected",
            ));
        }
        Ok(PermutationIndex {
            bits,
            q,
            beam,
            seed,
            perms,
            codes,
            ids,
            keys,
            order,
            n,
            dead: Vec::new(),
            n_dead: 0,
            pool: Pool::default(),
            validated: false,
            meta: crate::index::IndexMeta::default(),
        })
    }

    /// The checks of [`validate`](HammingIndex::validate): `O(q · n)`.
    fn check_contents(&self) -> Result<()> {
        let bad = |field: &'static str, what: &str| Error::param(field, what.to_string());
        let n = self.n;
        super::check_increasing("section ids", &self.ids[..n])?;
        super::check_codes(self.bits, &self.codes)
            .map_err(|_| bad("section codes", "a code has padding bits set"))?;
        if n > 0 {
            let mut seen = vec![false; n];
            for (kt, ot) in self.keys.chunks_exact(n).zip(self.order.chunks_exact(n)) {
                if kt.windows(2).any(|p| p[0] > p[1]) {
                    return Err(bad("section keys", "keys are not sorted"));
                }
                seen.fill(false);
                for &s in ot {
                    match seen.get_mut(s as usize) {
                        Some(x) if !*x => *x = true,
                        _ => {
                            return Err(bad(
                                "section order",
                                "a sorted list is not a permutation of the slots",
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks the contents once before the first change of a loaded index.
    fn ensure_valid(&mut self) -> Result<()> {
        if !self.validated {
            self.check_contents()?;
            self.validated = true;
        }
        Ok(())
    }

    /// Number of permutations `q`.
    pub fn permutations(&self) -> usize {
        self.q
    }

    /// The beam `B`.
    pub fn beam(&self) -> usize {
        self.beam
    }

    /// The seed the permutations were drawn from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Changes the beam `B` for later queries (no rebuild needed: the beam is a query-time
    /// parameter).
    pub fn set_beam(&mut self, beam: usize) -> Result<()> {
        if beam == 0 {
            return Err(Error::param("beam", "must be at least 1"));
        }
        self.beam = beam;
        Ok(())
    }

    /// Merges the delta into the sorted lists and drops tombstones now (otherwise done
    /// automatically when they grow; see [`PermutationIndex`]). Afterwards the
    /// arrays equal those of a fresh build of the stored `(id, code)` pairs.
    ///
    /// # Errors
    /// As [`validate`](HammingIndex::validate), for a loaded index whose contents are
    /// inconsistent.
    pub fn compact(&mut self) -> Result<()> {
        self.ensure_valid()?;
        if self.ids.len() > self.n || self.n_dead > 0 {
            self.merge();
        }
        Ok(())
    }

    /// True when there is no delta and no tombstone (the arrays are a full description).
    pub fn is_compact(&self) -> bool {
        self.ids.len() == self.n && self.n_dead == 0
    }

    /// The permutations, `q × bits` (`perms[t·bits + j]`: source bit of permuted position `j`).
    pub fn perms(&self) -> &[u32] {
        &self.perms
    }

    /// The codes by slot, row-major (sorted slots in increasing id order, then the delta).
    pub fn codes(&self) -> &[u64] {
        &self.codes
    }

    /// The id of each slot.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The prefix keys of the sorted lists, `q × n`.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The slots of the sorted lists, `q × n`.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    fn words(&self) -> usize {
        words_for(self.bits)
    }

    #[inline]
    fn code(&self, slot: usize) -> &[u64] {
        let w = self.words();
        &self.codes[slot * w..(slot + 1) * w]
    }

    #[inline]
    fn is_dead(&self, slot: usize) -> bool {
        self.n_dead > 0 && (self.dead[slot / 64] >> (slot % 64)) & 1 == 1
    }

    /// The slot of a stored `id`.
    fn find(&self, id: Id) -> Option<usize> {
        if let Ok(s) = self.ids[..self.n].binary_search(&id)
            && !self.is_dead(s)
        {
            return Some(s);
        }
        self.ids[self.n..]
            .iter()
            .position(|&x| x == id)
            .map(|p| self.n + p)
    }

    /// Delta plus tombstones beyond which the index is merged.
    fn merge_threshold(&self) -> usize {
        let candidates = self.q.saturating_mul(self.beam).saturating_mul(2);
        MIN_MERGE.max(candidates).max(self.n.isqrt())
    }

    fn maybe_merge(&mut self) {
        if self.ids.len() - self.n + self.n_dead > self.merge_threshold() {
            self.merge();
        }
    }

    /// Rebuilds the sorted arrays from the live sorted slots and the delta, in `O(q·n)` plus
    /// sorting the delta: new slots follow increasing ids, each old list is filtered and
    /// renumbered (its order is kept) and merged with the sorted delta entries.
    fn merge(&mut self) {
        let w = self.words();
        let (bits, q, n_old) = (self.bits, self.q, self.n);
        let total = self.ids.len();
        let mut delta: Vec<usize> = (n_old..total).collect();
        delta.sort_unstable_by_key(|&s| self.ids[s]);
        let live = total - self.n_dead;
        let mut new_slot = vec![u32::MAX; total];
        let mut ids = Vec::with_capacity(live);
        let mut codes = Vec::with_capacity(live * w);
        let (mut i, mut j) = (0, 0);
        loop {
            while i < n_old && self.is_dead(i) {
                i += 1;
            }
            let take_main = match (i < n_old, j < delta.len()) {
                (true, true) => self.ids[i] < self.ids[delta[j]],
                (true, false) => true,
                (false, true) => false,
                (false, false) => break,
            };
            let s = if take_main {
                i += 1;
                i - 1
            } else {
                j += 1;
                delta[j - 1]
            };
            new_slot[s] = ids.len() as u32;
            ids.push(self.ids[s]);
            codes.extend_from_slice(self.code(s));
        }
        let n = ids.len();
        let mut keys = vec![0u64; q * n];
        let mut order = vec![0u32; q * n];
        if n > 0 {
            let this = &*self;
            keys.par_chunks_mut(n)
                .zip(order.par_chunks_mut(n))
                .enumerate()
                .for_each(|(t, (kt, ot))| {
                    let perm = &this.perms[t * bits..(t + 1) * bits];
                    let head = &perm[..bits.min(KEY_BITS)];
                    let cmp = |a: (u64, u32), b: (u64, u32)| cmp_entry(perm, &codes, w, a, b);
                    let mut add: Vec<(u64, u32)> = delta
                        .iter()
                        .map(|&s| (prefix_key(head, this.code(s)), new_slot[s]))
                        .collect();
                    add.sort_unstable_by(|&a, &b| cmp(a, b));
                    let old_keys = &this.keys[t * n_old..(t + 1) * n_old];
                    let old_order = &this.order[t * n_old..(t + 1) * n_old];
                    let mut old = old_keys
                        .iter()
                        .zip(old_order)
                        .filter(|&(_, &s)| !this.is_dead(s as usize))
                        .map(|(&k, &s)| (k, new_slot[s as usize]))
                        .peekable();
                    let mut add = add.into_iter().peekable();
                    for (k, o) in kt.iter_mut().zip(ot.iter_mut()) {
                        let e = match (old.peek(), add.peek()) {
                            (Some(&a), Some(&b)) if cmp(a, b) == Ordering::Greater => add.next(),
                            (Some(_), _) => old.next(),
                            (None, _) => add.next(),
                        };
                        let (key, slot) = e.expect("the merged lists hold exactly n entries");
                        *k = key;
                        *o = slot;
                    }
                });
        }
        self.codes = codes.into();
        self.ids = ids.into();
        self.keys = keys.into();
        self.order = order.into();
        self.n = n;
        self.dead = Vec::new();
        self.n_dead = 0;
    }
}

impl HammingIndex for PermutationIndex {
    crate::index::meta::meta_methods!();

    fn spec(&self) -> super::IndexSpec {
        super::IndexSpec::Permutation(super::PermutationSpec {
            permutations: self.q,
            beam: self.beam,
            seed: self.seed,
        })
    }

    fn bits(&self) -> usize {
        self.bits
    }

    fn len(&self) -> usize {
        self.ids.len() - self.n_dead
    }

    fn bytes(&self) -> usize {
        self.perms.data_bytes()
            + self.codes.data_bytes()
            + self.ids.data_bytes()
            + self.keys.data_bytes()
            + self.order.data_bytes()
            + self.dead.capacity() * 8
    }

    fn validate(&self) -> Result<()> {
        self.check_contents()
    }

    fn insert(&mut self, id: Id, code: &[u64]) -> Result<()> {
        check_code(self.bits, code)?;
        self.ensure_valid()?;
        if self.find(id).is_some() {
            return Err(Error::param("id", format!("id {id} is already stored")));
        }
        if self.ids.len() >= u32::MAX as usize - 1 {
            return Err(Error::param("id", "the index holds 2^32 - 1 codes"));
        }
        self.codes.to_mut().extend_from_slice(code);
        self.ids.to_mut().push(id);
        self.maybe_merge();
        Ok(())
    }

    fn remove(&mut self, id: Id) -> Result<bool> {
        self.ensure_valid()?;
        let Some(slot) = self.find(id) else {
            return Ok(false);
        };
        if slot < self.n {
            if self.dead.is_empty() {
                self.dead = vec![0; self.n.div_ceil(64)];
            }
            self.dead[slot / 64] |= 1 << (slot % 64);
            self.n_dead += 1;
        } else {
            let w = self.words();
            let last = self.ids.len() - 1;
            let codes = self.codes.to_mut();
            codes.copy_within(last * w..(last + 1) * w, slot * w);
            codes.truncate(last * w);
            let ids = self.ids.to_mut();
            ids.swap_remove(slot);
        }
        self.maybe_merge();
        Ok(true)
    }

    fn insert_batch(&mut self, ids: &[Id], codes: &[u64]) -> Result<()> {
        super::check_batch(self.bits, ids, codes)?;
        self.ensure_valid()?;
        let mut delta = super::IdSet::default();
        for &id in &self.ids[self.n..] {
            delta.insert(id);
        }
        let stored = |id: Id| match self.ids[..self.n].binary_search(&id) {
            Ok(s) if !self.is_dead(s) => true,
            _ => delta.contains(id),
        };
        if let Some(&id) = ids.iter().find(|&&id| stored(id)) {
            return Err(super::duplicate(id));
        }
        if self.ids.len() + ids.len() >= u32::MAX as usize - 1 {
            return Err(Error::param("id", "the index would hold 2^32 - 1 codes"));
        }
        self.codes.to_mut().extend_from_slice(codes);
        self.ids.to_mut().extend_from_slice(ids);
        self.maybe_merge();
        Ok(())
    }

    fn remove_batch(&mut self, ids: &[Id]) -> Result<usize> {
        self.ensure_valid()?;
        let mut rm = super::IdSet::default();
        for &id in ids {
            rm.insert(id);
        }
        let mut removed = 0;
        // Sorted slots become tombstones; the delta is filtered in one pass.
        for id in rm.iter() {
            if let Ok(slot) = self.ids[..self.n].binary_search(&id)
                && !self.is_dead(slot)
            {
                if self.dead.is_empty() {
                    self.dead = vec![0; self.n.div_ceil(64)];
                }
                self.dead[slot / 64] |= 1 << (slot % 64);
                self.n_dead += 1;
                removed += 1;
            }
        }
        let (n, w) = (self.n, self.words());
        if self.ids.len() > n && self.ids[n..].iter().any(|&id| rm.contains(id)) {
            let (ids, codes) = (self.ids.to_mut(), self.codes.to_mut());
            removed += super::rows::retain_rows(ids, codes, w, n, |id| !rm.contains(id));
        }
        self.maybe_merge();
        Ok(removed)
    }

    fn radius_into(&self, query: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        let mut found = self.radius_pass(query, r)?;
        *out = found.pop().unwrap_or_default();
        Ok(())
    }

    fn knn_into(&self, query: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        self.knn_with(query, k, &mut self.pool.get(), out);
        Ok(())
    }

    fn exact_knn(&self) -> bool {
        false
    }

    fn radius_batch(&self, queries: &[u64], r: u32) -> Result<Vec<Vec<Hit>>> {
        let w = super::check_query_rows(self.bits, queries)?;
        let chunks: Vec<Vec<Vec<Hit>>> = queries
            .par_chunks(w * RADIUS_BATCH)
            .map(|qs| self.radius_pass(qs, r))
            .collect::<Result<_>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    fn knn_batch(&self, queries: &[u64], k: usize) -> Result<Vec<Vec<Hit>>> {
        let w = super::check_query_rows(self.bits, queries)?;
        let chunks: Vec<Vec<Vec<Hit>>> = queries
            .par_chunks(w * KNN_BATCH)
            .map(|qs| {
                let mut s = self.pool.get();
                qs.chunks_exact(w)
                    .map(|q| {
                        let mut out = Vec::new();
                        self.knn_with(q, k, &mut s, &mut out);
                        out
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        Ok(chunks.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::builder::draw_permutations;
    use super::keys::gallop_equal;
    use super::*;
    use crate::rng::Rng;
    use crate::signature::last_word_mask;

    fn random_matrix(rng: &mut Rng, bits: usize, n: usize) -> SignatureMatrix {
        let w = words_for(bits);
        let mut data: Vec<u64> = (0..n * w).map(|_| rng.next_u64()).collect();
        for c in data.chunks_exact_mut(w) {
            c[w - 1] &= last_word_mask(bits);
        }
        SignatureMatrix::from_parts(bits, data).unwrap()
    }

    /// perms, codes, ids, keys, order.
    type Arrays = (Vec<u32>, Vec<u64>, Vec<u32>, Vec<u64>, Vec<u32>);

    fn parts(idx: &PermutationIndex) -> Arrays {
        (
            idx.perms().to_vec(),
            idx.codes().to_vec(),
            idx.ids().to_vec(),
            idx.keys().to_vec(),
            idx.order().to_vec(),
        )
    }

    #[test]
    fn permutations_are_uniform_fisher_yates_and_nested() {
        let p = draw_permutations(100, 5, 9).unwrap();
        for row in p.chunks_exact(100) {
            let mut s = row.to_vec();
            s.sort_unstable();
            assert_eq!(s, (0..100).collect::<Vec<u32>>());
        }
        assert_eq!(&draw_permutations(100, 8, 9).unwrap()[..500], &p[..]);
        assert_ne!(draw_permutations(100, 5, 10).unwrap(), p);
        // Position of bit 0 after the shuffle: uniform over 0..4 (chi-square, 3 dof).
        let mut counts = [0f64; 4];
        let trials = 40_000;
        for row in draw_permutations(4, trials, 1).unwrap().chunks_exact(4) {
            counts[row.iter().position(|&x| x == 0).unwrap()] += 1.0;
        }
        let e = trials as f64 / 4.0;
        let chi2: f64 = counts.iter().map(|c| (c - e) * (c - e) / e).sum();
        assert!(chi2 < 16.27, "chi2 {chi2} (p = 0.001 quantile of chi2(3))"); // 0.1% level
    }

    #[test]
    fn sorted_lists_are_the_lexicographic_order_of_permuted_codes() {
        let mut rng = Rng::new(4);
        for bits in [5usize, 64, 130, 300] {
            let mut m = random_matrix(&mut rng, bits, 200);
            // Near-duplicates sharing the 64-bit prefix, and exact duplicates.
            let w = words_for(bits);
            for i in 0..40 {
                let mut c = m.row(i).to_vec();
                if bits > 70 && i % 2 == 0 {
                    let j = bits - 1 - i % 5;
                    c[j / 64] ^= 1 << (j % 64);
                }
                m.push_words(bits, &c).unwrap();
            }
            let idx = PermutationIndex::builder()
                .permutations(3)
                .seed(5)
                .build(&m)
                .unwrap();
            let n = m.len();
            for t in 0..3 {
                let perm = &idx.perms()[t * bits..(t + 1) * bits];
                let permuted = |s: usize| -> Vec<bool> {
                    perm.iter()
                        .map(|&p| (m.row(s)[p as usize / 64] >> (p % 64)) & 1 == 1)
                        .collect()
                };
                let list = &idx.order()[t * n..(t + 1) * n];
                for (i, p) in list.windows(2).enumerate() {
                    let (a, b) = (permuted(p[0] as usize), permuted(p[1] as usize));
                    assert!(a < b || (a == b && p[0] < p[1]), "f={bits} t={t} i={i}");
                    assert_eq!(
                        idx.keys()[t * n + i],
                        prefix_key(&perm[..bits.min(64)], m.row(p[0] as usize))
                    );
                }
                assert_eq!(w, idx.words());
            }
        }
    }

    #[test]
    fn queries_are_located_at_the_lower_bound_of_their_permuted_code() {
        let mut rng = Rng::new(12);
        for bits in [7usize, 64, 100, 300] {
            let w = words_for(bits);
            let mut m = random_matrix(&mut rng, bits, 150);
            let mut queries = random_matrix(&mut rng, bits, 10).as_slice().to_vec();
            // Stored codes and near copies of them (same 64-bit key, different tails), 37
            // duplicates of one code.
            for i in 0..60 {
                let mut c = m.row(i % 20).to_vec();
                if i % 3 > 0 && bits > 1 {
                    let j = rng.below(bits as u64) as usize;
                    c[j / 64] ^= 1 << (j % 64);
                }
                queries.extend_from_slice(&c);
                if i % 2 == 0 {
                    m.push_words(bits, &c).unwrap();
                }
            }
            for _ in 0..37 {
                let c = m.row(3).to_vec();
                m.push_words(bits, &c).unwrap();
            }
            let idx = PermutationIndex::builder()
                .permutations(4)
                .seed(2)
                .build(&m)
                .unwrap();
            let n = m.len();
            let (mut qk, mut pos) = (Vec::new(), Vec::new());
            for query in queries.chunks_exact(w) {
                idx.locate_all(query, &mut qk, &mut pos);
                for (t, &p) in pos.iter().enumerate() {
                    let perm = &idx.perms()[t * bits..(t + 1) * bits];
                    let permuted = |c: &[u64]| -> Vec<bool> {
                        perm.iter()
                            .map(|&p| (c[p as usize / 64] >> (p % 64)) & 1 == 1)
                            .collect()
                    };
                    let pq = permuted(query);
                    let below = (0..n).filter(|&s| permuted(m.row(s)) < pq).count();
                    assert_eq!(p, below, "f={bits} t={t}");
                }
            }
            assert_eq!(gallop_equal(&[5, 5, 5, 6], 5), 3);
            assert_eq!(gallop_equal(&[5; 9], 5), 9);
            assert_eq!(gallop_equal(&[5], 5), 1);
        }
    }

    #[test]
    fn from_parts_round_trips_and_rejects_bad_arrays() {
        let mut rng = Rng::new(6);
        let m = random_matrix(&mut rng, 100, 300);
        let idx = PermutationIndex::builder()
            .permutations(4)
            .beam(8)
            .seed(3)
            .build(&m)
            .unwrap();
        assert!(idx.is_compact());
        let (perms, codes, ids, keys, order) = parts(&idx);
        let make = |perms: Vec<u32>, codes: Vec<u64>, ids: Vec<u32>, keys: Vec<u64>, order| {
            PermutationIndex::from_parts(
                100,
                8,
                3,
                Buf::from(perms),
                Buf::from(codes),
                Buf::from(ids),
                Buf::from(keys),
                Buf::from(order),
            )
        };
        let back = make(
            perms.clone(),
            codes.clone(),
            ids.clone(),
            keys.clone(),
            order.clone(),
        )
        .unwrap();
        let qs = random_matrix(&mut rng, 100, 20);
        assert_eq!(
            back.knn_batch(qs.as_slice(), 7).unwrap(),
            idx.knn_batch(qs.as_slice(), 7).unwrap()
        );
        assert_eq!(back.permutations(), 4);
        let mut p = perms.clone();
        p[3] = p[4];
        // Rejected on loading (shapes, permutations) or by `validate` (contents), and
        // queries on an unvalidated index never panic.
        let rejected = |r: crate::error::Result<PermutationIndex>| match r {
            Err(_) => true,
            Ok(bad) => {
                bad.knn_batch(qs.as_slice(), 7).unwrap();
                bad.radius_batch(qs.as_slice(), 30).unwrap();
                bad.validate().is_err()
            }
        };
        assert!(back.validate().is_ok());
        assert!(rejected(make(
            p,
            codes.clone(),
            ids.clone(),
            keys.clone(),
            order.clone()
        )));
        let mut c = codes.clone();
        c[1] |= 1 << 63;
        assert!(rejected(make(
            perms.clone(),
            c,
            ids.clone(),
            keys.clone(),
            order.clone()
        )));
        let mut i = ids.clone();
        i.swap(0, 1);
        assert!(rejected(make(
            perms.clone(),
            codes.clone(),
            i,
            keys.clone(),
            order.clone()
        )));
        let mut k = keys.clone();
        k.swap(0, 299);
        assert!(rejected(make(
            perms.clone(),
            codes.clone(),
            ids.clone(),
            k,
            order.clone()
        )));
        let mut o = order.clone();
        o[5] = 300;
        assert!(rejected(make(
            perms.clone(),
            codes.clone(),
            ids.clone(),
            keys.clone(),
            o
        )));
        assert!(rejected(make(
            perms[..99].to_vec(),
            codes,
            ids,
            keys,
            order
        )));
    }
    #[test]
    fn merged_delta_and_tombstones_equal_a_fresh_build() {
        let mut rng = Rng::new(8);
        let b = PermutationIndex::builder().permutations(3).beam(2).seed(1);
        let m = random_matrix(&mut rng, 70, 400);
        let full = b.build(&m).unwrap();
        let mut idx = b.build(&m.slice_rows(0..100)).unwrap();
        for i in (100..400).rev() {
            idx.insert(i as u32, m.row(i)).unwrap();
        }
        for i in (0..400).step_by(7) {
            assert!(idx.remove(i as u32).unwrap());
        }
        for i in (0..400).step_by(7) {
            idx.insert(i as u32, m.row(i)).unwrap();
        }
        idx.compact().unwrap();
        assert!(idx.is_compact());
        assert_eq!(parts(&idx), parts(&full));
    }
}
