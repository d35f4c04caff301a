//! The hashed Gaussian signer: no matrix, each feature hashed to a column of quantised
//! Gaussian values, so that a few heavy features do not decide the signs the way `±1`
//! columns let them.
//!
//! # Why not `±1`
//!
//! A bit is the sign of `V = Σ_i x_i r_i`. When two vectors share a coordinate `c` of weight
//! `a` over backgrounds of norm `b`, a `±1` entry `r_c` adds exactly `±a` to both projections:
//! whenever `a` beats the backgrounds' projections, both signs follow `r_c` and the bit
//! collides, far more often than `1 − θ/π`. Only spherically symmetric columns (Gaussian)
//! give `1 − θ/π` for every pair; a Gaussian `r_c` is often small, and then the backgrounds
//! decide. On ~6,000 real e-mails (TF-IDF, 256 bits, cosine ≥ 0.9) the `±1` columns found
//! 11.9k pairs at precision 0.30 against 3.9k at 0.75 for Gaussian ones. The bundled tweets
//! and poems do not show it; the dominance set of the workload generators
//! (`simlsh_workloads::dominance`) does.
//!
//! # The construction, chosen by measurement
//!
//! Each bit's column entries come from one of two tables of 8 values (4 magnitudes, both
//! signs, [`TABLES`]), picked by 3 hash bits; even groups of 8 bits use table 0, odd groups
//! table 1, and the magnitudes ([`MAGNITUDES`]) minimise the largest deviation of the
//! collision law for one dominant coordinate. The hash bits are two AES rounds of the
//! feature's XXH3 key and a counter (`stream_block`): 256 bits per 64 bits of signature.
//! The AVX2 kernel looks the values up 8 lanes at a time (`vpermps` on a table multiplied by
//! the weight once per feature) and computes the AES rounds in registers (AES-NI); the
//! scalar reference (a software AES round) gives the same bits.
//!
//! Deviation of the fraction of equal bits from `1 − θ/π` on the dominance set's 15 cells
//! (columns drawn i.i.d. in simulation, 1,500–4,000 pairs × 64 bits per cell, standard error
//! ≈ 0.001; a cell is a family and a cosine), and kernel cost (thread CPU time per nonzero on
//! rows like W1's, f = 64 / 256; the `±1` kernel: 3.0–3.5 / 13.3 ns):
//!
//! | column values | worst deviation | typical | cost ns, f = 64 / 256 | verdict |
//! |---|---|---|---|---|
//! | `±1` (hashing trick) | +0.18 | 0.01–0.14 | 3.3 / 13.3 | the bias |
//! | sparse ternary, `P(0)` = 1/2 or 2/3 | −0.22 | 0.01–0.14 | — | biased the other way (a shared coordinate often has entry 0), ties on short rows |
//! | 4 levels (2 bits) | +0.11 | 0.01–0.03 | ≈ `±1` | too coarse |
//! | 8 levels, one table (3 bits, `vpermps`) | +0.006 | 0.003–0.005 | 5.3 / 20.7 with AES | |
//! | 16 levels, two lookups per lane | +0.004 | 0.001–0.003 | 12.1 / 47.9 | too slow |
//! | 16 levels by table variants per feature | — | — | 7.6 / 28.5 | too slow |
//! | two 8-value tables, Gaussian bin centroids | +0.0054 | 0.001–0.005 | 5.3 / 20.7 | |
//! | **two 8-value tables, minimax magnitudes** | −0.0044 | 0.000–0.003 | 5.3 / 20.7 | **chosen** |
//!
//! Word expansion: SplitMix64 per 64-bit word cost 6.4 / 24.8 ns with the same lookups, AES
//! rounds 5.3 / 20.7; on this machine (AMD Zen 3) `vpermps` is the bottleneck, at about two
//! cycles each, 8 per 64 bits. In the library, `cargo bench --bench signing -- w1/` (criterion
//! medians of two runs on a loaded 2-core machine, W1, one thread): hashing trick 4.5–4.9 /
//! 16.4–17.1 ns per nonzero, hashed Gaussian 6.2–6.3 / 25.5–27.3; by thread CPU time over the
//! same rows, which load does not inflate, 3.8–4.1 / 15.5 against 5.4–6.1 / 22.0–22.3 (ratios
//! 1.3–1.6 and 1.41–1.43).
//!
//! The signer itself on the dominance set (`cargo run --release --example dominance`,
//! f = 256, 1,000 pairs per cell): deviations within ±0.0044 of `1 − θ/π` (the `±1` hashing
//! trick: up to +0.176), and on its near-duplicate corpus (4,000 templated documents, one
//! heavy boilerplate word each, cosine ≥ 0.9 → radius 36, 989 true pairs):
//!
//! | signer | pairs found | precision | recall | F1 |
//! |---|---|---|---|---|
//! | Gaussian matrix (64 MiB) | 1,136 | 0.768 | 0.883 | 0.822 |
//! | super-bit (64 MiB) | 1,155 | 0.762 | 0.890 | 0.821 |
//! | pooled | 1,150 | 0.754 | 0.877 | 0.811 |
//! | **hashed Gaussian** | 1,230 | 0.751 | 0.934 | 0.833 |
//! | hashing trick (`±1`) | 20,037 | 0.049 | 0.988 | 0.093 |
//! | Rademacher matrix (`±1`) | 20,168 | 0.048 | 0.985 | 0.092 |
//! | very sparse, density `1/√D` | 38,160 | 0.026 | 0.989 | 0.050 |
//! | very sparse, `expected_nnz` = 217 | 709 | 1.000 | 0.717 | 0.835 |
//!
//! **What remains.** 16 quantisation levels are not a sphere: the residual deviation is a
//! few thousandths, below what the collision-law tests resolve at 20,000 trials per cell
//! (`tests/collision_law.rs`: bound ±0.008–0.014) and about 8% more pairs than the Gaussian
//! matrix at a threshold, against 18× for `±1` columns. Vectors of two or three features
//! only (no background) see the quantisation most (deviations up to ≈ 0.01).

use super::kernels::{add_table_rows, stream_block};
use super::{HyperplaneSigner, Signer, SignerInfo};
use crate::error::{Error, Result};
use crate::rng::{hash_bytes, mix64, xxh3_u64, xxh3_u64_flip};
use crate::signers::hashing::{ID_DOMAIN, TOKEN_DOMAIN};

/// The magnitudes of the two tables (each up to a common factor, which does not change a
/// sign): table 0 serves the even groups of 8 bits, table 1 the odd ones. They minimise the
/// largest deviation from `1 − θ/π` of the collision probability of a pair that shares one
/// dominant coordinate over independent Gaussian backgrounds (the failure of `±1` columns),
/// averaged over the two tables, for dominance ratios `λ = a/b ≤ 8` (cosines up to 0.985):
/// 0.0038, against 0.0100 for the centroids of 16 equiprobable Gaussian bins split between
/// the tables and 0.026 for those of 8 bins (see the [module docs](self)).
pub const MAGNITUDES: [[f32; 4]; 2] = [
    [0.0828, 0.5064, 0.9782, 1.6673],
    [0.2244, 0.5095, 0.6724, 1.7994],
];

/// The two 8-value tables: index bit 2 is the sign, bits 0–1 pick one of the four
/// [`MAGNITUDES`].
pub const TABLES: [[f32; 8]; 2] = {
    let mut t = [[0f32; 8]; 2];
    let mut h = 0;
    while h < 2 {
        let mut m = 0;
        while m < 4 {
            t[h][m] = MAGNITUDES[h][m];
            t[h][m + 4] = -MAGNITUDES[h][m];
            m += 1;
        }
        h += 1;
    }
    t
};

/// Domain separator of this signer's feature keys (`"gaussian"`), so that its columns are
/// independent of the hashing trick's at the same seed.
const GAUSSIAN_DOMAIN: u64 = 0x6761_7573_7369_616e;

/// The hash and the stream expansion, as recorded in files (`signer.hash`).
pub(crate) const HASH_DESCRIPTION: &str = "xxh3-64 + 2 aes rounds, 16-level tables";

/// Features per chunk: bounds the scratch buffer of keys.
const CHUNK: usize = 512;

/// Builder for [`HashedGaussian`].
#[derive(Clone, Debug, Default)]
pub struct HashedGaussianBuilder {
    bits: Option<usize>,
    seed: u64,
}

impl HashedGaussianBuilder {
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
    pub fn build(self) -> Result<HashedGaussian> {
        let bits = super::required_bits(self.bits)?;
        Ok(HashedGaussian {
            bits,
            seed: self.seed,
            id_flip: xxh3_u64_flip(mix64(self.seed ^ ID_DOMAIN ^ GAUSSIAN_DOMAIN)),
            token_seed: mix64(self.seed ^ TOKEN_DOMAIN ^ GAUSSIAN_DOMAIN),
        })
    }
}

/// A signer whose column for a feature holds quantised Gaussian values drawn from a hash of
/// the feature: no matrix, any `u64` id or string token, streaming, and (unlike the `±1`
/// [`HashingTrick`](super::HashingTrick)) the collision law `1 − θ/π` even when a few
/// features dominate. See the [module docs](self) for the construction and the
/// measurements behind it.
///
/// **Hash.** A feature's key is seeded XXH3-64 of its bytes (the 8 little-endian bytes of an
/// id, or the UTF-8 bytes of a token), with seeds derived from the signer's seed. Block `k` of
/// 64 bits of the column takes the 256 bits `stream_block``(key, k)` (two AES rounds of the
/// key and a counter); bit `64k + 8g + l` takes the value
/// [`TABLES`]`[g % 2][(d[l] >> 3g) & 7]` of its word `d[l]`.
///
/// **Order.** Each value is added as `V[j] + w·r` (a multiply, then an add), feature by
/// feature in the order given, by the scalar reference and the AVX2 kernel alike.
///
/// ```
/// use simlsh::signers::{HashedGaussian, Signer};
/// let s = HashedGaussian::builder().bits(64).seed(1).build()?;
/// let a = s.sign_tokens(&["the", "quick", "brown", "fox"], &[1.0; 4])?;
/// let b = s.sign_tokens(&["the", "quick", "brown", "dog"], &[1.0; 4])?;
/// assert!(a.distance(&b)? < 32);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct HashedGaussian {
    bits: usize,
    seed: u64,
    /// `xxh3_u64_flip` of the id seed.
    id_flip: u64,
    token_seed: u64,
}

impl HashedGaussian {
    /// A builder (seed 0); `bits` must be set.
    pub fn builder() -> HashedGaussianBuilder {
        HashedGaussianBuilder::default()
    }

    /// The key of feature id `i`.
    #[inline]
    pub fn id_key(&self, i: u64) -> u64 {
        xxh3_u64(i, self.id_flip)
    }

    /// The key of a token.
    #[inline]
    pub fn token_key(&self, token: &str) -> u64 {
        hash_bytes(token.as_bytes(), self.token_seed)
    }

    /// The column of feature id `i` (its `f` values).
    pub fn column(&self, i: u64) -> Vec<f32> {
        let key = self.id_key(i);
        let mut col = Vec::with_capacity(self.bits.next_multiple_of(64));
        for k in 0..self.bits.div_ceil(64) {
            let d = stream_block(key, k as u64);
            col.extend(
                (0..64).map(|j| TABLES[j / 8 % 2][(d[j % 8] >> (3 * (j / 8)) & 7) as usize]),
            );
        }
        col.truncate(self.bits);
        col
    }

    /// The explicit `D × f` matrix of feature ids `0..dim` (a `custom`
    /// [`HyperplaneSigner`]): the same signatures, bit for bit, on inputs whose ids are below
    /// `dim`.
    pub fn explicit_matrix(&self, dim: u64) -> Result<HyperplaneSigner> {
        let d = usize::try_from(dim).map_err(|_| Error::param("dim", "too large"))?;
        let m: Vec<f32> = (0..dim).flat_map(|i| self.column(i)).collect();
        let m = ndarray::Array2::from_shape_vec((d, self.bits), m)
            .map_err(|e| Error::param("dim", e.to_string()))?;
        HyperplaneSigner::from_matrix(&m)
    }

    /// Adds the features whose keys `key(i)` gives: hashed inside the kernel when the
    /// signature is one block of 64 bits, otherwise once per feature into a buffer.
    fn add_keys(&self, key: impl Fn(usize) -> u64, weights: &[f32], acc: &mut [f32]) {
        if acc.len() == 64 {
            add_table_rows(acc, weights, key, &TABLES);
            return;
        }
        let mut keys = [0u64; CHUNK];
        for (start, ws) in (0..weights.len()).step_by(CHUNK).zip(weights.chunks(CHUNK)) {
            let keys = &mut keys[..ws.len()];
            keys.iter_mut()
                .enumerate()
                .for_each(|(k, b)| *b = key(start + k));
            add_table_rows(acc, ws, |i| keys[i], &TABLES);
        }
    }
}

impl Signer for HashedGaussian {
    fn bits(&self) -> usize {
        self.bits
    }

    fn dim(&self) -> Option<u64> {
        None
    }

    fn info(&self) -> SignerInfo {
        SignerInfo {
            kind: "hashed-gaussian",
            bits: self.bits,
            dim: None,
            seed: self.seed,
            bytes: std::mem::size_of_val(&TABLES)
                + std::mem::size_of_val(&super::kernels::STREAM_KEYS),
            adds_per_nonzero: self.bits as f64,
            adds_per_vector: 0.0,
            hash_words_per_nonzero: 1.0 + 4.0 * self.bits.div_ceil(64) as f64,
            params: vec![("hash", HASH_DESCRIPTION.into())],
        }
    }

    fn accumulate(&self, ids: &[u64], weights: &[f32], acc: &mut [f32]) {
        self.add_keys(|i| self.id_key(ids[i]), weights, acc);
    }

    fn accumulate_tokens(&self, tokens: &[&str], weights: &[f32], acc: &mut [f32]) -> Result<()> {
        if tokens.len() != weights.len() {
            return Err(Error::LengthMismatch {
                what: "tokens vs weights",
                left: tokens.len(),
                right: weights.len(),
            });
        }
        self.add_keys(|i| self.token_key(tokens[i]), weights, acc);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Φ by composite Simpson from 0 (accurate to ~1e-10 here).
    fn cdf(x: f64) -> f64 {
        let phi = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let n = 1_000;
        let h = x / n as f64;
        let mut s = phi(0.0) + phi(x);
        for i in 1..n {
            s += if i % 2 == 1 { 4.0 } else { 2.0 } * phi(i as f64 * h);
        }
        0.5 + s * h / 3.0
    }

    /// `h(x) = (Φ(x) − 1/2)²`: a pair sharing one coordinate of weight `a` over independent
    /// Gaussian backgrounds of norm `b` collides with probability `1/2 + 2·E h(λ r/σ)`,
    /// `λ = a/b`, `r` the coordinate's column entry and `σ` the entries' deviation.
    fn h(x: f64) -> f64 {
        let d = cdf(x) - 0.5;
        d * d
    }

    /// The largest deviation over `λ ≤ 8` of the two tables' collision probability (averaged
    /// over the tables, each scaled by its own deviation) from the Gaussian one.
    fn worst_deviation(tables: &[Vec<f64>; 2]) -> f64 {
        let phi = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
        (0..38)
            .map(|i| 0.1 * 1.12f64.powi(i))
            .map(|l| {
                let n = 400;
                let step = 16.0 / n as f64;
                let gauss = (0..=n)
                    .map(|i| {
                        let z = -8.0 + i as f64 * step;
                        let w = if i == 0 || i == n {
                            1.0
                        } else {
                            [2.0, 4.0][i % 2]
                        };
                        w * phi(z) * h(l * z)
                    })
                    .sum::<f64>()
                    * step
                    / 3.0;
                let table = |t: &Vec<f64>| {
                    let sd = (t.iter().map(|m| m * m).sum::<f64>() / t.len() as f64).sqrt();
                    t.iter().map(|&m| h(l * m / sd)).sum::<f64>() / t.len() as f64
                };
                (2.0 * ((table(&tables[0]) + table(&tables[1])) / 2.0 - gauss)).abs()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn tables_halve_the_dominance_error_of_gaussian_bin_centroids() {
        let phi = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let quantile = |p: f64| {
            let (mut lo, mut hi) = (0.0, 10.0);
            for _ in 0..100 {
                let m = 0.5 * (lo + hi);
                if cdf(m) < p { lo = m } else { hi = m }
            }
            0.5 * (lo + hi)
        };
        // Centroids m_1 < … < m_8 of the upper 8 of 16 equiprobable bins: the odd ones in
        // one table, the even ones in the other.
        let q: Vec<f64> = (8..=16).map(|k| quantile(k as f64 / 16.0)).collect();
        let m: Vec<f64> = (0..8)
            .map(|k| 16.0 * (phi(q[k]) - if k == 7 { 0.0 } else { phi(q[k + 1]) }))
            .collect();
        assert!((m[7] - 1.9677).abs() < 1e-3);
        let centroids = [
            m.iter().step_by(2).copied().collect(),
            m.iter().skip(1).step_by(2).copied().collect(),
        ];
        let ours = [0, 1].map(|t| MAGNITUDES[t].iter().map(|&x| x as f64).collect());
        let (c, o) = (worst_deviation(&centroids), worst_deviation(&ours));
        eprintln!("largest deviation for λ ≤ 8: tables {o:.4}, centroids {c:.4}");
        assert!(o < 0.004 && c > 0.009, "tables {o}, centroids {c}");
        assert_eq!(TABLES[1][2], 0.6724);
        assert_eq!(TABLES[0][7], -1.6673);
    }

    #[test]
    fn columns_are_what_accumulate_adds() {
        let s = HashedGaussian::builder().bits(200).seed(3).build().unwrap();
        for i in [0u64, 1, 77, u64::MAX] {
            let mut acc = s.new_acc();
            s.accumulate(&[i], &[1.0], &mut acc);
            assert_eq!(&acc[..200], &s.column(i)[..]);
        }
    }
}
