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
//! JSON Lines, CSV and TSV need the crate's `documents` feature (on by default: it brings in
//! `serde_json` and `csv`); plain text needs none.
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
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::input::InputFormat;
use super::lines::{BadLines, LineReader, OnBadLine, io_error, parse_error, utf8};
use crate::error::{Error, Result};

#[cfg(feature = "documents")]
mod delimited;
#[cfg(feature = "documents")]
mod json;

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
    /// Plain text: every line a document.
    Lines(LineReader<BufReader<File>>),
    /// JSON Lines: the text in field `field` of each non-blank line.
    #[cfg(feature = "documents")]
    Json {
        reader: LineReader<BufReader<File>>,
        field: String,
    },
    /// CSV or TSV records.
    #[cfg(feature = "documents")]
    Csv(delimited::Records),
}

/// The id field asked for: its name and the ids seen with their lines.
struct Ids {
    field: String,
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
/// [`Error::InvalidParameter`]; JSON Lines, CSV and TSV without the crate's `documents`
/// feature an [`Error::Unsupported`].
pub fn documents(path: &Path, format: InputFormat, opts: &TextOptions) -> Result<Documents> {
    let file = File::open(path).map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    let buf = BufReader::with_capacity(1 << 16, file);
    let inner = match format {
        InputFormat::Text => Inner::Lines(LineReader::new(buf)),
        #[cfg(feature = "documents")]
        InputFormat::JsonLines => Inner::Json {
            reader: LineReader::new(buf),
            field: opts.field.clone(),
        },
        #[cfg(feature = "documents")]
        InputFormat::Csv | InputFormat::Tsv => {
            let delimiter = if format == InputFormat::Tsv {
                b'\t'
            } else {
                b','
            };
            Inner::Csv(delimited::Records::open(
                path,
                buf,
                len,
                delimiter,
                &opts.field,
            )?)
        }
        #[cfg(not(feature = "documents"))]
        InputFormat::JsonLines | InputFormat::Csv | InputFormat::Tsv => {
            let _ = (len, opts);
            return Err(Error::Unsupported(format!(
                "reading {format} documents needs serde_json and csv: build simlsh with its \
                 `documents` feature"
            )));
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

/// The next line of `reader` as UTF-8 with its number; `None` at the end of the file.
fn next_text<'a>(
    reader: &'a mut LineReader<BufReader<File>>,
    path: &Path,
) -> Option<Result<(usize, &'a str)>> {
    match reader.next_line() {
        Ok(Some((line, bytes))) => Some(utf8(path, line, bytes).map(|t| (line, t))),
        Ok(None) => None,
        Err(e) => Some(Err(io_error(path)(e))),
    }
}

/// A document read but not yet numbered: its line, text and id.
pub(super) type Raw = (usize, String, Option<String>);

impl Documents {
    /// The next record, unnumbered; `None` at the end of the file.
    fn next_raw(&mut self) -> Option<Result<Raw>> {
        let path = &self.path;
        match &mut self.inner {
            Inner::Lines(reader) => {
                Some(next_text(reader, path)?.map(|(line, text)| (line, text.to_string(), None)))
            }
            #[cfg(feature = "documents")]
            Inner::Json { reader, field } => {
                let id_field = self.ids.as_ref().map(|i| i.field.as_str());
                loop {
                    let (line, text) = match next_text(reader, path)? {
                        Ok(x) => x,
                        Err(e) => return Some(Err(e)),
                    };
                    if !text.trim().is_empty() {
                        return Some(
                            json::fields(text, field, id_field)
                                .map(|(text, id)| (line, text, id))
                                .map_err(|r| parse_error(path, line, r)),
                        );
                    }
                }
            }
            #[cfg(feature = "documents")]
            Inner::Csv(records) => records.next_raw(path),
        }
    }
}

impl Documents {
    /// Checks that the format has fields and, for CSV, finds the id column.
    fn check_id_field(&mut self, field: &str) -> Result<()> {
        match &mut self.inner {
            Inner::Lines(_) => Err(Error::param(
                "id_field",
                format!(
                    "plain text has no fields: ids need JSON Lines or CSV (id field `{field}`)"
                ),
            )),
            #[cfg(feature = "documents")]
            Inner::Json { .. } => Ok(()),
            #[cfg(feature = "documents")]
            Inner::Csv(records) => records.set_id_column(&self.path, field),
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
                if let Err(why) = check_id(id) {
                    return Err(parse_error(
                        &self.path,
                        line,
                        format!("id {id:?} in `{}` {why}", ids.field),
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
    /// as its [`id`](Document::id); a record whose id is missing, empty, a repeat of an
    /// earlier one, or holds a tab or a line break ([`check_id`]) is a bad line
    /// ([`Error::Parse`] naming the line and the id, and for a repeat the line of the
    /// first). A CSV header without the column is an error at line 1; plain text,
    /// which has no fields, is an [`Error::InvalidParameter`].
    pub fn with_ids(mut self, field: &str) -> Result<Documents> {
        self.check_id_field(field)?;
        self.ids = Some(Ids {
            field: field.to_string(),
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

/// Checks that an id can be written in a tab-separated output as one field: an id holding a
/// tab, a line feed or a carriage return would forge fields or rows of every TSV output
/// naming it (pairs that pipelines act on), so it is refused where ids are read. The error is
/// the reason, to follow the id in a message.
pub fn check_id(id: &str) -> std::result::Result<(), &'static str> {
    if id.contains(['\t', '\n', '\r']) {
        return Err(
            "holds a tab or a line break, which would forge fields or rows of the \
                    tab-separated outputs",
        );
    }
    Ok(())
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
