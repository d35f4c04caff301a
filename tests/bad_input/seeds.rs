//! Valid inputs of every reader: the starting points of the mutations.

use std::path::Path;

use ndarray::Array2;
use simlsh::SignatureMatrix;
use simlsh::index::{HammingIndex, LinearScan, MultiIndex, PermutationIndex, PermutedTables};
use simlsh::io::{IndexBase, InputFormat, OnBadLine};
use simlsh::rng::Rng;

use super::Target;
use super::npyzip::{npy_bytes, npy_raw, zip_of};

/// How a seed is built, so that mutations can rebuild it with one part changed.
#[derive(Clone, Debug)]
pub enum Form {
    /// A `.npy` image.
    Npy,
    /// A zip archive of `.npy` members, deflated or stored.
    Npz {
        members: Vec<(String, Vec<u8>)>,
        compressed: bool,
    },
    /// Line-oriented text.
    Text,
    /// Texmex rows of `elem`-byte values.
    Vecs { elem: usize },
    /// A saved index in the simlsh format.
    Index,
    /// A signature or index file whose record of the signer is the hostile part: fed as it is.
    Record,
}

/// A valid input, the readers it is fed to, and how it is built.
#[derive(Clone, Debug)]
pub struct Seed {
    pub name: String,
    pub targets: Vec<Target>,
    pub form: Form,
    pub bytes: Vec<u8>,
}

/// A `.npy` image with any header values (NumPy's layout: version 1.0 when the header fits
/// 65,535 bytes, 2.0 otherwise; header padded with spaces to a multiple of 64 bytes).
pub fn npy_full(descr: &str, fortran: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    npy_dict(
        &format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}"),
        data,
    )
}

/// A `.npy` image whose header dictionary is `dict`, verbatim.
pub fn npy_dict(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut h = dict.as_bytes().to_vec();
    let v2 = h.len() + 12 > 65_535;
    let pre = if v2 { 12 } else { 10 };
    while !(pre + h.len() + 1).is_multiple_of(64) {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut v = b"\x93NUMPY".to_vec();
    if v2 {
        v.extend([2, 0]);
        v.extend((h.len() as u32).to_le_bytes());
    } else {
        v.extend([1, 0]);
        v.extend((h.len() as u16).to_le_bytes());
    }
    v.extend(h);
    v.extend_from_slice(data);
    v
}

fn le<T: Copy>(v: &[T], f: impl Fn(T) -> Vec<u8>) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// The members of a SciPy `save_npz` archive of a small 4 × 6 matrix in `format`, with
/// `int64` index arrays when `wide`.
pub fn scipy_members(format: &str, wide: bool) -> Vec<(String, Vec<u8>)> {
    // Entries (row, col, value), row-major.
    let e: [(i64, i64, f32); 6] = [
        (0, 1, 1.5),
        (0, 4, -2.0),
        (1, 0, 0.25),
        (2, 2, 3.0),
        (2, 5, 1.0),
        (3, 3, -0.5),
    ];
    let ints = |v: Vec<i64>| {
        if wide {
            npy_raw(
                "<i8",
                &format!("({},)", v.len()),
                &le(&v, |x| x.to_le_bytes().to_vec()),
            )
        } else {
            npy_raw(
                "<i4",
                &format!("({},)", v.len()),
                &le(&v, |x| (x as i32).to_le_bytes().to_vec()),
            )
        }
    };
    let data = |v: Vec<f32>| {
        npy_raw(
            "<f4",
            &format!("({},)", v.len()),
            &le(&v, |x| x.to_le_bytes().to_vec()),
        )
    };
    let mut m = vec![
        (
            "format.npy".to_string(),
            npy_raw("|S3", "()", format.as_bytes()),
        ),
        (
            "shape.npy".to_string(),
            npy_raw("<i8", "(2,)", &le(&[4i64, 6], |x| x.to_le_bytes().to_vec())),
        ),
    ];
    match format {
        "csr" | "csc" => {
            let mut ent = e.to_vec();
            let major = if format == "csr" { 4 } else { 6 };
            if format == "csc" {
                ent.sort_by_key(|&(r, c, _)| (c, r));
            }
            let key = |&(r, c, _): &(i64, i64, f32)| if format == "csr" { r } else { c };
            let mut indptr = vec![0i64];
            for k in 0..major {
                indptr.push(indptr[k as usize] + ent.iter().filter(|x| key(x) == k).count() as i64);
            }
            let indices = ent
                .iter()
                .map(|&(r, c, _)| if format == "csr" { c } else { r })
                .collect();
            m.push(("indices.npy".into(), ints(indices)));
            m.push(("indptr.npy".into(), ints(indptr)));
            m.push(("data.npy".into(), data(ent.iter().map(|x| x.2).collect())));
        }
        _ => {
            m.push(("row.npy".into(), ints(e.iter().map(|x| x.0).collect())));
            m.push(("col.npy".into(), ints(e.iter().map(|x| x.1).collect())));
            m.push(("data.npy".into(), data(e.iter().map(|x| x.2).collect())));
        }
    }
    m
}

fn npz_seed(name: &str, members: Vec<(String, Vec<u8>)>, compressed: bool) -> Seed {
    let refs: Vec<(&str, Vec<u8>)> = members
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    Seed {
        name: name.into(),
        targets: vec![
            Target::Vectors(InputFormat::Npz, OnBadLine::Fail),
            Target::NpzCsr,
            Target::Vectors(InputFormat::Npz, OnBadLine::Fail),
            Target::NpzCsr,
            Target::Stream(InputFormat::Npz),
        ],
        bytes: zip_of(&refs, compressed),
        form: Form::Npz {
            members,
            compressed,
        },
    }
}

fn text_seed(name: &str, targets: Vec<Target>, text: &str) -> Seed {
    Seed {
        name: name.into(),
        targets,
        form: Form::Text,
        bytes: text.as_bytes().to_vec(),
    }
}

fn codes(bits: usize, n: usize, seed: u64) -> SignatureMatrix {
    let mut rng = Rng::new(seed);
    let mut m = SignatureMatrix::new(bits).unwrap();
    let words = bits.div_ceil(64);
    for i in 0..n {
        // Clusters of near-identical codes, so that searches find something.
        let mut w: Vec<u64> = (0..words).map(|_| rng.next_u64()).collect();
        if i % 3 != 0 {
            w[0] ^= 1 << rng.below(64);
        }
        if !bits.is_multiple_of(64) {
            w[words - 1] &= (1u64 << (bits % 64)) - 1;
        }
        m.push_words(bits, &w).unwrap();
    }
    m
}

fn index_seed(dir: &Path, name: &str, idx: &dyn HammingIndex) -> Seed {
    let p = dir.join(format!("{name}.simlsh"));
    simlsh::persist::save_index(idx, &p).unwrap();
    Seed {
        name: name.into(),
        targets: vec![Target::Index],
        form: Form::Index,
        bytes: std::fs::read(&p).unwrap(),
    }
}

/// Every seed; indexes are saved through `dir`.
pub fn all(dir: &Path) -> Vec<Seed> {
    let mut s = Vec::new();
    let npy = |name: &str, bytes: Vec<u8>| Seed {
        name: name.into(),
        targets: vec![
            Target::Vectors(InputFormat::Npy, OnBadLine::Fail),
            Target::Stream(InputFormat::Npy),
        ],
        form: Form::Npy,
        bytes,
    };
    let f32s: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
    s.push(npy(
        "npy-f32",
        npy_bytes(&Array2::from_shape_vec((4, 3), f32s).unwrap()),
    ));
    let f64s: Vec<f64> = (0..15).map(|i| (i as f64).sqrt()).collect();
    s.push(npy(
        "npy-f64-fortran",
        npy_full(
            "'<f8'",
            "True",
            "(3, 5)",
            &le(&f64s, |x| x.to_le_bytes().to_vec()),
        ),
    ));
    s.push(npy(
        "npy-f4-big-endian",
        npy_full(
            "'>f4'",
            "False",
            "(2, 3)",
            &le(&[1.0f32, -1.0, 2.5, 0.0, 3.0, 7.0], |x| {
                x.to_be_bytes().to_vec()
            }),
        ),
    ));
    // 1, -2, 0.5, 0, 65504 (max), 2^-24 (smallest subnormal), -0, 1.5
    let halves = [
        0x3C00u16, 0xC000, 0x3800, 0x0000, 0x7BFF, 0x0001, 0x8000, 0x3E00,
    ];
    s.push(npy(
        "npy-f2",
        npy_full(
            "'<f2'",
            "False",
            "(2, 4)",
            &le(&halves, |x| x.to_le_bytes().to_vec()),
        ),
    ));
    s.push(npy(
        "npy-i4",
        npy_full(
            "'<i4'",
            "False",
            "(3, 2)",
            &le(&[1i32, -7, 100_000, 0, 42, -3], |x| {
                x.to_le_bytes().to_vec()
            }),
        ),
    ));
    s.push(npy(
        "npy-u1",
        npy_full(
            "'|u1'",
            "False",
            "(2, 5)",
            &[0, 1, 2, 3, 255, 9, 8, 7, 6, 5],
        ),
    ));
    s.push(npy(
        "npy-i8",
        npy_full(
            "'<i8'",
            "False",
            "(2, 2)",
            &le(&[1i64, -1, 1 << 40, 3], |x| x.to_le_bytes().to_vec()),
        ),
    ));
    s.push(npy(
        "npy-empty-rows",
        npy_full("'<f4'", "False", "(0, 4)", &[]),
    ));

    // Signatures: uint64 (5, 2) and (5,).
    let words: Vec<u64> = (0..10u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    for (name, shape, n, targets) in [
        (
            "sig-2-words",
            "(5, 2)",
            10,
            vec![
                Target::Signatures(None),
                Target::Signatures(Some(128)),
                Target::Signatures(Some(100)),
                Target::SignaturesStream(Some(100)),
            ],
        ),
        (
            "sig-1-word",
            "(5,)",
            5,
            vec![
                Target::Signatures(None),
                Target::Signatures(Some(64)),
                Target::SignaturesStream(None),
            ],
        ),
    ] {
        s.push(Seed {
            name: name.into(),
            targets,
            form: Form::Npy,
            bytes: npy_raw("<u8", shape, &le(&words[..n], |x| x.to_le_bytes().to_vec())),
        });
    }

    for (format, wide) in [
        ("csr", false),
        ("csc", false),
        ("coo", false),
        ("csr", true),
    ] {
        for compressed in [false, true] {
            s.push(npz_seed(
                &format!(
                    "npz-{format}{}-{}",
                    if wide { "-int64" } else { "" },
                    if compressed { "deflated" } else { "stored" }
                ),
                scipy_members(format, wide),
                compressed,
            ));
        }
    }
    let dense: Vec<u8> = le(&[1.0f32, 2.0, -3.0, 0.5, 0.0, 4.0], |x| {
        x.to_le_bytes().to_vec()
    });
    for compressed in [false, true] {
        s.push(npz_seed(
            &format!(
                "npz-savez-dense-{}",
                if compressed { "deflated" } else { "stored" }
            ),
            vec![("arr_0.npy".into(), npy_raw("<f4", "(2, 3)", &dense))],
            compressed,
        ));
    }

    let svm = |base, dim| Target::Svmlight(base, dim);
    s.push(text_seed(
        "svmlight",
        vec![
            Target::Vectors(InputFormat::Svmlight, OnBadLine::Fail),
            Target::Vectors(InputFormat::Svmlight, OnBadLine::Skip),
            Target::Stream(InputFormat::Svmlight),
            svm(IndexBase::Zero, None),
            svm(IndexBase::One, Some(12)),
            svm(IndexBase::Auto, Some(4_294_967_295)),
        ],
        "# a comment line\n1 1:0.5 3:1.25 7:-2 # trailing\n-1 qid:3 2:1 4:0.125\n\
         +1 10:3.5 2:1 5:1e-3\n\n0.5 6:2\r\n2 0:1 11:1\n",
    ));
    let mtx_targets = || {
        vec![
            Target::Vectors(InputFormat::MatrixMarket, OnBadLine::Fail),
            Target::Vectors(InputFormat::MatrixMarket, OnBadLine::Skip),
            Target::Stream(InputFormat::MatrixMarket),
            Target::Mtx,
        ]
    };
    for (name, text) in [
        (
            "mtx-coordinate-real",
            "%%MatrixMarket matrix coordinate real general\n% comment\n3 4 5\n1 1 1.5\n2 3 -2\n\
             3 4 1e3\n1 2 0.25\n1 1 2\n",
        ),
        (
            "mtx-coordinate-pattern-symmetric",
            "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n1 1\n3 1\n4 2\n",
        ),
        (
            "mtx-coordinate-integer-skew",
            "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 2 -7\n",
        ),
        (
            "mtx-array-general",
            "%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n",
        ),
        (
            "mtx-array-symmetric",
            "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
        ),
    ] {
        s.push(text_seed(name, mtx_targets(), text));
    }

    let rows: Vec<Vec<f32>> = (0..3)
        .map(|r| (0..4).map(|c| (r * 4 + c) as f32 - 3.5).collect())
        .collect();
    for (name, fmt, kind, elem) in [
        (
            "fvecs",
            InputFormat::Fvecs,
            simlsh::io::vecs::VecsKind::F32,
            4,
        ),
        (
            "ivecs",
            InputFormat::Ivecs,
            simlsh::io::vecs::VecsKind::I32,
            4,
        ),
        (
            "bvecs",
            InputFormat::Bvecs,
            simlsh::io::vecs::VecsKind::U8,
            1,
        ),
    ] {
        let mut b = Vec::new();
        for r in &rows {
            b.extend(4i32.to_le_bytes());
            for &x in r {
                match elem {
                    4 if fmt == InputFormat::Fvecs => b.extend(x.to_le_bytes()),
                    4 => b.extend((x as i32).to_le_bytes()),
                    _ => b.push((x + 4.0) as u8),
                }
            }
        }
        s.push(Seed {
            name: name.into(),
            targets: vec![
                Target::Vectors(fmt, OnBadLine::Fail),
                Target::Vecs(kind),
                Target::Stream(fmt),
            ],
            form: Form::Vecs { elem },
            bytes: b,
        });
    }

    let c64 = codes(64, 60, 1);
    let c130 = codes(130, 40, 2);
    s.push(index_seed(
        dir,
        "linear-64",
        &LinearScan::build(&c64).unwrap(),
    ));
    s.push(index_seed(
        dir,
        "linear-130",
        &LinearScan::build(&c130).unwrap(),
    ));
    let mut manku = PermutedTables::builder()
        .radius(3)
        .blocks(4)
        .build(&c64)
        .unwrap();
    s.push(index_seed(dir, "manku", &manku));
    let extra = codes(64, 5, 3);
    for i in 0..5 {
        manku.insert(100 + i as u32, extra.row(i)).unwrap();
    }
    manku.remove(3).unwrap();
    s.push(index_seed(dir, "manku-delta", &manku));
    let mut mih = MultiIndex::builder().build(&c64).unwrap();
    s.push(index_seed(dir, "mih", &mih));
    for i in 0..5 {
        mih.insert(100 + i as u32, extra.row(i)).unwrap();
    }
    mih.remove(7).unwrap();
    s.push(index_seed(dir, "mih-delta", &mih));
    s.push(index_seed(
        dir,
        "mih-130",
        &MultiIndex::builder().build(&c130).unwrap(),
    ));
    s.extend(document_seeds());
    s.extend(record_seeds(dir, &c64));
    s.push(index_seed(
        dir,
        "permutation-130",
        &PermutationIndex::builder()
            .permutations(4)
            .beam(8)
            .seed(5)
            .build(&c130)
            .unwrap(),
    ));
    s
}

/// Documents of every format, and one long line (several chunks of the tokenizer's streaming
/// pass) of mixed scripts.
fn document_seeds() -> Vec<Seed> {
    let mut rng = Rng::new(31);
    let words = [
        "the", "Quick", "brown", "fox", "don't", "3.14", "naïve", "café", "中文", "分词", "😀",
        "e\u{301}", "ΣΑΣ", "#tag", "a-b", "ok", ",", ".",
    ];
    let mut line = |n: usize| -> String {
        let mut t = String::new();
        for k in 0..n {
            if k > 0 {
                t.push(' ');
            }
            t.push_str(words[rng.below(words.len() as u64) as usize]);
        }
        t
    };
    let lines: Vec<String> = (0..12).map(|k| line(3 + 2 * k)).collect();
    let doc = |name: &str, fmt: InputFormat, bytes: String| Seed {
        name: name.into(),
        targets: vec![Target::Documents(fmt, true), Target::Documents(fmt, false)],
        form: Form::Text,
        bytes: bytes.into_bytes(),
    };
    let json = |t: &str| t.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = vec![
        doc("text", InputFormat::Text, lines.join("\n") + "\n"),
        doc(
            "jsonl",
            InputFormat::JsonLines,
            lines
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{{\"id\": {i}, \"text\": \"{}\"}}\n", json(t)))
                .collect(),
        ),
        doc(
            "csv",
            InputFormat::Csv,
            "id,text\n".to_string()
                + &lines
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("{i},\"{}\"\n", t.replace('"', "\"\"")))
                    .collect::<String>(),
        ),
        doc(
            "tsv",
            InputFormat::Tsv,
            "id\ttext\n".to_string()
                + &lines
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("{i}\t{t}\n"))
                    .collect::<String>(),
        ),
    ];
    // One line of about 300 KB: the tokenizer's pass holds one chunk of it at a time.
    out.push(doc("long line", InputFormat::Text, line(40_000) + "\n"));
    out
}

/// Signature and index files whose records name signers that no process could build, or
/// with values beyond range: each record is a seed of its own (a file of codes and a record).
fn record_seeds(dir: &Path, codes: &SignatureMatrix) -> Vec<Seed> {
    use simlsh::index::SignerRecord;
    use std::collections::BTreeMap;
    let base = |kind: &str| -> BTreeMap<String, String> {
        [
            ("signer.kind", kind),
            ("signer.bits", "64"),
            ("signer.seed", "7"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    };
    let mut records: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for (kind, key) in [
        ("pooled", "signer.pool"),
        ("super-bit", "signer.depth"),
        ("very-sparse", "signer.density_param"),
        ("very-sparse", "signer.nnz"),
        ("gaussian", "signer.dim"),
        ("very-sparse", "signer.density"),
        ("pooled", "signer.seed"),
    ] {
        for v in [
            "0",
            "1",
            "4294967296",
            "1099511627776",
            "18446744073709551615",
            "-1",
            "1e308",
            "nan",
            "0.000001",
            "",
        ] {
            let mut m = base(kind);
            if kind != "pooled" {
                m.insert("signer.dim".into(), "1099511627776".into());
            }
            m.insert(key.into(), v.into());
            records.push((format!("{kind} {key}={v}"), m));
        }
    }
    // Records of other kinds, hashes and widths, and text options.
    for (k, v) in [
        ("signer.kind", "custom"),
        ("signer.kind", "no-such-signer"),
        ("signer.hash", "md5"),
        ("signer.bits", "0"),
        ("signer.extra", "1"),
        ("text.ngram", "18446744073709551616"),
        ("text.idf", "/etc/passwd"),
    ] {
        let mut m = base("hashing-trick");
        m.insert(
            "signer.hash".into(),
            "xxh3-64 + splitmix64 expansion".into(),
        );
        m.insert(k.into(), v.into());
        records.push((format!("hashing-trick {k}={v}"), m));
    }
    let mut out = Vec::new();
    for (i, (name, m)) in records.into_iter().enumerate() {
        let Some(rec) = SignerRecord::from_params(&m) else {
            continue;
        };
        let mut idx = LinearScan::build(codes).unwrap();
        if idx.set_signer(Some(rec)).is_err() {
            continue;
        }
        let p = dir.join(format!("record-{i}.simlsh"));
        simlsh::persist::save_index(&idx, &p).unwrap();
        out.push(Seed {
            name: format!("index record {name}"),
            targets: vec![Target::Record],
            form: Form::Record,
            bytes: std::fs::read(&p).unwrap(),
        });
        let p = dir.join(format!("signatures-{i}.simlsh"));
        let mut w = simlsh::persist::Writer::new(simlsh::persist::FileKind::Signatures);
        w.param("bits", 64)
            .unwrap()
            .param("rows", codes.len())
            .unwrap();
        for (k, v) in &m {
            w.param(k, v).unwrap();
        }
        w.u64s("codes", codes.as_slice()).unwrap();
        w.write(&p).unwrap();
        out.push(Seed {
            name: format!("signature record {name}"),
            targets: vec![Target::SignatureFile],
            form: Form::Record,
            bytes: std::fs::read(&p).unwrap(),
        });
    }
    out
}
