//! Tests: every kernel set against plain-loop oracles written here.

use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::scalar::{TILE_BYTES, tile_codes};
use super::*;

const WIDTHS: [usize; 10] = [1, 2, 3, 4, 5, 6, 8, 12, 16, 64];

/// Distance counted bit by bit, independent of `count_ones`.
fn bitwise_distance(a: &[u64], b: &[u64]) -> u32 {
    assert_eq!(a.len(), b.len());
    let mut d = 0;
    for (x, y) in a.iter().zip(b) {
        for bit in 0..64 {
            if (x >> bit) & 1 != (y >> bit) & 1 {
                d += 1;
            }
        }
    }
    d
}

/// Plain-loop distance for the brute-force oracles.
fn loop_distance(a: &[u64], b: &[u64]) -> u32 {
    let mut d = 0;
    for i in 0..a.len() {
        d += (a[i] ^ b[i]).count_ones();
    }
    d
}

fn random_words(rng: &mut Xoshiro256PlusPlus, len: usize) -> Vec<u64> {
    (0..len).map(|_| rng.random::<u64>()).collect()
}

/// Code counts around the tile and unroll sizes for width `w`: 0, 1, tails of the groups of
/// four, and more than two tiles with a ragged last one.
fn code_counts(w: usize) -> Vec<usize> {
    let tile = tile_codes(w, TILE_BYTES);
    vec![0, 1, 3, 5, 2 * tile + 7]
}

/// `n` codes of `w` words: random, except that about a third are copies of a query with 0 to
/// 12 bits flipped, some are exact duplicates of earlier codes (ties at every distance) and a
/// few are complements of a query.
fn planted_codes(rng: &mut Xoshiro256PlusPlus, queries: &[u64], n: usize, w: usize) -> Vec<u64> {
    let nq = queries.len() / w;
    let mut codes = random_words(rng, n * w);
    for i in 0..n {
        match rng.random_range(0..6u32) {
            0 | 1 if nq > 0 => {
                let q = rng.random_range(0..nq);
                codes[i * w..(i + 1) * w].copy_from_slice(&queries[q * w..(q + 1) * w]);
                for _ in 0..rng.random_range(0..=12u32) {
                    let bit = rng.random_range(0..64 * w);
                    codes[i * w + bit / 64] ^= 1 << (bit % 64);
                }
            }
            2 if i > 0 => {
                let j = rng.random_range(0..i);
                codes.copy_within(j * w..(j + 1) * w, i * w);
            }
            3 if nq > 0 && rng.random_range(0..4u32) == 0 => {
                // Complement of a query: the largest distance, 64 * w, where per-byte counts
                // are all 8 (overflow-prone accumulators).
                let q = rng.random_range(0..nq);
                for j in 0..w {
                    codes[i * w + j] = !queries[q * w + j];
                }
            }
            _ => {}
        }
    }
    codes
}

fn brute_radius(queries: &[u64], codes: &[u64], w: usize, r: u32) -> Vec<(usize, usize, u32)> {
    let mut out = Vec::new();
    for (qi, q) in queries.chunks(w).enumerate() {
        for (i, c) in codes.chunks(w).enumerate() {
            let d = loop_distance(q, c);
            if d <= r {
                out.push((qi, i, d));
            }
        }
    }
    out
}

fn brute_knn(queries: &[u64], codes: &[u64], w: usize, k: usize) -> Vec<Vec<Neighbor>> {
    let mut out = Vec::new();
    for q in queries.chunks(w) {
        let mut all: Vec<(u32, usize)> = codes
            .chunks(w)
            .enumerate()
            .map(|(i, c)| (loop_distance(q, c), i))
            .collect();
        all.sort();
        all.truncate(k);
        out.push(
            all.into_iter()
                .map(|(distance, row)| Neighbor { distance, row })
                .collect(),
        );
    }
    out
}

#[test]
fn dispatch_picks_best_available_set() {
    let forced = crate::cpu::forced_scalar();
    let expected = if forced {
        "scalar"
    } else {
        Kernels::best_available().name()
    };
    assert_eq!(kernel_name(), expected);
    assert_eq!(Kernels::dispatched().name(), expected);
    #[cfg(target_arch = "x86_64")]
    {
        let avx2 = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt");
        let popcnt = std::arch::is_x86_feature_detected!("popcnt");
        let avx512 = avx2
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq");
        let best = if avx512 {
            "avx512"
        } else if avx2 {
            "avx2"
        } else if popcnt {
            "popcnt"
        } else {
            "scalar"
        };
        assert_eq!(Kernels::best_available().name(), best);
        assert_eq!(Kernels::avx512().is_some(), avx512);
        assert_eq!(Kernels::avx2().is_some(), avx2);
        assert_eq!(Kernels::popcnt().is_some(), popcnt);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        assert!(Kernels::avx2().is_none() && Kernels::popcnt().is_none());
        assert!(Kernels::avx512().is_none());
        assert_eq!(Kernels::best_available().name(), "scalar");
    }
    let names: Vec<&str> = Kernels::available().iter().map(|k| k.name()).collect();
    assert_eq!(names[0], "scalar");
    assert_eq!(names.last(), Some(&Kernels::best_available().name()));
}

#[test]
fn distance_matches_bitwise_for_every_kernel() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let lens = [0, 1, 2, 3, 4, 5, 8, 16, 63, 64, 65, 67, 100, 128, 257, 1000];
    for kern in Kernels::available() {
        for &len in &lens {
            for _ in 0..4 {
                let a = random_words(&mut rng, len);
                let mut b = random_words(&mut rng, len);
                let expected = bitwise_distance(&a, &b);
                assert_eq!(
                    kern.distance(&a, &b).unwrap(),
                    expected,
                    "{} len {len}",
                    kern.name()
                );
                assert_eq!(kern.distance(&a, &a).unwrap(), 0);
                // Near-identical pair: low distances are where an off-by-one would show.
                b.copy_from_slice(&a);
                if len > 0 {
                    b[len / 2] ^= 0b1011;
                    assert_eq!(
                        kern.distance(&a, &b).unwrap(),
                        3,
                        "{} len {len}",
                        kern.name()
                    );
                }
            }
        }
    }
    let a = [u64::MAX; 4];
    assert_eq!(distance(&a, &[0; 4]).unwrap(), 256);
    assert_eq!(distance(&[], &[]).unwrap(), 0);
    // Slices of different lengths: a typed error in every build, from every set.
    for kern in Kernels::available() {
        assert!(matches!(
            kern.distance(&a, &[0; 3]),
            Err(crate::Error::LengthMismatch {
                left: 4,
                right: 3,
                ..
            })
        ));
    }
    assert!(distance(&[1], &[]).is_err() && scalar::distance(&[], &[1, 2]).is_err());
}

#[test]
fn distance_upto_is_exact_up_to_the_bound_and_above_it_beyond() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    for len in [1, 2, 3, 4, 5, 7, 8, 9, 16, 17] {
        for _ in 0..50 {
            let a = random_words(&mut rng, len);
            // Near codes (a few bits flipped) and far ones (random).
            let mut b = a.clone();
            for _ in 0..rng.random_range(0..6) {
                let bit = rng.random_range(0..64 * len);
                b[bit / 64] ^= 1 << (bit % 64);
            }
            for b in [b, random_words(&mut rng, len)] {
                let d = bitwise_distance(&a, &b);
                for max in [0, 1, 3, 5, 16, 40, d.saturating_sub(1), d, d + 1] {
                    let got = scalar::distance_upto(&a, &b, max);
                    if d <= max {
                        assert_eq!(got, d, "len {len} max {max}");
                    } else {
                        assert!(got > max && got <= d, "len {len} max {max}: {got} vs {d}");
                    }
                }
            }
        }
    }
}

#[test]
fn popcount_matches_bitwise_for_every_kernel() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
    let mut lens: Vec<usize> = (0..=70).collect();
    lens.extend([127, 128, 129, 255, 256, 1000, 4099]);
    for kern in Kernels::available() {
        for &len in &lens {
            let v = random_words(&mut rng, len);
            let zero = vec![0u64; len];
            let expected = u64::from(bitwise_distance(&v, &zero));
            assert_eq!(kern.popcount(&v), expected, "{} len {len}", kern.name());
            // All ones: exercises the carry-save adders at their largest counts.
            let ones = vec![u64::MAX; len];
            assert_eq!(kern.popcount(&ones), 64 * len as u64, "{}", kern.name());
        }
    }
    assert_eq!(popcount(&[0b111, 1 << 63]), 4);
}

#[test]
fn distances_match_bitwise_for_every_kernel() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for kern in Kernels::available() {
        // 132 words: more than the 124 words whose byte counts the horizontal AVX2 kernel
        // adds up before one `vpsadbw`.
        for &w in WIDTHS.iter().chain(&[132]) {
            for n in code_counts(w) {
                let q = random_words(&mut rng, w);
                let codes = planted_codes(&mut rng, &q, n, w);
                let mut out = vec![u32::MAX; n];
                kern.distances(&q, &codes, w, &mut out).unwrap();
                let expected: Vec<u32> = codes.chunks(w).map(|c| bitwise_distance(&q, c)).collect();
                assert_eq!(out, expected, "{} w {w} n {n}", kern.name());
            }
        }
    }
}

#[test]
fn scan_radius_matches_brute_force_for_every_kernel() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    for &w in &WIDTHS {
        for n in code_counts(w) {
            for nq in [0, 1, 3, 13] {
                let queries = random_words(&mut rng, nq * w);
                let codes = planted_codes(&mut rng, &queries, n, w);
                for r in [0, 1, 3, 8, 64 * w as u32, u32::MAX] {
                    let expected = brute_radius(&queries, &codes, w, r);
                    if r >= 64 * w as u32 {
                        assert_eq!(expected.len(), n * nq);
                    }
                    for kern in Kernels::available() {
                        let mut got = Vec::new();
                        kern.scan_radius(&queries, &codes, w, r, |q, i, d| got.push((q, i, d)))
                            .unwrap();
                        got.sort();
                        assert_eq!(got, expected, "{} w {w} n {n} nq {nq} r {r}", kern.name());
                    }
                }
            }
        }
    }
}

#[test]
fn scan_radius_finds_planted_neighbours() {
    // Guards the oracle comparison above against a vacuous pass: planted codes must produce
    // hits at small radii.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let queries = random_words(&mut rng, 13);
    let codes = planted_codes(&mut rng, &queries, 5000, 1);
    let mut hits = 0;
    scan_radius(&queries, &codes, 1, 3, |_, _, d| {
        assert!(d <= 3);
        hits += 1;
    })
    .unwrap();
    assert!(hits > 100, "only {hits} hits");
}

#[test]
fn scan_knn_matches_brute_force_for_every_kernel() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
    for &w in &WIDTHS {
        for n in code_counts(w) {
            for nq in [0, 1, 3, 13] {
                let queries = random_words(&mut rng, nq * w);
                let codes = planted_codes(&mut rng, &queries, n, w);
                // 30 and 150: the buffered path of the AVX2 scan and the histogram's cuts.
                for k in [0, 1, 10, 30, 150, n + 3] {
                    let expected = brute_knn(&queries, &codes, w, k);
                    for kern in Kernels::available() {
                        let got = kern.scan_knn(&queries, &codes, w, k).unwrap();
                        assert_eq!(got, expected, "{} w {w} n {n} nq {nq} k {k}", kern.name());
                    }
                }
            }
        }
    }
}

#[test]
fn scan_knn_of_codes_beyond_the_histogram_matches_brute_force() {
    // 132 words (8,448 bits) exceed `HIST_MAX_BITS`: the top-k selects lazily instead.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(16);
    let w = 132;
    assert!(64 * w > super::HIST_MAX_BITS);
    let queries = random_words(&mut rng, 6 * w);
    let n = 2 * tile_codes(w, TILE_BYTES) + 150;
    let codes = planted_codes(&mut rng, &queries, n, w);
    for k in [1, 30, 150, n] {
        let expected = brute_knn(&queries, &codes, w, k);
        for kern in Kernels::available() {
            let got = kern.scan_knn(&queries, &codes, w, k).unwrap();
            assert_eq!(got, expected, "{} k {k}", kern.name());
        }
    }
}

#[test]
fn scan_knn_breaks_ties_by_smaller_index() {
    // Few distinct codes, repeated across several tiles: every distance is heavily tied, so
    // the k-th place is decided by the index alone.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    for &w in &[1usize, 4, 5] {
        let pool = random_words(&mut rng, 5 * w);
        let n = 3 * tile_codes(w, TILE_BYTES) + 2;
        let mut codes = Vec::with_capacity(n * w);
        for _ in 0..n {
            let p = rng.random_range(0..5);
            codes.extend_from_slice(&pool[p * w..(p + 1) * w]);
        }
        // Six queries: enough for the transposed AVX2 path (see `TRANSPOSE_MIN_QUERIES`).
        let queries = [&pool[..w], &random_words(&mut rng, 5 * w)[..]].concat();
        for k in [1, 7, 10, 100] {
            let expected = brute_knn(&queries, &codes, w, k);
            // The first query is in the pool: its k nearest are all at distance 0 when there
            // are k copies of it, and must be the k first copies.
            let copies: Vec<usize> = (0..n)
                .filter(|&i| codes[i * w..(i + 1) * w] == pool[..w])
                .take(k)
                .collect();
            let first = &expected[0];
            assert_eq!(first.iter().map(|nb| nb.row).collect::<Vec<_>>(), copies);
            for kern in Kernels::available() {
                assert_eq!(
                    kern.scan_knn(&queries, &codes, w, k).unwrap(),
                    expected,
                    "{} w {w} k {k}",
                    kern.name()
                );
            }
        }
    }
    // All codes identical: the k nearest are the first k indices.
    let codes = vec![42u64; 5000];
    for kern in Kernels::available() {
        let got = kern.scan_knn(&[7], &codes, 1, 10).unwrap();
        let want: Vec<Neighbor> = (0..10)
            .map(|index| Neighbor {
                distance: (42u64 ^ 7).count_ones(),
                row: index,
            })
            .collect();
        assert_eq!(got, vec![want], "{}", kern.name());
    }
}

#[test]
fn top_level_functions_agree_with_scalar_module() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    let w = 4;
    let queries = random_words(&mut rng, 3 * w);
    let codes = planted_codes(&mut rng, &queries, 1000, w);
    assert_eq!(
        scan_knn(&queries, &codes, w, 5).unwrap(),
        scalar::scan_knn(&queries, &codes, w, 5).unwrap()
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    scan_radius(&queries, &codes, w, 10, |q, i, d| a.push((q, i, d))).unwrap();
    scalar::scan_radius(&queries, &codes, w, 10, |q, i, d| b.push((q, i, d))).unwrap();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert!(!a.is_empty());
    let (mut da, mut db) = (vec![0; 1000], vec![0; 1000]);
    distances(&queries[..w], &codes, w, &mut da).unwrap();
    scalar::distances(&queries[..w], &codes, w, &mut db).unwrap();
    assert_eq!(da, db);
    assert_eq!(popcount(&codes), scalar::popcount(&codes));
    assert_eq!(
        distance(&codes[..w], &codes[w..2 * w]).unwrap(),
        scalar::distance(&codes[..w], &codes[w..2 * w]).unwrap()
    );
}

#[test]
fn shape_errors_are_reported() {
    let mut out = [0u32; 2];
    let codes = [0u64; 4];
    assert!(matches!(
        distances(&[0], &codes, 0, &mut out),
        Err(Error::InvalidParameter { name: "words", .. })
    ));
    assert!(matches!(
        distances(&[0], &codes, 2, &mut out),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        distances(&[0, 0], &codes, 2, &mut out[..1]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        distances(&[0, 0, 0], &codes, 3, &mut out[..1]),
        Err(Error::InvalidParameter { name: "codes", .. })
    ));
    assert!(distances(&[0, 0], &codes, 2, &mut out).is_ok());
    let mut called = false;
    assert!(matches!(
        scan_radius(&[0; 3], &codes, 2, 1, |_, _, _| called = true),
        Err(Error::InvalidParameter {
            name: "queries",
            ..
        })
    ));
    assert!(!called);
    assert!(matches!(
        scan_knn(&[0; 2], &[0; 3], 2, 1),
        Err(Error::InvalidParameter { name: "codes", .. })
    ));
    assert!(matches!(
        scan_knn(&[0; 2], &[0; 3], MAX_WORDS + 1, 1),
        Err(Error::InvalidParameter { name: "words", .. })
    ));
    assert_eq!(
        scan_knn(&[], &[], 1, 3).unwrap(),
        Vec::<Vec<Neighbor>>::new()
    );
}

fn code(w: usize) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(any::<u64>(), w)
}

proptest! {
    #[test]
    fn distance_is_a_metric_equal_to_bitwise_count(
        (a, b, c) in (1usize..=9).prop_flat_map(|w| (code(w), code(w), code(w)))
    ) {
        let d = bitwise_distance(&a, &b);
        let dist = |x: &[u64], y: &[u64]| distance(x, y).unwrap();
        prop_assert_eq!(dist(&a, &b), d);
        prop_assert_eq!(dist(&b, &a), d);
        prop_assert_eq!(dist(&a, &a), 0);
        prop_assert!(dist(&a, &c) <= dist(&a, &b) + dist(&b, &c));
        for kern in Kernels::available() {
            prop_assert_eq!(kern.distance(&a, &b).unwrap(), d);
        }
    }
}

#[test]
fn scan_knn_of_any_k_keeps_every_code_and_the_batched_scan_equals_it() {
    // k beyond the number of codes, up to usize::MAX ("every code"), must not overflow the
    // buffer's sizing: every code comes back, sorted by (distance, row), as brute force.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
    for w in [1usize, 4] {
        let queries = random_words(&mut rng, 70 * w);
        let codes = planted_codes(&mut rng, &queries, 300, w);
        let all = brute_knn(&queries, &codes, w, 300);
        for k in [301, usize::MAX / 2 + 1, usize::MAX] {
            assert_eq!(
                scan_knn(&queries, &codes, w, k).unwrap(),
                all,
                "w={w} k={k}"
            );
        }
        assert_eq!(TopK::first_limit(usize::MAX), usize::MAX);
        // 70 queries: one full batch of SCAN_QUERY_BATCH and a partial one.
        for k in [0, 1, 10, usize::MAX] {
            let want = brute_knn(&queries, &codes, w, k.min(300));
            let got = scan_knn_batched(&queries, &codes, w, k, <[Neighbor]>::to_vec).unwrap();
            assert_eq!(got, want, "w={w} k={k}");
        }
    }
    assert!(scan_knn_batched(&[0u64; 3], &[0u64; 4], 2, 1, |n| n.len()).is_err());
}
