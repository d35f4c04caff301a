//! Multi-index hashing (Norouzi, Punjani & Fleet, CVPR 2012 / TPAMI 2014): exact radius and
//! k-NN search by probing `m` substring tables. The algorithm, the probing rule and its proof,
//! the cost model and the layout are documented on [`MultiIndex`].

use std::collections::BinaryHeap;
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use super::{HammingIndex, Hit, Id, check_code, check_queries};
use crate::error::{Error, Result};
use crate::hamming;
use crate::hamming::scalar::{by_words, dist_words};
use crate::signature::{SignatureMatrix, last_word_mask, words_for};
use crate::storage::Buf;

/// Largest substring width served by a dense directory (`2^22` offsets, 16 MiB).
const DENSE_MAX_BITS: u32 = 22;
/// A dense directory may have up to `2^(⌈log2 max(N, 1024)⌉ + DENSE_SLACK_BITS)` entries.
const DENSE_SLACK_BITS: u32 = 2;
/// Queries per pass over the codes in batched scans.
const QUERY_BATCH: usize = 64;
/// Queries per parallel task in batch radius searches: their probes share the pipeline.
const PROBE_BATCH: usize = 16;
/// Codes per chunk of the single-query k-NN scan (distances go through a buffer).
const SCAN_CHUNK: usize = 2048;

/// Cost model, in estimated nanoseconds per operation (see the documentation of [`MultiIndex`]),
/// calibrated on 10^6 codes whose tables do not fit in cache (W5: probing 256-bit codes costs
/// about 20 ns per probe and per candidate, the batched scan 1 ns per code). A probe of a
/// dense table: one directory lookup, a cache miss overlapped with the other probes of its
/// block.
const COST_PROBE: f64 = 12.0;
/// Extra cost of a probe of a sparse table (binary search in a bucket of keys).
const COST_SPARSE_PROBE: f64 = 10.0;
/// Cost of one candidate row: the rows entry, the visited stamp and the code, all random
/// accesses.
const COST_CANDIDATE: f64 = 24.0;
/// Cost per candidate per code word (the distance).
const COST_CANDIDATE_WORD: f64 = 1.0;
/// Scan cost per code word for one query (the dispatched distance kernel).
const COST_SCAN_WORD: f64 = 0.5;
/// Scan cost per code word per query when a batch of queries shares each pass over the codes
/// (the tiled kernels).
const COST_SCAN_WORD_BATCH: f64 = 0.25;

/// The automatic number of substrings: `round(bits / log2 n)`, clamped to `[⌈bits/64⌉, bits]`
/// (`n < 2` counts as 2).
///
/// Against the reference table of the MIH code (`RUN.sh`: 64-bit codes 5, 4, 4, 3, 2, 2 and
/// 256-bit codes 19, 15, 13, 11, 10, 8 substrings for 10^4 … 10^9 codes), rounding
/// reproduces 10 of the 12 entries (it gives 3 for 64 bits at 10^6, and 9 for 256 bits at
/// 10^9), flooring 6 and ceiling 6.
pub fn auto_substrings(bits: usize, n: usize) -> usize {
    let lo = words_for(bits).max(1);
    let hi = bits.max(1);
    let log = (n.max(2) as f64).log2();
    let m = (bits as f64 / log).round() as usize;
    m.clamp(lo, hi)
}

/// `⌈log2 n⌉` for `n ≥ 1` (0 for `n ≤ 1`).
fn ceil_log2(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

/// One substring and its table's place in the flat arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Substring {
    /// First bit.
    start: usize,
    /// Bits, `1..=64`.
    width: u32,
    /// Directory bits: `width` for a dense table, fewer for a sparse one.
    prefix: u32,
    /// Offset of the directory in `dirs` (`2^prefix + 1` entries).
    dir_start: usize,
    /// Offset of the keys in `keys` (sparse tables only; `N` entries).
    key_start: usize,
}

impl Substring {
    fn dense(&self) -> bool {
        self.prefix == self.width
    }

    /// The substring's value in `code`.
    #[inline(always)]
    fn extract(&self, code: &[u64]) -> u64 {
        let word = self.start / 64;
        let off = self.start % 64;
        let mut v = code[word] >> off;
        if off + self.width as usize > 64 {
            v |= code[word + 1] << (64 - off);
        }
        if self.width < 64 {
            v & ((1u64 << self.width) - 1)
        } else {
            v
        }
    }
}

/// The substrings of `bits`-bit codes cut in `m`, with table offsets for `n` rows; returns
/// them with the total lengths of `dirs` and `keys`.
fn layout(bits: usize, m: usize, n: usize) -> (Vec<Substring>, usize, usize) {
    let dense_limit = (ceil_log2(n.max(1024)) + DENSE_SLACK_BITS).min(DENSE_MAX_BITS);
    let sparse_prefix = ceil_log2(n.max(2)).min(DENSE_MAX_BITS);
    let (base, extra) = (bits / m, bits % m);
    let mut subs = Vec::with_capacity(m);
    let (mut start, mut dirs, mut keys) = (0, 0, 0);
    for t in 0..m {
        let width = (base + usize::from(t < extra)) as u32;
        let prefix = if width <= dense_limit {
            width
        } else {
            sparse_prefix.min(width - 1)
        };
        subs.push(Substring {
            start,
            width,
            prefix,
            dir_start: dirs,
            key_start: keys,
        });
        start += width as usize;
        dirs += (1usize << prefix) + 1;
        if prefix < width {
            keys += n;
        }
    }
    (subs, dirs, keys)
}

/// Every `width`-bit mask with exactly `weight` bits set, in increasing order (Gosper's
/// hack). A plain iterator rather than a callback, so that the probing loops inline into the
/// `POPCNT`-enabled entry points.
#[derive(Clone, Copy, Debug)]
struct Flips {
    next: Option<u64>,
    width: u32,
}

impl Flips {
    #[inline(always)]
    fn new(width: u32, weight: u32) -> Self {
        let first = match weight {
            0 => Some(0),
            w if w > width => None,
            64 => Some(u64::MAX),
            w => Some((1u64 << w) - 1),
        };
        Flips { next: first, width }
    }
}

impl Iterator for Flips {
    type Item = u64;

    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        let x = self.next?;
        self.next = if x == 0 {
            None
        } else {
            let low = x & x.wrapping_neg();
            x.checked_add(low).and_then(|ripple| {
                let n = (((ripple ^ x) >> 2) >> low.trailing_zeros()) | ripple;
                (self.width == 64 || n >> self.width == 0).then_some(n)
            })
        };
        Some(x)
    }
}

/// `C(n, k)` as a float (exact up to 2^53).
fn binomial(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

/// Number of shells (radii `0..shells`) substring `t` is probed at for radius `r`: the rule
/// documented on [`MultiIndex`], `r' + 1` for `t ≤ a` and `r'` for the others.
fn shells_for(r: u64, m: usize, t: usize) -> u64 {
    let (rp, a) = (r / m as u64, (r % m as u64) as usize);
    if t <= a { rp + 1 } else { rp }
}

/// Estimated costs of probing (see the documentation of [`MultiIndex`]).
#[derive(Clone, Debug, Default)]
struct Costs {
    /// `cum[t][j]`: cost of probing substring `t` at radii `0..=j`.
    cum: Vec<Vec<f64>>,
    /// Scan of the stored codes for one query.
    scan: f64,
    /// Scan of the stored codes per query, in a batch.
    scan_batch: f64,
}

impl Costs {
    fn new(subs: &[Substring], n: usize, words: usize) -> Self {
        let cand = COST_CANDIDATE + COST_CANDIDATE_WORD * words as f64;
        let cum = subs
            .iter()
            .map(|s| {
                let probe = COST_PROBE + if s.dense() { 0.0 } else { COST_SPARSE_PROBE };
                let per_probe = probe + cand * n as f64 / 2f64.powi(s.width as i32);
                let mut acc = 0.0;
                (0..=s.width)
                    .map(|j| {
                        acc += binomial(s.width, j) * per_probe;
                        acc
                    })
                    .collect()
            })
            .collect();
        Costs {
            cum,
            scan: n as f64 * words as f64 * COST_SCAN_WORD,
            scan_batch: n as f64 * words as f64 * COST_SCAN_WORD_BATCH,
        }
    }

    /// Cost of probing substring `t` at radii `0..shells`.
    fn probed(&self, t: usize, shells: u64) -> f64 {
        let c = &self.cum[t];
        match shells {
            0 => 0.0,
            s => c[(s as usize - 1).min(c.len() - 1)],
        }
    }

    /// Cost of the probe plan certifying radius `r` (every code at distance `≤ r` found).
    fn plan(&self, r: u64) -> f64 {
        let m = self.cum.len();
        (0..m).map(|t| self.probed(t, shells_for(r, m, t))).sum()
    }

    /// Cost of the k-NN steps before step `(s, t)`: the plan certifying `s·m + t − 1`.
    fn before(&self, s: u32, t: usize) -> f64 {
        let r = u64::from(s) * self.cum.len() as u64 + t as u64;
        if r == 0 { 0.0 } else { self.plan(r - 1) }
    }

    /// Cost of step `(s, t)`: substring `t` at exactly radius `s`.
    fn shell(&self, t: usize, s: u32) -> f64 {
        self.probed(t, u64::from(s) + 1) - self.probed(t, u64::from(s))
    }
}

/// Builder of a [`MultiIndex`]: `MultiIndex::builder().substrings(8).build(&sigs)`.
#[derive(Clone, Debug)]
pub struct MultiIndexBuilder {
    substrings: Option<usize>,
    delta_limit: Option<usize>,
    fallback: bool,
}

impl Default for MultiIndexBuilder {
    fn default() -> Self {
        MultiIndexBuilder {
            substrings: None,
            delta_limit: None,
            fallback: true,
        }
    }
}

impl MultiIndexBuilder {
    /// Fixes the number of substrings `m` (default: [`auto_substrings`] of the number of
    /// stored codes, recomputed at every rebuild). Must lie in `[⌈f/64⌉, f]`, checked by
    /// [`build`](Self::build).
    pub fn substrings(mut self, m: usize) -> Self {
        self.substrings = Some(m);
        self
    }

    /// Number of inserted codes kept in the linearly scanned delta before it is merged into
    /// the tables (default `max(256, 8·√N)`).
    pub fn delta_limit(mut self, limit: usize) -> Self {
        self.delta_limit = Some(limit);
        self
    }

    /// Whether searches may switch to a linear scan when the cost model says it is cheaper
    /// (default `true`). With `false` every search probes the tables, which is exact but can
    /// be extremely slow for large radii or wide substrings; meant for tests and
    /// measurements.
    pub fn fallback(mut self, on: bool) -> Self {
        self.fallback = on;
        self
    }

    fn check(&self, bits: usize) -> Result<()> {
        if bits == 0 {
            return Err(Error::param("bits", "must be at least 1"));
        }
        if let Some(m) = self.substrings {
            let lo = words_for(bits);
            if m < lo || m > bits {
                return Err(Error::param(
                    "substrings",
                    format!(
                        "{m} substrings of a {bits}-bit code: must lie in [{lo}, {bits}] (at most 64 bits each)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An index of the rows of `sigs`, with ids `0..N`; the tables are built in parallel.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a substring count out of range or more than `2^32 − 1`
    /// rows.
    pub fn build<S: AsRef<[u64]>>(&self, sigs: &SignatureMatrix<S>) -> Result<MultiIndex> {
        self.check(sigs.bits())?;
        let n = sigs.len();
        let n32 = u32::try_from(n)
            .ok()
            .filter(|&x| x < u32::MAX)
            .ok_or_else(|| Error::param("signatures", "at least 2^32 - 1 rows"))?;
        let mut idx = self.empty(sigs.bits())?;
        idx.install(sigs.as_slice().to_vec(), (0..n32).collect());
        Ok(idx)
    }

    /// An empty index of `bits`-bit codes.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `bits` is 0 or the substring count is out of range.
    pub fn empty(&self, bits: usize) -> Result<MultiIndex> {
        self.check(bits)?;
        let mut idx = MultiIndex {
            bits,
            words: words_for(bits),
            fixed_m: self.substrings,
            delta_limit: self.delta_limit,
            fallback: self.fallback,
            subs: Vec::new(),
            costs: Costs::default(),
            codes: Buf::default(),
            ids: Buf::default(),
            dead: Buf::default(),
            n_dead: 0,
            rows: Buf::default(),
            dirs: Buf::default(),
            keys: Buf::default(),
            delta_codes: Vec::new(),
            delta_ids: Vec::new(),
            pool: Mutex::new(Vec::new()),
        };
        idx.install(Vec::new(), Vec::new());
        Ok(idx)
    }
}

/// Exact Hamming search by multi-index hashing (Norouzi, Punjani & Fleet, CVPR 2012 / TPAMI
/// 2014): `m` substring tables probed within the radius the pigeonhole principle requires,
/// candidates verified on the full codes. Exact radius and k-NN search (ties at the `k`-th
/// distance broken by the smaller id), dynamic inserts and removals, parallel batch build and
/// batch queries.
///
/// # Structure
///
/// An `f`-bit code is cut into `m` substrings of consecutive bits: the first `f mod m` have
/// `⌈f/m⌉` bits, the others `⌊f/m⌋` (substring `t` starts where substring `t - 1` ends, bit 0
/// first). By default `m = round(f / log2 N)` (clamped to `[⌈f/64⌉, f]`, so that a substring
/// fits in a `u64`), computed from `N` at every (re)build; [`MultiIndexBuilder::substrings`]
/// fixes it. With this choice a substring has about `log2 N` bits, so a bucket holds about one
/// code.
///
/// The full codes are stored once (`codes`, `N × words`, in increasing id order, with `ids`
/// beside them); each substring `t` has one table listing the rows `0..N` sorted by the value
/// of that substring. A table is either
///
/// * **dense**: CSR-style offsets `dir` over every substring value (`2^w + 1` entries), bucket
///   `v` being `rows[dir[v]..dir[v + 1]]`; used when the substring has `w ≤ 22` bits and
///   `w ≤ ⌈log2 max(N, 1024)⌉ + 2`, i.e. when the directory holds at most ~8 entries per
///   code;
/// * **sparse**: the rows sorted by `(substring value, row)` with their values in `keys`, and
///   a directory over the top `p = min(⌈log2 N⌉, 22)` bits of the value narrowing the binary
///   search for an exact value to a bucket of about one entry.
///
/// No hash map is involved: every array is flat (a [`Buf`], so that an index file can be
/// memory-mapped).
///
/// # Exact radius search: which substrings to probe, and how far
///
/// Write the query radius as `r = m·r' + a` with `0 ≤ a < m`. The index probes substrings
/// `0..=a` within radius `r'` and substrings `a+1..m` within radius `r' − 1` (not at all when
/// `r' = 0`), the finer rule of the paper. It is exact: if a stored code at distance `d ≤ r`
/// were missed, its substring distances `d_t` would satisfy `d_t ≥ r' + 1` for the first
/// `a + 1` substrings and `d_t ≥ r'` for the others, so `d = Σ d_t ≥ (a+1)(r'+1) + (m−a−1)r'
/// = m·r' + a + 1 = r + 1`, a contradiction. It is also tight: with probe radii `ρ_t`
/// (`Σ_t (ρ_t + 1) = r + 1`), probing substring `t` only within `ρ_t − 1` would miss the code
/// whose substring distances are `ρ_t` at `t` and `ρ_u + 1` at every other `u`, at distance
/// exactly `r`. Compared with the plain pigeonhole rule (every substring within
/// `⌊r/m⌋ = r'`), it saves the radius-`r'` shell, the most expensive one, of `m − a − 1`
/// substrings.
///
/// A probe of substring `t` within radius `ρ` enumerates every value at Hamming distance
/// `0..=ρ` from the query's substring (Gosper's hack over the bit masks of each weight),
/// looks up its bucket, skips rows already seen for this query (a generation-stamped visited
/// array in per-query scratch, no hash set), and verifies each new row with the full-code
/// Hamming distance. Removed rows (tombstones) are skipped.
///
/// # The probing pipeline
///
/// A probe is a chain of dependent cache misses (directory slot, then bucket rows, then the
/// candidates' codes), so probes go through a four-stage pipeline in blocks of 64: prefetch
/// the directory slots; read the bucket ranges (binary search of sparse tables' keys) and
/// prefetch the first rows; read the candidate rows and prefetch their stamps and codes;
/// verify. The misses of a block overlap instead of being paid one after the other. Batch
/// radius searches push the probes of 16 consecutive queries through the same pipeline;
/// since the visited stamps belong to one query, duplicates are removed there from the sorted
/// hits instead (a code is then verified once per substring that reaches it).
///
/// # Exact k-NN: growing the radius
///
/// As in the paper's k-NN algorithm, the index probes shells of increasing radius
/// `s = 0, 1, 2, …`, substring by substring: step `(s, t)` probes substring `t` at exactly
/// radius `s`. After step `(s, t)`, substrings `0..=t` have been searched within `s` and the
/// others within `s − 1`, which by the argument above certifies every stored code at
/// distance `≤ s·m + t`. A top-`k` of `(distance, id)` is kept; the search stops as soon as
/// the `k`-th best distance is `≤ s·m + t`. At that point every code at a distance `≤` the
/// `k`-th distance has been verified, so the top-`k` is exact *including the tie-break by
/// smaller id at the `k`-th distance*. It also stops when every live code has been seen.
///
/// # Falling back to a scan
///
/// Probing costs grow like `C(w, s)` per shell, so for large radii a linear scan of the codes
/// is cheaper. The index keeps a cost model (estimated nanoseconds): a probe costs a directory
/// lookup plus the expected `N / 2^w` candidates of a bucket, each a random access and a
/// distance; a scan costs a few tenths of a nanosecond per code word.
///
/// * Radius search compares the cost of the whole probe plan with a scan of the stored codes
///   and scans when that is cheaper (always for `r ≥ f`); the answer is the same.
/// * k-NN checks before each step: once the top-`k` is full with `k`-th distance `D`, the
///   remaining cost is that of the plan certifying `D` minus what was already probed; before
///   that, the next shell's cost plus what was spent. When this exceeds a scan, the remaining
///   codes are scanned (rows already verified are skipped), which is exact for any `k`.
///   Batch k-NN defers such queries and scans them together, many queries per pass over the
///   codes (the tiled kernels of [`crate::hamming`]).
///
/// [`MultiIndexBuilder::fallback`]`(false)` disables the switch (always probe), for tests and
/// measurements.
///
/// # Updates
///
/// Inserts go to a small **delta** (codes sorted by id, scanned linearly by every query) that
/// is merged into the tables when it exceeds the delta limit: `max(256, 8·√N)` codes by
/// default ([`MultiIndexBuilder::delta_limit`]), e.g. 8,000 codes for `N = 10^6`, so that the
/// delta scan stays a small fraction of a query while a merge (which rebuilds the tables,
/// `O(m·N)`) happens once per that many inserts. Removals mark the row dead in a bitset
/// (tombstone); the index is compacted (tombstones dropped, delta merged, `m` recomputed when
/// automatic) when the dead rows exceed `max(delta limit, N/8)`. [`MultiIndex::compact`] does
/// it on demand.
///
/// # Memory
///
/// Per stored code: `8·words` (code) + 4 (id) + `4·m` (table rows), plus the directories
/// (`4·(2^w + 1)` bytes per dense table, `4·(2^p + 1)` + `8·N` per sparse table), one bit of
/// tombstone, and the delta. Queries use a scratch of `N` bytes per thread, reused across
/// queries and not counted in [`HammingIndex::bytes`]: the visited stamps, one byte per row
/// holding the generation of the last query that saw it (each query takes the next
/// generation, so nothing is cleared between queries; the array is zeroed once every 255
/// queries, when the generation wraps).
pub struct MultiIndex {
    bits: usize,
    words: usize,
    /// Substring count fixed by the user (`None`: automatic, recomputed at every rebuild).
    fixed_m: Option<usize>,
    delta_limit: Option<usize>,
    fallback: bool,
    /// Derived from `(bits, m, N)`.
    subs: Vec<Substring>,
    /// Derived from `subs`, `N` and `words`.
    costs: Costs,
    /// Main part: `N × words` codes, rows in increasing id order.
    codes: Buf<u64>,
    /// Id of each row, strictly increasing.
    ids: Buf<u32>,
    /// Tombstones: bit `row` set when the row was removed (`⌈N/64⌉` words).
    dead: Buf<u64>,
    n_dead: usize,
    /// `m × N`: table `t`'s rows are `rows[t·N..(t+1)·N]`, sorted by substring value.
    rows: Buf<u32>,
    /// The directories of all tables, concatenated (`2^prefix + 1` offsets each).
    dirs: Buf<u32>,
    /// The substring values of the sparse tables' rows, concatenated (`N` each).
    keys: Buf<u64>,
    /// Delta: codes inserted since the last rebuild, sorted by id.
    delta_codes: Vec<u64>,
    delta_ids: Vec<u32>,
    /// Query scratch, reused across queries.
    pool: Mutex<Vec<Scratch>>,
}

impl Clone for MultiIndex {
    fn clone(&self) -> Self {
        MultiIndex {
            bits: self.bits,
            words: self.words,
            fixed_m: self.fixed_m,
            delta_limit: self.delta_limit,
            fallback: self.fallback,
            subs: self.subs.clone(),
            costs: self.costs.clone(),
            codes: self.codes.clone(),
            ids: self.ids.clone(),
            dead: self.dead.clone(),
            n_dead: self.n_dead,
            rows: self.rows.clone(),
            dirs: self.dirs.clone(),
            keys: self.keys.clone(),
            delta_codes: self.delta_codes.clone(),
            delta_ids: self.delta_ids.clone(),
            pool: Mutex::new(Vec::new()),
        }
    }
}

impl std::fmt::Debug for MultiIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiIndex")
            .field("bits", &self.bits)
            .field("substrings", &self.substring_widths())
            .field("stored", &self.len())
            .field("main", &self.ids.len())
            .field("dead", &self.n_dead)
            .field("delta", &self.delta_ids.len())
            .finish()
    }
}

/// The arrays and parameters that define a [`MultiIndex`], for the persistence layer.
pub(crate) struct MultiIndexParts {
    /// Code width `f`.
    pub(crate) bits: usize,
    /// Substring count of the tables.
    pub(crate) substrings: usize,
    /// Whether the substring count is recomputed at rebuilds.
    pub(crate) auto_substrings: bool,
    /// The delta limit set by the user, if any.
    pub(crate) delta_limit: Option<usize>,
    /// Whether searches may fall back to a scan.
    pub(crate) fallback: bool,
    /// `N × words` codes, increasing id order.
    pub(crate) codes: Buf<u64>,
    /// `N` ids, strictly increasing.
    pub(crate) ids: Buf<u32>,
    /// `⌈N/64⌉` tombstone words.
    pub(crate) dead: Buf<u64>,
    /// `m × N` table rows.
    pub(crate) rows: Buf<u32>,
    /// Concatenated directories.
    pub(crate) dirs: Buf<u32>,
    /// Concatenated sparse-table keys.
    pub(crate) keys: Buf<u64>,
    /// Delta codes, sorted by id.
    pub(crate) delta_codes: Vec<u64>,
    /// Delta ids, strictly increasing.
    pub(crate) delta_ids: Vec<u32>,
}

/// Per-query scratch: visited stamps, query substrings, top-k heap, distance buffer.
#[derive(Debug, Default)]
struct Scratch {
    stamps: Vec<u8>,
    generation: u8,
    qsub: Vec<u64>,
    heap: BinaryHeap<u64>,
    dists: Vec<u32>,
    spans: Vec<Span>,
    cands: Vec<(u32, u32)>,
}

impl Scratch {
    /// Starts a query over `n` rows: returns a generation no stamp of a past query holds.
    fn start(&mut self, n: usize) -> u8 {
        if self.stamps.len() < n {
            self.stamps.resize(n, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamps.fill(0);
            self.generation = 1;
        }
        self.generation
    }
}

/// A scratch taken from the index's pool, returned on drop.
struct ScratchGuard<'a> {
    pool: &'a Mutex<Vec<Scratch>>,
    scratch: Option<Scratch>,
}

impl std::ops::Deref for ScratchGuard<'_> {
    type Target = Scratch;
    fn deref(&self) -> &Scratch {
        self.scratch.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for ScratchGuard<'_> {
    fn deref_mut(&mut self) -> &mut Scratch {
        self.scratch.as_mut().expect("present until drop")
    }
}

impl Drop for ScratchGuard<'_> {
    fn drop(&mut self) {
        if let (Some(s), Ok(mut pool)) = (self.scratch.take(), self.pool.lock()) {
            pool.push(s);
        }
    }
}

/// The main part's arrays, borrowed for a query.
struct View<'a> {
    words: usize,
    n: usize,
    subs: &'a [Substring],
    codes: &'a [u64],
    ids: &'a [u32],
    rows: &'a [u32],
    dirs: &'a [u32],
    keys: &'a [u64],
    /// `None` when no row is dead.
    dead: Option<&'a [u64]>,
}

/// Hints the CPU to load the cache line holding `x`.
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is only a hint: it never faults and has no architectural
        // effect; `x` is a valid reference anyway. SSE is part of the x86-64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// A probe on its way through the pipeline: query (index in the batch), table, substring
/// value, and the candidate rows' range in `rows` (the directory range until resolved).
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    query: u32,
    table: u32,
    value: u64,
    lo: usize,
    hi: usize,
}

impl View<'_> {
    /// Index in `dirs` of the directory slot of value `v` in table `t`.
    #[inline(always)]
    fn slot(&self, t: usize, v: u64) -> usize {
        let s = &self.subs[t];
        s.dir_start + (v >> (s.width - s.prefix)) as usize
    }

    #[inline(always)]
    fn is_dead(&self, row: usize) -> bool {
        self.dead
            .is_some_and(|d| d[row / 64] >> (row % 64) & 1 == 1)
    }

    #[inline(always)]
    fn dist<const W: usize>(&self, q: &[u64], row: usize) -> u32 {
        let w = if W == 0 { self.words } else { W };
        dist_words(q, &self.codes[row * w..row * w + w], w)
    }
}

/// Probes batched per pipeline flush: each stage issues the loads of the whole block before
/// the next stage waits for them, so that a block's cache misses overlap.
const BLOCK: usize = 64;

/// Probing state: the queries (`words` each) and their substrings (`m` each), visited stamps
/// (single-query searches), and the pipeline buffers.
struct Probe<'s> {
    queries: &'s [u64],
    qsub: &'s [u64],
    /// Visited stamps and the query's generation; `None` when several queries share the
    /// pipeline (the caller then deduplicates the hits).
    stamps: Option<(&'s mut [u8], u8)>,
    spans: &'s mut Vec<Span>,
    /// `(row, query)` candidates.
    cands: &'s mut Vec<(u32, u32)>,
}

impl Probe<'_> {
    /// Queues the probe of value `value` in table `t` for query `query`; flushes when the
    /// block is full.
    #[inline(always)]
    fn push<const W: usize>(
        &mut self,
        v: &View,
        query: usize,
        t: usize,
        value: u64,
        visit: &mut impl Visit,
    ) {
        self.spans.push(Span {
            query: query as u32,
            table: t as u32,
            value,
            lo: 0,
            hi: 0,
        });
        if self.spans.len() == BLOCK {
            self.flush::<W>(v, visit);
        }
    }

    /// Runs the queued probes through the pipeline: (1) prefetch the directory slots,
    /// (2) read the bucket ranges (binary search of sparse tables) and prefetch the rows,
    /// (3) read the candidate rows and prefetch their stamps and codes, (4) verify the rows
    /// not seen before, calling `visit.visit(query, row, distance)` for each live one.
    #[inline(always)]
    fn flush<const W: usize>(&mut self, v: &View, visit: &mut impl Visit) {
        let w = if W == 0 { v.words } else { W };
        for sp in self.spans.iter() {
            prefetch(&v.dirs[v.slot(sp.table as usize, sp.value)]);
        }
        let mut any_sparse = false;
        for sp in self.spans.iter_mut() {
            let t = sp.table as usize;
            let s = &v.subs[t];
            let d = v.slot(t, sp.value);
            let (lo, hi) = (v.dirs[d] as usize, v.dirs[d + 1] as usize);
            (sp.lo, sp.hi) = (lo, hi);
            if s.dense() {
                sp.lo += t * v.n;
                sp.hi += t * v.n;
                if lo < hi {
                    prefetch(&v.rows[sp.lo]);
                }
            } else {
                any_sparse = true;
                if lo < hi {
                    prefetch(&v.keys[s.key_start + lo]);
                }
            }
        }
        if any_sparse {
            for sp in self.spans.iter_mut() {
                let t = sp.table as usize;
                let s = &v.subs[t];
                if s.dense() {
                    continue;
                }
                let keys = &v.keys[s.key_start + sp.lo..s.key_start + sp.hi];
                let a = keys.partition_point(|&x| x < sp.value);
                let e = a + keys[a..].partition_point(|&x| x == sp.value);
                (sp.lo, sp.hi) = (t * v.n + sp.lo + a, t * v.n + sp.lo + e);
                if a < e {
                    prefetch(&v.rows[sp.lo]);
                }
            }
        }
        self.cands.clear();
        for sp in self.spans.iter() {
            for &row in &v.rows[sp.lo..sp.hi] {
                let r = row as usize;
                if let Some((stamps, _)) = &self.stamps {
                    prefetch(&stamps[r]);
                }
                prefetch(&v.codes[r * w]);
                self.cands.push((row, sp.query));
            }
        }
        self.spans.clear();
        for &(row, qi) in self.cands.iter() {
            let row = row as usize;
            if let Some((stamps, generation)) = &mut self.stamps {
                if stamps[row] == *generation {
                    continue;
                }
                stamps[row] = *generation;
            }
            if v.is_dead(row) {
                continue;
            }
            let qi = qi as usize;
            let q = &self.queries[qi * w..(qi + 1) * w];
            visit.visit(qi, row, v.dist::<W>(q, row));
        }
    }
}

/// Parameters of a k-NN probe run.
struct KnnRun<'a> {
    k: usize,
    /// Live rows of the main part.
    live: usize,
    costs: &'a Costs,
    /// Scan cost beyond which the run gives up (infinite: never).
    budget: f64,
}

/// How a k-NN probe run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KnnEnd {
    /// The heap holds the exact top-k of the main part and the delta.
    Done,
    /// Probing further would cost more than a scan.
    Scan,
}

/// Top-k keys `(distance << 32) | id`; the bound a new key must beat.
#[inline(always)]
fn threshold(heap: &BinaryHeap<u64>, k: usize) -> u64 {
    if heap.len() < k {
        u64::MAX
    } else {
        heap.peek().copied().unwrap_or(0)
    }
}

/// Offers `key` to a top-`k` heap (`k ≥ 1`); the caller checked `key < threshold`.
#[inline(always)]
fn offer(heap: &mut BinaryHeap<u64>, k: usize, key: u64) {
    if heap.len() < k {
        heap.push(key);
    } else if let Some(mut top) = heap.peek_mut() {
        *top = key;
    }
}

#[inline(always)]
fn key(distance: u32, id: u32) -> u64 {
    (u64::from(distance) << 32) | u64::from(id)
}

/// What to do with each new live candidate row and its distance.
trait Visit {
    fn visit(&mut self, query: usize, row: usize, distance: u32);
}

/// Radius search: keep the rows within `r`, per query. The hits hold the *row* in `id`
/// until [`rows_to_ids`] maps them (after the probing, with the id loads overlapped).
struct RadiusVisit<'a> {
    r: u32,
    outs: &'a mut [Vec<Hit>],
}

impl Visit for RadiusVisit<'_> {
    #[inline(always)]
    fn visit(&mut self, query: usize, row: usize, distance: u32) {
        if distance <= self.r {
            self.outs[query].push(Hit {
                distance,
                id: row as u32,
            });
        }
    }
}

/// Replaces the rows held in `hits[..].id` by their ids.
fn rows_to_ids(ids: &[u32], hits: &mut [Hit]) {
    for h in hits.iter() {
        prefetch(&ids[h.id as usize]);
    }
    for h in hits.iter_mut() {
        h.id = ids[h.id as usize];
    }
}

/// k-NN: offer each row to the top-k; count the live rows seen.
struct KnnVisit<'a> {
    k: usize,
    ids: &'a [u32],
    heap: &'a mut BinaryHeap<u64>,
    thr: u64,
    seen: usize,
}

impl Visit for KnnVisit<'_> {
    #[inline(always)]
    fn visit(&mut self, _query: usize, row: usize, distance: u32) {
        self.seen += 1;
        // The id (a random access) is read only when the distance can enter the top-k.
        if u64::from(distance) <= self.thr >> 32 {
            let kk = key(distance, self.ids[row]);
            if kk < self.thr {
                offer(self.heap, self.k, kk);
                self.thr = threshold(self.heap, self.k);
            }
        }
    }
}

/// Radius probe: for each query `i` of the probe, every main-part code within `r` is
/// appended to `outs[i]` *as its row* (see [`rows_to_ids`]), probing substring `t` at radii
/// `0..shells[t]`. Without stamps a code may be appended more than once.
#[inline(always)]
fn radius_body<const W: usize>(
    v: &View,
    r: u32,
    shells: &[u32],
    p: &mut Probe,
    outs: &mut [Vec<Hit>],
) {
    let m = v.subs.len();
    let mut visit = RadiusVisit { r, outs };
    for qi in 0..p.qsub.len() / m {
        for (t, s) in v.subs.iter().enumerate() {
            let qv = p.qsub[qi * m + t];
            for j in 0..shells[t] {
                for mask in Flips::new(s.width, j) {
                    p.push::<W>(v, qi, t, qv ^ mask, &mut visit);
                }
            }
        }
    }
    p.flush::<W>(v, &mut visit);
}

/// k-NN probe by growing radius (see the documentation of [`MultiIndex`]); `heap` may already hold
/// delta codes.
#[inline(always)]
fn knn_body<const W: usize>(
    v: &View,
    run: &KnnRun,
    p: &mut Probe,
    heap: &mut BinaryHeap<u64>,
) -> KnnEnd {
    let (k, m) = (run.k, v.subs.len());
    if run.live == 0 {
        return KnnEnd::Done;
    }
    let max_width = v.subs.iter().map(|s| s.width).max().unwrap_or(0);
    let thr = threshold(heap, k);
    let mut visit = KnnVisit {
        k,
        ids: v.ids,
        heap,
        thr,
        seen: 0,
    };
    let mut spent = 0.0;
    for s in 0..=max_width {
        for (t, sub) in v.subs.iter().enumerate() {
            if s <= sub.width {
                if run.budget.is_finite() {
                    let next = run.costs.shell(t, s);
                    let over = if visit.heap.len() == k {
                        let dk = visit.thr >> 32;
                        run.costs.plan(dk) - run.costs.before(s, t) > run.budget
                    } else {
                        spent + next > run.budget
                    };
                    if over {
                        return KnnEnd::Scan;
                    }
                    spent += next;
                }
                let qv = p.qsub[t];
                for mask in Flips::new(sub.width, s) {
                    p.push::<W>(v, 0, t, qv ^ mask, &mut visit);
                }
                p.flush::<W>(v, &mut visit);
            }
            let certified = u64::from(s) * m as u64 + t as u64;
            if visit.heap.len() == k && visit.thr >> 32 <= certified {
                return KnnEnd::Done;
            }
            if visit.seen == run.live {
                return KnnEnd::Done;
            }
        }
    }
    KnnEnd::Done
}

/// True when the dispatched Hamming kernels use hardware `POPCNT` (`popcnt` or `avx2` set).
fn has_popcnt() -> bool {
    static POPCNT: OnceLock<bool> = OnceLock::new();
    *POPCNT.get_or_init(|| hamming::kernel_name() != "scalar")
}

fn radius_probe(v: &View, r: u32, shells: &[u32], p: &mut Probe, outs: &mut [Vec<Hit>]) {
    #[cfg(target_arch = "x86_64")]
    if has_popcnt() {
        // SAFETY: `has_popcnt` is true only when the CPU has POPCNT (the dispatched kernel
        // set was chosen by run-time feature detection).
        unsafe { radius_probe_popcnt(v, r, shells, p, outs) };
        return;
    }
    by_words!(v.words, radius_body(v, r, shells, p, outs))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn radius_probe_popcnt(
    v: &View,
    r: u32,
    shells: &[u32],
    p: &mut Probe,
    outs: &mut [Vec<Hit>],
) {
    by_words!(v.words, radius_body(v, r, shells, p, outs))
}

fn knn_probe(v: &View, run: &KnnRun, p: &mut Probe, heap: &mut BinaryHeap<u64>) -> KnnEnd {
    #[cfg(target_arch = "x86_64")]
    if has_popcnt() {
        // SAFETY: as in `radius_probe`.
        return unsafe { knn_probe_popcnt(v, run, p, heap) };
    }
    by_words!(v.words, knn_body(v, run, p, heap))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn knn_probe_popcnt(
    v: &View,
    run: &KnnRun,
    p: &mut Probe,
    heap: &mut BinaryHeap<u64>,
) -> KnnEnd {
    by_words!(v.words, knn_body(v, run, p, heap))
}

/// Builds the table of substring `s` over `n` codes: fills `rows` (`n` entries) and returns
/// its directory and keys (empty for a dense table).
fn build_table(
    s: &Substring,
    codes: &[u64],
    words: usize,
    rows: &mut [u32],
) -> (Vec<u32>, Vec<u64>) {
    let n = rows.len();
    let code = |row: usize| &codes[row * words..(row + 1) * words];
    let size = 1usize << s.prefix;
    let mut dir = vec![0u32; size + 1];
    if s.dense() {
        for row in 0..n {
            dir[s.extract(code(row)) as usize + 1] += 1;
        }
        for i in 0..size {
            dir[i + 1] += dir[i];
        }
        let mut cursor = dir[..size].to_vec();
        for row in 0..n {
            let c = &mut cursor[s.extract(code(row)) as usize];
            rows[*c as usize] = row as u32;
            *c += 1;
        }
        (dir, Vec::new())
    } else {
        let shift = s.width - s.prefix;
        let mut pairs: Vec<(u64, u32)> = (0..n).map(|r| (s.extract(code(r)), r as u32)).collect();
        pairs.sort_unstable();
        for &(k, _) in &pairs {
            dir[(k >> shift) as usize + 1] += 1;
        }
        for i in 0..size {
            dir[i + 1] += dir[i];
        }
        for (slot, &(_, r)) in rows.iter_mut().zip(&pairs) {
            *slot = r;
        }
        (dir, pairs.into_iter().map(|(k, _)| k).collect())
    }
}

impl MultiIndex {
    /// A builder with the defaults (automatic `m`, automatic delta limit, scan fallback on).
    pub fn builder() -> MultiIndexBuilder {
        MultiIndexBuilder::default()
    }

    /// An index of the rows of `sigs` (ids `0..N`) with the default settings.
    ///
    /// # Errors
    /// As [`MultiIndexBuilder::build`].
    pub fn build<S: AsRef<[u64]>>(sigs: &SignatureMatrix<S>) -> Result<Self> {
        MultiIndexBuilder::default().build(sigs)
    }

    /// An empty index of `bits`-bit codes with the default settings.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `bits` is 0.
    pub fn new(bits: usize) -> Result<Self> {
        MultiIndexBuilder::default().empty(bits)
    }

    /// Number of substrings `m` of the current tables.
    pub fn substrings(&self) -> usize {
        self.subs.len()
    }

    /// Width in bits of each substring, in order (they add up to `f`).
    pub fn substring_widths(&self) -> Vec<usize> {
        self.subs.iter().map(|s| s.width as usize).collect()
    }

    /// Radius within which each substring is probed for a search of radius `r` (`None`: not
    /// probed), before the scan fallback is considered: `r'` for substrings `0..=a` and
    /// `r' − 1` for the others, where `r = m·r' + a`.
    pub fn probe_radii(&self, r: u32) -> Vec<Option<u32>> {
        let m = self.subs.len();
        (0..m)
            .map(|t| {
                shells_for(u64::from(r), m, t)
                    .checked_sub(1)
                    .map(|x| x as u32)
            })
            .collect()
    }

    /// Codes in the delta (inserted since the last rebuild, scanned linearly).
    pub fn delta_len(&self) -> usize {
        self.delta_ids.len()
    }

    /// Removed codes still present as tombstones in the tables.
    pub fn dead_len(&self) -> usize {
        self.n_dead
    }

    /// Merges the delta into the tables and drops the tombstones (recomputing `m` when it is
    /// automatic); tables are rebuilt in parallel.
    pub fn compact(&mut self) {
        if self.delta_ids.is_empty() && self.n_dead == 0 {
            return;
        }
        let w = self.words;
        let live = self.ids.len() - self.n_dead + self.delta_ids.len();
        let mut codes = Vec::with_capacity(live * w);
        let mut ids = Vec::with_capacity(live);
        let (mut i, mut j) = (0, 0);
        let view = self.view();
        while i < self.ids.len() || j < self.delta_ids.len() {
            let take_main = j == self.delta_ids.len()
                || (i < self.ids.len() && self.ids[i] < self.delta_ids[j]);
            if take_main {
                if !view.is_dead(i) {
                    ids.push(self.ids[i]);
                    codes.extend_from_slice(&self.codes[i * w..(i + 1) * w]);
                }
                i += 1;
            } else {
                ids.push(self.delta_ids[j]);
                codes.extend_from_slice(&self.delta_codes[j * w..(j + 1) * w]);
                j += 1;
            }
        }
        self.install(codes, ids);
    }

    /// Makes `codes` / `ids` (sorted by id) the main part, with an empty delta, and builds the
    /// tables.
    fn install(&mut self, codes: Vec<u64>, ids: Vec<u32>) {
        let n = ids.len();
        let w = self.words;
        let m = self
            .fixed_m
            .unwrap_or_else(|| auto_substrings(self.bits, n));
        let (subs, dirs_len, keys_len) = layout(self.bits, m, n);
        let mut rows = vec![0u32; m * n];
        let (dirs, keys) = if n == 0 {
            (vec![0u32; dirs_len], Vec::new())
        } else {
            let parts: Vec<(Vec<u32>, Vec<u64>)> = rows
                .par_chunks_mut(n)
                .zip(subs.par_iter())
                .map(|(r, s)| build_table(s, &codes, w, r))
                .collect();
            let mut dirs = Vec::with_capacity(dirs_len);
            let mut keys = Vec::with_capacity(keys_len);
            for (d, k) in parts {
                dirs.extend(d);
                keys.extend(k);
            }
            (dirs, keys)
        };
        debug_assert_eq!((dirs.len(), keys.len()), (dirs_len, keys_len));
        self.costs = Costs::new(&subs, n, w);
        self.subs = subs;
        self.codes = codes.into();
        self.ids = ids.into();
        self.dead = vec![0u64; n.div_ceil(64)].into();
        self.n_dead = 0;
        self.rows = rows.into();
        self.dirs = dirs.into();
        self.keys = keys.into();
        self.delta_codes.clear();
        self.delta_ids.clear();
    }

    /// The delta size that triggers a merge.
    fn delta_cap(&self) -> usize {
        self.delta_limit
            .unwrap_or_else(|| 256.max((8.0 * (self.ids.len() as f64).sqrt()) as usize))
    }

    fn view(&self) -> View<'_> {
        View {
            words: self.words,
            n: self.ids.len(),
            subs: &self.subs,
            codes: &self.codes,
            ids: &self.ids,
            rows: &self.rows,
            dirs: &self.dirs,
            keys: &self.keys,
            dead: (self.n_dead > 0).then_some(&self.dead[..]),
        }
    }

    fn scratch(&self) -> ScratchGuard<'_> {
        let s = self.pool.lock().ok().and_then(|mut p| p.pop());
        ScratchGuard {
            pool: &self.pool,
            scratch: Some(s.unwrap_or_default()),
        }
    }

    /// Live rows of the main part.
    fn live_main(&self) -> usize {
        self.ids.len() - self.n_dead
    }

    /// Probe shells per substring for radius `r`, if probing beats a scan costing `scan`.
    fn radius_plan(&self, r: u32, scan: f64) -> Option<Vec<u32>> {
        if self.fallback && (r as usize >= self.bits || self.costs.plan(u64::from(r)) > scan) {
            return None;
        }
        let m = self.subs.len();
        Some(
            self.subs
                .iter()
                .enumerate()
                .map(|(t, s)| shells_for(u64::from(r), m, t).min(u64::from(s.width) + 1) as u32)
                .collect(),
        )
    }

    /// Appends the delta codes within `r` of `q` to `out`.
    fn delta_radius(&self, q: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()> {
        hamming::scan_radius(q, &self.delta_codes, self.words, r, |_, i, d| {
            out.push(Hit {
                distance: d,
                id: self.delta_ids[i],
            })
        })
    }

    /// Appends the main-part codes within `r` of every query of `qs` to `found[query]` by a
    /// scan (one pass for all the queries).
    fn scan_radius_main(&self, qs: &[u64], r: u32, found: &mut [Vec<Hit>]) -> Result<()> {
        let view = self.view();
        hamming::scan_radius(qs, &self.codes, self.words, r, |qi, i, d| {
            if !view.is_dead(i) {
                found[qi].push(Hit {
                    distance: d,
                    id: self.ids[i],
                });
            }
        })
    }

    /// Radius search of one checked query; `plan` from [`radius_plan`](Self::radius_plan).
    fn radius_one(
        &self,
        q: &[u64],
        r: u32,
        plan: Option<&[u32]>,
        sc: &mut Scratch,
        out: &mut Vec<Hit>,
    ) -> Result<()> {
        out.clear();
        self.delta_radius(q, r, out)?;
        if self.live_main() > 0 {
            match plan {
                Some(shells) => {
                    let view = self.view();
                    let generation = sc.start(view.n);
                    sc.qsub.clear();
                    sc.qsub.extend(self.subs.iter().map(|s| s.extract(q)));
                    let mut p = Probe {
                        queries: q,
                        qsub: &sc.qsub,
                        stamps: Some((&mut sc.stamps, generation)),
                        spans: &mut sc.spans,
                        cands: &mut sc.cands,
                    };
                    let start = out.len();
                    radius_probe(&view, r, shells, &mut p, std::slice::from_mut(out));
                    rows_to_ids(&self.ids, &mut out[start..]);
                }
                None => self.scan_radius_main(q, r, std::slice::from_mut(out))?,
            }
        }
        out.sort_unstable();
        Ok(())
    }

    /// Radius search of a batch of checked queries sharing the probe pipeline (their probes
    /// fill the same blocks, so that the cache misses of consecutive queries overlap). The
    /// visited stamps are per query, so they are not used here: a code reached through several
    /// substrings is verified again, and the duplicate hits are removed after sorting.
    fn radius_many(
        &self,
        qs: &[u64],
        r: u32,
        shells: &[u32],
        sc: &mut Scratch,
    ) -> Result<Vec<Vec<Hit>>> {
        let w = self.words;
        let mut outs = vec![Vec::new(); qs.len() / w];
        if self.live_main() > 0 {
            let view = self.view();
            sc.qsub.clear();
            for q in qs.chunks(w) {
                sc.qsub.extend(self.subs.iter().map(|s| s.extract(q)));
            }
            let mut p = Probe {
                queries: qs,
                qsub: &sc.qsub,
                stamps: None,
                spans: &mut sc.spans,
                cands: &mut sc.cands,
            };
            radius_probe(&view, r, shells, &mut p, &mut outs);
            for out in &mut outs {
                rows_to_ids(&self.ids, out);
            }
        }
        for (q, out) in qs.chunks(w).zip(&mut outs) {
            self.delta_radius(q, r, out)?;
            out.sort_unstable();
            out.dedup();
        }
        Ok(outs)
    }

    /// Fills `sc.heap` with the delta's codes (top-k).
    fn delta_knn(&self, q: &[u64], k: usize, sc: &mut Scratch) -> Result<()> {
        let nd = self.delta_ids.len();
        if sc.dists.len() < nd {
            sc.dists.resize(nd, 0);
        }
        hamming::distances(q, &self.delta_codes, self.words, &mut sc.dists[..nd])?;
        let mut thr = threshold(&sc.heap, k);
        for (&d, &id) in sc.dists[..nd].iter().zip(&self.delta_ids) {
            let kk = key(d, id);
            if kk < thr {
                offer(&mut sc.heap, k, kk);
                thr = threshold(&sc.heap, k);
            }
        }
        Ok(())
    }

    /// Scans the main part into `sc.heap`, skipping rows stamped with `generation` (already
    /// offered).
    fn scan_knn_main(&self, q: &[u64], k: usize, generation: u8, sc: &mut Scratch) -> Result<()> {
        let view = self.view();
        let w = self.words;
        let n = view.n;
        if sc.dists.len() < SCAN_CHUNK {
            sc.dists.resize(SCAN_CHUNK, 0);
        }
        let mut thr = threshold(&sc.heap, k);
        let mut start = 0;
        while start < n {
            let end = n.min(start + SCAN_CHUNK);
            let dists = &mut sc.dists[..end - start];
            hamming::distances(q, &self.codes[start * w..end * w], w, dists)?;
            for (i, &d) in dists.iter().enumerate() {
                let row = start + i;
                let kk = key(d, self.ids[row]);
                if kk < thr && sc.stamps[row] != generation && !view.is_dead(row) {
                    offer(&mut sc.heap, k, kk);
                    thr = threshold(&sc.heap, k);
                }
            }
            start = end;
        }
        Ok(())
    }

    /// k-NN of one checked query into `sc.heap`. With `defer`, returns `false` instead of
    /// scanning when the cost model prefers a scan (the heap is then incomplete).
    fn knn_heap(&self, q: &[u64], k: usize, sc: &mut Scratch, defer: bool) -> Result<bool> {
        sc.heap.clear();
        if k == 0 {
            return Ok(true);
        }
        self.delta_knn(q, k, sc)?;
        let view = self.view();
        let generation = sc.start(view.n);
        let live = self.live_main();
        if live == 0 {
            return Ok(true);
        }
        let budget = match (self.fallback, defer) {
            (false, _) => f64::INFINITY,
            (true, false) => self.costs.scan,
            (true, true) => self.costs.scan_batch,
        };
        let end = if self.fallback && k >= live + self.delta_ids.len() {
            KnnEnd::Scan
        } else {
            sc.qsub.clear();
            sc.qsub.extend(self.subs.iter().map(|s| s.extract(q)));
            let run = KnnRun {
                k,
                live,
                costs: &self.costs,
                budget,
            };
            let mut p = Probe {
                queries: q,
                qsub: &sc.qsub,
                stamps: Some((&mut sc.stamps, generation)),
                spans: &mut sc.spans,
                cands: &mut sc.cands,
            };
            knn_probe(&view, &run, &mut p, &mut sc.heap)
        };
        if end == KnnEnd::Scan {
            if defer {
                return Ok(false);
            }
            self.scan_knn_main(q, k, generation, sc)?;
        }
        Ok(true)
    }

    /// The heap's keys as sorted hits.
    fn heap_hits(heap: &mut BinaryHeap<u64>, out: &mut Vec<Hit>) {
        out.clear();
        out.extend(heap.drain().map(|kk| Hit {
            distance: (kk >> 32) as u32,
            id: kk as u32,
        }));
        out.sort_unstable();
    }

    /// Exact k-NN by one batched scan for `qs` (deferred queries): main part through the tiled
    /// kernel (no tombstones) or per-query scans, merged with the delta.
    fn knn_scan_batch(&self, qs: &[u64], k: usize, sc: &mut Scratch) -> Result<Vec<Vec<Hit>>> {
        let w = self.words;
        if self.n_dead > 0 {
            return qs
                .chunks(w)
                .map(|q| {
                    sc.heap.clear();
                    self.delta_knn(q, k, sc)?;
                    let generation = sc.start(self.ids.len());
                    self.scan_knn_main(q, k, generation, sc)?;
                    let mut out = Vec::new();
                    Self::heap_hits(&mut sc.heap, &mut out);
                    Ok(out)
                })
                .collect();
        }
        let main = hamming::scan_knn(qs, &self.codes, w, k)?;
        qs.chunks(w)
            .zip(main)
            .map(|(q, nbrs)| {
                sc.heap.clear();
                self.delta_knn(q, k, sc)?;
                let mut thr = threshold(&sc.heap, k);
                for nb in nbrs {
                    let kk = key(nb.dist, self.ids[nb.index]);
                    if kk < thr {
                        offer(&mut sc.heap, k, kk);
                        thr = threshold(&sc.heap, k);
                    }
                }
                let mut out = Vec::new();
                Self::heap_hits(&mut sc.heap, &mut out);
                Ok(out)
            })
            .collect()
    }

    /// Checks every query of a batch; returns the words per code.
    fn check_batch(&self, queries: &[u64]) -> Result<usize> {
        let w = check_queries(self.bits, queries)?;
        for q in queries.chunks(w) {
            check_code(self.bits, q)?;
        }
        Ok(w)
    }

    /// Rebuilds the index from its arrays (see [`MultiIndexParts`]), validating their shapes
    /// and invariants: sizes, sorted ids, directories monotone and ending at `N`, each table a
    /// permutation of the rows, sparse keys sorted and in their directory bucket, padding bits
    /// zero. Whether the tables agree with the codes is not checked (that is the job of the
    /// file's checksum): inconsistent tables give wrong answers but never a panic.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] describing the first violated invariant.
    pub(crate) fn from_parts(parts: MultiIndexParts) -> Result<Self> {
        let bad = |what: &str| Error::param("index data", what.to_string());
        let bits = parts.bits;
        let builder = MultiIndexBuilder {
            substrings: Some(parts.substrings),
            delta_limit: parts.delta_limit,
            fallback: parts.fallback,
        };
        builder.check(bits)?;
        let w = words_for(bits);
        let n = parts.ids.len();
        if n >= u32::MAX as usize {
            return Err(bad("too many rows"));
        }
        if parts.codes.len() != n * w || parts.ids.windows(2).any(|p| p[0] >= p[1]) {
            return Err(bad("codes and ids are inconsistent"));
        }
        let mask = last_word_mask(bits);
        let padded = |c: &[u64]| c.chunks(w).any(|c| c[w - 1] & !mask != 0);
        if padded(&parts.codes) || padded(&parts.delta_codes) {
            return Err(bad("codes have bits set beyond the signature width"));
        }
        if parts.dead.len() != n.div_ceil(64)
            || (n % 64 != 0 && parts.dead.last().is_some_and(|d| d >> (n % 64) != 0))
        {
            return Err(bad("tombstones do not match the rows"));
        }
        let n_dead = hamming::popcount(&parts.dead) as usize;
        let m = parts.substrings;
        let (subs, dirs_len, keys_len) = layout(bits, m, n);
        if parts.rows.len() != m * n || parts.dirs.len() != dirs_len || parts.keys.len() != keys_len
        {
            return Err(bad("table arrays have the wrong sizes"));
        }
        let mut seen = vec![0u64; n.div_ceil(64)];
        for (t, s) in subs.iter().enumerate() {
            let dir = &parts.dirs[s.dir_start..s.dir_start + (1usize << s.prefix) + 1];
            if dir[0] != 0
                || dir[dir.len() - 1] as usize != n
                || dir.windows(2).any(|p| p[0] > p[1])
            {
                return Err(bad("a directory is not monotone from 0 to N"));
            }
            seen.fill(0);
            for &row in &parts.rows[t * n..(t + 1) * n] {
                let row = row as usize;
                if row >= n || seen[row / 64] >> (row % 64) & 1 == 1 {
                    return Err(bad("a table is not a permutation of the rows"));
                }
                seen[row / 64] |= 1 << (row % 64);
            }
            if !s.dense() {
                let keys = &parts.keys[s.key_start..s.key_start + n];
                let shift = s.width - s.prefix;
                let top = if s.width == 64 {
                    u64::MAX
                } else {
                    (1u64 << s.width) - 1
                };
                for b in 0..(1usize << s.prefix) {
                    let ks = &keys[dir[b] as usize..dir[b + 1] as usize];
                    if ks.windows(2).any(|p| p[0] > p[1])
                        || ks.iter().any(|&k| k > top || (k >> shift) as usize != b)
                    {
                        return Err(bad("sparse keys are not sorted in their buckets"));
                    }
                }
            }
        }
        let nd = parts.delta_ids.len();
        if parts.delta_codes.len() != nd * w || parts.delta_ids.windows(2).any(|p| p[0] >= p[1]) {
            return Err(bad("delta codes and ids are inconsistent"));
        }
        let mut idx = builder.empty(bits)?;
        idx.fixed_m = (!parts.auto_substrings).then_some(m);
        idx.costs = Costs::new(&subs, n, w);
        idx.subs = subs;
        idx.codes = parts.codes;
        idx.ids = parts.ids;
        idx.dead = parts.dead;
        idx.n_dead = n_dead;
        idx.rows = parts.rows;
        idx.dirs = parts.dirs;
        idx.keys = parts.keys;
        for &id in &parts.delta_ids {
            if idx.main_row(id).is_some() {
                return Err(bad("a delta id is also stored in the tables"));
            }
        }
        idx.delta_codes = parts.delta_codes;
        idx.delta_ids = parts.delta_ids;
        Ok(idx)
    }

    /// The arrays and parameters defining the index (see [`MultiIndexParts`]), sharing mapped
    /// arrays and copying owned ones.
    pub(crate) fn to_parts(&self) -> MultiIndexParts {
        MultiIndexParts {
            bits: self.bits,
            substrings: self.subs.len(),
            auto_substrings: self.fixed_m.is_none(),
            delta_limit: self.delta_limit,
            fallback: self.fallback,
            codes: self.codes.clone(),
            ids: self.ids.clone(),
            dead: self.dead.clone(),
            rows: self.rows.clone(),
            dirs: self.dirs.clone(),
            keys: self.keys.clone(),
            delta_codes: self.delta_codes.clone(),
            delta_ids: self.delta_ids.clone(),
        }
    }

    /// The live main-part row holding `id`.
    fn main_row(&self, id: Id) -> Option<usize> {
        let row = self.ids.binary_search(&id).ok()?;
        (!self.view().is_dead(row)).then_some(row)
    }
}

impl HammingIndex for MultiIndex {
    fn save(&self, path: &std::path::Path) -> Result<()> {
        MultiIndex::save(self, path)
    }

    fn kind(&self) -> &'static str {
        "mih"
    }

    fn spec(&self) -> super::IndexSpec {
        super::IndexSpec::Mih(super::MihSpec {
            substrings: self.fixed_m,
            delta_limit: self.delta_limit,
            fallback: self.fallback,
        })
    }

    fn bits(&self) -> usize {
        self.bits
    }

    fn len(&self) -> usize {
        self.live_main() + self.delta_ids.len()
    }

    fn bytes(&self) -> usize {
        self.codes.data_bytes()
            + self.ids.data_bytes()
            + self.dead.data_bytes()
            + self.rows.data_bytes()
            + self.dirs.data_bytes()
            + self.keys.data_bytes()
            + self.delta_codes.capacity() * 8
            + self.delta_ids.capacity() * 4
    }

    fn insert(&mut self, id: Id, code: &[u64]) -> Result<()> {
        check_code(self.bits, code)?;
        let pos = match self.delta_ids.binary_search(&id) {
            Ok(_) => None,
            Err(p) => self.main_row(id).is_none().then_some(p),
        };
        let Some(pos) = pos else {
            return Err(Error::param("id", format!("id {id} is already stored")));
        };
        if self.len() >= u32::MAX as usize - 1 {
            return Err(Error::param("id", "the index holds 2^32 - 2 codes"));
        }
        let w = self.words;
        self.delta_ids.insert(pos, id);
        self.delta_codes
            .splice(pos * w..pos * w, code.iter().copied());
        if self.delta_ids.len() > self.delta_cap() {
            self.compact();
        }
        Ok(())
    }

    fn remove(&mut self, id: Id) -> Result<bool> {
        if let Ok(pos) = self.delta_ids.binary_search(&id) {
            let w = self.words;
            self.delta_ids.remove(pos);
            self.delta_codes.drain(pos * w..(pos + 1) * w);
            return Ok(true);
        }
        let Some(row) = self.main_row(id) else {
            return Ok(false);
        };
        self.dead.to_mut()[row / 64] |= 1 << (row % 64);
        self.n_dead += 1;
        if self.n_dead > self.delta_cap().max(self.ids.len() / 8) {
            self.compact();
        }
        Ok(true)
    }

    fn radius_into(&self, query: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        let plan = self.radius_plan(r, self.costs.scan);
        let mut sc = self.scratch();
        self.radius_one(query, r, plan.as_deref(), &mut sc, out)
    }

    fn knn_into(&self, query: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        let mut sc = self.scratch();
        self.knn_heap(query, k, &mut sc, false)?;
        Self::heap_hits(&mut sc.heap, out);
        Ok(())
    }

    fn radius_batch(&self, queries: &[u64], r: u32) -> Result<Vec<Vec<Hit>>> {
        let w = self.check_batch(queries)?;
        match self.radius_plan(r, self.costs.scan_batch) {
            Some(plan) => {
                let chunks: Vec<Vec<Vec<Hit>>> = queries
                    .par_chunks(w * PROBE_BATCH)
                    .map_init(
                        || self.scratch(),
                        |sc, qs| self.radius_many(qs, r, &plan, sc),
                    )
                    .collect::<Result<_>>()?;
                Ok(chunks.into_iter().flatten().collect())
            }
            None => {
                let chunks: Vec<Vec<Vec<Hit>>> = queries
                    .par_chunks(w * QUERY_BATCH)
                    .map(|qs| {
                        let mut found = vec![Vec::new(); qs.len() / w];
                        if self.live_main() > 0 {
                            self.scan_radius_main(qs, r, &mut found)?;
                        }
                        for (q, f) in qs.chunks(w).zip(&mut found) {
                            self.delta_radius(q, r, f)?;
                            f.sort_unstable();
                        }
                        Ok(found)
                    })
                    .collect::<Result<_>>()?;
                Ok(chunks.into_iter().flatten().collect())
            }
        }
    }

    fn knn_batch(&self, queries: &[u64], k: usize) -> Result<Vec<Vec<Hit>>> {
        let w = self.check_batch(queries)?;
        // First pass: probe every query; those the cost model sends to a scan come back empty.
        let probed: Vec<Option<Vec<Hit>>> = queries
            .par_chunks(w)
            .map_init(
                || self.scratch(),
                |sc, q| {
                    if !self.knn_heap(q, k, sc, true)? {
                        return Ok(None);
                    }
                    let mut out = Vec::new();
                    Self::heap_hits(&mut sc.heap, &mut out);
                    Ok(Some(out))
                },
            )
            .collect::<Result<_>>()?;
        let deferred: Vec<usize> = (0..probed.len()).filter(|&i| probed[i].is_none()).collect();
        if deferred.is_empty() {
            return Ok(probed.into_iter().map(Option::unwrap_or_default).collect());
        }
        // Second pass: the deferred queries share passes over the codes.
        let scanned: Vec<Vec<Hit>> = deferred
            .par_chunks(QUERY_BATCH)
            .map_init(
                || self.scratch(),
                |sc, group| {
                    let qs: Vec<u64> = group
                        .iter()
                        .flat_map(|&i| queries[i * w..(i + 1) * w].iter().copied())
                        .collect();
                    self.knn_scan_batch(&qs, k, sc)
                },
            )
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        let mut probed = probed;
        for (i, hits) in deferred.into_iter().zip(scanned) {
            probed[i] = Some(hits);
        }
        Ok(probed.into_iter().map(Option::unwrap_or_default).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::LinearScan;
    use crate::rng::Rng;

    #[test]
    fn flips_enumerate_every_mask_of_each_weight_once() {
        for width in [1u32, 2, 5, 9, 13] {
            let mut all = Vec::new();
            for weight in 0..=width + 1 {
                let got: Vec<u64> = Flips::new(width, weight).collect();
                assert_eq!(
                    got.len() as f64,
                    binomial(width, weight),
                    "w={width} j={weight}"
                );
                assert!(
                    got.iter()
                        .all(|m| m.count_ones() == weight && m >> width == 0)
                );
                assert!(
                    got.windows(2).all(|p| p[0] < p[1]),
                    "increasing, hence distinct"
                );
                all.extend(got);
            }
            all.sort_unstable();
            assert_eq!(all, (0..1u64 << width).collect::<Vec<_>>());
        }
        // Full 64-bit width: the first and last masks of small weights.
        for weight in [1u32, 2, 3] {
            let count = Flips::new(64, weight).count();
            assert_eq!(count as f64, binomial(64, weight));
            assert_eq!(
                Flips::new(64, weight).last(),
                Some(u64::MAX << (64 - weight))
            );
        }
        assert_eq!(Flips::new(64, 64).collect::<Vec<_>>(), vec![u64::MAX]);
        assert_eq!(Flips::new(63, 63).collect::<Vec<_>>(), vec![u64::MAX >> 1]);
    }

    /// The probing rule is exact (every split of a distance `≤ r` into substring distances
    /// has a substring within its probe radius) and tight (lowering any radius loses one).
    #[test]
    fn probe_rule_is_exact_and_tight() {
        fn splits(m: usize, total: u64, cap: u64, f: &mut impl FnMut(&[u64])) {
            fn rec(m: usize, left: u64, cap: u64, cur: &mut Vec<u64>, f: &mut impl FnMut(&[u64])) {
                if cur.len() == m {
                    f(cur);
                    return;
                }
                for d in 0..=left.min(cap) {
                    cur.push(d);
                    rec(m, left - d, cap, cur, f);
                    cur.pop();
                }
            }
            rec(m, total, cap, &mut Vec::new(), f);
        }
        for m in 1..=5usize {
            for r in 0..=14u64 {
                let shells: Vec<u64> = (0..m).map(|t| shells_for(r, m, t)).collect();
                // Exact: no split of any d <= r escapes.
                splits(m, r, r, &mut |ds: &[u64]| {
                    assert!(
                        ds.iter().zip(&shells).any(|(&d, &s)| d < s),
                        "m={m} r={r} split {ds:?} missed"
                    );
                });
                // Tight: lowering shell t by one misses the split (s_t - 1, s_u elsewhere).
                for t in 0..m {
                    if shells[t] == 0 {
                        continue;
                    }
                    let ds: Vec<u64> = (0..m)
                        .map(|u| if u == t { shells[t] - 1 } else { shells[u] })
                        .collect();
                    assert_eq!(ds.iter().sum::<u64>(), r, "m={m} r={r} t={t}");
                }
                // Coarser than the plain pigeonhole rule never, finer whenever a < m - 1.
                assert!(shells.iter().all(|&s| s <= r / m as u64 + 1));
            }
        }
    }

    #[test]
    fn substrings_split_the_code_and_extract_across_words() {
        let (subs, _, _) = layout(130, 3, 1000);
        assert_eq!(
            subs.iter().map(|s| s.width).collect::<Vec<_>>(),
            vec![44, 43, 43]
        );
        let mut rng = Rng::new(5);
        let code = [rng.next_u64(), rng.next_u64(), rng.next_u64() & 3];
        for s in &subs {
            let v = s.extract(&code);
            for b in 0..s.width as usize {
                let j = s.start + b;
                assert_eq!(v >> b & 1, code[j / 64] >> (j % 64) & 1, "bit {j}");
            }
            assert_eq!(v >> s.width, 0);
        }
        let (subs, _, _) = layout(128, 2, 10);
        assert_eq!(subs[1].extract(&[0, u64::MAX]), u64::MAX);
    }

    fn random_matrix(rng: &mut Rng, bits: usize, n: usize) -> SignatureMatrix {
        let w = words_for(bits);
        let mut data = Vec::with_capacity(n * w);
        for _ in 0..n {
            for i in 0..w {
                let x = rng.next_u64();
                data.push(if i == w - 1 {
                    x & last_word_mask(bits)
                } else {
                    x
                });
            }
        }
        SignatureMatrix::from_parts(bits, data).unwrap()
    }

    #[test]
    fn parts_round_trip_and_corruption_is_an_error() {
        let mut rng = Rng::new(9);
        let sigs = random_matrix(&mut rng, 70, 700);
        // m = 2: 35-bit substrings, sparse tables; m = 7: dense.
        for m in [2usize, 7] {
            let mut idx = MultiIndex::builder()
                .substrings(m)
                .delta_limit(50)
                .build(&sigs)
                .unwrap();
            for i in 0..30u32 {
                idx.remove(i * 7).unwrap();
                idx.insert(5000 + i, sigs.row(i as usize)).unwrap();
            }
            let back = MultiIndex::from_parts(idx.to_parts()).unwrap();
            let oracle = LinearScan::build(&sigs).unwrap();
            for q in 0..20 {
                let q = sigs.row(q * 31);
                for r in [0, 5, 20] {
                    assert_eq!(back.radius(q, r).unwrap(), idx.radius(q, r).unwrap());
                }
                assert_eq!(back.knn(q, 5).unwrap(), idx.knn(q, 5).unwrap());
                assert_ne!(oracle.knn(q, 5).unwrap(), vec![]);
            }
            type Corruption = Box<dyn Fn(&mut MultiIndexParts)>;
            let corrupt: Vec<Corruption> = vec![
                Box::new(|p| p.rows.to_mut()[3] = 1_000_000),
                Box::new(|p| p.rows.to_mut()[3] = p.rows[4]),
                Box::new(|p| p.dirs.to_mut()[1] = 10_000),
                Box::new(|p| p.ids.to_mut().swap(0, 1)),
                Box::new(|p| {
                    p.codes.to_mut().pop();
                }),
                Box::new(|p| p.codes.to_mut()[1] |= 1 << 63),
                Box::new(|p| p.substrings = 71),
                Box::new(|p| {
                    p.dead.to_mut().push(0);
                }),
                Box::new(|p| p.delta_ids[0] = 100),
            ];
            for (i, c) in corrupt.iter().enumerate() {
                let mut parts = idx.to_parts();
                c(&mut parts);
                assert!(
                    MultiIndex::from_parts(parts).is_err(),
                    "m={m} corruption {i}"
                );
            }
            if m == 2 {
                let mut parts = idx.to_parts();
                let k = parts.keys.to_mut();
                k.swap(0, 5);
                assert!(MultiIndex::from_parts(parts).is_err(), "unsorted keys");
            }
        }
    }
}
