//! Ids given to codes from outside an index: consecutive ids from a first one, and lists of
//! ids written as text.

use std::num::ParseIntError;

use super::Id;

/// The ids `first, first + 1, …` of `n` codes inserted together, or `None` when the last one
/// would exceed [`Id::MAX`].
///
/// ```
/// use simlsh::index::consecutive_ids;
///
/// assert_eq!(consecutive_ids(1_000, 3), Some(vec![1_000, 1_001, 1_002]));
/// assert_eq!(consecutive_ids(u32::MAX, 1), Some(vec![u32::MAX]));
/// assert_eq!(consecutive_ids(u32::MAX, 2), None);
/// ```
pub fn consecutive_ids(first: Id, n: usize) -> Option<Vec<Id>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let last = Id::try_from(n - 1)
        .ok()
        .and_then(|m| first.checked_add(m))?;
    Some((first..=last).collect())
}

/// The ids of a text: decimal numbers separated by whitespace or commas (a file of ids, one a
/// line or comma separated). `Err` holds the first token that is not an id, and why.
///
/// ```
/// use simlsh::index::parse_ids;
///
/// assert_eq!(parse_ids("4,8\n15  16,\n"), Ok(vec![4, 8, 15, 16]));
/// assert_eq!(parse_ids("4 x8").unwrap_err().0, "x8");
/// ```
pub fn parse_ids(text: &str) -> Result<Vec<Id>, (&str, ParseIntError)> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<Id>().map_err(|e| (t, e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ids_stop_at_the_largest_id() {
        assert_eq!(consecutive_ids(7, 0), Some(vec![]));
        assert_eq!(consecutive_ids(Id::MAX, 0), Some(vec![]));
        assert_eq!(
            consecutive_ids(Id::MAX - 2, 3),
            Some(vec![Id::MAX - 2, Id::MAX - 1, Id::MAX])
        );
        assert_eq!(consecutive_ids(Id::MAX - 2, 4), None);
        assert_eq!(consecutive_ids(1, (Id::MAX as usize) + 1), None);
        // Beyond u32 rows: no id, whatever the first.
        assert_eq!(consecutive_ids(0, usize::MAX), None);
    }

    #[test]
    fn id_lists_parse_every_separator_and_name_the_bad_token() {
        assert_eq!(parse_ids(""), Ok(vec![]));
        assert_eq!(parse_ids(" ,\n,\t"), Ok(vec![]));
        assert_eq!(parse_ids("1,2\r\n3\t4"), Ok(vec![1, 2, 3, 4]));
        assert_eq!(parse_ids("4294967295"), Ok(vec![u32::MAX]));
        let bad = |text| parse_ids(text).unwrap_err().0;
        assert_eq!(bad("1 4294967296"), "4294967296");
        assert_eq!(bad("1 -2 x"), "-2");
        assert_eq!(bad("1;2"), "1;2");
    }
}
