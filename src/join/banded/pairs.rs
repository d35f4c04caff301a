//! The banded self-join over all rows: bands sorted and scanned in parallel, pairs mapped,
//! collected or streamed in a deterministic order.

use super::*;

/// The banded self-join, general form: the candidate pairs of the rows of `sigs` marked in
/// `active` (all if `None`), each passed through `map` in the worker threads; the kept results
/// go to `sink` band by band, in a deterministic order (band, key, rows) whatever the number
/// of threads. With `budget`, the bands are taken by chunks whose entries and sort scratch
/// take at most that many bytes ([`band_chunk`], one band at least).
pub(crate) fn banded_join_map<S, T, M, K>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    active: Option<&[bool]>,
    budget: Option<u64>,
    map: M,
    mut sink: K,
) -> Result<BandStats>
where
    S: AsRef<[u64]> + Sync,
    T: Send,
    M: Fn(Pair) -> Option<T> + Sync,
    K: FnMut(T),
{
    banding.check_sigs(sigs.bits())?;
    let rows = active_rows(sigs.len(), active)?;
    let mut stats = BandStats::default();
    let mut capped = CappedSet::default();
    let chunk = chunk_bands(rows.len(), budget);
    let w = banding.width;
    for first in (0..banding.bands).step_by(chunk) {
        let last = (first + chunk).min(banding.bands);
        // Phase 1: sort each band of the chunk and find its capped runs.
        let sorted: Vec<SortedBand> = band_entries(sigs, banding, &rows, first..last)
            .into_par_iter()
            .enumerate()
            .map_init(Vec::new, |scratch, (o, mut entries)| {
                sort_entries(&mut entries, w, scratch);
                let mut c = Vec::new();
                banding.capped_runs(first + o, &entries, &mut c);
                (entries, c)
            })
            .collect();
        let new_caps: Vec<CappedGroup> = sorted.iter().flat_map(|s| s.1.iter().copied()).collect();
        if !new_caps.is_empty() {
            stats.capped.extend_from_slice(&new_caps);
            capped = CappedSet::new(&stats.capped);
        }
        // Phase 2: the pairs of each band.
        let found: Vec<(Vec<T>, u64, u64)> = sorted
            .into_par_iter()
            .enumerate()
            .map(|(o, (entries, _))| {
                let band = first + o;
                let mut out = Vec::new();
                let mut count = 0u64;
                let checked = banding.scan_runs(
                    band,
                    &entries,
                    |i| sigs.row(i as usize),
                    &capped,
                    |i, j, distance| {
                        count += 1;
                        if let Some(t) = map(Pair { i, j, distance }) {
                            out.push(t);
                        }
                    },
                );
                (out, count, checked)
            })
            .collect();
        for (out, count, checked) in found {
            stats.candidates += count;
            stats.checked += checked;
            out.into_iter().for_each(&mut sink);
        }
    }
    Ok(stats)
}

/// Every candidate pair of the banded self-join of `sigs`, each once, sorted by `(i, j)`, and
/// the statistics (candidates, capped runs): the pairs that agree on some band's key in a run
/// that was not capped and lie within the Hamming filter. Parallel over the bands; the result
/// does not depend on the number of threads.
///
/// ```
/// use simlsh::join::{Banding, Pair, banded_join};
/// use simlsh::SignatureMatrix;
///
/// // 2 bands of 8 bits of 16-bit codes: rows 0 and 1 share the low byte, 1 and 2 the high one.
/// let sigs = SignatureMatrix::from_parts(16, vec![0x12ab_u64, 0x34ab, 0x34cd, 0x5678]).unwrap();
/// let banding = Banding::builder().bits(16).bands(2).width(8).build()?;
/// let (pairs, stats) = banded_join(&sigs, &banding)?;
/// assert_eq!(pairs, vec![Pair { i: 0, j: 1, distance: 3 }, Pair { i: 1, j: 2, distance: 4 }]);
/// assert_eq!(stats.candidates, 2);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::BitsMismatch`] if the widths differ; [`Error::InvalidParameter`] for more than
/// `2^32` rows.
pub fn banded_join<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
) -> Result<(Vec<Pair>, BandStats)> {
    let mut pairs = Vec::new();
    let stats = banded_join_map(sigs, banding, None, None, Some, |p| pairs.push(p))?;
    pairs.par_sort_unstable();
    Ok((pairs, stats))
}

/// [`banded_join`] streaming: each candidate pair goes to `sink` as its band is done (band
/// by band, in an order that does not depend on the number of threads), so no pair list is
/// held; the statistics are returned at the end.
///
/// # Errors
/// As [`banded_join`].
pub fn banded_join_each<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    sink: impl FnMut(Pair),
) -> Result<BandStats> {
    banded_join_map(sigs, banding, None, None, Some, sink)
}

/// [`banded_join_each`] of the rows other than `featureless` (row numbers in increasing
/// order, as [`self_join_active`](crate::join::self_join_active) takes them): pairs involving
/// a featureless row are never formed, and such rows take no part in the statistics (their
/// keys make no run). The same pairs and statistics as the join of the other rows alone,
/// their row numbers mapped back.
///
/// ```
/// use simlsh::join::{Banding, banded_join_active};
/// use simlsh::SignatureMatrix;
///
/// let sigs = SignatureMatrix::from_parts(16, vec![0u64, 0, 0x12ab, 0x12ab]).unwrap();
/// let banding = Banding::builder().bits(16).bands(2).width(8).build()?;
/// let mut pairs = Vec::new();
/// let stats = banded_join_active(&sigs, &banding, &[0, 1], |p| pairs.push((p.i, p.j)))?;
/// assert_eq!((pairs, stats.candidates), (vec![(2, 3)], 1));
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// As [`banded_join`]; [`Error::InvalidParameter`] if `featureless` is not increasing or
/// names a row beyond `sigs`.
pub fn banded_join_active<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    featureless: &[u32],
    sink: impl FnMut(Pair),
) -> Result<BandStats> {
    let active = with_features_flags(sigs.len(), featureless)?;
    banded_join_map(sigs, banding, Some(&active), None, Some, sink)
}
