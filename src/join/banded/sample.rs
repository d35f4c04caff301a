//! The candidate rate of a banding measured on a sample of the signatures.

use super::*;

/// The candidate rate of a banding measured on a sample of the actual signatures, by
/// [`sample_candidates`].
#[derive(Clone, Debug, PartialEq)]
pub struct CandidateSample {
    /// Rows sampled.
    pub rows: usize,
    /// Candidate pairs among them (after the Hamming filter).
    pub candidates: u64,
    /// Candidates per pair of rows.
    pub rate: f64,
    /// The rate times the pairs of all rows: the expected candidates of the whole join.
    pub expected: f64,
}

/// Measures the candidate rate of `banding` on `sample` rows of `sigs` drawn without
/// replacement (seeded), by running the banded join on them: on real data, where pairs are
/// not random, this is the figure to compare with
/// [`background_candidates`](crate::estimate::background_candidates).
///
/// # Errors
/// As [`banded_join`]; [`Error::InvalidParameter`] if `sample < 2`.
pub fn sample_candidates<S: AsRef<[u64]> + Sync>(
    sigs: &SignatureMatrix<S>,
    banding: &Banding,
    sample: usize,
    seed: u64,
) -> Result<CandidateSample> {
    banding.check_sigs(sigs.bits())?;
    if sample < 2 {
        return Err(Error::param("sample", "at least 2 rows are needed"));
    }
    let n = sigs.len();
    let mut rows: Vec<u32> = (0..n as u32).collect();
    let s = sample.min(n);
    let mut rng = crate::rng::Rng::new(seed);
    for i in 0..s {
        let j = i + rng.below((n - i) as u64) as usize;
        rows.swap(i, j);
    }
    rows.truncate(s);
    rows.sort_unstable();
    let mut sub = SignatureMatrix::new(sigs.bits())?;
    for &r in &rows {
        sub.push_words(sigs.bits(), sigs.row(r as usize))?;
    }
    let stats = banded_join_each(&sub, banding, |_| {})?;
    let pairs = |m: usize| m as f64 * (m.max(1) - 1) as f64 / 2.0;
    let rate = if s < 2 {
        0.0
    } else {
        stats.candidates as f64 / pairs(s)
    };
    Ok(CandidateSample {
        rows: s,
        candidates: stats.candidates,
        rate,
        expected: rate * pairs(n),
    })
}
