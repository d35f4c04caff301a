//! `.fvecs` / `.ivecs` / `.bvecs` (the Texmex layout of ANN benchmarks): each row is a
//! little-endian `i32` dimension `d`, then `d` values (`f32`, `i32` or `u8`).

use std::path::Path;

use ndarray::Array2;

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

/// Reads a Texmex file into an `N × d` matrix of `f32` (`i32` and `u8` values converted).
/// Every row must have the same dimension; a short or inconsistent row is an error naming the
/// file and the row. Values are not checked for finiteness here (signers do it).
pub fn read_vecs(path: &Path, kind: VecsKind) -> Result<Array2<f32>> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_vecs(&bytes, kind).map_err(|reason| Error::Format {
        path: path.to_path_buf(),
        reason,
    })
}

fn parse_vecs(b: &[u8], kind: VecsKind) -> std::result::Result<Array2<f32>, String> {
    if b.is_empty() {
        return Ok(Array2::zeros((0, 0)));
    }
    let d = i32::from_le_bytes(
        b[..4.min(b.len())]
            .try_into()
            .map_err(|_| "row 0: truncated dimension".to_string())?,
    );
    if d <= 0 {
        return Err(format!("row 0: dimension {d} is not positive"));
    }
    let d = d as usize;
    let row_bytes = 4 + d * kind.size();
    if b.len() % row_bytes != 0 {
        return Err(format!(
            "{} bytes is not a whole number of rows of dimension {d} ({row_bytes} bytes each): row {} is truncated",
            b.len(),
            b.len() / row_bytes
        ));
    }
    let n = b.len() / row_bytes;
    let mut data = Vec::with_capacity(n * d);
    for (r, row) in b.chunks_exact(row_bytes).enumerate() {
        let dr = i32::from_le_bytes(row[..4].try_into().expect("4 bytes"));
        if dr as usize != d {
            return Err(format!("row {r}: dimension {dr}, but row 0 has {d}"));
        }
        let v = &row[4..];
        match kind {
            VecsKind::F32 => data.extend(
                v.chunks_exact(4)
                    .map(|x| f32::from_le_bytes(x.try_into().expect("4"))),
            ),
            VecsKind::I32 => data.extend(
                v.chunks_exact(4)
                    .map(|x| i32::from_le_bytes(x.try_into().expect("4")) as f32),
            ),
            VecsKind::U8 => data.extend(v.iter().map(|&x| x as f32)),
        }
    }
    Ok(Array2::from_shape_vec((n, d), data).expect("n × d"))
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

    #[test]
    fn parses_rows_and_reports_bad_ones() {
        let m = parse_vecs(&fvecs(&[&[1.0, 2.0], &[3.0, -4.5]]), VecsKind::F32).unwrap();
        assert_eq!(m, ndarray::arr2(&[[1.0, 2.0], [3.0, -4.5]]));
        let mut b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0]]);
        b.truncate(b.len() - 3);
        assert!(
            parse_vecs(&b, VecsKind::F32)
                .unwrap_err()
                .contains("row 1 is truncated")
        );
        let b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0, 5.0], &[1.0]]);
        assert!(parse_vecs(&b, VecsKind::F32).is_err());
        let mut b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0]]);
        b[12] = 3;
        assert!(
            parse_vecs(&b, VecsKind::F32)
                .unwrap_err()
                .contains("row 1: dimension 3")
        );
        let b = [2u8, 0, 0, 0, 7, 9];
        assert_eq!(
            parse_vecs(&b, VecsKind::U8).unwrap(),
            ndarray::arr2(&[[7.0, 9.0]])
        );
    }
}
