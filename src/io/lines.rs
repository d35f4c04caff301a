//! What line-oriented readers do with a bad line: fail, or skip it and count it.
//!
//! Every reader of a line-oriented format (SVMlight, MatrixMarket entries, plain text, JSON
//! Lines, CSV) reports a bad line as [`Error::Parse`], naming the file, the line (1-based) and
//! the reason. With [`OnBadLine::Fail`] (the default) the first such error is returned; with
//! [`OnBadLine::Skip`] the line is dropped, counted in [`BadLines`], and reading goes on. Only
//! parse errors are skippable: an I/O error, a bad header or a structural error of the whole
//! file (a MatrixMarket entry count that does not match) always fails.

use std::io::{BufRead, Read};

use crate::error::{Error, Result};

/// How a line-oriented reader handles a line it cannot parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnBadLine {
    /// Return the first parse error (the default).
    #[default]
    Fail,
    /// Drop the line, count it and keep the first [`BadLines::KEPT`] errors.
    Skip,
}

/// The lines a reader skipped under [`OnBadLine::Skip`]: how many, and the first few errors.
#[derive(Debug, Default)]
pub struct BadLines {
    /// Number of lines skipped.
    pub count: usize,
    /// The first [`BadLines::KEPT`] errors, in file order (each an [`Error::Parse`]).
    pub first: Vec<Error>,
}

impl BadLines {
    /// Number of errors kept in [`first`](BadLines::first).
    pub const KEPT: usize = 10;

    /// True when no line was skipped.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Applies `policy` to `err`: returns it under [`OnBadLine::Fail`] or when it is not an
    /// [`Error::Parse`]; otherwise counts it (keeping the first few) and returns `Ok`.
    pub fn handle(&mut self, policy: OnBadLine, err: Error) -> Result<()> {
        match (policy, &err) {
            (OnBadLine::Skip, Error::Parse { .. }) => {
                self.count += 1;
                if self.first.len() < Self::KEPT {
                    self.first.push(err);
                }
                Ok(())
            }
            _ => Err(err),
        }
    }
}

/// A parse error at `line` of `path`.
pub(crate) fn parse_error(path: &std::path::Path, line: usize, reason: impl Into<String>) -> Error {
    Error::Parse {
        path: path.to_path_buf(),
        line,
        reason: reason.into(),
    }
}

/// An I/O error concerning `path`.
pub(crate) fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A format error concerning `path`.
pub(crate) fn format_error(path: &std::path::Path, reason: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// The longest line a [`LineReader`] returns: a longer one (a file without line breaks, or
/// `/dev/zero`) is an error after this many bytes rather than a buffer that grows until memory
/// runs out.
pub(crate) const MAX_LINE: usize = 256 << 20;

/// Reads a file line by line as raw bytes, giving 1-based line numbers and lines without
/// their `\n` / `\r\n` ending; a UTF-8 byte-order mark at the start of the file is dropped.
/// A line longer than [`MAX_LINE`] bytes (or the reader's own limit) is an
/// [`InvalidData`](std::io::ErrorKind::InvalidData) error naming it.
pub(crate) struct LineReader<R> {
    inner: R,
    line: usize,
    bytes: u64,
    buf: Vec<u8>,
    max: usize,
}

impl<R: std::io::BufRead> LineReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self::with_max(inner, MAX_LINE)
    }

    /// A reader whose lines are at most `max` bytes (files of short lines: an IDF table, a
    /// list of stop words).
    pub(crate) fn with_max(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            line: 0,
            bytes: 0,
            buf: Vec::new(),
            max,
        }
    }

    /// The next line as `(number, bytes)`, `None` at the end of the file.
    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<(usize, &[u8])>> {
        self.buf.clear();
        let n = (&mut self.inner)
            .take(self.max as u64 + 1)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        self.bytes += n as u64;
        if n > self.max && self.buf.last() != Some(&b'\n') {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "line {} is longer than {} bytes (no line break: not a text file?)",
                    self.line, self.max
                ),
            ));
        }
        let mut b = &self.buf[..];
        if self.line == 1 {
            b = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
        }
        b = b.strip_suffix(b"\n").unwrap_or(b);
        b = b.strip_suffix(b"\r").unwrap_or(b);
        Ok(Some((self.line, b)))
    }

    /// The number of the last line returned.
    pub(crate) fn line(&self) -> usize {
        self.line
    }

    /// Bytes read so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// A reader that fails once more than `max` bytes pass without a line feed: the line cap of
/// readers that split lines themselves (the `csv` crate, whose buffer would otherwise grow
/// with a line until memory runs out, as on `/dev/zero`).
#[cfg(any(feature = "documents", test))]
pub(crate) struct LineCapped<R> {
    inner: R,
    /// Bytes since the last line feed.
    run: usize,
    max: usize,
}

#[cfg(any(feature = "documents", test))]
impl<R> LineCapped<R> {
    /// Lines of at most [`MAX_LINE`] bytes.
    #[cfg(feature = "documents")]
    pub(crate) fn new(inner: R) -> Self {
        Self::with_max(inner, MAX_LINE)
    }

    /// Lines of at most `max` bytes.
    pub(crate) fn with_max(inner: R, max: usize) -> Self {
        LineCapped { inner, run: 0, max }
    }
}

#[cfg(any(feature = "documents", test))]
impl<R: Read> Read for LineCapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let got = &buf[..n];
        self.run = match got.iter().rposition(|&b| b == b'\n') {
            Some(p) => n - 1 - p,
            None => self.run + n,
        };
        if self.run > self.max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "a line is longer than {} bytes (no line break: not a text file?)",
                    self.max
                ),
            ));
        }
        Ok(n)
    }
}

/// The line's bytes as UTF-8, or a parse error naming the line and the byte column.
pub(crate) fn utf8<'a>(path: &std::path::Path, line: usize, b: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(b).map_err(|e| {
        parse_error(
            path,
            line,
            format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_counts_parse_errors_and_fails_on_others() {
        let p = std::path::Path::new("f.txt");
        let mut bad = BadLines::default();
        for line in 1..=12 {
            bad.handle(OnBadLine::Skip, parse_error(p, line, "x"))
                .unwrap();
        }
        assert_eq!(bad.count, 12);
        assert_eq!(bad.first.len(), BadLines::KEPT);
        assert!(matches!(bad.first[0], Error::Parse { line: 1, .. }));
        assert!(
            bad.handle(OnBadLine::Skip, format_error(p, "structural"))
                .is_err()
        );
        assert!(
            BadLines::default()
                .handle(OnBadLine::Fail, parse_error(p, 3, "x"))
                .is_err()
        );
    }

    #[test]
    fn line_capped_reads_lines_up_to_the_cap_and_fails_beyond() {
        let mut ok = String::new();
        LineCapped::with_max(&b"abcd\nefgh\nij"[..], 4)
            .read_to_string(&mut ok)
            .unwrap();
        assert_eq!(ok, "abcd\nefgh\nij");
        let mut out = Vec::new();
        let e = LineCapped::with_max(std::io::repeat(b'x').take(1 << 20), 1000)
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(out.len() < 1 << 17, "read {} bytes", out.len());
    }

    #[test]
    fn line_reader_strips_endings_and_bom() {
        let data = b"\xEF\xBB\xBFone\r\ntwo\n\nlast";
        let mut r = LineReader::new(&data[..]);
        let mut got = Vec::new();
        while let Some((n, l)) = r.next_line().unwrap() {
            got.push((n, l.to_vec()));
        }
        assert_eq!(
            got,
            vec![
                (1, b"one".to_vec()),
                (2, b"two".to_vec()),
                (3, b"".to_vec()),
                (4, b"last".to_vec())
            ]
        );
    }
}
