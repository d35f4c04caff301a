//! The data of an array, read into a typed vector.
//!
//! A size claimed by a header is allocated at once only when the caller has checked that the
//! bytes are there ([`Avail::Known`]: a regular file or a stored archive member of known
//! length); otherwise ([`Avail::Stream`]: standard input, a pipe, a compressed member) the
//! vector starts small and doubles as the data arrives, so a lie costs at most twice what
//! the input really holds. Data in the machine's own layout is read straight into the final
//! vector; other types are converted chunk by chunk.

use std::io::Read;

use bytemuck::Pod;

use super::header::{Dtype, read_full};

/// Bytes converted per chunk.
const CHUNK: usize = 1 << 16;

/// How much data the reader is known to hold.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Avail {
    /// At least the bytes the header claims (checked by the caller).
    Known,
    /// Unknown: allocate about `hint` bytes first, then grow as the data arrives.
    Stream {
        /// Bytes to allocate before any data arrives.
        hint: u64,
    },
}

/// Why an array could not be read.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The data ends after `got` of the `need` bytes declared.
    Short {
        /// Bytes read.
        got: u64,
        /// Bytes declared.
        need: u64,
    },
    /// The reader failed.
    Io(std::io::Error),
    /// An allocation of this many bytes failed.
    Alloc(u64),
    /// Integer element `index` is negative or above the maximum.
    Int {
        /// Position in memory order.
        index: usize,
        /// The value.
        value: i128,
    },
    /// Float element `index` is not finite (as `f32`).
    Float {
        /// Position in memory order.
        index: usize,
        /// The value.
        value: f64,
    },
    /// The element type cannot be read as what is asked.
    Dtype(String),
    /// Anything else, phrased.
    Msg(String),
}

fn reserve<T>(v: &mut Vec<T>, total: usize) -> Result<(), Fail> {
    if total > v.capacity() {
        v.try_reserve_exact(total - v.len())
            .map_err(|_| Fail::Alloc((total * size_of::<T>()) as u64))?;
    }
    Ok(())
}

/// Reads `count` elements whose bytes are those of `T`, straight into the vector.
pub(crate) fn read_raw<T: Pod>(
    r: &mut dyn Read,
    count: usize,
    avail: Avail,
) -> Result<Vec<T>, Fail> {
    let size = size_of::<T>();
    let need = count as u64 * size as u64;
    match avail {
        Avail::Known => {
            let mut v: Vec<T> =
                bytemuck::allocation::try_zeroed_vec(count).map_err(|_| Fail::Alloc(need))?;
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut v);
            let got = read_full(r, bytes).map_err(Fail::Io)?;
            if got < bytes.len() {
                return Err(Fail::Short {
                    got: got as u64,
                    need,
                });
            }
            Ok(v)
        }
        Avail::Stream { hint } => {
            let mut v: Vec<T> = Vec::new();
            let first = ((hint / size as u64).max(1) as usize).min(count);
            while v.len() < count {
                let filled = v.len();
                let target = if filled == 0 {
                    first
                } else {
                    filled.saturating_mul(2).min(count)
                };
                reserve(&mut v, target)?;
                v.resize(target, T::zeroed());
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut v[filled..]);
                let got = read_full(r, bytes).map_err(Fail::Io)?;
                if got < bytes.len() {
                    return Err(Fail::Short {
                        got: (filled * size + got) as u64,
                        need,
                    });
                }
            }
            Ok(v)
        }
    }
}

/// Reads `count` elements of `N` bytes, converting each with `conv(index, bytes)`.
fn read_conv<T, const N: usize>(
    r: &mut dyn Read,
    count: usize,
    avail: Avail,
    mut conv: impl FnMut(usize, [u8; N]) -> Result<T, Fail>,
) -> Result<Vec<T>, Fail> {
    let need = count as u64 * N as u64;
    let first = match avail {
        Avail::Known => count,
        Avail::Stream { hint } => ((hint / N as u64).max(1) as usize).min(count),
    };
    let mut out = Vec::new();
    reserve(&mut out, first)?;
    let mut buf = vec![0u8; (CHUNK / N).max(1).min(count) * N];
    let mut done = 0;
    while done < count {
        let k = (count - done).min(buf.len() / N);
        let got = read_full(r, &mut buf[..k * N]).map_err(Fail::Io)?;
        if got < k * N {
            return Err(Fail::Short {
                got: (done * N + got) as u64,
                need,
            });
        }
        if out.capacity() < done + k {
            let want = (done + k).max(2 * out.capacity()).min(count);
            reserve(&mut out, want)?;
        }
        for (j, c) in buf[..k * N].chunks_exact(N).enumerate() {
            out.push(conv(done + j, c.try_into().expect("N bytes"))?);
        }
        done += k;
    }
    Ok(out)
}

macro_rules! num {
    ($t:ty, $big:expr) => {
        |b| {
            if $big {
                <$t>::from_be_bytes(b)
            } else {
                <$t>::from_le_bytes(b)
            }
        }
    };
}

/// An IEEE half-precision value as `f32` (exact: every `f16` is an `f32`).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = (h as u32 >> 15) << 31;
    let exp = (h as u32 >> 10) & 0x1F;
    let man = h as u32 & 0x3FF;
    match exp {
        0 => {
            // Zero or subnormal: man × 2^-24, exact in f32.
            let v = man as f32 * f32::from_bits(0x3380_0000);
            f32::from_bits(v.to_bits() | sign)
        }
        31 => f32::from_bits(sign | 0x7F80_0000 | (man << 13)),
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
    }
}

/// Reads `count` elements of a numeric type as `f32`: `float16` and `float32` exactly,
/// `float64` rounded to nearest (a value beyond `f32` is an error, not infinity), integers
/// rounded to nearest (exact up to 2^24 in magnitude), `bool` as 0 or 1. Every value must be
/// finite.
pub(crate) fn read_f32(
    r: &mut dyn Read,
    d: Dtype,
    count: usize,
    avail: Avail,
) -> Result<Vec<f32>, Fail> {
    let big = d.big;
    let v = match (d.kind, d.size) {
        (b'f', 4) if d.native() => read_raw::<f32>(r, count, avail)?,
        (b'f', 4) => read_conv::<f32, 4>(r, count, avail, |_, b| Ok(num!(f32, big)(b)))?,
        (b'f', 2) => {
            read_conv::<f32, 2>(r, count, avail, |_, b| Ok(f16_to_f32(num!(u16, big)(b))))?
        }
        (b'f', 8) => read_conv::<f32, 8>(r, count, avail, |k, b| {
            let x = num!(f64, big)(b);
            crate::io::float::to_f32(x).map_err(|_| Fail::Float { index: k, value: x })
        })?,
        (b'b', 1) => read_conv::<f32, 1>(r, count, avail, |_, b| Ok(f32::from(b[0] != 0)))?,
        (b'i', 1) => read_conv::<f32, 1>(r, count, avail, |_, b| Ok(b[0] as i8 as f32))?,
        (b'u', 1) => read_conv::<f32, 1>(r, count, avail, |_, b| Ok(b[0] as f32))?,
        (b'i', 2) => read_conv::<f32, 2>(r, count, avail, |_, b| Ok(num!(i16, big)(b) as f32))?,
        (b'u', 2) => read_conv::<f32, 2>(r, count, avail, |_, b| Ok(num!(u16, big)(b) as f32))?,
        (b'i', 4) => read_conv::<f32, 4>(r, count, avail, |_, b| Ok(num!(i32, big)(b) as f32))?,
        (b'u', 4) => read_conv::<f32, 4>(r, count, avail, |_, b| Ok(num!(u32, big)(b) as f32))?,
        (b'i', 8) => read_conv::<f32, 8>(r, count, avail, |_, b| Ok(num!(i64, big)(b) as f32))?,
        (b'u', 8) => read_conv::<f32, 8>(r, count, avail, |_, b| Ok(num!(u64, big)(b) as f32))?,
        _ => {
            return Err(Fail::Dtype(format!(
                "dtype {} is not a number type: expected float16/32/64, an integer type or bool",
                d.name()
            )));
        }
    };
    if d.kind == b'f'
        && d.size != 8
        && let Some(k) = first_non_finite(&v)
    {
        return Err(Fail::Float {
            index: k,
            value: v[k] as f64,
        });
    }
    Ok(v)
}

/// An unsigned integer type that index arrays are read into.
pub(crate) trait Int: Pod {
    /// `x` as this type (the caller checked that it fits).
    fn from_u64(x: u64) -> Self;
    /// The value.
    fn get(self) -> u64;
}

impl Int for u32 {
    fn from_u64(x: u64) -> Self {
        x as u32
    }
    fn get(self) -> u64 {
        self as u64
    }
}

impl Int for u64 {
    fn from_u64(x: u64) -> Self {
        x
    }
    fn get(self) -> u64 {
        self
    }
}

impl Int for usize {
    fn from_u64(x: u64) -> Self {
        x as usize
    }
    fn get(self) -> u64 {
        self as u64
    }
}

/// The position of the first value of `v` above `lim`, in chunks the compiler vectorises.
pub(crate) fn first_above<T: Int>(v: &[T], lim: u64) -> Option<usize> {
    let mut base = 0;
    for c in v.chunks(1024) {
        if !c.iter().fold(true, |a, &x| a & (x.get() <= lim)) {
            return c.iter().position(|&x| x.get() > lim).map(|k| base + k);
        }
        base += c.len();
    }
    None
}

/// The position of the first non-finite value of `v`, in chunks the compiler vectorises.
fn first_non_finite(v: &[f32]) -> Option<usize> {
    let mut base = 0;
    for c in v.chunks(1024) {
        if !c.iter().fold(true, |a, &x| a & x.is_finite()) {
            return c.iter().position(|x| !x.is_finite()).map(|k| base + k);
        }
        base += c.len();
    }
    None
}

/// The value of raw integer bits `x` of a `bits`-bit type.
pub(crate) fn signed_value(x: u64, bits: u32, signed: bool) -> i128 {
    if signed && (x >> (bits - 1)) & 1 == 1 {
        x as i128 - (1i128 << bits)
    } else {
        x as i128
    }
}

/// Reads `count` elements of an integer type (any size, either byte order) into `T`; every
/// value must lie in `0..=max` (`max` below `T::MAX`'s range is the caller's business).
pub(crate) fn read_ints<T: Int>(
    r: &mut dyn Read,
    d: Dtype,
    count: usize,
    avail: Avail,
    max: u64,
) -> Result<Vec<T>, Fail> {
    let (v, lim) = read_ints_deferred::<T>(r, d, count, avail, max)?;
    if let Some(lim) = lim
        && let Some(k) = first_above(&v, lim)
    {
        return Err(Fail::Int {
            index: k,
            value: signed_value(v[k].get(), 8 * d.size as u32, d.kind == b'i'),
        });
    }
    Ok(v)
}

/// As [`read_ints`], except that an array stored as `T` itself is returned unchecked, with
/// the bound its raw values must not exceed (negative values of a signed type read as large
/// ones): the caller checks it in a pass of its own. `None` when already checked.
pub(crate) fn read_ints_deferred<T: Int>(
    r: &mut dyn Read,
    d: Dtype,
    count: usize,
    avail: Avail,
    max: u64,
) -> Result<(Vec<T>, Option<u64>), Fail> {
    let big = d.big;
    let check = |k: usize, x: i128| {
        if x < 0 || x > max as i128 {
            Err(Fail::Int { index: k, value: x })
        } else {
            Ok(T::from_u64(x as u64))
        }
    };
    if matches!(d.kind, b'i' | b'u') && d.size == size_of::<T>() && d.native() {
        let v = read_raw::<T>(r, count, avail)?;
        let bits = 8 * d.size as u32;
        let lim = if d.kind == b'i' {
            max.min((1u64 << (bits - 1)) - 1)
        } else {
            max
        };
        return Ok((v, (lim < u64::MAX).then_some(lim)));
    }
    let v = match (d.kind, d.size) {
        (b'i', 1) => read_conv::<T, 1>(r, count, avail, |k, b| check(k, b[0] as i8 as i128))?,
        (b'u', 1) => read_conv::<T, 1>(r, count, avail, |k, b| check(k, b[0] as i128))?,
        (b'i', 2) => {
            read_conv::<T, 2>(r, count, avail, |k, b| check(k, num!(i16, big)(b) as i128))?
        }
        (b'u', 2) => {
            read_conv::<T, 2>(r, count, avail, |k, b| check(k, num!(u16, big)(b) as i128))?
        }
        (b'i', 4) => {
            read_conv::<T, 4>(r, count, avail, |k, b| check(k, num!(i32, big)(b) as i128))?
        }
        (b'u', 4) => {
            read_conv::<T, 4>(r, count, avail, |k, b| check(k, num!(u32, big)(b) as i128))?
        }
        (b'i', 8) => {
            read_conv::<T, 8>(r, count, avail, |k, b| check(k, num!(i64, big)(b) as i128))?
        }
        (b'u', 8) => {
            read_conv::<T, 8>(r, count, avail, |k, b| check(k, num!(u64, big)(b) as i128))?
        }
        _ => {
            return Err(Fail::Dtype(format!(
                "dtype {} is not an integer type",
                d.name()
            )));
        }
    };
    Ok((v, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_converts_exactly() {
        for h in 0..=u16::MAX {
            let (s, e, m) = (h >> 15, (h >> 10) & 0x1F, h & 0x3FF);
            let mag = match e {
                0 => m as f64 * 2f64.powi(-24),
                31 if m == 0 => f64::INFINITY,
                31 => f64::NAN,
                _ => (1.0 + m as f64 / 1024.0) * 2f64.powi(e as i32 - 15),
            };
            let want = if s == 1 { -mag } else { mag };
            let got = f16_to_f32(h);
            if want.is_nan() {
                assert!(got.is_nan(), "{h:#x}");
            } else {
                assert_eq!(got as f64, want, "{h:#x}");
                assert_eq!(got.is_sign_negative(), s == 1, "{h:#x}");
            }
        }
    }

    fn dt(s: &str) -> Dtype {
        Dtype::parse(s).unwrap()
    }

    #[test]
    fn integers_convert_with_range_checks() {
        let b: Vec<u8> = [3i32, -1, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
        match read_ints::<u32>(&mut &b[..], dt("<i4"), 3, Avail::Known, 10) {
            Err(Fail::Int {
                index: 1,
                value: -1,
            }) => {}
            other => panic!("{other:?}"),
        }
        let b: Vec<u8> = [3i64, 9, 7].iter().flat_map(|x| x.to_be_bytes()).collect();
        let v =
            read_ints::<usize>(&mut &b[..], dt(">i8"), 3, Avail::Stream { hint: 1 }, 9).unwrap();
        assert_eq!(v, vec![3, 9, 7]);
        match read_ints::<usize>(&mut &b[..], dt(">i8"), 3, Avail::Known, 8) {
            Err(Fail::Int { index: 1, value: 9 }) => {}
            other => panic!("{other:?}"),
        }
        let b = [200u8, 1];
        assert_eq!(
            read_ints::<u32>(&mut &b[..], dt("|u1"), 2, Avail::Known, 255).unwrap(),
            vec![200, 1]
        );
        assert!(matches!(
            read_ints::<u32>(&mut &b[..], dt("<f4"), 0, Avail::Known, 1),
            Err(Fail::Dtype(_))
        ));
    }

    #[test]
    fn streams_grow_as_data_arrives_and_report_short_data() {
        let b: Vec<u8> = (0..1000u32)
            .flat_map(|x| (x as f32).to_le_bytes())
            .collect();
        let v = read_f32(&mut &b[..], dt("<f4"), 1000, Avail::Stream { hint: 16 }).unwrap();
        assert_eq!(v[999], 999.0);
        // A claim of a billion elements over 4,000 bytes: an error, not a 4 GB allocation.
        match read_f32(&mut &b[..], dt("<f4"), 1 << 30, Avail::Stream { hint: 16 }) {
            Err(Fail::Short { got: 4000, need }) => assert_eq!(need, 4 << 30),
            other => panic!("{other:?}"),
        }
        match read_f32(&mut &b[..], dt(">f4"), 1 << 30, Avail::Stream { hint: 16 }) {
            Err(Fail::Short { got: 4000, .. }) => {}
            other => panic!("{other:?}"),
        }
        let b: Vec<u8> = [1.0f64, 1e300]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        match read_f32(&mut &b[..], dt("<f8"), 2, Avail::Known) {
            Err(Fail::Float { index: 1, value }) => assert_eq!(value, 1e300),
            other => panic!("{other:?}"),
        }
        let b = [0u8, 0x7E];
        assert!(matches!(
            read_f32(&mut &b[..], dt("<f2"), 1, Avail::Known),
            Err(Fail::Float { index: 0, .. })
        ));
    }
}
