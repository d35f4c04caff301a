//! The writer's index of the young rows, for batched check-and-inserts.
//!
//! A store holds one or a few large segments and, in size-tiered fashion, up to
//! `FAN_IN − 1` small segments of each size class, plus the delta. A batch of checks probes
//! every table of every segment: with a dozen young segments of four tables each, those
//! probes (each a few cache misses) cost more than the large segment's. The writer therefore
//! keeps the rows of the delta and of the small segments (the *covered* ones) in one
//! pigeonhole index of `r + 1` blocks for the radius `r` of its checks (a code within `r`
//! of a query agrees with it exactly on at least one block): a check probes `r + 1`
//! buckets here instead of the tables of every small segment, and the large segments'
//! tables as before.
//!
//! The index is a *superset*: every row inserted since it was built keeps its slot (an id,
//! a code) even when it is later removed or replaced. A slot is an answer only if its id is
//! live now, in the delta or in a covered segment, with the same code: so removals,
//! replacements and a rolled-back group need no change here, and a row is never reported
//! twice (from here and from a large segment's tables). A merge that carries covered rows
//! into a segment that is not covered drops the index (the writer rebuilds it when a check
//! next needs it), so the covered rows are always exactly those indexed.

use super::view::View;
use crate::cpu::prefetch;
use crate::util::hash::FastSet;

/// Shortest block: below it, a bucket would hold too many rows and the index is not used.
pub(crate) const MIN_BLOCK_BITS: usize = 16;

/// A segment is covered when it has fewer rows than this multiple of the delta limit: the
/// two smallest size classes and the lower half of the third (for the default delta of
/// 4,096 rows, segments of fewer than 524,288 rows). Bounds the index to a few million
/// rows whatever the store's size.
pub(crate) const COVERED_DELTA_LIMITS: usize = 128;

/// Bits of a block's bucket number (`2^16` buckets of 48 bytes per block).
const BUCKET_BITS: u32 = 16;

/// Queries whose buckets are fetched together (their cache misses overlap).
const UNIT: usize = 16;

/// The rows of one key of one block: the first word of each code (a lower bound of the
/// distance, the whole code for codes of up to 64 bits) and its slot.
#[derive(Default)]
struct Bucket {
    first: Vec<u64>,
    slots: Vec<u32>,
}

/// The index (see the [module docs](self)).
pub(crate) struct Young {
    radius: u32,
    words: usize,
    /// Start and length (at most 64 bits) of each block.
    cuts: Vec<(usize, usize)>,
    /// Per block, `2^BUCKET_BITS` buckets: a key's bucket is the key itself when it has at
    /// most that many bits, else its top bits after a multiplicative hash.
    buckets: Vec<Vec<Bucket>>,
    /// Slot `s`: its id and code.
    ids: Vec<u64>,
    codes: Vec<u64>,
    /// Covered segments (by number).
    covered: FastSet<u64>,
    /// Segments of fewer rows are covered when they appear.
    max_rows: usize,
}

/// Bits `[start, start + len)` of a code (`len ≤ 64`), as a number.
pub(crate) fn block_key(code: &[u64], start: usize, len: usize) -> u64 {
    let (w, b) = (start / 64, start % 64);
    let mut v = code[w] >> b;
    if b + len > 64 && w + 1 < code.len() {
        v |= code[w + 1] << (64 - b);
    }
    if len < 64 { v & ((1u64 << len) - 1) } else { v }
}

/// The bucket of key `k` of a block of `len` bits.
#[inline]
fn bucket(k: u64, len: usize) -> usize {
    if len <= BUCKET_BITS as usize {
        k as usize
    } else {
        (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BUCKET_BITS)) as usize
    }
}

/// The `r + 1` blocks of `bits`-bit codes for radius `r`, when each has at least `min`
/// bits: `(start, length)`, lengths capped at 64.
pub(crate) fn cuts(bits: usize, r: u32, min: usize) -> Option<Vec<(usize, usize)>> {
    let n = r as usize + 1;
    let len = bits / n;
    (len >= min).then(|| (0..n).map(|i| (i * len, len.min(64))).collect())
}

impl Young {
    /// The index of `view`'s delta and small segments for radius `r` of `bits`-bit codes,
    /// with segments of fewer than `max_rows` rows covered; `None` when the blocks would be
    /// shorter than [`MIN_BLOCK_BITS`].
    pub(crate) fn build(view: &View, bits: usize, r: u32, max_rows: usize) -> Option<Young> {
        let cuts = cuts(bits, r, MIN_BLOCK_BITS)?;
        let mut y = Young {
            radius: r,
            words: view.words,
            buckets: (0..cuts.len())
                .map(|_| {
                    (0..1usize << BUCKET_BITS)
                        .map(|_| Bucket::default())
                        .collect()
                })
                .collect(),
            cuts,
            ids: Vec::new(),
            codes: Vec::new(),
            covered: FastSet::default(),
            max_rows,
        };
        for sr in &view.segs {
            if sr.seg.len() < max_rows {
                y.covered.insert(sr.seg.no);
                let rows = &sr.seg.rows;
                for row in 0..rows.len() {
                    if !sr.dead.contains(row as u32) {
                        y.add(rows.ids[row], rows.code(row));
                    }
                }
            }
        }
        for ch in &view.chunks {
            for p in 0..ch.rows.len() {
                if !ch.dead[p] {
                    y.add(ch.rows.ids[p], ch.rows.code(p));
                }
            }
        }
        Some(y)
    }

    /// The radius it answers.
    pub(crate) fn radius(&self) -> u32 {
        self.radius
    }

    /// Slots held (stale ones included).
    pub(crate) fn slots(&self) -> usize {
        self.ids.len()
    }

    /// Indexes a row inserted into the delta.
    pub(crate) fn add(&mut self, id: u64, code: &[u64]) {
        let slot = self.ids.len() as u32;
        for (&(s, l), m) in self.cuts.iter().zip(&mut self.buckets) {
            let b = &mut m[bucket(block_key(code, s, l), l)];
            b.first.push(code[0]);
            b.slots.push(slot);
        }
        self.ids.push(id);
        self.codes.extend_from_slice(code);
    }

    /// True when segment `no`'s rows are indexed here (and its tables need no probe).
    pub(crate) fn covers(&self, no: u64) -> bool {
        self.covered.contains(&no)
    }

    /// The delta became segment `no` (its rows were indexed as they were inserted).
    pub(crate) fn frozen(&mut self, no: u64) {
        self.covered.insert(no);
    }

    /// Segments `inputs` were merged into `output` (`(number, rows)`, none when nothing
    /// was live); false when the index no longer matches the covered rows and must be
    /// dropped (covered rows went into a segment too large to cover, or covered and other
    /// rows were merged together).
    pub(crate) fn merged(&mut self, inputs: &[u64], output: Option<(u64, usize)>) -> bool {
        let n = inputs.iter().filter(|no| self.covered.contains(no)).count();
        if n == 0 {
            return true;
        }
        if n < inputs.len() {
            return false;
        }

        for no in inputs {
            self.covered.remove(no);
        }
        match output {
            None => true,
            Some((no, rows)) if rows < self.max_rows => {
                self.covered.insert(no);
                true
            }
            Some(_) => false,
        }
    }

    /// For each query of `qs` (row-major codes), the slots within the radius (each once)
    /// with their distances, appended to `out[q]`. Stale slots are included: the caller
    /// checks that each is live. The buckets of [`UNIT`] queries are fetched together.
    pub(crate) fn search_batch(&self, qs: &[u64], out: &mut [Vec<(u32, u32)>]) {
        let (w, nb) = (self.words, self.cuts.len());
        let mut found: Vec<&Bucket> = Vec::with_capacity(UNIT * nb);
        for (u, outs) in qs.chunks(UNIT * w).zip(out.chunks_mut(UNIT)) {
            found.clear();
            for q in u.chunks_exact(w) {
                for (&(s, l), m) in self.cuts.iter().zip(&self.buckets) {
                    let b = &m[bucket(block_key(q, s, l), l)];
                    prefetch(b);
                    found.push(b);
                }
            }
            for b in &found {
                prefetch(b.first.as_ptr());
                prefetch(b.slots.as_ptr());
            }
            for ((q, o), bs) in u.chunks_exact(w).zip(outs).zip(found.chunks(nb)) {
                self.scan(q, bs, o);
            }
        }
    }

    /// The slots of buckets `bs` (one per block) within the radius of `q`.
    fn scan(&self, q: &[u64], bs: &[&Bucket], out: &mut Vec<(u32, u32)>) {
        let (w, r) = (self.words, self.radius);
        for (i, b) in bs.iter().enumerate() {
            for (&f, &slot) in b.first.iter().zip(&b.slots) {
                let lower = (f ^ q[0]).count_ones();
                if lower > r {
                    continue;
                }
                let c = if w == 1 {
                    std::slice::from_ref(&f)
                } else {
                    &self.codes[slot as usize * w..(slot as usize + 1) * w]
                };
                let d: u32 = c.iter().zip(q).map(|(a, b)| (a ^ b).count_ones()).sum();
                // Within the radius, of the query's key in this block (buckets may share
                // several keys), and reported by the first block it shares with the query.
                if d > r {
                    continue;
                }
                let (s, l) = self.cuts[i];
                if block_key(c, s, l) != block_key(q, s, l)
                    || self.cuts[..i]
                        .iter()
                        .any(|&(s, l)| block_key(c, s, l) == block_key(q, s, l))
                {
                    continue;
                }
                out.push((slot, d));
            }
        }
    }

    /// The id and code of a slot.
    pub(crate) fn slot(&self, slot: u32) -> (u64, &[u64]) {
        let s = slot as usize;
        (
            self.ids[s],
            &self.codes[s * self.words..(s + 1) * self.words],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Content;

    #[test]
    fn merges_keep_the_covered_segments_those_whose_rows_are_indexed() {
        let view = View::new(1, Content::Codes);
        let mut y = Young::build(&view, 64, 3, 100).unwrap();
        y.frozen(1);
        y.frozen(2);
        // Covered inputs, small output: covered.
        assert!(y.merged(&[1, 2], Some((3, 99))));
        assert!(y.covers(3) && !y.covers(1) && !y.covers(2));
        // Segments never covered: nothing changes, the output is not covered.
        assert!(y.merged(&[7, 8], Some((9, 10))));
        assert!(!y.covers(9));
        // Covered and other rows together, or covered rows into a large segment: the
        // index no longer matches.
        y.frozen(4);
        assert!(!y.merged(&[3, 9], Some((10, 50))));
        let mut y = Young::build(&view, 64, 3, 100).unwrap();
        y.frozen(4);
        assert!(!y.merged(&[4], Some((11, 100))));
        // Blocks of 64 / (r + 1) bits shorter than the minimum: no index.
        assert!(Young::build(&view, 64, 4, 100).is_none());
        assert!(Young::build(&view, 256, 15, 100).is_some());
    }

    #[test]
    fn search_finds_each_slot_within_the_radius_once() {
        let view = View::new(2, Content::Codes);
        let mut y = Young::build(&view, 128, 3, 100).unwrap();
        let mut rng = crate::rng::Rng::new(3);
        let q = [rng.next_u64(), rng.next_u64()];
        let mut codes = Vec::new();
        for i in 0..400u64 {
            let mut c = q;
            for _ in 0..(i % 7) {
                let b = rng.below(128) as usize;
                c[b / 64] ^= 1 << (b % 64);
            }
            if i % 5 == 0 {
                c = [rng.next_u64(), rng.next_u64()];
            }
            y.add(i, &c);
            codes.push(c);
        }
        let mut got = vec![Vec::new()];
        y.search_batch(&q, &mut got);
        let mut got = got.pop().unwrap();
        got.sort_unstable();
        let want: Vec<(u32, u32)> = codes
            .iter()
            .enumerate()
            .map(|(s, c)| {
                let d = (c[0] ^ q[0]).count_ones() + (c[1] ^ q[1]).count_ones();
                (s as u32, d)
            })
            .filter(|&(_, d)| d <= 3)
            .collect();
        assert!(want.len() > 100);
        assert_eq!(got, want);
    }
}
