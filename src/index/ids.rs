//! Ids given to codes from outside an index: consecutive ids from a first one, the default
//! ids of codes added without ids, and lists of ids written as text.

use std::num::ParseIntError;

use super::{HammingIndex, Id};
use crate::error::{Error, Result};

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

/// One past the largest id stored in `idx` (0 when empty).
///
/// Cost: one radius search at the full width (every stored code is within it, and a radius
/// search is exact for every kind of index).
///
/// # Errors
/// The index's search errors.
pub fn past_largest_id(idx: &dyn HammingIndex) -> Result<u64> {
    if idx.is_empty() {
        return Ok(0);
    }
    let zero = vec![0u64; crate::signature::words_for(idx.bits())];
    let all = idx.radius(&zero, idx.bits() as u32)?;
    Ok(all.iter().map(|h| u64::from(h.id) + 1).max().unwrap_or(0))
}

/// The default ids of codes added to an index without ids (FAISS's `add`), the same in every
/// front end: consecutive, from one past the largest id ever stored, so that a default id
/// never collides with a stored one nor reuses a removed one the counter has seen.
///
/// A new counter starts one past the largest id the index holds ([`past_largest_id`],
/// computed once); [`stored`](Self::stored) moves it past the ids of each insert, given or
/// default.
///
/// ```
/// use simlsh::index::{HammingIndex, LinearScan, NextIds};
///
/// let mut idx = LinearScan::new(64)?;
/// let mut next = NextIds::default();
/// let ids = next.ids(&idx, 2)?;
/// assert_eq!(ids, vec![0, 1]);
/// idx.insert_batch(&ids, &[7, 8])?;
/// next.stored(&ids);
/// idx.remove(1)?;
/// // Id 1 was stored: the next default ids follow it.
/// assert_eq!(next.ids(&idx, 1)?, vec![2]);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NextIds {
    /// The first default id, once known.
    next: Option<u64>,
}

impl NextIds {
    /// The ids of `n` codes to add to `idx` without ids: from the first free one on. The
    /// counter moves only when the insert is done ([`stored`](Self::stored)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`ids`) when the last id would exceed [`Id::MAX`]; the
    /// index's search errors (the first call).
    pub fn ids(&mut self, idx: &dyn HammingIndex, n: usize) -> Result<Vec<Id>> {
        let start = match self.next {
            Some(s) => s,
            None => *self.next.insert(past_largest_id(idx)?),
        };
        Id::try_from(start)
            .ok()
            .and_then(|first| consecutive_ids(first, n))
            .or_else(|| (n == 0).then(Vec::new))
            .ok_or_else(|| {
                Error::param(
                    "ids",
                    format!(
                        "ids from {start} for {n} codes: the next ids exceed {}",
                        Id::MAX
                    ),
                )
            })
    }

    /// Records the ids of an insert done (given or default): later default ids follow them.
    pub fn stored(&mut self, ids: &[Id]) {
        if let (Some(next), Some(&top)) = (self.next.as_mut(), ids.iter().max()) {
            *next = (*next).max(u64::from(top) + 1);
        }
    }
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
    fn default_ids_follow_every_id_ever_stored() {
        use crate::index::LinearScan;
        use rand::{RngExt, SeedableRng};
        use rand_xoshiro::Xoshiro256PlusPlus;

        // Random adds (default or given ids) and removes, against a model: the largest id
        // ever stored, whether the counter has seen it or the index held it when the counter
        // started (a counter made anew after the removes, as a command line run is).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for round in 0..20 {
            let mut idx = LinearScan::new(64).unwrap();
            let mut next = NextIds::default();
            // The counter starts on the empty index (it knows every id from then on).
            assert!(next.ids(&idx, 0).unwrap().is_empty());
            let mut ever: Option<u64> = None;
            let mut stored: Vec<Id> = Vec::new();
            for _ in 0..30 {
                let n = rng.random_range(0..4usize);
                match rng.random_range(0..3) {
                    0 => {
                        let ids = next.ids(&idx, n).unwrap();
                        let first = ever.map_or(0, |e| e + 1);
                        assert_eq!(
                            ids,
                            consecutive_ids(first as Id, n).unwrap(),
                            "round {round}"
                        );
                        idx.insert_batch(&ids, &vec![5; n]).unwrap();
                        next.stored(&ids);
                        stored.extend(&ids);
                    }
                    1 => {
                        let base = ever.map_or(0, |e| e + 1) as Id + rng.random_range(0..50);
                        let ids: Vec<Id> = (base..base + n as Id).collect();
                        idx.insert_batch(&ids, &vec![9; n]).unwrap();
                        next.stored(&ids);
                        stored.extend(&ids);
                    }
                    _ => {
                        if let Some(k) =
                            (!stored.is_empty()).then(|| rng.random_range(0..stored.len()))
                        {
                            assert!(idx.remove(stored.swap_remove(k)).unwrap());
                        }
                    }
                }
                if let Some(&top) = stored.iter().max() {
                    ever = Some(ever.map_or(top.into(), |e: u64| e.max(top.into())));
                }
                // A counter made now starts past the largest id held.
                let held = stored.iter().max().map_or(0, |&t| u64::from(t) + 1);
                assert_eq!(past_largest_id(&idx).unwrap(), held);
                assert_eq!(NextIds::default().ids(&idx, 1).unwrap(), vec![held as Id]);
            }
        }
    }

    #[test]
    fn default_ids_stop_at_the_largest_id() {
        use crate::index::LinearScan;
        let mut idx = LinearScan::new(64).unwrap();
        idx.insert(Id::MAX - 1, &[1]).unwrap();
        let mut next = NextIds::default();
        assert_eq!(next.ids(&idx, 1).unwrap(), vec![Id::MAX]);
        assert!(next.ids(&idx, 2).is_err());
        idx.insert(Id::MAX, &[1]).unwrap();
        next.stored(&[Id::MAX]);
        assert_eq!(next.ids(&idx, 0).unwrap(), Vec::<Id>::new());
        let e = next.ids(&idx, 1).unwrap_err().to_string();
        assert!(e.contains("ids from 4294967296 for 1 codes"), "{e}");
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
