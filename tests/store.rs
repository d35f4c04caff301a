//! The online store against brute-force oracles: every query after inserts, replacements,
//! removals, freezes, merges, checkpoints and reopening equals a scan of a model of the
//! live items; check-and-insert is atomic under concurrent writers; the log's torn tail is
//! cut and reported while damage in the middle is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::index::IndexSpec;
use simlsh::store::{Content, Item, Match, Op, OpenOptions, Outcome, Payload, Store, Within};
use simlsh::text::Tokenizer;

/// A fresh directory under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-test-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Brute-force radius search over a model of the live codes.
fn brute(model: &BTreeMap<u64, u64>, q: u64, r: u32) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = model
        .iter()
        .map(|(&id, &c)| (id, (c ^ q).count_ones()))
        .filter(|&(_, d)| d <= r)
        .collect();
    v.sort_unstable_by_key(|&(id, d)| (d, id));
    v
}

fn pairs(m: &[Match]) -> Vec<(u64, u32)> {
    m.iter().map(|m| (m.id, m.distance)).collect()
}

/// Codes in clusters, so that radius-3 queries find something.
fn code(rng: &mut Xoshiro256PlusPlus, centers: &[u64]) -> u64 {
    let mut c = centers[rng.random_range(0..centers.len())];
    for _ in 0..rng.random_range(0..4) {
        c ^= 1 << rng.random_range(0..64);
    }
    c
}

fn check_all(store: &Store, model: &BTreeMap<u64, u64>, queries: &[u64]) {
    assert_eq!(store.len(), model.len() as u64);
    let prepared: Vec<_> = queries
        .iter()
        .map(|&q| store.prepare_query(Item::Code(&[q])).unwrap())
        .collect();
    for r in [0, 3, 5] {
        // The batch search (segments' batch probes, one pass over the delta) answers as
        // one query at a time, and as brute force.
        let batch = store.query_batch(&prepared, Within::Radius(r)).unwrap();
        for (&q, got) in queries.iter().zip(&batch) {
            assert_eq!(
                pairs(got),
                brute(model, q, r),
                "batch query {q:#x} radius {r}"
            );
        }
    }
    for &q in queries {
        for r in [0, 3, 5] {
            let got = store.query(Item::Code(&[q]), Within::Radius(r)).unwrap();
            assert_eq!(pairs(&got), brute(model, q, r), "query {q:#x} radius {r}");
        }
        let k = store.query(Item::Code(&[q]), Within::Nearest(7)).unwrap();
        let mut all = brute(model, q, 64);
        all.truncate(7);
        assert_eq!(pairs(&k), all, "k-NN of {q:#x}");
    }
    for (&id, &c) in model.iter().take(50) {
        assert_eq!(store.get(id).unwrap().code, vec![c]);
    }
}

/// Inserts, replacements and removals through many freezes, merges and checkpoints, then
/// reopening: every radius and k-NN query equals brute force over the model.
#[test]
fn code_store_answers_as_brute_force_through_merges_checkpoints_and_reopening() {
    let dir = scratch("codes");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let centers: Vec<u64> = (0..40).map(|_| rng.random()).collect();
    let store = Store::builder()
        .bits(64)
        .delta_limit(64)
        .create(&dir)
        .unwrap();
    let mut model = BTreeMap::new();
    for round in 0..30 {
        let mut ops = Vec::new();
        for _ in 0..100 {
            let id = rng.random_range(0..3000u64);
            if rng.random_range(0..10) == 0 {
                ops.push(Op::Remove { id });
                model.remove(&id);
            } else {
                let c = code(&mut rng, &centers);
                let item = store.prepare(Item::Code(&[c])).unwrap();
                ops.push(Op::Insert { id, item });
                model.insert(id, c);
            }
        }
        store.apply(ops).unwrap();
        if round % 10 == 9 {
            store.checkpoint().unwrap();
        }
    }
    let queries: Vec<u64> = (0..30).map(|_| code(&mut rng, &centers)).collect();
    check_all(&store, &model, &queries);
    let s = store.stats();
    assert!(s.segments > 1 && s.checkpoints >= 3, "{s:?}");
    store.close().unwrap();

    // Reopened from the last checkpoint (and an empty log).
    let store = Store::open(&dir).unwrap();
    check_all(&store, &model, &queries);
    // More changes, logged but not checkpointed, then dropped without closing the log.
    for _ in 0..200 {
        let id = rng.random_range(0..3000u64);
        let c = code(&mut rng, &centers);
        store.insert(id, Item::Code(&[c])).unwrap();
        model.insert(id, c);
    }
    let ids: Vec<u64> = model.keys().copied().take(100).collect();
    for id in ids {
        assert!(store.remove(id).unwrap());
        model.remove(&id);
    }
    assert!(!store.remove(u64::MAX).unwrap());
    check_all(&store, &model, &queries);
    drop(store);
    let store = Store::open(&dir).unwrap();
    check_all(&store, &model, &queries);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes replayed from the log alone (no checkpoint) come back on opening; a read-only
/// reader sees the checkpoint only.
#[test]
fn writes_logged_since_the_last_checkpoint_are_replayed() {
    let dir = scratch("replay");
    let model = logged_store(&dir, 500);
    let ro = Store::open_read_only(&dir).unwrap();
    assert_eq!(ro.len(), 0, "the checkpoint holds nothing yet");
    drop(ro);
    let store = Store::open(&dir).unwrap();
    assert_eq!(store.recovery().replayed, 500);
    assert!(store.recovery().torn.is_none());
    check_all(&store, &model, &[model[&0], model[&17]]);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

/// A store with `n` inserts in its log and none in its checkpoint; returns the model.
fn logged_store(dir: &Path, n: u64) -> BTreeMap<u64, u64> {
    let store = Store::builder().bits(64).create(dir).unwrap();
    let mut model = BTreeMap::new();
    for id in 0..n {
        let c = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        store.insert(id, Item::Code(&[c])).unwrap();
        model.insert(id, c);
    }
    // Stop the threads without a checkpoint: copy the files while it runs.
    let copy = dir.with_extension("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if !e.file_name().to_string_lossy().starts_with('.') {
            std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
        }
    }
    drop(store);
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::rename(&copy, dir).unwrap();
    model
}

/// A torn tail (an interrupted group) is cut off with a report; the acknowledged records
/// before it are all there. Damage before valid records is an error that rewrites nothing.
#[test]
fn a_torn_log_tail_is_cut_and_reported_and_damage_in_the_middle_is_an_error() {
    let dir = scratch("torn");
    let model = logged_store(&dir, 100);
    let log = log_files(&dir).pop().unwrap();
    let len = std::fs::metadata(&log).unwrap().len();
    // Half a record appended: a torn write.
    let mut bytes = std::fs::read(&log).unwrap();
    let whole = bytes.clone();
    bytes.extend_from_slice(&[42, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9]);
    std::fs::write(&log, &bytes).unwrap();
    let store = Store::open(&dir).unwrap();
    let torn = store.recovery().torn.clone().expect("a torn tail");
    assert_eq!((torn.offset, torn.dropped), (len, 11));
    assert_eq!(store.recovery().replayed, 100);
    check_all(&store, &model, &[model[&5]]);
    drop(store);

    // One byte flipped in the 10th record, valid records after it: an error, the file
    // untouched.
    let dir2 = scratch("torn-middle");
    let _ = logged_store(&dir2, 100);
    let log2 = log_files(&dir2).pop().unwrap();
    let mut bad = std::fs::read(&log2).unwrap();
    assert_eq!(bad.len(), whole.len());
    let at = 24 + 9 * (24 + 1 + 8 + 8) + 30;
    bad[at] ^= 0x40;
    std::fs::write(&log2, &bad).unwrap();
    let err = Store::open(&dir2).unwrap_err().to_string();
    assert!(
        err.contains("corrupt") && err.contains("record 10"),
        "{err}"
    );
    assert_eq!(std::fs::read(&log2).unwrap(), bad, "nothing rewritten");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&dir2).unwrap();
}

/// A damaged segment file is detected when opening (checksums verified by default).
#[test]
fn a_corrupt_segment_is_detected_when_opening() {
    let dir = scratch("corrupt-seg");
    let ids: Vec<u64> = (0..1000).collect();
    let codes: Vec<u64> = ids.iter().map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    Store::builder()
        .bits(64)
        .create_with_codes(&dir, &ids, &codes)
        .unwrap();
    let seg = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".rows.simlsh"))
        .unwrap();
    let mut b = std::fs::read(&seg).unwrap();
    b[600] ^= 1;
    std::fs::write(&seg, &b).unwrap();
    let err = Store::open(&dir).unwrap_err().to_string();
    assert!(err.contains("checksum"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One writer at a time, before and after checkpoints replace the manifest; readers of the
/// last checkpoint need no lock and see its contents while the writer goes on.
#[test]
fn one_writer_many_read_only_readers() {
    let dir = scratch("readers");
    let store = Store::builder().bits(64).create(&dir).unwrap();
    store.insert(1, Item::Code(&[0xff])).unwrap();
    let err = Store::open(&dir).unwrap_err();
    assert!(matches!(err, simlsh::Error::Unavailable(_)), "{err}");
    store.checkpoint().unwrap();
    store.insert(2, Item::Code(&[0xfe])).unwrap();
    let readers: Vec<Store> = (0..3)
        .map(|_| Store::open_read_only(&dir).unwrap())
        .collect();
    for r in &readers {
        assert_eq!(r.len(), 1);
        assert_eq!(
            r.query(Item::Code(&[0xff]), Within::Radius(1))
                .unwrap()
                .len(),
            1
        );
        assert!(matches!(r.remove(1), Err(simlsh::Error::Unavailable(_))));
    }
    store.checkpoint().unwrap();
    readers[0].refresh().unwrap();
    assert_eq!(readers[0].len(), 2);
    // Checkpoints replace the manifest; a second writer is still refused (the lock is on a
    // file never replaced), and taken once the first is gone.
    let err = Store::open(&dir).unwrap_err();
    assert!(matches!(err, simlsh::Error::Unavailable(_)), "{err}");
    drop(store);
    drop(readers);
    assert_eq!(Store::open(&dir).unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Many threads send near-duplicates of the same few codes at once: exactly one item per
/// group gets in, and every refused one names an item within the radius.
#[test]
fn check_and_insert_lets_exactly_one_near_duplicate_in_under_concurrency() {
    let dir = scratch("concurrent");
    let store = Arc::new(
        Store::builder()
            .bits(64)
            .delta_limit(100)
            .create(&dir)
            .unwrap(),
    );
    // 50 groups; members of a group are within distance 2 of its center, centers far apart.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let centers: Vec<u64> = (0..50).map(|_| rng.random()).collect();
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let store = Arc::clone(&store);
            let centers = centers.clone();
            std::thread::spawn(move || {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(100 + t);
                let mut inserted = Vec::new();
                for (g, &c) in centers.iter().enumerate() {
                    let q = c ^ (1 << rng.random_range(0..64));
                    let id = (g as u64) * 1000 + t;
                    let out = store
                        .insert_if_new(id, Item::Code(&[q]), Within::Radius(3))
                        .unwrap();
                    if out.inserted {
                        inserted.push(g);
                    } else {
                        assert!(out.matches.iter().all(|m| m.distance <= 3));
                        assert!(out.matches.iter().any(|m| m.id / 1000 == g as u64));
                    }
                }
                inserted
            })
        })
        .collect();
    let mut per_group = vec![0; centers.len()];
    for t in threads {
        for g in t.join().unwrap() {
            per_group[g] += 1;
        }
    }
    assert!(per_group.iter().all(|&n| n == 1), "{per_group:?}");
    assert_eq!(store.len(), centers.len() as u64);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Text: the store keeps the features (not the text) and the text model. Cosine queries
/// equal the brute-force rule (exact cosine ≥ τ among codes within the planned radius),
/// with exactly the values of `SparseVectors`, and check-and-insert refuses the
/// near-duplicate tweets; the model survives reopening without any other file.
#[test]
fn text_store_cosine_queries_equal_brute_force_and_survive_reopening() {
    let dir = scratch("text");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("datasets/healthtweets-10k/healthtweets-10k.csv"),
    )
    .unwrap();
    let docs: Vec<String> = text
        .lines()
        .skip(1)
        .take(1500)
        .filter_map(|l| l.split_once(',').map(|(_, t)| t.to_string()))
        .collect();
    let tok = Tokenizer::builder()
        .stop_words(simlsh::text::StopWords::english())
        .build()
        .unwrap();
    let store = Store::builder()
        .tokenizer(tok)
        .bits(256)
        .seed(5)
        .delta_limit(200)
        .create(&dir)
        .unwrap();
    assert_eq!(store.content(), Content::Text);
    let tau = 0.8;
    let radius = store.planned_radius(tau).unwrap();
    let mut kept: Vec<(u64, Vec<u64>, Payload)> = Vec::new();
    let mut refused = 0;
    for (i, d) in docs.iter().enumerate() {
        let p = store.prepare(Item::Text(d)).unwrap();
        // The oracle: exact cosine ≥ τ and distance ≤ radius among the kept documents.
        let want: Vec<u64> = kept
            .iter()
            .filter(|(_, c, pay)| {
                let dist = simlsh::hamming::distance(c, &p.code).unwrap();
                dist <= radius && cos(pay, &p.payload) >= tau
            })
            .map(|k| k.0)
            .collect();
        let out = store
            .insert_if_new(i as u64, Item::Text(d), Within::Cosine(tau))
            .unwrap();
        let mut got: Vec<u64> = out.matches.iter().map(|m| m.id).collect();
        got.sort_unstable();
        let mut want_sorted = want.clone();
        want_sorted.sort_unstable();
        assert_eq!(got, want_sorted, "document {i}");
        assert_eq!(out.inserted, want.is_empty());
        if out.inserted {
            kept.push((i as u64, p.code, p.payload));
        } else {
            refused += 1;
            for m in &out.matches {
                assert!(m.cosine.unwrap() >= tau);
            }
        }
    }
    assert!(refused > 10, "{refused} near-duplicate tweets refused");
    store.close().unwrap();
    let store = Store::open(&dir).unwrap();
    assert_eq!(store.len(), kept.len() as u64);
    // The recorded model signs like the original: the same code for a kept document.
    let (id, code, _) = &kept[3];
    let p = store.prepare(Item::Text(&docs[*id as usize])).unwrap();
    assert_eq!(&p.code, code);
    let hits = store
        .query(Item::Text(&docs[*id as usize]), Within::Cosine(0.999))
        .unwrap();
    assert_eq!(hits[0].id, *id);
    assert!((hits[0].cosine.unwrap() - 1.0).abs() < 1e-6);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn cos(a: &Payload, b: &Payload) -> f64 {
    use simlsh::verify::{SparseVectors, Vectors};
    let (Payload::Sparse(ka, wa), Payload::Sparse(kb, wb)) = (a, b) else {
        panic!("sparse payloads")
    };
    let rows = [
        ka.iter()
            .copied()
            .zip(wa.iter().copied())
            .collect::<Vec<_>>(),
        kb.iter()
            .copied()
            .zip(wb.iter().copied())
            .collect::<Vec<_>>(),
    ];
    SparseVectors::from_rows(rows).unwrap().cosine(0, 1)
}

/// Vectors: cosine answers equal the brute-force rule over `DenseVectors`.
#[test]
fn vector_store_cosine_queries_equal_brute_force() {
    use simlsh::verify::{DenseVectors, Vectors};
    let dir = scratch("vectors");
    let dim = 32;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let n = 600;
    let base: Vec<f32> = (0..40 * dim)
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    let x: Vec<f32> = (0..n)
        .flat_map(|i| {
            let c = (i % 40) * dim;
            (0..dim)
                .map(|k| base[c + k] + 0.15 * rng.random_range(-1.0f32..1.0))
                .collect::<Vec<_>>()
        })
        .collect();
    let store = Store::builder()
        .content(Content::Vectors { dim })
        .bits(128)
        .delta_limit(100)
        .index(IndexSpec::Linear)
        .create(&dir)
        .unwrap();
    let ops: Vec<Op> = (0..n)
        .map(|i| Op::Insert {
            id: i as u64,
            item: store
                .prepare(Item::Vector(&x[i * dim..(i + 1) * dim]))
                .unwrap(),
        })
        .collect();
    let out = store.apply(ops).unwrap();
    assert!(
        out.iter()
            .all(|o| *o == Outcome::Inserted { replaced: false })
    );
    let arr = simlsh::ndarray::Array2::from_shape_vec((n, dim), x.clone()).unwrap();
    let dv = DenseVectors::new(arr.view()).unwrap();
    let tau = 0.9;
    let radius = store.planned_radius(tau).unwrap();
    let codes: Vec<Vec<u64>> = (0..n).map(|i| store.get(i as u64).unwrap().code).collect();
    for q in (0..n).step_by(37) {
        let got = store
            .query(
                Item::Vector(&x[q * dim..(q + 1) * dim]),
                Within::Cosine(tau),
            )
            .unwrap();
        let mut want: Vec<(u64, f64)> = (0..n)
            .filter(|&j| simlsh::hamming::distance(&codes[q], &codes[j]).unwrap() <= radius)
            .map(|j| (j as u64, dv.cosine(q, j)))
            .filter(|&(_, c)| c >= tau)
            .collect();
        want.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then(a.0.cmp(&b.0)));
        let got: Vec<(u64, f64)> = got.iter().map(|m| (m.id, m.cosine.unwrap())).collect();
        assert_eq!(got, want, "query {q}");
    }
    // The batch search gives the same cosine answers.
    let prepared: Vec<_> = (0..n)
        .step_by(37)
        .map(|q| {
            store
                .prepare(Item::Vector(&x[q * dim..(q + 1) * dim]))
                .unwrap()
        })
        .collect();
    let batch = store.query_batch(&prepared, Within::Cosine(tau)).unwrap();
    for (k, q) in (0..n).step_by(37).enumerate() {
        let one = store
            .query(
                Item::Vector(&x[q * dim..(q + 1) * dim]),
                Within::Cosine(tau),
            )
            .unwrap();
        assert_eq!(batch[k], one, "batch query {q}");
    }
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store's default seed is the signers' ([`SignerSpec::default`]'s): a vector store created
/// without a seed signs as the library's default signer spec of its kind, width and dimension
/// does, and a store of another seed does not.
#[test]
fn the_default_seed_is_the_signers() {
    use simlsh::Signer as _;
    use simlsh::signers::SignerSpec;
    let (dim, n, bits) = (16, 40, 128);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let x: Vec<f32> = (0..n * dim)
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    let codes = |seed: Option<u64>| {
        let dir = scratch(&format!("seed-{seed:?}"));
        let mut b = Store::builder()
            .content(Content::Vectors { dim })
            .bits(bits);
        if let Some(s) = seed {
            b = b.seed(s);
        }
        assert_eq!(b.seed_of(), seed.unwrap_or(SignerSpec::default().seed));
        let store = b.create(&dir).unwrap();
        let got: Vec<Vec<u64>> = (0..n)
            .map(|i| {
                let item = store
                    .prepare(Item::Vector(&x[i * dim..(i + 1) * dim]))
                    .unwrap();
                item.code
            })
            .collect();
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
        got
    };
    let signer = SignerSpec::new(simlsh::store::DEFAULT_SIGNER_VECTORS)
        .bits(bits)
        .build(Some(dim as u64))
        .unwrap();
    let arr = simlsh::ndarray::Array2::from_shape_vec((n, dim), x.clone()).unwrap();
    let sigs = signer.sign_dense(&arr).unwrap();
    let want: Vec<Vec<u64>> = (0..n).map(|i| sigs.row(i).to_vec()).collect();
    let default = codes(None);
    assert_eq!(default, want);
    assert_eq!(codes(Some(SignerSpec::default().seed)), default);
    assert_ne!(codes(Some(SignerSpec::default().seed + 1)), default);
}

/// Bad items are typed errors naming what does not fit, and change nothing.
#[test]
fn items_that_do_not_fit_are_refused() {
    let dir = scratch("bad-items");
    let store = Store::builder().bits(60).create(&dir).unwrap();
    assert!(matches!(
        store.insert(1, Item::Code(&[1u64 << 62])),
        Err(simlsh::Error::PaddingBits { .. })
    ));
    assert!(store.insert(1, Item::Code(&[1, 2])).is_err());
    assert!(store.insert(1, Item::Text("hello")).is_err());
    assert!(store.query(Item::Code(&[1]), Within::Cosine(0.9)).is_err());
    assert!(store.is_empty());
    drop(store);
    let vdir = scratch("bad-vectors");
    let store = Store::builder()
        .content(Content::Vectors { dim: 3 })
        .create(&vdir)
        .unwrap();
    assert!(
        store
            .insert(1, Item::Vector(&[1.0, f32::NAN, 0.0]))
            .is_err()
    );
    assert!(store.insert(1, Item::Vector(&[1.0, 0.0])).is_err());
    assert!(store.insert(1, Item::Code(&[0, 0, 0, 0])).is_err());
    assert!(store.is_empty());
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&vdir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Any sequence of inserts, removals and checkpoints leaves a store that answers as
    /// brute force, before and after reopening.
    #[test]
    fn any_sequence_of_changes_answers_as_brute_force(
        ops in proptest::collection::vec((0u8..10, 0u64..200, any::<u64>(), 0u32..5), 1..400),
    ) {
        let dir = scratch(&format!("prop-{}", ops.len()));
        let centers = [0u64, u64::MAX, 0xF0F0_F0F0_F0F0_F0F0];
        let store = Store::builder().bits(64).delta_limit(16).create(&dir).unwrap();
        let mut model = BTreeMap::new();
        for &(kind, id, bits, flips) in &ops {
            match kind {
                0 => { store.remove(id).unwrap(); model.remove(&id); }
                1 => store.checkpoint().unwrap(),
                _ => {
                    let mut c = centers[(bits % 3) as usize];
                    for f in 0..flips { c ^= 1 << ((bits >> (8 * f)) % 64); }
                    store.insert(id, Item::Code(&[c])).unwrap();
                    model.insert(id, c);
                }
            }
        }
        check_all(&store, &model, &centers);
        drop(store);
        let store = OpenOptions::new().open(&dir).unwrap();
        check_all(&store, &model, &centers);
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A batch of check-and-inserts (searched in parallel at the start of the group), mixed
/// with inserts and removals, gives exactly the outcomes of applying them one by one to a
/// brute-force model.
#[test]
fn batched_check_and_insert_equals_the_one_by_one_rule() {
    let dir = scratch("batched-checks");
    let store = Store::builder()
        .bits(64)
        .delta_limit(300)
        .create(&dir)
        .unwrap();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
    let centers: Vec<u64> = (0..60).map(|_| rng.random()).collect();
    let mut model: BTreeMap<u64, u64> = BTreeMap::new();
    for round in 0..6 {
        let mut ops = Vec::new();
        let mut want = Vec::new();
        for _ in 0..700 {
            let id = rng.random_range(0..2000u64);
            let c = code(&mut rng, &centers);
            let item = store.prepare(Item::Code(&[c])).unwrap();
            match rng.random_range(0..20) {
                0 => {
                    want.push(Outcome::Removed {
                        found: model.remove(&id).is_some(),
                    });
                    ops.push(Op::Remove { id });
                }
                1 => {
                    want.push(Outcome::Inserted {
                        replaced: model.insert(id, c).is_some(),
                    });
                    ops.push(Op::Insert { id, item });
                }
                _ => {
                    let r = 2 + round % 2;
                    let matches: Vec<Match> = brute(&model, c, r)
                        .into_iter()
                        .map(|(id, distance)| Match {
                            id,
                            distance,
                            cosine: None,
                        })
                        .collect();
                    let inserted = matches.is_empty();
                    if inserted {
                        model.insert(id, c);
                    }
                    want.push(Outcome::Checked(simlsh::store::CheckOutcome {
                        inserted,
                        matches,
                    }));
                    ops.push(Op::InsertIfNew {
                        id,
                        item,
                        within: Within::Radius(r),
                    });
                }
            }
        }
        let got = store.apply(ops).unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "round {round}, change {i}");
        }
    }
    check_all(&store, &model, &centers);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Batched check-and-inserts through the writer's index of the young rows (the delta and
/// the small segments in one pigeonhole index, the large segments by their tables): with a
/// tiny delta, merges carry indexed rows into segments too large to be covered and the
/// index is rebuilt; ids removed, re-inserted with the same code and replaced; a second
/// radius searched without it. Every outcome equals the one-by-one rule on a brute-force
/// model.
#[test]
fn batched_checks_through_the_young_index_equal_brute_force() {
    let dir = scratch("young-index");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(22);
    let centers: Vec<u64> = (0..80).map(|_| rng.random()).collect();
    // A large first segment (not covered), as a store built at once has.
    let first: Vec<u64> = (0..3000).map(|_| code(&mut rng, &centers)).collect();
    let ids: Vec<u64> = (0..3000).collect();
    Store::builder()
        .bits(64)
        .delta_limit(1)
        .create_with_codes(&dir, &ids, &first)
        .unwrap();
    let store = Store::open(&dir).unwrap();
    let mut model: BTreeMap<u64, u64> = ids.iter().copied().zip(first).collect();
    for round in 0..14 {
        let r = if round == 5 { 2 } else { 3 };
        let mut ops = Vec::new();
        let mut want = Vec::new();
        for _ in 0..400 {
            let id = rng.random_range(0..6000u64);
            let mut c = code(&mut rng, &centers);
            match rng.random_range(0..16) {
                0 => {
                    want.push(Outcome::Removed {
                        found: model.remove(&id).is_some(),
                    });
                    ops.push(Op::Remove { id });
                    continue;
                }
                // Re-inserted with its own code, or replaced.
                1 | 2 => {
                    if let Some(&old) = model.get(&id)
                        && rng.random_range(0..2) == 0
                    {
                        c = old;
                    }
                    want.push(Outcome::Inserted {
                        replaced: model.insert(id, c).is_some(),
                    });
                    ops.push(Op::Insert {
                        id,
                        item: store.prepare(Item::Code(&[c])).unwrap(),
                    });
                    continue;
                }
                _ => {}
            }
            let matches: Vec<Match> = brute(&model, c, r)
                .into_iter()
                .map(|(id, distance)| Match {
                    id,
                    distance,
                    cosine: None,
                })
                .collect();
            let inserted = matches.is_empty();
            if inserted {
                model.insert(id, c);
            }
            want.push(Outcome::Checked(simlsh::store::CheckOutcome {
                inserted,
                matches,
            }));
            ops.push(Op::InsertIfNew {
                id,
                item: store.prepare(Item::Code(&[c])).unwrap(),
                within: Within::Radius(r),
            });
        }
        let got = store.apply(ops).unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "round {round}, change {i}");
        }
        if round % 4 == 3 {
            store.checkpoint().unwrap();
        }
    }
    assert!(store.stats().merges > 0);
    check_all(&store, &model, &centers);
    store.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `merging` is true until the background has merged every crowded size class: then at
/// most seven segments of each class are left; a read-only store never merges.
#[test]
fn merging_ends_when_every_size_class_is_merged() {
    let dir = scratch("merging");
    let store = Store::builder()
        .bits(64)
        .delta_limit(1)
        .create(&dir)
        .unwrap();
    for id in 0..200u64 {
        store.insert(id, Item::Code(&[id * 0x9E37_79B9])).unwrap();
    }
    let t = std::time::Instant::now();
    while store.merging() {
        assert!(t.elapsed().as_secs() < 120, "merges never settled");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let s = store.stats();
    // 200 rows of one each: classes of 1-7, 8-63 and 64-511 rows, at most 7 of each.
    assert!(s.merges >= 25 && s.segments <= 21, "{s:?}");
    assert_eq!(s.items, 200);
    store.checkpoint().unwrap();
    let reader = Store::open_read_only(&dir).unwrap();
    assert!(!reader.merging());
    store.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
