//! The hashing trick (Manku, Jain & Das Sarma 2007): no matrix, each feature hashed to f bits.

use super::kernels::add_signed_rows;
use super::{Signer, SignerInfo};
use crate::error::{Error, Result};
use crate::rng::{expand, hash_bytes, mix64, xxh3_u64, xxh3_u64_flip};
use crate::signature::words_for;
use crate::signers::HyperplaneSigner;

/// Builder for [`HashingTrick`].
#[derive(Clone, Debug, Default)]
pub struct HashingTrickBuilder {
    bits: Option<usize>,
    seed: u64,
}

impl HashingTrickBuilder {
    /// Signature width `f` (required, ≥ 1).
    pub fn bits(mut self, f: usize) -> Self {
        self.bits = Some(f);
        self
    }

    /// Seed of the feature hash (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Validates the parameters.
    pub fn build(self) -> Result<HashingTrick> {
        let bits = super::required_bits(self.bits)?;
        Ok(HashingTrick {
            bits,
            seed: self.seed,
            id_flip: xxh3_u64_flip(mix64(self.seed ^ ID_DOMAIN)),
            token_seed: mix64(self.seed ^ TOKEN_DOMAIN),
        })
    }
}

/// The feature hash, as recorded in files (`signer.hash`): a file made with another hash
/// cannot be rebuilt by this release.
pub(crate) const HASH_DESCRIPTION: &str = "xxh3-64 + splitmix64 expansion";

/// Domain separators, so that the integer id `n` and a token whose bytes happen to equal
/// `n.to_le_bytes()` hash differently.
pub(crate) const ID_DOMAIN: u64 = 0x6964_5f66_6561_7475; // "id_featu"
pub(crate) const TOKEN_DOMAIN: u64 = 0x746f_6b65_6e5f_6665; // "token_fe"

/// The per-feature hashing trick: the column of feature `i` is `±1` per bit, bit `j` of it
/// `+1` where bit `j` of the feature's hash stream is set. Features are `u64` ids (any `u32`
/// id is the same feature as the equal `u64`, so the dimension is unbounded) or strings.
///
/// **Hash.** A feature's key is seeded XXH3-64 of its bytes: the 8 little-endian bytes of an
/// id, or the UTF-8 bytes of a token (each with its own seed derived from the signer's seed).
/// Its `f` bits are the first `f` bits of the words `key, expand(key, 1), expand(key, 2), …`
/// (the key itself, then SplitMix64 from the key), i.e. `⌈f/64⌉` hash words per feature, not
/// `f` hash calls.
///
/// **Weights** may be any finite value: negative and fractional weights are added exactly
/// as `V[j] ± w`.
///
/// ```
/// use simlsh::{HashingTrick, Signer};
/// let s = HashingTrick::builder().bits(64).seed(1).build()?;
/// let a = s.sign_tokens(&["the", "quick", "brown", "fox"], &[1.0; 4])?;
/// let b = s.sign_tokens(&["the", "quick", "brown", "dog"], &[1.0; 4])?;
/// assert!(a.distance(&b)? < 32);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct HashingTrick {
    bits: usize,
    seed: u64,
    /// `xxh3_u64_flip` of the id seed `mix64(seed ^ ID_DOMAIN)`.
    id_flip: u64,
    token_seed: u64,
}

impl HashingTrick {
    /// A builder (seed 0); `bits` must be set.
    pub fn builder() -> HashingTrickBuilder {
        HashingTrickBuilder::default()
    }

    /// The key of feature id `i` (XXH3 of its little-endian bytes).
    #[inline]
    pub fn id_key(&self, i: u64) -> u64 {
        xxh3_u64(i, self.id_flip)
    }

    /// The key of a token.
    #[inline]
    pub fn token_key(&self, token: &str) -> u64 {
        hash_bytes(token.as_bytes(), self.token_seed)
    }

    /// The `words_for(f)` sign words of feature id `i` (bit set means `+1`), padding bits zero.
    pub fn column_words(&self, i: u64) -> Vec<u64> {
        let w = words_for(self.bits);
        let key = self.id_key(i);
        let mut out: Vec<u64> = (0..w).map(|k| word(key, k)).collect();
        out[w - 1] &= crate::signature::last_word_mask(self.bits);
        out
    }

    /// The explicit `D × f` Rademacher matrix of feature ids `0..dim` built from the same hash:
    /// a [`HyperplaneSigner`] that gives the same signatures, bit for bit, on inputs whose ids
    /// are below `dim`.
    pub fn explicit_matrix(&self, dim: u64) -> Result<HyperplaneSigner> {
        let words = (0..dim).flat_map(|i| self.column_words(i)).collect();
        HyperplaneSigner::from_sign_words(dim, self.bits, words, self.seed)
    }
}

/// Word `k` of the hash stream of a feature with `key`: the key itself, then its SplitMix64
/// expansion.
#[inline(always)]
fn word(key: u64, k: usize) -> u64 {
    if k == 0 { key } else { expand(key, k as u64) }
}

/// Features per chunk: bounds the scratch buffer of hash words.
const CHUNK: usize = 512;

impl Signer for HashingTrick {
    fn bits(&self) -> usize {
        self.bits
    }

    fn dim(&self) -> Option<u64> {
        None
    }

    fn info(&self) -> SignerInfo {
        SignerInfo {
            kind: "hashing-trick",
            bits: self.bits,
            dim: None,
            seed: self.seed,
            bytes: 0,
            adds_per_nonzero: self.bits as f64,
            adds_per_vector: 0.0,
            hash_words_per_nonzero: 1.0 + words_for(self.bits) as f64,
            params: vec![("hash", HASH_DESCRIPTION.into())],
        }
    }

    fn accumulate(&self, ids: &[u64], weights: &[f32], acc: &mut [f32]) {
        if acc.len() == 64 {
            // One block: the kernel hashes each feature as it fills its buffer of words.
            add_signed_rows(acc, weights, |i, _| self.id_key(ids[i]));
            return;
        }
        let mut keys = [0u64; CHUNK];
        for (ids, ws) in ids.chunks(CHUNK).zip(weights.chunks(CHUNK)) {
            let keys = &mut keys[..ws.len()];
            keys.iter_mut()
                .zip(ids)
                .for_each(|(key, &i)| *key = self.id_key(i));
            add_signed_rows(acc, ws, |i, k| word(keys[i], k));
        }
    }

    fn accumulate_tokens(&self, tokens: &[&str], weights: &[f32], acc: &mut [f32]) -> Result<()> {
        if tokens.len() != weights.len() {
            return Err(Error::LengthMismatch {
                what: "tokens vs weights",
                left: tokens.len(),
                right: weights.len(),
            });
        }
        let mut keys = [0u64; CHUNK];
        for (ts, ws) in tokens.chunks(CHUNK).zip(weights.chunks(CHUNK)) {
            let keys = &mut keys[..ts.len()];
            keys.iter_mut()
                .zip(ts)
                .for_each(|(k, t)| *k = self.token_key(t));
            add_signed_rows(acc, ws, |i, k| word(keys[i], k));
        }
        Ok(())
    }
}
