//! The bad-input campaign: thousands of deterministic bad inputs (truncations, bit flips, lies
//! in headers, huge claimed shapes, zip bombs, NaN and infinities, unsorted and duplicate
//! sparse indices, wrong widths, empty files, invalid UTF-8) fed to every reader and to the
//! index loader. Each case must end in a clean result (accepted, or a typed error that names
//! the file) and must not panic, allocate out of proportion to the file, or hang.
//!
//! How: the test writes every case to a temporary directory, then runs them in a worker
//! process (this test binary again, told so by an environment variable), one after another.
//! In the worker each case runs under `catch_unwind` and a counting global allocator that
//! refuses any allocation that would take the case beyond its bound, `16 × input bytes +
//! 1 MiB` (`64 ×` for documents, whose distinct features are counted), where the input bytes of a compressed archive also count what its members
//! decompress to, up to the decompression limit of the readers
//! ([`Limits`](simlsh::io::Limits)). A refused allocation is a failure whether the reader
//! handles it or aborts; the supervising test notices an abort (the worker dies) or a hang
//! (no result within the time bound), records it against the case and restarts the worker
//! after it. The test fails if any case panicked, over-allocated, aborted or hung, and prints
//! the counts.
//!
//! `SIMLSH_BAD_INPUT_SCALE=N` multiplies the random mutations per seed (the long mode; the
//! default 1 runs in seconds); `SIMLSH_BAD_INPUT_TIMEOUT=S` sets the time bound per case
//! (default 10 s). Inputs of failed cases are kept and their paths printed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use simlsh::io::vecs::VecsKind;
use simlsh::io::{
    IndexBase, InputFormat, OnBadLine, SvmlightOptions, VectorOptions, read_mtx, read_npz_csr,
    read_signatures_npy, read_signatures_npy_from, read_svmlight, read_vectors, read_vectors_from,
};
use simlsh::persist::load_index;

#[path = "bad_input/mutate.rs"]
mod mutate;
mod npyzip;
#[path = "bad_input/seeds.rs"]
mod seeds;

// ------------------------------------------------------------------ the counting allocator

/// Bytes currently allocated.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Highest value of `LIVE` since the last reset.
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// `LIVE` may not exceed this (usize::MAX outside cases).
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The largest request refused since the last reset (0: none).
static REFUSED: AtomicUsize = AtomicUsize::new(0);

struct Counting;

fn take(n: usize) -> bool {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    if now > LIMIT.load(Relaxed) {
        LIVE.fetch_sub(n, Relaxed);
        REFUSED.fetch_max(n, Relaxed);
        return false;
    }
    PEAK.fetch_max(now, Relaxed);
    true
}

// SAFETY: every method forwards to `System` with the caller's layout and pointer; the counters
// are only bookkeeping, and a refused request returns null as an allocator may.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !take(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(l) };
        if p.is_null() {
            LIVE.fetch_sub(l.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !take(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(l) };
        if p.is_null() {
            LIVE.fetch_sub(l.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` was allocated by `System` with layout `l`.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let old = l.size();
        if new > old && !take(new - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: `p` was allocated by `System` with layout `l`; `new` is the caller's size.
        let q = unsafe { System.realloc(p, l, new) };
        if q.is_null() {
            if new > old {
                LIVE.fetch_sub(new - old, Relaxed);
            }
        } else if new < old {
            LIVE.fetch_sub(old - new, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// ------------------------------------------------------------------------------ targets

/// A reader and its options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// `io::read_vectors` of a format, failing on or skipping bad lines.
    Vectors(InputFormat, OnBadLine),
    /// `io::read_npz_csr`.
    NpzCsr,
    /// `io::read_mtx`, failing on bad lines.
    Mtx,
    /// `io::read_svmlight` with an index base and a dimension.
    Svmlight(IndexBase, Option<usize>),
    /// `io::vecs::read_vecs`.
    Vecs(VecsKind),
    /// `io::read_signatures_npy` with a width.
    Signatures(Option<usize>),
    /// `io::read_vectors_from` (a stream: sizes cannot be checked up front) of a format.
    Stream(InputFormat),
    /// `io::read_signatures_npy_from` with a width.
    SignaturesStream(Option<usize>),
    /// `persist::load_index`, then a radius and a k-NN query on what it loaded.
    Index,
    /// `io::documents` of a format, every document signed through a tokenizer: character
    /// 3-grams (`true`) or word 2-grams.
    Documents(InputFormat, bool),
    /// `io::load_signatures`, then the signer its record names, parsed.
    SignatureFile,
    /// `persist::load_index`, then the signer its record names, parsed and compared with itself
    /// and with the record of another signer (never built: records are compared by
    /// parameters).
    Record,
}

impl Target {
    fn code(self) -> String {
        let bad = |b| if b == OnBadLine::Skip { "skip" } else { "fail" };
        match self {
            Target::Vectors(f, b) => format!("vectors:{f}:{}", bad(b)),
            Target::NpzCsr => "npz_csr".into(),
            Target::Mtx => "mtx".into(),
            Target::Svmlight(base, dim) => format!(
                "svmlight:{base:?}:{}",
                dim.map_or("-".to_string(), |d| d.to_string())
            ),
            Target::Vecs(k) => format!("vecs:{k:?}"),
            Target::Signatures(b) => {
                format!(
                    "signatures:{}",
                    b.map_or("-".to_string(), |d| d.to_string())
                )
            }
            Target::Stream(f) => format!("stream:{f}"),
            Target::SignaturesStream(b) => format!(
                "signatures_stream:{}",
                b.map_or("-".to_string(), |d| d.to_string())
            ),
            Target::Index => "index".into(),
            Target::Documents(f, chars) => {
                format!("documents:{f}:{}", if chars { "chars" } else { "words" })
            }
            Target::SignatureFile => "signature_file".into(),
            Target::Record => "record".into(),
        }
    }

    fn parse(s: &str) -> Target {
        let p: Vec<&str> = s.split(':').collect();
        let opt = |x: &str| (x != "-").then(|| x.parse().unwrap());
        match p[0] {
            "vectors" => Target::Vectors(
                p[1].parse().unwrap(),
                if p[2] == "skip" {
                    OnBadLine::Skip
                } else {
                    OnBadLine::Fail
                },
            ),
            "npz_csr" => Target::NpzCsr,
            "mtx" => Target::Mtx,
            "svmlight" => Target::Svmlight(
                match p[1] {
                    "Zero" => IndexBase::Zero,
                    "One" => IndexBase::One,
                    _ => IndexBase::Auto,
                },
                opt(p[2]),
            ),
            "vecs" => Target::Vecs(match p[1] {
                "F32" => VecsKind::F32,
                "I32" => VecsKind::I32,
                _ => VecsKind::U8,
            }),
            "signatures" => Target::Signatures(opt(p[1])),
            "stream" => Target::Stream(p[1].parse().unwrap()),
            "signatures_stream" => Target::SignaturesStream(opt(p[1])),
            "index" => Target::Index,
            "documents" => Target::Documents(p[1].parse().unwrap(), p[2] == "chars"),
            "signature_file" => Target::SignatureFile,
            "record" => Target::Record,
            other => panic!("unknown target {other}"),
        }
    }

    /// Whether the input is a zip archive (its decompressed bytes count in its bound).
    fn archive(self) -> bool {
        matches!(self, Target::NpzCsr | Target::Vectors(InputFormat::Npz, _))
    }

    /// Runs the reader on `path`.
    fn run(self, path: &Path) -> simlsh::Result<()> {
        match self {
            Target::Vectors(format, on_bad) => {
                let opts = VectorOptions {
                    on_bad,
                    ..VectorOptions::default()
                };
                read_vectors(path, format, &opts).map(drop)
            }
            Target::NpzCsr => read_npz_csr(path).map(drop),
            Target::Mtx => read_mtx(path, OnBadLine::Fail).map(drop),
            Target::Svmlight(base, dim) => read_svmlight(
                path,
                &SvmlightOptions {
                    base,
                    dim,
                    on_bad: OnBadLine::Fail,
                },
            )
            .map(drop),
            Target::Vecs(kind) => simlsh::io::vecs::read_vecs(path, kind).map(drop),
            Target::Signatures(bits) => read_signatures_npy(path, bits).map(drop),
            Target::Stream(format) => {
                let file = std::fs::File::open(path).unwrap();
                read_vectors_from(file, path, format, &VectorOptions::default()).map(drop)
            }
            Target::SignaturesStream(bits) => {
                let file = std::fs::File::open(path).unwrap();
                read_signatures_npy_from(file, path, bits).map(drop)
            }
            Target::Index => {
                let idx = load_index(path)?;
                let q = vec![0x5555_5555_5555_5555u64; idx.bits().div_ceil(64)];
                let mut q = q;
                if idx.bits() % 64 != 0 {
                    let w = q.len() - 1;
                    q[w] &= (1u64 << (idx.bits() % 64)) - 1;
                }
                let mut out = Vec::new();
                idx.radius_into(&q, 3, &mut out)?;
                idx.knn_into(&q, 5, &mut out)?;
                Ok(())
            }
            Target::Documents(format, chars) => {
                let (mode, n) = if chars {
                    (simlsh::text::Mode::Chars, 3)
                } else {
                    (simlsh::text::Mode::Words, 2)
                };
                let tokenizer = simlsh::text::Tokenizer::builder()
                    .mode(mode)
                    .ngram(n)
                    .weighting(simlsh::text::Weighting::Tf)
                    .build()?;
                let signer = simlsh::HashingTrick::builder().bits(64).build()?;
                let opts = simlsh::io::TextOptions::default();
                for doc in simlsh::io::documents(path, format, &opts)? {
                    tokenizer.sign(&signer, &doc?.text)?;
                }
                Ok(())
            }
            Target::SignatureFile => {
                let f = simlsh::persist::load_signatures(path)?;
                record(path, simlsh::index::SignerRecord::from_params(&f.params))
            }
            Target::Record => {
                let idx = load_index(path)?;
                record(path, idx.signer().cloned())
            }
        }
    }
}

/// A recorded signer parsed and compared, as a command line does before signing queries;
/// errors name the file, as a command line's context does.
fn record(path: &Path, r: Option<simlsh::index::SignerRecord>) -> simlsh::Result<()> {
    let Some(r) = r else { return Ok(()) };
    let named = |e: simlsh::Error| simlsh::Error::Format {
        path: path.to_path_buf(),
        reason: format!("the recorded signer: {e}"),
    };
    let spec = r.spec().map_err(named)?;
    let other = simlsh::index::SignerRecord::from_spec(&spec.clone().seed(spec.seed ^ 1));
    assert!(r.same_signer(&r) && !r.same_signer(&other));
    assert!(spec.same_signer(&spec));
    let _ = (r.kind(), r.bits(), r.text_options(), r.to_string());
    Ok(())
}

/// Bytes the members of a zip archive decompress to (0 if it does not open).
fn decompressed(bytes: &[u8]) -> u64 {
    let Ok(mut z) = zip::ZipArchive::new(std::io::Cursor::new(bytes)) else {
        return 0;
    };
    let mut total = 0u64;
    for i in 0..z.len() {
        if let Ok(f) = z.by_index(i) {
            total += std::io::copy(&mut f.take(1 << 30), &mut std::io::sink()).unwrap_or(0);
        }
    }
    total
}

/// Decompression limit of the `.npz` readers: a multiple of the archive's size, at least
/// a floor (the library's defaults).
fn decompression_cap(len: u64) -> u64 {
    simlsh::io::Limits::default().decompressed(len)
}

/// The allocation bound of a case: 16 × the input bytes + 1 MiB.
fn bound(target: Target, bytes: &[u8]) -> usize {
    let len = bytes.len() as u64;
    let input = if target.archive() {
        len + decompressed(bytes).min(decompression_cap(len))
    } else {
        len
    };
    // Tokenizing counts the distinct features of each document: up to about 100 bytes per
    // distinct feature (a hash-table slot at a load of at most 1/2, its key, first span and
    // count), and a feature takes at least 2 bytes of input.
    let factor = if matches!(target, Target::Documents(..)) {
        64
    } else {
        16
    };
    (factor * input + (1 << 20)) as usize
}

// ------------------------------------------------------------------------------- worker

#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Accepted,
    Error,
    /// An error whose message does not name the file.
    Unclear(String),
    Panic(String),
    /// A refused allocation request of this many bytes.
    Over(usize),
    /// The worker died.
    Abort(String),
    Hang,
}

static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

fn worker(dir: &Path, from: usize) {
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut m) = LAST_PANIC.lock() {
            *m = info.to_string().replace('\n', " ");
        }
    }));
    let manifest = std::fs::read_to_string(dir.join("manifest.tsv")).unwrap();
    let mut out = std::io::stdout();
    for line in manifest.lines().skip(from) {
        let f: Vec<&str> = line.split('\t').collect();
        let (i, target, bound): (usize, Target, usize) = (
            f[0].parse().unwrap(),
            Target::parse(f[1]),
            f[2].parse().unwrap(),
        );
        let path = dir.join(format!("cases/{i}"));
        writeln!(out, "@@S {i}").unwrap();
        out.flush().unwrap();
        let base = LIVE.load(Relaxed);
        PEAK.store(base, Relaxed);
        REFUSED.store(0, Relaxed);
        LIMIT.store(base + bound, Relaxed);
        let t = Instant::now();
        let r = std::panic::catch_unwind(|| target.run(&path).map_err(|e| e.to_string()));
        LIMIT.store(usize::MAX, Relaxed);
        let micros = t.elapsed().as_micros();
        let peak = PEAK.load(Relaxed).saturating_sub(base);
        let refused = REFUSED.load(Relaxed);
        let outcome = match r {
            Err(_) => Outcome::Panic(LAST_PANIC.lock().unwrap().clone()),
            Ok(_) if refused > 0 => Outcome::Over(refused),
            Ok(Ok(())) => Outcome::Accepted,
            Ok(Err(msg)) if msg.contains(&path.display().to_string()) => Outcome::Error,
            Ok(Err(msg)) => Outcome::Unclear(msg),
        };
        let code = match &outcome {
            Outcome::Accepted => "accepted".to_string(),
            Outcome::Error => "error".to_string(),
            Outcome::Unclear(m) => format!("unclear {m}"),
            Outcome::Panic(m) => format!("panic {m}"),
            Outcome::Over(n) => format!("over {n}"),
            _ => unreachable!(),
        };
        writeln!(out, "@@R {i} {peak} {micros} {}", code.replace('\n', " ")).unwrap();
        out.flush().unwrap();
    }
}

fn parse_result(rest: &str) -> (usize, usize, Outcome) {
    let mut it = rest.splitn(4, ' ');
    let i = it.next().unwrap().parse().unwrap();
    let peak = it.next().unwrap().parse().unwrap();
    let _micros: u64 = it.next().unwrap().parse().unwrap();
    let code = it.next().unwrap_or("");
    let (kind, msg) = code.split_once(' ').unwrap_or((code, ""));
    let o = match kind {
        "accepted" => Outcome::Accepted,
        "error" => Outcome::Error,
        "unclear" => Outcome::Unclear(msg.into()),
        "panic" => Outcome::Panic(msg.into()),
        "over" => Outcome::Over(msg.parse().unwrap()),
        other => panic!("bad worker line {other}"),
    };
    (i, peak, o)
}

// ------------------------------------------------------------------------------ campaign

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Generic garbage for every target: empty, one byte, random bytes, all ones.
fn garbage(targets: &[Target]) -> Vec<mutate::Case> {
    let mut rng = simlsh::rng::Rng::new(77);
    let mut out = Vec::new();
    for &t in targets {
        let random: Vec<u8> = (0..1024).map(|_| rng.next_u64() as u8).collect();
        for (d, b) in [
            ("empty file", vec![]),
            ("one byte", vec![b'1']),
            ("1 KiB of random bytes", random),
            ("64 bytes 0xFF", vec![0xFF; 64]),
            ("64 zero bytes", vec![0; 64]),
        ] {
            out.push(mutate::Case {
                target: t,
                desc: format!("{}: {d}", t.code()),
                bytes: b,
            });
        }
    }
    out
}

/// Every reader: each format through `read_vectors` (from a path and as a stream), and the
/// format's own reader with its options.
#[test]
fn bad_input_readers() {
    campaign("bad_input_readers", |t| {
        !matches!(
            t,
            Target::Index | Target::Documents(..) | Target::SignatureFile | Target::Record
        )
    });
}

/// The index loader, on mutated saved indexes of every kind (lies in parameters, sections and
/// the section table, with the checksum recomputed so that they reach the validation).
#[test]
fn bad_input_index_loader() {
    campaign("bad_input_index_loader", |t| t == Target::Index);
}

/// Documents of every format (plain lines, JSON Lines, CSV, TSV, one long line), each signed
/// through a tokenizer of character 3-grams or word 2-grams, within the same memory bound.
#[test]
fn bad_input_documents() {
    campaign("bad_input_documents", |t| {
        matches!(t, Target::Documents(..))
    });
}

/// Signature files and index files whose records name hostile signers (pools of 2^32, matrices
/// of 2^40 rows, widths and seeds beyond range, old very sparse records): loading, parsing and
/// comparing them ends in a result, within the bound of the file's size (nothing is built).
#[test]
fn bad_input_signer_records() {
    campaign("bad_input_signer_records", |t| {
        matches!(t, Target::SignatureFile | Target::Record)
    });
}

fn campaign(test: &str, keep: impl Fn(Target) -> bool) {
    if let Ok(dir) = std::env::var("SIMLSH_BAD_INPUT_DIR") {
        let from = env_usize("SIMLSH_BAD_INPUT_FROM", 0);
        worker(Path::new(&dir), from);
        return;
    }
    let scale = env_usize("SIMLSH_BAD_INPUT_SCALE", 1);
    let timeout = Duration::from_secs(env_usize("SIMLSH_BAD_INPUT_TIMEOUT", 10) as u64);
    let dir = std::env::temp_dir().join(format!("simlsh-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cases")).unwrap();
    std::fs::create_dir_all(dir.join("seeds")).unwrap();

    let t0 = Instant::now();
    let mut seeds = seeds::all(&dir.join("seeds"));
    seeds.retain_mut(|s| {
        s.targets.retain(|&t| keep(t));
        !s.targets.is_empty()
    });
    let mut cases = mutate::cases(&seeds, scale, &keep);
    let mut targets: Vec<Target> = Vec::new();
    for s in &seeds {
        for &t in &s.targets {
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
    }
    cases.extend(garbage(&targets));
    let mut manifest = String::new();
    for (i, c) in cases.iter().enumerate() {
        std::fs::write(dir.join(format!("cases/{i}")), &c.bytes).unwrap();
        manifest.push_str(&format!(
            "{i}\t{}\t{}\n",
            c.target.code(),
            bound(c.target, &c.bytes)
        ));
    }
    std::fs::write(dir.join("manifest.tsv"), manifest).unwrap();
    let generated = t0.elapsed();

    let n = cases.len();
    let mut results: Vec<Option<(usize, Outcome)>> = vec![None; n];
    let mut next = 0;
    let mut spawns = 0;
    while next < n {
        spawns += 1;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env("SIMLSH_BAD_INPUT_DIR", &dir)
            .env("SIMLSH_BAD_INPUT_FROM", next.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let tail = Arc::clone(&stderr_tail);
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(k) = stderr.read(&mut buf) {
                if k == 0 {
                    break;
                }
                let mut t = tail.lock().unwrap();
                t.push_str(&String::from_utf8_lossy(&buf[..k]));
                if t.len() > 4096 {
                    let cut = t.len() - 2048;
                    let cut = (cut..t.len()).find(|&c| t.is_char_boundary(c)).unwrap();
                    t.replace_range(..cut, "");
                }
            }
        });
        let mut current: Option<usize> = None;
        let started = Instant::now();
        loop {
            match rx.recv_timeout(timeout) {
                Ok(line) => {
                    // The first line follows libtest's `test ... ` without a newline.
                    let line = line.find("@@").map_or("", |k| &line[k..]);
                    if let Some(i) = line.strip_prefix("@@S ") {
                        current = Some(i.parse().unwrap());
                    } else if let Some(rest) = line.strip_prefix("@@R ") {
                        let (i, peak, o) = parse_result(rest);
                        results[i] = Some((peak, o));
                        next = i + 1;
                        current = None;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(i) = current {
                        let _ = child.kill();
                        let _ = child.wait();
                        results[i] = Some((0, Outcome::Hang));
                        next = i + 1;
                        break;
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(120),
                        "the worker does not start"
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = child.wait().unwrap();
                    std::thread::sleep(Duration::from_millis(50));
                    if let Some(i) = current {
                        let tail = stderr_tail.lock().unwrap().clone();
                        let last = tail
                            .lines()
                            .rev()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("")
                            .to_string();
                        // An allocation the counting allocator refused, unhandled.
                        let refused = tail
                            .split("memory allocation of ")
                            .nth(1)
                            .and_then(|t| t.split(' ').next())
                            .and_then(|n| n.parse().ok());
                        results[i] = Some((
                            0,
                            match refused {
                                Some(n) => Outcome::Over(n),
                                None => Outcome::Abort(format!("{status}: {last}")),
                            },
                        ));
                        next = i + 1;
                    } else {
                        assert!(
                            next >= n,
                            "the worker exited ({status}) before case {next}: {}",
                            stderr_tail.lock().unwrap()
                        );
                    }
                    break;
                }
            }
        }
    }

    // Counts, per target and in total.
    #[derive(Default, Clone)]
    struct Counts {
        tried: usize,
        accepted: usize,
        errors: usize,
        unclear: usize,
        panics: usize,
        over: usize,
        aborts: usize,
        hangs: usize,
        peak_ratio: f64,
    }
    let mut per: Vec<(String, Counts)> = Vec::new();
    let mut total = Counts::default();
    let mut failures = Vec::new();
    for (i, (c, r)) in cases.iter().zip(&results).enumerate() {
        let (peak, o) = r.clone().expect("every case has a result");
        let key = c.target.code();
        let k = match per.iter().position(|(t, _)| *t == key) {
            Some(k) => k,
            None => {
                per.push((key, Counts::default()));
                per.len() - 1
            }
        };
        for x in [&mut per[k].1, &mut total] {
            x.tried += 1;
            x.peak_ratio = x
                .peak_ratio
                .max(peak as f64 / (c.bytes.len() as f64 + 4096.0));
            match &o {
                Outcome::Accepted => x.accepted += 1,
                Outcome::Error => x.errors += 1,
                Outcome::Unclear(_) => x.unclear += 1,
                Outcome::Panic(_) => x.panics += 1,
                Outcome::Over(_) => x.over += 1,
                Outcome::Abort(_) => x.aborts += 1,
                Outcome::Hang => x.hangs += 1,
            }
        }
        if !matches!(o, Outcome::Accepted | Outcome::Error) {
            failures.push(format!(
                "case {i} [{}] {} ({} bytes, {}): {o:?}",
                c.target.code(),
                c.desc,
                c.bytes.len(),
                dir.join(format!("cases/{i}")).display()
            ));
        }
    }
    println!(
        "{test}: {n} inputs ({} seeds, scale {scale}) generated in {:.1} s, run in {:.1} s by {spawns} worker process(es)",
        seeds.len(),
        generated.as_secs_f64(),
        (t0.elapsed() - generated).as_secs_f64()
    );
    println!(
        "{:<28} {:>6} {:>8} {:>7} {:>7} {:>6} {:>5} {:>6} {:>5}",
        "target", "tried", "accepted", "errors", "unclear", "panics", "over", "aborts", "hangs"
    );
    for (t, c) in per
        .iter()
        .chain([("total".to_string(), total.clone())].iter())
    {
        println!(
            "{:<28} {:>6} {:>8} {:>7} {:>7} {:>6} {:>5} {:>6} {:>5}",
            t, c.tried, c.accepted, c.errors, c.unclear, c.panics, c.over, c.aborts, c.hangs
        );
    }
    for f in failures.iter().take(60) {
        println!("  {f}");
    }
    if failures.len() > 60 {
        println!("  ... and {} more", failures.len() - 60);
    }
    assert!(
        failures.is_empty(),
        "{} of {n} bad inputs were not handled cleanly (listed above; inputs kept in {})",
        failures.len(),
        dir.display()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
