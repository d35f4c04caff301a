//! The approximate k-NN graph: seeded by the leaves of random partition trees, refined by
//! neighbour-of-neighbour rounds (NN-Descent, Dong, Charikar & Li 2011) until few lists
//! change. See [`ApproxKnn`].

use rayon::prelude::*;

use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::hamming::scalar::{by_words, dist_words};
use crate::rng::{hash_u64, mix64};

/// Empty list slot.
const EMPTY: u64 = u64::MAX;

/// Parameters of the approximate k-NN graph ([`crate::join::KnnMethod::Approx`]).
///
/// # Method
///
/// 1. **Seeds.** Each code is measured against `randoms` random codes. Then each of `trees`
///    random trees splits the codes until every part holds at
///    most `leaf` codes: a part's codes go with the nearest of up to 64 of its codes drawn
///    by the seed (the codes move along with the split, so each leaf is contiguous). Within
///    a leaf every pair is measured by the batched distance kernel (sequential reads), and
///    each code keeps its nearest. Near codes share leaves in many trees. The codes are
///    renumbered in the order of the first tree's leaves, so that near codes sit near in
///    memory during the rounds (the lists are given in the callers' numbers).
/// 2. **Rounds** (NN-Descent's local join). Each code draws up to `sample` new and `sample`
///    old candidates among its list's entries and the codes listing it (an entry is new
///    until drawn once; the draw is by a seeded hash of the pair). Then, for each code,
///    every pair of its new candidates and every pair of a new and an old one is measured
///    once, and each end enters the other's list if nearer than its worst: the neighbour of
///    a neighbour is likely a neighbour. Rounds stop when at most `delta · N · k` entries
///    entered, or after `rounds`.
///
/// The lists are sorted arrays of packed `(distance, code, new)` entries, so a code already
/// listed is found where the entry would go. The local joins of a block of 4,096 codes are
/// computed (in parallel) against the lists as they were before the block, then each list
/// takes that block's entries in the order found; so the result depends only on the codes
/// and the parameters, not on the number of threads. Distances are exact; the lists may
/// miss true neighbours (recall is measured in `benches/compare/graph.py` and checked
/// against brute force in `tests/knn_graph.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct ApproxKnn {
    /// Most refinement rounds (default 12).
    pub rounds: usize,
    /// New and old candidates of each code drawn per round (default 30).
    pub sample: usize,
    /// Stop when at most `delta · N · list` entries entered the lists in a round (default
    /// 0.002).
    pub delta: f64,
    /// Seed of the trees and the samples (default 0).
    pub seed: u64,
    /// Entries kept per code while refining (default 0: `k`, and at least 30); the `k`
    /// nearest of them are the result. Longer lists give the rounds more paths to the true
    /// neighbours: on all 400k `GloVe` 6B 50-d vectors as 256-bit codes, k = 10, lists of 10
    /// stall near tie-aware recall 0.7-0.8, lists of 30 reach 0.958.
    pub list: usize,
    /// Random partition trees for the seeds (default 4).
    pub trees: usize,
    /// Most codes in a leaf of a tree (default 250).
    pub leaf: usize,
    /// Random codes measured for each code before the trees (default 10): links across the
    /// parts of the trees, through which the rounds reach neighbours that no leaf held with
    /// the code.
    pub randoms: usize,
}

impl Default for ApproxKnn {
    fn default() -> Self {
        ApproxKnn {
            rounds: 12,
            sample: 30,
            delta: 0.002,
            seed: 0,
            list: 0,
            trees: 4,
            leaf: 250,
            randoms: 10,
        }
    }
}

impl ApproxKnn {
    /// Entries kept per code while refining for `k` neighbours: `list`, or when 0, `k` and
    /// at least 30.
    pub fn list_for(&self, k: usize) -> usize {
        if self.list == 0 {
            k.max(MIN_LIST)
        } else {
            self.list.max(k)
        }
    }

    /// The parameters a graph index builds with ([`crate::index::GraphIndex`]): 16 trees,
    /// 8 rounds of 20 candidates, no random links (the index's prune and reverse edges
    /// connect the parts; measured on `GloVe` 100k and 400k, `benches/compare/graph.py`).
    /// The index asks for its own list length.
    pub fn for_graph() -> Self {
        ApproxKnn {
            rounds: 8,
            sample: 20,
            trees: 16,
            randoms: 0,
            ..ApproxKnn::default()
        }
    }
}

/// The shortest list the rounds refine by default ([`ApproxKnn::list_for`]).
const MIN_LIST: usize = 30;

/// What an approximate k-NN graph computation did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApproxStats {
    /// Refinement rounds run.
    pub rounds: usize,
    /// Entries changed by each round.
    pub changed: Vec<usize>,
    /// Distances computed in all (seeds and rounds).
    pub distances: u64,
}

/// A list entry: `distance << 33 | node << 1 | new` (sorted by distance, then node; `new`
/// marks an entry not yet drawn into a round's candidates).
#[inline(always)]
fn entry(d: u32, node: u32) -> u64 {
    u64::from(d) << 33 | u64::from(node) << 1
}

/// Inserts `e` (an [`entry`], flagged new) into the sorted list `l` (padded with [`EMPTY`])
/// unless its node is present or it is not better than the last; returns whether it
/// entered.
#[inline(always)]
fn insert(l: &mut [u64], e: u64) -> bool {
    let k = l.len();
    let key = e & !1;
    if key >= l[k - 1] & !1 {
        return false;
    }
    let pos = l.partition_point(|&x| x < key);
    // A node's entry is always the same (the distance of a pair is fixed), so a node
    // already listed sits exactly at `pos`.
    if l[pos] | 1 == key | 1 {
        return false;
    }
    let mut i = k - 1;
    while i > pos {
        l[i] = l[i - 1];
        i -= 1;
    }
    l[pos] = key | 1;
    true
}

/// Splits `idx` (with their codes `cc`, moved along) into the leaves of a random tree,
/// in place: while a part holds more than `leaf` codes, up to 64 of its codes drawn by the
/// seed are centres, and each code goes with the nearest (the first on ties); a part that
/// does not split is halved. Returns the leaves' sizes, in order.
fn split(
    idx: &mut [u32],
    cc: &mut [u64],
    w: usize,
    leaf: usize,
    salt: u64,
    depth: u32,
) -> Vec<usize> {
    let n = idx.len();
    if n <= leaf {
        return vec![n];
    }
    let c = n.div_ceil(leaf.div_ceil(2)).clamp(2, 64);
    let h = hash_u64(u64::from(depth) << 32 | n as u64, salt);
    let mut centres = Vec::with_capacity(c * w);
    for i in 0..c {
        // Spread over the part: one centre in each of c equal slices (the order is random).
        let at = (i * n + (h as usize % n.div_ceil(c))) / c;
        centres.extend_from_slice(&cc[at.min(n - 1) * w..(at.min(n - 1) + 1) * w]);
    }
    let kernels = crate::hamming::Kernels::dispatched();
    let mut d = vec![0u32; c];
    let group: Vec<u8> = cc
        .chunks_exact(w)
        .map(|code| {
            kernels
                .distances(code, &centres, w, &mut d)
                .expect("whole codes");
            let mut best = 0;
            for (i, &di) in d.iter().enumerate() {
                if di < d[best] {
                    best = i;
                }
            }
            best as u8
        })
        .collect();
    let mut sizes = vec![0usize; c];
    for &g in &group {
        sizes[g as usize] += 1;
    }
    if sizes.contains(&n) {
        let (il, ir) = idx.split_at_mut(n / 2);
        let (cl, cr) = cc.split_at_mut(n / 2 * w);
        let mut l = split(il, cl, w, leaf, salt ^ 1, depth + 1);
        l.extend(split(ir, cr, w, leaf, salt ^ 1, depth + 1));
        return l;
    }
    let mut start = vec![0usize; c];
    for g in 1..c {
        start[g] = start[g - 1] + sizes[g - 1];
    }
    let (mut ti, mut tc) = (vec![0u32; n], vec![0u64; n * w]);
    for (i, &g) in group.iter().enumerate() {
        let at = start[g as usize];
        ti[at] = idx[i];
        tc[at * w..(at + 1) * w].copy_from_slice(&cc[i * w..(i + 1) * w]);
        start[g as usize] += 1;
    }
    idx.copy_from_slice(&ti);
    cc.copy_from_slice(&tc);
    drop((ti, tc));
    let mut parts: Vec<(&mut [u32], &mut [u64])> = Vec::with_capacity(c);
    let (mut ri, mut rc) = (idx, cc);
    for &s in &sizes {
        let (a, b) = ri.split_at_mut(s);
        let (x, y) = rc.split_at_mut(s * w);
        parts.push((a, x));
        ri = b;
        rc = y;
    }
    let run = |(pi, pc): (&mut [u32], &mut [u64])| split(pi, pc, w, leaf, salt, depth + 1);
    if n > 4096 {
        parts.into_par_iter().flat_map_iter(run).collect()
    } else {
        parts.into_iter().flat_map(run).collect()
    }
}

/// Codes whose local joins are computed before their list updates are applied: a fixed
/// number, so that the result does not depend on the number of threads.
const BLOCK: usize = 4096;
/// Codes per parallel task within a block.
const CHUNK: usize = 256;

/// The approximate `k` nearest other codes of every code of `codes` (`w` words each), as
/// sorted `(distance << 32 | index)` lists of `k` entries, [`EMPTY`]-padded when there are
/// fewer other codes.
pub(crate) fn approx_knn(
    codes: &[u64],
    w: usize,
    k: usize,
    p: &ApproxKnn,
) -> (Vec<u64>, ApproxStats) {
    let n = codes.len() / w;
    let mut stats = ApproxStats::default();
    if n < 2 || k == 0 {
        return (vec![EMPTY; n * k], stats);
    }
    // Locality: the codes are renumbered in the order of the first tree's leaves (near codes
    // get near numbers, so the rounds read near memory); `order[i]` is the code numbered i.
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut local = codes.to_vec();
    let sizes0 = split(
        &mut order,
        &mut local,
        w,
        p.leaf.max(2),
        hash_u64(0, p.seed),
        0,
    );
    let lists = descend(&local, w, k, p, sizes0, &mut stats);
    drop(local);
    // Back to the callers' numbers, each list sorted by (distance, number) again.
    let mut pos = vec![0u32; n];
    for (i, &x) in order.iter().enumerate() {
        pos[x as usize] = i as u32;
    }
    let mut out = vec![EMPTY; n * k];
    out.par_chunks_mut(k).enumerate().for_each(|(x, o)| {
        let i = pos[x] as usize;
        for (slot, &e) in o.iter_mut().zip(&lists[i * k..(i + 1) * k]) {
            if e == EMPTY {
                break;
            }
            *slot = (e >> 33) << 32 | u64::from(order[(e >> 1) as u32 as usize]);
        }
        o.sort_unstable();
    });
    drop(lists);
    // A code the trees and rounds left with fewer than k entries (alone in small leaves,
    // listed by no one) gets its exact nearest by a scan.
    let short: Vec<usize> = out
        .par_chunks_exact(k)
        .enumerate()
        .filter(|(_, l)| l[k - 1] == EMPTY)
        .map(|(v, _)| v)
        .collect();
    for v in short {
        let q = &codes[v * w..(v + 1) * w];
        let found = crate::hamming::scan_knn(q, codes, w, k + 1).expect("whole codes");
        let l = &mut out[v * k..(v + 1) * k];
        for (slot, nb) in found[0].iter().filter(|nb| nb.row != v).take(k).enumerate() {
            l[slot] = (u64::from(nb.distance) << 32) | nb.row as u64;
        }
        stats.distances += n as u64;
    }
    (out, stats)
}

/// The seeds and rounds over `codes` (in the order of the first tree, whose leaves' sizes
/// are `sizes0`): the lists of [`entry`]s.
fn descend(
    codes: &[u64],
    w: usize,
    k: usize,
    p: &ApproxKnn,
    sizes0: Vec<usize>,
    stats: &mut ApproxStats,
) -> Vec<u64> {
    let n = codes.len() / w;
    let mut lists = vec![EMPTY; n * k];
    // 1. Seeds: random codes first (so that the rounds can leave a part the trees got
    // wrong), then the trees.
    let kernels = crate::hamming::Kernels::dispatched();
    lists.par_chunks_mut(k).enumerate().for_each(|(v, l)| {
        let code = &codes[v * w..(v + 1) * w];
        for j in 0..p.randoms as u64 {
            let u = (hash_u64((v as u64) << 32 | j, p.seed) % n as u64) as usize;
            if u != v {
                let d = kernels.distance_eq(code, &codes[u * w..(u + 1) * w]);
                insert(l, entry(d, u as u32) | 1);
            }
        }
    });
    let identity: Vec<u32> = (0..n as u32).collect();
    let mut sizes0 = Some(sizes0);
    for t in 0..p.trees {
        let computed = match sizes0.take() {
            // The first tree is the order of the codes.
            Some(sizes) => leaf_seeds(codes, &identity, &sizes, w, k, &mut lists),
            None => {
                let mut idx = identity.clone();
                let mut cc = codes.to_vec();
                let salt = hash_u64(t as u64, p.seed);
                let sizes = split(&mut idx, &mut cc, w, p.leaf.max(2), salt, 0);
                leaf_seeds(&cc, &idx, &sizes, w, k, &mut lists)
            }
        };
        stats.distances += computed;
    }
    drop(identity);
    // 2. Rounds.
    let target = (p.delta * n as f64 * k as f64) as usize;
    let s = p.sample.max(1);
    let mut cand = Candidates {
        s,
        new: vec![0u32; n * s],
        old: vec![0u32; n * s],
        lens: vec![(0u32, 0u32); n],
    };
    let mut worst: Vec<u64> = lists.par_chunks_exact(k).map(|l| l[k - 1] & !1).collect();
    for round in 0..p.rounds {
        let salt = hash_u64(round as u64 | 1 << 40, p.seed);
        cand.sample(&mut lists, k, salt);
        let (changed, computed) = local_joins(codes, w, k, &cand, &mut lists, &mut worst);
        stats.distances += computed;
        stats.rounds += 1;
        stats.changed.push(changed);
        if changed <= target {
            break;
        }
    }
    lists
}

/// Each code's nearest in each leaf of a tree (`cc`: the codes in the tree's order, `idx`
/// their numbers, `sizes` the leaves' sizes), among those beating its list's worst, into the
/// lists. Returns the distances computed.
fn leaf_seeds(
    cc: &[u64],
    idx: &[u32],
    sizes: &[usize],
    w: usize,
    k: usize,
    lists: &mut [u64],
) -> u64 {
    let n = idx.len();
    let kernels = crate::hamming::Kernels::dispatched();
    let mut bounds = Vec::with_capacity(sizes.len() + 1);
    bounds.push(0usize);
    for s in sizes {
        bounds.push(bounds.last().expect("non-empty") + s);
    }
    let mut cand = vec![EMPTY; n * k];
    let worst: Vec<u64> = lists.par_chunks_exact(k).map(|l| l[k - 1] & !1).collect();
    let mut rows: Vec<&mut [u64]> = Vec::with_capacity(sizes.len());
    let mut rest: &mut [u64] = &mut cand;
    for &s in sizes {
        let (a, b) = rest.split_at_mut(s * k);
        rows.push(a);
        rest = b;
    }
    let computed: u64 = rows
        .into_par_iter()
        .zip(bounds.par_windows(2))
        .map_init(Vec::new, |buf, (out, r)| {
            let (s, e) = (r[0], r[1]);
            let leaf = &cc[s * w..e * w];
            let mut d = vec![0u32; e - s];
            for (i, o) in out.chunks_exact_mut(k).enumerate() {
                let x = idx[s + i];
                kernels
                    .distances(&leaf[i * w..(i + 1) * w], leaf, w, &mut d)
                    .expect("whole codes");
                let bar = worst[x as usize];
                let bar_d = (bar >> 33) as u32;
                buf.clear();
                for (j, &dj) in d.iter().enumerate() {
                    if dj <= bar_d {
                        let e = entry(dj, idx[s + j]);
                        if j != i && e < bar {
                            buf.push(e);
                        }
                    }
                }
                if buf.len() > k {
                    buf.select_nth_unstable(k);
                    buf.truncate(k);
                }
                o[..buf.len()].copy_from_slice(buf);
            }
            ((e - s) * (e - s)) as u64
        })
        .sum();
    let mut pos = vec![0u32; n];
    for (p, &x) in idx.iter().enumerate() {
        pos[x as usize] = p as u32;
    }
    lists.par_chunks_mut(k).enumerate().for_each(|(x, l)| {
        let p = pos[x] as usize;
        for &e in &cand[p * k..(p + 1) * k] {
            if e == EMPTY {
                break;
            }
            insert(l, e | 1);
        }
    });
    computed / 2
}

/// A round's candidates: for each code, up to `s` new and `s` old codes among its list's
/// entries and the codes listing it (NN-Descent's sampled neighbours and reverse
/// neighbours), in rows of `s`.
struct Candidates {
    s: usize,
    new: Vec<u32>,
    old: Vec<u32>,
    /// How many new and old candidates each code has.
    lens: Vec<(u32, u32)>,
}

impl Candidates {
    /// Draws the round's candidates from the lists (`salt`: the round's hash seed): a code's
    /// new (old) candidates are the `s` of its new (old) entries and reverse entries with the
    /// smallest hash of the pair; its new entries drawn become old.
    fn sample(&mut self, lists: &mut [u64], k: usize, salt: u64) {
        let n = self.lens.len();
        let s = self.s;
        // Reverse entries grouped by the code listed: (new << 32 | lister).
        let mut start = vec![0usize; n + 1];
        for &e in lists.iter() {
            if e != EMPTY {
                start[(e >> 1) as u32 as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut rev = vec![0u64; start[n]];
        let mut next = start.clone();
        for (v, l) in lists.chunks_exact(k).enumerate() {
            for &e in l.iter().take_while(|&&e| e != EMPTY) {
                let u = (e >> 1) as u32 as usize;
                rev[next[u]] = (e & 1) << 32 | v as u64;
                next[u] += 1;
            }
        }
        drop(next);
        // The hash of the pair {a, b}, the same from both ends, then b.
        let key = |a: u32, b: u32| {
            let (lo, hi) = (a.min(b), a.max(b));
            (mix64((u64::from(lo) << 32 | u64::from(hi)) ^ salt) >> 32) << 32 | u64::from(b)
        };
        self.new
            .par_chunks_mut(s)
            .zip(self.old.par_chunks_mut(s))
            .zip(self.lens.par_iter_mut())
            .zip(lists.par_chunks_mut(k))
            .enumerate()
            .for_each_init(
                || (Vec::new(), Vec::new()),
                |(nb, ob), (v, (((new, old), len), l))| {
                    nb.clear();
                    ob.clear();
                    for &e in l.iter().take_while(|&&e| e != EMPTY) {
                        if e & 1 != 0 {
                            nb.push(key(v as u32, (e >> 1) as u32));
                        }
                    }
                    let rv = &rev[start[v]..start[v + 1]];
                    for &r in rv {
                        if r >> 32 != 0 {
                            nb.push(key(v as u32, r as u32));
                        }
                    }
                    // Without new candidates, a code joins nothing: its old ones are not drawn.
                    if nb.is_empty() {
                        *len = (0, 0);
                        return;
                    }
                    for &e in l.iter().take_while(|&&e| e != EMPTY) {
                        if e & 1 == 0 {
                            ob.push(key(v as u32, (e >> 1) as u32));
                        }
                    }
                    for &r in rv {
                        if r >> 32 == 0 {
                            ob.push(key(v as u32, r as u32));
                        }
                    }
                    for (buf, row, len) in [
                        (&mut *nb, &mut *new, &mut len.0),
                        (&mut *ob, &mut *old, &mut len.1),
                    ] {
                        if buf.len() > s {
                            buf.select_nth_unstable(s);
                        }
                        let m = buf.len().min(s);
                        buf[..m].sort_unstable();
                        let mut at = 0;
                        for i in 0..m {
                            if i == 0 || buf[i] != buf[i - 1] {
                                row[at] = buf[i] as u32;
                                at += 1;
                            }
                        }
                        *len = at as u32;
                    }
                    // The new entries drawn are old from now on.
                    let drawn = &new[..len.0 as usize];
                    for e in l.iter_mut().take_while(|e| **e != EMPTY) {
                        if *e & 1 != 0 && drawn.contains(&((*e >> 1) as u32)) {
                            *e &= !1;
                        }
                    }
                },
            );
    }
}

/// What a range of local joins reads.
struct Join<'a> {
    codes: &'a [u64],
    w: usize,
    cand: &'a Candidates,
    worst: &'a [u64],
    /// The codes joined.
    range: std::ops::Range<usize>,
    /// Scratch: the candidates' codes and lists' worst entries.
    local: &'a mut Vec<u64>,
    bar: &'a mut Vec<u64>,
    /// Updates out: (code, entry).
    ups: &'a mut Vec<(u32, u64)>,
}

impl PopcntBody for Join<'_> {
    type Output = u64;

    #[inline(always)]
    fn run(self) -> u64 {
        let w = self.w;
        by_words!(w, join_body(self))
    }
}

/// The local joins of `j.range`: for each code, every pair of its new candidates and every
/// pair of a new and an old candidate is measured, and each end that the other would enter
/// (nearer than its list's worst) gets an update. Returns the distances computed.
#[inline(always)]
fn join_body<const W: usize>(j: Join<'_>) -> u64 {
    let w = if W == 0 { j.w } else { W };
    let s = j.cand.s;
    let mut computed = 0u64;
    for v in j.range.clone() {
        let (nl, ol) = j.cand.lens[v];
        let (nl, ol) = (nl as usize, ol as usize);
        // The next code's candidates, on their way to the cache.
        if let Some(&(nn, on)) = j.cand.lens.get(v + 1) {
            let u = v + 1;
            for &c in j.cand.new[u * s..u * s + nn as usize]
                .iter()
                .chain(&j.cand.old[u * s..u * s + on as usize])
            {
                prefetch(j.codes.as_ptr().wrapping_add(c as usize * w));
                prefetch(j.worst.as_ptr().wrapping_add(c as usize));
            }
        }
        if nl == 0 {
            continue;
        }
        let newc = &j.cand.new[v * s..v * s + nl];
        let oldc = &j.cand.old[v * s..v * s + ol];
        j.local.clear();
        j.bar.clear();
        for &c in newc.iter().chain(oldc) {
            let c = c as usize;
            j.local.extend_from_slice(&j.codes[c * w..(c + 1) * w]);
            j.bar.push(j.worst[c]);
        }
        for a in 0..nl {
            let ca = &j.local[a * w..(a + 1) * w];
            let ia = newc[a];
            for b in a + 1..nl + ol {
                let ib = if b < nl { newc[b] } else { oldc[b - nl] };
                if ib == ia {
                    continue;
                }
                let d = dist_words(ca, &j.local[b * w..(b + 1) * w], w);
                let (ea, eb) = (entry(d, ib), entry(d, ia));
                if ea < j.bar[a] {
                    j.ups.push((ia, ea));
                }
                if eb < j.bar[b] {
                    j.ups.push((ib, eb));
                }
            }
            computed += (nl + ol - a - 1) as u64;
        }
    }
    computed
}

/// One round of local joins over all codes, a [`BLOCK`] at a time (the updates of a block
/// applied, each list taking its own in the order they were found, before the next block is
/// joined). Returns the entries that entered the lists and the distances computed.
fn local_joins(
    codes: &[u64],
    w: usize,
    k: usize,
    cand: &Candidates,
    lists: &mut [u64],
    worst: &mut [u64],
) -> (usize, u64) {
    let n = cand.lens.len();
    let (mut changed, mut computed) = (0usize, 0u64);
    // Updates grouped by runs of 2^shift lists (about 512 groups), read in that order: the
    // lists are then visited nearly in order.
    let shift = (usize::BITS - (n / 512).leading_zeros()).max(6);
    let groups = (n >> shift) + 1;
    let mut count = vec![0usize; groups + 1];
    let mut sorted: Vec<(u32, u64)> = Vec::new();
    for b0 in (0..n).step_by(BLOCK) {
        let b1 = (b0 + BLOCK).min(n);
        let worst_now: &[u64] = worst;
        let found: Vec<(Vec<(u32, u64)>, u64)> = (b0..b1)
            .into_par_iter()
            .step_by(CHUNK)
            .map_init(
                || (Vec::new(), Vec::new()),
                |(local, bar), c0| {
                    let mut ups = Vec::new();
                    let c = with_popcnt(Join {
                        codes,
                        w,
                        cand,
                        worst: worst_now,
                        range: c0..(c0 + CHUNK).min(b1),
                        local,
                        bar,
                        ups: &mut ups,
                    });
                    (ups, c)
                },
            )
            .collect();
        computed += found.iter().map(|f| f.1).sum::<u64>();
        // A stable counting sort by group keeps each list's updates in the order found.
        count.fill(0);
        let all = || found.iter().flat_map(|f| &f.0);
        for &(x, _) in all() {
            count[(x as usize >> shift) + 1] += 1;
        }
        for g in 0..groups {
            count[g + 1] += count[g];
        }
        let total = count[groups];
        sorted.clear();
        sorted.resize(total, (0, 0));
        let mut next = count.clone();
        for &(x, e) in all() {
            let g = x as usize >> shift;
            sorted[next[g]] = (x, e);
            next[g] += 1;
        }
        drop(found);
        // Whole groups to each task: a list's updates stay in one task, in order.
        let per = groups
            .div_ceil(rayon::current_num_threads().max(1) * 4)
            .max(1);
        let parts: Vec<(usize, usize)> = (0..groups)
            .step_by(per)
            .map(|g| (count[g], count[(g + per).min(groups)]))
            .collect();
        let lists_at = ListsPtr(lists.as_mut_ptr(), worst.as_mut_ptr());
        changed += parts
            .into_par_iter()
            .map(|(lo, hi)| {
                let mut entered = 0;
                for &(x, e) in &sorted[lo..hi] {
                    let x = x as usize;
                    // SAFETY: each task's updates name lists of its own groups only (the
                    // groups are disjoint ranges of lists), and `x < n`.
                    let (l, wr) = unsafe { lists_at.row(x, k) };
                    if insert(l, e | 1) {
                        entered += 1;
                        *wr = l[k - 1] & !1;
                    }
                }
                entered
            })
            .sum::<usize>();
    }
    (changed, computed)
}

/// The lists and their worst entries, written by tasks that each own whole groups of lists.
#[derive(Clone, Copy)]
struct ListsPtr(*mut u64, *mut u64);

// SAFETY: the tasks sharing a `ListsPtr` write disjoint lists (see `local_joins`).
unsafe impl Send for ListsPtr {}
// SAFETY: as above.
unsafe impl Sync for ListsPtr {}

impl ListsPtr {
    /// List `x` (of `k` entries) and its worst entry.
    ///
    /// # Safety
    /// `x` is within the lists, and no one else reads or writes list `x` meanwhile.
    unsafe fn row<'a>(self, x: usize, k: usize) -> (&'a mut [u64], &'a mut u64) {
        // SAFETY: the caller's promise.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.0.add(x * k), k),
                &mut *self.1.add(x),
            )
        }
    }
}
