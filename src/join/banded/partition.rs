//! The candidate pairs of one band among a partition of rows given as `(id, signature)`
//! arrays, for distributed jobs.

use super::*;

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
/// runs does not hold them); [`Error::LengthMismatch`] if `sigs` does not
/// hold one signature per id; [`Error::PaddingBits`] if a row has bits set beyond `f`.
pub fn band_partition(
    banding: &Banding,
    band: usize,
    ids: &[u64],
    sigs: &[u64],
    capped: &[CappedGroup],
    mut sink: impl FnMut(IdPair),
) -> Result<Vec<CappedGroup>> {
    if band >= banding.bands {
        return Err(Error::param(
            "band",
            format!("band {band} of a banding with {} bands", banding.bands),
        ));
    }
    if banding.probes > 0 {
        return Err(Error::param(
            "probes",
            "a multi-probe banding pairs rows across keys: it is joined in one process \
             (banded_join), not by (band, key) partitions",
        ));
    }
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
