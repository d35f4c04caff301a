//! The file format: round trips, memory mapping without copies, and typed errors for
//! truncated, corrupt, wrong-version, wrong-kind and foreign files.

use std::path::PathBuf;

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{AssertUnwindSafe, catch_unwind};

use simlsh::index::{HammingIndex, IndexSpec, LinearScan};
use simlsh::persist::{
    FileKind, IndexFile, Writer, load_index, load_signatures, save_index, save_signatures,
    verify_index,
};
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
    simlsh::persist::save_index(&idx, &p).unwrap();
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
    let l2 = load_index(&p).unwrap();
    save_index(l2.as_ref(), &p).unwrap();
    assert_eq!(load_index(&p).unwrap().len(), 499);
}

fn saved_bytes(name: &str) -> (PathBuf, Vec<u8>) {
    let p = tmp(&format!("{name}.simlsh"));
    save_index(&LinearScan::build(&sigs(64, 200)).unwrap(), &p).unwrap();
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

/// Opening checks the header and the sections' bounds only; `verify_index` (the checksum,
/// then every invariant) detects every corrupted byte, and an index loaded from a damaged
/// file answers queries without panicking.
#[test]
fn every_corrupted_byte_is_detected_by_verify() {
    let (p, b) = saved_bytes("corrupt");
    verify_index(&p).unwrap();
    let mut rng = Rng::new(4);
    let q = [0x1234_5678_9abc_def0u64];
    for _ in 0..200 {
        let mut c = b.clone();
        let at = rng.below(c.len() as u64) as usize;
        c[at] ^= 1 << rng.below(8);
        std::fs::write(&p, &c).unwrap();
        let e = verify_index(&p).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Checksum { .. }
                    | Error::Format { .. }
                    | Error::Version { .. }
                    | Error::InvalidField { .. }
            ),
            "byte {at}: {e}"
        );
        if let Ok(idx) = load_index(&p) {
            idx.radius(&q, 10).unwrap();
            idx.knn(&q, 3).unwrap();
        }
    }
}

/// Refuses (the process aborts) any single allocation above 1 GiB: a crafted file that
/// claims a huge array must be an error, not an allocation.
struct AllocationLimit;

const ALLOCATION_LIMIT: usize = 1 << 30;

// SAFETY: forwards to the system allocator, or returns null (an allocation failure, which
// the standard library reports and aborts on) for requests above the limit.
unsafe impl GlobalAlloc for AllocationLimit {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract is the one of `System.alloc`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > ALLOCATION_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: as `System.realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: AllocationLimit = AllocationLimit;

/// A section of an index file: name and element type.
#[derive(Clone, Copy)]
enum Elem {
    U8,
    U32,
    U64,
}

fn sections(kind: FileKind) -> &'static [(&'static str, Elem)] {
    use Elem::*;
    match kind {
        FileKind::LinearScan => &[("codes", U64), ("ids", U32)],
        FileKind::PermutedTables => &[
            ("dir", U32),
            ("keys", U8),
            ("vals", U32),
            ("codes", U64),
            ("row_ids", U32),
            ("delta_codes", U64),
            ("delta_ids", U32),
            ("dead", U32),
        ],
        FileKind::MultiIndex => &[
            ("codes", U64),
            ("ids", U32),
            ("dead", U64),
            ("rows", U32),
            ("dirs", U32),
            ("keys", U64),
            ("delta_codes", U64),
            ("delta_ids", U32),
        ],
        FileKind::Permutation => &[
            ("perms", U32),
            ("codes", U64),
            ("ids", U32),
            ("keys", U64),
            ("order", U32),
        ],
        FileKind::Graph => &[
            ("codes", U64),
            ("adj", U32),
            ("node_ids", U32),
            ("dup_nodes", U32),
            ("dup_ids", U32),
            ("table", U32),
            ("entries", U32),
            ("entry_codes", U64),
        ],
        FileKind::Signatures => &[("codes", U64)],
        FileKind::Store => &[],
    }
}

/// The arrays of a file as `u64`s, by section.
fn arrays(f: &IndexFile) -> Vec<Vec<u64>> {
    sections(f.kind())
        .iter()
        .map(|&(name, e)| match e {
            Elem::U8 => f.u8s(name).unwrap().iter().map(|&x| u64::from(x)).collect(),
            Elem::U32 => f
                .u32s(name)
                .unwrap()
                .iter()
                .map(|&x| u64::from(x))
                .collect(),
            Elem::U64 => f.u64s(name).unwrap().to_vec(),
        })
        .collect()
}

/// Writes a file of `kind` with `params` and `arrays` (values truncated to each section's
/// element type), with a valid checksum.
fn write_crafted(
    path: &std::path::Path,
    kind: FileKind,
    params: &std::collections::BTreeMap<String, String>,
    arrays: &[Vec<u64>],
) {
    let typed: Vec<(&str, Elem, Vec<u8>, Vec<u32>)> = sections(kind)
        .iter()
        .zip(arrays)
        .map(|(&(name, e), a)| {
            (
                name,
                e,
                a.iter().map(|&x| x as u8).collect(),
                a.iter().map(|&x| x as u32).collect(),
            )
        })
        .collect();
    let mut w = Writer::new(kind);
    for (k, v) in params {
        w.param(k, v).unwrap();
    }
    for ((name, e, b, u), a) in typed.iter().zip(arrays) {
        match e {
            Elem::U8 => w.u8s(name, b).unwrap(),
            Elem::U32 => w.u32s(name, u).unwrap(),
            Elem::U64 => w.u64s(name, a).unwrap(),
        };
    }
    w.write(path).unwrap();
}

/// One crafted file: what was changed, the parameters and the arrays.
type Variant = (
    String,
    std::collections::BTreeMap<String, String>,
    Vec<Vec<u64>>,
);

/// Files with a valid checksum whose parameters or sections are crafted (huge widths and
/// counts, truncated, extended, emptied or scrambled arrays) load as typed errors naming the
/// file, or as indexes that answer queries and changes without panicking; none allocates
/// more than 1 GiB (the global allocator above aborts the test otherwise).
#[test]
fn crafted_files_with_valid_checksums_are_errors_not_panics() {
    let mut rng = Rng::new(8);
    let mut cases = 0;
    for (bits, spec) in [
        (64, "linear"),
        (64, "manku:levels=4"),
        (130, "manku:k=2,levels=3"),
        (64, "mih:delta=20"),
        (100, "mih:m=2,delta=20"),
        (70, "permutation:q=3,beam=4"),
        (64, "graph:m=4,ef=8,efc=8,fallback=false"),
        (130, "graph:m=6"),
    ] {
        let m = sigs(bits, 120);
        let mut idx = spec.parse::<IndexSpec>().unwrap().build(&m).unwrap();
        for i in 0..10u32 {
            idx.remove(i * 3).unwrap();
            idx.insert(1000 + i, m.row(i as usize)).unwrap();
        }
        let good = tmp(&format!("crafted-good-{bits}-{}.simlsh", idx.kind()));
        simlsh::persist::save_index(idx.as_ref(), &good).unwrap();
        verify_index(&good).unwrap();
        let f = IndexFile::open(&good).unwrap();
        let (kind, params, base) = (f.kind(), f.params().clone(), arrays(&f));
        let path = tmp(&format!("crafted-{bits}-{}.simlsh", idx.kind()));
        let mut variants: Vec<Variant> = Vec::new();
        for key in params.keys() {
            for v in [
                "0",
                "1",
                "2",
                "3",
                "63",
                "64",
                "65",
                "4096",
                "4294967295",
                "4294967296",
                "9223372036854775807",
                "18446744073709551615",
                "-1",
                "x",
                "",
                "true",
            ] {
                let mut p = params.clone();
                p.insert(key.clone(), v.to_string());
                variants.push((format!("param {key}={v}"), p, base.clone()));
            }
        }
        for (s, &(name, _)) in sections(kind).iter().enumerate() {
            let mut edits: Vec<(String, Vec<u64>)> = vec![
                ("emptied".into(), Vec::new()),
                ("extended".into(), [&base[s][..], &[7]].concat()),
                ("all max".into(), vec![u64::MAX; base[s].len()]),
            ];
            if !base[s].is_empty() {
                edits.push(("truncated".into(), base[s][..base[s].len() - 1].to_vec()));
                for _ in 0..6 {
                    let mut a = base[s].clone();
                    let i = rng.below(a.len() as u64) as usize;
                    a[i] = match rng.below(3) {
                        0 => rng.next_u64(),
                        1 => a.len() as u64 + rng.below(3),
                        _ => a[rng.below(a.len() as u64) as usize],
                    };
                    edits.push((format!("element {i} changed"), a));
                }
            }
            for (what, a) in edits {
                let mut arrays = base.clone();
                arrays[s] = a;
                variants.push((format!("section {name} {what}"), params.clone(), arrays));
            }
        }
        for (what, p, a) in variants {
            cases += 1;
            write_crafted(&path, kind, &p, &a);
            let outcome = catch_unwind(AssertUnwindSafe(|| match load_index(&path) {
                Err(e) => {
                    assert!(e.to_string().contains("crafted-"), "{e}: names the file");
                }
                Ok(mut loaded) => {
                    let b = loaded.bits();
                    let q = vec![0u64; b.div_ceil(64)];
                    let _ = loaded.radius(&q, 5);
                    let _ = loaded.knn(&q, 4);
                    let _ = loaded.radius_batch(&[q.clone(), q.clone()].concat(), 200);
                    let _ = loaded.validate();
                    let _ = loaded.insert(5000, &q);
                    let _ = loaded.remove(1);
                    let _ = verify_index(&path);
                }
            }));
            assert!(outcome.is_ok(), "{spec} f={bits}: {what}: panicked");
        }
    }
    assert!(cases > 500, "{cases} crafted files");
}

/// Loading reports a crafted width, substring count or section length as a typed error
/// naming the file and the field.
#[test]
fn crafted_fields_are_named_in_the_error() {
    let m = sigs(64, 50);
    for (spec, key, value, field) in [
        (
            "manku:levels=4",
            "bits",
            "18446744073709551615",
            "param bits",
        ),
        ("manku:levels=4", "bits", "4294967232", "param bits"),
        ("mih", "substrings", "1000000000", "param substrings"),
        ("linear", "len", "7", "param len"),
        ("permutation", "permutations", "5", "param permutations"),
        ("graph", "m", "1", "param m"),
        ("graph", "check.mode", "tree", "param check.mode"),
    ] {
        let idx = spec.parse::<IndexSpec>().unwrap().build(&m).unwrap();
        let path = tmp(&format!("named-{}.simlsh", idx.kind()));
        simlsh::persist::save_index(idx.as_ref(), &path).unwrap();
        let f = IndexFile::open(&path).unwrap();
        let mut params = f.params().clone();
        params.insert(key.into(), value.into());
        write_crafted(&path, f.kind(), &params, &arrays(&f));
        match load_index(&path) {
            Err(Error::InvalidField {
                path: p,
                field: got,
                ..
            }) => {
                assert_eq!(p, path);
                assert_eq!(got, field, "{spec} {key}={value}");
            }
            Err(e) => panic!("{spec} {key}={value}: {e}"),
            Ok(_) => panic!("{spec} {key}={value}: loaded"),
        }
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

/// A zero width, a bad parameter key or section name, and codes of unequal lengths are
/// typed errors (they panicked, or in release builds gave a wrong distance).
#[test]
fn bad_widths_keys_and_lengths_are_typed_errors() {
    use simlsh::storage::Buf;
    assert!(matches!(
        LinearScan::from_parts(0, Buf::default(), Buf::default()),
        Err(Error::InvalidParameter { name: "bits", .. })
    ));
    assert!(LinearScan::from_parts(64, vec![1u64, 2].into(), vec![0u32].into()).is_err());
    let mut w = Writer::new(FileKind::LinearScan);
    for key in ["Bad Key", "", "a=b", "é"] {
        assert!(
            matches!(w.param(key, 1), Err(Error::InvalidParameter { .. })),
            "{key:?}"
        );
    }
    assert!(w.param("ok.key_1", "x\ny").is_ok());
    assert!(w.u64s(&"x".repeat(25), &[]).is_err());
    assert!(w.u64s("", &[]).is_err());
    assert!(w.u64s("codes", &[]).is_ok() && w.u32s("codes", &[]).is_err());
    assert!(matches!(
        simlsh::hamming::distance(&[1, 2], &[1]),
        Err(Error::LengthMismatch {
            left: 2,
            right: 1,
            ..
        })
    ));
}

/// An empty multi-index file claiming 2^57 substrings of a 2^63-bit code (the previous
/// loader asked for 4.6 EB), or 2^57 substrings of 64 bits: errors naming the field.
#[test]
fn empty_mih_file_with_huge_substrings_is_an_error() {
    let path = tmp("empty-mih.simlsh");
    for (bits, field) in [
        ("9223372036854775808", "param bits"),
        ("64", "param substrings"),
    ] {
        save_index(&simlsh::MultiIndex::new(64).unwrap(), &path).unwrap();
        let f = IndexFile::open(&path).unwrap();
        let mut params = f.params().clone();
        params.insert("bits".into(), bits.into());
        params.insert("substrings".into(), "144115188075855872".into());
        write_crafted(&path, f.kind(), &params, &arrays(&f));
        match load_index(&path) {
            Err(Error::InvalidField { field: got, .. }) => assert_eq!(got, field),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("loaded"),
        }
    }
}

/// Every rewrite of a loaded index verifies what it carries over: a file with one flipped
/// bit (anywhere) loads in `O(1)` but is never saved again with a fresh checksum, whether
/// saved as loaded, after an insert or a removal, to its own path or another, or staged in
/// an output set; the damaged file is left byte for byte, and nothing else is written. A sound
/// file saves as before, and is verified once.
#[test]
fn a_corrupt_index_is_never_rewritten_as_sound() {
    use simlsh::fs::OutputSet;
    use simlsh::persist::{LoadOptions, load_index_with};
    let m = sigs(64, 300);
    let extra = sigs(64, 310);
    let mut rng = Rng::new(17);
    for kind in [
        "linear",
        "manku:k=2",
        "mih",
        "permutation:q=4",
        "graph:m=8,ef=16",
    ] {
        let p = tmp(&format!(
            "launder-{}.simlsh",
            kind.replace([':', '=', ','], "-")
        ));
        let other = p.with_extension("copy");
        let idx = kind.parse::<IndexSpec>().unwrap().build(&m).unwrap();
        simlsh::persist::save_index(idx.as_ref(), &p).unwrap();
        let good = std::fs::read(&p).unwrap();
        // Sound: loaded unverified, saved after verification, once.
        let mut back = load_index(&p).unwrap();
        assert!(!back.is_verified(), "{kind}");
        back.insert(1000, extra.row(305)).unwrap();
        simlsh::persist::save_index(back.as_ref(), &other).unwrap();
        assert!(back.is_verified(), "{kind}");
        verify_index(&other).unwrap();
        let mut rewrites = 0;
        for trial in 0..40 {
            let mut bad = good.clone();
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] ^= 1 << rng.below(8);
            std::fs::write(&p, &bad).unwrap();
            let _ = std::fs::remove_file(&other);
            assert!(
                load_index_with(&p, &LoadOptions::default().verify(true)).is_err(),
                "{kind}, byte {at}"
            );
            let Ok(mut idx) = load_index(&p) else {
                continue;
            };
            assert!(!idx.is_verified());
            match trial % 4 {
                0 => {}
                1 => {
                    let _ = idx.insert(2000 + trial, extra.row(trial as usize));
                }
                2 => {
                    let _ = idx.remove(trial);
                }
                _ => {
                    let _ = idx.insert_batch(&[3000, 3001], &extra.as_slice()[..2]);
                }
            }
            rewrites += 1;
            let e = simlsh::persist::save_index(idx.as_ref(), &p).unwrap_err();
            assert!(
                matches!(e, Error::Checksum { .. } | Error::InvalidField { .. }),
                "{kind}, byte {at}: {e}"
            );
            assert!(e.to_string().contains("launder-"), "names the file: {e}");
            assert!(
                simlsh::persist::save_index(idx.as_ref(), &other).is_err(),
                "{kind}, byte {at}"
            );
            let mut set = OutputSet::new();
            assert!(
                simlsh::persist::stage_index(idx.as_ref(), &mut set, &other).is_err(),
                "{kind}, byte {at}"
            );
            assert!(set.is_empty());
            assert!(idx.verify_source().is_err() && !idx.is_verified());
            assert_eq!(
                std::fs::read(&p).unwrap(),
                bad,
                "{kind}: the damaged file changed"
            );
            assert!(!other.exists(), "{kind}: a copy was written");
        }
        assert!(
            rewrites >= 20,
            "{kind}: only {rewrites} damaged files loaded"
        );
    }
}

/// A copied load does not depend on its file: truncating the file in place afterwards (as
/// `cp` or `truncate` do, which would kill a process whose map reads past the new end with
/// SIGBUS) changes nothing for it.
#[test]
fn a_copied_index_survives_its_file_truncated_in_place() {
    use simlsh::persist::{LoadOptions, load_index_with};
    let m = sigs(128, 2000);
    let p = tmp("copied.simlsh");
    let idx = "mih".parse::<IndexSpec>().unwrap().build(&m).unwrap();
    simlsh::persist::save_index(idx.as_ref(), &p).unwrap();
    let copied = load_index_with(&p, &LoadOptions::default().copy(true)).unwrap();
    assert!(!copied.is_verified());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(0)
        .unwrap();
    for q in (0..2000).step_by(97) {
        assert_eq!(
            copied.knn(m.row(q), 5).unwrap(),
            idx.knn(m.row(q), 5).unwrap()
        );
    }
    // Verified while copied: the checksum of the copy.
    simlsh::persist::save_index(idx.as_ref(), &p).unwrap();
    let v = load_index_with(&p, &LoadOptions::default().copy(true).verify(true)).unwrap();
    assert!(v.is_verified());
}
