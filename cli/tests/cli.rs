//! The `simlsh` binary end to end: outputs checked against the library's results, bad input
//! reported with file and line, outputs written atomically and never over the input.

use simlsh::join;
use simlsh::signers::HashedGaussian;
use simlsh::text::{Idf, Mode, SignOptions, Tokenizer};

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
    // The CLI's default signer for text.
    let signer = HashedGaussian::builder().bits(64).seed(0).build().unwrap();
    let corpus = tok
        .sign_corpus_with(&signer, &texts, SignOptions::default())
        .unwrap();
    // Documents without features are never paired.
    let featureless: Vec<u32> = corpus.featureless().iter().map(|&i| i as u32).collect();
    let mut pairs = Vec::new();
    join::self_join_active(&corpus.signatures, 3, &featureless, |p| pairs.push(p)).unwrap();
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

/// Rows of a TSV written by the command line (header skipped), as numbers of the first
/// `cols` columns.
fn tsv_rows(path: &std::path::Path, cols: usize) -> Vec<Vec<u32>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            l.split('\t')
                .take(cols)
                .map(|x| x.parse().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn raw_code_joins_leave_all_zero_codes_out_unless_zero_codes() {
    use simlsh::index::Featureless;
    use simlsh::io::npy::write_signatures_npy;
    use simlsh::rng::Rng;
    // 128-bit codes: random ones with planted near copies, six all-zero codes (rows without
    // features, as a simlsh signer gives them) and one code whose first word only is zero.
    let mut rng = Rng::new(11);
    let mut m = simlsh::SignatureMatrix::new(128).unwrap();
    let zero = [3usize, 40, 41, 97, 150, 299];
    for i in 0..300usize {
        let c = if zero.contains(&i) {
            [0, 0]
        } else if i == 7 {
            [0, 1 << 9]
        } else if i % 10 == 9 {
            let r = m.row(i - 1);
            [r[0] ^ (1 << (i % 64)), r[1]]
        } else {
            [rng.next_u64(), rng.next_u64()]
        };
        m.push_words(128, &c).unwrap();
    }
    let codes = tmp("featureless-codes.npy");
    write_signatures_npy(&codes, &m).unwrap();
    assert_eq!(Featureless::of_codes(&m).stored(), &zero.map(|i| i as u32));
    let is_zero = |i: u32| zero.contains(&(i as usize));
    let all: Vec<Vec<u32>> = join::self_join(&m, 3)
        .unwrap()
        .iter()
        .map(|p| vec![p.i, p.j, p.distance])
        .collect();
    // 15 pairs of zero codes among the planted pairs.
    assert_eq!(
        all.iter()
            .filter(|p| is_zero(p[0]) && is_zero(p[1]))
            .count(),
        15
    );
    let (pairs, empty) = (tmp("featureless-pairs.tsv"), tmp("featureless-empty.txt"));
    for zero_codes in [false, true] {
        let mut cmd = simlsh();
        cmd.arg("dedup").arg(&codes).args(["--radius", "3"]);
        cmd.arg("--pairs").arg(&pairs).arg("--empty").arg(&empty);
        if zero_codes {
            cmd.arg("--zero-codes");
        }
        let out = ok(&cmd.output().unwrap());
        let mut got = tsv_rows(&pairs, 3);
        got.sort();
        let want: Vec<Vec<u32>> = all
            .iter()
            .filter(|p| zero_codes || !(is_zero(p[0]) || is_zero(p[1])))
            .cloned()
            .collect();
        assert_eq!(got, want, "--zero-codes {zero_codes}");
        let listed: Vec<u32> = tsv_rows(&empty, 1).into_iter().map(|r| r[0]).collect();
        let n_empty = if zero_codes { 0 } else { zero.len() };
        assert_eq!(listed.len(), n_empty);
        assert!(listed.iter().all(|&i| is_zero(i)));
        assert!(
            out.starts_with(&format!(
                "documents 300  empty {n_empty}  pairs {}",
                want.len()
            )),
            "{out}"
        );

        // Clusters: each zero code its own cluster, or the zero codes one cluster.
        let mut cmd = simlsh();
        cmd.arg("cluster").arg(&codes).args(["--radius", "3"]);
        if zero_codes {
            cmd.arg("--zero-codes");
        }
        let out = ok(&cmd.output().unwrap());
        let labels: Vec<u32> = out
            .lines()
            .skip(1)
            .map(|l| l.split('\t').nth(1).unwrap().parse().unwrap())
            .collect();
        for &i in &zero {
            assert_eq!(labels[i], if zero_codes { 3 } else { i as u32 }, "row {i}");
        }

        // The k-NN graph: the zero codes have no neighbours and are no one's (brute force
        // over the other rows), or are codes at distance 0 from each other.
        let knn = tmp("featureless-knn.tsv");
        let mut cmd = simlsh();
        cmd.arg("knn")
            .arg(&codes)
            .args(["--k", "2", "--out"])
            .arg(&knn);
        if zero_codes {
            cmd.arg("--zero-codes");
        }
        ok(&cmd.output().unwrap());
        let got = tsv_rows(&knn, 3);
        let mut want = Vec::new();
        for i in 0..m.len() as u32 {
            if !zero_codes && is_zero(i) {
                continue;
            }
            let mut nb: Vec<(u32, u32)> = (0..m.len() as u32)
                .filter(|&j| j != i && (zero_codes || !is_zero(j)))
                .map(|j| (m.distance(i as usize, j as usize), j))
                .collect();
            nb.sort();
            want.extend(nb.into_iter().take(2).map(|(d, j)| vec![i, j, d]));
        }
        assert_eq!(got, want, "--zero-codes {zero_codes}");
        if zero_codes {
            assert!(got.contains(&vec![3, 40, 0]));
        }
    }
}

/// `knn`'s default method is the library's ([`KnnMethod::default`](join::KnnMethod), whose
/// name `--help` shows): `knn` without `--method` writes the graph `--method exact` writes,
/// which is also the graph of `--method linear` (the exact scan) and the library's exact
/// graph of the same signatures.
#[test]
fn knn_without_method_is_the_librarys_default_method() {
    let default = join::KnnMethod::default();
    assert_eq!(default, join::KnnMethod::Exact);
    assert_eq!(default.name().parse::<join::KnnMethod>().unwrap(), default);
    let help = ok(&simlsh().args(["knn", "--help"]).output().unwrap());
    let method = &help[help.find("--method <METHOD>").unwrap()..];
    let method = &method[..method.find("\n  -").unwrap_or(method.len())];
    assert!(
        method.contains(&format!("[default: {}]", default.name())),
        "{method}"
    );
    let input = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/glove-6B-50d-10k/vectors.fvecs"
    );
    let run = |method: Option<&str>| {
        let mut cmd = simlsh();
        cmd.args([
            "knn", input, "--k", "5", "--bits", "64", "--signer", "gaussian",
        ]);
        if let Some(m) = method {
            cmd.args(["--method", m]);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (
            ok(&out),
            stderr.lines().last().unwrap_or_default().to_string(),
        )
    };
    let (graph, summary) = run(None);
    assert_eq!(run(Some(default.name())), (graph.clone(), summary.clone()));
    assert_eq!(run(Some("linear")), (graph.clone(), summary.clone()));
    assert!(summary.ends_with("index linear)"), "{summary}");
    // The library's exact graph of the same signatures.
    use simlsh::Signer as _;
    let x = simlsh::io::read_vecs(input.as_ref(), simlsh::io::vecs::VecsKind::F32).unwrap();
    let sigs = simlsh::signers::SignerSpec::new(simlsh::signers::SignerKind::Gaussian)
        .bits(64)
        .build(Some(x.ncols() as u64))
        .unwrap()
        .sign_dense(&x)
        .unwrap();
    let want: Vec<(usize, u32, u32)> = join::knn_graph(&sigs, 5)
        .unwrap()
        .iter()
        .enumerate()
        .flat_map(|(i, hits)| hits.iter().map(move |h| (i, h.id, h.distance)))
        .collect();
    let got: Vec<(usize, u32, u32)> = graph
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
}
