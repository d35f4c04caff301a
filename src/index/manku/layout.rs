//! The bit layout of every table (how a code becomes a table's 64-bit sort key), the counting
//! sort that builds the sorted arrays, and the interpolation search that probes them.
//!
//! # Key words
//!
//! Table `t` keys a code by one `u64`, its *key word*: the table's effective key bits (the
//! first `p ≤ 64` of its key positions, in increasing bit order) fill the top `p` bits (key
//! bit `i` at bit `64 − p + i`), and the code's other bits, in increasing order, fill the low
//! `64 − p` bits as far as they go. For `f ≤ 64` the key word is a bit permutation of the
//! whole code, so the Hamming distance of two key words *is* the distance of the codes: the
//! table is a sorted array of permuted codes, verified without un-permuting. For `f > 64` the
//! key word holds 64 of the `f` bits, so its distance is a lower bound of the true one, a free
//! filter before the full code is read.
//!
//! Codes agreeing on table `t`'s key have equal top `p` bits of their key words, so they are
//! contiguous in the table sorted by key word.

use super::design::table_keys;

/// One run of a key-word extraction: `len` bits of code word `word` from bit `src` go to
/// key-word bit `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    word: u32,
    src: u32,
    len: u32,
    dst: u32,
}

/// How one table keys a code.
#[derive(Clone, Debug)]
pub(crate) struct TableLayout {
    /// Effective key length `p` (at most 64).
    pub(crate) key_bits: u32,
    /// Mask of the key in the key word: its top `p` bits.
    pub(crate) prefix: u64,
    /// Key-word bits that can be set (codes of fewer than 64 bits leave some empty).
    pub(crate) valid: u64,
    runs: Vec<Run>,
    /// The effective key bits as a code mask (`words` words).
    key_mask: Vec<u64>,
    /// For one-word codes: the key masks of the tables before this one, in this table's
    /// key-word space.
    prior: Vec<u64>,
}

impl TableLayout {
    /// The key word of `code`.
    #[inline(always)]
    pub(crate) fn keyword(&self, code: &[u64]) -> u64 {
        let mut k = 0;
        for r in &self.runs {
            k |= ((code[r.word as usize] >> r.src) & (u64::MAX >> (64 - r.len))) << r.dst;
        }
        k
    }

    /// The key word of a one-word code.
    #[inline(always)]
    pub(crate) fn keyword1(&self, code: u64) -> u64 {
        let mut k = 0;
        for r in &self.runs {
            k |= ((code >> r.src) & (u64::MAX >> (64 - r.len))) << r.dst;
        }
        k
    }

    /// One-word codes: whether two codes whose key words XOR to `x` agree on the key of a
    /// table before this one (so that table reports them first).
    #[inline(always)]
    pub(crate) fn prior_match1(&self, x: u64) -> bool {
        self.prior.iter().any(|&m| x & m == 0)
    }
}

/// The tables of a design over `bits`-bit codes.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    words: usize,
    pub(crate) tables: Vec<TableLayout>,
}

impl Layout {
    /// The layout of a checked design.
    pub(crate) fn new(bits: usize, radius: u32, levels: &[usize]) -> Layout {
        let words = bits.div_ceil(64);
        let mut tables: Vec<TableLayout> = table_keys(bits, radius, levels)
            .into_iter()
            .map(|key| table_layout(bits, words, &key))
            .collect();
        if words == 1 {
            for t in 1..tables.len() {
                let prior = (0..t)
                    .map(|s| tables[t].keyword(&tables[s].key_mask))
                    .collect();
                tables[t].prior = prior;
            }
        }
        Layout { words, tables }
    }

    /// Wide codes: whether codes `a` and `b` agree on the key of a table before table `t`.
    #[inline]
    pub(crate) fn prior_match(&self, t: usize, a: &[u64], b: &[u64]) -> bool {
        self.tables[..t].iter().any(|s| {
            s.key_mask
                .iter()
                .zip(a.iter().zip(b))
                .all(|(&m, (&x, &y))| (x ^ y) & m == 0)
        })
    }

    /// Bytes held by the layout.
    pub(crate) fn bytes(&self) -> usize {
        self.tables
            .iter()
            .map(|t| {
                std::mem::size_of::<TableLayout>()
                    + t.runs.len() * std::mem::size_of::<Run>()
                    + (t.key_mask.len() + t.prior.len()) * 8
            })
            .sum()
    }

    /// Words per code.
    pub(crate) fn words(&self) -> usize {
        self.words
    }
}

fn table_layout(bits: usize, words: usize, key: &[u32]) -> TableLayout {
    let p = key.len().min(64);
    let eff = &key[..p];
    let mut key_mask = vec![0u64; words];
    for &b in eff {
        key_mask[b as usize / 64] |= 1 << (b % 64);
    }
    // Source bit -> key-word bit: the key on top, the other bits from bit 0 up.
    let mut pairs: Vec<(u32, u32)> = eff
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, (64 - p + i) as u32))
        .collect();
    pairs.extend(
        (0..bits as u32)
            .filter(|&b| key_mask[b as usize / 64] >> (b % 64) & 1 == 0)
            .take(64 - p)
            .enumerate()
            .map(|(j, b)| (b, j as u32)),
    );
    let mut runs: Vec<Run> = Vec::new();
    for (b, dst) in pairs {
        let (word, src) = (b / 64, b % 64);
        match runs.last_mut() {
            Some(r) if r.word == word && r.src + r.len == src && r.dst + r.len == dst => r.len += 1,
            _ => runs.push(Run {
                word,
                src,
                len: 1,
                dst,
            }),
        }
    }
    let mut t = TableLayout {
        key_bits: p as u32,
        prefix: if p == 0 { 0 } else { u64::MAX << (64 - p) },
        valid: 0,
        runs,
        key_mask,
        prior: Vec::new(),
    };
    let mut ones = vec![u64::MAX; words];
    if bits % 64 != 0 {
        ones[words - 1] = (1 << (bits % 64)) - 1;
    }
    t.valid = t.keyword(&ones);
    t
}

/// Sorts `(key, value)` pairs by key, then value: a counting sort on the top bits of the key
/// into about 8 pairs per bucket, then each bucket sorted.
pub(crate) fn sort_pairs(pairs: Vec<(u64, u32)>) -> Vec<(u64, u32)> {
    let n = pairs.len();
    if n < 1 << 12 {
        let mut pairs = pairs;
        pairs.sort_unstable();
        return pairs;
    }
    let b = (usize::BITS - n.leading_zeros())
        .saturating_sub(3)
        .clamp(1, 20);
    let (mut out, offsets) = bucket_pairs(&pairs, b);
    for w in offsets.windows(2) {
        out[w[0]..w[1]].sort_unstable();
    }
    out
}

/// Counting sort of `pairs` on the top `b` bits of the key (`1 ≤ b ≤ 24`), stable: the
/// pairs and the bucket offsets (`2^b + 1` of them).
pub(crate) fn bucket_pairs(pairs: &[(u64, u32)], b: u32) -> (Vec<(u64, u32)>, Vec<usize>) {
    debug_assert!((1..=24).contains(&b));
    let shift = 64 - b;
    let mut offsets = vec![0usize; (1 << b) + 1];
    for &(k, _) in pairs {
        offsets[(k >> shift) as usize + 1] += 1;
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut next = offsets.clone();
    let mut out = vec![(0u64, 0u32); pairs.len()];
    for &(k, v) in pairs {
        let slot = &mut next[(k >> shift) as usize];
        out[*slot] = (k, v);
        *slot += 1;
    }
    (out, offsets)
}

/// Rounds of interpolation before the binary search.
const INTERPOLATION_ROUNDS: usize = 6;

/// An interpolation search for the first key `>= x` in a sorted array, step by step so that
/// the searches of several tables can be interleaved (their memory accesses then overlap).
///
/// Invariant: the answer lies in `lo..=hi`; `klo ≤ x` is the key before `lo` (0 if none) and
/// `khi ≥ x` the key at `hi` (`u64::MAX` if none). Each step probes the position where `x`
/// falls by linear interpolation between `klo` and `khi`, and moves one end there. On
/// uniform keys, as permuted signatures are, the error shrinks from `√n` to about
/// `n^(1/4)`, ..., so three or four steps land in the right cache line; at most
/// [`INTERPOLATION_ROUNDS`] steps are taken, then a binary search finishes, so skewed keys
/// cost `O(log n)` at worst.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bracket {
    lo: usize,
    hi: usize,
    klo: u64,
    khi: u64,
    /// The key searched for.
    pub(crate) x: u64,
}

impl Bracket {
    /// A search for `x` in `len` sorted keys.
    #[inline(always)]
    pub(crate) fn new(len: usize, x: u64) -> Self {
        Bracket {
            lo: 0,
            hi: len,
            klo: 0,
            khi: u64::MAX,
            x,
        }
    }

    /// One interpolation step (nothing once the range is 8 keys or fewer).
    #[inline(always)]
    pub(crate) fn step(&mut self, keys: &[u64]) {
        let n = self.hi - self.lo;
        if n <= 8 {
            return;
        }
        let frac = (self.x - self.klo) as f64 / ((self.khi - self.klo) as f64 + 1.0);
        let off = ((frac * n as f64) as usize).min(n - 1);
        let pos = self.lo + off;
        let k = keys[pos];
        if k < self.x {
            self.lo = pos + 1;
            self.klo = k;
        } else {
            self.hi = pos;
            self.khi = k;
        }
    }

    /// Runs all the interpolation rounds.
    #[cfg(test)]
    pub(crate) fn interpolate(&mut self, keys: &[u64]) {
        for _ in 0..INTERPOLATION_ROUNDS {
            self.step(keys);
        }
    }

    /// The index of the first key `>= x` (binary search of what is left).
    #[inline(always)]
    pub(crate) fn finish(&self, keys: &[u64]) -> usize {
        self.lo + keys[self.lo..self.hi].partition_point(|&k| k < self.x)
    }
}

/// Rounds to run when interleaving several searches.
pub(crate) const ROUNDS: usize = INTERPOLATION_ROUNDS;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn interpolation_search_is_a_lower_bound() {
        let mut rng = Rng::new(7);
        for n in [0usize, 1, 5, 9, 100, 5000] {
            for skew in [0u32, 40, 60] {
                let mut keys: Vec<u64> = (0..n).map(|_| rng.next_u64() >> skew).collect();
                let dups: Vec<u64> = keys.iter().take(n / 3).copied().collect();
                keys.extend(dups);
                keys.sort_unstable();
                let probes = keys
                    .iter()
                    .copied()
                    .chain((0..50).map(|_| rng.next_u64() >> skew))
                    .chain([0, u64::MAX]);
                for x in probes {
                    let mut b = Bracket::new(keys.len(), x);
                    b.interpolate(&keys);
                    assert_eq!(b.finish(&keys), keys.partition_point(|&k| k < x));
                }
            }
        }
    }

    #[test]
    fn key_words_permute_narrow_codes() {
        let mut rng = Rng::new(8);
        for (bits, k, levels) in [
            (64, 3, vec![4]),
            (64, 3, vec![4, 4]),
            (37, 2, vec![5]),
            (1, 3, vec![4]),
        ] {
            let layout = Layout::new(bits, k, &levels);
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            for t in &layout.tables {
                assert_eq!(t.valid.count_ones() as usize, bits);
                assert_eq!(t.prefix & t.valid, t.prefix);
                for _ in 0..100 {
                    let (a, b) = (rng.next_u64() & mask, rng.next_u64() & mask);
                    let (ka, kb) = (t.keyword1(a), t.keyword1(b));
                    assert_eq!(ka, t.keyword(&[a]));
                    assert_eq!((ka ^ kb).count_ones(), (a ^ b).count_ones());
                    assert_eq!((ka ^ kb) & t.prefix == 0, (a ^ b) & t.key_mask[0] == 0);
                }
            }
        }
    }

    #[test]
    fn wide_key_words_are_lower_bounds() {
        let mut rng = Rng::new(9);
        let layout = Layout::new(200, 3, &[4]);
        for t in &layout.tables {
            assert_eq!(t.key_bits, 50);
            for _ in 0..100 {
                let a: Vec<u64> = (0..4)
                    .map(|i| rng.next_u64() >> if i == 3 { 56 } else { 0 })
                    .collect();
                let mut b = a.clone();
                b[rng.below(4) as usize] ^= rng.next_u64() & rng.next_u64();
                b[3] &= 0xFF;
                let d: u32 = a.iter().zip(&b).map(|(x, y)| (x ^ y).count_ones()).sum();
                assert!((t.keyword(&a) ^ t.keyword(&b)).count_ones() <= d);
            }
        }
    }
}
