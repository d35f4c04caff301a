//! The approximate k-NN graph: seeded by the leaves of random partition trees, refined by
//! neighbour-of-neighbour rounds (NN-Descent, Dong, Charikar & Li 2011) until few lists
//! change. See [`ApproxKnn`].

use rayon::prelude::*;

use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::hamming::scalar::{by_words, dist_words};
use crate::rng::hash_u64;

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
///    each code keeps its nearest. Near codes share leaves in many trees.
/// 2. **Rounds.** Each code's list gathers the lists of its neighbours and reverse
///    neighbours (the codes listing it), at most `sample` of each, and measures every code
///    two steps away not measured before: the neighbour of a neighbour is likely a
///    neighbour. Only pairs through an entry new since the previous round are gathered
///    (NN-Descent's new/old flags). Rounds stop when fewer than `delta · N · k` entries
///    changed, or after `rounds`.
///
/// Each tree and each round reads the lists as they were before it and writes each code's
/// own list, so the result depends only on the codes and the parameters, not on the number
/// of threads. Distances are exact; the lists may miss true neighbours (recall is measured
/// in `benches/compare/graph.py` and checked against brute force in `tests/knn_graph.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct ApproxKnn {
    /// Most refinement rounds (default 8).
    pub rounds: usize,
    /// Neighbours and reverse neighbours of each code gathered per round (default 10).
    pub sample: usize,
    /// Stop when fewer than `delta · N · k` list entries changed in a round (default 0.002).
    pub delta: f64,
    /// Seed of the trees and the samples (default 0).
    pub seed: u64,
    /// Entries kept per code while refining, when more than `k` (default 0: `k`); the `k`
    /// nearest of them are the result.
    pub list: usize,
    /// Random partition trees for the seeds (default 16).
    pub trees: usize,
    /// Most codes in a leaf of a tree (default 250).
    pub leaf: usize,
    /// Random codes measured for each code before the trees (default 10): links across the
    /// parts of the trees, through which the rounds reach neighbours that no leaf held with
    /// the code (without them, 4 trees of 64-code leaves and 8 rounds reach tie-aware recall
    /// 0.40 on 4,000 `GloVe` codes; with 10, 0.94).
    pub randoms: usize,
}

impl Default for ApproxKnn {
    fn default() -> Self {
        ApproxKnn {
            rounds: 8,
            sample: 10,
            delta: 0.002,
            seed: 0,
            list: 0,
            trees: 16,
            leaf: 250,
            randoms: 10,
        }
    }
}

impl ApproxKnn {
    /// The parameters a graph index builds with ([`crate::index::GraphIndex`]): the
    /// defaults without the random links (the index's prune and reverse edges connect the
    /// parts; measured on `GloVe` 100k and 400k, `benches/compare/graph.py`).
    pub fn for_graph() -> Self {
        ApproxKnn {
            randoms: 0,
            ..ApproxKnn::default()
        }
    }
}

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

/// Inserts `e` (packed `distance << 32 | node`) into the sorted list `l` (padded with
/// [`EMPTY`]) unless present or not better than the last; returns whether it entered.
#[inline(always)]
fn insert(l: &mut [u64], flags: &mut [u8], e: u64) -> bool {
    let k = l.len();
    if e >= l[k - 1] {
        return false;
    }
    let pos = l.partition_point(|&x| x < e);
    // A node's entry is always the same value (the distance of a pair is fixed), so a node
    // already listed sits exactly at `pos`.
    if l[pos] == e {
        return false;
    }
    l.copy_within(pos..k - 1, pos + 1);
    flags.copy_within(pos..k - 1, pos + 1);
    l[pos] = e;
    flags[pos] = 1;
    true
}

/// What a refinement round reads: the codes, and each code's neighbourhood of the previous
/// round (list and reverse entries, the new ones first).
struct Ctx<'a> {
    codes: &'a [u64],
    w: usize,
    k: usize,
    /// Neighbourhoods in rows of `hw`: length, how many are new, entries.
    hw: usize,
    hlen: &'a [u32],
    hnew: &'a [u32],
    hood: &'a [u32],
}

/// Per-task scratch of a round.
#[derive(Default)]
struct Scr {
    seen: Vec<u32>,
    stamp: u32,
    cand: Vec<u32>,
}

/// One refinement round for a range of codes.
struct Round<'a> {
    ctx: &'a Ctx<'a>,
    lists: &'a mut [u64],
    flags: &'a mut [u8],
    first: usize,
    scr: &'a mut Scr,
}

impl PopcntBody for Round<'_> {
    type Output = u64;

    #[inline(always)]
    fn run(self) -> u64 {
        let w = self.ctx.w;
        by_words!(w, round_body(self))
    }
}

#[inline(always)]
fn round_body<const W: usize>(r: Round<'_>) -> u64 {
    let Round {
        ctx,
        lists,
        flags,
        first,
        scr,
    } = r;
    let w = if W == 0 { ctx.w } else { W };
    let k = ctx.k;
    let n = ctx.hnew.len();
    if scr.seen.len() < n {
        scr.seen.resize(n, 0);
    }
    let mut computed = 0u64;
    for (i, (l, f)) in lists
        .chunks_exact_mut(k)
        .zip(flags.chunks_exact_mut(k))
        .enumerate()
    {
        let v = first + i;
        scr.stamp = scr.stamp.wrapping_add(1);
        if scr.stamp == 0 {
            scr.seen.iter_mut().for_each(|s| *s = 0);
            scr.stamp = 1;
        }
        let stamp = scr.stamp;
        // Codes already in the list, and v itself, need no measuring.
        scr.seen[v] = stamp;
        for &e in l.iter() {
            if e != EMPTY {
                scr.seen[e as u32 as usize] = stamp;
            }
        }
        scr.cand.clear();
        let hw = ctx.hw;
        let (hs, hn) = (v * hw, ctx.hnew[v] as usize);
        let he = hs + ctx.hlen[v] as usize;
        for (i, &a) in ctx.hood[hs..he].iter().enumerate() {
            let a = a as usize;
            let s2 = a * hw;
            // Through an old entry, only the new entries of its neighbourhood are new pairs.
            let e2 = s2 + if i < hn { ctx.hlen[a] } else { ctx.hnew[a] } as usize;
            for &b in &ctx.hood[s2..e2] {
                if scr.seen[b as usize] != stamp {
                    scr.seen[b as usize] = stamp;
                    scr.cand.push(b);
                }
            }
        }
        let code = &ctx.codes[v * w..(v + 1) * w];
        for (c, &b) in scr.cand.iter().enumerate() {
            if let Some(&nb) = scr.cand.get(c + 8) {
                prefetch(ctx.codes.as_ptr().wrapping_add(nb as usize * w));
            }
            let d = dist_words(code, &ctx.codes[b as usize * w..(b as usize + 1) * w], w);
            insert(l, f, (u64::from(d) << 32) | u64::from(b));
        }
        computed += scr.cand.len() as u64;
    }
    computed
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

/// Codes per parallel task.
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
    let mut lists = vec![EMPTY; n * k];
    let mut flags = vec![0u8; n * k];
    if n < 2 || k == 0 {
        return (lists, stats);
    }
    // 1. Seeds: random codes first (so that the rounds can leave a part the trees got
    // wrong), then the trees.
    let kernels = crate::hamming::Kernels::dispatched();
    lists
        .par_chunks_mut(k)
        .zip(flags.par_chunks_mut(k))
        .enumerate()
        .for_each(|(v, (l, f))| {
            let code = &codes[v * w..(v + 1) * w];
            for j in 0..p.randoms as u64 {
                let u = (hash_u64((v as u64) << 32 | j, p.seed) % n as u64) as usize;
                if u != v {
                    let d = kernels.distance_eq(code, &codes[u * w..(u + 1) * w]);
                    insert(l, f, (u64::from(d) << 32) | u as u64);
                }
            }
        });
    for t in 0..p.trees {
        // The codes in the order of a random tree's leaves, with the leaves' sizes.
        let mut idx: Vec<u32> = (0..n as u32).collect();
        let mut cc = codes.to_vec();
        let salt = hash_u64(t as u64, p.seed);
        let sizes = split(&mut idx, &mut cc, w, p.leaf.max(2), salt, 0);
        let mut bounds = Vec::with_capacity(sizes.len() + 1);
        bounds.push(0usize);
        for s in &sizes {
            bounds.push(bounds.last().expect("non-empty") + s);
        }
        // Each code's nearest in its leaf, among those beating its list's worst.
        let mut cand = vec![EMPTY; n * k];
        let worst: Vec<u64> = lists.par_chunks_exact(k).map(|l| l[k - 1]).collect();
        let mut rows: Vec<&mut [u64]> = Vec::with_capacity(sizes.len());
        let mut rest: &mut [u64] = &mut cand;
        for &s in &sizes {
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
                    let bar_d = (bar >> 32) as u32;
                    buf.clear();
                    for (j, &dj) in d.iter().enumerate() {
                        if dj <= bar_d {
                            let e = (u64::from(dj) << 32) | u64::from(idx[s + j]);
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
        stats.distances += computed / 2;
        let mut pos = vec![0u32; n];
        for (p, &x) in idx.iter().enumerate() {
            pos[x as usize] = p as u32;
        }
        lists
            .par_chunks_mut(k)
            .zip(flags.par_chunks_mut(k))
            .enumerate()
            .for_each(|(x, (l, f))| {
                let p = pos[x] as usize;
                for &e in &cand[p * k..(p + 1) * k] {
                    if e == EMPTY {
                        break;
                    }
                    insert(l, f, e);
                }
            });
    }
    // 2. Rounds.
    let target = (p.delta * n as f64 * k as f64) as usize;
    let sample = p.sample.max(1);
    for round in 0..p.rounds {
        // Neighbourhoods: up to `sample` list entries and `sample` reverse entries (a
        // seeded sample), the new ones first, in rows of `2 · sample`.
        let mut rstart = vec![0usize; n + 1];
        for l in lists.chunks_exact(k) {
            for &e in l.iter().take(sample).take_while(|&&e| e != EMPTY) {
                rstart[e as u32 as usize + 1] += 1;
            }
        }
        for i in 0..n {
            rstart[i + 1] += rstart[i];
        }
        // (old?, hash, source) per reverse entry, grouped by target.
        let mut rev = vec![(0u8, 0u64, 0u32); rstart[n]];
        let mut next = rstart.clone();
        for (v, (l, f)) in lists.chunks_exact(k).zip(flags.chunks_exact(k)).enumerate() {
            for (&e, &nw) in l
                .iter()
                .zip(f)
                .take(sample)
                .take_while(|(e, _)| **e != EMPTY)
            {
                let u = e as u32 as usize;
                let h = hash_u64((v as u64) << 32 | u as u64, p.seed ^ round as u64);
                rev[next[u]] = (1 - nw, h, v as u32);
                next[u] += 1;
            }
        }
        drop(next);
        let hw = 2 * sample;
        let mut hood = vec![0u32; n * hw];
        let mut hlen = vec![0u32; n];
        let mut hnew = vec![0u32; n];
        hood.par_chunks_mut(hw)
            .zip(hlen.par_iter_mut())
            .zip(hnew.par_iter_mut())
            .enumerate()
            .for_each_init(Vec::new, |r, (v, ((h, len), nw))| {
                let l = &lists[v * k..(v + 1) * k];
                let f = &flags[v * k..(v + 1) * k];
                r.clear();
                r.extend_from_slice(&rev[rstart[v]..rstart[v + 1]]);
                if r.len() > sample {
                    r.select_nth_unstable(sample);
                    r.truncate(sample);
                }
                r.sort_unstable();
                let live = l.iter().take(sample).take_while(|&&e| e != EMPTY).count();
                let mut at = 0;
                for i in (0..live).filter(|&i| f[i] != 0) {
                    h[at] = l[i] as u32;
                    at += 1;
                }
                for e in r.iter().filter(|e| e.0 == 0) {
                    h[at] = e.2;
                    at += 1;
                }
                *nw = at as u32;
                for i in (0..live).filter(|&i| f[i] == 0) {
                    h[at] = l[i] as u32;
                    at += 1;
                }
                for e in r.iter().filter(|e| e.0 != 0) {
                    h[at] = e.2;
                    at += 1;
                }
                *len = at as u32;
            });
        drop(rev);
        flags.iter_mut().for_each(|f| *f = 0);
        let ctx = Ctx {
            codes,
            w,
            k,
            hw,
            hlen: &hlen,
            hnew: &hnew,
            hood: &hood,
        };
        let computed: u64 = lists
            .par_chunks_mut(k * CHUNK)
            .zip(flags.par_chunks_mut(k * CHUNK))
            .enumerate()
            .map_init(Scr::default, |scr, (c, (l, f))| {
                with_popcnt(Round {
                    ctx: &ctx,
                    lists: l,
                    flags: f,
                    first: c * CHUNK,
                    scr,
                })
            })
            .sum();
        stats.distances += computed;
        let changed = flags.par_iter().filter(|&&f| f != 0).count();
        stats.rounds += 1;
        stats.changed.push(changed);
        if changed <= target {
            break;
        }
    }
    // A code the trees and rounds left with fewer than k entries (alone in small leaves,
    // listed by no one) gets its exact nearest by a scan.
    let short: Vec<usize> = lists
        .par_chunks_exact(k)
        .enumerate()
        .filter(|(_, l)| l[k - 1] == EMPTY)
        .map(|(v, _)| v)
        .collect();
    for v in short {
        let q = &codes[v * w..(v + 1) * w];
        let found = crate::hamming::scan_knn(q, codes, w, k + 1).expect("whole codes");
        let l = &mut lists[v * k..(v + 1) * k];
        for (slot, nb) in found[0].iter().filter(|nb| nb.row != v).take(k).enumerate() {
            l[slot] = (u64::from(nb.distance) << 32) | nb.row as u64;
        }
        stats.distances += n as u64;
    }
    (lists, stats)
}
