//! Joins of signatures by Hamming distance: the all-pairs self-join, the join of a batch of
//! queries with an index, connected components of the pair graph, and the k-NN graph.
//!
//! [`self_join`] finds every unordered pair of rows within distance `r` with Manku's
//! permuted tables (see [`crate::index::permuted_tables`]), built for the join alone: for each table,
//! the rows are grouped by the table's key (a counting sort on the key's top bits) and every
//! pair inside a group is checked. A pair is reported only by the first table whose key it
//! shares, so there are no duplicates to remove. The design is planned for the join's cost
//! (per table, one pass over the rows plus the pairs sharing a key): for 64-bit codes and
//! `r = 3` on a million rows it is the pigeonhole design of 4 blocks of 16 bits.

mod banded;
mod components;
pub(crate) mod descent;
mod graph;
mod scheme;
mod tables;

pub(crate) use banded::{BIG_RUN, banded_join_map};
pub use banded::{
    BandStats, Banding, BandingBuilder, CandidateSample, CappedGroup, DEFAULT_MAX_GROUP, IdPair,
    MAX_PROBES, band_chunk, band_chunk_bytes, band_entry_bytes, band_partition, banded_join,
    banded_join_active, banded_join_each, probe_partition, sample_candidates,
};
pub use components::{SharedUnionFind, UnionFind, clusters, components};
pub use descent::{ApproxKnn, ApproxStats};
pub use graph::{
    KnnMethod, LeaderOrder, knn_graph, knn_graph_active, knn_graph_by, knn_graph_rows,
    knn_graph_with, leader_clusters,
};
pub use scheme::{PartitionPairs, Pass, Scheme, partition};
pub use tables::{TableKeys, TableKeysBuilder, table_partition};

use rayon::prelude::*;

use crate::cpu::{PopcntBody, with_popcnt};
use crate::error::{Error, Result};
use crate::hamming;
use crate::index::permuted_tables::{Layout, Plan, counting_sort, join_plan};
use crate::index::{HammingIndex, Id};
use crate::signature::SignatureMatrix;

/// Groups at least this large are checked with the batched scan kernels, in parallel.
const BIG_GROUP: usize = 256;

/// Rows per parallel task in a big group (fewer in groups so large that a tile's pairs could
/// exceed [`TILE_PAIRS`]).
const GROUP_TILE: usize = 64;

/// The most pairs one tile of a big group may report (its rows times the group's): a tile's
/// rows are `clamp(TILE_PAIRS / group, 1, GROUP_TILE)`, a function of the group alone, so
/// that the order of the pairs does not depend on the number of threads.
const TILE_PAIRS: usize = 1 << 20;

/// The most pairs the tiles or runs checked in parallel may report before they are passed
/// on: the pairs held at once, whatever the radius (at radius `f`, every pair of rows is one).
const WINDOW_PAIRS: usize = 1 << 23;

/// An unordered pair of rows within the join radius: `i < j`. Ordered by `(i, j)`, the order
/// of [`self_join`]'s result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pair {
    /// The smaller row number.
    pub i: u32,
    /// The larger row number.
    pub j: u32,
    /// Their Hamming distance.
    pub distance: u32,
}

/// A query matched with a stored code: ordered by `(query, distance, id)`, the order of
/// [`join_index`]'s result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// Row of the query in the batch.
    pub query: u32,
    /// Hamming distance.
    pub distance: u32,
    /// Id of the stored code.
    pub id: Id,
}

/// Every unordered pair of rows of `sigs` within Hamming distance `r` (inclusive), each
/// exactly once, as [`Pair`]s sorted by `(i, j)`. Identical rows pair at distance 0.
///
/// Exact for any `r` and width; parallel (rayon) over the tables and the key groups, with
/// the same result for any number of threads. The cost is about `tables · N` plus the pairs
/// sharing a key; for `r` close to `f / 2` the planner falls back to comparing all pairs
/// (one table with an empty key), with the batched popcount kernels.
///
/// ```
/// use simlsh::join::{Pair, self_join};
/// use simlsh::SignatureMatrix;
///
/// let sigs = SignatureMatrix::from_parts(64, vec![0b0111u64, 0b0001, 0b0111, u64::MAX]).unwrap();
/// assert_eq!(self_join(&sigs, 2).unwrap(), vec![
///     Pair { i: 0, j: 1, distance: 2 },
///     Pair { i: 0, j: 2, distance: 0 },
///     Pair { i: 1, j: 2, distance: 2 },
/// ]);
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] for more than `2^32` rows.
pub fn self_join<S: AsRef<[u64]> + Sync>(sigs: &SignatureMatrix<S>, r: u32) -> Result<Vec<Pair>> {
    let mut pairs = Vec::new();
    self_join_map(sigs, r, None, Some, |p| pairs.push(p))?;
    pairs.par_sort_unstable();
    Ok(pairs)
}

/// [`self_join`] streaming: each pair goes to `sink` as it is found (in bounded batches, in
/// an order that does not depend on the number of threads), so no pair list is held, even
/// at a radius where every pair of rows is one; returns the number of pairs.
///
/// ```
/// use simlsh::join::self_join_each;
/// use simlsh::SignatureMatrix;
///
/// let sigs = SignatureMatrix::from_parts(64, vec![0b0111u64, 0b0001, 0b0111, u64::MAX]).unwrap();
/// let mut far = 0;
/// let n = self_join_each(&sigs, 2, |p| far += u32::from(p.distance > 0)).unwrap();
/// assert_eq!((n, far), (3, 2));
/// ```
///
/// # Errors
/// As [`self_join`].
pub fn self_join_each<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    r: u32,
    mut sink: impl FnMut(Pair),
) -> Result<u64> {
    let mut n = 0u64;
    self_join_map(sigs, r, None, Some, |p| {
        n += 1;
        sink(p);
    })?;
    Ok(n)
}

/// Checks a list of rows without features of `n` rows: increasing, each below `n`.
///
/// # Errors
/// [`Error::InvalidParameter`] naming the first row out of order or beyond `n`.
pub(crate) fn check_featureless(n: usize, featureless: &[u32]) -> Result<()> {
    if let Some(w) = featureless.windows(2).find(|w| w[0] >= w[1]) {
        let reason = format!("rows must be increasing, {} comes after {}", w[1], w[0]);
        return Err(Error::param("featureless", reason));
    }
    if let Some(&last) = featureless.last().filter(|&&r| r as usize >= n) {
        let reason = format!("row {last} beyond the {n} rows");
        return Err(Error::param("featureless", reason));
    }
    Ok(())
}

/// The rows of `0..n` other than `featureless` (row numbers in increasing order, as
/// [`Featureless::stored`](crate::index::Featureless::stored) and
/// [`Vectors::zero_rows`](crate::verify::Vectors::zero_rows) give them): the rows with
/// features, which joins and k-NN graphs pair.
///
/// # Errors
/// [`Error::InvalidParameter`] if `featureless` is not increasing or names a row beyond `n`;
/// [`Error::OutOfMemory`] when the list cannot be allocated.
pub(crate) fn with_features(n: usize, featureless: &[u32]) -> Result<Vec<u32>> {
    check_featureless(n, featureless)?;
    let n = u32::try_from(n).map_err(|_| Error::param("signatures", "more than 2^32 rows"))?;
    let mut rows = Vec::new();
    crate::memory::reserve(
        &mut rows,
        (n as usize) - featureless.len(),
        "rows with features",
    )?;
    let mut skip = featureless.iter().peekable();
    rows.extend((0..n).filter(|&i| skip.next_if_eq(&&i).is_none()));
    Ok(rows)
}

/// [`with_features`] as flags: `flags[i]` says whether row `i` has features.
///
/// # Errors
/// As [`with_features`].
pub(crate) fn with_features_flags(n: usize, featureless: &[u32]) -> Result<Vec<bool>> {
    let mut active = crate::memory::filled(n, false, "rows with features")?;
    for i in with_features(n, featureless)? {
        active[i as usize] = true;
    }
    Ok(active)
}

/// The rows of a join of `n` rows marked in `active` (all if `None`), in increasing order.
///
/// # Errors
/// [`Error::InvalidParameter`] for `2^32` rows or more; [`Error::LengthMismatch`] if
/// `active` does not have `n` flags.
fn active_rows(n: usize, active: Option<&[bool]>) -> Result<Vec<u32>> {
    if u32::try_from(n).is_err() {
        return Err(Error::param("signatures", "more than 2^32 rows"));
    }
    if let Some(a) = active
        && a.len() != n
    {
        return Err(Error::LengthMismatch {
            what: "active flags vs rows",
            left: a.len(),
            right: n,
        });
    }
    Ok((0..n as u32)
        .filter(|&i| active.is_none_or(|a| a[i as usize]))
        .collect())
}

/// [`self_join_each`] of the rows other than `featureless` (row numbers in increasing order:
/// [`Featureless::stored`](crate::index::Featureless::stored) of
/// [`Featureless::of_codes`](crate::index::Featureless::of_codes) for codes, the rows without
/// features of the vectors or documents signed): pairs involving a featureless row are never
/// formed (documents without features, whose all-zero signatures would pair with each other
/// at distance 0). Returns the number of pairs.
///
/// ```
/// use simlsh::index::Featureless;
/// use simlsh::join::self_join_active;
/// use simlsh::SignatureMatrix;
///
/// let sigs = SignatureMatrix::from_parts(64, vec![0u64, 0, 0, 1]).unwrap();
/// let mut pairs = Vec::new();
/// let n = self_join_active(&sigs, 1, &[1, 2], |p| pairs.push((p.i, p.j))).unwrap();
/// assert_eq!((n, pairs), (1, vec![(0, 3)]));
/// let rule = Featureless::of_codes(&sigs); // every all-zero code: rows 0, 1 and 2
/// assert_eq!(self_join_active(&sigs, 1, rule.stored(), |_| {}).unwrap(), 0);
/// ```
///
/// # Errors
/// As [`self_join`]; [`Error::InvalidParameter`] if `featureless` is not increasing or names
/// a row beyond `sigs`.
pub fn self_join_active<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    r: u32,
    featureless: &[u32],
    mut sink: impl FnMut(Pair),
) -> Result<u64> {
    let active = with_features_flags(sigs.len(), featureless)?;
    let mut n = 0u64;
    self_join_map(sigs, r, Some(&active), Some, |p| {
        n += 1;
        sink(p);
    })?;
    Ok(n)
}

/// The exact self-join, general form: the pairs within radius `r` of the rows marked in
/// `active` (all if `None`), each passed through `map` in the worker threads; the kept results
/// go to `sink` as they are found, a bounded batch at a time (at most [`WINDOW_PAIRS`] pairs
/// held, whatever the radius), in an order that does not depend on the number of threads.
pub(crate) fn self_join_map<S, T, M, K>(
    sigs: &SignatureMatrix<S>,
    r: u32,
    active: Option<&[bool]>,
    map: M,
    mut sink: K,
) -> Result<()>
where
    S: AsRef<[u64]> + Sync,
    T: Send,
    M: Fn(Pair) -> Option<T> + Sync,
    K: FnMut(T),
{
    let ids = active_rows(sigs.len(), active)?;
    if ids.len() < 2 {
        return Ok(());
    }
    let bits = sigs.bits();
    let plan = self_join_plan(bits, r, ids.len())?;
    let layout = Layout::new(bits, r, &plan.levels);
    for t in 0..layout.tables.len() {
        join_table(sigs.as_slice(), &ids, &layout, t, r, &map, &mut sink);
    }
    Ok(())
}

/// The design [`self_join`] uses for `n` rows of `bits` bits at radius `r`: among the
/// planner's designs (see [`crate::index::permuted_tables::design`]), the one of least
/// [`Plan::join_cost`] (per table, 8 units per row for the grouping, plus the expected pairs
/// sharing a key). For 64-bit codes at radius 3 and a million rows: 4 blocks of 16 bits,
/// each table keyed on one block.
///
/// ```
/// let p = simlsh::join::self_join_plan(64, 3, 1_000_000).unwrap();
/// assert_eq!((p.levels, p.tables, p.key_bits_min), (vec![4], 4, 16));
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `bits` is 0.
pub fn self_join_plan(bits: usize, r: u32, n: usize) -> Result<Plan> {
    join_plan(bits, r, n as u64).ok_or_else(|| Error::param("bits", "must be at least 1"))
}

/// The pairs table `t` reports among the rows `ids`, through `map`, passed to `sink`.
///
/// The rows are grouped by the table's key: a counting sort on the top `b ≤ 8` bits of their
/// key words, computed straight from the rows (one pass to count, one to scatter), then each
/// of the `2^b` runs, small enough to stay in cache, is sorted on the next key bits (up to
/// `log2 N` bits in all) and, for longer keys, sorted and cut into equal keys. The runs are
/// processed in parallel and their pairs passed on in run order; a run whose buckets could
/// report more than its share (`2^-b`) of [`WINDOW_PAIRS`] is kept sorted instead and checked
/// afterwards, in its turn, bucket window by bucket window (and a big group tile window by
/// tile window), so that at most about [`WINDOW_PAIRS`] pairs are held at once.
fn join_table<T: Send, M: Fn(Pair) -> Option<T> + Sync, K: FnMut(T)>(
    rows: &[u64],
    ids: &[u32],
    layout: &Layout,
    t: usize,
    r: u32,
    map: &M,
    sink: &mut K,
) {
    let tl = &layout.tables[t];
    let w = layout.words();
    let n = ids.len();
    let key_of = |i: usize| {
        if w == 1 {
            tl.keyword1(rows[i])
        } else {
            tl.keyword(&rows[i * w..(i + 1) * w])
        }
    };
    let ctx = GroupCtx {
        rows,
        layout,
        t,
        r,
        w,
        map,
    };
    let p = tl.key_bits;
    if p == 0 {
        let all: Vec<(u64, u32)> = ids.iter().map(|&i| (key_of(i as usize), i)).collect();
        ctx.group_each(&all, sink);
        return;
    }
    let b = p.min(n.ilog2().clamp(1, 20));
    let b1 = b.min(8);
    let b2 = b - b1;
    let shift1 = 64 - b1;
    let keys: Vec<u64> = ids.iter().map(|&i| key_of(i as usize)).collect();
    let mut top = vec![0usize; (1 << b1) + 1];
    for &k in &keys {
        top[(k >> shift1) as usize + 1] += 1;
    }
    for i in 1..top.len() {
        top[i] += top[i - 1];
    }
    let mut next = top[..1 << b1].to_vec();
    let mut scattered = vec![(0u64, 0u32); n];
    for (&i, &k) in ids.iter().zip(&keys) {
        let slot = &mut next[(k >> shift1) as usize];
        scattered[*slot] = (k, i);
        *slot += 1;
    }
    drop(keys);
    // Each run, in parallel: sorted on its next key bits (it stays in cache), then its groups
    // checked, unless its buckets could report more than its share of a window's pairs: such a
    // run is passed on sorted and streamed below, in its turn.
    let split = p > b;
    let share = WINDOW_PAIRS >> b1;
    let per_run: Vec<Run<T>> = (0..1usize << b1)
        .into_par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(scratch, offsets): &mut (Vec<(u64, u32)>, Vec<usize>), h| {
                let run = &scattered[top[h]..top[h + 1]];
                if run.len() < 2 {
                    return Run::Pairs(Vec::new());
                }
                scratch.clear();
                offsets.clear();
                if b2 == 0 {
                    scratch.extend_from_slice(run);
                    offsets.extend([0, run.len()]);
                } else {
                    scratch.resize(run.len(), (0, 0));
                    offsets.resize((1 << b2) + 1, 0);
                    counting_sort(run, 64 - b, (1 << b2) - 1, scratch, offsets);
                }
                let bound: usize = offsets.windows(2).map(|w| pairs_of(w[1] - w[0])).sum();
                if bound > share {
                    let lens = offsets.windows(2).map(|w| w[1] - w[0]).collect();
                    return Run::Sorted(scratch.clone(), lens);
                }
                let mut out = Vec::new();
                for win in offsets.windows(2) {
                    if win[1] - win[0] >= 2 {
                        ctx.bucket(&mut scratch[win[0]..win[1]], split, &mut |g| {
                            ctx.group(g, &mut out)
                        });
                    }
                }
                Run::Pairs(out)
            },
        )
        .collect();
    drop(scattered);
    for run in per_run {
        match run {
            Run::Pairs(pairs) => pairs.into_iter().for_each(&mut *sink),
            Run::Sorted(mut entries, lens) => {
                let mut buckets: Vec<&mut [(u64, u32)]> =
                    split_lens(&mut entries, lens.into_iter())
                        .into_iter()
                        .filter(|b| b.len() >= 2)
                        .collect();
                ctx.buckets_each(&mut buckets, split, sink);
            }
        }
    }
}

/// What a bucket's groups are passed to (entries `(key, row)` sharing the table's key).
type GroupFn<'a> = dyn FnMut(&[(u64, u32)]) + 'a;

/// A run of [`join_table`] as its parallel pass leaves it: its pairs, or, when they could be
/// too many to hold, its entries sorted into buckets (of the lengths given), to be streamed.
enum Run<T> {
    Pairs(Vec<T>),
    Sorted(Vec<(u64, u32)>, Vec<usize>),
}

/// The pairs of `len` rows: `len·(len − 1)/2`, the most a group of them can report.
fn pairs_of(len: usize) -> usize {
    len.saturating_mul(len.saturating_sub(1)) / 2
}

/// `data` cut into consecutive slices of the lengths `lens` (which sum to at most its length).
fn split_lens<X>(data: &mut [X], lens: impl Iterator<Item = usize>) -> Vec<&mut [X]> {
    let mut out = Vec::new();
    let mut rest = data;
    for len in lens {
        let (part, tail) = rest.split_at_mut(len);
        out.push(part);
        rest = tail;
    }
    out
}

/// What the pair checks of one table need.
struct GroupCtx<'a, M> {
    rows: &'a [u64],
    layout: &'a Layout,
    t: usize,
    r: u32,
    w: usize,
    map: &'a M,
}

impl<T: Send, M: Fn(Pair) -> Option<T> + Sync> GroupCtx<'_, M> {
    fn row(&self, i: u32) -> &[u64] {
        &self.rows[i as usize * self.w..][..self.w]
    }

    /// Checks a pair whose key words XOR to `x`, at distance `known` when the caller has it
    /// (the batched scan); pushes it (through the map) if within the radius and this is the
    /// first table sharing its key.
    #[inline(always)]
    fn check(&self, x: u64, a: u32, b: u32, known: Option<u32>, out: &mut Vec<T>) {
        let lower = x.count_ones();
        if lower > self.r {
            return;
        }
        let distance = if self.w == 1 {
            if self.layout.tables[self.t].prior_match1(x) {
                return;
            }
            lower
        } else {
            let (ca, cb) = (self.row(a), self.row(b));
            let d = known.unwrap_or_else(|| hamming::scalar::distance_upto(ca, cb, self.r));
            if d > self.r || self.layout.prior_match(self.t, ca, cb) {
                return;
            }
            d
        };
        if let Some(v) = (self.map)(Pair {
            i: a.min(b),
            j: a.max(b),
            distance,
        }) {
            out.push(v);
        }
    }

    /// Every pair of a small group, compiled with hardware popcount where there is one.
    fn small_group(&self, g: &[(u64, u32)], out: &mut Vec<T>) {
        with_popcnt(SmallGroup { ctx: self, g, out });
    }

    /// The pairs of a run's buckets when they could hold more than [`WINDOW_PAIRS`] pairs:
    /// checked in windows as [`join_table`] checks runs (a bucket too large for a window alone
    /// passes its groups on one by one, a big group tile by tile).
    fn buckets_each(
        &self,
        buckets: &mut [&mut [(u64, u32)]],
        split: bool,
        sink: &mut impl FnMut(T),
    ) {
        let mut k = 0;
        while k < buckets.len() {
            if pairs_of(buckets[k].len()) > WINDOW_PAIRS {
                self.bucket(buckets[k], split, &mut |g| self.group_each(g, sink));
                k += 1;
                continue;
            }
            let (start, mut total) = (k, 0usize);
            while k < buckets.len() && pairs_of(buckets[k].len()) <= WINDOW_PAIRS - total {
                total += pairs_of(buckets[k].len());
                k += 1;
            }
            let per_bucket: Vec<Vec<T>> = buckets[start..k]
                .par_iter_mut()
                .map(|bucket| {
                    let mut out = Vec::new();
                    self.bucket(bucket, split, &mut |g| self.group(g, &mut out));
                    out
                })
                .collect();
            per_bucket.into_iter().flatten().for_each(&mut *sink);
        }
    }

    /// The groups of a bucket of entries sharing the top key bits: the bucket, or, when the
    /// key is longer (`split`), the bucket sorted and cut into runs of equal keys.
    fn bucket(&self, entries: &mut [(u64, u32)], split: bool, on_group: &mut GroupFn<'_>) {
        if !split {
            on_group(entries);
            return;
        }
        entries.sort_unstable();
        let prefix = self.layout.tables[self.t].prefix;
        for g in entries.chunk_by(|x, y| (x.0 ^ y.0) & prefix == 0) {
            if g.len() >= 2 {
                on_group(g);
            }
        }
    }

    /// Every pair of a group of entries sharing the key.
    fn group(&self, g: &[(u64, u32)], out: &mut Vec<T>) {
        if g.len() >= BIG_GROUP {
            self.big_group(g, &mut |pairs| out.extend(pairs));
        } else {
            self.small_group(g, out);
        }
    }

    /// [`group`](Self::group), passing the pairs to `sink` in bounded batches.
    fn group_each(&self, g: &[(u64, u32)], sink: &mut impl FnMut(T)) {
        if g.len() >= BIG_GROUP {
            self.big_group(g, &mut |pairs| pairs.into_iter().for_each(&mut *sink));
        } else {
            let mut out = Vec::new();
            self.small_group(g, &mut out);
            out.into_iter().for_each(sink);
        }
    }

    /// Every pair of a big group: its codes gathered (key words for one-word codes, which
    /// have the same distances) and compared tile by tile with the batched scan kernel, the
    /// tiles of a window in parallel; each tile's pairs go to `emit`, in tile order.
    fn big_group(&self, g: &[(u64, u32)], emit: &mut dyn FnMut(Vec<T>)) {
        let w = self.w;
        let codes: Vec<u64> = if w == 1 {
            g.iter().map(|&(k, _)| k).collect()
        } else {
            g.iter()
                .flat_map(|&(_, i)| self.row(i).iter().copied())
                .collect()
        };
        let rows = (TILE_PAIRS / g.len()).clamp(1, GROUP_TILE);
        let tiles = g.len().div_ceil(rows);
        let window =
            (WINDOW_PAIRS / (rows * g.len())).clamp(1, 4 * rayon::current_num_threads().max(1));
        for first in (0..tiles).step_by(window) {
            let part: Vec<Vec<T>> = (first..(first + window).min(tiles))
                .into_par_iter()
                .map(|tile| {
                    let a0 = tile * rows;
                    let a1 = (a0 + rows).min(g.len());
                    let mut out = Vec::new();
                    let queries = &codes[a0 * w..a1 * w];
                    hamming::scan_radius(queries, &codes[a0 * w..], w, self.r, |qa, cb, d| {
                        let (a, b) = (a0 + qa, a0 + cb);
                        if b > a {
                            self.check(g[a].0 ^ g[b].0, g[a].1, g[b].1, Some(d), &mut out);
                        }
                    })
                    .expect("shapes are consistent");
                    out
                })
                .collect();
            part.into_iter().for_each(&mut *emit);
        }
    }
}

/// The pairs of a small group, as a [`PopcntBody`].
struct SmallGroup<'c, 'a, M, T> {
    ctx: &'c GroupCtx<'a, M>,
    g: &'c [(u64, u32)],
    out: &'c mut Vec<T>,
}

impl<T: Send, M: Fn(Pair) -> Option<T> + Sync> PopcntBody for SmallGroup<'_, '_, M, T> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        for (a, &(ka, ia)) in self.g.iter().enumerate() {
            for &(kb, ib) in &self.g[a + 1..] {
                self.ctx.check(ka ^ kb, ia, ib, None, self.out);
            }
        }
    }
}

/// Every stored code of `index` within distance `r` of each row of `queries`, as
/// [`Match`]es sorted by `(query, distance, id)`: a batch radius search, in parallel.
///
/// # Errors
/// [`Error::BitsMismatch`] if the widths differ; [`Error::InvalidParameter`] for more than
/// `2^32` queries; the index's errors.
pub fn join_index<S: AsRef<[u64]>>(
    index: &dyn HammingIndex,
    queries: &SignatureMatrix<S>,
    r: u32,
) -> Result<Vec<Match>> {
    if index.bits() != queries.bits() {
        return Err(Error::BitsMismatch {
            expected: index.bits(),
            got: queries.bits(),
        });
    }
    if u32::try_from(queries.len()).is_err() {
        return Err(Error::param("queries", "more than 2^32 rows"));
    }
    let hits = index.radius_batch(queries.as_slice(), r)?;
    Ok(hits
        .into_iter()
        .enumerate()
        .flat_map(|(q, hs)| {
            hs.into_iter().map(move |h| Match {
                query: q as u32,
                distance: h.distance,
                id: h.id,
            })
        })
        .collect())
}
