//! Word embeddings → 256-bit super-bit signatures → verified similar pairs → clusters, two
//! ways: connected components, which chain, and leader clusters, which do not.
//!
//! `cargo run --release --example cluster_embeddings`
//!
//! The GloVe vectors in `datasets/glove-6B-50d-10k/` are signed with orthogonalised
//! hyperplanes; the verified self-join keeps every pair of words whose **exact** cosine is at
//! least τ = 0.8 (candidates from the signatures, checked against the vectors). Two words are
//! "similar" (A ≈ B) when they form such a pair.
//!
//! Similarity is not transitive: A ≈ B and B ≈ C do not make A ≈ C. Connected components
//! follow every edge, so chains A ≈ B ≈ C ≈ … merge words that are nothing alike: on this
//! sample one component holds most of the words that have any similar word. Leader (star)
//! clustering ([`leader_clusters`], as dedup tools group copies under a kept original) takes
//! words in order of their number of similar words; an unassigned word becomes a leader and
//! gathers its unassigned similar words. Every member is then at exact cosine ≥ τ from its
//! leader (checked below), and clusters stay small.
//!
//! The run prints (τ = 0.8, super-bit seed 7; under a second):
//!
//! ```text
//! 10000 words, 49533 pairs at exact cosine ≥ 0.8
//! connected components: largest 6038 words, 467 clusters of 2+ words
//! leader clusters:      largest 272 words, 1469 clusters of 2+ words; every member ≥ 0.8 from its leader
//! A ≈ B, B ≈ C, A ≉ C: believed ≈ thought (0.807), thought ≈ guess (0.807), believed ≉ guess (0.419): one component, 3 leader cluster(s)
//! ```
//!
//! followed by a few leader clusters (`[leader] members`). "believed" and "guess" share a
//! component through "thought" although their cosine is 0.42, and a component's chains bound
//! nothing. Two members of one leader cluster are each within τ of their leader, so at most
//! `2 · arccos τ` apart: cosine ≥ 2τ² − 1 = 0.28 between any two members.

use std::collections::BTreeMap;

use anyhow::{Result, ensure};
use simlsh::io::vecs::{VecsKind, read_vecs};
use simlsh::join::{LeaderOrder, Pair, clusters, leader_clusters};
use simlsh::signers::Distribution;
use simlsh::verify::{DenseVectors, Vectors, VerifiedJoin};
use simlsh::{HyperplaneSigner, Signer};

/// The similarity threshold: exact cosine.
const TAU: f64 = 0.8;

/// Cluster sizes from labels: label → members, in increasing order.
fn groups(labels: &[u32]) -> BTreeMap<u32, Vec<usize>> {
    let mut g: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, &l) in labels.iter().enumerate() {
        g.entry(l).or_default().push(i);
    }
    g
}

fn largest(g: &BTreeMap<u32, Vec<usize>>) -> usize {
    g.values().map(Vec::len).max().unwrap_or(0)
}

fn multi(g: &BTreeMap<u32, Vec<usize>>) -> usize {
    g.values().filter(|m| m.len() > 1).count()
}

fn main() -> Result<()> {
    let x = read_vecs(
        std::path::Path::new("datasets/glove-6B-50d-10k/vectors.fvecs"),
        VecsKind::F32,
    )?;
    let words: Vec<String> = std::fs::read_to_string("datasets/glove-6B-50d-10k/words.txt")?
        .lines()
        .map(String::from)
        .collect();
    let n = x.nrows();
    let bits = 256;
    let signer = HyperplaneSigner::builder()
        .dim(x.ncols() as u64)
        .bits(bits)
        .seed(7)
        .distribution(Distribution::SuperBit { depth: None })
        .build()?;
    let sigs = signer.sign_dense(&x)?;
    let vectors = DenseVectors::new(x.view())?;

    // Every pair at exact cosine ≥ τ (99% recall at τ from the signatures' candidates).
    let join = VerifiedJoin::planned(TAU, 0.99, bits, n)?;
    let (pairs, _) = join.pairs(&sigs, &vectors)?;
    println!("{n} words, {} pairs at exact cosine ≥ {TAU}", pairs.len());

    // Connected components: chains merge.
    let edges: Vec<Pair> = pairs
        .iter()
        .map(|p| Pair {
            i: p.i,
            j: p.j,
            distance: p.distance,
        })
        .collect();
    let comp = clusters(n, &edges)?;
    let components = groups(&comp);
    println!(
        "connected components: largest {} words, {} clusters of 2+ words",
        largest(&components),
        multi(&components)
    );

    // Leader clusters: every member verified against its leader.
    let labels = leader_clusters(n, pairs.iter().map(|p| (p.i, p.j)), LeaderOrder::Degree)?;
    for (i, &l) in labels.iter().enumerate() {
        let c = vectors.cosine(i, l as usize);
        ensure!(
            i == l as usize || c >= TAU,
            "{} is at cosine {c:.3} from its leader {}",
            words[i],
            words[l as usize]
        );
    }
    let leaders = groups(&labels);
    println!(
        "leader clusters:      largest {} words, {} clusters of 2+ words; every member ≥ {TAU} \
         from its leader",
        largest(&leaders),
        multi(&leaders)
    );

    // A ≈ B, B ≈ C, A ≉ C: among content words (5+ letters), the chain whose ends are least
    // alike.
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
    for p in &pairs {
        adj[p.i as usize].push(p.j);
        adj[p.j as usize].push(p.i);
    }
    let content =
        |i: usize| words[i].len() >= 5 && words[i].bytes().all(|c| c.is_ascii_lowercase());
    let triple = (0..n)
        .filter(|&b| content(b))
        .filter_map(|b| {
            let nb: Vec<u32> = adj[b]
                .iter()
                .copied()
                .filter(|&a| content(a as usize))
                .collect();
            let mut worst: Option<(f64, u32, u32)> = None;
            for (k, &a) in nb.iter().enumerate() {
                for &c in &nb[k + 1..] {
                    let ac = vectors.cosine(a as usize, c as usize);
                    if ac < TAU && worst.is_none_or(|w| ac < w.0) {
                        worst = Some((ac, a, c));
                    }
                }
            }
            worst.map(|(ac, a, c)| (a as usize, b, c as usize, ac))
        })
        .min_by(|x, y| x.3.total_cmp(&y.3));
    if let Some((a, b, c, ac)) = triple {
        ensure!(
            comp[a] == comp[b] && comp[b] == comp[c],
            "a chain is one component"
        );
        println!(
            "A ≈ B, B ≈ C, A ≉ C: {} ≈ {} ({:.3}), {} ≈ {} ({:.3}), {} ≉ {} ({ac:.3}): \
             one component, {} leader cluster(s)",
            words[a],
            words[b],
            vectors.cosine(a, b),
            words[b],
            words[c],
            vectors.cosine(b, c),
            words[a],
            words[c],
            [labels[a], labels[b], labels[c]]
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        );
    }

    // A few leader clusters of 4 to 12 words.
    let mut shown: Vec<&Vec<usize>> = leaders
        .values()
        .filter(|g| (4..=12).contains(&g.len()))
        .collect();
    shown.sort_by_key(|g| g[0]);
    for g in shown.iter().take(10) {
        let leader = labels[g[0]] as usize;
        println!(
            "  [{}] {}",
            words[leader],
            g.iter()
                .filter(|&&i| i != leader)
                .map(|&i| words[i].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(())
}
