//! The write-ahead log: files `wal-<first LSN, 16 hex digits>.log`, each a 24-byte header
//! (`SIMLSHWL`, version 1, the first LSN) and records
//!
//! ```text
//! offset  size  field
//!      0     4  payload length L, u32 little-endian
//!      4     4  reserved, 0
//!      8     8  check: XXH3-64 of bytes 0..8, 16..24 and the payload
//!     16     8  LSN, u64 (consecutive: each record's is the previous one's plus one)
//!     24     L  payload: one operation (see `encode`)
//! ```
//!
//! A group of records is written with one `write` and made durable with one `fdatasync`
//! before any of them is acknowledged (group commit). Reading back stops at the first record
//! that is incomplete or fails its check. If no valid record follows it in the file and it is
//! in the last file, it is a torn tail (a group whose write was cut short, never
//! acknowledged): the file is truncated there and the loss reported. Anything else (a bad
//! record followed by valid ones, a bad record in an earlier file, a gap in the LSNs) is
//! corruption of acknowledged data: an error, and nothing is rewritten.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use super::rows::{Content, Payload};
use crate::error::{Error, Result};
use crate::fs::sync_dir;

const MAGIC: &[u8; 8] = b"SIMLSHWL";
const VERSION: u32 = 1;
/// Bytes of a log file's header.
pub(crate) const FILE_HEADER: usize = 24;
/// Bytes of a record's header.
const HEADER: usize = 24;
/// Largest payload of one record (an item of 2^28 bytes: far beyond any document's
/// features).
pub(crate) const MAX_RECORD: usize = 1 << 28;

const OP_INSERT: u8 = 1;
const OP_REMOVE: u8 = 2;

/// An operation read back from the log.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LogOp {
    Insert {
        id: u64,
        code: Vec<u64>,
        payload: Payload,
    },
    Remove {
        id: u64,
    },
}

/// The path of the log file whose first record is `lsn`.
pub(crate) fn path_of(dir: &Path, lsn: u64) -> PathBuf {
    dir.join(format!("wal-{lsn:016x}.log"))
}

/// The log files of `dir`, by first LSN.
pub(crate) fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(hex) = name
            .strip_prefix("wal-")
            .and_then(|s| s.strip_suffix(".log"))
            && let Ok(lsn) = u64::from_str_radix(hex, 16)
        {
            out.push((lsn, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Appends the record of `payload` at `lsn` to `out`.
pub(crate) fn frame(lsn: u64, payload: &[u8], out: &mut Vec<u8>) {
    let len = payload.len() as u32;
    let mut h = Xxh3::new();
    h.update(&len.to_le_bytes());
    h.update(&0u32.to_le_bytes());
    h.update(&lsn.to_le_bytes());
    h.update(payload);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&h.digest().to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(payload);
}

/// The payload of an insert.
pub(crate) fn encode_insert(id: u64, code: &[u64], payload: &Payload, out: &mut Vec<u8>) {
    out.clear();
    out.push(OP_INSERT);
    out.extend_from_slice(&id.to_le_bytes());
    for w in code {
        out.extend_from_slice(&w.to_le_bytes());
    }
    match payload {
        Payload::None => {}
        Payload::Dense(v) => {
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        Payload::Sparse(k, w) => {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            for x in k {
                out.extend_from_slice(&x.to_le_bytes());
            }
            for x in w {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
}

/// The payload of a removal.
pub(crate) fn encode_remove(id: u64, out: &mut Vec<u8>) {
    out.clear();
    out.push(OP_REMOVE);
    out.extend_from_slice(&id.to_le_bytes());
}

/// Reads little-endian values off a byte slice.
struct Cursor<'a> {
    b: &'a [u8],
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.b.len() < n {
            return None;
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Some(a)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
    }

    fn f32(&mut self) -> Option<f32> {
        self.u32().map(f32::from_bits)
    }
}

/// Decodes a payload written by [`encode_insert`] or [`encode_remove`] for a store of
/// `words`-word codes and `content`; `None` when it does not parse.
pub(crate) fn decode(b: &[u8], words: usize, content: Content) -> Option<LogOp> {
    let (&op, rest) = b.split_first()?;
    let mut c = Cursor { b: rest };
    let id = c.u64()?;
    let op = match op {
        OP_REMOVE => LogOp::Remove { id },
        OP_INSERT => {
            let code = (0..words).map(|_| c.u64()).collect::<Option<Vec<_>>>()?;
            let payload = match content {
                Content::Codes => Payload::None,
                Content::Vectors { dim } => {
                    if c.b.len() != dim * 4 {
                        return None;
                    }
                    Payload::Dense((0..dim).map(|_| c.f32()).collect::<Option<_>>()?)
                }
                Content::Text => {
                    let n = c.u32()? as usize;
                    if c.b.len() != n * 12 {
                        return None;
                    }
                    let k = (0..n).map(|_| c.u64()).collect::<Option<Vec<_>>>()?;
                    let w = (0..n).map(|_| c.f32()).collect::<Option<Vec<_>>>()?;
                    Payload::Sparse(k, w)
                }
            };
            LogOp::Insert { id, code, payload }
        }
        _ => return None,
    };
    c.b.is_empty().then_some(op)
}

/// The record at `at` of `b` if it is whole, its LSN at least `min` (checked before the
/// payload is hashed, so that scanning damaged bytes stays cheap) and it passes its check:
/// `(lsn, payload, end)`.
fn record_at(b: &[u8], at: usize, min: u64) -> Option<(u64, &[u8], usize)> {
    let h = b.get(at..at.checked_add(HEADER)?)?;
    let len = u32::from_le_bytes(h[0..4].try_into().ok()?) as usize;
    if len > MAX_RECORD || h[4..8] != [0; 4] {
        return None;
    }
    let check = u64::from_le_bytes(h[8..16].try_into().ok()?);
    let lsn = u64::from_le_bytes(h[16..24].try_into().ok()?);
    if lsn < min || lsn - min > 1 << 40 {
        return None;
    }
    let end = at + HEADER + len;
    let payload = b.get(at + HEADER..end)?;
    let mut x = Xxh3::new();
    x.update(&h[0..8]);
    x.update(&h[16..24]);
    x.update(payload);
    (x.digest() == check).then_some((lsn, payload, end))
}

/// A torn tail found and cut off when opening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The log file.
    pub file: PathBuf,
    /// Where its last whole record ends: the file's new length.
    pub offset: u64,
    /// Bytes cut off (an unacknowledged group whose write was interrupted).
    pub dropped: u64,
}

/// What reading the log found.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// Records applied (LSNs above the snapshot's).
    pub(crate) applied: u64,
    /// The last LSN in the log (or the snapshot's).
    pub(crate) last: u64,
    /// The last file and its valid length, to append to.
    pub(crate) tail: Option<(u64, PathBuf, u64)>,
    /// A torn tail cut off.
    pub(crate) torn: Option<TornTail>,
}

fn corrupt(path: &Path, reason: String) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        reason,
    }
}

/// Reads every log file of `dir` in order, calling `apply(lsn, op)` for each record above
/// `after` (the snapshot's LSN); cuts a torn tail of the last file when `repair` (else only
/// reports it, changing nothing).
pub(crate) fn replay(
    dir: &Path,
    after: u64,
    words: usize,
    content: Content,
    repair: bool,
    mut apply: impl FnMut(u64, LogOp) -> Result<()>,
) -> Result<Replay> {
    let files = list(dir)?;
    let mut out = Replay {
        last: after,
        ..Replay::default()
    };
    let n = files.len();
    for (fi, (first, path)) in files.into_iter().enumerate() {
        let last_file = fi + 1 == n;
        let b = std::fs::read(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let header_ok = b.len() >= FILE_HEADER
            && &b[..8] == MAGIC
            && u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")) == VERSION
            && u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")) == first;
        if !header_ok {
            if last_file && b.len() < FILE_HEADER && b.iter().all(|&x| x == 0) {
                // Created but its header never reached the disk: no record was acknowledged.
                if repair {
                    write_header(&path, first)?;
                }
                out.torn = Some(TornTail {
                    file: path.clone(),
                    offset: FILE_HEADER as u64,
                    dropped: 0,
                });
                out.tail = Some((first, path, FILE_HEADER as u64));
                continue;
            }
            return Err(corrupt(&path, "not a simlsh log file (bad header)".into()));
        }
        if first > out.last + 1 && first > after + 1 {
            return Err(corrupt(
                &path,
                format!(
                    "the log jumps from record {} to {first}: a log file is missing",
                    out.last
                ),
            ));
        }
        let mut at = FILE_HEADER;
        let mut expect = first;
        while at < b.len() {
            match record_at(&b, at, expect) {
                Some((lsn, payload, end)) if lsn == expect => {
                    if lsn > after {
                        let op = decode(payload, words, content).ok_or_else(|| {
                            corrupt(&path, format!("record {lsn} at byte {at} does not decode"))
                        })?;
                        apply(lsn, op)?;
                        out.applied += 1;
                        out.last = lsn;
                    }
                    expect += 1;
                    at = end;
                }
                _ => {
                    // A bad record: torn tail only if it is the last file and nothing valid
                    // follows.
                    let later = (at + 1..b.len()).any(|p| record_at(&b, p, expect).is_some());
                    if !last_file || later {
                        return Err(corrupt(
                            &path,
                            format!(
                                "record {expect} at byte {at} is corrupt and acknowledged \
                                 records follow it: the log is damaged (restore the store \
                                 from a copy)"
                            ),
                        ));
                    }
                    if repair {
                        OpenOptions::new()
                            .write(true)
                            .open(&path)
                            .and_then(|f| {
                                f.set_len(at as u64)?;
                                f.sync_all()
                            })
                            .map_err(|source| Error::Io {
                                path: path.clone(),
                                source,
                            })?;
                    }
                    out.torn = Some(TornTail {
                        file: path.clone(),
                        offset: at as u64,
                        dropped: (b.len() - at) as u64,
                    });
                    break;
                }
            }
        }
        if expect > first {
            out.last = out.last.max(expect - 1);
        }
        let len = out
            .torn
            .as_ref()
            .filter(|t| t.file == path)
            .map_or(b.len() as u64, |t| t.offset);
        out.tail = Some((first, path, len));
    }
    Ok(out)
}

fn write_header(path: &Path, first: u64) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    let mut h = [0u8; FILE_HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&first.to_le_bytes());
    f.write_all(&h).and_then(|()| f.sync_all()).map_err(io)
}

/// The open log file records are appended to.
#[derive(Debug)]
pub(crate) struct Wal {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    /// Bytes of whole, written records (and the header).
    len: u64,
}

impl Wal {
    /// A new log file starting at `lsn`.
    pub(crate) fn create(dir: &Path, lsn: u64) -> Result<Wal> {
        let path = path_of(dir, lsn);
        write_header(&path, lsn)?;
        sync_dir(dir)?;
        Self::open(dir, path, FILE_HEADER as u64)
    }

    /// The existing file `path` (first LSN `first`), appending after its `len` valid bytes.
    pub(crate) fn open(dir: &Path, path: PathBuf, len: u64) -> Result<Wal> {
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new().write(true).open(&path).map_err(io)?;
        file.seek(SeekFrom::Start(len)).map_err(io)?;
        Ok(Wal {
            dir: dir.to_path_buf(),
            path,
            file,
            len,
        })
    }

    /// Appends whole records and, when `sync`, makes them durable (`fdatasync`). On failure
    /// the file is cut back to its previous length (nothing of the group survives) and the
    /// error returned.
    pub(crate) fn append(&mut self, bytes: &[u8], sync: bool) -> Result<()> {
        let r = self
            .file
            .write_all(bytes)
            .and_then(|()| if sync { self.file.sync_data() } else { Ok(()) });
        match r {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(source) => {
                // Best effort: the group was not acknowledged, so it must not be replayed.
                let _ = self
                    .file
                    .set_len(self.len)
                    .and_then(|()| self.file.sync_data());
                let _ = self.file.seek(SeekFrom::Start(self.len));
                Err(Error::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    /// Makes what was written durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Syncs this file and starts a new one at `lsn`.
    pub(crate) fn rotate(&mut self, lsn: u64) -> Result<()> {
        self.sync()?;
        *self = Wal::create(&self.dir, lsn)?;
        Ok(())
    }
}
