//! Input formats: round trips and golden parses of small files written here, and typed errors
//! naming the file and the line, row, member or byte for malformed input.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2, ShapeBuilder, array};
use ndarray_npy::NpzWriter;
use simlsh::io::{
    BadLines, Csr, IndexBase, InputFormat, OnBadLine, SvmlightOptions, TextOptions, VectorOptions,
    Vectors, documents, read_documents, read_mtx, read_npy_dense, read_npz_csr,
    read_signatures_npy, read_svmlight, read_vectors, write_signatures_npy,
};
use simlsh::rng::Rng;
use simlsh::signers::HashingTrick;
use simlsh::{Error, SignatureMatrix, Signer, SignerExt};

mod npyzip;
use npyzip::{npy_bytes, npy_raw, zip_of};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-formats-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn write(name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The members of `scipy.sparse.save_npz` for a CSR or CSC matrix, in scipy's order:
/// `indices` (int32), `indptr` (int32), `format` (`|S3`), `shape` (int64), `data` (float64).
fn scipy_members(
    format: &str,
    shape: (i64, i64),
    indptr: &[i32],
    indices: &[i32],
    data: &[f64],
) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("indices.npy", npy_bytes(&Array1::from(indices.to_vec()))),
        ("indptr.npy", npy_bytes(&Array1::from(indptr.to_vec()))),
        ("format.npy", npy_raw("|S3", "()", format.as_bytes())),
        ("shape.npy", npy_bytes(&array![shape.0, shape.1])),
        ("data.npy", npy_bytes(&Array1::from(data.to_vec()))),
    ]
}

fn dense(m: &Csr) -> Array2<f32> {
    m.to_dense()
}

fn msg(e: &Error) -> String {
    e.to_string()
}

fn assert_parse_error(e: Error, path: &Path, line: usize, needle: &str) {
    let s = e.to_string();
    match e {
        Error::Parse {
            path: p, line: l, ..
        } => {
            assert_eq!(p, path, "{s}");
            assert_eq!(l, line, "{s}");
        }
        other => panic!("expected a parse error at line {line}, got {other:?}"),
    }
    assert!(s.contains(needle), "`{s}` lacks `{needle}`");
    assert!(
        s.starts_with(&format!("{}:{line}: ", path.display())),
        "`{s}` does not start with the file and line"
    );
}

fn assert_format_error(e: Error, path: &Path, needles: &[&str]) {
    let s = e.to_string();
    match &e {
        Error::Format { path: p, .. } => assert_eq!(p, path, "{s}"),
        other => panic!("expected a format error, got {other:?}"),
    }
    for n in needles {
        assert!(s.contains(n), "`{s}` lacks `{n}`");
    }
}

// ---------------------------------------------------------------------------------------
// .npy

#[test]
fn npy_dense_round_trips_f32_f64_c_and_fortran_order() {
    let mut rng = Rng::new(5);
    let a = Array2::from_shape_fn((7, 5), |_| rng.gaussian() as f32);
    let p = write("a32.npy", npy_bytes(&a));
    assert_eq!(read_npy_dense(&p).unwrap(), a);

    // float64 in Fortran order: values rounded to f32, result in C order.
    let a64 = Array2::from_shape_fn((4, 3).f(), |(i, j)| (i as f64) * 0.1 + j as f64 / 3.0);
    let bytes = npy_bytes(&a64);
    assert!(String::from_utf8_lossy(&bytes[..128]).contains("'fortran_order': True"));
    let p = write("a64f.npy", bytes);
    let got = read_npy_dense(&p).unwrap();
    assert!(got.is_standard_layout());
    assert_eq!(got, a64.mapv(|x| x as f32));

    // Big-endian float32, written by hand.
    let data: Vec<u8> = [1.5f32, -2.0, 0.25, 8.0]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let p = write("be.npy", npy_raw(">f4", "(2, 2)", &data));
    assert_eq!(
        read_npy_dense(&p).unwrap(),
        array![[1.5f32, -2.0], [0.25, 8.0]]
    );

    // Through the format dispatcher.
    let p = write("via.npy", npy_bytes(&a));
    let f = InputFormat::from_path(&p).unwrap();
    let v = read_vectors(&p, f, &VectorOptions::default()).unwrap();
    assert!(matches!(v.vectors, Vectors::Dense(ref d) if d == a));
}

#[test]
fn npy_errors_name_the_file_and_the_byte_row_or_dtype() {
    let a = Array2::from_shape_fn((10, 4), |(i, j)| (i * 4 + j) as f32);
    let full = npy_bytes(&a);
    let header = full.len() - 160;
    let p = write("trunc.npy", &full[..full.len() - 6]);
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &[
            "truncated",
            &format!("from byte {header}"),
            &format!("ends at byte {}", full.len() - 6),
            "6 bytes missing",
        ],
    );
    let p = write("trunc_header.npy", &full[..20]);
    assert_format_error(read_npy_dense(&p).unwrap_err(), &p, &["header"]);
    let p = write("extra.npy", [&full[..], b"xx"].concat());
    assert_format_error(read_npy_dense(&p).unwrap_err(), &p, &["2 unexpected bytes"]);

    let p = write("str.npy", npy_raw("<U2", "(1, 2)", &[0u8; 16]));
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["str2", "not a number type", "`<U2`"],
    );
    let p = write("u64.npy", npy_bytes(&array![[1u64, 2]]));
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["uint64", "signatures"],
    );
    let p = write("1d.npy", npy_bytes(&array![1.0f32, 2.0]));
    assert_format_error(read_npy_dense(&p).unwrap_err(), &p, &["(2,)", "2-D"]);

    let p = write("big.npy", npy_bytes(&array![[1.0f64, 2.0], [3.0, 1e300]]));
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["row 1, column 1", "1e300 is beyond the range of float32"],
    );
    // A nonzero float64 that float32 rounds to 0 would sign its row as another vector.
    let p = write(
        "tiny.npy",
        npy_bytes(&array![[1e-60f64, 2e-60], [3.0, 0.0]]),
    );
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["row 0, column 0", "1e-60 is below the range of float32"],
    );
    let p = write("nan64.npy", npy_bytes(&array![[1.0f64, f64::NAN]]));
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["row 0, column 1", "NaN is not finite"],
    );
    let p = write("nan.npy", npy_bytes(&array![[1.0f32, f32::NAN]]));
    assert_format_error(read_npy_dense(&p).unwrap_err(), &p, &["row 0, column 1"]);
    let p = write("foreign.npy", b"PK\x03\x04 definitely not numpy");
    assert_format_error(read_npy_dense(&p).unwrap_err(), &p, &["not a .npy file"]);
    let p = write("empty.npy", b"");
    assert_format_error(read_npy_dense(&p).unwrap_err(), &p, &["empty"]);
    let missing = tmp("does-not-exist.npy");
    assert!(matches!(read_npy_dense(&missing), Err(Error::Io { path, .. }) if path == missing));
}

// ---------------------------------------------------------------------------------------
// Signatures as .npy

fn random_sigs(bits: usize, n: usize, seed: u64) -> SignatureMatrix {
    let s = HashingTrick::builder()
        .bits(bits)
        .seed(seed)
        .build()
        .unwrap();
    let toks: Vec<String> = (0..n).map(|i| format!("doc{i}")).collect();
    let mut m = SignatureMatrix::new(bits).unwrap();
    for t in &toks {
        m.push(&s.sign_tokens(&[t.as_str()], &[1.0]).unwrap())
            .unwrap();
    }
    m
}

#[test]
fn signatures_npy_round_trip_memory_mapped_and_numpy_compatible() {
    for bits in [1, 64, 100, 256] {
        let m = random_sigs(bits, 37, bits as u64);
        let p = tmp(&format!("sigs{bits}.npy"));
        write_signatures_npy(&p, &m).unwrap();
        let got = read_signatures_npy(&p, Some(bits)).unwrap();
        assert_eq!(got.bits(), bits);
        assert_eq!(got.as_slice(), m.as_slice());
        assert!(
            got.storage().is_mapped(),
            "a little-endian C-order file is mapped"
        );
        // Byte for byte what `np.save` writes: a version 1.0 header padded to 64 bytes,
        // then the words little-endian.
        let le: Vec<u8> = m.as_slice().iter().flat_map(|x| x.to_le_bytes()).collect();
        let shape = format!("({}, {})", m.len(), m.words_per_row());
        assert_eq!(std::fs::read(&p).unwrap(), npy_raw("<u8", &shape, &le));
        // Any .npy reader sees an N × words uint64 array.
        let arr: Array2<u64> =
            ndarray_npy::ReadNpyExt::read_npy(std::fs::File::open(&p).unwrap()).unwrap();
        assert_eq!(arr, m.to_array2());
        // Unknown width: 64 · words.
        let w = read_signatures_npy(&p, None).unwrap();
        assert_eq!(w.bits(), 64 * m.words_per_row());
        assert_eq!(w.as_slice(), m.as_slice());
    }
    // A 1-D uint64 array is N × 1 (64-bit codes).
    let codes = array![1u64, u64::MAX, 0];
    let p = write("codes1d.npy", npy_bytes(&codes));
    let got = read_signatures_npy(&p, None).unwrap();
    assert_eq!((got.len(), got.bits()), (3, 64));
    assert_eq!(got.as_slice(), codes.as_slice().unwrap());
    // Fortran order is transposed back.
    let f = Array2::from_shape_vec((2, 3).f(), vec![1u64, 2, 3, 4, 5, 6]).unwrap();
    let p = write("sigs_f.npy", npy_bytes(&f));
    let got = read_signatures_npy(&p, Some(192)).unwrap();
    assert_eq!(got.to_array2(), f);
}

#[test]
fn signatures_npy_checks_dtype_width_and_padding() {
    let p = write("sig_f32.npy", npy_bytes(&array![[1.0f32]]));
    assert_format_error(
        read_signatures_npy(&p, None).unwrap_err(),
        &p,
        &["float32", "uint64"],
    );
    let p = write("sig_i64.npy", npy_bytes(&array![[1i64]]));
    assert_format_error(read_signatures_npy(&p, None).unwrap_err(), &p, &["int64"]);

    let m = random_sigs(128, 5, 1);
    let p = tmp("sig128.npy");
    write_signatures_npy(&p, &m).unwrap();
    assert_format_error(
        read_signatures_npy(&p, Some(64)).unwrap_err(),
        &p,
        &["f = 64 needs 1 words", "has 2"],
    );
    // 128-bit random codes have bits above 100 set: reading them as 100-bit codes fails,
    // naming the first offending row.
    let first = m.rows().position(|r| r[1] >> 36 != 0).unwrap();
    assert_format_error(
        read_signatures_npy(&p, Some(100)).unwrap_err(),
        &p,
        &[
            &format!("row {first}:"),
            "beyond the signature width f = 100",
        ],
    );
    let bytes = std::fs::read(&p).unwrap();
    let p = write("sig_trunc.npy", &bytes[..bytes.len() - 3]);
    assert_format_error(
        read_signatures_npy(&p, None).unwrap_err(),
        &p,
        &["truncated"],
    );
}

// ---------------------------------------------------------------------------------------
// SciPy sparse .npz

/// The matrix of the scipy-layout tests:
/// ```text
/// [[0, 2, 0, 1],
///  [0, 0, 0, 0],
///  [3, 0, 0, 4]]
/// ```
fn golden() -> Array2<f32> {
    array![[0., 2., 0., 1.], [0., 0., 0., 0.], [3., 0., 0., 4.]]
}

#[test]
fn npz_in_scipy_layout_parses_csr_csc_and_coo_stored_or_deflated() {
    for compressed in [false, true] {
        let members = scipy_members(
            "csr",
            (3, 4),
            &[0, 2, 2, 4],
            &[1, 3, 0, 3],
            &[2., 1., 3., 4.],
        );
        let p = write(
            &format!("csr{compressed}.npz"),
            zip_of(&members, compressed),
        );
        let m = read_npz_csr(&p).unwrap();
        assert!(m.is_csr());
        assert_eq!(dense(&m), golden());
        assert_eq!(m.indptr().raw_storage(), &[0, 2, 2, 4]);

        // CSC of the same matrix: columns 0: (2, 3); 1: (0, 2); 2: -; 3: (0, 1), (2, 4).
        let members = scipy_members(
            "csc",
            (3, 4),
            &[0, 1, 2, 2, 4],
            &[2, 0, 0, 2],
            &[3., 2., 1., 4.],
        );
        let p = write(
            &format!("csc{compressed}.npz"),
            zip_of(&members, compressed),
        );
        assert_eq!(
            read_npz_csr(&p).unwrap(),
            read_npz_csr(&tmp(&format!("csr{compressed}.npz"))).unwrap()
        );

        // COO with a duplicate entry (summed) and unsorted order.
        let coo = vec![
            ("row.npy", npy_bytes(&array![2i32, 0, 2, 0, 2])),
            ("col.npy", npy_bytes(&array![3i32, 1, 0, 3, 3])),
            ("format.npy", npy_raw("|S3", "()", b"coo")),
            ("shape.npy", npy_bytes(&array![3i64, 4])),
            ("data.npy", npy_bytes(&array![1.5f64, 2., 3., 1., 2.5])),
        ];
        let p = write(&format!("coo{compressed}.npz"), zip_of(&coo, compressed));
        assert_eq!(dense(&read_npz_csr(&p).unwrap()), golden());
    }
}

#[test]
fn npz_sorts_rows_sums_duplicates_and_takes_int64_f32_and_str_format() {
    // Row 0 has indices [3, 1, 3] (unsorted, duplicate 3: 0.5 + 0.5), row 2 [3, 0].
    let members = vec![
        ("indices.npy", npy_bytes(&array![3i64, 1, 3, 3, 0])),
        ("indptr.npy", npy_bytes(&array![0i64, 3, 3, 5])),
        // A `<U3` format, as a str array would be saved.
        (
            "format.npy",
            npy_raw(
                "<U3",
                "()",
                &"csr"
                    .chars()
                    .flat_map(|c| (c as u32).to_le_bytes())
                    .collect::<Vec<_>>(),
            ),
        ),
        ("shape.npy", npy_bytes(&array![3i64, 4])),
        ("data.npy", npy_bytes(&array![0.5f32, 2., 0.5, 4., 3.])),
    ];
    let p = write("unsorted.npz", zip_of(&members, true));
    let m = read_npz_csr(&p).unwrap();
    assert_eq!(dense(&m), golden());
    assert_eq!(m.indices(), &[1, 3, 0, 3]);
    assert_eq!(m.data(), &[2., 1., 3., 4.]);
    // Signing the sparse input equals signing the dense one.
    let s = HashingTrick::builder().bits(128).seed(2).build().unwrap();
    assert_eq!(
        s.sign_csr(m.view()).unwrap(),
        s.sign_dense(&golden()).unwrap()
    );
}

#[test]
fn npz_written_by_ndarray_npy_without_a_format_is_rejected_naming_members() {
    let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
    w.add_array("data", &array![1.0f64]).unwrap();
    w.add_array("indices", &array![0i32]).unwrap();
    w.add_array("indptr", &array![0i32, 1]).unwrap();
    w.add_array("shape", &array![1i64, 1]).unwrap();
    let p = write("noformat.npz", w.finish().unwrap().into_inner());
    assert_format_error(
        read_npz_csr(&p).unwrap_err(),
        &p,
        &["no `format` array", "save_npz", "`indptr.npy`"],
    );
}

#[test]
fn npz_structural_errors_name_the_member_and_row() {
    let bad = |name: &str, members: Vec<(&str, Vec<u8>)>, needles: &[&str]| {
        let p = write(name, zip_of(&members, false));
        assert_format_error(read_npz_csr(&p).unwrap_err(), &p, needles);
    };
    bad(
        "nonmono.npz",
        scipy_members(
            "csr",
            (3, 4),
            &[0, 2, 1, 4],
            &[1, 3, 0, 3],
            &[2., 1., 3., 4.],
        ),
        &[
            "`indptr` is not monotone",
            "indptr[2] = 1 < indptr[1] = 2",
            "row 1",
        ],
    );
    bad(
        "ptrlen.npz",
        scipy_members("csr", (3, 4), &[0, 2, 4], &[1, 3, 0, 3], &[2., 1., 3., 4.]),
        &["`indptr`", "3 entries, expected 4"],
    );
    bad(
        "ptr0.npz",
        scipy_members(
            "csr",
            (3, 4),
            &[1, 2, 2, 4],
            &[1, 3, 0, 3],
            &[2., 1., 3., 4.],
        ),
        &["starts at 1"],
    );
    bad(
        "ptrend.npz",
        scipy_members(
            "csr",
            (3, 4),
            &[0, 2, 2, 5],
            &[1, 3, 0, 3],
            &[2., 1., 3., 4.],
        ),
        &["`indices`", "indptr ends at 5"],
    );
    bad(
        "range.npz",
        scipy_members(
            "csr",
            (3, 4),
            &[0, 2, 2, 4],
            &[1, 3, 0, 4],
            &[2., 1., 3., 4.],
        ),
        &["row 2", "column index 4 is out of range", "(3, 4)"],
    );
    bad(
        "datalen.npz",
        scipy_members("csr", (3, 4), &[0, 2, 2, 4], &[1, 3, 0, 3], &[2., 1., 3.]),
        &["`data`", "3 entries, expected 4"],
    );
    bad(
        "inf.npz",
        scipy_members(
            "csr",
            (3, 4),
            &[0, 2, 2, 4],
            &[1, 3, 0, 3],
            &[2., 1., f64::INFINITY, 4.],
        ),
        &["`data`", "row 2, column 0", "not finite"],
    );
    bad(
        "bsr.npz",
        scipy_members(
            "bsr",
            (3, 4),
            &[0, 2, 2, 4],
            &[1, 3, 0, 3],
            &[2., 1., 3., 4.],
        ),
        &["`bsr` is not supported", ".tocsr()"],
    );
    let mut m = scipy_members(
        "csr",
        (3, 4),
        &[0, 2, 2, 4],
        &[1, 3, 0, 3],
        &[2., 1., 3., 4.],
    );
    m[0].1 = npy_bytes(&array![1.0f32, 3., 0., 3.]);
    bad(
        "idxdtype.npz",
        m,
        &["`indices`", "float32", "not an integer type"],
    );
    let mut m = scipy_members(
        "csr",
        (3, 4),
        &[0, 2, 2, 4],
        &[1, 3, 0, 3],
        &[2., 1., 3., 4.],
    );
    let d = m[4].1.clone();
    m[4].1 = d[..d.len() - 4].to_vec();
    bad("memtrunc.npz", m, &["member `data`", "truncated"]);

    let full = zip_of(
        &scipy_members(
            "csr",
            (3, 4),
            &[0, 2, 2, 4],
            &[1, 3, 0, 3],
            &[2., 1., 3., 4.],
        ),
        true,
    );
    let p = write("ziptrunc.npz", &full[..full.len() / 2]);
    assert_format_error(
        read_npz_csr(&p).unwrap_err(),
        &p,
        &["not an .npz (zip) archive"],
    );
}

// ---------------------------------------------------------------------------------------
// SVMlight

#[test]
fn svmlight_golden_parse_one_based_with_comments_qid_and_unsorted_indices() {
    let p = write(
        "golden.svm",
        "# a comment line\n\
         1 1:0.5 3:2 # trailing comment\n\
         -1 qid:3 2:1.5 2:0.5 1:1\n\
         0\n\
         \n\
         +1.5 4:1e-3\n",
    );
    let s = read_svmlight(&p, &SvmlightOptions::default()).unwrap();
    assert!(!s.zero_based);
    assert_eq!(s.labels, vec![1.0, -1.0, 0.0, 1.5]);
    assert_eq!(s.lines, vec![2, 3, 4, 6]);
    assert_eq!(
        dense(&s.matrix),
        array![
            [0.5, 0., 2., 0.],
            [1., 2., 0., 0.],
            [0., 0., 0., 0.],
            [0., 0., 0., 1e-3]
        ]
    );
    // Auto-detection: an index 0 makes the file 0-based.
    let p = write("zero.svm", "1 0:1 2:2\n2 1:3\n");
    let s = read_svmlight(&p, &SvmlightOptions::default()).unwrap();
    assert!(s.zero_based);
    assert_eq!(dense(&s.matrix), array![[1., 0., 2.], [0., 3., 0.]]);
    // Forced bases.
    let one = SvmlightOptions {
        base: IndexBase::One,
        ..Default::default()
    };
    assert_parse_error(
        read_svmlight(&p, &one).unwrap_err(),
        &p,
        1,
        "index 0 in a 1-based file",
    );
    let p = write("nozero.svm", "1 1:1 3:2\n");
    let zero = SvmlightOptions {
        base: IndexBase::Zero,
        dim: Some(10),
        ..Default::default()
    };
    let s = read_svmlight(&p, &zero).unwrap();
    assert_eq!(s.matrix.cols(), 10);
    assert_eq!(s.matrix.indices(), &[1, 3]);
}

#[test]
fn svmlight_bad_lines_fail_or_are_skipped_and_counted() {
    let text = "1 1:1 2:2\n-1 1:1 3:abc\n1 x\n1 2:1\nfoo 1:1\n1 -3:1\n";
    let p = write("bad.svm", text);
    let e = read_svmlight(&p, &SvmlightOptions::default()).unwrap_err();
    assert_parse_error(e, &p, 2, "`3:abc`: value `abc` is not a number");
    let skip = SvmlightOptions {
        on_bad: OnBadLine::Skip,
        ..Default::default()
    };
    let s = read_svmlight(&p, &skip).unwrap();
    assert_eq!(s.lines, vec![1, 4]);
    assert_eq!(s.bad.count, 4);
    let lines: Vec<usize> = s
        .bad
        .first
        .iter()
        .map(|e| match e {
            Error::Parse { line, .. } => *line,
            _ => 0,
        })
        .collect();
    assert_eq!(lines, vec![2, 3, 5, 6]);
    assert!(msg(&s.bad.first[1]).contains("`x` is not `index:value`"));
    assert!(msg(&s.bad.first[2]).contains("label `foo`"));
    // Out of range for a given dimension.
    let p = write("dim.svm", "1 1:1\n1 5:1\n");
    let opts = SvmlightOptions {
        dim: Some(4),
        ..Default::default()
    };
    assert_parse_error(
        read_svmlight(&p, &opts).unwrap_err(),
        &p,
        2,
        "out of range for 4 columns",
    );
    let p = write("inf.svm", "1 1:1e39\n");
    assert_parse_error(
        read_svmlight(&p, &SvmlightOptions::default()).unwrap_err(),
        &p,
        1,
        "1e39 is beyond the range of float32",
    );
    let p = write("tiny.svm", "1 1:0.5\n0 2:1e-50\n");
    assert_parse_error(
        read_svmlight(&p, &SvmlightOptions::default()).unwrap_err(),
        &p,
        2,
        "1e-50 is below the range of float32",
    );
}

#[test]
fn svmlight_round_trips_random_sparse_rows() {
    let mut rng = Rng::new(11);
    let (n, d) = (60, 300);
    let mut text = String::new();
    let mut want = Array2::<f32>::zeros((n, d));
    for i in 0..n {
        let mut cols: Vec<usize> = (0..rng.below(12) as usize)
            .map(|_| rng.below(d as u64) as usize)
            .collect();
        cols.sort();
        cols.dedup();
        text.push_str(&format!("{}", i % 3));
        for c in cols {
            let v = rng.gaussian() as f32;
            want[(i, c)] = v;
            text.push_str(&format!(" {}:{v}", c + 1));
        }
        text.push('\n');
    }
    let p = write("rt.svm", &text);
    let opts = SvmlightOptions {
        base: IndexBase::One,
        dim: Some(d),
        ..Default::default()
    };
    let s = read_svmlight(&p, &opts).unwrap();
    assert_eq!(dense(&s.matrix), want);
    let v = read_vectors(
        &p,
        "libsvm".parse().unwrap(),
        &VectorOptions {
            base: IndexBase::One,
            dim: Some(d),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(v.labels.unwrap().len(), n);
    assert!(matches!(v.vectors, Vectors::Sparse(ref m) if dense(m) == want));
}

// ---------------------------------------------------------------------------------------
// MatrixMarket

#[test]
fn mtx_coordinate_and_array_golden_parses() {
    let p = write(
        "g.mtx",
        "%%MatrixMarket matrix coordinate real general\n% comment\n\n3 4 5\n1 2 2.0\n3 4 1.5\n1 4 1\n3 1 3e0\n3 4 2.5\n",
    );
    let m = read_mtx(&p, OnBadLine::Fail).unwrap();
    assert!(matches!(m.matrix, Vectors::Sparse(ref s) if dense(s) == golden()));

    let p = write(
        "sym.mtx",
        "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 5\n3 1 -2\n3 2 7\n",
    );
    let m = read_mtx(&p, OnBadLine::Fail).unwrap();
    let want = array![[5., 0., -2.], [0., 0., 7.], [-2., 7., 0.]];
    assert!(matches!(m.matrix, Vectors::Sparse(ref s) if dense(s) == want));

    let p = write(
        "skew.mtx",
        "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n",
    );
    let m = read_mtx(&p, OnBadLine::Fail).unwrap();
    assert!(matches!(m.matrix, Vectors::Sparse(ref s) if dense(s) == array![[0., -3.], [3., 0.]]));

    let p = write(
        "pat.mtx",
        "%%MATRIXMARKET Matrix Coordinate Pattern General\n2 3 2\n1 3\n2 1\n",
    );
    let m = read_mtx(&p, OnBadLine::Fail).unwrap();
    assert!(
        matches!(m.matrix, Vectors::Sparse(ref s) if dense(s) == array![[0., 0., 1.], [1., 0., 0.]])
    );

    // Array: column-major.
    let p = write(
        "arr.mtx",
        "%%MatrixMarket matrix array real general\n2 3\n1\n4\n2\n5\n3\n6\n",
    );
    let m = read_mtx(&p, OnBadLine::Fail).unwrap();
    assert!(matches!(m.matrix, Vectors::Dense(ref a) if a == array![[1., 2., 3.], [4., 5., 6.]]));
    let p = write(
        "arrsym.mtx",
        "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n",
    );
    let v = read_vectors(
        &p,
        InputFormat::from_path(&p).unwrap(),
        &VectorOptions::default(),
    )
    .unwrap();
    assert!(matches!(v.vectors, Vectors::Dense(ref a) if a == array![[1., 2.], [2., 3.]]));
}

#[test]
fn mtx_round_trips_random_sparse_matrices() {
    let mut rng = Rng::new(4);
    let (n, d) = (40, 70);
    let mut want = Array2::<f32>::zeros((n, d));
    let mut entries = Vec::new();
    for _ in 0..300 {
        let (i, j) = (rng.below(n as u64) as usize, rng.below(d as u64) as usize);
        if want[(i, j)] == 0.0 {
            let v = rng.gaussian() as f32;
            want[(i, j)] = v;
            entries.push(format!("{} {} {v}", i + 1, j + 1));
        }
    }
    let text = format!(
        "%%MatrixMarket matrix coordinate real general\n{n} {d} {}\n{}\n",
        entries.len(),
        entries.join("\n")
    );
    let p = write("rt.mtx", text);
    let m = read_mtx(&p, OnBadLine::Fail).unwrap();
    assert!(matches!(m.matrix, Vectors::Sparse(ref s) if dense(s) == want));
}

#[test]
fn mtx_errors_name_the_line() {
    let cases: &[(&str, &str, usize, &str)] = &[
        ("nobanner.mtx", "3 4 1\n1 1 1\n", 1, "banner"),
        (
            "complex.mtx",
            "%%MatrixMarket matrix coordinate complex general\n",
            1,
            "complex",
        ),
        (
            "size.mtx",
            "%%MatrixMarket matrix coordinate real general\n% c\n3 x 1\n",
            3,
            "size line",
        ),
        (
            "range.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 1\n4 1 1\n",
            4,
            "row index 4 is out of range 1..=3",
        ),
        (
            "value.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 1\n2 2 abc\n",
            4,
            "value `abc` is not a number",
        ),
        (
            "extra.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 1\n2 2 2\n",
            4,
            "more entries than the 1 declared",
        ),
        (
            "few.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1\n2 2 2\n",
            5,
            "2 of 3 declared entries",
        ),
        (
            "arrfew.mtx",
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n",
            6,
            "3 of 4 values",
        ),
        (
            "nonsquare.mtx",
            "%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n",
            2,
            "square",
        ),
    ];
    for &(name, text, line, needle) in cases {
        let p = write(name, text);
        assert_parse_error(read_mtx(&p, OnBadLine::Fail).unwrap_err(), &p, line, needle);
    }
    // A bad entry can be skipped; it still counts toward the declared number.
    let p = write(
        "skip.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 oops\n2 1 4\n",
    );
    let m = read_mtx(&p, OnBadLine::Skip).unwrap();
    assert_eq!(m.bad.count, 1);
    assert!(matches!(m.matrix, Vectors::Sparse(ref s) if dense(s) == array![[1., 0.], [4., 0.]]));
}

// ---------------------------------------------------------------------------------------
// .fvecs through the dispatcher

#[test]
fn bundled_glove_fvecs_reads_through_the_dispatcher() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/glove-6B-50d-10k/vectors.fvecs");
    let f = InputFormat::from_path(&p).unwrap();
    assert_eq!(f, InputFormat::Fvecs);
    let v = read_vectors(&p, f, &VectorOptions::default()).unwrap();
    assert_eq!((v.vectors.rows(), v.vectors.cols()), (10_000, 50));
    // Text formats are not vectors.
    assert!(matches!(
        read_vectors(&p, InputFormat::Csv, &VectorOptions::default()),
        Err(Error::InvalidParameter { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// Text inputs

fn texts(docs: &[simlsh::io::Document]) -> Vec<(usize, &str)> {
    docs.iter().map(|d| (d.line, d.text.as_str())).collect()
}

#[test]
fn plain_text_is_one_document_per_line() {
    let p = write("docs.txt", "\u{feff}first line\r\n\nthird  line\nlast");
    let (docs, bad) = read_documents(&p, InputFormat::Text, &TextOptions::default()).unwrap();
    assert!(bad.is_empty());
    assert_eq!(
        texts(&docs),
        vec![(1, "first line"), (2, ""), (3, "third  line"), (4, "last")]
    );
    let p = write("latin1.txt", b"ok\ncaf\xe9\nok\n");
    let e = read_documents(&p, InputFormat::Text, &TextOptions::default()).unwrap_err();
    assert_parse_error(e, &p, 2, "invalid UTF-8");
}

#[test]
fn json_lines_take_a_named_field_and_report_bad_lines() {
    let p = write(
        "docs.jsonl",
        "{\"id\": 1, \"body\": \"hello\"}\n\n{\"id\": 2}\n{\"id\": 3, \"body\": 7}\nnot json\n[1]\n{\"body\": \"bye\", \"x\": null}\n",
    );
    let opts = TextOptions {
        field: "body".into(),
        ..Default::default()
    };
    let e = read_documents(&p, InputFormat::JsonLines, &opts).unwrap_err();
    assert_parse_error(e, &p, 3, "no field `body`");
    let skip = TextOptions {
        on_bad: OnBadLine::Skip,
        ..opts.clone()
    };
    let (docs, bad) = read_documents(&p, InputFormat::JsonLines, &skip).unwrap();
    assert_eq!(texts(&docs), vec![(1, "hello"), (7, "bye")]);
    assert_eq!(bad.count, 4);
    let reasons: Vec<String> = bad.first.iter().map(msg).collect();
    assert!(reasons[0].contains(":3: no field `body`"), "{reasons:?}");
    assert!(reasons[1].contains(":4: field `body` is a number, not a string"));
    assert!(
        reasons[2].contains(":5: not valid JSON (column 2)"),
        "{reasons:?}"
    );
    assert!(reasons[3].contains(":6: not a JSON object but an array"));
    // The iterator goes on after a bad line.
    let all: Vec<_> = documents(&p, InputFormat::JsonLines, &opts)
        .unwrap()
        .collect();
    assert_eq!(all.len(), 6);
    assert_eq!(all.iter().filter(|r| r.is_ok()).count(), 2);
}

#[test]
fn csv_takes_a_named_column_with_line_numbers_of_records() {
    let p = write(
        "docs.csv",
        "id,text,extra\n1,plain,x\n2,\"quoted, with comma\nand a newline\",y\n3,\"say \"\"hi\"\"\",z\n",
    );
    let (docs, _) = read_documents(&p, InputFormat::Csv, &TextOptions::default()).unwrap();
    assert_eq!(
        texts(&docs),
        vec![
            (2, "plain"),
            (3, "quoted, with comma\nand a newline"),
            (5, "say \"hi\"")
        ]
    );
    let p = write("docs.tsv", "text\tid\nalpha beta\t1\n");
    let f = InputFormat::from_path(&p).unwrap();
    let (docs, _) = read_documents(&p, f, &TextOptions::default()).unwrap();
    assert_eq!(texts(&docs), vec![(2, "alpha beta")]);
}

#[test]
fn csv_without_the_column_or_with_ragged_records_is_an_error() {
    let p = write("nocol.csv", "id,body\n1,hello\n");
    let e = read_documents(&p, InputFormat::Csv, &TextOptions::default())
        .err()
        .unwrap();
    assert_parse_error(
        e,
        &p,
        1,
        "no column `text` in the header row (columns: `id`, `body`)",
    );
    let p = write("empty.csv", "");
    let e = read_documents(&p, InputFormat::Csv, &TextOptions::default())
        .err()
        .unwrap();
    assert_parse_error(e, &p, 1, "no header row");

    let p = write(
        "ragged.csv",
        b"id,text\n1,a\n2,b,extra\n3,c\n4,d\xff\n5,e\n",
    );
    let e = read_documents(&p, InputFormat::Csv, &TextOptions::default()).unwrap_err();
    assert_parse_error(e, &p, 3, "record has 3 fields, but the header has 2");
    let skip = TextOptions {
        on_bad: OnBadLine::Skip,
        ..Default::default()
    };
    let (docs, bad) = read_documents(&p, InputFormat::Csv, &skip).unwrap();
    assert_eq!(texts(&docs), vec![(2, "a"), (4, "c"), (6, "e")]);
    assert_eq!(bad.count, 2);
    assert!(msg(&bad.first[1]).contains(":5: column 2: invalid UTF-8"));
}

#[test]
fn bundled_text_datasets_read_completely() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets");
    let p = root.join("healthtweets-10k/healthtweets-10k.csv");
    let (docs, bad) = read_documents(
        &p,
        InputFormat::from_path(&p).unwrap(),
        &TextOptions::default(),
    )
    .unwrap();
    assert_eq!((docs.len(), bad.count), (10_000, 0));
    assert_eq!(docs[0].line, 2);
    let p = root.join("chinese-poetry-3k/poems.jsonl");
    let mut it = documents(
        &p,
        InputFormat::from_path(&p).unwrap(),
        &TextOptions::default(),
    )
    .unwrap();
    let mut bad = BadLines::default();
    let first = it.next_chunk(1000, OnBadLine::Fail, &mut bad).unwrap();
    let rest = it
        .next_chunk(usize::MAX, OnBadLine::Fail, &mut bad)
        .unwrap();
    assert_eq!((first.len(), rest.len()), (1000, 2500));
    assert_eq!(rest[0].line, 1001);
    assert!(first[0].text.starts_with("古洞嵌巖活"));
}

#[test]
fn format_names_and_extensions() {
    assert_eq!(
        "MTX".parse::<InputFormat>().unwrap(),
        InputFormat::MatrixMarket
    );
    assert_eq!("lines".parse::<InputFormat>().unwrap(), InputFormat::Text);
    let e = InputFormat::from_path(Path::new("x.parquet")).unwrap_err();
    assert!(msg(&e).contains("x.parquet") && msg(&e).contains("npy, npz, svmlight"));
    let e = "parquet".parse::<InputFormat>().unwrap_err();
    assert!(matches!(e, Error::InvalidParameter { name: "format", .. }));
    // A vector format is not a text format.
    let p = write("v.npy", npy_bytes(&array![[1.0f32]]));
    assert!(documents(&p, InputFormat::Npy, &TextOptions::default()).is_err());
}

// ---------------------------------------------------------------------------------------
// Sizes claimed by headers, checked against the input before anything is allocated

/// A `.npy` header dictionary with any shape and dtype, over `data`.
fn npy_claiming(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    npy_raw(descr, shape, data)
}

#[test]
fn sizes_claimed_beyond_the_file_are_errors_naming_both_sizes() {
    // Version 2.0 header claiming a 4 GB dictionary, in a 12-byte file.
    let p = write("hdr4g.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\xff");
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["claims 4294967295 bytes"],
    );
    // A 2.4 GB array claimed by a 192-byte file.
    let p = write("claim.npy", npy_claiming("<f4", "(600000000, 1)", &[0; 64]));
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["truncated", "2400000000 data bytes", "bytes missing"],
    );
    // The 61-byte MatrixMarket file that cost 2.3 GB.
    let text = "%%MatrixMarket matrix array real general\n24000 24000\n1\n2\n3\n4\n";
    assert_eq!(text.len(), 61);
    let p = write("claim61.mtx", text);
    assert_parse_error(
        read_mtx(&p, OnBadLine::Fail).unwrap_err(),
        &p,
        2,
        "claims 576000000 values, but only 8 bytes follow",
    );
    let p = write(
        "claim-nnz.mtx",
        "%%MatrixMarket matrix coordinate real general\n5 5 99999999999\n1 1 1\n",
    );
    assert_parse_error(
        read_mtx(&p, OnBadLine::Fail).unwrap_err(),
        &p,
        2,
        "claims 99999999999 entries",
    );
    let p = write(
        "claim-rows.mtx",
        "%%MatrixMarket matrix coordinate real general\n1000000000000 1 0\n",
    );
    assert_parse_error(
        read_mtx(&p, OnBadLine::Fail).unwrap_err(),
        &p,
        2,
        "claims 1000000000000 rows, more than the 64 bytes",
    );
    // A .fvecs row of 2^31 - 1 values in 16 bytes.
    let mut b = i32::MAX.to_le_bytes().to_vec();
    b.extend([0; 12]);
    let p = write("claim.fvecs", &b);
    assert_format_error(
        read_vectors(&p, InputFormat::Fvecs, &VectorOptions::default()).unwrap_err(),
        &p,
        &["16 bytes is not a whole number of rows of dimension 2147483647"],
    );
    // A stored .npz member claiming 2.4 GB.
    let z = zip_of(
        &[("arr_0.npy", npy_claiming("<f4", "(600000000, 1)", &[0; 64]))],
        false,
    );
    let p = write("claim.npz", z);
    assert_format_error(
        simlsh::io::read_npz(&p, &Default::default()).unwrap_err(),
        &p,
        &["member `arr_0`", "truncated", "2400000000 data bytes"],
    );
}

#[test]
fn a_column_count_of_2_pow_32_is_an_error_and_2_pow_32_minus_1_is_read() {
    let opts = |base| SvmlightOptions {
        base,
        ..Default::default()
    };
    // SVMlight: 1-based index 2^32 - 1 is column 2^32 - 2, the largest.
    let p = write("max.svm", "1 4294967295:1.5\n");
    let s = read_svmlight(&p, &opts(IndexBase::One)).unwrap();
    assert_eq!(s.matrix.cols(), u32::MAX as usize);
    assert_eq!(s.matrix.indices(), &[u32::MAX - 1]);
    assert_parse_error(
        read_svmlight(&p, &opts(IndexBase::Zero)).unwrap_err(),
        &p,
        1,
        "index 4294967295 does not fit 32-bit column indices",
    );
    let p = write("over.svm", "1 4294967296:1.5\n");
    assert_parse_error(
        read_svmlight(&p, &opts(IndexBase::One)).unwrap_err(),
        &p,
        1,
        "does not fit 32-bit column indices",
    );
    // SciPy .npz: shape (3, 2^32) refused, (3, 2^32 - 1) read.
    let members = |cols: i64| {
        scipy_members(
            "csr",
            (3, cols),
            &[0, 1, 1, 2],
            &[7, cols as i32 - 1],
            &[1.0, 2.0],
        )
    };
    let p = write("over.npz", zip_of(&members(1 << 32), false));
    assert_format_error(
        read_npz_csr(&p).unwrap_err(),
        &p,
        &["4294967296 columns do not fit 32-bit column indices"],
    );
    let mut m = members(u32::MAX as i64);
    m[0].1 = npy_bytes(&Array1::from(vec![7i64, u32::MAX as i64 - 1]));
    let p = write("max.npz", zip_of(&m, false));
    let got = read_npz_csr(&p).unwrap();
    assert_eq!(got.cols(), u32::MAX as usize);
    assert_eq!(got.indices(), &[7, u32::MAX - 1]);
    // MatrixMarket.
    let p = write(
        "over.mtx",
        "%%MatrixMarket matrix coordinate real general\n1 4294967296 1\n1 1 1\n",
    );
    assert_parse_error(
        read_mtx(&p, OnBadLine::Fail).unwrap_err(),
        &p,
        2,
        "4294967296 columns do not fit 32-bit column indices",
    );
    let p = write(
        "max.mtx",
        "%%MatrixMarket matrix coordinate real general\n1 4294967295 1\n1 4294967295 2.5\n",
    );
    let m = read_mtx(&p, OnBadLine::Fail).unwrap();
    assert!(
        matches!(&m.matrix, Vectors::Sparse(c) if c.cols() == u32::MAX as usize && c.indices() == [u32::MAX - 1])
    );
}

/// `rows × 1024` zeros as `float32`, deflated into a `np.savez` archive: a zip bomb of about
/// 1000:1.
fn zeros_npz(rows: usize) -> Vec<u8> {
    let arr = npy_raw("<f4", &format!("({rows}, 1024)"), &vec![0u8; rows * 4096]);
    zip_of(&[("arr_0.npy", arr)], true)
}

#[test]
fn a_zip_bomb_stops_at_the_decompression_limit_naming_the_member() {
    // 64 MiB of zeros in about 64 KB.
    let z = zeros_npz(16_384);
    assert!(z.len() < 200_000, "{} bytes", z.len());
    let p = write("bomb.npz", &z);
    let limits = simlsh::io::Limits::default();
    let e = simlsh::io::read_npz(&p, &limits).unwrap_err();
    assert_format_error(
        e,
        &p,
        &[
            "member `arr_0`",
            "decompresses beyond",
            &format!("{} bytes", limits.decompressed(z.len() as u64)),
            "zip bomb",
        ],
    );
    // Through read_vectors, with the limit raised, it is read.
    let opts = VectorOptions {
        limits: simlsh::io::Limits {
            max_ratio: 2000,
            ..limits
        },
        ..Default::default()
    };
    let v = read_vectors(&p, InputFormat::Npz, &opts).unwrap();
    assert!(
        matches!(&v.vectors, Vectors::Dense(a) if a.dim() == (16_384, 1024) && a.iter().all(|&x| x == 0.0))
    );
    // Small archives of zeros still read under the default limit (16 MiB floor).
    let p = write("zeros.npz", zeros_npz(1024));
    assert!(read_vectors(&p, InputFormat::Npz, &VectorOptions::default()).is_ok());
    // A SciPy bomb: 8M duplicate entries in one row, in the index and data members.
    let nnz = 8usize << 20;
    let members = vec![
        ("format.npy", npy_raw("|S3", "()", b"csr")),
        ("shape.npy", npy_bytes(&array![1i64, 10])),
        ("indptr.npy", npy_bytes(&array![0i64, nnz as i64])),
        (
            "indices.npy",
            npy_raw("<i4", &format!("({nnz},)"), &vec![0u8; 4 * nnz]),
        ),
        (
            "data.npy",
            npy_raw("<f4", &format!("({nnz},)"), &vec![0u8; 4 * nnz]),
        ),
    ];
    let p = write("bomb-csr.npz", zip_of(&members, true));
    assert_format_error(
        read_npz_csr(&p).unwrap_err(),
        &p,
        &["member `indices`", "zip bomb"],
    );
}

// ---------------------------------------------------------------------------------------
// More inputs: float16 and integer .npy, np.savez archives, streams

#[test]
fn float16_and_integer_npy_convert_to_f32() {
    // float16: 1, -2, 0.5, 65504 (max), 2^-24 (smallest subnormal), -0, 1.5, 2^-14.
    let halves = [
        0x3C00u16, 0xC000, 0x3800, 0x7BFF, 0x0001, 0x8000, 0x3E00, 0x0400,
    ];
    let b: Vec<u8> = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
    let p = write("f16.npy", npy_raw("<f2", "(2, 4)", &b));
    let got = read_npy_dense(&p).unwrap();
    let want = array![
        [1.0f32, -2.0, 0.5, 65504.0],
        [2f32.powi(-24), -0.0, 1.5, 2f32.powi(-14)]
    ];
    assert_eq!(got, want);
    assert!(got[(1, 1)].is_sign_negative());
    let b: Vec<u8> = halves.iter().flat_map(|h| h.to_be_bytes()).collect();
    let p = write("f16be.npy", npy_raw(">f2", "(2, 4)", &b));
    assert_eq!(read_npy_dense(&p).unwrap(), want);
    let p = write("f16inf.npy", npy_raw("<f2", "(1, 2)", &[0, 0x3C, 0, 0x7C]));
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["row 0, column 1", "inf"],
    );

    // Integers: exact up to 2^24, then rounded to nearest (ties to even).
    let p = write("i8.npy", npy_bytes(&array![[-128i8, 127, 0]]));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[-128.0f32, 127.0, 0.0]]);
    let p = write("u8.npy", npy_bytes(&array![[0u8, 255]]));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[0.0f32, 255.0]]);
    let p = write("i16.npy", npy_bytes(&array![[i16::MIN, i16::MAX]]));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[-32768.0f32, 32767.0]]);
    let p = write("u16.npy", npy_bytes(&array![[u16::MAX], [1]]));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[65535.0f32], [1.0]]);
    let p = write(
        "i32.npy",
        npy_bytes(&array![[16_777_216i32, 16_777_217, 16_777_219, -7]]),
    );
    assert_eq!(
        read_npy_dense(&p).unwrap(),
        array![[16_777_216.0f32, 16_777_216.0, 16_777_220.0, -7.0]]
    );
    let p = write("i64.npy", npy_bytes(&array![[-(1i64 << 40), 3]]));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[-(2f32.powi(40)), 3.0]]);
    let p = write("u32.npy", npy_bytes(&array![[u32::MAX]]));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[4_294_967_296.0f32]]);
    let b: Vec<u8> = [300i16, -2].iter().flat_map(|x| x.to_be_bytes()).collect();
    let p = write("i16be.npy", npy_raw(">i2", "(2, 1)", &b));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[300.0f32], [-2.0]]);
    let p = write("bool.npy", npy_raw("|b1", "(1, 3)", &[1, 0, 2]));
    assert_eq!(read_npy_dense(&p).unwrap(), array![[1.0f32, 0.0, 1.0]]);
    // uint64 is the signature format: refused, pointing there.
    let p = write("u64v.npy", npy_bytes(&array![[1u64, 2]]));
    assert_format_error(
        read_npy_dense(&p).unwrap_err(),
        &p,
        &["uint64", "read_signatures_npy"],
    );
}

#[test]
fn dense_arrays_saved_by_np_savez_are_read() {
    let a = array![[1.0f32, -2.0, 0.5], [3.0, 0.0, 4.25]];
    for compressed in [false, true] {
        let p = write(
            &format!("savez-{compressed}.npz"),
            zip_of(&[("arr_0.npy", npy_bytes(&a))], compressed),
        );
        let v = read_vectors(&p, InputFormat::Npz, &VectorOptions::default()).unwrap();
        assert!(matches!(&v.vectors, Vectors::Dense(d) if d == a));
        // read_npz_csr reads the sparse kind only.
        assert_format_error(
            read_npz_csr(&p).unwrap_err(),
            &p,
            &["no `format` array", "`arr_0.npy`"],
        );
    }
    // np.savez(path, x=m): one member of any name; float64 in Fortran order.
    let f = Array2::from_shape_fn((3, 2).f(), |(i, j)| (i * 2 + j) as f64);
    let p = write("savez-x.npz", zip_of(&[("x.npy", npy_bytes(&f))], true));
    let v = read_vectors(&p, InputFormat::Npz, &VectorOptions::default()).unwrap();
    assert!(matches!(&v.vectors, Vectors::Dense(d) if *d == f.mapv(|x| x as f32)));
    // Two arrays: ambiguous.
    let p = write(
        "savez-two.npz",
        zip_of(
            &[("arr_0.npy", npy_bytes(&a)), ("arr_1.npy", npy_bytes(&a))],
            false,
        ),
    );
    assert_format_error(
        read_vectors(&p, InputFormat::Npz, &VectorOptions::default()).unwrap_err(),
        &p,
        &["holds 2 arrays", "`arr_0.npy`, `arr_1.npy`"],
    );
    // A member's errors name it.
    let p = write(
        "savez-nan.npz",
        zip_of(
            &[("arr_0.npy", npy_bytes(&array![[1.0f32, f32::NAN]]))],
            true,
        ),
    );
    assert_format_error(
        read_vectors(&p, InputFormat::Npz, &VectorOptions::default()).unwrap_err(),
        &p,
        &["member `arr_0`", "row 0, column 1", "not finite"],
    );
}

/// One valid input of every streamable vector format.
fn stream_inputs() -> Vec<(InputFormat, Vec<u8>)> {
    let mut fvecs = Vec::new();
    for r in 0..3 {
        fvecs.extend(2i32.to_le_bytes());
        fvecs.extend((r as f32).to_le_bytes());
        fvecs.extend((-(r as f32)).to_le_bytes());
    }
    vec![
        (
            InputFormat::Npy,
            npy_bytes(&array![[1.0f32, 2.0], [3.0, 4.5]]),
        ),
        (InputFormat::Svmlight, b"1 1:0.5 3:2\n-1 2:1 # c\n".to_vec()),
        (
            InputFormat::MatrixMarket,
            b"%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 4\n3 3 1\n".to_vec(),
        ),
        (InputFormat::Fvecs, fvecs),
        (InputFormat::Bvecs, vec![2, 0, 0, 0, 9, 8]),
    ]
}

fn same_vectors(a: &Vectors, b: &Vectors) -> bool {
    match (a, b) {
        (Vectors::Dense(x), Vectors::Dense(y)) => x == y,
        (Vectors::Sparse(x), Vectors::Sparse(y)) => x == y,
        _ => false,
    }
}

#[test]
fn streamable_formats_read_from_any_reader_as_from_a_file() {
    let opts = VectorOptions::default();
    let name = Path::new("<stdin>");
    for (f, bytes) in stream_inputs() {
        let p = write(&format!("stream.{}", f.name()), &bytes);
        let file = read_vectors(&p, f, &opts).unwrap();
        let stream = simlsh::io::read_vectors_from(Cursor::new(&bytes), name, f, &opts).unwrap();
        assert!(same_vectors(&file.vectors, &stream.vectors), "{f}");
        // A stream cut in half is an error naming the stream (SVMlight's half is a valid
        // file of one row and a label).
        let cut = &bytes[..bytes.len() / 2];
        match simlsh::io::read_vectors_from(Cursor::new(cut), name, f, &opts) {
            Err(e) => assert!(e.to_string().starts_with("<stdin>"), "{f}: {e}"),
            Ok(v) => assert!(f == InputFormat::Svmlight && v.vectors.rows() == 1, "{f}"),
        }
    }
    // A stream claiming 600M rows in a few bytes.
    let lie = npy_raw("<f4", "(600000000, 1)", &[0; 64]);
    let e = simlsh::io::read_npy_dense_from(Cursor::new(&lie), name).unwrap_err();
    assert!(
        e.to_string().contains("truncated") && e.to_string().contains("2400000000"),
        "{e}"
    );
    // Signatures.
    let m = random_sigs(100, 7, 3);
    let p = tmp("stream-sigs.npy");
    write_signatures_npy(&p, &m).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let got = simlsh::io::read_signatures_npy_from(Cursor::new(&bytes), name, Some(100)).unwrap();
    assert_eq!(got.as_slice(), m.as_slice());
    // .npz cannot be streamed: a clear error, from a reader, from `-` and from a pipe.
    let z = zip_of(&[("arr_0.npy", npy_bytes(&array![[1.0f32]]))], false);
    let e =
        simlsh::io::read_vectors_from(Cursor::new(&z), name, InputFormat::Npz, &opts).unwrap_err();
    assert_format_error(
        e,
        name,
        &[
            "cannot be read from standard input or a pipe",
            "save it to a file",
        ],
    );
    let e = read_vectors(Path::new("-"), InputFormat::Npz, &opts).unwrap_err();
    assert!(
        e.to_string().contains("cannot be read from standard input"),
        "{e}"
    );
}

#[test]
fn the_path_dash_reads_standard_input() {
    const CHILD: &str = "SIMLSH_FORMATS_STDIN_FORMAT";
    if let Ok(f) = std::env::var(CHILD) {
        let f: InputFormat = f.parse().unwrap();
        let v = read_vectors(Path::new("-"), f, &VectorOptions::default()).unwrap();
        let dense = match v.vectors {
            Vectors::Dense(a) => a,
            Vectors::Sparse(m) => m.to_dense(),
        };
        println!("@@{dense:?}@@");
        return;
    }
    for (f, bytes) in stream_inputs() {
        let p = write(&format!("stdin.{}", f.name()), &bytes);
        let want = match read_vectors(&p, f, &VectorOptions::default())
            .unwrap()
            .vectors
        {
            Vectors::Dense(a) => a,
            Vectors::Sparse(m) => m.to_dense(),
        };
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_path_dash_reads_standard_input",
                "--nocapture",
            ])
            .env(CHILD, f.name())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&out.stdout);
        let got = out.split("@@").nth(1).unwrap_or("");
        assert_eq!(got, format!("{want:?}"), "{f}: {out}");
    }
}
