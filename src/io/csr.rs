//! Building the CSR matrices of the sparse readers from entries in any order: rows sorted,
//! duplicate entries summed as by [`sort_and_merge`] (in `f64`, in stored order, rounded
//! once), in place where the input is already CSR.

use sprs::CsMatI;

use super::npy::decode::Int;
#[cfg(feature = "npz")]
use super::npy::decode::first_above;
use crate::signers::sparse::sort_and_merge;

/// The CSR matrix type of every sparse reader: `f32` values, `u32` column indices, `usize`
/// row pointers.
pub type Csr = CsMatI<f32, u32, usize>;

/// The largest number of columns a [`Csr`] holds (column indices are `u32`).
pub(crate) const MAX_COLS: u64 = u32::MAX as u64;

/// Sorts every row of a CSR structure in place and merges duplicates, compacting the arrays.
/// `indptr` must start at 0, never decrease and end at `indices.len() == data.len()`.
pub(crate) fn canonicalize(indptr: &mut [usize], indices: &mut Vec<u32>, data: &mut Vec<f32>) {
    let (mut ids, mut vals) = (Vec::new(), Vec::new());
    let (mut w, mut a) = (0, 0);
    for r in 0..indptr.len().saturating_sub(1) {
        let b = indptr[r + 1];
        if indices[a..b].windows(2).all(|p| p[0] < p[1]) {
            if w != a {
                indices.copy_within(a..b, w);
                data.copy_within(a..b, w);
            }
            w += b - a;
        } else {
            ids.clear();
            vals.clear();
            ids.extend(indices[a..b].iter().map(|&i| i as u64));
            vals.extend_from_slice(&data[a..b]);
            sort_and_merge(&mut ids, &mut vals);
            for (k, (&i, &v)) in ids.iter().zip(&vals).enumerate() {
                indices[w + k] = i as u32;
                data[w + k] = v;
            }
            w += ids.len();
        }
        indptr[r + 1] = w;
        a = b;
    }
    indices.truncate(w);
    data.truncate(w);
}

/// The CSR matrix of `(r[k], c[k], v[k])` entries, all in range: a stable counting sort by
/// row, then [`canonicalize`].
pub(crate) fn from_coo<R: Int>(
    rows: usize,
    cols: usize,
    r: &[R],
    c: &[u32],
    v: &[f32],
) -> Result<Csr, String> {
    debug_assert!(r.len() == c.len() && c.len() == v.len());
    let mut indptr = vec![0usize; rows + 1];
    for &i in r {
        indptr[i.get() as usize + 1] += 1;
    }
    for i in 0..rows {
        indptr[i + 1] += indptr[i];
    }
    let mut indices = vec![0u32; r.len()];
    let mut data = vec![0f32; r.len()];
    let mut next = indptr[..rows].to_vec();
    for k in 0..r.len() {
        let p = &mut next[r[k].get() as usize];
        indices[*p] = c[k];
        data[*p] = v[k];
        *p += 1;
    }
    drop(next);
    canonicalize(&mut indptr, &mut indices, &mut data);
    finish(rows, cols, indptr, indices, data)
}

/// The CSR matrix of a CSC structure (`indptr` over columns, `indices` rows, all in range).
#[cfg(feature = "npz")]
pub(crate) fn from_csc(
    rows: usize,
    cols: usize,
    indptr: &[usize],
    indices: &[u32],
    data: &[f32],
) -> Result<Csr, String> {
    let mut out_ptr = vec![0usize; rows + 1];
    for &i in indices {
        out_ptr[i as usize + 1] += 1;
    }
    for i in 0..rows {
        out_ptr[i + 1] += out_ptr[i];
    }
    let mut out_idx = vec![0u32; indices.len()];
    let mut out_val = vec![0f32; indices.len()];
    let mut next = out_ptr[..rows].to_vec();
    for c in 0..cols {
        for k in indptr[c]..indptr[c + 1] {
            let p = &mut next[indices[k] as usize];
            out_idx[*p] = c as u32;
            out_val[*p] = data[k];
            *p += 1;
        }
    }
    drop(next);
    canonicalize(&mut out_ptr, &mut out_idx, &mut out_val);
    finish(rows, cols, out_ptr, out_idx, out_val)
}

/// Validates the rows of a CSR structure read from a file and brings them to canonical form:
/// every index must be at most `lim` (as stored); rows found unsorted or with duplicates are
/// sorted and merged in place ([`canonicalize`]). `Err(k)`: entry `k` is above `lim`.
/// `indptr` must start at 0, never decrease and end at `indices.len() == data.len()`.
#[cfg(feature = "npz")]
pub(crate) fn validate_rows(
    indptr: &mut [usize],
    indices: &mut Vec<u32>,
    data: &mut Vec<f32>,
    lim: u64,
) -> Result<(), usize> {
    let mut canonical = true;
    for r in 0..indptr.len().saturating_sub(1) {
        let (a, b) = (indptr[r], indptr[r + 1]);
        let s = &indices[a..b];
        let Some(&last) = s.last() else { continue };
        // One pass, vectorised: strictly increasing, so all are below the last.
        if s.windows(2).fold(true, |ok, w| ok & (w[0] < w[1])) && last as u64 <= lim {
            continue;
        }
        if let Some(k) = first_above(s, lim) {
            return Err(a + k);
        }
        canonical = false;
    }
    if !canonical {
        canonicalize(indptr, indices, data);
    }
    Ok(())
}

/// The matrix of a structure checked by [`validate_rows`] (and `cols` at most
/// [`MAX_COLS`]), without checking it again.
#[cfg(feature = "npz")]
pub(crate) fn finish_validated(
    rows: usize,
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    data: Vec<f32>,
) -> Csr {
    debug_assert!(
        Csr::try_new((rows, cols), indptr.clone(), indices.clone(), data.clone()).is_ok()
    );
    // SAFETY: the caller checked that `indptr` has `rows + 1` entries, starts at 0, never
    // decreases and ends at `indices.len() == data.len()`; `validate_rows` that every row is
    // strictly increasing and below `cols` (sorting and merging the rows that were not);
    // `cols <= u32::MAX` fits the `u32` indices, and `rows + 1` entries fit `usize`. These
    // are the invariants `CsMatI::try_new` checks.
    unsafe {
        Csr::new_unchecked(
            sprs::CompressedStorage::CSR,
            (rows, cols),
            indptr,
            indices,
            data,
        )
    }
}

/// The matrix of a canonical CSR structure (rows sorted, indices below `cols`, `cols` at
/// most [`MAX_COLS`]); a violation is an error, not a panic.
pub(crate) fn finish(
    rows: usize,
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    data: Vec<f32>,
) -> Result<Csr, String> {
    Csr::try_new((rows, cols), indptr, indices, data)
        .map_err(|(_, _, _, e)| format!("not a valid CSR matrix: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coo_entries_are_sorted_and_merged_per_row() {
        let m = from_coo(
            3,
            5,
            &[2u32, 0, 2, 2, 0],
            &[4, 1, 0, 4, 3],
            &[1.0, 2.0, 3.0, 0.5, 4.0],
        )
        .unwrap();
        assert_eq!(m.indptr().raw_storage(), &[0, 2, 2, 4]);
        assert_eq!(m.indices(), &[1, 3, 0, 4]);
        assert_eq!(m.data(), &[2.0, 4.0, 3.0, 1.5]);
    }

    #[test]
    fn canonicalize_compacts_in_place() {
        let mut p = vec![0, 3, 5, 6];
        let mut i = vec![2, 2, 1, 0, 4, 3];
        let mut d = vec![1.0, 2.0, 5.0, 1.0, 1.0, 7.0];
        canonicalize(&mut p, &mut i, &mut d);
        assert_eq!(p, vec![0, 2, 4, 5]);
        assert_eq!(i, vec![1, 2, 0, 4, 3]);
        assert_eq!(d, vec![5.0, 3.0, 1.0, 1.0, 7.0]);
    }

    #[cfg(feature = "npz")]
    #[test]
    fn csc_transposes_to_the_same_matrix() {
        // [[0, 2, 0], [3, 0, 4]] by columns.
        let m = from_csc(2, 3, &[0, 1, 2, 3], &[1, 0, 1], &[3.0, 2.0, 4.0]).unwrap();
        assert_eq!(m.indptr().raw_storage(), &[0, 1, 3]);
        assert_eq!(m.indices(), &[1, 0, 2]);
        assert_eq!(m.data(), &[2.0, 3.0, 4.0]);
    }

    #[test]
    fn a_column_count_beyond_u32_is_an_error_not_a_panic() {
        assert!(finish(1, 1 << 32, vec![0, 0], vec![], vec![]).is_err());
        assert!(finish(1, u32::MAX as usize, vec![0, 0], vec![], vec![]).is_ok());
    }
}
