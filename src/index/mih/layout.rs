//! The substrings of a code and their tables: how `f` bits are cut into `m` substrings, the
//! flat arrays of each table (dense directory, or sparse keys with a prefix directory), and
//! the enumeration of the values within a Hamming radius of a substring (Gosper's hack).

/// Largest substring width served by a dense directory (`2^22` offsets, 16 MiB).
pub(super) const DENSE_MAX_BITS: u32 = 22;
/// A dense directory may have up to `2^(⌈log2 max(N, 1024)⌉ + DENSE_SLACK_BITS)` entries.
pub(super) const DENSE_SLACK_BITS: u32 = 2;
/// `⌈log2 n⌉` for `n ≥ 1` (0 for `n ≤ 1`).
pub(super) fn ceil_log2(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

/// One substring and its table's place in the flat arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Substring {
    /// First bit.
    pub(super) start: usize,
    /// Bits, `1..=64`.
    pub(super) width: u32,
    /// Directory bits: `width` for a dense table, fewer for a sparse one.
    pub(super) prefix: u32,
    /// Offset of the directory in `dirs` (`2^prefix + 1` entries).
    pub(super) dir_start: usize,
    /// Offset of the keys in `keys` (sparse tables only; `N` entries).
    pub(super) key_start: usize,
}

impl Substring {
    pub(super) fn dense(&self) -> bool {
        self.prefix == self.width
    }

    /// The substring's value in `code`.
    #[inline(always)]
    pub(super) fn extract(&self, code: &[u64]) -> u64 {
        let word = self.start / 64;
        let off = self.start % 64;
        let mut v = code[word] >> off;
        if off + self.width as usize > 64 {
            v |= code[word + 1] << (64 - off);
        }
        if self.width < 64 {
            v & ((1u64 << self.width) - 1)
        } else {
            v
        }
    }
}

/// The substrings of `bits`-bit codes cut in `m`, with table offsets for `n` rows; returns
/// them with the total lengths of `dirs` and `keys`.
pub(super) fn layout(bits: usize, m: usize, n: usize) -> (Vec<Substring>, usize, usize) {
    let dense_limit = (ceil_log2(n.max(1024)) + DENSE_SLACK_BITS).min(DENSE_MAX_BITS);
    let sparse_prefix = ceil_log2(n.max(2)).min(DENSE_MAX_BITS);
    let (base, extra) = (bits / m, bits % m);
    let mut subs = Vec::with_capacity(m);
    let (mut start, mut dirs, mut keys) = (0, 0, 0);
    for t in 0..m {
        let width = (base + usize::from(t < extra)) as u32;
        let prefix = if width <= dense_limit {
            width
        } else {
            sparse_prefix.min(width - 1)
        };
        subs.push(Substring {
            start,
            width,
            prefix,
            dir_start: dirs,
            key_start: keys,
        });
        start += width as usize;
        dirs += (1usize << prefix) + 1;
        if prefix < width {
            keys += n;
        }
    }
    (subs, dirs, keys)
}

/// Every `width`-bit mask with exactly `weight` bits set, in increasing order (Gosper's
/// hack). A plain iterator rather than a callback, so that the probing loops inline into the
/// `POPCNT`-enabled entry points.
#[derive(Clone, Copy, Debug)]
pub(super) struct Flips {
    pub(super) next: Option<u64>,
    pub(super) width: u32,
}

impl Flips {
    #[inline(always)]
    pub(super) fn new(width: u32, weight: u32) -> Self {
        let first = match weight {
            0 => Some(0),
            w if w > width => None,
            64 => Some(u64::MAX),
            w => Some((1u64 << w) - 1),
        };
        Flips { next: first, width }
    }
}

impl Iterator for Flips {
    type Item = u64;

    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        let x = self.next?;
        self.next = if x == 0 {
            None
        } else {
            let low = x & x.wrapping_neg();
            x.checked_add(low).and_then(|ripple| {
                let n = (((ripple ^ x) >> 2) >> low.trailing_zeros()) | ripple;
                (self.width == 64 || n >> self.width == 0).then_some(n)
            })
        };
        Some(x)
    }
}

/// Builds the table of substring `s` over `n` codes: fills `rows` (`n` entries) and returns
/// its directory and keys (empty for a dense table).
pub(super) fn build_table(
    s: &Substring,
    codes: &[u64],
    words: usize,
    rows: &mut [u32],
) -> (Vec<u32>, Vec<u64>) {
    let n = rows.len();
    let code = |row: usize| &codes[row * words..(row + 1) * words];
    let size = 1usize << s.prefix;
    let mut dir = vec![0u32; size + 1];
    if s.dense() {
        for row in 0..n {
            dir[s.extract(code(row)) as usize + 1] += 1;
        }
        for i in 0..size {
            dir[i + 1] += dir[i];
        }
        let mut cursor = dir[..size].to_vec();
        for row in 0..n {
            let c = &mut cursor[s.extract(code(row)) as usize];
            rows[*c as usize] = row as u32;
            *c += 1;
        }
        (dir, Vec::new())
    } else {
        let shift = s.width - s.prefix;
        let mut pairs: Vec<(u64, u32)> = (0..n).map(|r| (s.extract(code(r)), r as u32)).collect();
        pairs.sort_unstable();
        for &(k, _) in &pairs {
            dir[(k >> shift) as usize + 1] += 1;
        }
        for i in 0..size {
            dir[i + 1] += dir[i];
        }
        for (slot, &(_, r)) in rows.iter_mut().zip(&pairs) {
            *slot = r;
        }
        (dir, pairs.into_iter().map(|(k, _)| k).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::util::binomial;

    #[test]
    pub(super) fn flips_enumerate_every_mask_of_each_weight_once() {
        for width in [1u32, 2, 5, 9, 13] {
            let mut all = Vec::new();
            for weight in 0..=width + 1 {
                let got: Vec<u64> = Flips::new(width, weight).collect();
                assert_eq!(
                    got.len() as f64,
                    binomial(u64::from(width), u64::from(weight)).unwrap() as f64,
                    "w={width} j={weight}"
                );
                assert!(
                    got.iter()
                        .all(|m| m.count_ones() == weight && m >> width == 0)
                );
                assert!(
                    got.windows(2).all(|p| p[0] < p[1]),
                    "increasing, hence distinct"
                );
                all.extend(got);
            }
            all.sort_unstable();
            assert_eq!(all, (0..1u64 << width).collect::<Vec<_>>());
        }
        // Full 64-bit width: the first and last masks of small weights.
        for weight in [1u32, 2, 3] {
            let count = Flips::new(64, weight).count();
            assert_eq!(
                count as f64,
                binomial(64, u64::from(weight)).unwrap() as f64
            );
            assert_eq!(
                Flips::new(64, weight).last(),
                Some(u64::MAX << (64 - weight))
            );
        }
        assert_eq!(Flips::new(64, 64).collect::<Vec<_>>(), vec![u64::MAX]);
        assert_eq!(Flips::new(63, 63).collect::<Vec<_>>(), vec![u64::MAX >> 1]);
    }

    #[test]
    pub(super) fn substrings_split_the_code_and_extract_across_words() {
        let (subs, _, _) = layout(130, 3, 1000);
        assert_eq!(
            subs.iter().map(|s| s.width).collect::<Vec<_>>(),
            vec![44, 43, 43]
        );
        let mut rng = Rng::new(5);
        let code = [rng.next_u64(), rng.next_u64(), rng.next_u64() & 3];
        for s in &subs {
            let v = s.extract(&code);
            for b in 0..s.width as usize {
                let j = s.start + b;
                assert_eq!(v >> b & 1, code[j / 64] >> (j % 64) & 1, "bit {j}");
            }
            assert_eq!(v >> s.width, 0);
        }
        let (subs, _, _) = layout(128, 2, 10);
        assert_eq!(subs[1].extract(&[0, u64::MAX]), u64::MAX);
    }
}
