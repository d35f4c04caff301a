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

use rayon::prelude::*;

use super::{Pair, active_rows};
use crate::cpu::{PopcntBody, prefetch, with_popcnt};
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::{SignatureMatrix, words_for};

/// Default [`BandingBuilder::max_group`]: runs of more rows than this are skipped (about
/// 5·10⁷ pair checks each).
pub const DEFAULT_MAX_GROUP: usize = 10_000;

/// Radix digit of the per-band sort, bits.
const DIGIT: u32 = 11;

/// Keys longer than this are sorted by comparison instead of radix passes.
const RADIX_MAX_KEY_BITS: u32 = 4 * DIGIT;

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

    /// Validates the layout.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `f`, `b` or `w` is 0, `w > 64`, `b·w > f`, or
    /// `max_group < 2`.
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

/// A candidate pair of [`band_partition`], by the caller's ids: `a < b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdPair {
    /// The smaller id.
    pub a: u64,
    /// The larger id.
    pub b: u64,
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

    /// The first band on which `a` and `b` agree, if any.
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

    /// Walks the bands `< below` on which the rows whose XOR is `xor` agree, in increasing
    /// order, until `accept` returns true; returns whether it did.
    #[inline]
    fn any_agree_below(
        &self,
        xor: &[u64],
        below: usize,
        mut accept: impl FnMut(usize) -> bool,
    ) -> bool {
        let w = self.width as usize;
        let end = below * w;
        for wi in 0..end.div_ceil(64) {
            let lim = end - wi * 64;
            let m = if lim >= 64 {
                u64::MAX
            } else {
                (1u64 << lim) - 1
            };
            let (f, h) = (self.fields[wi] & m, self.tops[wi] & m);
            let x = xor[wi];
            let lo = f & !h;
            // A band's top bit is set in `((x & lo) + lo) | x` iff any of its bits is: the sum
            // carries into the top bit exactly when a lower bit is set, and never beyond it.
            let mut zero = !(((x & lo) + lo) | x) & h;
            while zero != 0 {
                let band = (wi * 64 + zero.trailing_zeros() as usize) / w;
                if accept(band) {
                    return true;
                }
                zero &= zero - 1;
            }
            if let Some(k) = self.straddle[wi] {
                let k = k as usize;
                if k < below && band_bits(xor, k * w, self.width) == 0 && accept(k) {
                    return true;
                }
            }
        }
        false
    }

    /// Whether the pair (rows `a`, `b`, XOR `xor`) was already reported by a band before
    /// `band`: some earlier band agrees in a run that was not capped.
    #[inline]
    fn reported_before(&self, band: usize, xor: &[u64], a: &[u64], capped: &CappedSet) -> bool {
        if capped.is_empty() {
            self.any_agree_below(xor, band, |_| true)
        } else {
            self.any_agree_below(xor, band, |k| !capped.contains(k, self.key(k, a)))
        }
    }

    fn check_sigs(&self, bits: usize) -> Result<()> {
        if bits != self.bits {
            return Err(Error::BitsMismatch {
                expected: self.bits,
                got: bits,
            });
        }
        Ok(())
    }

    /// Scans the runs of equal keys of `entries` (sorted by key, then row), calling `emit` for
    /// each pair this band reports; returns the number of pairs compared.
    fn scan_runs<'r, R, E>(
        &self,
        band: usize,
        entries: &[(u64, u32)],
        row: R,
        capped: &CappedSet,
        emit: E,
    ) -> u64
    where
        R: Fn(u32) -> &'r [u64],
        E: FnMut(u32, u32, u32),
    {
        with_popcnt(ScanRuns {
            banding: self,
            band,
            entries,
            row,
            capped,
            emit,
        })
    }

    #[inline(always)]
    fn scan_runs_body<'r, R, E>(
        &self,
        band: usize,
        entries: &[(u64, u32)],
        row: R,
        capped: &CappedSet,
        mut emit: E,
    ) -> u64
    where
        R: Fn(u32) -> &'r [u64],
        E: FnMut(u32, u32, u32),
    {
        let words = words_for(self.bits);
        let mut xor = vec![0u64; words];
        let mut checked = 0u64;
        let (mut codes, mut found) = (Vec::new(), Vec::new());
        // Rows are fetched at random: prefetch those of the next runs, PREFETCH_AHEAD entries
        // beyond the current run, skipping rows alone with their key.
        let lines = (words * 8).div_ceil(64).min(PREFETCH_LINES);
        let paired = |i: usize| {
            (i > 0 && entries[i - 1].0 == entries[i].0)
                || (i + 1 < entries.len() && entries[i + 1].0 == entries[i].0)
        };
        let mut ahead = 0;
        let mut start = 0;
        for run in entries.chunk_by(|x, y| x.0 == y.0) {
            start += run.len();
            let end = (start + PREFETCH_AHEAD).min(entries.len());
            while ahead < end {
                if paired(ahead) {
                    let r = row(entries[ahead].1);
                    for l in 0..lines {
                        prefetch(r[l * 8..].as_ptr());
                    }
                }
                ahead += 1;
            }
            if run.len() < 2 || run.len() > self.max_group {
                continue;
            }
            checked += (run.len() * (run.len() - 1) / 2) as u64;
            if run.len() >= BIG_RUN {
                self.big_run(band, run, &row, capped, &mut codes, &mut found);
                for &(ra, rb, d) in &found {
                    emit(ra, rb, d);
                }
                continue;
            }
            for (p, &(_, ra)) in run.iter().enumerate() {
                let a = row(ra);
                for &(_, rb) in &run[p + 1..] {
                    let b = row(rb);
                    let Some(d) = self.filtered_distance(a, b) else {
                        continue;
                    };
                    for ((x, &u), &v) in xor.iter_mut().zip(a).zip(b) {
                        *x = u ^ v;
                    }
                    if !self.reported_before(band, &xor, a, capped) {
                        emit(ra, rb, d);
                    }
                }
            }
        }
        checked
    }

    /// The pairs of a big run: its codes (only their prefix words under a prefix filter)
    /// gathered into `codes` and compared tile by tile with the batched scan kernel at the
    /// filter's radius, the survivors of a prefix checked on their full codes; the pairs this
    /// band reports replace `found`, sorted by rows (the kernel's order is its tiling's).
    fn big_run<'r>(
        &self,
        band: usize,
        run: &[(u64, u32)],
        row: &impl Fn(u32) -> &'r [u64],
        capped: &CappedSet,
        codes: &mut Vec<u64>,
        found: &mut Vec<(u32, u32, u32)>,
    ) {
        let full = words_for(self.bits);
        let (w, radius) = self.prefix.unwrap_or((full, self.max_distance));
        codes.clear();
        for &(_, r) in run {
            codes.extend_from_slice(&row(r)[..w]);
        }
        found.clear();
        let mut xor = vec![0u64; full];
        for a0 in (0..run.len()).step_by(RUN_TILE) {
            let a1 = (a0 + RUN_TILE).min(run.len());
            hamming::scan_radius(
                &codes[a0 * w..a1 * w],
                &codes[a0 * w..],
                w,
                radius,
                |qa, cb, d| {
                    let (a, b) = (a0 + qa, a0 + cb);
                    if b <= a {
                        return;
                    }
                    let (ra, rb) = (run[a].1, run[b].1);
                    let (ca, cb) = (row(ra), row(rb));
                    let d = if self.prefix.is_some() {
                        let d = hamming::scalar::distance_upto(ca, cb, self.max_distance);
                        if d > self.max_distance {
                            return;
                        }
                        d
                    } else {
                        d
                    };
                    for ((x, &u), &v) in xor.iter_mut().zip(ca).zip(cb) {
                        *x = u ^ v;
                    }
                    if !self.reported_before(band, &xor, ca, capped) {
                        found.push((ra, rb, d));
                    }
                },
            )
            .expect("shapes are consistent");
        }
        found.sort_unstable();
    }

    /// The runs of `entries` longer than the cap.
    fn capped_runs(&self, band: usize, entries: &[(u64, u32)], out: &mut Vec<CappedGroup>) {
        for run in entries.chunk_by(|x, y| x.0 == y.0) {
            if run.len() > self.max_group {
                out.push(CappedGroup {
                    band: band as u32,
                    key: run[0].0,
                    rows: run.len(),
                });
            }
        }
    }
}

/// [`Banding::scan_runs`]'s arguments, run with hardware popcount where there is one.
struct ScanRuns<'a, R, E> {
    banding: &'a Banding,
    band: usize,
    entries: &'a [(u64, u32)],
    row: R,
    capped: &'a CappedSet,
    emit: E,
}

impl<'r, R, E> PopcntBody for ScanRuns<'_, R, E>
where
    R: Fn(u32) -> &'r [u64],
    E: FnMut(u32, u32, u32),
{
    type Output = u64;

    #[inline(always)]
    fn run(self) -> u64 {
        self.banding
            .scan_runs_body(self.band, self.entries, self.row, self.capped, self.emit)
    }
}

/// Runs at least this long are compared with the batched scan kernel.
pub(crate) const BIG_RUN: usize = 48;

/// Rows per tile of a big run's scan.
const RUN_TILE: usize = 64;

/// Entries whose rows are prefetched beyond the run being checked.
const PREFETCH_AHEAD: usize = 24;

/// Cache lines prefetched per row (the first ones, read first by the early-exit distance).
const PREFETCH_LINES: usize = 4;

/// Bits `start .. start + w` of `sig` as a number (`w ≤ 64`).
#[inline(always)]
fn band_bits(sig: &[u64], start: usize, w: u32) -> u64 {
    let (wi, sh) = (start / 64, (start % 64) as u32);
    let mut v = sig[wi] >> sh;
    if sh + w > 64 {
        v |= sig[wi + 1] << (64 - sh);
    }
    if w == 64 { v } else { v & ((1u64 << w) - 1) }
}

/// Sorts `(key, row)` entries by key, then row: stable LSD radix passes over the `bits` key
/// bits when the rows come in increasing order, a comparison sort for long keys.
fn sort_entries(entries: &mut Vec<(u64, u32)>, bits: u32, scratch: &mut Vec<(u64, u32)>) {
    if bits > RADIX_MAX_KEY_BITS || entries.len() < 256 {
        entries.sort_unstable();
        return;
    }
    scratch.resize(entries.len(), (0, 0));
    let mut count = vec![0usize; 1 << DIGIT];
    let mut shift = 0;
    while shift < bits {
        let d = DIGIT.min(bits - shift);
        let mask = (1u64 << d) - 1;
        count[..1 << d].fill(0);
        for e in entries.iter() {
            count[((e.0 >> shift) & mask) as usize] += 1;
        }
        let mut sum = 0;
        for c in &mut count[..1 << d] {
            let t = *c;
            *c = sum;
            sum += t;
        }
        for &e in entries.iter() {
            let slot = &mut count[((e.0 >> shift) & mask) as usize];
            scratch[*slot] = e;
            *slot += 1;
        }
        std::mem::swap(entries, scratch);
        shift += d;
    }
}

/// A band's `(key, row)` entries sorted by key, and its capped runs.
type SortedBand = (Vec<(u64, u32)>, Vec<CappedGroup>);

/// Most bands grouped at once by [`banded_join_map`] (their keys are read in one pass over
/// the rows, and their sorted entries held together).
const CHUNK_BANDS: usize = 8;

/// Bytes of sorted entries a chunk of bands may hold (16 per row and band).
const CHUNK_BYTES: usize = 256 << 20;

/// Number of bands grouped at once for `n` rows: at least two per thread (so that every
/// thread has bands to sort and scan), at most [`CHUNK_BANDS`] and [`CHUNK_BYTES`].
fn chunk_bands(n: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let by_memory = CHUNK_BYTES / (16 * n.max(1));
    by_memory.clamp(1, CHUNK_BANDS).max(2 * threads)
}

/// The `(key, row)` entries of the bands `bands` (consecutive) for `rows`, one vector per band,
/// read in one pass over the rows per group of bands, the groups in parallel.
fn band_entries<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    rows: &[u32],
    bands: std::ops::Range<usize>,
) -> Vec<Vec<(u64, u32)>> {
    let w = banding.width;
    let threads = rayon::current_num_threads().max(1);
    let per = bands.len().div_ceil(threads).max(1);
    let groups: Vec<std::ops::Range<usize>> = bands
        .clone()
        .step_by(per)
        .map(|b0| b0..(b0 + per).min(bands.end))
        .collect();
    groups
        .into_par_iter()
        .flat_map_iter(|g| {
            let mut out: Vec<Vec<(u64, u32)>> =
                g.clone().map(|_| Vec::with_capacity(rows.len())).collect();
            for &i in rows {
                let r = sigs.row(i as usize);
                for (e, band) in out.iter_mut().zip(g.clone()) {
                    e.push((band_bits(r, band * w as usize, w), i));
                }
            }
            out
        })
        .collect()
}

/// The banded self-join, general form: the candidate pairs of the rows of `sigs` marked in
/// `active` (all if `None`), each passed through `map` in the worker threads; the kept results
/// go to `sink` band by band, in a deterministic order (band, key, rows) whatever the number
/// of threads.
pub(crate) fn banded_join_map<S, T, M, K>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    active: Option<&[bool]>,
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
    let chunk = chunk_bands(rows.len());
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
    let stats = banded_join_map(sigs, banding, None, Some, |p| pairs.push(p))?;
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
    banded_join_map(sigs, banding, None, Some, sink)
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
/// assert_eq!(pairs, vec![IdPair { a: 30, b: 70, distance: 4 }]);
/// assert!(capped.is_empty());
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] if `band >= b`; [`Error::LengthMismatch`] if `sigs` does not
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
                a: a.min(b),
                b: a.max(b),
                distance,
            });
        },
    );
    Ok(mine)
}

/// The candidate rate of a banding measured on a sample of the actual signatures, by
/// [`sample_candidates`].
#[derive(Clone, Debug, PartialEq)]
pub struct CandidateSample {
    /// Rows sampled.
    pub rows: usize,
    /// Candidate pairs among them (after the Hamming filter).
    pub candidates: u64,
    /// Candidates per pair of rows.
    pub rate: f64,
    /// The rate times the pairs of all rows: the expected candidates of the whole join.
    pub expected: f64,
}

/// Measures the candidate rate of `banding` on `sample` rows of `sigs` drawn without
/// replacement (seeded), by running the banded join on them: on real data, where pairs are
/// not random, this is the figure to compare with
/// [`background_candidates`](crate::estimate::background_candidates).
///
/// # Errors
/// As [`banded_join`]; [`Error::InvalidParameter`] if `sample < 2`.
pub fn sample_candidates<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    sample: usize,
    seed: u64,
) -> Result<CandidateSample> {
    banding.check_sigs(sigs.bits())?;
    if sample < 2 {
        return Err(Error::param("sample", "at least 2 rows are needed"));
    }
    let n = sigs.len();
    let mut rows: Vec<u32> = (0..n as u32).collect();
    let s = sample.min(n);
    let mut rng = crate::rng::Rng::new(seed);
    for i in 0..s {
        let j = i + rng.below((n - i) as u64) as usize;
        rows.swap(i, j);
    }
    rows.truncate(s);
    rows.sort_unstable();
    let mut sub = SignatureMatrix::new(sigs.bits())?;
    for &r in &rows {
        sub.push_words(sigs.bits(), sigs.row(r as usize))?;
    }
    let stats = banded_join_each(&sub, banding, |_| {})?;
    let pairs = |m: usize| m as f64 * (m.max(1) - 1) as f64 / 2.0;
    let rate = if s < 2 {
        0.0
    } else {
        stats.candidates as f64 / pairs(s)
    };
    Ok(CandidateSample {
        rows: s,
        candidates: stats.candidates,
        rate,
        expected: rate * pairs(n),
    })
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
        for bits in [1u32, 8, 11, 12, 22, 33, 44] {
            let mut e: Vec<(u64, u32)> = (0..5000u32)
                .map(|i| (rng.random::<u64>() >> (64 - bits), i))
                .collect();
            let mut want = e.clone();
            want.sort_unstable();
            sort_entries(&mut e, bits, &mut Vec::new());
            assert_eq!(e, want, "{bits}");
        }
    }
}
