//! The `.npy` header: the magic `\x93NUMPY`, a version, the length of the header dictionary,
//! and the dictionary itself, `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
//!
//! [`write_header`] writes one as NumPy does; the rest is parsed here rather than by a
//! general Python-literal parser: the dictionary is read only
//! up to [`MAX_DICT`] bytes whatever its length field claims, parsed without recursion (a
//! header of 20,000 nested brackets is an error, not a stack overflow), and every failure is a
//! message naming what is wrong.

use std::io::{Read, Write};

/// The longest header dictionary accepted, in bytes. NumPy writes a few hundred bytes and
/// itself refuses more than 10,000 by default (`max_header_size`).
pub(crate) const MAX_DICT: usize = 1 << 16;

/// An element type from a `descr` string such as `'<f4'`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dtype {
    /// `f`, `i`, `u`, `b`, `S`, `U`, ...
    pub kind: u8,
    /// Bytes per element (for `U`, characters: 4 bytes each).
    pub size: usize,
    /// Big-endian data.
    pub big: bool,
}

impl Dtype {
    /// The type of a `descr` string, `None` if it is not of the form `[<>|=]?<kind><size>`.
    pub fn parse(descr: &str) -> Option<Dtype> {
        let b = descr.as_bytes();
        let (big, rest) = match b.first()? {
            b'<' | b'|' => (false, &descr[1..]),
            b'>' => (true, &descr[1..]),
            b'=' => (cfg!(target_endian = "big"), &descr[1..]),
            _ => (cfg!(target_endian = "big"), descr),
        };
        let kind = *rest.as_bytes().first()?;
        if !kind.is_ascii_alphabetic() {
            return None;
        }
        let n: usize = rest[1..].parse().ok()?;
        let size = if kind == b'U' { n.checked_mul(4)? } else { n };
        Some(Dtype { kind, size, big })
    }

    /// NumPy's name of the type, for messages.
    pub fn name(self) -> String {
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

    /// True when the bytes of an element are those of a native `T` of `size` bytes: the
    /// data can be read into a `Vec<T>` as is.
    pub fn native(self) -> bool {
        self.size == 1 || self.big == cfg!(target_endian = "big")
    }
}

/// A parsed header.
#[derive(Clone, Debug)]
pub(crate) struct Header {
    /// The `descr` string.
    pub descr: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Fortran (column-major) order.
    pub fortran: bool,
    /// The shape.
    pub shape: Vec<usize>,
    /// Bytes from the start of the image to the data.
    pub len: usize,
}

impl Header {
    /// The shape as NumPy prints it: `(3,)`, `(2, 5)`.
    pub fn shape_str(&self) -> String {
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

    /// Number of elements, `None` on overflow.
    pub fn count(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |a, &b| a.checked_mul(b))
    }

    /// Bytes of data the header declares, `None` on overflow.
    pub fn data_bytes(&self) -> Option<u64> {
        (self.count()? as u64).checked_mul(self.dtype.size as u64)
    }

    /// The declared data size, or an error naming the shape.
    pub fn need(&self) -> Result<u64, String> {
        self.data_bytes().ok_or_else(|| {
            format!(
                "shape {} of {} overflows: the header cannot be right",
                self.shape_str(),
                self.dtype.name()
            )
        })
    }
}

/// Writes a version 1.0 header as NumPy's `np.save` does: the dictionary with a trailing
/// `, }`, padded with spaces and ended by a newline so that the data starts at a multiple of
/// 64 bytes. `descr` is a NumPy type string (`'<u8'`), `shape` C order.
pub(crate) fn write_header(w: &mut dyn Write, descr: &str, shape: &[usize]) -> std::io::Result<()> {
    let dims = match shape {
        [n] => format!("{n},"),
        _ => shape
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}").into_bytes();
    // Magic (6), version (2) and length (2), then the dictionary, padding and newline.
    let total = (10 + dict.len() + 1).next_multiple_of(64);
    dict.resize(total - 10 - 1, b' ');
    dict.push(b'\n');
    let len = u16::try_from(dict.len()).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "npy header too long")
    })?;
    w.write_all(b"\x93NUMPY\x01\x00")?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&dict)
}

/// Reads as many bytes as `buf` holds or up to the end of the stream; returns the count.
pub(crate) fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A header error: an I/O error of the reader, or what is wrong with the header.
#[derive(Debug)]
pub(crate) enum HeaderError {
    Io(std::io::Error),
    Bad(String),
}

impl From<String> for HeaderError {
    fn from(s: String) -> Self {
        HeaderError::Bad(s)
    }
}

/// Reads and parses a header from the start of `r`, leaving `r` at the first data byte.
pub(crate) fn read_header(r: &mut dyn Read) -> Result<Header, HeaderError> {
    let mut pre = [0u8; 12];
    let got = read_full(r, &mut pre[..10]).map_err(HeaderError::Io)?;
    if got < 6 || &pre[..6] != b"\x93NUMPY" {
        return Err(format!(
            "not a .npy file (no NumPy magic at byte 0{})",
            if got == 0 { ": it is empty" } else { "" }
        )
        .into());
    }
    if got < 10 {
        return Err(format!("truncated .npy header: the file ends at byte {got}").into());
    }
    let (len, pre_len) = match (pre[6], pre[7]) {
        (1, 0) => (u16::from_le_bytes([pre[8], pre[9]]) as usize, 10),
        (2, 0) | (3, 0) => {
            if read_full(r, &mut pre[10..12]).map_err(HeaderError::Io)? < 2 {
                return Err("truncated .npy header: the file ends at byte 10"
                    .to_string()
                    .into());
            }
            (
                u32::from_le_bytes(pre[8..12].try_into().expect("4 bytes")) as usize,
                12,
            )
        }
        (a, b) => return Err(format!(".npy format version {a}.{b} is not supported").into()),
    };
    if len > MAX_DICT {
        return Err(format!(
            "the .npy header claims {len} bytes, more than the {MAX_DICT} any array needs"
        )
        .into());
    }
    let mut dict = Vec::new();
    r.take(len as u64)
        .read_to_end(&mut dict)
        .map_err(HeaderError::Io)?;
    if dict.len() < len {
        return Err(format!(
            "truncated .npy header: it declares {len} bytes from byte {pre_len}, the file ends at byte {}",
            pre_len + dict.len()
        )
        .into());
    }
    let text = if pre[6] == 3 {
        std::str::from_utf8(&dict).map_err(|e| {
            format!(
                "the .npy header is not UTF-8 (byte {})",
                pre_len + e.valid_up_to()
            )
        })?
    } else {
        if let Some(k) = dict.iter().position(|b| !b.is_ascii()) {
            return Err(format!("the .npy header is not ASCII (byte {})", pre_len + k).into());
        }
        std::str::from_utf8(&dict).expect("ASCII")
    };
    let mut h = parse_dict(text).map_err(|e| format!("bad .npy header: {e}"))?;
    h.len = pre_len + len;
    Ok(h)
}

/// A cursor over the dictionary text.
struct Cursor<'a> {
    s: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.at).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.at += 1;
                Ok(())
            }
            Some(x) => Err(format!(
                "expected `{}` at character {}, found `{}`",
                c as char, self.at, x as char
            )),
            None => Err(format!("expected `{}`, found the end", c as char)),
        }
    }

    /// A quoted string without escapes.
    fn string(&mut self) -> Result<String, String> {
        let q = self.peek().ok_or("expected a string, found the end")?;
        if q != b'\'' && q != b'"' {
            return Err(format!(
                "expected a quoted string at character {}, found `{}`",
                self.at, q as char
            ));
        }
        let start = self.at + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == q)
            .ok_or("unterminated string")?;
        let v = &self.s[start..start + len];
        if v.contains(&b'\\') {
            return Err("escapes in strings are not supported".into());
        }
        self.at = start + len + 1;
        Ok(String::from_utf8_lossy(v).into_owned())
    }

    /// A bare word (`True`, `False`, `None`, a number).
    fn word(&mut self) -> &str {
        self.skip_ws();
        let start = self.at;
        while self.at < self.s.len()
            && (self.s[self.at].is_ascii_alphanumeric() || matches!(self.s[self.at], b'-' | b'+'))
        {
            self.at += 1;
        }
        std::str::from_utf8(&self.s[start..self.at]).expect("ASCII")
    }

    /// A tuple of non-negative integers (Python 2's `3L` suffix allowed).
    fn shape(&mut self) -> Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut v = Vec::new();
        loop {
            if self.peek() == Some(b')') {
                self.at += 1;
                return Ok(v);
            }
            let w = self.word().to_string();
            let digits = w.strip_suffix('L').unwrap_or(&w);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "shape entry `{w}` is not a non-negative integer{}",
                    if w.is_empty() {
                        format!(" (at character {})", self.at)
                    } else {
                        String::new()
                    }
                ));
            }
            let n: usize = digits
                .parse()
                .map_err(|_| format!("shape entry {digits} is too large"))?;
            if v.len() == 32 {
                return Err("more than 32 dimensions".into());
            }
            v.push(n);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b')') => {}
                _ => return Err("bad shape tuple".into()),
            }
        }
    }
}

/// Parses the header dictionary.
fn parse_dict(text: &str) -> Result<Header, String> {
    let mut c = Cursor {
        s: text.as_bytes(),
        at: 0,
    };
    c.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        if c.peek() == Some(b'}') {
            c.at += 1;
            break;
        }
        let key = c.string()?;
        c.expect(b':')?;
        match key.as_str() {
            "descr" if descr.is_none() => {
                if c.peek() == Some(b'[') {
                    return Err("structured dtypes (a list as `descr`) are not supported".into());
                }
                descr = Some(c.string()?);
            }
            "fortran_order" if fortran.is_none() => {
                fortran = Some(match c.word() {
                    "True" => true,
                    "False" => false,
                    w => return Err(format!("fortran_order is `{w}`, not True or False")),
                });
            }
            "shape" if shape.is_none() => shape = Some(c.shape()?),
            "descr" | "fortran_order" | "shape" => return Err(format!("key `{key}` repeated")),
            _ => return Err(format!("unexpected key `{key}`")),
        }
        match c.peek() {
            Some(b',') => c.at += 1,
            Some(b'}') => {}
            Some(x) => return Err(format!("expected `,` or `}}`, found `{}`", x as char)),
            None => return Err("unterminated dictionary".into()),
        }
    }
    if c.peek().is_some() {
        return Err(format!(
            "unexpected text after the dictionary at character {}",
            c.at
        ));
    }
    let descr = descr.ok_or("no `descr` key")?;
    let fortran = fortran.ok_or("no `fortran_order` key")?;
    let shape = shape.ok_or("no `shape` key")?;
    let dtype = Dtype::parse(&descr).ok_or_else(|| format!("unknown dtype `{descr}`"))?;
    Ok(Header {
        descr,
        dtype,
        fortran,
        shape,
        len: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_headers_read_back_aligned_to_64_bytes() {
        for shape in [
            vec![0],
            vec![3],
            vec![0, 1],
            vec![37, 2],
            vec![usize::MAX, 4],
        ] {
            let mut b = Vec::new();
            write_header(&mut b, "<u8", &shape).unwrap();
            assert_eq!(b.len() % 64, 0, "{shape:?}");
            assert_eq!(b.last(), Some(&b'\n'));
            let h = read_header(&mut &b[..]).unwrap_or_else(|_| panic!("{shape:?}"));
            assert_eq!((h.shape, h.fortran, h.len), (shape, false, b.len()));
            assert_eq!(h.dtype, Dtype::parse("<u8").unwrap());
        }
    }

    #[test]
    fn dtypes_parse() {
        let d = Dtype::parse("<f4").unwrap();
        assert_eq!((d.kind, d.size, d.big), (b'f', 4, false));
        let d = Dtype::parse(">i8").unwrap();
        assert_eq!((d.kind, d.size, d.big), (b'i', 8, true));
        assert_eq!(Dtype::parse("|S3").unwrap().size, 3);
        assert_eq!(Dtype::parse("<U3").unwrap().size, 12);
        assert!(Dtype::parse("<").is_none());
        assert!(Dtype::parse("<M8[ns]").is_none());
        assert!(Dtype::parse("<u99999999999999999999").is_none());
        assert_eq!(Dtype::parse("<u8").unwrap().name(), "uint64");
    }

    fn image(dict: &str) -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend((dict.len() as u16).to_le_bytes());
        v.extend(dict.as_bytes());
        v
    }

    #[test]
    fn headers_parse_as_numpy_writes_them() {
        let b = image("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }      \n");
        let h = read_header(&mut &b[..]).unwrap();
        assert_eq!(h.shape, vec![3, 4]);
        assert!(!h.fortran);
        assert_eq!(h.len, b.len());
        let b = image("{\"descr\":\">f8\",\"fortran_order\":True,\"shape\":(5L,)}\n");
        let h = read_header(&mut &b[..]).unwrap();
        assert_eq!(
            (h.shape.clone(), h.fortran, h.dtype.big),
            (vec![5], true, true)
        );
        assert_eq!(h.shape_str(), "(5,)");
        let b = image("{'descr': '|S3', 'fortran_order': False, 'shape': (), }\n");
        assert_eq!(read_header(&mut &b[..]).unwrap().count(), Some(1));
    }

    #[test]
    fn bad_headers_are_errors_not_panics_or_allocations() {
        let bad = |b: &[u8], needle: &str| match read_header(&mut &b[..]) {
            Err(HeaderError::Bad(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
            other => panic!("{other:?}"),
        };
        bad(b"", "it is empty");
        bad(b"PK\x03\x04", "no NumPy magic");
        bad(b"\x93NUMPY\x01\x00\xff", "truncated");
        // Version 2.0 claiming a 4 GB header in a 12-byte file: refused before any allocation.
        bad(b"\x93NUMPY\x02\x00\xff\xff\xff\xff", "more than the 65536");
        bad(
            &image("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }")[..20],
            "truncated",
        );
        bad(b"\x93NUMPY\x09\x09\x00\x00", "version 9.9");
        let nested = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {}3{}, }}",
            "(".repeat(20_000),
            ")".repeat(20_000)
        );
        bad(&image(&nested), "not a non-negative integer");
        let nested = format!(
            "{{'descr': {}'<f4'{}, 'fortran_order': False, 'shape': (3,), }}",
            "[".repeat(20_000),
            "]".repeat(20_000)
        );
        bad(&image(&nested), "structured");
        bad(
            &image("{'descr': '<f4', 'fortran_order': False}"),
            "no `shape`",
        );
        bad(
            &image("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': ()}"),
            "repeated",
        );
        bad(
            &image("{'descr': '<f4', 'fortran_order': 1, 'shape': ()}"),
            "not True or False",
        );
        bad(
            &image("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3)}"),
            "`-1`",
        );
        bad(
            &image("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}"),
            "too large",
        );
        bad(
            &image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
            "unexpected key",
        );
        bad(
            &image("{'descr': 'xyz', 'fortran_order': False, 'shape': (1,)}"),
            "unknown dtype",
        );
    }
}
