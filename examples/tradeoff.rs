//! Memory against hash cost: every signer on the bundled GloVe vectors (dense, d = 50) and on a
//! sparse workload (W1: D = 2^20, ~197 nonzeros per row), reporting the bytes each signer
//! holds, its signing throughput, and the quality of its angle estimates.
//!
//! `cargo run --release --example tradeoff`
//!
//! Quality: over pairs of rows, the mean absolute error of the estimated cosine cos(π·h/f)
//! against the exact cosine, and the RMSE of h/f against θ/π divided by the ideal RMSE
//! sqrt(mean(p(1 − p)/f)) of independent hyperplanes (1.0 is ideal).

use std::time::Instant;

use anyhow::Result;
use ndarray::Array2;
use simlsh::io::vecs::{VecsKind, read_vecs};
use simlsh::rng::Rng;
use simlsh::signers::{SignerExt, SignerSpec};
use simlsh::{SignatureMatrix, Signer};
use simlsh_workloads::{W1, quality_check, w1};

/// Every signer kind as a trait object, built from its spec. `extra` adds specs for this data
/// (the very sparse signer sized for the rows' length).
fn signers(dim: u64, bits: usize, extra: &[&str]) -> Result<Vec<Box<dyn Signer>>> {
    let mut specs = vec![
        "rademacher",
        "very-sparse",
        "pooled",
        "hashing-trick",
        "hashed-gaussian",
    ];
    // A dense D × f Gaussian matrix of 2^20 rows is 1 GiB at f = 256: skip it there.
    if dim * bits as u64 <= 1 << 26 {
        specs.splice(0..0, ["gaussian", "super-bit"]);
    }
    specs.extend(extra);
    specs
        .into_iter()
        .map(|s| {
            let signer = s
                .parse::<SignerSpec>()?
                .bits(bits)
                .seed(1)
                .build(Some(dim))?;
            Ok(Box::new(signer) as Box<dyn Signer>)
        })
        .collect()
}

struct Row {
    data: &'static str,
    name: String,
    bits: usize,
    bytes: usize,
    rows_per_s: f64,
    mae_cos: f64,
    rmse_ratio: f64,
}

fn report(
    data: &'static str,
    s: &dyn Signer,
    sigs: &SignatureMatrix,
    secs: f64,
    pairs: &[(usize, usize, f64)],
) -> Result<Row> {
    let cos: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    let h: Vec<u32> = pairs.iter().map(|&(i, j, _)| sigs.distance(i, j)).collect();
    let f = sigs.bits() as u64;
    let mae = h
        .iter()
        .zip(&cos)
        .map(|(&h, c)| (simlsh::estimate::cosine(h as u64, f) - c).abs())
        .sum::<f64>()
        / cos.len() as f64;
    let q = quality_check(&cos, &h, sigs.bits())?;
    let info = s.info();
    let name = match info.params.iter().find(|p| p.0 == "density") {
        Some((_, d)) => format!("{} (density {d})", info.kind),
        None => info.kind.to_string(),
    };
    Ok(Row {
        data,
        name,
        bits: sigs.bits(),
        bytes: info.bytes,
        rows_per_s: sigs.len() as f64 / secs,
        mae_cos: mae,
        rmse_ratio: q.rmse / q.ideal_rmse,
    })
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

fn main() -> Result<()> {
    let mut rows = Vec::new();
    let glove = read_vecs(
        std::path::Path::new("datasets/glove-6B-50d-10k/vectors.fvecs"),
        VecsKind::F32,
    )?;
    let mut rng = Rng::new(5);
    let pairs: Vec<(usize, usize, f64)> = (0..20_000)
        .map(|_| {
            let (i, j) = (
                rng.below(glove.nrows() as u64) as usize,
                rng.below(glove.nrows() as u64) as usize,
            );
            (i, j, dense_cosine(&glove, i, j))
        })
        .filter(|p| p.0 != p.1)
        .collect();
    for bits in [64, 256] {
        for s in signers(glove.ncols() as u64, bits, &[])? {
            let t = Instant::now();
            let sigs = s.sign_dense(&glove)?;
            rows.push(report(
                "GloVe 10k × 50 (dense)",
                s.as_ref(),
                &sigs,
                t.elapsed().as_secs_f64(),
                &pairs,
            )?);
        }
    }
    let sparse = w1(20_000);
    let csr = sparse.to_csr()?;
    let cos = sparse.pairs_cosine();
    let pairs: Vec<(usize, usize, f64)> = cos
        .iter()
        .enumerate()
        .map(|(k, &c)| (2 * k, 2 * k + 1, c))
        .collect();
    for bits in [64, 256] {
        for s in signers(W1::DIM as u64, bits, &["very-sparse:nnz=197"])? {
            let t = Instant::now();
            let sigs = s.sign_csr(csr.view())?;
            rows.push(report(
                "W1 20k × 2^20 (sparse)",
                s.as_ref(),
                &sigs,
                t.elapsed().as_secs_f64(),
                &pairs,
            )?);
        }
    }
    println!("| data | signer | f | bytes held | rows/s | mean abs cosine error | rmse / ideal |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.4} | {:.2} |",
            r.data,
            r.name,
            r.bits,
            human(r.bytes),
            r.rows_per_s,
            r.mae_cos,
            r.rmse_ratio
        );
    }
    println!(
        "\nVery sparse projections at the default density 1/√D see almost none of a sparse row's features (rmse/ideal ≫ 1): use them for dense data, or give the row length (nnz)."
    );
    Ok(())
}

fn human(b: usize) -> String {
    match b {
        0 => "0".into(),
        b if b < 1 << 10 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KiB", b as f64 / 1024.0),
        b if b < 1 << 30 => format!("{:.1} MiB", b as f64 / 1048576.0),
        b => format!("{:.2} GiB", b as f64 / 1073741824.0),
    }
}
