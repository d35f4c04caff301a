//! Input values read as `float64` (or parsed from text) and signed as `float32`: the one
//! rule every reader and front end applies.
//!
//! A value is taken when `float32` holds it: finite, within `float32`'s range, and not a
//! nonzero value that `float32` rounds to 0. The last would be a silent wrong answer: a row of
//! such values (`1e-60 · x`) would sign as the zero vector, not as `x`. Each is refused with
//! the reason, as a value beyond the range always was; a signature depends only on a vector's
//! direction, so such vectors are scaled (by a power of two, exactly) before they are given.

use std::borrow::Cow;
use std::fmt;

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Why a `float64` value has no `float32` equal, as [`to_f32`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum F32Range {
    /// NaN or infinite.
    NotFinite,
    /// Finite, beyond `float32`'s largest value (about `3.4·10^38`).
    Above,
    /// Nonzero, below `float32`'s smallest (about `1.4·10^-45`): it would round to 0.
    Below,
}

impl F32Range {
    /// Why `x` has no `float32` equal, or `None` when it has one.
    pub fn of(x: f64) -> Option<F32Range> {
        to_f32(x).err()
    }
}

impl fmt::Display for F32Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            F32Range::NotFinite => "is not finite",
            F32Range::Above => "is beyond the range of float32",
            F32Range::Below => {
                "is below the range of float32, which rounds it to 0 (scale the vector: its \
                 signature depends only on its direction)"
            }
        })
    }
}

/// `x` as `float32` (rounded to nearest), or why it cannot be (see the
/// [module docs](self)).
///
/// ```
/// use simlsh::io::float::{F32Range, to_f32};
/// assert_eq!(to_f32(0.5), Ok(0.5));
/// assert_eq!(to_f32(-0.0), Ok(-0.0));
/// assert_eq!(to_f32(1e300), Err(F32Range::Above));
/// assert_eq!(to_f32(1e-60), Err(F32Range::Below));
/// assert_eq!(to_f32(f64::NAN), Err(F32Range::NotFinite));
/// ```
pub fn to_f32(x: f64) -> Result<f32, F32Range> {
    let f = x as f32;
    if !x.is_finite() {
        Err(F32Range::NotFinite)
    } else if !f.is_finite() {
        Err(F32Range::Above)
    } else if f == 0.0 && x != 0.0 {
        Err(F32Range::Below)
    } else {
        Ok(f)
    }
}

/// The error of a value at `row`, `col` that `float32` does not hold, as every front end
/// gives it: [`Error::NonFinite`] for NaN or an infinity, else [`Error::InvalidParameter`]
/// named `name`, `row r, column c: value x` and the reason.
pub fn refused_at(name: &'static str, row: usize, col: u64, x: f64) -> Error {
    match F32Range::of(x) {
        Some(F32Range::NotFinite) | None => Error::NonFinite { row, col, value: x },
        Some(why) => Error::param(name, format!("row {row}, column {col}: value {x:e} {why}")),
    }
}

/// Values that are `float32` or become it by [`to_f32`]: `f32` read in place, `f64` converted.
pub trait F32Values: Copy + Send + Sync {
    /// The values as `f32`, or the position and value of the first one `float32` does not
    /// hold.
    fn to_f32s(values: &[Self]) -> std::result::Result<Cow<'_, [f32]>, (usize, f64)>;
}

impl F32Values for f32 {
    fn to_f32s(values: &[f32]) -> std::result::Result<Cow<'_, [f32]>, (usize, f64)> {
        Ok(Cow::Borrowed(values))
    }
}

impl F32Values for f64 {
    fn to_f32s(values: &[f64]) -> std::result::Result<Cow<'_, [f32]>, (usize, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(k, &v)| to_f32(v).map_err(|_| (k, v)))
            .collect::<std::result::Result<Vec<f32>, _>>()
            .map(Cow::Owned)
    }
}

/// The rows of a `float64` matrix (any layout) as `float32`, converted in parallel by
/// [`to_f32`]; rows are numbered from `first` in errors (the matrix being rows `first..` of a
/// larger input).
///
/// ```
/// use ndarray::array;
/// use simlsh::io::float::rows_to_f32;
///
/// assert_eq!(rows_to_f32(array![[0.5, -2.0]].view(), 0)?, array![[0.5f32, -2.0]]);
/// let e = rows_to_f32(array![[0.5, 1e300]].view(), 7).unwrap_err().to_string();
/// assert!(e.contains("row 7, column 1: value 1e300 is beyond the range of float32"));
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`refused_at`] (named `x`) of the first value, in row-major order, that `float32` does not
/// hold.
pub fn rows_to_f32(x: ArrayView2<'_, f64>, first: usize) -> Result<Array2<f32>> {
    let (n, d) = x.dim();
    let mut out = vec![0f32; n * d];
    let bad = out
        .par_chunks_mut(d.max(1))
        .enumerate()
        .filter_map(|(i, dst)| {
            for (j, (o, &v)) in dst.iter_mut().zip(x.row(i)).enumerate() {
                match to_f32(v) {
                    Ok(f) => *o = f,
                    Err(_) => return Some((i, j, v)),
                }
            }
            None
        })
        .min_by_key(|&(i, j, _)| (i, j));
    match bad {
        Some((i, j, v)) => Err(refused_at("x", first + i, j as u64, v)),
        None => Ok(Array2::from_shape_vec((n, d), out).expect("n × d values")),
    }
}

/// `value {x} {why}`: the message of a refused value.
pub(crate) fn refused(x: f64) -> String {
    match F32Range::of(x) {
        Some(why) => format!("value {x:e} {why}"),
        None => format!("value {x:e} is not a float32"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_convert_as_to_f32_and_name_the_first_refused_value() {
        let x =
            ndarray::Array2::from_shape_fn((300, 7), |(i, j)| (i as f64 - 150.0) * 0.37 + j as f64);
        let f = rows_to_f32(x.t().as_standard_layout().t(), 0).unwrap();
        assert!(f.iter().zip(x.iter()).all(|(&f, &v)| Ok(f) == to_f32(v)));
        let mut y = x.clone();
        (y[[200, 3]], y[[120, 5]], y[[120, 6]]) = (f64::NAN, 1e-60, 1e300);
        let e = rows_to_f32(y.view(), 1000).unwrap_err().to_string();
        assert!(
            e.contains("row 1120, column 5: value 1e-60 is below the range"),
            "{e}"
        );
        y[[120, 5]] = 0.0;
        match rows_to_f32(y.view(), 0) {
            Err(Error::InvalidParameter { name: "x", reason }) => {
                assert!(reason.starts_with("row 120, column 6: value 1e300"))
            }
            other => panic!("{other:?}"),
        }
        y[[120, 6]] = 0.0;
        assert!(matches!(
            rows_to_f32(y.view(), 0),
            Err(Error::NonFinite {
                row: 200,
                col: 3,
                ..
            })
        ));
        assert_eq!(f64::to_f32s(&[1.0, 2.0, 1e40]), Err((2, 1e40)));
        assert_eq!(f64::to_f32s(&[1.0, 0.5]).unwrap()[..], [1.0f32, 0.5]);
    }
}
