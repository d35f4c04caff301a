//! `simlsh index` end to end: every kind built and queried by the binary gives the results of
//! the library's `LinearScan` oracle; add and remove match the library; bad input names the
//! file; and an `add` killed at any moment leaves a loadable index, old or new.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use simlsh::io::write_signatures_npy;
use simlsh::persist::{load_index, save_signatures};
use simlsh::rng::Rng;
use simlsh::{HammingIndex, LinearScan, SignatureMatrix, Signer};

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
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "temporary or lock files left: {names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn add_without_first_id_takes_the_librarys_default_ids() {
    // The ids of `index add` without --first-id are the library's NextIds (as Python's
    // Index.add without ids): one past the largest id stored, after a remove too.
    let dir = tmp_dir("default-ids");
    let (a, b) = (codes(21, 300, 64), codes(22, 50, 64));
    let (fa, fb) = (dir.join("a.npy"), dir.join("b.npy"));
    write_signatures_npy(&fa, &a).unwrap();
    write_signatures_npy(&fb, &b).unwrap();
    // The oracle: the library's index under the same operations.
    let mut oracle = LinearScan::build(&a).unwrap();
    let add = |oracle: &mut LinearScan| {
        // Each command is a new process: a new counter.
        let ids = simlsh::index::NextIds::default()
            .ids(&*oracle, b.len())
            .unwrap();
        oracle.insert_batch(&ids, b.as_slice()).unwrap();
        ids
    };
    assert_eq!(add(&mut oracle), (300..350).collect::<Vec<u32>>());
    for id in [349, 348, 7] {
        assert!(oracle.remove(id).unwrap());
    }
    // The largest id held is 347: the next ones follow it.
    assert_eq!(add(&mut oracle), (348..398).collect::<Vec<u32>>());
    for kind in KINDS {
        let idx = dir.join(format!("{kind}.idx"));
        ok(&run(&[&"index", &"build", &fa, &idx, &"--kind", &kind]));
        ok(&run(&[&"index", &"add", &idx, &fb]));
        ok(&run(&[&"index", &"remove", &idx, &"--ids", &"349,348,7"]));
        ok(&run(&[&"index", &"add", &idx, &fb]));
        let loaded = load_index(&idx).unwrap();
        assert_eq!(loaded.len(), oracle.len(), "{kind}");
        let all = |i: &dyn HammingIndex| {
            let mut h = i.radius(&[0], 64).unwrap();
            h.sort_by_key(|h| h.id);
            h.iter().map(|h| h.id).collect::<Vec<_>>()
        };
        assert_eq!(all(loaded.as_ref()), all(&oracle), "{kind}");
    }
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
    // A .npy that is neither codes nor vectors.
    let garbage = dir.join("garbage.npy");
    std::fs::write(&garbage, b"\x93NUMPY\x01\x00garbage").unwrap();
    fails_naming(
        &run(&[&"index", &"build", &garbage, &idx, &"--kind", &"mih"]),
        &garbage,
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
/// Temporary files in `dir` (hidden files: the lock of an index is the file's own, no file
/// is made for it).
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
            name.starts_with('.')
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
    simlsh::persist::save_index(&LinearScan::build(&big).unwrap(), &idx).unwrap();
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

// ---- Signed indexes: the signer recorded, queries signed like the index, re-ranking ----

/// `n` vectors of dimension `dim` in clusters of 30 around random centres (cosine within a
/// cluster about 0.94, between clusters about N(0, 1/dim)), and `q` queries, each a member of
/// a random cluster perturbed a little: the true top 10 of a query are among its cluster's
/// 30, in an order the signatures only approximate.
fn clustered(
    seed: u64,
    n: usize,
    q: usize,
    dim: usize,
) -> (ndarray::Array2<f32>, ndarray::Array2<f32>) {
    let mut rng = Rng::new(seed);
    let mut gauss = |s: f64| (rng.gaussian() * s) as f32;
    let centres: Vec<Vec<f32>> = (0..n.div_ceil(30))
        .map(|_| (0..dim).map(|_| gauss(1.0)).collect())
        .collect();
    let base = ndarray::Array2::from_shape_fn((n, dim), |(i, j)| centres[i / 30][j] + gauss(0.25));
    let mut pick = Rng::new(seed ^ 0x5eed);
    let picks: Vec<usize> = (0..q).map(|_| pick.below(n as u64) as usize).collect();
    let mut rng = Rng::new(seed + 1);
    let queries = ndarray::Array2::from_shape_fn((q, dim), |(i, j)| {
        base[[picks[i], j]] + (rng.gaussian() * 0.1) as f32
    });
    (base, queries)
}

/// The exact cosine of two rows, in f64 from the f32 values.
fn cos64(a: ndarray::ArrayView1<f32>, b: ndarray::ArrayView1<f32>) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    ab / (aa.sqrt() * bb.sqrt())
}

/// Parses `query` TSV output: per query, `(hit, distance, cosine)` in output order; checks the
/// header's last column.
fn parse_rows(text: &str, queries: usize, cos: &str) -> Vec<Vec<(u32, u32, f64)>> {
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(format!("query\thit\tdistance\t{cos}").as_str())
    );
    let mut out = vec![Vec::new(); queries];
    for l in lines {
        let f: Vec<&str> = l.split('\t').collect();
        out[f[0].parse::<usize>().unwrap()].push((
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
            f[3].parse().unwrap(),
        ));
    }
    out
}

/// Vectors queried against an index built from vectors are signed with the index's recorded
/// signer (the results equal the library's exact k-NN of the queries signed by the spec the
/// index records); `--rerank M` gives the k of highest exact cosine among the M nearest by
/// Hamming (checked against an f64 oracle), with the exact cosines of the f32 inputs, and its
/// recall against the brute-force exact top k within the binomial bound.
#[test]
fn query_vectors_signed_by_the_index_and_reranked_by_exact_cosine() {
    let dir = tmp_dir("rerank");
    let (n, nq, dim, k, m) = (2000, 100, 32, 10, 100);
    let (base, queries) = clustered(11, n, nq, dim);
    let (bp, qp, idx) = (dir.join("base.npy"), dir.join("q.npy"), dir.join("b.idx"));
    ndarray_npy::write_npy(&bp, &base).unwrap();
    ndarray_npy::write_npy(&qp, &queries).unwrap();
    ok(&run(&[
        &"--bits",
        &"128",
        &"--seed",
        &"7",
        &"index",
        &"build",
        &bp,
        &idx,
        &"--kind",
        &"mih",
        &"--signer",
        &"gaussian",
    ]));
    // The index records its signer, and it rebuilds the signer of its codes.
    let lib = load_index(&idx).unwrap();
    let spec = lib.signer_spec().unwrap().unwrap();
    assert_eq!(spec.to_string(), "gaussian");
    assert_eq!((spec.bits, spec.seed, spec.dim), (128, 7, Some(dim as u64)));
    let signer = spec.build(None).unwrap();
    let (bs, qs) = (
        signer.sign_dense(&base).unwrap(),
        signer.sign_dense(&queries).unwrap(),
    );
    let oracle = LinearScan::build(&bs).unwrap();
    let info = ok(&run(&[&"index", &"info", &idx]));
    assert!(
        info.contains("signer\tgaussian (f=128, seed=7, D=32)"),
        "{info}"
    );

    // Plain k-NN: the queries signed by the recorded signer, whatever --seed says now.
    let out = ok(&run(&[
        &"--seed", &"99", &"index", &"query", &idx, &qp, &"--k", &"10",
    ]));
    let got = parse_tsv(&out, nq, 128);
    assert_eq!(got, lib_hits(oracle.knn_batch(qs.as_slice(), k).unwrap()));

    // Re-ranked.
    let out = ok(&run(&[
        &"index",
        &"query",
        &idx,
        &qp,
        &"--k",
        &"10",
        &"--rerank",
        &"100",
        &"--vectors",
        &bp,
    ]));
    let rows = parse_rows(&out, nq, "exact_cosine");
    let cands = oracle.knn_batch(qs.as_slice(), m).unwrap();
    let (mut found, mut hamming_found) = (0usize, 0usize);
    for (q, hits) in rows.iter().enumerate() {
        assert_eq!(hits.len(), k, "query {q}");
        // The oracle: the M Hamming candidates by f64 exact cosine.
        let mut scored: Vec<(u32, f64)> = cands[q]
            .iter()
            .map(|h| (h.id, cos64(queries.row(q), base.row(h.id as usize))))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let kth = scored[k - 1].1;
        for (r, &(id, d, c)) in hits.iter().enumerate() {
            let exact = cos64(queries.row(q), base.row(id as usize));
            assert!(
                (c - exact).abs() < 1e-6,
                "query {q} hit {id}: {c} vs {exact}"
            );
            assert_eq!(
                d,
                simlsh::hamming::distance(qs.row(q), bs.row(id as usize)).unwrap()
            );
            assert!(cands[q].iter().any(|h| h.id == id), "{id} not a candidate");
            assert!(
                exact >= kth - 1e-6,
                "query {q}: {id} ({exact}) below the k-th {kth}"
            );
            if r > 0 {
                assert!(c <= hits[r - 1].2, "query {q}: not sorted by cosine");
            }
        }
        // Recall against the brute-force exact top k over the whole base.
        let mut all: Vec<(usize, f64)> = (0..n)
            .map(|i| (i, cos64(queries.row(q), base.row(i))))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        let truth: Vec<u32> = all[..k].iter().map(|p| p.0 as u32).collect();
        found += hits.iter().filter(|h| truth.contains(&h.0)).count();
        hamming_found += cands[q][..k]
            .iter()
            .filter(|h| truth.contains(&h.id))
            .count();
    }
    // A true neighbour (in the query's cluster: angle ≲ 0.4 rad, Hamming distance ~
    // Bin(128, ≤ 0.13)) is missed only if ≥ 71 of the ~1,970 rows of other clusters (angle
    // ≳ 0.9 rad, ~ Bin(128, ≥ 0.3)) come closer: both tails beyond 3 sigma, a miss
    // probability under 1e-3 per neighbour, so over the 1,000 neighbours P(misses > 10) <
    // 1e-3 (binomial, mean ≤ 1).
    let total = nq * k;
    eprintln!("recall@{k}: re-ranked {found}/{total}, Hamming only {hamming_found}/{total}");
    assert!(total - found <= 10, "re-ranked recall {found}/{total}");
    // Re-ranking is what recovers them: the Hamming top k alone misses more.
    assert!(
        hamming_found < found,
        "Hamming-only recall {hamming_found}/{total}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `n` JSON Lines documents from a 300-word vocabulary, in families of near duplicates.
fn documents(seed: u64, n: usize) -> String {
    let mut rng = Rng::new(seed);
    let vocab: Vec<String> = (0..300).map(|i| format!("w{i}")).collect();
    let mut out = String::new();
    let mut family: Vec<usize> = Vec::new();
    for i in 0..n {
        if i % 5 == 0 {
            family = (0..12).map(|_| rng.below(300) as usize).collect();
        }
        let mut words = family.clone();
        words[rng.below(12) as usize] = rng.below(300) as usize;
        let text: Vec<&str> = words.iter().map(|&w| vocab[w].as_str()).collect();
        out.push_str(&format!("{{\"text\": \"{}\"}}\n", text.join(" ")));
    }
    out
}

/// Documents: the index records the tokenizer options with the signer; queries given as text
/// are tokenised and signed like the index (the same results as the codes `simlsh sign` makes
/// with those options); re-ranking by the exact cosine of the weighted features finds each
/// document itself first (cosine 1). A TF-IDF table fitted on the documents is embedded in
/// the index, saved or not: queries are weighted by it (as the codes signed with the saved
/// table), and the index names no file.
#[test]
fn query_documents_with_the_recorded_tokenizer() {
    let dir = tmp_dir("text");
    let docs = dir.join("docs.jsonl");
    std::fs::write(&docs, documents(5, 200)).unwrap();
    let queries = dir.join("q.jsonl");
    let text = std::fs::read_to_string(&docs).unwrap();
    std::fs::write(
        &queries,
        text.lines().step_by(7).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let nq = 200usize.div_ceil(7);
    let idx = dir.join("d.idx");
    let opts = [
        "--ngram",
        "2",
        "--weighting",
        "tf",
        "--signer",
        "pooled:pool=500",
    ];
    let mut build: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"--seed", &"4", &"index", &"build", &docs, &idx, &"--kind", &"linear",
    ];
    build.extend(opts.iter().map(|o| o as &dyn AsRef<std::ffi::OsStr>));
    ok(&run(&build));
    let rec = load_index(&idx).unwrap().signer().cloned().unwrap();
    assert_eq!(rec.text_options()["ngram"], "2");
    assert_eq!(rec.text_options()["weighting"], "tf");
    // The queries as codes, signed by `simlsh sign` with the same options.
    let qcodes = dir.join("q.simlsh");
    let mut sign: Vec<&dyn AsRef<std::ffi::OsStr>> =
        vec![&"--seed", &"4", &"sign", &queries, &qcodes];
    sign.extend(opts.iter().map(|o| o as &dyn AsRef<std::ffi::OsStr>));
    ok(&run(&sign));
    let by_text = ok(&run(&[&"index", &"query", &idx, &queries, &"--k", &"5"]));
    let by_codes = ok(&run(&[&"index", &"query", &idx, &qcodes, &"--k", &"5"]));
    assert_eq!(by_text, by_codes);
    assert_eq!(
        parse_tsv(&by_text, nq, 64)
            .iter()
            .map(Vec::len)
            .sum::<usize>(),
        nq * 5
    );
    // Re-ranked: query i is document 7i, found first with cosine 1.
    let out = ok(&run(&[
        &"index",
        &"query",
        &idx,
        &queries,
        &"--k",
        &"3",
        &"--rerank",
        &"20",
        &"--vectors",
        &docs,
    ]));
    for (q, hits) in parse_rows(&out, nq, "exact_cosine").iter().enumerate() {
        assert_eq!(hits[0].0, 7 * q as u32, "query {q}");
        assert!((hits[0].2 - 1.0).abs() < 1e-6);
        assert!(hits.windows(2).all(|p| p[0].2 >= p[1].2));
    }
    // TF-IDF fitted on the documents, not saved: embedded, queries weighted alike.
    let fitted = dir.join("fitted.idx");
    ok(&run(&[
        &"index", &"build", &docs, &fitted, &"--kind", &"linear",
    ]));
    let by_fitted = ok(&run(&[&"index", &"query", &fitted, &queries, &"--k", &"4"]));
    // Saved too: queries are weighted by the saved table (and equal the codes signed with it).
    let (saved, idf) = (dir.join("saved.idx"), dir.join("docs.idf"));
    ok(&run(&[
        &"index",
        &"build",
        &docs,
        &saved,
        &"--kind",
        &"linear",
        &"--save-idf",
        &idf,
    ]));
    let by_text = ok(&run(&[&"index", &"query", &saved, &queries, &"--k", &"4"]));
    let qcodes = dir.join("q-idf.simlsh");
    ok(&run(&[&"sign", &queries, &qcodes, &"--idf", &idf]));
    let by_codes = ok(&run(&[&"index", &"query", &saved, &qcodes, &"--k", &"4"]));
    assert_eq!(by_text, by_codes);
    assert_eq!(by_fitted, by_codes);
    // The index records the table itself, no path: the saved file can go.
    let info = ok(&run(&[&"index", &"info", &saved]));
    assert!(info.contains("param.text.idf\tembedded"), "{info}");
    assert!(!info.contains(&dir.display().to_string()), "{info}");
    std::fs::remove_file(&idf).unwrap();
    assert_eq!(
        ok(&run(&[&"index", &"query", &saved, &queries, &"--k", &"4"])),
        by_codes
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A signature file's signer is carried over by `index build` and checked by `index add`;
/// indexes of codes whose signer is unknown (and files written before signers were recorded)
/// load with none, and vectors or documents queried against them are an error naming the
/// index; a `--signer` that disagrees, vectors of another dimension, codes where re-ranking
/// needs vectors, and a BASE that is not the index's vectors are errors naming the file.
#[test]
fn signer_records_are_carried_over_and_checked() {
    let dir = tmp_dir("signer-errors");
    let (base, queries) = clustered(3, 300, 20, 16);
    let (bp, qp) = (dir.join("base.npy"), dir.join("q.npy"));
    ndarray_npy::write_npy(&bp, &base).unwrap();
    ndarray_npy::write_npy(&qp, &queries).unwrap();
    // sign → .simlsh → build: the signer is carried over.
    let sigs = dir.join("base.simlsh");
    ok(&run(&[
        &"--bits",
        &"96",
        &"--seed",
        &"2",
        &"sign",
        &bp,
        &sigs,
        &"--signer",
        &"super-bit",
    ]));
    let idx = dir.join("b.idx");
    ok(&run(&[
        &"index",
        &"build",
        &sigs,
        &idx,
        &"--kind",
        &"manku:k=2",
    ]));
    let spec = load_index(&idx).unwrap().signer_spec().unwrap().unwrap();
    assert_eq!(
        (spec.kind.name(), spec.bits, spec.seed, spec.dim),
        ("super-bit", 96, 2, Some(16))
    );
    // ... and the queries are signed with it: the same hits as codes signed by `sign`.
    let qsigs = dir.join("q.simlsh");
    ok(&run(&[
        &"--bits",
        &"96",
        &"--seed",
        &"2",
        &"sign",
        &qp,
        &qsigs,
        &"--signer",
        &"super-bit",
    ]));
    assert_eq!(
        ok(&run(&[&"index", &"query", &idx, &qp, &"--radius", &"20"])),
        ok(&run(&[
            &"index",
            &"query",
            &idx,
            &qsigs,
            &"--radius",
            &"20"
        ]))
    );
    // A --signer that agrees (defaults written out or not) passes; one that disagrees fails.
    ok(&run(&[
        &"index",
        &"query",
        &idx,
        &qp,
        &"--k",
        &"2",
        &"--signer",
        &"super-bit",
    ]));
    ok(&run(&[
        &"index",
        &"query",
        &idx,
        &qp,
        &"--k",
        &"2",
        &"--signer",
        &"super-bit:depth=16",
    ]));
    for other in ["gaussian", "super-bit:depth=4"] {
        let out = run(&[
            &"index",
            &"query",
            &idx,
            &qp,
            &"--k",
            &"2",
            &"--signer",
            &other,
        ]);
        fails_naming(&out, &idx);
        assert!(String::from_utf8_lossy(&out.stderr).contains("disagrees"));
    }
    // Build from codes with a --signer that disagrees with their file.
    let out = run(&[
        &"index",
        &"build",
        &sigs,
        &dir.join("x.idx"),
        &"--kind",
        &"linear",
        &"--signer",
        &"gaussian",
    ]);
    fails_naming(&out, &sigs);
    // Add: codes of another signer are refused, of the same accepted.
    let other = dir.join("other.simlsh");
    ok(&run(&[
        &"--bits",
        &"96",
        &"--seed",
        &"3",
        &"sign",
        &qp,
        &other,
        &"--signer",
        &"super-bit",
    ]));
    fails_naming(
        &run(&[&"index", &"add", &idx, &other, &"--first-id", &"1000"]),
        &other,
    );
    ok(&run(&[
        &"index",
        &"add",
        &idx,
        &qsigs,
        &"--first-id",
        &"1000",
    ]));
    assert_eq!(
        load_index(&idx).unwrap().signer_spec().unwrap().unwrap(),
        spec
    );
    // Vectors of another dimension.
    let wide = dir.join("wide.npy");
    ndarray_npy::write_npy(&wide, &ndarray::Array2::<f32>::ones((3, 17))).unwrap();
    let out = run(&[&"index", &"query", &idx, &wide, &"--k", &"2"]);
    fails_naming(&out, &wide);
    // Re-ranking with codes as queries.
    let idx2 = dir.join("v.idx");
    ok(&run(&[
        &"--bits",
        &"96",
        &"index",
        &"build",
        &bp,
        &idx2,
        &"--kind",
        &"linear",
        &"--signer",
        &"gaussian",
    ]));
    fails_naming(
        &run(&[
            &"index",
            &"query",
            &idx2,
            &qsigs,
            &"--k",
            &"2",
            &"--rerank",
            &"9",
            &"--vectors",
            &bp,
        ]),
        &qsigs,
    );
    // BASE with fewer rows than the index holds, or other vectors of the same shape.
    let short = dir.join("short.npy");
    ndarray_npy::write_npy(&short, &base.slice(ndarray::s![..100, ..]).to_owned()).unwrap();
    fails_naming(
        &run(&[
            &"index",
            &"query",
            &idx2,
            &qp,
            &"--k",
            &"2",
            &"--rerank",
            &"9",
            &"--vectors",
            &short,
        ]),
        &short,
    );
    let (shuffled, _) = clustered(4, 300, 1, 16);
    let wrong = dir.join("wrong.npy");
    ndarray_npy::write_npy(&wrong, &shuffled).unwrap();
    let out = run(&[
        &"index",
        &"query",
        &idx2,
        &qp,
        &"--k",
        &"2",
        &"--rerank",
        &"9",
        &"--vectors",
        &wrong,
    ]);
    fails_naming(&out, &wrong);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not the code the index stores"));
    // --rerank needs --k and --vectors; --rerank below --k.
    assert!(
        !run(&[
            &"index",
            &"query",
            &idx2,
            &qp,
            &"--k",
            &"2",
            &"--rerank",
            &"9"
        ])
        .status
        .success()
    );
    assert!(
        !run(&[
            &"index",
            &"query",
            &idx2,
            &qp,
            &"--radius",
            &"2",
            &"--rerank",
            &"9",
            &"--vectors",
            &bp
        ])
        .status
        .success()
    );
    assert!(
        !run(&[
            &"index",
            &"query",
            &idx2,
            &qp,
            &"--k",
            &"5",
            &"--rerank",
            &"3",
            &"--vectors",
            &bp
        ])
        .status
        .success()
    );
    // Codes whose signer is unknown: the index records none; vectors are refused naming it.
    let npy = dir.join("codes.npy");
    write_signatures_npy(&npy, &codes(1, 50, 64)).unwrap();
    let plain = dir.join("plain.idx");
    ok(&run(&[&"index", &"build", &npy, &plain, &"--kind", &"mih"]));
    assert!(load_index(&plain).unwrap().signer().is_none());
    assert!(ok(&run(&[&"index", &"info", &plain])).contains("signer\tnone\n"));
    let out = run(&[&"index", &"query", &plain, &qp, &"--k", &"2"]);
    fails_naming(&out, &plain);
    assert!(String::from_utf8_lossy(&out.stderr).contains("records no signer"));
    fails_naming(
        &run(&[
            &"index",
            &"build",
            &npy,
            &dir.join("y.idx"),
            &"--kind",
            &"mih",
            &"--signer",
            &"gaussian",
        ]),
        &npy,
    );
    // Documents against an index of vectors.
    let docs = dir.join("d.jsonl");
    std::fs::write(&docs, documents(1, 10)).unwrap();
    fails_naming(
        &run(&[&"index", &"query", &idx2, &docs, &"--k", &"2"]),
        &idx2,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A graph index end to end: built by the binary, the library's index of the same spec
/// answers the same; `--ef` sets its beam (an error on other kinds); `index info` and
/// `--stats` say how k-NN is answered; radius search is exact.
#[test]
fn graph_index_build_query_info_and_ef() {
    let dir = tmp_dir("graph");
    let bits = 128;
    let data = codes(5, 4000, bits);
    let queries = codes(5, 40, bits);
    let (sigs, qs) = (dir.join("codes.npy"), dir.join("queries.npy"));
    write_signatures_npy(&sigs, &data).unwrap();
    write_signatures_npy(&qs, &queries).unwrap();
    let idx = dir.join("g.idx");
    let stats = dir.join("build.json");
    ok(&run(&[
        &"--bits",
        &"128",
        &"--stats",
        &stats,
        &"index",
        &"build",
        &sigs,
        &idx,
        &"--kind",
        &"graph:m=12,fallback=false",
    ]));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(s["values"]["knn_mode"], "graph");
    assert!(
        s["values"]["knn_mode_reason"]
            .as_str()
            .unwrap()
            .contains("check of 200 codes")
    );
    let info = ok(&run(&[&"index", &"info", &idx]));
    assert!(info.contains("kind\tgraph\n") && info.contains("spec\tgraph:m=12,fallback=false\n"));
    assert!(info.contains("\nknn\tgraph search"), "{info}");
    let lib = simlsh::index::GraphIndex::builder()
        .m(12)
        .fallback(false)
        .build(&data)
        .unwrap();
    for ef in [None, Some("8"), Some("200")] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            vec![&"index", &"query", &idx, &qs, &"--k", &"5"];
        if let Some(e) = &ef {
            args.extend([&"--ef" as &dyn AsRef<std::ffi::OsStr>, e]);
        }
        let got = parse_tsv(&ok(&run(&args)), 40, bits);
        let beam = ef.map_or(lib.ef(), |e| e.parse().unwrap());
        let want = lib.knn_batch_with(queries.as_slice(), 5, beam).unwrap();
        assert_eq!(got, lib_hits(want), "ef {ef:?}");
    }
    let oracle = LinearScan::build(&data).unwrap();
    let got = parse_tsv(
        &ok(&run(&[&"index", &"query", &idx, &qs, &"--radius", &"4"])),
        40,
        bits,
    );
    assert_eq!(
        got,
        lib_hits(oracle.radius_batch(queries.as_slice(), 4).unwrap())
    );
    // --ef on an index without a beam is an error naming the file.
    let lin = dir.join("lin.idx");
    ok(&run(&[
        &"--bits", &"128", &"index", &"build", &sigs, &lin, &"--kind", &"linear",
    ]));
    let out = run(&[&"index", &"query", &lin, &qs, &"--k", &"5", &"--ef", &"10"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--ef") && err.contains("lin.idx"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `knn --method approx`: every row's list well formed (no self, sorted, true distances,
/// k of them) and most of the exact graph found.
#[test]
fn knn_method_approx_lists_are_well_formed() {
    let dir = tmp_dir("knn-approx");
    let bits = 128;
    let data = codes(6, 3000, bits);
    let sigs = dir.join("codes.npy");
    write_signatures_npy(&sigs, &data).unwrap();
    let out = ok(&run(&[
        &"--bits",
        &"128",
        &"knn",
        &sigs,
        &"--k",
        &"5",
        &"--method",
        &"approx",
    ]));
    let mut rows = vec![Vec::new(); 3000];
    for line in out.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let (i, j, d): (usize, u32, u32) = (
            f[0].parse().unwrap(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        );
        rows[i].push(simlsh::Hit { distance: d, id: j });
    }
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), 5, "row {i}");
        assert!(r.windows(2).all(|p| p[0] < p[1]) && r.iter().all(|h| h.id as usize != i));
        assert!(
            r.iter()
                .all(|h| data.distance(i, h.id as usize) == h.distance)
        );
    }
    let exact = simlsh::join::knn_graph(&data, 5).unwrap();
    let recall = simlsh::index::recall_at_k(&rows, &exact);
    // Measured: 1.000 (clusters of 8 near copies).
    assert!(recall >= 0.95, "{recall}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Queries without features (empty, punctuation-only and stop-word-only documents) match
/// nothing, as rows without features pair with no one in joins; even when the index holds
/// documents without features (whose codes are all zeros too) and a Hamming radius would
/// reach them. Query codes are searched as codes, the index's rows without features left
/// out; an index of codes of unknown origin holds no such rows.
#[test]
fn queries_without_features_match_nothing() {
    let dir = tmp_dir("featureless");
    let docs = dir.join("docs.jsonl");
    let jsonl = |texts: &[&str]| -> String {
        texts
            .iter()
            .map(|t| format!("{{\"text\": \"{t}\"}}\n"))
            .collect()
    };
    std::fs::write(
        &docs,
        jsonl(&["the quick brown fox", "...", "lorem ipsum dolor", ""]),
    )
    .unwrap();
    let idx = dir.join("d.idx");
    ok(&run(&[
        &"index",
        &"build",
        &docs,
        &idx,
        &"--kind",
        &"linear",
        &"--bits",
        &"64",
        &"--weighting",
        &"tf",
        &"--stop-words",
        &"english",
    ]));
    let queries = dir.join("q.jsonl");
    std::fs::write(
        &queries,
        jsonl(&["!!! ?", "the quick brown fox", "the of and"]),
    )
    .unwrap();
    let out = ok(&run(&[
        &"index",
        &"query",
        &idx,
        &queries,
        &"--radius",
        &"64",
    ]));
    let hits = parse_tsv(&out, 3, 64);
    assert!(hits[0].is_empty() && hits[2].is_empty(), "{out}");
    assert!(hits[1].contains(&(0, 0)), "{out}");
    assert!(!hits[1].iter().any(|&(id, _)| id == 1 || id == 3), "{out}");
    // The same queries as stored codes (all-zero rows included) are answered as codes.
    let codes = dir.join("q.npy");
    ok(&run(&[
        &"sign",
        &queries,
        &codes,
        &"--bits",
        &"64",
        &"--weighting",
        &"tf",
        &"--stop-words",
        &"english",
    ]));
    let out = ok(&run(&[&"index", &"query", &idx, &codes, &"--radius", &"0"]));
    let hits = parse_tsv(&out, 3, 64);
    assert_eq!(hits, vec![vec![], vec![(0, 0)], vec![]], "{out}");
    // Without the index's signer (codes added as codes), the same rule (Python's too); with
    // --zero-codes an all-zero code is a code.
    let raw = dir.join("raw.idx");
    ok(&run(&[
        &"index", &"build", &codes, &raw, &"--kind", &"linear",
    ]));
    let out = ok(&run(&[&"index", &"query", &raw, &codes, &"--radius", &"0"]));
    let hits = parse_tsv(&out, 3, 64);
    assert_eq!(hits, vec![vec![], vec![(1, 0)], vec![]], "{out}");
    let out = ok(&run(&[
        &"index",
        &"query",
        &raw,
        &codes,
        &"--radius",
        &"0",
        &"--zero-codes",
    ]));
    let hits = parse_tsv(&out, 3, 64);
    assert_eq!(hits[0], vec![(0, 0), (2, 0)], "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every tokenizer option an index records is applied to query documents (the library's
/// reading of the record, `SignerRecord::tokenizer`): an index whose record says
/// `text.lowercase=false` (as one Python builds with a tokenizer that keeps case) tokenizes
/// upper-cased queries as they are, and gives the results of codes the library signs with the
/// record's tokenizer and signer.
#[test]
fn query_documents_take_every_recorded_tokenizer_option() {
    let dir = tmp_dir("recorded-options");
    let docs = dir.join("docs.jsonl");
    let text = documents(3, 40);
    std::fs::write(&docs, &text).unwrap();
    let upper: Vec<String> = text
        .lines()
        .map(|l| l.replace("\"w", "\"W").replace(" w", " W"))
        .collect();
    let queries = dir.join("q.jsonl");
    std::fs::write(&queries, upper.join("\n")).unwrap();
    let idx = dir.join("d.idx");
    ok(&run(&[
        &"index",
        &"build",
        &docs,
        &idx,
        &"--kind",
        &"linear",
        &"--weighting",
        &"tf",
    ]));
    // As built (lower-cased): each query is its document, at distance 0.
    let lower = ok(&run(&[&"index", &"query", &idx, &queries, &"--k", &"1"]));
    for (q, hits) in parse_tsv(&lower, 40, 64).iter().enumerate() {
        assert_eq!(hits[0], (q as u32, 0), "query {q}");
    }
    // The record says case is kept.
    let mut i = load_index(&idx).unwrap();
    let rec = i.signer().cloned().unwrap();
    let rec = rec.text_option("lowercase", false).unwrap();
    i.set_signer(Some(rec.clone())).unwrap();
    let kept = dir.join("kept.idx");
    simlsh::persist::save_index(i.as_ref(), &kept).unwrap();
    let by_text = ok(&run(&[&"index", &"query", &kept, &queries, &"--k", &"1"]));
    assert_ne!(by_text, lower, "text.lowercase=false was not applied");
    let tok = rec.tokenizer().unwrap().unwrap();
    let signer = rec.spec().unwrap().build(None).unwrap();
    let texts: Vec<String> = upper
        .iter()
        .map(|l| l["{\"text\": \"".len()..l.len() - 2].to_string())
        .collect();
    let corpus = tok
        .sign_corpus_with(&signer, &texts, simlsh::text::SignOptions::default())
        .unwrap();
    let qcodes = dir.join("q.npy");
    write_signatures_npy(&qcodes, &corpus.signatures).unwrap();
    let by_codes = ok(&run(&[&"index", &"query", &kept, &qcodes, &"--k", &"1"]));
    assert_eq!(by_text, by_codes);
    std::fs::remove_dir_all(&dir).unwrap();
}
