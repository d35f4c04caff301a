//! `.npz` archives: a zip of `.npy` members, stored or deflated.
//!
//! [`read_npz`] reads either kind of archive as vectors: a sparse matrix written by
//! `scipy.sparse.save_npz` (it has a `format` member), or the one 2-D array of an archive
//! written by `np.savez(path, matrix)` (member `arr_0`) or `np.savez(path, x=matrix)`.
//! [`read_npz_csr`] reads the sparse kind only.
//!
//! **One pass, final buffers.** Each member is read once, straight into the vector it ends in:
//! a stored member's size is checked against the archive before its array is allocated, at
//! once and exactly; a deflated member is decompressed into a vector that starts at a few
//! times the compressed size and grows only as data arrives. Reading a member to its end
//! verifies its CRC-32.
//!
//! **Decompression limit.** All the members read may decompress to at most
//! [`Limits::decompressed`] bytes (by default 100 × the archive's size, at least 16 MiB); a
//! member that goes beyond is an error naming it (a zip bomb of 1.9 MB claiming 3.9 GB stops
//! after 190 MB). A header that claims more than the rest of the limit stops before any
//! allocation.
//!
//! **Streams.** A zip archive's directory is at its end, so an `.npz` cannot be read from
//! standard input or a pipe: the readers say so (save it to a file first).
//!
//! **The SciPy layout.** Members `format` (a 0-d bytes or str array: `b'csr'`, `b'csc'` or
//! `b'coo'`), `shape` (two integers), `data`, and `indices` + `indptr` (CSR and CSC) or
//! `row` + `col` (COO). Other members are ignored. `data` may be of any number type (see
//! [`read_npy_dense`](super::read_npy_dense) for the conversion to `f32`); the index members
//! of any integer type (`int32` or `int64` in practice).
//!
//! **Checks**, each failure an [`Error::Format`](crate::Error::Format) naming the file, the
//! member and the row: `indptr` has `rows + 1` entries, starts at 0, never decreases and ends
//! at the number of stored entries; `indices` and `data` have that length; every index is
//! inside the shape; every value is finite as `f32`. The number of columns must fit `u32`
//! indices (at most 2^32 − 1). The rows of a CSC or COO matrix, which hold no bytes of their
//! own, may not outnumber the bytes of the archive.
//!
//! **Order.** Indices within a row need not be sorted: each row is sorted and duplicate
//! entries are summed, exactly as [`sort_and_merge`](crate::signers::sparse::sort_and_merge)
//! (sums in `f64` in stored order, rounded once). CSC and COO input is converted to CSR with
//! the same rule, so `save_npz` of `m.tocsc()` and of `m` give the same matrix. BSR and DIA
//! are rejected: convert with `.tocsr()` before saving.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use ndarray::Array2;
use zip::{CompressionMethod, ZipArchive};

use super::decode::{Avail, Fail, read_f32, read_ints, read_ints_deferred, read_raw, signed_value};
use super::header::{Header, HeaderError, read_full, read_header};
use super::{Csr, dense_array};
use crate::error::Result;
use crate::io::csr::{self, MAX_COLS};
use crate::io::input::Vectors;
use crate::io::limits::Limits;
use crate::io::lines::{format_error, io_error};
use crate::io::source::{STDIN_NAME, is_stdin};

const NOT_A_STREAM: &str = "an .npz (zip) archive cannot be read from standard input or a pipe: \
     its directory is at its end; save it to a file first";

/// A reader that fails once more than `left` bytes have passed.
struct Budget<R> {
    inner: R,
    left: u64,
    over: bool,
}

impl<R: Read> Read for Budget<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        if k as u64 > self.left {
            self.over = true;
            return Err(std::io::Error::other("decompression limit reached"));
        }
        self.left -= k as u64;
        Ok(k)
    }
}

/// An open archive.
struct Archive {
    zip: ZipArchive<BufReader<File>>,
    /// Size of the archive file.
    len: u64,
    /// Bytes the compressed members may decompress to, in total.
    limit: u64,
    /// What is left of `limit`.
    left: u64,
    /// Bytes of the members read so far.
    read: u64,
}

/// The member name errors give (`data` for `data.npy`).
fn short(name: &str) -> &str {
    name.strip_suffix(".npy").unwrap_or(name)
}

/// Checks the entry counts of the end-of-directory records against the archive's size (an
/// entry takes at least 46 bytes), before the zip reader allocates a table for them: a
/// record claiming 65,535 entries in a 300 KB archive would cost it 14 MB.
fn check_directory(file: &mut File, len: u64) -> std::result::Result<(), String> {
    const ENTRY: u64 = 46;
    let tail_len = len.min(22 + 0xFFFF);
    let mut tail = vec![0u8; tail_len as usize];
    file.seek(SeekFrom::Start(len - tail_len))
        .and_then(|_| file.read_exact(&mut tail))
        .map_err(|e| format!("cannot read the zip directory: {e}"))?;
    let base = len - tail_len;
    let u16_at = |b: &[u8], k: usize| u16::from_le_bytes([b[k], b[k + 1]]) as u64;
    let u32_at = |b: &[u8], k: usize| u32::from_le_bytes(b[k..k + 4].try_into().expect("4")) as u64;
    let u64_at = |b: &[u8], k: usize| u64::from_le_bytes(b[k..k + 8].try_into().expect("8"));
    let too_many = |n: u64| {
        format!(
            "not an .npz (zip) archive: its directory claims {n} entries, more than a \
             {len}-byte archive holds"
        )
    };
    for p in (0..tail.len().saturating_sub(21)).rev() {
        if &tail[p..p + 4] != b"PK\x05\x06" {
            continue;
        }
        let at = base + p as u64;
        let (disk, total) = (u16_at(&tail, p + 8), u16_at(&tail, p + 10));
        let (size, offset, comment) = (
            u32_at(&tail, p + 12),
            u32_at(&tail, p + 16),
            u16_at(&tail, p + 20),
        );
        let zip64 = disk == 0xFFFF || total == 0xFFFF || offset == 0xFFFF_FFFF;
        // Only a record the zip reader could take: its comment fits the file and its
        // directory lies before it (or is described by a zip64 record).
        if at + 22 + comment > len || (!zip64 && offset + size > at) {
            continue;
        }
        // The counts of a zip64 record when there is one, else those of this record.
        let mut n = disk.max(total);
        if zip64 && p >= 20 && &tail[p - 20..p - 16] == b"PK\x06\x07" {
            let rec = u64_at(&tail, p - 12);
            if rec.checked_add(56).is_some_and(|e| e <= len) {
                let mut r = [0u8; 56];
                file.seek(SeekFrom::Start(rec))
                    .and_then(|_| file.read_exact(&mut r))
                    .map_err(|e| format!("cannot read the zip directory: {e}"))?;
                if &r[..4] == b"PK\x06\x06" {
                    n = u64_at(&r, 24).max(u64_at(&r, 32));
                }
            }
        }
        if n.saturating_mul(ENTRY) > len {
            return Err(too_many(n));
        }
    }
    Ok(())
}

impl Archive {
    fn open(path: &Path, limits: &Limits) -> Result<Archive> {
        if is_stdin(path) {
            return Err(format_error(Path::new(STDIN_NAME), NOT_A_STREAM));
        }
        let file = File::open(path).map_err(io_error(path))?;
        let meta = file.metadata().map_err(io_error(path))?;
        if !meta.is_file() {
            return Err(format_error(path, NOT_A_STREAM));
        }
        let len = meta.len();
        let mut file = file;
        check_directory(&mut file, len).map_err(|r| format_error(path, r))?;
        let zip = ZipArchive::new(BufReader::with_capacity(1 << 16, file))
            .map_err(|e| format_error(path, format!("not an .npz (zip) archive: {e}")))?;
        let limit = limits.decompressed(len);
        Ok(Archive {
            zip,
            len,
            limit,
            left: limit,
            read: 0,
        })
    }

    /// The members, for messages.
    fn names(&self) -> String {
        self.zip
            .file_names()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The index of member `name` (`name.npy` or `name`).
    fn find(&self, name: &str) -> Option<usize> {
        self.zip
            .index_for_name(&format!("{name}.npy"))
            .or_else(|| self.zip.index_for_name(name))
    }

    /// The index of member `name`, or an error saying the archive is not SciPy's.
    fn need(&self, name: &str) -> std::result::Result<usize, String> {
        self.find(name).ok_or_else(|| {
            format!(
                "no `{name}` array: not a scipy.sparse.save_npz file (members: {})",
                self.names()
            )
        })
    }

    /// Reads member `index` with `read(reader, header, avail, input_bytes)`, then checks that
    /// the member ends with the data (which verifies its CRC-32). Errors name the member;
    /// `read` phrases the errors of values itself (as [`Fail::Msg`]).
    fn member<T>(
        &mut self,
        index: usize,
        read: impl FnOnce(&mut dyn Read, &Header, Avail, u64) -> std::result::Result<T, Fail>,
    ) -> std::result::Result<T, String> {
        let (archive_len, limit) = (self.len, self.limit);
        let mut f = self
            .zip
            .by_index(index)
            .map_err(|e| format!("member {index}: {e}"))?;
        let name = short(f.name()).to_string();
        let bomb = || {
            format!(
                "member `{name}` decompresses beyond {limit} bytes, the limit for this \
                 {archive_len}-byte archive (Limits::max_ratio times its size): a zip bomb?"
            )
        };
        let stored = f.compression() == CompressionMethod::Stored;
        let (size, csize) = (f.size(), f.compressed_size());
        if stored {
            let end = f.data_start().checked_add(csize);
            if csize != size || end.is_none_or(|e| e > archive_len) {
                return Err(format!(
                    "member `{name}`: its zip entry claims {size} bytes, beyond the end of the \
                     {archive_len}-byte archive"
                ));
            }
        }
        let mut r = Budget {
            inner: &mut f,
            left: if stored { u64::MAX } else { self.left },
            over: false,
        };
        let h = match read_header(&mut r) {
            Ok(h) => h,
            Err(HeaderError::Io(_)) if r.over => return Err(bomb()),
            Err(HeaderError::Io(e)) => return Err(format!("member `{name}`: cannot read: {e}")),
            Err(HeaderError::Bad(m)) => return Err(format!("member `{name}`: {m}")),
        };
        let need = h.need().map_err(|m| format!("member `{name}`: {m}"))?;
        let total = h.len as u64 + need;
        let avail = if stored {
            if total > size {
                return Err(format!(
                    "member `{name}`: truncated: the header declares shape {} of {} ({need} data \
                     bytes), but the member holds {} bytes of data",
                    h.shape_str(),
                    h.dtype.name(),
                    size - h.len as u64
                ));
            }
            if total < size {
                return Err(format!(
                    "member `{name}`: {} unexpected bytes after the data",
                    size - total
                ));
            }
            Avail::Known
        } else {
            if need > r.left {
                return Err(bomb());
            }
            Avail::Stream {
                hint: need.min(csize.saturating_mul(8).saturating_add(1 << 16)),
            }
        };
        let input = archive_len.max(self.read + total);
        let out = read(&mut r, &h, avail, input);
        let over = r.over;
        let out = out.map_err(|fail| match fail {
            Fail::Io(_) if over => bomb(),
            Fail::Io(e) => format!("member `{name}`: cannot read: {e}"),
            Fail::Short { got, need } => format!(
                "member `{name}`: truncated: the header declares shape {} of {} ({need} data \
                 bytes), but the data ends after {got} bytes",
                h.shape_str(),
                h.dtype.name()
            ),
            Fail::Alloc(b) => format!(
                "member `{name}`: cannot allocate {b} bytes for shape {}",
                h.shape_str()
            ),
            Fail::Int { index, value } => {
                format!("member `{name}`: entry {index}: value {value} is out of range")
            }
            Fail::Float { index, value } => {
                format!(
                    "member `{name}`: entry {index}: {}",
                    crate::io::float::refused(value)
                )
            }
            Fail::Dtype(m) | Fail::Msg(m) => format!("member `{name}`: {m}"),
        })?;
        let mut b = [0u8; 1];
        match read_full(&mut r, &mut b) {
            Ok(0) => {}
            Ok(_) => return Err(format!("member `{name}`: unexpected bytes after the data")),
            Err(_) if r.over => return Err(bomb()),
            Err(e) => return Err(format!("member `{name}`: {e}")),
        }
        if !stored {
            self.left = r.left;
        }
        self.read += total;
        Ok(out)
    }
}

/// The text of a 0-d bytes or str array (SciPy's `format` member).
fn string(r: &mut dyn Read, h: &Header, avail: Avail) -> std::result::Result<String, Fail> {
    let need = h.data_bytes().unwrap_or(u64::MAX);
    if !matches!(h.dtype.kind, b'S' | b'U') || need > 64 {
        return Err(Fail::Msg(format!(
            "dtype `{}` of shape {} is not a short string",
            h.descr,
            h.shape_str()
        )));
    }
    let raw = read_raw::<u8>(r, need as usize, avail)?;
    Ok(if h.dtype.kind == b'S' {
        String::from_utf8_lossy(&raw)
            .trim_end_matches('\0')
            .to_string()
    } else {
        raw.chunks_exact(4)
            .map(|c| {
                let b: [u8; 4] = c.try_into().expect("4 bytes");
                if h.dtype.big {
                    u32::from_be_bytes(b)
                } else {
                    u32::from_le_bytes(b)
                }
            })
            .map_while(|c| char::from_u32(c).filter(|&c| c != '\0'))
            .collect()
    })
}

/// Checks that a 1-D member holds `want` entries (`what` says why).
fn expect_len(
    h: &Header,
    want: usize,
    what: impl FnOnce(usize) -> String,
) -> std::result::Result<(), Fail> {
    match *h.shape.as_slice() {
        [n] if n == want => Ok(()),
        [n] => Err(Fail::Msg(what(n))),
        _ => Err(Fail::Msg(format!(
            "shape {}: expected a 1-D array",
            h.shape_str()
        ))),
    }
}

/// Reads the sparse matrix of an archive in SciPy's layout.
fn scipy(a: &mut Archive) -> std::result::Result<Csr, String> {
    let i = a.need("format")?;
    let format = a.member(i, |r, h, avail, _| string(r, h, avail))?;
    let i = a.need("shape")?;
    let shape = a.member(i, |r, h, avail, _| {
        expect_len(h, 2, |n| format!("{n} entries: expected two sizes"))?;
        read_ints::<u64>(r, h.dtype, 2, avail, usize::MAX as u64).map_err(|f| match f {
            Fail::Int { value, .. } => Fail::Msg(format!("{value} is not a valid size")),
            f => f,
        })
    })?;
    let (rows, cols) = (shape[0] as usize, shape[1] as usize);
    if cols as u64 > MAX_COLS {
        return Err(format!(
            "{cols} columns do not fit 32-bit column indices (at most {MAX_COLS})"
        ));
    }
    // Rows without entries hold no bytes: bound them by the input.
    let check_rows = |a: &Archive| {
        let bytes = a.len.max(a.read);
        if rows as u64 > bytes {
            Err(format!(
                "shape ({rows}, {cols}) claims more rows than the {bytes} bytes of the archive"
            ))
        } else {
            Ok(())
        }
    };
    match format.as_str() {
        "csr" | "csc" => {
            let is_csr = format == "csr";
            let (major, minor) = if is_csr { (rows, cols) } else { (cols, rows) };
            let (row, col) = if is_csr {
                ("row", "column")
            } else {
                ("column", "row")
            };
            let i = a.need("indptr")?;
            let mut indptr = a.member(i, |r, h, avail, _| {
                expect_len(h, major + 1, |n| {
                    format!(
                        "{n} entries, expected {} ({row}s + 1 for shape ({rows}, {cols}))",
                        major + 1
                    )
                })?;
                read_ints::<usize>(r, h.dtype, major + 1, avail, usize::MAX as u64).map_err(|f| {
                    match f {
                        Fail::Int { index, value } => {
                            Fail::Msg(format!("indptr[{index}] = {value} is negative"))
                        }
                        f => f,
                    }
                })
            })?;
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
            let nnz = indptr[major];
            let row_of = |indptr: &[usize], k: usize| indptr.partition_point(|&p| p <= k) - 1;
            let i = a.need("indices")?;
            let (mut indices, lim, dtype) = a.member(i, |r, h, avail, _| {
                expect_len(h, nnz, |n| {
                    format!("{n} entries, but indptr ends at {nnz}")
                })?;
                if minor == 0 && nnz > 0 {
                    return Err(Fail::Msg(format!(
                        "{nnz} entries in a matrix of shape ({rows}, {cols})"
                    )));
                }
                let max = minor.saturating_sub(1) as u64;
                let (v, lim) = read_ints_deferred::<u32>(r, h.dtype, nnz, avail, max).map_err(
                    |f| match f {
                        Fail::Int { index, value } => Fail::Msg(format!(
                            "{row} {}: {col} index {value} is out of range for shape ({rows}, {cols})",
                            row_of(&indptr, index)
                        )),
                        f => f,
                    },
                )?;
                Ok((v, lim.unwrap_or(max), h.dtype))
            })?;
            let i = a.need("data")?;
            let mut data = a.member(i, |r, h, avail, _| {
                expect_len(h, nnz, |n| format!("{n} entries, expected {nnz}"))?;
                read_f32(r, h.dtype, nnz, avail).map_err(|f| match f {
                    Fail::Float { index, value } => Fail::Msg(format!(
                        "{row} {}, {col} {}: {}",
                        row_of(&indptr, index),
                        indices[index],
                        crate::io::float::refused(value)
                    )),
                    f => f,
                })
            })?;
            // Indices in range and rows sorted, in one pass (stored as u32 or i32, the
            // indices were read unchecked).
            if let Err(k) = csr::validate_rows(&mut indptr, &mut indices, &mut data, lim) {
                let value =
                    signed_value(indices[k] as u64, 8 * dtype.size as u32, dtype.kind == b'i');
                return Err(format!(
                    "member `indices`: {row} {}: {col} index {value} is out of range for shape ({rows}, {cols})",
                    row_of(&indptr, k)
                ));
            }
            if is_csr {
                Ok(csr::finish_validated(rows, cols, indptr, indices, data))
            } else {
                check_rows(a)?;
                csr::from_csc(rows, cols, &indptr, &indices, &data)
            }
        }
        "coo" => {
            let i = a.need("row")?;
            let r_of = a.member(i, |r, h, avail, _| {
                let n = match *h.shape.as_slice() {
                    [n] => n,
                    _ => {
                        return Err(Fail::Msg(format!(
                            "shape {}: expected a 1-D array",
                            h.shape_str()
                        )));
                    }
                };
                if rows == 0 && n > 0 {
                    return Err(Fail::Msg(format!(
                        "{n} entries in a matrix of shape ({rows}, {cols})"
                    )));
                }
                read_ints::<usize>(r, h.dtype, n, avail, rows.saturating_sub(1) as u64).map_err(
                    |f| match f {
                        Fail::Int { index, value } => Fail::Msg(format!(
                            "entry {index}: row {value} is out of range for shape ({rows}, {cols})"
                        )),
                        f => f,
                    },
                )
            })?;
            let n = r_of.len();
            let i = a.need("col")?;
            let c_of = a.member(i, |r, h, avail, _| {
                expect_len(h, n, |m| format!("members `row` and `col` have {n} and {m} entries"))?;
                if cols == 0 && n > 0 {
                    return Err(Fail::Msg(format!("{n} entries in a matrix of shape ({rows}, {cols})")));
                }
                read_ints::<u32>(r, h.dtype, n, avail, cols.saturating_sub(1) as u64).map_err(|f| match f {
                    Fail::Int { index, value } => Fail::Msg(format!(
                        "entry {index}: column {value} is out of range for shape ({rows}, {cols})"
                    )),
                    f => f,
                })
            })?;
            let i = a.need("data")?;
            let data = a.member(i, |r, h, avail, _| {
                expect_len(h, n, |m| format!("{m} entries, expected {n}"))?;
                read_f32(r, h.dtype, n, avail).map_err(|f| match f {
                    Fail::Float { index, value } => Fail::Msg(format!(
                        "entry {index} ({}, {}): {}",
                        r_of[index],
                        c_of[index],
                        crate::io::float::refused(value)
                    )),
                    f => f,
                })
            })?;
            check_rows(a)?;
            csr::from_coo(rows, cols, &r_of, &c_of, &data)
        }
        other => Err(format!(
            "sparse format `{other}` is not supported (csr, csc and coo are): convert with .tocsr() before save_npz"
        )),
    }
}

/// Reads the vectors of an `.npz` archive (see the [module docs](self)): a SciPy sparse
/// matrix, or the one 2-D array of an archive saved by `np.savez`. `limits` caps what the
/// members may decompress to.
pub fn read_npz(path: &Path, limits: &Limits) -> Result<Vectors> {
    let mut a = Archive::open(path, limits)?;
    let v = if a.find("format").is_some() {
        scipy(&mut a).map(Vectors::Sparse)
    } else {
        let arrays: Vec<usize> = (0..a.zip.len())
            .filter(|&i| a.zip.name_for_index(i).is_some_and(|n| !n.ends_with('/')))
            .collect();
        match arrays.as_slice() {
            [i] => a
                .member(
                    *i,
                    |r, h, avail, input| -> std::result::Result<Array2<f32>, Fail> {
                        dense_array(r, h, avail, input)
                    },
                )
                .map(Vectors::Dense),
            [] => Err("the archive holds no arrays".to_string()),
            many => Err(format!(
                "the archive holds {} arrays ({}): expected one 2-D array (np.savez(path, \
                 matrix)) or a sparse matrix (scipy.sparse.save_npz)",
                many.len(),
                a.names()
            )),
        }
    };
    v.map_err(|r| format_error(path, r))
}

/// Reads a sparse matrix written by `scipy.sparse.save_npz` (compressed or not) as CSR, with
/// the default [`Limits`]; see the [module docs](self) for the layout and the checks.
pub fn read_npz_csr(path: &Path) -> Result<Csr> {
    let mut a = Archive::open(path, &Limits::default())?;
    scipy(&mut a).map_err(|r| format_error(path, r))
}
