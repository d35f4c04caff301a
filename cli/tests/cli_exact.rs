//! Exact answers from the command line: `dedup`/`cluster` with a cosine threshold give the
//! pairs of a brute-force exact-cosine oracle (precision 1, recall within the planned binomial
//! bound), empty documents are counted apart and never paired, leader clusters do not chain,
//! rows are named by record or id, and `knn --rerank` returns exact cosines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ndarray::Array2;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::signers::HashedGaussian;
use simlsh::text::{Idf, Mode, SignOptions, Tokenizer};
use simlsh::verify::{DenseVectors, SparseVectors, Vectors};

mod cli_common;
use cli_common::{ok, simlsh};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-exact-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Documents: 120 groups of near-duplicates (a random 40-word text, then copies with a few
/// words replaced), 400 unrelated texts, and 7 documents without features (empty,
/// punctuation only), shuffled. Returns the texts.
fn planted_documents() -> Vec<String> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let vocab: Vec<String> = (0..3000).map(|i| format!("w{i}")).collect();
    let word = |rng: &mut Xoshiro256PlusPlus| vocab[rng.random_range(0..vocab.len())].clone();
    let mut docs = Vec::new();
    for _ in 0..120 {
        let base: Vec<String> = (0..40).map(|_| word(&mut rng)).collect();
        docs.push(base.join(" "));
        for _ in 0..rng.random_range(1..4) {
            let mut copy = base.clone();
            for _ in 0..rng.random_range(0..12) {
                let k = rng.random_range(0..copy.len());
                copy[k] = word(&mut rng);
            }
            docs.push(copy.join(" "));
        }
    }
    for _ in 0..400 {
        let n = rng.random_range(5..60);
        docs.push((0..n).map(|_| word(&mut rng)).collect::<Vec<_>>().join(" "));
    }
    for e in ["", "!!!", "...", " ", "— ; —", "?", ""] {
        docs.push(e.to_string());
    }
    // Fisher–Yates with the seeded generator.
    for i in (1..docs.len()).rev() {
        let j = rng.random_range(0..=i);
        docs.swap(i, j);
    }
    docs
}

/// The CLI's default text pipeline (mode auto, TF-IDF fitted on the documents) through the
/// library: each document's weighted features as normalised sparse rows.
fn oracle_vectors(docs: &[String]) -> SparseVectors {
    let plain = Tokenizer::builder().mode(Mode::Auto).build().unwrap();
    let idf = Idf::fit(&plain, docs.iter());
    let tok = Tokenizer::builder()
        .mode(Mode::Auto)
        .idf(idf)
        .build()
        .unwrap();
    // The CLI's default signer for text (the rows do not depend on it).
    let signer = HashedGaussian::builder().bits(64).build().unwrap();
    let corpus = tok
        .sign_corpus_with(&signer, docs, SignOptions::default().rows(true))
        .unwrap();
    SparseVectors::from_feature_rows(corpus.rows.unwrap()).unwrap()
}

/// Every pair with exact cosine ≥ t (brute force), with its cosine.
fn brute_force<V: Vectors>(v: &V, t: f64) -> BTreeMap<(u32, u32), f64> {
    let mut out = BTreeMap::new();
    for i in 0..v.len() {
        for j in i + 1..v.len() {
            if v.is_zero(i) || v.is_zero(j) {
                continue;
            }
            let c = v.cosine(i, j);
            if c >= t {
                out.insert((i as u32, j as u32), c);
            }
        }
    }
    out
}

/// Pairs of a `--pairs` file: (a, b) → (distance, cosine), checking the header.
fn read_pairs(path: &PathBuf, header: &str) -> BTreeMap<(String, String), (u32, f64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                (f[0].to_string(), f[1].to_string()),
                (f[2].parse().unwrap(), f[3].parse().unwrap()),
            )
        })
        .collect()
}

/// The rows an `--empty` file lists (after its header).
fn listed_rows(path: &PathBuf) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.parse().unwrap())
        .collect()
}

/// The number of misses allowed among `truth` pairs for a planned recall of `recall` at the
/// threshold (pairs above it are found at least as often): the binomial mean plus four
/// standard deviations, plus 2.
fn allowed_misses(truth: usize, recall: f64) -> usize {
    let p = 1.0 - recall;
    let mean = truth as f64 * p;
    (mean + 4.0 * (mean * (1.0 - p)).sqrt() + 2.0).floor() as usize
}

#[test]
fn verified_dedup_of_text_equals_the_exact_cosine_oracle() {
    let docs = planted_documents();
    let input = tmp("docs.txt");
    std::fs::write(&input, docs.join("\n") + "\n").unwrap();
    let vectors = oracle_vectors(&docs);
    let empty: Vec<u32> = vectors.zero_rows();
    assert_eq!(empty.len(), 7, "the planted documents without features");
    // Without --bits, a cosine join signs at 256 bits (64-bit bands would be too wide a net).
    for (t, bits) in [(0.8, None), (0.6, Some("128"))] {
        let truth = brute_force(&vectors, t);
        assert!(
            truth.len() > 200,
            "{} true pairs: too few to test",
            truth.len()
        );
        let pairs = tmp("pairs.tsv");
        let empty_file = tmp("empty.txt");
        let mut cmd = simlsh();
        cmd.arg("dedup")
            .arg(&input)
            .args(["--cosine", &t.to_string()]);
        if let Some(b) = bits {
            cmd.args(["--bits", b]);
        }
        let out = ok(&cmd
            .arg("--pairs")
            .arg(&pairs)
            .arg("--empty")
            .arg(&empty_file)
            .output()
            .unwrap());
        assert!(
            out.contains(&format!("f = {}", bits.unwrap_or("256"))),
            "{out}"
        );
        let got = read_pairs(&pairs, "record_a\trecord_b\tdistance\tcosine");
        // Precision 1: every pair reported is a true pair, with its exact cosine.
        for ((a, b), (_, c)) in &got {
            let key = (a.parse().unwrap(), b.parse().unwrap());
            let want = truth
                .get(&key)
                .unwrap_or_else(|| panic!("t = {t}: ({a}, {b}) at {c} is not a true pair"));
            assert!((c - want).abs() < 1e-5, "({a}, {b}): {c} vs {want}");
        }
        // Recall: the planned 0.99 at the threshold, within the binomial bound.
        let missed = truth.len() - got.len();
        assert!(
            missed <= allowed_misses(truth.len(), 0.99),
            "t = {t}: {missed} of {} true pairs missed\n{out}",
            truth.len()
        );
        assert!(
            out.starts_with(&format!(
                "documents {}  empty 7  pairs {}",
                docs.len(),
                got.len()
            )),
            "{out}"
        );
        assert!(out.contains("exact cosine"), "{out}");
        assert_eq!(listed_rows(&empty_file), empty);
    }
}

/// `dedup --exact` (prefix filtering, no signatures): every pair of the brute-force oracle
/// (recall 1, precision 1) with its exact cosine, on text at two thresholds and on a sparse
/// matrix; the pairs have no distance column (TSV and Parquet), and the clusters and empty
/// rows follow.
#[test]
fn exact_dedup_gives_every_pair_of_the_oracle() {
    let docs = planted_documents();
    let input = tmp("docs-exact.txt");
    std::fs::write(&input, docs.join("\n") + "\n").unwrap();
    let vectors = oracle_vectors(&docs);
    for t in [0.8, 0.5] {
        let truth = brute_force(&vectors, t);
        assert!(truth.len() > 200, "{} true pairs", truth.len());
        let (pairs, empty_file, stats) = (
            tmp("exact-pairs.tsv"),
            tmp("exact-empty.txt"),
            tmp("exact.json"),
        );
        let out = ok(&simlsh()
            .arg("dedup")
            .arg(&input)
            .args(["--cosine", &t.to_string(), "--exact", "--pairs"])
            .arg(&pairs)
            .arg("--empty")
            .arg(&empty_file)
            .arg("--stats")
            .arg(&stats)
            .output()
            .unwrap());
        let text = std::fs::read_to_string(&pairs).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("record_a\trecord_b\tcosine"));
        let got: BTreeMap<(u32, u32), f64> = lines
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                assert_eq!(f.len(), 3, "{l}");
                (
                    (f[0].parse().unwrap(), f[1].parse().unwrap()),
                    f[2].parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            truth.keys().collect::<Vec<_>>(),
            "t = {t}"
        );
        for (k, c) in &got {
            assert!((c - truth[k]).abs() < 1e-6, "{k:?}: {c} vs {}", truth[k]);
        }
        assert!(
            out.starts_with(&format!(
                "documents {}  empty 7  pairs {}",
                docs.len(),
                truth.len()
            )),
            "{out}"
        );
        assert!(out.contains("recall 1"), "{out}");
        assert_eq!(listed_rows(&empty_file), vectors.zero_rows());
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(s["values"]["scheme"], "prefix");
        assert_eq!(s["values"]["pairs"], truth.len() as u64);
        let cands = s["values"]["candidates"].as_u64().unwrap();
        assert!(cands >= truth.len() as u64 && cands <= s["values"]["examined"].as_u64().unwrap());
    }
    // Errors: no threshold, signature options, stored codes, dense vectors.
    let bad = |args: &[&str], path: &PathBuf, says: &str| {
        let out = simlsh().arg("dedup").arg(path).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{args:?}: {err}"
        );
    };
    bad(&["--exact"], &input, "--cosine");
    bad(
        &["--cosine", "0.8", "--exact", "--bits", "256"],
        &input,
        "--bits",
    );
    bad(
        &["--cosine", "0.8", "--exact", "--memory", "1G"],
        &input,
        "--memory",
    );
    bad(
        &["--cosine", "0", "--exact"],
        &input,
        "positive cosine threshold",
    );
    let dense = tmp("dense.npy");
    ndarray_npy::write_npy(&dense, &Array2::from_elem((3, 4), 1.0f32)).unwrap();
    bad(&["--cosine", "0.8", "--exact"], &dense, "dense vectors");
}

/// `dedup --exact` on a sparse matrix (SVMlight): the oracle's pairs, by row number.
#[test]
fn exact_dedup_of_a_sparse_matrix() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut rows: Vec<Vec<(u32, f32)>> = Vec::new();
    for r in 0..400 {
        if r > 0 && rng.random_bool(0.4) {
            let mut c = rows[rng.random_range(0..r)].clone();
            for e in &mut c {
                e.1 *= rng.random_range(0.8f32..1.25);
            }
            rows.push(c);
        } else {
            let mut c: Vec<(u32, f32)> = (0..rng.random_range(0..12))
                .map(|_| (rng.random_range(1..300u32), rng.random_range(0.1f32..3.0)))
                .collect();
            c.sort_by_key(|e| e.0);
            c.dedup_by_key(|e| e.0);
            rows.push(c);
        }
    }
    let svm: String = rows
        .iter()
        .map(|r| {
            let f: Vec<String> = r.iter().map(|(k, w)| format!("{k}:{w}")).collect();
            format!("0 {}\n", f.join(" "))
        })
        .collect();
    let input = tmp("rows.svm");
    std::fs::write(&input, svm).unwrap();
    let v = SparseVectors::from_rows(rows.iter().map(|r| {
        r.iter()
            .map(|&(k, w)| (u64::from(k), w))
            .collect::<Vec<_>>()
    }))
    .unwrap();
    let truth = brute_force(&v, 0.9);
    assert!(truth.len() > 50, "{}", truth.len());
    let pairs = tmp("rows-exact.tsv");
    ok(&simlsh()
        .arg("dedup")
        .arg(&input)
        .args(["--cosine", "0.9", "--exact", "--pairs"])
        .arg(&pairs)
        .output()
        .unwrap());
    let text = std::fs::read_to_string(&pairs).unwrap();
    let got: Vec<(u32, u32)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap())
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(got, truth.keys().copied().collect::<Vec<_>>());
}

#[test]
fn unverified_dedup_never_pairs_empty_documents() {
    let docs = planted_documents();
    let input = tmp("docs-unverified.txt");
    std::fs::write(&input, docs.join("\n") + "\n").unwrap();
    let pairs = tmp("pairs-unverified.tsv");
    let out = ok(&simlsh()
        .arg("dedup")
        .arg(&input)
        .args(["--radius", "3", "--pairs"])
        .arg(&pairs)
        .output()
        .unwrap());
    let empty: BTreeSet<String> = oracle_vectors(&docs)
        .zero_rows()
        .iter()
        .map(|i| i.to_string())
        .collect();
    let got = read_pairs(&pairs, "record_a\trecord_b\tdistance\testimated_cosine");
    // The 7 documents without features share the all-zero signature: 21 pairs at distance 0
    // if they were paired.
    assert!(
        !got.keys()
            .any(|(a, b)| empty.contains(a) || empty.contains(b))
    );
    assert!(out.contains("empty 7"), "{out}");
}

#[test]
fn leader_clusters_do_not_chain_and_components_do() {
    let docs = planted_documents();
    let input = tmp("docs-leader.txt");
    std::fs::write(&input, docs.join("\n") + "\n").unwrap();
    let vectors = oracle_vectors(&docs);
    let t = 0.7;
    let labels = |mode: &str| -> Vec<usize> {
        let out = tmp(&format!("clusters-{mode}.tsv"));
        ok(&simlsh()
            .arg("cluster")
            .arg(&input)
            .args([
                "--cosine",
                &t.to_string(),
                "--bits",
                "256",
                "--clustering",
                mode,
            ])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap());
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(text.lines().next(), Some("record\tcluster"));
        text.lines()
            .skip(1)
            .enumerate()
            .map(|(i, l)| {
                let f: Vec<usize> = l.split('\t').map(|x| x.parse().unwrap()).collect();
                assert_eq!(f[0], i);
                f[1]
            })
            .collect()
    };
    for mode in ["leader", "star"] {
        let l = labels(mode);
        let mut members = 0;
        for (i, &leader) in l.iter().enumerate() {
            assert_eq!(l[leader], leader, "{mode}: a leader leads itself");
            if leader != i {
                members += 1;
                let c = vectors.cosine(i, leader);
                assert!(
                    c >= t,
                    "{mode}: member {i} at cosine {c} from its leader {leader}"
                );
            }
        }
        assert!(members > 100, "{mode}: {members} members");
    }
    // Components: every cluster is connected by true pairs (so a member may be far from the
    // cluster's smallest row), and no true pair crosses two clusters.
    let l = labels("components");
    for (i, j) in brute_force(&vectors, t).keys() {
        assert_eq!(l[*i as usize], l[*j as usize], "pair ({i}, {j}) split");
    }
}

#[test]
fn rows_are_named_by_an_id_field() {
    let input = tmp("ids.jsonl");
    let lines = [
        r#"{"id": "a1", "text": "the quick brown fox jumps over the lazy dog"}"#,
        r#"{"id": "b2", "text": "completely different words here"}"#,
        r#"{"id": "c3", "text": "the quick brown fox jumps over the lazy dog!"}"#,
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let pairs = tmp("id-pairs.tsv");
    let clusters = tmp("id-clusters.tsv");
    ok(&simlsh()
        .arg("dedup")
        .arg(&input)
        .args([
            "--cosine",
            "0.9",
            "--bits",
            "256",
            "--id-field",
            "id",
            "--pairs",
        ])
        .arg(&pairs)
        .arg("--clusters")
        .arg(&clusters)
        .output()
        .unwrap());
    let got = read_pairs(&pairs, "id_a\tid_b\tdistance\tcosine");
    assert_eq!(got.len(), 1);
    let ((a, b), (_, c)) = got.into_iter().next().unwrap();
    assert_eq!((a.as_str(), b.as_str()), ("a1", "c3"));
    assert!((c - 1.0).abs() < 1e-6);
    assert_eq!(
        std::fs::read_to_string(&clusters).unwrap(),
        "id\tcluster\na1\ta1\nb2\tb2\nc3\ta1\n"
    );
}

/// `n` dense vectors of dimension 32: random centres with 1–3 noisy copies each.
fn planted_vectors(n: usize) -> Array2<f32> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut x = Array2::<f32>::zeros((n, 32));
    let mut i = 0;
    while i < n {
        let centre: Vec<f32> = (0..32).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        for _ in 0..rng.random_range(1..4).min(n - i) {
            let noise = rng.random_range(0.0f32..0.6);
            for (d, c) in centre.iter().enumerate() {
                x[[i, d]] = c + noise * rng.random_range(-1.0f32..1.0);
            }
            i += 1;
        }
    }
    x
}

fn write_fvecs(path: &PathBuf, x: &Array2<f32>) {
    let mut bytes = Vec::new();
    for row in x.rows() {
        bytes.extend((row.len() as i32).to_le_bytes());
        row.iter().for_each(|v| bytes.extend(v.to_le_bytes()));
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn verified_dedup_of_dense_vectors_equals_the_oracle() {
    let x = planted_vectors(3000);
    let input = tmp("dense.fvecs");
    write_fvecs(&input, &x);
    let vectors = DenseVectors::new(x.view()).unwrap();
    let t = 0.9;
    let truth = brute_force(&vectors, t);
    assert!(truth.len() > 300, "{}", truth.len());
    let pairs = tmp("dense-pairs.tsv");
    ok(&simlsh()
        .arg("dedup")
        .arg(&input)
        .args([
            "--cosine", "0.9", "--signer", "gaussian", "--bits", "256", "--pairs",
        ])
        .arg(&pairs)
        .output()
        .unwrap());
    let got = read_pairs(&pairs, "record_a\trecord_b\tdistance\tcosine");
    for ((a, b), (_, c)) in &got {
        let want = truth[&(a.parse().unwrap(), b.parse().unwrap())];
        assert!((c - want).abs() < 1e-5, "({a}, {b})");
    }
    let missed = truth.len() - got.len();
    assert!(
        missed <= allowed_misses(truth.len(), 0.99),
        "{missed} of {}",
        truth.len()
    );
}

#[test]
fn knn_rerank_gives_exact_cosines_and_recovers_the_exact_neighbours() {
    let x = planted_vectors(2000);
    let input = tmp("knn.fvecs");
    write_fvecs(&input, &x);
    let vectors = DenseVectors::new(x.view()).unwrap();
    let k = 5;
    let out = tmp("knn.tsv");
    ok(&simlsh()
        .arg("knn")
        .arg(&input)
        .args([
            "--k",
            "5",
            "--rerank",
            "60",
            "--signer",
            "super-bit",
            "--bits",
            "256",
            "-q",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap());
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("record\tneighbor\tdistance\tcosine")
    );
    let mut found: Vec<Vec<usize>> = vec![Vec::new(); x.nrows()];
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split('\t').collect();
        let (i, j): (usize, usize) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let c: f64 = f[3].parse().unwrap();
        assert!((c - vectors.cosine(i, j)).abs() < 1e-5, "({i}, {j})");
        found[i].push(j);
    }
    // Recall@5 against the exact top 5 by cosine (ties by id).
    let mut hit = 0;
    for (i, f) in found.iter().enumerate() {
        assert_eq!(f.len(), k);
        let mut all: Vec<(f64, usize)> = (0..x.nrows())
            .filter(|&j| j != i)
            .map(|j| (-vectors.cosine(i, j), j))
            .collect();
        all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let exact: BTreeSet<usize> = all[..k].iter().map(|p| p.1).collect();
        hit += f.iter().filter(|j| exact.contains(j)).count();
    }
    let recall = hit as f64 / (k * x.nrows()) as f64;
    assert!(recall > 0.95, "recall@5 {recall}");
    // Stored codes have no vectors: --rerank is refused with a clear error.
    let codes = tmp("knn-codes.npy");
    ok(&simlsh()
        .arg("sign")
        .arg(&input)
        .arg(&codes)
        .args(["--signer", "gaussian", "-q"])
        .output()
        .unwrap());
    let r = simlsh()
        .arg("knn")
        .arg(&codes)
        .args(["--k", "5", "--rerank", "20"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("--rerank needs the input's vectors"));
}

/// The outputs of `dedup` (pairs, clusters, unique texts, empty rows) on `input` with `opts`
/// and `--memory`, and its `--stats`; temporary files in `spill_dir`.
fn dedup_outputs(
    input: &std::path::Path,
    opts: &[&str],
    memory: Option<&str>,
    tag: &str,
    spill_dir: &std::path::Path,
) -> (Vec<Vec<u8>>, serde_json::Value) {
    let names = ["pairs.tsv", "clusters.tsv", "unique.txt", "empty.txt"];
    let files: Vec<PathBuf> = names.iter().map(|n| tmp(&format!("{tag}-{n}"))).collect();
    let stats = tmp(&format!("{tag}-stats.json"));
    let mut cmd = simlsh();
    cmd.arg("dedup").arg(input).args(opts);
    for (flag, f) in ["--pairs", "--clusters", "--output", "--empty"]
        .iter()
        .zip(&files)
    {
        cmd.arg(flag).arg(f);
    }
    if let Some(m) = memory {
        cmd.args(["--memory", m]);
    }
    ok(&cmd
        .arg("--stats")
        .arg(&stats)
        .env("TMPDIR", spill_dir)
        .output()
        .unwrap());
    let stats = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    (
        files.iter().map(|f| std::fs::read(f).unwrap()).collect(),
        stats,
    )
}

/// Under a budget whose vectors' share does not hold the candidate rows' vectors, `dedup`
/// verifies the candidates in blocks (one more pass over the input each, after the pass
/// that finds them too large) and gives the outputs of the run without a budget, byte for
/// byte; the more blocks, the smaller the budget; a budget that holds them, one block and
/// one pass.
#[test]
fn dedup_verifies_in_blocks_when_the_vectors_exceed_their_share() {
    let input = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/healthtweets-10k/healthtweets-10k.csv"
    ));
    let spill_dir = tmp("blocks-spill");
    std::fs::create_dir_all(&spill_dir).unwrap();
    let opts = ["--cosine", "0.8", "--bits", "128"];
    let (want, _) = dedup_outputs(&input, &opts, None, "blocks-whole", &spill_dir);
    assert!(want[0].len() > 10_000, "too few pairs to test");
    let mut last = 0;
    for memory in ["1G", "3M", "1600K"] {
        let (got, stats) = dedup_outputs(&input, &opts, Some(memory), "blocks", &spill_dir);
        assert!(got == want, "--memory {memory}: the outputs differ");
        let v = &stats["values"];
        let blocks = v["verify_blocks"]
            .as_u64()
            .unwrap_or_else(|| panic!("{stats}"));
        let passes = v["verify_passes"].as_u64().unwrap();
        match memory {
            "1G" => assert_eq!((blocks, passes), (1, 1), "{stats}"),
            _ => {
                assert!(blocks > last.max(1), "--memory {memory}: {stats}");
                assert_eq!(passes, blocks + 1, "{stats}");
                assert!(v["candidates_spilled_bytes"].as_u64().unwrap() > 0);
            }
        }
        last = blocks;
        assert!(
            std::fs::read_dir(&spill_dir).unwrap().next().is_none(),
            "a temporary file is left behind"
        );
    }
}

/// `--memory` streams the documents (read again to verify the candidates and to write
/// --output; candidates spilled to a temporary file beyond their share of the budget, bands
/// sorted by chunks within theirs) and gives the outputs of the run without a budget, byte
/// for byte, at several budgets, with and without a spill (the smallest verifying in blocks);
/// the spill is removed; a budget too small for the signatures, or for the names and tables,
/// is an error naming it.
#[test]
fn dedup_under_a_memory_budget_gives_the_outputs_of_a_run_without() {
    let docs = planted_documents();
    let input = tmp("budget-docs.txt");
    std::fs::write(&input, docs.join("\n") + "\n").unwrap();
    let spill_dir = tmp("budget-spill");
    std::fs::create_dir_all(&spill_dir).unwrap();
    let names = ["pairs.tsv", "clusters.tsv", "unique.txt", "empty.txt"];
    // (options, memory budget, spilled): 50,000+ candidates at cosine 0.5 on 64 bits.
    for (opts, budgets) in [
        (&["--cosine", "0.8"][..], &[("1G", false)][..]),
        (
            &["--cosine", "0.5", "--bits", "64"][..],
            &[("1G", false), ("1M", true), ("700K", true), ("300K", true)][..],
        ),
    ] {
        let run =
            |memory: Option<&str>, tag: &str| dedup_outputs(&input, opts, memory, tag, &spill_dir);
        let (want, _) = run(None, "whole");
        assert!(want[0].len() > 1000, "too few pairs to test");
        for &(memory, spilled) in budgets {
            let (got, stats) = run(Some(memory), "budget");
            for (k, name) in names.iter().enumerate() {
                assert!(
                    got[k] == want[k],
                    "{opts:?} --memory {memory}: {name} differs"
                );
            }
            let spill = stats["values"]["candidates_spilled_bytes"]
                .as_u64()
                .unwrap_or_else(|| panic!("{stats}"));
            assert_eq!(spill > 0, spilled, "{opts:?} --memory {memory}: {stats}");
            assert!(
                std::fs::read_dir(&spill_dir).unwrap().next().is_none(),
                "a temporary file is left behind"
            );
        }
    }
    // Too small for the signatures of the documents at 4,096 bits; for their names, IDF
    // table and clusters.
    for (memory, bits, human, what) in [
        ("400K", "4096", "400.0 KiB", "4096 bits"),
        ("20K", "4096", "20.0 KiB", "names and tables"),
    ] {
        let out = simlsh()
            .arg("dedup")
            .arg(&input)
            .args(["--cosine", "0.5", "--bits", bits, "--memory", memory])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains(&format!("--memory {human} is too small")) && err.contains(what),
            "{err}"
        );
    }
    let out = simlsh()
        .arg("dedup")
        .arg(&input)
        .args(["--cosine", "0.8", "--memory", "lots"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("`lots` is not a size"),
        "{err}"
    );
}
