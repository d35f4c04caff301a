//! The graph index against brute force: recall on clustered codes (tie-aware, fixed seeds),
//! exact matches on duplicate-heavy codes, XOR invariance, the same arrays for any thread
//! count, recall after removals and inserts, the scan fallback on weak neighbours, files;
//! and a property test that every answer is consistent and exact where promised.

mod codes;

use std::collections::HashMap;

use codes::{flip, random_code};
use proptest::prelude::*;
use simlsh::index::graph::Mode;
use simlsh::index::{GraphIndex, HammingIndex, Hit, IndexSpec, LinearScan, recall_at_k};
use simlsh::rng::Rng;
use simlsh::signature::SignatureMatrix;

/// `n` codes in clusters: `n / 25` random centres, each code a centre with up to `spread`
/// bits flipped (so near codes have near neighbours, as signatures of real embeddings do).
fn clustered(rng: &mut Rng, bits: usize, n: usize, spread: u64) -> SignatureMatrix {
    let centres: Vec<Vec<u64>> = (0..n.div_ceil(25).max(1))
        .map(|_| random_code(rng, bits))
        .collect();
    let mut m = SignatureMatrix::new(bits).unwrap();
    for _ in 0..n {
        let c = &centres[rng.below(centres.len() as u64) as usize];
        let d = rng.below(spread + 1) as usize;
        m.push_words(bits, &flip(rng, c, bits, d)).unwrap();
    }
    m
}

fn graph(spec: &str, data: &SignatureMatrix) -> Box<dyn HammingIndex> {
    spec.parse::<IndexSpec>().unwrap().build(data).unwrap()
}

fn knn_all(idx: &dyn HammingIndex, qs: &SignatureMatrix, k: usize) -> Vec<Vec<Hit>> {
    idx.knn_batch(qs.as_slice(), k).unwrap()
}

/// Plain recall: the fraction of the exact ids returned.
fn plain_recall(approx: &[Vec<Hit>], exact: &[Vec<Hit>]) -> f64 {
    let (mut found, mut total) = (0, 0);
    for (a, e) in approx.iter().zip(exact) {
        total += e.len();
        found += a.iter().filter(|h| e.iter().any(|x| x.id == h.id)).count();
    }
    found as f64 / total.max(1) as f64
}

/// Every hit of `hits` is a stored code at the stated distance, sorted, without repeats,
/// `min(k, len)` of them.
fn consistent(hits: &[Hit], q: &[u64], stored: &HashMap<u32, Vec<u64>>, k: usize) {
    assert_eq!(hits.len(), k.min(stored.len()), "length");
    assert!(hits.windows(2).all(|p| p[0] < p[1]), "sorted, no repeats");
    for h in hits {
        let code = stored.get(&h.id).expect("a stored id");
        assert_eq!(
            simlsh::hamming::distance(q, code).unwrap(),
            h.distance,
            "distance"
        );
    }
}

#[test]
fn recall_on_clustered_codes_against_brute_force() {
    let mut rng = Rng::new(11);
    let bits = 256;
    let all = clustered(&mut rng, bits, 6000, 60);
    let data =
        SignatureMatrix::from_parts(bits, all.slice_rows(0..5800).as_slice().to_vec()).unwrap();
    let qs =
        SignatureMatrix::from_parts(bits, all.slice_rows(5800..6000).as_slice().to_vec()).unwrap();
    let oracle = LinearScan::build(&data).unwrap();
    let exact = knn_all(&oracle, &qs, 10);
    let idx = GraphIndex::builder().fallback(false).build(&data).unwrap();
    assert_eq!(idx.mode(), Mode::Graph);
    let got = knn_all(&idx, &qs, 10);
    let (tie, plain) = (recall_at_k(&got, &exact), plain_recall(&got, &exact));
    eprintln!(
        "clustered: tie-aware {tie}, plain {plain}, {}",
        idx.check().describe()
    );
    // Measured with these seeds: tie-aware and plain 0.9985 at the default beam.
    assert!(
        tie >= 0.98 && plain >= 0.97,
        "tie-aware {tie}, plain {plain}"
    );
    // A wider beam never finds fewer here, and a beam of the whole set is exact.
    let wide = idx.knn_batch_with(qs.as_slice(), 10, 400).unwrap();
    assert!(recall_at_k(&wide, &exact) >= tie);
    let full = idx.knn_batch_with(qs.as_slice(), 10, data.len()).unwrap();
    assert_eq!(recall_at_k(&full, &exact), 1.0);
    // A narrow beam on a thin graph finds fewer, but every answer stays consistent.
    let thin = graph("graph:m=4,ef=10,efc=10,fallback=false", &data);
    let thin_got = knn_all(thin.as_ref(), &qs, 10);
    let stored: HashMap<u32, Vec<u64>> = (0..data.len())
        .map(|i| (i as u32, data.row(i).to_vec()))
        .collect();
    for (q, hits) in qs.rows().zip(&thin_got) {
        consistent(hits, q, &stored, 10);
    }
    assert!(recall_at_k(&thin_got, &exact) < tie);
}

#[test]
fn exact_matches_are_always_found_on_duplicate_heavy_codes() {
    let mut rng = Rng::new(12);
    for bits in [64usize, 256] {
        let distinct: Vec<Vec<u64>> = (0..30).map(|_| random_code(&mut rng, bits)).collect();
        let mut data = SignatureMatrix::new(bits).unwrap();
        // 30 codes stored 50 times each, interleaved with near and random codes.
        for i in 0..3000 {
            let c = match i % 2 {
                0 => distinct[(i / 2) % 30].clone(),
                _ if i % 3 == 0 => random_code(&mut rng, bits),
                _ => {
                    let (c, d) = (rng.below(30) as usize, 1 + rng.below(4) as usize);
                    flip(&mut rng, &distinct[c], bits, d)
                }
            };
            data.push_words(bits, &c).unwrap();
        }
        let oracle = LinearScan::build(&data).unwrap();
        for spec in ["graph", "graph:m=4,ef=2,efc=4,fallback=false"] {
            let mut idx = graph(spec, &data);
            let mut oracle = oracle.clone();
            for round in 0..2 {
                for code in &distinct {
                    let zero: Vec<Hit> = oracle.radius(code, 0).unwrap();
                    let got = idx.knn(code, 60).unwrap();
                    let got_zero: Vec<Hit> =
                        got.iter().copied().filter(|h| h.distance == 0).collect();
                    assert_eq!(
                        got_zero, zero,
                        "{spec} f={bits} round {round}: every copy at distance 0"
                    );
                    assert_eq!(idx.knn(code, 1).unwrap()[0].distance, 0, "{spec}: nearest");
                }
                // Every stored code finds itself (or a copy) at distance 0.
                for i in (0..data.len()).step_by(7) {
                    if oracle.ids().binary_search(&(i as u32)).is_ok() {
                        assert_eq!(
                            idx.knn(data.row(i), 1).unwrap()[0].distance,
                            0,
                            "{spec} row {i}"
                        );
                    }
                }
                // Remove a third of the copies and more of the rest, insert new copies.
                let gone: Vec<u32> = (0..3000u32).filter(|i| i % 6 == 0 || i % 5 == 1).collect();
                assert_eq!(
                    idx.remove_batch(&gone).unwrap(),
                    oracle.remove_batch(&gone).unwrap()
                );
                let ids: Vec<u32> = (0..200u32).map(|i| 10_000 + 200 * round + i).collect();
                let new: Vec<u64> = ids
                    .iter()
                    .flat_map(|&i| distinct[(i % 30) as usize].clone())
                    .collect();
                idx.insert_batch(&ids, &new).unwrap();
                oracle.insert_batch(&ids, &new).unwrap();
                idx.validate().unwrap();
            }
        }
    }
}

#[test]
fn answers_do_not_change_under_xor_of_codes_and_queries() {
    let mut rng = Rng::new(13);
    let bits = 128;
    let data = clustered(&mut rng, bits, 3000, 30);
    let qs = clustered(&mut rng, bits, 100, 30);
    let mask = random_code(&mut rng, bits);
    let xor = |m: &SignatureMatrix| {
        let words: Vec<u64> = m
            .rows()
            .flat_map(|r| r.iter().zip(&mask).map(|(a, b)| a ^ b).collect::<Vec<_>>())
            .collect();
        SignatureMatrix::from_parts(bits, words).unwrap()
    };
    for spec in [
        "graph:fallback=false",
        "graph:m=8,ef=16,efc=16,fallback=false",
    ] {
        let mut a = graph(spec, &data);
        let mut b = graph(spec, &xor(&data));
        for step in 0..2 {
            for k in [1, 10, 50] {
                assert_eq!(
                    knn_all(a.as_ref(), &qs, k),
                    knn_all(b.as_ref(), &xor(&qs), k),
                    "{spec} k={k} step {step}"
                );
            }
            let gone: Vec<u32> = (0..3000).step_by(9).collect();
            a.remove_batch(&gone).unwrap();
            b.remove_batch(&gone).unwrap();
        }
    }
}

#[test]
fn the_build_does_not_depend_on_the_thread_count() {
    let mut rng = Rng::new(14);
    let data = clustered(&mut rng, 192, 4000, 40);
    let dir = std::env::temp_dir().join(format!("simlsh-graph-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for threads in [1usize, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let idx = pool.install(|| {
            let mut idx = GraphIndex::builder().m(12).build(&data).unwrap();
            // Updates are batched the same way.
            let gone: Vec<u32> = (0..4000).step_by(11).collect();
            idx.remove_batch(&gone).unwrap();
            let ids: Vec<u32> = (5000..5300).collect();
            let more = clustered(&mut Rng::new(15), 192, 300, 40);
            idx.insert_batch(&ids, more.as_slice()).unwrap();
            idx
        });
        let path = dir.join(format!("t{threads}.simlsh"));
        simlsh::persist::save_index(&idx, &path).unwrap();
        files.push(std::fs::read(&path).unwrap());
    }
    assert!(files.windows(2).all(|p| p[0] == p[1]), "identical files");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn recall_holds_after_removals_and_inserts() {
    let mut rng = Rng::new(16);
    let bits = 256;
    let all = clustered(&mut rng, bits, 6600, 60);
    let first =
        SignatureMatrix::from_parts(bits, all.slice_rows(0..6000).as_slice().to_vec()).unwrap();
    let mut idx = GraphIndex::builder().fallback(false).build(&first).unwrap();
    let mut oracle = LinearScan::build(&first).unwrap();
    // 10% removed, 10% inserted.
    let gone: Vec<u32> = (0..6000).filter(|i| i % 10 == 3).collect();
    assert_eq!(idx.remove_batch(&gone).unwrap(), 600);
    oracle.remove_batch(&gone).unwrap();
    let ids: Vec<u32> = (6000..6600).collect();
    let new = all.slice_rows(6000..6600);
    idx.insert_batch(&ids, new.as_slice()).unwrap();
    oracle.insert_batch(&ids, new.as_slice()).unwrap();
    idx.validate().unwrap();
    let queries = clustered(&mut Rng::new(16), bits, 6800, 60)
        .slice_rows(6600..6800)
        .as_slice()
        .to_vec();
    let qs = SignatureMatrix::from_parts(bits, queries).unwrap();
    let exact = knn_all(&oracle, &qs, 10);
    let got = knn_all(&idx, &qs, 10);
    let tie = recall_at_k(&got, &exact);
    eprintln!("after updates: tie-aware {tie}");
    // Measured with these seeds: 0.995.
    assert!(tie >= 0.98, "tie-aware recall {tie}");
    for hits in &got {
        assert!(
            hits.iter().all(|h| h.id % 10 != 3 || h.id >= 6000),
            "a removed id returned"
        );
    }
    // Radius search stays exact.
    for q in qs.rows().take(20) {
        assert_eq!(idx.radius(q, 80).unwrap(), oracle.radius(q, 80).unwrap());
    }
}

#[test]
fn weak_neighbours_fall_back_to_the_scan() {
    let mut rng = Rng::new(17);
    let bits = 256;
    // Random codes: every code is about as far as any other.
    let mut data = SignatureMatrix::new(bits).unwrap();
    for _ in 0..5000 {
        data.push_words(bits, &random_code(&mut rng, bits)).unwrap();
    }
    let idx = GraphIndex::build(&data).unwrap();
    assert_eq!(idx.mode(), Mode::Scan, "{}", idx.check().describe());
    assert!(idx.check().describe().starts_with("scan"));
    let oracle = LinearScan::build(&data).unwrap();
    let qs: Vec<Vec<u64>> = (0..30).map(|_| random_code(&mut rng, bits)).collect();
    for q in &qs {
        let got: Vec<u32> = idx.knn(q, 10).unwrap().iter().map(|h| h.distance).collect();
        let want: Vec<u32> = oracle
            .knn(q, 10)
            .unwrap()
            .iter()
            .map(|h| h.distance)
            .collect();
        assert_eq!(got, want, "the scan's distances");
    }
    // A batch (several passes of queries over the codes, in parallel) answers as the
    // queries one by one, with duplicate codes stored under several ids.
    let mut dup = data.clone();
    for i in (0..5000).step_by(7) {
        dup.push_words(bits, data.row(i)).unwrap();
    }
    let idx = GraphIndex::build(&dup).unwrap();
    assert_eq!(idx.mode(), Mode::Scan);
    let mut flat: Vec<u64> = qs.iter().flatten().copied().collect();
    for i in (0..5000).step_by(41) {
        flat.extend_from_slice(data.row(i));
    }
    let words = bits / 64;
    for k in [1, 10, 200] {
        let batch = idx.knn_batch(&flat, k).unwrap();
        assert_eq!(batch.len(), flat.len() / words);
        for (q, got) in flat.chunks_exact(words).zip(&batch) {
            assert_eq!(
                got,
                &idx.knn(q, k).unwrap(),
                "batch against one query, k = {k}"
            );
        }
    }
    // Forced to the graph, the same data gives lower recall (what the check measured).
    let forced = GraphIndex::builder().fallback(false).build(&data).unwrap();
    assert_eq!(forced.mode(), Mode::Graph);
    let c = forced.check();
    eprintln!("random codes, forced: {}", c.describe());
    assert!(
        c.recall < simlsh::index::graph::MIN_RECALL
            || c.distances * simlsh::index::graph::COST_RATIO >= c.nodes as f64,
        "{}",
        c.describe()
    );
    // On a set this small no graph search costs less than the scan, whatever the data; on
    // 30,000 clustered codes the graph is kept.
    let near = clustered(&mut rng, 128, 5000, 20);
    assert_eq!(GraphIndex::build(&near).unwrap().mode(), Mode::Scan);
    let near = clustered(&mut rng, 128, 30_000, 20);
    let idx = GraphIndex::build(&near).unwrap();
    eprintln!("30,000 clustered: {}", idx.check().describe());
    assert_eq!(idx.mode(), Mode::Graph, "{}", idx.check().describe());
}

#[test]
fn the_scan_fallback_answers_exactly_as_the_linear_scan() {
    // 64-bit random codes: distances of 32 ± 4, so many codes tie at the k-th distance, and
    // the answer depends on the tie-break (the smaller id); every ninth code stored twice.
    let mut rng = Rng::new(23);
    let bits = 64;
    let mut data = SignatureMatrix::new(bits).unwrap();
    for _ in 0..4000 {
        data.push_words(bits, &random_code(&mut rng, bits)).unwrap();
    }
    for i in (0..4000).step_by(9) {
        let row = data.row(i).to_vec();
        data.push_words(bits, &row).unwrap();
    }
    let mut qs = SignatureMatrix::new(bits).unwrap();
    for _ in 0..60 {
        qs.push_words(bits, &random_code(&mut rng, bits)).unwrap();
    }
    for i in (0..4000).step_by(201) {
        qs.push_words(bits, data.row(i)).unwrap();
    }
    let mut idx = GraphIndex::build(&data).unwrap();
    assert_eq!(idx.mode(), Mode::Scan, "{}", idx.check().describe());
    let mut oracle = LinearScan::build(&data).unwrap();
    let same = |idx: &GraphIndex, oracle: &LinearScan, what: &str| {
        let mut tied = 0;
        for k in [1, 10, 100] {
            let want = knn_all(oracle, &qs, k);
            assert_eq!(knn_all(idx, &qs, k), want, "{what}: a batch, k = {k}");
            for (q, w) in qs.rows().zip(&want) {
                assert_eq!(&idx.knn(q, k).unwrap(), w, "{what}: one query, k = {k}");
                // The k-th distance is shared with a code left out: the tie-break decided.
                let more = oracle.knn(q, k + 1).unwrap();
                tied += usize::from(more.len() > k && more[k].distance == more[k - 1].distance);
            }
        }
        assert!(tied > 50, "{what}: only {tied} answers decided by a tie");
    };
    same(&idx, &oracle, "the build");
    // Removals move the last nodes into the freed slots, and inserts add nodes (smaller ids
    // among them, and codes already stored): the answers stay the scan's.
    let gone: Vec<u32> = (0..4444).step_by(13).collect();
    assert_eq!(idx.remove_batch(&gone).unwrap(), gone.len());
    assert_eq!(oracle.remove_batch(&gone).unwrap(), gone.len());
    same(&idx, &oracle, "after removals");
    let mut ids: Vec<u32> = gone.iter().step_by(2).copied().collect();
    ids.extend(5000..5300);
    let mut codes = Vec::new();
    for (j, _) in ids.iter().enumerate() {
        if j % 5 == 0 {
            codes.extend_from_slice(data.row(j * 7));
        } else {
            codes.extend(random_code(&mut rng, bits));
        }
    }
    idx.insert_batch(&ids, &codes).unwrap();
    oracle.insert_batch(&ids, &codes).unwrap();
    assert_eq!(idx.mode(), Mode::Scan, "{}", idx.check().describe());
    same(&idx, &oracle, "after inserts");
}

#[test]
fn a_saved_graph_answers_the_same() {
    let mut rng = Rng::new(18);
    let bits = 130;
    let data = clustered(&mut rng, bits, 3000, 20);
    let qs = clustered(&mut rng, bits, 50, 20);
    let mut idx = GraphIndex::builder()
        .m(16)
        .ef(40)
        .seed(5)
        .build(&data)
        .unwrap();
    idx.remove_batch(&[3, 4, 5, 2999]).unwrap();
    let dir = std::env::temp_dir().join(format!("simlsh-graph-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("g.simlsh");
    simlsh::persist::save_index(&idx, &path).unwrap();
    simlsh::persist::verify_index(&path).unwrap();
    let loaded = simlsh::persist::load_index(&path).unwrap();
    let loaded = loaded.as_graph().unwrap();
    assert_eq!(loaded.spec(), idx.spec());
    assert_eq!(loaded.spec().to_string(), "graph:m=16,ef=40,seed=5");
    assert_eq!(loaded.check(), idx.check());
    assert_eq!(knn_all(loaded, &qs, 10), knn_all(&idx, &qs, 10));
    let any = simlsh::persist::load_index(&path).unwrap();
    assert_eq!(any.kind(), "graph");
    assert_eq!(knn_all(any.as_ref(), &qs, 7), knn_all(&idx, &qs, 7));
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Whatever the codes (duplicates, near, random), every k-NN answer is consistent:
    /// `min(k, len)` stored ids at their true distances, sorted; a stored copy of the query
    /// is always found, with all its ids when k allows; radius search is exact. Through
    /// inserts and removals too.
    #[test]
    fn answers_are_consistent_and_exact_where_promised(
        seed in any::<u64>(),
        n in 1usize..400,
        bits in prop_oneof![Just(8usize), Just(64), Just(100), Just(256)],
        m in 2usize..12,
        ef in 1usize..24,
    ) {
        let mut rng = Rng::new(seed);
        let spread = (bits / 8) as u64;
        let mut data = clustered(&mut rng, bits, n, spread);
        for i in 0..n / 5 {
            let row = data.row(i * 3 % n).to_vec();
            data.push_words(bits, &row).unwrap();
        }
        let spec = format!("graph:m={m},ef={ef},efc={},fallback=false", ef + 2);
        let mut idx = graph(&spec, &data);
        let mut oracle = LinearScan::build(&data).unwrap();
        let mut stored: HashMap<u32, Vec<u64>> =
            (0..data.len()).map(|i| (i as u32, data.row(i).to_vec())).collect();
        for step in 0..2 {
            let ids: Vec<u32> = stored.keys().copied().collect();
            for (j, &id) in ids.iter().enumerate().take(12) {
                let q = stored[&id].clone();
                let q = if j % 3 == 2 { flip(&mut rng, &q, bits, 2) } else { q };
                for k in [1usize, 5, 30] {
                    let hits = idx.knn(&q, k).unwrap();
                    consistent(&hits, &q, &stored, k);
                    let zero = oracle.radius(&q, 0).unwrap();
                    if !zero.is_empty() {
                        prop_assert_eq!(hits[0].distance, 0);
                        if zero.len() <= k {
                            prop_assert_eq!(&hits[..zero.len()], &zero[..]);
                        }
                    }
                }
                prop_assert_eq!(idx.radius(&q, 3).unwrap(), oracle.radius(&q, 3).unwrap());
            }
            // Remove a quarter, insert some copies and new codes.
            let gone: Vec<u32> = ids.iter().copied().filter(|id| id % 4 == step).collect();
            prop_assert_eq!(idx.remove_batch(&gone).unwrap(), gone.len());
            oracle.remove_batch(&gone).unwrap();
            for id in &gone {
                stored.remove(id);
            }
            let base = 100_000 * (step + 1);
            let new_ids: Vec<u32> = (0..(n as u32 / 4)).map(|i| base + i).collect();
            let mut codes = Vec::new();
            for (j, &id) in new_ids.iter().enumerate() {
                let c = match stored.values().nth(j % stored.len().max(1)) {
                    Some(c) if j % 2 == 0 => c.clone(),
                    _ => random_code(&mut rng, bits),
                };
                codes.extend_from_slice(&c);
                stored.insert(id, c);
            }
            idx.insert_batch(&new_ids, &codes).unwrap();
            oracle.insert_batch(&new_ids, &codes).unwrap();
            idx.validate().unwrap();
            prop_assert_eq!(idx.len(), oracle.len());

        }
    }
}
