//! NumPy files: dense `.npy` matrices, SciPy sparse `.npz` matrices, and signatures as `.npy`
//! arrays of `uint64`.
//!
//! Headers are parsed by `ndarray-npy`; the data is decoded here, so that every error names
//! the file and the byte offset, row or array member at fault.
//!
//! - [`read_npy_dense`]: a 2-D `float32` or `float64` array (C or Fortran order, either byte
//!   order) as an `N × D` matrix of `f32`. `float64` values are rounded to `f32`; every value
//!   must be finite after rounding (a `float64` beyond `f32::MAX` is an error, not infinity).
//! - [`read_npz_csr`]: a matrix written by `scipy.sparse.save_npz` (see its docs for the layout
//!   and the checks).
//! - [`write_signatures_npy`] / [`read_signatures_npy`]: an `N × words` array of `uint64`
//!   (`'<u8'`), row `i` the packed words of signature `i` in the crate's bit order (bit `j` in
//!   word `j / 64` at position `j % 64`). The width `f` is not stored: readers pass it, or it
//!   defaults to `64 · words`.

use std::fs::File;
use std::io::{Cursor, Read};
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;
use ndarray::{Array2, ShapeBuilder};
use ndarray_npy::WriteNpyExt;
use ndarray_npy::npy::header::{Header, Layout};
use sprs::CsMatI;

use super::atomic::write_atomic;
use super::lines::{format_error, io_error};
use crate::error::{Error, Result};
use crate::signature::{SignatureMatrix, words_for};
use crate::signers::sparse::sort_and_merge;
use crate::storage::Buf;

/// The CSR matrix type of every sparse reader: `f32` values, `u32` column indices, `usize`
/// row pointers.
pub type Csr = CsMatI<f32, u32, usize>;

/// An element type from a `descr` string such as `'<f4'`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dtype {
    /// `f`, `i`, `u`, `b`, `S`, `U`, ...
    kind: u8,
    /// Bytes per element (for `U`, characters: 4 bytes each).
    size: usize,
    /// Big-endian data.
    big: bool,
}

impl Dtype {
    fn parse(descr: &str) -> Option<Dtype> {
        let b = descr.as_bytes();
        let (big, rest) = match b.first()? {
            b'<' | b'|' => (false, &descr[1..]),
            b'>' => (true, &descr[1..]),
            b'=' => (cfg!(target_endian = "big"), &descr[1..]),
            _ => (cfg!(target_endian = "big"), descr),
        };
        let kind = *rest.as_bytes().first()?;
        let n: usize = rest[1..].parse().ok()?;
        let size = if kind == b'U' { n.checked_mul(4)? } else { n };
        Some(Dtype { kind, size, big })
    }

    /// NumPy's name of the type, for messages.
    fn name(self) -> String {
        match (self.kind, self.size) {
            (b'f', s) => format!("float{}", 8 * s),
            (b'i', s) => format!("int{}", 8 * s),
            (b'u', s) => format!("uint{}", 8 * s),
            (b'b', 1) => "bool".into(),
            (b'S', s) => format!("bytes{s}"),
            (b'U', s) => format!("str{}", s / 4),
            (k, s) => format!("`{}{s}`", k as char),
        }
    }
}

/// A parsed `.npy` array: its header and its raw data bytes.
struct Npy<'a> {
    descr: String,
    dtype: Dtype,
    fortran: bool,
    shape: Vec<usize>,
    /// Byte offset of the data in the file.
    offset: usize,
    data: &'a [u8],
}

impl Npy<'_> {
    fn shape_str(&self) -> String {
        match self.shape.as_slice() {
            [n] => format!("({n},)"),
            s => format!(
                "({})",
                s.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Parses the header of a `.npy` image and checks that the data has exactly the declared size.
fn parse_npy(bytes: &[u8]) -> std::result::Result<Npy<'_>, String> {
    let mut cur = Cursor::new(bytes);
    let header = Header::from_reader(&mut cur).map_err(|e| {
        if bytes.len() < 10 || !bytes.starts_with(b"\x93NUMPY") {
            format!("not a .npy file (no NumPy magic at byte 0): {e}")
        } else {
            format!("bad .npy header: {e}")
        }
    })?;
    let offset = cur.position() as usize;
    let descr = header
        .type_descriptor
        .as_string()
        .ok_or_else(|| {
            format!(
                "structured dtype {} is not supported",
                header.type_descriptor
            )
        })?
        .clone();
    let dtype = Dtype::parse(&descr).ok_or_else(|| format!("unknown dtype `{descr}`"))?;
    let need = header
        .shape
        .iter()
        .try_fold(dtype.size, |a, &b| a.checked_mul(b))
        .ok_or_else(|| format!("shape {:?} overflows", header.shape))?;
    let have = bytes.len() - offset;
    let npy = Npy {
        descr,
        dtype,
        fortran: header.layout == Layout::Fortran,
        shape: header.shape,
        offset,
        data: &bytes[offset..],
    };
    if have < need {
        return Err(format!(
            "truncated: the header declares shape {} of {} ({need} data bytes from byte {offset}), \
             but the data ends at byte {} ({} bytes missing)",
            npy.shape_str(),
            dtype.name(),
            bytes.len(),
            need - have
        ));
    }
    if have > need {
        return Err(format!(
            "{} unexpected bytes after the data, from byte {}",
            have - need,
            offset + need
        ));
    }
    Ok(npy)
}

/// Decodes fixed-size elements with `conv`, which gets each element's bytes in file order.
fn decode<const N: usize, T>(data: &[u8], conv: impl Fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| conv(c.try_into().expect("N bytes")))
        .collect()
}

macro_rules! num {
    ($t:ty, $big:expr) => {
        |b| {
            if $big {
                <$t>::from_be_bytes(b)
            } else {
                <$t>::from_le_bytes(b)
            }
        }
    };
}

/// The array's values as `f32`, in memory order. Floating-point and integer dtypes are
/// accepted if `ints` is set, otherwise floating point only. A value that is not finite (or
/// does not fit `f32`) is reported as `Err(Ok((position, value)))`; an unsupported dtype as
/// `Err(Err(reason))`.
#[allow(clippy::type_complexity)]
fn floats(
    npy: &Npy<'_>,
    ints: bool,
) -> std::result::Result<Vec<f32>, std::result::Result<(usize, f64), String>> {
    let (d, big) = (npy.dtype, npy.dtype.big);
    let v: Vec<f32> = match (d.kind, d.size) {
        (b'f', 4) => decode::<4, f32>(npy.data, num!(f32, big)),
        (b'f', 8) => {
            let v = decode::<8, f64>(npy.data, num!(f64, big));
            let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            if let Some(k) = f.iter().position(|x| !x.is_finite()) {
                return Err(Ok((k, v[k])));
            }
            f
        }
        (b'i' | b'u', _) if ints => {
            let v = integers(npy).map_err(Err)?;
            v.into_iter().map(|x| x as f32).collect()
        }
        _ => {
            let mut reason = format!(
                "dtype {} (`{}`) is not supported: expected float32 or float64",
                d.name(),
                npy.descr
            );
            if ints {
                reason.push_str(" (or an integer type)");
            }
            if (d.kind, d.size) == (b'u', 8) {
                reason.push_str("; a uint64 array looks like signatures (read_signatures_npy)");
            }
            return Err(Err(reason));
        }
    };
    if let Some(k) = v.iter().position(|x| !x.is_finite()) {
        return Err(Ok((k, v[k] as f64)));
    }
    Ok(v)
}

/// The array's values as `i64`, for any integer dtype (a `uint64` above `i64::MAX` is an error).
fn integers(npy: &Npy<'_>) -> std::result::Result<Vec<i64>, String> {
    let (d, big) = (npy.dtype, npy.dtype.big);
    Ok(match (d.kind, d.size) {
        (b'i', 1) => decode::<1, i64>(npy.data, |b| i8::from_le_bytes(b) as i64),
        (b'u', 1) => decode::<1, i64>(npy.data, |b| b[0] as i64),
        (b'i', 2) => decode::<2, i64>(npy.data, |b| num!(i16, big)(b) as i64),
        (b'u', 2) => decode::<2, i64>(npy.data, |b| num!(u16, big)(b) as i64),
        (b'i', 4) => decode::<4, i64>(npy.data, |b| num!(i32, big)(b) as i64),
        (b'u', 4) => decode::<4, i64>(npy.data, |b| num!(u32, big)(b) as i64),
        (b'i', 8) => decode::<8, i64>(npy.data, num!(i64, big)),
        (b'u', 8) => {
            let v = decode::<8, u64>(npy.data, num!(u64, big));
            if let Some(k) = v.iter().position(|&x| x > i64::MAX as u64) {
                return Err(format!("value {} at position {k} is too large", v[k]));
            }
            v.into_iter().map(|x| x as i64).collect()
        }
        _ => {
            return Err(format!(
                "dtype {} (`{}`) is not an integer type",
                d.name(),
                npy.descr
            ));
        }
    })
}

/// Memory-maps a file for reading.
fn map_file(path: &Path) -> Result<Mmap> {
    let file = File::open(path).map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    if len == 0 {
        return Err(format_error(path, "empty file, not a .npy file"));
    }
    // SAFETY: the map is read-only and only read while this function's caller holds it; if
    // another program truncates or rewrites the file meanwhile the contents may change
    // (documented as unsupported, as for every memory-mapped input).
    unsafe { Mmap::map(&file) }.map_err(io_error(path))
}

/// Reads a dense `N × D` matrix from a `.npy` file of `float32` or `float64` (C or Fortran
/// order, little- or big-endian). The result is in C order. Errors name the file and, for
/// truncated data, the byte offsets; for a non-finite value, its row and column. A 1-D array
/// is rejected (reshape it to `(1, D)` for a single vector).
pub fn read_npy_dense(path: &Path) -> Result<Array2<f32>> {
    let map = map_file(path)?;
    let npy = parse_npy(&map).map_err(|r| format_error(path, r))?;
    npy_dense(&npy).map_err(|r| format_error(path, r))
}

fn npy_dense(npy: &Npy<'_>) -> std::result::Result<Array2<f32>, String> {
    let (n, d) = match *npy.shape.as_slice() {
        [n, d] => (n, d),
        _ => {
            return Err(format!(
                "array of shape {} has {} dimensions: expected a 2-D N × D array{}",
                npy.shape_str(),
                npy.shape.len(),
                if npy.shape.len() == 1 {
                    " (reshape a single vector to (1, D))"
                } else {
                    ""
                }
            ));
        }
    };
    let v = floats(npy, false).map_err(|e| match e {
        Ok((k, x)) => {
            let (r, c) = if npy.fortran {
                (k % n, k / n)
            } else {
                (k / d, k % d)
            };
            format!("row {r}, column {c}: value {x} is not finite (as float32)")
        }
        Err(reason) => reason,
    })?;
    if npy.fortran {
        let a = Array2::from_shape_vec((n, d).f(), v).expect("n × d");
        Ok(a.as_standard_layout().into_owned())
    } else {
        Ok(Array2::from_shape_vec((n, d), v).expect("n × d"))
    }
}

/// Writes signatures as a `.npy` array of `uint64` of shape `(N, words)` (C order,
/// little-endian `'<u8'`), atomically ([`write_atomic`]). The width `f` is not recorded: keep
/// it beside the file or pass it to [`read_signatures_npy`].
pub fn write_signatures_npy<S: AsRef<[u64]>>(path: &Path, sigs: &SignatureMatrix<S>) -> Result<()> {
    let view = sigs.view();
    write_atomic(path, |w| {
        view.write_npy(w).map_err(|e| match e {
            ndarray_npy::WriteNpyError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        })
    })
}

/// Reads signatures from a `.npy` array of `uint64` of shape `(N, words)` (a 1-D array of
/// shape `(N,)` is read as `N × 1`). `bits` is the width `f`, which must satisfy
/// `words_for(f) == words`; `None` takes `f = 64 · words`. Padding bits beyond `f` must be
/// zero (an error names the first offending row). A little-endian C-order file (as written by
/// [`write_signatures_npy`] or `numpy.save`) is memory-mapped, not copied.
pub fn read_signatures_npy(path: &Path, bits: Option<usize>) -> Result<SignatureMatrix<Buf<u64>>> {
    let map = map_file(path)?;
    let npy = parse_npy(&map).map_err(|r| format_error(path, r))?;
    if (npy.dtype.kind, npy.dtype.size) != (b'u', 8) {
        return Err(format_error(
            path,
            format!(
                "dtype {} (`{}`) is not uint64: signatures are stored as uint64 words",
                npy.dtype.name(),
                npy.descr
            ),
        ));
    }
    let (n, words) = match *npy.shape.as_slice() {
        [n] => (n, 1),
        [n, w] => (n, w),
        _ => {
            return Err(format_error(
                path,
                format!(
                    "array of shape {}: expected (N, words) or (N,)",
                    npy.shape_str()
                ),
            ));
        }
    };
    if words == 0 {
        return Err(format_error(
            path,
            "array has 0 words per signature".to_string(),
        ));
    }
    let bits = bits.unwrap_or(64 * words);
    if bits == 0 || words_for(bits) != words {
        return Err(format_error(
            path,
            format!(
                "signature width f = {bits} needs {} words per row, but the array has {words}",
                words_for(bits)
            ),
        ));
    }
    let direct = !npy.dtype.big && !npy.fortran && cfg!(target_endian = "little");
    let (offset, big, fortran) = (npy.offset, npy.dtype.big, npy.fortran);
    let owned = |data: &[u8]| {
        let v = decode::<8, u64>(data, num!(u64, big));
        if fortran {
            let a = Array2::from_shape_vec((n, words).f(), v).expect("n × words");
            a.as_standard_layout()
                .into_owned()
                .into_raw_vec_and_offset()
                .0
        } else {
            v
        }
    };
    let buf = if direct {
        let map = Arc::new(map);
        match Buf::mapped(map.clone(), offset, n * words) {
            Some(b) => b,
            None => Buf::Owned(owned(&map[offset..])),
        }
    } else {
        Buf::Owned(owned(npy.data))
    };
    SignatureMatrix::from_parts(bits, buf).map_err(|e| match e {
        Error::PaddingBits { row, bits } => format_error(
            path,
            format!("row {row}: bits set beyond the signature width f = {bits}"),
        ),
        other => format_error(path, other.to_string()),
    })
}

/// One member of an `.npz` archive, read into memory (`name` or `name.npy`); `None` if absent.
fn npz_member<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
) -> std::result::Result<Option<Vec<u8>>, String> {
    for n in [format!("{name}.npy"), name.to_string()] {
        match zip.by_name(&n) {
            Ok(mut f) => {
                let mut v = Vec::with_capacity(f.size().min(1 << 30) as usize);
                f.read_to_end(&mut v)
                    .map_err(|e| format!("member `{n}`: cannot read: {e}"))?;
                return Ok(Some(v));
            }
            Err(zip::result::ZipError::FileNotFound) => continue,
            Err(e) => return Err(format!("member `{n}`: {e}")),
        }
    }
    Ok(None)
}

/// The text of a 0-d bytes or str array (scipy's `format` member).
fn npy_string(npy: &Npy<'_>) -> Option<String> {
    match npy.dtype.kind {
        b'S' => Some(
            String::from_utf8_lossy(npy.data)
                .trim_end_matches('\0')
                .to_string(),
        ),
        b'U' => {
            let s: String = decode::<4, u32>(npy.data, num!(u32, npy.dtype.big))
                .into_iter()
                .map_while(|c| char::from_u32(c).filter(|&c| c != '\0'))
                .collect();
            Some(s)
        }
        _ => None,
    }
}

/// Reads a sparse matrix written by `scipy.sparse.save_npz` (compressed or not) as CSR.
///
/// **Layout.** The archive holds `.npy` members `format` (a 0-d bytes array: `b'csr'`,
/// `b'csc'` or `b'coo'`), `shape` (two integers), `data`, and `indices` + `indptr` (CSR and
/// CSC) or `row` + `col` (COO). Other members are ignored. `data` may be `float32`,
/// `float64` or an integer type (converted to `f32`); `indices`, `indptr`, `row` and `col`
/// any integer type (`int32` or `int64` in practice).
///
/// **Checks**, each failure an [`Error::Format`] naming the file, the member and the row:
/// `indptr` has `rows + 1` entries, starts at 0, never decreases and ends at the number of
/// stored entries; `indices` and `data` have that length; every index is inside the shape;
/// every value is finite as `f32`. The number of columns must fit `u32` indices.
///
/// **Order.** Indices within a row need not be sorted: each row is sorted and duplicate
/// entries are summed, exactly as [`sort_and_merge`] (sums in `f64` in stored order, rounded
/// once). CSC and COO input is converted to CSR with the same rule, so `save_npz` of
/// `m.tocsc()` and of `m` give the same matrix. BSR and DIA are rejected: convert with
/// `.tocsr()` before saving.
pub fn read_npz_csr(path: &Path) -> Result<Csr> {
    let file = File::open(path).map_err(io_error(path))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| format_error(path, format!("not an .npz (zip) archive: {e}")))?;
    npz_csr(&mut zip).map_err(|r| format_error(path, r))
}

fn npz_csr<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
) -> std::result::Result<Csr, String> {
    let members = || {
        zip.file_names()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let names = members();
    let mut get = |name: &str| -> std::result::Result<Vec<u8>, String> {
        npz_member(zip, name)?.ok_or_else(|| {
            format!("no `{name}` array: not a scipy.sparse.save_npz file (members: {names})")
        })
    };
    let fmt_bytes = get("format")?;
    let fmt = parse_npy(&fmt_bytes).map_err(|r| format!("member `format`: {r}"))?;
    let format = npy_string(&fmt)
        .ok_or_else(|| format!("member `format`: dtype `{}` is not a string", fmt.descr))?;
    let shape_bytes = get("shape")?;
    let shape = parse_npy(&shape_bytes)
        .and_then(|s| integers(&s))
        .map_err(|r| format!("member `shape`: {r}"))?;
    let (rows, cols) = match *shape.as_slice() {
        [r, c] if r >= 0 && c >= 0 => (r as usize, c as usize),
        _ => {
            return Err(format!(
                "member `shape`: {shape:?} is not two non-negative sizes"
            ));
        }
    };
    if cols > u32::MAX as usize + 1 {
        return Err(format!("{cols} columns do not fit 32-bit column indices"));
    }
    let data_bytes = get("data")?;
    let data_npy = parse_npy(&data_bytes).map_err(|r| format!("member `data`: {r}"))?;
    let data = floats(&data_npy, true);
    let ints = |bytes: &[u8], name: &str| {
        parse_npy(bytes)
            .and_then(|a| integers(&a))
            .map_err(|r| format!("member `{name}`: {r}"))
    };
    match format.as_str() {
        "csr" | "csc" => {
            let csr = format == "csr";
            let indices = ints(&get("indices")?, "indices")?;
            let indptr = ints(&get("indptr")?, "indptr")?;
            let (major, minor) = if csr { (rows, cols) } else { (cols, rows) };
            let (row, col) = if csr {
                ("row", "column")
            } else {
                ("column", "row")
            };
            if indptr.len() != major + 1 {
                return Err(format!(
                    "member `indptr`: {} entries, expected {} ({row}s + 1 for shape ({rows}, {cols}))",
                    indptr.len(),
                    major + 1
                ));
            }
            if indptr[0] != 0 {
                return Err(format!("member `indptr`: starts at {}, not 0", indptr[0]));
            }
            if let Some(k) = indptr.windows(2).position(|w| w[1] < w[0]) {
                return Err(format!(
                    "member `indptr` is not monotone: indptr[{}] = {} < indptr[{k}] = {} ({row} {k})",
                    k + 1,
                    indptr[k + 1],
                    indptr[k]
                ));
            }
            let nnz = indptr[major] as usize;
            if indices.len() != nnz {
                return Err(format!(
                    "member `indices`: {} entries, but indptr ends at {nnz}",
                    indices.len()
                ));
            }
            let data = check_data(data, nnz, |k| {
                let r = indptr.partition_point(|&p| p as usize <= k) - 1;
                format!("{row} {r}, {col} {}", indices[k])
            })?;
            let mut triplets_major = Vec::with_capacity(nnz);
            for r in 0..major {
                for &c in &indices[indptr[r] as usize..indptr[r + 1] as usize] {
                    if c < 0 || c as usize >= minor {
                        return Err(format!(
                            "member `indices`: {row} {r}: {col} index {c} is out of range for shape ({rows}, {cols})"
                        ));
                    }
                    triplets_major.push(r);
                }
            }
            let (r_of, c_of): (Vec<usize>, Vec<usize>) = if csr {
                (
                    triplets_major,
                    indices.iter().map(|&c| c as usize).collect(),
                )
            } else {
                (
                    indices.iter().map(|&c| c as usize).collect(),
                    triplets_major,
                )
            };
            Ok(csr_from_triplets(rows, cols, &r_of, &c_of, &data))
        }
        "coo" => {
            let r = ints(&get("row")?, "row")?;
            let c = ints(&get("col")?, "col")?;
            if r.len() != c.len() {
                return Err(format!(
                    "members `row` and `col` have {} and {} entries",
                    r.len(),
                    c.len()
                ));
            }
            let data = check_data(data, r.len(), |k| format!("entry {k} ({}, {})", r[k], c[k]))?;
            let mut ru = Vec::with_capacity(r.len());
            let mut cu = Vec::with_capacity(c.len());
            for (k, (&i, &j)) in r.iter().zip(&c).enumerate() {
                if i < 0 || i as usize >= rows || j < 0 || j as usize >= cols {
                    return Err(format!(
                        "entry {k}: ({i}, {j}) is out of range for shape ({rows}, {cols})"
                    ));
                }
                ru.push(i as usize);
                cu.push(j as usize);
            }
            Ok(csr_from_triplets(rows, cols, &ru, &cu, &data))
        }
        other => Err(format!(
            "sparse format `{other}` is not supported (csr, csc and coo are): convert with .tocsr() before save_npz"
        )),
    }
}

/// Checks the decoded `data` member: its length and finiteness (`at(k)` locates entry `k`).
#[allow(clippy::type_complexity)]
fn check_data(
    data: std::result::Result<Vec<f32>, std::result::Result<(usize, f64), String>>,
    nnz: usize,
    at: impl Fn(usize) -> String,
) -> std::result::Result<Vec<f32>, String> {
    match data {
        Ok(d) if d.len() == nnz => Ok(d),
        Ok(d) => Err(format!(
            "member `data`: {} entries, expected {nnz}",
            d.len()
        )),
        Err(Ok((k, x))) if k < nnz => Err(format!(
            "member `data`: {}: value {x} is not finite (as float32)",
            at(k)
        )),
        Err(Ok((k, x))) => Err(format!(
            "member `data`: entry {k}: value {x} is not finite (as float32)"
        )),
        Err(Err(r)) => Err(format!("member `data`: {r}")),
    }
}

/// Builds a CSR matrix from `(row, column, value)` triplets (all in range): a stable counting
/// sort by row, then [`sort_and_merge`] within each row (duplicates summed in input order).
pub(crate) fn csr_from_triplets(
    rows: usize,
    cols: usize,
    r: &[usize],
    c: &[usize],
    v: &[f32],
) -> Csr {
    debug_assert!(r.len() == c.len() && c.len() == v.len());
    let mut start = vec![0usize; rows + 1];
    for &i in r {
        start[i + 1] += 1;
    }
    for i in 0..rows {
        start[i + 1] += start[i];
    }
    let mut next = start.clone();
    let mut ids = vec![0u64; r.len()];
    let mut vals = vec![0f32; r.len()];
    for k in 0..r.len() {
        let p = &mut next[r[k]];
        ids[*p] = c[k] as u64;
        vals[*p] = v[k];
        *p += 1;
    }
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices = Vec::with_capacity(ids.len());
    let mut data = Vec::with_capacity(ids.len());
    indptr.push(0);
    let (mut ri, mut rv) = (Vec::new(), Vec::new());
    for i in 0..rows {
        let (a, b) = (start[i], start[i + 1]);
        let row = &ids[a..b];
        if row.windows(2).all(|w| w[0] < w[1]) {
            indices.extend(row.iter().map(|&x| x as u32));
            data.extend_from_slice(&vals[a..b]);
        } else {
            ri.clear();
            rv.clear();
            ri.extend_from_slice(row);
            rv.extend_from_slice(&vals[a..b]);
            sort_and_merge(&mut ri, &mut rv);
            indices.extend(ri.iter().map(|&x| x as u32));
            data.extend_from_slice(&rv);
        }
        indptr.push(indices.len());
    }
    CsMatI::try_new((rows, cols), indptr, indices, data)
        .expect("rows sorted and in range by construction")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_parse() {
        let d = Dtype::parse("<f4").unwrap();
        assert_eq!((d.kind, d.size, d.big), (b'f', 4, false));
        let d = Dtype::parse(">i8").unwrap();
        assert_eq!((d.kind, d.size, d.big), (b'i', 8, true));
        assert_eq!(Dtype::parse("|S3").unwrap().size, 3);
        assert_eq!(Dtype::parse("<U3").unwrap().size, 12);
        assert!(Dtype::parse("<").is_none());
        assert_eq!(Dtype::parse("<u8").unwrap().name(), "uint64");
    }

    #[test]
    fn triplets_are_sorted_and_merged_per_row() {
        let m = csr_from_triplets(
            3,
            5,
            &[2, 0, 2, 2, 0],
            &[4, 1, 0, 4, 3],
            &[1.0, 2.0, 3.0, 0.5, 4.0],
        );
        assert_eq!(m.indptr().raw_storage(), &[0, 2, 2, 4]);
        assert_eq!(m.indices(), &[1, 3, 0, 4]);
        assert_eq!(m.data(), &[2.0, 4.0, 3.0, 1.5]);
    }
}
