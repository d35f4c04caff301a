//! Multi-index hashing (Norouzi, Punjani & Fleet, CVPR 2012 / TPAMI 2014): exact radius and
//! k-NN search by probing `m` substring tables. The algorithm, the probing rule and its proof,
//! the cost model and the layout are documented on [`MultiIndex`].

use rayon::prelude::*;

use super::{HammingIndex, Hit, Id, check_code};
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::SignatureMatrix;
use crate::storage::Buf;
use crate::util::pool::{Pool, PoolGuard};
use crate::util::topk::TopK;

mod builder;
mod cost;
mod layout;
mod parts;
mod probe;

pub use self::builder::{MultiIndexBuilder, auto_substrings};
use self::cost::{Costs, shells_for};
use self::layout::{Substring, build_table, layout};
pub(crate) use self::parts::MultiIndexParts;
use self::probe::*;

/// Queries per parallel task in batch radius searches: their probes share the pipeline.
const PROBE_BATCH: usize = 16;
/// Codes per chunk of the single-query k-NN scan (distances go through a buffer).
const SCAN_CHUNK: usize = 2048;

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
#[derive(Clone)]
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
    pool: Pool<Scratch>,
    /// Whether the contents are known to be valid (built here, or checked).
    validated: bool,
    /// The signer of the codes and the source of a loaded index.
    pub(crate) meta: crate::index::IndexMeta,
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

/// Per-query scratch: visited stamps, query substrings, top-k heap, distance buffer.
#[derive(Debug, Default)]
struct Scratch {
    stamps: Vec<u8>,
    generation: u8,
    qsub: Vec<u64>,
    heap: TopK<u64>,
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

    /// The probe pipeline over `queries`, whose substrings the caller has put in `qsub`: with
    /// visited stamps at `generation` for one query ([`start`](Self::start)), without for a
    /// batch (the caller then removes duplicate hits). Also lends the k-NN heap, which the
    /// pipeline does not touch.
    fn probe<'s>(
        &'s mut self,
        queries: &'s [u64],
        generation: Option<u8>,
    ) -> (Probe<'s>, &'s mut TopK<u64>) {
        let Scratch {
            stamps,
            qsub,
            heap,
            spans,
            cands,
            ..
        } = self;
        let probe = Probe {
            queries,
            qsub,
            stamps: generation.map(|g| (&mut stamps[..], g)),
            spans,
            cands,
        };
        (probe, heap)
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

    /// Checks the contents once before the first change of a loaded index.
    fn ensure_valid(&mut self) -> Result<()> {
        if !self.validated {
            self.check_contents()?;
            self.validated = true;
        }
        Ok(())
    }

    /// Merges the delta into the tables and drops the tombstones (recomputing `m` when it is
    /// automatic); tables are rebuilt in parallel.
    ///
    /// # Errors
    /// As [`validate`](HammingIndex::validate), for a loaded index whose contents are
    /// inconsistent.
    pub fn compact(&mut self) -> Result<()> {
        self.ensure_valid()?;
        if self.delta_ids.is_empty() && self.n_dead == 0 {
            return Ok(());
        }
        let w = self.words;
        let live = self.ids.len() - self.n_dead + self.delta_ids.len();
        let mut codes = Vec::with_capacity(live * w);
        let mut ids = Vec::with_capacity(live);
        let (mut i, mut j) = (0, 0);
        // The arrays borrowed once, as plain slices (see `permuted_tables::Store::view`).
        let view = self.view();
        let (main_ids, main_codes) = (view.ids, view.codes);
        while i < main_ids.len() || j < self.delta_ids.len() {
            let take_main = j == self.delta_ids.len()
                || (i < main_ids.len() && main_ids[i] < self.delta_ids[j]);
            if take_main {
                if !view.is_dead(i) {
                    ids.push(main_ids[i]);
                    codes.extend_from_slice(&main_codes[i * w..(i + 1) * w]);
                }
                i += 1;
            } else {
                ids.push(self.delta_ids[j]);
                codes.extend_from_slice(&self.delta_codes[j * w..(j + 1) * w]);
                j += 1;
            }
        }
        self.install(codes, ids);
        Ok(())
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

    fn scratch(&self) -> PoolGuard<'_, Scratch> {
        self.pool.get()
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
                    let (mut p, _) = sc.probe(q, Some(generation));
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
            let (mut p, _) = sc.probe(qs, None);
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
    fn delta_knn(&self, q: &[u64], sc: &mut Scratch) -> Result<()> {
        let nd = self.delta_ids.len();
        if sc.dists.len() < nd {
            sc.dists.resize(nd, 0);
        }
        hamming::distances(q, &self.delta_codes, self.words, &mut sc.dists[..nd])?;
        let mut thr = threshold(&sc.heap);
        for (&d, &id) in sc.dists[..nd].iter().zip(&self.delta_ids) {
            let kk = key(d, id);
            if kk < thr {
                sc.heap.offer(kk);
                thr = threshold(&sc.heap);
            }
        }
        Ok(())
    }

    /// Scans the main part into `sc.heap`, skipping rows stamped with `generation` (already
    /// offered).
    fn scan_knn_main(&self, q: &[u64], generation: u8, sc: &mut Scratch) -> Result<()> {
        let view = self.view();
        let w = self.words;
        let n = view.n;
        if sc.dists.len() < SCAN_CHUNK {
            sc.dists.resize(SCAN_CHUNK, 0);
        }
        let mut thr = threshold(&sc.heap);
        let mut start = 0;
        while start < n {
            let end = n.min(start + SCAN_CHUNK);
            let dists = &mut sc.dists[..end - start];
            hamming::distances(q, &self.codes[start * w..end * w], w, dists)?;
            for (i, &d) in dists.iter().enumerate() {
                let row = start + i;
                let kk = key(d, self.ids[row]);
                if kk < thr && sc.stamps[row] != generation && !view.is_dead(row) {
                    sc.heap.offer(kk);
                    thr = threshold(&sc.heap);
                }
            }
            start = end;
        }
        Ok(())
    }

    /// k-NN of one checked query into `sc.heap`. With `defer`, returns `false` instead of
    /// scanning when the cost model prefers a scan (the heap is then incomplete).
    fn knn_heap(&self, q: &[u64], k: usize, sc: &mut Scratch, defer: bool) -> Result<bool> {
        sc.heap.reset(k);
        if k == 0 {
            return Ok(true);
        }
        self.delta_knn(q, sc)?;
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
                live,
                costs: &self.costs,
                budget,
            };
            let (mut p, heap) = sc.probe(q, Some(generation));
            knn_probe(&view, &run, &mut p, heap)
        };
        if end == KnnEnd::Scan {
            if defer {
                return Ok(false);
            }
            self.scan_knn_main(q, generation, sc)?;
        }
        Ok(true)
    }

    /// The heap's keys as sorted hits.
    fn heap_hits(heap: &mut TopK<u64>, out: &mut Vec<Hit>) {
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
                    sc.heap.reset(k);
                    self.delta_knn(q, sc)?;
                    let generation = sc.start(self.ids.len());
                    self.scan_knn_main(q, generation, sc)?;
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
                sc.heap.reset(k);
                self.delta_knn(q, sc)?;
                let mut thr = threshold(&sc.heap);
                for nb in nbrs {
                    let kk = key(nb.distance, self.ids[nb.row]);
                    if kk < thr {
                        sc.heap.offer(kk);
                        thr = threshold(&sc.heap);
                    }
                }
                let mut out = Vec::new();
                Self::heap_hits(&mut sc.heap, &mut out);
                Ok(out)
            })
            .collect()
    }

    /// The live main-part row holding `id`.
    fn main_row(&self, id: Id) -> Option<usize> {
        let row = self.ids.binary_search(&id).ok()?;
        let dead = self.n_dead > 0 && self.dead[row / 64] >> (row % 64) & 1 == 1;
        (!dead).then_some(row)
    }
}

impl HammingIndex for MultiIndex {
    crate::index::meta::meta_methods!();

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

    fn validate(&self) -> Result<()> {
        self.check_contents()
    }

    fn insert(&mut self, id: Id, code: &[u64]) -> Result<()> {
        check_code(self.bits, code)?;
        self.ensure_valid()?;
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
            self.compact()?;
        }
        Ok(())
    }

    fn remove(&mut self, id: Id) -> Result<bool> {
        self.ensure_valid()?;
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
            self.compact()?;
        }
        Ok(true)
    }

    fn insert_batch(&mut self, ids: &[Id], codes: &[u64]) -> Result<()> {
        crate::index::check_batch(self.bits, ids, codes)?;
        self.ensure_valid()?;
        if let Some(&id) = ids
            .iter()
            .find(|&&id| self.delta_ids.binary_search(&id).is_ok() || self.main_row(id).is_some())
        {
            return Err(crate::index::duplicate(id));
        }
        if self.len() + ids.len() >= u32::MAX as usize - 1 {
            return Err(Error::param("id", "the index would hold 2^32 - 2 codes"));
        }
        // One merge of the id-sorted delta and batch, then at most one compaction.
        let w = self.words;
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_unstable_by_key(|&i| ids[i]);
        let (new_ids, new_codes) = crate::index::rows::merge_by_id(
            w,
            (&self.delta_ids, &self.delta_codes),
            (ids, codes),
            &order,
        );
        self.delta_ids = new_ids;
        self.delta_codes = new_codes;
        if self.delta_ids.len() > self.delta_cap() {
            self.compact()?;
        }
        Ok(())
    }

    fn remove_batch(&mut self, ids: &[Id]) -> Result<usize> {
        self.ensure_valid()?;
        let rm = crate::index::rows::sorted_unique(ids.to_vec());
        let mut removed = crate::index::rows::retain_rows(
            &mut self.delta_ids,
            &mut self.delta_codes,
            self.words,
            0,
            crate::index::rows::not_in_sorted(&rm),
        );
        let rows: Vec<usize> = rm.iter().filter_map(|&id| self.main_row(id)).collect();
        if !rows.is_empty() {
            let dead = self.dead.to_mut();
            for &row in &rows {
                dead[row / 64] |= 1 << (row % 64);
            }
            self.n_dead += rows.len();
            removed += rows.len();
        }
        if self.n_dead > self.delta_cap().max(self.ids.len() / 8) {
            self.compact()?;
        }
        Ok(removed)
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
        let w = crate::index::check_query_rows(self.bits, queries)?;
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
                    .par_chunks(w * hamming::SCAN_QUERY_BATCH)
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
        let w = crate::index::check_query_rows(self.bits, queries)?;
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
            .par_chunks(hamming::SCAN_QUERY_BATCH)
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
