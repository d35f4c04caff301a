//! Connected components of 10^8 random edges: the parallel union-find
//! (`simlsh::join::components`) against the sequential one (`UnionFind`), on the same edges.
//!
//! ```text
//! cargo run --release --example cluster_scale -- [--edges 100000000] [--nodes 10000000]
//!     [--threads 2] [--seed 1] [--sequential]
//! ```
//!
//! The edges are drawn uniformly over `0..nodes` (pairs of distinct points; a point may
//! repeat), in parallel from the seed, before the clock starts. Timed: uniting every edge
//! and labelling every point (its smallest member). Printed: wall and CPU time (user + sys of
//! the process during the step, from `/proc/self/stat`), edges per second of wall time, the
//! number of components, and the peak resident memory of the process (`VmHWM`: the 8 bytes
//! per edge of the input, 4 per point of parents and 4 of labels). With `--sequential`, the
//! sequential union-find (union by size, path compression) also runs on the same edges, and
//! its labels must equal the parallel ones. Run each size in its own process, so that the
//! peak memory is that size's.

use std::time::Instant;

use rayon::prelude::*;
use simlsh::join::{UnionFind, components};
use simlsh::rng::Rng;

/// CPU seconds (user + sys) of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("Linux /proc/self/stat");
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// Peak resident memory (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("Linux /proc/self/status");
    let line = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter().position(|a| a == name).map_or(default, |i| {
        args[i + 1].replace('_', "").parse().expect(name)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m = arg(&args, "--edges", 100_000_000) as usize;
    let n = arg(&args, "--nodes", 10_000_000) as usize;
    let seed = arg(&args, "--seed", 1);
    let threads = simlsh::cpu::threads(Some(arg(&args, "--threads", 2) as i64)).unwrap();
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .unwrap();
    let chunk = 1 << 20;
    let mut edges = vec![(0u32, 0u32); m];
    edges
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(c, part)| {
            let mut rng = Rng::new(seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            for e in part {
                let a = rng.below(n as u64) as u32;
                let mut b = rng.below(n as u64 - 1) as u32;
                b += u32::from(b >= a);
                *e = (a, b);
            }
        });
    println!("edges {m}  nodes {n}  threads {threads}  seed {seed}");

    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let labels = components(n, &edges).unwrap();
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let parts = labels
        .par_iter()
        .enumerate()
        .filter(|&(i, &l)| i == l as usize)
        .count();
    println!(
        "parallel    wall {wall:.2} s  cpu {cpu:.2} s  {:.2} M edges/s  components {parts}  peak RSS {:.2} GB",
        m as f64 / wall / 1e6,
        peak_rss() as f64 / 1e9
    );

    if args.iter().any(|a| a == "--sequential") {
        let (cpu0, t0) = (cpu_seconds(), Instant::now());
        let mut uf = UnionFind::new(n).unwrap();
        for &(a, b) in &edges {
            uf.union(a, b);
        }
        let seq = uf.labels().unwrap();
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
        assert_eq!(
            seq, labels,
            "the sequential union-find gives the same labels"
        );
        println!(
            "sequential  wall {wall:.2} s  cpu {cpu:.2} s  {:.2} M edges/s  (same labels)  peak RSS {:.2} GB",
            m as f64 / wall / 1e6,
            peak_rss() as f64 / 1e9
        );
    }
}
