//! Properties every signer must have: widths, equivalences between input forms and signers,
//! streaming = batch, thread-count independence, tie rule, and typed errors on bad input.

mod signer_set;

use ndarray::Array2;
use proptest::prelude::*;
use signer_set::all_signers;
use simlsh::estimate::binomial_interval;
use simlsh::rng::Rng;
use simlsh::signers::hashed_gaussian::TABLES;
use simlsh::signers::{
    Distribution, HashedGaussian, HashingTrick, HyperplaneSigner, sparse::sort_and_merge,
    zero_projection_fraction,
};
use simlsh::{Error, Signature, Signer, SignerExt};
use sprs::CsMat;

const WIDTHS: [usize; 6] = [1, 63, 64, 65, 256, 4096];

#[test]
fn every_width_packs_into_words_with_zero_padding() {
    let mut rng = Rng::new(1);
    for &f in &WIDTHS {
        for s in all_signers(50, f, 9) {
            let (ids, w) = sparse_row(&mut rng, 50, 20);
            let sig = s.sign_sparse(&ids, &w).unwrap();
            assert_eq!(sig.bits(), f);
            assert_eq!(sig.words().len(), f.div_ceil(64));
            // Padding is zero: from_words would reject it otherwise.
            Signature::from_words(f, sig.words().to_vec()).unwrap();
            // Scaling the vector by 2 (exact in floating point) gives the same signature;
            // negating it flips every bit whose projection is nonzero.
            let w2: Vec<f32> = w.iter().map(|x| 2.0 * x).collect();
            assert_eq!(
                s.sign_sparse(&ids, &w2).unwrap(),
                sig,
                "{:?} f={f}",
                s.info().kind
            );
            let neg: Vec<f32> = w.iter().map(|x| -x).collect();
            let sn = s.sign_sparse(&ids, &neg).unwrap();
            let mut acc = s.new_acc();
            s.accumulate(&ids, &w, &mut acc);
            assert_eq!(s.finish(&mut acc), sig);
            if s.info().kind == "fwht" {
                // The lanes are fwht's buckets, not the projections: see its own tests.
                continue;
            }
            for (j, &v) in acc.iter().enumerate().take(f) {
                assert_eq!(sig.get(j), v > 0.0);
                assert_eq!(sn.get(j), v < 0.0, "negation at bit {j}");
            }
        }
    }
}

#[test]
fn zero_and_empty_vectors_follow_the_tie_rule() {
    for &f in &WIDTHS {
        for s in all_signers(10, f, 2) {
            let zero = Signature::zeros(f).unwrap();
            assert_eq!(s.sign_sparse(&[], &[]).unwrap(), zero);
            assert_eq!(s.sign_sparse(&[3, 7], &[0.0, -0.0]).unwrap(), zero);
            assert_eq!(s.sign_dense_row(&[0.0; 10]).unwrap(), zero);
        }
    }
    // A vector and its negation: V and −V; bits are V > 0, so no bit is 1 in both.
    let s = HashingTrick::builder().bits(64).build().unwrap();
    let a = s.sign_sparse(&[1], &[1.0]).unwrap();
    let b = s.sign_sparse(&[1], &[-1.0]).unwrap();
    assert_eq!(a.words()[0] & b.words()[0], 0);
    assert_eq!(a.words()[0] | b.words()[0], u64::MAX);
}

#[test]
fn hashing_trick_equals_its_explicit_rademacher_matrix_bit_for_bit() {
    let mut rng = Rng::new(5);
    for &f in &WIDTHS {
        let ht = HashingTrick::builder().bits(f).seed(77).build().unwrap();
        let dim = 300;
        let explicit = ht.explicit_matrix(dim).unwrap();
        assert_eq!(explicit.info().kind, "custom");
        let mut dense = Array2::<f32>::zeros((40, dim as usize));
        let mut rows = Vec::new();
        for r in 0..40 {
            // Small integer weights make exact ties V[j] = 0 common: they must agree too.
            let (ids, _) = sparse_row(&mut rng, dim, 1 + r % 7);
            let w: Vec<f32> = ids.iter().map(|_| rng.below(3) as f32 - 1.0).collect();
            assert_eq!(
                ht.sign_sparse(&ids, &w).unwrap(),
                explicit.sign_sparse(&ids, &w).unwrap(),
                "f={f}"
            );
            for (&i, &v) in ids.iter().zip(&w) {
                dense[[r, i as usize]] = v;
            }
            rows.push((ids, w));
        }
        let a = ht.sign_dense(&dense).unwrap();
        let b = explicit.sign_dense(&dense).unwrap();
        assert_eq!(a, b, "dense, f={f}");
        for (r, (ids, w)) in rows.iter().enumerate() {
            assert_eq!(a.get(r), ht.sign_sparse(ids, w).unwrap());
        }
    }
}

#[test]
fn hashed_gaussian_equals_its_explicit_matrix_bit_for_bit() {
    let mut rng = Rng::new(6);
    for &f in &WIDTHS {
        let hg = HashedGaussian::builder().bits(f).seed(78).build().unwrap();
        let dim = 300;
        let explicit = hg.explicit_matrix(dim).unwrap();
        assert_eq!(explicit.info().kind, "custom");
        for r in 0..40 {
            let (ids, w) = sparse_row(&mut rng, dim, 1 + r % 9);
            assert_eq!(
                hg.sign_sparse(&ids, &w).unwrap(),
                explicit.sign_sparse(&ids, &w).unwrap(),
                "f={f}"
            );
        }
        // Every column value is one of its group's table.
        let col = hg.column(12345);
        assert_eq!(col.len(), f);
        for (j, v) in col.iter().enumerate() {
            assert!(TABLES[j / 8 % 2].contains(v), "{v}");
        }
    }
    // Over many features the 8 values of each table are equiprobable (chi-square, 15 degrees
    // of freedom, 99.9% critical value 37.7).
    let hg = HashedGaussian::builder().bits(256).seed(1).build().unwrap();
    let mut counts = [0u64; 16];
    for i in 0..2000 {
        for (j, v) in hg.column(i).into_iter().enumerate() {
            let t = j / 8 % 2;
            counts[8 * t + TABLES[t].iter().position(|&x| x == v).unwrap()] += 1;
        }
    }
    let n = 2000.0 * 256.0 / 16.0;
    let chi2: f64 = counts.iter().map(|&c| (c as f64 - n).powi(2) / n).sum();
    assert!(chi2 < 37.7, "{counts:?}");
}

#[test]
fn sparse_and_dense_input_agree_for_every_signer() {
    let mut rng = Rng::new(11);
    let dim = 200usize;
    for &f in &WIDTHS {
        for s in all_signers(dim as u64, f, 4) {
            let n = 30;
            let mut dense = Array2::<f32>::zeros((n, dim));
            let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
            for r in 0..n {
                let (ids, w) = sparse_row(&mut rng, dim as u64, if r == 0 { 0 } else { 1 + r * 5 });
                for (&i, &v) in ids.iter().zip(&w) {
                    dense[[r, i as usize]] = v;
                    indices.push(i as usize);
                    data.push(v);
                }
                indptr.push(indices.len());
            }
            let csr = CsMat::new((n, dim), indptr, indices, data);
            let a = s.sign_dense(&dense).unwrap();
            let b = s.sign_csr(csr.view()).unwrap();
            assert_eq!(a, b, "{} f={f}", s.info().kind);
            for r in 0..n {
                let row = csr.outer_view(r).unwrap();
                let ids: Vec<u64> = row.indices().iter().map(|&i| i as u64).collect();
                assert_eq!(a.get(r), s.sign_sparse(&ids, row.data()).unwrap());
                assert_eq!(
                    a.get(r),
                    s.sign_dense_row(dense.row(r).as_slice().unwrap()).unwrap()
                );
            }
        }
    }
}

#[test]
fn dense_matrix_product_path_matches_canonical_order_near_ties() {
    // Vectors built to have projections extremely close to zero on some bits: the GEMM path
    // must fall back to the canonical order there.
    let dim = 64u64;
    let s = HyperplaneSigner::builder()
        .dim(dim)
        .bits(64)
        .seed(3)
        .build()
        .unwrap();
    let mut rng = Rng::new(8);
    let mut x = Array2::<f32>::zeros((200, dim as usize));
    for r in 0..200 {
        // x ⟂ r_j for j = r % 64 (up to rounding): x = g − (g·r_j / r_j·r_j) r_j.
        let rj: Vec<f32> = (0..dim).map(|i| s.column(i).unwrap()[r % 64]).collect();
        let g: Vec<f32> = (0..dim).map(|_| rng.gaussian() as f32).collect();
        let c = g.iter().zip(&rj).map(|(a, b)| a * b).sum::<f32>()
            / rj.iter().map(|b| b * b).sum::<f32>();
        for i in 0..dim as usize {
            x[[r, i]] = g[i] - c * rj[i];
        }
    }
    let batch = s.sign_dense(&x).unwrap();
    for r in 0..200 {
        let ids: Vec<u64> = (0..dim).collect();
        let w: Vec<f32> = x.row(r).to_vec();
        let (ids, w): (Vec<u64>, Vec<f32>) = ids.into_iter().zip(w).filter(|p| p.1 != 0.0).unzip();
        assert_eq!(batch.get(r), s.sign_sparse(&ids, &w).unwrap(), "row {r}");
    }
}

#[test]
fn batch_signing_is_identical_for_any_thread_count() {
    let mut rng = Rng::new(21);
    let dim = 1000u64;
    let n = 1500; // several parallel batches
    let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
    for _ in 0..n {
        let (ids, w) = sparse_row(&mut rng, dim, 40);
        indices.extend(ids.iter().map(|&i| i as u32));
        data.extend(w);
        indptr.push(indices.len());
    }
    let csr = sprs::CsMatI::<f32, u32, usize>::new((n, dim as usize), indptr, indices, data);
    let dense = csr.to_dense();
    for s in all_signers(dim, 130, 6) {
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let a = s.sign_csr(csr.view()).unwrap();
                (a, s.sign_dense(&dense).unwrap())
            })
        };
        let one = run(1);
        assert_eq!(one.0, one.1);
        for t in [2, 3, 8] {
            assert_eq!(run(t), one, "{} threads={t}", s.info().kind);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn streaming_equals_batch_however_chunked(
        seed in any::<u64>(),
        nnz in 0usize..300,
        cuts in proptest::collection::vec(0usize..300, 0..6),
        f in prop_oneof![Just(1usize), Just(64), Just(65), Just(200)],
    ) {
        let mut rng = Rng::new(seed);
        let (ids, w) = sparse_row(&mut rng, 5000, nnz);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(ids.len())).collect();
        cuts.push(0);
        cuts.push(ids.len());
        cuts.sort_unstable();
        for s in all_signers(5000, f, seed ^ 1) {
            let batch = s.sign_sparse(&ids, &w).unwrap();
            let mut acc = simlsh::Accumulator::new(&s);
            for c in cuts.windows(2) {
                if c[1] - c[0] == 1 {
                    acc.add(ids[c[0]], w[c[0]]).unwrap();
                } else {
                    acc.add_chunk(&ids[c[0]..c[1]], &w[c[0]..c[1]]).unwrap();
                }
            }
            prop_assert_eq!(acc.signature(), batch);
            prop_assert_eq!(acc.features(), ids.len() as u64);
        }
    }

    #[test]
    fn merged_accumulators_equal_the_sum_of_their_values(seed in any::<u64>(), split in 0usize..100) {
        let mut rng = Rng::new(seed);
        let (ids, w) = sparse_row(&mut rng, 1000, 100);
        let split = split.min(ids.len());
        for s in all_signers(1000, 96, seed) {
            let mut a = simlsh::Accumulator::new(&s);
            let mut b = simlsh::Accumulator::new(&s);
            a.add_chunk(&ids[..split], &w[..split]).unwrap();
            b.add_chunk(&ids[split..], &w[split..]).unwrap();
            let expect: Vec<f32> = a.values().iter().zip(b.values()).map(|(x, y)| x + y).collect();
            a.merge(&b).unwrap();
            prop_assert_eq!(a.values(), &expect[..]);
            let sig = a.signature();
            prop_assert_eq!(&sig, &s.finish(&mut a.values().iter().copied().chain(std::iter::repeat(0.0)).take(s.new_acc().len()).collect::<Vec<f32>>()));
            if s.info().kind != "fwht" {
                for (j, &v) in expect.iter().enumerate() {
                    prop_assert_eq!(sig.get(j), v > 0.0);
                }
            }
        }
    }
}

#[test]
fn tokens_hash_like_features_and_repeat_tokens_add_up() {
    let s = HashingTrick::builder().bits(256).seed(5).build().unwrap();
    let once = s.sign_tokens(&["a", "b", "a"], &[1.0, 2.0, 1.0]).unwrap();
    let merged = s.sign_tokens(&["a", "b"], &[2.0, 2.0]).unwrap();
    assert_eq!(once, merged);
    // Negative and fractional weights are honoured exactly (not dropped): a token with
    // weight −1 is the opposite of the same token with weight +1.
    let pos = s.sign_tokens(&["x"], &[1.0]).unwrap();
    let neg = s.sign_tokens(&["x"], &[-1.0]).unwrap();
    assert_eq!(pos.distance(&neg).unwrap(), 256);
    let frac = s.sign_tokens(&["x", "y"], &[0.25, -0.5]).unwrap();
    let y = s.sign_tokens(&["y"], &[1.0]).unwrap();
    let mut acc = s.new_acc();
    s.accumulate_tokens(&["x", "y"], &[0.25, -0.5], &mut acc)
        .unwrap();
    for (j, &v) in acc.iter().enumerate().take(256) {
        let expect =
            0.25 * if pos.get(j) { 1.0 } else { -1.0 } - 0.5 * if y.get(j) { 1.0 } else { -1.0 };
        assert_eq!(v, expect);
        assert_eq!(frac.get(j), expect > 0.0);
    }
    // Ids and tokens live in separate hash domains.
    let id = s
        .sign_sparse(&[u64::from_le_bytes(*b"abcdefgh")], &[1.0])
        .unwrap();
    let tok = s.sign_tokens(&["abcdefgh"], &[1.0]).unwrap();
    assert_ne!(id, tok);
    // u32 and u64 ids are the same features.
    let a = s.sign_sparse(&[7u32 as u64], &[1.0]).unwrap();
    assert_eq!(a, s.sign_sparse(&[7u64], &[1.0]).unwrap());
}

#[test]
fn bad_input_gives_typed_errors_naming_row_and_column() {
    let hp = HyperplaneSigner::builder()
        .dim(10)
        .bits(64)
        .build()
        .unwrap();
    let ht = HashingTrick::builder().bits(64).build().unwrap();
    // f = 0 and missing parameters.
    assert!(matches!(
        HashingTrick::builder().bits(0).build(),
        Err(Error::InvalidParameter { name: "bits", .. })
    ));
    assert!(matches!(
        HyperplaneSigner::builder().bits(8).build(),
        Err(Error::InvalidParameter { name: "dim", .. })
    ));
    assert!(matches!(
        HashedGaussian::builder().build(),
        Err(Error::InvalidParameter { name: "bits", .. })
    ));
    assert!(matches!(
        HyperplaneSigner::builder()
            .dim(4)
            .bits(8)
            .distribution(Distribution::VerySparse { density: Some(0.0) })
            .build(),
        Err(Error::InvalidParameter {
            name: "density",
            ..
        })
    ));
    assert!(matches!(
        HyperplaneSigner::builder()
            .dim(4)
            .bits(8)
            .distribution(Distribution::SuperBit { depth: Some(5) })
            .build(),
        Err(Error::InvalidParameter { name: "depth", .. })
    ));
    assert!(matches!(
        simlsh::PooledSigner::builder().bits(8).pool_size(0).build(),
        Err(Error::InvalidParameter { .. })
    ));
    // NaN and infinity, sparse and dense, with row and column.
    let e = ht.sign_sparse(&[1, 4], &[1.0, f32::NAN]).unwrap_err();
    assert!(matches!(e, Error::NonFinite { row: 0, col: 4, .. }), "{e}");
    let mut x = Array2::<f32>::ones((3, 10));
    x[[2, 7]] = f32::INFINITY;
    let e = hp.sign_dense(&x).unwrap_err();
    assert!(matches!(e, Error::NonFinite { row: 2, col: 7, .. }), "{e}");
    assert!(e.to_string().contains("row 2") && e.to_string().contains("column 7"));
    // Dimension mismatch.
    let e = hp.sign_dense(&Array2::<f32>::ones((2, 11))).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                expected: 10,
                got: 11
            }
        ),
        "{e}"
    );
    let e = hp.sign_sparse(&[3, 10], &[1.0, 1.0]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                col: 10,
                dim: 10,
                ..
            }
        ),
        "{e}"
    );
    // Unsorted and duplicate indices are rejected, with the row; sort_and_merge fixes them.
    let e = ht.sign_sparse(&[5, 2], &[1.0, 1.0]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::UnsortedIndices {
                row: 0,
                col: 2,
                prev: 5
            }
        ),
        "{e}"
    );
    let e = ht.sign_sparse(&[2, 2], &[1.0, 1.0]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::UnsortedIndices {
                col: 2,
                prev: 2,
                ..
            }
        ),
        "{e}"
    );
    let (mut i, mut w) = (vec![5, 2, 2], vec![1.0, 0.5, 0.5]);
    sort_and_merge(&mut i, &mut w);
    assert_eq!(
        ht.sign_sparse(&i, &w).unwrap(),
        ht.sign_sparse(&[2, 5], &[1.0, 1.0]).unwrap()
    );
    // A CSR row with an out-of-range index is reported with its row.
    let csr = sprs::CsMat::new(
        (3, 20),
        vec![0, 1, 2, 3],
        vec![0usize, 15, 1],
        vec![1f32, 1.0, 1.0],
    );
    let e = hp.sign_csr(csr.view()).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { .. }), "{e}");
    let csr = sprs::CsMat::new(
        (3, 10),
        vec![0, 1, 2, 3],
        vec![0usize, 5, 1],
        vec![1f32, f32::NAN, 1.0],
    );
    let e = hp.sign_csr(csr.view()).unwrap_err();
    assert!(matches!(e, Error::NonFinite { row: 1, col: 5, .. }), "{e}");
    // Length mismatch and tokens on a matrix signer.
    assert!(matches!(
        ht.sign_sparse(&[1, 2], &[1.0]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        hp.sign_tokens(&["a"], &[1.0]),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn signers_report_memory_and_cost() {
    let d = 1 << 16;
    let f = 256;
    let g = HyperplaneSigner::builder()
        .dim(d)
        .bits(f)
        .build()
        .unwrap()
        .info();
    assert_eq!(g.bytes, d as usize * f * 4);
    let r = HyperplaneSigner::builder()
        .dim(d)
        .bits(f)
        .distribution(Distribution::Rademacher)
        .build()
        .unwrap()
        .info();
    assert_eq!(r.bytes, d as usize * f / 8);
    let vs = HyperplaneSigner::builder()
        .dim(d)
        .bits(f)
        .distribution(Distribution::VerySparse { density: None })
        .build()
        .unwrap();
    let vi = vs.info();
    // Nonzeros ~ Binomial(D·f, 1/√D): mean f·√D = 65,536, sd ≈ 256; allow 6 sd.
    let nnz = (vi.bytes - (d as usize + 1) * 4) / 4;
    assert!((nnz as f64 - 65536.0).abs() < 6.0 * 256.0, "{nnz}");
    assert!((vi.adds_per_nonzero - f as f64 / 256.0).abs() < 0.1);
    let ht = HashingTrick::builder().bits(f).build().unwrap().info();
    assert_eq!((ht.bytes, ht.dim), (0, None));
    assert_eq!(ht.hash_words_per_nonzero, 5.0);
    let p = simlsh::PooledSigner::builder()
        .bits(f)
        .pool_size(1000)
        .build()
        .unwrap()
        .info();
    assert_eq!(p.bytes, 4000);
    let hg = HashedGaussian::builder().bits(f).build().unwrap().info();
    // The two 8-value tables and the two AES round keys; one key hash and four stream words
    // (two AES blocks) per 64 bits.
    assert_eq!((hg.kind, hg.bytes, hg.dim), ("hashed-gaussian", 96, None));
    assert_eq!(hg.hash_words_per_nonzero, 1.0 + 4.0 * 4.0);
    // Very sparse columns really have density 1/√D: check against the matrix itself.
    let mut total = 0usize;
    for i in 0..d {
        total += vs.column(i).unwrap().iter().filter(|&&v| v != 0.0).count();
    }
    assert_eq!(total, nnz);
}

#[test]
fn very_sparse_zero_projections_follow_their_formula_and_expected_nnz_removes_them() {
    // D = 2^16, f = 256, rows of k = 40 random features with Gaussian weights: the fraction
    // of projections exactly 0 is (1 − p)^k, checked within the 99.9% binomial interval over
    // 300 rows × 256 bits.
    let (d, f, k, rows) = (1u64 << 16, 256usize, 40usize, 300usize);
    let mut rng = Rng::new(31);
    let data: Vec<(Vec<u64>, Vec<f32>)> = (0..rows).map(|_| sparse_row(&mut rng, d, k)).collect();
    let zeros = |s: &HyperplaneSigner| -> (u64, f64) {
        let mut n = 0u64;
        let mut expected = 0.0;
        for (ids, w) in &data {
            let mut acc = s.new_acc();
            s.accumulate(ids, w, &mut acc);
            n += acc[..f].iter().filter(|&&v| v == 0.0).count() as u64;
            expected += zero_projection_fraction(ids.len() as u64, s.density().unwrap());
        }
        (n, expected / rows as f64)
    };
    let trials = (rows * f) as u64;
    let default = HyperplaneSigner::builder()
        .dim(d)
        .bits(f)
        .seed(2)
        .distribution(Distribution::VerySparse { density: None })
        .build()
        .unwrap();
    assert_eq!(default.density(), Some(1.0 / 256.0));
    let (n, p) = zeros(&default);
    let (lo, hi) = binomial_interval(trials, p, 0.999).unwrap();
    assert!(
        p > 0.85 && (lo..=hi).contains(&n),
        "{n} zeros, expected {p}"
    );
    let sized = HyperplaneSigner::builder()
        .dim(d)
        .bits(f)
        .seed(2)
        .distribution(Distribution::VerySparse { density: None })
        .expected_nnz(k as u64)
        .build()
        .unwrap();
    assert_eq!(
        sized.density(),
        Some(simlsh::signers::ZERO_TARGET / k as f64)
    );
    let (n, p) = zeros(&sized);
    let (lo, hi) = binomial_interval(trials, p, 0.999).unwrap();
    assert!(
        p < 0.01 && (lo..=hi).contains(&n),
        "{n} zeros, expected {p}"
    );
    // Unrelated rows (disjoint features, cosine 0) collide on half their bits, as the law
    // says, only when their projections are not 0: at the default density they share the
    // zero bits.
    let collisions = |s: &HyperplaneSigner| -> u64 {
        (0..rows / 2)
            .map(|r| {
                let a = s.sign_sparse(&data[2 * r].0, &data[2 * r].1).unwrap();
                let (ids, w) = &data[2 * r + 1];
                // Shift the second row's features so the two share none.
                let ids: Vec<u64> = ids.iter().map(|&i| (i + d / 2) % d).collect();
                let (mut ids, mut w) = (ids, w.clone());
                sort_and_merge(&mut ids, &mut w);
                let b = s.sign_sparse(&ids, &w).unwrap();
                u64::from(f as u32 - a.distance(&b).unwrap())
            })
            .sum()
    };
    let pairs = (rows / 2 * f) as u64;
    let (lo, hi) = binomial_interval(pairs, 0.5, 0.999).unwrap();
    assert!(
        collisions(&default) > hi,
        "default density should over-collide"
    );
    assert!((lo..=hi).contains(&collisions(&sized)));
    // Typed errors.
    let b = || HyperplaneSigner::builder().dim(d).bits(8);
    for (builder, what) in [
        (b().expected_nnz(10), "gaussian"),
        (
            b().distribution(Distribution::VerySparse { density: Some(0.1) })
                .expected_nnz(10),
            "both",
        ),
        (
            b().distribution(Distribution::VerySparse { density: None })
                .expected_nnz(0),
            "zero",
        ),
    ] {
        assert!(
            matches!(
                builder.build(),
                Err(Error::InvalidParameter {
                    name: "expected_nnz",
                    ..
                })
            ),
            "{what}"
        );
    }
    // Memory: a u32 offset per feature plus a u32 per entry; at D = 2^20 the offsets (4 MiB)
    // dominate the ≈ f·√D entries.
    let big = HyperplaneSigner::builder()
        .dim(1 << 20)
        .bits(64)
        .distribution(Distribution::VerySparse { density: None })
        .build()
        .unwrap()
        .info();
    let approx = 4.0 * (1u64 << 20) as f64 + 4.0 * 64.0 * 1024.0;
    assert!(
        (big.bytes as f64 / approx - 1.0).abs() < 0.01,
        "{}",
        big.bytes
    );
}

#[test]
fn superbit_columns_are_orthonormal_within_batches() {
    let (d, f) = (16u64, 40usize);
    let s = HyperplaneSigner::builder()
        .dim(d)
        .bits(f)
        .seed(2)
        .distribution(Distribution::SuperBit { depth: None })
        .build()
        .unwrap();
    let col = |j: usize| -> Vec<f64> { (0..d).map(|i| s.column(i).unwrap()[j] as f64).collect() };
    for a in 0..f {
        for b in a..f {
            let dot: f64 = col(a).iter().zip(col(b)).map(|(x, y)| x * y).sum();
            if a == b {
                assert!((dot - 1.0).abs() < 1e-5);
            } else if a / 16 == b / 16 {
                assert!(dot.abs() < 1e-5, "{a} {b} {dot}");
            }
        }
    }
}

/// A random sparse row: `nnz` distinct sorted ids below `dim`, Gaussian weights.
fn sparse_row(rng: &mut Rng, dim: u64, nnz: usize) -> (Vec<u64>, Vec<f32>) {
    let mut ids: Vec<u64> = (0..nnz).map(|_| rng.below(dim)).collect();
    ids.sort_unstable();
    ids.dedup();
    let w = ids.iter().map(|_| rng.gaussian() as f32).collect();
    (ids, w)
}
