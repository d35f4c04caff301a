//! Manku's permuted tables, the planner, the self-join, clusters and the k-NN graph, against
//! the paper's figures and brute-force oracles.

mod codes;
mod oracle;

use codes::{flip, random_code};
use oracle::brute_knn;
use std::collections::VecDeque;

use simlsh::index::permuted_tables::{MAX_TABLES, Plan, min_tables, plan};
use simlsh::index::{HammingIndex, Hit, LinearScan, PermutedTables};
use simlsh::join::{
    Match, Pair, clusters, join_index, knn_graph, knn_graph_rows, knn_graph_with, self_join,
    self_join_plan,
};
use simlsh::rng::Rng;
use simlsh::signature::SignatureMatrix;
use simlsh_workloads::{W3, w4};

// ------------------------------------------------------------------------------ the planner

/// Manku et al. 2007, section 3.1.2: f = 64, k = 3, d = 34 (N = 2^34).
#[test]
fn recurrence_reproduces_the_papers_designs() {
    let x = |p_min: f64| min_tables(64.0, 3, 34.0, p_min).unwrap();
    assert_eq!(x(16.0), (4, vec![4]));
    for p in [20.0, 21.0, 22.0, 23.0, 24.0, 25.0] {
        assert_eq!(x(p), (10, vec![5]), "p_min = {p}");
    }
    assert_eq!(x(28.0), (16, vec![4, 4]));
    assert_eq!(x(31.0), (20, vec![6]));
    assert_eq!(x(32.0), (20, vec![6]));
    assert_eq!(x(34.0), (35, vec![7]));
    // The number of tables never decreases with p_min, and no design beats f - k bits.
    let mut last = 0;
    for p in 1..=61 {
        let (t, _) = min_tables(64.0, 3, 34.0, f64::from(p)).unwrap_or((usize::MAX, vec![]));
        assert!(t >= last, "p_min = {p}");
        last = t;
    }
    assert_eq!(min_tables(64.0, 3, 34.0, 62.0), None);
    // Nothing to fix when d <= tau.
    assert_eq!(min_tables(64.0, 3, 10.0, 0.0), Some((1, vec![])));
}

#[test]
fn planner_reproduces_the_papers_tables_for_8b_fingerprints() {
    let n: u64 = 1 << 34;
    let bytes_of = |levels: &[usize]| Plan::for_levels(64, 3, n, levels).unwrap().bytes;
    // No memory limit: 20 tables, 6 blocks of 11, 11, 11, 11, 10, 10 bits, 3 per key.
    let p = plan(64, 3, n, u64::MAX).unwrap();
    assert_eq!((p.tables, p.levels.clone()), (20, vec![6]));
    assert_eq!((p.key_bits_min, p.key_bits_max), (31, 33));
    assert_eq!(p.max_candidates_per_probe, 8.0);
    // 4 tables of 33 bits, 12 of 32, 4 of 31: 4 * 2 + 12 * 4 + 4 * 8 = 88 <= 160.
    assert_eq!(p.candidates_per_query, 88.0);
    assert_eq!(p.candidates_per_probe, 4.4);
    // Directories of 2^24 prefixes: 5-byte keys and 4-byte ids.
    assert_eq!(p.bytes, 20 * (n * 9 + ((1 << 24) + 1) * 4) + 8);
    // Room for 16 tables: 4 blocks of 16 then 4 of 12, one of each per key: 28 bits.
    let p = plan(64, 3, n, bytes_of(&[4, 4])).unwrap();
    assert_eq!((p.tables, p.levels.clone()), (16, vec![4, 4]));
    assert_eq!((p.key_bits_min, p.key_bits_max), (28, 28));
    assert_eq!(p.max_candidates_per_probe, 64.0);
    assert_eq!(p.candidates_per_query, 1024.0);
    // Room for 10 (up to 15): 5 blocks of 13, 13, 13, 13, 12, 2 per key: 25 or 26 bits.
    for budget in [bytes_of(&[5]), bytes_of(&[5]) * 3 / 2] {
        let p = plan(64, 3, n, budget).unwrap();
        assert_eq!((p.tables, p.levels.clone()), (10, vec![5]));
        assert_eq!((p.key_bits_min, p.key_bits_max), (25, 26));
        assert_eq!(p.max_candidates_per_probe, 512.0);
        // 6 keys of 26 bits and 4 of 25: 6 * 256 + 4 * 512 <= 5,120.
        assert_eq!(p.candidates_per_query, 3584.0);
    }
    // Room for 4: 4 blocks of 16 bits, one per key.
    let p = plan(64, 3, n, bytes_of(&[4])).unwrap();
    assert_eq!((p.tables, p.levels.clone()), (4, vec![4]));
    assert_eq!(p.key_bits_min, 16);
    assert_eq!(p.max_candidates_per_probe, f64::from(1 << 18));
    assert_eq!(p.candidates_per_query, f64::from(1 << 20));
    // Not even one table fits.
    assert!(plan(64, 3, n, n * 8).is_err());
}

#[test]
fn planner_picks_four_tables_for_a_million_codes() {
    let p = plan(64, 3, 1_000_000, u64::MAX).unwrap();
    assert_eq!(
        (p.tables, p.levels.clone(), p.key_bits_min),
        (4, vec![4], 16)
    );
    // Directories of 2^16 prefixes, 6-byte keys, 4-byte ids: 41 bytes per code.
    assert_eq!(p.bytes, 4 * (1_000_000 * 10 + 65537 * 4) + 8);
    assert!((p.candidates_per_probe - 1e6 / 65536.0).abs() < 1e-9);
    // Wide codes store them once more: 4 words + a 4-byte id per code.
    let p = plan(256, 3, 1_000_000, u64::MAX).unwrap();
    assert!(p.key_bits_min == 64 && p.tables == 4, "{p:?}");
    assert_eq!(
        p.bytes,
        4 * (1_000_000 * 10 + 65537 * 4) + 8 + 36 * 1_000_000
    );
    // Radius 0: one table keyed on everything.
    let p = plan(64, 0, 1_000_000, u64::MAX).unwrap();
    assert_eq!(
        (p.tables, p.levels.clone(), p.key_bits_min),
        (1, vec![1], 64)
    );
}

#[test]
fn builder_rejects_designs_that_break_the_pigeonhole() {
    let sigs = SignatureMatrix::from_parts(64, vec![1u64, 2, 3]).unwrap();
    let b = || PermutedTables::builder().radius(3);
    assert!(b().blocks(3).build(&sigs).is_err());
    assert!(b().levels(&[5, 3]).build(&sigs).is_err());
    assert!(b().blocks(MAX_TABLES).build(&sigs).is_err());
    assert!(b().bits(128).build(&sigs).is_err());
    assert!(b().empty().is_err(), "no width");
    assert!(b().memory_budget(10).build(&sigs).is_err());
    let idx = b().blocks(6).build(&sigs).unwrap();
    assert_eq!((idx.num_tables(), idx.key_bits()[0]), (20, 33));
    let idx = b().tables(12).build(&sigs).unwrap();
    assert!(idx.num_tables() <= 12);
    let p = plan(64, 3, 3, u64::MAX).unwrap();
    let idx = PermutedTables::builder().plan(&p).build(&sigs).unwrap();
    assert_eq!(idx.levels(), &p.levels[..]);
    assert_eq!(idx.built_radius(), 3);
}

// -------------------------------------------------------------------------- the index

#[test]
fn four_tables_take_at_most_48_bytes_per_code_and_find_the_w3_truth() {
    let w = W3::generate(50_000, 2_000).unwrap();
    let sigs = SignatureMatrix::from_parts(64, w.index.clone()).unwrap();
    let idx = PermutedTables::builder()
        .radius(3)
        .blocks(4)
        .build(&sigs)
        .unwrap();
    assert_eq!(idx.num_tables(), 4);
    // Directory bits min(16, log2(50,000) - 3) = 12: 7-byte keys, 4-byte ids, 2^12 + 1
    // offsets per table, 8 bytes of padding, and a small layout.
    let bytes = idx.bytes();
    let data = 4 * (50_000 * (7 + 4) + 4097 * 4) + 8;
    assert!((data..data + 2048).contains(&bytes), "{bytes}");
    assert!(bytes <= 48 * 50_000);
    let oracle = LinearScan::build(&sigs).unwrap();
    let all = idx.radius_batch(&w.queries, 3).unwrap();
    for (j, hits) in all.iter().enumerate() {
        let (ids, dists) = w.truth(j);
        for (&id, &d) in ids.iter().zip(dists) {
            assert!(hits.contains(&Hit {
                distance: u32::from(d),
                id
            }));
        }
        assert_eq!(hits, &oracle.radius(&w.queries[j..j + 1], 3).unwrap());
    }
}

#[test]
fn many_candidates_per_probe_are_all_reported() {
    let mut rng = Rng::new(25);
    for bits in [64usize, 128, 200] {
        // 500 copies of one code and 300 near it: hundreds of candidates per probe.
        let sigs = planted(&mut rng, bits, 1500, 500);
        let same = sigs.row(0).to_vec();
        let mut m = SignatureMatrix::new(bits).unwrap();
        for row in sigs.rows() {
            m.push_words(bits, row).unwrap();
        }
        for i in 0..300 {
            let d = i % 4;
            m.push_words(bits, &flip(&mut rng, &same, bits, d)).unwrap();
        }
        let oracle = LinearScan::build(&m).unwrap();
        for levels in [vec![4], vec![5], vec![4, 4]] {
            let idx = PermutedTables::builder().levels(&levels).build(&m).unwrap();
            let near = [same.clone(), flip(&mut rng, &same, bits, 2)];
            for q in &near {
                for r in [0u32, 2, 3] {
                    let want = oracle.radius(q, r).unwrap();
                    assert!(want.len() >= 500 || r < 2);
                    assert_eq!(idx.radius(q, r).unwrap(), want, "f={bits} {levels:?} r={r}");
                }
                assert_eq!(idx.knn(q, 600).unwrap(), oracle.knn(q, 600).unwrap());
            }
            let flat: Vec<u64> = near.concat();
            let batch = idx.radius_batch(&flat, 3).unwrap();
            assert_eq!(batch[0], oracle.radius(&near[0], 3).unwrap());
            assert_eq!(batch[1], oracle.radius(&near[1], 3).unwrap());
        }
    }
}

// -------------------------------------------------------------------------- the joins

/// Random codes, clusters of near codes (0 to 7 flips, duplicates included) and one block
/// of `dups` identical codes.
fn planted(rng: &mut Rng, bits: usize, n: usize, dups: usize) -> SignatureMatrix {
    let mut m = SignatureMatrix::new(bits).unwrap();
    let same = random_code(rng, bits);
    for _ in 0..dups {
        m.push_words(bits, &same).unwrap();
    }
    while m.len() < n {
        let centre = random_code(rng, bits);
        m.push_words(bits, &centre).unwrap();
        for _ in 0..rng.below(8) {
            let d = rng.below(8) as usize;
            m.push_words(bits, &flip(rng, &centre, bits, d)).unwrap();
        }
        m.push_words(bits, &random_code(rng, bits)).unwrap();
    }
    m
}

fn brute_pairs(sigs: &SignatureMatrix, r: u32) -> Vec<Pair> {
    let mut out = Vec::new();
    for i in 0..sigs.len() {
        for j in i + 1..sigs.len() {
            let d = sigs.distance(i, j);
            if d <= r {
                out.push(Pair {
                    i: i as u32,
                    j: j as u32,
                    distance: d,
                });
            }
        }
    }
    out
}

#[test]
fn self_join_equals_brute_force() {
    let mut rng = Rng::new(21);
    for bits in [64usize, 128, 37] {
        let random = {
            let mut m = SignatureMatrix::new(bits).unwrap();
            for _ in 0..800 {
                m.push_words(bits, &random_code(&mut rng, bits)).unwrap();
            }
            m
        };
        // 300 identical codes make groups big enough for the batched path.
        for sigs in [random, planted(&mut rng, bits, 1500, 300)] {
            for r in [0u32, 1, 3, 5, 12] {
                let got = self_join(&sigs, r).unwrap();
                let want = brute_pairs(&sigs, r);
                assert_eq!(got.len(), want.len(), "f={bits} r={r}");
                assert_eq!(got, want, "f={bits} r={r}");
            }
        }
    }
    // Near f / 2 the planner compares all pairs.
    let sigs = planted(&mut rng, 64, 400, 0);
    assert_eq!(self_join(&sigs, 30).unwrap(), brute_pairs(&sigs, 30));
    let one = SignatureMatrix::from_parts(64, vec![5u64]).unwrap();
    assert!(self_join(&one, 3).unwrap().is_empty());
}

#[test]
fn self_join_plans_pigeonhole_blocks() {
    // W4: 4 blocks of 16 bits; more blocks only add grouping passes.
    let p = self_join_plan(64, 3, 1_000_000).unwrap();
    assert_eq!(
        (p.levels.clone(), p.key_bits_min, p.key_bits_max),
        (vec![4], 16, 16)
    );
    // Radius 0: one table keyed on everything; near f / 2: compare all pairs.
    assert_eq!(self_join_plan(64, 0, 1000).unwrap().levels, vec![1]);
    assert_eq!(
        self_join_plan(64, 30, 400).unwrap().levels,
        Vec::<usize>::new()
    );
    // Wide codes: keys of at most 64 bits.
    assert_eq!(self_join_plan(256, 3, 1_000_000).unwrap().key_bits_max, 64);
    assert!(self_join_plan(0, 3, 10).is_err());
}

#[test]
fn self_join_of_w4_is_its_truth() {
    let w = w4();
    let sigs = SignatureMatrix::from_parts(64, w.codes).unwrap();
    let pairs = self_join(&sigs, 3).unwrap();
    assert_eq!(pairs.len(), 90_112);
    assert!(
        pairs
            .iter()
            .zip(&w.truth_pairs)
            .all(|(p, &(i, j))| (p.i, p.j) == (i, j)
                && p.distance == sigs.distance(i as usize, j as usize)),
        "pairs differ from the truth"
    );
}

#[test]
fn join_with_an_index_equals_its_radius_searches() {
    let mut rng = Rng::new(22);
    let sigs = planted(&mut rng, 128, 1000, 5);
    let queries = planted(&mut rng, 128, 100, 2);
    let idx = PermutedTables::builder().blocks(4).build(&sigs).unwrap();
    let got = join_index(&idx, &queries, 4).unwrap();
    let oracle = LinearScan::build(&sigs).unwrap();
    let mut want = Vec::new();
    for (q, row) in queries.rows().enumerate() {
        for h in oracle.radius(row, 4).unwrap() {
            want.push(Match {
                query: q as u32,
                distance: h.distance,
                id: h.id,
            });
        }
    }
    assert_eq!(got, want);
    let narrow = SignatureMatrix::from_parts(64, vec![1u64]).unwrap();
    assert!(join_index(&idx, &narrow, 4).is_err());
}

// ---------------------------------------------------------------- clusters and k-NN graph

/// Components by breadth-first search over the brute-force graph, labelled by their
/// smallest member.
fn bfs_labels(sigs: &SignatureMatrix, r: u32) -> Vec<u32> {
    let n = sigs.len();
    let mut label = vec![u32::MAX; n];
    for s in 0..n {
        if label[s] != u32::MAX {
            continue;
        }
        label[s] = s as u32;
        let mut queue = VecDeque::from([s]);
        while let Some(u) = queue.pop_front() {
            let near: Vec<usize> = (0..n)
                .filter(|&v| label[v] == u32::MAX && sigs.distance(u, v) <= r)
                .collect();
            for v in near {
                label[v] = s as u32;
                queue.push_back(v);
            }
        }
    }
    label
}

#[test]
fn clusters_equal_breadth_first_search() {
    let mut rng = Rng::new(23);
    for (bits, r) in [(64usize, 3u32), (64, 6), (128, 8)] {
        let sigs = planted(&mut rng, bits, 700, 4);
        let pairs = self_join(&sigs, r).unwrap();
        assert_eq!(clusters(sigs.len(), &pairs).unwrap(), bfs_labels(&sigs, r));
        // The order of the pairs does not matter.
        let mut rev = pairs.clone();
        rev.reverse();
        assert_eq!(clusters(sigs.len(), &rev).unwrap(), bfs_labels(&sigs, r));
    }
    assert_eq!(clusters(3, &[]).unwrap(), vec![0, 1, 2]);
    let bad = [Pair {
        i: 0,
        j: 3,
        distance: 0,
    }];
    assert!(clusters(3, &bad).is_err());
}

#[test]
fn knn_graph_equals_brute_force() {
    let mut rng = Rng::new(24);
    for bits in [64usize, 100] {
        // 20 identical codes: ties at distance 0 broken by id, with the point itself among them.
        let sigs = planted(&mut rng, bits, 400, 20);
        let tables = PermutedTables::builder()
            .radius(3)
            .blocks(4)
            .build(&sigs)
            .unwrap();
        for k in [0usize, 1, 5, 25, 500] {
            let want: Vec<Vec<Hit>> = (0..sigs.len()).map(|i| brute_knn(&sigs, i, k)).collect();
            assert_eq!(knn_graph(&sigs, k).unwrap(), want, "f={bits} k={k}");
            assert_eq!(
                knn_graph_with(&tables, &sigs, k).unwrap(),
                want,
                "f={bits} k={k}"
            );
            // Any split into batches of rows concatenates to the same graph.
            let mut batched = Vec::new();
            for r in [0..0, 0..7, 7..150, 150..151, 151..sigs.len()] {
                batched.extend(knn_graph_rows(&tables, &sigs, r, k).unwrap());
            }
            assert_eq!(batched, want, "f={bits} k={k} in batches");
        }
    }
    let sigs = planted(&mut rng, 64, 50, 0);
    let other = LinearScan::build(&sigs.slice_rows(0..40)).unwrap();
    assert!(knn_graph_with(&other, &sigs, 3).is_err());
    let all = LinearScan::build(&sigs).unwrap();
    let n = sigs.len();
    assert!(knn_graph_rows(&all, &sigs, 40..n + 1, 3).is_err());
    assert!(knn_graph_rows(&all, &sigs, n..n, 3).unwrap().is_empty());
}
