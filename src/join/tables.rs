//! Manku's permuted tables for a distributed radius join: the per-document table keys and the
//! per-partition step, the radius counterpart of [`Banding::keys`](super::Banding::keys) and
//! [`band_partition`](super::band_partition).
//!
//! A [`TableKeys`] holds a design of permuted tables (see [`crate::index::permuted_tables::design`]):
//! the `f` signature bits cut into blocks, each table keyed on a combination of blocks, so that
//! two signatures within Hamming distance `k` agree on the whole key of at least one table
//! (pigeonhole). A job emits [`TableKeys::keys`] (one `(table, key)` per table) for each
//! document, groups the rows by `(table, key)`, and calls [`table_partition`] once per table
//! present in a partition: the pairs within the radius sharing the key, each reported only by
//! the **first table whose key it shares**, so that the union over the partitions is
//! [`self_join`](super::self_join)'s result, each pair once, with no `distinct`.
//!
//! Manku, Jain and Das Sarma's setting for 8·10⁹ 64-bit fingerprints at `k = 3` is 20 tables
//! (`levels = [6]`: six blocks of 10 or 11 bits, keys of three blocks, 31 to 33 bits). With
//! [`TableKeysBuilder::rows`] the design is the one the single-machine join plans for that
//! many rows.
//!
//! **Hot keys.** As in [`band_partition`](super::band_partition), a run of more than
//! [`TableKeysBuilder::max_group`] rows sharing a key is skipped and returned as a
//! [`CappedGroup`] (its `band` field is the table); a pair is then reported by the first table
//! it agrees on in a run that was not capped, when `capped` lists the runs capped over the
//! whole data set. By default nothing is capped: the result is exact.

use super::banded::{CappedGroup, IdPair};
use crate::error::{Error, Result};
use crate::hamming;
use crate::index::permuted_tables::{Layout, Plan, join_plan};
use crate::signature::{SignatureMatrix, words_for};

/// Runs at least this long are compared with the batched scan kernel.
const BIG_RUN: usize = 48;

/// Rows per tile of a big run's scan.
const RUN_TILE: usize = 64;

/// The Hamming distance of two rows of equal length.
#[inline]
fn distance(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// A design of permuted tables with its radius and hot-key cap, for a distributed radius
/// join. Built by [`TableKeys::builder`].
///
/// ```
/// use simlsh::join::TableKeys;
///
/// // Manku's 20 tables for 64-bit fingerprints at distance 3: keys of 31 to 33 bits.
/// let t = TableKeys::builder().bits(64).radius(3).levels(vec![6]).build()?;
/// assert_eq!(t.tables(), 20);
/// assert_eq!((0..20).map(|k| t.key_bits(k)).min(), Some(31));
/// let (a, b) = ([0x0123_4567_89ab_cdefu64], [0x0123_4567_89ab_cdefu64 ^ 0b101]);
/// // Within the radius: some table's key agrees (pigeonhole); far apart: none does.
/// assert!(t.first_agreeing_table(&a, &b).is_some());
/// assert_eq!(t.first_agreeing_table(&a, &[!a[0]]), None);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TableKeys {
    bits: usize,
    radius: u32,
    levels: Vec<usize>,
    max_group: usize,
    layout: Layout,
}

/// Builder of [`TableKeys`]: `bits` and `radius` are required, and the design (`levels`, or
/// `rows` for the single-machine join's plan; default: the plan for 2^20 rows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableKeysBuilder {
    bits: usize,
    radius: u32,
    levels: Option<Vec<usize>>,
    rows: Option<u64>,
    max_group: Option<usize>,
}

impl TableKeysBuilder {
    /// Signature width `f`.
    pub fn bits(mut self, bits: usize) -> Self {
        self.bits = bits;
        self
    }

    /// The Hamming radius `k` (inclusive) of the join.
    pub fn radius(mut self, k: u32) -> Self {
        self.radius = k;
        self
    }

    /// The design: blocks per level (see [`crate::index::permuted_tables::design`]), e.g. `[6]` for
    /// Manku's 20 tables at `k = 3`; `[]` is one table with an empty key (every pair
    /// compared).
    pub fn levels(mut self, levels: Vec<usize>) -> Self {
        self.levels = Some(levels);
        self
    }

    /// The design [`self_join`](super::self_join) plans for this many rows (ignored when
    /// `levels` is given).
    pub fn rows(mut self, n: u64) -> Self {
        self.rows = Some(n);
        self
    }

    /// Skip and report runs of equal keys longer than this (default: no cap, exact).
    pub fn max_group(mut self, rows: usize) -> Self {
        self.max_group = Some(rows);
        self
    }

    /// Validates the design.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `bits` is 0, a level has no more blocks than the
    /// radius, the design has more than [`MAX_TABLES`](crate::index::permuted_tables::MAX_TABLES)
    /// tables, or `max_group < 2`.
    pub fn build(self) -> Result<TableKeys> {
        if self.bits == 0 {
            return Err(Error::param("bits", "must be at least 1"));
        }
        let levels = match self.levels {
            Some(l) => l,
            None => {
                join_plan(self.bits, self.radius, self.rows.unwrap_or(1 << 20))
                    .ok_or_else(|| Error::param("bits", "must be at least 1"))?
                    .levels
            }
        };
        Plan::for_levels(self.bits, self.radius, 0, &levels)?;
        let max_group = self.max_group.unwrap_or(usize::MAX);
        if max_group < 2 {
            return Err(Error::param("max_group", "must be at least 2"));
        }
        let layout = Layout::new(self.bits, self.radius, &levels);
        Ok(TableKeys {
            bits: self.bits,
            radius: self.radius,
            levels,
            max_group,
            layout,
        })
    }
}

impl TableKeys {
    /// A builder.
    pub fn builder() -> TableKeysBuilder {
        TableKeysBuilder::default()
    }

    /// Signature width `f`.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// The radius `k`.
    pub fn radius(&self) -> u32 {
        self.radius
    }

    /// The design's blocks per level.
    pub fn levels(&self) -> &[usize] {
        &self.levels
    }

    /// The hot-key cap (`usize::MAX` when there is none).
    pub fn max_group(&self) -> usize {
        self.max_group
    }

    /// Number of tables.
    pub fn tables(&self) -> usize {
        self.layout.tables.len()
    }

    /// Length of table `t`'s key, bits (at most 64; 0 for the empty design).
    ///
    /// # Panics
    /// If `t >= tables()`.
    pub fn key_bits(&self, t: usize) -> u32 {
        self.layout.tables[t].key_bits
    }

    /// The key of table `t` for the signature `sig` (`words_for(f)` words): its key bits in
    /// increasing bit order, the first one most significant, as a number of
    /// [`key_bits`](Self::key_bits) bits.
    ///
    /// # Panics
    /// If `t >= tables()` or `sig` is shorter than `words_for(f)` words.
    #[inline]
    pub fn key(&self, t: usize, sig: &[u64]) -> u64 {
        let tl = &self.layout.tables[t];
        if tl.key_bits == 0 {
            0
        } else {
            tl.keyword(sig) >> (64 - tl.key_bits)
        }
    }

    /// The `(table, key)` of every table for `sig`, in table order: the rows a distributed job
    /// emits per document before grouping by `(table, key)`.
    ///
    /// # Panics
    /// As [`key`](Self::key).
    pub fn keys<'a>(&'a self, sig: &'a [u64]) -> impl Iterator<Item = (u32, u64)> + 'a {
        (0..self.tables()).map(move |t| (t as u32, self.key(t, sig)))
    }

    /// The first table whose key `a` and `b` share, if any (always one when they are within
    /// the radius).
    ///
    /// # Panics
    /// As [`key`](Self::key).
    pub fn first_agreeing_table(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        self.agree_before(self.tables(), a, b, |_| true)
    }

    /// The first table `< below` whose key `a` and `b` share and that `accept`s.
    #[inline]
    fn agree_before(
        &self,
        below: usize,
        a: &[u64],
        b: &[u64],
        mut accept: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        self.layout.tables[..below]
            .iter()
            .enumerate()
            .find(|&(s, tl)| (tl.keyword(a) ^ tl.keyword(b)) & tl.prefix == 0 && accept(s))
            .map(|(s, _)| s)
    }

    /// Whether the pair `(a, b)` was already reported by a table before `t`: an earlier table
    /// shares its key in a run that was not capped.
    #[inline]
    fn reported_before(&self, t: usize, a: &[u64], b: &[u64], capped: &[(u32, u64)]) -> bool {
        if capped.is_empty() {
            self.agree_before(t, a, b, |_| true).is_some()
        } else {
            self.agree_before(t, a, b, |s| {
                capped.binary_search(&(s as u32, self.key(s, a))).is_err()
            })
            .is_some()
        }
    }
}

/// The pairs that table `t` reports among a partition of rows, given as the caller's `ids`
/// and their signatures `sigs` (row-major, `words_for(f)` words per row): the per-partition
/// step of a distributed radius join.
///
/// The rows may hold any keys of the table, in any order: they are grouped by their key here,
/// and a pair goes to `sink` (as `a < b` by id) when it shares the key, lies within the
/// radius, and shares no earlier table's key in a run that was not capped; `capped` lists the
/// runs capped over the whole data set (empty when there are none). The union over every
/// table and partition is then [`self_join`](super::self_join)'s result (by ids), each pair
/// once. Runs of this partition longer than the cap are skipped and returned. Sequential: the
/// job runs partitions in parallel.
///
/// ```
/// use simlsh::join::{IdPair, TableKeys, table_partition};
///
/// let t = TableKeys::builder().bits(64).radius(1).levels(vec![2]).build()?;
/// let sigs = [0xffu64, 0xfe, 0xff00_0000_0000_0000];
/// // Ids 7 and 3 are 1 bit apart: the first table whose key agrees on them reports them.
/// let k = t.first_agreeing_table(&sigs[..1], &sigs[1..2]).unwrap();
/// let mut pairs = Vec::new();
/// let capped = table_partition(&t, k, &[7, 3, 9], &sigs, &[], |p| pairs.push(p))?;
/// assert_eq!(pairs, vec![IdPair { i: 3, j: 7, distance: 1 }]);
/// assert!(capped.is_empty());
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `t >= tables()`; [`Error::LengthMismatch`] if `sigs` does
/// not hold one signature per id; [`Error::PaddingBits`] if a row has bits set beyond `f`.
pub fn table_partition(
    keys: &TableKeys,
    t: usize,
    ids: &[u64],
    sigs: &[u64],
    capped: &[CappedGroup],
    mut sink: impl FnMut(IdPair),
) -> Result<Vec<CappedGroup>> {
    if t >= keys.tables() {
        return Err(Error::param(
            "table",
            format!("table {t} of a design with {} tables", keys.tables()),
        ));
    }
    let sigs = SignatureMatrix::from_parts(keys.bits, sigs)?;
    if sigs.len() != ids.len() {
        return Err(Error::LengthMismatch {
            what: "signatures vs ids",
            left: sigs.len(),
            right: ids.len(),
        });
    }
    let mut capped: Vec<(u32, u64)> = capped.iter().map(|g| (g.band, g.key)).collect();
    capped.sort_unstable();
    capped.dedup();
    // Entries (key, id, row) sorted by key then id: runs come out in id order whatever the
    // input order.
    let mut entries: Vec<(u64, u64, usize)> = (0..ids.len())
        .map(|r| (keys.key(t, sigs.row(r)), ids[r], r))
        .collect();
    entries.sort_unstable();
    let w = words_for(keys.bits);
    let r = keys.radius;
    let mut mine = Vec::new();
    let mut codes: Vec<u64> = Vec::new();
    for run in entries.chunk_by(|x, y| x.0 == y.0) {
        if run.len() < 2 {
            continue;
        }
        if run.len() > keys.max_group {
            mine.push(CappedGroup {
                band: t as u32,
                key: run[0].0,
                rows: run.len(),
            });
            continue;
        }
        let mut check = |p: usize, q: usize, d: u32| {
            let (ra, rb) = (sigs.row(run[p].2), sigs.row(run[q].2));
            if !keys.reported_before(t, ra, rb, &capped) {
                sink(IdPair {
                    i: run[p].1.min(run[q].1),
                    j: run[p].1.max(run[q].1),
                    distance: d,
                });
            }
        };
        if run.len() < BIG_RUN {
            for p in 0..run.len() {
                for q in p + 1..run.len() {
                    let d = distance(sigs.row(run[p].2), sigs.row(run[q].2));
                    if d <= r {
                        check(p, q, d);
                    }
                }
            }
            continue;
        }
        // A big run: its codes gathered and compared tile by tile with the batched kernel;
        // pairs in the order of the rows (the kernel's order is its tiling's).
        codes.clear();
        for e in run {
            codes.extend_from_slice(sigs.row(e.2));
        }
        let mut found = Vec::new();
        for a0 in (0..run.len()).step_by(RUN_TILE) {
            let a1 = (a0 + RUN_TILE).min(run.len());
            hamming::scan_radius(
                &codes[a0 * w..a1 * w],
                &codes[a0 * w..],
                w,
                r,
                |qa, cb, d| {
                    let (p, q) = (a0 + qa, a0 + cb);
                    if q > p {
                        found.push((p, q, d));
                    }
                },
            )?;
        }
        found.sort_unstable();
        for (p, q, d) in found {
            check(p, q, d);
        }
    }
    Ok(mine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::join::self_join;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use std::collections::BTreeSet;

    /// `n` random codes, the last half near copies (up to `flips` bits) of earlier ones.
    fn codes(rng: &mut Xoshiro256PlusPlus, n: usize, bits: usize, flips: u32) -> Vec<u64> {
        let w = words_for(bits);
        let mut c: Vec<u64> = (0..n * w).map(|_| rng.random()).collect();
        if !bits.is_multiple_of(64) {
            for r in 0..n {
                c[r * w + w - 1] &= (1u64 << (bits % 64)) - 1;
            }
        }
        for r in n / 2..n {
            let src = rng.random_range(0..n / 2);
            let row: Vec<u64> = c[src * w..(src + 1) * w].to_vec();
            c[r * w..(r + 1) * w].copy_from_slice(&row);
            for _ in 0..rng.random_range(0..=flips) {
                let b = rng.random_range(0..bits);
                c[r * w + b / 64] ^= 1 << (b % 64);
            }
        }
        c
    }

    /// Runs the distributed join: keys emitted, rows grouped by `(table, key)` into
    /// `partitions` by a hash, each partition's tables run apart.
    fn distributed(
        t: &TableKeys,
        ids: &[u64],
        sigs: &[u64],
        partitions: u64,
        capped: &[CappedGroup],
    ) -> (Vec<IdPair>, Vec<CappedGroup>) {
        let w = words_for(t.bits());
        let mut parts: Vec<Vec<(u32, u64, usize)>> = vec![Vec::new(); partitions as usize];
        for (r, _) in ids.iter().enumerate() {
            for (tb, key) in t.keys(&sigs[r * w..(r + 1) * w]) {
                let h = crate::rng::mix64(key ^ u64::from(tb) << 58) % partitions;
                parts[h as usize].push((tb, key, r));
            }
        }
        let (mut pairs, mut caps) = (Vec::new(), Vec::new());
        for part in parts {
            let tabs: BTreeSet<u32> = part.iter().map(|e| e.0).collect();
            for tb in tabs {
                let rows: Vec<usize> = part.iter().filter(|e| e.0 == tb).map(|e| e.2).collect();
                let pid: Vec<u64> = rows.iter().map(|&r| ids[r]).collect();
                let psig: Vec<u64> = rows
                    .iter()
                    .flat_map(|&r| sigs[r * w..(r + 1) * w].iter().copied())
                    .collect();
                let c = table_partition(t, tb as usize, &pid, &psig, capped, |p| pairs.push(p))
                    .unwrap();
                caps.extend(c);
            }
        }
        pairs.sort_unstable();
        caps.sort_unstable();
        (pairs, caps)
    }

    #[test]
    fn the_union_over_partitions_is_the_self_join() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for &(bits, r, ref levels, n) in &[
            (64usize, 3u32, vec![6usize], 400usize),
            (64, 3, vec![4], 300),
            (64, 2, vec![4, 3], 300),
            (130, 5, vec![8], 200),
            (256, 6, vec![], 120),
            (20, 2, vec![4], 300),
        ] {
            let sigs = codes(&mut rng, n, bits, r + 1);
            let t = TableKeys::builder()
                .bits(bits)
                .radius(r)
                .levels(levels.clone())
                .build()
                .unwrap();
            let m = SignatureMatrix::from_parts(bits, sigs.clone()).unwrap();
            // Ids scrambled: the pairs come out by id.
            let ids: Vec<u64> = (0..n as u64).map(|i| i * 7919 % 100_003 + 5).collect();
            let mut want: Vec<IdPair> = self_join(&m, r)
                .unwrap()
                .into_iter()
                .map(|p| {
                    let (a, b) = (ids[p.i as usize], ids[p.j as usize]);
                    IdPair {
                        i: a.min(b),
                        j: a.max(b),
                        distance: p.distance,
                    }
                })
                .collect();
            want.sort_unstable();
            assert!(!want.is_empty());
            for parts in [1, 3, 8] {
                let (got, caps) = distributed(&t, &ids, &sigs, parts, &[]);
                assert_eq!(
                    got, want,
                    "bits {bits} r {r} {levels:?}, {parts} partitions"
                );
                assert!(caps.is_empty());
            }
        }
    }

    #[test]
    fn the_first_table_rule_matches_the_keys() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let t = TableKeys::builder()
            .bits(100)
            .radius(3)
            .levels(vec![5, 4])
            .build()
            .unwrap();
        assert_eq!(t.tables(), 40);
        for _ in 0..500 {
            let a: Vec<u64> = vec![rng.random(), rng.random::<u64>() & ((1 << 36) - 1)];
            let mut b = a.clone();
            for _ in 0..rng.random_range(0..6) {
                let k = rng.random_range(0..100);
                b[k / 64] ^= 1 << (k % 64);
            }
            let want = (0..40).find(|&k| t.key(k, &a) == t.key(k, &b));
            assert_eq!(t.first_agreeing_table(&a, &b), want);
            if distance(&a, &b) <= 3 {
                assert!(want.is_some(), "pigeonhole");
            }
        }
    }

    #[test]
    fn capped_runs_are_skipped_and_their_pairs_found_by_later_tables() {
        // 40 copies of one code with one bit flipped each, and some random codes: every table's
        // run of the copies is capped at 30 rows, except where the flips split it.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let base: u64 = rng.random();
        let mut sigs: Vec<u64> = (0..40).map(|i| base ^ (1 << (i % 64))).collect();
        sigs.extend((0..60).map(|_| rng.random::<u64>()));
        let ids: Vec<u64> = (0..100).collect();
        let t = TableKeys::builder()
            .bits(64)
            .radius(2)
            .levels(vec![4])
            .max_group(30)
            .build()
            .unwrap();
        // The capped runs over the whole data set, then the join with them known.
        let (_, caps) = distributed(&t, &ids, &sigs, 1, &[]);
        assert!(!caps.is_empty());
        let (got, caps2) = distributed(&t, &ids, &sigs, 4, &caps);
        assert_eq!(caps2, caps);
        // Oracle: a pair is reported iff within the radius and some table shares its key in
        // an uncapped run.
        let capped: BTreeSet<(u32, u64)> = caps.iter().map(|g| (g.band, g.key)).collect();
        let mut want = Vec::new();
        for i in 0..100usize {
            for j in i + 1..100 {
                let d = (sigs[i] ^ sigs[j]).count_ones();
                let shared = (0..t.tables()).any(|k| {
                    let key = t.key(k, &[sigs[i]]);
                    key == t.key(k, &[sigs[j]]) && !capped.contains(&(k as u32, key))
                });
                if d <= 2 && shared {
                    want.push(IdPair {
                        i: i as u64,
                        j: j as u64,
                        distance: d,
                    });
                }
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let b = || TableKeys::builder().bits(64).radius(3);
        assert!(b().levels(vec![3]).build().is_err());
        assert!(TableKeys::builder().radius(3).build().is_err());
        assert!(b().levels(vec![6]).max_group(1).build().is_err());
        let t = b().levels(vec![4]).build().unwrap();
        assert!(table_partition(&t, 4, &[1], &[0], &[], |_| {}).is_err());
        assert!(table_partition(&t, 0, &[1, 2], &[0], &[], |_| {}).is_err());
        let planned = b().rows(1 << 34).build().unwrap();
        assert_eq!(planned.tables(), 20, "Manku's design for 2^34 rows");
    }
}
