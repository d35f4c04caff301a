//! Memory against hash cost: every signer on the bundled GloVe vectors (dense, d = 50) and on a
//! sparse workload (W1: D = 2^20, ~197 nonzeros per row), reporting the bytes each signer
//! holds, its signing cost, and the quality of its angle estimates.
//!
//! ```text
//! cargo run --release --example tradeoff -- [--seeds 5] [--rows 20000] [--max-matrix-mib 128]
//! ```
//!
//! Every configuration (data, signer, width f) is repeated with `--seeds` signer seeds. For
//! each seed the signer is built, warmed up by one untimed signing of the data (pages in the
//! matrix, fills the caches), then timed on one thread; the table gives the median time over
//! the seeds and, for each quality measure, the mean over the seeds with its 95% interval
//! (Student t), so that rankings are read from intervals rather than from one seed (as
//! `simlsh bench --seeds` does). Signers whose explicit matrix would exceed
//! `--max-matrix-mib` are not built: they are listed under the table with the memory they
//! would need.
//!
//! Quality, over pairs of rows: the mean absolute error of the estimated cosine cos(π·h/f)
//! against the exact cosine, and the RMSE of h/f against θ/π divided by the ideal RMSE
//! sqrt(mean(p(1 − p)/f)) of independent hyperplanes (1.0 is ideal).
//!
//! Memory of the very sparse signer: `4·(D + 1) + 4·p·D·f` bytes (a `u32` offset per feature
//! and a `u32` per nonzero entry, see
//! [`Distribution::VerySparse`](simlsh::signers::Distribution::VerySparse)); the example
//! checks the held bytes against it.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use ndarray::Array2;
use simlsh::io::vecs::{VecsKind, read_vecs};
use simlsh::rng::Rng;
use simlsh::signers::{AnySigner, SignerExt, SignerSpec};
use simlsh::{SignatureMatrix, Signer};
use simlsh_workloads::stats::{Interval, median};
use simlsh_workloads::{W1, quality_check, w1};

/// Command-line settings.
struct Args {
    seeds: u64,
    rows: usize,
    max_matrix_mib: u64,
}

fn args() -> Result<Args> {
    let mut a = Args {
        seeds: 5,
        rows: 20_000,
        max_matrix_mib: 128,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let n: u64 = value
            .parse()
            .with_context(|| format!("{flag} {value}: not a whole number"))?;
        match flag.as_str() {
            "--seeds" => a.seeds = n,
            "--rows" => a.rows = n as usize,
            "--max-matrix-mib" => a.max_matrix_mib = n,
            _ => bail!("unknown option {flag} (--seeds, --rows, --max-matrix-mib)"),
        }
    }
    if a.seeds == 0 || a.rows < 2 {
        bail!("--seeds must be at least 1 and --rows at least 2");
    }
    Ok(a)
}

/// The data sets: dense GloVe rows or sparse W1 rows, and the row pairs with exact cosines.
enum Data {
    Dense(Array2<f32>),
    Sparse(sprs::CsMatI<f32, u32, usize>),
}

impl Data {
    fn sign(&self, s: &dyn Signer) -> Result<SignatureMatrix> {
        Ok(match self {
            Data::Dense(x) => s.sign_dense(x)?,
            Data::Sparse(m) => s.sign_csr(m.view())?,
        })
    }

    fn rows(&self) -> usize {
        match self {
            Data::Dense(x) => x.nrows(),
            Data::Sparse(m) => m.rows(),
        }
    }

    fn nonzeros(&self) -> usize {
        match self {
            Data::Dense(x) => x.len(),
            Data::Sparse(m) => m.nnz(),
        }
    }
}

struct Workload {
    name: &'static str,
    dim: u64,
    data: Data,
    /// Row pairs `(i, j, exact cosine)`.
    pairs: Vec<(usize, usize, f64)>,
    /// Specs for this data only (the very sparse signer sized for the rows' length).
    extra: &'static [&'static str],
}

/// The signer kinds of every run, as specs.
const SPECS: [&str; 7] = [
    "gaussian",
    "super-bit",
    "rademacher",
    "very-sparse",
    "pooled",
    "hashing-trick",
    "hashed-gaussian",
];

/// Bytes of the explicit matrix `spec` would build (0 for the signers without one, and for
/// the very sparse one, which is small), known before building it.
fn dense_matrix_bytes(spec: &SignerSpec, dim: u64) -> u64 {
    let cells = dim.saturating_mul(spec.bits as u64);
    match spec.kind.name() {
        "gaussian" | "super-bit" => cells.saturating_mul(4),
        "rademacher" => dim.saturating_mul(8 * spec.bits.div_ceil(64) as u64),
        _ => 0,
    }
}

/// One configuration, measured over the seeds.
struct Row {
    data: &'static str,
    signer: String,
    bits: usize,
    bytes: usize,
    /// Median signing time over the seeds, in seconds (one thread, after a warm-up).
    secs: f64,
    rows: usize,
    nonzeros: usize,
    mae_cos: Interval,
    rmse_ratio: Interval,
}

/// A configuration not built, and why.
struct Skipped {
    data: &'static str,
    signer: String,
    bits: usize,
    need: u64,
}

/// Signs `w` with `spec` under `seeds` seeds: build, one untimed warm-up signing, one timed
/// signing, quality of the estimates.
fn measure(w: &Workload, spec: &SignerSpec, seeds: u64) -> Result<Row> {
    let (mut secs, mut mae, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    let mut last: Option<AnySigner> = None;
    for s in 0..seeds {
        let signer = spec.clone().seed(1 + s).build(Some(w.dim))?;
        w.data.sign(&signer)?;
        let t = Instant::now();
        let sigs = w.data.sign(&signer)?;
        secs.push(t.elapsed().as_secs_f64());
        let (cos, h): (Vec<f64>, Vec<u32>) = w
            .pairs
            .iter()
            .map(|&(i, j, c)| (c, sigs.distance(i, j)))
            .unzip();
        let f = spec.bits as u64;
        mae.push(
            h.iter()
                .zip(&cos)
                .map(|(&h, c)| (simlsh::estimate::cosine(h as u64, f) - c).abs())
                .sum::<f64>()
                / cos.len() as f64,
        );
        let q = quality_check(&cos, &h, spec.bits)?;
        ratio.push(q.rmse / q.ideal_rmse);
        last = Some(signer);
    }
    let info = last.expect("at least one seed").info();
    let signer = match info.params.iter().find(|p| p.0 == "density") {
        Some((_, d)) => format!("{} (density {d})", info.kind),
        None => info.kind.to_string(),
    };
    if info.kind == "very-sparse" {
        check_very_sparse_memory(w.dim, spec.bits, &info)?;
    }
    Ok(Row {
        data: w.name,
        signer,
        bits: spec.bits,
        bytes: info.bytes,
        secs: median(&secs),
        rows: w.data.rows(),
        nonzeros: w.data.nonzeros(),
        mae_cos: Interval::of(&mae),
        rmse_ratio: Interval::of(&ratio),
    })
}

/// The documented memory of the very sparse signer, `4·(D + 1) + 4·nnz` with `nnz` the
/// matrix's entries (expected `p·D·f`), against the bytes it reports.
fn check_very_sparse_memory(dim: u64, bits: usize, info: &simlsh::SignerInfo) -> Result<()> {
    let param = |k: &str| -> Result<f64> {
        let v = info
            .params
            .iter()
            .find(|p| p.0 == k)
            .context(k.to_string())?;
        Ok(v.1.parse()?)
    };
    let (d, f) = (dim as f64, bits as f64);
    let entries = (param("density")? * d * f).round();
    let exact = 4.0 * (d + 1.0) + 4.0 * entries;
    if (exact - info.bytes as f64).abs() > 4.0 * d * f * 1e-6 + 8.0 {
        bail!(
            "very sparse D={dim} f={bits}: holds {} B, formula {exact}",
            info.bytes
        );
    }
    let p = param("density_param")?;
    let expected = 4.0 * (d + 1.0) + 4.0 * p * d * f;
    println!(
        "very sparse D={dim} f={bits} p={p:.5}: holds {}, formula 4·(D+1) + 4·p·D·f = {} (the old 4·f·√D: {}, {:.1}× too low)",
        human(info.bytes as f64),
        human(expected),
        human(4.0 * f * d.sqrt()),
        info.bytes as f64 / (4.0 * f * d.sqrt()),
    );
    Ok(())
}

fn dense_cosine(x: &Array2<f32>, i: usize, j: usize) -> f64 {
    let (a, b) = (x.row(i), x.row(j));
    let dot: f64 = a
        .iter()
        .zip(b.iter())
        .map(|(p, q)| *p as f64 * *q as f64)
        .sum();
    let na: f64 = a.iter().map(|p| (*p as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|p| (*p as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn workloads(rows: usize) -> Result<Vec<Workload>> {
    let glove = read_vecs(
        std::path::Path::new("datasets/glove-6B-50d-10k/vectors.fvecs"),
        VecsKind::F32,
    )?;
    let mut rng = Rng::new(5);
    let n = glove.nrows() as u64;
    let pairs: Vec<(usize, usize, f64)> = (0..20_000)
        .map(|_| (rng.below(n) as usize, rng.below(n) as usize))
        .filter(|p| p.0 != p.1)
        .map(|(i, j)| (i, j, dense_cosine(&glove, i, j)))
        .collect();
    let glove = Workload {
        name: "GloVe 10k × 50 (dense)",
        dim: glove.ncols() as u64,
        data: Data::Dense(glove),
        pairs,
        extra: &[],
    };
    let sparse = w1(rows);
    let pairs = sparse
        .pairs_cosine()
        .iter()
        .enumerate()
        .map(|(k, &c)| (2 * k, 2 * k + 1, c))
        .collect();
    let w1 = Workload {
        name: "W1 × 2^20 (sparse, ~197 nnz/row)",
        dim: W1::DIM as u64,
        data: Data::Sparse(sparse.to_csr()?),
        pairs,
        extra: &["very-sparse:nnz=197"],
    };
    Ok(vec![glove, w1])
}

fn main() -> Result<()> {
    let a = args()?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for w in workloads(a.rows)? {
        for bits in [64, 256] {
            for text in SPECS.iter().chain(w.extra) {
                let spec = text.parse::<SignerSpec>()?.bits(bits);
                let need = dense_matrix_bytes(&spec, w.dim);
                if need > a.max_matrix_mib << 20 {
                    skipped.push(Skipped {
                        data: w.name,
                        signer: text.to_string(),
                        bits,
                        need,
                    });
                    continue;
                }
                rows.push(pool.install(|| measure(&w, &spec, a.seeds))?);
            }
        }
    }
    println!(
        "\n| data | signer | f | bytes held | ns per input value (median of {s} seeds, 1 thread) | rows/s | mean abs cosine error (mean ± 95% CI over {s} seeds) | rmse / ideal (mean ± 95% CI) |",
        s = a.seeds
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {:.1} | {:.0} | {:.4} ± {:.4} | {:.2} ± {:.2} |",
            r.data,
            r.signer,
            r.bits,
            human(r.bytes as f64),
            r.secs * 1e9 / r.nonzeros as f64,
            r.rows as f64 / r.secs,
            r.mae_cos.mean,
            r.mae_cos.half,
            r.rmse_ratio.mean,
            r.rmse_ratio.half,
        );
    }
    if !skipped.is_empty() {
        println!(
            "\nSkipped for memory (explicit matrix over --max-matrix-mib {}):",
            a.max_matrix_mib
        );
        for s in &skipped {
            println!(
                "- {} f={} on {}: would hold {}",
                s.signer,
                s.bits,
                s.data,
                human(s.need as f64)
            );
        }
    }
    println!(
        "\nVery sparse projections at the default density 1/√D see almost none of a sparse row's features (rmse/ideal ≫ 1): use them for dense data, or give the row length (nnz)."
    );
    Ok(())
}

fn human(b: f64) -> String {
    match b {
        0.0 => "0".into(),
        b if b < 1024.0 => format!("{b:.0} B"),
        b if b < 1048576.0 => format!("{:.1} KiB", b / 1024.0),
        b if b < 1073741824.0 => format!("{:.1} MiB", b / 1048576.0),
        b => format!("{:.2} GiB", b / 1073741824.0),
    }
}
