//! The sorted tables in memory: for each table, its entries sorted by key word, stored as a
//! prefix directory, truncated key words and values.
//!
//! Table `t` with `m` entries and directory bits `b` (see [`dir_bits`]) holds:
//!
//! * `2^b + 1` offsets (`u32`): the entries whose key words start with the `b`-bit prefix
//!   `i` are `offsets[i] .. offsets[i + 1]`;
//! * the key words without those `b` top bits (the directory implies them), `ceil((64 −
//!   b) / 8)` bytes each, little-endian, in entry order;
//! * the values (`u32`: ids, or row numbers for codes wider than 64 bits), in entry order.
//!
//! `b` is at most the table's key length and about `log2(m) − 3`, so a prefix names about 8
//! to 16 entries: one lookup in a small directory finds a query's candidates without any
//! search, and the directory costs less than the key bits it saves (for a million codes
//! and 16-bit keys: 0.26 bytes of directory per entry, 2 bytes of key saved).
//!
//! The arrays of all tables are concatenated (directories, keys, values), keys followed by 8
//! bytes of padding so that every key can be read as one unaligned 8-byte load.

use super::layout::Layout;
use crate::error::{Error, Result};
use crate::storage::Buf;

/// Bytes of padding after the last key.
const PAD: usize = 8;

/// Largest directory: `2^24` prefixes.
const MAX_DIR_BITS: u32 = 24;

/// Directory bits of a table with `key_bits` key bits and `m` entries:
/// `min(key_bits, log2(m) − 3)`, between 0 and 24.
pub(crate) fn dir_bits(key_bits: u32, m: usize) -> u32 {
    let lg = if m == 0 { 0 } else { m.ilog2() };
    key_bits.min(lg.saturating_sub(3)).min(MAX_DIR_BITS)
}

/// Where one table lives in the concatenated arrays, and how its keys are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Directory bits `b`.
    pub(crate) b: u32,
    /// Bytes per stored key.
    pub(crate) kb: usize,
    /// Mask of the stored part of a key word (its low `64 − b` bits).
    pub(crate) low: u64,
    /// First directory entry.
    dir: usize,
    /// First key byte.
    keys: usize,
}

impl Shape {
    /// The directory prefix of `key`.
    #[inline(always)]
    pub(crate) fn bucket(&self, key: u64) -> usize {
        if self.b == 0 {
            0
        } else {
            (key >> (64 - self.b)) as usize
        }
    }

    /// The key-word bits a directory prefix stands for.
    #[inline(always)]
    pub(crate) fn high(&self, bucket: usize) -> u64 {
        if self.b == 0 {
            0
        } else {
            (bucket as u64) << (64 - self.b)
        }
    }
}

/// The shapes of the tables of `layout` with `m` entries each, and the lengths of the
/// directory and key arrays.
fn shapes(layout: &Layout, m: usize) -> (Vec<Shape>, usize, usize) {
    let (mut dir, mut keys) = (0, 0);
    let shapes = layout
        .tables
        .iter()
        .map(|tl| {
            let b = dir_bits(tl.key_bits, m);
            let kb = (64 - b as usize).div_ceil(8);
            let s = Shape {
                b,
                kb,
                low: u64::MAX >> b,
                dir,
                keys,
            };
            dir += (1 << b) + 1;
            keys += m * kb;
            s
        })
        .collect();
    (shapes, dir, keys + PAD)
}

/// The tables of an index. See the [module documentation](self).
#[derive(Clone, Debug)]
pub(crate) struct Store {
    m: usize,
    shapes: Vec<Shape>,
    dir: Buf<u32>,
    keys: Buf<u8>,
    vals: Buf<u32>,
}

impl Store {
    /// Encodes the tables: `sorted(t)` gives table `t`'s `m` entries as `(key word, value)`
    /// sorted by key word. Tables are encoded in parallel.
    pub(crate) fn encode(
        layout: &Layout,
        m: usize,
        sorted: impl Fn(usize) -> Vec<(u64, u32)> + Sync,
    ) -> Store {
        use rayon::prelude::*;
        let (shapes, _, _) = shapes(layout, m);
        let parts: Vec<(Vec<u32>, Vec<u8>, Vec<u32>)> = shapes
            .par_iter()
            .enumerate()
            .map(|(t, sh)| {
                let entries = sorted(t);
                debug_assert_eq!(entries.len(), m);
                let mut dir = vec![0u32; (1 << sh.b) + 1];
                let mut keys = Vec::with_capacity(m * sh.kb);
                let mut vals = Vec::with_capacity(m);
                for &(k, v) in &entries {
                    dir[sh.bucket(k) + 1] += 1;
                    keys.extend_from_slice(&(k & sh.low).to_le_bytes()[..sh.kb]);
                    vals.push(v);
                }
                for i in 1..dir.len() {
                    dir[i] += dir[i - 1];
                }
                (dir, keys, vals)
            })
            .collect();
        let mut dir = Vec::new();
        let mut keys = Vec::new();
        let mut vals = Vec::with_capacity(m * shapes.len());
        for (d, k, v) in parts {
            dir.extend(d);
            keys.extend(k);
            vals.extend(v);
        }
        keys.extend([0u8; PAD]);
        Store {
            m,
            shapes,
            dir: dir.into(),
            keys: keys.into(),
            vals: vals.into(),
        }
    }

    /// Rebuilds the tables of `layout` from their arrays, checking their shapes and the
    /// directories (every entry then lies in its table); [`validate`](Self::validate) checks
    /// the key order.
    pub(crate) fn from_parts(
        layout: &Layout,
        dir: Buf<u32>,
        keys: Buf<u8>,
        vals: Buf<u32>,
    ) -> Result<Store> {
        let bad = |field: &'static str, what: &str| Error::param(field, what.to_string());
        let nt = layout.tables.len();
        if !vals.len().is_multiple_of(nt) {
            return Err(bad("section vals", "values do not fill the tables"));
        }
        let m = vals.len() / nt;
        if u32::try_from(m).is_err() {
            return Err(bad("section vals", "more than 2^32 entries per table"));
        }
        let (shapes, dir_len, keys_len) = shapes(layout, m);
        if dir.len() != dir_len {
            return Err(bad(
                "section dir",
                "the directories do not match the tables",
            ));
        }
        if keys.len() != keys_len {
            return Err(bad("section keys", "the keys do not match the tables"));
        }
        let store = Store {
            m,
            shapes,
            dir,
            keys,
            vals,
        };
        for t in 0..nt {
            let sh = store.shapes[t];
            let d = &store.dir[sh.dir..sh.dir + (1 << sh.b) + 1];
            if d[0] != 0 || d[d.len() - 1] as usize != m || d.windows(2).any(|p| p[0] > p[1]) {
                return Err(bad("section dir", "a table directory is not monotone"));
            }
        }
        Ok(store)
    }

    /// Checks that every table is sorted and that no stored key has the bits its directory
    /// prefix stands for: `O(tables · m)`.
    pub(crate) fn validate(&self, layout: &Layout) -> Result<()> {
        let bad = |what: &str| Error::param("section keys", what.to_string());
        let view = self.view();
        for t in 0..layout.tables.len() {
            let sh = view.shape(t);
            let mut prev: Option<u64> = None;
            for (k, _) in view.table(t) {
                if prev.is_some_and(|p| p > k) {
                    return Err(bad("a table is not sorted"));
                }
                prev = Some(k);
            }
            if (0..self.m).any(|i| view.rem(&sh, i) & !sh.low != 0) {
                return Err(bad("a stored key has bits the directory stands for"));
            }
        }
        Ok(())
    }

    /// Entries per table.
    pub(crate) fn len(&self) -> usize {
        self.m
    }

    /// The arrays borrowed once, as plain slices, for loops over many entries: a [`Buf`]
    /// chooses between its owned and shared forms at every borrow, and the compiler does
    /// not always hoist that choice out of a loop (validating a million-entry file took 23%
    /// more instructions borrowing per entry).
    #[inline(always)]
    pub(crate) fn view(&self) -> View<'_> {
        View {
            m: self.m,
            shapes: &self.shapes,
            dir: &self.dir,
            keys: &self.keys,
            vals: &self.vals,
        }
    }

    /// The values (ids or rows) of all tables: table `t` is `t · m .. (t + 1) · m`.
    #[inline(always)]
    pub(crate) fn vals(&self) -> &[u32] {
        &self.vals
    }

    /// Table `t`'s entries `(key word, value)` in order.
    pub(crate) fn table(&self, t: usize) -> Entries<'_> {
        self.view().table(t)
    }

    /// The arrays: directories, keys (with padding), values.
    pub(crate) fn parts(&self) -> (&[u32], &[u8], &[u32]) {
        (&self.dir, &self.keys, &self.vals)
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.dir.data_bytes()
            + self.keys.data_bytes()
            + self.vals.data_bytes()
            + self.shapes.len() * std::mem::size_of::<Shape>()
    }
}

/// The arrays of a [`Store`], borrowed ([`Store::view`]).
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    m: usize,
    shapes: &'a [Shape],
    dir: &'a [u32],
    keys: &'a [u8],
    vals: &'a [u32],
}

impl<'a> View<'a> {
    /// Entries per table.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.m
    }

    /// The shape of table `t`.
    #[inline(always)]
    pub(crate) fn shape(&self, t: usize) -> Shape {
        self.shapes[t]
    }

    /// The directory entry of prefix `bucket` of a table (the start of its entries); entry
    /// `bucket + 1` is the end.
    #[inline(always)]
    pub(crate) fn dir_entry(&self, sh: &Shape, bucket: usize) -> &'a u32 {
        &self.dir[sh.dir + bucket]
    }

    /// The first byte of key `i` of table `sh`.
    #[inline(always)]
    pub(crate) fn key_byte(&self, sh: &Shape, i: usize) -> &'a u8 {
        &self.keys[sh.keys + i * sh.kb]
    }

    /// The stored part of key `i` of table `sh`.
    #[inline(always)]
    pub(crate) fn rem(&self, sh: &Shape, i: usize) -> u64 {
        let o = sh.keys + i * sh.kb;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.keys[o..o + 8]);
        let raw = u64::from_le_bytes(b);
        if sh.kb == 8 {
            raw
        } else {
            raw & ((1u64 << (8 * sh.kb)) - 1)
        }
    }

    /// The values (ids or rows) of all tables: table `t` is `t · m .. (t + 1) · m`.
    #[inline(always)]
    pub(crate) fn vals(&self) -> &'a [u32] {
        self.vals
    }

    /// Table `t`'s entries `(key word, value)` in order.
    #[inline]
    pub(crate) fn table(self, t: usize) -> Entries<'a> {
        let sh = self.shapes[t];
        let dir = &self.dir[sh.dir..sh.dir + (1 << sh.b) + 1];
        Entries {
            view: self,
            sh,
            vals: &self.vals[t * self.m..(t + 1) * self.m],
            bucket: 0,
            i: dir[0] as usize,
            end: dir[1] as usize,
            dir,
        }
    }
}

/// The entries of one table in order ([`View::table`]): the prefixes' runs one after the
/// other. A plain loop state (not an adapter chain), so that loops over a million entries
/// compile to one loop.
pub(crate) struct Entries<'a> {
    view: View<'a>,
    sh: Shape,
    /// The table's directory (`2^b + 1` entries).
    dir: &'a [u32],
    /// The table's values.
    vals: &'a [u32],
    /// The current prefix, and its remaining entries `i..end`.
    bucket: usize,
    i: usize,
    end: usize,
}

impl Iterator for Entries<'_> {
    type Item = (u64, u32);

    #[inline]
    fn next(&mut self) -> Option<(u64, u32)> {
        while self.i >= self.end {
            if self.bucket + 2 >= self.dir.len() {
                return None;
            }
            self.bucket += 1;
            self.i = self.dir[self.bucket] as usize;
            self.end = self.dir[self.bucket + 1] as usize;
        }
        let i = self.i;
        self.i += 1;
        let key = self.sh.high(self.bucket) | self.view.rem(&self.sh, i);
        Some((key, self.vals[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn tables_decode_to_what_was_encoded() {
        let mut rng = Rng::new(5);
        for (m, levels) in [
            (0usize, vec![4]),
            (5, vec![4]),
            (3000, vec![4]),
            (3000, vec![6]),
        ] {
            let layout = Layout::new(64, 3, &levels);
            let tables: Vec<Vec<(u64, u32)>> = (0..layout.tables.len())
                .map(|_| {
                    let mut v: Vec<(u64, u32)> = (0..m as u32)
                        .map(|i| (rng.next_u64() >> (i % 3), i))
                        .collect();
                    v.sort_unstable();
                    v
                })
                .collect();
            let store = Store::encode(&layout, m, |t| tables[t].clone());
            for (t, want) in tables.iter().enumerate() {
                assert_eq!(&store.table(t).collect::<Vec<_>>(), want);
            }
            let (d, k, v) = store.parts();
            let back = Store::from_parts(
                &layout,
                d.to_vec().into(),
                k.to_vec().into(),
                v.to_vec().into(),
            )
            .unwrap();
            assert_eq!(back.table(0).collect::<Vec<_>>(), tables[0]);
            if m > 100 {
                let mut bad_dir = d.to_vec();
                bad_dir[1] = m as u32 + 1;
                assert!(
                    Store::from_parts(
                        &layout,
                        bad_dir.into(),
                        k.to_vec().into(),
                        v.to_vec().into()
                    )
                    .is_err()
                );
                let mut bad_keys = k.to_vec();
                bad_keys[..store.view().shape(0).kb].fill(0xFF);
                let loaded = Store::from_parts(
                    &layout,
                    d.to_vec().into(),
                    bad_keys.into(),
                    v.to_vec().into(),
                )
                .unwrap();
                assert!(loaded.validate(&layout).is_err());
                assert!(back.validate(&layout).is_ok());
                let short: Vec<u32> = v[1..].to_vec();
                assert!(
                    Store::from_parts(&layout, d.to_vec().into(), k.to_vec().into(), short.into())
                        .is_err()
                );
            }
        }
        assert_eq!(dir_bits(16, 1_000_000), 16);
        assert_eq!(dir_bits(33, 1_000_000), 16);
        assert_eq!(dir_bits(16, 1000), 6);
        assert_eq!(dir_bits(16, 0), 0);
    }
}
