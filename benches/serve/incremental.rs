//! Incremental dedup against a rebuild: adding `m` items to a store of `n` (log, delta,
//! segments, background merges, a checkpoint) against building a store of `n + m` at once.
//! Codes (random 64-bit, Manku tables) and documents (synthetic tweets: words of the bundled
//! tweets drawn at random, signed at 256 bits; the rebuild signs every document again, the
//! incremental run only the new ones). Reports wall and CPU seconds (user + sys of the
//! process, merges included: the run waits until the background is idle).
//!
//! ```text
//! cargo run --release -p simlsh-server --example incremental -- DIR [N] [M] [DOCS_N] [DOCS_M]
//! ```
//! defaults: 10,000,000 and 1,000,000 codes, 10,000,000 and 1,000,000 documents (about 11 GB
//! at its peak, 3 minutes on 2 cores; `DIR 10000000 1000000 1000000 100000` for a machine with
//! less memory). The run waits for the background merges by `Store::merging`, so the times
//! hold the merges and no idle polling.

use std::time::{Duration, Instant};

use simlsh::store::{Item, Op, OpenOptions, Prepared, Store};

fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = s
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Waits until the background has merged what it will.
fn settle(store: &Store) {
    while store.merging() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn measure(label: &str, f: impl FnOnce()) -> (f64, f64) {
    let (t, c) = (Instant::now(), cpu());
    f();
    let r = (t.elapsed().as_secs_f64(), cpu() - c);
    println!("{label}: {:.1} s wall, {:.1} s CPU", r.0, r.1);
    r
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::path::PathBuf::from(
        a.first()
            .ok_or("usage: incremental DIR [N] [M] [DOCS_N] [DOCS_M]")?,
    );
    let arg = |i: usize, d: u64| a.get(i).map_or(Ok(d), |s| s.parse());
    let (n, m, dn, dm) = (
        arg(1, 10_000_000)?,
        arg(2, 1_000_000)?,
        arg(3, 10_000_000)?,
        arg(4, 1_000_000)?,
    );
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(7);
    let codes: Vec<u64> = (0..n + m).map(|_| rng.next()).collect();
    let ids: Vec<u64> = (0..n + m).collect();

    // Codes: a rebuild of n + m against adding m to n.
    let (rebuild, rebuild_cpu) = measure(&format!("codes: build {} at once", n + m), || {
        Store::builder()
            .bits(64)
            .create_with_codes(&dir.join("all"), &ids, &codes)
            .unwrap();
    });
    Store::builder().bits(64).create_with_codes(
        &dir.join("inc"),
        &ids[..n as usize],
        &codes[..n as usize],
    )?;
    let store = OpenOptions::new().open(&dir.join("inc"))?;
    let (add, add_cpu) = measure(
        &format!("codes: add {m} to {n} (batches of 10,000, merged, checkpointed)"),
        || {
            for chunk in (n..n + m).collect::<Vec<u64>>().chunks(10_000) {
                let ops = chunk
                    .iter()
                    .map(|&i| Op::Insert {
                        id: i,
                        item: store.prepare(Item::Code(&[codes[i as usize]])).unwrap(),
                    })
                    .collect();
                store.apply(ops).unwrap();
            }
            settle(&store);
            store.checkpoint().unwrap();
        },
    );
    println!(
        "codes: adding costs {:.3} of the rebuild's wall time, {:.3} of its CPU ({} segments)",
        add / rebuild,
        add_cpu / rebuild_cpu,
        store.stats().segments
    );
    store.close()?;

    // Documents: synthetic tweets of 8 to 20 words from the bundled tweets' vocabulary.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/healthtweets-10k/healthtweets-10k.csv"
    ))?;
    let vocab: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.chars().all(char::is_alphanumeric))
        .collect();
    let docs: Vec<String> = (0..dn + dm)
        .map(|_| {
            let k = 8 + rng.next() % 13;
            (0..k)
                .map(|_| vocab[(rng.next() % vocab.len() as u64) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let tok = simlsh::text::Tokenizer::builder().build()?;
    let builder = || Store::builder().tokenizer(tok.clone()).bits(256);
    let tmp = builder().create(&dir.join("signer"))?;
    let prepare = |d: &[String]| -> Vec<Prepared> {
        use rayon::prelude::*;
        d.par_iter()
            .map(|x| tmp.prepare(Item::Text(x)).unwrap())
            .collect()
    };
    let ids: Vec<u64> = (0..dn + dm).collect();
    let (rebuild, rebuild_cpu) = measure(
        &format!("text: sign and build {} documents at once", dn + dm),
        || {
            let p = prepare(&docs);
            builder()
                .create_with(&dir.join("text-all"), &ids, &p)
                .unwrap();
        },
    );
    let p = prepare(&docs[..dn as usize]);
    builder().create_with(&dir.join("text-inc"), &ids[..dn as usize], &p)?;
    drop(p);
    let store = OpenOptions::new().open(&dir.join("text-inc"))?;
    let (add, add_cpu) = measure(
        &format!("text: sign and add {dm} documents to {dn}"),
        || {
            let p = prepare(&docs[dn as usize..]);
            let mut ops: Vec<Op> = Vec::new();
            for (k, item) in p.into_iter().enumerate() {
                ops.push(Op::Insert {
                    id: dn + k as u64,
                    item,
                });
                if ops.len() == 10_000 {
                    store.apply(std::mem::take(&mut ops)).unwrap();
                }
            }
            store.apply(ops).unwrap();
            settle(&store);
            store.checkpoint().unwrap();
        },
    );
    println!(
        "text: adding costs {:.3} of the rebuild's wall time, {:.3} of its CPU",
        add / rebuild,
        add_cpu / rebuild_cpu
    );
    store.close()?;
    tmp.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
