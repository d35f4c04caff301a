//! Building the graph: batch-synchronous insertion (each batch searches the graph frozen at
//! its start, in parallel; its edges are then applied in a fixed order), the robust prune of
//! Vamana (DiskANN), and the repair of the edges of removed nodes (FreshDiskANN).

use rayon::prelude::*;

use super::search::{Beam, NONE, Scratch, View, beam};
use crate::cpu::{PopcntBody, with_popcnt};
use crate::hamming::scalar::{by_words, dist_words};

/// A batch holds at most this fraction of the nodes already inserted (1/`BATCH_DIV`), so
/// that early batches, which see a small graph, stay small.
const BATCH_DIV: usize = 16;
/// Largest batch: enough parallel work for many cores, small enough that points of one
/// batch (which do not see each other) rarely matter.
const MAX_BATCH: usize = 1024;

/// Parameters of a build or an insertion.
#[derive(Clone, Copy, Debug)]
pub(super) struct Params {
    /// Max out-degree.
    pub m: usize,
    /// Beam of the insertion searches.
    pub ef_construction: usize,
    /// Prune factor α (`α · d(kept, c) <= d(p, c)` drops candidate `c`).
    pub alpha: f32,
    /// Code width.
    pub bits: usize,
}

/// The robust prune of a point with candidates `cands` (`(distance to the point, node)`,
/// sorted, the point itself left out, no repeats): keeps, nearest first, each candidate that
/// no kept one covers (`α · d(kept, c) <= d(p, c)`), at most `m`.
#[inline(always)]
fn prune_body<const W: usize>(
    codes: &[u64],
    w: usize,
    cands: &[(u32, u32)],
    alpha: f32,
    m: usize,
    out: &mut Vec<u32>,
) {
    let w = if W == 0 { w } else { W };
    out.clear();
    for &(d, c) in cands {
        if out.len() >= m {
            break;
        }
        let cc = &codes[c as usize * w..c as usize * w + w];
        let covered = out.iter().any(|&o| {
            let oc = &codes[o as usize * w..o as usize * w + w];
            alpha * dist_words(oc, cc, w) as f32 <= d as f32
        });
        if !covered {
            out.push(c);
        }
    }
}

struct Prune<'a> {
    codes: &'a [u64],
    w: usize,
    cands: &'a [(u32, u32)],
    alpha: f32,
    m: usize,
    out: &'a mut Vec<u32>,
}

impl PopcntBody for Prune<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let Prune {
            codes,
            w,
            cands,
            alpha,
            m,
            out,
        } = self;
        by_words!(w, prune_body(codes, w, cands, alpha, m, out))
    }
}

/// [`prune_body`] compiled with `POPCNT` when allowed.
pub(super) fn prune(
    codes: &[u64],
    w: usize,
    cands: &[(u32, u32)],
    alpha: f32,
    m: usize,
    out: &mut Vec<u32>,
) {
    with_popcnt(Prune {
        codes,
        w,
        cands,
        alpha,
        m,
        out,
    });
}

/// The robust prune of `node` among `others` (any order, repeats, `node` itself and
/// [`NONE`] allowed): their distances to `node` measured, then [`prune_body`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn reprune_body<const W: usize>(
    codes: &[u64],
    w: usize,
    node: u32,
    others: &[u32],
    alpha: f32,
    m: usize,
    cands: &mut Vec<(u32, u32)>,
    out: &mut Vec<u32>,
) {
    let w = if W == 0 { w } else { W };
    let p = &codes[node as usize * w..(node as usize + 1) * w];
    cands.clear();
    cands.extend(
        others
            .iter()
            .filter(|&&o| o != node && o != NONE)
            .map(|&o| {
                let c = &codes[o as usize * w..(o as usize + 1) * w];
                (dist_words(p, c, w), o)
            }),
    );
    cands.sort_unstable();
    cands.dedup();
    prune_body::<W>(codes, w, cands, alpha, m, out);
}

struct Reprune<'a> {
    codes: &'a [u64],
    w: usize,
    node: u32,
    others: &'a [u32],
    alpha: f32,
    m: usize,
    cands: &'a mut Vec<(u32, u32)>,
    out: &'a mut Vec<u32>,
}

impl PopcntBody for Reprune<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let Reprune {
            codes,
            w,
            node,
            others,
            alpha,
            m,
            cands,
            out,
        } = self;
        by_words!(
            w,
            reprune_body(codes, w, node, others, alpha, m, cands, out)
        )
    }
}

/// [`reprune_body`] compiled with `POPCNT` when allowed.
#[allow(clippy::too_many_arguments)]
pub(super) fn reprune(
    codes: &[u64],
    w: usize,
    node: u32,
    others: &[u32],
    alpha: f32,
    m: usize,
    cands: &mut Vec<(u32, u32)>,
    out: &mut Vec<u32>,
) {
    with_popcnt(Reprune {
        codes,
        w,
        node,
        others,
        alpha,
        m,
        cands,
        out,
    });
}

/// The candidates of a search left in `s` (accepted nodes up to `bound`), as sorted
/// `(distance, node)`, `skip` left out.
fn candidates(s: &Scratch, bound: u32, skip: u32, out: &mut Vec<(u32, u32)>) {
    out.clear();
    out.extend(s.found(bound).filter(|&(_, n)| n != skip));
    // Buckets hold increasing distances; sort by node within each distance.
    out.sort_unstable();
}

/// The out-edges of a point searched in `view` (its code `query`) from `entries`.
#[allow(clippy::too_many_arguments)]
pub(super) fn link(
    view: &View<'_>,
    all_codes: &[u64],
    node: u32,
    entries: (&[u32], &[u64]),
    p: &Params,
    scratch: &mut Scratch,
    cands: &mut Vec<(u32, u32)>,
    out: &mut Vec<u32>,
) {
    let w = view.words;
    let query = &all_codes[node as usize * w..(node as usize + 1) * w];
    let o = beam(Beam {
        view,
        query,
        entries,
        exact: None,
        ef: p.ef_construction,
        bits: p.bits,
        scratch,
    });
    candidates(scratch, o.bound, node, cands);
    prune(all_codes, w, cands, p.alpha, p.m, out);
}

/// The new row of `q` after in-edges from `sources` (sorted): appended while there is room,
/// else the robust prune of the row and the sources together.
fn merge_in(
    codes: &[u64],
    w: usize,
    row: &[u32],
    sources: &[u32],
    p: &Params,
    q: u32,
    cands: &mut Vec<(u32, u32)>,
) -> Vec<u32> {
    let mut all: Vec<u32> = Vec::with_capacity(row.len() + sources.len());
    all.extend(row.iter().copied().take_while(|&n| n != NONE));
    for &s in sources {
        if !all.contains(&s) {
            all.push(s);
        }
    }
    if all.len() <= p.m {
        return all;
    }
    let mut out = Vec::with_capacity(p.m);
    reprune(codes, w, q, &all, p.alpha, p.m, cands, &mut out);
    out
}

/// Writes `row` (at most `m` nodes) as node `q`'s adjacency row, padded.
pub(super) fn set_row(adj: &mut [u32], m: usize, q: u32, row: &[u32]) {
    let r = &mut adj[q as usize * m..(q as usize + 1) * m];
    r.fill(NONE);
    r[..row.len()].copy_from_slice(row);
}

/// The graph of all of `codes` at once: each node's out-edges are the robust prune of its
/// approximate `k_list` nearest ([`crate::join::descent`]: random partition trees refined by
/// NN-Descent), then every node gets the reverse edges of its in-neighbours (a row over `m`
/// pruned again). The result does not depend on the number of threads.
pub(super) fn from_knn(codes: &[u64], w: usize, k_list: usize, seed: u64, p: &Params) -> Vec<u32> {
    let n = codes.len() / w;
    let mut adj = vec![NONE; n * p.m];
    let k = k_list.min(n.saturating_sub(1));
    if k == 0 {
        return adj;
    }
    let params = crate::join::ApproxKnn {
        seed,
        ..crate::join::ApproxKnn::for_graph()
    };
    let (lists, _) = crate::join::descent::approx_knn(codes, w, k, &params);
    adj.par_chunks_mut(p.m)
        .zip(lists.par_chunks_exact(k))
        .for_each_init(
            || (Vec::new(), Vec::new()),
            |(cands, out), (row, l)| {
                cands.clear();
                cands.extend(
                    l.iter()
                        .take_while(|&&e| e != u64::MAX)
                        .map(|&e| ((e >> 32) as u32, e as u32)),
                );
                prune(codes, w, cands, p.alpha, p.m, out);
                row[..out.len()].copy_from_slice(out);
            },
        );
    drop(lists);
    add_reverse(codes, &mut adj, w, None, p);
    adj
}

/// Adds the reverse of the out-edges of `sources` (every node when `None`), grouped by
/// target in a fixed order: appended while a row has room, else the row and the new
/// sources pruned together.
fn add_reverse(codes: &[u64], adj: &mut [u32], w: usize, sources: Option<&[u32]>, p: &Params) {
    let m = p.m;
    let mut rev: Vec<(u32, u32)> = match sources {
        Some(batch) => batch
            .iter()
            .flat_map(|&v| {
                let row = &adj[v as usize * m..(v as usize + 1) * m];
                row.iter().take_while(|&&q| q != NONE).map(move |&q| (q, v))
            })
            .collect(),
        None => adj
            .par_chunks(m)
            .enumerate()
            .flat_map_iter(|(v, row)| {
                row.iter()
                    .take_while(|&&q| q != NONE)
                    .map(move |&q| (q, v as u32))
            })
            .collect(),
    };
    rev.par_sort_unstable();
    let groups: Vec<&[(u32, u32)]> = rev.chunk_by(|a, b| a.0 == b.0).collect();
    let rows: Vec<(u32, Vec<u32>)> = {
        let adj: &[u32] = adj;
        groups
            .par_iter()
            .map_init(Vec::new, |cands, g| {
                let q = g[0].0;
                let sources: Vec<u32> = g.iter().map(|e| e.1).collect();
                let row = &adj[q as usize * m..(q as usize + 1) * m];
                (q, merge_in(codes, w, row, &sources, p, q, cands))
            })
            .collect()
    };
    for (q, row) in rows {
        set_row(adj, m, q, &row);
    }
}

/// Inserts `batch` (nodes whose codes are in `codes`, rows empty) into the graph `adj`:
/// every node searches the graph as it is at the start (in parallel), then its out-edges and
/// the reverse edges are applied in node order. The result does not depend on the number
/// of threads.
pub(super) fn insert_batch(
    codes: &[u64],
    adj: &mut [u32],
    w: usize,
    batch: &[u32],
    entries: (&[u32], &[u64]),
    p: &Params,
) {
    let outs: Vec<Vec<u32>> = {
        let view = View {
            words: w,
            m: p.m,
            codes,
            adj,
        };
        batch
            .par_iter()
            .map_init(
                || (Scratch::default(), Vec::new()),
                |(s, cands), &node| {
                    let mut out = Vec::with_capacity(p.m);
                    link(&view, codes, node, entries, p, s, cands, &mut out);
                    out
                },
            )
            .collect()
    };
    for (&node, out) in batch.iter().zip(&outs) {
        set_row(adj, p.m, node, out);
    }
    add_reverse(codes, adj, w, Some(batch), p);
}

/// Size of the batch after `inserted` nodes.
pub(super) fn batch_size(inserted: usize) -> usize {
    (inserted / BATCH_DIV).clamp(1, MAX_BATCH)
}

/// Removes the nodes `gone` (sorted) from the graph: every live node with an edge to one of
/// them gets, in place of those edges, the robust prune of its other neighbours and the
/// removed nodes' neighbours (FreshDiskANN's repair); the removed rows are cleared. Each
/// node's new row depends only on the rows before the removal, so the result does not
/// depend on the number of threads.
pub(super) fn remove_nodes(codes: &[u64], adj: &mut [u32], w: usize, gone: &[u32], p: &Params) {
    if gone.is_empty() {
        return;
    }
    let is_gone = |x: u32| gone.binary_search(&x).is_ok();
    let m = p.m;
    let rows: Vec<(u32, Vec<u32>)> = {
        let adj: &[u32] = adj;
        adj.par_chunks(m)
            .enumerate()
            .map_init(Vec::new, |cands, (u, row)| {
                let u = u as u32;
                if is_gone(u) || !row.iter().any(|&x| x != NONE && is_gone(x)) {
                    return None;
                }
                let mut all: Vec<u32> = Vec::with_capacity(2 * m);
                for &x in row.iter().take_while(|&&x| x != NONE) {
                    if is_gone(x) {
                        let xr = &adj[x as usize * m..(x as usize + 1) * m];
                        all.extend(
                            xr.iter()
                                .take_while(|&&y| y != NONE)
                                .filter(|&&y| y != u && !is_gone(y)),
                        );
                    } else {
                        all.push(x);
                    }
                }
                let mut out = Vec::with_capacity(m);
                reprune(codes, w, u, &all, p.alpha, m, cands, &mut out);
                Some((u, out))
            })
            .flatten()
            .collect()
    };
    for (u, row) in rows {
        set_row(adj, m, u, &row);
    }
    for &x in gone {
        set_row(adj, m, x, &[]);
    }
}
