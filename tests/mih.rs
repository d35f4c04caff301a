//! Multi-index hashing against the linear-scan oracle: planted data at f = 64, 128, 256 and
//! radii 0..=30, k-NN with ties, wide (sparse) substrings, dynamic updates, batch vs single
//! queries under different thread counts, and the automatic substring count.

mod codes;

use codes::{flip, random_code};

use proptest::prelude::*;
use simlsh::index::{HammingIndex, Hit, LinearScan, MultiIndex, auto_substrings};
use simlsh::rng::Rng;
use simlsh::signature::{SignatureMatrix, last_word_mask, words_for};
use simlsh_workloads::W5;

/// Clusters around random centres with members at distances 0..=30 (so every radius up to
/// 30 has answers), plus random background codes. Returns the data and the centres.
fn planted(rng: &mut Rng, bits: usize, n: usize) -> (SignatureMatrix, Vec<Vec<u64>>) {
    let mut m = SignatureMatrix::new(bits).unwrap();
    let mut centres = Vec::new();
    while m.len() < n {
        if rng.below(3) == 0 {
            m.push_words(bits, &random_code(rng, bits)).unwrap();
            continue;
        }
        let centre = random_code(rng, bits);
        m.push_words(bits, &centre).unwrap();
        for _ in 0..1 + rng.below(12) {
            let d = rng.below(31) as usize;
            m.push_words(bits, &flip(rng, &centre, bits, d)).unwrap();
        }
        centres.push(centre);
    }
    let data = m.slice_rows(0..n);
    (
        SignatureMatrix::from_parts(bits, data.as_slice().to_vec()).unwrap(),
        centres,
    )
}

/// Queries near centres (0..=12 flips), stored codes, and random codes.
fn queries(rng: &mut Rng, data: &SignatureMatrix, centres: &[Vec<u64>], n: usize) -> Vec<u64> {
    let bits = data.bits();
    let mut out = Vec::new();
    for i in 0..n {
        let q = match i % 3 {
            0 => {
                let c = &centres[rng.below(centres.len() as u64) as usize];
                let d = rng.below(13) as usize;
                flip(rng, c, bits, d)
            }
            1 => data.row(rng.below(data.len() as u64) as usize).to_vec(),
            _ => random_code(rng, bits),
        };
        out.extend(q);
    }
    out
}

fn check_radius(idx: &MultiIndex, oracle: &LinearScan, qs: &[u64], radii: &[u32], what: &str) {
    let w = words_for(oracle.bits());
    for &r in radii {
        let batch = idx.radius_batch(qs, r).unwrap();
        for (q, got) in qs.chunks(w).zip(&batch) {
            let want = oracle.radius(q, r).unwrap();
            assert_eq!(got, &want, "{what}: batch radius {r}");
        }
    }
    // Single queries too, at a few radii.
    for &r in radii.iter().step_by(7) {
        for q in qs.chunks(w) {
            assert_eq!(
                idx.radius(q, r).unwrap(),
                oracle.radius(q, r).unwrap(),
                "{what}: radius {r}"
            );
        }
    }
}

fn check_knn(idx: &MultiIndex, oracle: &LinearScan, qs: &[u64], ks: &[usize], what: &str) {
    let w = words_for(oracle.bits());
    for &k in ks {
        let batch = idx.knn_batch(qs, k).unwrap();
        for (q, got) in qs.chunks(w).zip(&batch) {
            let want = oracle.knn(q, k).unwrap();
            assert_eq!(got, &want, "{what}: batch k={k}");
            assert_eq!(idx.knn(q, k).unwrap(), want, "{what}: k={k}");
        }
    }
}

#[test]
fn radius_up_to_30_matches_the_linear_scan_on_planted_data() {
    let mut rng = Rng::new(11);
    for bits in [64usize, 128, 256] {
        let (data, centres) = planted(&mut rng, bits, 3000);
        let oracle = LinearScan::build(&data).unwrap();
        let qs = queries(&mut rng, &data, &centres, 24);
        let radii: Vec<u32> = (0..=30).collect();
        let auto = MultiIndex::build(&data).unwrap();
        assert_eq!(auto.substrings(), auto_substrings(bits, 3000));
        check_radius(&auto, &oracle, &qs, &radii, &format!("auto f={bits}"));
        let probe = MultiIndex::builder().fallback(false).build(&data).unwrap();
        check_radius(&probe, &oracle, &qs, &radii, &format!("probe f={bits}"));
        // Answers beyond the width come from the scan fallback.
        check_radius(
            &auto,
            &oracle,
            &qs,
            &[bits as u32, bits as u32 + 1, u32::MAX],
            "wide",
        );
    }
}

#[test]
fn knn_matches_the_linear_scan_on_planted_data() {
    let mut rng = Rng::new(12);
    for bits in [64usize, 128, 256] {
        let (data, centres) = planted(&mut rng, bits, 3000);
        let oracle = LinearScan::build(&data).unwrap();
        let qs = queries(&mut rng, &data, &centres, 24);
        let ks = [1usize, 2, 10, 37];
        check_knn(
            &MultiIndex::build(&data).unwrap(),
            &oracle,
            &qs,
            &ks,
            "auto",
        );
        let probe = MultiIndex::builder().fallback(false).build(&data).unwrap();
        check_knn(&probe, &oracle, &qs, &ks, &format!("probe f={bits}"));
    }
}

/// Wide substrings: sparse tables (sorted keys under a prefix directory), substrings crossing
/// word boundaries, and the 64-bit extreme (one substring per word).
#[test]
fn wide_substrings_use_sparse_tables_and_stay_exact() {
    let mut rng = Rng::new(13);
    for (bits, m, max_r) in [
        (64usize, 1usize, 2u32),
        (64, 2, 5),
        (130, 3, 5),
        (128, 2, 3),
        (100, 5, 12),
    ] {
        let (data, centres) = planted(&mut rng, bits, 2000);
        let oracle = LinearScan::build(&data).unwrap();
        let qs = queries(&mut rng, &data, &centres, 18);
        let probe = MultiIndex::builder()
            .substrings(m)
            .fallback(false)
            .build(&data)
            .unwrap();
        assert_eq!(probe.substrings(), m);
        assert_eq!(probe.substring_widths().iter().sum::<usize>(), bits);
        let radii: Vec<u32> = (0..=max_r).collect();
        check_radius(&probe, &oracle, &qs, &radii, &format!("f={bits} m={m}"));
        // k-NN with the fallback on (probing 64-bit substrings to the end is hopeless).
        let idx = MultiIndex::builder().substrings(m).build(&data).unwrap();
        check_knn(&idx, &oracle, &qs, &[1, 10], &format!("f={bits} m={m}"));
        check_radius(
            &idx,
            &oracle,
            &qs,
            &[0, 3, 20, 90],
            &format!("f={bits} m={m}"),
        );
    }
}

#[test]
fn ties_at_the_kth_distance_go_to_the_smaller_id() {
    let bits = 96;
    let mut rng = Rng::new(14);
    let q = random_code(&mut rng, bits);
    // 30 codes at distance 2 and 30 at distance 5, under scattered ids inserted in random
    // order, plus a background.
    let mut idx = MultiIndex::builder()
        .delta_limit(16)
        .fallback(false)
        .empty(bits)
        .unwrap();
    let mut oracle = LinearScan::new(bits).unwrap();
    let mut ids: Vec<u32> = (0..600u32).map(|i| i * 7919 % 100_003).collect();
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (j, &id) in ids.iter().enumerate() {
        let code = match j {
            0..30 => flip(&mut rng, &q, bits, 2),
            30..60 => flip(&mut rng, &q, bits, 5),
            _ => random_code(&mut rng, bits),
        };
        idx.insert(id, &code).unwrap();
        oracle.insert(id, &code).unwrap();
    }
    for k in [1usize, 29, 30, 31, 45, 60, 61] {
        let got = idx.knn(&q, k).unwrap();
        assert_eq!(got, oracle.knn(&q, k).unwrap(), "k={k}");
        assert!(got.windows(2).all(|p| p[0] < p[1]));
    }
    // The 40th: the 10 smallest ids among the distance-5 codes.
    let mut five: Vec<u32> = ids[30..60].to_vec();
    five.sort_unstable();
    let got = idx.knn(&q, 40).unwrap();
    let tail: Vec<u32> = got[30..].iter().map(|h| h.id).collect();
    assert_eq!(tail, five[..10].to_vec());
    assert!(got[30..].iter().all(|h| h.distance == 5));
}

/// The k-NN certificate: a code at the k-th distance `D` with a smaller id, reachable only in
/// the step that certifies `D`, must still win the tie. With `m` substrings of 16 bits and
/// query 0: X (id 9) has all its `D = m` set bits in substring 1, so it is found in the very
/// first step; Y (id 2) has one bit in each substring, so it is found only at step
/// `(s, t) = (1, 0)`, the one certifying `1·m + 0 = D`. Stopping one step early returns X.
#[test]
fn knn_waits_for_the_certificate_before_breaking_a_tie() {
    for m in [2usize, 3, 4] {
        let bits = 16 * m;
        let mut x = vec![0u64; words_for(bits)];
        let mut y = x.clone();
        for b in 0..m {
            // X: bits 16..16 + m (substring 1); Y: bit 0 of every substring.
            x[(16 + b) / 64] |= 1 << ((16 + b) % 64);
            y[(16 * b) / 64] |= 1 << ((16 * b) % 64);
        }
        let mut far = vec![u64::MAX; words_for(bits)];
        far[words_for(bits) - 1] &= last_word_mask(bits);
        let mut idx = MultiIndex::builder()
            .substrings(m)
            .fallback(false)
            .empty(bits)
            .unwrap();
        idx.insert(9, &x).unwrap();
        idx.insert(2, &y).unwrap();
        idx.insert(5, &far).unwrap();
        idx.compact().unwrap();
        let q = vec![0u64; words_for(bits)];
        let d = m as u32;
        assert_eq!(
            idx.knn(&q, 1).unwrap(),
            vec![Hit { distance: d, id: 2 }],
            "m={m}"
        );
        assert_eq!(
            idx.knn(&q, 2).unwrap(),
            vec![Hit { distance: d, id: 2 }, Hit { distance: d, id: 9 }]
        );
    }
}

#[test]
fn inserts_and_removals_merge_and_compact_exactly() {
    let bits = 128;
    let mut rng = Rng::new(15);
    let (data, centres) = planted(&mut rng, bits, 2400);
    let first = data.slice_rows(0..1000);
    let mut idx = MultiIndex::builder().delta_limit(64).build(&first).unwrap();
    let mut probe = MultiIndex::builder()
        .delta_limit(64)
        .fallback(false)
        .build(&first)
        .unwrap();
    let mut oracle = LinearScan::build(&first).unwrap();
    let qs = queries(&mut rng, &data, &centres, 15);
    let mut stored: Vec<u32> = (0..1000).collect();
    let mut next_row = 1000usize;
    for round in 0..6 {
        for _ in 0..150 {
            if rng.below(3) > 0 && next_row < data.len() {
                let id = next_row as u32 * 3;
                for x in [&mut idx as &mut dyn HammingIndex, &mut probe, &mut oracle] {
                    x.insert(id, data.row(next_row)).unwrap();
                }
                stored.push(id);
                next_row += 1;
            } else if !stored.is_empty() {
                let id = stored.swap_remove(rng.below(stored.len() as u64) as usize);
                for x in [&mut idx as &mut dyn HammingIndex, &mut probe, &mut oracle] {
                    assert!(x.remove(id).unwrap());
                    assert!(!x.remove(id).unwrap());
                }
            }
        }
        assert_eq!(idx.len(), stored.len());
        assert!(
            idx.delta_len() <= 64,
            "the delta is merged beyond its limit"
        );
        assert!(idx.dead_len() <= 64.max(idx.len() / 4));
        let what = format!("round {round}");
        check_radius(&idx, &oracle, &qs, &[0, 4, 17, 30], &what);
        check_radius(&probe, &oracle, &qs, &[0, 4, 17, 30], &what);
        check_knn(&idx, &oracle, &qs, &[1, 10], &what);
        check_knn(&probe, &oracle, &qs, &[1, 10], &what);
        // Duplicate ids are rejected, whether in the tables or in the delta.
        let some = stored[stored.len() / 2];
        assert!(idx.insert(some, data.row(0)).is_err());
    }
    idx.compact().unwrap();
    assert_eq!((idx.delta_len(), idx.dead_len()), (0, 0));
    assert_eq!(idx.substrings(), auto_substrings(bits, stored.len()));
    check_knn(&idx, &oracle, &qs, &[3], "compacted");
    // Removing everything leaves an empty, working index.
    for &id in &stored {
        assert!(idx.remove(id).unwrap());
    }
    assert!(idx.is_empty());
    assert_eq!(idx.knn(&qs[..2], 4).unwrap(), Vec::<Hit>::new());
    assert_eq!(idx.radius(&qs[..2], 128).unwrap(), Vec::<Hit>::new());
}

#[test]
fn batches_equal_single_queries_for_any_thread_count() {
    // A small W5: planted neighbours at distances 1..=64 of 256 bits, so the cost model sends
    // some k-NN queries to the deferred batched scan and probes the others.
    let w = W5::generate(20_000, 60).unwrap();
    let sigs = SignatureMatrix::from_parts(256, w.index.clone()).unwrap();
    let oracle = LinearScan::build(&sigs).unwrap();
    let idx = MultiIndex::build(&sigs).unwrap();
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                (
                    idx.knn_batch(&w.queries, W5::K).unwrap(),
                    idx.radius_batch(&w.queries, 40).unwrap(),
                )
            })
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one, two);
    for j in 0..60 {
        let q = w.query(j);
        let want = oracle.knn(q, W5::K).unwrap();
        assert_eq!(one.0[j], want, "query {j}");
        assert_eq!(idx.knn(q, W5::K).unwrap(), want);
        assert_eq!(one.1[j], oracle.radius(q, 40).unwrap());
        // The planted neighbours are the answer (the nearest random code is far).
        let (ids, _) = w.truth(j);
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        let mut got: Vec<u32> = want.iter().map(|h| h.id).collect();
        got.sort_unstable();
        assert_eq!(got, ids);
    }
}

#[test]
fn auto_substrings_reproduce_the_reference_table_best_by_rounding() {
    // The MIH reference code's table (RUN.sh): m for n = 10^4 .. 10^9.
    let table: [(usize, [usize; 6]); 2] =
        [(64, [5, 4, 4, 3, 2, 2]), (256, [19, 15, 13, 11, 10, 8])];
    let sizes = [
        10_000usize,
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
        1_000_000_000,
    ];
    let agree = |rule: fn(f64) -> f64| {
        let mut hits = 0;
        for (bits, ms) in &table {
            for (n, &m) in sizes.iter().zip(ms) {
                hits += usize::from(rule(*bits as f64 / (*n as f64).log2()) as usize == m);
            }
        }
        hits
    };
    let (round, floor, ceil) = (agree(f64::round), agree(f64::floor), agree(f64::ceil));
    assert_eq!((round, floor, ceil), (10, 6, 6));
    let mut ours = 0;
    for (bits, ms) in &table {
        for (n, &m) in sizes.iter().zip(ms) {
            ours += usize::from(auto_substrings(*bits, *n) == m);
        }
    }
    assert_eq!(ours, round, "auto_substrings is the rounding rule");
    // The two disagreements of rounding.
    assert_eq!(auto_substrings(64, 1_000_000), 3);
    assert_eq!(auto_substrings(256, 1_000_000_000), 9);
    // Clamping: at least one 64-bit substring per word, at most one bit per substring.
    assert_eq!(auto_substrings(256, 1 << 40), 6);
    assert_eq!(
        auto_substrings(130, usize::MAX),
        3,
        "round(130/64) = 2 < 3 words"
    );
    assert_eq!(auto_substrings(64, 0), 64);
    assert_eq!(auto_substrings(1, 1_000_000), 1);
}

#[test]
fn probe_radii_follow_the_finer_rule() {
    let mut rng = Rng::new(16);
    let (data, _) = planted(&mut rng, 64, 500);
    let idx = MultiIndex::builder().substrings(4).build(&data).unwrap();
    // r = 4·r' + a: substrings 0..=a within r', the others within r' − 1.
    assert_eq!(idx.probe_radii(0), vec![Some(0), None, None, None]);
    assert_eq!(idx.probe_radii(3), vec![Some(0); 4]);
    assert_eq!(idx.probe_radii(4), vec![Some(1), Some(0), Some(0), Some(0)]);
    assert_eq!(idx.probe_radii(9), vec![Some(2), Some(2), Some(1), Some(1)]);
    assert_eq!(idx.probe_radii(11), vec![Some(2); 4]);
    assert_eq!(idx.substring_widths(), vec![16; 4]);
}

#[test]
fn bad_parameters_and_inputs_are_errors() {
    let mut rng = Rng::new(17);
    let (data, _) = planted(&mut rng, 130, 50);
    assert!(
        MultiIndex::builder().substrings(2).build(&data).is_err(),
        "65-bit substrings"
    );
    assert!(MultiIndex::builder().substrings(131).build(&data).is_err());
    assert!(MultiIndex::builder().substrings(0).empty(8).is_err());
    assert!(MultiIndex::new(0).is_err());
    let idx = MultiIndex::builder().substrings(3).build(&data).unwrap();
    assert!(idx.radius(&[0, 0], 3).is_err());
    assert!(idx.knn(&[0, 0, 1 << 5], 3).is_err(), "padding bits");
    assert!(
        idx.knn_batch(&[0, 0, 0, 0, 0, 1 << 2], 3).is_err(),
        "padding bits in a batch"
    );
    assert!(idx.radius_batch(&[0; 4], 3).is_err());
    assert_eq!(idx.knn(&[0, 0, 0], 0).unwrap(), vec![]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Random interleavings of inserts, removals and queries agree with the oracle at every
    /// step (tiny delta limit, so merges and compactions happen all the time).
    #[test]
    fn random_operation_sequences(seed in any::<u64>(), bits in prop_oneof![Just(20usize), Just(64), Just(77)], limit in 0usize..6) {
        let mut rng = Rng::new(seed);
        let mut idx = MultiIndex::builder().delta_limit(limit).fallback(false).empty(bits).unwrap();
        let mut oracle = LinearScan::new(bits).unwrap();
        let mut pool: Vec<Vec<u64>> = (0..12).map(|_| random_code(&mut rng, bits)).collect();
        for step in 0..120 {
            match rng.below(5) {
                0 | 1 => {
                    let base = &pool[rng.below(pool.len() as u64) as usize];
                    let d = rng.below(5) as usize;
                    let code = flip(&mut rng, base, bits, d);
                    let id = rng.below(200) as u32;
                    prop_assert_eq!(idx.insert(id, &code).is_ok(), oracle.insert(id, &code).is_ok());
                    pool.push(code);
                }
                2 => {
                    let id = rng.below(200) as u32;
                    prop_assert_eq!(idx.remove(id).unwrap(), oracle.remove(id).unwrap());
                }
                _ => {
                    let base = &pool[rng.below(pool.len() as u64) as usize];
                    let d = rng.below(4) as usize;
                    let q = flip(&mut rng, base, bits, d);
                    let r = rng.below(12) as u32;
                    let k = rng.below(8) as usize;
                    prop_assert_eq!(idx.radius(&q, r).unwrap(), oracle.radius(&q, r).unwrap(), "step {}", step);
                    prop_assert_eq!(idx.knn(&q, k).unwrap(), oracle.knn(&q, k).unwrap(), "step {}", step);
                }
            }
            prop_assert_eq!(idx.len(), oracle.len());
        }
    }
}
