//! Graphs over signatures: connected components of a pair list, and the k-nearest-neighbour
//! graph.

use rayon::prelude::*;

use super::Pair;
use crate::error::{Error, Result};
use crate::index::{HammingIndex, Hit, LinearScan};
use crate::signature::SignatureMatrix;

/// Union-find over `0..n`: union by size, path compression.
struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    fn find(&mut self, x: u32) -> u32 {
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

    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return;
        }
        let (big, small) = if self.size[ra as usize] >= self.size[rb as usize] {
            (ra, rb)
        } else {
            (rb, ra)
        };
        self.parent[small as usize] = big;
        self.size[big as usize] += self.size[small as usize];
    }
}

/// Connected components of the graph on `0..n` whose edges are `pairs` (e.g. from
/// [`self_join`](super::self_join)): `labels[i]` is the **smallest member** of `i`'s
/// component, so a point alone is its own label and labels do not depend on the order of the
/// pairs. Union-find with union by size and path compression: `O((n + pairs) α(n))`.
///
/// ```
/// use simlsh::join::{Pair, clusters};
/// let pairs = [Pair { i: 1, j: 3, distance: 0 }, Pair { i: 3, j: 4, distance: 2 }];
/// assert_eq!(clusters(5, &pairs).unwrap(), vec![0, 1, 2, 1, 1]);
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if a pair names a point `>= n`, or `n > 2^32`.
pub fn clusters(n: usize, pairs: &[Pair]) -> Result<Vec<u32>> {
    if n as u64 > 1 << 32 {
        return Err(Error::param("n", "more than 2^32 points"));
    }
    let mut uf = UnionFind::new(n);
    for p in pairs {
        if p.i as usize >= n || p.j as usize >= n {
            return Err(Error::param(
                "pairs",
                format!("pair ({}, {}) names a point beyond n = {n}", p.i, p.j),
            ));
        }
        uf.union(p.i, p.j);
    }
    // Points in increasing order: the first member seen of a component is its smallest.
    let mut label_of_root = vec![u32::MAX; n];
    let mut labels = vec![0u32; n];
    for i in 0..n as u32 {
        let root = uf.find(i) as usize;
        if label_of_root[root] == u32::MAX {
            label_of_root[root] = i;
        }
        labels[i as usize] = label_of_root[root];
    }
    Ok(labels)
}

/// Drops point `i` itself from its `k + 1` nearest (sorted by `(distance, id)`), keeping `k`.
fn without_self(i: usize, mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
    if let Some(pos) = hits.iter().position(|h| h.id as usize == i) {
        hits.remove(pos);
    }
    hits.truncate(k);
    hits
}

/// The k-nearest-neighbour graph of the rows of `sigs`: for each row `i`, its `k` nearest
/// *other* rows (ids are row numbers) sorted by `(distance, id)`, ties broken by the smaller
/// id, all of them if fewer. Exact, by the batched linear scan (every row against every
/// row, in parallel): `O(N²)`. For large `N` with close neighbours, build an index and use
/// [`knn_graph_with`].
///
/// # Errors
/// [`Error::InvalidParameter`] for more than `2^32` rows.
pub fn knn_graph<S: AsRef<[u64]>>(sigs: &SignatureMatrix<S>, k: usize) -> Result<Vec<Vec<Hit>>> {
    let index = LinearScan::build(sigs)?;
    knn_graph_with(&index, sigs, k)
}

/// [`knn_graph`] with the k-NN searches answered by `index`, which must hold row `i` of
/// `sigs` under id `i` for every row (e.g. built from `sigs`). Exact when the index's k-NN is
/// ([`HammingIndex::exact_knn`]).
///
/// # Errors
/// [`Error::BitsMismatch`] if the widths differ, [`Error::LengthMismatch`] if the index does
/// not hold as many codes as `sigs` has rows; the index's errors.
pub fn knn_graph_with<S: AsRef<[u64]>>(
    index: &dyn HammingIndex,
    sigs: &SignatureMatrix<S>,
    k: usize,
) -> Result<Vec<Vec<Hit>>> {
    knn_graph_rows(index, sigs, 0..sigs.len(), k)
}

/// The rows `rows` of [`knn_graph_with`]'s graph (entry `r - rows.start` holds row `r`'s
/// neighbours): the whole graph is the concatenation of any split of `0..N` into ranges, so
/// a caller can compute it in batches (e.g. to report progress).
///
/// # Errors
/// As [`knn_graph_with`]; [`Error::InvalidParameter`] if `rows` is not within `0..N`.
pub fn knn_graph_rows<S: AsRef<[u64]>>(
    index: &dyn HammingIndex,
    sigs: &SignatureMatrix<S>,
    rows: std::ops::Range<usize>,
    k: usize,
) -> Result<Vec<Vec<Hit>>> {
    if index.bits() != sigs.bits() {
        return Err(Error::BitsMismatch {
            expected: index.bits(),
            got: sigs.bits(),
        });
    }
    if index.len() != sigs.len() {
        return Err(Error::LengthMismatch {
            what: "codes in the index vs rows",
            left: index.len(),
            right: sigs.len(),
        });
    }
    if rows.start > rows.end || rows.end > sigs.len() {
        return Err(Error::InvalidParameter {
            name: "rows",
            reason: format!("{rows:?} is not a range of the {} rows", sigs.len()),
        });
    }
    let lo = rows.start;
    let found = index.knn_batch(sigs.slice_rows(rows).as_slice(), k.saturating_add(1))?;
    Ok(found
        .into_par_iter()
        .enumerate()
        .map(|(i, hits)| without_self(lo + i, hits, k))
        .collect())
}
