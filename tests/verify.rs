//! Exact answers from signature candidates, against brute-force exact cosine on planted data
//! (clusters of near-duplicates at known cosines): the verified self-join, zero rows, the
//! streaming union-find, leader clusters and re-ranking.

use std::collections::BTreeSet;

use ndarray::Array2;
use simlsh::estimate::{
    BandingPlanner, banding_recall, binomial_quantile, filtered_band_recall, recall_at,
};
use simlsh::index::{HammingIndex, LinearScan};
use simlsh::join::{
    Banding, LeaderOrder, Pair, Scheme, UnionFind, banded_join, clusters, knn_graph,
    leader_clusters,
};
use simlsh::rng::Rng;
use simlsh::verify::{
    CsrVectors, DenseVectors, SparseVectors, Vectors, VerifiedJoin, VerifiedPair, rerank,
    rerank_graph,
};
use simlsh::{HashingTrick, HyperplaneSigner, SignatureMatrix, Signer};

const DIM: usize = 48;

/// A random unit vector.
fn unit(rng: &mut Rng) -> Vec<f64> {
    let v: Vec<f64> = (0..DIM).map(|_| rng.gaussian()).collect();
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// A unit vector at cosine exactly `c` from the unit vector `u` (Gram–Schmidt on a random
/// direction).
fn at_cosine(rng: &mut Rng, u: &[f64], c: f64) -> Vec<f64> {
    let r = unit(rng);
    let d: f64 = r.iter().zip(u).map(|(a, b)| a * b).sum();
    let w: Vec<f64> = r.iter().zip(u).map(|(a, b)| a - d * b).collect();
    let wn = w.iter().map(|x| x * x).sum::<f64>().sqrt();
    let s = (1.0 - c * c).max(0.0).sqrt();
    u.iter().zip(&w).map(|(a, b)| c * a + s * b / wn).collect()
}

/// Planted dense data: `centres` random centres, each with copies at the cosines of
/// `levels`; a few all-zero rows. Returns the matrix and the `(centre, copy, cosine)` pairs.
fn planted(centres: usize, levels: &[f64], seed: u64) -> (Array2<f32>, Vec<(u32, u32, f64)>) {
    let mut rng = Rng::new(seed);
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut pairs = Vec::new();
    for c in 0..centres {
        let u = unit(&mut rng);
        let at = rows.len() as u32;
        rows.push(u.clone());
        for &l in levels {
            pairs.push((at, rows.len() as u32, l));
            rows.push(at_cosine(&mut rng, &u, l));
        }
        if c % 10 == 3 {
            rows.push(vec![0.0; DIM]);
        }
    }
    let n = rows.len();
    let x = Array2::from_shape_fn((n, DIM), |(i, j)| rows[i][j] as f32);
    (x, pairs)
}

/// Every pair with exact cosine ≥ t, brute force, skipping zero rows.
fn brute<V: Vectors>(v: &V, t: f64) -> Vec<(u32, u32, f64)> {
    let mut out = Vec::new();
    for i in 0..v.len() {
        for j in i + 1..v.len() {
            if v.is_zero(i) || v.is_zero(j) {
                continue;
            }
            let c = v.cosine(i, j);
            if c >= t {
                out.push((i as u32, j as u32, c));
            }
        }
    }
    out
}

fn triples(p: &[VerifiedPair]) -> Vec<(u32, u32, f64)> {
    p.iter().map(|p| (p.i, p.j, p.cosine)).collect()
}

fn sign_dense(x: &Array2<f32>, bits: usize) -> SignatureMatrix {
    HyperplaneSigner::builder()
        .dim(DIM as u64)
        .bits(bits)
        .seed(5)
        .build()
        .unwrap()
        .sign_dense(x)
        .unwrap()
}

#[test]
fn verified_join_with_every_pair_as_candidate_equals_brute_force() {
    let (x, _) = planted(40, &[0.97, 0.9, 0.85, 0.8, 0.7], 1);
    let vectors = DenseVectors::new(x.view()).unwrap();
    let sigs = sign_dense(&x, 64);
    for t in [0.8, 0.9] {
        let want = brute(&vectors, t);
        assert!(want.len() >= 40, "{}", want.len());
        // Radius f: every pair is a candidate. One-bit bands over all 64 bits: every pair
        // agreeing on some bit (all pairs at cosine ≥ 0.8 but with probability 1e-40).
        let bits1 = Banding::builder()
            .bits(64)
            .bands(64)
            .width(1)
            .build()
            .unwrap();
        for candidates in [Scheme::Radius { radius: 64 }, Scheme::Bands(bits1)] {
            let join = VerifiedJoin::builder()
                .threshold(t)
                .candidates(candidates)
                .build()
                .unwrap();
            let (got, report) = join.pairs(&sigs, &vectors).unwrap();
            assert_eq!(triples(&got), want);
            assert_eq!(report.pairs, want.len() as u64);
            assert_eq!(report.zero_rows, vectors.zero_rows());
            assert!(!report.zero_rows.is_empty());
            assert!(report.candidates >= report.pairs);
        }
    }
}

#[test]
fn planned_joins_find_planted_pairs_at_their_planned_recall() {
    // 300 clusters, copies at 0.95, 0.9, 0.85 and 0.8; τ = 0.8, target 0.95.
    let levels = [0.95, 0.9, 0.85, 0.8];
    let (x, planted) = planted(300, &levels, 2);
    let vectors = DenseVectors::new(x.view()).unwrap();
    let truth: BTreeSet<(u32, u32)> = brute(&vectors, 0.8).iter().map(|p| (p.0, p.1)).collect();
    let bits = 512;
    let sigs = sign_dense(&x, bits);
    let plan = BandingPlanner::new(0.8)
        .recall(0.95)
        .rows(x.nrows() as u64)
        .bits(bits)
        .plan()
        .unwrap();
    let banding = plan.banding().unwrap();
    let r = simlsh::estimate::RadiusPlanner::new(0.8)
        .bits(bits as u64)
        .rule(simlsh::estimate::RadiusRule::TargetRecall(0.95))
        .plan()
        .unwrap()
        .radius;
    type Recall = Box<dyn Fn(f64) -> f64>;
    let b2 = banding.clone();
    let cases: Vec<(Scheme, Recall)> = vec![
        (
            Scheme::Bands(banding),
            Box::new(move |c| {
                filtered_band_recall(
                    bits,
                    b2.bands(),
                    b2.width(),
                    u64::from(b2.max_distance()),
                    c,
                )
                .unwrap()
            }),
        ),
        (
            Scheme::Radius { radius: r as u32 },
            Box::new(move |c| recall_at(bits as u64, r, c).unwrap()),
        ),
    ];
    for (candidates, recall) in cases {
        let join = VerifiedJoin::builder()
            .threshold(0.8)
            .candidates(candidates)
            .build()
            .unwrap();
        let (got, _) = join.pairs(&sigs, &vectors).unwrap();
        // Precision 1: every pair found is a true pair, with its exact cosine.
        for p in &got {
            assert!(truth.contains(&(p.i, p.j)));
            assert_eq!(p.cosine, vectors.cosine(p.i as usize, p.j as usize));
            assert_eq!(p.distance, sigs.distance(p.i as usize, p.j as usize));
        }
        let found: BTreeSet<(u32, u32)> = got.iter().map(|p| (p.i, p.j)).collect();
        // Per planted level, the share found is within the binomial bound of the recall
        // planned at that cosine. The vectors are at the level up to f32 rounding: the recall
        // is taken 1e-4 below it, and only the pairs that are true pairs count (about half
        // of those planted at exactly 0.8 round below it).
        for &l in &levels {
            let level: Vec<_> = planted
                .iter()
                .filter(|p| p.2 == l && truth.contains(&(p.0, p.1)))
                .collect();
            assert!(level.len() >= 100, "{l}: {}", level.len());
            let hit = level.iter().filter(|p| found.contains(&(p.0, p.1))).count() as u64;
            let need = binomial_quantile(1e-6, level.len() as u64, recall(l - 1e-4)).unwrap();
            assert!(
                hit >= need,
                "{:?} cosine {l}: {hit} of {}",
                join.candidates(),
                level.len()
            );
        }
    }
}

#[test]
fn multi_probe_verified_join_is_brute_force_over_its_candidates() {
    // Bands one bit apart probed: the verified pairs are exactly the brute-force pairs at
    // cosine ≥ τ among the banded join's candidates, and each planted level is found at
    // least at the binomial bound of the banding's recall there.
    let levels = [0.95, 0.9, 0.85, 0.8];
    let (x, planted) = planted(300, &levels, 3);
    let vectors = DenseVectors::new(x.view()).unwrap();
    let bits = 512;
    let sigs = sign_dense(&x, bits);
    let plan = BandingPlanner::new(0.8)
        .recall(0.95)
        .rows(x.nrows() as u64)
        .bits(bits)
        .plan()
        .unwrap();
    let banding = Banding::builder()
        .bits(bits)
        .bands(20)
        .width(16)
        .max_distance(plan.max_distance.unwrap())
        .probes(1)
        .build()
        .unwrap();
    let (cands, stats) = banded_join(&sigs, &banding).unwrap();
    let cands: BTreeSet<(u32, u32)> = cands.iter().map(|p| (p.i, p.j)).collect();
    let truth = brute(&vectors, 0.8);
    let want: Vec<_> = truth
        .iter()
        .copied()
        .filter(|p| cands.contains(&(p.0, p.1)))
        .collect();
    let join = VerifiedJoin::builder()
        .threshold(0.8)
        .candidates(Scheme::Bands(banding.clone()))
        .build()
        .unwrap();
    let (got, report) = join.pairs(&sigs, &vectors).unwrap();
    assert_eq!(triples(&got), want);
    // The join leaves the zero rows out of its candidates.
    assert!(report.candidates <= stats.candidates && report.candidates >= want.len() as u64);
    assert_eq!(join.pairs(&sigs, &vectors).unwrap().0, got);
    let found: BTreeSet<(u32, u32)> = got.iter().map(|p| (p.i, p.j)).collect();
    let truth: BTreeSet<(u32, u32)> = truth.iter().map(|p| (p.0, p.1)).collect();
    for &l in &levels {
        let level: Vec<_> = planted
            .iter()
            .filter(|p| p.2 == l && truth.contains(&(p.0, p.1)))
            .collect();
        assert!(level.len() >= 100, "{l}: {}", level.len());
        let hit = level.iter().filter(|p| found.contains(&(p.0, p.1))).count() as u64;
        let r = banding_recall(&banding, l - 1e-4).unwrap();
        let need = binomial_quantile(1e-6, level.len() as u64, r).unwrap();
        assert!(hit >= need, "cosine {l}: {hit} of {}", level.len());
    }
}

#[test]
fn zero_rows_are_reported_and_never_paired() {
    // Sparse rows: two empty documents, a document whose weights cancel, and duplicates.
    let rows: Vec<Vec<(u64, f32)>> = vec![
        vec![(1, 1.0), (2, 1.0)],
        vec![],
        vec![(1, 1.0), (2, 1.0)],
        vec![(7, 2.0), (7, -2.0)],
        vec![],
        vec![(3, 1.0)],
    ];
    let signer = HashingTrick::builder().bits(64).seed(3).build().unwrap();
    let sigs: Vec<_> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.sort_by_key(|e| e.0);
            r.dedup_by(|a, b| {
                if a.0 == b.0 {
                    b.1 += a.1;
                    true
                } else {
                    false
                }
            });
            let (ids, w): (Vec<u64>, Vec<f32>) = r.into_iter().unzip();
            signer.sign_sparse(&ids, &w).unwrap()
        })
        .collect();
    let sigs = SignatureMatrix::from_signatures(64, &sigs).unwrap();
    let vectors = SparseVectors::from_rows(rows).unwrap();
    // All-zero signatures agree everywhere: at radius 64 and with bands they would pair.
    assert_eq!(sigs.distance(1, 4), 0);
    for candidates in [
        Scheme::Radius { radius: 64 },
        Scheme::Bands(
            Banding::builder()
                .bits(64)
                .bands(8)
                .width(8)
                .build()
                .unwrap(),
        ),
    ] {
        let join = VerifiedJoin::builder()
            .threshold(-1.0)
            .candidates(candidates)
            .build()
            .unwrap();
        let (pairs, report) = join.pairs(&sigs, &vectors).unwrap();
        assert_eq!(report.zero_rows, vec![1, 3, 4]);
        let got: Vec<(u32, u32)> = pairs.iter().map(|p| (p.i, p.j)).collect();
        // Threshold −1 keeps every candidate among the non-zero rows.
        assert!(got.contains(&(0, 2)));
        assert!(
            got.iter()
                .all(|&(i, j)| ![1, 3, 4].contains(&i) && ![1, 3, 4].contains(&j))
        );
    }
}

#[test]
fn streaming_union_find_equals_components_of_the_pair_list() {
    let (x, _) = planted(60, &[0.95, 0.9, 0.85, 0.8, 0.75], 3);
    let vectors = DenseVectors::new(x.view()).unwrap();
    let sigs = sign_dense(&x, 256);
    let join = VerifiedJoin::planned(0.8, 0.99, 256, vectors.len()).unwrap();
    let mut uf = UnionFind::new(vectors.len()).unwrap();
    let mut streamed = Vec::new();
    let pool = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    };
    pool(2).install(|| {
        join.run(&sigs, &vectors, |p| {
            uf.union(p.i, p.j);
            streamed.push(p);
        })
        .unwrap()
    });
    let pairs: Vec<Pair> = streamed
        .iter()
        .map(|p| Pair {
            i: p.i,
            j: p.j,
            distance: p.distance,
        })
        .collect();
    assert!(pairs.len() > 100);
    assert_eq!(
        uf.labels().unwrap(),
        clusters(vectors.len(), &pairs).unwrap()
    );
    // The stream's order does not depend on the number of threads.
    let mut one = Vec::new();
    pool(1).install(|| join.run(&sigs, &vectors, |p| one.push(p)).unwrap());
    assert_eq!(one, streamed);
}

#[test]
fn leader_clusters_do_not_chain_and_are_characterised() {
    // Chains: u, then copies drifting away step by step (each 0.85 from the previous one), so
    // components merge far-apart vectors.
    let mut rng = Rng::new(4);
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for _ in 0..30 {
        let mut v = unit(&mut rng);
        rows.push(v.clone());
        for _ in 0..5 {
            v = at_cosine(&mut rng, &v, 0.85);
            rows.push(v.clone());
        }
    }
    let n = rows.len();
    let x = Array2::from_shape_fn((n, DIM), |(i, j)| rows[i][j] as f32);
    let vectors = DenseVectors::new(x.view()).unwrap();
    let t = 0.8;
    let edges: Vec<(u32, u32)> = brute(&vectors, t).iter().map(|p| (p.0, p.1)).collect();
    let pairs: Vec<Pair> = edges
        .iter()
        .map(|&(i, j)| Pair { i, j, distance: 0 })
        .collect();
    let components = clusters(n, &pairs).unwrap();
    // Components chain: some member is far below τ from its component's label.
    assert!((0..n).any(|i| vectors.cosine(i, components[i] as usize) < 0.6));
    let adjacent: BTreeSet<(u32, u32)> =
        edges.iter().flat_map(|&(i, j)| [(i, j), (j, i)]).collect();
    for order in [LeaderOrder::Id, LeaderOrder::Degree] {
        let labels = leader_clusters(n, edges.iter().copied(), order).unwrap();
        // Reversed edges give the same clusters.
        assert_eq!(
            labels,
            leader_clusters(n, edges.iter().map(|&(i, j)| (j, i)), order).unwrap()
        );
        for v in 0..n {
            let l = labels[v] as usize;
            assert_eq!(labels[l] as usize, l, "a label is a leader");
            if l != v {
                assert!(
                    vectors.cosine(v, l) >= t,
                    "member {v} below τ from leader {l}"
                );
            }
        }
        if order == LeaderOrder::Id {
            // A point leads iff no smaller leader is adjacent; a member joins the smallest
            // adjacent leader.
            for v in 0..n as u32 {
                let first = (0..v).find(|&u| labels[u as usize] == u && adjacent.contains(&(u, v)));
                assert_eq!(labels[v as usize], first.unwrap_or(v), "point {v}");
            }
        }
    }
    assert!(leader_clusters(3, [(0u32, 3u32)], LeaderOrder::Id).is_err());
}

#[test]
fn rerank_recovers_the_exact_top_k_from_hamming_candidates() {
    let (x, _) = planted(50, &[0.95, 0.9, 0.85, 0.8, 0.6, 0.4], 6);
    let base = DenseVectors::new(x.view()).unwrap();
    let sigs = sign_dense(&x, 128);
    let index = LinearScan::build(&sigs).unwrap();
    let n = base.len();
    let k = 5;
    let exact_top = |q: usize, exclude_self: bool| -> Vec<u32> {
        let mut all: Vec<(u32, f64)> = (0..n)
            .filter(|&j| !(exclude_self && j == q))
            .map(|j| (j as u32, base.cosine(q, j)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.into_iter().take(k).map(|e| e.0).collect()
    };
    // m = n: every stored code is a candidate, so the answer is the exact top k.
    let got = rerank(&index, &sigs, &base, &base, k, n).unwrap();
    for (q, hits) in got.iter().enumerate() {
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            exact_top(q, false)
        );
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
    }
    // m < n: the top k by cosine among the m nearest by Hamming distance.
    let m = 12;
    let got = rerank(&index, &sigs, &base, &base, k, m).unwrap();
    for (q, hits) in got.iter().enumerate() {
        let cands = index.knn(sigs.row(q), m).unwrap();
        let mut scored: Vec<(u32, f64)> = cands
            .iter()
            .map(|h| (h.id, base.cosine(q, h.id as usize)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        assert_eq!(hits, &scored);
    }
    // The k-NN graph re-ranked: with every row as a neighbour, the exact top k of others.
    let graph = knn_graph(&sigs, n - 1).unwrap();
    let nn = rerank_graph(&graph, &base, k).unwrap();
    for (q, hits) in nn.iter().enumerate() {
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            exact_top(q, true)
        );
    }
    // Errors: mismatched lengths.
    assert!(rerank_graph(&graph[1..], &base, k).is_err());
    let q1 = sigs.slice_rows(0..1);
    assert!(rerank(&index, &q1, &base, &base, k, m).is_err());
}

#[test]
fn csr_vectors_verify_like_owned_ones() {
    let (x, _) = planted(20, &[0.9, 0.8], 7);
    let mut tri = sprs::TriMat::new(x.dim());
    for ((i, j), &v) in x.indexed_iter() {
        if v != 0.0 {
            tri.add_triplet(i, j, v);
        }
    }
    let csr = tri.to_csr::<usize>();
    let borrowed = CsrVectors::new(csr.view()).unwrap();
    let owned = SparseVectors::from_csr(csr.view()).unwrap();
    let sigs = sign_dense(&x, 64);
    let join = VerifiedJoin::builder()
        .threshold(0.75)
        .candidates(Scheme::Radius { radius: 64 })
        .build()
        .unwrap();
    let (a, ra) = join.pairs(&sigs, &borrowed).unwrap();
    let (b, rb) = join.pairs(&sigs, &owned).unwrap();
    let ids = |p: &[VerifiedPair]| p.iter().map(|p| (p.i, p.j)).collect::<Vec<_>>();
    assert_eq!(ids(&a), ids(&b));
    assert_eq!(
        ids(&a),
        brute(&borrowed, 0.75)
            .iter()
            .map(|p| (p.0, p.1))
            .collect::<Vec<_>>()
    );
    assert_eq!(ra.zero_rows, rb.zero_rows);
    // Bad settings are typed errors.
    assert!(
        VerifiedJoin::builder()
            .threshold(1.5)
            .candidates(Scheme::Radius { radius: 1 })
            .build()
            .is_err()
    );
    assert!(VerifiedJoin::builder().threshold(0.5).build().is_err());
    assert!(join.pairs(&sigs.slice_rows(0..3), &owned).is_err());
}

/// One shape rule for the two verifiers of rows of two sets, `paired_cosines` and `RerankIds`
/// (`Vectors::check_pairable`, derived from `Vectors::cols`): rows of a fixed number of
/// columns (dense or CSR, copied or read in place) pair only with rows of as many, and both
/// refuse the same mismatched pair with the same typed error naming both widths; owned
/// sparse rows (keyed by hashes) pair with any; rows of one width pass both.
#[test]
fn paired_cosines_and_rerank_refuse_the_same_mismatched_pairs() {
    use simlsh::Error;
    use simlsh::signers::sparse::CsrArrays;
    use simlsh::verify::{CsrRows, DenseRows, RerankIds, paired_cosines};

    type Checked = (Result<(), Error>, Result<(), Error>);
    fn both<V: Vectors>(a: &V, b: &V) -> Checked {
        let ids = Array2::<i64>::zeros((a.len(), 1));
        (
            paired_cosines(a, b).map(drop),
            RerankIds::new(a, b, &ids, 1).map(drop),
        )
    }
    fn refused(c: Checked, kind: &str) {
        for (user, r) in [("paired_cosines", c.0), ("RerankIds", c.1)] {
            match r {
                Err(Error::LengthMismatch {
                    what,
                    left: 4,
                    right: 5,
                }) => assert!(what.ends_with("columns"), "{kind}, {user}: {what}"),
                other => panic!("{kind}, {user}: {other:?}"),
            }
        }
    }
    fn accepted(c: Checked, kind: &str) {
        assert!(c.0.is_ok() && c.1.is_ok(), "{kind}: {c:?}");
    }
    let x = |cols: usize| Array2::from_shape_fn((3, cols), |(i, j)| (i * 7 + j % 3) as f32 - 4.0);
    let (x4, y4, x5) = (x(4), x(4) * 2.0, x(5));
    let dense = |m: &Array2<f32>| DenseVectors::new(m.view()).unwrap();
    refused(both(&dense(&x4), &dense(&x5)), "dense");
    accepted(both(&dense(&x4), &dense(&y4)), "dense");
    fn rows(m: &Array2<f32>) -> DenseRows<'_> {
        DenseRows::new(m.view()).unwrap()
    }
    refused(both(&rows(&x4), &rows(&x5)), "dense in place");
    accepted(both(&rows(&x4), &rows(&y4)), "dense in place");
    let (c4, d4, c5) = (
        sprs::CsMat::csr_from_dense(x4.view(), 0.0),
        sprs::CsMat::csr_from_dense(y4.view(), 0.0),
        sprs::CsMat::csr_from_dense(x5.view(), 0.0),
    );
    fn csr(m: &sprs::CsMat<f32>) -> CsrVectors<'_> {
        CsrVectors::new(m.view()).unwrap()
    }
    refused(both(&csr(&c4), &csr(&c5)), "CSR");
    accepted(both(&csr(&c4), &csr(&d4)), "CSR");
    // The arrays of the same matrices, read in place.
    let arrays = |m: &sprs::CsMat<f32>| {
        let to = |v: &[usize]| v.iter().map(|&k| k as i64).collect::<Vec<i64>>();
        (
            to(m.indptr().raw_storage()),
            to(m.indices()),
            m.data().to_vec(),
            m.cols(),
        )
    };
    let (a4, b4, a5) = (arrays(&c4), arrays(&d4), arrays(&c5));
    fn csr_rows(a: &(Vec<i64>, Vec<i64>, Vec<f32>, usize)) -> CsrRows<'_, i64, i64> {
        CsrRows::new(CsrArrays::new(&a.0[..], &a.1[..], &a.2[..], a.3).unwrap()).unwrap()
    }
    refused(both(&csr_rows(&a4), &csr_rows(&a5)), "CSR in place");
    accepted(both(&csr_rows(&a4), &csr_rows(&b4)), "CSR in place");
    // Owned sparse rows have no width: keys of any size pair.
    let sparse = |shift: u32| {
        SparseVectors::from_rows((0..3u64).map(|i| vec![(i << shift, 1.0f32), (7, 2.0)])).unwrap()
    };
    accepted(both(&sparse(1), &sparse(40)), "owned sparse");
}
