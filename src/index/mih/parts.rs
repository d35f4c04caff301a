//! The arrays and parameters that define a [`MultiIndex`], for the persistence layer, and
//! their validation.

use super::MultiIndex;
use super::builder::MultiIndexBuilder;
use super::cost::Costs;
use super::layout::layout;
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::words_for;
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
    /// Rebuilds the index from its arrays (see [`MultiIndexParts`]), checking the parameters
    /// and the shapes of the arrays (`O(N / 64)`: the tombstones are counted), not their
    /// contents: searches never panic or read out of bounds whatever those are, and
    /// [`validate`](HammingIndex::validate) checks them (sorted ids, directories monotone
    /// and ending at `N`, each table a permutation of the rows, sparse keys sorted in their
    /// buckets, padding bits zero, delta ids apart from the tables) before the first change.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the parameter or section at fault.
    pub(crate) fn from_parts(parts: MultiIndexParts) -> Result<Self> {
        let bad = |field: &'static str, what: &str| Error::param(field, what.to_string());
        let bits = parts.bits;
        crate::index::check_bits(bits)?;
        let m = parts.substrings;
        // Every table has a directory of at least two entries: this bounds `m` (and with it
        // `bits`) by the file before anything is allocated.
        if m == 0 || m > parts.dirs.len() / 2 {
            return Err(bad("param substrings", "does not match the directories"));
        }
        let builder = MultiIndexBuilder {
            substrings: Some(m),
            delta_limit: parts.delta_limit,
            fallback: parts.fallback,
        };
        builder.check(bits)?;
        let w = words_for(bits);
        let n = parts.ids.len();
        if n >= u32::MAX as usize {
            return Err(bad("section ids", "too many rows"));
        }
        if n.checked_mul(w) != Some(parts.codes.len()) {
            return Err(bad("section codes", "one code per id expected"));
        }
        if parts.dead.len() != n.div_ceil(64)
            || (!n.is_multiple_of(64) && parts.dead.last().is_some_and(|d| d >> (n % 64) != 0))
        {
            return Err(bad("section dead", "tombstones do not match the rows"));
        }
        let n_dead = hamming::popcount(&parts.dead) as usize;
        let (subs, dirs_len, keys_len) = layout(bits, m, n);
        if m.checked_mul(n) != Some(parts.rows.len()) {
            return Err(bad(
                "section rows",
                "one row per code and substring expected",
            ));
        }
        if parts.dirs.len() != dirs_len {
            return Err(bad(
                "section dirs",
                "the directories do not match the substrings",
            ));
        }
        if parts.keys.len() != keys_len {
            return Err(bad(
                "section keys",
                "the keys do not match the sparse tables",
            ));
        }
        if parts.delta_ids.len().checked_mul(w) != Some(parts.delta_codes.len()) {
            return Err(bad("section delta_codes", "one code per delta id expected"));
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
        idx.delta_codes = parts.delta_codes;
        idx.delta_ids = parts.delta_ids;
        idx.validated = false;
        Ok(idx)
    }

    /// The checks of [`validate`](HammingIndex::validate): `O(m · N)`.
    pub(super) fn check_contents(&self) -> Result<()> {
        let bad = |field: &'static str, what: &str| Error::param(field, what.to_string());
        let (bits, n) = (self.bits, self.ids.len());
        crate::index::check_increasing("section ids", &self.ids)?;
        crate::index::check_codes(bits, &self.codes)
            .map_err(|_| bad("section codes", "bits set beyond the signature width"))?;
        crate::index::check_codes(bits, &self.delta_codes)
            .map_err(|_| bad("section delta_codes", "bits set beyond the signature width"))?;
        let mut seen = vec![0u64; n.div_ceil(64)];
        for (t, s) in self.subs.iter().enumerate() {
            let dir = &self.dirs[s.dir_start..s.dir_start + (1usize << s.prefix) + 1];
            if dir[0] != 0
                || dir[dir.len() - 1] as usize != n
                || dir.windows(2).any(|p| p[0] > p[1])
            {
                return Err(bad(
                    "section dirs",
                    "a directory is not monotone from 0 to N",
                ));
            }
            seen.fill(0);
            for &row in &self.rows[t * n..(t + 1) * n] {
                let row = row as usize;
                if row >= n || seen[row / 64] >> (row % 64) & 1 == 1 {
                    return Err(bad(
                        "section rows",
                        "a table is not a permutation of the rows",
                    ));
                }
                seen[row / 64] |= 1 << (row % 64);
            }
            if !s.dense() {
                let keys = &self.keys[s.key_start..s.key_start + n];
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
                        return Err(bad(
                            "section keys",
                            "sparse keys are not sorted in their buckets",
                        ));
                    }
                }
            }
        }
        crate::index::check_increasing("section delta_ids", &self.delta_ids)?;
        for &id in &self.delta_ids {
            if self.main_row(id).is_some() {
                return Err(bad(
                    "section delta_ids",
                    "a delta id is also stored in the tables",
                ));
            }
        }
        Ok(())
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
    use crate::signature::{SignatureMatrix, last_word_mask};

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
            // Each corruption is rejected on loading (shapes) or by `validate` (contents);
            // queries on an unvalidated index never panic.
            let rejected = |parts: MultiIndexParts| match MultiIndex::from_parts(parts) {
                Err(_) => true,
                Ok(bad) => {
                    for q in sigs.rows().take(5) {
                        bad.radius(q, 10).unwrap();
                        bad.knn(q, 5).unwrap();
                    }
                    bad.validate().is_err()
                }
            };
            for (i, c) in corrupt.iter().enumerate() {
                let mut parts = idx.to_parts();
                c(&mut parts);
                assert!(rejected(parts), "m={m} corruption {i}");
            }
            if m == 2 {
                let mut parts = idx.to_parts();
                let k = parts.keys.to_mut();
                k.swap(0, 5);
                assert!(rejected(parts), "unsorted keys");
            }
            assert!(
                MultiIndex::from_parts(idx.to_parts())
                    .unwrap()
                    .validate()
                    .is_ok()
            );
        }
    }
}
