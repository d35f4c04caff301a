//! The check of the graph against the scan (and the scan fallback it decides), and the
//! validation of a graph index's arrays.

use rayon::prelude::*;

use super::search::{NONE, Scratch};
use super::{GraphIndex, exact};
use crate::error::{Error, Result};
use crate::hamming;
use crate::index::{HammingIndex, Hit};

/// Stored codes the check searches (all when fewer).
pub const SAMPLE: usize = 200;
/// Neighbours per sampled code.
pub const K: usize = 10;
/// The graph answers k-NN only if its tie-aware recall@10 on the sample is at least this.
pub const MIN_RECALL: f64 = 0.9;
/// A distance computed by the graph search (a random read of a code and of a row) costs
/// about this many codes of a scan (contiguous, batched popcount). Measured on 256-bit
/// codes, one thread: 400,000 codes scanned at ~0.8 ns each; a beam search at ~10 ns per
/// distance computed (`benches/compare/graph.py`).
pub const COST_RATIO: f64 = 12.0;

/// How k-NN queries are answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// By the graph search.
    #[default]
    Graph,
    /// By the exact scan: the check found the graph no better.
    Scan,
}

impl Mode {
    /// `graph` or `scan`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Graph => "graph",
            Mode::Scan => "scan",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "graph" => Ok(Mode::Graph),
            "scan" => Ok(Mode::Scan),
            _ => Err(Error::param(
                "mode",
                format!("`{s}`: expected graph or scan"),
            )),
        }
    }
}

/// The graph measured against the scan on a seeded sample of its stored codes: for each,
/// its `K` nearest other codes by the graph (beam `ef`) and by the scan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Check {
    /// What the check chose.
    pub mode: Mode,
    /// Nodes when the check ran (it runs again when they have doubled).
    pub nodes: usize,
    /// Codes searched.
    pub sample: usize,
    /// Tie-aware recall@10 of the graph on the sample ([`crate::index::recall_at_k`]).
    pub recall: f64,
    /// Mean distances a graph search computed.
    pub distances: f64,
}

impl Check {
    /// One line saying what the check found and chose.
    pub fn describe(&self) -> String {
        let scan_cost = self.nodes as f64 / COST_RATIO;
        let why = match self.mode {
            Mode::Graph => "graph search",
            Mode::Scan if self.recall < MIN_RECALL => "scan: the graph's recall is too low",
            Mode::Scan => "scan: the graph costs more than the scan",
        };
        format!(
            "{why} (check of {} codes: tie-aware recall@{K} {:.3}, {:.0} distances a query, \
             where the scan costs as much as {:.0})",
            self.sample, self.recall, self.distances, scan_cost
        )
    }
}

/// Runs the check on `idx`.
pub(super) fn run(idx: &GraphIndex) -> Check {
    let n = idx.nodes();
    if n == 0 {
        return Check::default();
    }
    let w = idx.words();
    let seed = idx.seed ^ 0x6368_6563_6b00_0000;
    let mut nodes: Vec<(u64, u32)> = (0..n as u32)
        .map(|x| (super::rank(idx.node_ids[x as usize], seed), x))
        .collect();
    let s = SAMPLE.min(n);
    if s < n {
        nodes.select_nth_unstable(s);
        nodes.truncate(s);
    }
    nodes.sort_unstable();
    let ef = idx.ef.max(K + 1);
    let results: Vec<(Vec<Hit>, Vec<Hit>, usize)> = nodes
        .par_iter()
        .map_init(Scratch::default, |scratch, &(_, x)| {
            let code = &idx.codes[x as usize * w..(x as usize + 1) * w];
            let o = idx.search(code, ef, scratch);
            let graph: Vec<Hit> = scratch
                .found(o.bound)
                .filter(|&(_, node)| node != x)
                .take(K)
                .map(|(distance, id)| Hit { distance, id })
                .collect();
            let exact: Vec<Hit> = hamming::scan_knn(code, &idx.codes, w, K + 1)
                .expect("whole codes")[0]
                .iter()
                .filter(|nb| nb.row as u32 != x)
                .take(K)
                .map(|nb| Hit {
                    distance: nb.distance,
                    id: nb.row as u32,
                })
                .collect();
            (graph, exact, o.distances)
        })
        .collect();
    let graph: Vec<Vec<Hit>> = results.iter().map(|r| r.0.clone()).collect();
    let exact: Vec<Vec<Hit>> = results.iter().map(|r| r.1.clone()).collect();
    let distances = results.iter().map(|r| r.2).sum::<usize>() as f64 / s as f64;
    let recall = crate::index::recall_at_k(&graph, &exact);
    let mode = if recall >= MIN_RECALL && distances * COST_RATIO < n as f64 {
        Mode::Graph
    } else {
        Mode::Scan
    };
    Check {
        mode,
        nodes: n,
        sample: s,
        recall,
        distances,
    }
}

/// Checks every invariant of a graph index's arrays.
pub(super) fn validate(idx: &GraphIndex) -> Result<()> {
    let (codes, adj, node_ids, dup_nodes, dup_ids, table, entries, entry_codes) = idx.arrays();
    let w = idx.words();
    let n = node_ids.len();
    crate::index::check_codes(idx.bits, codes)?;
    let bad = |name: &'static str, what: String| Err(Error::param(name, what));
    for (u, row) in adj.chunks_exact(idx.m).enumerate() {
        let live = row.iter().take_while(|&&x| x != NONE).count();
        if row[live..].iter().any(|&x| x != NONE) {
            return bad(
                "section adj",
                format!("row {u}: a neighbour after the padding"),
            );
        }
        for (i, &x) in row[..live].iter().enumerate() {
            if x as usize >= n || x as usize == u || row[..i].contains(&x) {
                return bad(
                    "section adj",
                    format!("row {u}: neighbour {x} is not another node, or repeated"),
                );
            }
        }
    }
    if dup_nodes
        .iter()
        .zip(dup_ids)
        .zip(dup_nodes.iter().zip(dup_ids).skip(1))
        .any(|(a, b)| a >= b)
    {
        return bad("section dup_nodes", "pairs not strictly increasing".into());
    }
    for (&node, &id) in dup_nodes.iter().zip(dup_ids) {
        if node as usize >= n || node_ids[node as usize] >= id {
            return bad(
                "section dup_ids",
                format!("id {id} of node {node}: no such node, or below its first id"),
            );
        }
    }
    let mut ids: Vec<u32> = node_ids.iter().chain(dup_ids.iter()).copied().collect();
    ids.sort_unstable();
    if let Some(p) = ids.windows(2).find(|p| p[0] == p[1]) {
        return bad("section node_ids", format!("id {} stored twice", p[0]));
    }
    if table.iter().filter(|&&v| v != 0).count() != n {
        return bad("section table", format!("does not hold the {n} nodes"));
    }
    for node in 0..n as u32 {
        let code = &codes[node as usize * w..(node as usize + 1) * w];
        if exact::find(table, codes, w, code) != Some(node) {
            return bad(
                "section table",
                format!("node {node} is not found, or its code is stored twice"),
            );
        }
    }
    for (&e, c) in entries.iter().zip(entry_codes.chunks_exact(w)) {
        if e as usize >= n || &codes[e as usize * w..(e as usize + 1) * w] != c {
            return bad(
                "section entry_codes",
                format!("entry {e}: not a node, or not its code"),
            );
        }
    }
    if idx.len() != ids.len() {
        return bad(
            "param len",
            format!("{} recorded, {} stored", idx.len(), ids.len()),
        );
    }
    Ok(())
}
