//! Random codes and codes at a chosen Hamming distance, for the index tests (`conformance`,
//! `manku`, `mih`).

use simlsh::rng::Rng;

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
