//! k-NN search: the query located in every sorted list (binary searches in lockstep), the
//! windows of the beam walked nearest rank first into a running top-k; and the exact radius
//! search by scan.

use super::keys::{cmp_tail, gallop_equal, prefix_key};
use super::{KEY_BITS, PermutationIndex};
use crate::cpu::prefetch;
use crate::error::Result;
use crate::hamming::{self, Kernels};
use crate::index::{HammingIndex, Hit};
use crate::util::topk::TopK;

/// Per-query scratch: the visited stamps (one per sorted slot), the query's keys and list
/// positions, the window slots and the candidate lists.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    stamp: Vec<u32>,
    generation: u32,
    qkeys: Vec<u64>,
    pos: Vec<usize>,
    window: Vec<u32>,
    bounds: Vec<usize>,
    slots: Vec<u32>,
    top: TopK<Hit>,
    main: Vec<Hit>,
}

impl Scratch {
    /// Starts a query over `n` sorted slots: a fresh generation, stamps sized.
    fn begin(&mut self, n: usize) -> u32 {
        if self.stamp.len() < n {
            self.stamp.resize(n, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.generation = 1;
        }
        self.window.clear();
        self.slots.clear();
        self.main.clear();
        self.generation
    }
}

/// Candidates ahead whose stamp and code are prefetched.
pub(super) const PREFETCH_AHEAD: usize = 12;
/// Words in a cache line.
pub(super) const LINE_WORDS: usize = 8;
/// Lines of a candidate's code prefetched (wide codes are usually dropped after two).
pub(super) const PREFETCH_LINES: usize = 2;

/// The distance of `a` and `b` if it is at most `limit`, else `None` (possibly after only a
/// prefix of the words: they are compared a cache line at a time).
#[inline]
pub(super) fn distance_within(kern: &Kernels, a: &[u64], b: &[u64], limit: u32) -> Option<u32> {
    if a.len() <= LINE_WORDS {
        return Some(kern.distance_eq(a, b)).filter(|&d| d <= limit);
    }
    let mut d = 0;
    for (x, y) in a.chunks(LINE_WORDS).zip(b.chunks(LINE_WORDS)) {
        d += kern.distance_eq(x, y);
        if d > limit {
            return None;
        }
    }
    Some(d)
}

impl PermutationIndex {
    /// Positions of `query` in every sorted list (the first entry not below it), into `pos`.
    ///
    /// The `q` binary searches run in lockstep (one step of each per round), so their cache
    /// misses overlap instead of queueing; ties of the 64-bit key, rare, are then resolved on
    /// the permuted tails.
    pub(super) fn locate_all(&self, query: &[u64], qkeys: &mut Vec<u64>, pos: &mut Vec<usize>) {
        let (n, bits) = (self.n, self.bits);
        let head = bits.min(KEY_BITS);
        qkeys.clear();
        qkeys.extend(
            self.perms
                .chunks_exact(bits)
                .map(|perm| prefix_key(&perm[..head], query)),
        );
        pos.clear();
        pos.resize(self.q, 0);
        let all_keys: &[u64] = &self.keys;
        let mut len = n;
        while len > 1 {
            let half = len / 2;
            for (keys, (p, &qk)) in all_keys
                .chunks_exact(n)
                .zip(pos.iter_mut().zip(qkeys.iter()))
            {
                // Branch-free (a mask, not a jump): the outcome is a coin flip, and a
                // mispredicted branch would also cancel the loads of the other lists.
                let below = usize::from(keys[*p + half] < qk);
                *p += half & below.wrapping_neg();
            }
            len -= half;
        }
        let order: &[u32] = &self.order;
        for (t, (p, &qk)) in pos.iter_mut().zip(qkeys.iter()).enumerate() {
            let keys = &all_keys[t * n..(t + 1) * n];
            let lo = *p + usize::from(keys[*p] < qk);
            *p = lo;
            if lo == n || keys[lo] != qk || bits <= KEY_BITS {
                continue;
            }
            let perm = &self.perms[t * bits..(t + 1) * bits];
            let hi = lo + gallop_equal(&keys[lo..], qk);
            let order = &order[t * n + lo..t * n + hi];
            // A slot out of range (an unchecked corrupt file) compares as not below.
            *p = lo
                + order.partition_point(|&s| {
                    (s as usize) < n && cmp_tail(perm, self.code(s as usize), query).is_lt()
                });
        }
    }

    /// The k-NN search proper, on a checked query.
    pub(super) fn knn_with(&self, query: &[u64], k: usize, s: &mut Scratch, out: &mut Vec<Hit>) {
        out.clear();
        if k == 0 || self.is_empty() {
            return;
        }
        let kern = Kernels::dispatched();
        let n = self.n;
        let generation = s.begin(n);
        if n > 0 {
            let Scratch {
                stamp,
                qkeys,
                pos,
                window,
                bounds,
                slots,
                main,
                top,
                ..
            } = s;
            self.locate_all(query, qkeys, pos);
            // Live codes taken per side (each list yields min(2·half, live sorted) codes).
            let half = self.beam.max(k.div_ceil(2)).min(n);
            let (all_order, codes): (&[u32], &[u64]) = (&self.order, &self.codes);
            // The windows' first lines, all lists at once.
            for (t, &p) in pos.iter().enumerate() {
                prefetch(all_order[t * n + p.saturating_sub(1)..].as_ptr());
                prefetch(all_order[(t * n + p).min(all_order.len() - 1)..].as_ptr());
            }
            // Each window is collected nearest rank first (the query's neighbours in the list,
            // alternating above and below), then the lists are interleaved rank by rank: the
            // candidates most likely to be near come first, so the top-k threshold drops
            // early and prunes the rest sooner.
            bounds.clear();
            bounds.push(0);
            for (t, &p) in pos.iter().enumerate() {
                let order = &all_order[t * n..(t + 1) * n];
                let (mut lo, mut hi) = (p, p);
                let mut take = |slot: u32| -> bool {
                    // A slot out of range (an unchecked corrupt file) is skipped.
                    let live = (slot as usize) < n && !self.is_dead(slot as usize);
                    if live {
                        window.push(slot);
                    }
                    live
                };
                let (mut up, mut down) = (0, 0);
                while (up < half && lo > 0) || (down < half && hi < n) {
                    if down < half && hi < n {
                        down += usize::from(take(order[hi]));
                        hi += 1;
                    }
                    if up < half && lo > 0 {
                        lo -= 1;
                        up += usize::from(take(order[lo]));
                    }
                }
                while down < 2 * half - up && hi < n {
                    down += usize::from(take(order[hi]));
                    hi += 1;
                }
                while up < 2 * half - down && lo > 0 {
                    lo -= 1;
                    up += usize::from(take(order[lo]));
                }
                bounds.push(window.len());
            }
            let longest = bounds.windows(2).map(|b| b[1] - b[0]).max().unwrap_or(0);
            for r in 0..longest {
                for b in bounds.windows(2) {
                    if b[0] + r < b[1] {
                        slots.push(window[b[0] + r]);
                    }
                }
            }
            // Distances, each slot once, into a running top-k; the stamp and the first lines
            // of a later candidate's code are fetched while this one is compared. Wide codes
            // are compared a cache line at a time and dropped as soon as the partial distance
            // exceeds the current k-th distance (a random code is dropped after about
            // `2·thr/64` of its words), which leaves the top-k unchanged.
            let w = self.words();
            let lines = w.div_ceil(LINE_WORDS).min(PREFETCH_LINES);
            top.reset(k);
            let mut thr = u32::MAX;
            for (i, &slot) in slots.iter().enumerate() {
                if let Some(&ahead) = slots.get(i + PREFETCH_AHEAD) {
                    let ahead = ahead as usize;
                    prefetch(stamp[ahead..].as_ptr());
                    let code = codes[ahead * w..].as_ptr();
                    for l in 0..lines {
                        prefetch(code.wrapping_add(LINE_WORDS * l));
                    }
                }
                let slot = slot as usize;
                if stamp[slot] == generation {
                    continue;
                }
                stamp[slot] = generation;
                let code = &codes[slot * w..(slot + 1) * w];
                let Some(distance) = distance_within(kern, query, code, thr) else {
                    continue;
                };
                // Sorted slots are in id order: (distance, slot) orders as (distance, id).
                let hit = Hit {
                    distance,
                    id: slot as u32,
                };
                if top.offer(hit) {
                    thr = top.worst().map_or(u32::MAX, |h| h.distance);
                }
            }
            top.drain_sorted_into(main);
            for h in main.iter_mut() {
                h.id = self.ids[h.id as usize];
            }
        }
        if self.ids.len() == n {
            out.extend_from_slice(&s.main);
            return;
        }
        // The delta, scanned in full, joins the sorted lists' top-k.
        s.top.reset(k);
        for &h in &s.main {
            s.top.offer(h);
        }
        for slot in n..self.ids.len() {
            s.top.offer(Hit {
                distance: kern.distance_eq(query, self.code(slot)),
                id: self.ids[slot],
            });
        }
        s.top.drain_sorted_into(out);
    }

    /// Radius hits of a batch of checked queries, one pass over the codes.
    pub(super) fn radius_pass(&self, queries: &[u64], r: u32) -> Result<Vec<Vec<Hit>>> {
        let w = self.words();
        let mut found: Vec<Vec<Hit>> = vec![Vec::new(); queries.len() / w];
        hamming::scan_radius(queries, &self.codes, w, r, |qi, s, d| {
            if s >= self.n || !self.is_dead(s) {
                found[qi].push(Hit {
                    distance: d,
                    id: self.ids[s],
                });
            }
        })?;
        for f in &mut found {
            f.sort_unstable();
        }
        Ok(found)
    }
}
