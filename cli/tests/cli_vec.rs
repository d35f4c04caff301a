//! `simlsh sign`, `knn`, `cluster` and `eval` end to end: outputs checked against the
//! library's results on generated data and on the bundled GloVe vectors; bad input reported
//! with file and line.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::Array2;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::io::{InputFormat, VectorOptions, Vectors, read_vectors};
use simlsh::join::{clusters, self_join};
use simlsh::signers::{AnySigner, Distribution, HashedGaussian};
use simlsh::text::{Tokenizer, Weighting};
use simlsh::{HammingIndex, HashingTrick, HyperplaneSigner, LinearScan, SignatureMatrix, Signer};

#[path = "../../tests/npyzip/mod.rs"]
mod npyzip;
use npyzip::{npy_bytes, npy_raw, zip_of};

mod cli_common;
use cli_common::{ok, simlsh};

const GLOVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/glove-6B-50d-10k/vectors.fvecs"
);

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-vec-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn run(args: &[&str]) -> String {
    ok(&simlsh().args(args).output().unwrap())
}

fn gaussian(dim: usize, bits: usize) -> HyperplaneSigner {
    HyperplaneSigner::builder()
        .dim(dim as u64)
        .bits(bits)
        .seed(0)
        .distribution(Distribution::Gaussian)
        .build()
        .unwrap()
}

fn dense(path: &Path) -> Array2<f32> {
    let fmt = InputFormat::from_path(path).unwrap();
    match read_vectors(path, fmt, &VectorOptions::default())
        .unwrap()
        .vectors
    {
        Vectors::Dense(x) => x,
        Vectors::Sparse(_) => panic!("dense expected"),
    }
}

/// 300 vectors of dimension 16 in groups of 3 near-copies of a random centre (noise 0.05),
/// written as `.fvecs`.
fn small_fvecs(name: &str) -> PathBuf {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut bytes = Vec::new();
    let mut centre = [0f32; 16];
    for i in 0..300 {
        if i % 3 == 0 {
            centre
                .iter_mut()
                .for_each(|c| *c = rng.random_range(-1.0..1.0));
        }
        bytes.extend(16i32.to_le_bytes());
        for c in centre {
            let v = c + rng.random_range(-0.05f32..0.05);
            bytes.extend(v.to_le_bytes());
        }
    }
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn read_tsv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

/// Each row's k nearest other rows by the library's linear scan (k + 1 found, itself dropped).
fn library_knn(sigs: &SignatureMatrix, k: usize) -> Vec<Vec<(u32, u32)>> {
    let index = LinearScan::build(sigs).unwrap();
    index
        .knn_batch(sigs.as_slice(), k + 1)
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(i, hits)| {
            hits.into_iter()
                .filter(|h| h.id as usize != i)
                .take(k)
                .map(|h| (h.id, h.distance))
                .collect()
        })
        .collect()
}

fn check_knn(out: &Path, expected: &[Vec<(u32, u32)>]) {
    let rows = read_tsv(out);
    let got: Vec<(usize, u32, u32)> = rows
        .iter()
        .map(|r| {
            (
                r[0].parse().unwrap(),
                r[1].parse().unwrap(),
                r[2].parse().unwrap(),
            )
        })
        .collect();
    let want: Vec<(usize, u32, u32)> = expected
        .iter()
        .enumerate()
        .flat_map(|(i, v)| v.iter().map(move |&(id, d)| (i, id, d)))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn sign_writes_the_library_signatures_as_npy_and_signature_files() {
    for (input, bits) in [
        (small_fvecs("sign.fvecs"), 100usize),
        (PathBuf::from(GLOVE), 128),
    ] {
        let x = dense(&input);
        let want = gaussian(x.ncols(), bits).sign_dense(&x).unwrap();
        let npy = tmp("sign.npy");
        let file = tmp("sign.simlsh");
        for out in [&npy, &file] {
            ok(&simlsh()
                .arg("sign")
                .arg(&input)
                .arg(out)
                .args(["--signer", "gaussian", "--bits", &bits.to_string(), "-q"])
                .output()
                .unwrap());
        }
        let got = simlsh::io::read_signatures_npy(&npy, Some(bits)).unwrap();
        assert_eq!(got.as_slice(), want.as_slice());
        let f = simlsh::persist::load_signatures(&file).unwrap();
        assert_eq!(f.matrix.bits(), bits);
        assert_eq!(f.matrix.as_slice(), want.as_slice());
        assert_eq!(f.params["signer.kind"], "gaussian");
        assert_eq!(f.params["signer.dim"], x.ncols().to_string());
    }
}

#[test]
fn sign_reads_sparse_and_text_inputs() {
    let svm = tmp("sign.svm");
    std::fs::write(&svm, "1 1:0.5 4:-2\n0 2:1 3:1.5 7:0.25\n1 1:0.5 4:-1.9\n").unwrap();
    let out = tmp("sparse.npy");
    ok(&simlsh()
        .arg("sign")
        .arg(&svm)
        .arg(&out)
        .args(["--signer", "rademacher", "--bits", "70", "-q"])
        .output()
        .unwrap());
    let v = read_vectors(&svm, InputFormat::Svmlight, &VectorOptions::default()).unwrap();
    let signer: AnySigner = HyperplaneSigner::builder()
        .dim(v.vectors.cols() as u64)
        .bits(70)
        .seed(0)
        .distribution(Distribution::Rademacher)
        .build()
        .unwrap()
        .into();
    let want = v.vectors.sign(&signer).unwrap();
    let got = simlsh::io::read_signatures_npy(&out, Some(70)).unwrap();
    assert_eq!(got.as_slice(), want.as_slice());

    let txt = tmp("docs.txt");
    let docs = [
        "the quick brown fox",
        "the quick brown dog",
        "lorem ipsum dolor",
    ];
    std::fs::write(&txt, docs.join("\n") + "\n").unwrap();
    let out = tmp("text.npy");
    ok(&simlsh()
        .arg("sign")
        .arg(&txt)
        .arg(&out)
        .args(["--weighting", "binary", "--ngram", "2", "-q"])
        .output()
        .unwrap());
    let tok = Tokenizer::builder()
        .ngram(2)
        .weighting(Weighting::Binary)
        .build()
        .unwrap();
    // The CLI's default signer for text.
    let signer = HashedGaussian::builder().bits(64).seed(0).build().unwrap();
    let want = tok.sign_corpus(&signer, &docs).unwrap();
    let got = simlsh::io::read_signatures_npy(&out, Some(64)).unwrap();
    assert_eq!(got.as_slice(), want.as_slice());
    // A matrix signer cannot sign text.
    let out = simlsh()
        .arg("sign")
        .arg(&txt)
        .arg(tmp("no.npy"))
        .args(["--signer", "gaussian"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn knn_matches_the_linear_scan_for_vectors_and_codes() {
    for (input, bits, k) in [
        (small_fvecs("knn.fvecs"), 64usize, 4usize),
        (PathBuf::from(GLOVE), 128, 10),
    ] {
        let x = dense(&input);
        let sigs = gaussian(x.ncols(), bits).sign_dense(&x).unwrap();
        let want = library_knn(&sigs, k);
        let b = bits.to_string();
        let ks = k.to_string();
        for method in ["exact", "mih"] {
            let out = tmp(&format!("knn-{method}.tsv"));
            ok(&simlsh()
                .arg("knn")
                .arg(&input)
                .args([
                    "--k", &ks, "--method", method, "--signer", "gaussian", "--bits", &b, "-q",
                    "--out",
                ])
                .arg(&out)
                .output()
                .unwrap());
            check_knn(&out, &want);
        }
        // From stored codes, to standard output; the cosine column is the estimate.
        let npy = tmp("knn-codes.npy");
        simlsh::io::write_signatures_npy(&npy, &sigs).unwrap();
        let stdout = ok(&simlsh()
            .arg("knn")
            .arg(&npy)
            .args(["--k", &ks, "--bits", &b, "-q"])
            .output()
            .unwrap());
        let out = tmp("knn-stdout.tsv");
        std::fs::write(&out, &stdout).unwrap();
        check_knn(&out, &want);
        let first = &read_tsv(&out)[0];
        let d: u64 = first[2].parse().unwrap();
        let c: f64 = first[3].parse().unwrap();
        assert!((c - simlsh::estimate::cosine(d, bits as u64)).abs() < 1e-4);
    }
}

#[test]
fn permutation_knn_is_close_to_exact() {
    let out = tmp("knn-perm.tsv");
    let x = dense(Path::new(GLOVE));
    let sigs = gaussian(x.ncols(), 64).sign_dense(&x).unwrap();
    let want = library_knn(&sigs, 5);
    ok(&simlsh()
        .args([
            "knn",
            GLOVE,
            "--k",
            "5",
            "--method",
            "permutation",
            "--signer",
            "gaussian",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap());
    let rows = read_tsv(&out);
    assert_eq!(rows.len(), 5 * x.nrows());
    // Recall against the exact distances: a neighbour is right when its distance is within
    // the exact k-th distance.
    let mut right = 0;
    for r in &rows {
        let i: usize = r[0].parse().unwrap();
        let d: u32 = r[2].parse().unwrap();
        assert_ne!(r[1], r[0]);
        right += usize::from(d <= want[i][4].1);
    }
    assert!(right as f64 / rows.len() as f64 > 0.8, "{right}");
}

#[test]
fn cluster_matches_self_join_and_components() {
    for (input, bits, radius) in [
        (small_fvecs("cl.fvecs"), 64usize, 6u32),
        (PathBuf::from(GLOVE), 128, 18),
    ] {
        let x = dense(&input);
        let sigs = gaussian(x.ncols(), bits).sign_dense(&x).unwrap();
        let pairs = self_join(&sigs, radius).unwrap();
        let labels = clusters(sigs.len(), &pairs).unwrap();
        let out = tmp("clusters.tsv");
        let summary = ok(&simlsh()
            .arg("cluster")
            .arg(&input)
            .args([
                "--radius",
                &radius.to_string(),
                "--signer",
                "gaussian",
                "--bits",
                &bits.to_string(),
                "-q",
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap());
        let got: Vec<u32> = read_tsv(&out)
            .iter()
            .map(|r| r[1].parse().unwrap())
            .collect();
        assert_eq!(got, labels);
        let mut sizes = std::collections::BTreeMap::<u32, usize>::new();
        labels
            .iter()
            .for_each(|&l| *sizes.entry(l).or_default() += 1);
        let multi = sizes.values().filter(|&&s| s > 1).count();
        let largest = sizes.values().max().unwrap();
        assert!(
            summary.starts_with(&format!(
                "points {}  empty 0  pairs {}  clusters {multi}  largest {largest}",
                sigs.len(),
                pairs.len()
            )),
            "{summary}"
        );
        assert!(multi > 0, "{summary}");
    }
    // The generated groups of three near-copies are found.
    let input = small_fvecs("cl3.fvecs");
    let out = tmp("clusters3.tsv");
    ok(&simlsh()
        .arg("cluster")
        .arg(&input)
        .args([
            "--cosine", "0.97", "--signer", "gaussian", "--bits", "256", "-q", "--out",
        ])
        .arg(&out)
        .output()
        .unwrap());
    let labels: Vec<u32> = read_tsv(&out)
        .iter()
        .map(|r| r[1].parse().unwrap())
        .collect();
    let together = (0..100)
        .filter(|g| labels[3 * g] == labels[3 * g + 1] && labels[3 * g] == labels[3 * g + 2])
        .count();
    assert!(together >= 90, "{together}");
}

/// The exact cosine of rows `i` and `j`.
fn cosine(x: &Array2<f32>, i: usize, j: usize) -> f64 {
    simlsh::estimate::exact_cosine(x.row(i), x.row(j))
}

fn recall(x: &Array2<f32>, sigs: &SignatureMatrix, q: usize, k: usize) -> f64 {
    let approx = library_knn(sigs, k);
    let mut total = 0.0;
    for (i, found) in approx.iter().take(q).enumerate() {
        let mut exact: Vec<(f64, usize)> = (0..x.nrows())
            .filter(|&j| j != i)
            .map(|j| (cosine(x, i, j), j))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let top: HashSet<usize> = exact[..k].iter().map(|e| e.1).collect();
        total += found
            .iter()
            .filter(|h| top.contains(&(h.0 as usize)))
            .count() as f64
            / k as f64;
    }
    total / q as f64
}

fn parse_eval(stdout: &str) -> (f64, f64) {
    let all = stdout.lines().find(|l| l.starts_with("| all |")).unwrap();
    let mae: f64 = all.split('|').nth(3).unwrap().trim().parse().unwrap();
    let rec = stdout.lines().find(|l| l.starts_with("recall@")).unwrap();
    let recall: f64 = rec.split_whitespace().nth(1).unwrap().parse().unwrap();
    (mae, recall)
}

#[test]
fn eval_reports_plausible_errors_and_the_recomputed_recall() {
    for (input, bits, q) in [
        (small_fvecs("eval.fvecs"), 64usize, 300usize),
        (PathBuf::from(GLOVE), 256, 200),
    ] {
        let plot = tmp("eval.svg");
        let stdout = ok(&simlsh()
            .arg("eval")
            .arg(&input)
            .args([
                "--signer",
                "gaussian",
                "--bits",
                &bits.to_string(),
                "--pairs",
                "4000",
            ])
            .args(["--queries", &q.to_string(), "-q", "--plot"])
            .arg(&plot)
            .output()
            .unwrap());
        let (mae, got_recall) = parse_eval(&stdout);
        // |Δcos| ≤ |Δθ| and E|Δθ| ≤ sd(θ̂) = π √(p(1-p)/f) ≤ π / (2√f); near 90° (most random
        // pairs) E|Δθ| ≈ √(2/π) · π / (2√f), so the mean error is not far below the bound.
        let bound = std::f64::consts::PI / (2.0 * (bits as f64).sqrt());
        assert!(
            mae < bound && mae > 0.3 * bound,
            "{mae} vs {bound}\n{stdout}"
        );
        let x = dense(&input);
        let sigs = gaussian(x.ncols(), bits).sign_dense(&x).unwrap();
        let want = recall(&x, &sigs, q, 10);
        assert!((got_recall - want).abs() < 1e-6, "{got_recall} vs {want}");
        assert!(want > 0.0 && want <= 1.0);
        assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));
        // Bucket counts add up to the pairs.
        let counted: usize = stdout
            .lines()
            .filter(|l| l.contains('°'))
            .map(|l| {
                l.split('|')
                    .nth(2)
                    .unwrap()
                    .trim()
                    .parse::<usize>()
                    .unwrap()
            })
            .sum();
        assert_eq!(counted, 4000);
    }
    // Recall grows with the width on GloVe.
    let r = |bits: &str| {
        parse_eval(&run(&[
            "eval",
            GLOVE,
            "--signer",
            "gaussian",
            "--bits",
            bits,
            "--pairs",
            "100",
            "--queries",
            "200",
            "-q",
        ]))
        .1
    };
    assert!(r("512") > r("32"));
}

#[test]
fn bad_inputs_fail_naming_file_and_line() {
    let out = simlsh()
        .args(["knn", "no-such-file.fvecs", "--k", "3"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-file.fvecs"));
    let svm = tmp("bad.svm");
    std::fs::write(&svm, "1 1:0.5 4:-2\n0 2:abc\n").unwrap();
    for cmd in [&["sign"][..], &["cluster", "--radius", "3"]] {
        let mut c = simlsh();
        c.args(cmd).arg(&svm);
        if cmd[0] == "sign" {
            c.arg(tmp("bad-out.npy"));
        }
        let out = c.output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bad.svm") && err.contains(":2"), "{err}");
    }
    assert!(!tmp("bad-out.npy").exists());
    let out = simlsh()
        .args([
            "eval",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../datasets/chinese-poetry-3k/poems.jsonl"
            ),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("poems.jsonl"));
}

#[test]
fn skip_bad_skips_and_counts_malformed_vector_lines() {
    let dir = std::env::temp_dir().join(format!("simlsh-skipbad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("bad.svm");
    std::fs::write(&input, "1 1:0.5 2:1.0\n1 3:abc\n0 1:1.0 2:0.5\n").unwrap();
    let out_path = dir.join("o.npy");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_simlsh"))
        .arg("sign")
        .arg(&input)
        .arg(&out_path)
        .arg("--skip-bad")
        .output()
        .unwrap();
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped 1 malformed lines"));
    let sigs = simlsh::io::npy::read_signatures_npy(&out_path, None).unwrap();
    assert_eq!(sigs.len(), 2);
}

#[test]
fn sign_reads_matrix_market_and_bvecs_like_the_library() {
    use simlsh::io::lines::OnBadLine;
    let dir = std::env::temp_dir().join(format!("simlsh-mtx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mtx = dir.join("x.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate real general\n% a comment\n3 5 5\n1 1 0.5\n1 4 -2.0\n2 2 1.0\n3 5 3.25\n3 1 1.0\n",
    )
    .unwrap();
    let mut bvecs = Vec::new();
    for r in 0..4u8 {
        bvecs.extend_from_slice(&6i32.to_le_bytes());
        bvecs.extend((0..6u8).map(|c| r * 10 + c));
    }
    let bv = dir.join("x.bvecs");
    std::fs::write(&bv, &bvecs).unwrap();
    for (input, want) in [
        (
            &mtx,
            simlsh::io::mtx::read_mtx(&mtx, OnBadLine::Fail)
                .unwrap()
                .matrix,
        ),
        (
            &bv,
            simlsh::io::input::Vectors::Dense(
                simlsh::io::vecs::read_vecs(&bv, simlsh::io::vecs::VecsKind::U8).unwrap(),
            ),
        ),
    ] {
        let out = dir.join("o.npy");
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_simlsh"))
            .args([
                "sign",
                "--signer",
                "rademacher",
                "--bits",
                "128",
                "--seed",
                "4",
            ])
            .arg(input)
            .arg(&out)
            .output()
            .unwrap();
        ok(&run);
        let got = simlsh::io::npy::read_signatures_npy(&out, Some(128)).unwrap();
        let signer = simlsh::HyperplaneSigner::builder()
            .dim(want.cols() as u64)
            .bits(128)
            .seed(4)
            .distribution(simlsh::signers::Distribution::Rademacher)
            .build()
            .unwrap();
        assert_eq!(
            got.as_slice(),
            want.sign(&signer).unwrap().as_slice(),
            "{}",
            input.display()
        );
    }
}

// SciPy sparse `.npz` through `simlsh sign`

fn npy_of<A: ndarray_npy::WritableElement>(a: Vec<A>) -> Vec<u8> {
    npy_bytes(&ndarray::Array1::from(a))
}

/// What `scipy.sparse.save_npz(path, m)` writes for a CSR matrix of float64 values: a
/// deflated zip (its default `compressed=True`) of `indices.npy` (int32), `indptr.npy`
/// (int32), `format.npy` (`|S3`, `b'csr'`), `shape.npy` (int64) and `data.npy` (float64), in
/// that order. `indptr` is taken as given, so that a test can make it inconsistent.
fn scipy_csr_npz(
    shape: (usize, usize),
    indptr: &[usize],
    indices: &[u32],
    data: &[f32],
) -> Vec<u8> {
    let members = [
        (
            "indices.npy",
            npy_of(indices.iter().map(|&i| i as i32).collect()),
        ),
        (
            "indptr.npy",
            npy_of(indptr.iter().map(|&p| p as i32).collect()),
        ),
        ("format.npy", npy_raw("|S3", "()", b"csr")),
        ("shape.npy", npy_of(vec![shape.0 as i64, shape.1 as i64])),
        (
            "data.npy",
            npy_of(data.iter().map(|&x| f64::from(x)).collect()),
        ),
    ];
    zip_of(&members, true)
}

/// A seeded random CSR matrix: `rows × cols`, about 8 entries per row (sorted, distinct
/// columns; every 10th row empty), values in (-1, 1).
fn random_csr(rows: usize, cols: usize, seed: u64) -> simlsh::io::Csr {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
    for r in 0..rows {
        if r % 10 != 9 {
            let mut cs: Vec<u32> = (0..rng.random_range(1..16))
                .map(|_| rng.random_range(0..cols as u32))
                .collect();
            cs.sort_unstable();
            cs.dedup();
            data.extend(cs.iter().map(|_| rng.random_range(-1.0f32..1.0)));
            indices.extend(cs);
        }
        indptr.push(indices.len());
    }
    sprs::CsMatI::new((rows, cols), indptr, indices, data)
}

#[test]
fn sign_reads_scipy_npz_like_the_library_for_any_thread_count() {
    // 20 000 rows: several signing chunks of the CLI.
    let m = random_csr(20_000, 3_000, 11);
    let npz = tmp("x.npz");
    std::fs::write(
        &npz,
        scipy_csr_npz(
            (m.rows(), m.cols()),
            m.indptr().raw_storage(),
            m.indices(),
            m.data(),
        ),
    )
    .unwrap();
    let bits = 96;
    let gaussian: AnySigner = HyperplaneSigner::builder()
        .dim(m.cols() as u64)
        .bits(bits)
        .seed(3)
        .distribution(Distribution::Gaussian)
        .build()
        .unwrap()
        .into();
    let hashing: AnySigner = HashingTrick::builder()
        .bits(bits)
        .seed(3)
        .build()
        .unwrap()
        .into();
    for (name, signer) in [("hashing-trick", hashing), ("gaussian", gaussian)] {
        let want = signer.sign_csr(m.view()).unwrap();
        assert_eq!(want.len(), m.rows());
        for threads in ["1", "2"] {
            let out = tmp(&format!("npz-{name}-{threads}.npy"));
            ok(&simlsh()
                .arg("sign")
                .arg(&npz)
                .arg(&out)
                .args(["--signer", name, "--bits", "96", "--seed", "3"])
                .args(["--threads", threads, "-q"])
                .output()
                .unwrap());
            let got = simlsh::io::read_signatures_npy(&out, Some(bits)).unwrap();
            assert_eq!(got.as_slice(), want.as_slice(), "{name}, {threads} threads");
        }
    }
}

/// Runs `simlsh sign INPUT OUT`, expecting a clean failure (exit 1, no panic, no output
/// file); returns stderr.
fn sign_fails(input: &Path) -> String {
    let out_path = tmp("never.npy");
    let out = simlsh()
        .arg("sign")
        .arg(input)
        .arg(&out_path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out_path.exists());
    err
}

#[test]
fn bad_npz_fails_naming_the_file() {
    let m = random_csr(50, 40, 5);
    let indptr = m.indptr().raw_storage().to_vec();
    let (indices, data) = (m.indices(), m.data());
    let good = scipy_csr_npz((50, 40), &indptr, indices, data);

    let truncated = tmp("truncated.npz");
    std::fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    let err = sign_fails(&truncated);
    assert!(
        err.contains("truncated.npz") && err.contains("not an .npz (zip) archive"),
        "{err}"
    );

    // indptr ends past the stored entries: inconsistent with indices.
    let mut short = indptr.clone();
    *short.last_mut().unwrap() += 3;
    let bad_ptr = tmp("badptr.npz");
    std::fs::write(&bad_ptr, scipy_csr_npz((50, 40), &short, indices, data)).unwrap();
    let err = sign_fails(&bad_ptr);
    assert!(
        err.contains("badptr.npz") && err.contains("indptr") && err.contains("indices"),
        "{err}"
    );

    // indptr with one entry too few for the shape.
    let bad_len = tmp("badlen.npz");
    std::fs::write(
        &bad_len,
        scipy_csr_npz((50, 40), &indptr[..50], indices, data),
    )
    .unwrap();
    let err = sign_fails(&bad_len);
    assert!(
        err.contains("badlen.npz") && err.contains("indptr") && err.contains("50 entries"),
        "{err}"
    );
}

// Progress bars

/// True if stderr shows progress drawing: a carriage return or an ANSI escape sequence.
fn draws(stderr: &[u8]) -> bool {
    stderr.iter().any(|&b| b == b'\r' || b == 0x1b)
}

#[test]
fn no_progress_bars_when_stderr_is_a_pipe() {
    let glove = Path::new(GLOVE);
    let sigs = tmp("pipe.npy");
    let idx = tmp("pipe.idx");
    let knn = tmp("pipe-knn.tsv");
    let hits = tmp("pipe-hits.tsv");
    let glove_s = glove.to_str().unwrap();
    let (sigs_s, idx_s) = (sigs.to_str().unwrap(), idx.to_str().unwrap());
    // Each command does work that shows a bar or a spinner on a terminal.
    let runs: [Vec<&str>; 4] = [
        vec![
            "sign", glove_s, sigs_s, "--signer", "gaussian", "--bits", "128",
        ],
        vec![
            "index", "build", sigs_s, idx_s, "--kind", "mih", "--bits", "128",
        ],
        vec![
            "index",
            "query",
            idx_s,
            sigs_s,
            "--k",
            "3",
            "--out",
            hits.to_str().unwrap(),
        ],
        vec![
            "knn",
            sigs_s,
            "--k",
            "3",
            "--bits",
            "128",
            "--method",
            "mih",
            "--out",
            knn.to_str().unwrap(),
        ],
    ];
    for args in &runs {
        let quiet = simlsh().args(args).arg("--quiet").output().unwrap();
        assert!(quiet.status.success(), "{args:?}");
        assert!(
            quiet.stderr.is_empty(),
            "{args:?}: {:?}",
            String::from_utf8_lossy(&quiet.stderr)
        );
        let loud = simlsh().args(args).output().unwrap();
        assert!(loud.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&loud.stderr);
        assert!(!draws(&loud.stderr), "{args:?}: {err:?}");
        // Only the one-line summary remains.
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
    }
}

/// The terminal case, through `script` (util-linux, on every Debian-like system) giving the
/// binary a pseudo-terminal.
#[test]
fn progress_bars_are_drawn_on_a_terminal_unless_quiet() {
    let has_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("util-linux")
        });
    assert!(
        has_script,
        "this test needs util-linux `script` to give the binary a terminal"
    );
    let out = tmp("tty.npy");
    let cmd = format!(
        "'{}' sign '{GLOVE}' '{}' --signer gaussian --bits 128",
        env!("CARGO_BIN_EXE_simlsh"),
        out.display()
    );
    let on_tty = |extra: &str| -> Vec<u8> {
        let o = Command::new("script")
            .args(["-qec", &format!("{cmd}{extra}"), "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let loud = on_tty("");
    let text = String::from_utf8_lossy(&loud);
    assert!(draws(&loud) && text.contains("signing"), "{text:?}");
    assert!(text.contains("signed 10000 rows"), "{text:?}");
    let quiet = on_tty(" --quiet");
    assert!(quiet.is_empty(), "{:?}", String::from_utf8_lossy(&quiet));
}

#[test]
fn non_finite_values_are_reported_at_their_row_of_the_whole_input() {
    // 17 000 rows of dimension 4: NaN at row 8 200 (second signing chunk of the CLI) and
    // infinity at row 16 400 (third); the first in row order is reported, as one call would.
    let mut bytes = Vec::new();
    for r in 0..17_000usize {
        bytes.extend(4i32.to_le_bytes());
        for c in 0..4usize {
            let v = match (r, c) {
                (8_200, 1) => f32::NAN,
                (16_400, 2) => f32::INFINITY,
                _ => (r * 4 + c) as f32 % 7.0 - 3.0,
            };
            bytes.extend(v.to_le_bytes());
        }
    }
    let input = tmp("nan.fvecs");
    std::fs::write(&input, bytes).unwrap();
    for signer in ["gaussian", "hashing-trick"] {
        let out = simlsh()
            .arg("sign")
            .arg(&input)
            .arg(tmp("nan.npy"))
            .args(["--signer", signer])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("nan.fvecs") && err.contains("row 8200, column 1") && err.contains("NaN"),
            "{signer}: {err}"
        );
    }
}
