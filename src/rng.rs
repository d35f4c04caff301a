//! Deterministic randomness and hashing: the only sources of pseudo-randomness behind any
//! signature, index or workload.
//!
//! Everything here is defined by integer arithmetic and IEEE-754 basic operations (`+ − × ÷`,
//! `sqrt`), all correctly rounded, so the same seed gives the same values on every platform,
//! compiler and release. Platform `libm` functions (`ln`, `exp`, `cos`), whose last bit may
//! differ between systems, are not used: [`ln`] is our own.
//!
//! - [`Rng`] wraps `rand_xoshiro::Xoshiro256PlusPlus`, of which only `next_u64` is used;
//!   conversions to floats and ranges are ours, so a change in `rand`'s sampling algorithms
//!   cannot change a signature.
//! - [`mix64`] is the SplitMix64 finaliser; [`hash_u64`] and [`hash_bytes`] are seeded XXH3-64
//!   of explicit little-endian bytes.

use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The golden-ratio increment of SplitMix64.
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finaliser: a bijective 64-bit mixer.
#[inline(always)]
pub const fn mix64(mut z: u64) -> u64 {
    z ^= z >> 30;
    z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 27;
    z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Word `k` (0-based) of the hash stream expanded from a 64-bit key: `mix64(key + (k+1)·GOLDEN)`.
#[inline(always)]
pub const fn expand(key: u64, k: u64) -> u64 {
    mix64(key.wrapping_add(k.wrapping_add(1).wrapping_mul(GOLDEN)))
}

/// Seeded XXH3-64 of an integer's 8 little-endian bytes.
#[inline(always)]
pub fn hash_u64(x: u64, seed: u64) -> u64 {
    xxh3_64_with_seed(&x.to_le_bytes(), seed)
}

/// The seed-dependent constant of XXH3-64 for 4- to 8-byte inputs, so that [`xxh3_u64`] can
/// hash many integers with one seed without recomputing it.
pub const fn xxh3_u64_flip(seed: u64) -> u64 {
    // Bytes 8..16 and 16..24 of XXH3's default secret, little-endian.
    const S8: u64 = 0x1cad_21f7_2c81_017c;
    const S16: u64 = 0xdb97_9083_e96d_d4de;
    let seed = seed ^ (((seed as u32).swap_bytes() as u64) << 32);
    (S8 ^ S16).wrapping_sub(seed)
}

/// Seeded XXH3-64 of `x`'s 8 little-endian bytes, given `flip = xxh3_u64_flip(seed)`: the
/// same value as [`hash_u64`]`(x, seed)` (XXH3's 4-to-8-byte path, specialised to 8 bytes).
#[inline(always)]
pub const fn xxh3_u64(x: u64, flip: u64) -> u64 {
    const PRIME_MX2: u64 = 0x9FB2_1C65_1E98_DF25;
    // input64 = high 32 bits + (low 32 bits << 32), i.e. x rotated by 32.
    let mut h = x.rotate_left(32) ^ flip;
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(PRIME_MX2);
    h ^= (h >> 35).wrapping_add(8);
    h = h.wrapping_mul(PRIME_MX2);
    h ^ (h >> 28)
}

/// Seeded XXH3-64 of a byte string.
#[inline(always)]
pub fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(bytes, seed)
}

/// Natural logarithm of a positive finite `x`, from basic IEEE operations only, so that it is
/// bit-identical on every platform (accurate to a few ulps).
pub fn ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // fdlibm's split of ln 2
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    // Split x = m · 2^e with m in [sqrt(1/2), sqrt(2)).
    let (mut x, mut e) = (x, 0i64);
    if x < f64::MIN_POSITIVE {
        x *= 2f64.powi(54);
        e -= 54;
    }
    let bits = x.to_bits();
    e += ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    // ln m = 2 atanh(s) = 2 (s + s³/3 + s⁵/5 + …), s = (m − 1)/(m + 1), |s| < 0.172: the
    // terms up to s²³/23 leave a relative error below 1e-19. Horner form, fixed operations.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut poly = 1.0 / 23.0;
    for k in (1..=11).rev() {
        poly = poly * s2 + 1.0 / (2 * k - 1) as f64;
    }
    let sum = s * poly;
    let e = e as f64;
    e * LN2_HI + (2.0 * sum + e * LN2_LO)
}

/// The seeded generator behind every random matrix and pool: Xoshiro256++ seeded by
/// `seed_from_u64`, with our own platform-independent conversions.
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1), 53 bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `0..n` (Lemire's multiply-shift with rejection; exact).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            if (m as u64) >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// A standard normal sample (Marsaglia's polar method with [`ln`]).
    pub fn gaussian(&mut self) -> f64 {
        loop {
            let u = 2.0 * self.uniform() - 1.0;
            let v = 2.0 * self.uniform() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                return u * (-2.0 * ln(s) / s).sqrt();
            }
        }
    }

    /// The number of failures before the first success of a Bernoulli(`p`) sequence
    /// (geometric, for skipping through very sparse matrices).
    pub fn geometric(&mut self, p: f64) -> u64 {
        if p >= 1.0 {
            return 0;
        }
        let u = 1.0 - self.uniform(); // in (0, 1]
        let g = (ln(u) / ln(1.0 - p)).floor();
        if g >= u64::MAX as f64 {
            u64::MAX
        } else {
            g as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_matches_std_to_a_few_ulps() {
        let mut r = Rng::new(1);
        for _ in 0..100_000 {
            let e = (r.below(600) as i32) - 300;
            let x = (r.uniform() + 1e-300) * 10f64.powi(e);
            let (a, b) = (ln(x), x.ln());
            assert!(
                (a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1.0),
                "{x}: {a} vs {b}"
            );
        }
        assert_eq!(ln(1.0), 0.0);
        assert!((ln(f64::MIN_POSITIVE / 8.0) - (f64::MIN_POSITIVE / 8.0).ln()).abs() < 1e-12);
    }

    #[test]
    fn specialised_xxh3_equals_the_library() {
        let mut r = Rng::new(11);
        for _ in 0..20_000 {
            let (x, seed) = (r.next_u64(), r.next_u64());
            assert_eq!(xxh3_u64(x, xxh3_u64_flip(seed)), hash_u64(x, seed));
        }
        for x in [0, 1, u64::MAX, 1 << 32] {
            assert_eq!(xxh3_u64(x, xxh3_u64_flip(0)), hash_u64(x, 0));
        }
    }

    #[test]
    fn gaussian_moments_within_sampling_error() {
        let mut r = Rng::new(7);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| r.gaussian()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        // 5 standard errors: SE(mean) = 1/sqrt(n), SE(var) = sqrt(2/n).
        assert!(mean.abs() < 5.0 / (n as f64).sqrt(), "mean {mean}");
        assert!(
            (var - 1.0).abs() < 5.0 * (2.0 / n as f64).sqrt(),
            "var {var}"
        );
        // P(|Z| > 1.96) = 0.05, binomial SE sqrt(0.05·0.95/n).
        let tail = xs.iter().filter(|x| x.abs() > 1.959_963_985).count() as f64 / n as f64;
        assert!(
            (tail - 0.05).abs() < 5.0 * (0.05 * 0.95 / n as f64).sqrt(),
            "tail {tail}"
        );
    }

    #[test]
    fn golden_values_never_change() {
        // Pinned: any change here changes every signature built from a seed.
        let mut r = Rng::new(42);
        let v: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let g = Rng::new(42).gaussian();
        assert_eq!(format!("{v:?} {g:e}"), GOLDEN_RNG);
        assert_eq!(hash_u64(12345, 9), GOLDEN_HASH);
    }

    const GOLDEN_RNG: &str =
        "[15021278609987233951, 5881210131331364753, 18149643915985481100] 9.813983900724986e-1";
    const GOLDEN_HASH: u64 = 5_116_629_970_867_876_933;
}
