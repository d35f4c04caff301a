//! The banded candidate join (LSH banding on signature bits) for wide signatures.
//!
//! A [`Banding`] cuts the first `b·w` bits of an `f`-bit signature into `b` bands of `w`
//! consecutive bits: band `k` is bits `k·w .. (k+1)·w`, its **key** the `w`-bit number they
//! form ([`Banding::key`]). Two rows are a **candidate pair** when they agree on some band's
//! key. For vectors at angle θ each bit agrees with probability `p = 1 − θ/π`, independently,
//! so a pair becomes a candidate with probability `1 − (1 − p^w)^b` (see
//! [`crate::estimate::BandingPlanner`] for the choice of `b` and `w`), while a random pair
//! (θ = π/2) agrees on a band with probability `2^−w`.
//!
//! Per band, the rows are sorted by key (a radix sort) and every pair inside a run of equal
//! keys is checked, as [`self_join`](super::self_join)'s tables do. A pair is reported by the
//! **first band on which it agrees** only: the check of a pair found on band `k` verifies that
//! bands `0..k` disagree (on the XOR of the two rows, a few word operations), so nothing is
//! reported twice and no set of reported pairs is held. An optional Hamming filter
//! ([`BandingBuilder::max_distance`]) drops candidates farther apart than a radius before
//! anything else is done with them; an optional **prefix filter**
//! ([`BandingBuilder::prefix_filter`]) first drops those whose first words alone are farther
//! apart than its own radius. On wide signatures most pairs sharing a band key are random
//! (distance ≈ `f/2`): the prefix rejects them after a few words instead of the early exit of
//! the full distance after about half the code, and a run's big-run kernel gathers only the
//! prefix words of its rows.
//!
//! **Multi-probe** ([`BandingBuilder::probes`], after Lv et al. 2007, probing by Hamming
//! ball since signatures carry no margins): with `t = 1` two rows also collide in a band when
//! their keys differ in one bit, so a pair at per-bit agreement `p` collides with probability
//! `p^w + w·p^(w−1)(1−p)` and a random pair with `(1 + w)·2^−w`: longer bands reach the same
//! recall with fewer bits in all. After a band's runs of equal keys, its distinct keys are
//! merged once per bit `i` with the keys having bit `i` set (each pair of runs one bit apart
//! is met once, by the bit they differ in) and the rows of the two runs compared across; the
//! first-band rule then reads "the first band whose keys lie within `t` bits".
//!
//! **Hot keys.** A run of more than [`BandingBuilder::max_group`] rows (e.g. the band of
//! many all-zero or identical rows) would cost a quadratic number of checks: it is skipped and
//! reported as a [`CappedGroup`]. Its pairs are then reported by a later band on which they
//! agree in a run that was not capped, if any (the first-band rule counts only uncapped
//! runs).
//!
//! **Partitions.** The same code runs on any subset of rows: [`Banding::keys`] gives the
//! `(band, key)` rows a distributed job emits per document, and [`band_partition`] finds the
//! candidate pairs among the rows of one band given as `(id, signature)` arrays, with the
//! same first-band rule, so that the union over the partitions of every band is the
//! self-join's result, each pair once.

mod pairs;
mod partition;
mod sample;
mod scan;
mod sort;

use rayon::prelude::*;

use super::{Pair, active_rows, with_features_flags};
use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::{SignatureMatrix, words_for};

pub(crate) use pairs::banded_join_map;
pub use pairs::{banded_join, banded_join_active, banded_join_each};
pub use partition::{band_partition, probe_partition};
pub use sample::{CandidateSample, sample_candidates};
pub(crate) use scan::BIG_RUN;
use sort::*;
pub use sort::{band_chunk, band_chunk_bytes, band_entry_bytes};

/// The largest multi-probe distance ([`BandingBuilder::probes`]): keys one bit apart.
pub const MAX_PROBES: u32 = 1;

/// Default [`BandingBuilder::max_group`]: runs of more rows than this are skipped (about
/// 5·10⁷ pair checks each).
pub const DEFAULT_MAX_GROUP: usize = 10_000;

/// A band layout: `b` bands of `w` consecutive bits of `f`-bit signatures, with the join's
/// Hamming filter and hot-key cap. Built by [`Banding::builder`].
///
/// ```
/// use simlsh::join::Banding;
///
/// let banding = Banding::builder().bits(128).bands(4).width(16).build()?;
/// let sig = [0x0123_4567_89ab_cdefu64, 0xffff];
/// assert_eq!(banding.key(0, &sig), 0xcdef);
/// assert_eq!(banding.key(3, &sig), 0x0123);
/// let rows: Vec<(u32, u64)> = banding.keys(&sig).collect();
/// assert_eq!(rows, vec![(0, 0xcdef), (1, 0x89ab), (2, 0x4567), (3, 0x0123)]);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Banding {
    bits: usize,
    bands: usize,
    width: u32,
    max_distance: u32,
    /// The prefix filter: words, radius.
    prefix: Option<(usize, u32)>,
    max_group: usize,
    /// Multi-probe distance `t`: band keys within this Hamming distance collide.
    probes: u32,
    /// Per word: the bits of the bands lying wholly inside it.
    fields: Vec<u64>,
    /// Per word: the top bit of each of those bands.
    tops: Vec<u64>,
    /// Per word: the band that starts in it and ends in a later word, if any.
    straddle: Vec<Option<u32>>,
}

/// Builder of a [`Banding`]: `bits`, `bands` and `width` are required.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BandingBuilder {
    bits: usize,
    bands: usize,
    width: u32,
    max_distance: Option<u32>,
    prefix: Option<(usize, u32)>,
    max_group: Option<usize>,
    probes: u32,
}

impl BandingBuilder {
    /// Signature width `f`.
    pub fn bits(mut self, bits: usize) -> Self {
        self.bits = bits;
        self
    }

    /// Number of bands `b ≥ 1`.
    pub fn bands(mut self, bands: usize) -> Self {
        self.bands = bands;
        self
    }

    /// Bits per band `w`, 1 ..= 64; `b·w ≤ f`.
    pub fn width(mut self, width: u32) -> Self {
        self.width = width;
        self
    }

    /// Keep only candidates within this Hamming distance (default: `f`, no filter).
    pub fn max_distance(mut self, r: u32) -> Self {
        self.max_distance = Some(r);
        self
    }

    /// Keep only candidates whose first `words` 64-bit words (bits `0 .. 64·words`) are
    /// within Hamming distance `radius`, checked before the full distance (default: none). A
    /// pair at per-bit disagreement `q` fails it with probability `P(Bin(64·words, q) >
    /// radius)`: [`BandingPlanner`](crate::estimate::BandingPlanner) sets it for wide
    /// signatures at a tiny share of the miss budget.
    pub fn prefix_filter(mut self, words: usize, radius: u32) -> Self {
        self.prefix = Some((words, radius));
        self
    }

    /// Skip and report runs of equal keys longer than this (default [`DEFAULT_MAX_GROUP`];
    /// `usize::MAX` for no cap).
    pub fn max_group(mut self, rows: usize) -> Self {
        self.max_group = Some(rows);
        self
    }

    /// Multi-probe distance `t` (default 0): two rows also collide in a band when their keys
    /// differ in at most `t` bits, not only when they are equal. A pair at per-bit agreement
    /// `p` then collides in a band with probability `Σ_{k≤t} C(w,k) p^(w−k) (1−p)^k`, a
    /// random pair with `Σ_{k≤t} C(w,k) 2^−w`: longer bands reach the same recall with fewer
    /// bits in all. `t` is 0 or [`MAX_PROBES`].
    pub fn probes(mut self, t: u32) -> Self {
        self.probes = t;
        self
    }

    /// Validates the layout.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `f`, `b` or `w` is 0, `w > 64`, `b·w > f`,
    /// `max_group < 2`, or the probe distance exceeds [`MAX_PROBES`].
    pub fn build(self) -> Result<Banding> {
        let (f, b, w) = (self.bits, self.bands, self.width);
        if f == 0 {
            return Err(Error::param(
                "bits",
                "the signature width must be at least 1",
            ));
        }
        if b == 0 {
            return Err(Error::param("bands", "at least one band is needed"));
        }
        if !(1..=64).contains(&w) {
            return Err(Error::param(
                "width",
                format!("bits per band must be 1 ..= 64, got {w}"),
            ));
        }
        if b.checked_mul(w as usize).is_none_or(|bw| bw > f) {
            return Err(Error::param(
                "bands",
                format!("{b} bands of {w} bits do not fit in {f}-bit signatures"),
            ));
        }
        let max_group = self.max_group.unwrap_or(DEFAULT_MAX_GROUP);
        if max_group < 2 {
            return Err(Error::param("max_group", "must be at least 2"));
        }
        if self.probes > MAX_PROBES {
            return Err(Error::param(
                "probes",
                format!(
                    "the multi-probe distance must be 0 ..= {MAX_PROBES}, got {}",
                    self.probes
                ),
            ));
        }
        let words = words_for(f);
        let prefix = match self.prefix {
            None => None,
            Some((pw, r)) => {
                if pw == 0 || pw >= words {
                    return Err(Error::param(
                        "prefix_filter",
                        format!(
                            "the prefix must be 1 ..= {} words of the {words}-word codes, got {pw}",
                            words.saturating_sub(1)
                        ),
                    ));
                }
                Some((pw, r.min(64 * pw as u32)))
            }
        };
        let mut fields = vec![0u64; words];
        let mut tops = vec![0u64; words];
        let mut straddle = vec![None; words];
        let field = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
        for k in 0..b {
            let start = k * w as usize;
            let (wi, sh) = (start / 64, start % 64);
            if sh + w as usize <= 64 {
                fields[wi] |= field << sh;
                tops[wi] |= 1u64 << (sh + w as usize - 1);
            } else {
                straddle[wi] = Some(k as u32);
            }
        }
        Ok(Banding {
            bits: f,
            bands: b,
            width: w,
            max_distance: self.max_distance.unwrap_or(f as u32).min(f as u32),
            prefix,
            max_group,
            probes: self.probes,
            fields,
            tops,
            straddle,
        })
    }
}

/// A run of equal keys longer than [`BandingBuilder::max_group`], skipped by the join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CappedGroup {
    /// The band.
    pub band: u32,
    /// The key shared by the run.
    pub key: u64,
    /// Number of rows in the run.
    pub rows: usize,
}

/// Looks up whether a `(band, key)` run was capped.
#[derive(Clone, Debug, Default)]
pub(crate) struct CappedSet(Vec<(u32, u64)>);

impl CappedSet {
    pub(crate) fn new(groups: &[CappedGroup]) -> Self {
        let mut v: Vec<(u32, u64)> = groups.iter().map(|g| (g.band, g.key)).collect();
        v.sort_unstable();
        v.dedup();
        CappedSet(v)
    }

    pub(crate) fn contains(&self, band: usize, key: u64) -> bool {
        !self.0.is_empty() && self.0.binary_search(&(band as u32, key)).is_ok()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A candidate pair of [`band_partition`], by the caller's ids: `i < j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdPair {
    /// The smaller id.
    pub i: u64,
    /// The larger id.
    pub j: u64,
    /// Their Hamming distance.
    pub distance: u32,
}

/// What a banded self-join found besides its pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BandStats {
    /// Pairs compared: the pairs sharing a key in some band, counted once per band.
    pub checked: u64,
    /// Candidate pairs reported (after the Hamming filter and the first-band rule).
    pub candidates: u64,
    /// Runs skipped for their size, by band then key.
    pub capped: Vec<CappedGroup>,
}

impl Banding {
    /// A builder.
    pub fn builder() -> BandingBuilder {
        BandingBuilder::default()
    }

    /// Signature width `f`.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// Number of bands `b`.
    pub fn bands(&self) -> usize {
        self.bands
    }

    /// Bits per band `w`.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The Hamming filter's radius (`f` when there is none).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The prefix filter, if any: `(words, radius)`.
    pub fn prefix_filter(&self) -> Option<(usize, u32)> {
        self.prefix
    }

    /// Whether rows `a` and `b` pass the filters: `Some(distance)` when the prefix (if any)
    /// and the full codes are within their radii.
    #[inline(always)]
    fn filtered_distance(&self, a: &[u64], b: &[u64]) -> Option<u32> {
        if let Some((pw, pr)) = self.prefix
            && hamming::scalar::distance_upto(&a[..pw], &b[..pw], pr) > pr
        {
            return None;
        }
        let d = hamming::scalar::distance_upto(a, b, self.max_distance);
        (d <= self.max_distance).then_some(d)
    }

    /// The hot-key cap.
    pub fn max_group(&self) -> usize {
        self.max_group
    }

    /// The multi-probe distance `t` ([`BandingBuilder::probes`]).
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// The key of `band` in the signature `sig` (`words_for(f)` words): bits
    /// `band·w .. (band+1)·w` as a number, bit `band·w` least significant.
    ///
    /// # Panics
    /// If `band >= b` or `sig` is shorter than the band's end.
    pub fn key(&self, band: usize, sig: &[u64]) -> u64 {
        assert!(band < self.bands, "band {band} of {}", self.bands);
        band_bits(sig, band * self.width as usize, self.width)
    }

    /// The `(band, key)` of every band of `sig`, in band order: the rows a distributed job
    /// emits per document before grouping by `(band, key)`.
    ///
    /// # Panics
    /// If `sig` is shorter than `b·w` bits.
    pub fn keys<'a>(&'a self, sig: &'a [u64]) -> impl Iterator<Item = (u32, u64)> + 'a {
        (0..self.bands).map(move |k| (k as u32, self.key(k, sig)))
    }

    /// The first band on which `a` and `b` agree (their keys within the probe distance), if
    /// any.
    ///
    /// # Panics
    /// If the signatures are shorter than `b·w` bits.
    pub fn first_agreeing_band(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        let xor: Vec<u64> = a.iter().zip(b).map(|(x, y)| x ^ y).collect();
        let mut first = None;
        self.any_agree_below(&xor, self.bands, |k| {
            first = Some(k);
            true
        });
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn keys_read_the_bands_bits_across_words() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for &(f, b, w) in &[
            (130usize, 10usize, 13u32),
            (192, 3, 64),
            (200, 4, 50),
            (64, 64, 1),
            (100, 1, 7),
        ] {
            let banding = Banding::builder()
                .bits(f)
                .bands(b)
                .width(w)
                .build()
                .unwrap();
            for _ in 0..20 {
                let sig: Vec<u64> = (0..words_for(f)).map(|_| rng.random()).collect();
                for k in 0..b {
                    let want = (0..w as usize).fold(0u64, |acc, t| {
                        let bit = k * w as usize + t;
                        acc | (sig[bit / 64] >> (bit % 64) & 1) << t
                    });
                    assert_eq!(banding.key(k, &sig), want, "f={f} w={w} band {k}");
                }
            }
        }
    }

    #[test]
    fn first_agreeing_band_matches_the_keys() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for &(f, b, w) in &[
            (256usize, 32usize, 8u32),
            (130, 10, 13),
            (192, 3, 64),
            (64, 64, 1),
            (300, 11, 27),
        ] {
            let banding = Banding::builder()
                .bits(f)
                .bands(b)
                .width(w)
                .build()
                .unwrap();
            for _ in 0..300 {
                let a: Vec<u64> = (0..words_for(f)).map(|_| rng.random()).collect();
                // Copy about a quarter of the bands of `a` into `b`, so that they agree there.
                let mut bsig: Vec<u64> = (0..words_for(f)).map(|_| rng.random()).collect();
                for k in 0..b {
                    if rng.random_range(0..4) == 0 {
                        for bit in k * w as usize..(k + 1) * w as usize {
                            let m = 1u64 << (bit % 64);
                            bsig[bit / 64] = (bsig[bit / 64] & !m) | (a[bit / 64] & m);
                        }
                    }
                }
                let last = words_for(f) - 1;
                let mask = crate::signature::last_word_mask(f);
                let (mut a, mut bs) = (a, bsig);
                a[last] &= mask;
                bs[last] &= mask;
                let want = (0..b).find(|&k| banding.key(k, &a) == banding.key(k, &bs));
                assert_eq!(banding.first_agreeing_band(&a, &bs), want);
            }
        }
    }

    #[test]
    fn invalid_layouts_are_rejected() {
        let ok = Banding::builder().bits(64).bands(8).width(8);
        assert!(ok.clone().build().is_ok());
        for bad in [
            ok.clone().bits(0),
            ok.clone().bands(0),
            ok.clone().width(0),
            ok.clone().width(65),
            ok.clone().bands(9),
            ok.clone().max_group(1),
        ] {
            assert!(bad.build().is_err());
        }
    }

    #[test]
    fn radix_sort_orders_by_key_then_row() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        for bits in [1u32, 8, 11, 12, 22, 32, 33, 44, 64] {
            let mut e: Vec<(u64, u32)> = (0..5000u32)
                .map(|i| (rng.random::<u64>() >> (64 - bits), i))
                .collect();
            let mut want = e.clone();
            want.sort_unstable();
            if bits <= Packed::KEY_BITS {
                let mut p: Vec<Packed> = e.iter().map(|&(k, r)| Packed::new(k, r)).collect();
                sort_entries(&mut p, bits, &mut Vec::new());
                let p: Vec<(u64, u32)> = p.iter().map(|x| (x.key(), x.row())).collect();
                assert_eq!(p, want, "packed {bits}");
            }
            sort_entries(&mut e, bits, &mut Vec::new());
            assert_eq!(e, want, "{bits}");
        }
    }

    #[test]
    fn entries_take_one_word_up_to_32_bits() {
        assert_eq!(std::mem::size_of::<Packed>(), 8);
        assert_eq!((1..=32).map(band_entry_bytes).max(), Some(8));
        assert_eq!((33..=64).map(band_entry_bytes).min(), Some(16));
        // A chunk of 3 bands sorted by 2 threads holds 5 bands' entries.
        assert_eq!(band_chunk_bytes(1000, 3, 2, 32), 5 * 1000 * 8);
        assert_eq!(band_chunk_bytes(1000, 3, 2, 33), 5 * 1000 * 16);
        let p = Packed::new(0xffff_ffff, 7);
        assert_eq!((p.key(), p.row()), (0xffff_ffff, 7));
        assert!(Packed::new(1, 0) > Packed::new(0, u32::MAX));
        assert!(Packed::new(1, 2).same_key(Packed::new(1, 9)));
    }
}
