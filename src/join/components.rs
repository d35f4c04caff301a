//! Connected components of a pair list: the sequential [`UnionFind`] (pairs fed one by one,
//! e.g. from a join's sink) and the parallel [`SharedUnionFind`] behind [`clusters`] and
//! [`components`].
//!
//! **The parallel union-find.** One `AtomicU32` parent per point. `union(a, b)` finds both
//! roots and links the **larger root under the smaller** with one compare-and-swap on the
//! larger root's parent (which fails, and is retried, if another thread linked that root
//! first); `find` halves the path with compare-and-swaps that only ever lower a parent. So a
//! parent is never larger than its child, and the root of every tree is its **smallest
//! member**, whatever the order of the unions and the number of threads: the labels are
//! deterministic by construction, with no sort and no relabelling pass. Each point costs
//! 4 bytes; the edges are read once, in parallel chunks, by the threads of the current rayon
//! pool (the front ends size it with [`crate::cpu::threads`]).
//!
//! Measured by `cargo run --release --example cluster_scale` (see `benches/clusters/scale.rs`).

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use super::Pair;
use crate::error::{Error, Result};

/// Edges per parallel task in [`SharedUnionFind::union_all`].
const EDGE_CHUNK: usize = 1 << 14;

/// Union-find over the points `0..n` (union by size, path compression): connected
/// components built pair by pair, e.g. from a streaming join's sink, without holding the
/// pair list. [`labels`](Self::labels) gives the same labels as [`clusters`] on the full
/// list of pairs.
///
/// ```
/// use simlsh::join::{UnionFind, self_join_each};
/// use simlsh::SignatureMatrix;
///
/// let sigs = SignatureMatrix::from_parts(64, vec![0b0111u64, u64::MAX, 0b0001, 0b0011]).unwrap();
/// let mut uf = UnionFind::new(sigs.len())?;
/// self_join_each(&sigs, 1, |p| { uf.union(p.i, p.j); })?;
/// assert_eq!(uf.labels()?, vec![0, 1, 0, 0]);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    /// `n` points, each alone.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `n > 2^32`; [`Error::OutOfMemory`] if the 8 bytes per
    /// point do not fit.
    pub fn new(n: usize) -> Result<Self> {
        if n as u64 > 1 << 32 {
            return Err(Error::param("n", "more than 2^32 points"));
        }
        let mut parent = Vec::new();
        crate::memory::reserve(&mut parent, n, "union-find parents")?;
        parent.extend((0..n).map(|i| i as u32));
        Ok(UnionFind {
            parent,
            size: crate::memory::filled(n, 1, "union-find sizes")?,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// The representative of `x`'s component (not its label: see [`labels`](Self::labels)).
    ///
    /// # Panics
    /// If `x >= n`.
    pub fn find(&mut self, x: u32) -> u32 {
        let mut root = x;
        while self.parent[root as usize] != root {
            root = self.parent[root as usize];
        }
        // Compress the path: every node on it points at the root.
        let mut y = x;
        while self.parent[y as usize] != root {
            let next = self.parent[y as usize];
            self.parent[y as usize] = root;
            y = next;
        }
        root
    }

    /// Joins the components of `a` and `b`; true if they were apart.
    ///
    /// # Panics
    /// If `a` or `b` is `>= n` (see [`try_union`](Self::try_union)).
    pub fn union(&mut self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        let (big, small) = if self.size[ra as usize] >= self.size[rb as usize] {
            (ra, rb)
        } else {
            (rb, ra)
        };
        self.parent[small as usize] = big;
        self.size[big as usize] += self.size[small as usize];
        true
    }

    /// [`union`](Self::union), checking the points.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `a` or `b` is `>= n`.
    pub fn try_union(&mut self, a: u32, b: u32) -> Result<bool> {
        let n = self.len();
        if a as usize >= n || b as usize >= n {
            return Err(Error::param(
                "pairs",
                format!("pair ({a}, {b}) names a point beyond n = {n}"),
            ));
        }
        Ok(self.union(a, b))
    }

    /// `labels[i]` is the **smallest member** of `i`'s component: a point alone is its own
    /// label, and labels do not depend on the order of the unions.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the labels (8 bytes per point while they are made) do not fit.
    pub fn labels(&mut self) -> Result<Vec<u32>> {
        let n = self.len();
        // Points in increasing order: the first member seen of a component is its smallest.
        let mut label_of_root = crate::memory::filled(n, u32::MAX, "union-find labels")?;
        let mut labels = crate::memory::filled(n, 0u32, "union-find labels")?;
        for i in 0..n as u32 {
            let root = self.find(i) as usize;
            if label_of_root[root] == u32::MAX {
                label_of_root[root] = i;
            }
            labels[i as usize] = label_of_root[root];
        }
        Ok(labels)
    }
}

/// Parallel, lock-free union-find over the points `0..n`, whose labels are the **smallest
/// member** of each component whatever the order of the unions and the number of threads.
/// `union` takes `&self`, so any number of threads may unite at once;
/// [`union_all`](Self::union_all) unites a slice of edges in parallel.
///
/// One `AtomicU32` parent per point (4 bytes). A union links the **larger root under the
/// smaller** with one compare-and-swap (retried if another thread linked that root first);
/// `find` halves paths with compare-and-swaps that only lower a parent. A parent is never
/// larger than its child, so each tree's root is its smallest member: the labels need no sort
/// or relabelling. On 2 threads, 10^8 random edges over 10^7 points take 7.1 s
/// (`cargo run --release --example cluster_scale`, `benches/clusters/scale.rs`).
///
/// ```
/// use simlsh::join::SharedUnionFind;
///
/// let uf = SharedUnionFind::new(6)?;
/// uf.union_all(&[(4, 5), (1, 4), (2, 3)])?;
/// assert_eq!(uf.labels()?, vec![0, 1, 2, 2, 1, 1]);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Debug)]
pub struct SharedUnionFind {
    parent: Vec<AtomicU32>,
}

impl SharedUnionFind {
    /// `n` points, each alone: 4 bytes per point, allocated fallibly.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `n > 2^32`; [`Error::OutOfMemory`] if the parents do not
    /// fit.
    pub fn new(n: usize) -> Result<Self> {
        if n as u64 > 1 << 32 {
            return Err(Error::param("n", "more than 2^32 points"));
        }
        let mut parent = Vec::new();
        crate::memory::reserve(&mut parent, n, "union-find parents")?;
        parent.par_extend((0..n).into_par_iter().map(|i| AtomicU32::new(i as u32)));
        Ok(SharedUnionFind { parent })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// The root of `x`'s tree, halving the path on the way. Once every union has returned, the
    /// root is the smallest member of `x`'s component.
    ///
    /// # Panics
    /// If `x >= n`.
    pub fn find(&self, mut x: u32) -> u32 {
        // Relaxed suffices: each parent only ever moves to an ancestor (a smaller point), so a
        // stale read gives a longer path to the same root, never a wrong one; the joins of the
        // threads order every union before the labels are read.
        loop {
            let p = self.parent[x as usize].load(Ordering::Relaxed);
            if p == x {
                return x;
            }
            let g = self.parent[p as usize].load(Ordering::Relaxed);
            if g == p {
                return p;
            }
            // Path halving: `g` is an ancestor of `x` for good, so pointing `x` at it is sound;
            // if `x`'s parent moved meanwhile, it moved to an ancestor too, and is kept.
            let _ = self.parent[x as usize].compare_exchange_weak(
                p,
                g,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            x = g;
        }
    }

    /// Joins the components of `a` and `b`; true if they were apart (exactly one of any
    /// number of concurrent unions of the same two components returns true).
    ///
    /// # Panics
    /// If `a` or `b` is `>= n` (see [`union_all`](Self::union_all)).
    pub fn union(&self, mut a: u32, mut b: u32) -> bool {
        loop {
            a = self.find(a);
            b = self.find(b);
            if a == b {
                return false;
            }
            let (low, high) = if a < b { (a, b) } else { (b, a) };
            // Link the larger root under the smaller, if it is still a root.
            if self.parent[high as usize]
                .compare_exchange(high, low, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
            // Another thread linked `high` first: retry from the new roots.
            (a, b) = (high, low);
        }
    }

    /// Unites the ends of every edge, in parallel chunks; returns how many edges joined two
    /// components (`n` minus the number of components, on fresh points).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the first edge (by position) with an end `>= n`;
    /// then no edge has been applied.
    pub fn union_all(&self, edges: &[(u32, u32)]) -> Result<usize> {
        self.unite(edges, |&e| e, "edges")
    }

    /// Unites `edges` mapped by `ends`, checking them all first.
    fn unite<E: Sync>(
        &self,
        edges: &[E],
        ends: impl Fn(&E) -> (u32, u32) + Sync,
        what: &'static str,
    ) -> Result<usize> {
        let n = self.len();
        let beyond = |e: &E| {
            let (a, b) = ends(e);
            a as usize >= n || b as usize >= n
        };
        if let Some(k) = edges.par_iter().position_first(beyond) {
            let (a, b) = ends(&edges[k]);
            return Err(Error::param(
                what,
                format!("edge {k} ({a}, {b}) names a point beyond n = {n}"),
            ));
        }
        Ok(edges
            .par_chunks(EDGE_CHUNK)
            .map(|chunk| {
                chunk
                    .iter()
                    .filter(|e| {
                        let (a, b) = ends(e);
                        self.union(a, b)
                    })
                    .count()
            })
            .sum())
    }

    /// `labels[i]` is the **smallest member** of `i`'s component (the root of its tree),
    /// computed in parallel; the same labels as [`UnionFind::labels`] on the same unions.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the labels (4 bytes per point) do not fit.
    pub fn labels(&self) -> Result<Vec<u32>> {
        let mut labels = Vec::new();
        crate::memory::reserve(&mut labels, self.len(), "union-find labels")?;
        // Over `usize`: at n = 2^32 points `n as u32` is 0 and would give no labels.
        labels.par_extend((0..self.len()).into_par_iter().map(|i| self.find(i as u32)));
        Ok(labels)
    }
}

/// Connected components of the graph on `0..n` whose edges are `edges`, by the parallel
/// [`SharedUnionFind`]: `labels[i]` is the **smallest member** of `i`'s component, the same
/// for any order of the edges and any number of threads. Memory: 4 bytes per point besides
/// the labels.
///
/// ```
/// use simlsh::join::components;
/// assert_eq!(components(5, &[(3, 1), (4, 3)])?, vec![0, 1, 2, 1, 1]);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if an edge names a point `>= n` (the first such edge by
/// position), or `n > 2^32`; [`Error::OutOfMemory`].
pub fn components(n: usize, edges: &[(u32, u32)]) -> Result<Vec<u32>> {
    let uf = SharedUnionFind::new(n)?;
    uf.union_all(edges)?;
    uf.labels()
}

/// Connected components of the graph on `0..n` whose edges are `pairs` (e.g. from
/// [`self_join`](super::self_join)): `labels[i]` is the **smallest member** of `i`'s
/// component, so a point alone is its own label and labels do not depend on the order of the
/// pairs or the number of threads. By the parallel [`SharedUnionFind`]:
/// `O((n + pairs) log n)` work at worst, near-linear in practice. To build the components
/// while a join runs, without the pair list, feed a [`UnionFind`] or batches to
/// [`SharedUnionFind::union_all`].
///
/// Components **chain**: A ≈ B and B ≈ C put A and C together however far apart they are
/// (7,057 of 10,000 GloVe words fall in one component at cosine 0.8); for clusters whose
/// members are all close to one representative, see [`leader_clusters`](super::leader_clusters).
///
/// ```
/// use simlsh::join::{Pair, clusters};
/// let pairs = [Pair { i: 1, j: 3, distance: 0 }, Pair { i: 3, j: 4, distance: 2 }];
/// assert_eq!(clusters(5, &pairs).unwrap(), vec![0, 1, 2, 1, 1]);
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if a pair names a point `>= n`, or `n > 2^32`;
/// [`Error::OutOfMemory`].
pub fn clusters(n: usize, pairs: &[Pair]) -> Result<Vec<u32>> {
    let uf = SharedUnionFind::new(n)?;
    uf.unite(pairs, |p| (p.i, p.j), "pairs")?;
    uf.labels()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Smallest member of each component by breadth-first search over an adjacency list:
    /// the oracle, sharing nothing with either union-find.
    fn bfs_labels(n: usize, edges: &[(u32, u32)]) -> Vec<u32> {
        let mut adj = vec![Vec::new(); n];
        for &(a, b) in edges {
            adj[a as usize].push(b);
            adj[b as usize].push(a);
        }
        let mut labels = vec![u32::MAX; n];
        for s in 0..n {
            if labels[s] != u32::MAX {
                continue;
            }
            // Points in increasing order: `s` is the smallest of its component.
            labels[s] = s as u32;
            let mut queue = vec![s as u32];
            while let Some(u) = queue.pop() {
                for &v in &adj[u as usize] {
                    if labels[v as usize] == u32::MAX {
                        labels[v as usize] = s as u32;
                        queue.push(v);
                    }
                }
            }
        }
        labels
    }

    fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(f)
    }

    /// Edges over `0..n`, some repeated, some loops, with a few chains and many small parts.
    fn graphs() -> impl Strategy<Value = (usize, Vec<(u32, u32)>)> {
        (1usize..3000).prop_flat_map(|n| {
            let edge = (0..n as u32, 0..n as u32);
            (Just(n), prop::collection::vec(edge, 0..(2 * n).min(40_000)))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The same labels as breadth-first search and the sequential union-find, for 1, 2
        /// and 4 threads and the edges reversed and flipped.
        #[test]
        fn labels_are_the_smallest_member_for_any_threads_and_order(
            (n, edges) in graphs(),
            threads in 1usize..5,
        ) {
            let want = bfs_labels(n, &edges);
            let mut seq = UnionFind::new(n).unwrap();
            let mut joined = 0;
            for &(a, b) in &edges {
                joined += usize::from(seq.union(a, b));
            }
            prop_assert_eq!(&seq.labels().unwrap(), &want);
            let (got, got_joined) = in_pool(threads, || {
                let uf = SharedUnionFind::new(n).unwrap();
                let j = uf.union_all(&edges).unwrap();
                (uf.labels().unwrap(), j)
            });
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(got_joined, joined);
            let turned: Vec<(u32, u32)> = edges.iter().rev().map(|&(a, b)| (b, a)).collect();
            prop_assert_eq!(&in_pool(threads, || components(n, &turned).unwrap()), &want);
        }
    }

    /// Many threads racing on one long chain and a star (the worst cases for the linking
    /// compare-and-swap), in a thousand shuffled orders' worth of interleavings.
    #[test]
    fn racing_unions_on_a_chain_and_a_star_agree_with_the_oracle() {
        let n = 200_000u32;
        let mut edges: Vec<(u32, u32)> = (1..n / 2).map(|i| (i, i - 1)).collect();
        edges.extend((n / 2 + 1..n).map(|i| (n - 1, i.min(n - 2))));
        let mut rng = crate::rng::Rng::new(21);
        for k in (1..edges.len()).rev() {
            edges.swap(k, rng.below(k as u64 + 1) as usize);
        }
        let want = bfs_labels(n as usize, &edges);
        for threads in [2, 4] {
            let got = in_pool(threads, || components(n as usize, &edges).unwrap());
            assert_eq!(got, want, "{threads} threads");
        }
    }

    #[test]
    fn an_edge_beyond_n_is_an_error_naming_it_and_nothing_is_united() {
        let uf = SharedUnionFind::new(4).unwrap();
        let err = uf.union_all(&[(0, 1), (2, 9), (7, 1)]).unwrap_err();
        assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
        assert!(err.to_string().contains("edge 1 (2, 9)"), "{err}");
        assert_eq!(uf.labels().unwrap(), vec![0, 1, 2, 3]);
        let pairs = [Pair {
            i: 0,
            j: 4,
            distance: 0,
        }];
        assert!(
            clusters(4, &pairs)
                .unwrap_err()
                .to_string()
                .contains("(0, 4)")
        );
        assert!(
            SharedUnionFind::new(0)
                .unwrap()
                .labels()
                .unwrap()
                .is_empty()
        );
    }
}
