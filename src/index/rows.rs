//! Rows of `(id, code)` pairs, the form of every index's main part or delta: merged in id
//! order, or filtered in place. The batch updates of all the indexes share these.

/// The rows of `a` (ids increasing, codes row-major, `w` words each) and the rows `order` of
/// `b` (ids increasing along `order`), merged in increasing id order (one pass).
pub(crate) fn merge_by_id(
    w: usize,
    (a_ids, a_codes): (&[u32], &[u64]),
    (b_ids, b_codes): (&[u32], &[u64]),
    order: &[usize],
) -> (Vec<u32>, Vec<u64>) {
    let total = a_ids.len() + order.len();
    let (mut ids, mut codes) = (Vec::with_capacity(total), Vec::with_capacity(total * w));
    let (mut i, mut j) = (0, 0);
    while i < a_ids.len() || j < order.len() {
        if j == order.len() || (i < a_ids.len() && a_ids[i] < b_ids[order[j]]) {
            ids.push(a_ids[i]);
            codes.extend_from_slice(&a_codes[i * w..(i + 1) * w]);
            i += 1;
        } else {
            let r = order[j];
            ids.push(b_ids[r]);
            codes.extend_from_slice(&b_codes[r * w..(r + 1) * w]);
            j += 1;
        }
    }
    (ids, codes)
}

/// Keeps, in place and in order, the rows from `from` on whose id `keep` accepts (rows
/// before `from` are left alone; `keep` sees the ids in row order); returns how many rows
/// were dropped.
pub(crate) fn retain_rows(
    ids: &mut Vec<u32>,
    codes: &mut Vec<u64>,
    w: usize,
    from: usize,
    mut keep: impl FnMut(u32) -> bool,
) -> usize {
    let mut kept = from;
    for r in from..ids.len() {
        if keep(ids[r]) {
            ids[kept] = ids[r];
            codes.copy_within(r * w..(r + 1) * w, kept * w);
            kept += 1;
        }
    }
    let dropped = ids.len() - kept;
    ids.truncate(kept);
    codes.truncate(kept * w);
    dropped
}

/// `ids` sorted, each once: the removal list that [`not_in_sorted`] reads.
pub(crate) fn sorted_unique(mut ids: Vec<u32>) -> Vec<u32> {
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// A `keep` test for [`retain_rows`] over ids visited in increasing order: false for the ids
/// of `sorted` (increasing), by one forward pass over it.
pub(crate) fn not_in_sorted(sorted: &[u32]) -> impl FnMut(u32) -> bool + '_ {
    let mut j = 0;
    move |id| {
        while j < sorted.len() && sorted[j] < id {
            j += 1;
        }
        !(j < sorted.len() && sorted[j] == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_merge_by_id_and_filter_in_place() {
        let (a_ids, a_codes) = (vec![1u32, 4, 9], vec![10u64, 11, 40, 41, 90, 91]);
        let (b_ids, b_codes) = (vec![7u32, 0, 12], vec![70u64, 71, 0, 1, 120, 121]);
        let (ids, codes) = merge_by_id(2, (&a_ids, &a_codes), (&b_ids, &b_codes), &[1, 0, 2]);
        assert_eq!(ids, vec![0, 1, 4, 7, 9, 12]);
        assert_eq!(codes, vec![0, 1, 10, 11, 40, 41, 70, 71, 90, 91, 120, 121]);
        let (mut ids, mut codes) = (ids, codes);
        assert_eq!(retain_rows(&mut ids, &mut codes, 2, 1, |id| id % 2 == 1), 2);
        assert_eq!(ids, vec![0, 1, 7, 9]);
        assert_eq!(codes, vec![0, 1, 10, 11, 70, 71, 90, 91]);
        let mut keep = not_in_sorted(&[1, 7, 8]);
        let kept: Vec<u32> = [0u32, 1, 7, 9].into_iter().filter(|&id| keep(id)).collect();
        assert_eq!(kept, vec![0, 9]);
    }
}
