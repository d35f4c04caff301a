//! Helpers for sparse rows.
//!
//! Signers take sparse rows whose indices are strictly increasing and reject anything else
//! with [`Error::UnsortedIndices`], naming the row and the
//! index: silently reordering would change the order of floating-point additions, and
//! silently dropping or keeping a duplicate would change the vector. Use [`sort_and_merge`] to
//! bring a row into that form explicitly: duplicates are merged by summing their weights.

use std::borrow::Cow;
use std::ops::Range;

use rayon::prelude::*;
use sprs::{CompressedStorage, CsMatViewI, SpIndex};

use crate::error::{Error, Result};
use crate::io::float::{F32Values, refused_at};

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

/// A signed index type of foreign CSR arrays (SciPy's `int32` or `int64`) and its unsigned
/// twin, which `sprs` views take: the same bits, equal values for non-negative indices.
pub trait CsrIndex: SpIndex + Sync + Send {
    /// The unsigned type of the same width.
    type U: SpIndex + Sync + Send + PartialOrd;
    /// The same bits as the unsigned type.
    fn unsigned(s: &[Self]) -> &[Self::U];
}

impl CsrIndex for i32 {
    type U = u32;
    fn unsigned(s: &[i32]) -> &[u32] {
        bytemuck::cast_slice(s)
    }
}

impl CsrIndex for i64 {
    type U = u64;
    fn unsigned(s: &[i64]) -> &[u64] {
        bytemuck::cast_slice(s)
    }
}

/// The arrays of a CSR matrix from a foreign source (SciPy, Arrow), borrowed and checked once
/// ([`new`](Self::new)): `indptr` starts at 0, never decreases and ends within the `indices`,
/// which `data` matches in length. Its rows may still be unsorted or hold duplicates
/// ([`check_rows`](Self::check_rows) says which, and finds indices out of range);
/// [`view`](Self::view) is the sorted matrix as `sprs` takes it, [`canonical`](Self::canonical)
/// the matrix with each row sorted and duplicates summed by [`merge_into`]'s rule (`f64`,
/// rounded once), as every reader of the command line gives them.
///
/// ```
/// use simlsh::signers::sparse::CsrArrays;
///
/// // Row 0 repeats column 2: 1e8 + 1 - 1e8 sums to 1 in f64 (0 in f32).
/// let m = CsrArrays::new(&[0i64, 3, 4][..], &[2i64, 2, 2, 0][..], &[1e8f32, 1.0, -1e8, 5.0][..], 3)?;
/// assert!(!m.check_rows(0..2)?);
/// assert!(m.view().is_err());
/// let (p, i, d) = m.canonical(0..2)?.into_parts();
/// assert_eq!((p, i, d), (vec![0, 1, 2], vec![2u64, 0], vec![1.0f32, 5.0]));
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CsrArrays<'a, P, I, T = f32> {
    indptr: &'a [P],
    indices: &'a [I],
    data: &'a [T],
    cols: usize,
}

impl<'a, P: SpIndex + Sync, I: CsrIndex, T: Copy + Sync> CsrArrays<'a, P, I, T> {
    /// Checks the lengths and `indptr`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `indices` and `data` differ in length or `indptr` ends
    /// beyond them; [`Error::InvalidParameter`] naming the row where `indptr` is empty, does
    /// not start at 0, or decreases.
    pub fn new(indptr: &'a [P], indices: &'a [I], data: &'a [T], cols: usize) -> Result<Self> {
        if indices.len() != data.len() {
            return Err(Error::LengthMismatch {
                what: "sparse indices vs data",
                left: indices.len(),
                right: data.len(),
            });
        }
        let bad = |reason: String| Error::param("indptr", reason);
        if indptr.is_empty() {
            return Err(bad(
                "indptr is empty (it has one entry per row plus one)".into()
            ));
        }
        let at = |k: usize| indptr[k].try_index();
        if at(0) != Some(0) {
            return Err(bad("indptr must start at 0".into()));
        }
        let rows = indptr.len() - 1;
        if let Some(r) = (0..rows).find(|&r| match (at(r), at(r + 1)) {
            (Some(a), Some(b)) => a > b,
            _ => true,
        }) {
            return Err(bad(format!("row {r}: indptr decreases (or is negative)")));
        }
        let last = at(rows).expect("checked above");
        if last > indices.len() {
            return Err(Error::LengthMismatch {
                what: "indptr[-1] vs the number of indices",
                left: last,
                right: indices.len(),
            });
        }
        Ok(CsrArrays {
            indptr,
            indices,
            data,
            cols,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// `indptr`.
    pub fn indptr(&self) -> &'a [P] {
        self.indptr
    }

    /// The indices as their unsigned twins (the matrix's columns, once checked).
    pub fn indices(&self) -> &'a [I::U] {
        I::unsigned(self.indices)
    }

    /// The values.
    pub fn data(&self) -> &'a [T] {
        self.data
    }

    /// The span of row `r` in `indices` and `data`.
    pub fn span(&self, r: usize) -> Range<usize> {
        self.indptr[r].index()..self.indptr[r + 1].index()
    }

    /// Checks rows `rows`: every index non-negative and below the columns; returns whether
    /// every row is strictly increasing (sorted, no duplicates).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] or [`Error::InvalidParameter`] (a negative index) naming
    /// the first bad row.
    pub fn check_rows(&self, rows: Range<usize>) -> Result<bool> {
        // Branch-free passes over the unsigned view (they vectorise): a negative index reads
        // as at least 2^31 (2^63), so one comparison with `limit` finds it and the ones
        // beyond the columns; the order of non-negative values is the same signed and
        // unsigned.
        let unsigned = self.indices();
        let limit = I::U::from_usize(self.cols.min(I::max_value().index() + 1));
        let (a, b) = (
            self.indptr[rows.start].index(),
            self.indptr[rows.end].index(),
        );
        if unsigned[a..b].iter().fold(true, |ok, &c| ok & (c < limit)) {
            return Ok(rows.into_iter().all(|r| {
                let ids = &unsigned[self.span(r)];
                ids[1.min(ids.len())..]
                    .iter()
                    .zip(ids)
                    .fold(true, |ok, (b, a)| ok & (a < b))
            }));
        }
        let k = (a..b)
            .find(|&k| unsigned[k] >= limit)
            .expect("an index out of range");
        let r = rows
            .into_iter()
            .find(|&r| self.span(r).contains(&k))
            .expect("the row of an index");
        Err(match self.indices[k].try_index() {
            Some(c) if self.indices[k] >= I::zero() => Error::IndexOutOfRange {
                row: r,
                col: c as u64,
                dim: self.cols as u64,
            },
            _ => Error::param("indices", format!("row {r}: negative feature index")),
        })
    }

    /// The sorted matrix as a `sprs` view, every row checked.
    ///
    /// # Errors
    /// As [`check_rows`](Self::check_rows); [`Error::Unsupported`] when a row is unsorted or
    /// holds a duplicate (see [`canonical`](Self::canonical)).
    pub fn view(&self) -> Result<CsMatViewI<'a, T, I::U, P>> {
        if !self.check_rows(0..self.rows())? {
            return Err(Error::Unsupported(
                "sorted sparse indices without duplicates are needed (SciPy: X.sort_indices(), \
                 X.sum_duplicates())"
                    .into(),
            ));
        }
        let nnz = self.indptr[self.rows()].index();
        // SAFETY: `new` verified indptr (from 0, non-decreasing, within the indices) and
        // `check_rows` every row (strictly increasing, in 0..cols, so equal as unsigned).
        Ok(unsafe {
            CsMatViewI::new_unchecked(
                CompressedStorage::CSR,
                (self.rows(), self.cols),
                self.indptr,
                &self.indices()[..nnz],
                &self.data[..nnz],
            )
        })
    }
}

impl<'a, P: SpIndex + Sync, I: CsrIndex> CsrArrays<'a, P, I, f32> {
    /// Rows `rows` sorted, duplicates summed ([`merge_into`]): [`block`](Self::block) of
    /// the matrix's own values.
    ///
    /// # Errors
    /// As [`check_rows`](Self::check_rows).
    pub fn canonical(&self, rows: Range<usize>) -> Result<CsrBlock<'a, I::U>> {
        let s = self.indptr[rows.start].index()..self.indptr[rows.end].index();
        self.block(rows, Cow::Borrowed(&self.data[s]))
    }
}

impl<'a, P: SpIndex + Sync, I: CsrIndex, T: Copy + Sync> CsrArrays<'a, P, I, T> {
    /// Rows `rows` (checked) as a sorted matrix over `values`, the rows' values as `f32`
    /// (`values[k]` of entry `indptr[rows.start] + k`): borrowed where every row is sorted,
    /// else each row sorted and its duplicates summed ([`merge_into`]: `f64`, rounded once).
    ///
    /// # Errors
    /// As [`check_rows`](Self::check_rows); [`Error::LengthMismatch`] when `values` does not
    /// hold one value per entry of the rows.
    pub fn block(&self, rows: Range<usize>, values: Cow<'a, [f32]>) -> Result<CsrBlock<'a, I::U>> {
        let first = self.indptr[rows.start].index();
        let s = first..self.indptr[rows.end].index();
        if values.len() != s.len() {
            return Err(Error::LengthMismatch {
                what: "entries of the rows vs values",
                left: s.len(),
                right: values.len(),
            });
        }
        let shape = (rows.len(), self.cols);
        if self.check_rows(rows.clone())? {
            let indptr = self.indptr[rows.start..=rows.end]
                .iter()
                .map(|p| p.index() - first)
                .collect();
            return Ok(CsrBlock {
                indptr,
                indices: Cow::Borrowed(&self.indices()[s]),
                data: values,
                shape,
            });
        }
        let unsigned = self.indices();
        let merged: Vec<(Vec<I::U>, Vec<f32>)> = rows
            .into_par_iter()
            .map(|r| {
                let (a, b) = (self.span(r).start - first, self.span(r).end - first);
                let (mut ids, mut vals) = (Vec::with_capacity(b - a), Vec::with_capacity(b - a));
                merge_into(
                    &unsigned[first + a..first + b],
                    &values[a..b],
                    &mut ids,
                    &mut vals,
                );
                (ids, vals)
            })
            .collect();
        let mut indptr = Vec::with_capacity(merged.len() + 1);
        indptr.push(0usize);
        let (mut ids, mut vals) = (Vec::new(), Vec::new());
        for (i, v) in merged {
            ids.extend(i);
            vals.extend(v);
            indptr.push(ids.len());
        }
        Ok(CsrBlock {
            indptr,
            indices: Cow::Owned(ids),
            data: Cow::Owned(vals),
            shape,
        })
    }
}

impl<P: SpIndex + Sync, I: CsrIndex, T: F32Values> CsrArrays<'_, P, I, T> {
    /// Signs rows `rows` by `signer` into `out` (`words_for(signer.bits())` words a row), in
    /// parallel blocks of 256 rows: each block's values are converted to `f32` ([`to_f32`]),
    /// its rows checked and brought to canonical form ([`block`](Self::block)) and signed while
    /// its entries are still in cache. The result does not depend on the number of threads.
    ///
    /// ```
    /// use simlsh::signers::sparse::CsrArrays;
    /// use simlsh::signers::{Signer, SignerExt};
    /// use simlsh::HashingTrick;
    ///
    /// let s = HashingTrick::builder().bits(64).seed(1).build()?;
    /// // Row 1 repeats column 2 (summed) and is unsorted; `float64` values.
    /// let m = CsrArrays::new(&[0i64, 1, 3][..], &[4i32, 2, 2][..], &[1.0f64, 0.5, 0.5][..], 8)?;
    /// let mut out = vec![0u64; 2];
    /// m.sign_rows(&s, 0..2, &mut out)?;
    /// assert_eq!(out[1], s.sign_sparse(&[2], &[1.0])?.words()[0]);
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] when the matrix has more columns than the signer's
    /// dimension; [`check_rows`](Self::check_rows)'s errors and [`refused_at`]'s (named `data`)
    /// for a value `float32` does not hold, naming the first bad row of the matrix;
    /// [`Error::LengthMismatch`] when `out` does not hold the rows' signatures.
    ///
    /// [`to_f32`]: crate::io::float::to_f32
    pub fn sign_rows<S: crate::signers::Signer + ?Sized>(
        &self,
        signer: &S,
        rows: Range<usize>,
        out: &mut [u64],
    ) -> Result<()> {
        use crate::signers::SignerExt;
        if let Some(d) = signer.dim()
            && self.cols as u64 > d
        {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: self.cols as u64,
            });
        }
        let w = crate::signature::words_for(signer.bits());
        if rows.end > self.rows() {
            return Err(Error::param(
                "rows",
                format!("{rows:?} beyond the {} rows", self.rows()),
            ));
        }
        if out.len() != rows.len() * w {
            return Err(Error::LengthMismatch {
                what: "output words vs rows",
                left: out.len(),
                right: rows.len() * w,
            });
        }
        let results: Vec<Result<()>> = out
            .par_chunks_mut(SIGN_BLOCK * w)
            .enumerate()
            .map(|(k, dst)| {
                let lo = rows.start + k * SIGN_BLOCK;
                let hi = lo + dst.len() / w;
                let (a, b) = (self.span(lo).start, self.span(hi - 1).end);
                let values = T::to_f32s(&self.data[a..b]).map_err(|(k, v)| {
                    let row = lo + self.indptr[lo..=hi].partition_point(|p| p.index() <= a + k) - 1;
                    refused_at("data", row, self.indices()[a + k].index() as u64, v)
                })?;
                let sigs = self
                    .block(lo..hi, values)
                    .and_then(|block| signer.sign_csr(block.view()))
                    .map_err(|e| e.offset_rows(lo))?;
                dst.copy_from_slice(sigs.as_slice());
                Ok(())
            })
            .collect();
        results.into_iter().collect()
    }
}

/// Rows of a sparse matrix checked and signed together by [`CsrArrays::sign_rows`].
const SIGN_BLOCK: usize = 256;

/// Rows of a [`CsrArrays`] in canonical form (sorted, no duplicates, indices in range), borrowed
/// or merged: [`view`](Self::view) is the matrix every signer and [`CsrVectors`] take.
///
/// [`CsrVectors`]: crate::verify::CsrVectors
#[derive(Clone, Debug)]
pub struct CsrBlock<'a, U: Clone> {
    indptr: Vec<usize>,
    indices: Cow<'a, [U]>,
    data: Cow<'a, [f32]>,
    shape: (usize, usize),
}

impl<U: SpIndex> CsrBlock<'_, U> {
    /// The rows as a `sprs` view.
    pub fn view(&self) -> CsMatViewI<'_, f32, U, usize> {
        // SAFETY: `CsrArrays::block` built `indptr` from 0, non-decreasing, ending at the
        // number of indices and values, and checked (`check_rows`) or made (`merge_into`)
        // every row strictly increasing with indices below the columns.
        unsafe {
            CsMatViewI::new_unchecked(
                CompressedStorage::CSR,
                self.shape,
                &self.indptr[..],
                &self.indices[..],
                &self.data[..],
            )
        }
    }

    /// `(indptr, indices, data)`, owned.
    pub fn into_parts(self) -> (Vec<usize>, Vec<U>, Vec<f32>) {
        (
            self.indptr,
            self.indices.into_owned(),
            self.data.into_owned(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_arrays_check_and_canonicalise() {
        // Rows: sorted; unsorted with a duplicate; empty.
        let (p, i, d) = (
            vec![0i32, 2, 5, 5],
            vec![1i32, 3, 4, 0, 4],
            vec![1f32, 2.0, 3.0, 4.0, 5.0],
        );
        let m = CsrArrays::new(&p[..], &i[..], &d[..], 5).unwrap();
        assert!(m.check_rows(0..1).unwrap() && !m.check_rows(0..3).unwrap());
        assert!(m.view().is_err());
        let (bp, bi, bd) = m.canonical(0..3).unwrap().into_parts();
        assert_eq!(
            (bp, bi, bd),
            (
                vec![0, 2, 4, 4],
                vec![1u32, 3, 0, 4],
                vec![1.0, 2.0, 4.0, 8.0]
            )
        );
        // A sorted block is borrowed as is, its indptr from 0.
        let (bp, bi, _) = m.canonical(0..1).unwrap().into_parts();
        assert_eq!((bp, bi), (vec![0, 2], vec![1u32, 3]));
        // Bad arrays: each error names what is wrong.
        let e = |p: &[i32], i: &[i32], cols| {
            CsrArrays::new(p, i, &d[..i.len()], cols)
                .and_then(|m| m.check_rows(0..m.rows()))
                .unwrap_err()
                .to_string()
        };
        assert!(e(&[1, 2], &[0, 1], 5).contains("start at 0"));
        assert!(e(&[0, 2, 1], &[0, 1], 5).contains("row 1: indptr decreases"));
        assert!(e(&[0, 3], &[0, 1], 5).contains("indptr[-1]"));
        assert!(e(&[0, 1, 2], &[0, -1], 5).contains("row 1: negative feature index"));
        assert!(e(&[0, 1, 2], &[0, 5], 5).contains('5'));
    }

    #[test]
    fn sorts_and_sums_duplicates() {
        let (mut i, mut w) = (vec![5, 1, 5, 3, 1], vec![1.0, 2.0, 0.5, -1.0, -2.0]);
        sort_and_merge(&mut i, &mut w);
        assert_eq!(i, vec![1, 3, 5]);
        assert_eq!(w, vec![0.0, -1.0, 1.5]);
    }

    #[test]
    fn sign_rows_equals_signing_the_canonical_matrix() {
        use crate::signers::SignerExt;
        use rand::{RngExt, SeedableRng};
        let s = crate::HashingTrick::builder()
            .bits(130)
            .seed(4)
            .build()
            .unwrap();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        // 700 rows (three blocks), some with repeated and unsorted columns.
        let (mut p, mut i, mut d) = (vec![0i64], Vec::new(), Vec::new());
        for _ in 0..700 {
            for _ in 0..rng.random_range(0..6) {
                i.push(rng.random_range(0i32..40));
                d.push(f64::from(rng.random_range(-2.0f32..2.0)));
            }
            p.push(i.len() as i64);
        }
        let d32: Vec<f32> = d.iter().map(|&v| v as f32).collect();
        let want = s
            .sign_csr(
                CsrArrays::new(&p[..], &i[..], &d32[..], 40)
                    .unwrap()
                    .canonical(0..700)
                    .unwrap()
                    .view(),
            )
            .unwrap();
        let w = want.as_slice().len() / 700;
        let mut out = vec![0u64; 700 * w];
        let m32 = CsrArrays::new(&p[..], &i[..], &d32[..], 40).unwrap();
        m32.sign_rows(&s, 0..700, &mut out).unwrap();
        assert_eq!(out, want.as_slice());
        let m64 = CsrArrays::new(&p[..], &i[..], &d[..], 40).unwrap();
        let mut out = vec![0u64; 400 * w];
        m64.sign_rows(&s, 300..700, &mut out).unwrap();
        assert_eq!(out, want.as_slice()[300 * w..]);
        // A value float32 does not hold, named by its row and column in the whole matrix.
        let k = p[500] as usize;
        d[k] = 1e300;
        let m64 = CsrArrays::new(&p[..], &i[..], &d[..], 40).unwrap();
        let e = m64
            .sign_rows(&s, 300..700, &mut out)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("row 500, column {}: value 1e300 is beyond", i[k])),
            "{e}"
        );
        let narrow = crate::HyperplaneSigner::builder()
            .dim(10)
            .bits(64)
            .build()
            .unwrap();
        assert!(matches!(
            m64.sign_rows(&narrow, 0..0, &mut []),
            Err(Error::DimensionMismatch {
                expected: 10,
                got: 40
            })
        ));
    }
}
