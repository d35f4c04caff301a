//! The `SIMLSH_FORCE_SCALAR` switch of the CPU dispatch ([`simlsh::cpu`]), tested in child
//! processes (the choice is made once per process): with it, every dispatched path (the
//! Hamming kernels, the Manku and MIH probes, the self-join's and the banded join's pair
//! checks) runs its scalar reference and must give the oracle's answers, as the dispatched
//! run does.

use std::process::Command;

use simlsh::cpu;
use simlsh::hamming::{self, FORCE_SCALAR_ENV, Kernels};
use simlsh::index::{HammingIndex, IndexSpec, LinearScan};
use simlsh::join::{Banding, banded_join, self_join};
use simlsh::rng::Rng;
use simlsh::signature::SignatureMatrix;

/// What the dispatch must pick given this process's environment.
fn expected_kernel() -> &'static str {
    match std::env::var_os(FORCE_SCALAR_ENV) {
        Some(v) if !v.is_empty() && v != "0" => "scalar",
        _ => Kernels::best_available().name(),
    }
}

/// Clustered 64-bit codes: near-duplicates (distances 0 to 4) of a few centres, so that the
/// tables and the join find many pairs.
fn clustered(rng: &mut Rng, n: usize) -> SignatureMatrix {
    let mut codes = Vec::with_capacity(n);
    while codes.len() < n {
        let centre = rng.next_u64();
        for _ in 0..8 {
            let mut c = centre;
            for _ in 0..rng.below(5) {
                c ^= 1 << rng.below(64);
            }
            codes.push(c);
        }
    }
    codes.truncate(n);
    SignatureMatrix::from_parts(64, codes).unwrap()
}

/// Runs in every process (also as an ordinary test): the dispatched set follows the
/// environment, and every dispatched path gives the reference results.
#[test]
fn dispatch_follows_environment() {
    let name = hamming::kernel_name();
    println!("dispatched kernel: {name}");
    println!("cpu features: {}", cpu::features().name());
    assert_eq!(name, expected_kernel());
    if cpu::forced_scalar() {
        assert_eq!(cpu::features(), cpu::Features::SCALAR);
    } else {
        assert_eq!(cpu::features(), cpu::detected());
    }
    // Manku and MIH probes, the permutation index's scoring (a beam over every list: the
    // exact k-NN) and the self-join's pair checks against brute force.
    let mut rng = Rng::new(11);
    let sigs = clustered(&mut rng, 3000);
    let oracle = LinearScan::build(&sigs).unwrap();
    let queries: Vec<u64> = sigs.as_slice()[..200].to_vec();
    for spec in [
        "manku:levels=4",
        "manku:k=2,levels=4+3",
        "mih:fallback=false",
        "permutation:q=4,beam=3000",
    ] {
        let idx = spec.parse::<IndexSpec>().unwrap().build(&sigs).unwrap();
        for r in [0, 2, 3] {
            assert_eq!(
                idx.radius_batch(&queries, r).unwrap(),
                oracle.radius_batch(&queries, r).unwrap(),
                "{spec} r={r}"
            );
        }
        assert_eq!(
            idx.knn_batch(&queries, 5).unwrap(),
            oracle.knn_batch(&queries, 5).unwrap(),
            "{spec} knn"
        );
    }
    let pairs = self_join(&sigs, 3).unwrap();
    let mut want = Vec::new();
    for i in 0..sigs.len() {
        for j in i + 1..sigs.len() {
            let d = sigs.distance(i, j);
            if d <= 3 {
                want.push((i as u32, j as u32, d));
            }
        }
    }
    let got: Vec<(u32, u32, u32)> = pairs.iter().map(|p| (p.i, p.j, p.distance)).collect();
    assert_eq!(got, want);
    // Two-word codes (two clustered halves, near-duplicates in the same rows): the self-join's
    // early-exit distance and the banded join's run scans, both compiled with POPCNT when
    // dispatched.
    let (lo, hi) = (clustered(&mut rng, 2000), clustered(&mut rng, 2000));
    let words: Vec<u64> = lo
        .as_slice()
        .iter()
        .zip(hi.as_slice())
        .flat_map(|(&a, &b)| [a, b])
        .collect();
    let wide = SignatureMatrix::from_parts(128, words).unwrap();
    let banding = Banding::builder()
        .bits(128)
        .bands(16)
        .width(8)
        .max_distance(6)
        .build()
        .unwrap();
    let (mut join_want, mut banded_want) = (Vec::new(), Vec::new());
    for i in 0..wide.len() {
        for j in i + 1..wide.len() {
            let d = wide.distance(i, j);
            if d <= 5 {
                join_want.push((i as u32, j as u32, d));
            }
            let agree = (0..16).any(|k| banding.key(k, wide.row(i)) == banding.key(k, wide.row(j)));
            if d <= 6 && agree {
                banded_want.push((i as u32, j as u32, d));
            }
        }
    }
    let got: Vec<(u32, u32, u32)> = self_join(&wide, 5)
        .unwrap()
        .iter()
        .map(|p| (p.i, p.j, p.distance))
        .collect();
    assert_eq!(got, join_want);
    assert!(join_want.len() > 1000, "{} pairs", join_want.len());
    let (pairs, stats) = banded_join(&wide, &banding).unwrap();
    assert!(stats.capped.is_empty());
    let got: Vec<(u32, u32, u32)> = pairs.iter().map(|p| (p.i, p.j, p.distance)).collect();
    assert_eq!(got, banded_want);
    let codes: Vec<u64> = (0..1000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let queries = &codes[..8];
    assert_eq!(
        hamming::scan_knn(queries, &codes, 4, 3).unwrap(),
        hamming::scalar::scan_knn(queries, &codes, 4, 3).unwrap()
    );
}

/// Re-runs `dispatch_follows_environment` in a child process with the variable set to
/// `value` and returns the kernel name the child printed.
fn child_kernel(value: Option<&str>) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", "dispatch_follows_environment", "--nocapture"]);
    match value {
        Some(v) => cmd.env(FORCE_SCALAR_ENV, v),
        None => cmd.env_remove(FORCE_SCALAR_ENV),
    };
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "child ran no test: {stdout}");
    let line = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("child printed no {prefix:?}"))
            .to_string()
    };
    format!("{} {}", line("dispatched kernel: "), line("cpu features: "))
}

#[test]
fn force_scalar_variable_selects_scalar() {
    assert_eq!(child_kernel(Some("1")), "scalar scalar");
    assert_eq!(child_kernel(Some("yes")), "scalar scalar");
    let best = format!(
        "{} {}",
        Kernels::best_available().name(),
        cpu::detected().name()
    );
    assert_eq!(child_kernel(Some("0")), best);
    assert_eq!(child_kernel(Some("")), best);
    assert_eq!(child_kernel(None), best);
}
