//! Writes the fixed workloads W1–W5 as the raw little-endian files of the peer harness
//! (`w1.indptr.i64`, …), so that other tools can run on identical data.
//!
//! `cargo run --release --example write_workloads -- DIR [w1,w2,...]`

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: write_workloads DIR [w1,w2,w3,w4,w5]"))?;
    let which = args.next().unwrap_or_else(|| "w1,w2,w3,w4,w5".into());
    let which: Vec<&str> = which.split(',').collect();
    simlsh_workloads::write_raw(std::path::Path::new(&dir), &which)?;
    Ok(())
}
