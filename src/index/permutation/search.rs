//! k-NN search: the query located in every sorted list (binary searches in lockstep), the
//! windows of the beam walked nearest rank first into a running top-k; and the exact radius
//! search by scan.

use super::keys::{cmp_tail, gallop_equal, prefix_key};
use super::{KEY_BITS, PermutationIndex};
use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::error::Result;
use crate::hamming::scalar::{by_words, dist_words};
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
    lens: Vec<usize>,
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

/// The live slots of one sorted list nearest rank `p`, into `buf` (`min(2·half, n)` long); returns
/// how many: `half` on each side, alternating below and above (nearest rank first), more on
/// one side where the other ends, `2·half` in all when the list holds that many. `dead` holds
/// the tombstones, one bit per slot (`None`: no slot is dead); a slot out of range (an
/// unchecked corrupt file) is skipped.
#[inline]
fn collect_window(
    order: &[u32],
    p: usize,
    half: usize,
    dead: Option<&[u64]>,
    buf: &mut [u32],
) -> usize {
    let n = order.len();
    // Each slot is written, then kept by advancing the count if it is live (no branch on
    // liveness). Every loop below takes a slot only while fewer than `2·half` are kept, and
    // each take reads another of the `n` ranks, so the write is in `buf`.
    let mut count = 0;
    let mut take = |slot: u32| -> usize {
        let s = slot as usize;
        let live = s < n && dead.is_none_or(|d| (d[s / 64] >> (s % 64)) & 1 == 0);
        buf[count] = slot;
        count += usize::from(live);
        usize::from(live)
    };
    let (mut lo, mut hi) = (p, p);
    let (mut up, mut down) = (0, 0);
    while (up < half && lo > 0) || (down < half && hi < n) {
        if down < half && hi < n {
            down += take(order[hi]);
            hi += 1;
        }
        if up < half && lo > 0 {
            lo -= 1;
            up += take(order[lo]);
        }
    }
    while down < 2 * half - up && hi < n {
        down += take(order[hi]);
        hi += 1;
    }
    while up < 2 * half - down && lo > 0 {
        lo -= 1;
        up += take(order[lo]);
    }
    up + down
}

/// The scoring of one query's candidates ([`PermutationIndex::knn_with`]): each slot's
/// distance, once per query (the stamps), offered to the running top-k.
struct Score<'a> {
    query: &'a [u64],
    codes: &'a [u64],
    /// Words per code.
    w: usize,
    /// The candidates, in the order they are scored.
    slots: &'a [u32],
    /// Per sorted slot: the last query (generation) that scored it.
    stamp: &'a mut [u32],
    generation: u32,
    top: &'a mut TopK<Hit>,
}

impl PopcntBody for Score<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        by_words!(self.w, score_body(self))
    }
}

/// [`Score`] for codes of `W` words (`W = 0`: any width, `Score::w`).
///
/// The stamp and the first lines of a later candidate's code are fetched while this one is
/// compared. Wide codes are compared a cache line at a time and dropped as soon as the
/// partial distance exceeds the current k-th distance (a random code is dropped after about
/// `2·thr/64` of its words), which leaves the top-k unchanged.
#[inline(always)]
fn score_body<const W: usize>(s: Score<'_>) {
    let Score {
        query,
        codes,
        w,
        slots,
        stamp,
        generation,
        top,
    } = s;
    let w = if W == 0 { w } else { W };
    let lines = w.div_ceil(LINE_WORDS).min(PREFETCH_LINES);
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
        let distance = if W != 0 && W <= LINE_WORDS {
            let d = dist_words(query, code, W);
            if d > thr {
                continue;
            }
            d
        } else {
            let Some(d) = distance_lines(query, code, thr) else {
                continue;
            };
            d
        };
        // Sorted slots are in id order: (distance, slot) orders as (distance, id).
        if top.offer(Hit {
            distance,
            id: slot as u32,
        }) {
            thr = top.worst().map_or(u32::MAX, |h| h.distance);
        }
    }
}

/// The distance of `a` and `b` if it is at most `limit`, else `None` (after the first cache
/// line whose running sum exceeds it).
#[inline(always)]
fn distance_lines(a: &[u64], b: &[u64], limit: u32) -> Option<u32> {
    let mut d = 0;
    for (x, y) in a.chunks(LINE_WORDS).zip(b.chunks(LINE_WORDS)) {
        d += x
            .iter()
            .zip(y)
            .map(|(p, q)| (p ^ q).count_ones())
            .sum::<u32>();
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
                lens,
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
            // List `t`'s window is `window[t·span..]`, `lens[t]` slots long: a list yields at
            // most `2·half` slots and at most its `n` (every take reads another rank), so a
            // `k` far beyond the codes costs no more than the lists hold.
            let span = (2 * half).min(n);
            window.clear();
            window.resize(pos.len() * span, 0);
            lens.clear();
            // The tombstones, borrowed once (`None`: no row is dead).
            let dead = (self.n_dead > 0).then_some(&self.dead[..]);
            for ((t, &p), buf) in pos.iter().enumerate().zip(window.chunks_exact_mut(span)) {
                lens.push(collect_window(
                    &all_order[t * n..(t + 1) * n],
                    p,
                    half,
                    dead,
                    buf,
                ));
            }
            let longest = lens.iter().copied().max().unwrap_or(0);
            for r in 0..longest {
                for (&len, buf) in lens.iter().zip(window.chunks_exact(span)) {
                    if r < len {
                        slots.push(buf[r]);
                    }
                }
            }
            // Distances, each slot once, into a running top-k (compiled with `POPCNT` when
            // the CPU has it, the distance unrolled for the common widths).
            top.reset(k);
            with_popcnt(Score {
                query,
                codes,
                w: self.words(),
                slots,
                stamp,
                generation,
                top,
            });
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
