//! The verified self-join in two passes, for inputs whose vectors do not fit beside the
//! signatures: the join's candidate pairs are collected first ([`VerifiedJoin::candidate_pairs`],
//! in the order the join finds them, held in memory up to a budget and spilled beyond it to a
//! temporary file), the signatures can then be dropped, and only the vectors of the rows that
//! appear in some candidate ([`CandidatePairs::rows`]) are made, by the caller, from a second
//! pass over its input, to verify them ([`CandidatePairs::verify`]).
//!
//! **Memory.** A [`MemoryBudget`] splits a run's budget between its parts once, in the
//! library, for every front end: what the caller holds throughout (row names, the IDF table,
//! the clusters), the join's per-row state, the signatures (the width planner's memory), the
//! candidates held before they are spilled, the band entries the banded join sorts at once,
//! and the vectors of the candidate rows. Each part is checked where it is made, an
//! [`Error::InvalidParameter`] naming `memory`, what does not fit and by how much.
//!
//! **Exactness.** Each candidate is verified by the same cosine ([`Vectors::cosine_with`]) of
//! the same weights as [`VerifiedJoin::run`] computes, and the kept pairs reach the sink in
//! the same order: the pairs (and their cosines, bit for bit) are those of `run`, provided the
//! caller's vectors of the candidate rows are the rows `run` would have been given.
//!
//! ```
//! use simlsh::verify::{MemoryBudget, SparseVectors, VerifiedJoin, Vectors};
//! use simlsh::{HashingTrick, Signer};
//!
//! let docs: Vec<Vec<(u64, f32)>> = vec![
//!     vec![(1, 1.0), (2, 1.0), (3, 1.0)],
//!     vec![(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0)],
//!     vec![(7, 1.0)],
//!     vec![],
//! ];
//! let signer = HashingTrick::builder().bits(256).seed(7).build()?;
//! let sigs = simlsh::SignatureMatrix::from_signatures(
//!     256,
//!     &docs.iter().map(|d| {
//!         let (ids, w): (Vec<u64>, Vec<f32>) = d.iter().copied().unzip();
//!         signer.sign_sparse(&ids, &w)
//!     }).collect::<Result<Vec<_>, _>>()?,
//! )?;
//! let join = VerifiedJoin::planned(0.8, 0.99, 256, docs.len())?;
//! // Pass 1: candidates (row 3 has no features) within 64 MiB, nothing held by the caller.
//! let budget = MemoryBudget::new(64 << 20, docs.len(), 0)?;
//! let candidates = join.candidate_pairs(&sigs, &[3], &budget, &std::env::temp_dir())?;
//! drop(sigs);
//! // Pass 2: the vectors of the candidate rows only, in the order of `rows`.
//! let rows = candidates.rows();
//! let mut pairs = Vec::new();
//! let report = candidates.verify(
//!     |rows: &[u32]| SparseVectors::from_rows(rows.iter().map(|&r| docs[r as usize].clone())),
//!     |p| pairs.push((p.i, p.j)),
//! )?;
//! assert_eq!(pairs, vec![(0, 1)]);
//! assert_eq!(report.zero_rows, vec![3]);
//! assert!(!rows.contains(&3));
//! # Ok::<(), simlsh::Error>(())
//! ```

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{Vectors, VerifiedJoin, VerifiedPair, VerifyReport};
use crate::error::{Error, Result};
use crate::fs::atomic::{Temp, create_temp};
use crate::join::{CappedGroup, Pair};
use crate::signature::SignatureMatrix;

/// Bytes of one candidate pair, held or spilled: `i`, `j` and the distance as `u32`.
pub const CANDIDATE_BYTES: u64 = 12;

/// Candidates verified at once (read back from the spill, checked in parallel), at most.
const VERIFY_BATCH: usize = 1 << 16;

/// The buffer of the spill file, at most (written, or read back).
const SPILL_BUFFER: u64 = 1 << 20;

/// Bytes per candidate of a batch being verified: as read back, as a pair, and its result.
const BATCH_CANDIDATE_BYTES: u64 = CANDIDATE_BYTES
    + std::mem::size_of::<Pair>() as u64
    + std::mem::size_of::<Option<VerifiedPair>>() as u64;

/// Bytes per row the two-pass join holds besides the signatures and the band entries: each
/// row's active flag (1), the banded join's list of active rows (4) and the candidate rows'
/// bits (1/8, counted as 1).
pub const JOIN_ROW_BYTES: u64 = 6;

/// Bytes per row of a block listed for its vectors (`vectors_of`'s argument), counted in
/// the block's limit beside the row's vector.
const LISTED_ROW_BYTES: u64 = 4;

/// The signatures may take this fraction (1/n) of the free budget ([`MemoryBudget::free`]).
const SIGNATURES_SHARE: u64 = 3;

/// The IDF fit's pending keys take this fraction (1/n) of the whole budget.
const IDF_FIT_SHARE: u64 = 8;

/// The candidates held before spilling take this fraction (1/n) of the free budget.
const CANDIDATES_SHARE: u64 = 6;

/// A memory budget for the two-pass verified join of [`VerifiedJoin::candidate_pairs`] and
/// [`CandidatePairs::verify`], split into the parts the run holds. Once the caller's own state
/// (`held`: row names, the IDF table, the clusters, …) and the join's per-row state
/// ([`JOIN_ROW_BYTES`] per row) are taken out, the **free** rest goes:
///
/// | phase | holds |
/// |---|---|
/// | signing | the signatures: the widths planned within a third of the free budget ([`signatures`](Self::signatures), the planner's memory); the narrowest (or a width given) up to all but the candidates' share ([`check_signatures`](Self::check_signatures)) |
/// | join | the signatures, the candidates held before spilling with the spill's buffer (a sixth, [`candidates`](Self::candidates)), and the band entries sorted at once: the rest ([`bands`](Self::bands)) |
/// | verification | the held candidates, a batch of them read back and checked (at most as much again), and the candidate rows' vectors: the rest once the signatures are dropped ([`vectors`](Self::vectors)), made and verified in blocks when they do not fit at once ([`blocks`](Self::blocks)) |
///
/// so that no phase holds more than the budget (beyond a fixed overhead: the program, its
/// threads' stacks, the input's read buffers and a batch of documents, which the caller states).
///
/// ```
/// use simlsh::verify::MemoryBudget;
///
/// // 256 MiB for a million rows whose names and IDF table take 40 MiB.
/// let budget = MemoryBudget::new(256 << 20, 1_000_000, 40 << 20)?;
/// assert!(budget.signatures >= 64_000_000); // 512-bit signatures fit, 1,024-bit ones do not
/// assert!(budget.signatures < 128_000_000);
/// let bands = budget.bands(1_000_000, 512)?;
/// assert!(simlsh::join::band_chunk(1_000_000, bands, 64) >= 1);
/// assert!(budget.bands(1_000_000, 2048).is_err());
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    /// The whole budget, bytes.
    pub total: u64,
    /// What the caller holds throughout the run.
    pub held: u64,
    /// The join's per-row state ([`JOIN_ROW_BYTES`] per row).
    pub rows: u64,
    /// The signatures' share, a third of the free budget: the width planner's memory
    /// ([`JoinPlanner::memory`](crate::estimate::JoinPlanner::memory)).
    pub signatures: u64,
    /// The candidates held before they are spilled to a temporary file.
    pub candidates: u64,
}

impl MemoryBudget {
    /// The budget of `total` bytes for a join of `rows` rows whose caller holds `held` bytes
    /// throughout.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`memory`) when `held` and the rows' state leave less than
    /// what one candidate and one signature word per row need.
    pub fn new(total: u64, rows: usize, held: u64) -> Result<Self> {
        let state = JOIN_ROW_BYTES.saturating_mul(rows as u64);
        let free = total.saturating_sub(held).saturating_sub(state);
        let least = CANDIDATES_SHARE
            .saturating_mul(CANDIDATE_BYTES)
            .max(SIGNATURES_SHARE.saturating_mul(crate::memory::bytes_of::<u64>(rows)));
        if free < least {
            return Err(Error::param(
                "memory",
                format!(
                    "{total} bytes cannot hold a join of {rows} rows: their names and tables \
                     take {held} bytes and the join's state per row {state}, leaving {free} \
                     where at least {least} are needed"
                ),
            ));
        }
        Ok(MemoryBudget {
            total,
            held,
            rows: state,
            signatures: free / SIGNATURES_SHARE,
            candidates: free / CANDIDATES_SHARE,
        })
    }

    /// The bytes the fit of the IDF table (the pass before the rows are counted and the rest
    /// of the budget split) may take for its pending keys under a budget of `total` bytes:
    /// an eighth ([`DfCounter::memory`](crate::text::DfCounter::memory)). Beside them the fit
    /// holds its table (the fitted table, counted in `held` afterwards, twice while it is
    /// merged) and the keys of a batch of documents.
    pub fn idf_fit(total: u64) -> u64 {
        total / IDF_FIT_SHARE
    }

    /// The budget of a run over `rows` rows whose caller holds `held` bytes throughout:
    /// `memory` bytes when given, else what this process may still allocate
    /// ([`memory::available`](crate::memory::available)). The default of every front end
    /// (the command line, Python's `plan_join`, Spark's planning), decided here once.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn of_run(memory: Option<u64>, rows: usize, held: u64) -> Result<Self> {
        Self::new(memory.unwrap_or_else(crate::memory::available), rows, held)
    }

    /// The memory a width planner takes ([`JoinPlanner::memory`](crate::estimate::JoinPlanner::memory))
    /// for a run as [`of_run`](Self::of_run): the signatures' share of its budget. Without
    /// a `memory` given, 0 (the narrowest width) when what is available cannot hold the
    /// rows' state.
    ///
    /// ```
    /// use simlsh::verify::MemoryBudget;
    ///
    /// let share = MemoryBudget::planner_memory(Some(256 << 20), 1_000_000, 0)?;
    /// assert_eq!(share, MemoryBudget::new(256 << 20, 1_000_000, 0)?.signatures);
    /// assert!(MemoryBudget::planner_memory(Some(1 << 20), 1_000_000, 0).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`new`](Self::new), when `memory` is given.
    pub fn planner_memory(memory: Option<u64>, rows: usize, held: u64) -> Result<u64> {
        match (Self::of_run(memory, rows, held), memory) {
            (Ok(b), _) => Ok(b.signatures),
            (Err(e), Some(_)) => Err(e),
            (Err(_), None) => Ok(0),
        }
    }

    /// What the signatures, candidates, band entries and vectors share: the budget less what
    /// the caller holds and the rows' state.
    pub fn free(&self) -> u64 {
        self.total
            .saturating_sub(self.held)
            .saturating_sub(self.rows)
    }

    /// The bytes of the signatures of `rows` rows at `bits` bits, when they fit beside the
    /// held candidates: the planner's widths take at most their share
    /// ([`signatures`](Self::signatures)), but a width given (or the narrowest, which the
    /// planner always keeps) may take all the free budget but the candidates' share, the
    /// band entries then checked apart ([`bands`](Self::bands)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`memory`) naming both sizes.
    pub fn check_signatures(&self, rows: usize, bits: usize) -> Result<u64> {
        let sigs = crate::memory::bytes_of::<u64>(rows).saturating_mul(bits.div_ceil(64) as u64);
        let most = self.free().saturating_sub(self.candidates);
        if sigs > most {
            return Err(Error::param(
                "memory",
                format!(
                    "{} bytes cannot hold the signatures of {rows} rows at {bits} bits: they \
                     take {sigs} bytes, and {most} are left beside the held candidates ({}) \
                     of the {} left by names, tables and the rows' state",
                    self.total,
                    self.candidates,
                    self.free(),
                ),
            ));
        }
        Ok(sigs)
    }

    /// The bytes of band entries the banded join may sort at once (the budget
    /// [`join::band_chunk`](crate::join::band_chunk) takes) beside the signatures of `rows`
    /// rows at `bits` bits and the held candidates.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`memory`) when the signatures exceed their share, or what
    /// is left does not hold one band's entries.
    pub fn bands(&self, rows: usize, bits: usize) -> Result<u64> {
        let sigs = self.check_signatures(rows, bits)?;
        let bands = self
            .free()
            .saturating_sub(sigs)
            .saturating_sub(self.candidates);
        // Bands of any width: the widest entries.
        if crate::join::band_chunk(rows, bands, 64) == 0 {
            let one = crate::join::band_chunk_bytes(rows, 1, rayon::current_num_threads(), 64);
            return Err(Error::param(
                "memory",
                format!(
                    "{} bytes cannot hold the banded join of {rows} rows: one band's entries \
                     take {one} bytes, and {bands} are left beside the signatures ({sigs}) and \
                     the held candidates ({})",
                    self.total, self.candidates
                ),
            ));
        }
        Ok(bands)
    }

    /// The bytes the candidate rows' vectors may take: the free budget less the held
    /// candidates and the batch of them being verified (at most as much again); the
    /// signatures and band entries are gone by then.
    pub fn vectors(&self) -> u64 {
        self.free().saturating_sub(2 * self.candidates)
    }

    /// The bytes the vectors of a block of candidate rows may take in
    /// [`CandidatePairs::verify_blocks`] (its `limit`) for a join of `rows` rows: the
    /// vectors' share ([`vectors`](Self::vectors)) less the blocks' bookkeeping (a bit per
    /// row for the block's rows, and the ranks of the candidate rows and of the block's, 4
    /// bytes per 64 rows each).
    pub fn blocks(&self, rows: usize) -> u64 {
        let words = crate::memory::bytes_of::<u64>(rows.div_ceil(64));
        self.vectors().saturating_sub(2 * words)
    }
}

/// The candidate pairs of a verified join, in the order the join found them, collected
/// before any vector is read ([`VerifiedJoin::candidate_pairs`]): up to a budget in memory,
/// the rest in a temporary file (removed when this is dropped). [`CandidatePairs::verify`]
/// then verifies them with the same cosine, in the same order, as [`VerifiedJoin::run`]: the
/// same pairs, their cosines bit for bit.
#[derive(Debug)]
pub struct CandidatePairs {
    threshold: f64,
    zero_rows: Vec<u32>,
    capped: Vec<CappedGroup>,
    /// Rows appearing in some candidate, one bit each.
    seen: Vec<u64>,
    /// The candidates not yet spilled.
    held: Vec<Pair>,
    /// Most candidates held before the held ones are spilled.
    limit: usize,
    /// The spill file's buffer, bytes (taken from the candidates' share).
    buffer: usize,
    /// Candidates verified at once: their batch takes at most the candidates' share less the
    /// buffer.
    batch: usize,
    dir: PathBuf,
    spill: Option<Spill>,
    count: u64,
    /// The first error of a spill (the join's sink cannot return it).
    failed: Option<Error>,
}

/// The spill file and its writer.
struct Spill {
    temp: Temp,
    writer: BufWriter<File>,
    pairs: u64,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("path", &self.temp.path)
            .field("pairs", &self.pairs)
            .finish()
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl CandidatePairs {
    fn push(&mut self, p: Pair) {
        if self.failed.is_some() {
            return;
        }
        for r in [p.i, p.j] {
            self.seen[r as usize / 64] |= 1u64 << (r % 64);
        }
        self.count += 1;
        if self.held.len() == self.held.capacity() {
            // Grow by doubling, never beyond the budget.
            let more = self
                .held
                .len()
                .max(1 << 10)
                .min(self.limit - self.held.len());
            self.held.reserve_exact(more);
        }
        self.held.push(p);
        if self.held.len() >= self.limit
            && let Err(e) = self.spill_held()
        {
            self.failed = Some(e);
        }
    }

    /// Appends the held candidates to the spill file (created on first use).
    fn spill_held(&mut self) -> Result<()> {
        let spill = match &mut self.spill {
            Some(s) => s,
            None => {
                let dest = self.dir.join("simlsh-candidates");
                let temp = create_temp(&self.dir, &dest).map_err(io_error(&dest))?;
                let file = temp.file.try_clone().map_err(io_error(&temp.path))?;
                self.spill.insert(Spill {
                    temp,
                    writer: BufWriter::with_capacity(self.buffer, file),
                    pairs: 0,
                })
            }
        };
        for p in self.held.drain(..) {
            let mut b = [0u8; CANDIDATE_BYTES as usize];
            b[0..4].copy_from_slice(&p.i.to_le_bytes());
            b[4..8].copy_from_slice(&p.j.to_le_bytes());
            b[8..12].copy_from_slice(&p.distance.to_le_bytes());
            spill
                .writer
                .write_all(&b)
                .map_err(io_error(&spill.temp.path))?;
        }
        spill.pairs = self.count;
        Ok(())
    }

    /// Number of candidate pairs.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True when there is no candidate.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of candidates written to the temporary file (0 when all fit the budget).
    pub fn spilled_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.pairs * CANDIDATE_BYTES)
    }

    /// The rows appearing in some candidate, in increasing order: the rows whose vectors
    /// [`verify`](Self::verify) asks for.
    pub fn rows(&self) -> Vec<u32> {
        bits_set(&self.seen)
    }

    /// Verifies every candidate by the exact cosine of its rows' vectors, the kept pairs
    /// (cosine ≥ τ) going to `sink` in the order [`VerifiedJoin::run`] gives them.
    /// `vectors_of` is called once with [`rows`](Self::rows) and returns their vectors, row
    /// `k` that of `rows[k]` (e.g. from a second pass over the input). The report is `run`'s.
    /// When the vectors of every candidate row do not fit at once, [`verify_blocks`](Self::verify_blocks).
    ///
    /// # Errors
    /// The error of a spill (writing or reading the temporary file); `vectors_of`'s;
    /// [`Error::LengthMismatch`] when it returns another number of rows than asked.
    pub fn verify<V: Vectors>(
        self,
        vectors_of: impl FnOnce(&[u32]) -> Result<V>,
        sink: impl FnMut(VerifiedPair),
    ) -> Result<VerifyReport> {
        let mut once = Some(vectors_of);
        let blocked = self.verify_blocks(
            u64::MAX,
            |_| 0,
            |rows| match once.take() {
                Some(f) => f(rows),
                None => unreachable!("one block: its vectors are asked for once"),
            },
            sink,
        )?;
        Ok(blocked.report)
    }

    /// [`verify`](Self::verify) with the candidate rows' vectors made block by block, each
    /// block's within `limit` bytes: for vectors that do not fit at once (their share of a
    /// budget, [`MemoryBudget::blocks`]). `row_bytes(k)` is the bytes the vector of the
    /// `k`-th candidate row ([`rows`](Self::rows)`[k]`) takes once made (e.g. a sparse row
    /// of `e` entries: [`sparse_row_bytes`]).
    ///
    /// A block is the longest run of candidates, in the join's order from where the last
    /// block ended, whose rows' vectors fit `limit`; `vectors_of` is called once per block
    /// with the block's rows (increasing) and returns their vectors (e.g. from one more pass
    /// over the input), row `k` that of `rows[k]`; the block's candidates are verified and
    /// their kept pairs go to `sink`. So the pairs, their cosines (bit for bit: each cosine
    /// is of the same two rows' vectors) and their order are [`VerifiedJoin::run`]'s, and
    /// `k` blocks cost `k` calls (passes). When every candidate row fits `limit`, one block
    /// and one call. Each row is asked for at most once per block; a row in candidates of
    /// several blocks is made again for each.
    ///
    /// ```
    /// use simlsh::verify::{MemoryBudget, SparseVectors, VerifiedJoin, Vectors, sparse_row_bytes};
    /// use simlsh::{HashingTrick, Signer};
    ///
    /// let docs: Vec<Vec<(u64, f32)>> = vec![
    ///     vec![(1, 1.0), (2, 1.0), (3, 1.0)],
    ///     vec![(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0)],
    ///     vec![(1, 1.0), (2, 1.0), (3, 1.0), (5, 1.0)],
    /// ];
    /// let signer = HashingTrick::builder().bits(256).seed(7).build()?;
    /// let sigs = simlsh::SignatureMatrix::from_signatures(
    ///     256,
    ///     &docs.iter().map(|d| {
    ///         let (ids, w): (Vec<u64>, Vec<f32>) = d.iter().copied().unzip();
    ///         signer.sign_sparse(&ids, &w)
    ///     }).collect::<Result<Vec<_>, _>>()?,
    /// )?;
    /// let join = VerifiedJoin::planned(0.8, 0.99, 256, docs.len())?;
    /// let budget = MemoryBudget::new(64 << 20, docs.len(), 0)?;
    /// let candidates = join.candidate_pairs(&sigs, &[], &budget, &std::env::temp_dir())?;
    /// let rows = candidates.rows();
    /// let bytes = |k: usize| sparse_row_bytes(docs[rows[k] as usize].len());
    /// // Room for the vectors of two of the rows at a time (44 to 56 bytes each, and 4 for
    /// // their listing), not three: one candidate per block.
    /// let mut pairs = Vec::new();
    /// let blocked = candidates.verify_blocks(
    ///     120,
    ///     bytes,
    ///     |block: &[u32]| SparseVectors::from_rows(block.iter().map(|&r| docs[r as usize].clone())),
    ///     |p| pairs.push((p.i, p.j)),
    /// )?;
    /// assert_eq!(blocked.blocks as u64, blocked.report.candidates);
    /// let mut want = Vec::new();
    /// join.run(&sigs, &SparseVectors::from_rows(docs.clone())?, |p| want.push((p.i, p.j)))?;
    /// assert_eq!(pairs, want);
    /// assert!(pairs.contains(&(0, 1)) && !pairs.contains(&(1, 2))); // cosines 0.87 and 0.75
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`memory`) when the two rows of a candidate do not fit
    /// `limit` together (naming them and their bytes); the error of a spill (writing or
    /// reading the temporary file); `vectors_of`'s; [`Error::LengthMismatch`] when it returns
    /// another number of rows than asked.
    pub fn verify_blocks<V: Vectors>(
        mut self,
        limit: u64,
        row_bytes: impl Fn(usize) -> u64,
        mut vectors_of: impl FnMut(&[u32]) -> Result<V>,
        mut sink: impl FnMut(VerifiedPair),
    ) -> Result<BlockedReport> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if let Some(spill) = &mut self.spill {
            spill.writer.flush().map_err(io_error(&spill.temp.path))?;
        }
        // The position of row `r` among the candidate rows: the set bits before it.
        let all = Ranks::of(&self.seen);
        let total: u64 = (0..all.count)
            .map(|k| row_bytes(k).saturating_add(LISTED_ROW_BYTES))
            .fold(0u64, u64::saturating_add);
        let t = self.threshold;
        let mut kept = 0u64;
        let mut blocks = 0usize;
        let mut start = 0u64;
        // The rows of the block being chosen or verified, one bit each.
        let mut block = vec![0u64; self.seen.len()];
        while start < self.count {
            // The block: every candidate left when all rows fit, else the longest run of
            // candidates whose rows fit `limit`.
            let end = if total <= limit {
                block.copy_from_slice(&self.seen);
                self.count
            } else {
                let mut bytes = 0u64;
                let mut end = start;
                self.each_batch(start, self.count, |batch| {
                    for p in batch {
                        let mut add = 0u64;
                        for r in [p.i, p.j] {
                            if block[r as usize / 64] & (1u64 << (r % 64)) == 0 {
                                add = add
                                    .saturating_add(row_bytes(all.rank(&self.seen, r)))
                                    .saturating_add(LISTED_ROW_BYTES);
                            }
                        }
                        if bytes.saturating_add(add) > limit {
                            if end == start {
                                return Err(Error::param(
                                    "memory",
                                    format!(
                                        "{limit} bytes cannot hold the vectors of candidate rows \
                                         {} and {} together ({add} bytes)",
                                        p.i, p.j
                                    ),
                                ));
                            }
                            return Ok(false);
                        }
                        bytes += add;
                        for r in [p.i, p.j] {
                            block[r as usize / 64] |= 1u64 << (r % 64);
                        }
                        end += 1;
                    }
                    Ok(true)
                })?;
                end
            };
            let ranks = Ranks::of(&block);
            let rows = bits_set(&block);
            let vectors = vectors_of(&rows)?;
            if vectors.len() != rows.len() {
                return Err(Error::LengthMismatch {
                    what: "candidate rows vs their vectors",
                    left: rows.len(),
                    right: vectors.len(),
                });
            }
            drop(rows);
            self.each_batch(start, end, |batch| {
                let found: Vec<Option<VerifiedPair>> = batch
                    .par_iter()
                    .map(|p| {
                        let c = vectors.cosine(ranks.rank(&block, p.i), ranks.rank(&block, p.j));
                        (c >= t).then_some(VerifiedPair {
                            i: p.i,
                            j: p.j,
                            distance: p.distance,
                            cosine: c,
                        })
                    })
                    .collect();
                for p in found.into_iter().flatten() {
                    kept += 1;
                    sink(p);
                }
                Ok(true)
            })?;
            drop(vectors);
            block.fill(0);
            blocks += 1;
            start = end;
        }
        Ok(BlockedReport {
            report: VerifyReport {
                zero_rows: std::mem::take(&mut self.zero_rows),
                candidates: self.count,
                pairs: kept,
                capped: std::mem::take(&mut self.capped),
            },
            blocks,
        })
    }

    /// Calls `f` with the candidates `start..end` in order, in batches of at most
    /// `self.batch` (read back from the spill, then the held ones), until it returns
    /// `Ok(false)`.
    fn each_batch(
        &self,
        start: u64,
        end: u64,
        mut f: impl FnMut(&[Pair]) -> Result<bool>,
    ) -> Result<()> {
        let spilled = self.spill.as_ref().map_or(0, |s| s.pairs);
        if start < spilled.min(end) {
            let spill = self.spill.as_ref().expect("candidates spilled");
            let path = &spill.temp.path;
            let mut file = File::open(path).map_err(io_error(path))?;
            file.seek(SeekFrom::Start(start * CANDIDATE_BYTES))
                .map_err(io_error(path))?;
            let mut reader = BufReader::with_capacity(self.buffer, file);
            let mut bytes = vec![0u8; self.batch * CANDIDATE_BYTES as usize];
            let mut batch = Vec::with_capacity(self.batch);
            let mut left = spilled.min(end) - start;
            while left > 0 {
                let n = left.min(self.batch as u64) as usize;
                let b = &mut bytes[..n * CANDIDATE_BYTES as usize];
                reader.read_exact(b).map_err(io_error(path))?;
                batch.clear();
                batch.extend(b.chunks_exact(CANDIDATE_BYTES as usize).map(|c| {
                    let u = |k: usize| u32::from_le_bytes([c[k], c[k + 1], c[k + 2], c[k + 3]]);
                    Pair {
                        i: u(0),
                        j: u(4),
                        distance: u(8),
                    }
                }));
                if !f(&batch)? {
                    return Ok(());
                }
                left -= n as u64;
            }
        }
        let from = start.max(spilled) - spilled;
        let to = end.max(spilled) - spilled;
        if from < to {
            for batch in self.held[from as usize..to as usize].chunks(self.batch) {
                if !f(batch)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// What [`CandidatePairs::verify_blocks`] reports: [`VerifiedJoin::run`]'s report, and the
/// blocks the candidates were verified in (the calls for vectors: passes over the input).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockedReport {
    /// The report of [`VerifiedJoin::run`].
    pub report: VerifyReport,
    /// Blocks verified, each with its own vectors.
    pub blocks: usize,
}

/// The bytes a sparse row of `entries` entries takes in [`SparseVectors`](super::SparseVectors)
/// made with exact capacity: a `u64` key and an `f32` weight per entry, and the row's offset.
pub const fn sparse_row_bytes(entries: usize) -> u64 {
    12 * entries as u64 + 8
}

/// The rank of each set bit of a bitset: the set bits of the words before it.
struct Ranks {
    before: Vec<u32>,
    count: usize,
}

impl Ranks {
    fn of(bits: &[u64]) -> Ranks {
        let mut before = Vec::with_capacity(bits.len());
        let mut count = 0u32;
        for &w in bits {
            before.push(count);
            count += w.count_ones();
        }
        Ranks {
            before,
            count: count as usize,
        }
    }

    /// The set bits of `bits` before bit `r`.
    fn rank(&self, bits: &[u64], r: u32) -> usize {
        let (w, b) = (r as usize / 64, r % 64);
        (self.before[w] + (bits[w] & ((1u64 << b) - 1)).count_ones()) as usize
    }
}

/// The set bits of `bits`, in increasing order.
fn bits_set(bits: &[u64]) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut b = word;
        while b != 0 {
            out.push((w * 64) as u32 + b.trailing_zeros());
            b &= b - 1;
        }
    }
    out
}

impl VerifiedJoin {
    /// The first pass of the two-pass join (collect, then verify the candidate rows' vectors:
    /// [`CandidatePairs::verify`]): the candidate pairs of `sigs` whose rows are not in
    /// `zero_rows` (the rows of norm 0, in increasing order, e.g. the documents without
    /// features: never paired), in the join's order. Up to `budget.candidates` bytes of them
    /// ([`CANDIDATE_BYTES`] each) are held; beyond, they are appended to a temporary file in
    /// `spill_dir` (named as the crate's temporaries,
    /// `.simlsh-candidates.<pid>-<n>.simlsh-tmp`, removed when the result is dropped). A banded
    /// join sorts its bands by chunks within [`MemoryBudget::bands`].
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `budget.candidates` holds less than one candidate, the
    /// signatures or one band's entries do not fit the budget ([`MemoryBudget::bands`]), or a
    /// row of `zero_rows` is out of range; as [`run`](Self::run); [`Error::Io`] writing the
    /// spill.
    pub fn candidate_pairs<S>(
        &self,
        sigs: &SignatureMatrix<S>,
        zero_rows: &[u32],
        budget: &MemoryBudget,
        spill_dir: &Path,
    ) -> Result<CandidatePairs>
    where
        S: AsRef<[u64]> + Sync,
    {
        let memory = budget.candidates;
        if memory < CANDIDATE_BYTES {
            return Err(Error::param(
                "memory",
                format!("{memory} bytes cannot hold one candidate pair ({CANDIDATE_BYTES} bytes)"),
            ));
        }
        let band_bytes = budget.bands(sigs.len(), sigs.bits())?;
        // The spill's write buffer comes out of the candidates' share.
        let buffer = SPILL_BUFFER.min(memory / 2);
        let n = sigs.len();
        let mut active = vec![true; n];
        for &r in zero_rows {
            match active.get_mut(r as usize) {
                Some(a) => *a = false,
                None => {
                    return Err(Error::param(
                        "zero_rows",
                        format!("row {r} is beyond the {n} rows"),
                    ));
                }
            }
        }
        let mut out = CandidatePairs {
            threshold: self.threshold(),
            zero_rows: zero_rows.to_vec(),
            capped: Vec::new(),
            seen: crate::memory::filled(n.div_ceil(64), 0u64, "candidate rows")?,
            held: Vec::new(),
            limit: usize::try_from((memory - buffer) / CANDIDATE_BYTES)
                .unwrap_or(usize::MAX)
                .max(1),
            buffer: buffer as usize,
            batch: usize::try_from((memory - buffer) / BATCH_CANDIDATE_BYTES)
                .unwrap_or(usize::MAX)
                .clamp(1, VERIFY_BATCH),
            dir: spill_dir.to_path_buf(),
            spill: None,
            count: 0,
            failed: None,
        };
        let capped = self.scan(sigs, &active, Some(band_bytes), Some, |p| out.push(p))?;
        out.capped = capped;
        if let Some(e) = out.failed.take() {
            return Err(e);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::join::{Banding, Scheme};
    use crate::signers::{HashingTrick, Signer};
    use crate::verify::SparseVectors;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Sparse rows: 60 groups of near-copies (a random row, then copies with a few entries
    /// reweighted or replaced), 200 unrelated rows, and 5 empty rows, in a seeded order.
    fn planted_rows(seed: u64) -> Vec<Vec<(u64, f32)>> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let row = |rng: &mut Xoshiro256PlusPlus, n: usize| -> Vec<(u64, f32)> {
            (0..n)
                .map(|_| (rng.random_range(0..5000u64), rng.random_range(0.1f32..2.0)))
                .collect()
        };
        let mut rows = Vec::new();
        for _ in 0..60 {
            let base = row(&mut rng, 30);
            rows.push(base.clone());
            for _ in 0..rng.random_range(1..4) {
                let mut copy = base.clone();
                for _ in 0..rng.random_range(0..10) {
                    let k = rng.random_range(0..copy.len());
                    copy[k] = (rng.random_range(0..5000u64), rng.random_range(0.1f32..2.0));
                }
                rows.push(copy);
            }
        }
        for _ in 0..200 {
            let n = rng.random_range(3..40);
            rows.push(row(&mut rng, n));
        }
        rows.extend(std::iter::repeat_n(Vec::new(), 5));
        // Keys strictly increasing (the signer's rule for sparse rows).
        for r in &mut rows {
            r.sort_by_key(|e| e.0);
            r.dedup_by_key(|e| e.0);
        }
        for i in (1..rows.len()).rev() {
            let j = rng.random_range(0..=i);
            rows.swap(i, j);
        }
        rows
    }

    fn signed(rows: &[Vec<(u64, f32)>], bits: usize) -> SignatureMatrix {
        let signer = HashingTrick::builder().bits(bits).seed(3).build().unwrap();
        let sigs: Vec<_> = rows
            .iter()
            .map(|r| {
                let (ids, w): (Vec<u64>, Vec<f32>) = r.iter().copied().unzip();
                signer.sign_sparse(&ids, &w).unwrap()
            })
            .collect();
        SignatureMatrix::from_signatures(bits, &sigs).unwrap()
    }

    /// A budget of 1 TiB holding `candidates` bytes of candidates.
    fn holding(candidates: u64) -> MemoryBudget {
        MemoryBudget {
            candidates,
            ..MemoryBudget::new(1 << 40, 1000, 0).unwrap()
        }
    }

    /// The least budget for `sigs` holding `candidates` bytes of candidates: its band share
    /// holds one band at a time.
    fn tight(sigs: &SignatureMatrix, candidates: u64) -> MemoryBudget {
        let n = sigs.len();
        let sig_bytes = (sigs.as_slice().len() * 8) as u64;
        let one = crate::join::band_chunk_bytes(n, 1, rayon::current_num_threads(), 64);
        let rows = JOIN_ROW_BYTES * n as u64;
        let b = MemoryBudget {
            total: rows + sig_bytes + candidates + one,
            held: 0,
            rows,
            signatures: sig_bytes,
            candidates,
        };
        assert_eq!(
            crate::join::band_chunk(n, b.bands(n, sigs.bits()).unwrap(), 64),
            1
        );
        b
    }

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The two-pass join gives `run`'s pairs (cosines bit for bit, in `run`'s order) and
    /// report, whatever the budget: all held, or spilled every few candidates; the spill file
    /// exists while the candidates do and is removed with them.
    #[test]
    fn two_passes_give_the_pairs_of_one_at_every_budget() {
        let dir = std::env::temp_dir().join(format!("simlsh-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for seed in [1, 2] {
            let rows = planted_rows(seed);
            let sigs = signed(&rows, 256);
            let vectors = SparseVectors::from_rows(rows.clone()).unwrap();
            let zero_rows = vectors.zero_rows();
            let joins = [
                VerifiedJoin::planned(0.7, 0.99, 256, rows.len()).unwrap(),
                VerifiedJoin::builder()
                    .threshold(0.6)
                    .candidates(Scheme::Bands(
                        Banding::builder()
                            .bits(256)
                            .bands(16)
                            .width(8)
                            .build()
                            .unwrap(),
                    ))
                    .build()
                    .unwrap(),
                VerifiedJoin::builder()
                    .threshold(0.8)
                    .candidates(Scheme::Radius { radius: 60 })
                    .build()
                    .unwrap(),
            ];
            for join in &joins {
                let mut want = Vec::new();
                let want_report = join.run(&sigs, &vectors, |p| want.push(p)).unwrap();
                assert!(want.len() > 50, "{} pairs: too few to test", want.len());
                assert!(want_report.candidates > want_report.pairs);
                // Spilled or not; the bands sorted one at a time or by chunks.
                for (memory, one_band) in [
                    (CANDIDATE_BYTES, false),
                    (7 * CANDIDATE_BYTES, true),
                    (1 << 30, false),
                    (1 << 30, true),
                ] {
                    let budget = match one_band {
                        true => tight(&sigs, memory),
                        false => holding(memory),
                    };
                    let c = join
                        .candidate_pairs(&sigs, &zero_rows, &budget, &dir)
                        .unwrap();
                    assert_eq!(c.len(), want_report.candidates);
                    let spilled = memory < 1 << 20;
                    assert_eq!(c.spilled_bytes() > 0, spilled, "memory {memory}");
                    assert_eq!(files_in(&dir).len(), usize::from(spilled));
                    let asked = c.rows();
                    // Every row of a verified pair is asked for, no row of norm 0.
                    assert!(
                        want.iter().all(|p| asked.binary_search(&p.i).is_ok()
                            && asked.binary_search(&p.j).is_ok())
                    );
                    assert!(zero_rows.iter().all(|r| asked.binary_search(r).is_err()));
                    let mut got = Vec::new();
                    let report = c
                        .verify(
                            |r| {
                                SparseVectors::from_rows(
                                    r.iter().map(|&k| rows[k as usize].clone()),
                                )
                            },
                            |p| got.push(p),
                        )
                        .unwrap();
                    assert_eq!(report, want_report);
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!((g.i, g.j, g.distance), (w.i, w.j, w.distance));
                        assert_eq!(g.cosine.to_bits(), w.cosine.to_bits());
                    }
                    assert!(files_in(&dir).is_empty(), "spill file left behind");
                }
            }
        }
        std::fs::remove_dir(&dir).unwrap();
    }

    /// Verified in blocks, the candidates give `run`'s pairs (cosines bit for bit, in
    /// `run`'s order) and report whatever the blocks: one, a few, one candidate each; held
    /// or spilled. Each block asks once for its rows (increasing), within the limit.
    #[test]
    fn blocks_give_the_pairs_of_one_pass_at_every_limit() {
        let dir = std::env::temp_dir().join(format!("simlsh-blocks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for seed in [4, 5] {
            let rows = planted_rows(seed);
            let sigs = signed(&rows, 256);
            let vectors = SparseVectors::from_rows(rows.clone()).unwrap();
            let zero_rows = vectors.zero_rows();
            let join = VerifiedJoin::planned(0.7, 0.99, 256, rows.len()).unwrap();
            let mut want = Vec::new();
            let want_report = join.run(&sigs, &vectors, |p| want.push(p)).unwrap();
            assert!(want.len() > 50, "{} pairs: too few to test", want.len());
            let entries = |r: u32| rows[r as usize].len();
            let all_rows = join
                .candidate_pairs(&sigs, &zero_rows, &holding(1 << 30), &dir)
                .unwrap()
                .rows();
            let all_bytes: u64 = all_rows
                .iter()
                .map(|&r| sparse_row_bytes(entries(r)) + LISTED_ROW_BYTES)
                .sum();
            // Unit row bytes: a limit of two rows makes one block per candidate.
            let unit = 1 + LISTED_ROW_BYTES;
            for (limit, unit_rows, blocks) in [
                (all_bytes, false, Some(1)),
                (all_bytes / 3, false, None),
                (all_bytes / 20, false, None),
                (2 * unit, true, Some(want_report.candidates as usize)),
            ] {
                for memory in [CANDIDATE_BYTES * 7, 1 << 30] {
                    let c = join
                        .candidate_pairs(&sigs, &zero_rows, &holding(memory), &dir)
                        .unwrap();
                    assert_eq!(c.spilled_bytes() > 0, memory < 1 << 20);
                    let asked = c.rows();
                    let bytes = |k: usize| match unit_rows {
                        true => 1,
                        false => sparse_row_bytes(entries(asked[k])),
                    };
                    let mut calls = 0;
                    let mut got = Vec::new();
                    let blocked = c
                        .verify_blocks(
                            limit,
                            bytes,
                            |block: &[u32]| {
                                calls += 1;
                                assert!(block.windows(2).all(|w| w[0] < w[1]));
                                let held: u64 = block
                                    .iter()
                                    .map(|r| {
                                        let k = asked.binary_search(r).unwrap();
                                        bytes(k) + LISTED_ROW_BYTES
                                    })
                                    .sum();
                                assert!(held <= limit, "{held} > {limit}");
                                SparseVectors::from_rows(
                                    block.iter().map(|&k| rows[k as usize].clone()),
                                )
                            },
                            |p| got.push(p),
                        )
                        .unwrap();
                    assert_eq!(blocked.report, want_report);
                    assert_eq!(blocked.blocks, calls);
                    match blocks {
                        Some(b) => assert_eq!(blocked.blocks, b, "limit {limit}"),
                        None => assert!(blocked.blocks > 1, "limit {limit}"),
                    }
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!((g.i, g.j, g.distance), (w.i, w.j, w.distance));
                        assert_eq!(g.cosine.to_bits(), w.cosine.to_bits());
                    }
                }
            }
            // A limit below one candidate's two rows: an error naming them.
            let c = join
                .candidate_pairs(&sigs, &zero_rows, &holding(1 << 30), &dir)
                .unwrap();
            let e = c
                .verify_blocks(
                    2 * unit - 1,
                    |_| 1,
                    |block: &[u32]| {
                        SparseVectors::from_rows(block.iter().map(|&k| rows[k as usize].clone()))
                    },
                    |_| {},
                )
                .unwrap_err()
                .to_string();
            assert!(e.contains("memory") && e.contains("together"), "{e}");
        }
        assert!(files_in(&dir).is_empty(), "spill file left behind");
        std::fs::remove_dir(&dir).unwrap();
    }

    /// The shares of a budget: no phase holds more than the total; what does not fit is an
    /// error naming it.
    #[test]
    fn a_budget_splits_its_bytes_and_names_what_does_not_fit() {
        let n = 1_000_000;
        let b = MemoryBudget::new(256 << 20, n, 40 << 20).unwrap();
        assert_eq!(b.rows, JOIN_ROW_BYTES * n as u64);
        assert_eq!(b.free(), (256 << 20) - (40 << 20) - b.rows);
        // Signing and the join: the signatures at their share, the candidates and the bands.
        let sigs = 64_000_000u64;
        let bands = b.bands(n, 512).unwrap();
        assert_eq!(b.held + b.rows + sigs + b.candidates + bands, b.total);
        assert!(sigs <= b.signatures);
        // Verification: the candidates, its buffers and the vectors.
        assert_eq!(b.held + b.rows + 2 * b.candidates + b.vectors(), b.total);
        // The blocks: the vectors' share less a bit and two ranks' words per 64 rows.
        assert_eq!(b.blocks(n), b.vectors() - 2 * 8 * (n as u64).div_ceil(64));
        let e = b.bands(n, 2048).unwrap_err().to_string();
        assert!(e.contains("2048 bits") && e.contains("256000000"), "{e}");
        assert!(b.check_signatures(n, 512).is_ok());
        // Beyond their share, signatures fit beside the held candidates (the bands apart).
        assert!(b.signatures < 128_000_000);
        assert_eq!(b.check_signatures(n, 1024).unwrap(), 128_000_000);
        let most = b.free() - b.candidates;
        let words = most / (8 * n as u64);
        assert!(b.check_signatures(n, 64 * words as usize).is_ok());
        assert!(b.check_signatures(n, 64 * (words as usize + 1)).is_err());
        // Names and tables that leave nothing.
        let e = MemoryBudget::new(10 << 20, n, 8 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1000000 rows") && e.contains("8388608"), "{e}");
        // Signatures that fit, but leave no room for one band (32 bytes a row with one
        // thread, more with several).
        let b = MemoryBudget {
            total: b.rows + sigs + b.candidates + 1000,
            ..b
        };
        let b = MemoryBudget { held: 0, ..b };
        let e = b.bands(n, 512).unwrap_err().to_string();
        assert!(e.contains("one band"), "{e}");
    }

    #[test]
    fn budgets_and_vectors_that_cannot_work_are_errors() {
        let rows = planted_rows(3);
        let sigs = signed(&rows, 128);
        let join = VerifiedJoin::planned(0.7, 0.99, 128, rows.len()).unwrap();
        let dir = std::env::temp_dir();
        let e = join
            .candidate_pairs(&sigs, &[], &holding(CANDIDATE_BYTES - 1), &dir)
            .unwrap_err()
            .to_string();
        assert!(e.contains("11 bytes") && e.contains("memory"), "{e}");
        let e = join
            .candidate_pairs(&sigs, &[rows.len() as u32], &holding(1 << 20), &dir)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("row {}", rows.len())), "{e}");
        // Vectors of another number of rows than asked.
        let c = join
            .candidate_pairs(&sigs, &[], &holding(1 << 20), &dir)
            .unwrap();
        let e = c
            .verify(|_| SparseVectors::from_rows([vec![(1u64, 1.0f32)]]), |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("candidate rows"), "{e}");
        // A spill directory that does not exist: the error names it.
        let missing = dir.join(format!("simlsh-missing-{}", std::process::id()));
        let e = join
            .candidate_pairs(&sigs, &[], &holding(CANDIDATE_BYTES), &missing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("simlsh-missing"), "{e}");
    }
}
