//! The verified self-join: candidates from signatures, kept only at exact cosine ≥ τ.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::Vectors;
use crate::error::{Error, Result};
use crate::estimate::{JoinPlan, JoinPlanner, check_cosine};
use crate::join::{CappedGroup, Pair, Scheme, banded_join_map, self_join_map};
use crate::signature::SignatureMatrix;

/// A pair of rows whose exact cosine reaches the threshold: `i < j`. Ordered by `(i, j)` in
/// [`VerifiedJoin::pairs`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VerifiedPair {
    /// The smaller row number.
    pub i: u32,
    /// The larger row number.
    pub j: u32,
    /// Hamming distance of their signatures.
    pub distance: u32,
    /// Their exact cosine (from [`Vectors::cosine`]).
    pub cosine: f64,
}

/// What a verified join found besides its pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Rows of norm 0 (empty documents, all-zero vectors), never paired, in increasing order.
    pub zero_rows: Vec<u32>,
    /// Candidate pairs whose exact cosine was computed.
    pub candidates: u64,
    /// Pairs kept (exact cosine ≥ τ).
    pub pairs: u64,
    /// Runs of equal band keys skipped for their size (banded candidates only).
    pub capped: Vec<CappedGroup>,
}

/// The verified self-join: candidate pairs from the signatures (a [`Scheme`]), each kept
/// only if the exact cosine of its vectors is ≥ τ, with that cosine. Rows of norm 0 are
/// never paired and are reported apart. Results stream to a sink as they are found
/// ([`run`](Self::run)), in parallel with a deterministic order; [`pairs`](Self::pairs)
/// collects them.
///
/// The answer is exact for the pairs the candidates contain: its recall is the candidates'
/// recall at τ, planned by [`JoinPlanner`] ([`VerifiedJoin::planned`]).
///
/// ```
/// use simlsh::join::Scheme;
/// use simlsh::verify::{DenseVectors, VerifiedJoin};
/// use simlsh::{HyperplaneSigner, Signer};
/// use ndarray::array;
///
/// let x = array![[1.0f32, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]];
/// let sigs = HyperplaneSigner::builder().dim(3).bits(256).seed(1).build()?.sign_dense(&x)?;
/// let vectors = DenseVectors::new(x.view())?;
/// let join = VerifiedJoin::builder()
///     .threshold(0.95)
///     .candidates(Scheme::Radius { radius: 64 })
///     .build()?;
/// let (pairs, report) = join.pairs(&sigs, &vectors)?;
/// assert_eq!((pairs.len(), pairs[0].i, pairs[0].j), (1, 0, 1));
/// assert!((pairs[0].cosine - 0.9 / 0.81f64.sqrt().hypot(0.1)).abs() < 1e-6);
/// assert_eq!(report.zero_rows, vec![3]);
/// # Ok::<(), simlsh::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct VerifiedJoin {
    threshold: f64,
    candidates: Scheme,
}

/// Builder of a [`VerifiedJoin`]: the threshold and the candidates are required.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VerifiedJoinBuilder {
    threshold: Option<f64>,
    candidates: Option<Scheme>,
}

impl VerifiedJoinBuilder {
    /// The cosine threshold τ, in [−1, 1]: pairs with exact cosine ≥ τ are kept.
    pub fn threshold(mut self, t: f64) -> Self {
        self.threshold = Some(t);
        self
    }

    /// Where the candidates come from.
    pub fn candidates(mut self, c: Scheme) -> Self {
        self.candidates = Some(c);
        self
    }

    /// Validates the settings.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a missing or out-of-range threshold, or missing
    /// candidates.
    pub fn build(self) -> Result<VerifiedJoin> {
        let t = self
            .threshold
            .ok_or_else(|| Error::param("threshold", "a cosine threshold is required"))?;
        let threshold = check_cosine("threshold", t)?;
        let candidates = self.candidates.ok_or_else(|| {
            Error::param(
                "candidates",
                "a candidate source (Hamming radius or banding) is required",
            )
        })?;
        Ok(VerifiedJoin {
            threshold,
            candidates,
        })
    }
}

impl VerifiedJoin {
    /// A builder.
    pub fn builder() -> VerifiedJoinBuilder {
        VerifiedJoinBuilder::default()
    }

    /// The join the [`JoinPlanner`] chooses for `n` rows of `bits`-bit signatures, threshold
    /// `t` and recall target `recall` at the threshold: the exact Hamming join at the radius
    /// reaching the target, or the banding reaching it, whichever is expected to be cheaper.
    /// [`from_plan`](Self::from_plan) of that plan.
    ///
    /// # Errors
    /// The planner's.
    pub fn planned(t: f64, recall: f64, bits: usize, n: usize) -> Result<Self> {
        let plan = JoinPlanner::new(t)
            .recall(recall)
            .rows(n as u64)
            .bits(bits)
            .plan()?;
        Self::from_plan(t, &plan)
    }

    /// The join of a plan made for the threshold `t` ([`JoinPlan::scheme`]): the plan is
    /// made once (choosing the width before signing) and the join follows it.
    ///
    /// ```
    /// use simlsh::estimate::JoinPlanner;
    /// use simlsh::verify::VerifiedJoin;
    ///
    /// // 300,000 rows of 40 features at cosine 0.8: the width and the join in one plan.
    /// let plan = JoinPlanner::new(0.8).rows(300_000).features(40.0).plan()?;
    /// let join = VerifiedJoin::from_plan(0.8, &plan)?;
    /// assert_eq!(join.candidates(), &plan.scheme()?);
    /// assert_eq!(join.candidates().bits(), Some(plan.bits));
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a threshold outside [−1, 1]; the plan's
    /// [`scheme`](JoinPlan::scheme).
    pub fn from_plan(t: f64, plan: &JoinPlan) -> Result<Self> {
        VerifiedJoin::builder()
            .threshold(t)
            .candidates(plan.scheme()?)
            .build()
    }

    /// The join of the threshold `t` over `n` rows of `bits`-bit signatures with candidates
    /// from `scheme`, or, without one, from the plan for the `recall` target (the planner's
    /// default, [`DEFAULT_RECALL`](crate::estimate::DEFAULT_RECALL), when `None`): what every
    /// front end asks for.
    ///
    /// ```
    /// use simlsh::join::Scheme;
    /// use simlsh::verify::VerifiedJoin;
    ///
    /// let given = VerifiedJoin::scheme_or_planned(0.9, 64, 1000, Some(Scheme::Radius { radius: 5 }), None)?;
    /// assert_eq!(given.candidates(), &Scheme::Radius { radius: 5 });
    /// let planned = VerifiedJoin::scheme_or_planned(0.9, 64, 1000, None, Some(0.95))?;
    /// assert_eq!(planned, VerifiedJoin::planned(0.9, 0.95, 64, 1000)?);
    /// assert!(VerifiedJoin::scheme_or_planned(0.9, 64, 1000, Some(Scheme::Radius { radius: 5 }), Some(0.9)).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when both a scheme and a recall are given; as
    /// [`planned`](Self::planned) and the builder.
    pub fn scheme_or_planned(
        t: f64,
        bits: usize,
        n: usize,
        scheme: Option<Scheme>,
        recall: Option<f64>,
    ) -> Result<Self> {
        match (scheme, recall) {
            (Some(_), Some(_)) => Err(Error::param(
                "recall",
                "give a scheme or a recall target (the planner chooses the scheme), not both",
            )),
            (Some(s), None) => VerifiedJoin::builder().threshold(t).candidates(s).build(),
            (None, r) => {
                let mut p = JoinPlanner::new(t).rows(n.max(2) as u64).bits(bits);
                if let Some(r) = r {
                    p = p.recall(r);
                }
                Self::from_plan(t, &p.plan()?)
            }
        }
    }

    /// The threshold τ.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The candidate source.
    pub fn candidates(&self) -> &Scheme {
        &self.candidates
    }

    /// Runs the join: every verified pair goes to `sink` as it is found (candidates are
    /// generated and verified in parallel; pairs arrive table by table or band by band, in an
    /// order that does not depend on the number of threads). No candidate or pair list is
    /// held beyond one table's or a few bands' verified pairs.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `sigs` and `vectors` have different numbers of rows;
    /// [`Error::BitsMismatch`] if a banding is for another width; [`Error::InvalidParameter`]
    /// for more than `2^32` rows.
    pub fn run<S, V>(
        &self,
        sigs: &SignatureMatrix<S>,
        vectors: &V,
        mut sink: impl FnMut(VerifiedPair),
    ) -> Result<VerifyReport>
    where
        S: AsRef<[u64]> + Sync,
        V: Vectors,
    {
        if sigs.len() != vectors.len() {
            return Err(Error::LengthMismatch {
                what: "signatures vs vectors",
                left: sigs.len(),
                right: vectors.len(),
            });
        }
        let active: Vec<bool> = (0..vectors.len())
            .into_par_iter()
            .map(|i| !vectors.is_zero(i))
            .collect();
        let zero_rows: Vec<u32> = (0..active.len() as u32)
            .filter(|&i| !active[i as usize])
            .collect();
        let candidates = AtomicU64::new(0);
        let t = self.threshold;
        let verify = |p: Pair| {
            candidates.fetch_add(1, Ordering::Relaxed);
            let c = vectors.cosine(p.i as usize, p.j as usize);
            (c >= t).then_some(VerifiedPair {
                i: p.i,
                j: p.j,
                distance: p.distance,
                cosine: c,
            })
        };
        let mut kept = 0u64;
        let count = |p: VerifiedPair| {
            kept += 1;
            sink(p);
        };
        let capped = self.scan(sigs, &active, None, verify, count)?;
        Ok(VerifyReport {
            zero_rows,
            candidates: candidates.into_inner(),
            pairs: kept,
            capped,
        })
    }

    /// The candidate pairs of the active rows of `sigs`, each mapped by `map` (in parallel),
    /// the kept ones given to `sink` in the join's order (which does not depend on the number
    /// of threads); the band runs skipped for their size. Bands are sorted by chunks of at most
    /// `band_bytes` when given ([`crate::join::band_chunk`]).
    pub(super) fn scan<S, T, M, K>(
        &self,
        sigs: &SignatureMatrix<S>,
        active: &[bool],
        band_bytes: Option<u64>,
        map: M,
        sink: K,
    ) -> Result<Vec<CappedGroup>>
    where
        S: AsRef<[u64]> + Sync,
        T: Send,
        M: Fn(Pair) -> Option<T> + Sync,
        K: FnMut(T),
    {
        match &self.candidates {
            Scheme::Radius { radius } => {
                self_join_map(sigs, *radius, Some(active), map, sink)?;
            }
            Scheme::Tables(t) => {
                self.candidates.check_bits(sigs.bits())?;
                self_join_map(sigs, t.radius(), Some(active), map, sink)?;
            }
            Scheme::Bands(b) => {
                return Ok(banded_join_map(sigs, b, Some(active), band_bytes, map, sink)?.capped);
            }
        }
        Ok(Vec::new())
    }

    /// [`run`](Self::run), collecting the pairs sorted by `(i, j)`.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn pairs<S, V>(
        &self,
        sigs: &SignatureMatrix<S>,
        vectors: &V,
    ) -> Result<(Vec<VerifiedPair>, VerifyReport)>
    where
        S: AsRef<[u64]> + Sync,
        V: Vectors,
    {
        let mut pairs = Vec::new();
        let report = self.run(sigs, vectors, |p| pairs.push(p))?;
        pairs.par_sort_unstable_by_key(|p| (p.i, p.j));
        Ok((pairs, report))
    }
}
