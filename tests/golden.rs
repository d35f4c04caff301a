//! Golden signatures: fixed seeds and inputs give these exact words on every platform,
//! thread count and release. A change here is a breaking change of every stored signature.

use simlsh::signers::{
    Distribution, FwhtSigner, HashedGaussian, HashingTrick, HyperplaneSigner, PooledSigner,
};
use simlsh::{Signature, Signer};

const IDS: [u64; 5] = [0, 3, 17, 40, 99];
const WEIGHTS: [f32; 5] = [1.0, -2.5, 0.25, 3.0, 0.75];

fn hex(s: &Signature) -> String {
    s.to_string()
}

fn hyper(d: Distribution, bits: usize) -> HyperplaneSigner {
    HyperplaneSigner::builder()
        .dim(100)
        .bits(bits)
        .seed(42)
        .distribution(d)
        .build()
        .unwrap()
}

#[test]
fn golden_signatures_of_every_signer() {
    let signers: Vec<(&str, Box<dyn Signer>)> = vec![
        ("gaussian", Box::new(hyper(Distribution::Gaussian, 130))),
        ("rademacher", Box::new(hyper(Distribution::Rademacher, 130))),
        (
            "very-sparse",
            Box::new(hyper(Distribution::VerySparse { density: Some(0.3) }, 130)),
        ),
        (
            "super-bit",
            Box::new(hyper(Distribution::SuperBit { depth: None }, 130)),
        ),
        (
            "hashing-trick",
            Box::new(HashingTrick::builder().bits(130).seed(42).build().unwrap()),
        ),
        (
            "pooled",
            Box::new(PooledSigner::builder().bits(130).seed(42).build().unwrap()),
        ),
        (
            "hashed-gaussian",
            Box::new(
                HashedGaussian::builder()
                    .bits(130)
                    .seed(42)
                    .build()
                    .unwrap(),
            ),
        ),
    ];
    let got: Vec<String> = signers
        .iter()
        .map(|(name, s)| format!("{name} {}", hex(&s.sign_sparse(&IDS, &WEIGHTS).unwrap())))
        .collect();
    assert_eq!(got, GOLDEN_SPARSE);
}

#[test]
fn golden_token_signatures() {
    let tokens = ["near", "duplicate", "detection", "近似", "重复"];
    let w = [1.0, 2.0, 0.5, 1.5, -1.0];
    let ht = HashingTrick::builder().bits(64).seed(7).build().unwrap();
    let pooled = PooledSigner::builder().bits(64).seed(7).build().unwrap();
    let hg = HashedGaussian::builder().bits(64).seed(7).build().unwrap();
    let got = [
        hex(&ht.sign_tokens(&tokens, &w).unwrap()),
        hex(&pooled.sign_tokens(&tokens, &w).unwrap()),
        hex(&hg.sign_tokens(&tokens, &w).unwrap()),
    ];
    assert_eq!(got, GOLDEN_TOKENS);
}

/// The structured-rotation signer: one rotation of the default 1024 buckets, three of 64
/// (the last one partial), and tokens.
#[test]
fn golden_fwht_signatures() {
    let fwht = |bits, d| {
        FwhtSigner::builder()
            .bits(bits)
            .buckets(d)
            .seed(42)
            .build()
            .unwrap()
    };
    let tokens = ["near", "duplicate", "detection", "近似", "重复"];
    let w = [1.0, 2.0, 0.5, 1.5, -1.0];
    let got = [
        hex(&fwht(130, 1024).sign_sparse(&IDS, &WEIGHTS).unwrap()),
        hex(&fwht(130, 64).sign_sparse(&IDS, &WEIGHTS).unwrap()),
        hex(&fwht(64, 1024).sign_tokens(&tokens, &w).unwrap()),
    ];
    assert_eq!(got, GOLDEN_FWHT);
}

const GOLDEN_FWHT: [&str; 3] = [
    "00000000000000018b704fbee0d7d1ce56c5b78e98783d1d",
    "000000000000000033a706fac29ef567181b2ece0728c0fd",
    "54414be2de8a85a6",
];

const GOLDEN_SPARSE: [&str; 7] = [
    "gaussian 0000000000000001fad005a12157fc6529da4b493b2438c7",
    "rademacher 0000000000000003776358402c4aa513a04f68db3a249620",
    "very-sparse 0000000000000000d28403306456ae0bc7033ea434638d15",
    "super-bit 0000000000000001bad01dad19391e652cfa4d5d07a63845",
    "hashing-trick 0000000000000001547a397e9d24485b07aa78190bbc9c33",
    "pooled 0000000000000002bd043216424ad32a2cc62d30c3f4a254",
    "hashed-gaussian 0000000000000002461406558324ee4b848db321c053607e",
];
const GOLDEN_TOKENS: [&str; 3] = ["801006fded7a2288", "d141439525eeb120", "03d0878ee427680b"];
