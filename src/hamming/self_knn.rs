//! The k nearest *other* codes of every code of one set ([`super::self_knn`]), computing the
//! distance of each pair once.
//!
//! A batched scan of the set against itself ([`super::scan_knn`]) computes every distance
//! twice, `d(i, j)` for row `i` and `d(j, i)` for row `j`, and on wide codes the distances are
//! the whole cost (384-bit codes: about 1.3 ns a pair on one Zen 3 core, at the throughput of
//! the `vpshufb` popcount). Here each pair `i < j` is computed once and offered to both rows.
//!
//! Offering a distance to row `j` while scanning row `i` is a write to `j`'s state, far from
//! the rows being scanned: a running top-k per row (as the scans keep) would miss the cache
//! at almost every offer. So the rows do not keep a running top-k during the pass. Instead:
//!
//! 1. **A guessed threshold per row.** Each row is compared with a strided sample of `S`
//!    codes, and its threshold is one more than the distance of its `(m + 1)`-th nearest
//!    sample code. With `λ` sample codes expected among a row's `k` nearest (`S = λ (n − 1)
//!    / k`), `m` is chosen so that fewer than `k` codes of the whole set fall below the
//!    threshold with probability at most [`MISS_PROBABILITY`] (binomial law), and the
//!    threshold keeps about `(m + 1) / λ · k` codes a row, a few times `k`. [`Sample::plan`]
//!    takes the `λ` of [`SAMPLE_HITS`] whose sample distances and records cost least (on
//!    60,418 rows and `k = 100`: `λ = 4`, `S = 2,393`, `m = 10`, 290 records a row).
//! 2. **One pass over the pairs.** Blocks of [`BLOCK`] rows run in parallel. A block's rows
//!    are compared with the codes from the block on, a tile at a time (the kernel sets'
//!    `pair_tile`, which lists the groups of four codes below either threshold without a
//!    branch); a pair `(i, j)`, `i < j`, closer than row `i`'s threshold is recorded for `i`,
//!    and closer than `j`'s for `j`. Records are appended to the block's list.
//! 3. **Selection.** The records are bucketed by row (a counting sort), and each row keeps
//!    its `k` smallest `(distance, index)`.
//!
//! **Exactness.** Every code closer than a row's threshold is recorded for it. If a row got
//! at least `k` records, its `k` nearest are all closer than the threshold, so they are its
//! `k` smallest records: the answer is exact, ties broken by the smaller index, whatever the
//! order in which the parallel blocks ran. A row with fewer than `k` records (the guess was
//! too low: rare by construction, or the set has fewer than `k + 1` codes) is scanned again
//! against every code with [`super::scan_knn`]. The result is therefore always that of the
//! batched scan, on every kernel set and thread count.
//!
//! **Memory.** The records take 12 bytes each, a few times `k` per row. A set whose
//! thresholds let through far more (e.g. thousands of identical codes, all at distance 0)
//! stops the pass once the records exceed [`RECORD_BUDGET`] per row and answers with the
//! batched scan instead, whose state is bounded.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rayon::prelude::*;

use super::scalar::{GROUP_CODES, PairTile, TILE_BYTES, dist_words, tile_codes};
use super::{Kernels, Neighbor};

/// Rows per block: the unit of parallel work, compared together with each tile of codes.
const BLOCK: usize = 64;

/// The expected numbers of sample codes among a row's `k` nearest that the plan weighs: the
/// sample has `λ · (n − 1) / k` codes. A larger sample costs more distances but sets the
/// thresholds closer to the `k`-th distance (fewer records).
const SAMPLE_HITS: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];

/// The cost of a record (written, bucketed, selected) in distances of 384-bit codes, as
/// measured (about 30 ns against 1.5 ns).
const RECORD_COST: f64 = 20.0;

/// Probability, per row, that the guessed threshold keeps fewer than `k` codes (the row is
/// then scanned again).
const MISS_PROBABILITY: f64 = 0.01;

/// Records per row and neighbour (beyond 16) after which the pass gives up for the batched
/// scan.
const RECORD_BUDGET: usize = 8;

/// Samples hold less than `1 / MAX_SAMPLE_SHARE` of the codes, and sets with `k` above
/// `n / (2 · MAX_SAMPLE_SHARE)` use the batched scan (small sets, or `k` close to `n`).
const MAX_SAMPLE_SHARE: usize = 4;

/// The sample of a [`super::self_knn`] run: `size` strided codes, and the threshold of a row
/// is one more than the distance of its `(rank + 1)`-th nearest among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    pub(crate) size: usize,
    pub(crate) rank: usize,
}

impl Sample {
    /// The sample for `n` codes and `k` neighbours, or `None` when the batched scan is the
    /// better choice (see [`MAX_SAMPLE_SHARE`]).
    pub(crate) fn plan(n: usize, k: usize) -> Option<Sample> {
        if n < 2 || k == 0 || k.saturating_mul(2 * MAX_SAMPLE_SHARE) >= n {
            return None;
        }
        let others = (n - 1) as f64;
        let p = k as f64 / others;
        // Per row: the sample's distances, and the records its threshold lets through
        // (about (rank + 1) / size of the codes); the pass over the pairs is the same for all.
        SAMPLE_HITS
            .iter()
            .filter_map(|&hits| {
                let size = ((hits * others / k as f64).ceil() as usize).max(16);
                if size.saturating_mul(MAX_SAMPLE_SHARE) >= n {
                    return None;
                }
                let rank = miss_rank(size, p, MISS_PROBABILITY);
                let cost = size as f64 + RECORD_COST * (rank + 1) as f64 * others / size as f64;
                Some((cost, Sample { size, rank }))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, s)| s)
    }
}

/// The smallest `m` with `P(Binomial(s, p) >= m) <= delta`, at most `s - 1`.
fn miss_rank(s: usize, p: f64, delta: f64) -> usize {
    // Walk the probability mass function upwards: P(X = 0) = (1 - p)^s, then the ratio
    // P(X = x + 1) / P(X = x) = (s - x) / (x + 1) · p / (1 - p).
    let mut pmf = (s as f64 * (-p).ln_1p()).exp();
    let mut below = 0.0;
    for m in 0..s {
        // `below` is P(X < m).
        if 1.0 - below <= delta {
            return m.max(1);
        }
        below += pmf;
        pmf *= (s - m) as f64 / (m + 1) as f64 * p / (1.0 - p);
    }
    s - 1
}

/// A pair recorded for `row`: code `index` at distance `dist`.
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    row: u32,
    dist: u32,
    index: u32,
}

/// A list of records appended without a branch: each record is written, and the length
/// advances when it is kept (a kept/dropped branch per lane mispredicts often).
#[derive(Default)]
struct Records {
    buf: Vec<Record>,
    len: usize,
}

impl Records {
    /// Makes room for `extra` more records.
    #[inline(always)]
    fn room(&mut self, extra: usize) {
        if self.len + extra > self.buf.len() {
            let size = (2 * self.buf.len()).max(self.len + extra).max(1024);
            self.buf.resize(size, Record::default());
        }
    }

    /// Writes `r` after the kept records, and keeps it if `keep` (room made before).
    #[inline(always)]
    fn put(&mut self, r: Record, keep: bool) {
        self.buf[self.len] = r;
        self.len += usize::from(keep);
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The kept records, without the spare room (up to half of the buffer, held until the
    /// selection otherwise).
    fn into_vec(mut self) -> Vec<Record> {
        self.buf.truncate(self.len);
        self.buf.shrink_to_fit();
        self.buf
    }
}

impl Kernels {
    /// For every code of `codes` (`n` codes of `words` words, `n < 2^32`, checked by the
    /// caller), its `k` nearest other codes sorted by `(dist, index)`; all of them if fewer.
    pub(crate) fn self_knn_unchecked(
        &'static self,
        codes: &[u64],
        words: usize,
        k: usize,
    ) -> Vec<Vec<Neighbor>> {
        let n = codes.len() / words;
        match Sample::plan(n, k) {
            Some(sample) => self.self_knn_sampled(codes, words, k, sample),
            None => self.self_knn_rows(codes, words, k, &Vec::from_iter(0..n)),
        }
    }

    /// [`self_knn_unchecked`](Self::self_knn_unchecked) with the given sample (tests choose
    /// small samples to reach the rescans); `sample.size < n`, `sample.rank < sample.size`.
    pub(crate) fn self_knn_sampled(
        &'static self,
        codes: &[u64],
        words: usize,
        k: usize,
        sample: Sample,
    ) -> Vec<Vec<Neighbor>> {
        let w = words;
        let n = codes.len() / w;
        debug_assert!(sample.size < n && sample.rank < sample.size && n <= u32::MAX as usize);
        let thr = self.guess_thresholds(codes, w, sample);
        let Some(records) =
            self.pair_pass(codes, w, &thr, n.saturating_mul(k + 16) * RECORD_BUDGET)
        else {
            return self.self_knn_rows(codes, w, k, &Vec::from_iter(0..n));
        };
        // Counting sort of the records by row, as `dist << 32 | index` keys.
        let mut start = vec![0usize; n + 1];
        for r in records.iter().flatten() {
            start[r.row as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut keys = vec![0u64; start[n]];
        let mut next = start.clone();
        for list in records {
            for r in list {
                let at = &mut next[r.row as usize];
                keys[*at] = u64::from(r.dist) << 32 | u64::from(r.index);
                *at += 1;
            }
        }
        let mut out: Vec<Vec<Neighbor>> = (0..n)
            .into_par_iter()
            .with_min_len(256)
            .map(|i| {
                let mut row = keys[start[i]..start[i + 1]].to_vec();
                if row.len() < k {
                    return Vec::new();
                }
                if row.len() > k {
                    row.select_nth_unstable(k - 1);
                    row.truncate(k);
                }
                row.sort_unstable();
                row.into_iter()
                    .map(|key| Neighbor {
                        distance: (key >> 32) as u32,
                        row: (key & 0xffff_ffff) as usize,
                    })
                    .collect()
            })
            .collect();
        // Rows whose threshold kept fewer than k codes: scanned again against every code.
        let missed: Vec<usize> = (0..n).filter(|&i| start[i + 1] - start[i] < k).collect();
        if !missed.is_empty() {
            let redone = self.self_knn_rows(codes, w, k, &missed);
            for (i, row) in missed.into_iter().zip(redone) {
                out[i] = row;
            }
        }
        out
    }

    /// Every row's threshold: one more than the distance of its `(rank + 1)`-th nearest
    /// code of the strided sample (the row itself may be one of them).
    fn guess_thresholds(&'static self, codes: &[u64], w: usize, sample: Sample) -> Vec<u32> {
        let n = codes.len() / w;
        let picked: Vec<u64> = (0..sample.size)
            .flat_map(|t| {
                let i = t * n / sample.size;
                codes[i * w..(i + 1) * w].iter().copied()
            })
            .collect();
        let rank = sample.rank + 1;
        codes
            .par_chunks(w * 256)
            .flat_map_iter(|qs| {
                self.scan_knn_unchecked(qs, &picked, w, rank)
                    .into_iter()
                    .map(move |nearest| {
                        nearest
                            .get(rank - 1)
                            .map_or(u32::MAX, |nb| nb.distance.saturating_add(1))
                    })
            })
            .collect()
    }

    /// The pass over the pairs: every `(row, index, dist)` with `dist < thr[row]`, in one
    /// list per block of rows; `None` if the records exceed `budget`.
    fn pair_pass(
        &'static self,
        codes: &[u64],
        w: usize,
        thr: &[u32],
        budget: usize,
    ) -> Option<Vec<Vec<Record>>> {
        let n = codes.len() / w;
        // The codes in whole groups of the widest layout; the few after them are compared
        // one by one.
        let ng = n / GROUP_CODES * GROUP_CODES;
        let transposed;
        let layout: &[u64] = match self.transpose {
            Some(transpose) => {
                let mut t = vec![0u64; ng * w];
                // SAFETY: `self` was handed out for this CPU; equal lengths, a multiple of
                // GROUP_CODES * w.
                unsafe { transpose(&codes[..ng * w], w, &mut t) };
                transposed = t;
                &transposed
            }
            None => &codes[..ng * w],
        };
        let tile = tile_codes(w, TILE_BYTES);
        let total = AtomicUsize::new(0);
        let over = AtomicBool::new(false);
        let lists: Vec<Vec<Record>> = (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map(|b| {
                let (i0, i1) = (b * BLOCK, n.min((b + 1) * BLOCK));
                let mut recs = Records::default();
                let mut dists = vec![0u32; tile];
                let mut groups = vec![0u32; tile / 4];
                // Both records of the pair (i, j), kept when j comes after i and is closer
                // than the row's threshold (room for them made by the caller).
                let record = |recs: &mut Records, i: usize, j: usize, d: u32| {
                    let after = j > i;
                    let (i, j) = (i as u32, j as u32);
                    recs.put(
                        Record {
                            row: i,
                            dist: d,
                            index: j,
                        },
                        after && d < thr[i as usize],
                    );
                    recs.put(
                        Record {
                            row: j,
                            dist: d,
                            index: i,
                        },
                        after && d < thr[j as usize],
                    );
                };
                let mut t0 = i0;
                while t0 < ng {
                    if over.load(Ordering::Relaxed) {
                        return Vec::new();
                    }
                    let before = recs.len();
                    let t1 = ng.min(t0 + tile);
                    let lay = &layout[t0 * w..t1 * w];
                    let col = &thr[t0..t1];
                    for i in i0..i1.min(t1 - 1) {
                        let q = &codes[i * w..(i + 1) * w];
                        // SAFETY: `self` was handed out for this CPU; `lay` holds the
                        // `col.len()` codes t0..t1 (a multiple of GROUP_CODES: t0 and t1 are)
                        // in the set's layout,
                        // `dists` and `groups` have room for a tile.
                        let hits = unsafe {
                            (self.pair_tile)(
                                &PairTile {
                                    tile: lay,
                                    words: w,
                                    query: q,
                                    thr: thr[i],
                                    col,
                                },
                                &mut dists,
                                &mut groups,
                            )
                        };
                        for &g in &groups[..hits] {
                            let g = 4 * g as usize;
                            recs.room(8);
                            for (l, &d) in dists[g..g + 4].iter().enumerate() {
                                record(&mut recs, i, t0 + g + l, d);
                            }
                        }
                    }
                    let added = recs.len() - before;
                    if total.fetch_add(added, Ordering::Relaxed) + added > budget {
                        over.store(true, Ordering::Relaxed);
                    }
                    t0 = t1;
                }
                // The last codes, beyond the groups of four.
                for i in i0..i1 {
                    for j in ng.max(i + 1)..n {
                        let d = dist_words(&codes[i * w..], &codes[j * w..], w);
                        recs.room(2);
                        record(&mut recs, i, j, d);
                    }
                }
                recs.into_vec()
            })
            .collect();
        (!over.load(Ordering::Relaxed)).then_some(lists)
    }

    /// The batched scan of the listed rows against every code, without the row itself.
    fn self_knn_rows(
        &'static self,
        codes: &[u64],
        w: usize,
        k: usize,
        rows: &[usize],
    ) -> Vec<Vec<Neighbor>> {
        rows.par_chunks(64)
            .flat_map_iter(|chunk| {
                let queries: Vec<u64> = chunk
                    .iter()
                    .flat_map(|&i| codes[i * w..(i + 1) * w].iter().copied())
                    .collect();
                let found = self.scan_knn_unchecked(&queries, codes, w, k.saturating_add(1));
                chunk.iter().zip(found).map(move |(&i, mut found)| {
                    if let Some(pos) = found.iter().position(|nb| nb.row == i) {
                        found.remove(pos);
                    }
                    found.truncate(k);
                    found
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::scalar;
    use super::*;

    /// Codes in clusters (a centre and copies with a few bits flipped), with exact
    /// duplicates, so that distances tie and neighbours are close.
    fn clustered(n: usize, w: usize, seed: u64) -> Vec<u64> {
        let mut s = seed | 1;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut codes = Vec::with_capacity(n * w);
        let mut centre: Vec<u64> = (0..w).map(|_| rnd()).collect();
        for i in 0..n {
            if rnd() % 8 == 0 {
                centre = (0..w).map(|_| rnd()).collect();
            }
            let mut c = centre.clone();
            if i % 5 != 0 {
                for _ in 0..rnd() % (8 * w as u64) {
                    let b = rnd() as usize % (64 * w);
                    c[b / 64] ^= 1 << (b % 64);
                }
            }
            codes.extend(c);
        }
        codes
    }

    /// Every code's k nearest others by sorting all of them.
    fn brute(codes: &[u64], w: usize, k: usize) -> Vec<Vec<Neighbor>> {
        let n = codes.len() / w;
        (0..n)
            .map(|i| {
                let mut all: Vec<Neighbor> = (0..n)
                    .filter(|&j| j != i)
                    .map(|j| Neighbor {
                        distance: dist_words(&codes[i * w..], &codes[j * w..], w),
                        row: j,
                    })
                    .collect();
                all.sort_unstable();
                all.truncate(k);
                all
            })
            .collect()
    }

    #[test]
    fn every_kernel_set_and_sample_gives_the_brute_force_graph() {
        for (case, &(n, w, k)) in [
            (300, 1, 5),
            (301, 2, 1),
            (333, 3, 17),
            (402, 4, 30),
            (517, 5, 9),
            (645, 6, 40),
            (230, 8, 3),
            (131, 6, 129),
        ]
        .iter()
        .enumerate()
        {
            let codes = clustered(n, w, 7 + case as u64);
            let want = brute(&codes, w, k);
            for kern in Kernels::available() {
                // The planned sample when there is one, a generous one, and one whose
                // threshold is far too low (most rows scanned again).
                let mut samples = vec![
                    Sample {
                        size: n / 5,
                        rank: (n / 5 - 1).min(k),
                    },
                    Sample { size: 16, rank: 0 },
                ];
                samples.extend(Sample::plan(n, k));
                for s in samples {
                    let got = kern.self_knn_sampled(&codes, w, k, s);
                    assert_eq!(got, want, "{} n={n} w={w} k={k} {s:?}", kern.name());
                }
                assert_eq!(
                    kern.self_knn(&codes, w, k).unwrap(),
                    want,
                    "{}",
                    kern.name()
                );
            }
        }
    }

    #[test]
    fn every_pair_tile_kernel_agrees_with_the_scalar_one() {
        // Distances and listed groups of one query against a tile, with row and column
        // thresholds around the distances, at every specialised width and a generic one.
        for w in [1usize, 2, 3, 4, 5, 6, 8, 9] {
            let codes = clustered(8 * 19, w, w as u64);
            let q = &codes[5 * w..6 * w];
            let col: Vec<u32> = (0..8 * 19)
                .map(|j| (j as u32 * 7) % (64 * w as u32))
                .collect();
            for thr in [0, 3, 32 * w as u32, u32::MAX] {
                let (mut want_d, mut want_g) = (vec![0; col.len()], vec![0; col.len() / 4]);
                let tile = PairTile {
                    tile: &codes,
                    words: w,
                    query: q,
                    thr,
                    col: &col,
                };
                let want_n = scalar::pair_tile_raw(&tile, &mut want_d, &mut want_g);
                for kern in Kernels::available() {
                    let layout = match kern.transpose {
                        Some(t) => {
                            let mut out = vec![0; codes.len()];
                            // SAFETY: the set was handed out for this CPU; equal lengths, a
                            // multiple of 4 * w.
                            unsafe { t(&codes, w, &mut out) };
                            out
                        }
                        None => codes.clone(),
                    };
                    let (mut d, mut g) = (vec![0; col.len()], vec![0; col.len() / 4]);
                    // SAFETY: as above; the tile holds col.len() codes, the buffers room.
                    let n = unsafe {
                        (kern.pair_tile)(
                            &PairTile {
                                tile: &layout,
                                ..tile
                            },
                            &mut d,
                            &mut g,
                        )
                    };
                    assert_eq!(d, want_d, "{} w={w}", kern.name());
                    assert_eq!(g[..n], want_g[..want_n], "{} w={w} thr={thr}", kern.name());
                    assert!(want_n > 0, "w={w} thr={thr}");
                }
            }
        }
    }

    #[test]
    fn identical_codes_give_up_for_the_scan_and_stay_exact() {
        // 600 copies of one code: every pair at distance 0, far beyond the record budget
        // of k = 2 neighbours; ties go to the smaller indexes.
        let codes = vec![0x5555_u64; 600 * 2];
        let kern = Kernels::dispatched();
        let got = kern.self_knn_sampled(&codes, 2, 2, Sample { size: 100, rank: 1 });
        assert_eq!(got, brute(&codes, 2, 2));
        assert_eq!(got[0].iter().map(|nb| nb.row).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(got[5].iter().map(|nb| nb.row).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn shapes_are_checked() {
        let kern = Kernels::dispatched();
        assert!(kern.self_knn(&[1, 2, 3], 2, 1).is_err());
        assert!(kern.self_knn(&[1, 2], 0, 1).is_err());
        assert_eq!(
            kern.self_knn(&[], 2, 3).unwrap(),
            Vec::<Vec<Neighbor>>::new()
        );
        assert_eq!(
            kern.self_knn(&[1, 2], 1, 0).unwrap(),
            vec![Vec::new(), Vec::new()]
        );
        assert_eq!(kern.self_knn(&[9], 1, 4).unwrap(), vec![Vec::new()]);
    }

    #[test]
    fn the_miss_rank_bounds_the_binomial_tail() {
        // P(Bin(100, 0.02) >= m): the mean is 2; P(X >= 6) = 0.0155, P(X >= 7) = 0.0041.
        assert_eq!(miss_rank(100, 0.02, 0.01), 7);
        assert_eq!(miss_rank(100, 0.02, 0.02), 6);
        assert_eq!(miss_rank(10, 0.5, 1e-9), 9);
    }

    #[test]
    fn the_plan_samples_a_few_codes_per_neighbour_list() {
        // k = 10: a sample of 0.25 · 60,417 / 10 codes, and P(Bin(1511, 10 / 60,417) >= 3)
        // = 0.0022 <= 1% < P(... >= 2) = 0.026.
        assert_eq!(
            Sample::plan(60_418, 10),
            Some(Sample {
                size: 1511,
                rank: 3
            })
        );
        let s = Sample::plan(60_418, 101).unwrap();
        // 4 · 60,417 / 101 codes; P(Bin(2393, 101 / 60,417) >= 10) <= 1% < P(... >= 9).
        assert_eq!(s.size, 2393);
        assert_eq!(s.rank, 10);
        assert!(Sample::plan(1000, 101).is_some());
        assert_eq!(Sample::plan(300, 101), None);
        assert_eq!(Sample::plan(1000, 0), None);
        assert_eq!(Sample::plan(1, 1), None);
    }
}
