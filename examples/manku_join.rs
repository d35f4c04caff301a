use simlsh::SignatureMatrix;
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}
fn main() {
    let w = simlsh::workloads::w4();
    let sigs = SignatureMatrix::from_parts(64, w.codes.clone()).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for _ in 0..8 {
        let (c, e, n) = pool.install(|| {
            let t = std::time::Instant::now();
            let c = cpu_ns();
            let p = simlsh::join::self_join(&sigs, 3).unwrap();
            (
                (cpu_ns() - c) as f64 * 1e-6,
                t.elapsed().as_secs_f64() * 1e3,
                p.len(),
            )
        });
        println!("join cpu {c:.1} ms wall {e:.1} ms pairs {n}");
    }
}
