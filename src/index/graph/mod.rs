//! A graph index for Hamming codes: approximate k-nearest neighbours by beam search over a
//! navigable graph (see [`GraphIndex`]).

use std::collections::HashMap;

use rayon::prelude::*;

use super::{HammingIndex, Hit, Id, check_code};
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::{SignatureMatrix, words_for};
use crate::storage::Buf;
use crate::util::pool::Pool;

mod build;
mod builder;
mod check;
mod exact;
mod search;

pub use builder::GraphBuilder;
pub use check::{COST_RATIO, Check, MIN_RECALL, Mode};
use search::{Beam, NONE, Scratch, View, beam};

/// Default out-degree `m` (neighbours kept per code).
pub const DEFAULT_M: usize = 32;
/// Default search beam `ef`.
pub const DEFAULT_EF: usize = 88;
/// Default beam of the insertion searches.
pub const DEFAULT_EF_CONSTRUCTION: usize = 64;
/// Default seed (the insertion order and the entry points).
pub const DEFAULT_GRAPH_SEED: u64 = 0;
/// Prune factor α of the robust prune (DiskANN uses 1.2). On the 256-bit codes of `GloVe`
/// 6B 50-d (400k), α = 1.15 reached tie-aware recall@10 0.951 where 1.2 reached 0.946 for
/// the same ~2,420 distances a query (`ef` 80); 1.0 and 1.1 found less per distance, 1.3
/// found less too.
pub(crate) const ALPHA: f32 = 1.15;

/// Queries per parallel task in batch searches.
const KNN_BATCH: usize = 16;

/// A graph index over Hamming codes (approximate k-NN; exact radius search).
///
/// # Method
///
/// Each distinct stored code is a *node* of a directed graph of out-degree at most `m`. A
/// k-NN query computes its distance to a few hundred *entry* nodes (a seeded sample, kept as
/// one contiguous array, so this costs about as much as scanning them), then runs a beam
/// search: it repeatedly expands the nearest accepted node not yet expanded, measuring its
/// neighbours, and keeps the `ef` nearest nodes seen (`ef ≥ k`). Hamming distances are small
/// integers, so the candidate queue and the result set are one array of buckets by distance
/// (no heap); a visited bitset (per-thread scratch, one bit a node, cleared word by word
/// after each search: 50 KB at 400,000 nodes, which stays in the core's caches where an
/// array of `u32` stamps, 1.6 MB, did not) marks the nodes measured; the codes of a row's
/// unvisited neighbours are prefetched before their distances are computed in one batch,
/// and the whole row of every node accepted is prefetched when it is accepted. A fresh
/// build copies the codes and the rows into memory the kernel is asked to back with huge
/// pages (Linux's transparent huge pages on request), since a search reads them at random
/// over tens of megabytes and 4 KiB pages miss the TLB on nearly every read.
///
/// **The build.** Each node's out-edges are the robust prune (DiskANN/Vamana: nearest
/// candidates first, a candidate dropped when a kept one is closer to it by a factor
/// α = 1.15) of its approximate `m` nearest codes, found by the library's approximate k-NN
/// graph (random partition trees refined by NN-Descent rounds, [`crate::join::ApproxKnn`]);
/// then every node gets the reverse edges of its in-neighbours, a row over `m` pruned again.
/// Before that, nodes are numbered by the nearest of a sample of codes, so that near codes
/// sit near in memory. **Inserts** after the build are batch-synchronous Vamana insertions
/// (ParlayANN's prefix-doubling): each batch of new codes searches the graph as it is
/// (beam `ef_construction`), in parallel, keeps the robust prune of what it found, and the
/// reverse edges follow in node order.
///
/// **Why this graph** (measured on the 256-bit super-bit codes of `GloVe` 6B 50-d, one thread,
/// `benches/compare/graph.py` and `benches/compare/results.md`). Three builds were compared,
/// each searched the same way: HNSW (FAISS `IndexBinaryHNSW`), the single-layer graph built
/// by batch-synchronous Vamana insertion, and the pruned `NN-Descent` graph. On 100k codes
/// (m = 32) the insertion build took 6.6 s of CPU and the `NN-Descent` build 2.3 s (FAISS
/// HNSW, M = 32: 7.5 s) for the same recall per distance computed (tie-aware recall@10
/// 0.962–0.964 at ~1,000 distances a query); on all 400k codes, 40.7 s against 14.7 s
/// (FAISS 58.5 s), and the `NN-Descent` graph found more (0.956 against 0.943 at `ef` 96,
/// both ~2,700 distances). HNSW's upper layers only find a good start, which the scan of the
/// entry sample does from contiguous memory; one level keeps memory at `4·m` bytes a node.
///
/// **Search speed** (same codes, 1,000 held-out queries, 10-NN, one thread, CPU time,
/// `benches/compare/graph.py`, every system in one run): the default beam ([`DEFAULT_EF`],
/// 88) reaches tie-aware recall@10 0.957 with ~2,570 distances a query (631 of them the
/// entry sample), at ~6× the `LinearScan`'s queries/s, and 0.956 after 10% removals and 10%
/// inserts; with α = 1.2 the same beam gave 0.952 and 0.9495, and `ef` 96 was needed (4–5×
/// the scan). At `ef` 96 the graph ran at 2.1–2.3× FAISS `IndexBinaryHNSW` (efConstruction
/// 64, M = 16 or 32) at equal recall. FAISS's build took 38–51 s of CPU against 15 s here. Most of a search's time is memory latency (a code and
/// a row read at random per node reached), not the popcounts.
///
/// # Guarantees
///
/// - **Exact matches**: a table of the stored codes (an open-addressing hash table over a
///   stable hash, saved with the index) seeds every search with the node holding the query's
///   code, at distance 0: a stored copy of the query is always found. Identical codes are
///   stored once, as one node holding several ids, so duplicate-heavy data neither bloats
///   nor disconnects the graph.
/// - **Distances are exact**, results sorted by `(distance, id)` with `min(k, len)` entries;
///   only the set may miss true neighbours ([`exact_knn`](HammingIndex::exact_knn) is false).
///   In scan mode the answers are [`LinearScan`](super::LinearScan)'s.
/// - **Radius search is exact**: a linear scan of the node codes with the dispatched
///   popcount kernels (the graph does not bound distances).
/// - **XOR invariance**: nothing depends on the code values beyond their distances except
///   the exact table's slots and the tie-break of equal distances by node, so XOR-ing every
///   stored code and query with one mask gives the same answers (faiss#5387).
/// - **Determinism**: the trees, samples, entry points and insertion order come from the
///   seed (hashes of ids and positions); every `NN-Descent` round and every insertion batch
///   reads the graph as it was before it and writes each node's own row; reverse edges are
///   grouped in node order. The same codes, parameters and seed give the same arrays and
///   answers for any number of threads: the thread count changes only the speed.
///
/// # Weak neighbours: the scan fallback
///
/// On codes whose nearest neighbours are hardly nearer than random codes (char bigrams of
/// short poems: 10 nearest at ~96 of 256 bits, random pairs at 128), no graph search beats a
/// scan. The build measures the graph on a seeded sample of stored codes (the 10 nearest of
/// each among the others, tie-aware recall against the exact scan, and the distances
/// computed) and, when the recall is below [`check::MIN_RECALL`] or the search would cost
/// more than the scan, answers k-NN by the scan instead, saying so in [`Check`]
/// ([`GraphIndex::check`], `index info`). The check runs again when the number of codes has
/// doubled. `fallback(false)` keeps the graph search regardless.
///
/// In scan mode the nodes are numbered in the order of their smallest ids (renumbered after
/// the check, and again after a change that breaks the order: a pass over the arrays, as a
/// [`LinearScan`](super::LinearScan) change costs one). The fallback then scans the codes in
/// the order [`LinearScan`](super::LinearScan) does, with the same batched kernel, and its
/// answers are the scan's exactly, ties at the `k`-th distance broken by the smaller id
/// (numbered by cluster, the ids at a tied `k`-th distance were those of the first nodes,
/// and on 300,000 unique poem lines 689 of 1,000 answers differed from the scan's in a
/// tie). An index file written before in scan mode keeps its numbering until its first
/// change.
///
/// # Updates
///
/// An insert is a batch of one (a search and a prune). A removal deletes the node's edges and
/// repairs every node that pointed to it: its row becomes the robust prune of its other
/// neighbours and the removed node's neighbours (FreshDiskANN); the last node takes the
/// freed slot, so the node array stays dense. A removal costs one pass over the adjacency:
/// remove in batches.
///
/// # Memory
///
/// Per distinct code: `8 · words` (the code) `+ 4 · m` (its row) `+ 4` (its id) `+ ≤ 16` (the
/// exact table, at least half full), plus 8 bytes per duplicate id: at most 196 bytes at 256
/// bits and `m = 32` (175 measured on the 399,000 distinct 256-bit codes of `GloVe` 6B 50-d),
/// at most 260 at `m = 48` (FAISS `IndexBinaryHNSW`, M = 32: 288 at level 0 alone).
#[derive(Clone)]
pub struct GraphIndex {
    bits: usize,
    m: usize,
    ef: usize,
    ef_construction: usize,
    seed: u64,
    fallback: bool,
    /// Node codes, node-major (distinct codes).
    codes: Buf<u64>,
    /// `nodes × m` neighbours, [`NONE`]-padded.
    adj: Buf<u32>,
    /// The smallest id of each node.
    node_ids: Buf<u32>,
    /// The other ids of nodes holding several: `(node, id)` pairs sorted.
    dup_nodes: Buf<u32>,
    dup_ids: Buf<u32>,
    /// The exact-code table ([`exact`]).
    table: Buf<u32>,
    /// Entry nodes, and their codes contiguous.
    entries: Buf<u32>,
    entry_codes: Buf<u64>,
    /// Number of ids stored.
    len: usize,
    /// The last check and the mode it chose.
    check: Check,
    /// Query scratch, reused across queries.
    pool: Pool<Scratch>,
    /// Whether the contents are known to be valid (built here, or checked).
    validated: bool,
    /// Id to node, built at the first change.
    by_id: Option<HashMap<Id, u32>>,
    /// The signer of the codes and the source of a loaded index.
    pub(crate) meta: crate::index::IndexMeta,
}

impl std::fmt::Debug for GraphIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphIndex")
            .field("bits", &self.bits)
            .field("m", &self.m)
            .field("ef", &self.ef)
            .field("ef_construction", &self.ef_construction)
            .field("seed", &self.seed)
            .field("len", &self.len)
            .field("nodes", &self.nodes())
            .field("check", &self.check)
            .finish()
    }
}

/// The arrays of a saved graph index, for [`GraphIndex::from_parts`].
#[derive(Debug)]
pub struct GraphParts {
    /// Code width.
    pub bits: usize,
    /// Out-degree.
    pub m: usize,
    /// Search beam.
    pub ef: usize,
    /// Insertion beam.
    pub ef_construction: usize,
    /// Seed.
    pub seed: u64,
    /// Whether k-NN may fall back to the scan.
    pub fallback: bool,
    /// Node codes.
    pub codes: Buf<u64>,
    /// Adjacency rows.
    pub adj: Buf<u32>,
    /// Smallest id per node.
    pub node_ids: Buf<u32>,
    /// Nodes of the other ids.
    pub dup_nodes: Buf<u32>,
    /// The other ids.
    pub dup_ids: Buf<u32>,
    /// Exact-code table.
    pub table: Buf<u32>,
    /// Entry nodes.
    pub entries: Buf<u32>,
    /// Their codes.
    pub entry_codes: Buf<u64>,
    /// The last check.
    pub check: Check,
}

/// Entry nodes for `nodes` nodes: about `√nodes`, 16 to 1,024.
pub(crate) fn entry_count(nodes: usize) -> usize {
    ((nodes as f64).sqrt() as usize).clamp(16, 1024).min(nodes)
}

/// A copy of `v` in memory that the kernel is asked to back with huge pages (Linux's
/// transparent huge pages, where they are enabled on request): a search reads codes and
/// rows at random over tens of megabytes, and with 4 KiB pages nearly every read also
/// misses the TLB. None when the copy cannot be allocated (the caller keeps `v`).
fn huge_copy<T: bytemuck::Pod>(v: &[T]) -> Option<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(v.len()).ok()?;
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let bytes = std::mem::size_of_val(v);
        let start = out.as_ptr() as usize;
        let lo = start.next_multiple_of(PAGE);
        let hi = (start + bytes) / PAGE * PAGE;
        if hi > lo {
            // SAFETY: `lo..hi` lies inside the allocation `out` owns (page-aligned, not yet
            // written); MADV_HUGEPAGE is advice only: it changes no contents and no mapping
            // the program sees, and its failure is harmless (ignored).
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    out.extend_from_slice(v);
    Some(out)
}

/// The rank of an id in the seeded order (insertion order, entry points).
fn rank(id: Id, seed: u64) -> u64 {
    crate::rng::hash_u64(u64::from(id), seed)
}

impl GraphIndex {
    /// A builder with the defaults.
    pub fn builder() -> GraphBuilder {
        GraphBuilder::default()
    }

    /// An empty index of `bits`-bit codes with the default parameters.
    pub fn new(bits: usize) -> Result<Self> {
        GraphBuilder::default().empty(bits)
    }

    /// An index of the rows of `sigs` (ids `0..N`) with the default parameters.
    pub fn build<S: AsRef<[u64]>>(sigs: &SignatureMatrix<S>) -> Result<Self> {
        GraphBuilder::default().build(sigs)
    }

    /// An empty index.
    pub(super) fn empty_with(b: &GraphBuilder, bits: usize) -> Self {
        GraphIndex {
            bits,
            m: b.m,
            ef: b.ef,
            ef_construction: b.ef_construction,
            seed: b.seed,
            fallback: b.fallback,
            codes: Buf::default(),
            adj: Buf::default(),
            node_ids: Buf::default(),
            dup_nodes: Buf::default(),
            dup_ids: Buf::default(),
            table: Buf::default(),
            entries: Buf::default(),
            entry_codes: Buf::default(),
            len: 0,
            check: Check::default(),
            pool: Pool::default(),
            validated: true,
            by_id: Some(HashMap::new()),
            meta: crate::index::IndexMeta::default(),
        }
    }

    /// Builds the index of `ids` (distinct) and their codes.
    pub(super) fn from_codes(b: &GraphBuilder, bits: usize, ids: &[Id], codes: &[u64]) -> Self {
        let mut idx = Self::empty_with(b, bits);
        idx.add(ids, codes);
        idx.huge_pages();
        idx.run_check();
        idx.settle_order();
        idx
    }

    fn words(&self) -> usize {
        words_for(self.bits)
    }

    fn params(&self) -> build::Params {
        build::Params {
            m: self.m,
            ef_construction: self.ef_construction,
            alpha: ALPHA,
            bits: self.bits,
        }
    }

    /// Number of nodes (distinct codes).
    pub fn nodes(&self) -> usize {
        self.node_ids.len()
    }

    /// Out-degree `m`.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Search beam `ef` of [`knn_into`](HammingIndex::knn_into).
    pub fn ef(&self) -> usize {
        self.ef
    }

    /// Sets the search beam (at least 1; a search uses `max(ef, k)`): larger is slower and
    /// finds more true neighbours.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `ef` is 0.
    pub fn set_ef(&mut self, ef: usize) -> Result<()> {
        if ef == 0 {
            return Err(Error::param("ef", "must be at least 1"));
        }
        self.ef = ef;
        Ok(())
    }

    /// Beam of the insertion searches.
    pub fn ef_construction(&self) -> usize {
        self.ef_construction
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether k-NN may fall back to the scan.
    pub fn fallback(&self) -> bool {
        self.fallback
    }

    /// The last check of the graph against the scan, and the mode it chose.
    pub fn check(&self) -> &Check {
        &self.check
    }

    /// One line saying how k-NN queries are answered and why (the check's figures).
    pub fn describe_mode(&self) -> String {
        match (self.fallback, self.check.mode) {
            (false, Mode::Scan) => format!(
                "graph search (fallback off; the check would choose the {})",
                self.check.describe()
            ),
            _ => self.check.describe(),
        }
    }

    /// How k-NN queries are answered: by the graph, or by the scan when the check found the
    /// graph no better (and fallback is on).
    pub fn mode(&self) -> Mode {
        if self.fallback {
            self.check.mode
        } else {
            Mode::Graph
        }
    }

    fn view(&self) -> View<'_> {
        View {
            words: self.words(),
            m: self.m,
            codes: &self.codes,
            adj: &self.adj,
        }
    }

    /// Every id of `node`, in increasing order, to `f`.
    fn ids_of(&self, node: u32, mut f: impl FnMut(Id)) {
        f(self.node_ids[node as usize]);
        if !self.dup_nodes.is_empty() {
            let lo = self.dup_nodes.partition_point(|&n| n < node);
            for i in lo..self.dup_nodes.len() {
                if self.dup_nodes[i] != node {
                    break;
                }
                f(self.dup_ids[i]);
            }
        }
    }

    /// The `k` nearest of `(distance, node)` pairs in increasing distance, as hits.
    fn expand(&self, nodes: impl Iterator<Item = (u32, u32)>, k: usize, out: &mut Vec<Hit>) {
        out.clear();
        let mut cur = u32::MAX;
        let mut start = 0;
        for (d, node) in nodes {
            if d != cur {
                out[start..].sort_unstable();
                if out.len() >= k {
                    break;
                }
                cur = d;
                start = out.len();
            }
            self.ids_of(node, |id| out.push(Hit { distance: d, id }));
        }
        out[start..].sort_unstable();
        out.truncate(k);
    }

    /// The `(node, id)` pairs of the other ids of nodes.
    fn dup_pairs(&self) -> Vec<(u32, u32)> {
        self.dup_nodes
            .iter()
            .copied()
            .zip(self.dup_ids.iter().copied())
            .collect()
    }

    /// Replaces the other ids of nodes by `pairs`, sorted here.
    fn set_dups(&mut self, mut pairs: Vec<(u32, u32)>) {
        pairs.sort_unstable();
        self.dup_nodes = pairs.iter().map(|p| p.0).collect::<Vec<_>>().into();
        self.dup_ids = pairs.iter().map(|p| p.1).collect::<Vec<_>>().into();
    }

    /// The node holding `code` exactly, if any.
    fn exact_node(&self, code: &[u64]) -> Option<u32> {
        exact::find(&self.table, &self.codes, self.words(), code)
    }

    /// The beam search of `query` with beam `ef`, leaving the accepted nodes in `s`.
    fn search(&self, query: &[u64], ef: usize, s: &mut Scratch) -> search::Outcome {
        beam(Beam {
            view: &self.view(),
            query,
            entries: (&self.entries, &self.entry_codes),
            exact: self.exact_node(query),
            ef,
            bits: self.bits,
            scratch: s,
        })
    }

    /// The `k` nearest by the graph with beam `max(ef, k)`, whatever the mode: the search
    /// behind [`knn_into`](HammingIndex::knn_into), with its beam given (FAISS's
    /// `efSearch`). Returns the number of distances computed.
    ///
    /// # Errors
    /// As [`knn_into`](HammingIndex::knn_into).
    pub fn knn_graph_into(
        &self,
        query: &[u64],
        k: usize,
        ef: usize,
        out: &mut Vec<Hit>,
    ) -> Result<usize> {
        check_code(self.bits, query)?;
        out.clear();
        if self.len == 0 || k == 0 {
            return Ok(0);
        }
        let mut s = self.pool.get();
        let o = self.search(query, ef.max(k), &mut s);
        self.expand(s.found(o.bound), k, out);
        if out.len() < k.min(self.len) {
            // A graph cut by removals can leave fewer than k reachable: answer by the scan.
            self.scan_knn(query, k, out)?;
        }
        Ok(o.distances)
    }

    /// The `k` nearest by scanning every node code (distances exact).
    fn scan_knn(&self, query: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()> {
        let found = hamming::scan_knn(query, &self.codes, self.words(), k)?;
        self.expand(found[0].iter().map(|n| (n.distance, n.row as u32)), k, out);
        Ok(())
    }

    /// The `k` nearest of every query (`queries` checked) by scanning the node codes, a
    /// batch of queries per pass over them as [`LinearScan`](super::LinearScan) does: the
    /// codes are read once per batch, not once per query.
    fn scan_knn_batch(&self, queries: &[u64], k: usize) -> Result<Vec<Vec<Hit>>> {
        let w = self.words();
        if self.len == 0 || k == 0 {
            return Ok(vec![Vec::new(); queries.len() / w]);
        }
        hamming::scan_knn_batched(queries, &self.codes, w, k, |found| {
            let mut out = Vec::new();
            self.expand(
                found.iter().map(|n| (n.distance, n.row as u32)),
                k,
                &mut out,
            );
            out
        })
    }

    /// k-NN with an explicit beam `ef` in the index's [`mode`](Self::mode).
    ///
    /// # Errors
    /// As [`knn_into`](HammingIndex::knn_into).
    pub fn knn_with(&self, query: &[u64], k: usize, ef: usize, out: &mut Vec<Hit>) -> Result<()> {
        if self.mode() == Mode::Scan {
            check_code(self.bits, query)?;
            out.clear();
            if self.len == 0 || k == 0 {
                return Ok(());
            }
            return self.scan_knn(query, k, out);
        }
        self.knn_graph_into(query, k, ef, out).map(|_| ())
    }

    /// k-NN of a batch of queries with beam `ef`, in parallel.
    ///
    /// # Errors
    /// As [`knn_batch`](HammingIndex::knn_batch).
    pub fn knn_batch_with(&self, queries: &[u64], k: usize, ef: usize) -> Result<Vec<Vec<Hit>>> {
        let w = super::check_query_rows(self.bits, queries)?;
        if self.mode() == Mode::Scan {
            return self.scan_knn_batch(queries, k);
        }
        let chunks: Vec<Vec<Vec<Hit>>> = queries
            .par_chunks(w * KNN_BATCH)
            .map(|qs| {
                qs.chunks_exact(w)
                    .map(|q| {
                        let mut out = Vec::new();
                        self.knn_with(q, k, ef, &mut out)?;
                        Ok(out)
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    /// Adds the `ids` (not stored, distinct) with their codes: identical codes join their
    /// node, new codes become nodes inserted in batches in the seeded order.
    fn add(&mut self, ids: &[Id], codes: &[u64]) {
        let w = self.words();
        let by_id = self.by_id.get_or_insert_with(HashMap::new);
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_unstable_by_key(|&i| ids[i]);
        let first_new = self.node_ids.len() as u32;
        let (nc, nids, table) = (
            self.codes.to_mut(),
            self.node_ids.to_mut(),
            self.table.to_mut(),
        );
        let mut dups: Vec<(u32, u32)> = Vec::new();
        // Ids in increasing order: a new node's first id is its smallest among the new.
        for i in order {
            let (id, code) = (ids[i], &codes[i * w..(i + 1) * w]);
            match exact::find(table, nc, w, code) {
                Some(node) => {
                    let rep = &mut nids[node as usize];
                    if id < *rep {
                        dups.push((node, *rep));
                        *rep = id;
                    } else {
                        dups.push((node, id));
                    }
                    by_id.insert(id, node);
                }
                None => {
                    let node = nids.len() as u32;
                    nc.extend_from_slice(code);
                    nids.push(id);
                    exact::insert(table, nc, w, node, nids.len());
                    by_id.insert(id, node);
                }
            }
        }
        if !dups.is_empty() {
            let mut all = self.dup_pairs();
            all.extend(dups);
            self.set_dups(all);
        }
        self.len += ids.len();
        let total = self.node_ids.len();
        if total as u32 == first_new {
            return;
        }
        if first_new == 0 {
            self.cluster_order();
        }
        // The new nodes, in the seeded order.
        let seed = self.seed;
        let mut fresh: Vec<u32> = (first_new..total as u32).collect();
        fresh.sort_unstable_by_key(|&n| (rank(self.node_ids[n as usize], seed), n));
        let p = self.params();
        if first_new == 0 {
            let k_list = self.m;
            self.adj = build::from_knn(&self.codes, w, k_list, self.seed, &p).into();
            self.reset_entries();
            return;
        }
        self.adj.to_mut().resize(total * self.m, NONE);
        let mut done = 0;
        while done < fresh.len() {
            let take = build::batch_size(first_new as usize + done).min(fresh.len() - done);
            let batch = &fresh[done..done + take];
            let (codes, adj) = (&self.codes[..], self.adj.to_mut());
            build::insert_batch(codes, adj, w, batch, (&self.entries, &self.entry_codes), &p);
            done += take;
            self.update_entries(batch);
        }
    }

    /// Renumbers the nodes of a fresh build so that near codes sit near in memory: each code
    /// goes with the nearest of the [`entry_count`] codes of lowest rank (the first entry
    /// points), and nodes are numbered by that centre, then by rank. Graph searches then read
    /// fewer cache lines and pages.
    fn cluster_order(&mut self) {
        let n = self.nodes();
        let w = self.words();
        let e = entry_count(n);
        if n < 4 * e {
            return;
        }
        let seed = self.seed;
        let ranks: Vec<u64> = self.node_ids.iter().map(|&id| rank(id, seed)).collect();
        let mut by_rank: Vec<(u64, u32)> = (0..n as u32).map(|x| (ranks[x as usize], x)).collect();
        by_rank.select_nth_unstable(e);
        by_rank.truncate(e);
        by_rank.sort_unstable();
        let mut centres = Vec::with_capacity(e * w);
        for &(_, x) in &by_rank {
            centres.extend_from_slice(&self.codes[x as usize * w..(x as usize + 1) * w]);
        }
        let nearest: Vec<u32> = self
            .codes
            .par_chunks(w * 256)
            .flat_map_iter(|qs| {
                hamming::scan_knn(qs, &centres, w, 1)
                    .expect("whole codes")
                    .into_iter()
                    .map(|nb| nb[0].row as u32)
            })
            .collect();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&x| (nearest[x as usize], ranks[x as usize], x));
        self.renumber(&order);
    }

    /// Renumbers the nodes in increasing order of their smallest id, if they are not so
    /// already: the order of [`LinearScan`](super::LinearScan)'s codes. The scan fallback
    /// then reads the codes in the order the scan does, and its tie-break by node at the
    /// `k`-th distance is the scan's tie-break by smaller id (a node holding several ids
    /// comes before every node whose ids are all larger than its smallest).
    fn id_order(&mut self) {
        if self.node_ids.is_sorted() {
            return;
        }
        let mut order: Vec<u32> = (0..self.nodes() as u32).collect();
        order.sort_unstable_by_key(|&x| self.node_ids[x as usize]);
        self.renumber(&order);
        self.huge_pages();
    }

    /// Keeps the node order that the [`mode`](Self::mode) answers best from: in scan mode
    /// the order of the ids ([`id_order`](Self::id_order)). In graph mode the order is left
    /// as it is (a fresh build's is by cluster).
    fn settle_order(&mut self) {
        if self.mode() == Mode::Scan {
            self.id_order();
        }
    }

    /// Copies the codes and the rows into memory backed by huge pages where the kernel
    /// grants them ([`huge_copy`]).
    fn huge_pages(&mut self) {
        if let Some(codes) = huge_copy(&self.codes) {
            self.codes = codes.into();
        }
        if let Some(adj) = huge_copy(&self.adj) {
            self.adj = adj.into();
        }
    }

    /// Renumbers the nodes: node `order[i]` becomes node `i` (`order` a permutation of the
    /// nodes). Codes, ids, rows and their neighbours, entry points and the exact table
    /// follow; the graph is the same graph.
    fn renumber(&mut self, order: &[u32]) {
        let n = self.nodes();
        let (w, m) = (self.words(), self.m);
        debug_assert_eq!(order.len(), n);
        // old node -> new node
        let mut new_of = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_of[old as usize] = new as u32;
        }
        let mut codes = Vec::with_capacity(n * w);
        let mut nids = Vec::with_capacity(n);
        for &old in order {
            codes.extend_from_slice(&self.codes[old as usize * w..(old as usize + 1) * w]);
            nids.push(self.node_ids[old as usize]);
        }
        self.codes = codes.into();
        self.node_ids = nids.into();
        if !self.adj.is_empty() {
            let mut adj = Vec::with_capacity(n * m);
            for &old in order {
                adj.extend(
                    self.adj[old as usize * m..(old as usize + 1) * m]
                        .iter()
                        .map(|&x| if x == NONE { NONE } else { new_of[x as usize] }),
                );
            }
            self.adj = adj.into();
        }
        if !self.entries.is_empty() {
            let entries: Vec<u32> = self.entries.iter().map(|&x| new_of[x as usize]).collect();
            self.entries = entries.into();
        }
        let dups = self
            .dup_pairs()
            .into_iter()
            .map(|(x, id)| (new_of[x as usize], id))
            .collect();
        self.set_dups(dups);
        if let Some(by_id) = self.by_id.as_mut() {
            for v in by_id.values_mut() {
                *v = new_of[*v as usize];
            }
        }
        self.table = exact::build(&self.codes, w, n).into();
    }

    /// Takes the new nodes of `batch` as entry points while there are fewer than
    /// [`entry_count`], or in place of the entry of highest rank when theirs is lower.
    fn update_entries(&mut self, batch: &[u32]) {
        let w = self.words();
        let seed = self.seed;
        let want = entry_count(self.nodes());
        let mut e: Vec<(u64, u32)> = self
            .entries
            .iter()
            .map(|&n| (rank(self.node_ids[n as usize], seed), n))
            .collect();
        for &n in batch {
            e.push((rank(self.node_ids[n as usize], seed), n));
        }
        e.sort_unstable();
        e.truncate(want);
        self.set_entries(e.into_iter().map(|p| p.1).collect(), w);
    }

    fn set_entries(&mut self, nodes: Vec<u32>, w: usize) {
        let mut codes = Vec::with_capacity(nodes.len() * w);
        for &n in &nodes {
            codes.extend_from_slice(&self.codes[n as usize * w..(n as usize + 1) * w]);
        }
        self.entries = nodes.into();
        self.entry_codes = codes.into();
    }

    /// The entry points chosen afresh: the nodes of the lowest rank.
    fn reset_entries(&mut self) {
        let seed = self.seed;
        let mut e: Vec<(u64, u32)> = (0..self.nodes() as u32)
            .map(|n| (rank(self.node_ids[n as usize], seed), n))
            .collect();
        let want = entry_count(e.len());
        if want < e.len() {
            e.select_nth_unstable(want);
            e.truncate(want);
        }
        e.sort_unstable();
        let w = self.words();
        self.set_entries(e.into_iter().map(|p| p.1).collect(), w);
    }

    /// Runs the check now (see [`Check`]).
    fn run_check(&mut self) {
        self.check = check::run(self);
    }

    /// Checks the contents once, and builds the id map, before the first change.
    fn ensure_mutable(&mut self) -> Result<()> {
        if !self.validated {
            self.validate()?;
            self.validated = true;
        }
        if self.by_id.is_none() {
            let mut map = HashMap::with_capacity(self.len);
            for node in 0..self.nodes() as u32 {
                self.ids_of(node, |id| {
                    map.insert(id, node);
                });
            }
            self.by_id = Some(map);
        }
        Ok(())
    }

    /// Checks the nodes count after a change: the check runs again when it has doubled.
    /// Then the node order the mode needs ([`settle_order`](Self::settle_order)).
    fn after_change(&mut self) {
        let n = self.nodes();
        if n >= 2 * self.check.nodes.max(1) || (n > 0 && self.check.nodes == 0) {
            self.run_check();
        }
        self.settle_order();
    }

    /// Removes ids (stored, distinct): ids that leave a node with other ids only leave it;
    /// nodes left without ids are removed from the graph (their neighbours repaired) and the
    /// last nodes moved into their slots.
    fn take_out(&mut self, ids: &[Id]) {
        let by_id = self.by_id.as_mut().expect("built by ensure_mutable");
        let mut gone_dups: Vec<(u32, u32)> = Vec::new();
        let mut emptied: Vec<u32> = Vec::new();
        let mut touched: Vec<u32> = Vec::new();
        for &id in ids {
            let node = by_id.remove(&id).expect("stored");
            touched.push(node);
            gone_dups.push((node, id));
        }
        touched.sort_unstable();
        touched.dedup();
        // Per touched node: its ids left.
        let mut all_dups = self.dup_pairs();
        gone_dups.sort_unstable();
        let nids = self.node_ids.to_mut();
        for &node in &touched {
            let lo = gone_dups.partition_point(|p| p.0 < node);
            let hi = gone_dups.partition_point(|p| p.0 <= node);
            let gone: Vec<u32> = gone_dups[lo..hi].iter().map(|p| p.1).collect();
            let dlo = all_dups.partition_point(|p| p.0 < node);
            let dhi = all_dups.partition_point(|p| p.0 <= node);
            let mut left: Vec<u32> = std::iter::once(nids[node as usize])
                .chain(all_dups[dlo..dhi].iter().map(|p| p.1))
                .filter(|id| !gone.contains(id))
                .collect();
            left.sort_unstable();
            // Rewrite this node's duplicates.
            all_dups.splice(
                dlo..dhi,
                left.iter()
                    .skip(1)
                    .map(|&id| (node, id))
                    .collect::<Vec<_>>(),
            );
            match left.first() {
                Some(&rep) => nids[node as usize] = rep,
                None => emptied.push(node),
            }
        }
        self.len -= ids.len();
        let w = self.words();
        if !emptied.is_empty() {
            let p = self.params();
            let (codes, adj) = (&self.codes[..], self.adj.to_mut());
            build::remove_nodes(codes, adj, w, &emptied, &p);
            let table = self.table.to_mut();
            for &x in &emptied {
                exact::remove(table, codes, w, x);
            }
        }
        self.set_dups(all_dups);
        if !emptied.is_empty() {
            self.compact_nodes(&emptied);
        }
    }

    /// Moves the last live nodes into the slots of the removed nodes `gone` (sorted, rows
    /// already cleared and out of the table), renumbering every reference.
    fn compact_nodes(&mut self, gone: &[u32]) {
        let n = self.nodes();
        let w = self.words();
        let live = n - gone.len();
        // Old node -> new node for the nodes that move (from the tail into the holes).
        let holes: Vec<u32> = gone
            .iter()
            .copied()
            .filter(|&x| (x as usize) < live)
            .collect();
        let movers: Vec<u32> = (live as u32..n as u32)
            .filter(|x| gone.binary_search(x).is_err())
            .collect();
        debug_assert_eq!(holes.len(), movers.len());
        let mut remap: HashMap<u32, u32> = HashMap::with_capacity(movers.len());
        for (&from, &to) in movers.iter().zip(&holes) {
            remap.insert(from, to);
        }
        let m = self.m;
        {
            let codes = self.codes.to_mut();
            let adj = self.adj.to_mut();
            let nids = self.node_ids.to_mut();
            for (&from, &to) in movers.iter().zip(&holes) {
                let (f, t) = (from as usize, to as usize);
                codes.copy_within(f * w..(f + 1) * w, t * w);
                adj.copy_within(f * m..(f + 1) * m, t * m);
                nids[t] = nids[f];
            }
            codes.truncate(live * w);
            adj.truncate(live * m);
            nids.truncate(live);
            if !remap.is_empty() {
                adj.par_iter_mut().for_each(|x| {
                    if let Some(&t) = remap.get(x) {
                        *x = t;
                    }
                });
            }
        }
        if !remap.is_empty() {
            let dups = self
                .dup_pairs()
                .into_iter()
                .map(|(x, id)| (remap.get(&x).copied().unwrap_or(x), id))
                .collect();
            self.set_dups(dups);
            if let Some(by_id) = self.by_id.as_mut() {
                for v in by_id.values_mut() {
                    if let Some(&t) = remap.get(v) {
                        *v = t;
                    }
                }
            }
        }
        self.table = exact::build(&self.codes, w, live).into();
        self.reset_entries();
    }

    /// Builds an index from saved arrays ([`GraphParts`]). Only shapes are checked (`O(1)`
    /// in the data); [`validate`](HammingIndex::validate) checks the contents, and runs
    /// before the first change.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the array whose length disagrees with the others.
    pub fn from_parts(p: GraphParts) -> Result<Self> {
        super::check_bits(p.bits)?;
        let w = words_for(p.bits);
        builder::check_params(p.m, p.ef, p.ef_construction).map_err(|e| match e {
            Error::InvalidParameter { name, reason } => Error::InvalidParameter {
                name: match name {
                    "m" => "param m",
                    "ef" => "param ef",
                    _ => "param ef_construction",
                },
                reason,
            },
            other => other,
        })?;
        let nodes = p.node_ids.len();
        let shape = |ok: bool, name: &'static str, what: String| -> Result<()> {
            if ok {
                Ok(())
            } else {
                Err(Error::param(name, what))
            }
        };
        shape(
            nodes.checked_mul(w) == Some(p.codes.len()),
            "section codes",
            format!("{} words for {nodes} nodes", p.codes.len()),
        )?;
        shape(
            nodes.checked_mul(p.m) == Some(p.adj.len()),
            "section adj",
            format!(
                "{} entries for {nodes} nodes of degree {}",
                p.adj.len(),
                p.m
            ),
        )?;
        shape(
            p.dup_nodes.len() == p.dup_ids.len(),
            "section dup_ids",
            format!("{} ids for {} nodes", p.dup_ids.len(), p.dup_nodes.len()),
        )?;
        shape(
            p.table.len() >= exact::capacity(nodes) && p.table.len().is_power_of_two(),
            "section table",
            format!("{} slots for {nodes} nodes", p.table.len()),
        )?;
        shape(
            p.entries.len().checked_mul(w) == Some(p.entry_codes.len()) && p.entries.len() <= nodes,
            "section entries",
            format!(
                "{} entries, {} words of codes, {nodes} nodes",
                p.entries.len(),
                p.entry_codes.len()
            ),
        )?;
        shape(
            p.entries.iter().all(|&e| (e as usize) < nodes),
            "section entries",
            "an entry beyond the nodes".into(),
        )?;
        Ok(GraphIndex {
            bits: p.bits,
            m: p.m,
            ef: p.ef,
            ef_construction: p.ef_construction,
            seed: p.seed,
            fallback: p.fallback,
            len: nodes + p.dup_ids.len(),
            codes: p.codes,
            adj: p.adj,
            node_ids: p.node_ids,
            dup_nodes: p.dup_nodes,
            dup_ids: p.dup_ids,
            table: p.table,
            entries: p.entries,
            entry_codes: p.entry_codes,
            check: p.check,
            pool: Pool::default(),
            validated: false,
            by_id: None,
            meta: crate::index::IndexMeta::default(),
        })
    }

    /// The arrays, for saving.
    pub(crate) fn parts(&self) -> GraphParts {
        GraphParts {
            bits: self.bits,
            m: self.m,
            ef: self.ef,
            ef_construction: self.ef_construction,
            seed: self.seed,
            fallback: self.fallback,
            codes: self.codes.to_vec().into(),
            adj: self.adj.to_vec().into(),
            node_ids: self.node_ids.to_vec().into(),
            dup_nodes: self.dup_nodes.to_vec().into(),
            dup_ids: self.dup_ids.to_vec().into(),
            table: self.table.to_vec().into(),
            entries: self.entries.to_vec().into(),
            entry_codes: self.entry_codes.to_vec().into(),
            check: self.check.clone(),
        }
    }

    /// The arrays, borrowed: `(codes, adj, node_ids, dup_nodes, dup_ids, table, entries,
    /// entry_codes)`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn arrays(
        &self,
    ) -> (
        &[u64],
        &[u32],
        &[u32],
        &[u32],
        &[u32],
        &[u32],
        &[u32],
        &[u64],
    ) {
        (
            &self.codes,
            &self.adj,
            &self.node_ids,
            &self.dup_nodes,
            &self.dup_ids,
            &self.table,
            &self.entries,
            &self.entry_codes,
        )
    }
}

impl HammingIndex for GraphIndex {
    crate::index::meta::meta_methods!();

    fn spec(&self) -> super::IndexSpec {
        super::IndexSpec::Graph(super::GraphSpec {
            m: self.m,
            ef: self.ef,
            ef_construction: self.ef_construction,
            seed: self.seed,
            fallback: self.fallback,
        })
    }

    fn bits(&self) -> usize {
        self.bits
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> usize {
        self.codes.data_bytes()
            + self.adj.data_bytes()
            + self.node_ids.data_bytes()
            + self.dup_nodes.data_bytes()
            + self.dup_ids.data_bytes()
            + self.table.data_bytes()
            + self.entries.data_bytes()
            + self.entry_codes.data_bytes()
    }

    fn insert(&mut self, id: Id, code: &[u64]) -> Result<()> {
        self.insert_batch(&[id], code)
    }

    fn remove(&mut self, id: Id) -> Result<bool> {
        Ok(self.remove_batch(&[id])? == 1)
    }

    fn insert_batch(&mut self, ids: &[Id], codes: &[u64]) -> Result<()> {
        super::check_batch(self.bits, ids, codes)?;
        self.ensure_mutable()?;
        let by_id = self.by_id.as_ref().expect("built by ensure_mutable");
        if let Some(&id) = ids.iter().find(|id| by_id.contains_key(id)) {
            return Err(super::duplicate(id));
        }
        if ids.is_empty() {
            return Ok(());
        }
        self.add(ids, codes);
        self.after_change();
        Ok(())
    }

    fn remove_batch(&mut self, ids: &[Id]) -> Result<usize> {
        self.ensure_mutable()?;
        let by_id = self.by_id.as_ref().expect("built by ensure_mutable");
        let rm = crate::index::rows::sorted_unique(
            ids.iter()
                .copied()
                .filter(|id| by_id.contains_key(id))
                .collect(),
        );
        if rm.is_empty() {
            return Ok(0);
        }
        self.take_out(&rm);
        self.settle_order();
        Ok(rm.len())
    }

    fn radius_into(&self, query: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        let mut found: Vec<(u32, u32)> = Vec::new();
        hamming::scan_radius(query, &self.codes, self.words(), r, |_, i, d| {
            found.push((d, i as u32))
        })?;
        out.clear();
        for (d, node) in found {
            self.ids_of(node, |id| out.push(Hit { distance: d, id }));
        }
        out.sort_unstable();
        Ok(())
    }

    fn knn_into(&self, query: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()> {
        self.knn_with(query, k, self.ef, out)
    }

    fn radius_batch(&self, queries: &[u64], r: u32) -> Result<Vec<Vec<Hit>>> {
        let w = super::check_query_rows(self.bits, queries)?;
        let chunks: Vec<Vec<Vec<Hit>>> = queries
            .par_chunks(w * hamming::SCAN_QUERY_BATCH)
            .map(|qs| {
                let mut found: Vec<Vec<(u32, u32)>> = vec![Vec::new(); qs.len() / w];
                hamming::scan_radius(qs, &self.codes, w, r, |q, i, d| {
                    found[q].push((d, i as u32))
                })?;
                Ok(found
                    .into_iter()
                    .map(|f| {
                        let mut out = Vec::new();
                        for (d, node) in f {
                            self.ids_of(node, |id| out.push(Hit { distance: d, id }));
                        }
                        out.sort_unstable();
                        out
                    })
                    .collect())
            })
            .collect::<Result<_>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    fn knn_batch(&self, queries: &[u64], k: usize) -> Result<Vec<Vec<Hit>>> {
        self.knn_batch_with(queries, k, self.ef)
    }

    fn validate(&self) -> Result<()> {
        check::validate(self)
    }

    fn exact_knn(&self) -> bool {
        false
    }

    fn as_graph(&self) -> Option<&GraphIndex> {
        Some(self)
    }

    fn as_graph_mut(&mut self) -> Option<&mut GraphIndex> {
        Some(self)
    }
}
