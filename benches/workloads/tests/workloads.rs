//! The benchmark workloads against the published SHA-256 of every harness file (the peer
//! harness's list, committed as `benches/compare/expected-sha256.txt`), the published
//! statistics, and brute-force oracles. The hash tests are the only check that the data are
//! bit-identical to the peers'.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::PathBuf;

use proptest::prelude::*;
use sha2::{Digest, Sha256};
use simlsh_workloads::{self as workloads, RawFile, W1, W2_DIM, W2_ROWS, W3, W4, W5};

/// The published hashes: file name -> lowercase hex SHA-256.
fn expected_hashes() -> BTreeMap<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../compare/expected-sha256.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read the published workload hashes at {}: {e}",
            path.display()
        )
    });
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        let (hash, name) = (it.next().unwrap(), it.next().expect("name after hash"));
        assert_eq!(hash.len(), 64, "malformed line {line:?}");
        out.insert(name.to_string(), hash.to_ascii_lowercase());
    }
    assert!(!out.is_empty(), "{} lists no file", path.display());
    out
}

fn sha256_hex(file: &RawFile<'_>) -> String {
    let mut h = Sha256::new();
    file.data.write_le(&mut h).unwrap();
    h.flush().unwrap();
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Every listed file of workload `prefix` ("w1.") is produced, with the published hash.
fn check_hashes(prefix: &str, files: &[RawFile<'_>]) {
    let expected = expected_hashes();
    let produced: BTreeSet<&str> = files.iter().map(|f| f.name).collect();
    let listed: BTreeSet<&str> = expected
        .keys()
        .map(String::as_str)
        .filter(|n| n.starts_with(prefix))
        .collect();
    assert!(!listed.is_empty(), "no published file for {prefix}*");
    assert_eq!(produced, listed, "files of {prefix}* differ from the list");
    for f in files {
        assert_eq!(
            f.data.byte_len(),
            f.shape.iter().product::<usize>() * elem_size(f.name),
            "{}: shape and size disagree",
            f.name
        );
        assert_eq!(
            sha256_hex(f),
            expected[f.name],
            "{}: SHA-256 differs",
            f.name
        );
    }
}

fn elem_size(name: &str) -> usize {
    match name.rsplit('.').next().unwrap() {
        "i64" | "u64" => 8,
        "u32" | "f32" => 4,
        "u8" => 1,
        other => panic!("unknown type suffix {other}"),
    }
}

#[test]
fn every_listed_file_belongs_to_a_workload() {
    // Together with check_hashes (which requires the produced and listed sets of each
    // workload to be equal) this makes the suite cover every listed file.
    for name in expected_hashes().keys() {
        assert!(
            workloads::WORKLOADS
                .iter()
                .any(|w| name.starts_with(&format!("{w}."))),
            "{name} belongs to no workload"
        );
    }
}

#[test]
fn stream_is_splitmix64() {
    // R(0, i) is the splitmix64 sequence of seed 0 (reference outputs of the C original).
    let reference = [
        0xE220_A839_7B1D_CDAFu64,
        0x6E78_9E6A_A1B9_65F4,
        0x06C4_5D18_8009_454F,
    ];
    for (i, &r) in reference.iter().enumerate() {
        assert_eq!(workloads::stream(0, i as u64), r);
    }
    assert_eq!(workloads::mix64(0), 0);
    // Streams differ by their additive offset only.
    assert_eq!(
        workloads::stream(5, 0),
        workloads::mix64(
            5u64.wrapping_mul(0xD1B5_4A32_D192_ED03)
                .wrapping_add(0x9E37_79B9_7F4A_7C15)
        )
    );
}

#[test]
fn permutation_is_the_stable_argsort() {
    let n = 5_000;
    let perm = workloads::permutation(36, n);
    let mut seen = vec![false; n];
    for &p in &perm {
        assert!(!std::mem::replace(&mut seen[p as usize], true));
    }
    for w in perm.windows(2) {
        assert!(workloads::stream(36, w[0] as u64) < workloads::stream(36, w[1] as u64));
    }
    assert!(workloads::permutation(1, 0).is_empty());
}

/// Straightforward reading of the flip definition: walk c = 0, 1, ... and keep new positions.
fn flip_positions_oracle(s: u64, id: u64, d: usize, nbits: u64) -> Vec<u64> {
    let mut pos = Vec::new();
    let mut c = 0u64;
    while pos.len() < d {
        let x = workloads::stream(s, id * 1024 + c);
        let p = ((x >> 32) * nbits) >> 32;
        if !pos.contains(&p) {
            pos.push(p);
        }
        c += 1;
    }
    pos
}

proptest! {
    #[test]
    fn flip_mask_sets_the_first_d_distinct_candidates(
        s in 0u64..100,
        id in 0u64..1_000_000,
        d in 1usize..=64,
        nbits in prop::sample::select(vec![64usize, 100, 128, 256]),
    ) {
        let mask = workloads::flip_mask(s, id, d, nbits).unwrap();
        prop_assert_eq!(mask.len(), nbits.div_ceil(64));
        let mut expected = vec![0u64; mask.len()];
        for p in flip_positions_oracle(s, id, d, nbits as u64) {
            prop_assert!(p < nbits as u64);
            expected[(p / 64) as usize] |= 1 << (p % 64);
        }
        prop_assert_eq!(&mask, &expected);
        prop_assert_eq!(mask.iter().map(|w| w.count_ones() as usize).sum::<usize>(), d);
    }
}

#[test]
fn flip_mask_rejects_impossible_requests() {
    assert_eq!(workloads::flip_mask(1, 2, 65, 64), None);
    assert_eq!(workloads::flip_mask(1, 2, 1, 0), None);
    assert_eq!(workloads::flip_mask(1, 2, 0, 64), Some(vec![0]));
}

// ------------------------------------------------------------------------------------ W1

#[test]
fn w1_published() {
    let w = workloads::w1(W1::ROWS);
    check_hashes("w1.", &w.raw_files());

    // Published statistics.
    assert_eq!(w.rows(), 100_000);
    assert_eq!(w.nnz(), 19_730_861);
    let lens: Vec<usize> = w.indptr.windows(2).map(|p| p[1] - p[0]).collect();
    assert_eq!(*lens.iter().min().unwrap(), 168);
    assert_eq!(*lens.iter().max().unwrap(), 222);
    let mut counts = vec![0u32; W1::DIM];
    for &i in &w.indices {
        counts[i as usize] += 1;
    }
    assert_eq!(counts.iter().filter(|&&c| c > 0).count(), 992_739);
    assert_eq!(*counts.iter().max().unwrap() as usize, W1::ROWS);
    let min_w = w.data.iter().copied().fold(f32::INFINITY, f32::min);
    let max_w = w.data.iter().copied().fold(0.0f32, f32::max);
    let mean_w = w.data.iter().map(|&x| f64::from(x)).sum::<f64>() / w.nnz() as f64;
    assert!((0.5..0.51).contains(&min_w), "min weight {min_w}");
    assert!((28.45..28.55).contains(&max_w), "max weight {max_w}");
    assert!((1.215..1.225).contains(&mean_w), "mean weight {mean_w}");

    // Ids strictly increasing within rows; the sprs view accepts the structure.
    for r in 0..w.rows() {
        assert!(w.row(r).0.windows(2).all(|p| p[0] < p[1]), "row {r}");
    }
    let view = w.view().unwrap();
    assert_eq!(view.shape(), (W1::ROWS, W1::DIM));
    assert_eq!(view.nnz(), w.nnz());

    // A prefix is exact.
    let small = workloads::w1(1_001);
    assert_eq!(small.indptr[..], w.indptr[..1_002]);
    assert_eq!(small.indices[..], w.indices[..small.nnz()]);
    assert_eq!(small.data[..], w.data[..small.nnz()]);
    let csr = small.to_csr().unwrap();
    assert_eq!(csr.shape(), (1_001, W1::DIM));
    assert_eq!(csr.indices(), &small.indices[..]);

    // pairs_cosine against a hash-map dot product.
    let cos = small.pairs_cosine();
    assert_eq!(cos.len(), 500);
    for (k, &c) in cos.iter().enumerate() {
        let row = |r: usize| -> HashMap<u32, f64> {
            let (ids, ws) = small.row(r);
            ids.iter()
                .zip(ws)
                .map(|(&i, &x)| (i, f64::from(x)))
                .collect()
        };
        let (a, b) = (row(2 * k), row(2 * k + 1));
        let dot: f64 = a.iter().filter_map(|(i, x)| b.get(i).map(|y| x * y)).sum();
        let norm = |m: &HashMap<u32, f64>| m.values().map(|x| x * x).sum::<f64>().sqrt();
        let expected = dot / (norm(&a) * norm(&b));
        assert!((c - expected).abs() < 1e-12, "pair {k}: {c} vs {expected}");
        // Rows share the ubiquitous frequent features: the cosine is well inside (0, 1).
        assert!(c > 0.0 && c < 1.0);
    }
}

// ------------------------------------------------------------------------------------ W2

#[test]
fn w2_published() {
    let x = workloads::w2(W2_ROWS);
    assert_eq!(x.dim(), (W2_ROWS, W2_DIM));
    check_hashes("w2.", &[workloads::w2_raw_file(x.view())]);

    // Irwin-Hall(12) - 6: |x| < 6, mean 0, variance 1, fourth moment 2.9. With n = 38.4M
    // values the standard error of the mean is 1/sqrt(n) = 1.6e-4 and that of the variance
    // sqrt((2.9 - 1) / n) = 2.2e-4; about 6 standard errors give the tolerances below.
    let n = x.len() as f64;
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for &v in x.iter() {
        assert!(v.abs() < 6.0);
        s1 += f64::from(v);
        s2 += f64::from(v) * f64::from(v);
    }
    let mean = s1 / n;
    let var = s2 / n - mean * mean;
    assert!(mean.abs() < 1e-3, "mean {mean}");
    assert!((var - 1.0).abs() < 1.5e-3, "variance {var}");

    // A prefix is exact, and every value is a multiple of 2^-16.
    let small = workloads::w2(7);
    assert_eq!(small.view(), x.slice(ndarray::s![..7, ..]));
    assert!(small.iter().all(|&v| (v * 65_536.0).fract() == 0.0));

    // Dense pair cosines against an explicit formula.
    let cos = workloads::dense_pairs_cosine(small.view());
    assert_eq!(cos.len(), 3);
    for (k, &c) in cos.iter().enumerate() {
        let (a, b) = (small.row(2 * k), small.row(2 * k + 1));
        let dot: f64 = a
            .iter()
            .zip(b.iter())
            .map(|(&u, &v)| f64::from(u) * f64::from(v))
            .sum();
        let na: f64 = a.iter().map(|&u| f64::from(u).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt();
        assert!((c - dot / (na * nb)).abs() < 1e-12);
    }
}

#[test]
fn quality_check_formula() {
    // Angles chosen so that p * f is an integer: the estimate is exact, RMSE 0.
    let f = 64;
    let hamming = [0u32, 16, 32, 48];
    let cosines: Vec<f64> = hamming
        .iter()
        .map(|&h| (std::f64::consts::PI * f64::from(h) / f as f64).cos())
        .collect();
    let q = workloads::quality_check(&cosines, &hamming, f).unwrap();
    assert!(q.rmse < 1e-12, "{q:?}");
    // ideal = sqrt(mean(p (1 - p) / f)) with p = 0, 1/4, 1/2, 3/4.
    let ideal = ((0.0 + 3.0 / 16.0 + 1.0 / 4.0 + 3.0 / 16.0) / 4.0 / 64.0f64).sqrt();
    assert!((q.ideal_rmse - ideal).abs() < 1e-12);
    // Off by 8 bits everywhere: RMSE 8/64.
    let off: Vec<u32> = hamming.iter().map(|h| h + 8).collect();
    let q = workloads::quality_check(&cosines, &off, f).unwrap();
    assert!((q.rmse - 0.125).abs() < 1e-12);

    assert!(workloads::quality_check(&cosines, &hamming[..3], f).is_err());
    assert!(workloads::quality_check(&[], &[], f).is_err());
    assert!(workloads::quality_check(&cosines, &hamming, 0).is_err());
    assert!(workloads::quality_check(&[f64::NAN], &[0], f).is_err());
}

// ------------------------------------------------------------------------------------ W3

/// W3 truth is consistent with the codes: planted distances are the real distances.
fn check_w3_truth(w: &W3) {
    assert_eq!(w.truth_indptr.len(), w.queries.len() + 1);
    assert_eq!(w.truth_ids.len(), w.truth_dist.len());
    for j in 0..w.queries.len() {
        let (ids, dists) = w.truth(j);
        assert!((1..=5).contains(&ids.len()));
        for (&i, &d) in ids.iter().zip(dists) {
            assert!((1..=3).contains(&d));
            assert_eq!(
                (w.queries[j] ^ w.index[i as usize]).count_ones(),
                u32::from(d)
            );
        }
    }
    let distinct: BTreeSet<u32> = w.truth_ids.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        w.truth_ids.len(),
        "planted positions repeat"
    );
}

/// Brute force: the index positions within the radius of query j equal its planted set.
fn check_w3_brute_force(w: &W3, j: usize) {
    let q = w.queries[j];
    let found: BTreeSet<u32> = (0..w.index.len() as u32)
        .filter(|&i| (q ^ w.index[i as usize]).count_ones() <= W3::RADIUS)
        .collect();
    let planted: BTreeSet<u32> = w.truth(j).0.iter().copied().collect();
    assert_eq!(found, planted, "query {j}");
}

#[test]
fn w3_published() {
    let w = workloads::w3();
    check_hashes("w3.", &w.raw_files());
    assert_eq!(w.index.len(), 1_000_000);
    assert_eq!(w.queries.len(), 10_000);
    assert_eq!(w.truth_ids.len(), 30_096);
    check_w3_truth(&w);
    for j in (0..w.queries.len()).step_by(100) {
        check_w3_brute_force(&w, j);
    }
}

#[test]
fn w3_small_variant() {
    let w = W3::generate(20_000, 300).unwrap();
    assert_eq!(w.index.len(), 20_000);
    check_w3_truth(&w);
    for j in 0..w.queries.len() {
        check_w3_brute_force(&w, j);
    }
    // Queries and planted distances are a prefix of the published construction.
    let tiny = W3::generate(1_000, 10).unwrap();
    assert_eq!(tiny.queries[..], w.queries[..10]);
    assert_eq!(tiny.truth_indptr[..], w.truth_indptr[..11]);
    assert_eq!(tiny.truth_dist[..], w.truth_dist[..tiny.truth_dist.len()]);
    // Too small an index for the planted codes.
    assert!(W3::generate(10, 100).is_err());
    assert_eq!(W3::generate(0, 0).unwrap().index.len(), 0);
}

// ------------------------------------------------------------------------------------ W4

fn brute_force_pairs(codes: &[u64], radius: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for i in 0..codes.len() {
        for j in i + 1..codes.len() {
            if (codes[i] ^ codes[j]).count_ones() <= radius {
                out.push((i as u32, j as u32));
            }
        }
    }
    out
}

#[test]
fn w4_published() {
    let w = workloads::w4();
    check_hashes("w4.", &w.raw_files());
    assert_eq!(w.codes.len(), 1_000_000);
    let distinct: BTreeSet<u64> = w.codes.iter().copied().collect();
    assert_eq!(distinct.len(), w.codes.len());
    assert_eq!(w.truth_pairs.len(), 90_112);
    let mut by_dist = [0usize; 4];
    for &(i, j) in &w.truth_pairs {
        assert!(i < j);
        by_dist[(w.codes[i as usize] ^ w.codes[j as usize]).count_ones() as usize] += 1;
    }
    assert_eq!(by_dist, [0, 20_688, 30_252, 39_172]);
    assert!(w.truth_pairs.windows(2).all(|p| p[0] < p[1]));
}

#[test]
fn w4_truth_matches_brute_force_on_a_small_variant() {
    let w = W4::generate(4_000, 500).unwrap();
    assert_eq!(w.codes.len(), 4_000);
    let brute = brute_force_pairs(&w.codes, W4::RADIUS);
    // 500 clusters of 2..6 codes: well over 500 pairs, all found.
    assert!(brute.len() > 1_000, "{}", brute.len());
    assert_eq!(w.truth_pairs, brute);
    assert!(W4::generate(100, 500).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Codes clustered around a few bases (so that many pairs share blocks and lie at the
    /// radius boundary): the oracle equals brute force for every radius 0..=3.
    #[test]
    fn selfjoin_oracle_matches_brute_force(
        bases in prop::collection::vec(any::<u64>(), 1..5),
        picks in prop::collection::vec((0usize..5, prop::collection::vec(0u32..64, 0..6)), 0..120),
        radius in 0u32..=3,
    ) {
        let codes: Vec<u64> = picks
            .iter()
            .map(|(b, bits)| bits.iter().fold(bases[b % bases.len()], |c, &k| c ^ (1 << k)))
            .collect();
        let oracle = workloads::selfjoin_oracle(&codes, radius).unwrap();
        prop_assert_eq!(oracle, brute_force_pairs(&codes, radius));
    }
}

#[test]
fn selfjoin_oracle_rejects_radius_4() {
    assert!(workloads::selfjoin_oracle(&[1, 2, 3], 4).is_err());
}

// ------------------------------------------------------------------------------------ W5

fn dist256(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Brute force: query j's 10 nearest codes are exactly its planted ones, with no tie at
/// the 10th distance.
fn check_w5_brute_force(w: &W5, j: usize) {
    let q = w.query(j);
    let n = w.index.len() / W5::WORDS;
    let mut all: Vec<(u32, u32)> = (0..n).map(|i| (dist256(q, w.code(i)), i as u32)).collect();
    all.select_nth_unstable(W5::K);
    let (nearest, rest) = all.split_at(W5::K);
    let kth = nearest.iter().map(|x| x.0).max().unwrap();
    assert!(rest[0].0 > kth, "query {j}: tie at the 10th distance");
    let found: BTreeSet<u32> = nearest.iter().map(|x| x.1).collect();
    let planted: BTreeSet<u32> = w.truth(j).0.iter().copied().collect();
    assert_eq!(found, planted, "query {j}");
}

fn check_w5_truth(w: &W5) {
    let nq = w.queries.len() / W5::WORDS;
    assert_eq!(w.truth_ids.len(), nq * W5::K);
    for j in 0..nq {
        let (ids, dists) = w.truth(j);
        for (&i, &d) in ids.iter().zip(dists) {
            assert!((1..=64).contains(&d));
            assert_eq!(dist256(w.query(j), w.code(i as usize)), u32::from(d));
        }
    }
}

#[test]
fn w5_published() {
    let w = workloads::w5();
    check_hashes("w5.", &w.raw_files());
    assert_eq!(w.index.len(), 1_000_000 * 4);
    assert_eq!(w.queries.len(), 1_000 * 4);
    check_w5_truth(&w);
    for j in (0..1_000).step_by(100) {
        check_w5_brute_force(&w, j);
    }
}

#[test]
fn w5_small_variant() {
    let w = W5::generate(20_000, 50).unwrap();
    check_w5_truth(&w);
    for j in 0..50 {
        check_w5_brute_force(&w, j);
    }
    assert!(W5::generate(99, 10).is_err());
}

// ------------------------------------------------------------------------------ raw files

#[test]
fn write_raw_writes_the_published_files() {
    let dir = std::env::temp_dir().join(format!("simlsh-workloads-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // An unknown name fails before anything is written.
    assert!(workloads::write_raw(&dir, &["w3", "w9"]).is_err());
    assert!(!dir.join("w3.index.u64").exists());

    workloads::write_raw(&dir, &["w3"]).unwrap();
    let expected = expected_hashes();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let listed: Vec<String> = expected
        .keys()
        .filter(|n| n.starts_with("w3."))
        .cloned()
        .collect();
    assert_eq!(names, listed, "exactly the W3 files, no temporary left");
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, expected[name], "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();

    // A path that cannot be a directory gives an Io error naming it.
    let file = std::env::temp_dir().join(format!("simlsh-workloads-file-{}", std::process::id()));
    std::fs::write(&file, b"x").unwrap();
    match workloads::write_raw(&file.join("sub"), &["w3"]) {
        Err(simlsh::Error::Io { path, .. }) => assert_eq!(path, file.join("sub")),
        other => panic!("expected an Io error, got {other:?}"),
    }
    std::fs::remove_file(&file).unwrap();
}
