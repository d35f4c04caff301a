//! `simlsh index` end to end: every kind built and queried by the binary gives the results of
//! the library's `LinearScan` oracle; add and remove match the library; bad input names the
//! file; and an `add` killed at any moment leaves a loadable index, old or new.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use simlsh::io::{load_index, save_signatures, write_signatures_npy};
use simlsh::rng::Rng;
use simlsh::{HammingIndex, LinearScan, SignatureMatrix};

mod cli_common;
use cli_common::{ok, simlsh};

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-index-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    simlsh().arg("--quiet").args(args).output().unwrap()
}

/// `n` codes of `bits` bits in clusters: each is a random centre with a few bits flipped, so
/// radius queries find several neighbours.
fn codes(seed: u64, n: usize, bits: usize) -> SignatureMatrix {
    let words = bits.div_ceil(64);
    let mut rng = Rng::new(seed);
    let mask_last = if bits.is_multiple_of(64) {
        u64::MAX
    } else {
        (1u64 << (bits % 64)) - 1
    };
    let centres: Vec<Vec<u64>> = (0..n.div_ceil(8).max(1))
        .map(|_| {
            let mut c: Vec<u64> = (0..words).map(|_| rng.next_u64()).collect();
            c[words - 1] &= mask_last;
            c
        })
        .collect();
    let mut data = Vec::with_capacity(n * words);
    for _ in 0..n {
        let mut c = centres[rng.below(centres.len() as u64) as usize].clone();
        for _ in 0..rng.below(6) {
            let b = rng.below(bits as u64) as usize;
            c[b / 64] ^= 1 << (b % 64);
        }
        data.extend(c);
    }
    SignatureMatrix::from_parts(bits, data).unwrap()
}

/// Parses the TSV of `query` into per-query `(id, distance)` lists, checking the cosine column.
fn parse_tsv(text: &str, queries: usize, bits: usize) -> Vec<Vec<(u32, u32)>> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("query\thit\tdistance\tcosine"));
    let mut out = vec![Vec::new(); queries];
    for l in lines {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 4, "{l}");
        let (q, id, d): (usize, u32, u32) = (
            f[0].parse().unwrap(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        );
        let c: f64 = f[3].parse().unwrap();
        let want = simlsh::estimate::cosine(u64::from(d), bits as u64);
        assert!((c - want).abs() < 1e-6, "{l}: cosine {want} expected");
        out[q].push((id, d));
    }
    out
}

fn lib_hits(r: Vec<Vec<simlsh::Hit>>) -> Vec<Vec<(u32, u32)>> {
    r.into_iter()
        .map(|v| v.into_iter().map(|h| (h.id, h.distance)).collect())
        .collect()
}

const KINDS: [&str; 4] = ["linear", "manku", "mih", "permutation"];

#[test]
fn build_and_query_every_kind_match_linear_scan() {
    let dir = tmp_dir("build");
    let bits = 100;
    let data = codes(1, 3000, bits);
    let queries = codes(1, 60, bits); // same centres: near neighbours exist
    let (sigs, qs) = (dir.join("codes.npy"), dir.join("queries.npy"));
    write_signatures_npy(&sigs, &data).unwrap();
    write_signatures_npy(&qs, &queries).unwrap();
    let oracle = LinearScan::build(&data).unwrap();
    let want_r = lib_hits(oracle.radius_batch(queries.as_slice(), 3).unwrap());
    assert!(
        want_r.iter().map(Vec::len).sum::<usize>() > 60,
        "too few hits to test"
    );
    let want_k = lib_hits(oracle.knn_batch(queries.as_slice(), 5).unwrap());
    for kind in KINDS {
        let idx = dir.join(format!("{kind}.idx"));
        ok(&run(&[
            &"--bits", &"100", &"index", &"build", &sigs, &idx, &"--kind", &kind,
        ]));
        let loaded = load_index(&idx).unwrap();
        assert_eq!((loaded.len(), loaded.bits()), (3000, bits), "{kind}");
        let out = dir.join(format!("{kind}.tsv"));
        let so = ok(&run(&[
            &"index",
            &"query",
            &idx,
            &qs,
            &"--radius",
            &"3",
            &"--out",
            &out,
        ]));
        assert!(so.is_empty());
        let got = parse_tsv(&std::fs::read_to_string(&out).unwrap(), 60, bits);
        assert_eq!(got, want_r, "radius results of {kind}");
        let so = ok(&run(&[&"index", &"query", &idx, &qs, &"--k", &"5"]));
        let got = parse_tsv(&so, 60, bits);
        if loaded.exact_knn() {
            assert_eq!(got, want_k, "k-NN results of {kind}");
        } else {
            // Approximate k-NN: exactly what the library's index of the same parameters
            // answers, with true distances.
            let lib = simlsh::index::PermutationIndex::builder()
                .seed(0)
                .build(&data)
                .unwrap();
            assert_eq!(got, lib_hits(lib.knn_batch(queries.as_slice(), 5).unwrap()));
            for (q, hits) in got.iter().enumerate() {
                assert_eq!(hits.len(), 5);
                for &(id, d) in hits {
                    let h: u32 = data
                        .row(id as usize)
                        .iter()
                        .zip(queries.row(q))
                        .map(|(a, b)| (a ^ b).count_ones())
                        .sum();
                    assert_eq!(h, d);
                }
            }
        }
    }
    // JSON Lines carries the same hits.
    let so = ok(&run(&[
        &"index",
        &"query",
        &dir.join("mih.idx"),
        &qs,
        &"--radius",
        &"3",
        &"--format",
        &"jsonl",
    ]));
    let mut got = vec![Vec::new(); 60];
    for l in so.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let d = v["distance"].as_u64().unwrap();
        let c = v["cosine"].as_f64().unwrap();
        assert!((c - simlsh::estimate::cosine(d, bits as u64)).abs() < 1e-12);
        got[v["query"].as_u64().unwrap() as usize]
            .push((v["hit"].as_u64().unwrap() as u32, d as u32));
    }
    assert_eq!(got, want_r);
    // A simlsh signature file works as input too, and --bits defaults to 64 x words.
    let sfile = dir.join("codes.sig");
    save_signatures(&sfile, &data, None).unwrap();
    let idx = dir.join("from-sig.idx");
    ok(&run(&[
        &"index", &"build", &sfile, &idx, &"--kind", &"linear",
    ]));
    assert_eq!(load_index(&idx).unwrap().bits(), 100);
    ok(&run(&[
        &"index", &"build", &sigs, &idx, &"--kind", &"linear",
    ]));
    assert_eq!(load_index(&idx).unwrap().bits(), 128);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn add_and_remove_match_the_library() {
    let dir = tmp_dir("change");
    let bits = 64;
    let data = codes(2, 1200, bits);
    let first = SignatureMatrix::from_parts(bits, data.as_slice()[..1000].to_vec()).unwrap();
    let more = SignatureMatrix::from_parts(bits, data.as_slice()[1000..].to_vec()).unwrap();
    let queries = codes(2, 40, bits);
    let (a, b, qs) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("q.npy"));
    write_signatures_npy(&a, &first).unwrap();
    write_signatures_npy(&b, &more).unwrap();
    write_signatures_npy(&qs, &queries).unwrap();
    let removed: Vec<u32> = (0..1200).step_by(7).collect();
    let ids_file = dir.join("ids.txt");
    let half = removed.len() / 2;
    std::fs::write(
        &ids_file,
        removed[half..]
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let list = removed[..half]
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut oracle = LinearScan::build(&data).unwrap();
    for &id in &removed {
        assert!(oracle.remove(id).unwrap());
    }
    let want = lib_hits(oracle.radius_batch(queries.as_slice(), 4).unwrap());
    for kind in KINDS {
        let idx = dir.join(format!("{kind}.idx"));
        ok(&run(&[&"index", &"build", &a, &idx, &"--kind", &kind]));
        ok(&run(&[&"index", &"add", &idx, &b, &"--first-id", &"1000"]));
        assert_eq!(load_index(&idx).unwrap().len(), 1200, "{kind}");
        ok(&run(&[&"index", &"remove", &idx, &"--ids", &list]));
        ok(&run(&[&"index", &"remove", &idx, &"--ids-file", &ids_file]));
        let loaded = load_index(&idx).unwrap();
        assert_eq!(loaded.len(), oracle.len(), "{kind}");
        let so = ok(&run(&[&"index", &"query", &idx, &qs, &"--radius", &"4"]));
        assert_eq!(
            parse_tsv(&so, 40, bits),
            want,
            "{kind} after add and remove"
        );
        // Re-adding an id that is stored fails and leaves the file as it was.
        let out = run(&[&"index", &"add", &idx, &b, &"--first-id", &"1001"]);
        assert!(!out.status.success(), "{kind}: duplicate id accepted");
        assert_eq!(load_index(&idx).unwrap().len(), oracle.len());
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && !n.ends_with(".lock"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn info_reports_kind_size_and_parameters() {
    let dir = tmp_dir("info");
    let data = codes(3, 500, 64);
    let sigs = dir.join("c.npy");
    write_signatures_npy(&sigs, &data).unwrap();
    for kind in KINDS {
        let idx = dir.join(format!("{kind}.idx"));
        ok(&run(&[
            &"index",
            &"build",
            &sigs,
            &idx,
            &"--kind",
            &if kind == "manku" { "manku:k=2" } else { kind },
        ]));
        let lib = load_index(&idx).unwrap();
        let text = ok(&run(&[&"index", &"info", &idx]));
        let field = |k: &str| -> String {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}\t")))
                .unwrap_or_else(|| panic!("no {k} in {text}"))
                .to_string()
        };
        assert_eq!(field("kind"), kind);
        assert_eq!(lib.kind(), kind);
        assert_eq!(field("bits"), "64");
        assert_eq!(field("len"), "500");
        assert_eq!(field("bytes"), lib.bytes().to_string());
        let per: f64 = field("bytes_per_code").parse().unwrap();
        assert!((per - lib.bytes() as f64 / 500.0).abs() < 0.01);
        assert_eq!(field("param.len"), "500");
        if kind == "manku" {
            assert_eq!(field("param.radius"), "2");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fails_naming(out: &Output, file: &Path) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&file.display().to_string()),
        "error does not name {}: {err}",
        file.display()
    );
}

#[test]
fn bad_inputs_fail_naming_the_file() {
    let dir = tmp_dir("bad");
    let missing = dir.join("missing.npy");
    let idx = dir.join("x.idx");
    fails_naming(
        &run(&[&"index", &"build", &missing, &idx, &"--kind", &"linear"]),
        &missing,
    );
    assert!(!idx.exists());
    // A float64 .npy is not a code matrix.
    let f64npy = dir.join("floats.npy");
    ndarray_npy::write_npy(&f64npy, &ndarray::Array2::<f64>::zeros((3, 2))).unwrap();
    fails_naming(
        &run(&[&"index", &"build", &f64npy, &idx, &"--kind", &"mih"]),
        &f64npy,
    );
    // A truncated index file.
    let data = codes(4, 300, 64);
    let sigs = dir.join("c.npy");
    write_signatures_npy(&sigs, &data).unwrap();
    ok(&run(&[
        &"index", &"build", &sigs, &idx, &"--kind", &"manku",
    ]));
    let bytes = std::fs::read(&idx).unwrap();
    let corrupt = dir.join("corrupt.idx");
    std::fs::write(&corrupt, &bytes[..bytes.len() / 2]).unwrap();
    fails_naming(&run(&[&"index", &"info", &corrupt]), &corrupt);
    fails_naming(
        &run(&[&"index", &"query", &corrupt, &sigs, &"--k", &"3"]),
        &corrupt,
    );
    fails_naming(
        &run(&[&"index", &"add", &corrupt, &sigs, &"--first-id", &"300"]),
        &corrupt,
    );
    assert_eq!(std::fs::read(&corrupt).unwrap(), &bytes[..bytes.len() / 2]);
    // Queries of another width.
    let wide = dir.join("wide.npy");
    write_signatures_npy(&wide, &codes(4, 5, 128)).unwrap();
    fails_naming(
        &run(&[&"index", &"query", &idx, &wide, &"--radius", &"3"]),
        &wide,
    );
    // A signature file is not an index.
    fails_naming(&run(&[&"index", &"info", &sigs]), &sigs);
    // Every subcommand's help shows an example.
    for sub in ["build", "add", "remove", "query", "info"] {
        let h = ok(&simlsh().args(["index", sub, "--help"]).output().unwrap());
        assert!(h.contains("Example:\n  simlsh index"), "{sub}: {h}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files starting with '.' in `dir`: the temporaries of atomic writes.
/// Temporary files in `dir` (hidden files other than the indexes' lock files, which stay).
fn temporaries(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .into_owned();
            name.starts_with('.') && !name.ends_with(".lock")
        })
        .count()
}

#[test]
fn concurrent_adds_and_removes_lose_no_update() {
    let dir = tmp_dir("concurrent");
    let base = codes(21, 20_000, 64);
    let sigs = dir.join("base.npy");
    write_signatures_npy(&sigs, &base).unwrap();
    for kind in KINDS {
        let idx = dir.join(format!("{kind}.idx"));
        ok(&run(&[&"index", &"build", &sigs, &idx, &"--kind", &kind]));
        // Eight writers at once: four add 20,000 codes each under their own ids, four remove
        // disjoint sets of the base ids. Without the lock, each read-modify-write would
        // replace the others' and updates would be lost.
        let children: Vec<_> = (0..8u32)
            .map(|w| {
                let mut c = simlsh();
                c.arg("--quiet").arg("index");
                if w % 2 == 0 {
                    c.arg("add")
                        .arg(&idx)
                        .arg(&sigs)
                        .args(["--first-id", &(100_000 * (w + 1)).to_string()]);
                } else {
                    let ids: Vec<String> = (0..1000).map(|k| (w * 1000 + k).to_string()).collect();
                    c.arg("remove").arg(&idx).args(["--ids", &ids.join(",")]);
                }
                c.spawn().unwrap()
            })
            .collect();
        for c in children {
            assert!(c.wait_with_output().unwrap().status.success(), "{kind}");
        }
        let loaded = load_index(&idx).unwrap();
        assert_eq!(
            loaded.len(),
            20_000 + 4 * 20_000 - 4 * 1000,
            "{kind}: an update was lost"
        );
        for w in [0u32, 2, 4, 6] {
            let q = base.row(7);
            let hits = loaded.radius(q, 0).unwrap();
            assert!(
                hits.iter().any(|h| h.id == 100_000 * (w + 1) + 7),
                "{kind}: writer {w}"
            );
        }
        for w in [1u32, 3, 5, 7] {
            let id = w * 1000 + 3;
            let hits = loaded.radius(base.row(id as usize), 0).unwrap();
            assert!(
                !hits.iter().any(|h| h.id == id),
                "{kind}: removal of {id} lost"
            );
        }
        ok(&run(&[&"index", &"verify", &idx]));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn verify_finds_every_corruption_that_open_does_not_read() {
    let dir = tmp_dir("verify");
    let sigs = dir.join("c.npy");
    write_signatures_npy(&sigs, &codes(8, 5000, 64)).unwrap();
    let idx = dir.join("c.idx");
    ok(&run(&[
        &"index", &"build", &sigs, &idx, &"--kind", &"manku",
    ]));
    let out = ok(&run(&[&"index", &"verify", &idx]));
    assert!(out.ends_with("c.idx: ok\n"), "{out}");
    let mut bytes = std::fs::read(&idx).unwrap();
    // A flipped bit in the middle of the data: opening only checks the bounds, verify reads
    // every byte.
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    let bad = dir.join("bad.idx");
    std::fs::write(&bad, &bytes).unwrap();
    let out = run(&[&"index", &"verify", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.idx") && err.contains("checksum"), "{err}");
    // The kinds are listed from the library's table.
    let kinds = ok(&run(&[&"index", &"kinds"]));
    for k in KINDS {
        assert!(kinds.contains(&format!("  {k}: ")), "{kinds}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `add` killed at growing delays: after each kill the index loads and holds the old or the
/// new codes, never anything else. Killed runs may leave their `.NAME.tmp-PID` file; the
/// completed run deletes those of dead processes, so none is left at the end.
#[test]
fn killed_add_leaves_the_old_or_the_new_index() {
    let dir = tmp_dir("kill");
    let n = 2_000_000;
    let mut rng = Rng::new(5);
    let big = SignatureMatrix::from_parts(64, (0..n).map(|_| rng.next_u64()).collect::<Vec<u64>>())
        .unwrap();
    let idx = dir.join("big.idx");
    LinearScan::build(&big).unwrap().save(&idx).unwrap();
    drop(big);
    let m = 1000;
    let more = dir.join("more.npy");
    write_signatures_npy(
        &more,
        &SignatureMatrix::from_parts(64, (0..m).map(|_| rng.next_u64()).collect::<Vec<u64>>())
            .unwrap(),
    )
    .unwrap();
    let mut completed = false;
    let mut kills = 0;
    let mut torn_writes = 0;
    // Delays 0, 2, 4, ... ms: dense enough to land inside the save on a fast machine; they
    // grow until a run completes (at the latest the 60 s step on a very slow one).
    let delays = (0u64..200).map(|i| 2 * i).chain([1000, 4000, 60_000]);
    for delay_ms in delays {
        let before = load_index(&idx).unwrap().len();
        let mut child = simlsh()
            .args(["--quiet", "index", "add"])
            .arg(&idx)
            .arg(&more)
            .arg("--first-id")
            .arg(before.to_string())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let done = child.try_wait().unwrap();
        if done.is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        let status = child.wait().unwrap();
        if done.is_none() && temporaries(&dir) > 0 {
            torn_writes += 1;
        }
        let after = load_index(&idx)
            .unwrap_or_else(|e| panic!("index unloadable after a kill at {delay_ms} ms: {e}"))
            .len();
        assert!(
            after == before || after == before + m,
            "{after} codes after a kill at {delay_ms} ms ({before} before)"
        );
        if done.is_some() {
            assert!(status.success());
            assert_eq!(after, before + m);
            completed = true;
            break;
        }
    }
    assert!(completed, "no add completed");
    assert!(kills > 0, "no run was killed: the test tested nothing");
    eprintln!("{kills} runs killed, {torn_writes} of them inside the save");
    assert_eq!(temporaries(&dir), 0, "temporary files left");
    std::fs::remove_dir_all(&dir).unwrap();
}
