//! SVMlight / libsvm text: one sparse vector per line, `label idx:val idx:val ... # comment`.
//!
//! - The label is any number (kept as `f64`). A `qid:n` token after it is accepted and ignored.
//! - Features are `index:value`; values must be finite as `f32`. Within a line, indices need
//!   not be sorted: they are sorted and duplicates summed as by
//!   [`sort_and_merge`].
//! - Everything from `#` to the end of the line is a comment. Blank and comment-only lines
//!   are not rows (so [`Svmlight::lines`] maps each row to its line).
//! - **Index base** ([`IndexBase`]): files are 1-based by convention; `Auto` (the default)
//!   takes the file as 0-based if any index `0` occurs in it and 1-based otherwise (as
//!   scikit-learn's `zero_based="auto"`). Column `c` of the matrix is index `c` (0-based) or
//!   `c + 1` (1-based).
//! - The number of columns is `max index + 1` (after the base shift) or, when given, `dim`,
//!   which every index must be below.
//!
//! - Indices must fit `u32` columns: the largest column is 2^32 − 2 (index 2^32 − 1 in a
//!   1-based file), so that the number of columns fits too.
//!
//! Bad lines are [`Error::Parse`](crate::Error::Parse) errors naming the file, the line and the token; see
//! [`OnBadLine`] for skipping them. Rows are parsed straight into the final arrays (a regular
//! file's lines are counted first, so that the per-row arrays are allocated once); standard
//! input (`-`) and any reader ([`read_svmlight_from`]) stream.

use std::io::{BufRead, BufReader, Read, Seek};
use std::path::Path;

use super::csr::{self, Csr, MAX_COLS};
use super::lines::{BadLines, LineReader, OnBadLine, format_error, io_error, parse_error, utf8};
use super::source::{Source, open};
use crate::error::Result;
use crate::signers::sparse::sort_and_merge;

/// Whether feature indices in a file start at 0 or at 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexBase {
    /// 0-based if any index 0 occurs in the file, otherwise 1-based (the default).
    #[default]
    Auto,
    /// Indices start at 0.
    Zero,
    /// Indices start at 1 (the SVMlight convention); an index 0 is an error.
    One,
}

/// Options of [`read_svmlight`].
#[derive(Clone, Debug, Default)]
pub struct SvmlightOptions {
    /// Index base (default [`IndexBase::Auto`]).
    pub base: IndexBase,
    /// Number of columns; `None` takes the largest index + 1.
    pub dim: Option<usize>,
    /// What to do with a bad line.
    pub on_bad: OnBadLine,
}

/// A parsed SVMlight file.
#[derive(Debug)]
pub struct Svmlight {
    /// The vectors, one row per data line.
    pub matrix: Csr,
    /// The label of each row.
    pub labels: Vec<f64>,
    /// The line number (1-based) of each row.
    pub lines: Vec<usize>,
    /// Whether the indices were read as 0-based.
    pub zero_based: bool,
    /// Lines skipped under [`OnBadLine::Skip`].
    pub bad: BadLines,
}

/// Parses one line into `row` (indices as written, not yet shifted to the base; values);
/// `Ok(None)` for a blank or comment-only line, `Ok(Some(label))` otherwise.
fn parse_line(
    path: &Path,
    line: usize,
    text: &str,
    base: IndexBase,
    ids: &mut Vec<u64>,
    vals: &mut Vec<f32>,
) -> Result<Option<f64>> {
    let err = |reason: String| parse_error(path, line, reason);
    ids.clear();
    vals.clear();
    let text = text.split_once('#').map_or(text, |(a, _)| a);
    let mut toks = text.split_ascii_whitespace();
    let Some(label) = toks.next() else {
        return Ok(None);
    };
    let label: f64 = label.parse().map_err(|_| {
        err(format!(
            "label `{label}` is not a number{}",
            if label.contains(',') {
                " (multi-label files are not supported)"
            } else if label.contains(':') {
                " (the line must start with a label)"
            } else {
                ""
            }
        ))
    })?;
    let mut sorted = true;
    for (k, tok) in toks.enumerate() {
        let Some((i, v)) = tok.split_once(':') else {
            return Err(err(format!("token `{tok}` is not `index:value`")));
        };
        if k == 0 && i == "qid" {
            v.parse::<u64>()
                .map_err(|_| err(format!("token `{tok}`: qid `{v}` is not an integer")))?;
            continue;
        }
        let idx: u64 = i.parse().map_err(|_| {
            err(format!(
                "token `{tok}`: index `{i}` is not a non-negative integer"
            ))
        })?;
        if idx == 0 && base == IndexBase::One {
            return Err(err(format!("token `{tok}`: index 0 in a 1-based file")));
        }
        // The largest column is u32::MAX - 1, index u32::MAX when 1-based.
        if idx > MAX_COLS {
            return Err(err(format!(
                "token `{tok}`: index {idx} does not fit 32-bit column indices"
            )));
        }
        let x: f64 = v
            .parse()
            .map_err(|_| err(format!("token `{tok}`: value `{v}` is not a number")))?;
        let x = crate::io::float::to_f32(x)
            .map_err(|_| err(format!("token `{tok}`: {}", crate::io::float::refused(x))))?;
        if ids.last().is_some_and(|&p| p >= idx) {
            sorted = false;
        }
        ids.push(idx);
        vals.push(x);
    }
    if !sorted {
        sort_and_merge(ids, vals);
    }
    Ok(Some(label))
}

/// Reads an SVMlight / libsvm file (`-`: standard input) into a CSR matrix and its labels.
pub fn read_svmlight(path: &Path, opts: &SvmlightOptions) -> Result<Svmlight> {
    let mut src = open(path)?;
    if src.len.is_some() {
        // A regular file: count its lines first, so that the per-row arrays are allocated
        // once and exactly.
        let mut file = std::fs::File::open(path).map_err(io_error(path))?;
        let mut lines = 1usize;
        let mut buf = BufReader::with_capacity(1 << 16, &mut file);
        loop {
            let b = buf.fill_buf().map_err(io_error(path))?;
            if b.is_empty() {
                break;
            }
            lines += b.iter().filter(|&&c| c == b'\n').count();
            let n = b.len();
            buf.consume(n);
        }
        drop(buf);
        file.rewind().map_err(io_error(path))?;
        src.reader = Box::new(file);
        return svmlight(src, opts, lines);
    }
    svmlight(src, opts, 1 << 12)
}

/// As [`read_svmlight`], from any reader (`name` is the name errors give).
pub fn read_svmlight_from(
    reader: impl Read,
    name: &Path,
    opts: &SvmlightOptions,
) -> Result<Svmlight> {
    svmlight(Source::stream(reader, name), opts, 1 << 12)
}

/// Reads rows straight into the final arrays; `rows_hint` rows are allocated first.
fn svmlight(src: Source<'_>, opts: &SvmlightOptions, rows_hint: usize) -> Result<Svmlight> {
    let path: &Path = &src.name;
    let mut reader = LineReader::new(BufReader::with_capacity(1 << 16, src.reader));
    let mut bad = BadLines::default();
    let mut indptr: Vec<usize> = Vec::with_capacity(rows_hint + 1);
    let mut labels: Vec<f64> = Vec::with_capacity(rows_hint);
    let mut lines: Vec<usize> = Vec::with_capacity(rows_hint);
    // Indices as written (raw), shifted to the base once it is known.
    let mut indices: Vec<u32> = Vec::new();
    let mut data: Vec<f32> = Vec::new();
    let (mut ids, mut vals) = (Vec::new(), Vec::new());
    let mut saw_zero = false;
    indptr.push(0);
    while let Some((line, bytes)) = reader.next_line().map_err(io_error(path))? {
        let parsed = utf8(path, line, bytes)
            .and_then(|t| parse_line(path, line, t, opts.base, &mut ids, &mut vals));
        match parsed {
            Ok(Some(label)) => {
                saw_zero |= ids.first() == Some(&0);
                indices.extend(ids.iter().map(|&i| i as u32));
                data.extend_from_slice(&vals);
                indptr.push(indices.len());
                labels.push(label);
                lines.push(line);
            }
            Ok(None) => {}
            Err(e) => bad.handle(opts.on_bad, e)?,
        }
    }
    let zero_based = match opts.base {
        IndexBase::Zero => true,
        IndexBase::One => false,
        IndexBase::Auto => saw_zero,
    };
    let shift = u32::from(!zero_based);
    // Columns allowed: `dim`, or as many as u32 indices hold.
    let limit = opts.dim.map_or(MAX_COLS, |d| (d as u64).min(MAX_COLS + 1));
    let out_of_range = |last: u32| (last - shift) as u64 >= limit;
    let too_big = |r: usize| {
        let (a, b) = (indptr[r], indptr[r + 1]);
        b > a && out_of_range(indices[b - 1])
    };
    if (0..labels.len()).any(too_big) {
        // Rows whose largest index is out of range: fail on the first, or drop them all.
        let mut keep = Vec::with_capacity(labels.len());
        for r in 0..labels.len() {
            if too_big(r) {
                let last = indices[indptr[r + 1] - 1];
                let reason = match opts.dim {
                    Some(d) => format!(
                        "index {last} is out of range for {d} columns ({}-based)",
                        if zero_based { 0 } else { 1 }
                    ),
                    None => format!("index {last} does not fit 32-bit column indices"),
                };
                bad.handle(opts.on_bad, parse_error(path, lines[r], reason))?;
                keep.push(false);
            } else {
                keep.push(true);
            }
        }
        let (mut w, mut wr) = (0, 0);
        for r in 0..labels.len() {
            let (a, b) = (indptr[r], indptr[r + 1]);
            if keep[r] {
                indices.copy_within(a..b, w);
                data.copy_within(a..b, w);
                w += b - a;
                labels[wr] = labels[r];
                lines[wr] = lines[r];
                wr += 1;
                indptr[wr] = w;
            }
        }
        indices.truncate(w);
        data.truncate(w);
        labels.truncate(wr);
        lines.truncate(wr);
        indptr.truncate(wr + 1);
    }
    let mut cols = 0u64;
    for r in 0..labels.len() {
        if indptr[r + 1] > indptr[r] {
            cols = cols.max((indices[indptr[r + 1] - 1] - shift) as u64 + 1);
        }
    }
    if shift == 1 {
        for i in &mut indices {
            *i -= 1;
        }
    }
    let cols = opts.dim.map_or(cols as usize, |d| d);
    if cols as u64 > MAX_COLS {
        return Err(format_error(
            path,
            format!("{cols} columns do not fit 32-bit column indices (at most {MAX_COLS})"),
        ));
    }
    let matrix = csr::finish(labels.len(), cols, indptr, indices, data)
        .map_err(|e| format_error(path, e))?;
    Ok(Svmlight {
        matrix,
        labels,
        lines,
        zero_based,
        bad,
    })
}
