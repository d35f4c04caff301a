//! Checks of measured signatures against the model: the quality check (the RMSE of
//! `hamming / f` against `angle / π` beside the RMSE a correct random-hyperplane hash
//! would show), and summaries of repeated measurements (a mean over seeds with its 95%
//! interval, a median).

use crate::error::{Error, Result};

/// Result of the signature quality check (see [`quality_check`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QualityCheck {
    /// Root mean square of `hamming / f - angle / pi` over the pairs.
    pub rmse: f64,
    /// The RMSE expected of a correct random-hyperplane hash: `sqrt(mean(p (1 - p) / f))`
    /// with `p = angle / pi`.
    pub ideal_rmse: f64,
}

/// The published quality check: given the exact cosines of row pairs and the Hamming
/// distances of their `bits`-bit signatures, the RMSE of `hamming / bits` against
/// `angle / pi`, beside the ideal RMSE of a correct random-hyperplane hash.
///
/// # Errors
///
/// [`Error::LengthMismatch`] if the slices differ in length, [`Error::InvalidParameter`] if
/// they are empty, `bits` is 0, or a cosine is not finite.
pub fn quality_check(cosines: &[f64], hamming: &[u32], bits: usize) -> Result<QualityCheck> {
    if cosines.len() != hamming.len() {
        return Err(Error::LengthMismatch {
            what: "quality_check: cosines and hamming distances",
            left: cosines.len(),
            right: hamming.len(),
        });
    }
    if cosines.is_empty() {
        return Err(Error::param("cosines", "no pairs"));
    }
    if bits == 0 {
        return Err(Error::param("bits", "must be positive"));
    }
    if let Some(c) = cosines.iter().find(|c| !c.is_finite()) {
        return Err(Error::param("cosines", format!("{c} is not finite")));
    }
    let f = bits as f64;
    let (mut se, mut var) = (0.0, 0.0);
    for (&c, &h) in cosines.iter().zip(hamming) {
        let p = c.clamp(-1.0, 1.0).acos() / std::f64::consts::PI;
        se += (f64::from(h) / f - p).powi(2);
        var += p * (1.0 - p) / f;
    }
    let n = cosines.len() as f64;
    Ok(QualityCheck {
        rmse: (se / n).sqrt(),
        ideal_rmse: (var / n).sqrt(),
    })
}

/// A mean over runs with the half-width of its two-sided 95% interval (Student t with
/// `n − 1` degrees of freedom; half-width 0 for one run).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanInterval {
    /// The mean of the runs.
    pub mean: f64,
    /// Half-width of the 95% interval: the interval is `mean ± half`.
    pub half: f64,
}

impl MeanInterval {
    /// The mean of `xs` and its 95% interval; `NaN` mean for no value.
    pub fn of(xs: &[f64]) -> MeanInterval {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        if xs.len() < 2 {
            return MeanInterval { mean, half: 0.0 };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        MeanInterval {
            mean,
            half: student_t_975(xs.len() - 1) * (var / n).sqrt(),
        }
    }
}

/// The 97.5% quantile of Student's t with `df ≥ 1` degrees of freedom (two-sided 95%
/// interval); the normal quantile 1.96 beyond 30.
pub fn student_t_975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.saturating_sub(1)).copied().unwrap_or(1.96)
}

/// The median of `xs` (the upper one for an even count); `NaN` for no value.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
