//! The bit layout of every table (how a code becomes a table's 64-bit sort key), and the
//! counting sort that builds the sorted arrays.
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
    if !bits.is_multiple_of(64) {
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
///
/// Beyond 11 bits the sort runs in two passes (most significant digit first): the top 8
/// bits scatter the pairs into 256 runs, then each run, small enough for the cache, is
/// sorted on the remaining bits. One pass into `2^16` buckets would write to a random cache
/// line and page for nearly every pair.
pub(crate) fn bucket_pairs(pairs: &[(u64, u32)], b: u32) -> (Vec<(u64, u32)>, Vec<usize>) {
    debug_assert!((1..=24).contains(&b));
    let mut out = vec![(0u64, 0u32); pairs.len()];
    let mut offsets = vec![0usize; (1 << b) + 1];
    if b <= 11 {
        counting_sort(pairs, 64 - b, (1 << b) - 1, &mut out, &mut offsets);
        return (out, offsets);
    }
    let mut top = vec![0usize; 257];
    counting_sort(pairs, 56, 255, &mut out, &mut top);
    let rest = b - 8;
    let mut tmp = vec![(0u64, 0u32); pairs.len()];
    let mut sub = vec![0usize; (1 << rest) + 1];
    for h in 0..256 {
        let (s, e) = (top[h], top[h + 1]);
        counting_sort(
            &out[s..e],
            64 - b,
            (1 << rest) - 1,
            &mut tmp[s..e],
            &mut sub,
        );
        for (j, &o) in sub[..1 << rest].iter().enumerate() {
            offsets[(h << rest) + j] = s + o;
        }
    }
    offsets[1 << b] = pairs.len();
    (tmp, offsets)
}

/// Stable counting sort of `src` into `dst` on the digit `(key >> shift) & mask`; `offsets`
/// (`mask + 2` entries) receives the start of each digit's run, then the length.
pub(crate) fn counting_sort(
    src: &[(u64, u32)],
    shift: u32,
    mask: u64,
    dst: &mut [(u64, u32)],
    offsets: &mut [usize],
) {
    offsets.fill(0);
    for &(k, _) in src {
        offsets[((k >> shift) & mask) as usize + 1] += 1;
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut next = offsets[..offsets.len() - 1].to_vec();
    for &(k, v) in src {
        let slot = &mut next[((k >> shift) & mask) as usize];
        dst[*slot] = (k, v);
        *slot += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn bucketing_sorts_on_the_top_bits() {
        let mut rng = Rng::new(6);
        for (n, b) in [
            (0usize, 4u32),
            (1000, 4),
            (5000, 11),
            (5000, 12),
            (20000, 16),
            (3000, 24),
        ] {
            let pairs: Vec<(u64, u32)> = (0..n as u32)
                .map(|i| (rng.next_u64() >> (i % 2), i))
                .collect();
            let (out, offsets) = bucket_pairs(&pairs, b);
            let mut want = pairs.clone();
            want.sort_by_key(|&(k, _)| k >> (64 - b)); // stable
            assert_eq!(out, want);
            assert_eq!(offsets.len(), (1 << b) + 1);
            for (bucket, w) in offsets.windows(2).enumerate() {
                assert!(
                    out[w[0]..w[1]]
                        .iter()
                        .all(|&(k, _)| (k >> (64 - b)) as usize == bucket)
                );
            }
            assert_eq!(offsets[1 << b], n);
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
