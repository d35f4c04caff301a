//! The arrays and parameters that define a [`MultiIndex`], for the persistence layer, and
//! their validation.

use super::MultiIndex;
use super::builder::MultiIndexBuilder;
use super::cost::Costs;
use super::layout::layout;
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::{last_word_mask, words_for};
use crate::storage::Buf;

/// The arrays and parameters that define a [`MultiIndex`], for the persistence layer.
pub(crate) struct MultiIndexParts {
    /// Code width `f`.
    pub(crate) bits: usize,
    /// Substring count of the tables.
    pub(crate) substrings: usize,
    /// Whether the substring count is recomputed at rebuilds.
    pub(crate) auto_substrings: bool,
    /// The delta limit set by the user, if any.
    pub(crate) delta_limit: Option<usize>,
    /// Whether searches may fall back to a scan.
    pub(crate) fallback: bool,
    /// `N × words` codes, increasing id order.
    pub(crate) codes: Buf<u64>,
    /// `N` ids, strictly increasing.
    pub(crate) ids: Buf<u32>,
    /// `⌈N/64⌉` tombstone words.
    pub(crate) dead: Buf<u64>,
    /// `m × N` table rows.
    pub(crate) rows: Buf<u32>,
    /// Concatenated directories.
    pub(crate) dirs: Buf<u32>,
    /// Concatenated sparse-table keys.
    pub(crate) keys: Buf<u64>,
    /// Delta codes, sorted by id.
    pub(crate) delta_codes: Vec<u64>,
    /// Delta ids, strictly increasing.
    pub(crate) delta_ids: Vec<u32>,
}

impl MultiIndex {
    /// Rebuilds the index from its arrays (see [`MultiIndexParts`]), validating their shapes
    /// and invariants: sizes, sorted ids, directories monotone and ending at `N`, each table a
    /// permutation of the rows, sparse keys sorted and in their directory bucket, padding bits
    /// zero. Whether the tables agree with the codes is not checked (that is the job of the
    /// file's checksum): inconsistent tables give wrong answers but never a panic.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] describing the first violated invariant.
    pub(crate) fn from_parts(parts: MultiIndexParts) -> Result<Self> {
        let bad = |what: &str| Error::param("index data", what.to_string());
        let bits = parts.bits;
        let builder = MultiIndexBuilder {
            substrings: Some(parts.substrings),
            delta_limit: parts.delta_limit,
            fallback: parts.fallback,
        };
        builder.check(bits)?;
        let w = words_for(bits);
        let n = parts.ids.len();
        if n >= u32::MAX as usize {
            return Err(bad("too many rows"));
        }
        if parts.codes.len() != n * w || parts.ids.windows(2).any(|p| p[0] >= p[1]) {
            return Err(bad("codes and ids are inconsistent"));
        }
        let mask = last_word_mask(bits);
        let padded = |c: &[u64]| c.chunks(w).any(|c| c[w - 1] & !mask != 0);
        if padded(&parts.codes) || padded(&parts.delta_codes) {
            return Err(bad("codes have bits set beyond the signature width"));
        }
        if parts.dead.len() != n.div_ceil(64)
            || (n % 64 != 0 && parts.dead.last().is_some_and(|d| d >> (n % 64) != 0))
        {
            return Err(bad("tombstones do not match the rows"));
        }
        let n_dead = hamming::popcount(&parts.dead) as usize;
        let m = parts.substrings;
        let (subs, dirs_len, keys_len) = layout(bits, m, n);
        if parts.rows.len() != m * n || parts.dirs.len() != dirs_len || parts.keys.len() != keys_len
        {
            return Err(bad("table arrays have the wrong sizes"));
        }
        let mut seen = vec![0u64; n.div_ceil(64)];
        for (t, s) in subs.iter().enumerate() {
            let dir = &parts.dirs[s.dir_start..s.dir_start + (1usize << s.prefix) + 1];
            if dir[0] != 0
                || dir[dir.len() - 1] as usize != n
                || dir.windows(2).any(|p| p[0] > p[1])
            {
                return Err(bad("a directory is not monotone from 0 to N"));
            }
            seen.fill(0);
            for &row in &parts.rows[t * n..(t + 1) * n] {
                let row = row as usize;
                if row >= n || seen[row / 64] >> (row % 64) & 1 == 1 {
                    return Err(bad("a table is not a permutation of the rows"));
                }
                seen[row / 64] |= 1 << (row % 64);
            }
            if !s.dense() {
                let keys = &parts.keys[s.key_start..s.key_start + n];
                let shift = s.width - s.prefix;
                let top = if s.width == 64 {
                    u64::MAX
                } else {
                    (1u64 << s.width) - 1
                };
                for b in 0..(1usize << s.prefix) {
                    let ks = &keys[dir[b] as usize..dir[b + 1] as usize];
                    if ks.windows(2).any(|p| p[0] > p[1])
                        || ks.iter().any(|&k| k > top || (k >> shift) as usize != b)
                    {
                        return Err(bad("sparse keys are not sorted in their buckets"));
                    }
                }
            }
        }
        let nd = parts.delta_ids.len();
        if parts.delta_codes.len() != nd * w || parts.delta_ids.windows(2).any(|p| p[0] >= p[1]) {
            return Err(bad("delta codes and ids are inconsistent"));
        }
        let mut idx = builder.empty(bits)?;
        idx.fixed_m = (!parts.auto_substrings).then_some(m);
        idx.costs = Costs::new(&subs, n, w);
        idx.subs = subs;
        idx.codes = parts.codes;
        idx.ids = parts.ids;
        idx.dead = parts.dead;
        idx.n_dead = n_dead;
        idx.rows = parts.rows;
        idx.dirs = parts.dirs;
        idx.keys = parts.keys;
        for &id in &parts.delta_ids {
            if idx.main_row(id).is_some() {
                return Err(bad("a delta id is also stored in the tables"));
            }
        }
        idx.delta_codes = parts.delta_codes;
        idx.delta_ids = parts.delta_ids;
        Ok(idx)
    }

    /// The arrays and parameters defining the index (see [`MultiIndexParts`]), sharing mapped
    /// arrays and copying owned ones.
    pub(crate) fn to_parts(&self) -> MultiIndexParts {
        MultiIndexParts {
            bits: self.bits,
            substrings: self.subs.len(),
            auto_substrings: self.fixed_m.is_none(),
            delta_limit: self.delta_limit,
            fallback: self.fallback,
            codes: self.codes.clone(),
            ids: self.ids.clone(),
            dead: self.dead.clone(),
            rows: self.rows.clone(),
            dirs: self.dirs.clone(),
            keys: self.keys.clone(),
            delta_codes: self.delta_codes.clone(),
            delta_ids: self.delta_ids.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{HammingIndex, LinearScan};
    use crate::rng::Rng;
    use crate::signature::SignatureMatrix;

    fn random_matrix(rng: &mut Rng, bits: usize, n: usize) -> SignatureMatrix {
        let w = words_for(bits);
        let mut data = Vec::with_capacity(n * w);
        for _ in 0..n {
            for i in 0..w {
                let x = rng.next_u64();
                data.push(if i == w - 1 {
                    x & last_word_mask(bits)
                } else {
                    x
                });
            }
        }
        SignatureMatrix::from_parts(bits, data).unwrap()
    }

    #[test]
    fn parts_round_trip_and_corruption_is_an_error() {
        let mut rng = Rng::new(9);
        let sigs = random_matrix(&mut rng, 70, 700);
        // m = 2: 35-bit substrings, sparse tables; m = 7: dense.
        for m in [2usize, 7] {
            let mut idx = MultiIndex::builder()
                .substrings(m)
                .delta_limit(50)
                .build(&sigs)
                .unwrap();
            for i in 0..30u32 {
                idx.remove(i * 7).unwrap();
                idx.insert(5000 + i, sigs.row(i as usize)).unwrap();
            }
            let back = MultiIndex::from_parts(idx.to_parts()).unwrap();
            let oracle = LinearScan::build(&sigs).unwrap();
            for q in 0..20 {
                let q = sigs.row(q * 31);
                for r in [0, 5, 20] {
                    assert_eq!(back.radius(q, r).unwrap(), idx.radius(q, r).unwrap());
                }
                assert_eq!(back.knn(q, 5).unwrap(), idx.knn(q, 5).unwrap());
                assert_ne!(oracle.knn(q, 5).unwrap(), vec![]);
            }
            type Corruption = Box<dyn Fn(&mut MultiIndexParts)>;
            let corrupt: Vec<Corruption> = vec![
                Box::new(|p| p.rows.to_mut()[3] = 1_000_000),
                Box::new(|p| p.rows.to_mut()[3] = p.rows[4]),
                Box::new(|p| p.dirs.to_mut()[1] = 10_000),
                Box::new(|p| p.ids.to_mut().swap(0, 1)),
                Box::new(|p| {
                    p.codes.to_mut().pop();
                }),
                Box::new(|p| p.codes.to_mut()[1] |= 1 << 63),
                Box::new(|p| p.substrings = 71),
                Box::new(|p| {
                    p.dead.to_mut().push(0);
                }),
                Box::new(|p| p.delta_ids[0] = 100),
            ];
            for (i, c) in corrupt.iter().enumerate() {
                let mut parts = idx.to_parts();
                c(&mut parts);
                assert!(
                    MultiIndex::from_parts(parts).is_err(),
                    "m={m} corruption {i}"
                );
            }
            if m == 2 {
                let mut parts = idx.to_parts();
                let k = parts.keys.to_mut();
                k.swap(0, 5);
                assert!(MultiIndex::from_parts(parts).is_err(), "unsorted keys");
            }
        }
    }
}
