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
//! [`Error::Parse`] naming the file and line; see [`OnBadLine`].

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::input::InputFormat;
use super::lines::{BadLines, LineReader, OnBadLine, io_error, parse_error, utf8};
use crate::error::{Error, Result};

/// One document and the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// Line number, 1-based.
    pub line: usize,
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
    },
}

/// An iterator over the documents of a file, each an `Ok(Document)` or the error of its line
/// (after which iteration continues with the next line). An I/O error ends the iteration.
pub struct Documents {
    path: PathBuf,
    inner: Inner,
    done: bool,
}

/// Opens a text file of format `format` for reading documents. For CSV and TSV, the header
/// row is read and the column looked up here. A vector format is an
/// [`Error::InvalidParameter`].
pub fn documents(path: &Path, format: InputFormat, opts: &TextOptions) -> Result<Documents> {
    let file = File::open(path).map_err(io_error(path))?;
    let buf = BufReader::with_capacity(1 << 16, file);
    let inner = match format {
        InputFormat::Text | InputFormat::JsonLines => Inner::Lines {
            reader: LineReader::new(buf),
            json_field: (format == InputFormat::JsonLines).then(|| opts.field.clone()),
        },
        InputFormat::Csv | InputFormat::Tsv => {
            let mut reader = csv::ReaderBuilder::new()
                .delimiter(if format == InputFormat::Tsv {
                    b'\t'
                } else {
                    b','
                })
                .has_headers(true)
                .flexible(false)
                .from_reader(buf);
            let header = reader.byte_headers().map_err(|e| csv_error(path, e, 1))?;
            if header.is_empty() {
                return Err(parse_error(path, 1, "empty file: no header row"));
            }
            let column = header
                .iter()
                .position(|h| h == opts.field.as_bytes())
                .ok_or_else(|| {
                    let names: Vec<String> = header
                        .iter()
                        .map(|h| format!("`{}`", String::from_utf8_lossy(h)))
                        .collect();
                    parse_error(
                        path,
                        1,
                        format!(
                            "no column `{}` in the header row (columns: {})",
                            opts.field,
                            names.join(", ")
                        ),
                    )
                })?;
            Inner::Csv {
                reader,
                column,
                record: csv::ByteRecord::new(),
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
        done: false,
    })
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

/// The string field `field` of a JSON object line.
fn json_field(line: &str, field: &str) -> std::result::Result<String, String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m);
        format!("not valid JSON (column {}): {msg}", e.column())
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| format!("not a JSON object but {}", json_kind(&v)))?;
    match obj.get(field) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "field `{field}` is {}, not a string",
            json_kind(other)
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

impl Iterator for Documents {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        if self.done {
            return None;
        }
        let path = &self.path;
        let out = match &mut self.inner {
            Inner::Lines {
                reader,
                json_field: field,
            } => loop {
                let (line, bytes) = match reader.next_line() {
                    Ok(Some(x)) => x,
                    Ok(None) => break None,
                    Err(e) => break Some(Err(io_error(path)(e))),
                };
                let text = match utf8(path, line, bytes) {
                    Ok(t) => t,
                    Err(e) => break Some(Err(e)),
                };
                match field {
                    None => {
                        break Some(Ok(Document {
                            line,
                            text: text.to_string(),
                        }));
                    }
                    Some(_) if text.trim().is_empty() => continue,
                    Some(f) => {
                        break Some(
                            json_field(text, f)
                                .map(|text| Document { line, text })
                                .map_err(|r| parse_error(path, line, r)),
                        );
                    }
                }
            },
            Inner::Csv {
                reader,
                column,
                record,
            } => {
                let line = reader.position().line() as usize;
                match reader.read_byte_record(record) {
                    Ok(false) => None,
                    Ok(true) => {
                        let line = record.position().map_or(line, |p| p.line() as usize);
                        let field = record.get(*column).unwrap_or_default();
                        Some(match std::str::from_utf8(field) {
                            Ok(t) => Ok(Document {
                                line,
                                text: t.to_string(),
                            }),
                            Err(e) => Err(parse_error(
                                path,
                                line,
                                format!(
                                    "column {}: invalid UTF-8 at byte {} of the field",
                                    *column + 1,
                                    e.valid_up_to() + 1
                                ),
                            )),
                        })
                    }
                    Err(e) => Some(Err(csv_error(path, e, line))),
                }
            }
        };
        match &out {
            None | Some(Err(Error::Io { .. })) => self.done = true,
            _ => {}
        }
        out
    }
}

impl Documents {
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
    let mut docs = documents(path, format, opts)?;
    let mut bad = BadLines::default();
    let all = docs.next_chunk(usize::MAX, opts.on_bad, &mut bad)?;
    Ok((all, bad))
}
