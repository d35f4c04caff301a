//! The near-duplicate join of `dedup` and `cluster`: pairs by Hamming radius, or by a cosine
//! threshold with candidates from the signatures verified by exact cosine; clusters as
//! connected components (union-find fed as pairs are found, no pair list held) or
//! non-chaining leader clusters.

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, ValueEnum};
use simlsh::SignatureMatrix;
use simlsh::estimate;
use simlsh::join::{LeaderOrder, SharedUnionFind, leader_clusters, self_join_active};
use simlsh::verify::{
    BlockedReport, CsrVectors, VerifiedJoin, VerifiedPair, VerifyReport, sparse_row_bytes,
};

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use crate::common::{Ctx, human_bytes};
use crate::input::{Exact, Made, Prepared, Signing, VerifiedRequest};
use crate::names::Names;
use crate::parquet::Shape;
use crate::table::Rows;

/// How pairs are found.
#[derive(ClapArgs, Debug, Clone)]
pub struct JoinArgs {
    /// Pairs whose signatures are within this Hamming radius (inclusive), by signatures
    /// alone (not verified).
    #[arg(long, conflicts_with_all = ["cosine", "verify"])]
    pub radius: Option<u32>,
    /// Pairs whose cosine is ≥ this threshold. With the input's vectors at hand (dense, sparse,
    /// or the weighted features of text) the answer is exact: candidates come from the
    /// signatures, planned for --recall at the threshold, and each is kept only if the exact
    /// cosine of its vectors reaches the threshold. With stored codes (or --no-verify), the
    /// pairs whose estimated cosine cos(πh/f) reaches it.
    #[arg(long)]
    pub cosine: Option<f64>,
    /// Verify candidates by exact cosine (the default with --cosine when the input has
    /// vectors; an error with stored codes).
    #[arg(long, overrides_with = "no_verify")]
    pub verify: bool,
    /// Do not verify: keep pairs by their estimated cosine.
    #[arg(long)]
    pub no_verify: bool,
    /// Target recall at the threshold of the verified join's candidates, from the binomial
    /// law of the signatures: the planner picks a Hamming radius or LSH bands reaching it.
    #[arg(long, default_value_t = 0.99)]
    pub recall: f64,
    /// The largest multi-probe distance the planned LSH bands may use: 0 for plain bands, 1
    /// to also pair rows whose band keys differ in one bit (longer bands, fewer bits), chosen
    /// when the planner finds it cheaper. Default: the library's (0), as Python and Spark
    /// plan, so that every front end gives the same pairs.
    #[arg(long)]
    pub probes: Option<u32>,
    /// Clusters: `components` (connected components: A≈B and B≈C put A, B, C together even
    /// when A≉C), `leader` (non-chaining: rows in order, each row not yet taken leads its
    /// unassigned neighbours, so every member is a pair with its leader) or `star` (leaders
    /// taken by most neighbours first).
    #[arg(long, value_enum, default_value = "components")]
    pub clustering: Clustering,
    /// Stored codes: all-zero codes are codes like any other, paired with each other (by
    /// default they are rows without features, as a simlsh signer gives them to empty
    /// documents and zero vectors: never paired, counted apart as `empty`).
    #[arg(long)]
    pub zero_codes: bool,
}

/// Clustering of the pairs.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clustering {
    Components,
    Leader,
    Star,
}

/// The join chosen from the options and the input.
pub enum Mode {
    /// Pairs within a Hamming radius, cosine estimated.
    Hamming { radius: u32 },
    /// Pairs at exact cosine ≥ τ, candidates planned.
    Verified { join: VerifiedJoin },
}

/// One pair found: rows `i < j`, Hamming distance, cosine (exact when verified, else
/// estimated from the distance).
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub i: u32,
    pub j: u32,
    pub distance: u32,
    pub cosine: f64,
}

/// What the join did.
pub struct Outcome {
    pub pairs: u64,
    /// One line: how pairs were found.
    pub how: String,
}

impl JoinArgs {
    /// How the input is signed for this join: at 256 bits for a cosine threshold
    /// ([`simlsh::estimate::COSINE_BITS`]), and for a verified one (the input's vectors kept)
    /// at the width of the join's plan, made once from the input's size before signing.
    pub fn signing(&self) -> Signing {
        let signing = match self.cosine {
            Some(threshold) if !self.no_verify => Signing {
                default_bits: simlsh::estimate::COSINE_BITS,
                join: Some(VerifiedRequest {
                    threshold,
                    recall: self.recall,
                    probes: self.probes,
                }),
                vectors: true,
                ..Signing::default()
            },
            Some(_) => Signing {
                default_bits: simlsh::estimate::COSINE_BITS,
                ..Signing::default()
            },
            None => Signing::default(),
        };
        Signing {
            zero_codes: self.zero_codes,
            ..signing
        }
    }

    /// The join for `p`; `default_radius` when neither --radius nor --cosine is given (an
    /// error when `None`).
    pub fn mode(&self, p: &Prepared, default_radius: Option<u32>) -> Result<Mode> {
        let bits = p.sigs.bits();
        if self.radius.is_some() && self.no_verify {
            bail!("--no-verify applies to --cosine; --radius pairs are never verified");
        }
        let Some(t) = self.cosine else {
            if self.verify {
                bail!("--verify needs --cosine: the threshold of the exact cosine");
            }
            return match self.radius.or(default_radius) {
                Some(radius) => Ok(Mode::Hamming { radius }),
                None => bail!("give --cosine (a threshold) or --radius (a Hamming radius)"),
            };
        };
        let verify = if self.no_verify {
            false
        } else if p.exact.is_none() && p.reread.is_none() {
            if self.verify {
                bail!(
                    "--verify needs the input's vectors, and stored signature codes have none: \
                     give the vectors or documents themselves, or --no-verify"
                );
            }
            false
        } else {
            true
        };
        if verify {
            let plan = p
                .plan
                .as_ref()
                .context("a verified join is planned when its input is signed")?;
            let join = VerifiedJoin::from_plan(t, plan)?;
            Ok(Mode::Verified { join })
        } else {
            let radius = estimate::max_hamming_for_cosine(t, bits as u64)? as u32;
            Ok(Mode::Hamming { radius })
        }
    }
}

/// Runs the join; every pair goes to `sink` as it is found. Documents streamed under a
/// memory budget ([`Prepared::reread`]) are verified in two passes: the candidate pairs first
/// (spilled beyond their share of the budget), then, the signatures dropped (`p.sigs` is left
/// empty), the vectors of the candidate rows read again.
pub fn run(
    p: &mut Prepared,
    mode: &Mode,
    ctx: &mut Ctx,
    mut sink: impl FnMut(Found),
) -> Result<Outcome> {
    let bits = p.sigs.bits() as u64;
    if let (Mode::Verified { join }, Some(_)) = (mode, &p.reread) {
        let report = run_streamed(p, join, ctx, |v| {
            sink(Found {
                i: v.i,
                j: v.j,
                distance: v.distance,
                cosine: v.cosine,
            })
        })?;
        return Ok(verified_outcome(join, &report, bits, ctx));
    }
    match mode {
        Mode::Hamming { radius } => {
            let n = ctx.phase("join", |ctx| {
                Ok(ctx.spin("joining pairs", || {
                    self_join_active(&p.sigs, *radius, &p.empty, |pr| {
                        sink(Found {
                            i: pr.i,
                            j: pr.j,
                            distance: pr.distance,
                            cosine: estimate::cosine(u64::from(pr.distance), bits),
                        })
                    })
                })?)
            })?;
            Ok(Outcome {
                pairs: n,
                how: format!("Hamming radius {radius}, cosine estimated"),
            })
        }
        Mode::Verified { join } => {
            let exact = p
                .exact
                .as_ref()
                .expect("a verified join is chosen only with vectors");
            let mut on_pair = |v: VerifiedPair| {
                sink(Found {
                    i: v.i,
                    j: v.j,
                    distance: v.distance,
                    cosine: v.cosine,
                })
            };
            let report: VerifyReport = ctx.phase("join", |ctx| {
                Ok(ctx.spin("joining and verifying pairs", || match exact {
                    Exact::Dense(v) => join.run(&p.sigs, v, &mut on_pair),
                    Exact::Sparse(v) => join.run(&p.sigs, v, &mut on_pair),
                    Exact::Csr(m) => join.run(&p.sigs, &CsrVectors::new(m.view())?, &mut on_pair),
                })?)
            })?;
            Ok(verified_outcome(join, &report, bits, ctx))
        }
    }
}

/// The outcome of a verified join: its summary line, and the scheme, candidates and capped
/// groups recorded.
fn verified_outcome(
    join: &VerifiedJoin,
    report: &VerifyReport,
    bits: u64,
    ctx: &mut Ctx,
) -> Outcome {
    let how = join.candidates().describe();
    ctx.record("scheme", join.candidates().to_string());
    if !report.capped.is_empty() {
        ctx.say(format!(
            "{} groups of rows sharing a band key were too large to compare (largest {} rows): their pairs may be missed",
            report.capped.len(),
            report.capped.iter().map(|g| g.rows).max().unwrap_or(0)
        ));
    }
    ctx.record("candidates", report.candidates);
    ctx.record("capped_groups", report.capped.len());
    Outcome {
        pairs: report.pairs,
        how: format!(
            "exact cosine ≥ {} verified on {} candidates from {how}, planned recall {}{}",
            join.threshold(),
            report.candidates,
            self_recall(join, bits),
            if report.capped.is_empty() {
                String::new()
            } else {
                format!(
                    ", not reached: {} band groups too large to compare (more --bits \
                     make narrower groups)",
                    report.capped.len()
                )
            }
        ),
    }
}

/// The planned recall at the threshold, for the summary.
fn self_recall(join: &VerifiedJoin, bits: u64) -> String {
    join.candidates()
        .recall(join.threshold(), bits as usize)
        .map_or_else(|_| "unknown".into(), |r| format!("{r:.4}"))
}

/// The clusters of `labels` (as [`Clusters::labels`] gives them) with more than one member,
/// and the size of the largest.
pub fn cluster_sizes(labels: &[u32]) -> (usize, usize) {
    let mut sizes = HashMap::<u32, usize>::new();
    labels
        .iter()
        .for_each(|&l| *sizes.entry(l).or_default() += 1);
    let multi = sizes.values().filter(|&&s| s > 1).count();
    (multi, sizes.values().copied().max().unwrap_or(0))
}

/// Writes each row's cluster, `record, cluster` (TSV, or Parquet when `target` ends in
/// .parquet).
pub fn write_clusters(
    target: &Path,
    w: &mut dyn Write,
    names: &Names,
    labels: &[u32],
) -> std::io::Result<()> {
    let mut rows = Rows::new(target, w, names, Shape::Clusters, false)?;
    for (i, &l) in labels.iter().enumerate() {
        rows.push(i as u32, l, 0, 0.0)?;
    }
    rows.finish()
}

/// Edges buffered before they are united in parallel (8 MiB), at most.
const UNITE_BATCH: usize = 1 << 20;

/// Edges buffered for `n` rows: [`UNITE_BATCH`], or a few per row when that is fewer (the
/// components do not depend on it).
fn unite_batch(n: usize) -> usize {
    UNITE_BATCH.min(n.max(1 << 10))
}

/// Clusters as pairs arrive: the parallel union-find for components, fed in batches of
/// [`unite_batch`] edges (nothing else held); every edge for leader clusters.
pub struct Clusters {
    mode: Clustering,
    uf: SharedUnionFind,
    edges: Vec<(u32, u32)>,
    batch: usize,
    /// The first batch's error (a pair beyond the rows), returned by `labels`.
    failed: Result<()>,
}

impl Clusters {
    pub fn new(n: usize, mode: Clustering) -> Result<Clusters> {
        Ok(Clusters {
            mode,
            uf: SharedUnionFind::new(n)?,
            edges: Vec::new(),
            batch: unite_batch(n),
            failed: Ok(()),
        })
    }

    /// Bytes the components of `n` rows hold: the union-find's parents, a batch of edges and
    /// the labels made at the end (leader clusters hold every edge besides).
    pub fn bytes(n: usize) -> u64 {
        let mut b = simlsh::memory::bytes_of::<u32>(n);
        b += simlsh::memory::bytes_of::<(u32, u32)>(unite_batch(n));
        b + simlsh::memory::bytes_of::<u32>(n)
    }

    /// Takes one pair.
    pub fn add(&mut self, i: u32, j: u32) {
        self.edges.push((i, j));
        if self.mode == Clustering::Components && self.edges.len() >= self.batch {
            if self.failed.is_ok() {
                self.failed = self.uf.union_all(&self.edges).map(drop).map_err(Into::into);
            }
            self.edges.clear();
        }
    }

    /// `labels[i]`: the row of `i`'s cluster that names it (its smallest member for
    /// components, its leader otherwise).
    pub fn labels(self) -> Result<Vec<u32>> {
        self.failed?;
        let n = self.uf.len();
        Ok(match self.mode {
            Clustering::Components => {
                self.uf.union_all(&self.edges)?;
                self.uf.labels()?
            }
            Clustering::Leader => leader_clusters(n, self.edges, LeaderOrder::Id)?,
            Clustering::Star => leader_clusters(n, self.edges, LeaderOrder::Degree)?,
        })
    }
}

/// The two-pass verified join of streamed documents, within the budget the library split
/// ([`simlsh::verify::MemoryBudget`]): candidates (held up to their share, the rest spilled to a
/// temporary file; bands sorted by chunks within theirs), the signatures dropped, then the
/// vectors of the candidate rows read again within their share.
fn run_streamed(
    p: &mut Prepared,
    join: &VerifiedJoin,
    ctx: &mut Ctx,
    sink: impl FnMut(VerifiedPair),
) -> Result<VerifyReport> {
    let reread = p
        .reread
        .as_ref()
        .context("a streamed join reads its documents again")?;
    let budget = reread
        .budget
        .context("a streamed join's budget is split when its input is signed")?;
    let tokenizer = p
        .tokenizer
        .as_ref()
        .context("streamed documents are tokenised here")?;
    let candidates = ctx.phase("join", |ctx| {
        Ok(ctx.spin("joining pairs", || {
            join.candidate_pairs(&p.sigs, &p.empty, &budget, &std::env::temp_dir())
        })?)
    })?;
    let (n, bits) = (p.sigs.len(), p.sigs.bits());
    p.sigs = SignatureMatrix::zeros(0, bits)?;
    simlsh::memory::return_freed_memory();
    ctx.record("candidates_spilled_bytes", candidates.spilled_bytes());
    ctx.phase("verify", |ctx| {
        let rows = candidates.rows();
        ctx.record("candidate_rows", rows.len());
        // Held beside the vectors: the candidate rows and their sizes.
        let listed = simlsh::memory::bytes_of::<u32>(rows.len()) * 2;
        let limit = budget.blocks(n).saturating_sub(listed);
        let too_small = || {
            format!(
                "--memory {} is too small",
                human_bytes(budget.total as usize)
            )
        };
        let made = reread.vectors_within(tokenizer, &rows, limit)?;
        let blocked = match made {
            Made::All(vectors) => {
                ctx.record("candidate_vector_bytes", vectors.bytes());
                drop(rows);
                let report = ctx.spin("verifying pairs", || {
                    candidates.verify(|_| Ok(vectors), sink)
                })?;
                BlockedReport { report, blocks: 1 }
            }
            Made::Entries(entries) => {
                // A row's vector as made: its entries and offset, and the offset of the rows
                // it is made from.
                let bytes = |k: usize| sparse_row_bytes(entries[k] as usize) + 8;
                ctx.record(
                    "candidate_vector_bytes",
                    (0..rows.len()).map(bytes).sum::<u64>(),
                );
                // The error of a pass, returned as it is (the library's stands in for it).
                let mut failed = None;
                let blocked = ctx.spin("verifying pairs in blocks", || {
                    candidates.verify_blocks(
                        limit,
                        bytes,
                        |block| {
                            let n = block
                                .iter()
                                .filter_map(|r| rows.binary_search(r).ok())
                                .map(|k| entries[k] as usize)
                                .sum();
                            reread.vectors_of(tokenizer, block, n).map_err(|e| {
                                let said = simlsh::Error::Unavailable(format!("{e:#}"));
                                failed = Some(e);
                                said
                            })
                        },
                        sink,
                    )
                });
                if let Some(e) = failed {
                    return Err(e);
                }
                blocked.with_context(too_small)?
            }
        };
        let passes = match blocked.blocks {
            1 => 1,
            b => 1 + b,
        };
        ctx.record("verify_blocks", blocked.blocks);
        ctx.record("verify_passes", passes);
        Ok(blocked.report)
    })
}
