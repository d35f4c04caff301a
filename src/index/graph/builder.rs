//! [`GraphBuilder`].

use super::{DEFAULT_EF, DEFAULT_EF_CONSTRUCTION, DEFAULT_GRAPH_SEED, DEFAULT_M, GraphIndex};
use crate::error::{Error, Result};
use crate::signature::SignatureMatrix;

/// Largest out-degree `m`.
pub const MAX_M: usize = 1024;

/// Builder for [`GraphIndex`]: `GraphIndex::builder().m(32).ef(64).seed(7).build(&sigs)`.
///
/// Defaults: out-degree [`DEFAULT_M`] (32), search beam [`DEFAULT_EF`] (88), insertion beam
/// [`DEFAULT_EF_CONSTRUCTION`] (64), seed 0, scan fallback on.
#[derive(Clone, Debug)]
pub struct GraphBuilder {
    pub(super) m: usize,
    pub(super) ef: usize,
    pub(super) ef_construction: usize,
    pub(super) seed: u64,
    pub(super) fallback: bool,
}

impl Default for GraphBuilder {
    fn default() -> Self {
        GraphBuilder {
            m: DEFAULT_M,
            ef: DEFAULT_EF,
            ef_construction: DEFAULT_EF_CONSTRUCTION,
            seed: DEFAULT_GRAPH_SEED,
            fallback: true,
        }
    }
}

/// Checks the parameters of a graph index.
pub(super) fn check_params(m: usize, ef: usize, ef_construction: usize) -> Result<()> {
    if !(2..=MAX_M).contains(&m) {
        return Err(Error::param(
            "m",
            format!("{m}: the out-degree must lie in 2..={MAX_M}"),
        ));
    }
    if ef == 0 {
        return Err(Error::param("ef", "must be at least 1"));
    }
    if ef_construction == 0 {
        return Err(Error::param("ef_construction", "must be at least 1"));
    }
    Ok(())
}

impl GraphBuilder {
    /// Out-degree `m` (2 to 1,024; default 32): neighbours kept per code. Memory grows by
    /// `4·m` bytes per code; recall at a given beam grows with it.
    pub fn m(mut self, m: usize) -> Self {
        self.m = m;
        self
    }

    /// Search beam `ef` (≥ 1; default 88): nodes kept by a k-NN search (which uses
    /// `max(ef, k)`). Can be changed after the build with [`GraphIndex::set_ef`].
    pub fn ef(mut self, ef: usize) -> Self {
        self.ef = ef;
        self
    }

    /// Beam of the searches that insert codes after the build (≥ 1; default 64): a larger
    /// one inserts slower and links better. The build itself prunes approximate k-NN lists.
    pub fn ef_construction(mut self, ef: usize) -> Self {
        self.ef_construction = ef;
        self
    }

    /// Seed of the insertion order and the entry points (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Whether k-NN may fall back to the exact scan when the build's check finds the graph
    /// no better (default true; see [`GraphIndex`]).
    pub fn fallback(mut self, on: bool) -> Self {
        self.fallback = on;
        self
    }

    /// An empty index of `bits`-bit codes, to insert into.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a width out of `1..=MAX_BITS` or a parameter out of
    /// range.
    pub fn empty(&self, bits: usize) -> Result<GraphIndex> {
        crate::index::check_bits(bits)?;
        check_params(self.m, self.ef, self.ef_construction)?;
        Ok(GraphIndex::empty_with(self, bits))
    }

    /// An index of the rows of `sigs`, with ids `0..N`: built in parallel (rayon), the
    /// same for any number of threads.
    ///
    /// # Errors
    /// As [`empty`](Self::empty); [`Error::InvalidParameter`] for more than `2^32` rows or
    /// codes with padding bits set.
    pub fn build<S: AsRef<[u64]>>(&self, sigs: &SignatureMatrix<S>) -> Result<GraphIndex> {
        let bits = sigs.bits();
        self.empty(bits)?;
        let n = u32::try_from(sigs.len())
            .map_err(|_| Error::param("signatures", "more than 2^32 rows"))?;
        crate::index::check_codes(bits, sigs.as_slice())?;
        let ids: Vec<u32> = (0..n).collect();
        Ok(GraphIndex::from_codes(self, bits, &ids, sigs.as_slice()))
    }
}
