//! [`PrefixJoin`]: the exact cosine self-join of sparse rows by prefix filtering.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use super::{SparseVectors, Vectors};
use crate::error::{Error, Result};
use crate::estimate::check_cosine;
use crate::memory;

/// The rounding margin of the bounds (see [`PrefixJoin`]).
const EPS: f64 = 1e-9;

/// The most shared prefix features (24 bytes each) one pass of the join holds: the rows are taken in
/// ranges whose pairs to examine stay within it.
const WINDOW_PAIRS: u64 = 1 << 22;

/// Rows whose prefixes are made per parallel task.
const ROWS_PER_TASK: usize = 1024;

/// Features whose posting lists are paired per parallel task.
const KEYS_PER_TASK: usize = 4096;

/// Candidate pairs verified per parallel task (whole rows: a task ends at a row's last).
const VERIFY_PER_TASK: usize = 8192;

/// A pair of rows at exact cosine ≥ τ found by [`PrefixJoin`]: `i < j`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CosinePair {
    /// The smaller row number.
    pub i: u32,
    /// The larger row number.
    pub j: u32,
    /// Their exact cosine ([`Vectors::cosine`]).
    pub cosine: f64,
}

/// What a [`PrefixJoin`] did besides its pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrefixReport {
    /// Rows of norm 0, never paired, in increasing order.
    pub zero_rows: Vec<u32>,
    /// Features indexed (the prefixes' total length).
    pub indexed: u64,
    /// Pairs of posting entries examined: the join's work ([`PrefixCost::examined`]).
    pub examined: u64,
    /// Pairs whose exact cosine was computed (distinct pairs whose bound reached τ).
    pub candidates: u64,
    /// Pairs kept.
    pub pairs: u64,
    /// Passes over the index (ranges of rows whose pairs fit one window).
    pub passes: u64,
}

/// The work of a [`PrefixJoin`] on given rows, counted before it runs
/// ([`PrefixJoin::cost`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefixCost {
    /// Rows.
    pub rows: u64,
    /// Nonzero entries of the rows.
    pub nnz: u64,
    /// Features indexed (the prefixes' total length).
    pub indexed: u64,
    /// Pairs of posting entries the join examines: `Σ C(|postings|, 2)` over the features.
    pub examined: u64,
}

/// [`PrefixJoin`]: the exact cosine self-join of sparse rows by prefix filtering (in the line
/// of Bayardo, Ma & Srikant's *All-Pairs* and Anastasiu & Karypis's *L2AP* bounds): no
/// signatures, every pair at cosine ≥ τ found (recall 1), each verified by the same exact
/// cosine as [`VerifiedJoin`](super::VerifiedJoin).
///
/// # Why it is exact
///
/// The features of all rows are put in one global order, rarest first (by document frequency,
/// then by key). A row's *prefix* is its features, in that order, whose *suffix norm*
/// `s_x(f) = ‖x_{≥f}‖` (the row's norm from `f` on) times the largest row norm `M` reaches
/// `τ − ε` (`ε = 10⁻⁹` covers the rounding of the sums; every stored norm is rounded up).
///
/// - **Every pair is found.** Let `f*` be the first feature (in the order) that rows `x` and
///   `y` share. Then `x·y = x_{≥f*}·y_{≥f*} ≤ s_x(f*)·s_y(f*)` (Cauchy–Schwarz), so at
///   cosine ≥ τ both suffix norms at `f*` reach τ: `f*` is in both prefixes. Each feature's
///   posting list (the rows whose prefix has it) pairs its rows, so the pair is examined.
/// - **Most examined pairs are not verified.** A pair's shared prefix features give
///   `A = Σ x_f·y_f` over them, the largest `s_x(f)·s_y(f)` (at `f*`: below τ, no pair), and
///   the rows' norms after the last of them, `a_x` and `a_y`. Every feature both rows have
///   before the end `e` of the shorter prefix is in both prefixes, so in `A`; the rest is at
///   most `r_x·a_y` when `x`'s prefix ends first (`r_x = ‖x‖` after its prefix, below τ), or
///   `r_y·a_x`. A pair is a *candidate* when `A + max(r_x·a_y, r_y·a_x) ≥ τ − ε`.
/// - **Answers are exact.** Each candidate's cosine is computed exactly, bit for bit as
///   [`Vectors::cosine`] (the same products summed in the same key order), and kept at ≥ τ.
///
/// The work is the pairs of posting entries examined, `Σ C(|postings|, 2)`, counted before
/// the join by [`PrefixJoin::cost`], so that a caller can weigh it against signatures: it is
/// small when the rows' rare features carry their weight (TF-IDF text: short documents at
/// high thresholds), and quadratic when many rows' prefixes share a feature. The rows are
/// taken in ranges whose examined pairs fit a window of memory (several passes over the
/// index when they do not), and the pairs come in a deterministic order whatever the number
/// of threads.
///
/// ```
/// use simlsh::verify::{PrefixJoin, SparseVectors};
///
/// let v = SparseVectors::from_rows([
///     vec![(1u64, 1.0f32), (2, 1.0), (3, 1.0)],
///     vec![(1, 1.0), (2, 1.0), (3, 0.9)],
///     vec![(7, 1.0), (8, 1.0)],
///     vec![(1, 1.0), (8, 1.0)],
/// ])?;
/// let join = PrefixJoin::builder().threshold(0.9).build()?;
/// let (pairs, report) = join.pairs(&v)?;
/// assert_eq!(pairs.len(), 1);
/// assert_eq!((pairs[0].i, pairs[0].j), (0, 1));
/// assert!(report.candidates >= 1);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrefixJoin {
    threshold: f64,
}

/// Builder of a [`PrefixJoin`]: the threshold is required.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PrefixJoinBuilder {
    threshold: Option<f64>,
}

impl PrefixJoinBuilder {
    /// The cosine threshold τ, in (0, 1]: pairs with exact cosine ≥ τ are kept.
    pub fn threshold(mut self, t: f64) -> Self {
        self.threshold = Some(t);
        self
    }

    /// Validates the settings.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a missing threshold, or one outside (0, 1] (at τ ≤ 0,
    /// rows sharing no feature would pair: every pair of rows).
    pub fn build(self) -> Result<PrefixJoin> {
        let t = self
            .threshold
            .ok_or_else(|| Error::param("threshold", "a cosine threshold is required"))?;
        let threshold = check_cosine("threshold", t)?;
        if threshold <= 0.0 {
            return Err(Error::param(
                "threshold",
                format!(
                    "the prefix join needs a positive cosine threshold, got {threshold} (at τ ≤ 0 rows sharing no feature pair)"
                ),
            ));
        }
        Ok(PrefixJoin { threshold })
    }
}

/// A bijection of keys that spreads any key set (small column indices as well as hashes)
/// over the top bits.
#[inline]
fn mix(k: u64) -> u64 {
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A feature in the prefixes of two rows: `x·y`'s term, the product of their norms from the
/// feature on, and each row's norm after it (all rounded up).
#[derive(Clone, Copy, Debug)]
struct Shared {
    /// `y << 32 | x`, `x < y`.
    pair: u64,
    product: f32,
    from: f32,
    after_x: f32,
    after_y: f32,
}

/// `x` as an `f32` no smaller than it.
#[inline]
fn up(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) < x { f.next_up() } else { f }
}

/// The prefixes of every row, by feature: each feature's posting list holds the rows whose
/// prefix has it, in increasing row order, with the row's norm from that feature on (in the
/// global order).
struct PrefixIndex {
    /// `starts[k]..starts[k + 1]`: the postings of the `k`-th feature.
    starts: Vec<u32>,
    /// Posting rows.
    rows: Vec<u32>,
    /// Posting entries' values, by entry.
    entry: Vec<Posting>,
    /// Each row's norm after its prefix (rounded up).
    rest: Vec<f32>,
}

/// A posting entry's values: the row's weight of the feature, and its norm from the feature
/// on and after it (in the global order), the norms rounded up.
#[derive(Clone, Copy, Debug, Default)]
struct Posting {
    weight: f32,
    from: f32,
    after: f32,
}

/// One task's prefixes: each row's prefix features (mixed keys) and suffix norms, flat.
struct Prefixes {
    len: Vec<u32>,
    keys: Vec<u64>,
    entry: Vec<Posting>,
    rest: Vec<f32>,
}

impl PrefixIndex {
    fn build(v: &SparseVectors, threshold: f64) -> Result<PrefixIndex> {
        let n = v.len();
        let max_norm = (0..n)
            .into_par_iter()
            .map(|i| {
                let (_, w) = v.row(i);
                w.iter()
                    .map(|&x| f64::from(x) * f64::from(x))
                    .sum::<f64>()
                    .sqrt()
            })
            .reduce(|| 0.0, f64::max);
        // The global order: rarest first, by document frequency counted in a table of
        // hashed slots (collisions only merge counts: any global order is exact), then by
        // mixed key.
        // Looked up in 16 bits (saturated): the counts only order the features.
        let dbits = (usize::BITS - v.nnz().max(1).leading_zeros()).clamp(10, 22);
        let mut df: Vec<AtomicU32> = Vec::new();
        memory::reserve(&mut df, 1 << dbits, "prefix join")?;
        df.extend((0..1usize << dbits).map(|_| AtomicU32::new(0)));
        (0..n).into_par_iter().for_each(|i| {
            for &k in v.row(i).0 {
                df[(mix(k) >> (64 - dbits)) as usize].fetch_add(1, Ordering::Relaxed);
            }
        });
        let df: Vec<u16> = df
            .into_iter()
            .map(|c| c.into_inner().min(u32::from(u16::MAX)) as u16)
            .collect();
        // Each row's prefix: its features in the global order whose suffix norm (times the
        // largest row norm) reaches τ − ε.
        let limit = threshold - EPS;
        let tasks: Vec<Prefixes> = (0..n.div_ceil(ROWS_PER_TASK))
            .into_par_iter()
            .map_init(
                || (Vec::<(u16, u64, f32)>::new(), Vec::<f32>::new()),
                |(f, suf), c| {
                    let rows = c * ROWS_PER_TASK..((c + 1) * ROWS_PER_TASK).min(n);
                    let mut out = Prefixes {
                        len: Vec::with_capacity(rows.len()),
                        keys: Vec::new(),
                        entry: Vec::new(),
                        rest: Vec::with_capacity(rows.len()),
                    };
                    for i in rows {
                        let (keys, w) = v.row(i);
                        f.clear();
                        f.extend(keys.iter().zip(w).map(|(&k, &x)| {
                            let m = mix(k);
                            (df[(m >> (64 - dbits)) as usize], m, x)
                        }));
                        f.sort_unstable_by_key(|e| (e.0, e.1));
                        suf.clear();
                        suf.resize(f.len() + 1, 0.0);
                        let mut sq = 0.0f64;
                        let mut take = 0;
                        for p in (0..f.len()).rev() {
                            let x = f64::from(f[p].2);
                            sq += x * x;
                            let s = sq.sqrt();
                            suf[p] = s as f32;
                            if take == 0 && s * max_norm >= limit {
                                take = p + 1;
                            }
                        }
                        // Norms stored rounded up, so that the bounds stay upper bounds.
                        out.len.push(take as u32);
                        out.keys.extend(f[..take].iter().map(|e| e.1));
                        out.entry.extend((0..take).map(|p| Posting {
                            weight: f[p].2,
                            from: suf[p].next_up(),
                            after: suf[p + 1].next_up(),
                        }));
                        out.rest.push(suf[take].next_up());
                    }
                    out
                },
            )
            .collect();
        drop(df);
        let total: usize = tasks.iter().map(|t| t.keys.len()).sum();
        if total >= u32::MAX as usize {
            return Err(Error::param(
                "rows",
                format!(
                    "{total} prefix features exceed the join's {} entries",
                    u32::MAX
                ),
            ));
        }
        let bits = (usize::BITS - (total / 2).max(1).leading_zeros()).clamp(4, 26);
        let shift = 64 - bits;
        // Counting sort of the entries by bucket (rows in increasing order within a bucket),
        // then each bucket by key, stably.
        let mut counts: Vec<u32> = memory::filled((1usize << bits) + 1, 0u32, "prefix join")?;
        for t in &tasks {
            for &mk in &t.keys {
                counts[(mk >> shift) as usize + 1] += 1;
            }
        }
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        let mut mkeys: Vec<u64> = memory::filled(total, 0u64, "prefix join")?;
        let mut rows: Vec<u32> = memory::filled(total, 0u32, "prefix join")?;
        let mut entry: Vec<Posting> = memory::filled(total, Posting::default(), "prefix join")?;
        let mut rest: Vec<f32> = Vec::new();
        memory::reserve(&mut rest, n, "prefix join")?;
        let mut fill = counts.clone();
        let mut row = 0u32;
        for t in tasks {
            rest.extend_from_slice(&t.rest);
            let mut at_key = 0;
            for &len in &t.len {
                for q in at_key..at_key + len as usize {
                    let mk = t.keys[q];
                    let slot = &mut fill[(mk >> shift) as usize];
                    let at = *slot as usize;
                    *slot += 1;
                    mkeys[at] = mk;
                    rows[at] = row;
                    entry[at] = t.entry[q];
                }
                at_key += len as usize;
                row += 1;
            }
        }
        drop(fill);
        let mut starts: Vec<u32> = Vec::new();
        let mut perm: Vec<u32> = Vec::new();
        let (mut r2, mut s2) = (Vec::new(), Vec::new());
        for b in 0..(1usize << bits) {
            let (lo, hi) = (counts[b] as usize, counts[b + 1] as usize);
            if lo == hi {
                continue;
            }
            let mk = &mkeys[lo..hi];
            if hi - lo == 1 || mk.windows(2).all(|w| w[0] == w[1]) {
                starts.push(lo as u32);
                continue;
            }
            perm.clear();
            perm.extend(0..(hi - lo) as u32);
            perm.sort_by_key(|&p| mk[p as usize]);
            r2.clear();
            s2.clear();
            r2.extend(perm.iter().map(|&p| rows[lo + p as usize]));
            s2.extend(perm.iter().map(|&p| entry[lo + p as usize]));
            let mut prev = None;
            for (k, &p) in perm.iter().enumerate() {
                let key = mk[p as usize];
                if prev != Some(key) {
                    starts.push((lo + k) as u32);
                    prev = Some(key);
                }
            }
            rows[lo..hi].copy_from_slice(&r2);
            entry[lo..hi].copy_from_slice(&s2);
        }
        starts.push(total as u32);
        Ok(PrefixIndex {
            starts,
            rows,
            entry,
            rest,
        })
    }

    fn features(&self) -> usize {
        self.starts.len() - 1
    }

    /// The pairs of posting entries to examine, each counted at its larger row.
    fn pairs_per_row(&self, n: usize) -> Result<Vec<u64>> {
        let mut c = memory::filled(n, 0u64, "prefix join")?;
        for k in 0..self.features() {
            let (s, e) = (self.starts[k] as usize, self.starts[k + 1] as usize);
            for p in s..e {
                c[self.rows[p] as usize] += (p - s) as u64;
            }
        }
        Ok(c)
    }
}

/// The features of one row in an open-addressing table, so that a candidate's exact cosine
/// is one lookup per feature of the other row instead of a merge: the products are summed
/// in the other row's key order, the order of [`dot_sparse`](super::dot_sparse), so the
/// cosine is [`Vectors::cosine`]'s bit for bit.
#[derive(Default)]
struct RowTable {
    bits: u32,
    /// Position in the row plus 1; 0 is empty.
    slots: Vec<u32>,
}

impl RowTable {
    fn fill(&mut self, keys: &[u64]) {
        let bits = (usize::BITS - (2 * keys.len()).max(8).leading_zeros()).max(4);
        self.bits = bits;
        self.slots.clear();
        self.slots.resize(1 << bits, 0);
        let mask = (1usize << bits) - 1;
        for (p, &k) in keys.iter().enumerate() {
            let mut h = (mix(k) >> (64 - bits)) as usize;
            while self.slots[h] != 0 {
                h = (h + 1) & mask;
            }
            self.slots[h] = p as u32 + 1;
        }
    }

    /// `Σ x_f·y_f` in the order of `kx` (increasing keys), `y` the row filled.
    #[inline]
    fn dot(&self, ky: &[u64], wy: &[f32], kx: &[u64], wx: &[f32]) -> f64 {
        let mask = (1usize << self.bits) - 1;
        let mut s = 0f64;
        for (&k, &w) in kx.iter().zip(wx) {
            let mut h = (mix(k) >> (64 - self.bits)) as usize;
            loop {
                let slot = self.slots[h];
                if slot == 0 {
                    break;
                }
                let p = slot as usize - 1;
                if ky[p] == k {
                    s += f64::from(w) * f64::from(wy[p]);
                    break;
                }
                h = (h + 1) & mask;
            }
        }
        s
    }
}

impl PrefixJoin {
    /// A builder.
    pub fn builder() -> PrefixJoinBuilder {
        PrefixJoinBuilder::default()
    }

    /// The cosine threshold.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The join's work on `v`, counted exactly before it runs: the features its prefixes
    /// index and the pairs of posting entries it examines ([`PrefixReport::indexed`] and
    /// [`PrefixReport::examined`] of [`run`](Self::run)). It builds the index (a pass over
    /// the rows and a sort of the prefix features).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the index cannot be allocated.
    pub fn cost(&self, v: &SparseVectors) -> Result<PrefixCost> {
        let index = PrefixIndex::build(v, self.threshold)?;
        let examined = (0..index.features())
            .map(|k| {
                let l = u64::from(index.starts[k + 1] - index.starts[k]);
                l * l.saturating_sub(1) / 2
            })
            .sum();
        Ok(PrefixCost {
            rows: v.len() as u64,
            nnz: v.nnz() as u64,
            indexed: index.rows.len() as u64,
            examined,
        })
    }

    /// Every pair of rows of `v` at exact cosine ≥ τ, to `sink` in increasing order of the
    /// larger row, then of the smaller, whatever the number of threads.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the index or a window of candidates cannot be allocated.
    pub fn run(&self, v: &SparseVectors, sink: impl FnMut(CosinePair)) -> Result<PrefixReport> {
        self.run_windowed(v, WINDOW_PAIRS, sink)
    }

    /// [`run`](Self::run) with at most `window` shared prefix features held per pass (but
    /// at least one row's).
    fn run_windowed(
        &self,
        v: &SparseVectors,
        window: u64,
        mut sink: impl FnMut(CosinePair),
    ) -> Result<PrefixReport> {
        let n = v.len();
        if n >= u32::MAX as usize {
            return Err(Error::param(
                "rows",
                format!("{n} rows exceed the join's {} row ids", u32::MAX),
            ));
        }
        let index = PrefixIndex::build(v, self.threshold)?;
        let mut report = PrefixReport {
            zero_rows: v.zero_rows(),
            indexed: index.rows.len() as u64,
            ..PrefixReport::default()
        };
        let per_row = index.pairs_per_row(n)?;
        let limit = self.threshold - EPS;
        let keys = index.features();
        let mut y0 = 0;
        while y0 < n {
            // The rows whose pairs fit the window (at least one row).
            let mut y1 = y0;
            let mut held = 0u64;
            while y1 < n && (y1 == y0 || held + per_row[y1] <= window) {
                held += per_row[y1];
                y1 += 1;
            }
            report.examined += held;
            report.passes += 1;
            let (lo, hi) = (y0 as u32, y1 as u32);
            let parts: Vec<Result<Vec<Shared>>> = (0..keys.div_ceil(KEYS_PER_TASK))
                .into_par_iter()
                .map(|c| {
                    let mut out = Vec::new();
                    for k in c * KEYS_PER_TASK..((c + 1) * KEYS_PER_TASK).min(keys) {
                        let (s, e) = (index.starts[k] as usize, index.starts[k + 1] as usize);
                        let rows = &index.rows[s..e];
                        let b0 = s + rows.partition_point(|&r| r < lo);
                        let b1 = s + rows.partition_point(|&r| r < hi);
                        for b in b0..b1 {
                            let (y, ey) = (index.rows[b], index.entry[b]);
                            for a in s..b {
                                let ex = index.entry[a];
                                if out.len() == out.capacity() {
                                    let more = out.len().max(1024);
                                    memory::reserve(&mut out, more, "prefix join candidates")?;
                                }
                                out.push(Shared {
                                    pair: u64::from(y) << 32 | u64::from(index.rows[a]),
                                    product: up(f64::from(ex.weight) * f64::from(ey.weight)),
                                    from: up(f64::from(ex.from) * f64::from(ey.from)),
                                    after_x: ex.after,
                                    after_y: ey.after,
                                });
                            }
                        }
                    }
                    Ok(out)
                })
                .collect();
            let mut shared: Vec<Shared> = Vec::new();
            let want: usize = parts.iter().map(|p| p.as_ref().map_or(0, Vec::len)).sum();
            memory::reserve(&mut shared, want, "prefix join candidates")?;
            for p in parts {
                shared.extend(p?);
            }
            shared.par_sort_unstable_by_key(|r| r.pair);
            // A pair's shared prefix features, in any order: the bound of [`PrefixJoin`].
            let mut cands: Vec<u64> = Vec::new();
            let mut r = 0;
            while r < shared.len() {
                let pair = shared[r].pair;
                let (mut dot, mut from, mut ax, mut ay) = (0f64, 0f32, f32::MAX, f32::MAX);
                while r < shared.len() && shared[r].pair == pair {
                    let e = shared[r];
                    dot += f64::from(e.product);
                    from = from.max(e.from);
                    ax = ax.min(e.after_x);
                    ay = ay.min(e.after_y);
                    r += 1;
                }
                let (y, x) = ((pair >> 32) as usize, pair as u32 as usize);
                let rest = f64::from(index.rest[x]) * f64::from(ay);
                let rest = rest.max(f64::from(index.rest[y]) * f64::from(ax));
                if f64::from(from) >= limit && dot + rest * (1.0 + EPS) >= limit {
                    cands.push(pair);
                }
            }
            drop(shared);
            report.candidates += cands.len() as u64;
            // Verify in tasks of whole rows, in order.
            let mut bounds = vec![0usize];
            while let Some(&s) = bounds.last() {
                if s >= cands.len() {
                    break;
                }
                let mut e = (s + VERIFY_PER_TASK).min(cands.len());
                while e < cands.len() && cands[e] >> 32 == cands[e - 1] >> 32 {
                    e += 1;
                }
                bounds.push(e);
            }
            let found: Vec<Vec<CosinePair>> = bounds
                .par_windows(2)
                .map_init(RowTable::default, |table, w| {
                    let mut out = Vec::new();
                    let mut current = u32::MAX;
                    for &c in &cands[w[0]..w[1]] {
                        let (y, x) = ((c >> 32) as u32, c as u32);
                        let (ky, wy) = v.row(y as usize);
                        if y != current {
                            table.fill(ky);
                            current = y;
                        }
                        let (kx, wx) = v.row(x as usize);
                        let cosine = table.dot(ky, wy, kx, wx);
                        if cosine >= self.threshold {
                            out.push(CosinePair { i: x, j: y, cosine });
                        }
                    }
                    out
                })
                .collect();
            for f in found {
                report.pairs += f.len() as u64;
                f.into_iter().for_each(&mut sink);
            }
            y0 = y1;
        }
        Ok(report)
    }

    /// [`run`](Self::run), collected.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn pairs(&self, v: &SparseVectors) -> Result<(Vec<CosinePair>, PrefixReport)> {
        let mut out = Vec::new();
        let report = self.run(v, |p| out.push(p))?;
        Ok((out, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Brute force: every pair at cosine ≥ t, by (j, i).
    fn brute(v: &SparseVectors, t: f64) -> Vec<(u32, u32, f64)> {
        let mut out = Vec::new();
        for j in 0..v.len() {
            for i in 0..j {
                if v.is_zero(i) || v.is_zero(j) {
                    continue;
                }
                let c = v.cosine(i, j);
                if c >= t {
                    out.push((i as u32, j as u32, c));
                }
            }
        }
        out
    }

    /// Rows over a Zipf-like vocabulary with planted near-copies.
    fn corpus(n: usize, vocab: u64, len: usize, seed: u64) -> SparseVectors {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut rows: Vec<Vec<(u64, f32)>> = Vec::new();
        for r in 0..n {
            if r > 0 && rng.random_bool(0.3) {
                let src = rows[rng.random_range(0..r)].clone();
                let mut row: Vec<(u64, f32)> = Vec::new();
                for (k, w) in src {
                    if rng.random_bool(0.85) {
                        row.push((k, w * rng.random_range(0.7f32..1.3)));
                    }
                }
                row.push((rng.random_range(0..vocab), rng.random_range(0.1f32..2.0)));
                rows.push(row);
            } else {
                let l = rng.random_range(0..=len);
                rows.push(
                    (0..l)
                        .map(|_| {
                            let u: f64 = rng.random_range(0.0..1.0);
                            (
                                (u * u * u * vocab as f64) as u64,
                                rng.random_range(-0.5f32..3.0),
                            )
                        })
                        .collect(),
                );
            }
        }
        SparseVectors::from_rows(rows).unwrap()
    }

    #[test]
    fn equals_brute_force_at_every_threshold() {
        for seed in 0..4 {
            let v = corpus(600, 200, 12, seed);
            for t in [0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 0.99, 1.0] {
                let join = PrefixJoin::builder().threshold(t).build().unwrap();
                let (pairs, report) = join.pairs(&v).unwrap();
                let mut got: Vec<(u32, u32, f64)> =
                    pairs.iter().map(|p| (p.i, p.j, p.cosine)).collect();
                let want = brute(&v, t);
                assert_eq!(got.len() as u64, report.pairs);
                got.sort_by_key(|a| (a.1, a.0));
                assert_eq!(got, want, "seed {seed} t {t}");
                assert_eq!(report.zero_rows, v.zero_rows());
                let cost = join.cost(&v).unwrap();
                assert_eq!(
                    (cost.indexed, cost.examined),
                    (report.indexed, report.examined)
                );
                assert!(report.pairs <= report.candidates && report.candidates <= report.examined);
            }
        }
    }

    /// The pairs in the join's order: by the larger row, then the smaller.
    fn in_order(pairs: &[CosinePair]) -> bool {
        pairs
            .windows(2)
            .all(|w| (w[0].j, w[0].i) < (w[1].j, w[1].i))
    }

    #[test]
    fn passes_and_threads_give_the_same_pairs_in_the_same_order() {
        let v = corpus(2000, 300, 15, 9);
        let join = PrefixJoin::builder().threshold(0.6).build().unwrap();
        let (want, one) = join.pairs(&v).unwrap();
        assert!(in_order(&want) && want.len() > 100);
        assert_eq!(one.passes, 1);
        for window in [1, 50, 5_000] {
            let mut got = Vec::new();
            let r = join.run_windowed(&v, window, |p| got.push(p)).unwrap();
            assert_eq!(got, want, "window {window}");
            assert!(r.passes > 1, "window {window}: {} passes", r.passes);
            assert_eq!((r.examined, r.candidates), (one.examined, one.candidates));
        }
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (got, _) = pool.install(|| join.pairs(&v)).unwrap();
            assert_eq!(got, want, "{threads} threads");
        }
    }

    #[test]
    fn column_keys_and_duplicate_rows() {
        // Small column indices (not hashes) and many equal rows (weights scaled apart).
        let rows: Vec<Vec<(u64, f32)>> = (0..300u64)
            .map(|r| {
                (0..(r % 7))
                    .map(|c| ((r * 3 + c) % 11, 1.0 + (r % 5) as f32 * 100.0))
                    .collect()
            })
            .collect();
        let v = SparseVectors::from_rows(rows).unwrap();
        for t in [0.5, 0.9, 1.0] {
            let join = PrefixJoin::builder().threshold(t).build().unwrap();
            let (mut pairs, _) = join.pairs(&v).unwrap();
            pairs.sort_by_key(|a| (a.j, a.i));
            let got: Vec<(u32, u32, f64)> = pairs.iter().map(|p| (p.i, p.j, p.cosine)).collect();
            assert_eq!(got, brute(&v, t), "t {t}");
        }
    }

    #[test]
    fn thresholds_outside_zero_one_are_errors() {
        for t in [0.0, -0.5, 1.5, f64::NAN] {
            let e = PrefixJoin::builder().threshold(t).build().unwrap_err();
            assert!(matches!(e, Error::InvalidParameter { .. }), "{t}: {e}");
        }
        assert!(PrefixJoin::builder().build().is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn equals_brute_force(
            rows in proptest::collection::vec(
                proptest::collection::vec((0u64..40, -1.0f32..4.0), 0..10), 0..60),
            t in 0.05f64..1.0,
        ) {
            let v = SparseVectors::from_rows(rows).unwrap();
            let join = PrefixJoin::builder().threshold(t).build().unwrap();
            let (pairs, _) = join.pairs(&v).unwrap();
            proptest::prop_assert!(in_order(&pairs));
            let got: Vec<(u32, u32, f64)> = pairs.iter().map(|p| (p.i, p.j, p.cosine)).collect();
            proptest::prop_assert_eq!(got, brute(&v, t));
        }
    }
}
