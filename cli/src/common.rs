//! What every subcommand shares: global options, the thread pool, progress bars, the
//! statistics file, signer options, and atomic output files.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use simlsh::fs::{LockGuard, OutputSet};
use simlsh::signers::SignerKind;
use simlsh::signers::{AnySigner, SignerSpec};

/// Options accepted by every subcommand.
#[derive(Args, Clone, Debug)]
pub struct Global {
    /// Seed of every random choice (signer matrices, hashes, permutations).
    #[arg(long, global = true, default_value_t = 0)]
    pub seed: u64,
    /// Signature width f in bits (default 64 when signing; for `dedup` and `cluster` with
    /// --cosine, 256, or when verifying, the width the join planner finds cheapest for the
    /// number of rows: 256 up to tens of thousands, 512 to 1,024 from 10^5 to 10^6, 4,096 at
    /// ten million; stored codes keep their own width, and a --bits that disagrees with it is an
    /// error). At most 2^20.
    #[arg(long, global = true, value_parser = parse_bits)]
    pub bits: Option<usize>,
    /// Worker threads (default, or -1: all cores; -2 all but one; more than the cores are
    /// clamped to them).
    #[arg(long, global = true, allow_negative_numbers = true)]
    pub threads: Option<i64>,
    /// No progress bars or summaries on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Write timings, counts, throughput and memory of the run to this JSON file.
    #[arg(long, global = true, value_name = "FILE")]
    pub stats: Option<PathBuf>,
}

/// `--bits`: the library's one rule for widths (`1 ≤ f ≤ 2^20`).
fn parse_bits(s: &str) -> std::result::Result<usize, String> {
    let bits: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of bits"))?;
    simlsh::signature::check_bits(bits).map_err(|e| e.to_string())?;
    Ok(bits)
}

/// Signature width used when signing without `--bits`.
pub const DEFAULT_BITS: usize = 64;

/// The run's context: options, phase timings and counts for `--stats`.
pub struct Ctx {
    pub seed: u64,
    /// `--bits` as given (`None`: not given).
    pub bits_given: Option<usize>,
    pub quiet: bool,
    pub stats: Option<PathBuf>,
    start: Instant,
    /// Per phase: its name, wall-clock seconds and CPU seconds of the process's threads.
    phases: Vec<(String, f64, Option<f64>)>,
    values: BTreeMap<String, Value>,
    /// The run's output files, staged: they replace their files together with `--stats` at
    /// the end of a successful run ([`Ctx::finish`]), or not at all.
    outputs: OutputSet,
    /// Locks held until the outputs are in place (read-modify-write of an index).
    locks: Vec<LockGuard>,
}

impl Ctx {
    pub fn new(g: &Global) -> Result<Self> {
        if g.threads.is_some() {
            let t = simlsh::cpu::threads(g.threads).context("--threads")?;
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build_global()
                .context("starting the thread pool")?;
        }
        Ok(Ctx {
            seed: g.seed,
            bits_given: g.bits,
            quiet: g.quiet,
            stats: g.stats.clone(),
            start: Instant::now(),
            phases: Vec::new(),
            values: BTreeMap::new(),
            outputs: OutputSet::new(),
            locks: Vec::new(),
        })
    }

    /// Stages an output file written by `f`: it replaces `path` at the end of a successful
    /// run, together with the other outputs and `--stats` ([`Ctx::finish`]), and never if the
    /// run fails (an interrupted run leaves no partial output and never clobbers a file).
    pub fn write_file(
        &mut self,
        path: &Path,
        f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        self.outputs
            .write(path, f)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Stages outputs through the library's writers (an index, a signature file).
    pub fn stage(
        &mut self,
        path: &Path,
        f: impl FnOnce(&mut OutputSet) -> simlsh::Result<()>,
    ) -> Result<()> {
        f(&mut self.outputs).with_context(|| format!("writing {}", path.display()))
    }

    /// Adds the outputs staged in `set` to the run's.
    pub fn append_outputs(&mut self, set: OutputSet) -> Result<()> {
        Ok(self.outputs.append(set)?)
    }

    /// Holds `guard` until the run's outputs are in place.
    pub fn hold(&mut self, guard: LockGuard) {
        self.locks.push(guard);
    }

    /// The width to sign with outside a join: `--bits`, or [`DEFAULT_BITS`].
    pub fn bits(&self) -> usize {
        self.bits_given.unwrap_or(DEFAULT_BITS)
    }

    /// Runs `f` as a named phase, timed for `--stats`.
    pub fn phase<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let (t, cpu) = (Instant::now(), process_cpu_ns());
        let r = f(self)?;
        let cpu = cpu
            .zip(process_cpu_ns())
            .map(|(a, b)| b.saturating_sub(a) as f64 * 1e-9);
        self.phases
            .push((name.to_string(), t.elapsed().as_secs_f64(), cpu));
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
            stderr_line(format_args!("{line}"));
        }
    }

    /// Writes the statistics file (if asked), after the command's result, and puts every
    /// staged output in place: all of them, or none if one fails.
    pub fn finish(mut self, result: Result<()>) -> Result<()> {
        result?;
        if let Some(path) = &self.stats {
            let phases: serde_json::Map<String, Value> = self
                .phases
                .iter()
                .map(|(k, v, _)| (k.clone(), json!(v)))
                .collect();
            let cpu: serde_json::Map<String, Value> = self
                .phases
                .iter()
                .filter_map(|(k, _, c)| Some((k.clone(), json!((*c)?))))
                .collect();
            let doc = json!({
                "seconds_total": self.start.elapsed().as_secs_f64(),
                "phases_seconds": phases,
                "phases_cpu_seconds": cpu,
                "values": self.values,
                "peak_rss_bytes": peak_rss(),
                "threads": rayon::current_num_threads(),
            });
            let path = path.clone();
            self.write_file(&path, |w| {
                serde_json::to_writer_pretty(&mut *w, &doc)?;
                writeln!(w)
            })?;
        }
        std::mem::take(&mut self.outputs).commit()?;
        self.locks.clear();
        Ok(())
    }
}

/// [`simlsh::fs::check_distinct`] with `--stats` among the outputs.
pub fn check_distinct(inputs: &[&Path], outputs: &[&Path]) -> Result<()> {
    let ins: Vec<&Path> = inputs
        .iter()
        .copied()
        .filter(|p| !simlsh::io::is_stdin(p))
        .collect();
    Ok(simlsh::fs::check_distinct(&ins, outputs)?)
}

/// Writes a line on standard error; a closed or full stderr is ignored (never a panic, unlike
/// `eprintln!`).
pub fn stderr_line(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Writes `body` to standard output (buffered). Errors propagate; a closed pipe (`| head`)
/// among them ends the run quietly with status 0 (see `main`).
pub fn to_stdout(body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    body(&mut w)
        .and_then(|()| w.flush())
        .context("writing to standard output")
}

/// Writes one line to standard output, as [`to_stdout`].
pub fn print_line(line: impl std::fmt::Display) -> Result<()> {
    to_stdout(|w| writeln!(w, "{line}"))
}

/// CPU time of this process's live threads in nanoseconds (Linux
/// `/proc/self/task/*/schedstat`), if known: the measure of a phase on a machine shared with
/// other jobs, which inflate wall-clock time. Threads that ended are not counted (the
/// thread pool's workers live as long as the process).
pub fn process_cpu_ns() -> Option<u64> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    // A thread that ends while this reads is skipped.
    let thread = |t: std::fs::DirEntry| -> Option<u64> {
        let s = std::fs::read_to_string(t.path().join("schedstat")).ok()?;
        s.split_whitespace().next()?.parse().ok()
    };
    Some(tasks.filter_map(|t| thread(t.ok()?)).sum())
}

/// Peak resident memory of this process (Linux `VmHWM`), if known.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Signature codes stored in `path`, or `None` when it holds something else (vectors or
/// documents to sign). A simlsh signature file records its width (and signer); a `.npy` array
/// of `uint64` words records only the words per code, so its width is `bits` when given
/// (checked against the words and the padding bits) and 64 per word otherwise. A `bits` that
/// disagrees with a recorded width is an error, the one rule of every subcommand.
/// `source` names where `bits` comes from in messages (`--bits`, `the index`).
pub fn read_codes(path: &Path, bits: Option<usize>, source: &str) -> Result<Option<Codes>> {
    if simlsh::io::is_stdin(path) {
        // Standard input is read as the format --format names (codes are files).
        return Ok(None);
    }
    let mut magic = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| read_prefix(&mut f, &mut magic))
        .with_context(|| format!("reading {}", path.display()))?;
    if n >= 6 && &magic[..6] == b"\x93NUMPY" {
        let m = match simlsh::io::read_signatures_npy(path, None) {
            Ok(m) => m,
            // Not uint64 words (vectors), or unreadable: the vector reader says which.
            Err(_) => return Ok(None),
        };
        let sigs = match bits {
            Some(b) if b != m.bits() => simlsh::io::read_signatures_npy(path, Some(b))
                .with_context(|| {
                    format!("reading {} as {b}-bit codes ({source})", path.display())
                })?,
            _ => m,
        };
        return Ok(Some(Codes { sigs, signer: None }));
    }
    if n == 8 && &magic == b"SIMLSH\r\n" {
        let f = simlsh::persist::load_signatures(path)
            .with_context(|| format!("reading signatures from {}", path.display()))?;
        if let Some(b) = bits.filter(|&b| b != f.matrix.bits()) {
            bail!(
                "{}: holds {}-bit signatures, but {source} is {b} bits",
                path.display(),
                f.matrix.bits()
            );
        }
        let signer = f.params.get("signer.kind").cloned();
        return Ok(Some(Codes {
            sigs: f.matrix,
            signer,
        }));
    }
    Ok(None)
}

/// Reads up to `buf.len()` bytes (fewer only at the end of the file).
fn read_prefix(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Stored signature codes (memory-mapped) and the signer recorded with them, if any.
pub struct Codes {
    pub sigs: simlsh::SignatureMatrix<simlsh::storage::Buf<u64>>,
    pub signer: Option<String>,
}

/// Whether the listed signer kind holds an explicit matrix and so needs the dimension.
fn needs_dim(k: &simlsh::signers::KindInfo) -> bool {
    k.name
        .parse::<SignerKind>()
        .is_ok_and(|kind| kind.needs_dim())
}

/// The `--signer` help: every kind of the library's table, with its parameters.
pub fn signer_help() -> String {
    let mut h = String::from(
        "The signer: KIND or KIND:key=value,... (parameters left out take their defaults; \
         `hashing` is short for `hashing-trick`).\n\n\
         Default: hashed-gaussian for sparse vectors, text and dense vectors alike (unbiased \
         when a few features dominate a row, where the ±1 columns of hashing-trick \
         over-collide; on the bundled GloVe vectors at 256 bits, recall@10 0.58 against \
         0.55), except fwht for text from 1,024 bits (the widths planned for large corpora, \
         where its rotations cost less than a column per feature). very-sparse on sparse \
         vectors takes nnz from the input's mean row length unless density or nnz is given.\n",
    );
    for k in simlsh::signers::kinds() {
        h.push_str(&format!("\n  {}: {}", k.name, k.summary));
        if needs_dim(k) {
            h.push_str(" [vectors only: needs the dimension]");
        }
        for p in k.params {
            h.push_str(&format!(
                "\n      {}:{}=…: {} (default {})",
                k.name, p.name, p.summary, p.default
            ));
        }
    }
    h
}

/// `--signer`: a kind of the library's table; `hashing` is short for `hashing-trick`.
fn parse_signer(s: &str) -> std::result::Result<SignerKind, String> {
    let s = match s.strip_prefix("hashing") {
        Some(rest) if rest.is_empty() || rest.starts_with(':') => format!("hashing-trick{rest}"),
        _ => s.to_string(),
    };
    s.parse().map_err(|e: simlsh::Error| e.to_string())
}

/// What is signed, as far as the choice of signer goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputShape {
    /// Dense vectors of dimension `dim`.
    Dense { dim: u64 },
    /// Sparse vectors of dimension `dim`, `mean_nnz` nonzeros per row on average.
    Sparse { dim: u64, mean_nnz: f64 },
    /// Documents (hashed features, any dimension).
    Text,
}

impl InputShape {
    /// The input dimension, for the explicit matrices.
    fn dim(self) -> Option<u64> {
        match self {
            InputShape::Dense { dim } | InputShape::Sparse { dim, .. } => Some(dim),
            InputShape::Text => None,
        }
    }

    /// The library's input kind, for the default signer.
    fn kind(self) -> simlsh::signers::InputKind {
        use simlsh::signers::InputKind;
        match self {
            InputShape::Dense { .. } => InputKind::Dense,
            InputShape::Sparse { .. } => InputKind::Sparse,
            InputShape::Text => InputKind::Text,
        }
    }

    /// How the input is called in messages.
    fn name(self) -> &'static str {
        match self {
            InputShape::Dense { .. } => "dense vectors",
            InputShape::Sparse { .. } => "sparse vectors",
            InputShape::Text => "text",
        }
    }
}

/// Signer options shared by the subcommands that sign.
#[derive(Args, Clone, Debug)]
pub struct SignerArgs {
    /// The signer: KIND or KIND:key=value,... (default: hashed-gaussian for sparse vectors,
    /// text and dense vectors alike, fwht for text from 1,024 bits; see --help).
    #[arg(long, value_parser = parse_signer, long_help = signer_help())]
    pub signer: Option<SignerKind>,
}

impl SignerArgs {
    /// The signer kind for `input` at `bits` bits: `--signer`, else the library's default for
    /// its shape and width. With the very
    /// sparse signer on sparse rows and neither `density` nor `nnz` given, `nnz` is the input's
    /// mean row length (so that under 1% of a row's projections are 0, instead of most of
    /// them at the default density `1/√D`).
    pub fn kind(&self, input: InputShape, bits: usize) -> SignerKind {
        match (&self.signer, input) {
            (None, input) => SignerKind::default_for(input.kind(), bits),
            (
                Some(SignerKind::VerySparse {
                    density: None,
                    nnz: None,
                }),
                InputShape::Sparse { mean_nnz, .. },
            ) if mean_nnz > 0.0 => SignerKind::VerySparse {
                density: None,
                nnz: Some(mean_nnz.round().max(1.0) as u64),
            },
            (Some(k), _) => k.clone(),
        }
    }

    /// Builds the signer for `input`, saying (and recording for `--stats`) which one it is
    /// and why: the default for the input's shape, the very sparse density taken from the
    /// input's row length, or a warning when a given density leaves many of a sparse row's
    /// projections at 0.
    pub fn build_for(&self, input: InputShape, bits: usize, ctx: &mut Ctx) -> Result<AnySigner> {
        // `signer_origin` in `--stats`: "default for text", "--signer".
        let kind = self.kind(input, bits);
        let signer = SignerArgs {
            signer: Some(kind.clone()),
        }
        .build(input.dim(), bits, ctx.seed)?;
        let origin = self.origin(input);
        ctx.record("signer", kind.to_string());
        ctx.record("signer_origin", origin);
        if let (SignerKind::VerySparse { density, nnz }, InputShape::Sparse { mean_nnz, .. }) =
            (&kind, input)
        {
            // The density the matrix was drawn with (`info` records the measured one).
            let used = match (density, nnz, input.dim()) {
                (Some(p), _, _) => Some(*p),
                (None, Some(k), Some(d)) => Some(
                    (1.0 / (d as f64).sqrt())
                        .max((simlsh::signers::ZERO_TARGET / *k as f64).min(1.0)),
                ),
                _ => None,
            };
            let row = mean_nnz.round().max(1.0) as u64;
            if let Some(p) = used {
                let zero = simlsh::signers::zero_projection_fraction(row, p);
                ctx.record("very_sparse_zero_projections", zero);
                if density.is_none() && self.signer.as_ref() != Some(&kind) {
                    ctx.say(format!(
                        "very-sparse: nnz={} from the input's mean row length ({mean_nnz:.1} \
                         nonzeros): density {p:.6}, {:.2}% of such a row's projections are 0 \
                         (give very-sparse:nnz=K or :density=P to choose)",
                        nnz.unwrap_or(row),
                        100.0 * zero
                    ));
                } else if zero > 0.01 {
                    ctx.say(format!(
                        "warning: very-sparse at density {p:.6} leaves {:.0}% of the projections \
                         of a row of {row} nonzeros (the input's mean) at 0, bits that collide \
                         for unrelated rows; very-sparse:nnz={row} keeps it under 1%",
                        100.0 * zero
                    ));
                }
            }
        }
        Ok(signer)
    }

    /// Where the signer for `input` comes from: `--signer`, or `default for sparse vectors`
    /// (dense vectors, text).
    pub fn origin(&self, input: InputShape) -> String {
        match &self.signer {
            None => format!("default for {}", input.name()),
            Some(_) => "--signer".to_string(),
        }
    }

    /// Builds the signer for input dimension `dim` (needed by the matrix signers).
    fn build(&self, dim: Option<u64>, bits: usize, seed: u64) -> Result<AnySigner> {
        let kind = self.signer.clone().unwrap_or(SignerKind::default_for(
            simlsh::signers::InputKind::Sparse,
            bits,
        ));
        SignerSpec::new(kind.clone())
            .bits(bits)
            .seed(seed)
            .build_within(dim, memory_available())
            .with_context(|| {
                if dim.is_none() && kind.needs_dim() {
                    format!(
                        "the {} signer needs the input dimension: text input needs a signer without a matrix ({})",
                        kind.name(),
                        simlsh::signers::kinds()
                            .iter()
                            .filter(|k| !needs_dim(k))
                            .map(|k| k.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    format!("building the {kind} signer")
                }
            })
    }
}

/// The memory a matrix may take: what this process may still allocate (the library's
/// [`simlsh::memory::available`]: the system's available memory, the control group's and the
/// `ulimit` limits).
pub fn memory_available() -> u64 {
    simlsh::memory::available()
}

/// Parses a size in bytes: a number with an optional binary suffix `K`, `M`, `G` or `T`
/// (powers of 1024, optionally followed by `B` or `iB`: `512M`, `2G`, `1.5GiB`, `4096`).
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (number, scale) = match body.char_indices().last() {
        Some((i, c @ ('k' | 'm' | 'g' | 't'))) => {
            let power = "kmgt".find(c).expect("a suffix") as i32 + 1;
            (&body[..i], 1024f64.powi(power))
        }
        _ => (body, 1.0),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a size in bytes (e.g. 2G, 512M, 4096)"))?;
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Err(format!(
            "`{s}` is not a size in bytes (e.g. 2G, 512M, 4096)"
        ));
    }
    Ok(bytes as u64)
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
