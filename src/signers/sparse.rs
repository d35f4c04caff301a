//! Helpers for sparse rows.
//!
//! Signers take sparse rows whose indices are strictly increasing and reject anything else
//! with [`Error::UnsortedIndices`](crate::Error::UnsortedIndices), naming the row and the
//! index: silently reordering would change the order of floating-point additions, and
//! silently dropping or keeping a duplicate would change the vector. Use [`sort_and_merge`] to
//! bring a row into that form explicitly: duplicates are merged by summing their weights.

/// Sorts `(ids, weights)` by id and merges duplicate ids by summing their weights (in `f64`,
/// in input order, rounded once to `f32`). Entries whose merged weight is exactly zero are
/// kept (they do not change the signature).
pub fn sort_and_merge(ids: &mut Vec<u64>, weights: &mut Vec<f32>) {
    assert_eq!(
        ids.len(),
        weights.len(),
        "ids and weights must have equal lengths"
    );
    let (i, w) = (std::mem::take(ids), std::mem::take(weights));
    merge_into(&i, &w, ids, weights);
}

/// [`sort_and_merge`] of a row given by slices of any id type (a CSR row's own indices, as
/// SciPy stores them), appending the merged row to `out_ids`/`out_weights`: the one rule by
/// which every reader and binding gives duplicate entries their meaning (SciPy's: summed).
pub fn merge_into<I: Copy + Ord>(
    ids: &[I],
    weights: &[f32],
    out_ids: &mut Vec<I>,
    out_weights: &mut Vec<f32>,
) {
    let mut pairs: Vec<(I, f32)> = ids.iter().copied().zip(weights.iter().copied()).collect();
    pairs.sort_by_key(|p| p.0); // stable: equal ids keep their input order
    let mut k = 0;
    while k < pairs.len() {
        let id = pairs[k].0;
        let mut sum = 0f64;
        while k < pairs.len() && pairs[k].0 == id {
            sum += pairs[k].1 as f64;
            k += 1;
        }
        out_ids.push(id);
        out_weights.push(sum as f32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_and_sums_duplicates() {
        let (mut i, mut w) = (vec![5, 1, 5, 3, 1], vec![1.0, 2.0, 0.5, -1.0, -2.0]);
        sort_and_merge(&mut i, &mut w);
        assert_eq!(i, vec![1, 3, 5]);
        assert_eq!(w, vec![0.0, -1.0, 1.5]);
    }
}
