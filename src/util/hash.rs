//! A fast hasher for in-memory tables keyed by `u64` (ids, blocks of codes): one
//! multiply-xorshift per key instead of SipHash. Its values are never persisted nor shown
//! (they depend on nothing but the key, but the table order they give is no contract), and
//! the keys it serves are ids or code bits, not input an attacker picks to collide: a
//! store's own writer tables.

use std::hash::{BuildHasherDefault, Hasher};

/// The hasher: folds the written integers with a multiply and a xorshift.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FastHasher(u64);

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        z ^ (z >> 32)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// A `HashMap` with the fast hasher.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A `HashSet` with the fast hasher.
pub(crate) type FastSet<K> = std::collections::HashSet<K, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_keys_spread_over_buckets() {
        // Ids 0..n and ids that differ only in their top bits land in distinct low bits.
        let h = |x: u64| {
            let mut s = FastHasher::default();
            s.write_u64(x);
            s.finish()
        };
        for keys in [
            (0..4096u64).collect::<Vec<_>>(),
            (0..4096u64).map(|i| i << 40).collect(),
        ] {
            let mut seen = std::collections::HashSet::new();
            for k in &keys {
                seen.insert(h(*k) & 0xFFF);
            }
            // A random function fills about 1 − 1/e of 4096 buckets with 4096 keys.
            assert!(seen.len() > 2400, "{} buckets of 4096", seen.len());
        }
        let mut m: FastMap<u64, u32> = FastMap::default();
        for i in 0..1000u64 {
            m.insert(i << 48, i as u32);
        }
        assert!((0..1000u64).all(|i| m[&(i << 48)] == i as u32));
    }
}
