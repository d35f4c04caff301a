//! Sort keys of the permuted codes: the 64-bit prefix of a permuted code, the order of the
//! sorted lists (ties broken on the permuted tails, then by slot), and the sorts that build
//! them.

use std::cmp::Ordering;

use super::KEY_BITS;

/// The first (up to) 64 permuted bits of `code`, permuted position 0 in bit 63: the
/// big-endian prefix of the permuted code, so `u64` order is lexicographic order.
#[inline]
pub(super) fn prefix_key(head: &[u32], code: &[u64]) -> u64 {
    let mut key = 0u64;
    for (j, &p) in head.iter().enumerate() {
        let bit = (code[(p >> 6) as usize] >> (p & 63)) & 1;
        key |= bit << (63 - j);
    }
    key
}

/// [`prefix_key`] by table lookups, for building: for each byte of the code that holds a
/// bit of the key, the key bits each of its 256 values sets (for 256-bit codes about 29
/// lookups instead of 64 single-bit gathers).
pub(super) struct KeyTable {
    /// `(word, shift)` of each byte of the code that holds a key bit, increasing.
    bytes: Vec<(usize, u32)>,
    /// Key bits set by each value of each of those bytes.
    table: Vec<[u64; 256]>,
}

impl KeyTable {
    pub(super) fn new(head: &[u32]) -> Self {
        let mut pos: Vec<u32> = head.iter().map(|&p| p / 8).collect();
        pos.sort_unstable();
        pos.dedup();
        let mut table = vec![[0u64; 256]; pos.len()];
        for (j, &p) in head.iter().enumerate() {
            let t = &mut table[pos.partition_point(|&x| x < p / 8)];
            for (v, e) in t.iter_mut().enumerate() {
                *e |= (((v >> (p % 8)) & 1) as u64) << (63 - j);
            }
        }
        let bytes = pos
            .iter()
            .map(|&b| ((b / 8) as usize, 8 * (b % 8)))
            .collect();
        KeyTable { bytes, table }
    }

    #[inline]
    pub(super) fn key(&self, code: &[u64]) -> u64 {
        let mut key = 0u64;
        for (&(w, shift), t) in self.bytes.iter().zip(&self.table) {
            key |= t[usize::from((code[w] >> shift) as u8)];
        }
        key
    }
}

/// `(key, slot)` for `keys[slot]`, sorted by `cmp` (which orders by key first): one
/// counting-sort pass on the top key bits (about 8 entries per bucket), then each bucket
/// sorted by `cmp` in cache.
pub(super) fn bucket_sort(
    keys: &[u64],
    cmp: impl Fn((u64, u32), (u64, u32)) -> Ordering,
) -> Vec<(u64, u32)> {
    let n = keys.len();
    let top = (usize::BITS - n.leading_zeros())
        .saturating_sub(3)
        .clamp(1, 16);
    let bucket = |k: u64| (k >> (64 - top)) as usize;
    let mut start = vec![0usize; (1 << top) + 1];
    for &k in keys {
        start[bucket(k) + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut out = vec![(0u64, 0u32); n];
    let mut next = start.clone();
    for (s, &k) in keys.iter().enumerate() {
        let b = bucket(k);
        out[next[b]] = (k, s as u32);
        next[b] += 1;
    }
    for r in start.windows(2) {
        if r[1] - r[0] > 1 {
            out[r[0]..r[1]].sort_unstable_by(|&a, &b| cmp(a, b));
        }
    }
    out
}

/// Lexicographic comparison of the permuted codes of `a` and `b` from permuted position
/// `KEY_BITS` on (the part a key does not hold).
#[inline]
pub(super) fn cmp_tail(perm: &[u32], a: &[u64], b: &[u64]) -> Ordering {
    if perm.len() <= KEY_BITS || a == b {
        return Ordering::Equal;
    }
    for &p in &perm[KEY_BITS..] {
        let (w, s) = ((p >> 6) as usize, p & 63);
        if ((a[w] ^ b[w]) >> s) & 1 != 0 {
            return ((a[w] >> s) & 1).cmp(&((b[w] >> s) & 1));
        }
    }
    Ordering::Equal
}

/// The order of every sorted list: by key, then the permuted tail, then slot (slots are in
/// id order, so this is by id).
#[inline]
pub(super) fn cmp_entry(
    perm: &[u32],
    codes: &[u64],
    w: usize,
    a: (u64, u32),
    b: (u64, u32),
) -> Ordering {
    a.0.cmp(&b.0)
        .then_with(|| {
            let (sa, sb) = (a.1 as usize, b.1 as usize);
            cmp_tail(
                perm,
                &codes[sa * w..(sa + 1) * w],
                &codes[sb * w..(sb + 1) * w],
            )
        })
        .then(a.1.cmp(&b.1))
}

/// Length of the run of `key` at the start of the sorted `keys`, by galloping: `O(log run)`
/// probes near the start (ties are usually a handful of near-duplicates).
pub(super) fn gallop_equal(keys: &[u64], key: u64) -> usize {
    let mut end = 1;
    while end < keys.len() && keys[end] == key {
        end = (2 * end).min(keys.len());
    }
    let start = end / 2;
    start + keys[start..end].partition_point(|&k| k == key)
}
