//! `simlsh bench`: the memory-versus-hash-cost study of the signers.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use plotters::prelude::*;
use serde_json::json;
use simlsh::estimate;
use simlsh::rng::Rng;
use simlsh::signers::{AnySigner, Signer};
use simlsh_workloads::quality_check;
use sprs::CsMatI;

use crate::common::{Ctx, SignerArgs, SignerKind, human_bytes, to_stdout, write_file};

const EXAMPLE: &str = "Example:
  simlsh bench --dims 1024,1048576 --widths 64,256 --nnz 32,256 --plot tradeoff.svg --stats bench.json";

/// For each signer, input dimension D, width f and nonzeros per row: the bytes the signer
/// holds, its signing throughput, and the error of its estimates on generated row pairs.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// Input dimensions D.
    #[arg(long, value_delimiter = ',', default_values_t = [1024u64, 65_536, 1 << 20])]
    dims: Vec<u64>,
    /// Signature widths f (default: the value of --bits).
    #[arg(long, value_delimiter = ',')]
    widths: Vec<usize>,
    /// Nonzeros per row.
    #[arg(long, value_delimiter = ',', default_values_t = [16usize, 256])]
    nnz: Vec<usize>,
    /// Rows per configuration (pairs of rows are compared).
    #[arg(long, default_value_t = 20_000)]
    rows: usize,
    /// Signers to compare (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    signers: Vec<SignerKind>,
    /// Skip explicit matrices larger than this many MiB.
    #[arg(long, default_value_t = 512)]
    max_matrix_mib: u64,
    /// Write the table (Markdown) to this file too.
    #[arg(long)]
    table: Option<PathBuf>,
    /// Write an SVG plot of cost against memory.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    signer: SignerArgs,
}

struct Row {
    signer: String,
    dim: u64,
    bits: usize,
    nnz: usize,
    bytes: usize,
    ns_per_nnz: f64,
    rows_per_s: f64,
    mae_cos: f64,
    rmse_ratio: f64,
}

const ALL: [SignerKind; 6] = [
    SignerKind::Gaussian,
    SignerKind::SuperBit,
    SignerKind::Rademacher,
    SignerKind::VerySparse,
    SignerKind::Pooled,
    SignerKind::HashingTrick,
];

/// Row pairs (2k, 2k+1): the second keeps each feature of the first with probability 0.8
/// (weight perturbed) and adds new ones, so pair cosines spread over (0, 1).
fn pairs(rng: &mut Rng, rows: usize, dim: u64, nnz: usize) -> CsMatI<f32, u32, usize> {
    let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
    let mut push = |mut row: Vec<(u64, f32)>| {
        row.sort_by_key(|p| p.0);
        row.dedup_by_key(|p| p.0);
        indices.extend(row.iter().map(|p| p.0 as u32));
        data.extend(row.iter().map(|p| p.1));
        indptr.push(indices.len());
    };
    for _ in 0..rows / 2 {
        let a: Vec<(u64, f32)> = (0..nnz)
            .map(|_| (rng.below(dim), rng.gaussian() as f32))
            .collect();
        let keep = rng.uniform();
        let mut b = Vec::with_capacity(nnz);
        for &(i, w) in &a {
            if rng.uniform() < keep {
                b.push((i, w + 0.3 * rng.gaussian() as f32));
            }
        }
        while b.len() < nnz {
            b.push((rng.below(dim), rng.gaussian() as f32));
        }
        push(a);
        push(b);
    }
    CsMatI::new((rows / 2 * 2, dim as usize), indptr, indices, data)
}

fn cosine(m: &CsMatI<f32, u32, usize>, i: usize, j: usize) -> f64 {
    let (a, b) = (m.outer_view(i).expect("row"), m.outer_view(j).expect("row"));
    let dot = a.dot(&b) as f64;
    let n = |v: &sprs::CsVecViewI<f32, u32>| {
        v.data()
            .iter()
            .map(|x| (*x as f64).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    dot / (n(&a) * n(&b))
}

pub fn run(a: Args, ctx: &mut Ctx) -> Result<()> {
    if a.rows < 2 {
        bail!("--rows must be at least 2");
    }
    let kinds = if a.signers.is_empty() {
        ALL.to_vec()
    } else {
        a.signers.clone()
    };
    let widths = if a.widths.is_empty() {
        vec![ctx.bits()]
    } else {
        a.widths.clone()
    };
    if widths.contains(&0) {
        bail!("--widths must be at least 1");
    }
    let configs = (a.dims.len() * a.nnz.len() * widths.len() * kinds.len()) as u64;
    let rows = ctx.phase("study", |ctx| study(&a, ctx, &kinds, &widths, configs))?;
    report(&a, ctx, &rows)
}

fn study(
    a: &Args,
    ctx: &mut Ctx,
    kinds: &[SignerKind],
    widths: &[usize],
    configs: u64,
) -> Result<Vec<Row>> {
    let pb = ctx.progress(configs, "configs");
    let mut rows = Vec::new();
    let mut rng = Rng::new(ctx.seed);
    for &dim in &a.dims {
        for &nnz in &a.nnz {
            let data = pairs(&mut rng, a.rows, dim, nnz);
            let cos: Vec<f64> = (0..data.rows() / 2)
                .map(|k| cosine(&data, 2 * k, 2 * k + 1))
                .collect();
            for &bits in widths {
                for &kind in kinds {
                    pb.inc(1);
                    let matrix_bytes = match kind {
                        SignerKind::Gaussian | SignerKind::SuperBit => dim * bits as u64 * 4,
                        SignerKind::Rademacher => dim * bits as u64 / 8,
                        _ => 0,
                    };
                    let too_slow =
                        kind == SignerKind::SuperBit && dim * (bits as u64).pow(2) > 1 << 34;
                    if matrix_bytes > a.max_matrix_mib << 20 || too_slow {
                        ctx.say(format!("skipping {kind:?} D={dim} f={bits}: matrix of {} (see --max-matrix-mib)", human_bytes(matrix_bytes as usize)));
                        continue;
                    }
                    let signer: AnySigner = a.signer.build(kind, Some(dim), bits, ctx.seed)?;
                    let t = Instant::now();
                    let sigs = signer.sign_csr(data.view())?;
                    let secs = t.elapsed().as_secs_f64();
                    let h: Vec<u32> = (0..cos.len())
                        .map(|k| sigs.distance(2 * k, 2 * k + 1))
                        .collect();
                    let q = quality_check(&cos, &h, bits)?;
                    let mae = h
                        .iter()
                        .zip(&cos)
                        .map(|(&h, c)| (estimate::cosine(h as u64, bits as u64) - c).abs())
                        .sum::<f64>()
                        / cos.len() as f64;
                    let info = signer.info();
                    rows.push(Row {
                        signer: info.kind.to_string(),
                        dim,
                        bits,
                        nnz,
                        bytes: info.bytes,
                        ns_per_nnz: secs * 1e9 / data.nnz() as f64,
                        rows_per_s: data.rows() as f64 / secs,
                        mae_cos: mae,
                        rmse_ratio: q.rmse / q.ideal_rmse,
                    });
                }
            }
        }
    }
    pb.finish_and_clear();
    Ok(rows)
}

fn report(a: &Args, ctx: &mut Ctx, rows: &[Row]) -> Result<()> {
    let mut table = String::from(
        "| signer | D | f | nnz/row | bytes held | ns/nonzero | rows/s | mean abs cos error | rmse/ideal |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.0} | {:.4} | {:.2} |\n",
            r.signer,
            r.dim,
            r.bits,
            r.nnz,
            human_bytes(r.bytes),
            r.ns_per_nnz,
            r.rows_per_s,
            r.mae_cos,
            r.rmse_ratio
        ));
    }
    to_stdout(|w| w.write_all(table.as_bytes()))?;
    if let Some(p) = &a.table {
        write_file(p, |w| w.write_all(table.as_bytes()))?;
    }
    if let Some(p) = &a.plot {
        plot(p, rows)?;
    }
    ctx.record(
        "results",
        rows.iter()
            .map(|r| json!({"signer": r.signer, "dim": r.dim, "bits": r.bits, "nnz": r.nnz, "bytes": r.bytes,
                "ns_per_nonzero": r.ns_per_nnz, "rows_per_s": r.rows_per_s, "mae_cosine": r.mae_cos, "rmse_over_ideal": r.rmse_ratio}))
            .collect::<Vec<_>>(),
    );
    Ok(())
}

/// Cost (ns per nonzero) against memory (bytes held), one colour per signer.
fn plot(path: &std::path::Path, rows: &[Row]) -> Result<()> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let max_b = rows
            .iter()
            .map(|r| r.bytes.max(1) as f64)
            .fold(1e3, f64::max)
            * 3.0;
        let (min_c, max_c) = rows.iter().fold((f64::MAX, 1.0f64), |(lo, hi), r| {
            (lo.min(r.ns_per_nnz), hi.max(r.ns_per_nnz))
        });
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Memory against hash cost (one point per D, f, nnz)",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (1f64..max_b).log_scale(),
                ((min_c / 2.0).max(0.01)..max_c * 2.0).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc("bytes held by the signer (0 plotted at 1)")
            .y_desc("ns per input nonzero")
            .draw()?;
        let names: Vec<String> = {
            let mut v: Vec<String> = rows.iter().map(|r| r.signer.clone()).collect();
            v.dedup();
            v.sort();
            v.dedup();
            v
        };
        for (k, name) in names.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| &r.signer == name)
                .map(|r| (r.bytes.max(1) as f64, r.ns_per_nnz))
                .collect();
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 5, color.filled())))?
                .label(name.as_str())
                .legend(move |(x, y)| Circle::new((x, y), 5, color.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    write_file(path, |w| w.write_all(svg.as_bytes()))
}
