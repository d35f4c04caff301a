//! Designing permuted tables: the block layout of every table, Manku's recurrence for the
//! fewest tables reaching a prefix length, and a planner that picks a design for a data size
//! and a memory budget.
//!
//! # Designs
//!
//! A design is a list of *levels* `[r_1, r_2, ...]` for a radius `k` (every `r_i > k`). The
//! `f` signature bits are cut into `r_1` blocks; a table takes `r_1 - k` of them as its key
//! (all `C(r_1, k)` choices). The `k` blocks left over are cut into `r_2` blocks, of which
//! `r_2 - k` more join the key (`C(r_2, k)` choices), and so on: a design has
//! `C(r_1, k) · C(r_2, k) · ...` tables. Two codes within distance `k` differ in at most `k`
//! blocks of each level, so at every level some choice of `r_i - k` blocks holds no
//! difference: at least one table sees the two codes agree on its whole key (pigeonhole).
//!
//! Blocks are contiguous in the order the bits are still to be split (at the first level,
//! bit order): `L` bits are cut into `r` blocks of `ceil(L / r)` bits first, then
//! `floor(L / r)` bits (64 bits into 6 blocks: 11, 11, 11, 11, 10, 10, as in the paper).
//! Fewer bits than blocks give empty blocks, which keeps the pigeonhole argument true (an
//! empty block holds no difference) but wastes tables. Tables are numbered in lexicographic
//! order of their block choices, first level first. The empty design `[]` is one table with
//! an empty key: a sorted linear scan.
//!
//! A table's *key* is its chosen bits in increasing bit order; only the first 64 of them are
//! used (codes wider than 64 bits), so the effective key length is at most 64.
//!
//! # The recurrence
//!
//! Manku, Jain and Das Sarma (2007, section 3.1.2) give the fewest tables `X(f, k, d)` such
//! that every table matches at least `p_min` leading bits, for `2^d` stored codes, with
//! `τ = d − p_min`: `X(f, k, d) = 1` if `d ≤ τ`, else the minimum over `r > k` of
//! `C(r, k) · X(f k / r, k, d − (r − k) f / r)` (block sizes real-valued). [`min_tables`]
//! solves it. The stopping test is `d ≤ τ` (the prefix reaches `p_min`): with it the
//! recurrence reproduces the paper's designs for `f = 64, k = 3, d = 34` (4 tables at
//! `p_min = 16`, 10 at 20 to 25, 16 at 28, 20 at 31 and 32, 35 at 34).
//!
//! # The planner
//!
//! [`plan`] enumerates the empty design, every single-level design `[r]` with at most
//! [`MAX_TABLES`] tables, and the recurrence's design for every `p_min` up to 64; it keeps
//! those within the memory budget and picks the cheapest by the cost model
//! `tables · 64 + expected candidates per query` (in units of one candidate check: a probe
//! is a directory lookup and a few cache misses, worth about 64 sequential candidate
//! checks). For `f = 64, k = 3` this gives 4 tables at `N = 2^20` and 20 tables at
//! `N = 2^34`, as in the paper; a smaller budget gives 16, 10 or 4 tables.

use super::store::dir_bits;
use crate::error::{Error, Result};
use crate::signature::words_for;

/// Largest number of tables a design may have.
pub const MAX_TABLES: usize = 4096;

/// Deepest design (number of levels) the recurrence explores.
const MAX_LEVELS: usize = 6;

/// Cost of one probe (a directory lookup, a few cache misses) in candidate checks; see the
/// module docs.
const PROBE_COST: f64 = 64.0;

/// Cost of putting one code into one table of a self-join (key extraction and a counting
/// sort scatter), in pair checks.
const JOIN_BUILD_COST: f64 = 8.0;

/// A design with its expected figures for `n` stored codes: what [`plan`] returns and what
/// [`PermutedTablesBuilder::plan`](super::PermutedTablesBuilder::plan) takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Signature width `f`.
    pub bits: usize,
    /// Radius `k` the tables answer exactly.
    pub radius: u32,
    /// Number of stored codes the figures are for.
    pub n: u64,
    /// Blocks per level (see the [module documentation](self)); empty for one scan table.
    pub levels: Vec<usize>,
    /// Number of tables, `prod C(r_i, k)`.
    pub tables: usize,
    /// Smallest effective key length (bits, at most 64) over the tables.
    pub key_bits_min: u32,
    /// Largest effective key length over the tables.
    pub key_bits_max: u32,
    /// Expected candidates of one probe, `n · 2^-p`, averaged over the tables (uniform
    /// random codes).
    pub candidates_per_probe: f64,
    /// Expected candidates of a probe of the table with the shortest key.
    pub max_candidates_per_probe: f64,
    /// Expected candidates of one query: the sum over the tables.
    pub candidates_per_query: f64,
    /// Bytes of the index's arrays: per table, a truncated key (`ceil((64 − b) / 8)` bytes,
    /// `b` the directory bits) and a 4-byte id per code plus `2^b + 1` 4-byte offsets (see
    /// [`PermutedTables`](super::PermutedTables)); plus `8 · words + 4` bytes per code for
    /// the codes and their ids when `f > 64`.
    pub bytes: u64,
}

impl Plan {
    /// The figures of the design `levels` for `n` codes of `bits` bits and radius `radius`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `bits` is 0, a level has `r <= radius` blocks, there
    /// are more than [`MAX_TABLES`] tables or more than 6 levels.
    pub fn for_levels(bits: usize, radius: u32, n: u64, levels: &[usize]) -> Result<Plan> {
        check_design(bits, radius, levels)?;
        let sizes = key_sizes(bits, radius, levels);
        let eff: Vec<u32> = sizes.iter().map(|&s| s.min(64) as u32).collect();
        let per_probe: Vec<f64> = eff
            .iter()
            .map(|&p| n as f64 * (-f64::from(p)).exp2())
            .collect();
        let tables = eff.len();
        let per_query: f64 = per_probe.iter().sum();
        let w = words_for(bits) as u64;
        let extra = if w > 1 { n * (8 * w + 4) } else { 0 };
        let table_bytes: u64 = eff
            .iter()
            .map(|&p| {
                let b = dir_bits(p, usize::try_from(n).unwrap_or(usize::MAX));
                let kb = (64 - u64::from(b)).div_ceil(8);
                n.saturating_mul(kb + 4)
                    .saturating_add(((1u64 << b) + 1) * 4)
            })
            .fold(0u64, u64::saturating_add);
        Ok(Plan {
            bits,
            radius,
            n,
            levels: levels.to_vec(),
            tables,
            key_bits_min: eff.iter().copied().min().unwrap_or(0),
            key_bits_max: eff.iter().copied().max().unwrap_or(0),
            candidates_per_probe: per_query / tables as f64,
            max_candidates_per_probe: per_probe.iter().copied().fold(0.0, f64::max),
            candidates_per_query: per_query,
            bytes: table_bytes.saturating_add(8).saturating_add(extra),
        })
    }

    /// Estimated cost of one query in candidate checks: `tables · 64 + candidates_per_query`.
    pub fn query_cost(&self) -> f64 {
        self.tables as f64 * PROBE_COST + self.candidates_per_query
    }

    /// Estimated cost of a self-join of the `n` codes in pair checks: per table, 8 per code
    /// (key extraction and counting sort) plus the expected pairs sharing a key,
    /// `n (n - 1) / 2 · 2^-p`.
    pub fn join_cost(&self) -> f64 {
        let n = self.n as f64;
        let build = self.tables as f64 * n * JOIN_BUILD_COST;
        // candidates_per_query = sum over tables of n 2^-p.
        build + (n - 1.0).max(0.0) / 2.0 * self.candidates_per_query
    }
}

/// Checks a design: `bits >= 1`, every level `r > radius`, at most [`MAX_TABLES`] tables.
pub(crate) fn check_design(bits: usize, radius: u32, levels: &[usize]) -> Result<()> {
    if bits == 0 {
        return Err(Error::param("bits", "must be at least 1"));
    }
    if levels.len() > MAX_LEVELS {
        return Err(Error::param(
            "levels",
            format!("{} levels; at most {MAX_LEVELS}", levels.len()),
        ));
    }
    let mut tables = 1usize;
    for &r in levels {
        if r as u64 <= u64::from(radius) {
            return Err(Error::param(
                "blocks",
                format!(
                    "{r} blocks cannot hold radius {radius}: the pigeonhole needs more blocks than the radius"
                ),
            ));
        }
        tables = binom(r, radius)
            .and_then(|c| tables.checked_mul(c))
            .filter(|&t| t <= MAX_TABLES)
            .ok_or_else(|| {
                Error::param(
                    "blocks",
                    format!(
                        "design {levels:?} at radius {radius} has more than {MAX_TABLES} tables"
                    ),
                )
            })?;
    }
    Ok(())
}

/// `C(n, k)`, or `None` beyond `usize` ([`crate::util::binomial`]).
fn binom(n: usize, k: u32) -> Option<usize> {
    crate::util::binomial(n as u64, u64::from(k)).and_then(|c| usize::try_from(c).ok())
}

/// Sizes of `len` bits cut into `r` blocks: `len % r` blocks of `ceil`, then `floor`.
fn block_sizes(len: usize, r: usize) -> impl Iterator<Item = usize> {
    let (q, extra) = (len / r, len % r);
    (0..r).map(move |b| q + usize::from(b < extra))
}

/// Calls `f` on every `m`-subset of `0..r` (sorted block indices), in lexicographic order.
fn for_each_combination(r: usize, m: usize, mut f: impl FnMut(&[usize])) {
    let mut idx: Vec<usize> = (0..m).collect();
    loop {
        f(&idx);
        // Advance to the next combination.
        let Some(i) = (0..m).rev().find(|&i| idx[i] != i + r - m) else {
            return;
        };
        idx[i] += 1;
        for j in i + 1..m {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

/// Key length (bits, before truncation to 64) of every table of a checked design.
fn key_sizes(bits: usize, radius: u32, levels: &[usize]) -> Vec<usize> {
    fn rec(len: usize, k: usize, levels: &[usize], key: usize, out: &mut Vec<usize>) {
        let Some((&r, rest)) = levels.split_first() else {
            out.push(key);
            return;
        };
        let sizes: Vec<usize> = block_sizes(len, r).collect();
        for_each_combination(r, r - k, |chosen| {
            let add: usize = chosen.iter().map(|&b| sizes[b]).sum();
            rec(len - add, k, rest, key + add, out);
        });
    }
    let mut out = Vec::new();
    rec(bits, radius as usize, levels, 0, &mut out);
    out
}

/// Key bit positions (increasing) of every table of a checked design, in table order.
pub(crate) fn table_keys(bits: usize, radius: u32, levels: &[usize]) -> Vec<Vec<u32>> {
    fn rec(pos: &[u32], k: usize, levels: &[usize], key: &[u32], out: &mut Vec<Vec<u32>>) {
        let Some((&r, rest_levels)) = levels.split_first() else {
            let mut key = key.to_vec();
            key.sort_unstable();
            out.push(key);
            return;
        };
        let mut blocks = Vec::with_capacity(r);
        let mut start = 0;
        for s in block_sizes(pos.len(), r) {
            blocks.push(&pos[start..start + s]);
            start += s;
        }
        for_each_combination(r, r - k, |chosen| {
            let mut next_key = key.to_vec();
            let mut rest = Vec::new();
            for (b, block) in blocks.iter().enumerate() {
                if chosen.contains(&b) {
                    next_key.extend_from_slice(block);
                } else {
                    rest.extend_from_slice(block);
                }
            }
            rec(&rest, k, rest_levels, &next_key, out);
        });
    }
    let all: Vec<u32> = (0..bits as u32).collect();
    let mut out = Vec::new();
    rec(&all, radius as usize, levels, &[], &mut out);
    out
}

/// Manku's recurrence `X(f, k, d)` with `τ = d − p_min` (see the [module
/// documentation](self)): the fewest tables whose keys all have at least `p_min` bits (block
/// sizes real-valued), and the levels of a design achieving it (the first found, trying
/// fewer blocks first). `None` if no design of at most 6 levels and [`MAX_TABLES`] tables
/// reaches `p_min` (always when `p_min > f - k`).
///
/// ```
/// use simlsh::index::permuted_tables::min_tables;
/// assert_eq!(min_tables(64.0, 3, 34.0, 16.0), Some((4, vec![4])));
/// assert_eq!(min_tables(64.0, 3, 34.0, 28.0), Some((16, vec![4, 4])));
/// assert_eq!(min_tables(64.0, 3, 34.0, 31.0), Some((20, vec![6])));
/// ```
pub fn min_tables(f: f64, k: u32, d: f64, p_min: f64) -> Option<(usize, Vec<usize>)> {
    fn solve(
        f: f64,
        k: u32,
        d: f64,
        tau: f64,
        depth: usize,
        bound: usize,
    ) -> Option<(usize, Vec<usize>)> {
        if d <= tau + 1e-9 {
            return Some((1, Vec::new()));
        }
        if depth == MAX_LEVELS {
            return None;
        }
        let mut best: Option<(usize, Vec<usize>)> = None;
        let mut r = k as usize + 1;
        while r as f64 <= f + 1e-9 {
            let lim = best.as_ref().map_or(bound, |b| b.0);
            let c = binom(r, k)?;
            if c >= lim {
                break; // C(r, k) grows with r (k >= 1) and X >= 1.
            }
            let fixed = (r as f64 - f64::from(k)) * f / r as f64;
            let sub = solve(
                f * f64::from(k) / r as f64,
                k,
                d - fixed,
                tau,
                depth + 1,
                lim.div_ceil(c),
            );
            if let Some((x, levels)) = sub
                && c * x < lim
            {
                let mut l = vec![r];
                l.extend(levels);
                best = Some((c * x, l));
            }
            if k == 0 {
                break; // every r > 0 fixes all the bits: one block is enough.
            }
            r += 1;
        }
        best
    }
    solve(f, k, d, d - p_min, 0, MAX_TABLES + 1)
}

/// The candidate designs the planner considers for `bits`, `radius` and `d = log2 n`.
fn candidate_designs(bits: usize, radius: u32, d: f64) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    let k = radius as usize;
    let max_r = if radius == 0 {
        1
    } else {
        bits.max(k + 1).min(k + 64)
    };
    for r in k + 1..=max_r {
        if binom(r, radius).is_some_and(|c| c <= MAX_TABLES) {
            out.push(vec![r]);
        } else {
            break;
        }
    }
    let top = bits.saturating_sub(k).min(64);
    for p_min in 1..=top {
        if let Some((_, levels)) = min_tables(bits as f64, radius, d, p_min as f64)
            && !out.contains(&levels)
        {
            out.push(levels);
        }
    }
    out
}

/// Plans permuted tables for `n` codes of `f` bits answering radius `k` within
/// `memory_budget_bytes` (use `u64::MAX` for no limit): the design of least
/// [`Plan::query_cost`] among those that fit (see the [module documentation](self)); ties
/// go to the smaller index.
///
/// ```
/// use simlsh::index::permuted_tables::plan;
/// let p = plan(64, 3, 1 << 34, u64::MAX).unwrap();
/// assert_eq!((p.tables, p.levels.clone()), (20, vec![6]));
/// assert_eq!(p.max_candidates_per_probe, 8.0);
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `f` is 0 or even a single table does not fit the budget.
pub fn plan(f: usize, k: u32, n: u64, memory_budget_bytes: u64) -> Result<Plan> {
    // The last plans made, by their arguments: a store freezes many segments of one size,
    // and weighing the designs costs more than building a small one.
    type Memo = Vec<((usize, u32, u64, u64), Option<Plan>)>;
    static MEMO: std::sync::Mutex<Memo> = std::sync::Mutex::new(Vec::new());
    const MEMO_LEN: usize = 16;
    let key = (f, k, n, memory_budget_bytes);
    let known = MEMO
        .lock()
        .ok()
        .and_then(|m| m.iter().find(|(a, _)| *a == key).map(|(_, p)| p.clone()));
    let chosen = known.unwrap_or_else(|| {
        let p = choose(
            f,
            k,
            n,
            |p| p.bytes <= memory_budget_bytes,
            Plan::query_cost,
        );
        if let Ok(mut m) = MEMO.lock() {
            if m.len() == MEMO_LEN {
                m.remove(0);
            }
            m.push((key, p.clone()));
        }
        p
    });
    chosen.ok_or_else(|| {
        Error::param(
            "memory_budget_bytes",
            format!("{memory_budget_bytes} bytes cannot hold one table of {n} codes"),
        )
    })
}

/// The plan of least query cost with at most `max_tables` tables (no memory limit).
pub(crate) fn plan_max_tables(f: usize, k: u32, n: u64, max_tables: usize) -> Option<Plan> {
    choose(f, k, n, |p| p.tables <= max_tables, Plan::query_cost)
}

/// The design of least [`Plan::join_cost`] for a self-join of `n` codes at radius `k`.
pub(crate) fn join_plan(f: usize, k: u32, n: u64) -> Option<Plan> {
    choose(f, k, n, |_| true, Plan::join_cost)
}

fn choose(
    f: usize,
    k: u32,
    n: u64,
    keep: impl Fn(&Plan) -> bool,
    cost: impl Fn(&Plan) -> f64,
) -> Option<Plan> {
    if f == 0 {
        return None;
    }
    let d = (n.max(1) as f64).log2();
    candidate_designs(f, k, d)
        .into_iter()
        .filter_map(|levels| Plan::for_levels(f, k, n, &levels).ok())
        .filter(|p| keep(p))
        .min_by(|a, b| {
            cost(a)
                .total_cmp(&cost(b))
                .then(a.bytes.cmp(&b.bytes))
                .then(a.tables.cmp(&b.tables))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_are_lexicographic_and_complete() {
        let mut seen = Vec::new();
        for_each_combination(5, 2, |c| seen.push(c.to_vec()));
        assert_eq!(seen.len(), 10);
        assert_eq!(seen[0], vec![0, 1]);
        assert_eq!(seen[9], vec![3, 4]);
        assert!(seen.windows(2).all(|p| p[0] < p[1]));
        let mut all = Vec::new();
        for_each_combination(3, 3, |c| all.push(c.to_vec()));
        assert_eq!(all, vec![vec![0, 1, 2]]);
    }

    #[test]
    fn keys_follow_the_block_sizes() {
        for (bits, k, levels) in [
            (64, 3, vec![6]),
            (64, 3, vec![4, 4]),
            (100, 2, vec![5, 3]),
            (3, 3, vec![4]),
        ] {
            let keys = table_keys(bits, k, &levels);
            let sizes = key_sizes(bits, k, &levels);
            assert_eq!(keys.iter().map(Vec::len).collect::<Vec<_>>(), sizes);
        }
        assert_eq!(table_keys(64, 3, &[4])[1], (16..32).collect::<Vec<u32>>());
        assert_eq!(table_keys(8, 1, &[])[0], Vec::<u32>::new());
    }
}
