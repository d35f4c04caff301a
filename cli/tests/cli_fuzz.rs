//! Byte-mutation campaign of the command line's Parquet reader: Parquet files as Spark, pandas
//! and polars write them (texts with ids, dense and sparse vectors, Spark ML vectors, codes;
//! every compression the reader takes; dictionary-encoded strings) are damaged (bit flips
//! concentrated on the footer's metadata, random bytes anywhere, truncations, a footer length
//! that lies), and each damaged file is read by `simlsh` in a process of its own under an
//! address-space cap. Every run must end with exit status 0 (the damage was harmless) or 1 (an
//! error naming the file): never a panic, an abort (a signal) or a hang.
//!
//! `SIMLSH_FUZZ_SCALE=N` multiplies the mutations per seed (the long mode; the default runs in
//! about a minute on two cores).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int32Array, Int64Array, ListArray,
    RecordBatch, StringArray, StructArray,
};
use arrow_schema::{DataType, Field, Fields};
use parquet::arrow::ArrowWriter;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use simlsh::rng::Rng;

/// The address-space cap of each run, in KiB (2 GiB).
const CAP_KIB: u64 = 2 << 20;
/// The time a run may take.
const TIMEOUT: Duration = Duration::from_secs(20);

fn tmp_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One seed: its bytes and the command-line arguments (after the input path) that read it.
struct Seed {
    name: String,
    bytes: Vec<u8>,
    args: Vec<&'static str>,
}

fn write(batch: RecordBatch, compression: Compression, dictionary: bool) -> Vec<u8> {
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_dictionary_enabled(dictionary)
        .set_max_row_group_row_count(Some(64))
        .build();
    let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.into_inner().unwrap()
}

fn seeds() -> Vec<Seed> {
    let mut rng = Rng::new(41);
    let n = 150;
    let words = ["alpha", "beta", "gamma", "delta", "中文", "naïve", "x"];
    let texts: Vec<String> = (0..n)
        .map(|_| {
            (0..6)
                .map(|_| words[rng.below(words.len() as u64) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let ids: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
    let list = |values: ArrayRef, offsets: Vec<i32>, item: DataType| -> ArrayRef {
        Arc::new(ListArray::new(
            Arc::new(Field::new("item", item, true)),
            arrow_buffer::OffsetBuffer::new(offsets.into()),
            values,
            None,
        ))
    };
    let dim = 8usize;
    let dense: Vec<f32> = (0..n * dim).map(|_| rng.gaussian() as f32).collect();
    let (mut idx, mut val, mut offs) = (Vec::new(), Vec::new(), vec![0i32]);
    for _ in 0..n {
        let mut cols: Vec<i32> = (0..1 + rng.below(6))
            .map(|_| rng.below(100) as i32)
            .collect();
        cols.sort_unstable();
        cols.dedup();
        for c in cols {
            idx.push(c);
            val.push(rng.gaussian());
        }
        offs.push(idx.len() as i32);
    }
    let indices = list(
        Arc::new(Int32Array::from(idx)),
        offs.clone(),
        DataType::Int32,
    );
    let values = list(
        Arc::new(Float64Array::from(val)),
        offs.clone(),
        DataType::Float64,
    );
    let spark = StructArray::new(
        Fields::from(vec![
            Field::new("type", DataType::Int8, false),
            Field::new("size", DataType::Int32, true),
            Field::new("indices", indices.data_type().clone(), true),
            Field::new("values", values.data_type().clone(), true),
        ]),
        vec![
            Arc::new(arrow_array::Int8Array::from(vec![0i8; n])),
            Arc::new(Int32Array::from(vec![100; n])),
            indices.clone(),
            values.clone(),
        ],
        None,
    );
    let codes: Vec<i64> = (0..n).map(|_| rng.next_u64() as i64).collect();
    let code_lists = list(
        Arc::new(Int64Array::from(
            (0..2 * n)
                .map(|_| rng.next_u64() as i64)
                .collect::<Vec<_>>(),
        )),
        (0..=n as i32).map(|i| 2 * i).collect(),
        DataType::Int64,
    );
    let fixed: ArrayRef = Arc::new(FixedSizeListArray::new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        dim as i32,
        Arc::new(Float32Array::from(dense)),
        None,
    ));
    let batch = |cols: Vec<(&str, ArrayRef)>| RecordBatch::try_from_iter(cols).unwrap();
    let text_batch = batch(vec![
        ("id", Arc::new(StringArray::from(ids.clone())) as ArrayRef),
        ("text", Arc::new(StringArray::from(texts.clone()))),
    ]);
    let mut out = Vec::new();
    for (cname, c) in [
        ("snappy", Compression::SNAPPY),
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
        ("lz4", Compression::LZ4_RAW),
        ("brotli", Compression::BROTLI(BrotliLevel::default())),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("none", Compression::UNCOMPRESSED),
    ] {
        out.push(Seed {
            name: format!("texts with ids, {cname}"),
            bytes: write(text_batch.clone(), c, cname == "snappy"),
            args: vec!["--id-field", "id", "--radius", "3"],
        });
    }
    let seeds: [(&str, RecordBatch, Vec<&'static str>); 5] = [
        (
            "dense fixed-size lists",
            batch(vec![("vector", fixed)]),
            vec!["--field", "vector", "--radius", "8"],
        ),
        (
            "Spark ML vectors",
            batch(vec![("features", Arc::new(spark) as ArrayRef)]),
            vec!["--field", "features", "--radius", "8"],
        ),
        (
            "indices and values lists",
            batch(vec![("indices", indices), ("values", values)]),
            vec!["--field", "indices,values", "--radius", "8"],
        ),
        (
            "bigint codes",
            batch(vec![("sig", Arc::new(Int64Array::from(codes)) as ArrayRef)]),
            vec!["--field", "sig", "--radius", "3"],
        ),
        (
            "lists of bigint codes",
            batch(vec![("sig", code_lists)]),
            vec!["--field", "sig", "--radius", "3"],
        ),
    ];
    for (name, b, args) in seeds {
        out.push(Seed {
            name: name.into(),
            bytes: write(b, Compression::SNAPPY, true),
            args,
        });
    }
    out
}

/// The damaged versions of `seed`: bit flips in the footer's metadata, random bytes
/// anywhere, truncations, and a footer length that lies.
fn mutations(rng: &mut Rng, bytes: &[u8], scale: usize) -> Vec<(String, Vec<u8>)> {
    let n = bytes.len();
    let meta = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let start = n - 8 - meta;
    let mut out = Vec::new();
    for _ in 0..30 * scale {
        let k = start + rng.below(meta as u64) as usize;
        let mut b = bytes.to_vec();
        b[k] ^= 1 << rng.below(8);
        out.push((format!("footer byte {k} flipped"), b));
    }
    for _ in 0..10 * scale {
        let mut b = bytes.to_vec();
        for _ in 0..1 + rng.below(4) {
            let k = rng.below(n as u64) as usize;
            b[k] = rng.next_u64() as u8;
        }
        out.push(("random bytes".into(), b));
    }
    for t in 1..6 {
        out.push((
            format!("truncated to {}", n * t / 6),
            bytes[..n * t / 6].to_vec(),
        ));
    }
    for lie in [0u32, 1, meta as u32 + 1, u32::MAX] {
        let mut b = bytes.to_vec();
        b[n - 8..n - 4].copy_from_slice(&lie.to_le_bytes());
        out.push((format!("footer length {lie}"), b));
    }
    out
}

/// How one run ended.
#[derive(Debug)]
enum End {
    Ok,
    Error,
    Defect(String),
}

fn run(path: &Path, args: &[&str]) -> End {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_simlsh"))
        .args(["-q", "--threads", "1", "dedup"])
        .arg(path)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return match status.code() {
                Some(0) => End::Ok,
                Some(1)
                    if err.contains(&path.display().to_string()) && !err.contains("panicked") =>
                {
                    End::Error
                }
                _ => End::Defect(format!("{status}: {}", err.trim())),
            };
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return End::Defect("hang".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn damaged_parquet_files_are_errors_never_panics_aborts_or_hangs() {
    let scale = std::env::var("SIMLSH_FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize);
    let dir = tmp_dir();
    let mut rng = Rng::new(7);
    let mut cases = Vec::new();
    for seed in seeds() {
        let p = dir.join(format!("{}.parquet", cases.len()));
        std::fs::write(&p, &seed.bytes).unwrap();
        assert!(
            matches!(run(&p, &seed.args), End::Ok),
            "the seed {} does not read",
            seed.name
        );
        for (what, bytes) in mutations(&mut rng, &seed.bytes, scale) {
            let p = dir.join(format!("{}.parquet", cases.len()));
            std::fs::write(&p, bytes).unwrap();
            cases.push((format!("{}: {what}", seed.name), p, seed.args.clone()));
        }
    }
    // Two runs at a time (each run is one thread).
    let results: Vec<End> = std::thread::scope(|s| {
        let half = cases.len().div_ceil(2);
        let parts: Vec<_> = cases
            .chunks(half)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(_, p, args)| run(p, args))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let (mut ok, mut errors, mut defects) = (0, 0, Vec::new());
    for ((what, p, _), r) in cases.iter().zip(&results) {
        match r {
            End::Ok => ok += 1,
            End::Error => errors += 1,
            End::Defect(d) => defects.push(format!("{what} ({}): {d}", p.display())),
        }
    }
    println!(
        "{} damaged Parquet files: {ok} read, {errors} errors naming the file, {} defects",
        cases.len(),
        defects.len()
    );
    assert!(defects.is_empty(), "{}", defects.join("\n"));
    assert!(errors > cases.len() / 4, "{errors} errors");
    let _ = std::fs::remove_dir_all(&dir);
}
