//! Joins of signatures by Hamming distance: the all-pairs self-join, the join of a batch of
//! queries with an index, connected components of the pair graph, and the k-NN graph.
//!
//! [`self_join`] finds every unordered pair of rows within distance `r` with Manku's
//! permuted tables (see [`crate::index::manku`]), built for the join alone: for each table,
//! the rows are grouped by the table's key (a counting sort on the key's top bits) and every
//! pair inside a group is checked. A pair is reported only by the first table whose key it
//! shares, so there are no duplicates to remove. The design is planned for the join's cost
//! (per table, one pass over the rows plus the pairs sharing a key): for 64-bit codes and
//! `r = 3` on a million rows it is the pigeonhole design of 4 blocks of 16 bits.

mod banded;
mod graph;
mod scheme;
mod tables;

pub(crate) use banded::{BIG_RUN, banded_join_map};
pub use banded::{
    BandStats, Banding, BandingBuilder, CandidateSample, CappedGroup, DEFAULT_MAX_GROUP, IdPair,
    band_partition, banded_join, banded_join_each, sample_candidates,
};
pub use graph::{
    LeaderOrder, UnionFind, clusters, knn_graph, knn_graph_rows, knn_graph_with, leader_clusters,
};
pub use scheme::{PartitionPairs, Pass, Scheme, partition};
pub use tables::{TableKeys, TableKeysBuilder, table_partition};

use rayon::prelude::*;

use crate::cpu::{PopcntBody, with_popcnt};
use crate::error::{Error, Result};
use crate::hamming;
use crate::index::manku::{Layout, Plan, counting_sort, join_plan};
use crate::index::{HammingIndex, Id};
use crate::signature::SignatureMatrix;

/// Groups at least this large are checked with the batched scan kernels, in parallel.
const BIG_GROUP: usize = 256;

/// Rows per parallel task in a big group.
const GROUP_TILE: usize = 64;

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

/// [`self_join`] streaming: each pair goes to `sink` as its table is done (table by table,
/// in an order that does not depend on the number of threads), so no pair list is held;
/// returns the number of pairs.
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

/// [`self_join_each`] restricted to the rows marked in `active`: pairs involving an inactive
/// row are never formed (e.g. documents without features, whose all-zero signatures would
/// pair with each other at distance 0). Returns the number of pairs.
///
/// ```
/// use simlsh::join::self_join_active;
/// use simlsh::SignatureMatrix;
///
/// let sigs = SignatureMatrix::from_parts(64, vec![0u64, 0, 0, 1]).unwrap();
/// let mut pairs = Vec::new();
/// let n = self_join_active(&sigs, 1, &[true, false, false, true], |p| pairs.push((p.i, p.j))).unwrap();
/// assert_eq!((n, pairs), (1, vec![(0, 3)]));
/// ```
///
/// # Errors
/// As [`self_join`]; [`Error::LengthMismatch`] if `active` has not one flag per row.
pub fn self_join_active<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    r: u32,
    active: &[bool],
    mut sink: impl FnMut(Pair),
) -> Result<u64> {
    let mut n = 0u64;
    self_join_map(sigs, r, Some(active), Some, |p| {
        n += 1;
        sink(p);
    })?;
    Ok(n)
}

/// The exact self-join, general form: the pairs within radius `r` of the rows marked in
/// `active` (all if `None`), each passed through `map` in the worker threads; the kept results
/// go to `sink` table by table, in an order that does not depend on the number of threads.
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
        join_table(sigs.as_slice(), &ids, &layout, t, r, &map)
            .into_iter()
            .for_each(&mut sink);
    }
    Ok(())
}

/// The design [`self_join`] uses for `n` rows of `bits` bits at radius `r`: among the
/// planner's designs (see [`crate::index::manku::design`]), the one of least
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

/// The pairs table `t` reports among the rows `ids`, through `map`.
///
/// The rows are grouped by the table's key: a counting sort on the top `b ≤ 8` bits of their
/// key words, computed straight from the rows (one pass to count, one to scatter), then each
/// of the `2^b` runs, small enough to stay in cache, is sorted on the next key bits (up to
/// `log2 N` bits in all) and, for longer keys, sorted and cut into equal keys. The runs are
/// processed in parallel.
fn join_table<T: Send, M: Fn(Pair) -> Option<T> + Sync>(
    rows: &[u64],
    ids: &[u32],
    layout: &Layout,
    t: usize,
    r: u32,
    map: &M,
) -> Vec<T> {
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
    let mut out = Vec::new();
    if p == 0 {
        let all: Vec<(u64, u32)> = ids.iter().map(|&i| (key_of(i as usize), i)).collect();
        ctx.group(&all, &mut out);
        return out;
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
    let per_run: Vec<Vec<T>> = (0..1usize << b1)
        .into_par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(scratch, offsets): &mut (Vec<(u64, u32)>, Vec<usize>), h| {
                let run = &scattered[top[h]..top[h + 1]];
                let mut out = Vec::new();
                if run.len() < 2 {
                    return out;
                }
                scratch.clear();
                if b2 == 0 {
                    scratch.extend_from_slice(run);
                    ctx.bucket(scratch, p > b, &mut out);
                    return out;
                }
                scratch.resize(run.len(), (0, 0));
                offsets.resize((1 << b2) + 1, 0);
                counting_sort(run, 64 - b, (1 << b2) - 1, scratch, offsets);
                for win in offsets.windows(2) {
                    if win[1] - win[0] >= 2 {
                        ctx.bucket(&mut scratch[win[0]..win[1]], p > b, &mut out);
                    }
                }
                out
            },
        )
        .collect();
    out.extend(per_run.into_iter().flatten());
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

    /// The pairs of a bucket of entries sharing the top key bits: one group, or, when the key
    /// is longer (`split`), the bucket sorted and cut into runs of equal keys.
    fn bucket(&self, entries: &mut [(u64, u32)], split: bool, out: &mut Vec<T>) {
        if !split {
            self.group(entries, out);
            return;
        }
        entries.sort_unstable();
        let prefix = self.layout.tables[self.t].prefix;
        for g in entries.chunk_by(|x, y| (x.0 ^ y.0) & prefix == 0) {
            if g.len() >= 2 {
                self.group(g, out);
            }
        }
    }

    /// Every pair of a group of entries sharing the key.
    fn group(&self, g: &[(u64, u32)], out: &mut Vec<T>) {
        if g.len() >= BIG_GROUP {
            out.extend(self.big_group(g));
        } else {
            self.small_group(g, out);
        }
    }

    /// Every pair of a big group: its codes gathered (key words for one-word codes, which
    /// have the same distances) and compared tile by tile with the batched scan kernel.
    fn big_group(&self, g: &[(u64, u32)]) -> Vec<T> {
        let w = self.w;
        let codes: Vec<u64> = if w == 1 {
            g.iter().map(|&(k, _)| k).collect()
        } else {
            g.iter()
                .flat_map(|&(_, i)| self.row(i).iter().copied())
                .collect()
        };
        let tiles: Vec<Vec<T>> = (0..g.len().div_ceil(GROUP_TILE))
            .into_par_iter()
            .map(|tile| {
                let a0 = tile * GROUP_TILE;
                let a1 = (a0 + GROUP_TILE).min(g.len());
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
        tiles.into_iter().flatten().collect()
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
