//! The conformance suite: every index against the linear scan oracle, on random, planted and
//! duplicated data, for widths 1 to 256 bits, radii 0 to f, after inserts and removals.

mod codes;

use codes::{flip, random_code};

use proptest::prelude::*;
use simlsh::index::{HammingIndex, Hit, IndexSpec, LinearScan, MultiIndex, MultiIndexBuilder};
use simlsh::rng::Rng;
use simlsh::signature::{SignatureMatrix, words_for};

/// Builds an index of signatures (ids `0..N`).
type Build = Box<dyn Fn(&SignatureMatrix) -> Box<dyn HammingIndex>>;

/// An index type under test: how to build it from signatures (ids `0..N`) and empty.
struct Kind {
    name: &'static str,
    build: Build,
    empty: Box<dyn Fn(usize) -> Box<dyn HammingIndex>>,
}

/// A kind given by its [`IndexSpec`] text.
fn spec(text: &'static str) -> Kind {
    let s: IndexSpec = text.parse().unwrap();
    let e = s.clone();
    Kind {
        name: text,
        build: Box::new(move |m| s.build(m).unwrap()),
        empty: Box::new(move |b| e.empty(b).unwrap()),
    }
}

/// Multi-index hashing with the widest substrings (one per word, up to 64 bits: sparse
/// tables) and a delta merged every 8 inserts; the cost model sends most searches to the scan.
fn mih_wide() -> MultiIndexBuilder {
    MultiIndex::builder().delta_limit(8)
}

fn kinds() -> Vec<Kind> {
    vec![
        spec("linear"),
        spec("manku:levels=4"),
        spec("manku:levels=4+4"),
        spec("manku"),
        spec("manku:k=1,levels=3"),
        spec("mih"),
        // Multi-index hashing forced to probe (no scan fallback), with the automatic
        // substrings and a delta merged every 8 inserts.
        spec("mih:delta=8,fallback=false"),
        Kind {
            name: "mih-wide",
            build: Box::new(|s| {
                Box::new(mih_wide().substrings(words_for(s.bits())).build(s).unwrap())
            }),
            empty: Box::new(|b| Box::new(mih_wide().substrings(words_for(b)).empty(b).unwrap())),
        },
        spec("permutation"),
        // A narrow beam: windows shorter than k, clipped at the list ends, and automatic
        // merges of the delta after a few inserts or removals.
        spec("permutation:q=3,beam=2,seed=9"),
        // The graph index as built (small sets fall back to the scan after its check), and
        // forced to search a graph of low degree with narrow beams.
        spec("graph"),
        spec("graph:m=4,ef=6,efc=8,seed=3,fallback=false"),
    ]
}

const WIDTHS: [usize; 6] = [1, 63, 64, 65, 128, 256];

/// Planted data: clusters of near codes (distances 0..=6 from a centre, duplicates included)
/// among random background codes.
fn planted(rng: &mut Rng, bits: usize, n: usize) -> SignatureMatrix {
    let mut m = SignatureMatrix::new(bits).unwrap();
    while m.len() < n {
        let centre = random_code(rng, bits);
        m.push_words(bits, &centre).unwrap();
        for _ in 0..rng.below(6) {
            let d = rng.below(7) as usize;
            let c = flip(rng, &centre, bits, d);
            m.push_words(bits, &c).unwrap();
        }
        m.push_words(bits, &random_code(rng, bits)).unwrap();
    }
    m
}

fn queries(rng: &mut Rng, data: &SignatureMatrix, n: usize) -> Vec<Vec<u64>> {
    let bits = data.bits();
    (0..n)
        .map(|i| match (i % 3, data.len()) {
            (0, l) if l > 0 => data.row(rng.below(l as u64) as usize).to_vec(),
            (1, l) if l > 0 => {
                let d = rng.below(5) as usize;
                let row = rng.below(l as u64) as usize;
                flip(rng, data.row(row), bits, d)
            }
            _ => random_code(rng, bits),
        })
        .collect()
}

fn radii(bits: usize) -> Vec<u32> {
    let mut r = vec![0, 1, 3, 8, bits as u32, bits as u32 + 5];
    r.dedup();
    r
}

/// Compares `idx` with `oracle` on `qs`: radius results equal; k-NN equal when exact, else
/// correct distances in sorted order.
fn compare(name: &str, idx: &dyn HammingIndex, oracle: &LinearScan, qs: &[Vec<u64>]) {
    assert_eq!(idx.len(), oracle.len(), "{name}: len");
    let bits = oracle.bits();
    let flat: Vec<u64> = qs.concat();
    for r in radii(bits) {
        let batch = idx.radius_batch(&flat, r).unwrap();
        for (q, b) in qs.iter().zip(&batch) {
            let want = oracle.radius(q, r).unwrap();
            assert_eq!(&idx.radius(q, r).unwrap(), &want, "{name}: f={bits} r={r}");
            assert_eq!(b, &want, "{name}: batch f={bits} r={r}");
        }
    }
    // The flat forms hold the same answers (FAISS shapes, padded k-NN).
    let r = 3;
    let nested = idx.radius_batch(&flat, r).unwrap();
    let rf = idx.radius_flat(&flat, r).unwrap();
    assert_eq!(rf.lims.len(), qs.len() + 1, "{name}: lims");
    for (q, hits) in nested.iter().enumerate() {
        let (a, b) = (rf.lims[q], rf.lims[q + 1]);
        let got: Vec<Hit> = rf.ids[a..b]
            .iter()
            .zip(&rf.distances[a..b])
            .map(|(&id, &distance)| Hit {
                distance,
                id: id as u32,
            })
            .collect();
        assert_eq!(&got, hits, "{name}: radius_flat");
    }
    let k = 4;
    let kf = idx.knn_flat(&flat, k).unwrap();
    for (q, hits) in idx.knn_batch(&flat, k).unwrap().iter().enumerate() {
        for j in 0..k {
            let (id, d) = (kf.ids[q * k + j], kf.distances[q * k + j]);
            match hits.get(j) {
                Some(h) => assert_eq!((id, d), (i64::from(h.id), h.distance), "{name}"),
                None => assert_eq!((id, d), (-1, u32::MAX), "{name}: padding"),
            }
        }
    }
    for k in [1usize, 3, 10, oracle.len() + 2] {
        let batch = idx.knn_batch(&flat, k).unwrap();
        for (q, b) in qs.iter().zip(&batch) {
            let want = oracle.knn(q, k).unwrap();
            let got = idx.knn(q, k).unwrap();
            assert_eq!(&got, b, "{name}: knn batch vs single f={bits} k={k}");
            if idx.exact_knn() {
                assert_eq!(got, want, "{name}: knn f={bits} k={k}");
            } else {
                assert_eq!(got.len(), want.len(), "{name}: knn length");
                assert!(got.windows(2).all(|p| p[0] < p[1]), "{name}: sorted");
                let all = oracle.radius(q, bits as u32).unwrap();
                for h in &got {
                    assert!(
                        all.contains(h),
                        "{name}: {h:?} is not a stored code at that distance"
                    );
                }
            }
        }
    }
}

#[test]
fn every_index_matches_the_oracle_on_random_and_planted_data() {
    let mut rng = Rng::new(1);
    for &bits in &WIDTHS {
        for data in [planted(&mut rng, bits, 600), {
            let mut m = SignatureMatrix::new(bits).unwrap();
            for _ in 0..400 {
                m.push_words(bits, &random_code(&mut rng, bits)).unwrap();
            }
            m
        }] {
            let oracle = LinearScan::build(&data).unwrap();
            let qs = queries(&mut rng, &data, 30);
            for kind in kinds() {
                compare(kind.name, (kind.build)(&data).as_ref(), &oracle, &qs);
            }
        }
    }
}

#[test]
fn empty_single_and_duplicate_indexes() {
    let mut rng = Rng::new(2);
    for &bits in &WIDTHS {
        let code = random_code(&mut rng, bits);
        for kind in kinds() {
            let empty = (kind.empty)(bits);
            assert!(empty.is_empty());
            assert_eq!(empty.radius(&code, bits as u32).unwrap(), vec![]);
            assert_eq!(empty.knn(&code, 5).unwrap(), vec![]);
            // One element.
            let mut one = SignatureMatrix::new(bits).unwrap();
            one.push_words(bits, &code).unwrap();
            let idx = (kind.build)(&one);
            assert_eq!(
                idx.radius(&code, 0).unwrap(),
                vec![Hit { distance: 0, id: 0 }]
            );
            assert_eq!(idx.knn(&code, 3).unwrap(), vec![Hit { distance: 0, id: 0 }]);
            // The same code under many ids: all returned, by id.
            let mut dup = SignatureMatrix::new(bits).unwrap();
            for _ in 0..40 {
                dup.push_words(bits, &code).unwrap();
            }
            let idx = (kind.build)(&dup);
            let all: Vec<Hit> = (0..40).map(|id| Hit { distance: 0, id }).collect();
            assert_eq!(idx.radius(&code, 0).unwrap(), all, "{}", kind.name);
            if idx.exact_knn() {
                assert_eq!(
                    idx.knn(&code, 7).unwrap(),
                    all[..7].to_vec(),
                    "{}",
                    kind.name
                );
            }
            let oracle = LinearScan::build(&dup).unwrap();
            compare(
                kind.name,
                idx.as_ref(),
                &oracle,
                &queries(&mut rng, &dup, 6),
            );
        }
    }
}

#[test]
fn every_index_stays_exact_through_inserts_and_removals() {
    let mut rng = Rng::new(3);
    for &bits in &[64usize, 65, 256] {
        let data = planted(&mut rng, bits, 500);
        let half = data.slice_rows(0..250);
        let half = SignatureMatrix::from_parts(bits, half.as_slice().to_vec()).unwrap();
        for kind in kinds() {
            let mut idx = (kind.build)(&half);
            let mut oracle = LinearScan::build(&half).unwrap();
            // Inserts after the build, with ids out of order.
            for i in (250..data.len()).rev() {
                idx.insert(i as u32, data.row(i)).unwrap();
                oracle.insert(i as u32, data.row(i)).unwrap();
            }
            assert!(
                idx.insert(3, data.row(3)).is_err(),
                "{}: duplicate id",
                kind.name
            );
            let qs = queries(&mut rng, &data, 20);
            compare(kind.name, idx.as_ref(), &oracle, &qs);
            // Removals, including ids never stored.
            for i in (0..data.len()).step_by(3) {
                assert!(idx.remove(i as u32).unwrap());
                assert!(oracle.remove(i as u32).unwrap());
            }
            assert!(!idx.remove(100_000).unwrap());
            assert!(!idx.remove(0).unwrap());
            compare(kind.name, idx.as_ref(), &oracle, &qs);
            // Re-inserting a removed id works.
            idx.insert(0, data.row(1)).unwrap();
            oracle.insert(0, data.row(1)).unwrap();
            compare(kind.name, idx.as_ref(), &oracle, &qs);
        }
    }
}

#[test]
fn wrong_widths_are_errors_not_panics() {
    for kind in kinds() {
        let mut idx = (kind.empty)(65);
        assert!(idx.insert(0, &[1]).is_err());
        assert!(
            idx.insert(0, &[1, 4]).is_err(),
            "{}: padding bit set",
            kind.name
        );
        assert!(idx.radius(&[1], 3).is_err());
        assert!(idx.knn(&[1, 2, 3], 3).is_err());
        assert!(idx.radius_batch(&[1, 2, 3], 3).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_small_instances(seed in any::<u64>(), n in 0usize..120, bits in prop_oneof![Just(1usize), Just(8), Just(64), Just(100), Just(128)]) {
        let mut rng = Rng::new(seed);
        let data = planted(&mut rng, bits, n);
        let data = SignatureMatrix::from_parts(bits, data.as_slice()[..n * words_for(bits)].to_vec()).unwrap();
        let oracle = LinearScan::build(&data).unwrap();
        let qs = queries(&mut rng, &data, 8);
        for kind in kinds() {
            compare(kind.name, (kind.build)(&data).as_ref(), &oracle, &qs);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Batches of inserts and removals (`insert_batch`, `remove_batch`) leave every index
    /// equal to the oracle changed one id at a time; a batch with a stored or repeated id
    /// changes nothing.
    #[test]
    fn batch_updates_match_the_oracle(
        seed in any::<u64>(),
        n in 0usize..150,
        bits in prop_oneof![Just(8usize), Just(64), Just(100)],
        steps in proptest::collection::vec((any::<bool>(), 1usize..120), 1..5),
    ) {
        let mut rng = Rng::new(seed);
        let data = planted(&mut rng, bits, n + 400);
        let first = SignatureMatrix::from_parts(bits, data.slice_rows(0..n).as_slice().to_vec()).unwrap();
        let qs = queries(&mut rng, &data, 6);
        for kind in kinds() {
            let mut idx = (kind.build)(&first);
            let mut oracle = LinearScan::build(&first).unwrap();
            let mut next = n;
            for &(insert, size) in &steps {
                if insert {
                    let size = size.min(data.len() - next);
                    // Ids out of order, some far apart.
                    let ids: Vec<u32> = (0..size).rev().map(|i| ((next + i) * 7) as u32).collect();
                    let codes: Vec<u64> = (0..size)
                        .rev()
                        .flat_map(|i| data.row(next + i).to_vec())
                        .collect();
                    if let Some(&stored) = oracle.ids().first() {
                        let mut bad = ids.clone();
                        bad.push(stored);
                        let mut bad_codes = codes.clone();
                        bad_codes.extend_from_slice(data.row(0));
                        prop_assert!(idx.insert_batch(&bad, &bad_codes).is_err());
                        prop_assert_eq!(idx.len(), oracle.len(), "{}: unchanged", kind.name);
                    }
                    idx.insert_batch(&ids, &codes).unwrap();
                    for (&id, c) in ids.iter().zip(codes.chunks_exact(words_for(bits))) {
                        oracle.insert(id, c).unwrap();
                    }
                    next += size;
                } else {
                    let stored = oracle.ids().to_vec();
                    let mut ids: Vec<u32> = (0..size)
                        .map(|_| if stored.is_empty() || rng.below(4) == 0 {
                            rng.below(10_000) as u32
                        } else {
                            stored[rng.below(stored.len() as u64) as usize]
                        })
                        .collect();
                    ids.push(ids[0]);
                    let mut want = 0;
                    for &id in &ids {
                        want += usize::from(oracle.remove(id).unwrap());
                    }
                    prop_assert_eq!(idx.remove_batch(&ids).unwrap(), want, "{}", kind.name);
                }
                compare(kind.name, idx.as_ref(), &oracle, &qs);
            }
        }
    }
}

#[test]
fn every_index_stays_exact_after_save_and_load() {
    let mut rng = Rng::new(5);
    let dir = std::env::temp_dir().join(format!("simlsh-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for &bits in &[64usize, 65, 256] {
        let data = planted(&mut rng, bits, 400);
        let half =
            SignatureMatrix::from_parts(bits, data.slice_rows(0..300).as_slice().to_vec()).unwrap();
        let qs = queries(&mut rng, &data, 15);
        for (k, kind) in kinds().into_iter().enumerate() {
            let mut idx = (kind.build)(&half);
            let mut oracle = LinearScan::build(&half).unwrap();
            // Pending inserts and removals are saved too.
            for i in 300..data.len() {
                idx.insert(i as u32, data.row(i)).unwrap();
                oracle.insert(i as u32, data.row(i)).unwrap();
            }
            for i in (0..data.len()).step_by(7) {
                idx.remove(i as u32).unwrap();
                oracle.remove(i as u32).unwrap();
            }
            let path = dir.join(format!("idx-{bits}-{k}.simlsh"));
            simlsh::persist::save_index(idx.as_ref(), &path).unwrap();
            let mut loaded = simlsh::persist::load_index(&path).unwrap();
            assert_eq!(loaded.kind(), idx.kind());
            // The spec survives the file, and rebuilds the same kind of index.
            let spec = idx.spec();
            assert_eq!(loaded.spec(), spec, "{}", kind.name);
            let file = simlsh::persist::IndexFile::open(&path).unwrap();
            assert_eq!(file.spec().unwrap(), spec, "{}", kind.name);
            assert_eq!(spec.to_string().parse::<IndexSpec>().unwrap(), spec);
            let rebuilt = spec.build(&half).unwrap();
            assert_eq!(rebuilt.spec(), spec, "{}", kind.name);
            compare(kind.name, loaded.as_ref(), &oracle, &qs);
            // A loaded index keeps changing correctly.
            loaded.insert(7, data.row(8)).unwrap();
            oracle.insert(7, data.row(8)).unwrap();
            loaded.remove(1).unwrap();
            oracle.remove(1).unwrap();
            compare(kind.name, loaded.as_ref(), &oracle, &qs);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
