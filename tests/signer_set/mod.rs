//! Every signer kind, for the tests that run one property against all of them (`signers`,
//! `collision_law`, `spec`).

use simlsh::signers::{AnySigner, SignerKind, SignerSpec};

/// One spec of every kind, with default parameters (width 64, seed 0).
pub fn all_specs() -> Vec<SignerSpec> {
    [
        SignerKind::Gaussian,
        SignerKind::Rademacher,
        SignerKind::VerySparse {
            density: None,
            nnz: None,
        },
        SignerKind::SuperBit { depth: None },
        SignerKind::HashingTrick,
        SignerKind::Pooled { pool: 10_000 },
        SignerKind::HashedGaussian,
        // The default 1024 buckets (several rotations: golden values and its unit tests).
        SignerKind::Fwht { buckets: 1024 },
    ]
    .into_iter()
    .map(SignerSpec::new)
    .collect()
}

/// Every signer kind for dimension `dim`, width `bits`, seed `seed`.
pub fn all_signers(dim: u64, bits: usize, seed: u64) -> Vec<AnySigner> {
    all_specs()
        .into_iter()
        .map(|s| s.bits(bits).seed(seed).build(Some(dim)).unwrap())
        .collect()
}
