//! The k-nearest-neighbour graph by the linear scan against brute force, for the widths and
//! the large `k` of a re-ranked k-NN (the `M` Hamming candidates of `knn --rerank M`): every
//! row's `k` nearest other rows sorted by `(distance, id)`, ties to the smaller id, the row
//! itself excluded, whatever the split of the rows into batches; and the re-ranked graph
//! against an exact re-ranking done here.

mod oracle;

use oracle::brute_knn;
use proptest::prelude::*;
use simlsh::join::{knn_graph, knn_graph_rows};
use simlsh::rng::Rng;
use simlsh::signature::{last_word_mask, words_for};
use simlsh::verify::{DenseVectors, Vectors, rerank_graph};
use simlsh::{Hit, LinearScan, SignatureMatrix};

/// `n` codes of `bits` bits drawn near a few centres (0 to `spread` bits flipped), with exact
/// duplicates: distances concentrate on a few values, so the `k`-th place is often a tie.
fn codes(n: usize, bits: usize, spread: u64, seed: u64) -> SignatureMatrix {
    let w = words_for(bits);
    let mut rng = Rng::new(seed);
    let centres: Vec<Vec<u64>> = (0..4)
        .map(|_| (0..w).map(|_| rng.next_u64()).collect())
        .collect();
    let mut data: Vec<u64> = Vec::with_capacity(n * w);
    for i in 0..n {
        let row: Vec<u64> = if i > 0 && rng.below(6) == 0 {
            let src = rng.below(i as u64) as usize;
            data[src * w..(src + 1) * w].to_vec()
        } else {
            let mut row = centres[rng.below(4) as usize].clone();
            for _ in 0..rng.below(spread + 1) {
                let b = rng.below(bits as u64) as usize;
                row[b / 64] ^= 1 << (b % 64);
            }
            row
        };
        data.extend_from_slice(&row);
    }
    let mask = last_word_mask(bits);
    for i in 0..n {
        data[(i + 1) * w - 1] &= mask;
    }
    SignatureMatrix::from_parts(bits, data).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn knn_graph_equals_brute_force(
        bits in prop::sample::select(vec![64usize, 256, 512, 1000]),
        n in 1usize..700,
        k_frac in 0.0f64..1.2,
        spread in prop::sample::select(vec![3u64, 40, 400]),
        seed in any::<u64>(),
    ) {
        let sigs = codes(n, bits, spread, seed);
        // k from 0 to beyond n - 1 (then every other row), around the buffered paths.
        let k = (k_frac * n as f64) as usize;
        let want: Vec<Vec<Hit>> = (0..n).map(|i| brute_knn(&sigs, i, k)).collect();
        prop_assert_eq!(&knn_graph(&sigs, k).unwrap(), &want);
        let index = LinearScan::build(&sigs).unwrap();
        let cut = n / 3;
        let mut batched = knn_graph_rows(&index, &sigs, 0..cut, k).unwrap();
        batched.extend(knn_graph_rows(&index, &sigs, cut..n, k).unwrap());
        prop_assert_eq!(&batched, &want);
    }

    #[test]
    fn knn_graph_with_few_neighbours_equals_brute_force(
        bits in prop::sample::select(vec![64usize, 128, 384, 448]),
        n in 2usize..1500,
        k in 1usize..40,
        spread in prop::sample::select(vec![0u64, 3, 40, 400]),
        seed in any::<u64>(),
    ) {
        // k well below n / 8: every pair compared once against sampled thresholds (and
        // the rows the sample misjudged scanned again), exact duplicates included.
        let sigs = codes(n, bits, spread, seed);
        let want: Vec<Vec<Hit>> = (0..n).map(|i| brute_knn(&sigs, i, k)).collect();
        prop_assert_eq!(&knn_graph(&sigs, k).unwrap(), &want);
    }
}

#[test]
fn knn_graph_of_large_k_across_tiles_equals_brute_force() {
    // More codes than several 16 KiB tiles at every width, and k in the hundreds: the
    // histogram threshold and the primed first tile of the scan.
    for (bits, n) in [(64usize, 5000), (256, 1500), (512, 900), (1000, 700)] {
        let sigs = codes(n, bits, bits as u64 / 3, bits as u64);
        for k in [101, 301] {
            let got = knn_graph(&sigs, k).unwrap();
            for i in (0..n).step_by(37) {
                assert_eq!(
                    got[i],
                    brute_knn(&sigs, i, k),
                    "f={bits} n={n} k={k} row {i}"
                );
            }
        }
    }
}

#[test]
fn rerank_graph_equals_an_exact_reranking_of_the_candidates() {
    // 3,000 rows: more than two blocks of the re-ranking; random 24-d vectors.
    let (n, d, m, k) = (3000usize, 24usize, 40usize, 10usize);
    let mut rng = Rng::new(9);
    let x = ndarray::Array2::from_shape_fn((n, d), |_| rng.uniform() as f32 - 0.5);
    let v = DenseVectors::new(x.view()).unwrap();
    let sigs = codes(n, 128, 30, 4);
    let graph = knn_graph(&sigs, m).unwrap();
    let got = rerank_graph(&graph, &v, k).unwrap();
    for (i, hits) in graph.iter().enumerate() {
        let mut want: Vec<(u32, f64)> = hits
            .iter()
            .map(|h| (h.id, v.cosine(i, h.id as usize)))
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        want.truncate(k);
        assert_eq!(got[i], want, "row {i}");
    }
}

/// 256-bit signatures (super-bit, seed 0) of the first `n` word vectors of the bundled
/// `datasets/glove-6B-50d-10k`: real embeddings, with their uneven neighbourhoods.
fn glove(n: usize) -> SignatureMatrix {
    use simlsh::{HyperplaneSigner, Signer, signers::Distribution};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/glove-6B-50d-10k/vectors.fvecs");
    let x = simlsh::io::read_vecs(&path, simlsh::io::vecs::VecsKind::F32).unwrap();
    let signer = HyperplaneSigner::builder()
        .dim(x.ncols() as u64)
        .bits(256)
        .distribution(Distribution::SuperBit { depth: None })
        .build()
        .unwrap();
    let mut m = SignatureMatrix::new(256).unwrap();
    for row in x.rows().into_iter().take(n) {
        m.push(&signer.sign_dense_row(row.as_slice().unwrap()).unwrap())
            .unwrap();
    }
    m
}

/// Every row of an approximate graph: no self, no repeats, sorted by `(distance, id)`, the
/// distances true, `min(k, n - 1)` entries.
fn well_formed(sigs: &SignatureMatrix, graph: &[Vec<Hit>], k: usize) {
    assert_eq!(graph.len(), sigs.len());
    for (i, row) in graph.iter().enumerate() {
        assert_eq!(row.len(), k.min(sigs.len() - 1), "row {i}: length");
        assert!(
            row.windows(2).all(|p| p[0] < p[1]),
            "row {i}: sorted, no repeats"
        );
        for h in row {
            assert_ne!(h.id as usize, i, "row {i}: itself");
            assert_eq!(
                sigs.distance(i, h.id as usize),
                h.distance,
                "row {i}: distance"
            );
        }
    }
}

/// The approximate k-NN graph (`KnnMethod::Approx`) against brute force: well formed on every
/// row, tie-aware recall from the measured behaviour at fixed seeds, rounds that raise it,
/// and the same graph for any thread count (6,000 codes: more than one block of local joins,
/// whose updates several threads apply).
#[test]
fn approximate_knn_graph_against_brute_force() {
    use simlsh::index::recall_at_k;
    use simlsh::join::{ApproxKnn, KnnMethod, knn_graph_by};
    let n = 6000;
    let sigs = glove(n);
    let exact = knn_graph(&sigs, 10).unwrap();
    // Leaves of 64 codes: the trees alone find part of the graph, the rounds the rest.
    let p = ApproxKnn {
        trees: 4,
        leaf: 64,
        ..ApproxKnn::default()
    };
    let (seeds, s0) = knn_graph_by(
        &sigs,
        10,
        &KnnMethod::Approx(ApproxKnn {
            rounds: 0,
            ..p.clone()
        }),
    )
    .unwrap();
    let (graph, stats) = knn_graph_by(&sigs, 10, &KnnMethod::Approx(p.clone())).unwrap();
    well_formed(&sigs, &seeds, 10);
    well_formed(&sigs, &graph, 10);
    let (r0, r) = (recall_at_k(&seeds, &exact), recall_at_k(&graph, &exact));
    eprintln!(
        "trees alone {r0:.4} ({} distances), with {} rounds {r:.4} ({} distances)",
        s0.distances, stats.rounds, stats.distances
    );
    // Measured: 0.567 from the trees (with the random links), 0.999 after 5 rounds.
    assert!(r0 < 0.7 && r >= 0.97, "trees {r0}, rounds {r}");
    assert!(stats.rounds >= 1 && stats.distances < (n * (n - 1) / 2) as u64);
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let again =
            pool.install(|| knn_graph_by(&sigs, 10, &KnnMethod::Approx(p.clone())).unwrap());
        assert_eq!(again.0, graph, "{threads} threads");
        assert_eq!(again.1, stats);
    }
    // The exact method is knn_graph; k beyond n - 1 lists every other row.
    assert_eq!(
        knn_graph_by(&sigs, 10, &KnnMethod::Exact).unwrap().0,
        knn_graph(&sigs, 10).unwrap()
    );
    let few = SignatureMatrix::from_parts(256, sigs.as_slice()[..5 * 4].to_vec()).unwrap();
    let (all, _) = knn_graph_by(&few, 9, &KnnMethod::Approx(p)).unwrap();
    well_formed(&few, &all, 9);
    assert_eq!(all, knn_graph(&few, 9).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Whatever the codes (duplicates, ties, few rows), every row of the approximate graph is
    /// well formed.
    #[test]
    fn approximate_knn_graph_is_well_formed(
        bits in prop::sample::select(vec![64usize, 256, 100]),
        n in 1usize..400,
        k in 0usize..30,
        spread in prop::sample::select(vec![3u64, 40]),
        leaf in 2usize..50,
        seed in any::<u64>(),
    ) {
        use simlsh::join::{ApproxKnn, KnnMethod, knn_graph_by};
        let sigs = codes(n, bits, spread, seed);
        let p = ApproxKnn { trees: 2, leaf, seed, ..ApproxKnn::default() };
        let (graph, _) = knn_graph_by(&sigs, k, &KnnMethod::Approx(p)).unwrap();
        well_formed(&sigs, &graph, k);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// When a tree's leaf holds every code, the leaf measures every pair: the approximate
    /// graph is the exact one, row by row against brute force (ties to the smaller id, exact
    /// duplicates included), whatever the rounds, random links and seed do afterwards (they
    /// only insert entries nearer than a list's last, and there are none).
    #[test]
    fn approximate_knn_graph_with_one_leaf_equals_brute_force(
        bits in prop::sample::select(vec![64usize, 256, 100]),
        n in 2usize..300,
        k in 1usize..40,
        spread in prop::sample::select(vec![0u64, 3, 40]),
        rounds in 0usize..3,
        seed in any::<u64>(),
    ) {
        use simlsh::join::{ApproxKnn, KnnMethod, knn_graph_by};
        let sigs = codes(n, bits, spread, seed);
        let p = ApproxKnn { trees: 1, leaf: n.max(2), rounds, seed, ..ApproxKnn::default() };
        let (graph, _) = knn_graph_by(&sigs, k, &KnnMethod::Approx(p)).unwrap();
        for (i, row) in graph.iter().enumerate() {
            prop_assert_eq!(row, &brute_knn(&sigs, i, k), "row {}", i);
        }
    }
}

/// The approximate method's lists and candidates are sized by the caller (`k`, `sample`):
/// sizes beyond the memory available are an error naming them, not an abort.
#[test]
fn approximate_graph_sizes_beyond_memory_are_errors() {
    let mut rng = Rng::new(31);
    let codes: Vec<u64> = (0..500).map(|_| rng.next_u64()).collect();
    let sigs = SignatureMatrix::from_parts(64, codes).unwrap();
    let huge = simlsh::join::KnnMethod::Approx(simlsh::join::ApproxKnn {
        sample: usize::MAX / 4,
        ..Default::default()
    });
    let err = simlsh::join::knn_graph_by(&sigs, 10, &huge).unwrap_err();
    assert!(matches!(err, simlsh::Error::OutOfMemory { .. }), "{err}");
    assert!(err.to_string().contains("approximate k-NN graph"), "{err}");
    // Sizes that fit still run.
    let fine = simlsh::join::KnnMethod::Approx(simlsh::join::ApproxKnn::default());
    let (rows, _) = simlsh::join::knn_graph_by(&sigs, 10, &fine).unwrap();
    assert_eq!(rows.len(), 500);
}
