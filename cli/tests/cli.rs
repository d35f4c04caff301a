//! The `simlsh` binary end to end: outputs checked against the library's results, bad input
//! reported with file and line, outputs written atomically and never over the input.

use simlsh::text::{Idf, Mode, SignOptions, Tokenizer};
use simlsh::{HashingTrick, join};

mod cli_common;
use cli_common::{ok, simlsh};

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn dedup_on_the_bundled_poems_matches_the_library() {
    let input = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/chinese-poetry-3k/poems.jsonl"
    );
    let pairs_file = tmp("pairs.tsv");
    let stats = tmp("stats.json");
    let out = simlsh()
        .args(["dedup", input, "--mode", "cjk", "--pairs"])
        .arg(&pairs_file)
        .arg("--stats")
        .arg(&stats)
        .output()
        .unwrap();
    ok(&out);
    let summary = String::from_utf8(out.stdout).unwrap();
    // The same pipeline through the library.
    let texts: Vec<String> = std::fs::read_to_string(input)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let plain = Tokenizer::builder().mode(Mode::Cjk).build().unwrap();
    let idf = Idf::fit(&plain, texts.iter());
    let tok = Tokenizer::builder()
        .mode(Mode::Cjk)
        .idf(idf)
        .build()
        .unwrap();
    let signer = HashingTrick::builder().bits(64).seed(0).build().unwrap();
    let corpus = tok
        .sign_corpus_with(&signer, &texts, SignOptions::default())
        .unwrap();
    // Documents without features are never paired.
    let active: Vec<bool> = (0..texts.len())
        .map(|i| !corpus.is_featureless(i))
        .collect();
    let mut pairs = Vec::new();
    join::self_join_active(&corpus.signatures, 3, &active, |p| pairs.push(p)).unwrap();
    pairs.sort();
    assert!(
        summary.starts_with(&format!(
            "documents {}  empty {}  pairs {}",
            texts.len(),
            corpus.featureless().len(),
            pairs.len()
        )),
        "{summary}"
    );
    let text = std::fs::read_to_string(&pairs_file).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("record_a\trecord_b\tdistance\testimated_cosine")
    );
    let mut lines: Vec<(u32, u32, u32)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<u32> = l.split('\t').take(3).map(|x| x.parse().unwrap()).collect();
            (f[0], f[1], f[2])
        })
        .collect();
    lines.sort();
    // Records are numbered from 0: document i is record i.
    let want: Vec<(u32, u32, u32)> = pairs.iter().map(|p| (p.i, p.j, p.distance)).collect();
    assert_eq!(lines, want);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(stats["values"]["pairs"], pairs.len());
    assert!(stats["phases_seconds"]["sign"].as_f64().unwrap() >= 0.0);
}

#[test]
fn bad_input_is_reported_with_file_and_line_and_leaves_outputs_intact() {
    let input = tmp("bad.jsonl");
    std::fs::write(
        &input,
        "{\"text\": \"one\"}\n{\"text\": 2}\n{\"text\": \"three\"}\n",
    )
    .unwrap();
    let output = tmp("unique.txt");
    std::fs::write(&output, "previous output\n").unwrap();
    let out = simlsh()
        .args(["dedup"])
        .arg(&input)
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl") && err.contains(":2"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "previous output\n"
    );
    // --skip-bad carries on and counts the line.
    let out = simlsh()
        .args(["dedup", "--skip-bad"])
        .arg(&input)
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped 1"));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "one\nthree\n");
    // The output may not overwrite the input.
    let out = simlsh()
        .args(["dedup", "--skip-bad"])
        .arg(&input)
        .arg("--output")
        .arg(&input)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(std::fs::read_to_string(&input).unwrap().contains("three"));
    // A missing file names the file.
    let out = simlsh()
        .args(["dedup", "no-such-file.txt"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-file.txt"));
}

#[test]
fn bench_writes_a_table_a_plot_and_stats_with_intervals_and_skipped_signers() {
    let plot = tmp("plot.svg");
    let stats = tmp("bench.json");
    let out = simlsh()
        .args([
            "bench",
            "--dims",
            "256,4096",
            "--widths",
            "64",
            "--nnz",
            "8",
            "--rows",
            "400",
            "--seeds",
            "4",
            "--signers",
            "hashing-trick,rademacher,gaussian",
            // 4096 × 64 Gaussian floats are 1 MiB: over the limit, skipped and listed.
            "--max-matrix-mib",
            "0",
            "-q",
            "--plot",
        ])
        .arg(&plot)
        .arg("--stats")
        .arg(&stats)
        .output()
        .unwrap();
    ok(&out);
    let table = String::from_utf8(out.stdout).unwrap();
    // Header, rule, and one line per configuration: 2 dims × 3 signers, measured or skipped.
    assert_eq!(table.lines().count(), 2 + 6, "{table}");
    assert!(table.contains("95% CI, 4 seeds"), "{table}");
    assert!(
        table.contains("| hashing-trick | 256 | 64 | 8 | 0 B |"),
        "{table}"
    );
    // Every explicit matrix is over 0 MiB: both skipped signers stay in the table, with the
    // memory they would have needed (D·f/8 and 4·D·f bytes).
    assert!(
        table.contains("| rademacher | 4096 | 64 | 8 | (32.0 KiB needed) | skipped: matrix of 32.0 KiB > --max-matrix-mib 0 |"),
        "{table}"
    );
    assert!(
        table.contains("| gaussian | 256 | 64 | 8 | (64.0 KiB needed) | skipped"),
        "{table}"
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg"));
    // The plot labels its points and lists what was skipped.
    assert!(
        svg.contains("D=256 f=64 nnz=8") && svg.contains("Skipped (4)"),
        "plot"
    );
    assert!(svg.contains("95% intervals"), "plot");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let results = doc["values"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    for r in results {
        if r["signer"] == "hashing-trick" {
            // An interval over 4 seeds: positive half-width, mean near 1 (RMSE over ideal).
            let (m, h) = (
                r["rmse_over_ideal"].as_f64().unwrap(),
                r["rmse_over_ideal_ci95"].as_f64().unwrap(),
            );
            assert!(h > 0.0 && (0.7..1.4).contains(&m), "{r}");
            assert_eq!(r["seeds"], 4);
        } else {
            assert!(
                r["skipped"].as_str().unwrap().contains("--max-matrix-mib"),
                "{r}"
            );
        }
    }
}

#[test]
fn dedup_takes_vectors_and_signature_codes() {
    use simlsh::io::npy::write_signatures_npy;
    use simlsh::rng::Rng;
    // Codes: planted duplicates among random codes; the pairs equal the library's join.
    let mut rng = Rng::new(3);
    let mut m = simlsh::SignatureMatrix::new(64).unwrap();
    for i in 0..2000u64 {
        let c = if i % 10 == 9 {
            m.row((i - 1) as usize)[0] ^ (1 << (i % 64))
        } else {
            rng.next_u64()
        };
        m.push_words(64, &[c]).unwrap();
    }
    let codes = tmp("codes.npy");
    write_signatures_npy(&codes, &m).unwrap();
    let pairs_file = tmp("code-pairs.tsv");
    let out = simlsh()
        .args(["dedup"])
        .arg(&codes)
        .arg("--pairs")
        .arg(&pairs_file)
        .output()
        .unwrap();
    ok(&out);
    let pairs = join::self_join(&m, 3).unwrap();
    assert_eq!(pairs.len(), 200);
    let mut lines: Vec<String> = std::fs::read_to_string(&pairs_file)
        .unwrap()
        .lines()
        .skip(1)
        .map(String::from)
        .collect();
    lines.sort_by_key(|l| {
        let f: Vec<u32> = l.split('\t').take(2).map(|x| x.parse().unwrap()).collect();
        (f[0], f[1])
    });
    let want: Vec<String> = pairs
        .iter()
        .map(|p| format!("{}\t{}\t{}", p.i, p.j, p.distance))
        .collect();
    assert_eq!(
        lines
            .iter()
            .map(|l| l.rsplit_once('\t').unwrap().0.to_string())
            .collect::<Vec<_>>(),
        want
    );
    // Vectors: the bundled GloVe rows plus an exact copy of row 5 at the end.
    let src = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/glove-6B-50d-10k/vectors.fvecs"
    ))
    .unwrap();
    let row = 4 + 50 * 4;
    let mut v = src[..row * 300].to_vec();
    v.extend_from_slice(&src[row * 5..row * 6]);
    let fvecs = tmp("vectors.fvecs");
    std::fs::write(&fvecs, &v).unwrap();
    let out = simlsh()
        .args([
            "dedup",
            "--signer",
            "super-bit",
            "--bits",
            "256",
            "--radius",
            "0",
        ])
        .arg(&fvecs)
        .output()
        .unwrap();
    ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .starts_with("documents 301  empty 0  pairs 1  clusters 1  removed 1")
    );
}

#[test]
fn idf_is_saved_and_reused_and_a_mismatched_tokenizer_is_refused() {
    let input = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/healthtweets-10k/healthtweets-10k.csv"
    );
    let idf = tmp("tweets.idf");
    let run = |extra: &[&str]| {
        let out = simlsh()
            .args(["dedup", input, "--stop-words", "english"])
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (ok, fitted, err) = run(&["--save-idf", idf.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (ok, reused, err) = run(&["--idf", idf.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(fitted, reused);
    let out = simlsh()
        .args(["dedup", input, "--idf"])
        .arg(&idf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("fitted with tokenizer"));
}
