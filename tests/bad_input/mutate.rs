//! The bad inputs: deterministic mutations of the seeds (byte-level damage, lies in headers,
//! bad values) and hand-made hostile files (zip bombs, huge claimed shapes).

use simlsh::io::{InputFormat, OnBadLine};
use simlsh::rng::Rng;

use super::Target;
use super::npyzip::zip_of;
use super::seeds::{Form, Seed, npy_dict, npy_full};

/// One bad input and the reader it is fed to.
pub struct Case {
    pub target: Target,
    pub desc: String,
    pub bytes: Vec<u8>,
}

/// Numbers that break size arithmetic: zero, one, 2^31, 2^32 and their neighbours, 2^63,
/// 2^64 - 1 and beyond.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "4294967297",
    "1000000000000",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
];

/// Tokens substituted into text inputs.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e39",
    "1e400",
    "-1e400",
    "1e-50",
    "0x10",
    "1.5",
    "",
    " ",
    ":",
    "::",
    "1:",
    ":1",
    "#",
    "%",
    "\t",
    "\r",
    "\u{FEFF}",
    "\u{e9}",
    "qid:1",
    "2147483648",
    "1:nan",
    "4294967295:1",
    "4294967296:1",
    "0:1",
    "%%MatrixMarket",
    "coordinate",
    "array",
    "pattern",
    "complex",
    "hermitian",
    "symmetric",
];

struct Gen {
    rng: Rng,
}

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.rng.below(n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// A byte-level mutation of `b`, described.
fn bytes_mutation(g: &mut Gen, b: &[u8]) -> (String, Vec<u8>) {
    let mut v = b.to_vec();
    let n = v.len().max(1);
    match g.below(8) {
        0 => {
            let at = g.below(n);
            v.truncate(at);
            (format!("truncated to {at} bytes"), v)
        }
        1 | 2 => {
            let flips = 1 + g.below(4);
            for _ in 0..flips {
                if !v.is_empty() {
                    let at = g.below(v.len());
                    v[at] ^= 1 << g.below(8);
                }
            }
            (format!("{flips} bit flips"), v)
        }
        3 => {
            let at = g.below(n);
            let val = *g.pick(&[0u8, 0xFF, 0x7F, 0x80, b'9', b'\n', b' ']);
            if at < v.len() {
                v[at] = val;
            }
            (format!("byte {at} set to {val:#x}"), v)
        }
        4 => {
            let at = g.below(n + 1).min(v.len());
            let len = 1 + g.below(16);
            let ins: Vec<u8> = (0..len).map(|_| g.rng.next_u64() as u8).collect();
            v.splice(at..at, ins);
            (format!("{len} random bytes inserted at {at}"), v)
        }
        5 => {
            let at = g.below(n).min(v.len());
            let len = (1 + g.below(32)).min(v.len() - at);
            v.drain(at..at + len);
            (format!("{len} bytes deleted at {at}"), v)
        }
        6 => {
            let at = g.below(n).min(v.len());
            let len = (1 + g.below(64)).min(v.len() - at);
            let times = 1 + g.below(200);
            let chunk = v[at..at + len].to_vec();
            for _ in 0..times {
                v.splice(at..at, chunk.iter().copied());
            }
            (format!("{len} bytes at {at} repeated {times} times"), v)
        }
        _ => {
            // Overwrite an aligned 4- or 8-byte word with a boundary value.
            let w = if g.below(2) == 0 { 4 } else { 8 };
            let at = g.below(n / w + 1) * w;
            let val: u64 = *g.pick(&[
                0,
                1,
                u32::MAX as u64,
                1 << 31,
                1 << 32,
                u64::MAX,
                i64::MAX as u64,
                0x7FF0_0000_0000_0000,
                0x7FC0_0000,
            ]);
            if at + w <= v.len() {
                v[at..at + w].copy_from_slice(&val.to_le_bytes()[..w]);
            }
            (format!("{w}-byte word at {at} set to {val:#x}"), v)
        }
    }
}

/// A token-level mutation of a text input.
fn text_mutation(g: &mut Gen, b: &[u8]) -> (String, Vec<u8>) {
    let text = String::from_utf8_lossy(b).into_owned();
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let li = g.below(lines.len());
    match g.below(6) {
        0..=2 => {
            // Replace a token (split at spaces and colons) of a line.
            let line = lines[li].clone();
            let mut parts: Vec<String> = Vec::new();
            let mut cur = String::new();
            for ch in line.chars() {
                if ch == ' ' || ch == ':' {
                    parts.push(std::mem::take(&mut cur));
                    parts.push(ch.to_string());
                } else {
                    cur.push(ch);
                }
            }
            parts.push(cur);
            let tok_positions: Vec<usize> = (0..parts.len()).step_by(2).collect();
            let at = *g.pick(&tok_positions);
            let tok = if g.below(2) == 0 {
                g.pick(TOKENS).to_string()
            } else {
                g.pick(NUMBERS).to_string()
            };
            let old = std::mem::replace(&mut parts[at], tok.clone());
            lines[li] = parts.concat();
            (
                format!("line {}: token `{old}` replaced by `{tok}`", li + 1),
                lines.join("\n").into_bytes(),
            )
        }
        3 => {
            // At most 2,000 copies, and about 4 MB.
            let times = (1 + g.below(2000))
                .min(4_000_000 / (lines[li].len() + 1))
                .max(1);
            let l = lines[li].clone();
            for _ in 0..times {
                lines.insert(li, l.clone());
            }
            (
                format!("line {} repeated {times} times", li + 1),
                lines.join("\n").into_bytes(),
            )
        }
        4 => {
            let lj = g.below(lines.len());
            lines.swap(li, lj);
            (
                format!("lines {} and {} swapped", li + 1, lj + 1),
                lines.join("\n").into_bytes(),
            )
        }
        _ => {
            let mut v = lines.join("\n").into_bytes();
            let at = g.below(v.len() + 1);
            const BAD: [&[u8]; 5] = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\0", b"\xef\xbb\xbf"];
            let bad = *g.pick(&BAD);
            v.splice(at..at, bad.iter().copied());
            (format!("bytes {bad:?} inserted at {at}"), v)
        }
    }
}

/// The header dictionary and data of a `.npy` image, if it parses as NumPy writes it.
fn npy_parts(b: &[u8]) -> Option<(String, Vec<u8>)> {
    if b.len() < 10 || !b.starts_with(b"\x93NUMPY") {
        return None;
    }
    let (hl, pre) = if b[6] == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes(b[8..12].try_into().ok()?) as usize, 12)
    };
    let dict = std::str::from_utf8(b.get(pre..pre + hl)?).ok()?;
    Some((dict.trim_end().to_string(), b[pre + hl..].to_vec()))
}

/// The value of `key` in a header dictionary written as NumPy does.
fn dict_value(dict: &str, key: &str) -> Option<String> {
    let at = dict.find(&format!("'{key}': "))? + key.len() + 4;
    let rest = &dict[at..];
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find(", ")?
    };
    Some(rest[..end].to_string())
}

const SHAPES: &[&str] = &[
    "(4294967296, 4294967296)",
    "(2305843009213693952, 8)",
    "(18446744073709551615, 1)",
    "(18446744073709551616,)",
    "(100000, 100000)",
    "(24000, 24000)",
    "(0, 1000000000000)",
    "(1000000000000, 0)",
    "(-1, 3)",
    "(3,)",
    "()",
    "(1, 2, 3)",
    "(2, 3, 0)",
    "(1.5, 2)",
    "(1, 1)",
    "(0, 0)",
    "[2, 3]",
    "(2 3)",
    "(2,,3)",
    "(2L, 3L)",
    "(4294967296,)",
    "(1, 4294967296)",
    "(1, 4294967295)",
];

const DESCRS: &[&str] = &[
    "'<f2'",
    "'>f2'",
    "'<f4'",
    "'>f4'",
    "'<f8'",
    "'<f16'",
    "'<f3'",
    "'<f0'",
    "'<i1'",
    "'|u1'",
    "'<i2'",
    "'<u2'",
    "'<i4'",
    "'<u4'",
    "'<i8'",
    "'<u8'",
    "'|b1'",
    "'<c8'",
    "'|O'",
    "'|S4'",
    "'<U3'",
    "'|V8'",
    "'<M8[ns]'",
    "[('a', '<f4')]",
    "'f4'",
    "'<'",
    "''",
    "'<f99999999999999999999'",
    "'<f18446744073709551615'",
    "'<u4294967296'",
    "'=f4'",
    "'|f4'",
];

/// Lies in a `.npy` header: shapes, dtypes, order, lengths and versions.
fn npy_lies(b: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let Some((dict, data)) = npy_parts(b) else {
        return out;
    };
    let descr = dict_value(&dict, "descr").unwrap_or_default();
    let fortran = dict_value(&dict, "fortran_order").unwrap_or_default();
    let shape = dict_value(&dict, "shape").unwrap_or_default();
    for s in SHAPES {
        out.push((format!("shape {s}"), npy_full(&descr, &fortran, s, &data)));
    }
    for d in DESCRS {
        out.push((format!("descr {d}"), npy_full(d, &fortran, &shape, &data)));
    }
    for f in ["True", "False", "1", "None"] {
        out.push((
            format!("fortran_order {f}"),
            npy_full(&descr, f, &shape, &data),
        ));
    }
    // Data one element short and one long, and none.
    out.push((
        "data without its last byte".into(),
        b[..b.len() - 1].to_vec(),
    ));
    let mut longer = b.to_vec();
    longer.extend([0u8; 8]);
    out.push(("8 bytes after the data".into(), longer));
    out.push(("no data".into(), b[..b.len() - data.len()].to_vec()));
    // Whole-dictionary lies.
    for (what, d) in [
        (
            "missing shape",
            format!("{{'descr': {descr}, 'fortran_order': {fortran}, }}"),
        ),
        (
            "extra key",
            format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, 'x': 1, }}"),
        ),
        (
            "duplicate key",
            format!(
                "{{'descr': {descr}, 'descr': '<f8', 'fortran_order': {fortran}, 'shape': {shape}, }}"
            ),
        ),
        ("not a dict", "[1, 2, 3]".to_string()),
        (
            "nested tuples",
            format!(
                "{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {}{shape}{}, }}",
                "(".repeat(20_000),
                ")".repeat(20_000)
            ),
        ),
        (
            "nested lists",
            format!(
                "{{'descr': {}{descr}{}, 'fortran_order': {fortran}, 'shape': {shape}, }}",
                "[".repeat(20_000),
                "]".repeat(20_000)
            ),
        ),
        (
            "unterminated string",
            format!("{{'descr': '<f4, 'fortran_order': {fortran}, 'shape': {shape}, }}"),
        ),
        (
            "non-ASCII",
            format!(
                "{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, '\u{e9}': 1}}"
            ),
        ),
        ("empty", String::new()),
    ] {
        out.push((format!("header: {what}"), npy_dict(&d, &data)));
    }
    // Header length and version lies.
    for (what, patch) in [
        ("header length 0", vec![(8usize, 0u8), (9, 0)]),
        ("header length 1", vec![(8, 1), (9, 0)]),
        ("header length 65535", vec![(8, 0xFF), (9, 0xFF)]),
        ("version 2.0 (4-byte length)", vec![(6, 2)]),
        ("version 3.0", vec![(6, 3)]),
        ("version 9.9", vec![(6, 9), (7, 9)]),
    ] {
        let mut v = b.to_vec();
        for (at, x) in patch {
            v[at] = x;
        }
        out.push((what.to_string(), v));
    }
    let mut v = b[..10].to_vec();
    v[6] = 2;
    v.extend([0xFF, 0xFF, 0xFF, 0xFF]);
    out.push((
        "version 2.0, header length 2^32 - 1, 14-byte file".into(),
        v,
    ));
    // Non-finite floats.
    let fdescr = descr.trim_matches('\'');
    let (size, big) = match fdescr {
        "<f4" => (4, false),
        ">f4" => (4, true),
        "<f8" => (8, false),
        "<f2" => (2, false),
        _ => (0, false),
    };
    if size > 0 && !data.is_empty() {
        let head = b.len() - data.len();
        for (what, bits) in [
            ("NaN", [0x7FF8_0000_0000_0000u64, 0x7FC0_0000, 0x7E00]),
            ("+inf", [0x7FF0_0000_0000_0000, 0x7F80_0000, 0x7C00]),
            (
                "1e300 (beyond f32)",
                [0x7E37_E43C_8800_759C, 0x7F7F_FFFF, 0x7BFF],
            ),
        ] {
            let x = match size {
                8 => bits[0].to_le_bytes().to_vec(),
                4 if big => (bits[1] as u32).to_be_bytes().to_vec(),
                4 => (bits[1] as u32).to_le_bytes().to_vec(),
                _ => (bits[2] as u16).to_le_bytes().to_vec(),
            };
            let mut v = b.to_vec();
            let k = (data.len() / size) / 2;
            v[head + k * size..head + (k + 1) * size].copy_from_slice(&x);
            out.push((format!("{what} at element {k}"), v));
        }
    }
    out
}

fn int_npy(descr: &str, vals: &[i64]) -> Vec<u8> {
    let mut d = Vec::new();
    for &x in vals {
        match descr {
            "<i4" => d.extend((x as i32).to_le_bytes()),
            _ => d.extend(x.to_le_bytes()),
        }
    }
    npy_full(
        &format!("'{descr}'"),
        "False",
        &format!("({},)", vals.len()),
        &d,
    )
}

fn rezip(members: &[(String, Vec<u8>)], compressed: bool) -> Vec<u8> {
    let refs: Vec<(&str, Vec<u8>)> = members
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    zip_of(&refs, compressed)
}

/// Lies in the members of an `.npz` archive and in its zip structure.
fn npz_lies(
    g: &mut Gen,
    members: &[(String, Vec<u8>)],
    compressed: bool,
    zip: &[u8],
) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let with = |name: &str, bytes: Vec<u8>| {
        let mut m = members.to_vec();
        if let Some(x) = m.iter_mut().find(|(n, _)| n == name) {
            x.1 = bytes;
        }
        rezip(&m, compressed)
    };
    // Header lies in each member (a sample of them, to keep the count down).
    for (name, bytes) in members {
        let lies = npy_lies(bytes);
        for k in 0..12 {
            let (what, v) = &lies[(k * 7 + g.below(7)) % lies.len()];
            out.push((format!("member {name}: {what}"), with(name, v.clone())));
        }
        for _ in 0..4 {
            let (what, v) = bytes_mutation(g, bytes);
            out.push((format!("member {name}: {what}"), with(name, v)));
        }
        let dropped: Vec<_> = members.iter().filter(|(n, _)| n != name).cloned().collect();
        out.push((
            format!("member {name} missing"),
            rezip(&dropped, compressed),
        ));
        let renamed: Vec<_> = members
            .iter()
            .map(|(n, b)| {
                (
                    if n == name {
                        n.trim_end_matches(".npy").to_string()
                    } else {
                        n.clone()
                    },
                    b.clone(),
                )
            })
            .collect();
        out.push((
            format!("member {name} without .npy"),
            rezip(&renamed, compressed),
        ));
    }
    let has = |n: &str| members.iter().any(|(m, _)| m == n);
    if has("shape.npy") {
        for s in [
            [4i64, 4294967296],
            [4, 4294967295],
            [4294967296, 6],
            [1 << 40, 6],
            [-1, 6],
            [4, -6],
            [0, 0],
            [4, 3],
            [3, 6],
            [i64::MAX, i64::MAX],
        ] {
            out.push((
                format!("shape {s:?}"),
                with("shape.npy", int_npy("<i8", &s)),
            ));
        }
        out.push((
            "shape of one value".into(),
            with("shape.npy", int_npy("<i8", &[4])),
        ));
    }
    if has("format.npy") {
        for f in ["bsr", "dia", "xyz", "", "csrr", "coo\0"] {
            out.push((
                format!("format `{f}`"),
                with(
                    "format.npy",
                    super::npyzip::npy_raw(&format!("|S{}", f.len().max(1)), "()", f.as_bytes()),
                ),
            ));
        }
    }
    if has("indptr.npy") {
        for p in [
            vec![0i64, 2, 1, 4, 6],
            vec![1, 2, 3, 5, 6],
            vec![0, 2, 3, 5, 1 << 40],
            vec![0, 2, 3, 5, 7],
            vec![0, 2, 3, 5],
            vec![0, 2, 3, 5, 6, 6],
            vec![0, -2, 3, 5, 6],
            vec![0, 0, 0, 0, 6],
        ] {
            out.push((
                format!("indptr {p:?}"),
                with("indptr.npy", int_npy("<i8", &p)),
            ));
        }
    }
    if has("indices.npy") {
        for p in [
            vec![1i64, 4, 0, 2, 5, 6],
            vec![1, 4, 0, 2, 5, -1],
            vec![4, 1, 0, 5, 2, 3],
            vec![1, 1, 0, 2, 2, 3],
            vec![1, 4, 0, 2, 5, 4294967296],
            vec![1, 4, 0, 2, 5],
            vec![1, 4, 0, 2, 5, 3, 3],
        ] {
            out.push((
                format!("indices {p:?}"),
                with("indices.npy", int_npy("<i4", &p)),
            ));
        }
    }
    if has("row.npy") {
        for p in [
            vec![0i64, 0, 1, 2, 2, 4],
            vec![0, 0, 1, 2, 2, -1],
            vec![3, 0, 1, 2, 0, 3],
            vec![0, 0, 1],
        ] {
            out.push((format!("row {p:?}"), with("row.npy", int_npy("<i8", &p))));
        }
    }
    if has("data.npy") {
        for (what, x) in [
            ("NaN", f32::NAN),
            ("inf", f32::INFINITY),
            ("-inf", f32::NEG_INFINITY),
        ] {
            let d: Vec<u8> = [1.5f32, x, 0.25, 3.0, 1.0, -0.5]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            out.push((
                format!("data with {what}"),
                with("data.npy", npy_full("'<f4'", "False", "(6,)", &d)),
            ));
        }
        let d: Vec<u8> = [1.5f64, 1e300, 0.25, 3.0, 1.0, -0.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        out.push((
            "data float64 1e300".into(),
            with("data.npy", npy_full("'<f8'", "False", "(6,)", &d)),
        ));
    }
    // Zip structure lies: central directory and end-of-directory fields.
    let find = |sig: &[u8; 4]| -> Vec<usize> {
        zip.windows(4)
            .enumerate()
            .filter(|(_, w)| *w == sig)
            .map(|(i, _)| i)
            .collect()
    };
    let cds = find(b"PK\x01\x02");
    let eocd = find(b"PK\x05\x06");
    let locals = find(b"PK\x03\x04");
    let mut patch = |what: String, at: usize, val: &[u8]| {
        if at + val.len() <= zip.len() {
            let mut v = zip.to_vec();
            v[at..at + val.len()].copy_from_slice(val);
            out.push((what, v));
        }
    };
    for (k, &c) in cds.iter().enumerate() {
        for (field, off, w) in [
            ("compressed size", 20usize, 4usize),
            ("uncompressed size", 24, 4),
            ("name length", 28, 2),
            ("extra length", 30, 2),
            ("local header offset", 42, 4),
        ] {
            for val in [0u32, 1, 0x7FFF_FFFF, 0xFFFF_FFFF, 0xFFFF] {
                patch(
                    format!("entry {k}: central {field} = {val:#x}"),
                    c + off,
                    &val.to_le_bytes()[..w],
                );
            }
        }
    }
    for (k, &l) in locals.iter().enumerate() {
        for (field, off, w) in [
            ("compressed size", 18usize, 4usize),
            ("uncompressed size", 22, 4),
            ("name length", 26, 2),
            ("extra length", 28, 2),
            ("method", 8, 2),
        ] {
            for val in [0u32, 0xFFFF_FFFF, 8, 99] {
                patch(
                    format!("entry {k}: local {field} = {val:#x}"),
                    l + off,
                    &val.to_le_bytes()[..w],
                );
            }
        }
    }
    for &e in &eocd {
        for (field, off, w) in [
            ("entries on disk", 8usize, 2usize),
            ("entries", 10, 2),
            ("directory size", 12, 4),
            ("directory offset", 16, 4),
            ("comment length", 20, 2),
        ] {
            for val in [0u32, 1, 0xFFFF, 0xFFFF_FFFF] {
                patch(
                    format!("end record: {field} = {val:#x}"),
                    e + off,
                    &val.to_le_bytes()[..w],
                );
            }
        }
    }
    out
}

/// Zip bombs and huge claims in `.npz` archives: every member is consistent with its header,
/// only the decompressed size is out of proportion to the file.
fn npz_bombs() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let zeros = |n: usize| vec![0u8; n];
    for mb in [16usize, 64] {
        let n = mb << 20;
        let arr = npy_full(
            "'<f4'",
            "False",
            &format!("({}, 1024)", n / 4096),
            &zeros(n),
        );
        out.push((
            format!("np.savez bomb: {mb} MB of zeros"),
            zip_of(&[("arr_0.npy", arr)], true),
        ));
    }
    // SciPy CSR: one row of 8M duplicate entries, indices and data all zero.
    let nnz = 8usize << 20;
    let members = vec![
        ("format.npy", super::npyzip::npy_raw("|S3", "()", b"csr")),
        ("shape.npy", int_npy("<i8", &[1, 10])),
        ("indptr.npy", int_npy("<i8", &[0, nnz as i64])),
        (
            "indices.npy",
            npy_full("'<i4'", "False", &format!("({nnz},)"), &zeros(4 * nnz)),
        ),
        (
            "data.npy",
            npy_full("'<f4'", "False", &format!("({nnz},)"), &zeros(4 * nnz)),
        ),
    ];
    out.push((
        "save_npz bomb: 8M entries in one row".into(),
        zip_of(&members, true),
    ));
    // COO: 8M entries, rows claimed 2^40.
    let members = vec![
        ("format.npy", super::npyzip::npy_raw("|S3", "()", b"coo")),
        ("shape.npy", int_npy("<i8", &[1 << 40, 10])),
        (
            "row.npy",
            npy_full("'<i8'", "False", &format!("({nnz},)"), &zeros(8 * nnz)),
        ),
        (
            "col.npy",
            npy_full("'<i8'", "False", &format!("({nnz},)"), &zeros(8 * nnz)),
        ),
        (
            "data.npy",
            npy_full("'<f4'", "False", &format!("({nnz},)"), &zeros(4 * nnz)),
        ),
    ];
    out.push((
        "save_npz COO bomb with 2^40 rows".into(),
        zip_of(&members, true),
    ));
    // A small archive whose only member claims a huge shape but is short (stored and deflated).
    for compressed in [false, true] {
        let arr = npy_full("'<f4'", "False", "(600000000, 1)", &zeros(64));
        out.push((
            format!(
                "np.savez member claiming 2.4 GB ({})",
                if compressed { "deflated" } else { "stored" }
            ),
            zip_of(&[("arr_0.npy", arr)], compressed),
        ));
    }
    // Many members.
    let many: Vec<(String, Vec<u8>)> = (0..2000)
        .map(|i| {
            (
                format!("arr_{i}.npy"),
                npy_full("'<f4'", "False", "(1, 1)", &[0, 0, 0, 0]),
            )
        })
        .collect();
    out.push(("2000 members".into(), rezip(&many, true)));
    out
}

fn vecs_lies(b: &[u8], elem: usize) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let row = 4 + 4 * elem;
    for (r, at) in [(0usize, 0usize), (1, row), (2, 2 * row)] {
        for d in [0i32, -1, i32::MAX, i32::MIN, 1 << 30, 5, 3, 1] {
            if at + 4 <= b.len() {
                let mut v = b.to_vec();
                v[at..at + 4].copy_from_slice(&d.to_le_bytes());
                out.push((format!("row {r}: dimension {d}"), v));
            }
        }
    }
    if elem == 4 {
        for (what, bits) in [("NaN", 0x7FC0_0000u32), ("inf", 0x7F80_0000)] {
            let mut v = b.to_vec();
            v[row + 8..row + 12].copy_from_slice(&bits.to_le_bytes());
            out.push((format!("{what} in row 1"), v));
        }
    }
    out.push(("3 bytes".into(), b[..3].to_vec()));
    out
}

/// The parts of a simlsh file, to rebuild it with lies that pass the checksum.
struct IndexParts {
    kind: u32,
    params: Vec<(String, String)>,
    sections: Vec<(String, u32, Vec<u8>)>,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn parse_index(b: &[u8]) -> IndexParts {
    let kind = le_u32(b, 12);
    let plen = le_u32(b, 16) as usize;
    let nsec = le_u32(b, 20) as usize;
    let params = std::str::from_utf8(&b[32..32 + plen])
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let sections = (0..nsec)
        .map(|s| {
            let e = &b[32 + plen + 48 * s..32 + plen + 48 * (s + 1)];
            let name = String::from_utf8_lossy(&e[..24])
                .trim_end_matches('\0')
                .to_string();
            let code = le_u32(e, 24);
            let off = le_u64(e, 32) as usize;
            let n = le_u64(e, 40) as usize;
            let size = match code {
                1 => 1,
                3 => 8,
                _ => 4,
            };
            (name, code, b[off..off + n * size].to_vec())
        })
        .collect();
    IndexParts {
        kind,
        params,
        sections,
    }
}

/// Recomputes the footer's checksum, so that a lie reaches the loader's validation.
fn rechecksum(v: &mut [u8]) {
    let n = v.len();
    if n >= 64 {
        let c = xxhash_rust::xxh3::xxh3_64(&v[..n - 32]);
        v[n - 24..n - 16].copy_from_slice(&c.to_le_bytes());
    }
}

/// Writes a simlsh file as `Writer::write` does (the layout of `simlsh::persist::format`).
fn write_index(p: &IndexParts) -> Vec<u8> {
    let mut params = String::new();
    for (k, v) in &p.params {
        params.push_str(&format!("{k}={v}\n"));
    }
    let table_end = 32 + params.len() + 48 * p.sections.len();
    let mut off = table_end.next_multiple_of(64);
    let mut table = Vec::new();
    let mut layout = Vec::new();
    for (name, code, data) in &p.sections {
        let size = match code {
            1 => 1,
            3 => 8,
            _ => 4,
        };
        let mut e = [0u8; 48];
        let nb = name.as_bytes();
        e[..nb.len().min(24)].copy_from_slice(&nb[..nb.len().min(24)]);
        e[24..28].copy_from_slice(&code.to_le_bytes());
        e[32..40].copy_from_slice(&(off as u64).to_le_bytes());
        e[40..48].copy_from_slice(&((data.len() / size) as u64).to_le_bytes());
        table.extend(e);
        layout.push(off);
        off = (off + data.len()).next_multiple_of(64);
    }
    let mut v = Vec::new();
    v.extend(b"SIMLSH\r\n");
    v.extend(1u32.to_le_bytes());
    v.extend(p.kind.to_le_bytes());
    v.extend((params.len() as u32).to_le_bytes());
    v.extend((p.sections.len() as u32).to_le_bytes());
    v.extend([0u8; 8]);
    v.extend(params.as_bytes());
    v.extend(table);
    for ((_, _, data), &o) in p.sections.iter().zip(&layout) {
        v.resize(o, 0);
        v.extend(data);
    }
    let total = v.len() + 32;
    v.extend((total as u64).to_le_bytes());
    v.extend([0u8; 16]);
    v.extend(b"SIMLSHND");
    rechecksum(&mut v);
    v
}

fn index_lies(g: &mut Gen, b: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let p = parse_index(b);
    let rebuilt = |f: &dyn Fn(&mut IndexParts)| {
        let mut q = IndexParts {
            kind: p.kind,
            params: p.params.clone(),
            sections: p.sections.clone(),
        };
        f(&mut q);
        write_index(&q)
    };
    // Parameters: every one set to boundary values, removed, and an unknown one added.
    for (i, (k, _)) in p.params.iter().enumerate() {
        if k.starts_with("signer.") {
            continue;
        }
        for val in NUMBERS.iter().copied().chain([
            "2", "3", "63", "64", "65", "128", "4096", "", "x", "1.5", "true", "false",
        ]) {
            out.push((
                format!("parameter {k}={val}"),
                rebuilt(&|q| q.params[i].1 = val.to_string()),
            ));
        }
        out.push((
            format!("parameter {k} missing"),
            rebuilt(&|q| {
                q.params.remove(i);
            }),
        ));
    }
    out.push(("kind 1 (signatures)".into(), rebuilt(&|q| q.kind = 1)));
    for kind in 2..=5u32 {
        if kind != p.kind {
            out.push((format!("kind {kind}"), rebuilt(&|q| q.kind = kind)));
        }
    }
    // Sections: values replaced, lengths changed, order broken, types and names changed.
    for (i, (name, code, data)) in p.sections.iter().enumerate() {
        let size = match code {
            1 => 1,
            3 => 8,
            _ => 4,
        };
        let n = data.len() / size;
        let mut values = vec![0u64, 1, u32::MAX as u64, u64::MAX, 1 << 32, 7];
        values.extend([n as u64, n as u64 + 1, n.saturating_sub(1) as u64]);
        for val in values {
            for at in [0, n / 2, n.saturating_sub(1)] {
                if n == 0 {
                    continue;
                }
                out.push((
                    format!("section {name}[{at}] = {val:#x}"),
                    rebuilt(&|q| {
                        let d = &mut q.sections[i].2;
                        d[at * size..(at + 1) * size].copy_from_slice(&val.to_le_bytes()[..size]);
                    }),
                ));
            }
        }
        for _ in 0..3 {
            if n >= 2 {
                let (a, c) = (g.below(n), g.below(n));
                out.push((
                    format!("section {name}: elements {a} and {c} swapped"),
                    rebuilt(&|q| {
                        let d = &mut q.sections[i].2;
                        for k in 0..size {
                            d.swap(a * size + k, c * size + k);
                        }
                    }),
                ));
            }
        }
        for keep in [0, n / 2, n.saturating_sub(1), n + 1, 2 * n + 3] {
            out.push((
                format!("section {name}: {keep} of {n} elements"),
                rebuilt(&|q| {
                    let d = &mut q.sections[i].2;
                    d.resize(keep * size, 0x5A);
                }),
            ));
        }
        out.push((
            format!("section {name} missing"),
            rebuilt(&|q| {
                q.sections.remove(i);
            }),
        ));
        for c in [1u32, 2, 3, 4] {
            if c != *code {
                out.push((
                    format!("section {name} as type {c}"),
                    rebuilt(&|q| q.sections[i].1 = c),
                ));
            }
        }
        out.push((
            format!("section {name} duplicated"),
            rebuilt(&|q| {
                let s = q.sections[i].clone();
                q.sections.push(s);
            }),
        ));
    }
    // Section table lies patched in place (checksum recomputed).
    let plen = le_u32(b, 16) as usize;
    for s in 0..p.sections.len() {
        let e = 32 + plen + 48 * s;
        for (field, at, val) in [
            ("offset", 32usize, u64::MAX),
            ("offset", 32, 64),
            ("offset", 32, 1 << 40),
            ("count", 40, u64::MAX),
            ("count", 40, 1 << 61),
            ("count", 40, 1 << 32),
            ("type", 24, 0),
            ("type", 24, 9),
        ] {
            let mut v = b.to_vec();
            let w = if field == "type" { 4 } else { 8 };
            v[e + at..e + at + w].copy_from_slice(&val.to_le_bytes()[..w]);
            rechecksum(&mut v);
            out.push((format!("table entry {s}: {field} = {val:#x}"), v));
        }
    }
    for (what, at, val) in [
        ("parameter length", 16usize, u32::MAX),
        ("section count", 20, u32::MAX),
        ("section count", 20, 1 << 20),
        ("version", 8, 2),
    ] {
        let mut v = b.to_vec();
        v[at..at + 4].copy_from_slice(&val.to_le_bytes());
        rechecksum(&mut v);
        out.push((format!("header {what} = {val}"), v));
    }
    out
}

fn npy_to_members(members: &[(String, Vec<u8>)]) -> bool {
    members.iter().all(|(n, _)| n.ends_with(".npy"))
}

/// Large inputs (hundreds of kilobytes), where an allocation out of proportion to the input
/// shows above the bound's 1 MiB of slack: valid ones and damaged ones.
fn large() -> Vec<(Vec<Target>, String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rng = Rng::new(99);
    let npz_targets = vec![
        Target::Vectors(InputFormat::Npz, OnBadLine::Fail),
        Target::NpzCsr,
    ];
    // A 2000 × 100000 CSR matrix of 100,000 entries, rows unsorted with duplicates.
    let rows = 2000usize;
    let mut indptr = vec![0i64];
    let (mut indices, mut data) = (Vec::new(), Vec::new());
    for _ in 0..rows {
        for _ in 0..50 {
            indices.push(rng.below(100_000) as i64);
            data.push(rng.uniform() as f32);
        }
        indptr.push(indices.len() as i64);
    }
    let members = |fmt: &str| {
        vec![
            ("indices.npy", int_npy("<i4", &indices)),
            ("indptr.npy", int_npy("<i8", &indptr)),
            (
                "format.npy",
                super::npyzip::npy_raw("|S3", "()", fmt.as_bytes()),
            ),
            ("shape.npy", int_npy("<i8", &[rows as i64, 100_000])),
            (
                "data.npy",
                npy_full(
                    "'<f4'",
                    "False",
                    &format!("({},)", data.len()),
                    &data
                        .iter()
                        .flat_map(|x| x.to_le_bytes())
                        .collect::<Vec<_>>(),
                ),
            ),
        ]
    };
    let dense: Vec<u8> = (0..65536).flat_map(|i| (i as f32).to_le_bytes()).collect();
    for compressed in [false, true] {
        let kind = if compressed { "deflated" } else { "stored" };
        let csr = zip_of(&members("csr"), compressed);
        let arr = zip_of(
            &[(
                "arr_0.npy",
                npy_full("'<f4'", "False", "(256, 256)", &dense),
            )],
            compressed,
        );
        for (what, z) in [("CSR of 100,000 entries", csr), ("256 × 256 float32", arr)] {
            out.push((
                npz_targets.clone(),
                format!("large npz, {what}, {kind}"),
                z.clone(),
            ));
            let e = z.windows(4).rposition(|w| w == b"PK\x05\x06").unwrap();
            for (field, off, val) in [
                ("entries", 10usize, 0xFFFFu32),
                ("entries on disk", 8, 0xFFFF),
                ("directory size", 12, 0xFFFF_FFFF),
            ] {
                let mut v = z.clone();
                let w = if field == "directory size" { 4 } else { 2 };
                v[e + off..e + off + w].copy_from_slice(&val.to_le_bytes()[..w]);
                out.push((
                    npz_targets.clone(),
                    format!("large npz, {what}, {kind}: end record {field} = {val:#x}"),
                    v,
                ));
            }
            let mut g = Gen {
                rng: Rng::new(z.len() as u64),
            };
            for _ in 0..6 {
                let (d, v) = bytes_mutation(&mut g, &z);
                out.push((
                    npz_targets.clone(),
                    format!("large npz, {what}, {kind}: {d}"),
                    v,
                ));
            }
        }
    }
    // COO with many rows claimed.
    let coo = vec![
        ("format.npy", super::npyzip::npy_raw("|S3", "()", b"coo")),
        ("shape.npy", int_npy("<i8", &[1_000_000, 100_000])),
        (
            "row.npy",
            int_npy(
                "<i8",
                &indices.iter().map(|&i| i % 1_000_000).collect::<Vec<_>>(),
            ),
        ),
        ("col.npy", int_npy("<i4", &indices)),
        (
            "data.npy",
            npy_full(
                "'<f4'",
                "False",
                &format!("({},)", data.len()),
                &data
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect::<Vec<_>>(),
            ),
        ),
    ];
    out.push((
        npz_targets.clone(),
        "large npz, COO claiming 1,000,000 rows".into(),
        zip_of(&coo, false),
    ));
    // MatrixMarket: 100,000 symmetric entries.
    let mut m =
        String::from("%%MatrixMarket matrix coordinate real symmetric\n30000 30000 100000\n");
    for _ in 0..100_000 {
        let (i, j) = (1 + rng.below(30_000), 1 + rng.below(30_000));
        m.push_str(&format!("{} {} {:.3}\n", i.max(j), i.min(j), rng.uniform()));
    }
    let mtx_targets = vec![
        Target::Vectors(InputFormat::MatrixMarket, OnBadLine::Fail),
        Target::Stream(InputFormat::MatrixMarket),
        Target::Mtx,
    ];
    out.push((
        mtx_targets.clone(),
        "large mtx, 100,000 symmetric entries".into(),
        m.clone().into_bytes(),
    ));
    out.push((
        mtx_targets.clone(),
        "large mtx, truncated".into(),
        m.as_bytes()[..m.len() / 2].to_vec(),
    ));
    out.push((
        mtx_targets.clone(),
        "large mtx, 30000 × 30000 array claimed".into(),
        m.replacen("coordinate", "array", 1)
            .replacen("30000 30000 100000", "30000 30000", 1)
            .into_bytes(),
    ));
    // SVMlight: 20,000 lines of 10 features.
    let mut t = String::new();
    for r in 0..20_000 {
        t.push_str(&format!("{}", r % 3));
        for _ in 0..10 {
            t.push_str(&format!(" {}:{:.2}", 1 + rng.below(50_000), rng.uniform()));
        }
        t.push('\n');
    }
    let svm_targets = vec![
        Target::Vectors(InputFormat::Svmlight, OnBadLine::Fail),
        Target::Stream(InputFormat::Svmlight),
        Target::Svmlight(simlsh::io::IndexBase::Zero, None),
    ];
    out.push((
        svm_targets.clone(),
        "large svmlight, 20,000 lines".into(),
        t.clone().into_bytes(),
    ));
    out.push((
        svm_targets,
        "large svmlight, 20,000 lines, one index 4294967295".into(),
        t.replacen(":", " 4294967295:1 2:", 1).into_bytes(),
    ));
    // fvecs: 4096 rows of 32.
    let mut f = Vec::new();
    for r in 0..4096 {
        f.extend(32i32.to_le_bytes());
        for c in 0..32 {
            f.extend(((r * 32 + c) as f32).to_le_bytes());
        }
    }
    let vec_targets = vec![
        Target::Vectors(InputFormat::Fvecs, OnBadLine::Fail),
        Target::Stream(InputFormat::Fvecs),
    ];
    out.push((
        vec_targets.clone(),
        "large fvecs, 4096 × 32".into(),
        f.clone(),
    ));
    let mut g = f.clone();
    let at = g.len() - 132;
    g[at..at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
    out.push((
        vec_targets,
        "large fvecs, last row claims 2^31 - 1 values".into(),
        g,
    ));
    out
}

/// Every case for the targets `keep` accepts: `scale` multiplies the number of random
/// mutations per seed.
pub fn cases(seeds: &[Seed], scale: usize, keep: &dyn Fn(Target) -> bool) -> Vec<Case> {
    let mut out = Vec::new();
    for (si, seed) in seeds.iter().enumerate() {
        let mut g = Gen {
            rng: Rng::new(0xBAD0 + si as u64),
        };
        let mut k = 0usize;
        let mut push = |desc: String, bytes: Vec<u8>, out: &mut Vec<Case>| {
            let target = seed.targets[k % seed.targets.len()];
            k += 1;
            out.push(Case {
                target,
                desc: format!("{}: {desc}", seed.name),
                bytes,
            });
        };
        // The seed itself, on every target (accepted unless the target's options refuse it).
        for _ in 0..seed.targets.len() {
            push("unchanged".into(), seed.bytes.clone(), &mut out);
        }
        // A hostile record is its own case: the damage is in the values it records.
        if matches!(seed.form, Form::Record) {
            continue;
        }
        // Truncations: 24 evenly spread prefixes.
        let n = seed.bytes.len();
        for t in 0..24 {
            let at = n * t / 24;
            push(
                format!("truncated to {at} bytes"),
                seed.bytes[..at].to_vec(),
                &mut out,
            );
        }
        for _ in 0..40 * scale {
            let (d, v) = bytes_mutation(&mut g, &seed.bytes);
            push(d, v, &mut out);
        }
        match &seed.form {
            Form::Npy => {
                for (d, v) in npy_lies(&seed.bytes) {
                    push(d, v, &mut out);
                }
            }
            Form::Npz {
                members,
                compressed,
            } => {
                assert!(npy_to_members(members));
                for (d, v) in npz_lies(&mut g, members, *compressed, &seed.bytes) {
                    push(d, v, &mut out);
                }
            }
            Form::Text => {
                for _ in 0..120 * scale {
                    let (d, v) = text_mutation(&mut g, &seed.bytes);
                    push(d, v, &mut out);
                }
                let text = String::from_utf8_lossy(&seed.bytes).into_owned();
                let lines: Vec<&str> = text.lines().collect();
                if lines[0].starts_with("%%") {
                    for size in [
                        "24000 24000",
                        "24000 24000 1",
                        "4294967296 4294967296 1",
                        "1 4294967296 1",
                        "1 4294967295 1",
                        "4294967295 1 1",
                        "99999999999 5 2",
                        "5 5 99999999999",
                        "18446744073709551615 18446744073709551615 18446744073709551615",
                        "100000000 100000000",
                        "0 0 0",
                        "0 0",
                        "3 3",
                        "3",
                        "",
                        "3 4 5 6",
                        "-3 4 5",
                        "1000000000000 1 0",
                        "100000 100000 0",
                    ] {
                        let mut l = lines.clone();
                        let at = l.iter().position(|x| !x.starts_with('%')).unwrap_or(1);
                        l[at] = size;
                        push(
                            format!("size line `{size}`"),
                            l.join("\n").into_bytes(),
                            &mut out,
                        );
                    }
                } else {
                    for line in [
                        "1 4294967295:1",
                        "1 4294967296:1",
                        "1 4294967294:1",
                        "1 18446744073709551615:1",
                        "1 0:1 0:2",
                        "1 5:1 3:2 5:1",
                        "1 1:nan",
                        "1 1:inf",
                        "1 1:1e39",
                        "nan 1:1",
                        "1 1:1 1:-1",
                        "1 qid:99999999999999999999 1:1",
                        "1,2 1:1",
                        "1:1",
                        "1 1:1:1",
                        "1 -1:1",
                        "1 4294967295:1 0:1",
                    ] {
                        let mut l = lines.clone();
                        l.insert(2.min(l.len()), line);
                        push(
                            format!("line `{line}`"),
                            l.join("\n").into_bytes(),
                            &mut out,
                        );
                    }
                    let long = format!(
                        "1 {}\n",
                        (1..200_000)
                            .map(|i| format!("{i}:1"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    );
                    push(
                        "one line of 200,000 features".into(),
                        long.into_bytes(),
                        &mut out,
                    );
                    push(
                        "200,000 empty rows".into(),
                        "1\n".repeat(200_000).into_bytes(),
                        &mut out,
                    );
                }
            }
            Form::Vecs { elem } => {
                for (d, v) in vecs_lies(&seed.bytes, *elem) {
                    push(d, v, &mut out);
                }
            }
            Form::Record => unreachable!("taken unchanged above"),
            Form::Index => {
                for (d, v) in index_lies(&mut g, &seed.bytes) {
                    push(d, v, &mut out);
                }
                for _ in 0..20 * scale {
                    let (d, mut v) = bytes_mutation(&mut g, &seed.bytes);
                    rechecksum(&mut v);
                    push(format!("{d}, checksum recomputed"), v, &mut out);
                }
            }
        }
    }
    // Hand-made hostile archives, on both npz readers, and large inputs.
    if keep(Target::NpzCsr) {
        for (d, v) in npz_bombs() {
            for target in [
                Target::Vectors(InputFormat::Npz, OnBadLine::Fail),
                Target::NpzCsr,
            ] {
                out.push(Case {
                    target,
                    desc: format!("bomb: {d}"),
                    bytes: v.clone(),
                });
            }
        }
        for (targets, d, v) in large() {
            for target in targets {
                out.push(Case {
                    target,
                    desc: d.clone(),
                    bytes: v.clone(),
                });
            }
        }
    }
    out.retain(|c| keep(c.target));
    out
}
