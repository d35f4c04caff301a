//! Checking the pairs of a band's runs of equal keys: the first-band rule, the Hamming
//! and prefix filters, the big-run kernel and the capped runs.

use super::*;

impl Banding {
    /// Walks the bands `< below` on which the rows whose XOR is `xor` agree, in increasing
    /// order, until `accept` returns true; returns whether it did.
    #[inline]
    pub(super) fn any_agree_below(
        &self,
        xor: &[u64],
        below: usize,
        mut accept: impl FnMut(usize) -> bool,
    ) -> bool {
        if self.probes > 0 {
            // Keys within the probe distance: one band at a time.
            return (0..below).any(|k| {
                band_bits(xor, k * self.width as usize, self.width).count_ones() <= self.probes
                    && accept(k)
            });
        }
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
    /// `band`: some earlier band agrees (within the probe distance) where neither row's run
    /// was capped.
    #[inline]
    pub(super) fn reported_before(
        &self,
        band: usize,
        xor: &[u64],
        a: &[u64],
        b: &[u64],
        capped: &CappedSet,
    ) -> bool {
        if capped.is_empty() {
            self.any_agree_below(xor, band, |_| true)
        } else {
            self.any_agree_below(xor, band, |k| {
                !capped.contains(k, self.key(k, a)) && !capped.contains(k, self.key(k, b))
            })
        }
    }

    pub(super) fn check_sigs(&self, bits: usize) -> Result<()> {
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
    pub(super) fn scan_runs<'r, N, R, E>(
        &self,
        band: usize,
        entries: &[N],
        row: R,
        capped: &CappedSet,
        emit: E,
    ) -> u64
    where
        N: Entry,
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
    pub(super) fn scan_runs_body<'r, N, R, E>(
        &self,
        band: usize,
        entries: &[N],
        row: R,
        capped: &CappedSet,
        mut emit: E,
    ) -> u64
    where
        N: Entry,
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
            (i > 0 && entries[i - 1].same_key(entries[i]))
                || (i + 1 < entries.len() && entries[i + 1].same_key(entries[i]))
        };
        let mut ahead = 0;
        let mut start = 0;
        for run in entries.chunk_by(|x, y| x.same_key(*y)) {
            start += run.len();
            let end = (start + PREFETCH_AHEAD).min(entries.len());
            while ahead < end {
                if paired(ahead) {
                    let r = row(entries[ahead].row());
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
            for (p, ea) in run.iter().enumerate() {
                let ra = ea.row();
                let a = row(ra);
                for eb in &run[p + 1..] {
                    let rb = eb.row();
                    let b = row(rb);
                    let Some(d) = self.filtered_distance(a, b) else {
                        continue;
                    };
                    for ((x, &u), &v) in xor.iter_mut().zip(a).zip(b) {
                        *x = u ^ v;
                    }
                    if !self.reported_before(band, &xor, a, b, capped) {
                        emit(ra, rb, d);
                    }
                }
            }
        }
        if self.probes > 0 {
            checked += self.probe_runs(band, entries, &row, capped, &mut xor, &mut emit);
        }
        checked
    }

    /// The multi-probe pass of a band (`t = 1`): the pairs whose keys differ in exactly one
    /// bit. For each bit `i`, the runs whose key has bit `i` clear are merged with those
    /// whose key has it set (the keys `k | 1 << i` of the first come in increasing order,
    /// so one pass over the distinct keys finds every such pair of runs), and the rows of
    /// the two runs are compared across: each pair of rows one bit apart is compared once,
    /// by the bit where they differ. Runs longer than the cap are skipped. Returns the number
    /// of pairs compared.
    fn probe_runs<'r, N, R, E>(
        &self,
        band: usize,
        entries: &[N],
        row: &R,
        capped: &CappedSet,
        xor: &mut [u64],
        emit: &mut E,
    ) -> u64
    where
        N: Entry,
        R: Fn(u32) -> &'r [u64],
        E: FnMut(u32, u32, u32),
    {
        // The distinct keys with their run's bounds, in key order.
        let mut runs: Vec<(u64, u32, u32)> = Vec::new();
        let mut start = 0u32;
        for run in entries.chunk_by(|x, y| x.same_key(*y)) {
            let end = start + run.len() as u32;
            runs.push((run[0].key(), start, end));
            start = end;
        }
        let cap = self.max_group as u64;
        // The rows' first words (the prefix filter's, or the whole codes when they are
        // short) gathered in the band's order: pairs across runs then read two contiguous
        // blocks instead of two random rows each, and most random pairs are rejected there.
        let full = words_for(self.bits);
        let (gw, radius) = self.prefix.unwrap_or((full, self.max_distance));
        let gather = gw <= PROBE_GATHER_WORDS;
        let mut codes = Vec::new();
        if gather {
            codes.reserve(entries.len() * gw);
            for e in entries {
                codes.extend_from_slice(&row(e.row())[..gw]);
            }
        }
        let mut checked = 0u64;
        for i in 0..self.width {
            runs_one_bit_apart(&runs, 1u64 << i, |&(_, s0, e0), &(_, s1, e1)| {
                if u64::from(e0 - s0) > cap || u64::from(e1 - s1) > cap {
                    return;
                }
                checked += u64::from(e0 - s0) * u64::from(e1 - s1);
                for ea in s0 as usize..e0 as usize {
                    let ra = entries[ea].row();
                    for eb in s1 as usize..e1 as usize {
                        if gather {
                            let (ga, gb) = (&codes[ea * gw..][..gw], &codes[eb * gw..][..gw]);
                            if hamming::scalar::distance_upto(ga, gb, radius) > radius {
                                continue;
                            }
                        }
                        let rb = entries[eb].row();
                        let (a, b) = (row(ra), row(rb));
                        let Some(d) = self.filtered_distance(a, b) else {
                            continue;
                        };
                        for ((x, &u), &v) in xor.iter_mut().zip(a).zip(b) {
                            *x = u ^ v;
                        }
                        if !self.reported_before(band, xor, a, b, capped) {
                            emit(ra.min(rb), ra.max(rb), d);
                        }
                    }
                }
            });
        }
        checked
    }

    /// The pairs of a big run: its codes (only their prefix words under a prefix filter)
    /// gathered into `codes` and compared tile by tile with the batched scan kernel at the
    /// filter's radius, the survivors of a prefix checked on their full codes; the pairs this
    /// band reports replace `found`, sorted by rows (the kernel's order is its tiling's).
    pub(super) fn big_run<'r, N: Entry>(
        &self,
        band: usize,
        run: &[N],
        row: &impl Fn(u32) -> &'r [u64],
        capped: &CappedSet,
        codes: &mut Vec<u64>,
        found: &mut Vec<(u32, u32, u32)>,
    ) {
        let full = words_for(self.bits);
        let (w, radius) = self.prefix.unwrap_or((full, self.max_distance));
        codes.clear();
        for e in run {
            codes.extend_from_slice(&row(e.row())[..w]);
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
                    let (ra, rb) = (run[a].row(), run[b].row());
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
                    if !self.reported_before(band, &xor, ca, cb, capped) {
                        found.push((ra, rb, d));
                    }
                },
            )
            .expect("shapes are consistent");
        }
        found.sort_unstable();
    }

    /// The runs of `entries` longer than the cap.
    pub(super) fn capped_runs<N: Entry>(
        &self,
        band: usize,
        entries: &[N],
        out: &mut Vec<CappedGroup>,
    ) {
        for run in entries.chunk_by(|x, y| x.same_key(*y)) {
            if run.len() > self.max_group {
                out.push(CappedGroup {
                    band: band as u32,
                    key: run[0].key(),
                    rows: run.len(),
                });
            }
        }
    }
}

/// [`Banding::scan_runs`]'s arguments, run with hardware popcount where there is one.
pub(super) struct ScanRuns<'a, N, R, E> {
    banding: &'a Banding,
    band: usize,
    entries: &'a [N],
    row: R,
    capped: &'a CappedSet,
    emit: E,
}

impl<'r, N, R, E> PopcntBody for ScanRuns<'_, N, R, E>
where
    N: Entry,
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

/// The pairs of runs whose keys are one bit apart, the bit `bit`: for each run whose key has
/// `bit` clear and the run whose key is that key with `bit` set, `f(run, other run)`. `runs`
/// are `(key, start, end)` with distinct keys in increasing order (the keys with `bit` set
/// then come in increasing order too, so one forward cursor finds them all).
pub(super) fn runs_one_bit_apart<T>(
    runs: &[(u64, T, T)],
    bit: u64,
    mut f: impl FnMut(&(u64, T, T), &(u64, T, T)),
) {
    let mut hi = 0usize;
    for run in runs {
        if run.0 & bit != 0 {
            continue;
        }
        let target = run.0 | bit;
        while hi < runs.len() && runs[hi].0 < target {
            hi += 1;
        }
        if hi == runs.len() {
            break;
        }
        if runs[hi].0 == target {
            f(run, &runs[hi]);
        }
    }
}

/// Runs at least this long are compared with the batched scan kernel.
pub(crate) const BIG_RUN: usize = 48;

/// The multi-probe pass gathers the first words of a band's rows (the prefix filter's, or
/// whole codes up to this many words) in the band's order.
pub(super) const PROBE_GATHER_WORDS: usize = 8;

/// Rows per tile of a big run's scan. A tile's rows are compared with every row from the
/// tile's first on, the pairs below the diagonal dropped, so a run of `L` rows costs about
/// `L²/2 + L·RUN_TILE/2` comparisons: on runs of ~76 rows (a band of 12 bits over 312k
/// rows) tiles of 64 compare 1.7x the run's pairs, tiles of 16 1.2x, still enough queries
/// per call for the batched kernel (the 312k Tang + Song poems, cosine 0.8, 71 bands of 12
/// bits, one thread: join 1.80 -> 1.47 s CPU, medians of 3, same pairs).
pub(super) const RUN_TILE: usize = 16;

/// Entries whose rows are prefetched beyond the run being checked.
pub(super) const PREFETCH_AHEAD: usize = 24;

/// Cache lines prefetched per row (the first ones, read first by the early-exit distance).
pub(super) const PREFETCH_LINES: usize = 4;
