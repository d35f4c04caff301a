//! The dominance test set: sparse vectors in which one or a few heavy coordinates are shared,
//! the data on which `±1` hashed columns (the hashing trick, Rademacher matrices) collide too
//! often. Generated bit-for-bit from [`stream`], with no transcendental
//! function (weights use `+ − × ÷` and `sqrt` only), so every machine builds the same set.
//!
//! **Why `±1` columns fail here.** A bit of the signature is the sign of `V = Σ_i x_i r_i`.
//! When a shared coordinate `c` carries weight `a` in both vectors and the rest is a
//! background of norm `b`, a `±1` entry `r_c` adds exactly `±a` to both projections: whenever
//! `a` exceeds the background's projection, the two signs agree, far more often than
//! `1 − θ/π`. A Gaussian `r_c` is often small, and then the backgrounds decide; that is what
//! makes the Gaussian law exact for every pair.
//!
//! Three families of pairs `(u, v)`:
//!
//! | family | `u`, `v` | cosine |
//! |---|---|---|
//! | [`Family::OneHeavy`] | one shared coordinate of weight `a` + disjoint Zipf backgrounds of 4–64 features (weights `1/(t+1)`) | `a²/(a² + b²)` = the target, up to `f32` rounding |
//! | [`Family::FewHeavy`] | three shared coordinates of weights `3a, 2a, a` + the same backgrounds | `14a²/(14a² + b²)` = the target |
//! | [`Family::Document`] | term counts of 200–1,000 tokens drawn from a heavy-tailed vocabulary (the most frequent word is 3% of all tokens), a fraction `target` of them shared | computed from the data |
//!
//! [`SparseVec::cosine`] gives every pair's exact cosine (in `f64`, of the stored `f32`
//! weights), from which its angle θ and the expected collision probability `1 − θ/π`.

use sprs::CsMatI;

use crate::{mix64, stream};

/// The target cosines of the pair cells ([`dominance_pairs`]).
pub const TARGETS: [f64; 5] = [0.3, 0.5, 0.7, 0.85, 0.95];

/// The three families of pairs (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// One shared heavy coordinate over disjoint heavy-tailed backgrounds.
    OneHeavy,
    /// Three shared heavy coordinates over disjoint heavy-tailed backgrounds.
    FewHeavy,
    /// Term counts of long documents sharing part of their tokens.
    Document,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 3] = [Family::OneHeavy, Family::FewHeavy, Family::Document];
}

/// A sparse vector: strictly increasing ids and their weights.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparseVec {
    /// Feature ids, strictly increasing.
    pub ids: Vec<u64>,
    /// Weights, one per id.
    pub weights: Vec<f32>,
}

impl SparseVec {
    /// From `(id, weight)` entries in any order; repeated ids add up (in `f64`, rounded once).
    pub fn from_entries(mut entries: Vec<(u64, f64)>) -> Self {
        entries.sort_by_key(|e| e.0);
        let mut v = SparseVec::default();
        let mut k = 0;
        while k < entries.len() {
            let id = entries[k].0;
            let mut w = 0.0;
            while k < entries.len() && entries[k].0 == id {
                w += entries[k].1;
                k += 1;
            }
            v.ids.push(id);
            v.weights.push(w as f32);
        }
        v
    }

    /// The exact cosine with `other`, in `f64` (0 if either is zero).
    pub fn cosine(&self, other: &SparseVec) -> f64 {
        let norm = |v: &SparseVec| v.weights.iter().map(|&w| f64::from(w).powi(2)).sum::<f64>();
        let (mut dot, mut i, mut j) = (0.0, 0, 0);
        while i < self.ids.len() && j < other.ids.len() {
            match self.ids[i].cmp(&other.ids[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    dot += f64::from(self.weights[i]) * f64::from(other.weights[j]);
                    i += 1;
                    j += 1;
                }
            }
        }
        let n = (norm(self) * norm(other)).sqrt();
        if n == 0.0 { 0.0 } else { dot / n }
    }
}

/// One pair of the set.
#[derive(Clone, Debug, PartialEq)]
pub struct DominancePair {
    /// Its family.
    pub family: Family,
    /// The cell's target: the cosine for [`Family::OneHeavy`] and [`Family::FewHeavy`], the
    /// shared fraction of tokens for [`Family::Document`].
    pub target: f64,
    /// First vector.
    pub u: SparseVec,
    /// Second vector.
    pub v: SparseVec,
}

impl DominancePair {
    /// The exact cosine of the pair.
    pub fn cosine(&self) -> f64 {
        self.u.cosine(&self.v)
    }
}

/// Counter-based draws of one stream.
struct Draws {
    s: u64,
    i: u64,
}

impl Draws {
    fn new(parts: &[u64]) -> Self {
        let s = parts
            .iter()
            .fold(0x646f_6d69_6e61_6e74, |h, &p| mix64(h ^ p)); // "dominant"
        Draws { s, i: 0 }
    }

    fn next(&mut self) -> u64 {
        self.i += 1;
        stream(self.s, self.i - 1)
    }

    /// Uniform in [0, 1), 53 bits.
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Ids of the synthetic families live below 2^40 (documents use their vocabulary ranks).
const ID_SPACE: u64 = 1 << 40;

/// `n` pairs of `family` at `target`, deterministic (pair `p` depends only on the family,
/// the target's bits and `p`).
pub fn dominance_pairs(family: Family, target: f64, n: usize) -> Vec<DominancePair> {
    (0..n)
        .map(|p| {
            let mut d = Draws::new(&[family as u64, target.to_bits(), p as u64]);
            let (u, v) = match family {
                Family::OneHeavy => heavy_pair(&mut d, target, &[1.0], p),
                Family::FewHeavy => heavy_pair(&mut d, target, &[3.0, 2.0, 1.0], p),
                Family::Document => {
                    let len = [200usize, 500, 1000][p % 3];
                    document_pair(&mut d, target, len)
                }
            };
            DominancePair {
                family,
                target,
                u,
                v,
            }
        })
        .collect()
}

/// Shared coordinates of weights `shape · a` over two disjoint Zipf backgrounds of equal
/// norm `b`, with `a` set so that the cosine is `target`.
fn heavy_pair(d: &mut Draws, target: f64, shape: &[f64], p: usize) -> (SparseVec, SparseVec) {
    let k = [4usize, 8, 16, 32, 64][p % 5];
    let bg: Vec<f64> = (0..k).map(|t| 1.0 / (t + 1) as f64).collect();
    let b2: f64 = bg.iter().map(|w| w * w).sum();
    let s2: f64 = shape.iter().map(|s| s * s).sum();
    let a = (target * b2 / (s2 * (1.0 - target))).sqrt();
    let base = d.next() % (ID_SPACE / 4);
    let mut u = Vec::new();
    let mut v = Vec::new();
    for &s in shape {
        let id = ID_SPACE / 2 + d.next() % (ID_SPACE / 2);
        u.push((id, s * a));
        v.push((id, s * a));
    }
    // Disjoint backgrounds: even and odd ids above `base`, in a random order of ranks.
    for (t, &w) in bg.iter().enumerate() {
        let jitter = 2 * (d.next() % 1024) * k as u64;
        u.push((base + 2 * t as u64 + jitter, w));
        v.push((base + 2 * t as u64 + 1 + jitter, w));
    }
    (SparseVec::from_entries(u), SparseVec::from_entries(v))
}

/// A token of the heavy-tailed vocabulary: rank `⌊2^20 · x⁴⌋` for uniform `x`, so rank 0
/// is `2^-5` of all tokens.
fn token(d: &mut Draws) -> u64 {
    let x = d.uniform();
    ((x * x) * (x * x) * (1u64 << 20) as f64) as u64
}

/// Two documents of `len` tokens sharing `⌊share · len⌋` of them, as term counts.
fn document_pair(d: &mut Draws, share: f64, len: usize) -> (SparseVec, SparseVec) {
    let shared = (share * len as f64) as usize;
    let common: Vec<u64> = (0..shared).map(|_| token(d)).collect();
    let doc = |d: &mut Draws| {
        let mut e: Vec<(u64, f64)> = common.iter().map(|&t| (t, 1.0)).collect();
        e.extend((shared..len).map(|_| (token(d), 1.0)));
        SparseVec::from_entries(e)
    };
    let u = doc(d);
    let v = doc(d);
    (u, v)
}

/// Dimension of [`dominance_corpus`]: its vocabulary.
pub const CORPUS_DIM: usize = 1 << 16;

/// A corpus of `n` documents for near-duplicate search, like e-mail from a few senders:
/// document `i` follows template `i mod ⌈n/40⌉`, whose boilerplate (a word of its own
/// repeated 12–20 times, the heavy coordinate, and 8 words once) it shares with its
/// template-mates, then adds
/// 20–400 tokens of content from a common vocabulary (rank `⌊2^16 · x²⌋` for uniform `x`);
/// every fifth document is an edited copy of the one before (each content token redrawn with
/// probability 1/10). Weights are term counts. Rows are CSR over [`CORPUS_DIM`] features.
///
/// Template-mates are at cosines from 0.3 to 0.9 according to their lengths, with their
/// shared boilerplate as the heavy part: where `±1` columns collide too often.
pub fn dominance_corpus(n: usize) -> CsMatI<f32, u32, usize> {
    let templates = n.div_ceil(40).max(1);
    let content = |d: &mut Draws| {
        let x = d.uniform();
        (x * x * CORPUS_DIM as f64) as u64
    };
    let boiler: Vec<Vec<(u64, f64)>> = (0..templates)
        .map(|t| {
            let mut d = Draws::new(&[0x7465_6d70, t as u64]);
            (0..9)
                .map(|k| {
                    let count = if k == 0 { 12 + d.next() % 9 } else { 1 };
                    (d.next() % CORPUS_DIM as u64, count as f64)
                })
                .collect()
        })
        .collect();
    let mut own: Vec<Vec<u64>> = Vec::with_capacity(n);
    for i in 0..n {
        let mut d = Draws::new(&[0x646f_6373, i as u64]);
        if i % 5 == 4 {
            let mut edited = own[i - 1].clone();
            for t in edited.iter_mut() {
                if d.next().is_multiple_of(10) {
                    *t = content(&mut d);
                }
            }
            own.push(edited);
        } else {
            let len = 20 + (d.next() % 381) as usize;
            own.push((0..len).map(|_| content(&mut d)).collect());
        }
    }
    let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
    for (i, own) in own.iter().enumerate() {
        // An edited copy keeps its original's template.
        let t = if i % 5 == 4 { i - 1 } else { i } % templates;
        let mut e = boiler[t].clone();
        e.extend(own.iter().map(|&r| (r, 1.0)));
        let v = SparseVec::from_entries(e);
        indices.extend(v.ids.iter().map(|&r| r as u32));
        data.extend(v.weights);
        indptr.push(indices.len());
    }
    CsMatI::new((n, CORPUS_DIM), indptr, indices, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_pairs_have_their_target_cosine_and_documents_are_long() {
        for family in [Family::OneHeavy, Family::FewHeavy] {
            for &t in &TARGETS {
                for p in dominance_pairs(family, t, 20) {
                    assert!(
                        (p.cosine() - t).abs() < 1e-6,
                        "{family:?} {t}: {}",
                        p.cosine()
                    );
                    assert!(p.u.ids.windows(2).all(|w| w[0] < w[1]));
                }
            }
        }
        for p in dominance_pairs(Family::Document, 0.5, 6) {
            let tokens: f32 = p.u.weights.iter().sum();
            assert!([200.0, 500.0, 1000.0].contains(&tokens));
            // The most frequent word repeats: a dominant coordinate.
            assert!(p.u.weights.iter().cloned().fold(0.0, f32::max) >= 4.0);
        }
        // Deterministic.
        assert_eq!(
            dominance_pairs(Family::Document, 0.3, 4),
            dominance_pairs(Family::Document, 0.3, 4)
        );
    }

    #[test]
    fn corpus_rows_are_sorted_and_copies_are_near_duplicates() {
        let c = dominance_corpus(200);
        assert_eq!(c.rows(), 200);
        let row = |i: usize| {
            let r = c.outer_view(i).unwrap();
            SparseVec {
                ids: r.indices().iter().map(|&x| x as u64).collect(),
                weights: r.data().to_vec(),
            }
        };
        for i in (4..200).step_by(5) {
            assert!(row(i).cosine(&row(i - 1)) > 0.8, "{i}");
        }
    }
}
