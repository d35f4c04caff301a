//! The arrays of [`PermutedTables`] for the persistence layer, and their checks.

use super::layout::Layout;
use super::store::Store;
use super::{MainIds, PermutedTables, Plan};
use crate::error::{Error, Result};
use crate::index::IdSet;
use crate::signature::words_for;
use crate::storage::Buf;

impl PermutedTables {
    /// Rebuilds an index from its parameters and arrays (see the module's "Persistence"),
    /// checking the parameters, the shapes of the arrays and the table directories (small
    /// arrays), but not the contents of the tables, codes and ids: `O(tables · 2^b)`, not
    /// `O(N)`. Searches never panic or read out of bounds whatever those contents;
    /// [`validate`](HammingIndex::validate) checks them (every table sorted, holding each
    /// stored code exactly once, wide tables' keys matching the codes, the delta and dead
    /// ids consistent), and runs before the first change.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        bits: usize,
        radius: u32,
        levels: Vec<usize>,
        dir: Buf<u32>,
        keys: Buf<u8>,
        vals: Buf<u32>,
        codes: Buf<u64>,
        row_ids: Buf<u32>,
        delta_codes: Vec<u64>,
        delta_ids: Vec<u32>,
        dead_ids: &[u32],
    ) -> Result<Self> {
        crate::index::check_bits(bits)?;
        let tables = Plan::for_levels(bits, radius, 0, &levels)?.tables;
        // The layout holds every table's key positions: refuse designs whose layout would
        // dwarf the data (a crafted width), beyond 256 MiB.
        let data = dir.data_bytes() + keys.len() + vals.data_bytes() + codes.data_bytes();
        let layout = (tables as u128) * (bits as u128) * 4;
        if layout > (1u128 << 28).max(16 * data as u128 + 16 * delta_codes.len() as u128) {
            return Err(Error::param(
                "param bits",
                format!("{bits}-bit codes in {tables} tables: a layout far larger than the data"),
            ));
        }
        let bad = |field: &'static str, what: &str| Error::param(field, what.to_string());
        let layout = Layout::new(bits, radius, &levels);
        let w = words_for(bits);
        let store = Store::from_parts(&layout, dir, keys, vals)?;
        let m = store.len();
        if w == 1 {
            if !codes.is_empty() || !row_ids.is_empty() {
                return Err(bad(
                    "section codes",
                    "codes of at most 64 bits live in the tables only",
                ));
            }
        } else if m.checked_mul(w) != Some(codes.len()) || row_ids.len() != m {
            return Err(bad(
                "section codes",
                "codes and row ids do not match the tables",
            ));
        }
        if delta_ids.len().checked_mul(w) != Some(delta_codes.len()) {
            return Err(bad("section delta_codes", "one code per delta id expected"));
        }
        let mut dead = IdSet::default();
        for &id in dead_ids {
            if !dead.insert(id) {
                return Err(bad("section dead", "an id is listed twice"));
            }
        }
        if dead.len() > m {
            return Err(bad("section dead", "more dead ids than codes"));
        }
        Ok(PermutedTables {
            bits,
            radius,
            levels,
            layout,
            store,
            codes,
            row_ids,
            delta_codes,
            delta_ids,
            dead,
            main_ids: MainIds::Range(0),
            validated: false,
            meta: crate::index::IndexMeta::default(),
        })
    }

    /// The ids the tables hold, checking the contents (see
    /// [`validate`](HammingIndex::validate)).
    pub(super) fn checked_main_ids(&self) -> Result<MainIds> {
        let bad = |field: &'static str, what: &str| Error::param(field, what.to_string());
        let (w, m, bits) = (self.words(), self.store.len(), self.bits);
        self.store.validate(&self.layout)?;
        // Table 0's values, sorted: the ids (or rows) every table must hold exactly once.
        let mut first: Vec<u32> = self.store.vals()[..m].to_vec();
        first.sort_unstable();
        let main_ids = if w == 1 {
            MainIds::from_sorted(&first).ok_or_else(|| bad("section vals", "repeated id"))?
        } else {
            crate::index::check_increasing("section row_ids", &self.row_ids)?;
            crate::index::check_codes(bits, &self.codes)
                .map_err(|_| bad("section codes", "padding bits set in a code"))?;
            if first.iter().enumerate().any(|(i, &v)| v as usize != i) {
                return Err(bad("section vals", "a table does not hold every row once"));
            }
            let mut ids = self.row_ids.to_vec();
            ids.sort_unstable();
            MainIds::from_sorted(&ids).ok_or_else(|| bad("section row_ids", "repeated id"))?
        };
        // Every table holds each value of table 0 once: a bitset of the values when they
        // are dense (at most 8 bytes of bitset per entry), else a sorted copy per table.
        let max = first.last().map_or(0, |&v| v as usize);
        let dense = max / 64 < m.max(1);
        let mut seen = if dense {
            vec![0u64; max / 64 + 1]
        } else {
            Vec::new()
        };
        let mut vals = Vec::with_capacity(if dense { 0 } else { m });
        for (t, tl) in self.layout.tables.iter().enumerate() {
            vals.clear();
            seen.fill(0);
            for (k, v) in self.store.table(t) {
                let ok = if w == 1 {
                    k & !tl.valid == 0
                } else {
                    (v as usize) < m && tl.keyword(&self.codes[v as usize * w..][..w]) == k
                };
                if !ok {
                    return Err(bad("section keys", "a key does not match its code"));
                }
                if dense {
                    let v = v as usize;
                    if v > max || seen[v / 64] >> (v % 64) & 1 == 1 {
                        return Err(bad("section vals", "a table does not hold every code once"));
                    }
                    seen[v / 64] |= 1 << (v % 64);
                } else {
                    vals.push(v);
                }
            }
            if !dense {
                vals.sort_unstable();
            }
            // Dense: `m` distinct values within table 0's `m` (checked by their bits).
            let same = if dense {
                first
                    .iter()
                    .all(|&v| seen[v as usize / 64] >> (v % 64) & 1 == 1)
            } else {
                vals == first
            };
            if !same {
                return Err(bad("section vals", "a table does not hold every code once"));
            }
        }
        crate::index::check_codes(bits, &self.delta_codes)
            .map_err(|_| bad("section delta_codes", "padding bits set in a code"))?;
        for id in self.dead.iter() {
            if !main_ids.contains(id) {
                return Err(bad("section dead", "a dead id is not in the tables"));
            }
        }
        let mut delta_set = IdSet::default();
        for &id in &self.delta_ids {
            if !delta_set.insert(id) || (main_ids.contains(id) && !self.dead.contains(id)) {
                return Err(bad("section delta_ids", "an id is stored twice"));
            }
        }
        Ok(main_ids)
    }

    /// Checks the contents once before the first change of a loaded index.
    pub(super) fn ensure_valid(&mut self) -> Result<()> {
        if !self.validated {
            self.main_ids = self.checked_main_ids()?;
            self.validated = true;
        }
        Ok(())
    }

    /// The arrays of the index, in the order of [`from_parts`](Self::from_parts):
    /// directories, truncated keys and values of all tables, wide codes and their ids, delta
    /// codes and ids, dead ids (increasing).
    #[allow(clippy::type_complexity)]
    pub(crate) fn parts(
        &self,
    ) -> (
        &[u32],
        &[u8],
        &[u32],
        &[u64],
        &[u32],
        &[u64],
        &[u32],
        Vec<u32>,
    ) {
        let main: &[u32] = if self.words() == 1 {
            &self.store.vals()[..self.store.len()]
        } else {
            &self.row_ids
        };
        let mut dead: Vec<u32> = main
            .iter()
            .copied()
            .filter(|&id| self.dead.contains(id))
            .collect();
        dead.sort_unstable();
        let (dir, keys, vals) = self.store.parts();
        (
            dir,
            keys,
            vals,
            &self.codes,
            &self.row_ids,
            &self.delta_codes,
            &self.delta_ids,
            dead,
        )
    }
}
