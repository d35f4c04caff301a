//! The CLI's choice of signer and text weighting, checked against the library: the default
//! signer of each input shape (hashed Gaussian for sparse vectors, text and dense vectors;
//! structured rotations for text from 1,024 bits),
//! `--signer hashing`, the very sparse signer's density taken from the
//! input's row length (or a warning), and jieba's keyword weights (`--weighting jieba`).

use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::io::{InputFormat, VectorOptions, Vectors, read_vectors};
use simlsh::signers::{AnySigner, Distribution, HashedGaussian, zero_projection_fraction};
use simlsh::text::{Idf, Mode, SignOptions, Tokenizer, Weighting};
use simlsh::{HashingTrick, HyperplaneSigner, Signer, SignerExt};

mod cli_common;
use cli_common::{ok, simlsh};

const GLOVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/glove-6B-50d-10k/vectors.fvecs"
);
const POEMS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/chinese-poetry-3k/poems.jsonl"
);

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-signer-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Runs `simlsh sign INPUT OUT ARGS --stats S`; returns the signature words (f = `bits`), the
/// stats' `values` and stderr.
fn sign(
    input: &Path,
    name: &str,
    bits: usize,
    args: &[&str],
) -> (Vec<u64>, serde_json::Value, String) {
    let out = tmp(&format!("{name}.npy"));
    let stats = tmp(&format!("{name}.json"));
    let run = simlsh()
        .arg("sign")
        .arg(input)
        .arg(&out)
        .args(args)
        .arg("--stats")
        .arg(&stats)
        .output()
        .unwrap();
    ok(&run);
    let sigs = simlsh::io::read_signatures_npy(&out, Some(bits))
        .unwrap()
        .as_slice()
        .to_vec();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    // Every timed phase also has its CPU time (Linux).
    let wall = doc["phases_seconds"].as_object().unwrap();
    let cpu = doc["phases_cpu_seconds"].as_object().unwrap();
    assert!(wall.contains_key("sign"));
    assert_eq!(
        wall.keys().collect::<Vec<_>>(),
        cpu.keys().collect::<Vec<_>>()
    );
    (
        sigs,
        doc["values"].clone(),
        String::from_utf8(run.stderr).unwrap(),
    )
}

/// A seeded svmlight file of `rows` sparse rows over `dim` columns, 40–80 nonzeros each.
fn sparse_file(name: &str, rows: usize, dim: u32, seed: u64) -> PathBuf {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut text = String::new();
    for _ in 0..rows {
        let mut cols: Vec<u32> = (0..rng.random_range(40..=80))
            .map(|_| rng.random_range(1..=dim))
            .collect();
        cols.sort_unstable();
        cols.dedup();
        text.push('0');
        for c in cols {
            text.push_str(&format!(" {c}:{:.4}", rng.random_range(-1.0f32..1.0)));
        }
        text.push('\n');
    }
    let path = tmp(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn read_sparse(path: &Path) -> simlsh::io::Csr {
    match read_vectors(path, InputFormat::Svmlight, &VectorOptions::default())
        .unwrap()
        .vectors
    {
        Vectors::Sparse(m) => m,
        Vectors::Dense(_) => panic!("sparse expected"),
    }
}

#[test]
fn the_default_signer_is_hashed_gaussian_for_sparse_and_dense_rows() {
    // Sparse rows: the hashed Gaussian signer, and --stats says it was the default.
    let svm = sparse_file("default.svm", 300, 50_000, 1);
    let m = read_sparse(&svm);
    let (got, values, _) = sign(
        &svm,
        "default-sparse",
        128,
        &["--bits", "128", "--seed", "5"],
    );
    let hg = HashedGaussian::builder().bits(128).seed(5).build().unwrap();
    assert_eq!(got, hg.sign_csr(m.view()).unwrap().as_slice());
    assert_eq!(values["signer"], "hashed-gaussian");
    assert_eq!(values["signer_origin"], "default for sparse vectors");

    // `--signer hashing` is the hashing trick, chosen.
    let (got, values, _) = sign(
        &svm,
        "hashing-sparse",
        128,
        &["--bits", "128", "--seed", "5", "--signer", "hashing"],
    );
    let ht = HashingTrick::builder().bits(128).seed(5).build().unwrap();
    assert_eq!(got, ht.sign_csr(m.view()).unwrap().as_slice());
    assert_eq!(values["signer"], "hashing-trick");
    assert_eq!(values["signer_origin"], "--signer");
    // The two signers do differ on these rows (else the checks above could not tell them apart).
    assert_ne!(
        hg.sign_csr(m.view()).unwrap().as_slice(),
        ht.sign_csr(m.view()).unwrap().as_slice()
    );

    // Dense rows too; a signature file records the signer used.
    let out = tmp("glove.simlsh");
    ok(&simlsh()
        .args(["sign", GLOVE])
        .arg(&out)
        .args(["--bits", "64", "-q"])
        .output()
        .unwrap());
    let f = simlsh::persist::load_signatures(&out).unwrap();
    assert_eq!(f.params["signer.kind"], "hashed-gaussian");
    let x = match read_vectors(
        Path::new(GLOVE),
        InputFormat::Fvecs,
        &VectorOptions::default(),
    )
    .unwrap()
    .vectors
    {
        Vectors::Dense(x) => x,
        Vectors::Sparse(_) => panic!("dense expected"),
    };
    let hg = HashedGaussian::builder().bits(64).seed(0).build().unwrap();
    assert_eq!(
        f.matrix.as_slice(),
        hg.sign_dense(&x.view()).unwrap().as_slice()
    );
}

#[test]
fn the_default_signer_of_text_is_hashed_gaussian() {
    let txt = tmp("docs.txt");
    let docs = [
        "the quick brown fox jumps over the lazy dog",
        "the quick brown fox jumped over a lazy dog",
        "lorem ipsum dolor sit amet",
        "",
    ];
    std::fs::write(&txt, docs.join("\n") + "\n").unwrap();
    let (got, values, stderr) = sign(&txt, "text", 64, &["--ngram", "2"]);
    // The CLI's default text pipeline (mode auto, TF-IDF fitted on the input).
    let plain = Tokenizer::builder()
        .mode(Mode::Auto)
        .ngram(2)
        .build()
        .unwrap();
    let tok = plain
        .to_builder()
        .idf(Idf::fit(&plain, docs.iter()))
        .build()
        .unwrap();
    let hg = HashedGaussian::builder().bits(64).seed(0).build().unwrap();
    let want = tok.sign_corpus(&hg, &docs).unwrap();
    assert_eq!(got, want.as_slice());
    assert_eq!(values["signer"], "hashed-gaussian");
    assert_eq!(values["signer_origin"], "default for text");
    assert!(
        stderr.contains("signer hashed-gaussian, the default for text"),
        "{stderr}"
    );
}

/// From 1,024 bits (`FWHT_TEXT_BITS`) the default signer of text is the structured-rotation
/// one, with its default buckets; sparse rows keep the hashed Gaussian signer at that width.
#[test]
fn the_default_signer_of_wide_text_signatures_is_fwht() {
    use simlsh::signers::{FWHT_TEXT_BITS, FwhtSigner};
    let txt = tmp("wide.txt");
    let docs = [
        "the quick brown fox jumps over the lazy dog",
        "the quick brown fox jumped over a lazy dog",
        "lorem ipsum dolor sit amet",
        "",
    ];
    std::fs::write(&txt, docs.join("\n") + "\n").unwrap();
    let bits = FWHT_TEXT_BITS.to_string();
    let (got, values, _) = sign(&txt, "wide-text", FWHT_TEXT_BITS, &["--bits", &bits]);
    let plain = Tokenizer::builder().mode(Mode::Auto).build().unwrap();
    let tok = plain
        .to_builder()
        .idf(Idf::fit(&plain, docs.iter()))
        .build()
        .unwrap();
    let fwht = FwhtSigner::builder().bits(FWHT_TEXT_BITS).build().unwrap();
    assert_eq!(got, tok.sign_corpus(&fwht, &docs).unwrap().as_slice());
    assert_eq!(values["signer"], "fwht");
    assert_eq!(values["signer_origin"], "default for text");
    // One bit narrower, the hashed Gaussian signer.
    let narrower = (FWHT_TEXT_BITS - 1).to_string();
    let (_, values, _) = sign(
        &txt,
        "narrower-text",
        FWHT_TEXT_BITS - 1,
        &["--bits", &narrower],
    );
    assert_eq!(values["signer"], "hashed-gaussian");
    // Sparse rows at the same width: the hashed Gaussian signer.
    let svm = sparse_file("wide.svm", 50, 10_000, 2);
    let (_, values, _) = sign(&svm, "wide-sparse", FWHT_TEXT_BITS, &["--bits", &bits]);
    assert_eq!(values["signer"], "hashed-gaussian");
}

#[test]
fn help_names_the_defaults_and_the_jieba_weighting() {
    for cmd in ["sign", "dedup", "knn", "cluster"] {
        let help = ok(&simlsh().args([cmd, "--help"]).output().unwrap());
        assert!(
            help.contains("Default: hashed-gaussian for sparse vectors, text and dense vectors"),
            "{cmd}: {help}"
        );
        assert!(help.contains("jieba.analyse.extract_tags"), "{cmd}: {help}");
    }
}

#[test]
fn very_sparse_on_sparse_rows_takes_its_density_from_the_mean_row_length() {
    // D = 200,000: the default density 1/√D leaves most projections of a 60-nonzero row at 0.
    let svm = sparse_file("vs.svm", 400, 200_000, 2);
    let m = read_sparse(&svm);
    let mean = m.nnz() as f64 / m.rows() as f64;
    let k = mean.round() as u64;
    let default_density = 1.0 / (m.cols() as f64).sqrt();
    assert!(zero_projection_fraction(k, default_density) > 0.8);

    let (got, values, stderr) = sign(&svm, "vs", 64, &["--signer", "very-sparse"]);
    let want: AnySigner = HyperplaneSigner::builder()
        .dim(m.cols() as u64)
        .bits(64)
        .seed(0)
        .distribution(Distribution::VerySparse { density: None })
        .expected_nnz(k)
        .build()
        .unwrap()
        .into();
    assert_eq!(got, want.sign_csr(m.view()).unwrap().as_slice());
    assert_eq!(values["signer"], format!("very-sparse:nnz={k}"));
    let zero = values["very_sparse_zero_projections"].as_f64().unwrap();
    assert!(zero <= 0.01, "{zero}");
    assert!(stderr.contains(&format!("nnz={k}")), "{stderr}");
    // Under 1% of the bits are projections that vanish: the fraction of 0 bits stays near
    // one half (binomial: 400 rows × 64 bits, sd ≈ 0.0028; bound 0.5 ± 0.01 + 1%).
    let ones: u64 = got.iter().map(|w| w.count_ones() as u64).sum();
    let frac_zero = 1.0 - ones as f64 / (m.rows() * 64) as f64;
    assert!((frac_zero - 0.5).abs() < 0.02, "{frac_zero}");

    // A density given by the user is kept, with a warning naming the fix.
    let (got, values, stderr) = sign(
        &svm,
        "vs-density",
        64,
        &["--signer", "very-sparse:density=0.002"],
    );
    let want: AnySigner = HyperplaneSigner::builder()
        .dim(m.cols() as u64)
        .bits(64)
        .seed(0)
        .distribution(Distribution::VerySparse {
            density: Some(0.002),
        })
        .build()
        .unwrap()
        .into();
    assert_eq!(got, want.sign_csr(m.view()).unwrap().as_slice());
    assert_eq!(values["signer"], "very-sparse:density=0.002");
    let zero = values["very_sparse_zero_projections"].as_f64().unwrap();
    assert!((zero - zero_projection_fraction(k, 0.002)).abs() < 1e-12);
    assert!(
        stderr.contains("warning") && stderr.contains(&format!("very-sparse:nnz={k}")),
        "{stderr}"
    );
}

/// The poems' texts, in file order.
fn poems() -> Vec<String> {
    std::fs::read_to_string(POEMS)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn weighting_jieba_signs_jieba_keywords_like_the_library() {
    let docs = poems();
    let (got, _, _) = sign(
        Path::new(POEMS),
        "jieba",
        64,
        &["--weighting", "jieba", "--top-k", "20", "-q"],
    );
    let tok = Tokenizer::builder()
        .mode(Mode::Cjk)
        .weighting(Weighting::JiebaKeywords)
        .top_k(Some(20))
        .build()
        .unwrap();
    let hg = HashedGaussian::builder().bits(64).seed(0).build().unwrap();
    let want = tok
        .sign_corpus_with(&hg, &docs, SignOptions::default())
        .unwrap();
    assert_eq!(got.len(), docs.len(), "one 64-bit word per poem");
    assert_eq!(got, want.signatures.as_slice());
    // The keywords are jieba's, not the TF-IDF of the CLI's default pipeline.
    let (tfidf, _, _) = sign(
        Path::new(POEMS),
        "jieba-tfidf",
        64,
        &["--mode", "cjk", "--top-k", "20", "-q"],
    );
    assert_ne!(tfidf, got);
    // Every poem has keywords of at least two characters, at most 20 of them.
    for d in docs.iter().take(50) {
        let f = tok.features(d);
        assert!(!f.is_empty() && f.len() <= 20);
        assert!(
            f.tokens.iter().all(|t| t.chars().count() >= 2),
            "{:?}",
            f.tokens
        );
    }
}

#[test]
fn weighting_jieba_refuses_other_tokenizers_and_idf_tables() {
    for (args, needle) in [
        (&["--mode", "chars"][..], "--mode cjk"),
        (&["--ngram", "2"][..], "--ngram 1"),
        (
            &["--save-idf", "x.idf"][..],
            "--save-idf applies to --weighting tfidf",
        ),
    ] {
        let out = simlsh()
            .args(["sign", POEMS])
            .arg(tmp("no.npy"))
            .args(["--weighting", "jieba"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
