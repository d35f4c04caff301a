//! The candidate pairs of one band among a partition of rows given as `(id, signature)`
//! arrays, for distributed jobs.

use super::*;

/// `band` is one of the banding's bands.
fn check_band(banding: &Banding, band: usize) -> Result<()> {
    if band >= banding.bands {
        return Err(Error::param(
            "band",
            format!("band {band} of a banding with {} bands", banding.bands),
        ));
    }
    Ok(())
}

/// The candidate pairs that band `band` reports among a partition of rows, given as the
/// caller's `ids` and their signatures `sigs` (row-major, `words_for(f)` words per row): the
/// per-partition step of a distributed banded join.
///
/// The rows may hold any keys of the band (e.g. one or several `(band, key)` groups of a
/// job that emitted [`Banding::keys`] per document and grouped by them) in any order: they
/// are grouped by their key here, and a pair goes to `sink` (as `a < b` by id) when it agrees
/// on `band`, lies within the Hamming filter, and agrees on no earlier band in a run that was
/// not capped; `capped` lists the runs skipped over the whole data set (e.g. counted by the
/// job beforehand; empty when there are none). The union over every band and partition is
/// then the candidate set of [`banded_join`], each pair once, with sizes counted over the
/// rows given here. Runs of this partition longer than the cap are skipped and returned.
/// Sequential: the job runs partitions in parallel.
///
/// ```
/// use simlsh::join::{Banding, IdPair, band_partition};
///
/// let banding = Banding::builder().bits(16).bands(2).width(8).build()?;
/// // Band 1 (the high byte) of three documents: ids 70 and 30 share key 0x34.
/// let ids = [70u64, 30, 99];
/// let sigs = [0x34ab_u64, 0x34cd, 0x5678];
/// let mut pairs = Vec::new();
/// let capped = band_partition(&banding, 1, &ids, &sigs, &[], |p| pairs.push(p))?;
/// assert_eq!(pairs, vec![IdPair { i: 30, j: 70, distance: 4 }]);
/// assert!(capped.is_empty());
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `band >= b` or the banding probes
/// ([`BandingBuilder::probes`]: its pairs cross keys, so a partition of whole `(band, key)`
/// runs does not hold them: [`probe_partition`] joins its partitions); [`Error::LengthMismatch`] if `sigs` does not
/// hold one signature per id; [`Error::PaddingBits`] if a row has bits set beyond `f`.
pub fn band_partition(
    banding: &Banding,
    band: usize,
    ids: &[u64],
    sigs: &[u64],
    capped: &[CappedGroup],
    mut sink: impl FnMut(IdPair),
) -> Result<Vec<CappedGroup>> {
    check_band(banding, band)?;
    if banding.probes > 0 {
        return Err(Error::param(
            "probes",
            "a multi-probe banding pairs rows across keys: its partitions hold (band, half, \
             probe key) groups, joined by probe_partition",
        ));
    }
    let sigs = partition_rows(banding, ids, sigs)?;
    // Rows ordered by id, so that runs come out in id order whatever the input order.
    let mut order: Vec<u32> = (0..ids.len() as u32).collect();
    order.sort_unstable_by_key(|&r| ids[r as usize]);
    let start = band * banding.width as usize;
    let mut entries: Vec<(u64, u32)> = order
        .iter()
        .map(|&r| (band_bits(sigs.row(r as usize), start, banding.width), r))
        .collect();
    entries.sort_unstable_by_key(|&(k, r)| (k, ids[r as usize]));
    let mut mine = Vec::new();
    banding.capped_runs(band, &entries, &mut mine);
    let set = CappedSet::new(capped);
    banding.scan_runs(
        band,
        &entries,
        |r| sigs.row(r as usize),
        &set,
        |ra, rb, distance| {
            let (a, b) = (ids[ra as usize], ids[rb as usize]);
            sink(IdPair {
                i: a.min(b),
                j: a.max(b),
                distance,
            });
        },
    );
    Ok(mine)
}

/// A partition's signatures, checked against its ids.
fn partition_rows<'a>(
    banding: &Banding,
    ids: &[u64],
    sigs: &'a [u64],
) -> Result<SignatureMatrix<&'a [u64]>> {
    let sigs = SignatureMatrix::from_parts(banding.bits, sigs)?;
    if sigs.len() != ids.len() {
        return Err(Error::LengthMismatch {
            what: "signatures vs ids",
            left: sigs.len(),
            right: ids.len(),
        });
    }
    if u32::try_from(ids.len()).is_err() {
        return Err(Error::param("ids", "more than 2^32 rows in one partition"));
    }
    Ok(sigs)
}

/// The two halves of a band's key that a distributed multi-probe join keys apart: half 0 is
/// the low `w − ⌊w/2⌋` bits, half 1 the high `⌊w/2⌋` (empty for `w = 1`).
fn half_mask(width: u32, half: usize) -> u64 {
    let lo = width - width / 2;
    let low = (1u64 << lo) - 1;
    let all = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    if half == 0 { low } else { all & !low }
}

impl Banding {
    /// The key of `sig` in copy `half` (0 or 1) of `band` of a distributed multi-probe join:
    /// the band's key with the bits of that half cleared. Two keys one bit apart have the
    /// same key in exactly one copy (the one whose half holds the bit they differ in), so
    /// rows grouped by `(band, half, probe key)` meet every pair of keys within one bit in one
    /// group: two rows per band and document, where one row per probed key would take
    /// `1 + w`. See [`probe_partition`].
    ///
    /// ```
    /// use simlsh::join::Banding;
    ///
    /// let banding = Banding::builder().bits(16).bands(2).width(8).probes(1).build()?;
    /// let sig = [0x34ab_u64];
    /// assert_eq!(banding.key(0, &sig), 0xab);
    /// assert_eq!(banding.probe_key(0, 0, &sig), 0xa0); // low 4 bits cleared
    /// assert_eq!(banding.probe_key(0, 1, &sig), 0x0b); // high 4 bits cleared
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Panics
    /// If `band >= b`, `half > 1` or `sig` is shorter than the band's end.
    pub fn probe_key(&self, band: usize, half: usize, sig: &[u64]) -> u64 {
        assert!(half < 2, "half {half} of 2");
        self.key(band, sig) & !half_mask(self.width, half)
    }
}

/// The candidate pairs that band `band` of a banding probing keys one bit apart
/// ([`BandingBuilder::probes`]) reports among a partition of rows of copy `half` of the band,
/// given as the caller's `ids` and their signatures `sigs`: the per-partition step of a
/// distributed banded join that probes.
///
/// A job emits, per document and band, the two rows `(band, half,` [`Banding::probe_key`]`)`
/// and groups by them, so that a partition of copy `half` holds whole groups of rows whose
/// keys agree outside that half. Copy 0 reports the pairs of equal keys (runs of more rows
/// than the cap skipped and returned, as [`band_partition`] does) and the pairs whose keys
/// differ in one bit of half 0; copy 1 those whose keys differ in one bit of half 1. A pair
/// goes to `sink` (as `a < b` by id) when it lies within the Hamming filter and no earlier
/// band's keys lie within one bit in runs that were not capped (`capped`: the runs capped over
/// the whole data set, empty when there are none); pairs of runs where either run is longer
/// than the cap are skipped, as the in-process join skips them. The union over both copies of
/// every band and every partition is then the candidate set of [`banded_join`] with the same
/// banding, each pair once.
///
/// ```
/// use simlsh::join::{Banding, IdPair, probe_partition};
///
/// let banding = Banding::builder().bits(16).bands(2).width(8).probes(1).build()?;
/// // Band 0 keys 0xab and 0xaf differ in bit 2 (half 0): copy 0 pairs them.
/// let ids = [70u64, 30];
/// let sigs = [0x11ab_u64, 0x22af];
/// let mut pairs = Vec::new();
/// probe_partition(&banding, 0, 0, &ids, &sigs, &[], |p| pairs.push(p))?;
/// assert_eq!(pairs, vec![IdPair { i: 30, j: 70, distance: 5 }]);
/// pairs.clear();
/// probe_partition(&banding, 0, 1, &ids, &sigs, &[], |p| pairs.push(p))?;
/// assert!(pairs.is_empty());
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `band >= b`, `half > 1` or the banding does not probe
/// ([`band_partition`] joins it); [`Error::LengthMismatch`] if `sigs` does not hold one
/// signature per id; [`Error::PaddingBits`] if a row has bits set beyond `f`.
pub fn probe_partition(
    banding: &Banding,
    band: usize,
    half: usize,
    ids: &[u64],
    sigs: &[u64],
    capped: &[CappedGroup],
    mut sink: impl FnMut(IdPair),
) -> Result<Vec<CappedGroup>> {
    check_band(banding, band)?;
    if half > 1 {
        return Err(Error::param("half", format!("half {half} of a band's 2")));
    }
    if banding.probes != 1 {
        return Err(Error::param(
            "probes",
            "the banding does not probe: its partitions are joined by band_partition",
        ));
    }
    let sigs = partition_rows(banding, ids, sigs)?;
    let start = band * banding.width as usize;
    let mut entries: Vec<(u64, u32)> = (0..ids.len() as u32)
        .map(|r| (band_bits(sigs.row(r as usize), start, banding.width), r))
        .collect();
    entries.sort_unstable_by_key(|&(k, r)| (k, ids[r as usize]));
    let set = CappedSet::new(capped);
    let row = |r: u32| sigs.row(r as usize);
    let cap = banding.max_group;
    let mut emit = |ra: u32, rb: u32, distance: u32| {
        let (a, b) = (ids[ra as usize], ids[rb as usize]);
        sink(IdPair {
            i: a.min(b),
            j: a.max(b),
            distance,
        });
    };
    let mut xor = vec![0u64; words_for(banding.bits)];
    let mut check = |ra: u32, rb: u32, emit: &mut dyn FnMut(u32, u32, u32)| {
        let (a, b) = (row(ra), row(rb));
        if let Some(d) = banding.filtered_distance(a, b) {
            for ((x, &u), &v) in xor.iter_mut().zip(a).zip(b) {
                *x = u ^ v;
            }
            if !banding.reported_before(band, &xor, a, b, &set) {
                emit(ra, rb, d);
            }
        }
    };
    // The runs of equal keys, in key order: (key, start, end).
    let mut runs: Vec<(u64, usize, usize)> = Vec::new();
    for run in entries.chunk_by(|x, y| x.0 == y.0) {
        let s = runs.last().map_or(0, |r| r.2);
        runs.push((run[0].0, s, s + run.len()));
    }
    let mut mine = Vec::new();
    if half == 0 {
        banding.capped_runs(band, &entries, &mut mine);
        let (mut codes, mut found) = (Vec::new(), Vec::new());
        for &(_, s, e) in &runs {
            let run = &entries[s..e];
            if run.len() < 2 || run.len() > cap {
                continue;
            }
            if run.len() >= BIG_RUN {
                banding.big_run(band, run, &row, &set, &mut codes, &mut found);
                for &(ra, rb, d) in &found {
                    emit(ra, rb, d);
                }
                continue;
            }
            for (p, &(_, ra)) in run.iter().enumerate() {
                for &(_, rb) in &run[p + 1..] {
                    check(ra, rb, &mut emit);
                }
            }
        }
    }
    // Keys one bit apart, the bit in this half: for each such bit, the runs whose key has it
    // clear meet those with the key that has it set (those keys come in increasing order).
    let mask = half_mask(banding.width, half);
    for i in (0..banding.width).filter(|&i| mask >> i & 1 == 1) {
        super::scan::runs_one_bit_apart(&runs, 1u64 << i, |&(_, s0, e0), &(_, s1, e1)| {
            if e0 - s0 > cap || e1 - s1 > cap {
                return;
            }
            for &(_, ra) in &entries[s0..e0] {
                for &(_, rb) in &entries[s1..e1] {
                    check(ra, rb, &mut emit);
                }
            }
        });
    }
    Ok(mine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::join::{Pass, Scheme, banded_join, partition};
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Random codes with planted neighbours (a few bits flipped) and a block of identical
    /// codes (a hot key in every band).
    fn codes(f: usize, n: usize, copies: usize, seed: u64) -> Vec<u64> {
        let w = words_for(f);
        let mask = crate::signature::last_word_mask(f);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut out: Vec<u64> = Vec::with_capacity(n * w);
        for r in 0..n {
            let mut row: Vec<u64> = if r >= 1 && rng.random_range(0..3) == 0 {
                let src = rng.random_range(0..r);
                let mut row = out[src * w..(src + 1) * w].to_vec();
                for _ in 0..rng.random_range(1..f / 8) {
                    let bit = rng.random_range(0..f);
                    row[bit / 64] ^= 1 << (bit % 64);
                }
                row
            } else if r < copies {
                vec![0x5555_5555_5555_5555; w]
            } else {
                (0..w).map(|_| rng.random()).collect()
            };
            row[w - 1] &= mask;
            out.extend(row);
        }
        out
    }

    /// The union over `parts` hash partitions of the scheme's `(group, key)` rows, both
    /// passes as a distributed job runs them, each pair checked to come once.
    fn distributed(
        scheme: &Scheme,
        ids: &[u64],
        codes: &[u64],
        parts: u64,
    ) -> Vec<(u64, u64, u32)> {
        let w = words_for(scheme.bits().unwrap());
        let groups = scheme.groups().unwrap();
        let keys = scheme.keys(codes).unwrap();
        let mut slots: Vec<(Vec<u32>, Vec<u64>, Vec<u64>)> =
            vec![Default::default(); parts as usize];
        for (r, &id) in ids.iter().enumerate() {
            for g in 0..groups {
                let key = keys[r * groups + g];
                let h = crate::rng::hash_bytes(
                    &[&(g as u64).to_le_bytes()[..], &key.to_le_bytes()].concat(),
                    7,
                );
                let s = &mut slots[(h % parts) as usize];
                s.0.push(g as u32);
                s.1.push(id);
                s.2.extend_from_slice(&codes[r * w..(r + 1) * w]);
            }
        }
        let run = |capped: &[CappedGroup], pass| {
            let mut pairs = Vec::new();
            let mut caps = Vec::new();
            for (g, i, c) in &slots {
                let found = partition(scheme, g, i, c, capped, pass).unwrap();
                pairs.extend(found.pairs.iter().map(|p| (p.i, p.j, p.distance)));
                caps.extend(found.capped);
            }
            (pairs, caps)
        };
        let (mut pairs, capped) = run(&[], Pass::First);
        if !capped.is_empty() {
            pairs.extend(run(&capped, Pass::Missed).0);
        }
        let n = pairs.len();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), n, "a pair reported twice");
        pairs
    }

    fn in_memory(banding: &Banding, ids: &[u64], codes: &[u64]) -> Vec<(u64, u64, u32)> {
        let sigs = SignatureMatrix::from_parts(banding.bits(), codes).unwrap();
        let (pairs, _) = banded_join(&sigs, banding).unwrap();
        let mut out: Vec<(u64, u64, u32)> = pairs
            .iter()
            .map(|p| {
                let (a, b) = (ids[p.i as usize], ids[p.j as usize]);
                (a.min(b), a.max(b), p.distance)
            })
            .collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn probed_partitions_give_the_in_memory_probed_join() {
        for &(f, b, w, d, cap, copies, seed) in &[
            (64usize, 4usize, 12u32, 64u32, 10_000usize, 0usize, 1u64),
            (64, 6, 9, 20, 10_000, 0, 2),
            (128, 5, 13, 40, 40, 60, 3),
            (130, 7, 11, 128, 25, 40, 4),
            (256, 3, 1, 256, 10_000, 0, 5),
            (200, 4, 7, 90, 12, 30, 6),
        ] {
            let n = 700;
            let codes = codes(f, n, copies, seed);
            // Ids not in row order.
            let ids: Vec<u64> = (0..n as u64).map(|r| (r * 7919 + 13) % 100_003).collect();
            let banding = Banding::builder()
                .bits(f)
                .bands(b)
                .width(w)
                .max_distance(d)
                .max_group(cap)
                .probes(1)
                .build()
                .unwrap();
            let want = in_memory(&banding, &ids, &codes);
            assert!(want.len() > 50, "{f} {b} {w}: {} pairs", want.len());
            let scheme = Scheme::Bands(banding.clone());
            assert_eq!(scheme.groups().unwrap(), 2 * b);
            for parts in [1, 3, 8] {
                assert_eq!(
                    distributed(&scheme, &ids, &codes, parts),
                    want,
                    "f={f} b={b} w={w} cap={cap} parts={parts}"
                );
            }
            if cap == 10_000 {
                // Brute force: the pairs within the filter whose keys lie within one bit in
                // some band.
                let wd = words_for(f);
                let mut brute = Vec::new();
                for x in 0..n {
                    for y in x + 1..n {
                        let (a, c) = (&codes[x * wd..(x + 1) * wd], &codes[y * wd..(y + 1) * wd]);
                        let dist: u32 = a.iter().zip(c).map(|(u, v)| (u ^ v).count_ones()).sum();
                        let near = (0..b)
                            .any(|k| (banding.key(k, a) ^ banding.key(k, c)).count_ones() <= 1);
                        if near && dist <= d {
                            brute.push((ids[x].min(ids[y]), ids[x].max(ids[y]), dist));
                        }
                    }
                }
                brute.sort_unstable();
                assert_eq!(want, brute, "f={f} b={b} w={w}");
            }
        }
    }

    #[test]
    fn probe_keys_meet_keys_one_bit_apart_in_exactly_one_half() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
        for w in [1u32, 2, 7, 8, 33, 64] {
            let banding = Banding::builder()
                .bits(128)
                .bands(2)
                .width(w)
                .probes(1)
                .build()
                .unwrap();
            for _ in 0..200 {
                let a = [rng.random::<u64>(), rng.random::<u64>()];
                let mut b = a;
                let bit = rng.random_range(0..w) as usize;
                b[0] ^= 1 << bit;
                let meet: Vec<usize> = (0..2)
                    .filter(|&h| banding.probe_key(0, h, &a) == banding.probe_key(0, h, &b))
                    .collect();
                assert_eq!(meet.len(), 1, "w={w} bit={bit}");
                // Equal keys meet in both halves; copy 0 alone reports them.
                assert_eq!(banding.probe_key(1, 0, &a), banding.probe_key(1, 0, &b));
                assert_eq!(banding.probe_key(1, 1, &a), banding.probe_key(1, 1, &b));
            }
        }
    }

    #[test]
    fn probe_partition_rejects_what_it_cannot_join() {
        let plain = Banding::builder()
            .bits(16)
            .bands(2)
            .width(8)
            .build()
            .unwrap();
        let probed = Banding::builder()
            .bits(16)
            .bands(2)
            .width(8)
            .probes(1)
            .build()
            .unwrap();
        let e = |r: Result<Vec<CappedGroup>>| r.unwrap_err().to_string();
        assert!(
            e(probe_partition(&plain, 0, 0, &[1], &[1], &[], |_| ())).contains("does not probe")
        );
        assert!(e(probe_partition(&probed, 2, 0, &[1], &[1], &[], |_| ())).contains("band 2"));
        assert!(e(probe_partition(&probed, 0, 2, &[1], &[1], &[], |_| ())).contains("half 2"));
        assert!(
            e(probe_partition(&probed, 0, 0, &[1, 2], &[1], &[], |_| ()))
                .contains("signatures vs ids")
        );
        assert!(e(band_partition(&probed, 0, &[1], &[1], &[], |_| ())).contains("probe_partition"));
    }
}
