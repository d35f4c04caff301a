//! The simlsh side of the side-by-side comparison (`benches/compare/run.sh`): runs one job on
//! the raw workload files that the peers read too, times the operation alone, writes the
//! answers for `compare.py` to check, and prints one JSON line.
//!
//! `cargo run --release --example compare_worker -- WORKLOAD SYSTEM --data DIR --out DIR
//!  [--f BITS] [--threads T] [--reps R] [--sub N]`
//!
//! | workload | systems | answer written to `--out` |
//! |---|---|---|
//! | w1 (sparse signing) | hashing-trick, very-sparse | `codes.u8`: the first 2,000 signatures |
//! | w2 (dense signing) | gaussian, super-bit | `codes.u8` |
//! | w3 (radius 3) | manku, mih, linear | `lims.i64`, `ids.i64` (CSR of hits per query) |
//! | w4 (self-join, radius 3) | join | `pairs.i64` (i, j) |
//! | w5 (10-NN, 256 bits) | linear, mih | `ids.i64` (queries × 10) |
//!
//! Rules shared with `peers.py`: data loading and index builds are outside the timer (the
//! build is reported as `build_s`); the operation runs `--reps` times after one warm-up when
//! `--reps` > 1, and the median is reported; `--sub N` runs on the first N rows or queries.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use simlsh::index::{HammingIndex, Hit, LinearScan, MultiIndex, PermutedTables};
use simlsh::join::self_join;
use simlsh::signers::{AnySigner, Distribution, HashingTrick, HyperplaneSigner};
use simlsh::{SignatureMatrix, Signer};

/// Rows whose signatures are written for the quality check (pairs 2k, 2k+1).
const QUALITY_ROWS: usize = 2 * simlsh_workloads::QUALITY_PAIRS;

struct Args {
    workload: String,
    system: String,
    data: PathBuf,
    out: PathBuf,
    f: usize,
    threads: usize,
    reps: usize,
    sub: Option<usize>,
}

fn parse_args() -> Result<Args> {
    let mut it = std::env::args().skip(1);
    let usage = "usage: compare_worker WORKLOAD SYSTEM --data DIR --out DIR [--f BITS] \
                 [--threads T] [--reps R] [--sub N]";
    let workload = it.next().ok_or_else(|| anyhow!(usage))?.to_lowercase();
    let system = it.next().ok_or_else(|| anyhow!(usage))?;
    let mut a = Args {
        workload,
        system,
        data: PathBuf::new(),
        out: PathBuf::new(),
        f: 64,
        threads: 1,
        reps: 3,
        sub: None,
    };
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| anyhow!("{flag} needs a value; {usage}"))?;
        let num = || -> Result<usize> { v.parse().with_context(|| format!("{flag} {v}")) };
        match flag.as_str() {
            "--data" => a.data = PathBuf::from(&v),
            "--out" => a.out = PathBuf::from(&v),
            "--f" => a.f = num()?,
            "--threads" => a.threads = num()?,
            "--reps" => a.reps = num()?,
            "--sub" => a.sub = Some(num()?),
            _ => bail!("unknown option {flag}; {usage}"),
        }
    }
    if a.data.as_os_str().is_empty() || a.out.as_os_str().is_empty() {
        bail!(usage);
    }
    Ok(a)
}

/// Reads a raw little-endian file of `N`-byte values, in blocks (no second copy of the file).
fn read_raw<const N: usize, T>(dir: &Path, name: &str, conv: fn([u8; N]) -> T) -> Result<Vec<T>> {
    use std::io::Read;
    let path = dir.join(name);
    let what = || format!("reading {}", path.display());
    let mut file = std::fs::File::open(&path).with_context(what)?;
    let len = file.metadata().with_context(what)?.len() as usize;
    if !len.is_multiple_of(N) {
        bail!("{}: {len} bytes is not a multiple of {N}", path.display());
    }
    let mut out = Vec::with_capacity(len / N);
    let mut block = vec![0u8; N << 16];
    while out.len() < len / N {
        let want = ((len / N - out.len()) * N).min(block.len());
        file.read_exact(&mut block[..want]).with_context(what)?;
        out.extend(
            block[..want]
                .chunks_exact(N)
                .map(|c| conv(c.try_into().expect("chunks of N bytes"))),
        );
    }
    Ok(out)
}

fn u64s(dir: &Path, name: &str) -> Result<Vec<u64>> {
    read_raw(dir, name, u64::from_le_bytes)
}

fn write_i64(dir: &Path, name: &str, v: impl IntoIterator<Item = i64>) -> Result<()> {
    let bytes: Vec<u8> = v.into_iter().flat_map(i64::to_le_bytes).collect();
    let path = dir.join(name);
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// The first rows' signatures as bytes (word-major, little-endian), for the quality check.
fn write_codes(dir: &Path, sigs: &SignatureMatrix) -> Result<()> {
    let rows = sigs.len().min(QUALITY_ROWS);
    let bytes: Vec<u8> = sigs.as_slice()[..rows * sigs.words_per_row()]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let path = dir.join("codes.u8");
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Peak resident memory so far (`VmHWM`), in KiB.
fn vmhwm_kb() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Median wall time of `reps` runs after one warm-up (when `reps` > 1), and the last result.
fn timed<R>(reps: usize, mut op: impl FnMut() -> Result<R>) -> Result<(f64, Vec<f64>, R)> {
    if reps > 1 {
        op()?;
    }
    let mut times = Vec::with_capacity(reps.max(1));
    let mut last = None;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        last = Some(op()?);
        times.push(t.elapsed().as_secs_f64());
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    Ok((
        sorted[sorted.len() / 2],
        times,
        last.expect("at least one run"),
    ))
}

fn prefix(n: usize, sub: Option<usize>) -> usize {
    sub.map_or(n, |s| s.min(n))
}

/// Hits of a batch as CSR arrays (`lims`, `ids`).
fn write_hits(dir: &Path, res: &[Vec<Hit>]) -> Result<()> {
    let mut lims = vec![0i64];
    for r in res {
        lims.push(lims.last().copied().unwrap_or(0) + r.len() as i64);
    }
    write_i64(dir, "lims.i64", lims)?;
    write_i64(
        dir,
        "ids.i64",
        res.iter().flatten().map(|h| i64::from(h.id)),
    )
}

fn w1(a: &Args) -> Result<Value> {
    let indptr: Vec<i64> = read_raw(&a.data, "w1.indptr.i64", i64::from_le_bytes)?;
    let mut indices: Vec<u32> = read_raw(&a.data, "w1.indices.u32", u32::from_le_bytes)?;
    let mut data: Vec<f32> = read_raw(&a.data, "w1.data.f32", f32::from_le_bytes)?;
    let n_full = indptr.len().saturating_sub(1);
    let n = prefix(n_full, a.sub);
    let nnz = usize::try_from(indptr[n]).context("w1.indptr.i64")?;
    let indptr: Vec<usize> = indptr[..=n].iter().map(|&p| p as usize).collect();
    indices.truncate(nnz);
    data.truncate(nnz);
    let csr = sprs::CsMatI::<f32, u32, usize>::try_new(
        (n, simlsh_workloads::W1::DIM),
        indptr,
        indices,
        data,
    )
    .map_err(|e| anyhow!("w1 files are not a valid CSR matrix: {}", e.3))?;
    let hwm = vmhwm_kb();
    let (signer, notes): (AnySigner, &str) = match a.system.as_str() {
        "hashing-trick" => (
            AnySigner::HashingTrick(HashingTrick::builder().bits(a.f).build()?),
            "HashingTrick (Manku et al. 2007, seeded XXH3, weighted, no matrix).sign_csr",
        ),
        "very-sparse" => (
            AnySigner::Hyperplane(
                HyperplaneSigner::builder()
                    .dim(simlsh_workloads::W1::DIM as u64)
                    .bits(a.f)
                    .distribution(Distribution::VerySparse { density: None })
                    .build()?,
            ),
            "HyperplaneSigner very sparse ±1 (density 1/sqrt(D)).sign_csr; matrix build not timed",
        ),
        s => bail!("unknown w1 system {s}"),
    };
    let (seconds, times, sigs) = timed(a.reps, || Ok(signer.sign_csr(csr.view())?))?;
    write_codes(&a.out, &sigs)?;
    Ok(
        json!({"n": n, "n_full": n_full, "nnz": nnz, "seconds": seconds, "times": times,
              "rss_hwm_before_kb": hwm, "signer_bytes": signer.info().bytes, "notes": notes}),
    )
}

fn w2(a: &Args) -> Result<Value> {
    let mut x: Vec<f32> = read_raw(&a.data, "w2.x.f32", f32::from_le_bytes)?;
    let d = simlsh_workloads::W2_DIM;
    let n_full = x.len() / d;
    let n = prefix(n_full, a.sub);
    x.truncate(n * d);
    let x = ndarray::Array2::from_shape_vec((n, d), x)?;
    let distribution = match a.system.as_str() {
        "gaussian" => Distribution::Gaussian,
        "super-bit" => Distribution::SuperBit { depth: None },
        s => bail!("unknown w2 system {s}"),
    };
    let signer = HyperplaneSigner::builder()
        .dim(d as u64)
        .bits(a.f)
        .distribution(distribution)
        .build()?;
    let hwm = vmhwm_kb();
    let (seconds, times, sigs) = timed(a.reps, || Ok(signer.sign_dense(&x)?))?;
    write_codes(&a.out, &sigs)?;
    Ok(
        json!({"n": n, "n_full": n_full, "seconds": seconds, "times": times,
              "rss_hwm_before_kb": hwm, "signer_bytes": signer.info().bytes,
              "notes": format!("HyperplaneSigner {} d x f f32 matrix, sign_dense (GEMM fused with the sign)",
                               a.system)}),
    )
}

/// Builds the index named by `system` over 64- or 256-bit codes, timed.
fn build_index(
    system: &str,
    sigs: &SignatureMatrix,
    radius: u32,
) -> Result<(Box<dyn HammingIndex>, f64, String)> {
    let t = Instant::now();
    let (idx, notes): (Box<dyn HammingIndex>, String) = match system {
        "manku" => {
            let idx = PermutedTables::builder()
                .radius(radius)
                .blocks(4)
                .build(sigs)?;
            let notes = format!(
                "PermutedTables (Manku et al. 2007), {} tables, radius_batch",
                idx.num_tables()
            );
            (Box::new(idx), notes)
        }
        "mih" => (
            Box::new(MultiIndex::build(sigs)?),
            "MultiIndex (multi-index hashing), batch".into(),
        ),
        "linear" => (
            Box::new(LinearScan::build(sigs)?),
            "LinearScan (AVX2/POPCNT kernels), batch".into(),
        ),
        s => bail!("unknown index {s}"),
    };
    Ok((idx, t.elapsed().as_secs_f64(), notes))
}

fn w3(a: &Args) -> Result<Value> {
    let index = u64s(&a.data, "w3.index.u64")?;
    let queries = u64s(&a.data, "w3.queries.u64")?;
    let nq = prefix(queries.len(), a.sub);
    let sigs = SignatureMatrix::from_parts(64, index)?;
    let radius = simlsh_workloads::W3::RADIUS;
    let (idx, build_s, notes) = build_index(&a.system, &sigs, radius)?;
    let hwm = vmhwm_kb();
    let (seconds, times, res) = timed(a.reps, || Ok(idx.radius_batch(&queries[..nq], radius)?))?;
    write_hits(&a.out, &res)?;
    Ok(
        json!({"n": nq, "n_full": queries.len(), "seconds": seconds, "times": times, "build_s": build_s,
              "index_bytes": idx.bytes(), "rss_hwm_before_kb": hwm, "notes": notes}),
    )
}

fn w4(a: &Args) -> Result<Value> {
    let codes = u64s(&a.data, "w4.codes.u64")?;
    let n = codes.len();
    let sigs = SignatureMatrix::from_parts(64, codes)?;
    let hwm = vmhwm_kb();
    let (seconds, times, pairs) = timed(a.reps, || {
        Ok(self_join(&sigs, simlsh_workloads::W4::RADIUS)?)
    })?;
    write_i64(
        &a.out,
        "pairs.i64",
        pairs.iter().flat_map(|p| [i64::from(p.i), i64::from(p.j)]),
    )?;
    Ok(
        json!({"n": n, "n_full": n, "seconds": seconds, "times": times, "rss_hwm_before_kb": hwm,
              "notes": "join::self_join (planned permuted tables; index build inside the timer)"}),
    )
}

fn w5(a: &Args) -> Result<Value> {
    let w5 = simlsh_workloads::W5::BITS;
    let index = u64s(&a.data, "w5.index.u64")?;
    let queries = u64s(&a.data, "w5.queries.u64")?;
    let words = w5.div_ceil(64);
    let nq = prefix(queries.len() / words, a.sub);
    let sigs = SignatureMatrix::from_parts(w5, index)?;
    let (idx, build_s, notes) = build_index(&a.system, &sigs, 0)?;
    let hwm = vmhwm_kb();
    let k = simlsh_workloads::W5::K;
    let (seconds, times, res) = timed(a.reps, || Ok(idx.knn_batch(&queries[..nq * words], k)?))?;
    write_i64(
        &a.out,
        "ids.i64",
        res.iter().flat_map(|r| r.iter().map(|h| i64::from(h.id))),
    )?;
    Ok(
        json!({"n": nq, "n_full": queries.len() / words, "seconds": seconds, "times": times,
              "build_s": build_s, "index_bytes": idx.bytes(), "rss_hwm_before_kb": hwm,
              "notes": format!("{notes}, knn_batch(k = 10)")}),
    )
}

fn main() -> Result<()> {
    let a = parse_args()?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.max(1))
        .build_global()
        .context("starting the thread pool")?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut rec = match a.workload.as_str() {
        "w1" => w1(&a)?,
        "w2" => w2(&a)?,
        "w3" => w3(&a)?,
        "w4" => w4(&a)?,
        "w5" => w5(&a)?,
        w => bail!("unknown workload {w}"),
    };
    rec["kernels"] = json!(simlsh::hamming::kernel_name());
    rec["rss_hwm_end_kb"] = json!(vmhwm_kb());
    println!("{rec}");
    Ok(())
}
