//! Creates a code store of `N` random `BITS`-bit codes (SplitMix64 from `SEED`) under ids
//! `0..N`, in one segment built at once, and reports the time and the bytes per code:
//!
//! ```text
//! cargo run --release -p simlsh-server --example mkstore -- DIR N [BITS] [SEED] [INDEX]
//! ```

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::path::PathBuf::from(
        a.first()
            .ok_or("usage: mkstore DIR N [BITS] [SEED] [INDEX]")?,
    );
    let n: u64 = a.get(1).ok_or("N")?.parse()?;
    let bits: usize = a.get(2).map_or(Ok(64), |s| s.parse())?;
    let seed: u64 = a.get(3).map_or(Ok(1), |s| s.parse())?;
    let words = bits.div_ceil(64);
    let mask = if bits.is_multiple_of(64) {
        u64::MAX
    } else {
        (1u64 << (bits % 64)) - 1
    };
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let t = Instant::now();
    let mut codes = Vec::with_capacity(n as usize * words);
    for _ in 0..n {
        for w in 0..words {
            let x = next();
            codes.push(if w + 1 == words { x & mask } else { x });
        }
    }
    let ids: Vec<u64> = (0..n).collect();
    let mut b = simlsh::store::Store::builder().bits(bits);
    if let Some(spec) = a.get(4) {
        b = b.index(spec.parse()?);
    }
    b.create_with_codes(&dir, &ids, &codes)?;
    let secs = t.elapsed().as_secs_f64();
    let bytes: u64 = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{{\"codes\":{n},\"bits\":{bits},\"seconds\":{secs:.2},\"disk_bytes\":{bytes},\"disk_bytes_per_code\":{:.2}}}",
        bytes as f64 / n as f64
    );
    Ok(())
}
