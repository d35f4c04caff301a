//! Pooled values (Van Durme & Lall 2010): hashed picks from a small pool of Gaussians.

use super::kernels::axpy;
use super::{Signer, SignerInfo};
use crate::error::{Error, Result};
use crate::memory;
use crate::rng::{Rng, expand, hash_bytes, hash_u64, mix64};
use crate::signers::hashing::{ID_DOMAIN, TOKEN_DOMAIN};

/// Builder for [`PooledSigner`].
#[derive(Clone, Debug)]
pub struct PooledBuilder {
    bits: Option<usize>,
    seed: u64,
    pool: usize,
}

impl Default for PooledBuilder {
    fn default() -> Self {
        PooledBuilder {
            bits: None,
            seed: 0,
            pool: 10_000,
        }
    }
}

impl PooledBuilder {
    /// Signature width `f` (required, ≥ 1).
    pub fn bits(mut self, f: usize) -> Self {
        self.bits = Some(f);
        self
    }

    /// Seed of the pool and of the feature hash (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Pool size `m` (default 10,000; at most 2^32).
    pub fn pool_size(mut self, m: usize) -> Self {
        self.pool = m;
        self
    }

    /// Validates the parameters and draws the pool.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a missing width or a pool size outside `1..=2^32`;
    /// [`Error::OutOfMemory`] when the `4·m` bytes of the pool cannot be allocated.
    pub fn build(self) -> Result<PooledSigner> {
        let bits = super::required_bits(self.bits)?;
        if self.pool == 0 || self.pool as u64 > 1 << 32 {
            return Err(Error::param(
                "pool_size",
                format!("{} is not in 1..=2^32", self.pool),
            ));
        }
        let mut rng = Rng::new(self.seed);
        let mut pool = Vec::new();
        memory::reserve(
            &mut pool,
            self.pool,
            &format!("a pool of {} values", self.pool),
        )?;
        pool.extend((0..self.pool).map(|_| rng.gaussian() as f32));
        Ok(PooledSigner {
            bits,
            seed: self.seed,
            id_seed: mix64(self.seed ^ ID_DOMAIN ^ POOL_DOMAIN),
            token_seed: mix64(self.seed ^ TOKEN_DOMAIN ^ POOL_DOMAIN),
            pool,
        })
    }
}

const POOL_DOMAIN: u64 = 0x706f_6f6c_6564_0000; // "pooled"

/// A signer whose matrix entry for (feature, bit `j`) is `P[h_j(feature)]`, a pick by hashing
/// from a pool `P` of `m` seeded standard normal values: memory is `m` floats whatever the
/// dimension, features may be ids or tokens, and the signature is as good as a Gaussian
/// matrix's for large `m` (Van Durme & Lall 2010; `m = 10,000` is their recommendation).
///
/// **Hash.** The feature key is seeded XXH3-64 as in [`HashingTrick`](super::HashingTrick);
/// word `k` of its SplitMix64 expansion gives the pool indices of bits `2k` (low 32 bits `u`)
/// and `2k + 1` (high 32 bits), each `⌊u · m / 2^32⌋`.
#[derive(Clone, Debug)]
pub struct PooledSigner {
    bits: usize,
    seed: u64,
    id_seed: u64,
    token_seed: u64,
    pool: Vec<f32>,
}

impl PooledSigner {
    /// A builder (seed 0, pool of 10,000); `bits` must be set.
    pub fn builder() -> PooledBuilder {
        PooledBuilder::default()
    }

    /// The pool values.
    pub fn pool(&self) -> &[f32] {
        &self.pool
    }

    /// Writes the column of the feature with `key` (its `f` values) into `col`.
    #[inline]
    fn column_of_key(&self, key: u64, col: &mut [f32]) {
        let pool = &self.pool[..];
        let m = pool.len() as u64;
        let pick = |u: u64| -> f32 {
            let i = ((u * m) >> 32) as usize;
            // SAFETY: u < 2^32, so i = ⌊u·m / 2^32⌋ < m = pool.len() (and u·m < 2^64 since
            // m ≤ 2^32, checked by the builder).
            unsafe { *pool.get_unchecked(i) }
        };
        let n = col.len();
        let mut pairs = col.chunks_exact_mut(2);
        for (k, pair) in (&mut pairs).enumerate() {
            let x = expand(key, k as u64);
            pair[0] = pick(x & 0xffff_ffff);
            pair[1] = pick(x >> 32);
        }
        if let [last] = pairs.into_remainder() {
            *last = pick(expand(key, (n / 2) as u64) & 0xffff_ffff);
        }
    }

    /// The column of feature id `i`.
    pub fn column(&self, i: u64) -> Vec<f32> {
        let mut c = vec![0f32; self.bits];
        self.column_of_key(hash_u64(i, self.id_seed), &mut c);
        c
    }

    fn add_keys(&self, keys: impl Iterator<Item = u64>, weights: &[f32], acc: &mut [f32]) {
        let mut col = vec![0f32; self.bits];
        for (key, &w) in keys.zip(weights) {
            self.column_of_key(key, &mut col);
            axpy(&mut acc[..self.bits], &col, w);
        }
    }
}

impl Signer for PooledSigner {
    fn bits(&self) -> usize {
        self.bits
    }

    fn dim(&self) -> Option<u64> {
        None
    }

    fn info(&self) -> SignerInfo {
        SignerInfo {
            kind: "pooled",
            bits: self.bits,
            dim: None,
            seed: self.seed,
            bytes: self.pool.len() * 4,
            adds_per_nonzero: self.bits as f64,
            adds_per_vector: 0.0,
            hash_words_per_nonzero: 1.0 + self.bits.div_ceil(2) as f64,
            params: vec![("pool", self.pool.len().to_string())],
        }
    }

    fn accumulate(&self, ids: &[u64], weights: &[f32], acc: &mut [f32]) {
        self.add_keys(ids.iter().map(|&i| hash_u64(i, self.id_seed)), weights, acc);
    }

    fn accumulate_tokens(&self, tokens: &[&str], weights: &[f32], acc: &mut [f32]) -> Result<()> {
        if tokens.len() != weights.len() {
            return Err(Error::LengthMismatch {
                what: "tokens vs weights",
                left: tokens.len(),
                right: weights.len(),
            });
        }
        self.add_keys(
            tokens
                .iter()
                .map(|t| hash_bytes(t.as_bytes(), self.token_seed)),
            weights,
            acc,
        );
        Ok(())
    }
}
