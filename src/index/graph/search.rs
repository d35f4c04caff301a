//! The beam search over the graph: a bucket queue by distance instead of heaps, a visited
//! bitset (one bit a node: 50 KB for 400,000 nodes, which stays in the core's caches, where
//! an array of stamps would not), cleared word by word after each search, and the
//! neighbours' codes prefetched before their distances are computed in one batch.

use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::hamming::scalar::{by_words, dist_words};

/// No neighbour (padding of an adjacency row) and no node.
pub(super) const NONE: u32 = u32::MAX;

/// The arrays a search reads.
#[derive(Clone, Copy)]
pub(super) struct View<'a> {
    /// Words per code.
    pub words: usize,
    /// Adjacency slots per node.
    pub m: usize,
    /// Node codes, node-major.
    pub codes: &'a [u64],
    /// `nodes × m` neighbours, [`NONE`]-padded.
    pub adj: &'a [u32],
}

impl View<'_> {
    /// Number of node slots.
    pub fn nodes(&self) -> usize {
        self.codes.len() / self.words
    }
}

/// Per-search scratch, reused across searches (one per concurrent search).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Bit `node` set when `node` was reached by the current search.
    seen: Vec<u64>,
    /// The words of `seen` the current search set bits in (cleared at the next begin).
    dirty: Vec<u32>,
    /// Accepted nodes by distance.
    pub buckets: Vec<Vec<u32>>,
    /// How many nodes of each bucket were expanded.
    done: Vec<u32>,
    /// Buckets used by the current search are `0..=hi`.
    hi: usize,
    /// Nodes of one row still to be measured.
    todo: Vec<u32>,
}

impl Scratch {
    /// Starts a search over `nodes` node slots and distances up to `bits`.
    fn begin(&mut self, nodes: usize, bits: usize) {
        for &i in &self.dirty {
            self.seen[i as usize] = 0;
        }
        self.dirty.clear();
        let words = nodes.div_ceil(64);
        if self.seen.len() < words {
            self.seen.resize(words, 0);
        }
        if self.buckets.len() < bits + 1 {
            self.buckets.resize_with(bits + 1, Vec::new);
            self.done.resize(bits + 1, 0);
        }
        for d in 0..=self.hi.min(self.buckets.len() - 1) {
            self.buckets[d].clear();
            self.done[d] = 0;
        }
        self.hi = 0;
    }

    /// Marks `node` reached; false if it already was.
    #[inline(always)]
    fn visit(&mut self, node: u32) -> bool {
        let i = node as usize / 64;
        let bit = 1u64 << (node % 64);
        let s = &mut self.seen[i];
        if *s & bit != 0 {
            return false;
        }
        if *s == 0 {
            self.dirty.push(i as u32);
        }
        *s |= bit;
        true
    }

    /// The accepted nodes in increasing distance (`(distance, node)`), at most up to the
    /// search's bound.
    pub fn found(&self, bound: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let top = (bound as usize).min(self.hi);
        self.buckets[..=top]
            .iter()
            .enumerate()
            .flat_map(|(d, b)| b.iter().map(move |&n| (d as u32, n)))
    }
}

/// What one search did: the bound of its result set and how many distances it computed.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Outcome {
    /// Accepted nodes at distance `<= bound` form the result (the `ef`-th distance, or the
    /// largest distance accepted when fewer than `ef` were).
    pub bound: u32,
    /// Distances computed (entry points included).
    pub distances: usize,
}

/// The inputs of one beam search.
pub(super) struct Beam<'v, 'a> {
    pub view: &'v View<'a>,
    pub query: &'v [u64],
    /// Distances to compute first, from a contiguous copy of their codes: `(nodes, codes)`.
    pub entries: (&'v [u32], &'v [u64]),
    /// A node holding the query's code exactly, seeded at distance 0.
    pub exact: Option<u32>,
    /// Result set size.
    pub ef: usize,
    /// Code width (distances are `0..=bits`; buckets cover every distance of the words,
    /// so that padding bits set in a corrupt file cannot index past them).
    pub bits: usize,
    pub scratch: &'v mut Scratch,
}

impl PopcntBody for Beam<'_, '_> {
    type Output = Outcome;

    #[inline(always)]
    fn run(self) -> Outcome {
        by_words!(self.view.words, beam_body(self))
    }
}

/// Runs the beam search (compiled with `POPCNT` when the CPU dispatch allows it); the
/// accepted nodes are left in the scratch's buckets.
pub(super) fn beam(b: Beam<'_, '_>) -> Outcome {
    with_popcnt(b)
}

/// Prefetches the adjacency row of `node` (every cache line of it), to be expanded later.
#[inline(always)]
fn prefetch_row(view: &View<'_>, node: u32) {
    let start = view.adj.as_ptr().wrapping_add(node as usize * view.m);
    let bytes = view.m * std::mem::size_of::<u32>();
    let mut off = 0;
    while off < bytes {
        prefetch(start.cast::<u8>().wrapping_add(off));
        off += 64;
    }
    // The last line, when the row straddles one more than its length suggests.
    prefetch(start.cast::<u8>().wrapping_add(bytes - 1));
}

/// The accepted set: nodes by distance in the buckets, `count` of them, the largest
/// accepted distance `worst`.
struct Accepted {
    count: usize,
    worst: usize,
    ef: usize,
    /// Smallest distance with a node not yet expanded.
    lo: usize,
}

impl Accepted {
    /// Accepts `node` at distance `d` if the set has room or `d` beats the worst.
    #[inline(always)]
    fn offer(&mut self, s: &mut Scratch, node: u32, d: usize) {
        if self.count >= self.ef && d >= self.worst {
            return;
        }
        s.buckets[d].push(node);
        if d > s.hi {
            s.hi = d;
        }
        self.count += 1;
        if self.count == 1 || d > self.worst {
            self.worst = d;
        }
        if d < self.lo {
            self.lo = d;
        }
        // Drop the worst bucket while the rest still holds `ef` nodes.
        while self.count > self.ef {
            let w = s.buckets[self.worst].len();
            if self.count - w < self.ef {
                break;
            }
            self.count -= w;
            s.buckets[self.worst].clear();
            s.done[self.worst] = 0;
            while self.worst > 0 && s.buckets[self.worst].is_empty() {
                self.worst -= 1;
            }
        }
    }
}

#[inline(always)]
fn beam_body<const W: usize>(b: Beam<'_, '_>) -> Outcome {
    let Beam {
        view,
        query,
        entries,
        exact,
        ef,
        bits,
        scratch: s,
    } = b;
    let w = if W == 0 { view.words } else { W };
    let nodes = view.nodes();
    s.begin(nodes, bits.max(w * 64));
    let mut acc = Accepted {
        count: 0,
        worst: 0,
        ef: ef.max(1),
        lo: usize::MAX,
    };
    let mut distances = 0usize;
    if let Some(x) = exact
        && s.visit(x)
    {
        acc.offer(s, x, 0);
    }
    let (enodes, ecodes) = entries;
    for (&node, code) in enodes.iter().zip(ecodes.chunks_exact(w)) {
        if s.visit(node) {
            let d = dist_words(query, code, w) as usize;
            distances += 1;
            acc.offer(s, node, d);
        }
    }
    let m = view.m;
    loop {
        // The nearest accepted node not yet expanded.
        let mut d = acc.lo;
        while d <= acc.worst && s.done[d] as usize >= s.buckets[d].len() {
            d += 1;
        }
        if d > acc.worst || acc.count == 0 {
            break;
        }
        acc.lo = d;
        let node = s.buckets[d][s.done[d] as usize];
        s.done[d] += 1;
        let row = &view.adj[node as usize * m..(node as usize + 1) * m];
        s.todo.clear();
        for &nb in row {
            // Rows are padded with NONE; a node beyond the graph (only in a corrupt file,
            // before validation) is skipped.
            if nb == NONE {
                break;
            }
            if (nb as usize) < nodes && s.visit(nb) {
                prefetch(view.codes.as_ptr().wrapping_add(nb as usize * w));
                s.todo.push(nb);
            }
        }
        distances += s.todo.len();
        for i in 0..s.todo.len() {
            let nb = s.todo[i];
            let c = &view.codes[nb as usize * w..nb as usize * w + w];
            let dn = dist_words(query, c, w) as usize;
            if acc.count < acc.ef || dn < acc.worst {
                prefetch_row(view, nb);
            }
            acc.offer(s, nb, dn);
        }
    }
    Outcome {
        bound: if acc.count == 0 { 0 } else { acc.worst as u32 },
        distances,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_visited_set_is_empty_at_each_begin() {
        let mut s = Scratch::default();
        let nodes = 1000;
        // Searches of different sizes reuse the scratch: each starts with nothing reached.
        for (round, &n) in [nodes, 130, nodes, 64, 1].iter().enumerate() {
            s.begin(n, 256);
            let marked: Vec<u32> = (0..n as u32)
                .filter(|x| (x * 7 + round as u32).is_multiple_of(3))
                .collect();
            for &x in &marked {
                assert!(s.visit(x), "round {round}: node {x} reached before");
            }
            for x in 0..n as u32 {
                assert_eq!(s.visit(x), !marked.contains(&x), "round {round}: node {x}");
            }
        }
    }
}
