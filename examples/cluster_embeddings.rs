//! Word embeddings → 256-bit super-bit signatures → k-NN graph → clusters, printed as words.
//!
//! `cargo run --release --example cluster_embeddings`
//!
//! The GloVe vectors in `datasets/glove-6B-50d-10k/` are signed with orthogonalised
//! hyperplanes; the 10 nearest neighbours of every word are found by multi-index hashing on the
//! signatures; words linked by a mutual nearest-neighbour edge whose estimated cosine is at
//! least 0.8 form clusters (connected components).

use anyhow::Result;
use simlsh::index::{HammingIndex, MultiIndex};
use simlsh::io::vecs::{VecsKind, read_vecs};
use simlsh::join::{Pair, clusters};
use simlsh::signers::Distribution;
use simlsh::{HyperplaneSigner, Signer, estimate};

fn main() -> Result<()> {
    let x = read_vecs(
        std::path::Path::new("datasets/glove-6B-50d-10k/vectors.fvecs"),
        VecsKind::F32,
    )?;
    let words: Vec<String> = std::fs::read_to_string("datasets/glove-6B-50d-10k/words.txt")?
        .lines()
        .map(String::from)
        .collect();
    let bits = 256;
    let signer = HyperplaneSigner::builder()
        .dim(x.ncols() as u64)
        .bits(bits)
        .seed(7)
        .distribution(Distribution::SuperBit { depth: None })
        .build()?;
    let sigs = signer.sign_dense(&x)?;
    let index = MultiIndex::build(&sigs)?;
    let knn = index.knn_batch(sigs.as_slice(), 11)?;
    let max_h = estimate::max_hamming_for_cosine(0.8, bits as u64)? as u32;
    let near = |i: usize, j: u32| knn[i].iter().any(|h| h.id == j && h.distance <= max_h);
    let mut pairs = Vec::new();
    for (i, hits) in knn.iter().enumerate() {
        for h in hits.iter().filter(|h| h.id as usize > i) {
            if near(i, h.id) && near(h.id as usize, i as u32) {
                pairs.push(Pair {
                    i: i as u32,
                    j: h.id,
                    distance: h.distance,
                });
            }
        }
    }
    let labels = clusters(x.nrows(), &pairs)?;
    let mut groups: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, &l) in labels.iter().enumerate() {
        groups.entry(l).or_default().push(i);
    }
    let mut big: Vec<&Vec<usize>> = groups
        .values()
        .filter(|g| g.len() >= 4 && g.len() <= 12)
        .collect();
    big.sort_by_key(|g| g[0]);
    println!(
        "{} words, {} mutual-neighbour edges (cosine ≥ 0.8 estimated from {bits}-bit signatures), {} clusters of 2+ words",
        x.nrows(),
        pairs.len(),
        groups.values().filter(|g| g.len() > 1).count()
    );
    for g in big.iter().take(12) {
        println!(
            "  {}",
            g.iter()
                .map(|&i| words[i].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(())
}
