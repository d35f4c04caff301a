//! The approximate k-NN graph (`join::knn_graph_by` with `KnnMethod::Approx`) against the
//! exact one on stored codes, one thread: process CPU time, plain and tie-aware recall, and
//! what the method did (rounds, entries changed a round, distances).
//!
//! ```text
//! cargo run --release --example approx_knn -- CODES.npy EXACT.bin [--k 10] [--repeat 3] \
//!     [--sign BITS] [--config rounds=12,sample=30,list=30,trees=4,leaf=250,randoms=10,delta=0.002]...
//! ```
//!
//! CODES.npy holds `uint64` codes, shape `(N, words)`; with `--sign BITS`, `float32` vectors
//! instead, signed by the super-bit signer at BITS bits (seed 0), as `benches/compare/graph.py`
//! signs the 399,000 `GloVe` 6B 50-d base vectors of its section `codes`. EXACT.bin caches the exact graph
//! (`join::knn_graph`, little-endian `distance << 32 | id` a neighbour, `k` a row): computed
//! and written when missing (its CPU time printed), read otherwise. Each `--config` is a set
//! of [`ApproxKnn`] fields over the defaults (none: the defaults); the configurations run in
//! turn, `--repeat` times over (A/B alternated in one process), and each line gives one run;
//! the summary gives each configuration's median CPU time. Recall is the mean over rows:
//! plain, the share of the exact `k` ids found; tie-aware, the share of found neighbours at
//! most the exact `k`-th distance away (`index::recall_at_k`).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use simlsh::index::recall_at_k;
use simlsh::join::{ApproxKnn, KnnMethod, knn_graph, knn_graph_by};
use simlsh::signers::Distribution;
use simlsh::{Hit, HyperplaneSigner, SignatureMatrix, Signer};

/// CPU seconds (user + system) of the process.
fn cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").expect("Linux /proc/self/stat");
    // Fields after the command name (in parentheses, which may hold spaces).
    let rest = &s[s.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime");
    ticks as f64 / 100.0
}

/// `s` as `key=value,...` over the default parameters.
fn config(s: &str) -> Result<ApproxKnn> {
    let mut p = ApproxKnn::default();
    for kv in s.split(',').filter(|kv| !kv.is_empty()) {
        let (key, v) = kv.split_once('=').context("key=value")?;
        match key {
            "rounds" => p.rounds = v.parse()?,
            "sample" => p.sample = v.parse()?,
            "list" => p.list = v.parse()?,
            "trees" => p.trees = v.parse()?,
            "leaf" => p.leaf = v.parse()?,
            "randoms" => p.randoms = v.parse()?,
            "delta" => p.delta = v.parse()?,
            "seed" => p.seed = v.parse()?,
            other => bail!("unknown parameter {other}"),
        }
    }
    Ok(p)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let codes = PathBuf::from(args.next().context("CODES.npy")?);
    let exact_path = PathBuf::from(args.next().context("EXACT.bin")?);
    let (mut k, mut repeat, mut configs, mut sign) = (10usize, 1usize, Vec::new(), None);
    while let Some(a) = args.next() {
        let v = args.next().with_context(|| format!("a value after {a}"))?;
        match a.as_str() {
            "--k" => k = v.parse()?,
            "--repeat" => repeat = v.parse()?,
            "--sign" => sign = Some(v.parse::<usize>()?),
            "--config" => configs.push((v.clone(), config(&v)?)),
            other => bail!("unknown option {other}"),
        }
    }
    if configs.is_empty() {
        configs.push(("defaults".into(), ApproxKnn::default()));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()?;
    let sigs = match sign {
        None => {
            let m = simlsh::io::npy::read_signatures_npy(&codes, None)?;
            SignatureMatrix::from_parts(m.bits(), m.as_slice().to_vec())?
        }
        Some(bits) => {
            let x = simlsh::io::npy::read_npy_dense(&codes)?;
            HyperplaneSigner::builder()
                .dim(x.ncols() as u64)
                .bits(bits)
                .distribution(Distribution::SuperBit { depth: None })
                .seed(0)
                .build()?
                .sign_dense(&x)?
        }
    };
    let n = sigs.len();
    let exact: Vec<Vec<Hit>> = if exact_path.exists() {
        let bytes = std::fs::read(&exact_path)?;
        if bytes.len() != n * k * 8 {
            bail!("{}: not {n} rows of {k}", exact_path.display());
        }
        bytes
            .chunks_exact(k * 8)
            .map(|row| {
                row.chunks_exact(8)
                    .map(|e| {
                        let e = u64::from_le_bytes(e.try_into().expect("8 bytes"));
                        Hit {
                            distance: (e >> 32) as u32,
                            id: e as u32,
                        }
                    })
                    .collect()
            })
            .collect()
    } else {
        let c0 = cpu_s();
        let g = pool.install(|| knn_graph(&sigs, k))?;
        println!("exact: {:.2} s CPU", cpu_s() - c0);
        let mut bytes = Vec::with_capacity(n * k * 8);
        for h in g.iter().flatten() {
            bytes.extend_from_slice(&(u64::from(h.distance) << 32 | u64::from(h.id)).to_le_bytes());
        }
        std::fs::write(&exact_path, bytes)?;
        g
    };
    let mut times = vec![Vec::new(); configs.len()];
    for _ in 0..repeat {
        for (c, (name, p)) in configs.iter().enumerate() {
            let c0 = cpu_s();
            let (g, stats) =
                pool.install(|| knn_graph_by(&sigs, k, &KnnMethod::Approx(p.clone())))?;
            let t = cpu_s() - c0;
            times[c].push(t);
            let plain = g
                .iter()
                .zip(&exact)
                .map(|(a, e)| a.iter().filter(|h| e.iter().any(|x| x.id == h.id)).count())
                .sum::<usize>() as f64
                / (n * k) as f64;
            println!(
                "{name}: {t:.2} s CPU, recall {plain:.4}, tie-aware {:.4}, rounds {}, distances {:.3e}, changed {:?}",
                recall_at_k(&g, &exact),
                stats.rounds,
                stats.distances as f64,
                stats.changed
            );
        }
    }
    for ((name, _), t) in configs.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        println!("median {name}: {:.2} s CPU ({:?})", t[t.len() / 2], t);
    }
    Ok(())
}
