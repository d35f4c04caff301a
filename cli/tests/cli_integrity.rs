//! Integrity and security of the files the command line reads and writes: a corrupt index is
//! never rewritten as sound, locks create no files, an output never replaces an input and the
//! outputs of a run (with `--stats` and `--save-idf`) replace their files together or not at
//! all, an index file never makes a query read another file, and ids that would forge rows of
//! the TSV outputs are refused.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use simlsh::SignatureMatrix;
use simlsh::index::IndexSpec;
use simlsh::io::write_signatures_npy;
use simlsh::persist::load_index;
use simlsh::rng::Rng;

mod cli_common;
use cli_common::{ok, simlsh};

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "simlsh-cli-integrity-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    simlsh().arg("--quiet").args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts a failure (exit status 1) whose message names `what`.
fn fails_with(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    assert!(
        stderr(out).contains(what),
        "`{what}` not in: {}",
        stderr(out)
    );
}

fn codes(seed: u64, n: usize) -> SignatureMatrix {
    let mut rng = Rng::new(seed);
    SignatureMatrix::from_parts(64, (0..n).map(|_| rng.next_u64()).collect()).unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `index add` and `index remove` verify the whole index before rewriting it: every file with
/// one flipped bit (each kind, random places) is refused with an error naming it, left byte
/// for byte as it was, with nothing written beside it; `index info` says whether the file was
/// verified and `--verify` fails on it; a sound file is changed as before.
#[test]
fn a_corrupt_index_is_never_rewritten_by_add_or_remove() {
    let dir = tmp_dir("launder");
    let base = codes(1, 400);
    let more = dir.join("more.npy");
    write_signatures_npy(&more, &codes(2, 50)).unwrap();
    let mut rng = Rng::new(9);
    let mut refused = 0;
    for kind in ["linear", "manku:k=2", "mih", "permutation:q=4"] {
        let idx = dir.join("codes.idx");
        let built = kind.parse::<IndexSpec>().unwrap().build(&base).unwrap();
        simlsh::persist::save_index(built.as_ref(), &idx).unwrap();
        let good = std::fs::read(&idx).unwrap();
        for trial in 0..12 {
            let mut bad = good.clone();
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] ^= 1 << rng.below(8);
            std::fs::write(&idx, &bad).unwrap();
            let out = if trial % 2 == 0 {
                run(&[&"index", &"add", &idx, &more, &"--first-id", &"5000"])
            } else {
                run(&[&"index", &"remove", &idx, &"--ids", &"3,7"])
            };
            fails_with(&out, &idx.display().to_string());
            assert_eq!(
                std::fs::read(&idx).unwrap(),
                bad,
                "{kind}: byte {at} flipped, the file was rewritten"
            );
            assert_eq!(names(&dir), vec!["codes.idx", "more.npy"], "{kind}");
            assert!(
                !run(&[&"index", &"info", &idx, &"--verify"])
                    .status
                    .success()
            );
            refused += 1;
        }
        // Sound: `index info` says whether it was verified; changed, and verified.
        std::fs::write(&idx, &good).unwrap();
        let info = ok(&run(&[&"index", &"info", &idx]));
        assert!(info.contains("verified\tno"), "{info}");
        let info = ok(&run(&[&"index", &"info", &idx, &"--verify"]));
        assert!(info.contains("verified\tyes"), "{info}");
        ok(&run(&[
            &"index",
            &"add",
            &idx,
            &more,
            &"--first-id",
            &"5000",
        ]));
        ok(&run(&[&"index", &"remove", &idx, &"--ids", &"3,7"]));
        assert_eq!(load_index(&idx).unwrap().len(), 448, "{kind}");
        ok(&run(&[&"index", &"verify", &idx]));
        std::fs::remove_file(&idx).unwrap();
    }
    assert_eq!(refused, 48);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A failing `index add` or `index remove` creates nothing: the lock is the index file's own,
/// so no `.NAME.lock` appears beside a path that is not an index (a device, a system file, a
/// missing file).
#[test]
fn failing_updates_leave_no_lock_files() {
    let dir = tmp_dir("locks");
    let more = dir.join("more.npy");
    write_signatures_npy(&more, &codes(2, 5)).unwrap();
    let etc = names(Path::new("/etc"));
    let dev = names(Path::new("/dev"));
    for target in ["/dev/null", "/etc/passwd", "/etc"] {
        let out = run(&[&"index", &"add", &target, &more, &"--first-id", &"0"]);
        fails_with(&out, target);
        let out = run(&[&"index", &"remove", &target, &"--ids", &"1"]);
        fails_with(&out, target);
    }
    let missing = dir.join("missing.idx");
    fails_with(
        &run(&[&"index", &"add", &missing, &more, &"--first-id", &"0"]),
        "missing.idx",
    );
    assert_eq!(names(Path::new("/etc")), etc);
    assert_eq!(names(Path::new("/dev")), dev);
    assert_eq!(names(&dir), vec!["more.npy"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `eval X --plot X` is refused before anything is read or written: an output never replaces
/// an input.
#[test]
fn eval_refuses_to_plot_over_its_input() {
    let dir = tmp_dir("eval");
    let x = dir.join("vectors.npy");
    let mut rng = Rng::new(3);
    let data = ndarray::Array2::from_shape_fn((50, 8), |_| rng.uniform() as f32 - 0.5);
    ndarray_npy::write_npy(&x, &data).unwrap();
    let before = std::fs::read(&x).unwrap();
    let link = dir.join("link.npy");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&x, &link).unwrap();
    for plot in [&x, &link] {
        let out = run(&[
            &"eval", &x, &"--pairs", &"20", &"--k", &"3", &"--plot", plot,
        ]);
        fails_with(&out, "vectors.npy");
        assert_eq!(std::fs::read(&x).unwrap(), before);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The outputs of a run replace their files together or not at all: a `--stats` that cannot
/// be written leaves the main output as it was; an index that cannot be written leaves
/// `--save-idf` unwritten.
#[test]
fn stats_and_save_idf_join_the_atomic_outputs() {
    let dir = tmp_dir("outputs");
    let input = dir.join("codes.npy");
    write_signatures_npy(&input, &codes(4, 100)).unwrap();
    let out_path = dir.join("out.tsv");
    std::fs::write(&out_path, "old").unwrap();
    // --stats names a directory: the run fails, its pairs are not written.
    let stats_dir = dir.join("stats");
    std::fs::create_dir(&stats_dir).unwrap();
    let out = run(&[
        &"--stats",
        &stats_dir,
        &"dedup",
        &input,
        &"--radius",
        &"20",
        &"--pairs",
        &out_path,
    ]);
    fails_with(&out, "stats");
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "old");
    // The same for an index query's --out.
    let idx = dir.join("codes.idx");
    ok(&run(&[
        &"index", &"build", &input, &idx, &"--kind", &"linear",
    ]));
    let out = run(&[
        &"--stats", &stats_dir, &"index", &"query", &idx, &input, &"--k", &"2", &"--out", &out_path,
    ]);
    fails_with(&out, "stats");
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "old");
    // --save-idf with an index that cannot be written: the table is not written either.
    let docs = dir.join("docs.jsonl");
    std::fs::write(&docs, "{\"text\": \"a b c\"}\n{\"text\": \"b c d\"}\n").unwrap();
    let idf = dir.join("docs.idf");
    let out = run(&[
        &"index",
        &"build",
        &docs,
        &stats_dir,
        &"--kind",
        &"linear",
        &"--save-idf",
        &idf,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!idf.exists(), "--save-idf was written by a failed run");
    // Everything succeeds: both written.
    ok(&run(&[
        &"index",
        &"build",
        &docs,
        &idx,
        &"--kind",
        &"linear",
        &"--save-idf",
        &idf,
    ]));
    assert!(idf.exists());
    let hidden: Vec<String> = names(&dir)
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Documents for an index: families of similar word lists.
fn documents(n: usize) -> String {
    let mut rng = Rng::new(5);
    let mut out = String::new();
    for i in 0..n {
        let words: Vec<String> = (0..10)
            .map(|k| format!("w{}", (i / 5 * 7 + k + rng.below(3) as usize) % 200))
            .collect();
        out.push_str(&format!("{{\"text\": \"the {}\"}}\n", words.join(" ")));
    }
    out
}

/// An index file never makes a query read another file. Indexes built now embed their IDF
/// table and stop words; an index of an earlier release that recorded a path (here
/// `/etc/passwd`, `/dev/zero`, a FIFO no one writes) is refused at once, without opening it and
/// without quoting anything of it, unless the file is given on the command line.
#[test]
fn recorded_paths_are_never_followed() {
    let dir = tmp_dir("paths");
    let docs = dir.join("docs.jsonl");
    std::fs::write(&docs, documents(60)).unwrap();
    let stop = dir.join("stop.txt");
    std::fs::write(&stop, "the\nand\n").unwrap();
    let (idx, idf) = (dir.join("docs.idx"), dir.join("docs.idf"));
    ok(&run(&[
        &"index",
        &"build",
        &docs,
        &idx,
        &"--kind",
        &"linear",
        &"--stop-words",
        &stop,
        &"--save-idf",
        &idf,
    ]));
    let want = ok(&run(&[&"index", &"query", &idx, &docs, &"--k", &"3"]));
    // Embedded: the files can go.
    std::fs::remove_file(&stop).unwrap();
    let info = ok(&run(&[&"index", &"info", &idx]));
    assert!(info.contains("param.text.stop_words\tembedded"), "{info}");
    assert!(!info.contains('/'), "a path is recorded: {info}");
    std::fs::write(&stop, "the\nand\n").unwrap();
    let fifo = dir.join("fifo");
    #[cfg(unix)]
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let base = load_index(&idx).unwrap();
    let rec = base.signer().cloned().unwrap();
    let fifo_s = fifo.display().to_string();
    for (key, path, flag, given) in [
        ("idf", "/etc/passwd", "--idf", &idf),
        ("idf", "/dev/zero", "--idf", &idf),
        ("idf", fifo_s.as_str(), "--idf", &idf),
        ("stop_words", "/etc/passwd", "--stop-words", &stop),
        ("stop_words", fifo_s.as_str(), "--stop-words", &stop),
    ] {
        // An index as an earlier release wrote it: the path recorded.
        let old = dir.join("old.idx");
        let mut i = load_index(&idx).unwrap();
        i.set_signer(Some(rec.clone().text_option(key, path).unwrap()))
            .unwrap();
        simlsh::persist::save_index(i.as_ref(), &old).unwrap();
        let t = Instant::now();
        let out = run(&[&"index", &"query", &old, &docs, &"--k", &"3"]);
        assert!(t.elapsed() < Duration::from_secs(60), "{path}: hung");
        fails_with(&out, flag);
        let err = stderr(&out);
        assert!(err.contains("old.idx") && err.contains(path), "{err}");
        assert!(!err.contains("root:"), "quotes the file: {err}");
        // Given on the command line, the file is read: the same answers.
        assert_eq!(
            ok(&run(&[
                &"index", &"query", &old, &docs, &"--k", &"3", &flag, given
            ])),
            want,
            "{key}"
        );
    }
    // A table given for an index that embeds its own is refused.
    fails_with(
        &run(&[
            &"index", &"query", &idx, &docs, &"--k", &"3", &"--idf", &idf,
        ]),
        "embeds",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ids holding a tab or a line break would forge rows of the TSV outputs (`--pairs`): they are
/// refused where they are read, JSON Lines, CSV and Parquet alike, with an error naming the
/// file, the line or row, and the id.
#[test]
fn ids_that_would_forge_tsv_rows_are_refused() {
    let dir = tmp_dir("ids");
    let pairs = dir.join("pairs.tsv");
    let jsonl = dir.join("docs.jsonl");
    std::fs::write(
        &jsonl,
        "{\"id\": \"a\", \"text\": \"same words here\"}\n\
         {\"id\": \"b\\t0\\nc\", \"text\": \"same words here\"}\n",
    )
    .unwrap();
    let csv = dir.join("docs.csv");
    std::fs::write(
        &csv,
        "id,text\na,same words here\n\"x\ny\",same words here\n",
    )
    .unwrap();
    let parquet = dir.join("docs.parquet");
    {
        use arrow_array::{ArrayRef, RecordBatch, StringArray};
        use std::sync::Arc;
        let ids: ArrayRef = Arc::new(StringArray::from(vec!["a", "b\tc", "d"]));
        let texts: ArrayRef = Arc::new(StringArray::from(vec![
            "same words here",
            "same words here",
            "other",
        ]));
        let batch = RecordBatch::try_from_iter([("id", ids), ("text", texts)]).unwrap();
        let file = std::fs::File::create(&parquet).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    for (input, place, id) in [
        (&jsonl, "docs.jsonl:2:", "b\\t0\\nc"),
        (&csv, "docs.csv:3:", "x\\ny"),
        (&parquet, "row 1", "b\\tc"),
    ] {
        let out = run(&[
            &"dedup",
            input,
            &"--id-field",
            &"id",
            &"--radius",
            &"3",
            &"--pairs",
            &pairs,
        ]);
        fails_with(&out, &input.display().to_string());
        let err = stderr(&out);
        assert!(err.contains(place) && err.contains(id), "{err}");
        assert!(!pairs.exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--copy-on-load` reads the index into memory and answers as the mapped index does (the
/// copy is what protects a run from a file truncated in place, which kills a mapping process
/// with SIGBUS).
#[test]
fn copy_on_load_answers_as_the_mapped_index() {
    let dir = tmp_dir("copy");
    let sigs = dir.join("codes.npy");
    write_signatures_npy(&sigs, &codes(6, 500)).unwrap();
    let idx = dir.join("codes.idx");
    ok(&run(&[&"index", &"build", &sigs, &idx, &"--kind", &"mih"]));
    let mapped = ok(&run(&[&"index", &"query", &idx, &sigs, &"--k", &"3"]));
    let copied = ok(&run(&[
        &"index",
        &"query",
        &idx,
        &sigs,
        &"--k",
        &"3",
        &"--copy-on-load",
    ]));
    assert_eq!(mapped, copied);
    assert_eq!(mapped.lines().count(), 1 + 500 * 3);
    let info = ok(&run(&[
        &"index",
        &"info",
        &idx,
        &"--copy-on-load",
        &"--verify",
    ]));
    assert!(info.contains("verified\tyes"), "{info}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Codes carried from a simlsh signature file into an index (`index build`, `index add`) are
/// verified first: a signature file with a flipped bit is refused, and no index is written or
/// changed with a fresh checksum over its codes.
#[test]
fn corrupt_signature_files_are_not_carried_into_an_index() {
    let dir = tmp_dir("sigfile");
    let sigs = dir.join("codes.simlsh");
    simlsh::persist::save_signatures(&sigs, &codes(7, 300), None).unwrap();
    let idx = dir.join("codes.idx");
    ok(&run(&[
        &"index", &"build", &sigs, &idx, &"--kind", &"linear",
    ]));
    let before = std::fs::read(&idx).unwrap();
    let good = std::fs::read(&sigs).unwrap();
    let mut rng = Rng::new(12);
    let mut refused = 0;
    for _ in 0..20 {
        let mut bad = good.clone();
        // A bit of the codes: the file still opens, only its checksum can tell.
        let at = good.len() - 32 - 1 - rng.below(300 * 8) as usize;
        bad[at] ^= 1 << rng.below(8);
        std::fs::write(&sigs, &bad).unwrap();
        let new = dir.join("new.idx");
        let out = run(&[&"index", &"build", &sigs, &new, &"--kind", &"linear"]);
        fails_with(&out, "codes.simlsh");
        assert!(!new.exists());
        let out = run(&[&"index", &"add", &idx, &sigs, &"--first-id", &"1000"]);
        fails_with(&out, "codes.simlsh");
        assert_eq!(std::fs::read(&idx).unwrap(), before);
        refused += 1;
    }
    assert_eq!(refused, 20);
    std::fs::remove_dir_all(&dir).unwrap();
}
