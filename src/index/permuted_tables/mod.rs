//! Manku's permuted tables (Manku, Jain and Das Sarma, *Detecting near-duplicates for web
//! crawling*, WWW 2007, section 3.1): exact Hamming radius search by pigeonhole on blocks of
//! bits, with every table a flat sorted array.
//!
//! # How it works
//!
//! The `f` signature bits are cut into blocks, and each table is keyed on a combination of
//! blocks (the design, see the [`design`] module): two codes within distance `k` (the
//! index's radius) differ in at most `k` blocks, so they agree exactly on the key of at least
//! one table. Table `t` holds, for every code, its *key word* (the table's key bits on top,
//! as many other bits as fit below; for `f ≤ 64` a bit permutation of the whole code) and
//! its id, sorted by key word, in flat arrays. For `f ≤ 64` the distance of two key words is
//! the distance of the codes (the Hamming distance is invariant under a common permutation
//! of the bits), so candidates are verified on the key words themselves, without
//! un-permuting or looking anything up; for `f > 64` the key word's distance is a lower
//! bound, and only candidates passing it are checked on their full code. A code is reported
//! only by the first table whose key it shares with the query, so results need no
//! deduplication.
//!
//! # Layout and probes
//!
//! Each sorted table is stored as a *prefix directory* and *truncated keys*: the top `b`
//! bits of the key words (`b = min(key bits, log2 N − 3)`) index an array of `2^b + 1`
//! offsets, and each entry stores only the other `64 − b` bits of its key word (6 bytes for
//! a million codes), next to its 4-byte id. A probe reads the query's directory entry and
//! then the 8 to 16 entries it points to (a binary search among them when the key is longer
//! than `b`): one memory round trip into the table instead of the `log N` of a binary
//! search, or the several dependent steps of the interpolation search Manku et al.
//! describe, and no more memory than the plain 8-byte keys (the directory costs less than
//! the key bytes it saves). The probes of many (query, table) pairs run phase by phase
//! with software prefetching (directory entries, then keys, then ids), so that their cache
//! misses overlap; [`radius_batch`](HammingIndex::radius_batch) probes 64 queries at a time.
//! (On the W3 benchmark, an earlier version with full 8-byte keys and an interpolation
//! search, 48 bytes per code, answered about 2.5 times fewer queries per second: its four
//! or five dependent cache misses per probe dominated.)
//!
//! # Memory
//!
//! Per code and table, for `f ≤ 64`: a truncated key word (`ceil((64 − b) / 8)` bytes), a
//! 4-byte id, and `4 · 2^b / N` bytes of directory: 10.26 bytes for a million codes, so the
//! 4-table design for radius 3 takes 41 bytes per code (the 48 of four tables of 8-byte
//! codes and 4-byte ids, less the truncation). For `f > 64` the tables hold row numbers
//! instead of ids, and the codes are stored once (`8 · words + 4` bytes per code, rows in
//! increasing id order).
//!
//! # Queries beyond the design
//!
//! Radius queries with `r` up to the built radius `k` probe the tables. Larger radii are
//! answered exactly by a linear scan (of the first table's key words for `f ≤ 64`, which are
//! the codes permuted, or of the stored codes). k-NN probes the tables once at radius `k`:
//! if at least `k` codes lie within it, the `k` nearest are among them and the answer is
//! exact; otherwise it scans every code. Every answer is exact.
//!
//! # Updates
//!
//! Inserted codes go to a small unsorted delta, scanned by every query, which is merged into
//! the sorted tables (a linear merge per table, and the tables re-encoded) when it exceeds
//! `max(128, √N)` codes. Removals mark the id dead (its table entries are skipped) or drop
//! it from the delta; the tables are compacted when more than `max(64, N / 32)` entries are
//! dead. An id removed and inserted again lives in the delta until the next merge.
//!
//! # Persistence
//!
//! An index is defined by its parameters (`bits`, `radius`, `levels`) and its arrays: the
//! directories, truncated keys (bytes, with 8 bytes of padding) and values of all tables
//! (`dir`, `keys`, `vals`, concatenated table after table; the directory bits of each table
//! follow from the parameters and `N = vals.len() / tables`), for `f > 64` the codes and
//! their ids (`codes`, `row_ids`), the delta (`delta_codes`, `delta_ids`) and the dead ids.
//! The table layout is recomputed from the parameters.

mod builder;
pub mod design;
mod layout;
mod parts;
mod probe;
mod store;

pub use self::builder::PermutedTablesBuilder;

/// Default radius `k` the tables answer by probing (the builder's and the index
/// specification's `manku`).
pub const DEFAULT_RADIUS: u32 = 3;

use rayon::prelude::*;

pub(crate) use self::design::join_plan;
pub use self::design::{MAX_TABLES, Plan, min_tables, plan};
use self::layout::sort_pairs;
pub(crate) use self::layout::{Layout, counting_sort};
use self::store::Store;
use super::{HammingIndex, Hit, Id, IdSet, check_code};
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::words_for;
use crate::storage::Buf;
use crate::util::topk::TopK;

/// Queries probed together by the batch searches.
const QUERY_GROUP: usize = 64;

/// Codes per block of the exact k-NN scan.
const SCAN_BLOCK: usize = 256;

/// Which ids the sorted tables hold (dead ones included).
#[derive(Clone, Debug)]
enum MainIds {
    /// Exactly `0..n` (a batch build): no set needed.
    Range(u64),
    /// Any ids.
    Set(IdSet),
}

impl MainIds {
    /// The set of `ids`, or `None` if one repeats.
    fn from_ids(ids: impl Iterator<Item = u32>) -> Option<MainIds> {
        let mut v: Vec<u32> = ids.collect();
        v.sort_unstable();
        Self::from_sorted(&v)
    }

    /// The set of sorted `ids`, or `None` if one repeats.
    fn from_sorted(ids: &[u32]) -> Option<MainIds> {
        if ids.windows(2).any(|p| p[0] == p[1]) {
            return None;
        }
        Some(match ids.last() {
            None => MainIds::Range(0),
            Some(&m) if u64::from(m) + 1 == ids.len() as u64 => MainIds::Range(ids.len() as u64),
            Some(_) => MainIds::Set(IdSet::from_sorted(ids)),
        })
    }

    fn contains(&self, id: Id) -> bool {
        match self {
            MainIds::Range(n) => u64::from(id) < *n,
            MainIds::Set(s) => s.contains(id),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            MainIds::Range(_) => 0,
            MainIds::Set(s) => s.bytes(),
        }
    }
}

/// Manku's permuted tables: exact Hamming radius and k-NN search of `f`-bit codes, fast for
/// radii up to the built radius `k`. See the [module documentation](self).
///
/// ```
/// use simlsh::index::{HammingIndex, PermutedTables};
/// use simlsh::SignatureMatrix;
///
/// let codes = SignatureMatrix::from_parts(64, vec![0b1011u64, 0b1000, u64::MAX]).unwrap();
/// let idx = PermutedTables::builder().radius(3).blocks(4).build(&codes).unwrap();
/// let hits = idx.radius(&[0b0011], 3).unwrap();
/// assert_eq!(hits.iter().map(|h| (h.id, h.distance)).collect::<Vec<_>>(), vec![(0, 1), (1, 3)]);
/// ```
#[derive(Clone, Debug)]
pub struct PermutedTables {
    bits: usize,
    radius: u32,
    levels: Vec<usize>,
    layout: Layout,
    /// The sorted tables; their values are ids (`f ≤ 64`) or rows (`f > 64`).
    store: Store,
    /// `f > 64`: the codes, row-major, rows in increasing id order.
    codes: Buf<u64>,
    /// `f > 64`: the id of each row, increasing.
    row_ids: Buf<u32>,
    delta_codes: Vec<u64>,
    delta_ids: Vec<u32>,
    /// Ids whose table entries are stale.
    dead: IdSet,
    /// The ids of the tables (for a loaded index, computed by the check before the first
    /// change).
    main_ids: MainIds,
    /// Whether the contents are known to be valid (built here, or checked).
    validated: bool,
    /// The signer of the codes and the source of a loaded index.
    pub(crate) meta: crate::index::IndexMeta,
}

/// Merges two sorted runs of `(key, value)` pairs.
fn merge_sorted(a: impl Iterator<Item = (u64, u32)>, b: &[(u64, u32)]) -> Vec<(u64, u32)> {
    let mut out = Vec::with_capacity(b.len());
    let mut b = b.iter().copied().peekable();
    for x in a {
        while let Some(y) = b.next_if(|&y| y < x) {
            out.push(y);
        }
        out.push(x);
    }
    out.extend(b);
    out
}

impl PermutedTables {
    /// A builder (radius 3 and the planned design by default).
    pub fn builder() -> PermutedTablesBuilder {
        PermutedTablesBuilder::default()
    }

    /// Radius `k` the tables were built for (radius queries up to it probe the tables).
    pub fn built_radius(&self) -> u32 {
        self.radius
    }

    /// The design: blocks per level (see [`Plan::levels`]).
    pub fn levels(&self) -> &[usize] {
        &self.levels
    }

    /// Number of tables.
    pub fn num_tables(&self) -> usize {
        self.layout.tables.len()
    }

    /// Effective key length (bits, at most 64) of each table.
    pub fn key_bits(&self) -> Vec<u32> {
        self.layout.tables.iter().map(|t| t.key_bits).collect()
    }

    /// Builds the tables over `rows` (row-major codes) with ids `ids`, in parallel.
    fn from_rows(bits: usize, radius: u32, levels: Vec<usize>, rows: &[u64], ids: &[u32]) -> Self {
        let layout = Layout::new(bits, radius, &levels);
        let w = words_for(bits);
        let m = ids.len();
        // Rows are in increasing id order for a build; tables of wide codes index rows.
        let vals_of: Vec<u32> = if w == 1 {
            ids.to_vec()
        } else {
            (0..m as u32).collect()
        };
        let store = Store::encode(&layout, m, |t| {
            let tl = &layout.tables[t];
            let pairs: Vec<(u64, u32)> = rows
                .chunks_exact(w)
                .zip(&vals_of)
                .map(|(c, &v)| (tl.keyword(c), v))
                .collect();
            sort_pairs(pairs)
        });
        let (codes, row_ids) = if w == 1 {
            (Vec::new(), Vec::new())
        } else {
            (rows.to_vec(), ids.to_vec())
        };
        let main_ids = MainIds::from_ids(ids.iter().copied()).expect("build ids are distinct");
        PermutedTables {
            bits,
            radius,
            levels,
            layout,
            store,
            codes: codes.into(),
            row_ids: row_ids.into(),
            delta_codes: Vec::new(),
            delta_ids: Vec::new(),
            dead: IdSet::default(),
            main_ids,
            validated: true,
            meta: crate::index::IndexMeta::default(),
        }
    }

    fn words(&self) -> usize {
        self.layout.words()
    }

    fn delta_limit(&self) -> usize {
        self.store.len().isqrt().max(128)
    }

    fn dead_limit(&self) -> usize {
        (self.store.len() / 32).max(64)
    }

    #[inline(always)]
    fn is_dead(&self, id: Id) -> bool {
        !self.dead.is_empty() && self.dead.contains(id)
    }

    fn contains(&self, id: Id) -> bool {
        (self.main_ids.contains(id) && !self.dead.contains(id)) || self.delta_ids.contains(&id)
    }

    /// Calls `f(first, keys)` on table 0's key words in entry order, [`SCAN_BLOCK`] at a
    /// time: `keys` are entries `first .. first + keys.len()`.
    fn for_each_key_block(&self, mut f: impl FnMut(usize, &[u64]) -> Result<()>) -> Result<()> {
        let mut buf = [0u64; SCAN_BLOCK];
        let (mut len, mut first) = (0, 0);
        for (k, _) in self.store.table(0) {
            buf[len] = k;
            len += 1;
            if len == SCAN_BLOCK {
                f(first, &buf)?;
                first += len;
                len = 0;
            }
        }
        if len > 0 {
            f(first, &buf[..len])?;
        }
        Ok(())
    }

    /// Appends to `outs[q]` every stored code within `r` of query `q` of `queries`, found by
    /// one batched linear scan of the first table's key words (`f <= 64`: the codes,
    /// permuted) or of the codes.
    fn scan_radius(&self, queries: &[u64], r: u32, outs: &mut [Vec<Hit>]) -> Result<()> {
        if self.store.len() == 0 {
            return Ok(());
        }
        let w = self.words();
        if w == 1 {
            let vals = self.store.vals();
            let t0 = &self.layout.tables[0];
            let qks: Vec<u64> = queries.iter().map(|&q| t0.keyword1(q)).collect();
            self.for_each_key_block(|first, keys| {
                hamming::scan_radius(&qks, keys, 1, r, |q, i, d| {
                    let id = vals[first + i];
                    if !self.is_dead(id) {
                        outs[q].push(Hit { distance: d, id });
                    }
                })
            })
        } else {
            hamming::scan_radius(queries, &self.codes, w, r, |q, i, d| {
                let id = self.row_ids[i];
                if !self.is_dead(id) {
                    outs[q].push(Hit { distance: d, id });
                }
            })
        }
    }

    /// Radius search of a group of queries (row-major, `outs.len()` codes).
    fn radius_group(&self, queries: &[u64], r: u32, outs: &mut [Vec<Hit>]) -> Result<()> {
        if r <= self.radius {
            self.probe(queries, r, outs);
        } else {
            self.scan_radius(queries, r, outs)?;
        }
        let w = self.words();
        for (q, out) in queries.chunks_exact(w).zip(outs.iter_mut()) {
            self.delta_radius(q, r, out)?;
            out.sort_unstable();
        }
        Ok(())
    }

    /// Appends the delta codes within `r` of `q`.
    fn delta_radius(&self, q: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()> {
        if self.delta_ids.is_empty() {
            return Ok(());
        }
        hamming::scan_radius(q, &self.delta_codes, self.words(), r, |_, i, d| {
            out.push(Hit {
                distance: d,
                id: self.delta_ids[i],
            })
        })
    }

    /// Offers every code of `codes` (ids `id_of(i)`) to `top`, skipping dead ids when
    /// `tables` (the delta holds only live entries, among them ids re-inserted after their
    /// table entry was marked dead).
    fn offer_all(
        &self,
        q: &[u64],
        codes: &[u64],
        w: usize,
        id_of: impl Fn(usize) -> Id,
        tables: bool,
        top: &mut TopK<Hit>,
    ) -> Result<()> {
        let mut dist = [0u32; SCAN_BLOCK];
        for (b, block) in codes.chunks(SCAN_BLOCK * w).enumerate() {
            let dist = &mut dist[..block.len() / w];
            hamming::distances(q, block, w, dist)?;
            for (i, &d) in dist.iter().enumerate() {
                if top.worst().is_none_or(|w| d <= w.distance) {
                    let id = id_of(b * SCAN_BLOCK + i);
                    if !(tables && self.is_dead(id)) {
                        top.offer(Hit { distance: d, id });
                    }
                }
            }
        }
        Ok(())
    }

    /// The exact k nearest by scanning every code.
    fn scan_knn(&self, q: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()> {
        let mut top = TopK::new(k);
        let w = self.words();
        if self.store.len() > 0 {
            if w == 1 {
                let vals = self.store.vals();
                let qk = [self.layout.tables[0].keyword1(q[0])];
                self.for_each_key_block(|first, keys| {
                    self.offer_all(&qk, keys, 1, |i| vals[first + i], true, &mut top)
                })?;
            } else {
                self.offer_all(q, &self.codes, w, |i| self.row_ids[i], true, &mut top)?;
            }
        }
        let delta = &self.delta_ids;
        let mut dtop = TopK::new(k);
        self.offer_all(q, &self.delta_codes, w, |i| delta[i], false, &mut dtop)?;
        out.clear();
        top.drain_sorted_into(out);
        dtop.drain_sorted_into(out);
        out.sort_unstable();
        out.truncate(k);
        Ok(())
    }

    /// Merges the delta into the tables and drops the dead entries.
    fn merge(&mut self) {
        let w = self.words();
        let m = self.store.len();
        // Delta entries by id.
        let mut order: Vec<usize> = (0..self.delta_ids.len()).collect();
        order.sort_unstable_by_key(|&i| self.delta_ids[i]);
        let live = |id: Id| !self.dead.contains(id);
        let (new_codes, new_row_ids, old_map, delta_vals) = if w == 1 {
            let vals: Vec<u32> = order.iter().map(|&i| self.delta_ids[i]).collect();
            (Vec::new(), Vec::new(), Vec::new(), vals)
        } else {
            // Merge the rows by id; map old rows and delta entries to new rows.
            let mut codes = Vec::with_capacity((m + order.len()) * w);
            let mut ids = Vec::with_capacity(m + order.len());
            let mut old_map = vec![u32::MAX; m];
            let mut delta_vals = vec![0u32; order.len()];
            let (mut a, mut b) = (0, 0);
            while a < m || b < order.len() {
                let take_old =
                    b == order.len() || (a < m && self.row_ids[a] < self.delta_ids[order[b]]);
                if take_old {
                    if live(self.row_ids[a]) {
                        old_map[a] = ids.len() as u32;
                        ids.push(self.row_ids[a]);
                        codes.extend_from_slice(&self.codes[a * w..(a + 1) * w]);
                    }
                    a += 1;
                } else {
                    let i = order[b];
                    delta_vals[b] = ids.len() as u32;
                    ids.push(self.delta_ids[i]);
                    codes.extend_from_slice(&self.delta_codes[i * w..(i + 1) * w]);
                    b += 1;
                }
            }
            (codes, ids, old_map, delta_vals)
        };
        let new_m = if w == 1 {
            self.store.vals()[..m]
                .iter()
                .filter(|&&id| live(id))
                .count()
                + order.len()
        } else {
            new_row_ids.len()
        };
        let store = Store::encode(&self.layout, new_m, |t| {
            let tl = &self.layout.tables[t];
            let mut add: Vec<(u64, u32)> = order
                .iter()
                .zip(&delta_vals)
                .map(|(&i, &v)| (tl.keyword(&self.delta_codes[i * w..(i + 1) * w]), v))
                .collect();
            add.sort_unstable();
            let old = self.store.table(t);
            if w == 1 {
                merge_sorted(old.filter(|&(_, v)| live(v)), &add)
            } else {
                let remapped = old
                    .map(|(k, v)| (k, old_map[v as usize]))
                    .filter(|&(_, v)| v != u32::MAX);
                merge_sorted(remapped, &add)
            }
        });
        let main_ids = if w == 1 {
            MainIds::from_ids(store.vals()[..new_m].iter().copied())
        } else {
            MainIds::from_ids(new_row_ids.iter().copied())
        }
        .expect("merged ids are distinct");
        self.store = store;
        self.codes = new_codes.into();
        self.row_ids = new_row_ids.into();
        self.delta_codes.clear();
        self.delta_ids.clear();
        self.dead = IdSet::default();
        self.main_ids = main_ids;
    }
}

impl HammingIndex for PermutedTables {
    crate::index::meta::meta_methods!();

    fn spec(&self) -> super::IndexSpec {
        super::IndexSpec::Manku(super::MankuSpec {
            radius: self.radius,
            design: super::MankuDesign::Levels(self.levels.clone()),
        })
    }

    fn bits(&self) -> usize {
        self.bits
    }

    fn len(&self) -> usize {
        self.store.len() - self.dead.len() + self.delta_ids.len()
    }

    fn bytes(&self) -> usize {
        self.store.bytes()
            + self.codes.data_bytes()
            + self.row_ids.data_bytes()
            + self.delta_codes.capacity() * 8
            + self.delta_ids.capacity() * 4
            + self.dead.bytes()
            + self.main_ids.bytes()
            + self.layout.bytes()
    }

    fn validate(&self) -> Result<()> {
        self.checked_main_ids().map(|_| ())
    }

    fn insert(&mut self, id: Id, code: &[u64]) -> Result<()> {
        check_code(self.bits, code)?;
        self.ensure_valid()?;
        if self.contains(id) {
            return Err(Error::param("id", format!("id {id} is already stored")));
        }
        self.delta_codes.extend_from_slice(code);
        self.delta_ids.push(id);
        if self.delta_ids.len() > self.delta_limit() {
            self.merge();
        }
        Ok(())
    }

    fn remove(&mut self, id: Id) -> Result<bool> {
        self.ensure_valid()?;
        if let Some(i) = self.delta_ids.iter().position(|&x| x == id) {
            let w = self.words();
            let last = self.delta_ids.len() - 1;
            self.delta_ids.swap_remove(i);
            self.delta_codes
                .copy_within(last * w..(last + 1) * w, i * w);
            self.delta_codes.truncate(last * w);
            return Ok(true);
        }
        if !self.main_ids.contains(id) || !self.dead.insert(id) {
            return Ok(false);
        }
        if self.dead.len() > self.dead_limit() {
            self.merge();
        }
        Ok(true)
    }

    fn insert_batch(&mut self, ids: &[Id], codes: &[u64]) -> Result<()> {
        super::check_batch(self.bits, ids, codes)?;
        self.ensure_valid()?;
        let mut delta = IdSet::default();
        for &id in &self.delta_ids {
            delta.insert(id);
        }
        if let Some(&id) = ids.iter().find(|&&id| {
            delta.contains(id) || (self.main_ids.contains(id) && !self.dead.contains(id))
        }) {
            return Err(super::duplicate(id));
        }
        self.delta_codes.extend_from_slice(codes);
        self.delta_ids.extend_from_slice(ids);
        if self.delta_ids.len() > self.delta_limit() {
            self.merge();
        }
        Ok(())
    }

    fn remove_batch(&mut self, ids: &[Id]) -> Result<usize> {
        self.ensure_valid()?;
        let mut rm = IdSet::default();
        for &id in ids {
            rm.insert(id);
        }
        // The delta in one pass, then the tables' ids marked dead; one merge at most.
        let w = self.words();
        let mut removed =
            super::rows::retain_rows(&mut self.delta_ids, &mut self.delta_codes, w, 0, |id| {
                !rm.contains(id)
            });
        for id in rm.iter() {
            if self.main_ids.contains(id) && self.dead.insert(id) {
                removed += 1;
            }
        }
        if self.dead.len() > self.dead_limit() {
            self.merge();
        }
        Ok(removed)
    }

    fn radius_into(&self, query: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        out.clear();
        self.radius_group(query, r, std::slice::from_mut(out))
    }

    fn radius_batch(&self, queries: &[u64], r: u32) -> Result<Vec<Vec<Hit>>> {
        let w = super::check_query_rows(self.bits, queries)?;
        let groups: Vec<Vec<Vec<Hit>>> = queries
            .par_chunks(w * QUERY_GROUP)
            .map(|qs| {
                let mut outs = vec![Vec::new(); qs.len() / w];
                self.radius_group(qs, r, &mut outs)?;
                Ok(outs)
            })
            .collect::<Result<_>>()?;
        Ok(groups.into_iter().flatten().collect())
    }

    fn knn_into(&self, query: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        out.clear();
        if k == 0 {
            return Ok(());
        }
        self.probe(query, self.radius, std::slice::from_mut(out));
        self.delta_radius(query, self.radius, out)?;
        if out.len() >= k {
            out.sort_unstable();
            out.truncate(k);
            return Ok(());
        }
        self.scan_knn(query, k, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::signature::{SignatureMatrix, last_word_mask};

    fn random_matrix(rng: &mut Rng, bits: usize, n: usize) -> SignatureMatrix {
        let w = words_for(bits);
        let mut v: Vec<u64> = (0..n * w).map(|_| rng.next_u64()).collect();
        for row in v.chunks_exact_mut(w) {
            row[w - 1] &= last_word_mask(bits);
        }
        SignatureMatrix::from_parts(bits, v).unwrap()
    }

    #[test]
    fn parts_round_trip_and_reject_corruption() {
        let mut rng = Rng::new(11);
        for bits in [64usize, 130] {
            let sigs = random_matrix(&mut rng, bits, 300);
            let mut idx = PermutedTables::builder().blocks(4).build(&sigs).unwrap();
            idx.remove(5).unwrap();
            idx.insert(1000, sigs.row(7)).unwrap();
            let levels = idx.levels().to_vec();
            let (d, k, v, c, r, dc, di, dead) = idx.parts();
            let rebuild = |d: Vec<u32>, v: Vec<u32>, dead: &[u32]| {
                PermutedTables::from_parts(
                    bits,
                    3,
                    levels.clone(),
                    d.into(),
                    k.to_vec().into(),
                    v.into(),
                    c.to_vec().into(),
                    r.to_vec().into(),
                    dc.to_vec(),
                    di.to_vec(),
                    dead,
                )
            };
            let rebuilt = rebuild(d.to_vec(), v.to_vec(), &dead).unwrap();
            assert_eq!(dead, vec![5]);
            for q in sigs.rows().take(20) {
                assert_eq!(rebuilt.radius(q, 3).unwrap(), idx.radius(q, 3).unwrap());
                assert_eq!(rebuilt.knn(q, 5).unwrap(), idx.knn(q, 5).unwrap());
            }
            // A broken directory is refused on loading; a repeated value and a stale dead id
            // by `validate` and before the first change; queries never panic.
            let mut bad_dir = d.to_vec();
            bad_dir[1] = 10_000;
            let mut repeated = v.to_vec();
            repeated[3] = repeated[4];
            assert!(rebuild(bad_dir, v.to_vec(), &dead).is_err());
            assert!(rebuilt.validate().is_ok());
            for (vals, dead) in [(repeated, dead.clone()), (v.to_vec(), vec![5, 5000])] {
                let mut bad = rebuild(d.to_vec(), vals, &dead).unwrap();
                for q in sigs.rows().take(5) {
                    bad.radius(q, 3).unwrap();
                    bad.knn(q, 5).unwrap();
                }
                assert!(bad.validate().is_err());
                assert!(bad.insert(4000, sigs.row(0)).is_err());
            }
        }
    }

    #[test]
    fn merges_keep_every_table_sorted_and_complete() {
        let mut rng = Rng::new(12);
        for bits in [64usize, 100] {
            let sigs = random_matrix(&mut rng, bits, 2000);
            let mut idx2 = PermutedTables::builder()
                .bits(bits)
                .blocks(5)
                .empty()
                .unwrap();
            for (i, row) in sigs.rows().enumerate() {
                idx2.insert(i as u32 * 3, row).unwrap();
            }
            assert!(idx2.store.len() > 0, "the delta was merged");
            assert_eq!(idx2.len(), 2000);
            for t in 0..idx2.num_tables() {
                let keys: Vec<u64> = idx2.store.table(t).map(|(k, _)| k).collect();
                assert!(keys.windows(2).all(|p| p[0] <= p[1]));
            }
            assert!(matches!(idx2.main_ids, MainIds::Set(_)));
            for i in 0..1500u32 {
                assert!(idx2.remove(i * 3).unwrap());
            }
            assert_eq!(idx2.len(), 500);
            assert!(idx2.dead.len() <= idx2.dead_limit());
        }
    }
}
