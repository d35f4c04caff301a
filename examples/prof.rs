use simlsh::{HashingTrick, Signer};
fn main() {
    let f: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let w = simlsh::workloads::w1(100_000);
    let csr = w.to_csr().unwrap();
    let ht = HashingTrick::builder().bits(f).build().unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for _ in 0..8 {
        let t = std::time::Instant::now();
        let s = pool.install(|| ht.sign_csr(csr.view()).unwrap());
        let e = t.elapsed().as_secs_f64();
        println!("{:.2} ns/nnz {}", e * 1e9 / w.nnz() as f64, s.len());
    }
}
