//! The probing pipeline: probes of (query, substring value) pairs pushed through four
//! stages in blocks, so that their cache misses overlap, and the radius and k-NN searches
//! built on it (see the documentation of [`MultiIndex`](super::MultiIndex)).

use super::cost::Costs;
use super::layout::{Flips, Substring};
use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::hamming::scalar::{by_words, dist_words};
use crate::index::Hit;
use crate::util::topk::TopK;

/// The main part's arrays, borrowed for a query.
pub(super) struct View<'a> {
    pub(super) words: usize,
    pub(super) n: usize,
    pub(super) subs: &'a [Substring],
    pub(super) codes: &'a [u64],
    pub(super) ids: &'a [u32],
    pub(super) rows: &'a [u32],
    pub(super) dirs: &'a [u32],
    pub(super) keys: &'a [u64],
    /// `None` when no row is dead.
    pub(super) dead: Option<&'a [u64]>,
}

/// A probe on its way through the pipeline: query (index in the batch), table, substring
/// value, and the candidate rows' range in `rows` (the directory range until resolved).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Span {
    pub(super) query: u32,
    pub(super) table: u32,
    pub(super) value: u64,
    pub(super) lo: usize,
    pub(super) hi: usize,
}

impl View<'_> {
    /// Index in `dirs` of the directory slot of value `v` in table `t`.
    #[inline(always)]
    pub(super) fn slot(&self, t: usize, v: u64) -> usize {
        let s = &self.subs[t];
        s.dir_start + (v >> (s.width - s.prefix)) as usize
    }

    #[inline(always)]
    pub(super) fn is_dead(&self, row: usize) -> bool {
        self.dead
            .is_some_and(|d| d[row / 64] >> (row % 64) & 1 == 1)
    }

    #[inline(always)]
    pub(super) fn dist<const W: usize>(&self, q: &[u64], row: usize) -> u32 {
        let w = if W == 0 { self.words } else { W };
        dist_words(q, &self.codes[row * w..row * w + w], w)
    }
}

/// Probes batched per pipeline flush: each stage issues the loads of the whole block before
/// the next stage waits for them, so that a block's cache misses overlap.
pub(super) const BLOCK: usize = 64;

/// Probing state: the queries (`words` each) and their substrings (`m` each), visited stamps
/// (single-query searches), and the pipeline buffers.
pub(super) struct Probe<'s> {
    pub(super) queries: &'s [u64],
    pub(super) qsub: &'s [u64],
    /// Visited stamps and the query's generation; `None` when several queries share the
    /// pipeline (the caller then deduplicates the hits).
    pub(super) stamps: Option<(&'s mut [u8], u8)>,
    pub(super) spans: &'s mut Vec<Span>,
    /// `(row, query)` candidates.
    pub(super) cands: &'s mut Vec<(u32, u32)>,
}

impl Probe<'_> {
    /// Queues the probe of value `value` in table `t` for query `query`; flushes when the
    /// block is full.
    #[inline(always)]
    pub(super) fn push<const W: usize>(
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
    pub(super) fn flush<const W: usize>(&mut self, v: &View, visit: &mut impl Visit) {
        let w = if W == 0 { v.words } else { W };
        for sp in self.spans.iter() {
            prefetch(&v.dirs[v.slot(sp.table as usize, sp.value)]);
        }
        let mut any_sparse = false;
        for sp in self.spans.iter_mut() {
            let t = sp.table as usize;
            let s = &v.subs[t];
            let d = v.slot(t, sp.value);
            let (mut lo, mut hi) = (v.dirs[d] as usize, v.dirs[d + 1] as usize);
            if lo > hi || hi > v.n {
                // A corrupt directory of an unchecked file: no candidates, no panic.
                (lo, hi) = (0, 0);
            }
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
                if r >= v.n {
                    continue; // a corrupt row of an unchecked file
                }
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
pub(super) struct KnnRun<'a> {
    /// Live rows of the main part.
    pub(super) live: usize,
    pub(super) costs: &'a Costs,
    /// Scan cost beyond which the run gives up (infinite: never).
    pub(super) budget: f64,
}

/// How a k-NN probe run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KnnEnd {
    /// The heap holds the exact top-k of the main part and the delta.
    Done,
    /// Probing further would cost more than a scan.
    Scan,
}

/// Top-k keys `(distance << 32) | id`; the bound a new key must beat.
#[inline(always)]
pub(super) fn threshold(heap: &TopK<u64>) -> u64 {
    match heap.worst() {
        Some(&w) => w,
        None if heap.is_full() => 0,
        None => u64::MAX,
    }
}

#[inline(always)]
pub(super) fn key(distance: u32, id: u32) -> u64 {
    (u64::from(distance) << 32) | u64::from(id)
}

/// What to do with each new live candidate row and its distance.
pub(super) trait Visit {
    fn visit(&mut self, query: usize, row: usize, distance: u32);
}

/// Radius search: keep the rows within `r`, per query. The hits hold the *row* in `id`
/// until [`rows_to_ids`] maps them (after the probing, with the id loads overlapped).
pub(super) struct RadiusVisit<'a> {
    pub(super) r: u32,
    pub(super) outs: &'a mut [Vec<Hit>],
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
pub(super) fn rows_to_ids(ids: &[u32], hits: &mut [Hit]) {
    for h in hits.iter() {
        prefetch(&ids[h.id as usize]);
    }
    for h in hits.iter_mut() {
        h.id = ids[h.id as usize];
    }
}

/// k-NN: offer each row to the top-k; count the live rows seen.
pub(super) struct KnnVisit<'a> {
    pub(super) ids: &'a [u32],
    pub(super) heap: &'a mut TopK<u64>,
    pub(super) thr: u64,
    pub(super) seen: usize,
}

impl Visit for KnnVisit<'_> {
    #[inline(always)]
    fn visit(&mut self, _query: usize, row: usize, distance: u32) {
        self.seen += 1;
        // The id (a random access) is read only when the distance can enter the top-k.
        if u64::from(distance) <= self.thr >> 32 {
            let kk = key(distance, self.ids[row]);
            if kk < self.thr {
                self.heap.offer(kk);
                self.thr = threshold(self.heap);
            }
        }
    }
}

/// Radius probe: for each query `i` of the probe, every main-part code within `r` is
/// appended to `outs[i]` *as its row* (see [`rows_to_ids`]), probing substring `t` at radii
/// `0..shells[t]`. Without stamps a code may be appended more than once.
#[inline(always)]
pub(super) fn radius_body<const W: usize>(
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
pub(super) fn knn_body<const W: usize>(
    v: &View,
    run: &KnnRun,
    p: &mut Probe,
    heap: &mut TopK<u64>,
) -> KnnEnd {
    let m = v.subs.len();
    if run.live == 0 {
        return KnnEnd::Done;
    }
    let max_width = v.subs.iter().map(|s| s.width).max().unwrap_or(0);
    let thr = threshold(heap);
    let mut visit = KnnVisit {
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
                    let over = if visit.heap.is_full() {
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
            if visit.heap.is_full() && visit.thr >> 32 <= certified {
                return KnnEnd::Done;
            }
            if visit.seen == run.live {
                return KnnEnd::Done;
            }
        }
    }
    KnnEnd::Done
}

/// The arguments of [`radius_body`], run with `POPCNT` when allowed.
struct RadiusProbe<'v, 'a, 'p, 'o> {
    v: &'v View<'a>,
    r: u32,
    shells: &'v [u32],
    p: &'v mut Probe<'p>,
    outs: &'o mut [Vec<Hit>],
}

impl PopcntBody for RadiusProbe<'_, '_, '_, '_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let RadiusProbe {
            v,
            r,
            shells,
            p,
            outs,
        } = self;
        by_words!(v.words, radius_body(v, r, shells, p, outs))
    }
}

/// The arguments of [`knn_body`], run with `POPCNT` when allowed.
struct KnnProbe<'v, 'a, 'p> {
    v: &'v View<'a>,
    run: &'v KnnRun<'v>,
    p: &'v mut Probe<'p>,
    heap: &'v mut TopK<u64>,
}

impl PopcntBody for KnnProbe<'_, '_, '_> {
    type Output = KnnEnd;

    #[inline(always)]
    fn run(self) -> KnnEnd {
        let KnnProbe { v, run, p, heap } = self;
        by_words!(v.words, knn_body(v, run, p, heap))
    }
}

/// [`radius_body`] for the code width, compiled with `POPCNT` when the CPU dispatch allows
/// it ([`with_popcnt`]).
pub(super) fn radius_probe(v: &View, r: u32, shells: &[u32], p: &mut Probe, outs: &mut [Vec<Hit>]) {
    with_popcnt(RadiusProbe {
        v,
        r,
        shells,
        p,
        outs,
    })
}

/// [`knn_body`] for the code width, compiled with `POPCNT` when the CPU dispatch allows it.
pub(super) fn knn_probe(v: &View, run: &KnnRun, p: &mut Probe, heap: &mut TopK<u64>) -> KnnEnd {
    with_popcnt(KnnProbe { v, run, p, heap })
}
