//! The probe of the sorted tables, software-pipelined: (query, table) searches run phase by
//! phase with the next phase's cache lines prefetched, so that their misses overlap (see the
//! module documentation of [`super`]).

use super::PermutedTables;
use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::index::Hit;

/// (query, table) searches run together, phase by phase, so that their memory accesses
/// overlap.
const UNIT: usize = 32;

/// Candidates whose ids are looked up together.
const PENDING: usize = 64;

/// One (query, table) search of a probe.
#[derive(Clone, Copy, Debug, Default)]
struct Search {
    /// The query's key word for the table.
    key: u64,
    q: u32,
    t: u32,
    /// The key word's directory prefix.
    bucket: usize,
    /// The prefix's entries.
    lo: usize,
    hi: usize,
}

/// Candidates within the radius by their key words, awaiting their ids: `(query, table,
/// position in keys / vals, distance of the key words)`.
struct Pending {
    items: [(u32, u32, usize, u32); PENDING],
    len: usize,
}

impl Pending {
    fn new() -> Self {
        Pending {
            items: [(0, 0, 0, 0); PENDING],
            len: 0,
        }
    }

    #[inline(always)]
    fn is_full(&self) -> bool {
        self.len == PENDING
    }

    #[inline(always)]
    fn push(&mut self, q: u32, t: u32, pos: usize, lower: u32) {
        self.items[self.len] = (q, t, pos, lower);
        self.len += 1;
    }
}

/// The arguments of [`PermutedTables::probe_body`], run with `POPCNT` when allowed.
struct Probe<'a> {
    idx: &'a PermutedTables,
    queries: &'a [u64],
    r: u32,
    outs: &'a mut [Vec<Hit>],
}

impl PopcntBody for Probe<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        self.idx.probe_body(self.queries, self.r, self.outs);
    }
}

impl PermutedTables {
    /// Probes every table for every query of `queries` (row-major, `outs.len()` codes) for
    /// codes within `r <= radius`, appending them to `outs[q]` (unsorted, delta excluded).
    pub(super) fn probe(&self, queries: &[u64], r: u32, outs: &mut [Vec<Hit>]) {
        if self.store.len() == 0 {
            return;
        }
        with_popcnt(Probe {
            idx: self,
            queries,
            r,
            outs,
        });
    }

    /// The probe, software-pipelined: the (query, table) searches are run [`UNIT`] at a time,
    /// each phase (directory entry, keys, ids) for all of them before the next, with the
    /// next phase's cache lines prefetched, so that their cache misses overlap.
    #[inline(always)]
    fn probe_body(&self, queries: &[u64], r: u32, outs: &mut [Vec<Hit>]) {
        let st = self.store.view();
        let m = st.len();
        let w = self.words();
        let tables = &self.layout.tables;
        let nt = tables.len();
        let total = outs.len() * nt;
        let mut pending = Pending::new();
        let mut unit = [Search::default(); UNIT];
        for first in (0..total).step_by(UNIT) {
            let len = UNIT.min(total - first);
            let unit = &mut unit[..len];
            // Key words; their directory entries prefetched.
            for (s, qt) in unit.iter_mut().zip(first..) {
                let (q, t) = (qt / nt, qt % nt);
                let tl = &tables[t];
                let code = &queries[q * w..(q + 1) * w];
                let key = if w == 1 {
                    tl.keyword1(code[0])
                } else {
                    tl.keyword(code)
                };
                let bucket = st.shape(t).bucket(key);
                prefetch(st.dir_entry(&st.shape(t), bucket));
                *s = Search {
                    key,
                    q: q as u32,
                    t: t as u32,
                    bucket,
                    lo: 0,
                    hi: 0,
                };
            }
            // The prefix's entries; their keys prefetched.
            for s in unit.iter_mut() {
                let sh = st.shape(s.t as usize);
                s.lo = *st.dir_entry(&sh, s.bucket) as usize;
                s.hi = *st.dir_entry(&sh, s.bucket + 1) as usize;
                if s.hi > s.lo {
                    prefetch(st.key_byte(&sh, s.lo));
                    prefetch(st.key_byte(&sh, (s.lo + 64 / sh.kb).min(s.hi - 1)));
                    prefetch(st.key_byte(&sh, s.hi - 1));
                }
            }
            // The candidates: entries sharing the query's key.
            for s in unit.iter() {
                let t = s.t as usize;
                let tl = &tables[t];
                let sh = st.shape(t);
                let high = sh.high(s.bucket);
                // Key bits below the directory's: found by binary search, then checked.
                let key_low = tl.prefix & sh.low;
                let mut i = s.lo;
                if key_low != 0 {
                    let target = s.key & key_low;
                    let mut len = s.hi - s.lo;
                    while len > 0 {
                        let half = len / 2;
                        if st.rem(&sh, i + half) < target {
                            i += half + 1;
                            len -= half + 1;
                        } else {
                            len = half;
                        }
                    }
                }
                while i < s.hi {
                    let rem = st.rem(&sh, i);
                    if (rem ^ s.key) & key_low != 0 {
                        break;
                    }
                    let x = (high | rem) ^ s.key;
                    let lower = x.count_ones();
                    if lower <= r && (w > 1 || !tl.prior_match1(x)) {
                        if pending.is_full() {
                            self.resolve(&mut pending, queries, r, outs);
                        }
                        prefetch(&st.vals()[t * m + i]);
                        pending.push(s.q, s.t, t * m + i, lower);
                    }
                    i += 1;
                }
            }
        }
        self.resolve(&mut pending, queries, r, outs);
    }

    /// Turns pending candidates into hits: looks up their ids (and, for wide codes, checks the
    /// full code), all independent loads.
    #[inline(always)]
    fn resolve(&self, pending: &mut Pending, queries: &[u64], r: u32, outs: &mut [Vec<Hit>]) {
        let w = self.words();
        let items = &pending.items[..pending.len];
        let vals = self.store.vals();
        if w > 1 {
            // The rows' codes, all in flight before any is read.
            for &(_, _, pos, _) in items {
                let v = vals[pos] as usize;
                prefetch(self.codes.as_ptr().wrapping_add(v * w));
                prefetch(self.codes.as_ptr().wrapping_add(v * w + w - 1));
                prefetch(self.row_ids.as_ptr().wrapping_add(v));
            }
        }
        for &(q, t, pos, lower) in items {
            let v = vals[pos];
            if w == 1 {
                if !self.is_dead(v) {
                    outs[q as usize].push(Hit {
                        distance: lower,
                        id: v,
                    });
                }
                continue;
            }
            let query = &queries[q as usize * w..(q as usize + 1) * w];
            // A row out of range (an unchecked corrupt file) is no candidate.
            let Some(code) = self.codes.get(v as usize * w..(v as usize + 1) * w) else {
                continue;
            };
            let d: u32 = code
                .iter()
                .zip(query)
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            if d <= r && !self.layout.prior_match(t as usize, code, query) {
                let id = self.row_ids[v as usize];
                if !self.is_dead(id) {
                    outs[q as usize].push(Hit { distance: d, id });
                }
            }
        }
        pending.len = 0;
    }
}
