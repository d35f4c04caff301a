//! Permutation search: exactness with a full beam, recall on planted data against a
//! theoretical bound, monotone recall in `q` and `B`, determinism, updates.

use proptest::prelude::*;
use simlsh::index::{HammingIndex, Hit, LinearScan, PermutationIndex, recall_at_k};
use simlsh::rng::Rng;
use simlsh::signature::{SignatureMatrix, last_word_mask, words_for};

fn random_code(rng: &mut Rng, bits: usize) -> Vec<u64> {
    let w = words_for(bits);
    let mut c: Vec<u64> = (0..w).map(|_| rng.next_u64()).collect();
    c[w - 1] &= last_word_mask(bits);
    c
}

/// `code` with exactly `d` distinct random bits flipped (partial Fisher–Yates).
fn flip(rng: &mut Rng, code: &[u64], bits: usize, d: usize) -> Vec<u64> {
    let mut pos: Vec<usize> = (0..bits).collect();
    let mut c = code.to_vec();
    for i in 0..d.min(bits) {
        let j = i + rng.below((bits - i) as u64) as usize;
        pos.swap(i, j);
        c[pos[i] / 64] ^= 1 << (pos[i] % 64);
    }
    c
}

fn matrix(bits: usize, rows: &[Vec<u64>]) -> SignatureMatrix {
    SignatureMatrix::from_parts(bits, rows.concat()).unwrap()
}

/// Clusters of near codes (distances 0..=8 from a centre, duplicates included) among random
/// codes, and queries: stored codes, near codes and random codes.
fn clustered(rng: &mut Rng, bits: usize, n: usize, nq: usize) -> (SignatureMatrix, Vec<u64>) {
    let mut rows = Vec::new();
    while rows.len() < n {
        let c = random_code(rng, bits);
        for _ in 0..rng.below(5) {
            let d = rng.below(9) as usize;
            rows.push(flip(rng, &c, bits, d));
        }
        rows.push(c);
        rows.push(random_code(rng, bits));
    }
    rows.truncate(n);
    let mut qs = Vec::new();
    for i in 0..nq {
        let q = match i % 3 {
            0 => rows[rng.below(n as u64) as usize].clone(),
            1 => {
                let d = rng.below(6) as usize;
                let row = rng.below(n as u64) as usize;
                flip(rng, &rows[row], bits, d)
            }
            _ => random_code(rng, bits),
        };
        qs.extend(q);
    }
    (matrix(bits, &rows), qs)
}

fn exact_knn(oracle: &LinearScan, qs: &[u64], k: usize) -> Vec<Vec<Hit>> {
    oracle.knn_batch(qs, k).unwrap()
}

#[test]
fn a_beam_of_at_least_n_gives_the_exact_knn() {
    let mut rng = Rng::new(1);
    for bits in [64usize, 100, 256, 1024] {
        let (data, qs) = clustered(&mut rng, bits, 300, 30);
        let oracle = LinearScan::build(&data).unwrap();
        for q in [1usize, 4] {
            let idx = PermutationIndex::builder()
                .permutations(q)
                .beam(300)
                .seed(bits as u64)
                .build(&data)
                .unwrap();
            for k in [1usize, 5, 10, 64, 303] {
                let want = exact_knn(&oracle, &qs, k);
                assert_eq!(idx.knn_batch(&qs, k).unwrap(), want, "f={bits} q={q} k={k}");
                let single: Vec<Vec<Hit>> = qs
                    .chunks_exact(words_for(bits))
                    .map(|x| idx.knn(x, k).unwrap())
                    .collect();
                assert_eq!(single, want, "f={bits} q={q} k={k}: single queries");
            }
        }
    }
}

/// Per-query probability that permutation search misses a planted code at distance `d`
/// among `n` other uniformly random `f`-bit codes, with `q` permutations and beam `b`.
///
/// In one permutation, if the query and the planted code share a permuted prefix of length
/// `l` (probability `h(l) = C(f−d, l)/C(f, l)`), every code sorted between them shares that
/// prefix too; if fewer than `b` of the other codes carry it, the planted code is inside the
/// window. The other codes are independent of the permutations and the query, so the number
/// carrying a given prefix is Binomial(n, 2^−l). A miss therefore needs either no
/// permutation with a shared prefix of length `l`, or one permutation with at least `b`
/// codes on the prefix (union bound):
/// `P(miss) ≤ (1 − h(l))^q + q · P(Bin(n, 2^−l) ≥ b)`, minimised over `l`; the binomial tail
/// is bounded by Chernoff, `P(X ≥ b) ≤ e^−μ (eμ/b)^b` for `b > μ`.
fn miss_bound(f: usize, d: usize, n: usize, q: usize, b: usize) -> f64 {
    let mut best = 1.0f64;
    let mut h = 1.0f64;
    for l in 1..=64.min(f - d) {
        h *= (f - d - (l - 1)) as f64 / (f - (l - 1)) as f64;
        let mu = n as f64 / 2f64.powi(l as i32);
        let tail = if (b as f64) > mu {
            (-mu + b as f64 * (std::f64::consts::E * mu / b as f64).ln()).exp()
        } else {
            1.0
        };
        best = best.min((1.0 - h).powi(q as i32) + q as f64 * tail);
    }
    best
}

#[test]
fn planted_neighbours_at_distance_f_over_8_are_found_with_recall_above_0_99() {
    // Q queries, each with one code planted at distance exactly f/8 (the hardest case of
    // "<= f/8": the bound below decreases with d) among n - Q uniformly random codes.
    // With (q, B) = (32, 64) the bound gives P(miss) < 1e-4 per query, so the expected
    // number of misses is below 0.03 and, by Markov's inequality, more than 1% misses
    // (recall < 0.99) has probability below 0.03 / 4 < 1% for any seed.
    const Q: usize = 300;
    let (q, b) = (32usize, 64usize);
    for (f, n) in [(256usize, 20_000usize), (1024, 20_000), (4096, 8_000)] {
        let d = f / 8;
        let p_miss = miss_bound(f, d, n, q, b);
        assert!(p_miss < 1e-4, "f={f}: bound {p_miss}");
        let mut rng = Rng::new(f as u64);
        let queries: Vec<Vec<u64>> = (0..Q).map(|_| random_code(&mut rng, f)).collect();
        let mut rows: Vec<Vec<u64>> = (0..n - Q).map(|_| random_code(&mut rng, f)).collect();
        let first_planted = rows.len();
        for qc in &queries {
            rows.push(flip(&mut rng, qc, f, d));
        }
        let data = matrix(f, &rows);
        let qs = queries.concat();
        let oracle = LinearScan::build(&data).unwrap();
        let exact = exact_knn(&oracle, &qs, 1);
        for (j, e) in exact.iter().enumerate() {
            let want = Hit {
                distance: d as u32,
                id: (first_planted + j) as u32,
            };
            assert_eq!(e, &vec![want], "f={f}: the planted code is the nearest");
        }
        let idx = PermutationIndex::builder()
            .permutations(q)
            .beam(b)
            .seed(7)
            .build(&data)
            .unwrap();
        let got = idx.knn_batch(&qs, 1).unwrap();
        let recall = recall_at_k(&got, &exact);
        assert!(recall >= 0.99, "f={f}: recall {recall}");
        // The same search with one permutation and a beam of 1 misses most of them: the
        // test can fail.
        let weak = PermutationIndex::builder()
            .permutations(1)
            .beam(1)
            .seed(7)
            .build(&data)
            .unwrap();
        let weak_recall = recall_at_k(&weak.knn_batch(&qs, 1).unwrap(), &exact);
        assert!(weak_recall < 0.5, "f={f}: weak recall {weak_recall}");
    }
}

/// Q queries with 10 planted neighbours each at distances uniform in [f/16, f/4].
fn planted10(rng: &mut Rng, f: usize, n: usize, nq: usize) -> (SignatureMatrix, Vec<u64>) {
    let queries: Vec<Vec<u64>> = (0..nq).map(|_| random_code(rng, f)).collect();
    let mut rows: Vec<Vec<u64>> = (0..n - 10 * nq).map(|_| random_code(rng, f)).collect();
    for qc in &queries {
        for _ in 0..10 {
            let d = f / 16 + rng.below((f / 4 - f / 16 + 1) as u64) as usize;
            rows.push(flip(rng, qc, f, d));
        }
    }
    (matrix(f, &rows), queries.concat())
}

#[test]
fn recall_never_drops_as_permutations_or_beam_grow() {
    // With one seed, the permutations for q are the first q of those for any larger q, and
    // a wider beam reads a superset of the window: the candidate sets are nested, so recall
    // is non-decreasing exactly, not only in expectation.
    let f = 256;
    let mut rng = Rng::new(11);
    let (data, qs) = planted10(&mut rng, f, 10_000, 200);
    let exact = exact_knn(&LinearScan::build(&data).unwrap(), &qs, 10);
    let mut by_q = Vec::new();
    for q in [1usize, 2, 4, 8, 16, 32] {
        let idx = PermutationIndex::builder()
            .permutations(q)
            .beam(8)
            .seed(3)
            .build(&data)
            .unwrap();
        by_q.push(recall_at_k(&idx.knn_batch(&qs, 10).unwrap(), &exact));
    }
    assert!(by_q.windows(2).all(|p| p[0] <= p[1]), "{by_q:?}");
    assert!(by_q[0] < 0.6 && by_q[5] > by_q[0] + 0.3, "{by_q:?}");
    let mut idx = PermutationIndex::builder()
        .permutations(4)
        .beam(1)
        .seed(3)
        .build(&data)
        .unwrap();
    let mut by_b = Vec::new();
    for b in [1usize, 4, 16, 64, 256] {
        idx.set_beam(b).unwrap();
        by_b.push(recall_at_k(&idx.knn_batch(&qs, 10).unwrap(), &exact));
    }
    assert!(by_b.windows(2).all(|p| p[0] <= p[1]), "{by_b:?}");
    assert!(by_b[0] < 0.6 && by_b[4] > by_b[0] + 0.3, "{by_b:?}");
}

/// perms, codes, ids, keys, order.
type Arrays = (Vec<u32>, Vec<u64>, Vec<u32>, Vec<u64>, Vec<u32>);

fn arrays(idx: &PermutationIndex) -> Arrays {
    (
        idx.perms().to_vec(),
        idx.codes().to_vec(),
        idx.ids().to_vec(),
        idx.keys().to_vec(),
        idx.order().to_vec(),
    )
}

#[test]
fn a_seed_fixes_the_index_and_results_for_any_thread_count() {
    let mut rng = Rng::new(5);
    let (data, qs) = clustered(&mut rng, 300, 3000, 90);
    let run = |threads: usize, seed: u64| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let idx = PermutationIndex::builder()
                .permutations(6)
                .beam(4)
                .seed(seed)
                .build(&data)
                .unwrap();
            let knn = idx.knn_batch(&qs, 10).unwrap();
            let radius = idx.radius_batch(&qs, 120).unwrap();
            (arrays(&idx), knn, radius)
        })
    };
    let one = run(1, 42);
    let (n, (_, _, _, keys, order)) = (data.len(), &one.0);
    for (kt, ot) in keys.chunks_exact(n).zip(order.chunks_exact(n)) {
        assert!(kt.windows(2).all(|p| p[0] <= p[1]), "keys sorted");
        let mut o = ot.to_vec();
        o.sort_unstable();
        assert!(
            o.iter().enumerate().all(|(i, &s)| s as usize == i),
            "a permutation"
        );
    }
    assert_eq!(run(2, 42), one);
    assert_eq!(run(3, 42), one);
    let other = run(2, 43);
    assert_ne!(other.0.0, one.0.0, "another seed, other permutations");
    assert_ne!(other.0.3, one.0.3, "another seed, other keys");
    // Permutations are uniform and independent: two of them agree on a position with
    // probability 1/300; over 6 × 300 positions, 6 expected (Poisson: > 25 has p < 1e-8).
    let same = one
        .0
        .0
        .iter()
        .zip(&other.0.0)
        .filter(|(a, b)| a == b)
        .count();
    assert!(same <= 25, "{same} positions agree");
}

#[test]
fn memory_is_codes_ids_and_twelve_bytes_per_code_and_permutation() {
    let mut rng = Rng::new(6);
    for (bits, q) in [(256usize, 16usize), (1000, 3)] {
        let (data, _) = clustered(&mut rng, bits, 500, 0);
        let idx = PermutationIndex::builder()
            .permutations(q)
            .build(&data)
            .unwrap();
        let w = words_for(bits);
        assert_eq!(idx.bytes(), 500 * (8 * w + 4 + 12 * q) + 4 * bits * q);
    }
}

#[test]
fn bad_parameters_are_errors() {
    let data = SignatureMatrix::zeros(3, 64).unwrap();
    assert!(
        PermutationIndex::builder()
            .permutations(0)
            .build(&data)
            .is_err()
    );
    assert!(PermutationIndex::builder().beam(0).build(&data).is_err());
    assert!(PermutationIndex::builder().empty(0).is_err());
    let mut idx = PermutationIndex::build(&data).unwrap();
    assert!(idx.set_beam(0).is_err());
    assert_eq!(idx.beam(), 32);
    assert_eq!(idx.permutations(), 16);
    assert!(idx.knn(&[0, 0], 3).is_err());
    assert!(idx.knn_batch(&[0, 0, 0], 3).is_ok());
    assert_eq!(idx.knn(&[0], 0).unwrap(), vec![]);
}

/// One update: insert `(id, code)` or remove `id`.
#[derive(Clone, Debug)]
enum Op {
    Insert(u32, u64),
    Remove(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u32..400, any::<u64>()).prop_map(|(i, s)| Op::Insert(i, s)),
        2 => (0u32..400).prop_map(Op::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Random inserts and removals (delta, tombstones, automatic merges with a narrow beam)
    /// against the oracle: radius always exact; k-NN exact once the beam covers everything;
    /// a compacted index equals a fresh build of the same codes.
    #[test]
    fn updates_against_the_oracle(
        seed in any::<u64>(),
        bits in prop_oneof![Just(64usize), Just(130), Just(256)],
        ops in prop::collection::vec(op(), 1..500),
    ) {
        let mut rng = Rng::new(seed);
        let (data, qs) = clustered(&mut rng, bits, 150, 12);
        let b = PermutationIndex::builder().permutations(3).beam(1).seed(seed);
        let mut idx = b.build(&data).unwrap();
        let mut oracle = LinearScan::build(&data).unwrap();
        for op in &ops {
            match *op {
                Op::Insert(id, s) => {
                    let base = data.row(s as usize % data.len()).to_vec();
                    let mut r = Rng::new(s);
                    let code = flip(&mut r, &base, bits, (s % 4) as usize);
                    let want = oracle.insert(id, &code).is_ok();
                    prop_assert_eq!(idx.insert(id, &code).is_ok(), want);
                }
                Op::Remove(id) => {
                    prop_assert_eq!(idx.remove(id).unwrap(), oracle.remove(id).unwrap());
                }
            }
            prop_assert_eq!(idx.len(), oracle.len());
        }
        for r in [0u32, 3, 40] {
            prop_assert_eq!(idx.radius_batch(&qs, r).unwrap(), oracle.radius_batch(&qs, r).unwrap());
        }
        let mut full = idx.clone();
        full.set_beam(usize::MAX).unwrap();
        for k in [1usize, 7, 500] {
            prop_assert_eq!(full.knn_batch(&qs, k).unwrap(), oracle.knn_batch(&qs, k).unwrap());
        }
        // Compaction: the same arrays as a fresh build when the ids are 0..N.
        let mut ids: Vec<u32> = oracle.ids().to_vec();
        ids.sort_unstable();
        idx.compact().unwrap();
        prop_assert!(idx.is_compact());
        let fresh = b.build(&SignatureMatrix::from_parts(bits, oracle.codes().to_vec()).unwrap()).unwrap();
        prop_assert_eq!(idx.codes(), fresh.codes());
        prop_assert_eq!(idx.keys(), fresh.keys());
        prop_assert_eq!(idx.order(), fresh.order());
        prop_assert_eq!(idx.ids(), &ids[..]);
    }
}
