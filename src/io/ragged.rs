//! Rows of a ragged byte array in the Arrow layout (a string or binary column's buffers):
//! `offsets`, one per row plus one, into `data`.

use sprs::SpIndex;

use crate::error::{Error, Result};

/// The rows of a ragged byte array: row `r` is `data[offsets[r]..offsets[r + 1]]`.
///
/// ```
/// use simlsh::io::ragged::{rows, utf8_rows};
///
/// let data = b"abcde";
/// assert_eq!(rows(&[0i32, 2, 2, 5], data)?, vec![&b"ab"[..], b"", b"cde"]);
/// assert_eq!(utf8_rows(&[0i64, 3], data)?, vec!["abc"]);
/// assert!(rows(&[0i32, 3, 2], data).is_err());
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] (`offsets`) when `offsets` is empty, or naming the first row
/// whose offsets decrease, are negative or reach beyond `data`.
pub fn rows<'a, O: SpIndex>(offsets: &[O], data: &'a [u8]) -> Result<Vec<&'a [u8]>> {
    if offsets.is_empty() {
        return Err(Error::param(
            "offsets",
            "offsets is empty (it has one entry per row plus one)",
        ));
    }
    offsets
        .windows(2)
        .enumerate()
        .map(|(r, w)| match (w[0].try_index(), w[1].try_index()) {
            (Some(a), Some(b)) if a <= b && b <= data.len() => Ok(&data[a..b]),
            _ => Err(Error::param(
                "offsets",
                format!("row {r}: offsets out of order or beyond the data"),
            )),
        })
        .collect()
}

/// The rows of a string column ([`rows`], each valid UTF-8).
///
/// # Errors
/// As [`rows`]; [`Error::InvalidParameter`] (`data`) naming the first row that is not valid
/// UTF-8.
pub fn utf8_rows<'a, O: SpIndex>(offsets: &[O], data: &'a [u8]) -> Result<Vec<&'a str>> {
    rows(offsets, data)?
        .into_iter()
        .enumerate()
        .map(|(r, b)| {
            std::str::from_utf8(b)
                .map_err(|e| Error::param("data", format!("row {r}: not valid UTF-8 ({e})")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_the_slices_between_offsets_and_bad_offsets_are_named() {
        let data = "héllo wörld".as_bytes();
        let offsets = [0i64, 6, 6, data.len() as i64];
        let want: Vec<&[u8]> = offsets
            .windows(2)
            .map(|w| &data[w[0] as usize..w[1] as usize])
            .collect();
        assert_eq!(rows(&offsets, data).unwrap(), want);
        assert_eq!(
            utf8_rows(&offsets, data).unwrap(),
            vec!["héllo", "", " wörld"]
        );
        let err = |o: &[i64]| rows(o, data).unwrap_err().to_string();
        assert!(err(&[]).contains("offsets is empty"));
        assert!(err(&[0, 3, -1]).contains("row 1: offsets out of order"));
        assert!(err(&[0, 3, 99]).contains("row 1: offsets out of order or beyond the data"));
        // A row that ends inside a character.
        let e = utf8_rows(&[0i32, 2], data).unwrap_err().to_string();
        assert!(e.contains("row 0: not valid UTF-8"), "{e}");
    }
}
