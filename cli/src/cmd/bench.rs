//! `simlsh bench`: the memory-versus-hash-cost study of the signers.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use plotters::prelude::*;
use serde_json::json;
use simlsh::estimate;
use simlsh::estimate::{MeanInterval as Interval, quality_check};
use simlsh::rng::Rng;
use simlsh::signers::SignerKind;
use simlsh::signers::{AnySigner, Signer, SignerSpec};
use sprs::CsMatI;

use crate::common::{Ctx, human_bytes, to_stdout};

const EXAMPLE: &str = "Example:
  simlsh bench --dims 1024,1048576 --widths 64,256 --nnz 32,256 --seeds 5 --plot tradeoff.svg --stats bench.json";

/// For each signer, input dimension D, width f and nonzeros per row: the bytes the signer
/// holds, its signing throughput, and the error of its estimates on generated row pairs.
///
/// Each configuration is repeated with `--seeds` signer seeds: the error columns give the mean
/// and a 95% interval over the seeds (so a ranking is read from intervals, not from one seed),
/// and the time is the median over the seeds, each timed after an untimed warm-up run. Signers
/// skipped for memory (`--max-matrix-mib`) are listed in the table and under the plot, with the
/// memory they would have needed.
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
    /// Signer seeds per configuration (--seed, --seed + 1, ...): intervals over them.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// Signers to compare, comma separated, each KIND or KIND:key=value as for --signer
    /// (default: every kind with its defaults).
    #[arg(long, value_delimiter = ',', value_parser = parse_kind)]
    signers: Vec<SignerKind>,
    /// Skip explicit matrices larger than this many MiB.
    #[arg(long, default_value_t = 512)]
    max_matrix_mib: u64,
    /// Write the table (Markdown) to this file too.
    #[arg(long)]
    table: Option<PathBuf>,
    /// Write an SVG plot: cost against memory, and error against cost, every point labelled.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn parse_kind(s: &str) -> std::result::Result<SignerKind, String> {
    s.parse().map_err(|e: simlsh::Error| e.to_string())
}

/// One configuration of the study: measured, or skipped (with the reason).
struct Row {
    signer: String,
    dim: u64,
    bits: usize,
    nnz: usize,
    bytes: usize,
    result: Option<Measured>,
    skipped: Option<String>,
}

struct Measured {
    ns_per_nnz: f64,
    rows_per_s: f64,
    mae_cos: Interval,
    rmse_ratio: Interval,
}

impl Row {
    fn label(&self) -> String {
        format!("D={} f={} nnz={}", self.dim, self.bits, self.nnz)
    }
}

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
    if a.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let kinds: Vec<SignerKind> = if a.signers.is_empty() {
        simlsh::signers::kinds()
            .iter()
            .map(|k| k.name.parse())
            .collect::<simlsh::Result<_>>()?
    } else {
        a.signers.clone()
    };
    // Generated rows hold 32-bit feature indices below D.
    for &d in &a.dims {
        if !(1..=1u64 << 32).contains(&d) {
            bail!("--dims {d}: a dimension must be in 1..=2^32");
        }
    }
    if let Some(0) = a.nnz.iter().min() {
        bail!("--nnz must be at least 1");
    }
    let cells = a
        .nnz
        .iter()
        .max()
        .map_or(0, |&m| (a.rows as u64).saturating_mul(m as u64));
    simlsh::memory::check(
        "the generated rows (--rows × --nnz)",
        cells.saturating_mul(8),
    )?;
    let widths = if a.widths.is_empty() {
        vec![ctx.bits()]
    } else {
        a.widths.clone()
    };
    for &w in &widths {
        simlsh::signature::check_bits(w).context("--widths")?;
    }
    let configs = (a.dims.len() * a.nnz.len() * widths.len() * kinds.len()) as u64;
    let rows = ctx.phase("study", |ctx| study(&a, ctx, &kinds, &widths, configs))?;
    report(&a, ctx, &rows)
}

/// Bytes of the explicit matrix a signer would build, before building it.
fn matrix_bytes(kind: &SignerKind, dim: u64, bits: usize) -> u64 {
    let cells = dim.saturating_mul(bits as u64);
    match kind {
        SignerKind::Gaussian | SignerKind::SuperBit { .. } => cells.saturating_mul(4),
        SignerKind::Rademacher => cells / 8,
        _ => 0,
    }
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
                for kind in kinds {
                    pb.inc(1);
                    let need = matrix_bytes(kind, dim, bits);
                    let too_slow = matches!(kind, SignerKind::SuperBit { .. })
                        && dim * (bits as u64).pow(2) > 1 << 34;
                    let skipped = if need > a.max_matrix_mib << 20 {
                        Some(format!(
                            "matrix of {} > --max-matrix-mib {}",
                            human_bytes(need as usize),
                            a.max_matrix_mib
                        ))
                    } else if too_slow {
                        Some(format!(
                            "orthogonalising D·f² = {:.1e} > 2^34 operations",
                            (dim as f64) * (bits as f64).powi(2)
                        ))
                    } else {
                        None
                    };
                    if let Some(why) = skipped {
                        ctx.say(format!("skipping {kind} D={dim} f={bits}: {why}"));
                        rows.push(Row {
                            signer: kind.to_string(),
                            dim,
                            bits,
                            nnz,
                            bytes: need as usize,
                            result: None,
                            skipped: Some(why),
                        });
                        continue;
                    }
                    rows.push(measure(a, ctx.seed, kind, dim, bits, nnz, &data, &cos)?);
                }
            }
        }
    }
    pb.finish_and_clear();
    Ok(rows)
}

/// One configuration over `a.seeds` signer seeds: each signer built, warmed up by one
/// untimed run, then timed; errors per seed.
#[allow(clippy::too_many_arguments)]
fn measure(
    a: &Args,
    seed: u64,
    kind: &SignerKind,
    dim: u64,
    bits: usize,
    nnz: usize,
    data: &CsMatI<f32, u32, usize>,
    cos: &[f64],
) -> Result<Row> {
    let (mut secs, mut mae, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    let mut bytes = 0;
    let mut name = String::new();
    for s in 0..a.seeds {
        let signer: AnySigner = SignerSpec::new(kind.clone())
            .bits(bits)
            .seed(seed.wrapping_add(s))
            .build(Some(dim))?;
        // Warm-up: page in the matrix, fill the caches and the thread pool.
        signer.sign_csr(data.view())?;
        let t = Instant::now();
        let sigs = signer.sign_csr(data.view())?;
        secs.push(t.elapsed().as_secs_f64());
        let h: Vec<u32> = (0..cos.len())
            .map(|k| sigs.distance(2 * k, 2 * k + 1))
            .collect();
        let q = quality_check(cos, &h, bits)?;
        ratio.push(q.rmse / q.ideal_rmse);
        mae.push(
            h.iter()
                .zip(cos)
                .map(|(&h, c)| (estimate::cosine(h as u64, bits as u64) - c).abs())
                .sum::<f64>()
                / cos.len() as f64,
        );
        let info = signer.info();
        bytes = info.bytes;
        name = kind.to_string();
    }
    secs.sort_by(f64::total_cmp);
    let median = secs[secs.len() / 2];
    Ok(Row {
        signer: name,
        dim,
        bits,
        nnz,
        bytes,
        result: Some(Measured {
            ns_per_nnz: median * 1e9 / data.nnz() as f64,
            rows_per_s: data.rows() as f64 / median,
            mae_cos: Interval::of(&mae),
            rmse_ratio: Interval::of(&ratio),
        }),
        skipped: None,
    })
}

fn report(a: &Args, ctx: &mut Ctx, rows: &[Row]) -> Result<()> {
    let mut table = format!(
        "| signer | D | f | nnz/row | bytes held | ns/nonzero | rows/s | mean abs cos error (95% CI, {} seeds) | rmse/ideal (95% CI) |\n|---|---|---|---|---|---|---|---|---|\n",
        a.seeds
    );
    for r in rows {
        match (&r.result, &r.skipped) {
            (Some(m), _) => table.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.1} | {:.0} | {:.4} ± {:.4} | {:.2} ± {:.2} |\n",
                r.signer,
                r.dim,
                r.bits,
                r.nnz,
                human_bytes(r.bytes),
                m.ns_per_nnz,
                m.rows_per_s,
                m.mae_cos.mean,
                m.mae_cos.half,
                m.rmse_ratio.mean,
                m.rmse_ratio.half
            )),
            (None, why) => table.push_str(&format!(
                "| {} | {} | {} | {} | ({} needed) | skipped: {} | | | |\n",
                r.signer,
                r.dim,
                r.bits,
                r.nnz,
                human_bytes(r.bytes),
                why.as_deref().unwrap_or("")
            )),
        }
    }
    to_stdout(|w| w.write_all(table.as_bytes()))?;
    if let Some(p) = &a.table {
        ctx.write_file(p, |w| w.write_all(table.as_bytes()))?;
    }
    if let Some(p) = &a.plot {
        plot(p, rows, a.seeds, ctx)?;
    }
    ctx.record(
        "results",
        rows.iter()
            .map(|r| match &r.result {
                Some(m) => json!({"signer": r.signer, "dim": r.dim, "bits": r.bits, "nnz": r.nnz, "bytes": r.bytes,
                    "ns_per_nonzero": m.ns_per_nnz, "rows_per_s": m.rows_per_s,
                    "mae_cosine": m.mae_cos.mean, "mae_cosine_ci95": m.mae_cos.half,
                    "rmse_over_ideal": m.rmse_ratio.mean, "rmse_over_ideal_ci95": m.rmse_ratio.half,
                    "seeds": a.seeds}),
                None => json!({"signer": r.signer, "dim": r.dim, "bits": r.bits, "nnz": r.nnz,
                    "bytes_needed": r.bytes, "skipped": r.skipped}),
            })
            .collect::<Vec<_>>(),
    );
    Ok(())
}

/// Two panels, one colour per signer, every point labelled with its configuration: hash cost
/// (ns per nonzero) against memory (bytes held), and estimation error (RMSE over the
/// binomial ideal, with its 95% interval over the seeds) against hash cost. Skipped
/// configurations are listed under the panels.
fn plot(path: &std::path::Path, rows: &[Row], seeds: u64, ctx: &mut Ctx) -> Result<()> {
    let measured: Vec<(&Row, &Measured)> = rows
        .iter()
        .filter_map(|r| r.result.as_ref().map(|m| (r, m)))
        .collect();
    if measured.is_empty() {
        bail!("nothing to plot: every configuration was skipped");
    }
    let skipped: Vec<&Row> = rows.iter().filter(|r| r.result.is_none()).collect();
    let names: Vec<String> = {
        let mut v: Vec<String> = rows.iter().map(|r| r.signer.clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    // The measured rows of one signer, in order.
    let of = |name: &str| {
        let name = name.to_string();
        measured.iter().filter(move |(r, _)| r.signer == name)
    };
    let colour = |name: &str| {
        let k = names.iter().position(|n| n == name).unwrap_or(0);
        Palette99::pick(k).to_rgba()
    };
    let footer = 30 + 16 * skipped.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1400, 640 + footer)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(640);
        let (left, right) = top.split_horizontally(700);
        let max_b = measured
            .iter()
            .map(|(r, _)| r.bytes.max(1) as f64)
            .fold(1e3, f64::max)
            * 3.0;
        let (min_c, max_c) = measured
            .iter()
            .fold((f64::MAX, 1.0f64), |(lo, hi), (_, m)| {
                (lo.min(m.ns_per_nnz), hi.max(m.ns_per_nnz))
            });
        let cost_range = (min_c / 2.0).max(0.01)..max_c * 2.0;

        let mut chart = log_chart(
            &left,
            "Hash cost against memory",
            (1f64..max_b, "bytes held by the signer (none plotted at 1)"),
            (
                cost_range.clone(),
                "ns per input nonzero (median over seeds)",
            ),
        )?;
        for name in &names {
            let c = colour(name);
            let pts: Vec<(f64, f64, String)> = of(name)
                .map(|(r, m)| (r.bytes.max(1) as f64, m.ns_per_nnz, r.label()))
                .collect();
            chart
                .draw_series(pts.iter().map(|(x, y, l)| {
                    EmptyElement::at((*x, *y))
                        + Circle::new((0, 0), 5, c.filled())
                        + Text::new(l.clone(), (7, -4), ("sans-serif", 10))
                }))?
                .label(name.as_str())
                .legend(move |(x, y)| Circle::new((x, y), 5, c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;

        let (min_e, max_e) = measured.iter().fold((0.9f64, 1.5f64), |(lo, hi), (_, m)| {
            let e = m.rmse_ratio;
            (lo.min(e.mean - e.half), hi.max(e.mean + e.half))
        });
        let mut chart = log_chart(
            &right,
            &format!("Estimation error against hash cost ({seeds} seeds, 95% intervals)"),
            (cost_range, "ns per input nonzero"),
            (
                (min_e * 0.95).max(0.01)..max_e * 1.1,
                "RMSE of h/f vs θ/π over the binomial ideal (1 = ideal)",
            ),
        )?;
        for name in &names {
            let c = colour(name);
            let pts: Vec<(f64, Interval, String)> = of(name)
                .map(|(r, m)| (m.ns_per_nnz, m.rmse_ratio, r.label()))
                .collect();
            chart.draw_series(pts.iter().map(|(x, e, _)| {
                PathElement::new(
                    vec![(*x, e.mean - e.half), (*x, e.mean + e.half)],
                    c.stroke_width(2),
                )
            }))?;
            chart
                .draw_series(pts.iter().map(|(x, e, l)| {
                    EmptyElement::at((*x, e.mean))
                        + Circle::new((0, 0), 5, c.filled())
                        + Text::new(l.clone(), (7, -4), ("sans-serif", 10))
                }))?
                .label(name.as_str())
                .legend(move |(x, y)| Circle::new((x, y), 5, c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;

        let style = ("sans-serif", 13).into_font().color(&BLACK);
        let head = if skipped.is_empty() {
            "Every configuration was measured.".to_string()
        } else {
            format!("Skipped ({}):", skipped.len())
        };
        bottom.draw_text(&head, &style, (20, 8))?;
        for (k, r) in skipped.iter().enumerate() {
            let line = format!(
                "{} {}: {}",
                r.signer,
                r.label(),
                r.skipped.as_deref().unwrap_or("")
            );
            bottom.draw_text(&line, &style, (30, 26 + 16 * k as i32))?;
        }
        root.present()?;
    }
    ctx.write_file(path, |w| w.write_all(svg.as_bytes()))
}

/// A chart of log-scaled axes drawn as SVG.
type LogChart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;

/// A chart on `area` with log-scaled axes over the ranges `x.0` and `y.0`, its mesh drawn with
/// the axis descriptions `x.1` and `y.1`.
fn log_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    x: (std::ops::Range<f64>, &str),
    y: (std::ops::Range<f64>, &str),
) -> Result<LogChart<'a, 'b>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(x.0.log_scale(), y.0.log_scale())?;
    chart.configure_mesh().x_desc(x.1).y_desc(y.1).draw()?;
    Ok(chart)
}
