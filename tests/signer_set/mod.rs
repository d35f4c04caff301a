//! Every signer kind, for the tests that run one property against all of them (`signers`,
//! `collision_law`).

use simlsh::signers::{AnySigner, Distribution, HashingTrick, HyperplaneSigner, PooledSigner};

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
