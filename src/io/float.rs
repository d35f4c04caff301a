//! Input values read as `float64` (or parsed from text) and signed as `float32`: the one
//! rule every reader and front end applies.
//!
//! A value is taken when `float32` holds it: finite, within `float32`'s range, and not a
//! nonzero value that `float32` rounds to 0. The last would be a silent wrong answer: a row of
//! such values (`1e-60 · x`) would sign as the zero vector, not as `x`. Each is refused with
//! the reason, as a value beyond the range always was; a signature depends only on a vector's
//! direction, so such vectors are scaled (by a power of two, exactly) before they are given.

use std::fmt;

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

/// `value {x} {why}`: the message of a refused value.
pub(crate) fn refused(x: f64) -> String {
    match F32Range::of(x) {
        Some(why) => format!("value {x:e} {why}"),
        None => format!("value {x:e} is not a float32"),
    }
}
