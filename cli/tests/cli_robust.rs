//! The command line under conditions a script meets: a reader that closes the pipe early, a
//! full disk, widths that disagree, every kind of stored codes, and the exit statuses.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use simlsh::SignatureMatrix;
use simlsh::io::write_signatures_npy;
use simlsh::persist::save_signatures;
use simlsh::rng::Rng;

mod cli_common;
use cli_common::{ok, simlsh};

const GLOVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/glove-6B-50d-10k/vectors.fvecs"
);

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-robust-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `pairs` pairs of `bits`-bit codes, the two of a pair `flips` bits apart, pairs unrelated.
fn planted_pairs(seed: u64, pairs: usize, bits: usize, flips: usize) -> SignatureMatrix {
    let words = bits.div_ceil(64);
    let mask = simlsh::signature::last_word_mask(bits);
    let mut rng = Rng::new(seed);
    let mut data = Vec::new();
    for _ in 0..pairs {
        let mut a: Vec<u64> = (0..words).map(|_| rng.next_u64()).collect();
        a[words - 1] &= mask;
        let mut b = a.clone();
        let mut flipped = std::collections::BTreeSet::new();
        while flipped.len() < flips {
            flipped.insert(rng.below(bits as u64) as usize);
        }
        for j in flipped {
            b[j / 64] ^= 1 << (j % 64);
        }
        data.extend(a);
        data.extend(b);
    }
    SignatureMatrix::from_parts(bits, data).unwrap()
}

/// The three numbers of dedup's summary line: documents, pairs, removed.
fn summary(out: &str) -> (usize, usize, usize) {
    let w: Vec<&str> = out.split_whitespace().collect();
    let num = |k: &str| -> usize {
        let i = w
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k} in {out}"));
        w[i + 1].parse().unwrap()
    };
    (num("documents"), num("pairs"), num("removed"))
}

#[test]
fn a_reader_closing_the_pipe_ends_the_run_quietly_with_status_0() {
    // 10,000 points × 10 neighbours: far more than a pipe buffer holds.
    let mut child = simlsh()
        .args(["knn", GLOVE, "--k", "10", "--signer", "gaussian", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"record\tneighbor"));
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_subcommand_ends_quietly_when_stdout_is_closed_before_it_writes() {
    let dir = tmp_dir("closed-pipe");
    let codes = dir.join("codes.simlsh");
    let idx = dir.join("codes.idx");
    save_signatures(&codes, &planted_pairs(9, 200, 64, 2), None).unwrap();
    ok(&simlsh()
        .args(["--quiet", "index", "build"])
        .arg(&codes)
        .arg(&idx)
        .args(["--kind", "manku"])
        .output()
        .unwrap());
    let tweets = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/healthtweets-10k/healthtweets-10k.csv"
    );
    let clusters = dir.join("clusters.tsv");
    let runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["dedup".into(), tweets.into()],
        vec!["index".into(), "info".into(), idx.clone().into()],
        vec![
            "index".into(),
            "query".into(),
            idx.clone().into(),
            codes.clone().into(),
            "--k".into(),
            "2".into(),
        ],
        vec![
            "cluster".into(),
            codes.clone().into(),
            "--radius".into(),
            "3".into(),
            "--out".into(),
            clusters.into(),
        ],
        vec![
            "eval".into(),
            GLOVE.into(),
            "--signer".into(),
            "gaussian".into(),
        ],
        vec!["knn".into(), codes.clone().into(), "--k".into(), "2".into()],
    ];
    for args in runs {
        let mut child = simlsh()
            .arg("--quiet")
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_matrix_larger_than_the_machine_is_a_clear_error_before_any_allocation() {
    // One SVMlight line claims a column 2^32 − 1: a Gaussian, Rademacher or very sparse
    // matrix of that dimension needs 0.1–1.2 TB. An error naming the size, status 1, no abort.
    let dir = tmp_dir("huge-dim");
    let input = dir.join("one.svm");
    std::fs::write(&input, "1 4294967295:1.5 3:2\n").unwrap();
    for signer in ["gaussian", "super-bit", "rademacher", "very-sparse"] {
        let out = simlsh()
            .arg("sign")
            .arg(&input)
            .arg(dir.join("out.npy"))
            .args(["--signer", signer, "--bits", "256"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{signer}: {err}");
        assert!(
            err.contains("D = 4294967295 × f = 256 needs") && err.contains("bytes, more than"),
            "{signer}: {err}"
        );
        assert!(!dir.join("out.npy").exists());
    }
    // The default signer has no matrix: the same file signs.
    let out = simlsh()
        .arg("sign")
        .arg(&input)
        .arg(dir.join("out.npy"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_full_disk_is_an_error_with_status_1_not_a_panic() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = simlsh()
        .args(["knn", GLOVE, "--k", "3", "--signer", "gaussian", "--quiet"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("standard output") && err.contains("No space left"),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{err}"
    );
}

#[test]
fn a_bad_option_value_is_status_2_from_the_parser_and_names_the_value() {
    // clap reports usage errors with status 2; --bits is checked against the one limit.
    for bits in ["0", "1048577", "1000000000", "18446744073709551615", "x"] {
        let out = simlsh()
            .args(["sign", GLOVE, "o.npy", "--bits", bits])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--bits {bits}: {err}");
        assert!(err.contains(bits), "--bits {bits}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn dedup_reads_signature_files_and_uses_the_codes_width_for_a_cosine() {
    let dir = tmp_dir("dedup-width");
    // 500 pairs of 128-bit codes 10 bits apart: estimated cosine cos(π·10/128) = 0.970.
    let sigs = planted_pairs(3, 500, 128, 10);
    let npy = dir.join("codes.npy");
    let file = dir.join("codes.simlsh");
    write_signatures_npy(&npy, &sigs).unwrap();
    save_signatures(&file, &sigs, None).unwrap();
    for input in [&npy, &file] {
        let out = ok(&simlsh()
            .arg("dedup")
            .arg(input)
            .args(["--cosine", "0.95"])
            .output()
            .unwrap());
        // Radius for cosine 0.95 at f = 128 is 12: every planted pair and nothing else (two
        // random 128-bit codes are ~64 bits apart).
        assert_eq!(
            summary(&out),
            (1000, 500, 500),
            "{}: {out}",
            input.display()
        );
        assert!(out.contains("f = 128"), "{out}");
    }
    // A --bits that disagrees with the stored width is an error, for every subcommand.
    for args in [
        vec!["dedup", "--bits", "64"],
        vec!["cluster", "--radius", "3", "--bits", "64"],
        vec!["knn", "--k", "3", "--bits", "64"],
    ] {
        let out = simlsh()
            .args(&args[..1])
            .arg(&file)
            .args(&args[1..])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("128-bit") && err.contains("--bits is 64 bits"),
            "{args:?}: {err}"
        );
    }
    // A .npy holds words only: --bits gives the width when it fits the words and the padding
    // bits are clear; otherwise it is an error naming the file.
    for (bits, why) in [("64", "words"), ("100", "beyond the signature width")] {
        let out = simlsh()
            .arg("dedup")
            .arg(&npy)
            .args(["--bits", bits])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "--bits {bits}: {err}");
        assert!(
            err.contains(why) && err.contains("codes.npy"),
            "--bits {bits}: {err}"
        );
    }
    let narrow = dir.join("narrow.npy");
    write_signatures_npy(&narrow, &planted_pairs(4, 300, 100, 8)).unwrap();
    let out = ok(&simlsh()
        .arg("dedup")
        .arg(&narrow)
        .args(["--cosine", "0.95", "--bits", "100"])
        .output()
        .unwrap());
    // Radius for cosine 0.95 at f = 100 is 10 ≥ 8: every planted pair.
    assert_eq!(summary(&out), (600, 300, 300), "{out}");
    assert!(out.contains("f = 100"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn index_commands_refuse_codes_of_another_width() {
    let dir = tmp_dir("index-width");
    let sigs = planted_pairs(5, 50, 128, 3);
    let codes = dir.join("codes.simlsh");
    let idx = dir.join("codes.idx");
    save_signatures(&codes, &sigs, None).unwrap();
    ok(&simlsh()
        .args(["--quiet", "index", "build"])
        .arg(&codes)
        .arg(&idx)
        .args(["--kind", "linear"])
        .output()
        .unwrap());
    let out = simlsh()
        .args(["index", "query"])
        .arg(&idx)
        .arg(&codes)
        .args(["--radius", "3", "--bits", "256"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--bits 256 disagrees with the index"), "{err}");
    let other = dir.join("other.simlsh");
    save_signatures(&other, &planted_pairs(6, 5, 64, 1), None).unwrap();
    let out = simlsh()
        .args(["index", "add"])
        .arg(&idx)
        .arg(&other)
        .args(["--first-id", "1000"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds 64-bit signatures, but the index is 128 bits"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs simlsh with `stdin` as standard input.
fn with_stdin(args: &[&str], stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = simlsh()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A child that fails before reading (e.g. a missing --format) closes the pipe: the write
    // then fails with a broken pipe, and the child's status and message are what is tested.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

#[test]
fn standard_input_is_read_like_a_file() {
    let tweets_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/healthtweets-10k/healthtweets-10k.csv"
    );
    let tweets = std::fs::read(tweets_path).unwrap();
    let from_file = ok(&simlsh()
        .args(["dedup", tweets_path, "--cosine", "0.8", "--bits", "128"])
        .output()
        .unwrap());
    let from_stdin = ok(&with_stdin(
        &[
            "dedup", "-", "--format", "csv", "--cosine", "0.8", "--bits", "128",
        ],
        &tweets,
    ));
    assert_eq!(from_file, from_stdin);
    let glove = std::fs::read(GLOVE).unwrap();
    let from_file = ok(&simlsh()
        .args(["knn", GLOVE, "--k", "3", "--signer", "gaussian", "-q"])
        .output()
        .unwrap());
    let from_stdin = ok(&with_stdin(
        &[
            "knn", "-", "--format", "fvecs", "--k", "3", "--signer", "gaussian", "-q",
        ],
        &glove,
    ));
    assert_eq!(from_file, from_stdin);
    // Without --format there is no extension to go by.
    let out = with_stdin(&["dedup", "-"], b"a\nb\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --format"));
}

#[test]
fn help_documents_the_exit_statuses() {
    let out = ok(&Command::new(env!("CARGO_BIN_EXE_simlsh"))
        .arg("--help")
        .output()
        .unwrap());
    assert!(out.contains("Exit status"), "{out}");
}
