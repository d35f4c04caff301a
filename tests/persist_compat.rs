//! Index files of format version 1 written by an earlier release (before the persistence
//! module was split from the inputs and indexes were saved through `persist`): they load,
//! verify, answer as the same index built now, and write back byte for byte, through files,
//! writers and bytes. The files in `tests/data/format-v1/` were written by the code of
//! commit 082e595 with `fixture_index` and `fixture_codes` below (`idx.save(path)` and
//! `io::save_signatures`).

use std::path::PathBuf;
use std::sync::Arc;

use simlsh::persist::{
    LoadOptions, load_index, load_signatures, read_index, read_index_with, save_index,
    verify_index, write_index,
};
use simlsh::storage::Bytes;
use simlsh::{Error, HammingIndex};

/// The codes of the fixtures: 300 codes of 64 bits from a fixed xorshift stream, with planted
/// near-duplicates (every tenth row is the row before with 2 bits flipped).
fn fixture_codes() -> simlsh::SignatureMatrix<Vec<u64>> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut v = Vec::with_capacity(300);
    for i in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(if i % 10 == 9 {
            v[i - 1] ^ (1 << (i % 64)) ^ 1
        } else {
            x
        });
    }
    simlsh::SignatureMatrix::from_parts(64, v).unwrap()
}

/// Every kind the format holds, with the parameters of the fixtures.
const FIXTURE_KINDS: [(&str, &str); 5] = [
    ("linear", "linear"),
    ("manku", "manku:k=2"),
    ("mih", "mih"),
    ("permutation", "permutation:q=4,beam=16,seed=3"),
    ("graph", "graph:m=8,ef=16,seed=5"),
];

/// The fixture index of `spec`: built, then two removals and one insert pending, with a
/// signer record.
fn fixture_index(spec: &str) -> Box<dyn simlsh::HammingIndex> {
    let codes = fixture_codes();
    let mut idx = spec
        .parse::<simlsh::index::IndexSpec>()
        .unwrap()
        .build(&codes)
        .unwrap();
    idx.remove(3).unwrap();
    idx.remove(10).unwrap();
    idx.insert(1000, codes.row(3)).unwrap();
    let signer = "gaussian"
        .parse::<simlsh::signers::SignerSpec>()
        .unwrap()
        .bits(64)
        .seed(7)
        .dim(16);
    idx.set_signer(Some(simlsh::index::SignerRecord::from_spec(&signer)))
        .unwrap();
    idx
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/format-v1/{name}.simlsh"))
}

fn bytes_of(idx: &dyn HammingIndex) -> Vec<u8> {
    let mut out = Vec::new();
    write_index(idx, &mut out).unwrap();
    out
}

/// Every query of the fixture codes as the index answers it: radius searches (exact for every
/// kind), and k-NN where exact (permutation and graph search answer k-NN approximately, and
/// their answers depend on whether pending changes are merged, which a file always is for
/// permutation search).
fn answers(idx: &dyn HammingIndex) -> Vec<Vec<simlsh::Hit>> {
    let codes = fixture_codes();
    let mut out = idx.radius_batch(codes.as_slice(), 6).unwrap();
    if idx.exact_knn() {
        out.extend(idx.knn_batch(codes.as_slice(), 5).unwrap());
    }
    out
}

/// Bytes whose start is one byte past an aligned word, as a buffer handed over by another
/// library may be.
struct Shifted(Vec<u64>, usize);

impl AsRef<[u8]> for Shifted {
    fn as_ref(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.0)[1..1 + self.1]
    }
}

fn shifted(b: &[u8]) -> Bytes {
    let mut words = vec![0u64; (b.len() + 1).div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[1..1 + b.len()].copy_from_slice(b);
    Bytes::new(Arc::new(Shifted(words, b.len())))
}

#[test]
fn files_of_the_earlier_release_load_verify_and_write_back_byte_for_byte() {
    for (name, spec) in FIXTURE_KINDS {
        let path = fixture(name);
        let file = std::fs::read(&path).unwrap();
        verify_index(&path).unwrap();
        let built = fixture_index(spec);
        let loaded = load_index(&path).unwrap();
        assert_eq!(loaded.kind(), name);
        assert_eq!(loaded.spec(), built.spec(), "{name}");
        assert_eq!(
            loaded.spec().to_string(),
            built.spec().to_string(),
            "{name}"
        );
        assert_eq!(loaded.len(), 299, "{name}");
        assert_eq!(
            loaded.signer().map(ToString::to_string),
            built.signer().map(ToString::to_string)
        );
        assert!(
            answers(loaded.as_ref()) == answers(built.as_ref()),
            "{name}"
        );
        // The format has not changed: the loaded index and the one built now write the same
        // bytes as the earlier release did, to a writer and to a file.
        assert!(
            bytes_of(loaded.as_ref()) == file,
            "{name}: loaded, written back"
        );
        if name == "graph" {
            // The graph's construction has changed since (its prune's α), not its format:
            // a graph built now has other edges in sections of the same sizes.
            assert_eq!(
                bytes_of(built.as_ref()).len(),
                file.len(),
                "{name}: built now"
            );
        } else {
            assert!(bytes_of(built.as_ref()) == file, "{name}: built now");
        }
        let dir = std::env::temp_dir().join(format!("simlsh-compat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let again = dir.join(format!("{name}.simlsh"));
        save_index(loaded.as_ref(), &again).unwrap();
        assert!(std::fs::read(&again).unwrap() == file, "{name}: saved");
        std::fs::remove_dir_all(&dir).unwrap();
        // The same bytes, shared (aligned or not), open as the file does.
        for bytes in [Bytes::from(file.clone()), shifted(&file)] {
            let from_bytes = read_index(bytes).unwrap();
            assert!(!from_bytes.is_verified());
            assert_eq!(from_bytes.spec(), built.spec());
            assert!(
                answers(from_bytes.as_ref()) == answers(built.as_ref()),
                "{name}"
            );
            assert!(bytes_of(from_bytes.as_ref()) == file, "{name}: from bytes");
        }
    }
    let sigs = load_signatures(&fixture("signatures")).unwrap();
    assert_eq!(sigs.matrix.as_slice(), fixture_codes().as_slice());
    assert_eq!(sigs.params["rows"], "300");
}

#[test]
fn damaged_bytes_are_refused_as_damaged_files_are() {
    let file = std::fs::read(fixture("mih")).unwrap();
    let verified = LoadOptions::default().verify(true);
    // A flipped byte in the data: found by the checksum when verified, and before the index
    // is ever written anywhere when opened in O(1).
    let mut bad = file.clone();
    let at = bad.len() - 200;
    bad[at] ^= 0x10;
    let e = read_index_with(Bytes::from(bad.clone()), &verified)
        .err()
        .expect("a damaged file is refused");
    assert!(matches!(e, Error::Checksum { .. }), "{e}");
    assert!(e.to_string().contains("<bytes>"), "names the bytes: {e}");
    let opened = read_index(Bytes::from(bad)).unwrap();
    assert!(!opened.is_verified());
    let mut out = Vec::new();
    assert!(write_index(opened.as_ref(), &mut out).is_err());
    assert!(out.is_empty(), "nothing of a damaged index is written");
    // Another version, a truncation, a foreign buffer.
    let mut v2 = file.clone();
    v2[8] = 2;
    assert!(matches!(
        read_index(Bytes::from(v2)),
        Err(Error::Version { got: 2, .. })
    ));
    let cut = file[..file.len() - 1].to_vec();
    assert!(matches!(
        read_index(Bytes::from(cut)),
        Err(Error::Format { .. })
    ));
    assert!(matches!(
        read_index(Bytes::from(vec![0u8; 100])),
        Err(Error::Format { .. })
    ));
    assert!(matches!(
        read_index(Bytes::from(Vec::new())),
        Err(Error::Format { .. })
    ));
    // Copied bytes and verified bytes answer as the file does.
    let copied = read_index_with(shifted(&file), &verified.copy(true)).unwrap();
    assert!(copied.is_verified());
    assert!(answers(copied.as_ref()) == answers(fixture_index("mih").as_ref()));
}
