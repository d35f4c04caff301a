//! NumPy files: dense `.npy` matrices, `.npz` archives (a dense array saved by `np.savez`, a
//! sparse matrix saved by `scipy.sparse.save_npz`), and signatures as `.npy` arrays of
//! `uint64`.
//!
//! - [`read_npy_dense`]: a 2-D array as an `N × D` matrix of `f32` (C or Fortran order, either
//!   byte order). `float16` and `float32` are exact; `float64` is rounded to nearest, and a
//!   value beyond `f32::MAX` is an error, not infinity; integers (`int8` … `uint64`) are
//!   rounded to nearest (exact up to 2^24 in magnitude: every `int8`, `uint8`, `int16`,
//!   `uint16` value), `bool` is 0 or 1; `uint64` is refused, as it is the signature format
//!   (read it with [`read_signatures_npy`]). Every value must be finite.
//! - [`read_npz`] / [`read_npz_csr`] (feature `npz`): see the [`npz` module](npz).
//! - [`write_signatures_npy`] / [`read_signatures_npy`]: an `N × words` array of `uint64`
//!   (`'<u8'`), row `i` the packed words of signature `i` in the crate's bit order (bit `j` in
//!   word `j / 64` at position `j % 64`). The width `f` is not stored: readers pass it, or it
//!   defaults to `64 · words`.
//!
//! **Sizes.** The header is read up to 64 KiB whatever its length field claims, and parsed
//! without recursion. The data size it declares is checked against the file's size before
//! anything is allocated: a 61-byte file claiming a 2 GB array is an error naming both sizes.
//! From standard input (the path `-`, or the `_from` readers of any [`Read`]) the size cannot
//! be known: the array grows as the data arrives, so a lie costs at most twice what was really
//! sent.
//!
//! Every error names the file and the byte offset, row or archive member at fault.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use memmap2::Mmap;
use ndarray::{Array2, ShapeBuilder};

pub(crate) mod decode;
pub(crate) mod header;
#[cfg(feature = "npz")]
pub mod npz;

pub use super::csr::Csr;
#[cfg(feature = "npz")]
pub use npz::{read_npz, read_npz_csr};

use super::lines::{format_error, io_error};
use super::source::{Source, is_stdin, open};
use crate::error::{Error, Result};
use crate::fs::write_atomic;
use crate::signature::{SignatureMatrix, words_for};
use crate::storage::{Buf, Bytes};
use decode::{Avail, Fail, read_f32, read_ints};
use header::{Header, HeaderError, read_full, read_header, write_header};

/// Bytes of input a stream's array is allocated for before its data arrives; it then doubles
/// as data comes.
const STREAM_HINT: u64 = 1 << 16;

/// An error reading the header of `name`.
fn header_error(name: &Path, e: HeaderError) -> Error {
    match e {
        HeaderError::Io(source) => Error::Io {
            path: name.to_path_buf(),
            source,
        },
        HeaderError::Bad(m) => format_error(name, m),
    }
}

/// The reason a dtype cannot be read as vectors.
fn dtype_reason(h: &Header, m: String) -> String {
    let mut r = format!("{m} (`{}`)", h.descr);
    if (h.dtype.kind, h.dtype.size) == (b'u', 8) {
        r.push_str("; a uint64 array looks like signatures (read_signatures_npy)");
    }
    r
}

/// Reads the data of a 2-D array described by `h` as an `N × D` matrix in C order.
/// `input_bytes` bounds the number of rows of an `N × 0` array (rows that hold no data).
pub(crate) fn dense_array(
    r: &mut dyn Read,
    h: &Header,
    avail: Avail,
    input_bytes: u64,
) -> std::result::Result<Array2<f32>, Fail> {
    let (n, d) = match *h.shape.as_slice() {
        [n, d] => (n, d),
        _ => {
            return Err(Fail::Msg(format!(
                "array of shape {} has {} dimensions: expected a 2-D N × D array{}",
                h.shape_str(),
                h.shape.len(),
                if h.shape.len() == 1 {
                    " (reshape a single vector to (1, D))"
                } else {
                    ""
                }
            )));
        }
    };
    if (h.dtype.kind, h.dtype.size) == (b'u', 8) {
        return Err(Fail::Msg(dtype_reason(
            h,
            "dtype uint64 is the signature format, not vectors".into(),
        )));
    }
    let count = h
        .count()
        .ok_or_else(|| Fail::Msg(format!("shape {} overflows", h.shape_str())))?;
    if d == 0 && n as u64 > input_bytes {
        return Err(Fail::Msg(format!(
            "shape {} claims {n} rows of no data, more than the {input_bytes} bytes of the input",
            h.shape_str()
        )));
    }
    let v = read_f32(r, h.dtype, count, avail).map_err(|e| match e {
        Fail::Float { index: k, value } => {
            let (row, col) = if h.fortran {
                (k % n, k / n)
            } else {
                (k / d, k % d)
            };
            Fail::Msg(format!(
                "row {row}, column {col}: {}",
                crate::io::float::refused(value)
            ))
        }
        Fail::Dtype(m) => Fail::Msg(dtype_reason(h, m)),
        other => other,
    })?;
    let a = if h.fortran {
        Array2::from_shape_vec((n, d).f(), v).map(|a| a.as_standard_layout().into_owned())
    } else {
        Array2::from_shape_vec((n, d), v)
    };
    a.map_err(|e| Fail::Msg(format!("shape {}: {e}", h.shape_str())))
}

/// An error reading the data of the array `h` of `name` as a whole file.
fn data_error(name: &Path, h: &Header, f: Fail) -> Error {
    match f {
        Fail::Io(source) => Error::Io {
            path: name.to_path_buf(),
            source,
        },
        Fail::Short { got, need } => format_error(
            name,
            format!(
                "truncated: the header declares shape {} of {} ({need} data bytes from byte {}), \
                 but the data ends after {got} bytes ({} bytes missing)",
                h.shape_str(),
                h.dtype.name(),
                h.len,
                need - got
            ),
        ),
        Fail::Alloc(b) => format_error(
            name,
            format!(
                "cannot allocate {b} bytes for an array of shape {}",
                h.shape_str()
            ),
        ),
        Fail::Int { index, value } => format_error(
            name,
            format!("element {index}: value {value} is out of range"),
        ),
        Fail::Float { index, value } => format_error(
            name,
            format!("element {index}: {}", crate::io::float::refused(value)),
        ),
        Fail::Dtype(m) => format_error(name, dtype_reason(h, m)),
        Fail::Msg(m) => format_error(name, m),
    }
}

/// Checks that a file of `len` bytes holds exactly the data its header declares.
fn check_file_size(h: &Header, len: u64) -> std::result::Result<(), String> {
    let need = h.need()?;
    let have = len - h.len as u64;
    if have < need {
        return Err(format!(
            "truncated: the header declares shape {} of {} ({need} data bytes from byte {}), \
             but the data ends at byte {len} ({} bytes missing)",
            h.shape_str(),
            h.dtype.name(),
            h.len,
            need - have
        ));
    }
    if have > need {
        return Err(format!(
            "{} unexpected bytes after the data, from byte {}",
            have - need,
            h.len as u64 + need
        ));
    }
    Ok(())
}

/// Checks that a stream ends right after the data.
fn check_stream_end(r: &mut dyn Read, name: &Path, h: &Header) -> Result<()> {
    let mut b = [0u8; 1];
    if read_full(r, &mut b).map_err(io_error(name))? != 0 {
        let need = h.data_bytes().unwrap_or(0);
        return Err(format_error(
            name,
            format!(
                "unexpected bytes after the data, from byte {}",
                h.len as u64 + need
            ),
        ));
    }
    Ok(())
}

/// The header and the way to read the data of an opened `.npy` input.
fn npy_header(src: &mut Source<'_>) -> Result<(Header, Avail, u64)> {
    let h = read_header(&mut src.reader).map_err(|e| header_error(&src.name, e))?;
    match src.len {
        Some(len) => {
            check_file_size(&h, len).map_err(|r| format_error(&src.name, r))?;
            Ok((h, Avail::Known, len))
        }
        None => {
            let hint = h.data_bytes().unwrap_or(0).min(STREAM_HINT);
            let len = h.len as u64;
            Ok((h, Avail::Stream { hint }, len))
        }
    }
}

fn npy_dense(mut src: Source<'_>) -> Result<Array2<f32>> {
    let (h, avail, input) = npy_header(&mut src)?;
    let a =
        dense_array(&mut src.reader, &h, avail, input).map_err(|f| data_error(&src.name, &h, f))?;
    if src.len.is_none() {
        check_stream_end(&mut src.reader, &src.name, &h)?;
    }
    Ok(a)
}

/// Reads a dense `N × D` matrix from a `.npy` file (`-`: standard input); see the
/// [module docs](self) for the element types. The result is in C order. Errors name the
/// file and, for truncated data, the byte offsets; for a non-finite value, its row and
/// column. A 1-D array is rejected (reshape it to `(1, D)` for a single vector).
pub fn read_npy_dense(path: &Path) -> Result<Array2<f32>> {
    npy_dense(open(path)?)
}

/// As [`read_npy_dense`], from any reader (`name` is the name errors give). The array grows as
/// the data arrives: a header's claim is never allocated up front.
pub fn read_npy_dense_from(reader: impl Read, name: &Path) -> Result<Array2<f32>> {
    npy_dense(Source::stream(reader, name))
}

/// Writes signatures as a `.npy` array of shape `(N, words)` and dtype `uint64` (explicitly
/// little-endian `'<u8'`), atomically ([`write_atomic`]). The width `f` is not recorded: keep
/// it beside the file or pass it to [`read_signatures_npy`].
pub fn write_signatures_npy<S: AsRef<[u64]>>(path: &Path, sigs: &SignatureMatrix<S>) -> Result<()> {
    write_atomic(path, |w| signatures_npy_to(w, sigs))
}

/// Stages the `.npy` array of [`write_signatures_npy`] in `set`, to replace `path` when the
/// set is committed with its other outputs.
pub fn stage_signatures_npy<S: AsRef<[u64]>>(
    set: &mut crate::fs::OutputSet,
    path: &Path,
    sigs: &SignatureMatrix<S>,
) -> Result<()> {
    set.write(path, |w| signatures_npy_to(w, sigs))
}

fn signatures_npy_to<S: AsRef<[u64]>>(
    w: &mut dyn std::io::Write,
    sigs: &SignatureMatrix<S>,
) -> std::io::Result<()> {
    let words = sigs.as_slice();
    write_header(w, "<u8", &[sigs.len(), sigs.words_per_row()])?;
    if cfg!(target_endian = "little") {
        w.write_all(bytemuck::cast_slice(words))
    } else {
        words.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()))
    }
}

/// The `(N, words)` shape and width of a signature array.
fn signature_shape(
    h: &Header,
    bits: Option<usize>,
) -> std::result::Result<(usize, usize, usize), String> {
    if (h.dtype.kind, h.dtype.size) != (b'u', 8) {
        return Err(format!(
            "dtype {} (`{}`) is not uint64: signatures are stored as uint64 words",
            h.dtype.name(),
            h.descr
        ));
    }
    let (n, words) = match *h.shape.as_slice() {
        [n] => (n, 1),
        [n, w] => (n, w),
        _ => {
            return Err(format!(
                "array of shape {}: expected (N, words) or (N,)",
                h.shape_str()
            ));
        }
    };
    if words == 0 {
        return Err("array has 0 words per signature".to_string());
    }
    h.need()?;
    let bits = bits.unwrap_or(64usize.saturating_mul(words));
    if bits == 0 || words_for(bits) != words {
        return Err(format!(
            "signature width f = {bits} needs {} words per row, but the array has {words}",
            words_for(bits)
        ));
    }
    Ok((n, words, bits))
}

/// Row-major words from the words of a Fortran-order array.
fn c_order(v: Vec<u64>, n: usize, words: usize) -> Vec<u64> {
    let a = Array2::from_shape_vec((n, words).f(), v).expect("n × words elements");
    a.as_standard_layout()
        .into_owned()
        .into_raw_vec_and_offset()
        .0
}

fn signature_matrix(name: &Path, bits: usize, buf: Buf<u64>) -> Result<SignatureMatrix<Buf<u64>>> {
    SignatureMatrix::from_parts(bits, buf).map_err(|e| match e {
        Error::PaddingBits { row, bits } => format_error(
            name,
            format!("row {row}: bits set beyond the signature width f = {bits}"),
        ),
        other => format_error(name, other.to_string()),
    })
}

/// Reads signatures from a `.npy` array of `uint64` of shape `(N, words)` (a 1-D array of
/// shape `(N,)` is read as `N × 1`). `bits` is the width `f`, which must satisfy
/// `words_for(f) == words`; `None` takes `f = 64 · words`. Padding bits beyond `f` must be
/// zero (an error names the first offending row). A little-endian C-order file (as written by
/// [`write_signatures_npy`] or `numpy.save`) is memory-mapped, not copied; `-` reads standard
/// input.
pub fn read_signatures_npy(path: &Path, bits: Option<usize>) -> Result<SignatureMatrix<Buf<u64>>> {
    if is_stdin(path) {
        return signatures_stream(open(path)?, bits);
    }
    let file = File::open(path).map_err(io_error(path))?;
    let meta = file.metadata().map_err(io_error(path))?;
    if !meta.is_file() {
        return signatures_stream(Source::stream(file, path), bits);
    }
    // SAFETY: the map is read-only; if another program truncates or rewrites the file while
    // it is mapped the contents may change (documented as unsupported, as for every
    // memory-mapped input).
    let map = unsafe { Mmap::map(&file) }.map_err(io_error(path))?;
    let h = read_header(&mut &map[..]).map_err(|e| header_error(path, e))?;
    check_file_size(&h, map.len() as u64).map_err(|r| format_error(path, r))?;
    let (n, words, bits) = signature_shape(&h, bits).map_err(|r| format_error(path, r))?;
    let owned = |data: &[u8]| {
        let v = read_ints::<u64>(&mut &data[..], h.dtype, n * words, Avail::Known, u64::MAX)
            .map_err(|f| data_error(path, &h, f))?;
        Ok::<_, Error>(if h.fortran { c_order(v, n, words) } else { v })
    };
    let buf = if h.dtype.native() && !h.fortran {
        let map = Bytes::mapped(map);
        match Buf::shared(map.clone(), h.len, n * words) {
            Some(b) => b,
            None => Buf::owned(owned(&map[h.len..])?),
        }
    } else {
        Buf::owned(owned(&map[h.len..])?)
    };
    signature_matrix(path, bits, buf)
}

/// As [`read_signatures_npy`], from any reader (`name` is the name errors give); the
/// signatures are copied into memory as they arrive.
pub fn read_signatures_npy_from(
    reader: impl Read,
    name: &Path,
    bits: Option<usize>,
) -> Result<SignatureMatrix<Buf<u64>>> {
    signatures_stream(Source::stream(reader, name), bits)
}

fn signatures_stream(
    mut src: Source<'_>,
    bits: Option<usize>,
) -> Result<SignatureMatrix<Buf<u64>>> {
    let h = read_header(&mut src.reader).map_err(|e| header_error(&src.name, e))?;
    let (n, words, bits) = signature_shape(&h, bits).map_err(|r| format_error(&src.name, r))?;
    let hint = h.data_bytes().unwrap_or(0).min(STREAM_HINT);
    let v = read_ints::<u64>(
        &mut src.reader,
        h.dtype,
        n * words,
        Avail::Stream { hint },
        u64::MAX,
    )
    .map_err(|f| data_error(&src.name, &h, f))?;
    check_stream_end(&mut src.reader, &src.name, &h)?;
    let v = if h.fortran { c_order(v, n, words) } else { v };
    signature_matrix(&src.name, bits, Buf::owned(v))
}
