//! Graphs over signatures: leader clusters of a pair list, and the k-nearest-neighbour graph
//! (connected components are in `components.rs`).

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::index::{HammingIndex, Hit, Id};
use crate::signature::SignatureMatrix;

/// The order in which [`leader_clusters`] considers points as leaders.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LeaderOrder {
    /// Increasing id (the default): the first occurrence leads, as dedup tools keep the first
    /// copy; every leader is the smallest member of its cluster.
    #[default]
    Id,
    /// Most neighbours first (ties by id): star clustering, usually fewer clusters.
    Degree,
}

/// Leader (star) clusters of the graph on `0..n` whose edges are `edges` (e.g. the verified
/// pairs of [`crate::verify`]): points are taken in `order`; a point not yet assigned becomes
/// a **leader**, and every unassigned neighbour of it joins its cluster. `labels[i]` is the
/// leader of `i`'s cluster (a leader is its own label).
///
/// Unlike [`clusters`](super::clusters), this does not chain: every member is an edge's end away from its
/// leader, so with edges at cosine ≥ τ every member's cosine to its leader is ≥ τ. With
/// A ≈ B, B ≈ C but A ≉ C, connected components give {A, B, C}; leaders in id order give
/// {A, B} and {C}. The result is deterministic (neighbours are taken in increasing id), and
/// does not depend on the order of the edges. Memory: 8 bytes per edge for the adjacency.
///
/// ```
/// use simlsh::join::{LeaderOrder, clusters, leader_clusters, Pair};
///
/// // A = 0, B = 1, C = 2: A ≈ B, B ≈ C, A ≉ C.
/// let edges = [(0u32, 1u32), (1, 2)];
/// assert_eq!(leader_clusters(3, edges, LeaderOrder::Id)?, vec![0, 0, 2]);
/// // B has the most neighbours: it leads all three.
/// assert_eq!(leader_clusters(3, edges, LeaderOrder::Degree)?, vec![1, 1, 1]);
/// let pairs: Vec<Pair> = edges.iter().map(|&(i, j)| Pair { i, j, distance: 0 }).collect();
/// assert_eq!(clusters(3, &pairs)?, vec![0, 0, 0]);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if an edge names a point `>= n`, or `n > 2^32`.
pub fn leader_clusters(
    n: usize,
    edges: impl IntoIterator<Item = (u32, u32)>,
    order: LeaderOrder,
) -> Result<Vec<u32>> {
    if n as u64 > 1 << 32 {
        return Err(Error::param("n", "more than 2^32 points"));
    }
    let edges: Vec<(u32, u32)> = edges.into_iter().filter(|e| e.0 != e.1).collect();
    let mut start = vec![0usize; n + 1];
    for &(a, b) in &edges {
        if a as usize >= n || b as usize >= n {
            return Err(Error::param(
                "edges",
                format!("edge ({a}, {b}) names a point beyond n = {n}"),
            ));
        }
        start[a as usize + 1] += 1;
        start[b as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut next = start.clone();
    let mut adj = vec![0u32; start[n]];
    for &(a, b) in &edges {
        adj[next[a as usize]] = b;
        next[a as usize] += 1;
        adj[next[b as usize]] = a;
        next[b as usize] += 1;
    }
    drop(edges);
    for i in 0..n {
        adj[start[i]..start[i + 1]].sort_unstable();
    }
    let mut points: Vec<u32> = (0..n as u32).collect();
    if order == LeaderOrder::Degree {
        let degree = |i: u32| start[i as usize + 1] - start[i as usize];
        points.sort_by(|&a, &b| degree(b).cmp(&degree(a)).then(a.cmp(&b)));
    }
    let mut labels = vec![u32::MAX; n];
    for u in points {
        if labels[u as usize] != u32::MAX {
            continue;
        }
        labels[u as usize] = u;
        for &v in &adj[start[u as usize]..start[u as usize + 1]] {
            if labels[v as usize] == u32::MAX {
                labels[v as usize] = u;
            }
        }
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
/// id, all of them if fewer. Exact, by [`hamming::self_knn`](crate::hamming::self_knn): every
/// pair of rows compared once, in parallel, `O(N²)`. For large `N` with close neighbours,
/// build an index and use [`knn_graph_with`].
///
/// # Errors
/// [`Error::InvalidParameter`] for more than `2^32` rows.
pub fn knn_graph<S: AsRef<[u64]>>(sigs: &SignatureMatrix<S>, k: usize) -> Result<Vec<Vec<Hit>>> {
    let found = crate::hamming::self_knn(sigs.as_slice(), sigs.words_per_row(), k)?;
    Ok(found
        .into_par_iter()
        .map(|row| {
            row.into_iter()
                .map(|nb| Hit {
                    distance: nb.distance,
                    id: nb.row as u32,
                })
                .collect()
        })
        .collect())
}

/// How [`knn_graph_by`] computes the k-NN graph; by default exactly (as the command line's
/// `knn --method linear`).
#[derive(Clone, Debug, PartialEq, Default)]
pub enum KnnMethod {
    /// Exact: every pair compared once ([`knn_graph`]), `O(N²)`.
    #[default]
    Exact,
    /// Approximate: the leaves of random partition trees as seeds, refined by NN-Descent's
    /// local joins ([`ApproxKnn`](crate::join::ApproxKnn)), about `O(N · rounds · sample²)`.
    Approx(super::ApproxKnn),
}

impl KnnMethod {
    /// `exact` or `approx`.
    pub fn name(&self) -> &'static str {
        match self {
            KnnMethod::Exact => "exact",
            KnnMethod::Approx(_) => "approx",
        }
    }
}

impl std::str::FromStr for KnnMethod {
    type Err = Error;

    /// `exact` or `approx` (the default [`ApproxKnn`](crate::join::ApproxKnn)).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "exact" => Ok(KnnMethod::Exact),
            "approx" => Ok(KnnMethod::Approx(super::ApproxKnn::default())),
            other => Err(Error::param(
                "method",
                format!("`{other}`: expected exact or approx"),
            )),
        }
    }
}

/// The k-NN graph of the rows of `sigs` (as [`knn_graph`]: row `i`'s `k` nearest other
/// rows sorted by `(distance, id)`) by `method`: exact, or approximate, where each row's
/// list holds exact distances but may miss true neighbours. Also returns what the
/// approximate method did (default stats for the exact one).
///
/// ```
/// use simlsh::join::{KnnMethod, knn_graph, knn_graph_by};
/// use simlsh::SignatureMatrix;
///
/// let codes: Vec<u64> = (0..200u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
/// let sigs = SignatureMatrix::from_parts(64, codes)?;
/// let (approx, _) = knn_graph_by(&sigs, 5, &"approx".parse()?)?;
/// let exact = knn_graph(&sigs, 5)?;
/// assert_eq!(approx.len(), exact.len());
/// assert!(approx.iter().all(|row| row.len() == 5));
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] for more than `2^32` rows, or approximate parameters out of
/// range (no permutation, a window of 0); [`Error::OutOfMemory`] when the approximate
/// method's lists (`k`, at least [`ApproxKnn::list`](super::ApproxKnn::list), a row) and
/// candidates (`sample` a row) do not fit in the memory available.
pub fn knn_graph_by<S: AsRef<[u64]>>(
    sigs: &SignatureMatrix<S>,
    k: usize,
    method: &KnnMethod,
) -> Result<(Vec<Vec<Hit>>, super::ApproxStats)> {
    let p = match method {
        KnnMethod::Exact => return Ok((knn_graph(sigs, k)?, super::ApproxStats::default())),
        KnnMethod::Approx(p) => p,
    };
    if sigs.len() > u32::MAX as usize {
        return Err(Error::param("signatures", "more than 2^32 rows"));
    }
    if p.trees == 0 || p.leaf < 2 {
        return Err(Error::param(
            "method",
            "the approximate k-NN graph needs at least one tree and leaves of 2 codes",
        ));
    }
    let k_eff = k.min(sigs.len().saturating_sub(1));
    let width = if k_eff == 0 {
        0
    } else {
        p.list_for(k_eff).min(sigs.len() - 1)
    };
    // The lists (two arrays of `width` entries a row while they are renumbered) and the
    // rounds' candidates (two of `sample` a row), checked before they are made.
    let n = sigs.len();
    let entries = n.saturating_mul(width).saturating_mul(2);
    let cands = n.saturating_mul(p.sample.max(1)).saturating_mul(2);
    crate::memory::check(
        "the approximate k-NN graph's lists",
        crate::memory::bytes_of::<u64>(entries)
            .saturating_add(crate::memory::bytes_of::<u32>(cands)),
    )?;
    let (lists, stats) =
        super::descent::approx_knn(sigs.as_slice(), sigs.words_per_row(), width, p);
    let rows = if k_eff == 0 {
        vec![Vec::new(); sigs.len()]
    } else {
        lists
            .par_chunks_exact(width)
            .map(|l| {
                l.iter()
                    .take(k_eff)
                    .take_while(|&&e| e != u64::MAX)
                    .map(|&e| Hit {
                        distance: (e >> 32) as u32,
                        id: e as u32,
                    })
                    .collect()
            })
            .collect()
    };
    Ok((rows, stats))
}

/// [`knn_graph`] with the k-NN searches answered by `index`, which must hold row `i` of
/// `sigs` under id `i` for every row (e.g. built from `sigs`). Exact when the index's k-NN is
/// ([`HammingIndex::exact_knn`]).
///
/// # Errors
/// [`Error::BitsMismatch`] if the widths differ, [`Error::LengthMismatch`] if the index does
/// not hold as many codes as `sigs` has rows, [`Error::InvalidParameter`] if it answers with
/// an id outside `0..N`; the index's errors.
pub fn knn_graph_with<S: AsRef<[u64]>>(
    index: &dyn HammingIndex,
    sigs: &SignatureMatrix<S>,
    k: usize,
) -> Result<Vec<Vec<Hit>>> {
    knn_graph_rows(index, sigs, 0..sigs.len(), k)
}

/// The k-NN graph of the rows other than `featureless` (row numbers in increasing order: the
/// rows without features, [`Featureless::stored`](crate::index::Featureless::stored) of
/// [`Featureless::of_codes`](crate::index::Featureless::of_codes) for codes,
/// [`Vectors::zero_rows`](crate::verify::Vectors::zero_rows) for vectors): `graph` computes the
/// graph of the other rows' codes (compacted, in row order: [`knn_graph`], [`knn_graph_by`],
/// [`knn_graph_with`] of an index of them, ...), and its ids are mapped back to row numbers of
/// `sigs`. A featureless row has no neighbours and is no one's, as joins leave such rows out
/// ([`self_join_active`](super::self_join_active)). With no featureless row, `graph` gets
/// `sigs` itself (borrowed, not copied).
///
/// ```
/// use simlsh::index::Featureless;
/// use simlsh::join::{knn_graph, knn_graph_active};
/// use simlsh::SignatureMatrix;
///
/// let sigs = SignatureMatrix::from_parts(64, vec![0b1u64, 0, 0b11, 0])?;
/// let rule = Featureless::of_codes(&sigs);
/// let g = knn_graph_active(&sigs, rule.stored(), |s| knn_graph(s, 1))?;
/// assert_eq!(g[0].iter().map(|h| h.id).collect::<Vec<_>>(), vec![2]);
/// assert!(g[1].is_empty() && g[3].is_empty());
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `featureless` is not increasing or names a row beyond
/// `sigs`, if `graph` does not give one list per other row, or an id beyond them;
/// [`Error::OutOfMemory`] when the other rows' codes cannot be copied; `graph`'s errors.
pub fn knn_graph_active<S: AsRef<[u64]>, E: From<Error>>(
    sigs: &SignatureMatrix<S>,
    featureless: &[Id],
    graph: impl FnOnce(&SignatureMatrix<&[u64]>) -> std::result::Result<Vec<Vec<Hit>>, E>,
) -> std::result::Result<Vec<Vec<Hit>>, E> {
    if featureless.is_empty() {
        return graph(&sigs.borrowed());
    }
    let rows = super::with_features(sigs.len(), featureless)?;
    let words = sigs.words_per_row();
    let mut data = Vec::new();
    // Checked: the rows' codes may take up to the whole of `sigs` again.
    crate::memory::reserve(
        &mut data,
        rows.len().saturating_mul(words),
        "k-NN graph codes of rows with features",
    )?;
    for &r in &rows {
        data.extend_from_slice(sigs.row(r as usize));
    }
    let kept = SignatureMatrix::from_parts(sigs.bits(), data)?;
    let found = graph(&kept.borrowed())?;
    if found.len() != rows.len() {
        return Err(Error::param(
            "graph",
            format!(
                "{} lists for {} rows with features",
                found.len(),
                rows.len()
            ),
        )
        .into());
    }
    let mut out = crate::memory::filled(sigs.len(), Vec::new(), "k-NN graph lists")?;
    for (&r, hits) in rows.iter().zip(found) {
        out[r as usize] = hits
            .into_iter()
            .map(|h| match rows.get(h.id as usize) {
                Some(&id) => Ok(Hit { id, ..h }),
                None => Err(Error::param(
                    "graph",
                    format!("id {} beyond the {} rows with features", h.id, rows.len()),
                )),
            })
            .collect::<Result<_>>()?;
    }
    Ok(out)
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
    // N distinct ids all below N are exactly 0..N: an id beyond is an index of other rows.
    let n = sigs.len();
    if let Some(h) = found.iter().flatten().find(|h| h.id as usize >= n) {
        return Err(Error::param(
            "index",
            format!(
                "it holds id {}, but a k-NN graph's index must hold row i of the {n} rows \
                 under id i (ids 0..{n})",
                h.id
            ),
        ));
    }
    Ok(found
        .into_par_iter()
        .enumerate()
        .map(|(i, hits)| without_self(lo + i, hits, k))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The graph of the active rows by brute force: each active row's `k` nearest other active
    /// rows by `(distance, id)`; inactive rows have none.
    fn oracle(sigs: &SignatureMatrix, active: &[bool], k: usize) -> Vec<Vec<Hit>> {
        (0..sigs.len())
            .map(|i| {
                if !active[i] {
                    return Vec::new();
                }
                let mut hits: Vec<Hit> = (0..sigs.len())
                    .filter(|&j| j != i && active[j])
                    .map(|j| Hit {
                        id: j as Id,
                        distance: sigs.distance(i, j),
                    })
                    .collect();
                hits.sort_by_key(|h| (h.distance, h.id));
                hits.truncate(k);
                hits
            })
            .collect()
    }

    proptest! {
        #[test]
        fn the_graph_of_rows_with_features_is_the_brute_force_one(
            codes in proptest::collection::vec((any::<u64>(), 0u8..5), 1..60),
            k in 1usize..6,
        ) {
            // Short codes (16 bits) so that ties and zero codes are frequent. Kind 0: a row
            // without features (its code all zero); kind 1: a row with features whose code is
            // all zero nonetheless (a vector's 2^-f chance), a row like any other.
            let data: Vec<u64> = codes.iter().map(|&(c, z)| if z < 2 { 0 } else { c & 0xffff }).collect();
            let sigs = SignatureMatrix::from_parts(16, data).unwrap();
            let featureless: Vec<Id> = (0..codes.len() as Id).filter(|&i| codes[i as usize].1 == 0).collect();
            let active: Vec<bool> = codes.iter().map(|c| c.1 != 0).collect();
            let got = knn_graph_active(&sigs, &featureless, |s| knn_graph(s, k)).unwrap();
            prop_assert_eq!(got, oracle(&sigs, &active, k));
            // The rule of codes: every all-zero code is a row without features.
            let rule = crate::index::Featureless::of_codes(&sigs);
            let by_codes: Vec<bool> = sigs.rows().map(|c| c.iter().any(|&w| w != 0)).collect();
            let got = knn_graph_active(&sigs, rule.stored(), |s| knn_graph(s, k)).unwrap();
            prop_assert_eq!(got, oracle(&sigs, &by_codes, k));
            // No row without features: the graph of the rows.
            let all = vec![true; sigs.len()];
            let got = knn_graph_active(&sigs, &[], |s| knn_graph(s, k)).unwrap();
            prop_assert_eq!(got, oracle(&sigs, &all, k));
        }
    }

    #[test]
    fn a_graph_of_other_rows_is_an_error() {
        let sigs = SignatureMatrix::from_parts(64, vec![1u64, 0, 3]).unwrap();
        let bad = |featureless: &[Id]| {
            knn_graph_active(&sigs, featureless, |s| knn_graph(s, 1))
                .unwrap_err()
                .to_string()
        };
        assert!(bad(&[3]).contains("row 3 beyond the 3 rows"));
        assert!(bad(&[1, 1]).contains("must be increasing, 1 comes after 1"));
        assert!(bad(&[2, 0]).contains("must be increasing"));
        let too_few = knn_graph_active(&sigs, &[1], |_| Ok::<_, Error>(vec![vec![]]));
        assert!(matches!(too_few, Err(Error::InvalidParameter { .. })));
        let beyond = knn_graph_active(&sigs, &[1], |_| {
            Ok::<_, Error>(vec![vec![Hit { id: 2, distance: 0 }], vec![]])
        });
        assert!(matches!(beyond, Err(Error::InvalidParameter { .. })));
    }
}
