//! [`MultiIndexBuilder`] and the automatic number of substrings.

use super::MultiIndex;
use super::cost::Costs;
use crate::error::{Error, Result};
use crate::signature::{SignatureMatrix, words_for};
use crate::storage::Buf;
use crate::util::pool::Pool;

/// The automatic number of substrings: `round(bits / log2 n)`, clamped to `[⌈bits/64⌉, bits]`
/// (`n < 2` counts as 2).
///
/// Against the reference table of the MIH code (`RUN.sh`: 64-bit codes 5, 4, 4, 3, 2, 2 and
/// 256-bit codes 19, 15, 13, 11, 10, 8 substrings for 10^4 … 10^9 codes), rounding
/// reproduces 10 of the 12 entries (it gives 3 for 64 bits at 10^6, and 9 for 256 bits at
/// 10^9), flooring 6 and ceiling 6.
pub fn auto_substrings(bits: usize, n: usize) -> usize {
    let lo = words_for(bits).max(1);
    let hi = bits.max(1);
    let log = (n.max(2) as f64).log2();
    let m = (bits as f64 / log).round() as usize;
    m.clamp(lo, hi)
}

/// Builder of a [`MultiIndex`]: `MultiIndex::builder().substrings(8).build(&sigs)`.
#[derive(Clone, Debug)]
pub struct MultiIndexBuilder {
    pub(super) substrings: Option<usize>,
    pub(super) delta_limit: Option<usize>,
    pub(super) fallback: bool,
}

impl Default for MultiIndexBuilder {
    fn default() -> Self {
        MultiIndexBuilder {
            substrings: None,
            delta_limit: None,
            fallback: true,
        }
    }
}

impl MultiIndexBuilder {
    /// Fixes the number of substrings `m` (default: [`auto_substrings`] of the number of
    /// stored codes, recomputed at every rebuild). Must lie in `[⌈f/64⌉, f]`, checked by
    /// [`build`](Self::build).
    pub fn substrings(mut self, m: usize) -> Self {
        self.substrings = Some(m);
        self
    }

    /// Number of inserted codes kept in the linearly scanned delta before it is merged into
    /// the tables (default `max(256, 8·√N)`).
    pub fn delta_limit(mut self, limit: usize) -> Self {
        self.delta_limit = Some(limit);
        self
    }

    /// Whether searches may switch to a linear scan when the cost model says it is cheaper
    /// (default `true`). With `false` every search probes the tables, which is exact but can
    /// be extremely slow for large radii or wide substrings; meant for tests and
    /// measurements.
    pub fn fallback(mut self, on: bool) -> Self {
        self.fallback = on;
        self
    }

    pub(super) fn check(&self, bits: usize) -> Result<()> {
        if bits == 0 {
            return Err(Error::param("bits", "must be at least 1"));
        }
        if let Some(m) = self.substrings {
            let lo = words_for(bits);
            if m < lo || m > bits {
                return Err(Error::param(
                    "substrings",
                    format!(
                        "{m} substrings of a {bits}-bit code: must lie in [{lo}, {bits}] (at most 64 bits each)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An index of the rows of `sigs`, with ids `0..N`; the tables are built in parallel.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a substring count out of range or more than `2^32 − 1`
    /// rows.
    pub fn build<S: AsRef<[u64]>>(&self, sigs: &SignatureMatrix<S>) -> Result<MultiIndex> {
        self.check(sigs.bits())?;
        let n = sigs.len();
        let n32 = u32::try_from(n)
            .ok()
            .filter(|&x| x < u32::MAX)
            .ok_or_else(|| Error::param("signatures", "at least 2^32 - 1 rows"))?;
        // The codes and ids, and per substring table a row and a key per code.
        let w = words_for(sigs.bits()) as u64;
        let m = self
            .substrings
            .unwrap_or_else(|| auto_substrings(sigs.bits(), n)) as u64;
        crate::memory::check(
            &format!("a multi-index of {n} {}-bit codes", sigs.bits()),
            (n as u64).saturating_mul(8 * w + 4 + 12 * m),
        )?;
        let mut idx = self.empty(sigs.bits())?;
        idx.install(sigs.as_slice().to_vec(), (0..n32).collect());
        Ok(idx)
    }

    /// An empty index of `bits`-bit codes.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `bits` is 0 or the substring count is out of range.
    pub fn empty(&self, bits: usize) -> Result<MultiIndex> {
        self.check(bits)?;
        let mut idx = MultiIndex {
            bits,
            words: words_for(bits),
            fixed_m: self.substrings,
            delta_limit: self.delta_limit,
            fallback: self.fallback,
            subs: Vec::new(),
            costs: Costs::default(),
            codes: Buf::default(),
            ids: Buf::default(),
            dead: Buf::default(),
            n_dead: 0,
            rows: Buf::default(),
            dirs: Buf::default(),
            keys: Buf::default(),
            delta_codes: Vec::new(),
            delta_ids: Vec::new(),
            pool: Pool::default(),
            validated: true,
            meta: crate::index::IndexMeta::default(),
        };
        idx.install(Vec::new(), Vec::new());
        Ok(idx)
    }
}
