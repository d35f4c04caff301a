//! `simlsh eval`: how well a signer's signatures estimate cosines and find neighbours, on
//! dense vectors.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Parser;
use ndarray::Array2;
use plotters::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use simlsh::estimate;
use simlsh::index::{HammingIndex, LinearScan};
use simlsh::io::input::{VectorOptions, Vectors, read_vectors};

use crate::common::{Ctx, SignerArgs, to_stdout};
use crate::sign::format_of;

const EXAMPLE: &str = "Examples:
  simlsh eval datasets/glove-6B-50d-10k/vectors.fvecs --signer gaussian --bits 256 --pairs 20000 --plot eval.svg
  simlsh eval vectors.npy --signer super-bit --k 10 --queries 500";

/// Evaluates the chosen signer on dense vectors: the mean absolute error of the estimated
/// cosine against the exact cosine on random pairs (overall and by angle), and recall@k of
/// the k-NN on signatures against the exact cosine top-k of the first --queries points
/// (brute force over the whole input, each point's own row excluded). Zero vectors, which have
/// no direction, are left out of both and counted.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// Dense input vectors (npy, fvecs, ivecs, bvecs, dense mtx).
    input: PathBuf,
    /// Input format (default: from the extension).
    #[arg(long)]
    format: Option<simlsh::io::InputFormat>,
    /// Random pairs sampled (with --seed) for the cosine error.
    #[arg(long, default_value_t = 10_000)]
    pairs: usize,
    /// Neighbours for recall@k.
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// Queries for recall@k: the first this many points.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Write an SVG plot of estimated against exact cosine.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    signer: SignerArgs,
}

/// Exact cosine of rows `i` and `j` (0 when either is zero), in f64.
pub fn cosine(x: &Array2<f32>, i: usize, j: usize) -> f64 {
    estimate::exact_cosine(x.row(i), x.row(j))
}

/// Upper edges (degrees) of the angle buckets; the last bucket is everything above 90°.
const BUCKETS: [f64; 6] = [15.0, 30.0, 45.0, 60.0, 75.0, 90.0];

fn bucket_name(b: usize) -> String {
    if b < BUCKETS.len() {
        let lo = if b == 0 { 0.0 } else { BUCKETS[b - 1] };
        format!("{lo:.0}-{:.0}°", BUCKETS[b])
    } else {
        ">90°".to_string()
    }
}

/// Pairs sampled and compared per parallel step: the pairs are never all held (with
/// `--plot`, only their two cosines are).
const PAIR_CHUNK: usize = 1 << 16;

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    if a.k == 0 {
        bail!("--k must be at least 1");
    }
    if a.pairs == 0 {
        bail!("--pairs must be at least 1");
    }
    if a.queries == 0 {
        bail!("--queries must be at least 1");
    }
    // An output never replaces an input (`--plot X` with X the input).
    crate::common::check_distinct(
        &[&a.input],
        &a.plot.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?;
    let format = format_of(&a.input, a.format)?;
    if format.is_text() {
        bail!("{}: eval needs dense vectors, not text", a.input.display());
    }
    let input = ctx.phase("read", |_| {
        Ok(read_vectors(&a.input, format, &VectorOptions::default())?)
    })?;
    let Vectors::Dense(x) = input.vectors else {
        bail!(
            "{}: eval needs dense vectors (npy, fvecs, ivecs, bvecs, dense mtx), not sparse",
            a.input.display()
        );
    };
    // Zero vectors have no direction: no cosine to estimate, no neighbours to find. They are
    // left out of the pairs and the recall, and counted.
    let rows: Vec<usize> = (0..x.nrows())
        .filter(|&i| x.row(i).iter().any(|&v| v != 0.0))
        .collect();
    let zeros = x.nrows() - rows.len();
    let n = rows.len();
    if n < 2 {
        bail!(
            "{}: eval needs at least 2 nonzero vectors, found {n} ({zeros} zero vectors, which \
             have no direction)",
            a.input.display()
        );
    }
    // Pairs are sampled with replacement: more than the distinct pairs measure nothing more.
    let distinct = (n as u128) * (n as u128 - 1) / 2;
    if a.pairs as u128 > distinct {
        bail!(
            "--pairs {}: more than the {distinct} distinct pairs of the {n} nonzero vectors",
            a.pairs
        );
    }
    let signer = a.signer.build_for(
        crate::common::InputShape::Dense {
            dim: x.ncols() as u64,
        },
        ctx.bits(),
        ctx,
    )?;
    let sigs = ctx.phase("sign", |ctx| crate::sign::sign_dense(&x, &signer, ctx))?;
    let bits = sigs.bits() as u64;

    // Random pairs (i != j) of nonzero rows, seeded, compared chunk by chunk.
    let mut points: Vec<(f64, f64)> = Vec::new();
    if a.plot.is_some() {
        simlsh::memory::reserve(&mut points, a.pairs, "the plot's points (--pairs)")?;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(ctx.seed);
    let mut sum = [0f64; BUCKETS.len() + 1];
    let mut cnt = [0usize; BUCKETS.len() + 1];
    let mut left = a.pairs;
    while left > 0 {
        let m = left.min(PAIR_CHUNK);
        left -= m;
        let pairs: Vec<(usize, usize)> = (0..m)
            .map(|_| {
                let i = rng.random_range(0..n);
                let j = (i + rng.random_range(1..n)) % n;
                (rows[i], rows[j])
            })
            .collect();
        let chunk: Vec<(f64, f64)> = pairs
            .par_iter()
            .map(|&(i, j)| {
                let exact = cosine(&x, i, j);
                let est = estimate::cosine(sigs.distance(i, j) as u64, bits);
                (exact, est)
            })
            .collect();
        for &(exact, est) in &chunk {
            let deg = exact.clamp(-1.0, 1.0).acos().to_degrees();
            let b = BUCKETS
                .iter()
                .position(|&e| deg <= e)
                .unwrap_or(BUCKETS.len());
            sum[b] += (est - exact).abs();
            cnt[b] += 1;
        }
        if a.plot.is_some() {
            points.extend_from_slice(&chunk);
        }
    }
    let mae = sum.iter().sum::<f64>() / a.pairs as f64;

    // Recall@k on the first nonzero queries, against the exact cosine top-k.
    let q = a.queries.min(n);
    let k = a.k.min(n - 1);
    let recall = ctx.phase("recall", |ctx| {
        ctx.spin("measuring recall", || {
            cosine_knn_recall(&x, &sigs, &rows, q, k)
        })
    })?;

    to_stdout(|w| {
        writeln!(w, "| angle | pairs | mean abs cosine error |")?;
        writeln!(w, "|---|---|---|")?;
        for b in 0..sum.len() {
            let m = if cnt[b] > 0 {
                format!("{:.4}", sum[b] / cnt[b] as f64)
            } else {
                "-".into()
            };
            writeln!(w, "| {} | {} | {m} |", bucket_name(b), cnt[b])?;
        }
        writeln!(w, "| all | {} | {mae:.4} |", a.pairs)?;
        writeln!(
            w,
            "recall@{k} {recall:.6}  ({q} queries, f = {bits}, signer {})",
            simlsh::Signer::info(&signer).kind
        )?;
        if zeros > 0 {
            writeln!(
                w,
                "zero vectors {zeros}  (no direction: left out of the pairs, the queries and \
                 the neighbours)"
            )?;
        }
        Ok(())
    })?;
    ctx.record("mae_cosine", mae);
    ctx.record("recall", recall);
    ctx.record("pairs", a.pairs);
    ctx.record("queries", q);
    ctx.record("zero_vectors", zeros);
    if let Some(p) = &a.plot {
        plot(p, &points, ctx)?;
    }
    Ok(())
}

/// Mean over the first `q` of `rows` (the nonzero rows) of |signature k-NN ∩ exact cosine
/// top-k| / k, among `rows`, each row's own index excluded; the signature k-NN ties broken by
/// the smaller row, the exact top-k by descending cosine then the smaller row.
fn cosine_knn_recall(
    x: &Array2<f32>,
    sigs: &simlsh::SignatureMatrix,
    rows: &[usize],
    q: usize,
    k: usize,
) -> Result<f64> {
    let w = sigs.words_per_row();
    let ids: Vec<u32> = rows.iter().map(|&i| i as u32).collect();
    let codes: Vec<u64> = rows
        .iter()
        .flat_map(|&i| sigs.as_slice()[i * w..(i + 1) * w].iter().copied())
        .collect();
    let mut index = LinearScan::new(sigs.bits())?;
    index.insert_batch(&ids, &codes)?;
    let found = index.knn_batch(&codes[..q * w], k + 1)?;
    let hits: Vec<f64> = found
        .into_par_iter()
        .zip(&rows[..q])
        .map(|(hits, &i)| {
            let approx: Vec<u32> = hits
                .iter()
                .map(|h| h.id)
                .filter(|&id| id as usize != i)
                .take(k)
                .collect();
            let mut exact: Vec<(f64, usize)> = rows
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| (cosine(x, i, j), j))
                .collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let top: std::collections::HashSet<usize> = exact[..k].iter().map(|e| e.1).collect();
            approx
                .iter()
                .filter(|&&id| top.contains(&(id as usize)))
                .count() as f64
                / k as f64
        })
        .collect();
    Ok(hits.iter().sum::<f64>() / q as f64)
}

/// Estimated against exact cosine, one dot per pair, with the diagonal.
fn plot(path: &std::path::Path, points: &[(f64, f64)], ctx: &mut Ctx) -> Result<()> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (700, 700)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Estimated against exact cosine (one dot per pair)",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(55)
            .build_cartesian_2d(-1f64..1f64, -1f64..1f64)?;
        chart
            .configure_mesh()
            .x_desc("exact cosine")
            .y_desc("estimated cosine (from the Hamming distance)")
            .draw()?;
        chart.draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, 1, BLUE.mix(0.3).filled())),
        )?;
        chart.draw_series(LineSeries::new([(-1.0, -1.0), (1.0, 1.0)], RED))?;
        root.present()?;
    }
    ctx.write_file(path, |w| w.write_all(svg.as_bytes()))
}
