//! The `SIMLSH_FORCE_SCALAR` switch of the Hamming kernels' dispatch, tested in child
//! processes (the choice is made once per process).

use std::process::Command;

use simlsh::hamming::{self, FORCE_SCALAR_ENV, Kernels};

/// What the dispatch must pick given this process's environment.
fn expected_kernel() -> &'static str {
    match std::env::var_os(FORCE_SCALAR_ENV) {
        Some(v) if !v.is_empty() && v != "0" => "scalar",
        _ => Kernels::best_available().name(),
    }
}

/// Runs in every process (also as an ordinary test): the dispatched set follows the
/// environment, and the dispatched functions give the reference results.
#[test]
fn dispatch_follows_environment() {
    let name = hamming::kernel_name();
    println!("dispatched kernel: {name}");
    assert_eq!(name, expected_kernel());
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
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("dispatched kernel: "))
        .expect("child printed no kernel name")
        .to_string()
}

#[test]
fn force_scalar_variable_selects_scalar() {
    assert_eq!(child_kernel(Some("1")), "scalar");
    assert_eq!(child_kernel(Some("yes")), "scalar");
    let best = Kernels::best_available().name();
    assert_eq!(child_kernel(Some("0")), best);
    assert_eq!(child_kernel(Some("")), best);
    assert_eq!(child_kernel(None), best);
}
