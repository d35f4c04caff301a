//! MatrixMarket exchange format (`.mtx`).
//!
//! The banner `%%MatrixMarket matrix <format> <field> <symmetry>` (case-insensitive) selects:
//!
//! - format `coordinate` (sparse, read as CSR) or `array` (dense, column by column);
//! - field `real` (or `double`), `integer`, or `pattern` (coordinate only: every entry is 1);
//!   `complex` is rejected;
//! - symmetry `general`, `symmetric` or `skew-symmetric` (`hermitian` needs complex values and
//!   is rejected). A symmetric coordinate file stores one triangle: every off-diagonal entry
//!   `(i, j, v)` also gives `(j, i, v)` (`(j, i, −v)` when skew), whichever triangle it is in.
//!   A symmetric array file lists the lower triangle column by column (skew: strictly lower).
//!
//! Lines starting with `%` after the banner are comments; blank lines are ignored. The size
//! line is `rows cols entries` (coordinate) or `rows cols` (array). Coordinate entries are
//! `i j [value]`, 1-based; duplicates are summed and each row sorted as by
//! [`sort_and_merge`](crate::signers::sparse::sort_and_merge). Values must be finite as `f32`.
//!
//! Errors name the file and line. Under [`OnBadLine::Skip`] a bad coordinate entry is skipped
//! (and still counts toward the declared number of entries); a bad banner, size line or array
//! value always fails, as does a file with fewer or more entries than declared.
//!
//! **Sizes.** The size line is checked against the bytes that follow it before anything is
//! allocated: an array value takes at least 2 bytes (`0\n`), a coordinate entry at least 4
//! (`1 1\n`), and rows, which need hold no bytes (empty rows of a coordinate matrix, rows of
//! an array with 0 columns), may not outnumber the bytes of the input. Columns must fit `u32`
//! indices (at most 2^32 − 1). Read from standard input (`-`) or any reader
//! ([`read_mtx_from`]), the claims are checked as the data arrives.

use std::io::{BufReader, Read};
use std::path::Path;

use ndarray::{Array2, ShapeBuilder};

use super::csr::{self, MAX_COLS};
use super::input::Vectors;
use super::lines::{BadLines, LineReader, OnBadLine, format_error, io_error, parse_error, utf8};
use super::source::{Source, open};
use crate::error::Result;

/// A parsed MatrixMarket file.
#[derive(Debug)]
pub struct MatrixMarket {
    /// A sparse matrix (coordinate format) or a dense one (array format).
    pub matrix: Vectors,
    /// Entry lines skipped under [`OnBadLine::Skip`].
    pub bad: BadLines,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Symmetry {
    General,
    Symmetric,
    Skew,
}

fn parse_value(field: Field, tok: Option<&str>) -> std::result::Result<f32, String> {
    let tok = tok.ok_or("missing value")?;
    let x = match field {
        Field::Integer => {
            tok.parse::<i64>()
                .map_err(|_| format!("value `{tok}` is not an integer"))? as f64
        }
        _ => tok
            .parse::<f64>()
            .map_err(|_| format!("value `{tok}` is not a number"))?,
    };
    crate::io::float::to_f32(x).map_err(|_| crate::io::float::refused(x))
}

/// Reads a MatrixMarket file (`-`: standard input): a coordinate file as CSR, an array file
/// as a dense matrix.
pub fn read_mtx(path: &Path, on_bad: OnBadLine) -> Result<MatrixMarket> {
    mtx(open(path)?, on_bad)
}

/// As [`read_mtx`], from any reader (`name` is the name errors give).
pub fn read_mtx_from(reader: impl Read, name: &Path, on_bad: OnBadLine) -> Result<MatrixMarket> {
    mtx(Source::stream(reader, name), on_bad)
}

fn mtx(src: Source<'_>, on_bad: OnBadLine) -> Result<MatrixMarket> {
    let path: &Path = &src.name;
    let len = src.len;
    let mut reader = LineReader::new(BufReader::with_capacity(1 << 16, src.reader));
    let perr = |line: usize, reason: String| parse_error(path, line, reason);
    let eof = |reader: &LineReader<_>, what: &str| {
        parse_error(
            path,
            reader.line() + 1,
            format!("unexpected end of file: {what}"),
        )
    };

    // Banner.
    let (line, banner) = reader
        .next_line()
        .map_err(io_error(path))?
        .ok_or_else(|| perr(1, "empty file: no %%MatrixMarket banner".into()))?;
    let banner = utf8(path, line, banner)?.to_ascii_lowercase();
    let words: Vec<&str> = banner.split_ascii_whitespace().collect();
    if words.first() != Some(&"%%matrixmarket") {
        return Err(perr(line, "missing the `%%MatrixMarket` banner".into()));
    }
    if words.len() != 5 || words[1] != "matrix" {
        return Err(perr(
            line,
            format!(
                "banner `{banner}`: expected `%%MatrixMarket matrix <format> <field> <symmetry>`"
            ),
        ));
    }
    let coordinate = match words[2] {
        "coordinate" => true,
        "array" => false,
        f => return Err(perr(line, format!("unknown format `{f}`"))),
    };
    let field = match words[3] {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" if coordinate => Field::Pattern,
        "pattern" => {
            return Err(perr(
                line,
                "`pattern` is only valid in coordinate format".into(),
            ));
        }
        "complex" => return Err(perr(line, "complex matrices are not supported".into())),
        f => return Err(perr(line, format!("unknown field `{f}`"))),
    };
    let symmetry = match words[4] {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::Skew,
        "hermitian" => {
            return Err(perr(
                line,
                "hermitian matrices (complex) are not supported".into(),
            ));
        }
        s => return Err(perr(line, format!("unknown symmetry `{s}`"))),
    };

    // Next non-comment, non-blank line, as text.
    macro_rules! next_data_line {
        () => {{
            loop {
                match reader.next_line().map_err(io_error(path))? {
                    None => break None,
                    Some((n, b)) => {
                        let t = utf8(path, n, b)?.trim();
                        if !t.is_empty() && !t.starts_with('%') {
                            break Some((n, t.to_string()));
                        }
                    }
                }
            }
        }};
    }

    let (line, size) = next_data_line!().ok_or_else(|| eof(&reader, "no size line"))?;
    let nums: Vec<usize> = size
        .split_ascii_whitespace()
        .map(|t| t.parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            perr(
                line,
                format!("size line `{size}` is not non-negative integers that fit 64 bits"),
            )
        })?;
    let want = if coordinate { 3 } else { 2 };
    if nums.len() != want {
        return Err(perr(
            line,
            format!(
                "size line `{size}`: expected {want} numbers ({})",
                if coordinate {
                    "rows cols entries"
                } else {
                    "rows cols"
                }
            ),
        ));
    }
    let (rows, cols) = (nums[0], nums[1]);
    if symmetry != Symmetry::General && rows != cols {
        return Err(perr(
            line,
            format!("a symmetric matrix must be square, not {rows} × {cols}"),
        ));
    }
    // Bytes after the size line, when the input is a file: every claim is checked against
    // them before anything is allocated.
    let rest = len.map(|l| l.saturating_sub(reader.bytes()));
    // Rows hold no bytes of their own (a coordinate matrix can have empty rows, an array
    // matrix zero columns): they may not outnumber the bytes of the input.
    let rows_fit = |bytes: u64| {
        if rows as u64 > bytes {
            Err(perr(
                line,
                format!(
                    "size line `{size}` claims {rows} rows, more than the {bytes} bytes of the input"
                ),
            ))
        } else {
            Ok(())
        }
    };
    let mut bad = BadLines::default();

    if !coordinate {
        let total = match symmetry {
            Symmetry::General => rows.checked_mul(cols),
            Symmetry::Symmetric => rows.checked_mul(rows.saturating_add(1)).map(|x| x / 2),
            Symmetry::Skew => rows.checked_mul(rows.saturating_sub(1)).map(|x| x / 2),
        }
        .ok_or_else(|| perr(line, format!("size line `{size}`: too many values")))?;
        if let Some(rest) = rest {
            // Each value takes at least two bytes ("0\n"), the last one at least one.
            if total as u64 > rest / 2 + 1 {
                return Err(perr(
                    line,
                    format!(
                        "size line `{size}` claims {total} values, but only {rest} bytes follow"
                    ),
                ));
            }
        }
        if let Some(l) = len {
            rows_fit(l)?;
        }
        let mut vals: Vec<f32> = Vec::new();
        vals.reserve_exact(if rest.is_some() {
            total
        } else {
            total.min(1 << 12)
        });
        while let Some((n, t)) = next_data_line!() {
            if vals.len() == total {
                return Err(perr(
                    n,
                    format!("more values than the {total} of a {rows} × {cols} array"),
                ));
            }
            let mut toks = t.split_ascii_whitespace();
            let v = parse_value(field, toks.next()).map_err(|r| perr(n, r))?;
            if toks.next().is_some() {
                return Err(perr(n, format!("`{t}`: expected one value per line")));
            }
            vals.push(v);
        }
        if vals.len() != total {
            return Err(eof(&reader, &format!("{} of {total} values", vals.len())));
        }
        rows_fit(reader.bytes())?;
        let a = match symmetry {
            Symmetry::General => Array2::from_shape_vec((rows, cols).f(), vals)
                .map_err(|e| format_error(path, format!("{rows} × {cols}: {e}")))?
                .as_standard_layout()
                .into_owned(),
            _ => {
                let mut a = Array2::<f32>::zeros((rows, cols));
                let from = usize::from(symmetry == Symmetry::Skew);
                let mut k = 0;
                for j in 0..cols {
                    for i in j + from..rows {
                        let v = vals[k];
                        k += 1;
                        a[(i, j)] = v;
                        a[(j, i)] = if symmetry == Symmetry::Skew { -v } else { v };
                    }
                }
                a
            }
        };
        return Ok(MatrixMarket {
            matrix: Vectors::Dense(a),
            bad,
        });
    }

    let nnz = nums[2];
    if cols as u64 > MAX_COLS {
        return Err(perr(
            line,
            format!("{cols} columns do not fit 32-bit column indices (at most {MAX_COLS})"),
        ));
    }
    if let Some(rest) = rest {
        // Each entry takes at least four bytes ("1 1\n"), the last one at least three.
        if nnz as u64 > rest / 4 + 1 {
            return Err(perr(
                line,
                format!("size line `{size}` claims {nnz} entries, but only {rest} bytes follow"),
            ));
        }
    }
    if let Some(l) = len {
        rows_fit(l)?;
    }
    let sym = if symmetry == Symmetry::General { 1 } else { 2 };
    let cap = if rest.is_some() {
        nnz
    } else {
        nnz.min(1 << 12)
    } * sym;
    let (mut r, mut c, mut v): (Vec<usize>, Vec<u32>, Vec<f32>) = (
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
    );
    let mut seen = 0usize;
    while let Some((n, t)) = next_data_line!() {
        if seen == nnz {
            return Err(perr(n, format!("more entries than the {nnz} declared")));
        }
        seen += 1;
        let entry = (|| {
            let mut toks = t.split_ascii_whitespace();
            let mut index = |what: &str, max: usize| -> std::result::Result<usize, String> {
                let tok = toks.next().ok_or(format!("missing {what} index"))?;
                match tok.parse::<usize>() {
                    Ok(x) if (1..=max).contains(&x) => Ok(x - 1),
                    Ok(x) => Err(format!("{what} index {x} is out of range 1..={max}")),
                    Err(_) => Err(format!("{what} index `{tok}` is not a positive integer")),
                }
            };
            let i = index("row", rows)?;
            let j = index("column", cols)?;
            let x = if field == Field::Pattern {
                1.0
            } else {
                parse_value(field, toks.next())?
            };
            if let Some(extra) = toks.next() {
                return Err(format!("unexpected token `{extra}` after the entry"));
            }
            if symmetry == Symmetry::Skew && i == j {
                return Err(format!(
                    "diagonal entry ({}, {}) in a skew-symmetric matrix",
                    i + 1,
                    j + 1
                ));
            }
            Ok((i, j, x))
        })();
        match entry {
            Ok((i, j, x)) => {
                r.push(i);
                c.push(j as u32);
                v.push(x);
                if i != j && symmetry != Symmetry::General {
                    r.push(j);
                    c.push(i as u32);
                    v.push(if symmetry == Symmetry::Skew { -x } else { x });
                }
            }
            Err(reason) => bad.handle(on_bad, perr(n, reason))?,
        }
    }
    if seen != nnz {
        return Err(eof(&reader, &format!("{seen} of {nnz} declared entries")));
    }
    rows_fit(reader.bytes())?;
    let m = csr::from_coo(rows, cols, &r, &c, &v).map_err(|e| format_error(path, e))?;
    Ok(MatrixMarket {
        matrix: Vectors::Sparse(m),
        bad,
    })
}
