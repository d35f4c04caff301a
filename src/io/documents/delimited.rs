//! CSV and TSV documents (RFC 4180, read by the `csv` crate): the header row, a named column
//! per record, and the unclosed-quote check.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::Raw;
use crate::error::{Error, Result};
use crate::io::lines::{LineCapped, io_error, parse_error};

/// A CSV or TSV file being read: the reader, the text column and the record buffer.
pub(super) struct Records {
    reader: csv::Reader<LineCapped<BufReader<File>>>,
    column: usize,
    /// The column of the ids, when asked for.
    id_column: Option<usize>,
    record: csv::ByteRecord,
    /// The delimiter, for the unclosed-quote check.
    delimiter: u8,
    /// The file's length: a record that ends there is checked for an unclosed quote.
    len: u64,
}

impl Records {
    /// Reads the header row of `buf` (the file `path` of `len` bytes) and finds the column
    /// `field`; errors name line 1.
    pub(super) fn open(
        path: &Path,
        buf: BufReader<File>,
        len: u64,
        delimiter: u8,
        field: &str,
    ) -> Result<Records> {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(true)
            .flexible(false)
            .from_reader(LineCapped::new(buf));
        let header = reader.byte_headers().map_err(|e| csv_error(path, e, 1))?;
        if header.is_empty() {
            return Err(parse_error(path, 1, "empty file: no header row"));
        }
        let header = header.clone();
        if reader.position().byte() == len
            && let Some(at) = unclosed_quote(path, 0, 1, delimiter)?
        {
            return Err(unclosed_quote_error(path, at));
        }
        let column = csv_column(path, &header, field)?;
        Ok(Records {
            reader,
            column,
            id_column: None,
            record: csv::ByteRecord::new(),
            delimiter,
            len,
        })
    }

    /// Takes the ids from column `field` of the header row (an error at line 1 if absent).
    pub(super) fn set_id_column(&mut self, path: &Path, field: &str) -> Result<()> {
        let header = self
            .reader
            .byte_headers()
            .map_err(|e| csv_error(path, e, 1))?;
        self.id_column = Some(csv_column(path, &header.clone(), field)?);
        Ok(())
    }

    /// The next record's line, text and id (when asked for); `None` at the end of the file.
    pub(super) fn next_raw(&mut self, path: &Path) -> Option<Result<Raw>> {
        let id_column = self.id_column;
        let line = self.reader.position().line() as usize;
        let read = self.reader.read_byte_record(&mut self.record);
        // A record that runs to the end of the file may be an unclosed quote.
        let (start, start_line) = match &read {
            Err(e) => e
                .position()
                .map_or((None, line), |p| (Some(p.byte()), p.line() as usize)),
            Ok(_) => self
                .record
                .position()
                .map_or((None, line), |p| (Some(p.byte()), p.line() as usize)),
        };
        if !matches!(read, Ok(false))
            && self.reader.position().byte() == self.len
            && let Some(start) = start
        {
            match unclosed_quote(path, start, start_line, self.delimiter) {
                Ok(Some(at)) => return Some(Err(unclosed_quote_error(path, at))),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        match read {
            Ok(false) => None,
            Ok(true) => {
                let line = start_line;
                let column = self.column;
                let field = |c: usize| self.record.get(c).unwrap_or_default();
                let fields = csv_text(field(column), column).and_then(|t| match id_column {
                    None => Ok((line, t, None)),
                    Some(c) => csv_text(field(c), c).map(|id| (line, t, Some(id))),
                });
                Some(fields.map_err(|r| parse_error(path, line, r)))
            }
            Err(e) => Some(Err(csv_error(path, e, line))),
        }
    }
}

/// The index of column `field` in a CSV header, or an error at line 1 listing the columns.
fn csv_column(path: &Path, header: &csv::ByteRecord, field: &str) -> Result<usize> {
    header
        .iter()
        .position(|h| h == field.as_bytes())
        .ok_or_else(|| {
            let names: Vec<String> = header
                .iter()
                .map(|h| format!("`{}`", String::from_utf8_lossy(h)))
                .collect();
            parse_error(
                path,
                1,
                format!(
                    "no column `{field}` in the header row (columns: {})",
                    names.join(", ")
                ),
            )
        })
}

/// Scans the CSV record starting at byte `start` (line `line`) of `path` to the end of the
/// file, by the rules of RFC 4180 with `"` quotes (doubled inside a quoted field): the line
/// where a quoted field opens that is never closed, if one is.
fn unclosed_quote(path: &Path, start: u64, line: usize, delimiter: u8) -> Result<Option<usize>> {
    enum State {
        FieldStart,
        Unquoted,
        Quoted,
        QuoteInQuoted,
    }
    let mut f = File::open(path).map_err(io_error(path))?;
    f.seek(SeekFrom::Start(start)).map_err(io_error(path))?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let (mut state, mut line, mut opened) = (State::FieldStart, line, line);
    let mut buf = [0u8; 1 << 16];
    loop {
        let n = r.read(&mut buf).map_err(io_error(path))?;
        if n == 0 {
            break;
        }
        for &b in &buf[..n] {
            let newline = b == b'\n' || b == b'\r';
            state = match state {
                State::FieldStart | State::Unquoted if newline => return Ok(None),
                State::FieldStart if b == b'"' => {
                    opened = line;
                    State::Quoted
                }
                State::FieldStart | State::Unquoted if b == delimiter => State::FieldStart,
                State::FieldStart | State::Unquoted => State::Unquoted,
                State::Quoted if b == b'"' => State::QuoteInQuoted,
                State::Quoted => State::Quoted,
                State::QuoteInQuoted if b == b'"' => State::Quoted,
                State::QuoteInQuoted if newline => return Ok(None),
                State::QuoteInQuoted if b == delimiter => State::FieldStart,
                State::QuoteInQuoted => State::Unquoted,
            };
            if b == b'\n' {
                line += 1;
            }
        }
    }
    Ok(matches!(state, State::Quoted).then_some(opened))
}

fn unclosed_quote_error(path: &Path, line: usize) -> Error {
    parse_error(
        path,
        line,
        "a quoted field opens here and is never closed (it would run to the end of the file)",
    )
}

/// A `csv` error as ours: I/O errors as [`Error::Io`], the rest as a parse error at the
/// error's line (or `line` when it has none).
fn csv_error(path: &Path, e: csv::Error, line: usize) -> Error {
    let at = e.position().map_or(line, |p| p.line() as usize);
    match e.into_kind() {
        csv::ErrorKind::Io(source) => Error::Io {
            path: path.to_path_buf(),
            source,
        },
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => parse_error(
            path,
            at,
            format!("record has {len} fields, but the header has {expected_len}"),
        ),
        other => parse_error(path, at, format!("{other:?}")),
    }
}

/// A CSV field as UTF-8, or the reason it is not.
fn csv_text(field: &[u8], column: usize) -> std::result::Result<String, String> {
    std::str::from_utf8(field).map(str::to_string).map_err(|e| {
        format!(
            "column {}: invalid UTF-8 at byte {} of the field",
            column + 1,
            e.valid_up_to() + 1
        )
    })
}
