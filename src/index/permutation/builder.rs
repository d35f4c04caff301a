//! [`PermutationBuilder`] and the permutations drawn from its seed.

use super::{DEFAULT_BEAM, DEFAULT_PERMUTATIONS, DEFAULT_SEED, PermutationIndex};
use crate::error::{Error, Result};
use crate::memory;
use crate::rng::Rng;
use crate::signature::{SignatureMatrix, words_for};

/// Builder for [`PermutationIndex`]:
/// `PermutationIndex::builder().permutations(32).beam(64).seed(7).build(&sigs)`.
///
/// Defaults: [`DEFAULT_PERMUTATIONS`] (16) permutations, beam [`DEFAULT_BEAM`] (32), seed
/// [`DEFAULT_SEED`] (0).
#[derive(Clone, Debug)]
pub struct PermutationBuilder {
    permutations: usize,
    beam: usize,
    seed: u64,
}

impl Default for PermutationBuilder {
    fn default() -> Self {
        PermutationBuilder {
            permutations: DEFAULT_PERMUTATIONS,
            beam: DEFAULT_BEAM,
            seed: DEFAULT_SEED,
        }
    }
}

impl PermutationBuilder {
    /// Number of random bit permutations `q` (≥ 1; default 16). Memory and query time grow
    /// linearly with `q`.
    pub fn permutations(mut self, q: usize) -> Self {
        self.permutations = q;
        self
    }

    /// Beam `B` (≥ 1; default 32): stored codes compared above and below the query in each
    /// sorted list, so a query compares at most `2·q·B` codes. Can be changed after the build
    /// with [`PermutationIndex::set_beam`].
    pub fn beam(mut self, b: usize) -> Self {
        self.beam = b;
        self
    }

    /// Seed of the permutations (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    fn validate(&self, bits: usize) -> Result<()> {
        if bits == 0 {
            return Err(Error::param("bits", "must be at least 1"));
        }
        if u32::try_from(bits).is_err() {
            return Err(Error::param("bits", "more than 2^32 bits"));
        }
        if self.permutations == 0 {
            return Err(Error::param("permutations", "must be at least 1"));
        }
        if self.permutations.checked_mul(bits).is_none() {
            return Err(Error::param("permutations", "too many for this width"));
        }
        if self.beam == 0 {
            return Err(Error::param("beam", "must be at least 1"));
        }
        Ok(())
    }

    /// Checks the memory of an index of `n` codes against what the process may allocate:
    /// `4·q·f` bytes of permutations, `8·⌈f/64⌉ + 4` per code and `12·q` per code for the
    /// sorted lists (keys and order).
    fn check_memory(&self, bits: usize, n: usize) -> Result<()> {
        let q = self.permutations as u64;
        let per_code = 8 * words_for(bits) as u64 + 4 + 12 * q;
        let bytes = q
            .saturating_mul(bits as u64)
            .saturating_mul(4)
            .saturating_add((n as u64).saturating_mul(per_code));
        memory::check(
            &format!(
                "a permutation index of {n} {bits}-bit codes with {} permutations",
                self.permutations
            ),
            bytes,
        )
    }

    /// An empty index of `bits`-bit codes, to insert into.
    pub fn empty(&self, bits: usize) -> Result<PermutationIndex> {
        self.validate(bits)?;
        self.check_memory(bits, 0)?;
        let perms = draw_permutations(bits, self.permutations, self.seed)?;
        Ok(PermutationIndex::assemble(
            bits,
            self.permutations,
            self.beam,
            self.seed,
            perms,
            Vec::new(),
            Vec::new(),
        ))
    }

    /// An index of the rows of `sigs`, with ids `0..N`. The `q` sorted lists are built in
    /// parallel (rayon); the result does not depend on the number of threads.
    pub fn build<S: AsRef<[u64]>>(&self, sigs: &SignatureMatrix<S>) -> Result<PermutationIndex> {
        let bits = sigs.bits();
        self.validate(bits)?;
        let n = u32::try_from(sigs.len())
            .map_err(|_| Error::param("signatures", "more than 2^32 - 1 rows"))?;
        if n == u32::MAX {
            return Err(Error::param("signatures", "more than 2^32 - 1 rows"));
        }
        if self.permutations.checked_mul(sigs.len()).is_none() {
            return Err(Error::param("permutations", "too many for this many codes"));
        }
        self.check_memory(bits, sigs.len())?;
        let perms = draw_permutations(bits, self.permutations, self.seed)?;
        Ok(PermutationIndex::assemble(
            bits,
            self.permutations,
            self.beam,
            self.seed,
            perms,
            sigs.as_slice().to_vec(),
            (0..n).collect(),
        ))
    }
}

/// `q` independent uniform permutations of `0..bits`, row-major, by Fisher–Yates from one
/// [`Rng`] stream: those for `q` are the first `q` of those for any larger `q`.
///
/// # Errors
/// [`Error::OutOfMemory`] when the `q·bits` entries cannot be allocated.
pub(super) fn draw_permutations(bits: usize, q: usize, seed: u64) -> Result<Vec<u32>> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    memory::reserve(
        &mut out,
        q.saturating_mul(bits),
        &format!("{q} permutations of {bits} bits"),
    )?;
    for _ in 0..q {
        let start = out.len();
        out.extend(0..bits as u32);
        let p = &mut out[start..];
        for i in (1..bits).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
    }
    Ok(out)
}
