//! The banded self-join over all rows: bands sorted and scanned in parallel, pairs mapped,
//! collected or streamed in a deterministic order.

use super::*;

/// The banded self-join, general form: the candidate pairs of the rows of `sigs` marked in
/// `active` (all if `None`), each passed through `map` in the worker threads; the kept results
/// go to `sink` band by band, in a deterministic order (band, key, rows) whatever the number
/// of threads. With `budget`, the bands are taken by chunks whose entries and sort scratch
/// take at most that many bytes ([`band_chunk`], one band at least). Bands of at most 32 bits
/// sort one-word entries ([`band_entry_bytes`]), wider ones `(key, row)` pairs: the same
/// pairs in the same order.
pub(crate) fn banded_join_map<S, T, M, K>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    active: Option<&[bool]>,
    budget: Option<u64>,
    map: M,
    sink: K,
) -> Result<BandStats>
where
    S: AsRef<[u64]> + Sync,
    T: Send,
    M: Fn(Pair) -> Option<T> + Sync,
    K: FnMut(T),
{
    if banding.width <= Packed::KEY_BITS {
        banded_join_entries::<Packed, _, _, _, _>(sigs, banding, active, budget, map, sink)
    } else {
        banded_join_entries::<(u64, u32), _, _, _, _>(sigs, banding, active, budget, map, sink)
    }
}

/// [`banded_join_map`] sorting entries of the form `E` (whose keys hold the band's width).
pub(super) fn banded_join_entries<E, S, T, M, K>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    active: Option<&[bool]>,
    budget: Option<u64>,
    map: M,
    mut sink: K,
) -> Result<BandStats>
where
    E: Entry,
    S: AsRef<[u64]> + Sync,
    T: Send,
    M: Fn(Pair) -> Option<T> + Sync,
    K: FnMut(T),
{
    debug_assert!(banding.width <= E::KEY_BITS);
    banding.check_sigs(sigs.bits())?;
    let rows = active_rows(sigs.len(), active)?;
    let mut stats = BandStats::default();
    let mut capped = CappedSet::default();
    let w = banding.width;
    let chunk = chunk_bands(rows.len(), E::BYTES, budget);
    for first in (0..banding.bands).step_by(chunk) {
        let last = (first + chunk).min(banding.bands);
        // Phase 1: sort each band of the chunk and find its capped runs.
        let sorted: Vec<SortedBand<E>> = band_entries(sigs, banding, &rows, first..last)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// `n` random codes of `bits` bits, each copying each band of `width` bits of an earlier
    /// row with probability ½ (so that runs of equal keys form, some longer than a small cap),
    /// a few with one bit flipped (keys one bit apart).
    fn codes(n: usize, bits: usize, width: usize, seed: u64) -> SignatureMatrix {
        let w = words_for(bits);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut data: Vec<u64> = Vec::with_capacity(n * w);
        for i in 0..n {
            let mut row: Vec<u64> = (0..w).map(|_| rng.random()).collect();
            if i > 0 && rng.random_range(0..4) > 0 {
                let src = rng.random_range(0..i);
                for band in 0..bits.div_ceil(width) {
                    if rng.random_range(0..2) == 0 {
                        for bit in band * width..((band + 1) * width).min(bits) {
                            let m = 1u64 << (bit % 64);
                            row[bit / 64] = (row[bit / 64] & !m) | (data[src * w + bit / 64] & m);
                        }
                    }
                }
                if rng.random_range(0..3) == 0 {
                    let bit = rng.random_range(0..bits);
                    row[bit / 64] ^= 1 << (bit % 64);
                }
            }
            row[w - 1] &= crate::signature::last_word_mask(bits);
            data.extend_from_slice(&row);
        }
        SignatureMatrix::from_parts(bits, data).unwrap()
    }

    /// The pairs in the order the join streams them, and its statistics, sorting entries of
    /// the form `E`, the bands by chunks within `budget`.
    fn streamed<E: Entry>(
        sigs: &SignatureMatrix,
        banding: &Banding,
        active: Option<&[bool]>,
        budget: Option<u64>,
    ) -> (Vec<Pair>, BandStats) {
        let mut pairs = Vec::new();
        let stats =
            banded_join_entries::<E, _, _, _, _>(sigs, banding, active, budget, Some, |p| {
                pairs.push(p)
            })
            .unwrap();
        (pairs, stats)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// One-word entries (bands of at most 32 bits) give the pairs of `(key, row)` entries,
        /// in the same order, with the same statistics (checked pairs, candidates, capped
        /// runs), whatever the chunking; the join picks them for such bands.
        #[test]
        fn packed_entries_give_the_pairs_of_wide_ones(
            bits in prop_oneof![Just(32usize), Just(64), Just(130), Just(256)],
            width in 1u32..=32,
            bands in 1usize..=12,
            n in prop_oneof![0usize..40, 250usize..400],
            max_distance in 0u32..=256,
            max_group in prop_oneof![Just(usize::MAX), 2usize..8],
            probes in 0u32..=1,
            inactive in 0usize..4,
            seed in any::<u64>(),
        ) {
            let width = width.min(bits as u32);
            let bands = bands.min(bits / width as usize);
            let banding = Banding::builder()
                .bits(bits)
                .bands(bands)
                .width(width)
                .max_distance(max_distance)
                .max_group(max_group)
                .probes(probes)
                .build()
                .unwrap();
            let sigs = codes(n, bits, width as usize, seed);
            // Every `inactive + 1`-th row left out when `inactive > 0`.
            let active: Vec<bool> = (0..n).map(|i| inactive == 0 || i % (inactive + 1) != 0).collect();
            let wide = streamed::<(u64, u32)>(&sigs, &banding, Some(&active), None);
            prop_assert_eq!(&streamed::<Packed>(&sigs, &banding, Some(&active), None), &wide);
            prop_assert_eq!(&streamed::<Packed>(&sigs, &banding, Some(&active), Some(0)), &wide);
            let mut chosen = Vec::new();
            let stats =
                banded_join_map(&sigs, &banding, Some(&active), None, Some, |p| chosen.push(p))
                    .unwrap();
            prop_assert_eq!(&(chosen, stats), &wide);
        }
    }

    /// Bands wider than 32 bits keep the `(key, row)` entries (sorted by radix passes up to 44
    /// bits, by comparison beyond) and give the brute-force pairs: those within the filter
    /// whose keys agree on some band, by the first such band.
    #[test]
    fn wide_bands_keep_two_word_entries() {
        for (width, seed) in [(33u32, 1u64), (40, 2), (44, 3), (45, 4), (64, 5)] {
            let (bits, bands, n) = (256usize, 256 / width as usize, 300);
            let banding = Banding::builder()
                .bits(bits)
                .bands(bands)
                .width(width)
                .max_distance(200)
                .build()
                .unwrap();
            let sigs = codes(n, bits, width as usize, seed);
            let (got, stats) = streamed::<(u64, u32)>(&sigs, &banding, None, None);
            let mut chosen = Vec::new();
            banded_join_map(&sigs, &banding, None, None, Some, |p| chosen.push(p)).unwrap();
            assert_eq!(chosen, got);
            let mut want = Vec::new();
            for i in 0..n {
                for j in i + 1..n {
                    let (a, b) = (sigs.row(i), sigs.row(j));
                    let d = sigs.distance(i, j);
                    if d <= 200 && (0..bands).any(|k| banding.key(k, a) == banding.key(k, b)) {
                        want.push(Pair {
                            i: i as u32,
                            j: j as u32,
                            distance: d,
                        });
                    }
                }
            }
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert!(want.len() > 100, "w={width}: {} pairs", want.len());
            assert_eq!(sorted, want, "w={width}");
            assert_eq!(stats.candidates, want.len() as u64);
        }
    }
}
