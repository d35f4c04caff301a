//! The gaoya crate (crates.io, =0.2.2) on the comparison's workloads W3 (radius 3) and W4
//! (self-join at radius 3), under the rules of `benches/compare/peers.py`: answers written to
//! `--out` as raw files, one JSON line on stdout. `run.sh` copies this file into a scratch
//! cargo project and builds it there; it is not part of simlsh.
//!
//! usage: compare-gaoya w3|w4 --data DIR --out DIR [--threads T] [--reps R] [--sub N]
use gaoya::simhash::SimHashIndex;
use rayon::prelude::*;
use std::time::Instant;

/// gaoya keeps candidates with `distance < hamming_distance` (strict): radius 3 needs 4.
const HAMMING_DISTANCE: usize = 4;
const BLOCKS: usize = 6;

struct Args {
    work: String,
    data: String,
    out: String,
    threads: usize,
    reps: usize,
    sub: usize,
}

fn args() -> Args {
    let a: Vec<String> = std::env::args().collect();
    let usage = "usage: compare-gaoya w3|w4 --data DIR --out DIR [--threads T] [--reps R] [--sub N]";
    let mut r = Args {
        work: a.get(1).expect(usage).clone(),
        data: String::new(),
        out: String::new(),
        threads: 1,
        reps: 3,
        sub: 0,
    };
    for kv in a[2..].chunks(2) {
        let v = kv.get(1).expect(usage).clone();
        match kv[0].as_str() {
            "--data" => r.data = v,
            "--out" => r.out = v,
            "--threads" => r.threads = v.parse().expect(usage),
            "--reps" => r.reps = v.parse().expect(usage),
            "--sub" => r.sub = v.parse().expect(usage),
            _ => panic!("{usage}"),
        }
    }
    r
}

fn read_u64(a: &Args, name: &str) -> Vec<u64> {
    let bytes = std::fs::read(format!("{}/{}", a.data, name)).expect(name);
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn write_i64(a: &Args, name: &str, v: impl Iterator<Item = i64>) {
    let bytes: Vec<u8> = v.flat_map(i64::to_le_bytes).collect();
    std::fs::write(format!("{}/{}", a.out, name), bytes).expect(name);
}

fn vmhwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            l.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

fn timed<R>(reps: usize, mut op: impl FnMut() -> R) -> (f64, Vec<f64>, R) {
    if reps > 1 {
        op();
    }
    let mut times = vec![];
    let mut last = None;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        last = Some(op());
        times.push(t.elapsed().as_secs_f64());
    }
    let mut s = times.clone();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2], times, last.unwrap())
}

fn build(a: &Args, codes: &[u64]) -> (SimHashIndex<u64, u32>, f64) {
    let t = Instant::now();
    let mut idx = SimHashIndex::<u64, u32>::new(BLOCKS, HAMMING_DISTANCE);
    if a.threads == 1 {
        for (i, c) in codes.iter().enumerate() {
            idx.insert(i as u32, *c);
        }
    } else {
        idx.par_bulk_insert((0..codes.len() as u32).collect(), codes.to_vec());
    }
    (idx, t.elapsed().as_secs_f64())
}

fn main() {
    let a = args();
    rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.max(1))
        .build_global()
        .unwrap();
    std::fs::create_dir_all(&a.out).unwrap();
    let (codes, queries) = match a.work.as_str() {
        "w3" => (read_u64(&a, "w3.index.u64"), read_u64(&a, "w3.queries.u64")),
        "w4" => {
            let c = read_u64(&a, "w4.codes.u64");
            (c.clone(), c)
        }
        w => panic!("unknown workload {w}"),
    };
    let n_full = queries.len();
    let n = if a.sub > 0 { a.sub.min(n_full) } else { n_full };
    let (idx, build_s) = build(&a, &codes);
    let hwm = vmhwm_kb();
    let query = |i: usize| -> Vec<u32> {
        let mut v: Vec<u32> = idx.query(&queries[i]).into_iter().copied().collect();
        v.sort_unstable();
        v
    };
    let (seconds, times, hits) = timed(a.reps, || -> Vec<Vec<u32>> {
        if a.threads == 1 {
            (0..n).map(query).collect()
        } else {
            (0..n).into_par_iter().map(query).collect()
        }
    });
    let notes;
    if a.work == "w3" {
        let mut lims = vec![0i64];
        for h in &hits {
            lims.push(lims.last().unwrap() + h.len() as i64);
        }
        write_i64(&a, "lims.i64", lims.into_iter());
        write_i64(&a, "ids.i64", hits.iter().flatten().map(|&i| i64::from(i)));
        notes = "SimHashIndex<u64, u32>::new(6 blocks, hamming_distance 4 = radius 3), query per code";
    } else {
        let pairs = hits.iter().enumerate().flat_map(|(i, h)| {
            h.iter()
                .filter(move |&&j| j as usize > i)
                .flat_map(move |&j| [i as i64, i64::from(j)])
        });
        write_i64(&a, "pairs.i64", pairs);
        notes = "SimHashIndex<u64, u32>::new(6 blocks, hamming_distance 4 = radius 3), query every code, pairs i < j";
    }
    println!(
        "{{\"n\": {n}, \"n_full\": {n_full}, \"seconds\": {seconds}, \"times\": {times:?}, \"build_s\": {build_s}, \
         \"rss_hwm_before_kb\": {hwm}, \"rss_hwm_end_kb\": {}, \"notes\": \"{notes}; {}\"}}",
        vmhwm_kb(),
        if a.threads == 1 { "sequential" } else { "par_bulk_insert + rayon over queries" }
    );
}
