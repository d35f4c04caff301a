//! The banded join against brute force: every pair that agrees on some band (in a run that
//! was not capped) and lies within the Hamming filter, exactly once; the per-partition
//! function reproduces it from any split of the rows; the result does not depend on the
//! number of threads.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use simlsh::SignatureMatrix;
use simlsh::join::{
    Banding, CappedGroup, IdPair, Pair, band_partition, banded_join, banded_join_active,
    banded_join_each, sample_candidates,
};
use simlsh::rng::Rng;
use simlsh::signature::{last_word_mask, words_for};

/// `n` random codes of `bits` bits, each copying the bands of an earlier row with probability
/// ½ per band (so that runs of equal keys form), plus a few exact duplicates.
fn codes(n: usize, bits: usize, width: usize, seed: u64) -> SignatureMatrix {
    let w = words_for(bits);
    let mut rng = Rng::new(seed);
    let mut data: Vec<u64> = Vec::with_capacity(n * w);
    for i in 0..n {
        let mut row: Vec<u64> = (0..w).map(|_| rng.next_u64()).collect();
        if i > 0 && rng.below(4) > 0 {
            let src = rng.below(i as u64) as usize;
            if rng.below(8) == 0 {
                row.copy_from_slice(&data[src * w..(src + 1) * w]);
            } else {
                for band in 0..bits.div_ceil(width) {
                    if rng.below(2) == 0 {
                        for bit in band * width..((band + 1) * width).min(bits) {
                            let m = 1u64 << (bit % 64);
                            row[bit / 64] = (row[bit / 64] & !m) | (data[src * w + bit / 64] & m);
                        }
                    }
                }
            }
        }
        row[w - 1] &= last_word_mask(bits);
        data.extend_from_slice(&row);
    }
    SignatureMatrix::from_parts(bits, data).unwrap()
}

/// The brute-force answer: capped runs, then every pair within the radius whose first band of
/// agreement in an uncapped run exists.
fn brute(sigs: &SignatureMatrix, b: &Banding) -> (Vec<Pair>, Vec<CappedGroup>) {
    let n = sigs.len();
    let mut sizes: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    for i in 0..n {
        for (band, key) in b.keys(sigs.row(i)) {
            *sizes.entry((band, key)).or_default() += 1;
        }
    }
    let capped: Vec<CappedGroup> = sizes
        .iter()
        .filter(|&(_, &s)| s > b.max_group())
        .map(|(&(band, key), &rows)| CappedGroup { band, key, rows })
        .collect();
    let is_capped = |band: u32, key: u64| sizes[&(band, key)] > b.max_group();
    let mut pairs = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let d = sigs.distance(i, j);
            if d > b.max_distance() {
                continue;
            }
            if let Some((words, radius)) = b.prefix_filter() {
                let (x, y) = (&sigs.row(i)[..words], &sigs.row(j)[..words]);
                let pd: u32 = x.iter().zip(y).map(|(u, v)| (u ^ v).count_ones()).sum();
                if pd > radius {
                    continue;
                }
            }
            // Keys within the probe distance, neither run capped.
            let agree = (0..b.bands()).any(|k| {
                let (ki, kj) = (b.key(k, sigs.row(i)), b.key(k, sigs.row(j)));
                (ki ^ kj).count_ones() <= b.probes()
                    && !is_capped(k as u32, ki)
                    && !is_capped(k as u32, kj)
            });
            if agree {
                pairs.push(Pair {
                    i: i as u32,
                    j: j as u32,
                    distance: d,
                });
            }
        }
    }
    (pairs, capped)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// [`codes`] with one random bit flipped in about half the rows, so that band keys one bit
/// apart are common.
fn probe_codes(n: usize, bits: usize, width: usize, seed: u64) -> SignatureMatrix {
    let sigs = codes(n, bits, width, seed);
    let w = words_for(bits);
    let mut rng = Rng::new(seed ^ 0xf11b_u64);
    let mut data: Vec<u64> = sigs.as_slice().to_vec();
    for i in 0..n {
        if rng.below(2) == 0 {
            let bit = rng.below(bits as u64) as usize;
            data[i * w + bit / 64] ^= 1u64 << (bit % 64);
        }
    }
    SignatureMatrix::from_parts(bits, data).unwrap()
}

/// A banding layout: any bits, width, bands, filter radius, prefix filter (codes of more
/// than one word) and cap.
fn layout() -> impl Strategy<Value = Banding> {
    layout_with(0)
}

/// [`layout`] probing keys within `probes` bits.
fn layout_with(probes: u32) -> impl Strategy<Value = Banding> {
    (
        prop_oneof![Just(16usize), Just(64), Just(100), Just(130), Just(256)],
        1u32..=24,
    )
        .prop_flat_map(|(bits, width)| {
            let width = width.min(bits as u32);
            let max_bands = bits / width as usize;
            let words = words_for(bits);
            (
                Just(bits),
                Just(width),
                1..=max_bands,
                0..=bits as u32,
                prop_oneof![Just(usize::MAX), 2usize..6],
                prop_oneof![Just(None), (1..words.max(2), 0u32..=80).prop_map(Some)],
            )
        })
        .prop_map(
            move |(bits, width, bands, max_distance, max_group, prefix)| {
                let mut b = Banding::builder()
                    .bits(bits)
                    .bands(bands)
                    .width(width)
                    .max_distance(max_distance)
                    .max_group(max_group)
                    .probes(probes);
                if let Some((words, radius)) = prefix
                    && words < words_for(bits)
                {
                    b = b.prefix_filter(words, radius);
                }
                b.build().unwrap()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn banded_join_equals_brute_force(
        b in layout(),
        n in 0usize..70,
        seed in any::<u64>(),
    ) {
        let sigs = codes(n, b.bits(), b.width() as usize, seed);
        let (want, capped) = brute(&sigs, &b);
        let (got, stats) = banded_join(&sigs, &b).unwrap();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(stats.candidates, want.len() as u64);
        let mut got_capped = stats.capped.clone();
        got_capped.sort_unstable();
        prop_assert_eq!(&got_capped, &capped);
        // Each pair once, and the streamed order is the same for 1 and 2 threads.
        let stream = |threads: usize| {
            pool(threads).install(|| {
                let mut v = Vec::new();
                banded_join_each(&sigs, &b, |p| v.push(p)).unwrap();
                v
            })
        };
        let one = stream(1);
        prop_assert_eq!(&one, &stream(2));
        let distinct: BTreeSet<(u32, u32)> = one.iter().map(|p| (p.i, p.j)).collect();
        prop_assert_eq!(distinct.len(), one.len());
    }

    #[test]
    fn rows_without_features_take_no_part(
        b in layout(),
        n in 0usize..70,
        seed in any::<u64>(),
        picks in proptest::collection::vec(any::<bool>(), 70),
    ) {
        // The join of the other rows alone, their row numbers mapped back, is the oracle:
        // the same pairs and statistics.
        let sigs = codes(n, b.bits(), b.width() as usize, seed);
        let featureless: Vec<u32> = (0..n as u32).filter(|&i| picks[i as usize]).collect();
        let rows: Vec<u32> = (0..n as u32).filter(|&i| !picks[i as usize]).collect();
        let data: Vec<u64> = rows.iter().flat_map(|&r| sigs.row(r as usize).to_vec()).collect();
        let kept = SignatureMatrix::from_parts(b.bits(), data).unwrap();
        let (want, want_stats) = banded_join(&kept, &b).unwrap();
        let want: Vec<Pair> = want
            .iter()
            .map(|p| Pair { i: rows[p.i as usize], j: rows[p.j as usize], distance: p.distance })
            .collect();
        let mut got = Vec::new();
        let stats = banded_join_active(&sigs, &b, &featureless, |p| got.push(p)).unwrap();
        got.sort_unstable();
        prop_assert_eq!(got, want);
        prop_assert_eq!(
            (stats.candidates, stats.checked, stats.capped),
            (want_stats.candidates, want_stats.checked, want_stats.capped)
        );
        // None featureless: the join of every row.
        let mut all = Vec::new();
        banded_join_active(&sigs, &b, &[], |p| all.push(p)).unwrap();
        all.sort_unstable();
        prop_assert_eq!(all, banded_join(&sigs, &b).unwrap().0);
        // Featureless rows must be increasing rows of the join.
        let bad = |featureless: &[u32]| {
            banded_join_active(&sigs, &b, featureless, |_| {}).unwrap_err().to_string()
        };
        let e = bad(&[n as u32]);
        prop_assert!(e.contains(&format!("row {n} beyond the {n} rows")), "{}", e);
        if let [a, c, ..] = featureless[..] {
            let e = bad(&[c, a]);
            prop_assert!(e.contains(&format!("must be increasing, {a} comes after {c}")), "{}", e);
            prop_assert!(bad(&[a, a]).contains("must be increasing"));
        }
    }

    #[test]
    fn multi_probe_join_equals_brute_force(
        b in layout_with(1),
        n in 0usize..70,
        seed in any::<u64>(),
    ) {
        let sigs = probe_codes(n, b.bits(), b.width() as usize, seed);
        let (want, capped) = brute(&sigs, &b);
        let (got, stats) = banded_join(&sigs, &b).unwrap();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(stats.candidates, want.len() as u64);
        let mut got_capped = stats.capped.clone();
        got_capped.sort_unstable();
        prop_assert_eq!(&got_capped, &capped);
        let stream = |threads: usize| {
            pool(threads).install(|| {
                let mut v = Vec::new();
                banded_join_each(&sigs, &b, |p| v.push(p)).unwrap();
                v
            })
        };
        let one = stream(1);
        prop_assert_eq!(&one, &stream(2));
        let distinct: BTreeSet<(u32, u32)> = one.iter().map(|p| (p.i, p.j)).collect();
        prop_assert_eq!(distinct.len(), one.len());
        // The first agreeing band is the one within the probe distance.
        for p in &got {
            let (x, y) = (sigs.row(p.i as usize), sigs.row(p.j as usize));
            let first = b.first_agreeing_band(x, y).unwrap();
            prop_assert!((b.key(first, x) ^ b.key(first, y)).count_ones() <= 1);
        }
    }

    #[test]
    fn partitions_reproduce_the_join(
        b in layout(),
        n in 0usize..60,
        parts in 1usize..5,
        seed in any::<u64>(),
    ) {
        let sigs = codes(n, b.bits(), b.width() as usize, seed);
        let (want, stats) = banded_join(&sigs, &b).unwrap();
        // Distinct ids in scrambled order, and a job that sends each (band, key) group to
        // partition `key % parts`, rows in any order.
        let mut rng = Rng::new(seed ^ 0x5eed);
        let ids: Vec<u64> = (0..n as u64).map(|i| (i * 7919 + 13) ^ 0xabcd_ef00).collect();
        let w = words_for(b.bits());
        let mut got: Vec<IdPair> = Vec::new();
        let mut capped = Vec::new();
        for band in 0..b.bands() {
            for part in 0..parts {
                let mut rows: Vec<usize> = (0..n)
                    .filter(|&i| b.key(band, sigs.row(i)) % parts as u64 == part as u64)
                    .collect();
                for k in (1..rows.len()).rev() {
                    rows.swap(k, rng.below(k as u64 + 1) as usize);
                }
                let pid: Vec<u64> = rows.iter().map(|&i| ids[i]).collect();
                let psig: Vec<u64> = rows
                    .iter()
                    .flat_map(|&i| sigs.row(i).iter().copied())
                    .collect();
                prop_assert_eq!(psig.len(), rows.len() * w);
                capped.extend(
                    band_partition(&b, band, &pid, &psig, &stats.capped, |p| got.push(p)).unwrap(),
                );
            }
        }
        let back: BTreeMap<u64, u32> = ids.iter().enumerate().map(|(i, &id)| (id, i as u32)).collect();
        let mut mapped: Vec<Pair> = got
            .iter()
            .map(|p| {
                let (i, j) = (back[&p.i], back[&p.j]);
                Pair { i: i.min(j), j: i.max(j), distance: p.distance }
            })
            .collect();
        mapped.sort_unstable();
        prop_assert_eq!(&mapped, &want);
        capped.sort_unstable();
        let mut all = stats.capped.clone();
        all.sort_unstable();
        prop_assert_eq!(capped, all);
    }
}

#[test]
fn partition_errors_are_typed() {
    let b = Banding::builder()
        .bits(64)
        .bands(4)
        .width(16)
        .build()
        .unwrap();
    assert!(band_partition(&b, 4, &[1], &[0], &[], |_| {}).is_err());
    assert!(band_partition(&b, 0, &[1, 2], &[0], &[], |_| {}).is_err());
    let wide = Banding::builder()
        .bits(60)
        .bands(3)
        .width(20)
        .build()
        .unwrap();
    // A bit set beyond the 60-bit width.
    assert!(band_partition(&wide, 0, &[1], &[u64::MAX], &[], |_| {}).is_err());
    let sigs = SignatureMatrix::from_parts(128, vec![0u64; 4]).unwrap();
    assert!(banded_join(&sigs, &b).is_err());
    // A prefix filter must be shorter than the codes, and not empty.
    let prefix = |bits: usize, words: usize| {
        Banding::builder()
            .bits(bits)
            .bands(2)
            .width(8)
            .prefix_filter(words, 10)
            .build()
    };
    assert!(prefix(64, 1).is_err());
    assert!(prefix(256, 0).is_err());
    assert!(prefix(256, 4).is_err());
    assert_eq!(prefix(256, 3).unwrap().prefix_filter(), Some((3, 10)));
    assert_eq!(prefix(130, 1).unwrap().prefix_filter(), Some((1, 10)));
}

#[test]
fn hot_key_runs_are_capped_and_reported() {
    // 30 all-zero rows and 5 rows sharing band 1 only: the zero run is capped on every band,
    // the pairs among the 5 come from band 1, and the zero rows pair with nothing.
    let mut data = vec![0u64; 30];
    for i in 0..5u64 {
        data.push((i + 1) | 0xffff_0000 | ((i + 1) << 32) | 0x1234_0000_0000_0000);
    }
    let sigs = SignatureMatrix::from_parts(64, data).unwrap();
    let b = Banding::builder()
        .bits(64)
        .bands(4)
        .width(16)
        .max_group(10)
        .build()
        .unwrap();
    let (pairs, stats) = banded_join(&sigs, &b).unwrap();
    assert_eq!(pairs.len(), 10);
    assert!(pairs.iter().all(|p| p.i >= 30));
    let keys: Vec<(u32, u64, usize)> = stats
        .capped
        .iter()
        .map(|g| (g.band, g.key, g.rows))
        .collect();
    assert_eq!(keys, vec![(0, 0, 30), (1, 0, 30), (2, 0, 30), (3, 0, 30)]);
}

#[test]
fn sampled_candidate_rate_matches_the_join() {
    let sigs = codes(400, 128, 8, 17);
    let b = Banding::builder()
        .bits(128)
        .bands(8)
        .width(8)
        .build()
        .unwrap();
    let (pairs, stats) = banded_join(&sigs, &b).unwrap();
    // The whole data as the sample: the join's own count.
    let all = sample_candidates(&sigs, &b, 1000, 1).unwrap();
    assert_eq!((all.rows, all.candidates), (400, pairs.len() as u64));
    assert_eq!(all.candidates, stats.candidates);
    assert!((all.expected - pairs.len() as f64).abs() < 1e-9);
    // A sample: its candidates are the join's pairs among the sampled rows, and the same
    // seed gives the same sample.
    let s = sample_candidates(&sigs, &b, 150, 9).unwrap();
    assert_eq!(s, sample_candidates(&sigs, &b, 150, 9).unwrap());
    assert_eq!(s.rows, 150);
    assert!((s.rate - s.candidates as f64 / (150.0 * 149.0 / 2.0)).abs() < 1e-15);
    assert!((s.expected - s.rate * 400.0 * 399.0 / 2.0).abs() < 1e-6);
    assert!(sample_candidates(&sigs, &b, 1, 9).is_err());
}

#[test]
fn big_runs_equal_brute_force() {
    // Short bands on 300 rows: runs of about 75 rows, compared by the batched kernel.
    for &(bits, width, bands, max_distance, prefix) in &[
        (64usize, 2u32, 20usize, 30u32, None),
        (200, 3, 40, 90, None),
        (256, 2, 128, 256, None),
        (256, 2, 100, 120, Some((1usize, 25u32))),
        (400, 3, 60, 180, Some((2, 50))),
    ] {
        let sigs = codes(300, bits, width as usize, 23);
        let mut b = Banding::builder()
            .bits(bits)
            .bands(bands)
            .width(width)
            .max_distance(max_distance)
            .max_group(120);
        if let Some((words, radius)) = prefix {
            b = b.prefix_filter(words, radius);
        }
        let b = b.build().unwrap();
        let (want, capped) = brute(&sigs, &b);
        let (got, stats) = banded_join(&sigs, &b).unwrap();
        assert_eq!(got, want, "f={bits} w={width}");
        let mut c = stats.capped.clone();
        c.sort_unstable();
        assert_eq!(c, capped);
        let stream = |threads: usize| {
            pool(threads).install(|| {
                let mut v = Vec::new();
                banded_join_each(&sigs, &b, |p| v.push(p)).unwrap();
                v
            })
        };
        assert_eq!(stream(1), stream(2));
    }
}

#[test]
fn big_runs_with_probes_equal_brute_force() {
    // Short bands: big runs, and runs one bit apart compared across.
    for &(bits, width, bands, max_distance, max_group) in &[
        (64usize, 3u32, 20usize, 30u32, 120usize),
        (200, 4, 40, 90, 60),
        (256, 5, 50, 256, usize::MAX),
    ] {
        let sigs = probe_codes(300, bits, width as usize, 29);
        let b = Banding::builder()
            .bits(bits)
            .bands(bands)
            .width(width)
            .max_distance(max_distance)
            .max_group(max_group)
            .probes(1)
            .build()
            .unwrap();
        let (want, capped) = brute(&sigs, &b);
        let (got, stats) = banded_join(&sigs, &b).unwrap();
        assert_eq!(got, want, "f={bits} w={width}");
        let mut c = stats.capped.clone();
        c.sort_unstable();
        assert_eq!(c, capped);
    }
    // Probing is joined in one process: partitions by key refuse it, with a typed error.
    let b = Banding::builder()
        .bits(64)
        .bands(4)
        .width(16)
        .probes(1)
        .build()
        .unwrap();
    assert!(band_partition(&b, 0, &[1], &[0], &[], |_| {}).is_err());
    assert!(
        Banding::builder()
            .bits(64)
            .bands(4)
            .width(16)
            .probes(2)
            .build()
            .is_err()
    );
}
