//! The file format: round trips, memory mapping without copies, and typed errors for
//! truncated, corrupt, wrong-version, wrong-kind and foreign files.

use std::path::PathBuf;

use simlsh::index::{HammingIndex, LinearScan};
use simlsh::io::{load_index, load_signatures, save_signatures};
use simlsh::rng::Rng;
use simlsh::signers::HashingTrick;
use simlsh::{Error, SignatureMatrix, Signer};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-persist-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn sigs(bits: usize, n: usize) -> SignatureMatrix {
    let s = HashingTrick::builder().bits(bits).seed(3).build().unwrap();
    let mut rng = Rng::new(1);
    let mut m = SignatureMatrix::new(bits).unwrap();
    for _ in 0..n {
        let ids: Vec<u64> = (0..10)
            .map(|_| rng.below(1000))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        m.push(&s.sign_sparse(&ids, &vec![1.0; ids.len()]).unwrap())
            .unwrap();
    }
    m
}

#[test]
fn signatures_round_trip_through_a_memory_map() {
    for bits in [1, 64, 65, 256] {
        let m = sigs(bits, 300);
        let p = tmp(&format!("sigs-{bits}.simlsh"));
        let info = HashingTrick::builder()
            .bits(bits)
            .seed(3)
            .build()
            .unwrap()
            .info();
        save_signatures(&p, &m, Some(&info)).unwrap();
        let f = load_signatures(&p).unwrap();
        assert!(f.matrix.storage().is_mapped(), "loaded without copying");
        assert_eq!(f.matrix.as_slice(), m.as_slice());
        assert_eq!(f.matrix.bits(), bits);
        assert_eq!(f.params["signer.kind"], "hashing-trick");
        assert_eq!(f.params["signer.seed"], "3");
    }
    // Empty matrices too.
    let p = tmp("empty.simlsh");
    save_signatures(&p, &SignatureMatrix::new(64).unwrap(), None).unwrap();
    assert!(load_signatures(&p).unwrap().matrix.is_empty());
}

#[test]
fn linear_scan_round_trips_and_stays_searchable_and_dynamic() {
    let m = sigs(128, 500);
    let mut idx = LinearScan::build(&m).unwrap();
    idx.remove(7).unwrap();
    let p = tmp("linear.simlsh");
    idx.save(&p).unwrap();
    let mut loaded = load_index(&p).unwrap();
    assert_eq!(loaded.kind(), "linear");
    assert_eq!(loaded.len(), 499);
    for q in 0..50 {
        assert_eq!(
            loaded.radius(m.row(q), 20).unwrap(),
            idx.radius(m.row(q), 20).unwrap()
        );
        assert_eq!(
            loaded.knn(m.row(q), 5).unwrap(),
            idx.knn(m.row(q), 5).unwrap()
        );
    }
    // A loaded index can still change (its arrays are copied on the first write).
    loaded.insert(7, m.row(7)).unwrap();
    assert_eq!(loaded.radius(m.row(7), 0).unwrap()[0].id, 7);
    // Saving over the file it was loaded from is safe: the write goes to a new file.
    let l2 = LinearScan::load(&p).unwrap();
    l2.save(&p).unwrap();
    assert_eq!(LinearScan::load(&p).unwrap().len(), 499);
}

fn saved_bytes(name: &str) -> (PathBuf, Vec<u8>) {
    let p = tmp(&format!("{name}.simlsh"));
    LinearScan::build(&sigs(64, 200)).unwrap().save(&p).unwrap();
    let b = std::fs::read(&p).unwrap();
    (p, b)
}

#[test]
fn truncated_files_are_detected_at_every_length() {
    let (p, b) = saved_bytes("truncated");
    for cut in [0, 1, 8, 31, 63, 64, b.len() / 2, b.len() - 33, b.len() - 1] {
        std::fs::write(&p, &b[..cut]).unwrap();
        let Err(e) = load_index(&p) else {
            panic!("loaded a damaged file")
        };
        assert!(matches!(e, Error::Format { .. }), "cut at {cut}: {e}");
        assert!(
            e.to_string().contains("truncated.simlsh"),
            "the error names the file: {e}"
        );
    }
}

#[test]
fn every_corrupted_byte_is_detected() {
    let (p, b) = saved_bytes("corrupt");
    let mut rng = Rng::new(4);
    for _ in 0..200 {
        let mut c = b.clone();
        let at = rng.below(c.len() as u64) as usize;
        c[at] ^= 1 << rng.below(8);
        std::fs::write(&p, &c).unwrap();
        let Err(e) = load_index(&p) else {
            panic!("loaded a damaged file")
        };
        assert!(
            matches!(
                e,
                Error::Checksum { .. } | Error::Format { .. } | Error::Version { .. }
            ),
            "byte {at}: {e}"
        );
    }
}

#[test]
fn wrong_version_kind_and_foreign_files_are_typed_errors() {
    let (p, b) = saved_bytes("foreign");
    let mut v = b.clone();
    v[8] = 9; // format version 9
    std::fs::write(&p, &v).unwrap();
    assert!(matches!(
        load_index(&p),
        Err(Error::Version {
            expected: 1,
            got: 9,
            ..
        })
    ));
    // A signature file is not an index, and an index is not a signature file.
    std::fs::write(&p, &b).unwrap();
    assert!(matches!(load_signatures(&p), Err(Error::Format { .. })));
    // Foreign files: text, zeros, random bytes, a directory, a missing file.
    for junk in [
        b"hello, world\n".repeat(20),
        vec![0u8; 4096],
        (0..4096).map(|i| (i * 7 % 251) as u8).collect(),
    ] {
        std::fs::write(&p, &junk).unwrap();
        assert!(matches!(load_index(&p), Err(Error::Format { .. })));
    }
    assert!(matches!(
        load_index(&std::env::temp_dir()),
        Err(Error::Io { .. } | Error::Format { .. })
    ));
    assert!(matches!(
        load_index(&tmp("missing.simlsh")),
        Err(Error::Io { .. })
    ));
}
