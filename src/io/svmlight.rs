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
//! Bad lines are [`Error::Parse`](crate::Error::Parse) errors naming the file, the line and the token; see
//! [`OnBadLine`] for skipping them.

use std::io::BufReader;
use std::path::Path;

use super::lines::{BadLines, LineReader, OnBadLine, io_error, parse_error, utf8};
use super::npy::Csr;
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

struct Row {
    line: usize,
    label: f64,
    ids: Vec<u64>,
    vals: Vec<f32>,
}

/// Parses one line; `Ok(None)` for a blank or comment-only line.
fn parse_line(path: &Path, line: usize, text: &str, base: IndexBase) -> Result<Option<Row>> {
    let err = |reason: String| parse_error(path, line, reason);
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
    let (mut ids, mut vals) = (Vec::new(), Vec::new());
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
        let x: f64 = v
            .parse()
            .map_err(|_| err(format!("token `{tok}`: value `{v}` is not a number")))?;
        if !(x as f32).is_finite() {
            return Err(err(format!(
                "token `{tok}`: value {x} is not finite (as float32)"
            )));
        }
        if ids.last().is_some_and(|&p| p >= idx) {
            sorted = false;
        }
        ids.push(idx);
        vals.push(x as f32);
    }
    if !sorted {
        sort_and_merge(&mut ids, &mut vals);
    }
    Ok(Some(Row {
        line,
        label,
        ids,
        vals,
    }))
}

/// Reads an SVMlight / libsvm file into a CSR matrix and its labels.
pub fn read_svmlight(path: &Path, opts: &SvmlightOptions) -> Result<Svmlight> {
    let file = std::fs::File::open(path).map_err(io_error(path))?;
    let mut reader = LineReader::new(BufReader::with_capacity(1 << 16, file));
    let mut bad = BadLines::default();
    let mut rows = Vec::new();
    let mut saw_zero = false;
    while let Some((line, bytes)) = reader.next_line().map_err(io_error(path))? {
        let parsed = utf8(path, line, bytes).and_then(|t| parse_line(path, line, t, opts.base));
        match parsed {
            Ok(Some(row)) => {
                saw_zero |= row.ids.first() == Some(&0);
                rows.push(row);
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
    let shift = u64::from(!zero_based);
    let limit = opts.dim.map_or(u32::MAX as u64 + 1, |d| d as u64);
    let mut indptr = Vec::with_capacity(rows.len() + 1);
    let mut indices = Vec::new();
    let mut data = Vec::new();
    let mut labels = Vec::with_capacity(rows.len());
    let mut lines = Vec::with_capacity(rows.len());
    let mut cols = 0u64;
    indptr.push(0);
    for row in rows {
        if let Some(&last) = row.ids.last() {
            let c = last - shift;
            if c >= limit {
                let reason = match opts.dim {
                    Some(d) => format!(
                        "index {last} is out of range for {d} columns ({}-based)",
                        if zero_based { 0 } else { 1 }
                    ),
                    None => format!("index {last} does not fit 32-bit column indices"),
                };
                bad.handle(opts.on_bad, parse_error(path, row.line, reason))?;
                continue;
            }
            cols = cols.max(c + 1);
        }
        indices.extend(row.ids.iter().map(|&i| (i - shift) as u32));
        data.extend_from_slice(&row.vals);
        indptr.push(indices.len());
        labels.push(row.label);
        lines.push(row.line);
    }
    let cols = opts.dim.map_or(cols as usize, |d| d);
    let matrix = Csr::try_new((labels.len(), cols), indptr, indices, data)
        .expect("rows sorted and within the column count by construction");
    Ok(Svmlight {
        matrix,
        labels,
        lines,
        zero_based,
        bad,
    })
}
