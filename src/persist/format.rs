//! The simlsh file format (version 1): one versioned, checksummed, little-endian container for
//! signature matrices and every index, laid out so that its arrays can be memory-mapped and
//! used in place.
//!
//! ```text
//! offset  size  field
//! ------  ----  -----------------------------------------------------------------------
//! Header (32 bytes)
//!      0     8  magic "SIMLSH\r\n" (the CR LF catches text-mode mangling, as in PNG)
//!      8     4  format version, u32 (this build writes and reads 1)
//!     12     4  kind, u32: 1 signatures, 2 linear scan, 3 permuted tables (Manku),
//!               4 multi-index hashing, 5 permutation search, 6 graph, 8 a part of a store
//!               (its manifest or a segment's rows, [`crate::store`])
//!     16     4  length P of the parameter block, u32
//!     20     4  number S of sections, u32
//!     24     8  reserved, 0
//! Parameter block (P bytes): UTF-8 lines "key=value\n", sorted by key. Every parameter of
//!               the object: signature width ("bits"), counts, the signer and its seed when
//!               known ("signer.kind", "signer.seed", ...), the index layout.
//! Section table (S × 48 bytes), each entry:
//!               name (24 bytes, ASCII, NUL-padded), element type u32 (1 u8, 2 u32, 3 u64,
//!               4 f32), reserved u32, byte offset u64 (a multiple of 64), element count u64
//! Sections:     the arrays, little-endian, each starting at a multiple of 64 bytes (zero
//!               padding between), so a memory map gives aligned slices
//! Footer (32 bytes, the last of the file)
//!     +0     8  total file length, u64
//!     +8     8  checksum: XXH3-64 (seed 0) of every byte before the footer
//!    +16     8  reserved, 0
//!    +24     8  end magic "SIMLSHND"
//! ```
//!
//! Opening a file checks, in order: the length, both magics (a foreign file), the version,
//! the recorded length (a truncated or extended file), and that every section lies inside the
//! data area, aligned, with a known element type: `O(sections)`, without reading the data, so
//! that opening a file of 10^9 codes costs no more than one of 10^3. The checksum (a corrupt
//! file) is verified on demand, by [`IndexFile::verify`] (`O(file size)`), as the `fst`
//! crate does. Loading an index then checks every parameter and the length of every section
//! against them ([`crate::persist`]). Each failure is a typed error ([`Error::Format`],
//! [`Error::Version`], [`Error::Checksum`], [`Error::InvalidField`]) naming the file;
//! nothing panics. Files are written atomically ([`write_atomic`]): a crash mid-write leaves
//! the previous file intact.
//!
//! **Memory maps and files changed in place.** [`IndexFile::open`] maps the file: its pages
//! are read from the file when touched, and shared with every process that maps it. simlsh
//! never changes a file in place (a write renames a new file over the old one, and the map
//! keeps the old one), but another program can: a file truncated in place (`truncate`,
//! `cp new old`, `> old` in a shell) makes the pages past its new end unreadable, and the next
//! access to one of them kills the process with `SIGBUS`, which no error handling can catch.
//! Where index files may be rewritten in place by other tools, open them with
//! [`IndexFile::open_copied`] (or load with
//! [`LoadOptions::copy`](crate::persist::LoadOptions::copy)): the file is read into
//! memory once, `O(file size)`, and later changes to it do not affect the copy.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use bytemuck::Pod;
use memmap2::{Mmap, MmapOptions};

use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, Result};
use crate::fs::{OutputSet, write_atomic};
use crate::storage::{Buf, Bytes};

/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"SIMLSH\r\n";
const END_MAGIC: &[u8; 8] = b"SIMLSHND";
const HEADER: usize = 32;
const FOOTER: usize = 32;
const ENTRY: usize = 48;
const NAME: usize = 24;
const ALIGN: usize = 64;

/// What a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FileKind {
    /// A signature matrix.
    Signatures = 1,
    /// A [`LinearScan`](crate::index::LinearScan) index.
    LinearScan = 2,
    /// A permuted-tables (Manku) index.
    PermutedTables = 3,
    /// A multi-index hashing index.
    MultiIndex = 4,
    /// A permutation-search index.
    Permutation = 5,
    /// A graph index.
    Graph = 6,
    /// A part of a [`Store`](crate::store::Store): its manifest or a segment's rows.
    Store = 8,
}

impl FileKind {
    fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            1 => FileKind::Signatures,
            2 => FileKind::LinearScan,
            3 => FileKind::PermutedTables,
            4 => FileKind::MultiIndex,
            5 => FileKind::Permutation,
            6 => FileKind::Graph,
            8 => FileKind::Store,
            _ => return None,
        })
    }
}

/// Element types of sections.
trait Elem: Pod {
    const CODE: u32;
    fn to_le(self) -> Self;
}

impl Elem for u8 {
    const CODE: u32 = 1;
    fn to_le(self) -> Self {
        self
    }
}
impl Elem for u32 {
    const CODE: u32 = 2;
    fn to_le(self) -> Self {
        self.to_le()
    }
}
impl Elem for u64 {
    const CODE: u32 = 3;
    fn to_le(self) -> Self {
        self.to_le()
    }
}
impl Elem for f32 {
    const CODE: u32 = 4;
    fn to_le(self) -> Self {
        f32::from_bits(self.to_bits().to_le())
    }
}

fn elem_size(code: u32) -> Option<usize> {
    Some(match code {
        1 => 1,
        2 | 4 => 4,
        3 => 8,
        _ => return None,
    })
}

enum Data<'a> {
    U8(&'a [u8]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F32(&'a [f32]),
}

impl Data<'_> {
    fn code_len(&self) -> (u32, usize) {
        match self {
            Data::U8(d) => (u8::CODE, d.len()),
            Data::U32(d) => (u32::CODE, d.len()),
            Data::U64(d) => (u64::CODE, d.len()),
            Data::F32(d) => (f32::CODE, d.len()),
        }
    }

    fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        fn le<T: Elem>(d: &[T], w: &mut dyn Write) -> std::io::Result<()> {
            if cfg!(target_endian = "little") {
                w.write_all(bytemuck::cast_slice(d))
            } else {
                for chunk in d.chunks(4096) {
                    let v: Vec<T> = chunk.iter().map(|x| x.to_le()).collect();
                    w.write_all(bytemuck::cast_slice(&v))?;
                }
                Ok(())
            }
        }
        match self {
            Data::U8(d) => le(d, w),
            Data::U32(d) => le(d, w),
            Data::U64(d) => le(d, w),
            Data::F32(d) => le(d, w),
        }
    }
}

/// Builds a file: its kind, parameters and named arrays, then [`write`](Writer::write)s it
/// atomically.
pub struct Writer<'a> {
    kind: FileKind,
    params: BTreeMap<String, String>,
    sections: Vec<(String, Data<'a>)>,
}

impl<'a> Writer<'a> {
    /// A file of `kind`.
    pub fn new(kind: FileKind) -> Self {
        Writer {
            kind,
            params: BTreeMap::new(),
            sections: Vec::new(),
        }
    }

    /// Records a parameter (`key` of `[a-z0-9_.]`, `value` without newlines: a newline is
    /// written as a space).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an empty key or one with other characters.
    pub fn param(&mut self, key: &str, value: impl ToString) -> Result<&mut Self> {
        let value = value.to_string();
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
        {
            return Err(Error::param(
                "key",
                format!("parameter key {key:?}: expected one or more of a-z, 0-9, `_` and `.`"),
            ));
        }
        self.params
            .insert(key.to_string(), value.replace('\n', " "));
        Ok(self)
    }

    fn section(&mut self, name: &str, data: Data<'a>) -> Result<&mut Self> {
        if name.is_empty() || name.len() > NAME || !name.is_ascii() || name.contains('\0') {
            return Err(Error::param(
                "name",
                format!("section name {name:?}: expected 1 to {NAME} ASCII characters, no NUL"),
            ));
        }
        if self.sections.iter().any(|(n, _)| n == name) {
            return Err(Error::param(
                "name",
                format!("section {name:?} added twice"),
            ));
        }
        self.sections.push((name.to_string(), data));
        Ok(self)
    }

    /// Adds an array of bytes.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a name that is empty, longer than 24 bytes, not
    /// ASCII, holds a NUL, or is already used.
    pub fn u8s(&mut self, name: &str, data: &'a [u8]) -> Result<&mut Self> {
        self.section(name, Data::U8(data))
    }

    /// Adds an array of `u32`.
    ///
    /// # Errors
    /// As [`u8s`](Self::u8s).
    pub fn u32s(&mut self, name: &str, data: &'a [u32]) -> Result<&mut Self> {
        self.section(name, Data::U32(data))
    }

    /// Adds an array of `u64`.
    ///
    /// # Errors
    /// As [`u8s`](Self::u8s).
    pub fn u64s(&mut self, name: &str, data: &'a [u64]) -> Result<&mut Self> {
        self.section(name, Data::U64(data))
    }

    /// Adds an array of `f32`.
    ///
    /// # Errors
    /// As [`u8s`](Self::u8s).
    pub fn f32s(&mut self, name: &str, data: &'a [f32]) -> Result<&mut Self> {
        self.section(name, Data::F32(data))
    }

    /// Writes the file atomically (temporary file, fsync, rename).
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| self.write_to(w))
    }

    /// Stages the file in `set` (see [`OutputSet`]): it replaces `path` when the set is
    /// committed, together with the set's other outputs.
    pub fn stage(&self, set: &mut OutputSet, path: &Path) -> Result<()> {
        set.write(path, |w| self.write_to(w))
    }

    /// Writes the file's bytes to `w`, in order, from the header to the footer.
    pub fn write_to(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let mut params = String::new();
        for (k, v) in &self.params {
            params.push_str(k);
            params.push('=');
            params.push_str(v);
            params.push('\n');
        }
        let table_end = HEADER + params.len() + ENTRY * self.sections.len();
        let mut offset = table_end.next_multiple_of(ALIGN);
        let mut entries = Vec::with_capacity(ENTRY * self.sections.len());
        let mut layout = Vec::new();
        for (name, data) in &self.sections {
            let (code, len) = data.code_len();
            let size = len * elem_size(code).expect("known code");
            let mut e = [0u8; ENTRY];
            e[..name.len()].copy_from_slice(name.as_bytes());
            e[24..28].copy_from_slice(&code.to_le_bytes());
            e[32..40].copy_from_slice(&(offset as u64).to_le_bytes());
            e[40..48].copy_from_slice(&(len as u64).to_le_bytes());
            entries.extend_from_slice(&e);
            layout.push((offset, size));
            offset = (offset + size).next_multiple_of(ALIGN);
        }
        let data_end = layout.last().map_or(table_end, |&(o, s)| o + s);
        let total = data_end + FOOTER;
        let mut h = Hashing {
            inner: w,
            hasher: Xxh3::new(),
            pos: 0,
        };
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&(self.kind as u32).to_le_bytes());
        header[16..20].copy_from_slice(&(params.len() as u32).to_le_bytes());
        header[20..24].copy_from_slice(&(self.sections.len() as u32).to_le_bytes());
        h.write_all(&header)?;
        h.write_all(params.as_bytes())?;
        h.write_all(&entries)?;
        for ((_, data), &(off, _)) in self.sections.iter().zip(&layout) {
            h.pad_to(off)?;
            data.write(&mut h)?;
        }
        let checksum = h.hasher.digest();
        let mut footer = [0u8; FOOTER];
        footer[..8].copy_from_slice(&(total as u64).to_le_bytes());
        footer[8..16].copy_from_slice(&checksum.to_le_bytes());
        footer[24..32].copy_from_slice(END_MAGIC);
        h.inner.write_all(&footer)
    }
}

/// A writer that hashes what passes through and counts bytes.
struct Hashing<'w> {
    inner: &'w mut dyn Write,
    hasher: Xxh3,
    pos: usize,
}

impl Hashing<'_> {
    fn pad_to(&mut self, off: usize) -> std::io::Result<()> {
        let zeros = [0u8; ALIGN];
        while self.pos < off {
            let n = (off - self.pos).min(ALIGN);
            self.write_all(&zeros[..n])?;
        }
        Ok(())
    }
}

impl Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.pos += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[derive(Clone, Debug)]
struct SectionDesc {
    name: String,
    code: u32,
    offset: usize,
    len: usize,
}

/// An opened, checked file (or bytes of one): its kind, parameters and arrays (memory-mapped, or
/// borrowed from the bytes).
#[derive(Debug)]
pub struct IndexFile {
    path: PathBuf,
    kind: FileKind,
    params: BTreeMap<String, String>,
    sections: Vec<SectionDesc>,
    bytes: Bytes,
    /// Checksum and contents verified (set by [`crate::persist`]).
    sound: AtomicBool,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl IndexFile {
    /// Opens `path` and checks its header, footer and section table (see the [module
    /// docs](self)): `O(sections)`, the data is not read. [`verify`](Self::verify) checks the
    /// checksum.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Format`] or [`Error::Version`] naming the file.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, false)
    }

    /// Opens `path` as [`open`](Self::open) does, but reads the whole file into memory
    /// (`O(file size)`) instead of mapping it, so that a later change of the file in place by
    /// another program (a truncation: see the [module docs](self)) cannot affect it.
    ///
    /// # Errors
    /// As [`open`](Self::open); a file that shrinks while it is read is an [`Error::Io`].
    pub fn open_copied(path: &Path) -> Result<Self> {
        Self::open_with(path, true)
    }

    fn open_with(path: &Path, copy: bool) -> Result<Self> {
        let fail = |reason: String| Error::Format {
            path: path.to_path_buf(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let len = file
            .metadata()
            .map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len() as usize;
        if len < HEADER + FOOTER {
            return Err(fail(format!(
                "{len} bytes is too short for a simlsh file (truncated or foreign)"
            )));
        }
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let map = if copy {
            let mut anon = MmapOptions::new().len(len).map_anon().map_err(io)?;
            (&file).read_exact(&mut anon[..]).map_err(io)?;
            anon.make_read_only().map_err(io)?
        } else {
            // SAFETY: the map is read-only; simlsh never writes index files in place (writes
            // go to a temporary file that is renamed), so the mapped bytes only change if
            // another program modifies the file in place while it is open: documented in the
            // module docs (a truncation raises SIGBUS), with `open_copied` as the remedy.
            unsafe { Mmap::map(&file) }.map_err(io)?
        };
        Self::parse(path.to_path_buf(), Bytes::mapped(map))
    }

    /// Opens the bytes of a file, checked exactly as [`open`](Self::open) checks a file (the
    /// header, version, footer, recorded length and section table: `O(sections)`;
    /// [`verify`](Self::verify) checks the checksum). The arrays are borrowed from `bytes`
    /// without copying when their start is aligned for `u64`, from an aligned copy otherwise.
    /// Errors name the file `<bytes>`.
    ///
    /// ```
    /// use simlsh::persist::{FileKind, IndexFile, Writer};
    /// use simlsh::storage::Bytes;
    ///
    /// let mut w = Writer::new(FileKind::Signatures);
    /// w.param("bits", 64)?.u64s("codes", &[7, 8, 9])?;
    /// let mut bytes = Vec::new();
    /// w.write_to(&mut bytes)?;
    /// let f = IndexFile::from_bytes(Bytes::from(bytes))?;
    /// f.verify()?;
    /// assert_eq!(&f.u64s("codes")?[..], &[7, 8, 9]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Format`] or [`Error::Version`].
    pub fn from_bytes(bytes: Bytes) -> Result<Self> {
        Self::parse(PathBuf::from("<bytes>"), bytes.aligned())
    }

    fn parse(path: PathBuf, bytes: Bytes) -> Result<Self> {
        let fail = |reason: String| Error::Format {
            path: path.clone(),
            reason,
        };
        let len = bytes.len();
        if len < HEADER + FOOTER {
            return Err(fail(format!(
                "{len} bytes is too short for a simlsh file (truncated or foreign)"
            )));
        }
        let b = &bytes[..];
        if &b[..8] != MAGIC {
            return Err(fail("not a simlsh file (bad magic bytes)".into()));
        }
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(Error::Version {
                path: path.clone(),
                expected: VERSION,
                got: version,
            });
        }
        let foot = &b[len - FOOTER..];
        if &foot[24..32] != END_MAGIC {
            return Err(fail(
                "no end marker: the file is truncated or corrupt".into(),
            ));
        }
        if foot[16..24] != [0u8; 8] {
            return Err(fail(
                "reserved bytes of the footer are not zero: the file is corrupt".into(),
            ));
        }
        let recorded = u64_at(foot, 0);
        if recorded != len as u64 {
            return Err(fail(format!(
                "the file is {len} bytes but records {recorded}: truncated or corrupt"
            )));
        }
        let kind = FileKind::from_u32(u32_at(b, 12))
            .ok_or_else(|| fail(format!("unknown kind {}", u32_at(b, 12))))?;
        let plen = u32_at(b, 16) as usize;
        let nsec = u32_at(b, 20) as usize;
        let data_end = len - FOOTER;
        let table = HEADER
            .checked_add(plen)
            .and_then(|p| nsec.checked_mul(ENTRY).and_then(|t| p.checked_add(t)))
            .filter(|&e| e <= data_end)
            .ok_or_else(|| fail("header sizes exceed the file".into()))?;
        let text = std::str::from_utf8(&b[HEADER..HEADER + plen])
            .map_err(|_| fail("parameters are not UTF-8".into()))?;
        let mut params = BTreeMap::new();
        for line in text.lines() {
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| fail(format!("bad parameter line {line:?}")))?;
            params.insert(k.to_string(), v.to_string());
        }
        let mut sections = Vec::with_capacity(nsec);
        for s in 0..nsec {
            let e = &b[HEADER + plen + s * ENTRY..HEADER + plen + (s + 1) * ENTRY];
            let name = std::str::from_utf8(&e[..NAME])
                .map_err(|_| fail("section name is not ASCII".into()))?
                .trim_end_matches('\0')
                .to_string();
            let code = u32_at(e, 24);
            let size = elem_size(code)
                .ok_or_else(|| fail(format!("section {name}: unknown element type {code}")))?;
            let offset = u64_at(e, 32) as usize;
            let n = u64_at(e, 40) as usize;
            let ok = offset.is_multiple_of(ALIGN)
                && offset >= table
                && n.checked_mul(size)
                    .and_then(|s| s.checked_add(offset))
                    .is_some_and(|end| end <= data_end);
            if !ok {
                return Err(fail(format!(
                    "section {name}: {n} elements at byte {offset} lie outside the data"
                )));
            }
            sections.push(SectionDesc {
                name,
                code,
                offset,
                len: n,
            });
        }
        Ok(IndexFile {
            path,
            kind,
            params,
            sections,
            bytes,
            sound: AtomicBool::new(false),
        })
    }

    /// True once the whole file has been verified (checksum and the invariants of what it
    /// holds) by [`crate::persist::verify_index`] or before a loaded index was saved.
    pub(crate) fn is_sound(&self) -> bool {
        self.sound.load(Ordering::Acquire)
    }

    /// Records that the whole file has been verified.
    pub(crate) fn mark_sound(&self) {
        self.sound.store(true, Ordering::Release);
    }

    /// Verifies the file's checksum (XXH3-64 of every byte before the footer): reads the
    /// whole file, `O(file size)`.
    ///
    /// # Errors
    /// [`Error::Checksum`] naming the file when the contents do not match.
    pub fn verify(&self) -> Result<()> {
        let b = &self.bytes[..];
        let body = b.len() - FOOTER;
        let stored = u64_at(&b[body..], 8);
        let computed = xxhash_rust::xxh3::xxh3_64(&b[..body]);
        if stored != computed {
            return Err(Error::Checksum {
                path: self.path.clone(),
                stored,
                computed,
            });
        }
        Ok(())
    }

    /// An [`Error::InvalidField`] about `field` of this file.
    pub fn field_error(&self, field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::InvalidField {
            path: self.path.clone(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the file holds.
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// Checks that the file holds `kind`.
    pub fn expect_kind(&self, kind: FileKind) -> Result<()> {
        if self.kind != kind {
            return Err(self.error(format!("holds {:?}, not {kind:?}", self.kind)));
        }
        Ok(())
    }

    /// All parameters.
    pub fn params(&self) -> &BTreeMap<String, String> {
        &self.params
    }

    /// A format error about this file.
    pub fn error(&self, reason: impl Into<String>) -> Error {
        Error::Format {
            path: self.path.clone(),
            reason: reason.into(),
        }
    }

    /// Parameter `key`, parsed.
    pub fn param<T: std::str::FromStr>(&self, key: &str) -> Result<T> {
        let v = self
            .params
            .get(key)
            .ok_or_else(|| self.error(format!("missing parameter {key}")))?;
        v.parse()
            .map_err(|_| self.error(format!("parameter {key}={v:?} is not valid")))
    }

    /// Parameter `key` if present.
    pub fn param_opt(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }

    /// The names of the file's sections, in file order.
    pub fn section_names(&self) -> impl Iterator<Item = &str> {
        self.sections.iter().map(|s| s.name.as_str())
    }

    /// Number of elements of section `name`.
    pub fn section_len(&self, name: &str) -> Result<usize> {
        self.sections
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.len)
            .ok_or_else(|| self.error(format!("missing section {name}")))
    }

    fn array<T: Elem>(&self, name: &str) -> Result<Buf<T>> {
        let s = self
            .sections
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| self.error(format!("missing section {name}")))?;
        if s.code != T::CODE {
            return Err(self.error(format!(
                "section {name} has element type {}, expected {}",
                s.code,
                T::CODE
            )));
        }
        if cfg!(target_endian = "little") {
            Buf::shared(self.bytes.clone(), s.offset, s.len)
                .ok_or_else(|| self.error(format!("section {name} is misaligned")))
        } else {
            let bytes = &self.bytes[s.offset..s.offset + s.len * std::mem::size_of::<T>()];
            let v: Vec<T> = bytemuck::pod_collect_to_vec::<u8, T>(bytes)
                .into_iter()
                .map(Elem::to_le)
                .collect();
            Ok(Buf::owned(v))
        }
    }

    /// Section `name` as bytes.
    pub fn u8s(&self, name: &str) -> Result<Buf<u8>> {
        self.array(name)
    }

    /// Section `name` as `u32`s.
    pub fn u32s(&self, name: &str) -> Result<Buf<u32>> {
        self.array(name)
    }

    /// Section `name` as `u64`s.
    pub fn u64s(&self, name: &str) -> Result<Buf<u64>> {
        self.array(name)
    }

    /// Section `name` as `f32`s.
    pub fn f32s(&self, name: &str) -> Result<Buf<f32>> {
        self.array(name)
    }
}
