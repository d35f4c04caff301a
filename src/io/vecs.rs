//! `.fvecs` / `.ivecs` / `.bvecs` (the Texmex layout of ANN benchmarks): each row is a
//! little-endian `i32` dimension `d`, then `d` values (`f32`, `i32` or `u8`).
//!
//! Every row must have the dimension of the first, and every `.fvecs` value must be finite.
//! The first row's dimension is checked against the file's size before the matrix is
//! allocated; read from standard input (`-`) or any [`Read`] ([`read_vecs_from`]), the matrix
//! grows as rows arrive.

use std::io::Read;
use std::path::Path;

use ndarray::Array2;

use super::lines::format_error;
use super::npy::header::read_full;
use super::source::{Source, open};
use crate::error::{Error, Result};

/// Element types of the Texmex formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VecsKind {
    /// `.fvecs`: `f32` values.
    F32,
    /// `.ivecs`: `i32` values.
    I32,
    /// `.bvecs`: `u8` values.
    U8,
}

impl VecsKind {
    /// The kind for a file extension (`fvecs`, `ivecs`, `bvecs`).
    pub fn from_extension(ext: &str) -> Option<Self> {
        Some(match ext {
            "fvecs" => VecsKind::F32,
            "ivecs" => VecsKind::I32,
            "bvecs" => VecsKind::U8,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            VecsKind::F32 | VecsKind::I32 => 4,
            VecsKind::U8 => 1,
        }
    }
}

/// Reads a Texmex file (`-`: standard input) into an `N × d` matrix of `f32` (`i32` and `u8`
/// values converted exactly up to 2^24). A short or inconsistent row, or a non-finite value,
/// is an error naming the file, the row and the column. An empty file is a `0 × 0` matrix.
pub fn read_vecs(path: &Path, kind: VecsKind) -> Result<Array2<f32>> {
    vecs(open(path)?, kind)
}

/// As [`read_vecs`], from any reader (`name` is the name errors give).
pub fn read_vecs_from(reader: impl Read, name: &Path, kind: VecsKind) -> Result<Array2<f32>> {
    vecs(Source::stream(reader, name), kind)
}

fn vecs(mut src: Source<'_>, kind: VecsKind) -> Result<Array2<f32>> {
    let name = src.name.clone();
    parse_vecs(&mut src.reader, src.len, kind).map_err(|e| match e {
        VecsError::Io(source) => Error::Io {
            path: name.clone(),
            source,
        },
        VecsError::Bad(reason) => format_error(&name, reason),
    })
}

enum VecsError {
    Io(std::io::Error),
    Bad(String),
}

impl From<String> for VecsError {
    fn from(s: String) -> Self {
        VecsError::Bad(s)
    }
}

/// Reads rows until the end; `len` is the size of a regular file.
fn parse_vecs(
    r: &mut dyn Read,
    len: Option<u64>,
    kind: VecsKind,
) -> std::result::Result<Array2<f32>, VecsError> {
    let size = kind.size();
    let mut head = [0u8; 4];
    let got = read_full(r, &mut head).map_err(VecsError::Io)?;
    if got == 0 {
        return Ok(Array2::zeros((0, 0)));
    }
    if got < 4 {
        return Err(format!("row 0: truncated dimension ({got} of 4 bytes)").into());
    }
    let d = i32::from_le_bytes(head);
    if d <= 0 {
        return Err(format!("row 0: dimension {d} is not positive").into());
    }
    let d = d as usize;
    let row_bytes = 4 + d * size;
    let mut data: Vec<f32> = Vec::new();
    if let Some(len) = len {
        if len % row_bytes as u64 != 0 {
            return Err(format!(
                "{len} bytes is not a whole number of rows of dimension {d} ({row_bytes} bytes each): row {} is truncated",
                len / row_bytes as u64
            )
            .into());
        }
        data.reserve_exact((len / row_bytes as u64) as usize * d);
    }
    // Rows are read in chunks: a stream's first row may claim 2^31 values.
    let mut buf = vec![0u8; d.min((1 << 16) / size) * size];
    let mut row = 0usize;
    loop {
        if row > 0 {
            let got = read_full(r, &mut head).map_err(VecsError::Io)?;
            if got == 0 {
                break;
            }
            if got < 4 {
                return Err(format!("row {row}: truncated dimension ({got} of 4 bytes)").into());
            }
            let dr = i32::from_le_bytes(head);
            if dr as i64 != d as i64 {
                return Err(format!("row {row}: dimension {dr}, but row 0 has {d}").into());
            }
        }
        let mut col = 0;
        while col < d {
            let k = (d - col).min(buf.len() / size);
            let got = read_full(r, &mut buf[..k * size]).map_err(VecsError::Io)?;
            if got < k * size {
                return Err(format!(
                    "row {row} is truncated: {} of its {} value bytes",
                    col * size + got,
                    d * size
                )
                .into());
            }
            let chunk = &buf[..k * size];
            match kind {
                VecsKind::F32 => {
                    for (c, x) in chunk.chunks_exact(4).enumerate() {
                        let v = f32::from_le_bytes(x.try_into().expect("4 bytes"));
                        if !v.is_finite() {
                            return Err(format!(
                                "row {row}, column {}: value {v} is not finite",
                                col + c
                            )
                            .into());
                        }
                        data.push(v);
                    }
                }
                VecsKind::I32 => data.extend(
                    chunk
                        .chunks_exact(4)
                        .map(|x| i32::from_le_bytes(x.try_into().expect("4 bytes")) as f32),
                ),
                VecsKind::U8 => data.extend(chunk.iter().map(|&x| x as f32)),
            }
            col += k;
        }
        row += 1;
    }
    Ok(Array2::from_shape_vec((row, d), data).expect("row × d values"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fvecs(rows: &[&[f32]]) -> Vec<u8> {
        let mut b = Vec::new();
        for r in rows {
            b.extend((r.len() as i32).to_le_bytes());
            for x in *r {
                b.extend(x.to_le_bytes());
            }
        }
        b
    }

    /// Parses `b` as a file and as a stream; both must agree.
    fn parse(b: &[u8], kind: VecsKind) -> std::result::Result<Array2<f32>, String> {
        let msg = |e| match e {
            VecsError::Bad(s) => s,
            VecsError::Io(e) => e.to_string(),
        };
        let file = parse_vecs(&mut &b[..], Some(b.len() as u64), kind).map_err(msg);
        let stream = parse_vecs(&mut &b[..], None, kind).map_err(msg);
        if let (Ok(a), Ok(b)) = (&file, &stream) {
            assert_eq!(a, b);
        }
        assert_eq!(file.is_ok(), stream.is_ok());
        file.or(stream)
    }

    #[test]
    fn parses_rows_and_reports_bad_ones() {
        let m = parse(&fvecs(&[&[1.0, 2.0], &[3.0, -4.5]]), VecsKind::F32).unwrap();
        assert_eq!(m, ndarray::arr2(&[[1.0, 2.0], [3.0, -4.5]]));
        let mut b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0]]);
        b.truncate(b.len() - 3);
        assert!(
            parse(&b, VecsKind::F32)
                .unwrap_err()
                .contains("row 1 is truncated")
        );
        let b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0, 5.0], &[1.0]]);
        assert!(parse(&b, VecsKind::F32).is_err());
        let mut b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0]]);
        b[12] = 3;
        let e = parse_vecs(&mut &b[..], None, VecsKind::F32)
            .err()
            .map(|e| match e {
                VecsError::Bad(s) => s,
                VecsError::Io(e) => e.to_string(),
            });
        assert!(e.unwrap().contains("row 1: dimension 3"));
        let b = [2u8, 0, 0, 0, 7, 9];
        assert_eq!(
            parse(&b, VecsKind::U8).unwrap(),
            ndarray::arr2(&[[7.0, 9.0]])
        );
        let b = fvecs(&[&[1.0, f32::NAN]]);
        assert!(
            parse(&b, VecsKind::F32)
                .unwrap_err()
                .contains("row 0, column 1")
        );
        // A first row claiming 2^31 - 1 values: an error, not an 8 GB row buffer.
        let mut b = i32::MAX.to_le_bytes().to_vec();
        b.extend([0u8; 12]);
        assert!(parse(&b, VecsKind::F32).is_err());
    }
}
