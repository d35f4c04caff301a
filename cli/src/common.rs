//! What every subcommand shares: global options, the thread pool, progress bars, the
//! statistics file, signer options, and atomic output files.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use simlsh::signers::{AnySigner, Distribution, HashingTrick, HyperplaneSigner, PooledSigner};

/// Options accepted by every subcommand.
#[derive(Args, Clone, Debug)]
pub struct Global {
    /// Seed of every random choice (signer matrices, hashes, permutations).
    #[arg(long, global = true, default_value_t = 0)]
    pub seed: u64,
    /// Signature width f in bits.
    #[arg(long, global = true, default_value_t = 64)]
    pub bits: usize,
    /// Worker threads (default: all cores).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// No progress bars or summaries on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Write timings, counts, throughput and memory of the run to this JSON file.
    #[arg(long, global = true, value_name = "FILE")]
    pub stats: Option<PathBuf>,
}

/// The run's context: options, phase timings and counts for `--stats`.
pub struct Ctx {
    pub seed: u64,
    pub bits: usize,
    pub quiet: bool,
    stats: Option<PathBuf>,
    start: Instant,
    phases: Vec<(String, f64)>,
    values: BTreeMap<String, Value>,
}

impl Ctx {
    pub fn new(g: &Global) -> Result<Self> {
        if g.bits == 0 {
            bail!("--bits must be at least 1");
        }
        if let Some(t) = g.threads {
            if t == 0 {
                bail!("--threads must be at least 1");
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build_global()
                .context("starting the thread pool")?;
        }
        Ok(Ctx {
            seed: g.seed,
            bits: g.bits,
            quiet: g.quiet,
            stats: g.stats.clone(),
            start: Instant::now(),
            phases: Vec::new(),
            values: BTreeMap::new(),
        })
    }

    /// Runs `f` as a named phase, timed for `--stats`.
    pub fn phase<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let t = Instant::now();
        let r = f(self)?;
        self.phases
            .push((name.to_string(), t.elapsed().as_secs_f64()));
        Ok(r)
    }

    /// Records a value (a count, a throughput) for `--stats`.
    pub fn record(&mut self, key: &str, v: impl Into<Value>) {
        self.values.insert(key.to_string(), v.into());
    }

    /// A progress bar over `len` steps, shown only on a terminal and without `--quiet`.
    pub fn progress(&self, len: u64, msg: &str) -> ProgressBar {
        if self.quiet || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::new(len);
        pb.set_style(
            ProgressStyle::with_template("{msg:>10} [{bar:30}] {human_pos}/{human_len} ({eta})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        pb.set_message(msg.to_string());
        pb
    }

    /// A spinner with the elapsed time, for one opaque step (building an index, a join),
    /// shown only on a terminal and without `--quiet` (hidden otherwise, like
    /// [`progress`](Self::progress)). Clear it with `finish_and_clear` when the step ends.
    pub fn spinner(&self, msg: &str) -> ProgressBar {
        if self.quiet || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template"),
        );
        pb.set_message(msg.to_string());
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        pb
    }

    /// Runs `f` under a [`spinner`](Self::spinner) named `msg`, cleared when `f` returns.
    pub fn spin<T>(&self, msg: &str, f: impl FnOnce() -> T) -> T {
        let pb = self.spinner(msg);
        let r = f();
        pb.finish_and_clear();
        r
    }

    /// Answers `n` items in batches of `batch` (`f(range)` answers the items of `range`, in
    /// order), with a progress bar counting items; the results are concatenated in order, so
    /// they equal one call over all items.
    pub fn batched<T>(
        &self,
        n: usize,
        batch: usize,
        msg: &str,
        mut f: impl FnMut(std::ops::Range<usize>) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let pb = self.progress(n as u64, msg);
        let mut out = Vec::with_capacity(n);
        let mut lo = 0;
        while lo < n {
            let hi = n.min(lo + batch);
            out.extend(f(lo..hi)?);
            pb.inc((hi - lo) as u64);
            lo = hi;
        }
        pb.finish_and_clear();
        Ok(out)
    }

    /// Prints a line on stderr unless `--quiet`.
    pub fn say(&self, line: impl std::fmt::Display) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    /// Writes the statistics file (if asked), after the command's result.
    pub fn finish(self, result: Result<()>) -> Result<()> {
        result?;
        if let Some(path) = &self.stats {
            let phases: serde_json::Map<String, Value> = self
                .phases
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            let doc = json!({
                "seconds_total": self.start.elapsed().as_secs_f64(),
                "phases_seconds": phases,
                "values": self.values,
                "peak_rss_bytes": peak_rss(),
                "threads": rayon::current_num_threads(),
            });
            write_file(path, |w| {
                serde_json::to_writer_pretty(&mut *w, &doc)?;
                writeln!(w)
            })?;
        }
        Ok(())
    }
}

/// Peak resident memory of this process (Linux `VmHWM`), if known.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Writes an output file atomically (temporary file, fsync, rename): an interrupted run leaves
/// no partial output and never clobbers the previous file.
pub fn write_file(
    path: &std::path::Path,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    simlsh::io::write_atomic(path, f).with_context(|| format!("writing {}", path.display()))
}

/// Which signer to use.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignerKind {
    /// Explicit Gaussian hyperplanes (Charikar 2002).
    Gaussian,
    /// Gaussian hyperplanes orthonormalised in batches (super-bit LSH).
    SuperBit,
    /// Explicit ±1 hyperplanes stored as bits.
    Rademacher,
    /// Very sparse ±1 hyperplanes (density 1/√D unless --density).
    VerySparse,
    /// The per-feature hashing trick (no matrix; any dimension; text tokens).
    HashingTrick,
    /// Hashed picks from a pool of Gaussians (Van Durme & Lall 2010).
    Pooled,
}

/// Signer options shared by the subcommands that sign.
#[derive(Args, Clone, Debug)]
pub struct SignerArgs {
    /// The signer.
    #[arg(long, value_enum, default_value = "hashing-trick")]
    pub signer: SignerKind,
    /// Density of the very sparse signer (default 1/√D).
    #[arg(long)]
    pub density: Option<f64>,
    /// Super-bit batch depth (default min(D, f)).
    #[arg(long)]
    pub depth: Option<usize>,
    /// Pool size of the pooled signer.
    #[arg(long, default_value_t = 10_000)]
    pub pool_size: usize,
}

impl SignerArgs {
    /// Builds the signer for input dimension `dim` (needed by the matrix signers).
    pub fn build(
        &self,
        kind: SignerKind,
        dim: Option<u64>,
        bits: usize,
        seed: u64,
    ) -> Result<AnySigner> {
        let matrix = |d: Distribution| -> Result<AnySigner> {
            let dim = dim.context("this signer needs the input dimension; text input needs --signer hashing-trick or pooled")?;
            Ok(HyperplaneSigner::builder()
                .dim(dim)
                .bits(bits)
                .seed(seed)
                .distribution(d)
                .build()?
                .into())
        };
        Ok(match kind {
            SignerKind::Gaussian => matrix(Distribution::Gaussian)?,
            SignerKind::SuperBit => matrix(Distribution::SuperBit { depth: self.depth })?,
            SignerKind::Rademacher => matrix(Distribution::Rademacher)?,
            SignerKind::VerySparse => matrix(Distribution::VerySparse {
                density: self.density,
            })?,
            SignerKind::HashingTrick => HashingTrick::builder()
                .bits(bits)
                .seed(seed)
                .build()?
                .into(),
            SignerKind::Pooled => PooledSigner::builder()
                .bits(bits)
                .seed(seed)
                .pool_size(self.pool_size)
                .build()?
                .into(),
        })
    }
}

/// Bytes as a short human string.
pub fn human_bytes(b: usize) -> String {
    match b {
        b if b < 1 << 10 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KiB", b as f64 / 1024.0),
        b if b < 1 << 30 => format!("{:.1} MiB", b as f64 / 1048576.0),
        b => format!("{:.2} GiB", b as f64 / 1073741824.0),
    }
}
