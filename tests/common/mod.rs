//! Shared helpers for the integration tests: seeded data and the list of all signers.
#![allow(dead_code)] // each test binary uses a different subset of these helpers

use simlsh::rng::Rng;
pub use simlsh::signers::AnySigner;
use simlsh::signers::{Distribution, HashingTrick, HyperplaneSigner, PooledSigner};

/// Every signer kind for dimension `dim`, width `bits`, seed `seed`.
pub fn all_signers(dim: u64, bits: usize, seed: u64) -> Vec<AnySigner> {
    let h = |d| {
        AnySigner::Hyperplane(
            HyperplaneSigner::builder()
                .dim(dim)
                .bits(bits)
                .seed(seed)
                .distribution(d)
                .build()
                .unwrap(),
        )
    };
    vec![
        h(Distribution::Gaussian),
        h(Distribution::Rademacher),
        h(Distribution::VerySparse { density: None }),
        h(Distribution::SuperBit { depth: None }),
        AnySigner::HashingTrick(
            HashingTrick::builder()
                .bits(bits)
                .seed(seed)
                .build()
                .unwrap(),
        ),
        AnySigner::Pooled(
            PooledSigner::builder()
                .bits(bits)
                .seed(seed)
                .build()
                .unwrap(),
        ),
    ]
}

/// A random sparse row: `nnz` distinct sorted ids below `dim`, Gaussian weights.
pub fn sparse_row(rng: &mut Rng, dim: u64, nnz: usize) -> (Vec<u64>, Vec<f32>) {
    let mut ids: Vec<u64> = (0..nnz).map(|_| rng.below(dim)).collect();
    ids.sort_unstable();
    ids.dedup();
    let w = ids.iter().map(|_| rng.gaussian() as f32).collect();
    (ids, w)
}

/// A pair of unit vectors in `dim` dimensions at exactly angle `theta` (radians), with a
/// uniformly random orientation.
pub fn pair_at_angle(rng: &mut Rng, dim: usize, theta: f64) -> (Vec<f32>, Vec<f32>) {
    let unit = |v: &mut Vec<f64>| {
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
    };
    let mut u: Vec<f64> = (0..dim).map(|_| rng.gaussian()).collect();
    unit(&mut u);
    let mut w: Vec<f64> = (0..dim).map(|_| rng.gaussian()).collect();
    let d: f64 = u.iter().zip(&w).map(|(a, b)| a * b).sum();
    w.iter_mut().zip(&u).for_each(|(x, a)| *x -= d * a);
    unit(&mut w);
    let v: Vec<f64> = u
        .iter()
        .zip(&w)
        .map(|(a, b)| theta.cos() * a + theta.sin() * b)
        .collect();
    (
        u.iter().map(|&x| x as f32).collect(),
        v.iter().map(|&x| x as f32).collect(),
    )
}

/// A random `bits`-bit code (padding bits zero).
pub fn random_code(rng: &mut Rng, bits: usize) -> Vec<u64> {
    let w = simlsh::signature::words_for(bits);
    let mut c: Vec<u64> = (0..w).map(|_| rng.next_u64()).collect();
    c[w - 1] &= simlsh::signature::last_word_mask(bits);
    c
}

/// `code` with exactly `min(d, bits)` distinct bits flipped.
pub fn flip(rng: &mut Rng, code: &[u64], bits: usize, d: usize) -> Vec<u64> {
    let mut c = code.to_vec();
    let mut done = std::collections::BTreeSet::new();
    while done.len() < d.min(bits) {
        let j = rng.below(bits as u64) as usize;
        if done.insert(j) {
            c[j / 64] ^= 1 << (j % 64);
        }
    }
    c
}
