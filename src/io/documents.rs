//! Text inputs: one document per line (plain text, JSON Lines) or per record (CSV, TSV).
//!
//! - [`Text`](InputFormat::Text): line `n` is document `n`, without its line ending; empty
//!   lines are empty documents (so documents and lines correspond one to one).
//! - [`JsonLines`](InputFormat::JsonLines): each non-blank line is a JSON object whose field
//!   [`TextOptions::field`] (default `text`) is a string; blank lines are skipped. A line that
//!   is not valid JSON, not an object, lacks the field or has a non-string value is a bad line.
//! - [`Csv`](InputFormat::Csv) / [`Tsv`](InputFormat::Tsv): RFC 4180 (quoted fields may span
//!   lines), read by the `csv` crate. The header row is required and must contain the column
//!   [`TextOptions::field`] (default `text`; the first such column if repeated), else opening
//!   fails naming line 1. A record with a different number of fields than the header, or whose
//!   column is not UTF-8, is a bad line; a document's line is the line its record starts on.
//!
//! All are UTF-8 (a leading byte-order mark is ignored). Every bad line is an
//! [`Error::Parse`] naming the file and line; see [`OnBadLine`]. A CSV quote that is never
//! closed (which would make the rest of the file one field) is an error naming the line
//! where it opened.
//!
//! **Row identity.** Each document carries its [`record`](Document::record) number: the
//! 0-based position of its record in the file (text: its line; JSON Lines: among the
//! non-blank lines; CSV: among the records after the header), bad records included, so that
//! it names the same record whatever is skipped. With [`Documents::with_ids`] (or
//! [`read_documents_with_ids`]) each document also carries the value of an id field (JSON
//! Lines: a string, or a number as `serde_json` writes it; CSV: the column's text): a record
//! whose id is missing, empty or already seen is a bad line naming the earlier one.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::input::InputFormat;
use super::lines::{BadLines, LineReader, OnBadLine, io_error, parse_error, utf8};
use crate::error::{Error, Result};

/// One document, the line it starts on and its record number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// Line number, 1-based.
    pub line: usize,
    /// Record number, 0-based, counting every record of the file (see the module docs).
    pub record: usize,
    /// The value of the id field, when one was asked for ([`Documents::with_ids`]).
    pub id: Option<String>,
    /// The text.
    pub text: String,
}

/// Options of [`documents`] and [`read_documents`].
#[derive(Clone, Debug)]
pub struct TextOptions {
    /// The JSON field or CSV column holding the text (default `text`).
    pub field: String,
    /// What [`read_documents`] does with a bad line.
    pub on_bad: OnBadLine,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            field: "text".into(),
            on_bad: OnBadLine::Fail,
        }
    }
}

enum Inner {
    Lines {
        reader: LineReader<BufReader<File>>,
        json_field: Option<String>,
    },
    Csv {
        reader: csv::Reader<BufReader<File>>,
        column: usize,
        record: csv::ByteRecord,
        /// The delimiter, for the unclosed-quote check.
        delimiter: u8,
        /// The file's length: a record that ends there is checked for an unclosed quote.
        len: u64,
    },
}

/// The id field asked for: its name, for CSV its column, and the ids seen with their lines.
struct Ids {
    field: String,
    column: Option<usize>,
    seen: HashMap<String, usize>,
}

/// An iterator over the documents of a file, each an `Ok(Document)` or the error of its line
/// (after which iteration continues with the next line). An I/O error ends the iteration.
pub struct Documents {
    path: PathBuf,
    inner: Inner,
    ids: Option<Ids>,
    /// Records read so far (the next document's record number).
    records: usize,
    done: bool,
}

/// Opens a text file of format `format` for reading documents. For CSV and TSV, the header
/// row is read and the column looked up here. A vector format is an
/// [`Error::InvalidParameter`].
pub fn documents(path: &Path, format: InputFormat, opts: &TextOptions) -> Result<Documents> {
    let file = File::open(path).map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    let buf = BufReader::with_capacity(1 << 16, file);
    let inner = match format {
        InputFormat::Text | InputFormat::JsonLines => Inner::Lines {
            reader: LineReader::new(buf),
            json_field: (format == InputFormat::JsonLines).then(|| opts.field.clone()),
        },
        InputFormat::Csv | InputFormat::Tsv => {
            let delimiter = if format == InputFormat::Tsv {
                b'\t'
            } else {
                b','
            };
            let mut reader = csv::ReaderBuilder::new()
                .delimiter(delimiter)
                .has_headers(true)
                .flexible(false)
                .from_reader(buf);
            let header = reader.byte_headers().map_err(|e| csv_error(path, e, 1))?;
            if header.is_empty() {
                return Err(parse_error(path, 1, "empty file: no header row"));
            }
            let header = header.clone();
            if reader.position().byte() == len {
                if let Some(at) = unclosed_quote(path, 0, 1, delimiter)? {
                    return Err(unclosed_quote_error(path, at));
                }
            }
            let column = csv_column(path, &header, &opts.field)?;
            Inner::Csv {
                reader,
                column,
                record: csv::ByteRecord::new(),
                delimiter,
                len,
            }
        }
        other => {
            return Err(Error::param(
                "format",
                format!("`{other}` is a vector format, not a text format"),
            ));
        }
    };
    Ok(Documents {
        path: path.to_path_buf(),
        inner,
        ids: None,
        records: 0,
        done: false,
    })
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

/// The string field `field` of a JSON object line, and the id field `id` when asked for (a
/// string, or a number as `serde_json` writes it).
fn json_fields(
    line: &str,
    field: &str,
    id: Option<&str>,
) -> std::result::Result<(String, Option<String>), String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m);
        format!("not valid JSON (column {}): {msg}", e.column())
    })?;
    let serde_json::Value::Object(mut obj) = v else {
        return Err(format!("not a JSON object but {}", json_kind(&v)));
    };
    let id = match id {
        None => None,
        Some(name) => Some(match obj.get(name) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(format!(
                    "id field `{name}` is {}, not a string or a number",
                    json_kind(other)
                ));
            }
            None => return Err(format!("no id field `{name}`")),
        }),
    };
    match obj.remove(field) {
        Some(serde_json::Value::String(s)) => Ok((s, id)),
        Some(other) => Err(format!(
            "field `{field}` is {}, not a string",
            json_kind(&other)
        )),
        None => Err(format!("no field `{field}`")),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
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

/// A document read but not yet numbered: its line, text and id.
type Raw = (usize, String, Option<String>);

impl Documents {
    /// The next record, unnumbered; `None` at the end of the file.
    fn next_raw(&mut self) -> Option<Result<Raw>> {
        let path = &self.path;
        let id_field = self.ids.as_ref().map(|i| i.field.as_str());
        match &mut self.inner {
            Inner::Lines {
                reader,
                json_field: field,
            } => loop {
                let (line, bytes) = match reader.next_line() {
                    Ok(Some(x)) => x,
                    Ok(None) => return None,
                    Err(e) => return Some(Err(io_error(path)(e))),
                };
                let text = match utf8(path, line, bytes) {
                    Ok(t) => t,
                    Err(e) => return Some(Err(e)),
                };
                match field {
                    None => return Some(Ok((line, text.to_string(), None))),
                    Some(_) if text.trim().is_empty() => continue,
                    Some(f) => {
                        return Some(
                            json_fields(text, f, id_field)
                                .map(|(text, id)| (line, text, id))
                                .map_err(|r| parse_error(path, line, r)),
                        );
                    }
                }
            },
            Inner::Csv {
                reader,
                column,
                record,
                delimiter,
                len,
            } => {
                let line = reader.position().line() as usize;
                let id_column = self.ids.as_ref().and_then(|i| i.column);
                let read = reader.read_byte_record(record);
                // A record that runs to the end of the file may be an unclosed quote.
                let (start, start_line) = match &read {
                    Err(e) => e
                        .position()
                        .map_or((None, line), |p| (Some(p.byte()), p.line() as usize)),
                    Ok(_) => record
                        .position()
                        .map_or((None, line), |p| (Some(p.byte()), p.line() as usize)),
                };
                if !matches!(read, Ok(false)) && reader.position().byte() == *len {
                    if let Some(start) = start {
                        match unclosed_quote(path, start, start_line, *delimiter) {
                            Ok(Some(at)) => return Some(Err(unclosed_quote_error(path, at))),
                            Ok(None) => {}
                            Err(e) => return Some(Err(e)),
                        }
                    }
                }
                match read {
                    Ok(false) => None,
                    Ok(true) => {
                        let line = start_line;
                        let field = |c: usize| record.get(c).unwrap_or_default();
                        let fields =
                            csv_text(field(*column), *column).and_then(|t| match id_column {
                                None => Ok((line, t, None)),
                                Some(c) => csv_text(field(c), c).map(|id| (line, t, Some(id))),
                            });
                        Some(fields.map_err(|r| parse_error(path, line, r)))
                    }
                    Err(e) => Some(Err(csv_error(path, e, line))),
                }
            }
        }
    }
}

impl Iterator for Documents {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        if self.done {
            return None;
        }
        let out = self.next_raw().map(|raw| {
            let record = self.records;
            self.records += 1;
            let (line, text, id) = raw?;
            if let (Some(ids), Some(id)) = (&mut self.ids, &id) {
                if id.is_empty() {
                    return Err(parse_error(
                        &self.path,
                        line,
                        format!("empty id in `{}`", ids.field),
                    ));
                }
                if let Some(&first) = ids.seen.get(id) {
                    return Err(parse_error(
                        &self.path,
                        line,
                        format!("duplicate id `{id}` (first at line {first})"),
                    ));
                }
                ids.seen.insert(id.clone(), line);
            }
            Ok(Document {
                line,
                record,
                id,
                text,
            })
        });
        match &out {
            None | Some(Err(Error::Io { .. })) => self.done = true,
            _ => {}
        }
        out
    }
}

impl Documents {
    /// Gives each document the value of the field (JSON Lines) or column (CSV, TSV) `field`
    /// as its [`id`](Document::id); a record whose id is missing, empty or a repeat of an
    /// earlier one is a bad line ([`Error::Parse`] naming the line, and for a repeat the line
    /// of the first). A CSV header without the column is an error at line 1; plain text,
    /// which has no fields, is an [`Error::InvalidParameter`].
    pub fn with_ids(mut self, field: &str) -> Result<Documents> {
        let column = match &mut self.inner {
            Inner::Lines {
                json_field: None, ..
            } => {
                return Err(Error::param(
                    "id_field",
                    "plain text has no fields: ids need JSON Lines or CSV",
                ));
            }
            Inner::Lines { .. } => None,
            Inner::Csv { reader, .. } => {
                let header = reader
                    .byte_headers()
                    .map_err(|e| csv_error(&self.path, e, 1))?;
                Some(csv_column(&self.path, &header.clone(), field)?)
            }
        };
        self.ids = Some(Ids {
            field: field.to_string(),
            column,
            seen: HashMap::new(),
        });
        Ok(self)
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Up to `max` next documents (fewer only at the end of the file), applying `on_bad` to bad
    /// lines and counting skipped ones in `bad`: for processing a large file in chunks.
    pub fn next_chunk(
        &mut self,
        max: usize,
        on_bad: OnBadLine,
        bad: &mut BadLines,
    ) -> Result<Vec<Document>> {
        let mut out = Vec::with_capacity(max.min(1 << 16));
        while out.len() < max {
            match self.next() {
                None => break,
                Some(Ok(d)) => out.push(d),
                Some(Err(e)) => bad.handle(on_bad, e)?,
            }
        }
        Ok(out)
    }
}

/// Reads every document of a text file, applying [`TextOptions::on_bad`].
pub fn read_documents(
    path: &Path,
    format: InputFormat,
    opts: &TextOptions,
) -> Result<(Vec<Document>, BadLines)> {
    read_documents_with_ids(path, format, opts, None)
}

/// [`read_documents`], giving each document the value of the field or column `id_field`
/// when it is set ([`Documents::with_ids`]).
pub fn read_documents_with_ids(
    path: &Path,
    format: InputFormat,
    opts: &TextOptions,
    id_field: Option<&str>,
) -> Result<(Vec<Document>, BadLines)> {
    let mut docs = documents(path, format, opts)?;
    if let Some(f) = id_field {
        docs = docs.with_ids(f)?;
    }
    let mut bad = BadLines::default();
    let all = docs.next_chunk(usize::MAX, opts.on_bad, &mut bad)?;
    Ok((all, bad))
}
