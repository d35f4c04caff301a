//! Measures reading a SciPy sparse `.npz`: time, throughput and peak memory (`VmHWM`) of
//! `simlsh::io::read_npz_csr`, on W1 (100,000 × 2^20, 19.7M entries: 158 MB of arrays)
//! written as `scipy.sparse.save_npz` does.
//!
//! ```text
//! cargo run --release --example read_npz -- write DIR      # DIR/w1.npz, DIR/w1-deflated.npz
//! cargo run --release --example read_npz -- read FILE [N]  # N timed reads (default 5)
//! ```
//!
//! `write` builds the archive as `scipy.sparse.save_npz(path, m, compressed=False)` (and
//! `compressed=True`) of W1 writes it: members `indices` (int32), `indptr` (int32), `format`
//! (`|S3`), `shape` (int64), `data` (float32), zip64 local headers like NumPy's. `read` runs in
//! its own process so that the peak resident memory it reports is the reader's alone.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

/// A NumPy 1.0 `.npy` image: header padded to a multiple of 64 bytes, then the data.
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut h =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}").into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend((h.len() as u16).to_le_bytes());
    v.extend(h);
    v.extend_from_slice(data);
    v
}

fn le<T: Copy>(v: &[T], f: impl Fn(T) -> [u8; 4]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

fn write(dir: &Path) -> anyhow::Result<()> {
    let w1 = simlsh_workloads::w1(simlsh_workloads::W1::ROWS);
    let nnz = w1.nnz();
    let indptr: Vec<i32> = w1.indptr.iter().map(|&p| p as i32).collect();
    let members = [
        (
            "indices.npy",
            npy(
                "<i4",
                &format!("({nnz},)"),
                &le(&w1.indices, |x| (x as i32).to_le_bytes()),
            ),
        ),
        (
            "indptr.npy",
            npy(
                "<i4",
                &format!("({},)", indptr.len()),
                &le(&indptr, i32::to_le_bytes),
            ),
        ),
        ("format.npy", npy("|S3", "()", b"csr")),
        (
            "shape.npy",
            npy(
                "<i8",
                "(2,)",
                &[
                    (w1.rows() as i64).to_le_bytes(),
                    (w1.dim as i64).to_le_bytes(),
                ]
                .concat(),
            ),
        ),
        (
            "data.npy",
            npy("<f4", &format!("({nnz},)"), &le(&w1.data, f32::to_le_bytes)),
        ),
    ];
    std::fs::create_dir_all(dir)?;
    for (name, method) in [
        ("w1.npz", CompressionMethod::Stored),
        ("w1-deflated.npz", CompressionMethod::Deflated),
    ] {
        let path = dir.join(name);
        let mut z = zip::ZipWriter::new(std::fs::File::create(&path)?);
        for (m, bytes) in &members {
            z.start_file(
                *m,
                SimpleFileOptions::default()
                    .compression_method(method)
                    .large_file(true),
            )?;
            z.write_all(bytes)?;
        }
        z.finish()?;
        println!(
            "{}: {} bytes ({} rows, {nnz} entries)",
            path.display(),
            std::fs::metadata(&path)?.len(),
            w1.rows()
        );
    }
    Ok(())
}

/// A `kB` field of `/proc/self/status`, in bytes.
fn status(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// CPU time (user + system) of this process so far, in seconds (`/proc/self/stat`, at the
/// usual 100 ticks per second).
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 of the whole line: utime, stime (here 12 and 13 after the name).
    (f.get(11).unwrap_or(&0) + f.get(12).unwrap_or(&0)) as f64 / 100.0
}

fn read(path: &Path, repeats: usize) -> anyhow::Result<()> {
    let len = std::fs::metadata(path)?.len();
    let before = status("VmHWM:").unwrap_or(0);
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut shape = (0, 0, 0);
    for _ in 0..repeats {
        let (t, c) = (Instant::now(), cpu_seconds());
        let m = simlsh::io::read_npz_csr(path)?;
        times.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
        shape = (m.rows(), m.cols(), m.nnz());
        drop(m);
    }
    cpu.sort_by(f64::total_cmp);
    let peak = status("VmHWM:").unwrap_or(0);
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "{}: {:.1} MB, {} × {} with {} entries",
        path.display(),
        mb(len),
        shape.0,
        shape.1,
        shape.2
    );
    println!(
        "read_npz_csr: median {:.3} s, best {:.3} s of {repeats} ({:.2} GB/s at the median)",
        median,
        times[0],
        len as f64 / median / 1e9
    );
    let cpu_median = cpu[cpu.len() / 2];
    println!(
        "CPU time (user + system): median {cpu_median:.3} s per read ({:.2} GB/s of CPU time)",
        len as f64 / cpu_median / 1e9
    );
    println!(
        "peak resident memory {:.1} MB ({:.2} × the file; {:.1} MB before reading)",
        mb(peak),
        peak as f64 / len as f64,
        mb(before)
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["write", dir] => write(Path::new(dir)),
        ["read", file] => read(Path::new(file), 5),
        ["read", file, n] => read(Path::new(file), n.parse()?),
        _ => anyhow::bail!("usage: read_npz write DIR | read FILE [REPEATS]"),
    }
}
