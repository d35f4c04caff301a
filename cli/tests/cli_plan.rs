//! The signature width of a verified cosine join: without `--bits`, `dedup` signs at the width
//! the library's join planner finds cheapest for the input's size (join and signing counted),
//! and finds the planted pairs at it; `--bits` and `--no-verify` keep their widths.

use std::path::PathBuf;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::estimate::{JoinPlanner, SIGN_NS_PER_FEATURE_BIT};

mod cli_common;
use cli_common::{ok, simlsh};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-plan-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `n` documents of 8 distinct words each out of 200,000 (so 8 features per document), the
/// last 1,000 being copies of earlier ones with one word replaced (cosine ≈ 7/8 under TF-IDF
/// weights close to equal, above 0.8 unless a rare word was swapped for a common one).
fn documents(n: usize) -> Vec<String> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut docs: Vec<Vec<u32>> = Vec::with_capacity(n);
    for i in 0..n {
        if i >= n - 1000 {
            let mut copy = docs[rng.random_range(0..n - 1000)].clone();
            loop {
                let w = rng.random_range(0..200_000u32);
                if !copy.contains(&w) {
                    copy[0] = w;
                    break;
                }
            }
            docs.push(copy);
            continue;
        }
        let mut d: Vec<u32> = Vec::with_capacity(8);
        while d.len() < 8 {
            let w = rng.random_range(0..200_000u32);
            if !d.contains(&w) {
                d.push(w);
            }
        }
        docs.push(d);
    }
    docs.iter()
        .map(|d| {
            d.iter()
                .map(|w| format!("w{w}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn stats(path: &PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_verified_join_signs_at_the_planned_width() {
    let n = 150_000;
    let docs = documents(n);
    let input = tmp("docs.txt");
    std::fs::write(&input, docs.join("\n") + "\n").unwrap();
    let widths = [256, 512, 1024, 2048, 4096];
    let want = JoinPlanner::new(0.8)
        .rows(n as u64)
        .widths(&widths)
        .sign_cost(SIGN_NS_PER_FEATURE_BIT * 8.0)
        .plan()
        .unwrap();
    // The planner widens the signatures for this many rows: the test is not vacuous.
    assert!(want.bits > 256, "{want:?}");
    let s = tmp("stats.json");
    let pairs = tmp("pairs.tsv");
    let out = ok(&simlsh()
        .arg("dedup")
        .arg(&input)
        .args(["--mode", "words", "--cosine", "0.8", "--stats"])
        .arg(&s)
        .arg("--pairs")
        .arg(&pairs)
        .output()
        .unwrap());
    let v = stats(&s);
    assert_eq!(v["values"]["bits_planned"], want.bits, "{out}");
    assert!(out.contains(&format!("f = {}", want.bits)), "{out}");
    // The copies are found: every reported pair has a copy's row, and most copies are in one.
    let found: Vec<(usize, usize)> = std::fs::read_to_string(&pairs)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split('\t').map(|x| x.parse::<usize>().unwrap());
            (f.next().unwrap(), f.next().unwrap())
        })
        .collect();
    assert!(found.iter().all(|&(_, b)| b >= n - 1000), "{found:?}");
    assert!(found.len() >= 900, "{} pairs\n{out}", found.len());
    // --bits decides; --no-verify keeps the default width of a cosine join (on a few rows).
    let small = tmp("small.txt");
    std::fs::write(&small, docs[..3000].join("\n") + "\n").unwrap();
    for (args, bits) in [
        (vec!["--bits", "512"], 512),
        (vec!["--no-verify", "--bits", "128"], 128),
        (vec!["--no-verify"], 256),
    ] {
        let s2 = tmp("stats2.json");
        let out = ok(&simlsh()
            .arg("dedup")
            .arg(&small)
            .args(["--mode", "words", "--cosine", "0.8", "--stats"])
            .arg(&s2)
            .args(&args)
            .output()
            .unwrap());
        assert!(out.contains(&format!("f = {bits}")), "{args:?}: {out}");
        assert!(stats(&s2)["values"].get("bits_planned").is_none());
    }
}
