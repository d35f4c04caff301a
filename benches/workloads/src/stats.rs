//! Summaries of repeated measurements: a mean over runs (seeds) with its 95% interval, and
//! the median of timings.

/// A mean over runs with the half-width of its two-sided 95% interval (Student t with
/// `n − 1` degrees of freedom; half-width 0 for one run).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// The mean of the runs.
    pub mean: f64,
    /// Half-width of the 95% interval: the interval is `mean ± half`.
    pub half: f64,
}

impl Interval {
    /// The mean of `xs` and its 95% interval; `NaN` mean for no value.
    pub fn of(xs: &[f64]) -> Interval {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        if xs.len() < 2 {
            return Interval { mean, half: 0.0 };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Interval {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_matches_the_t_formula() {
        // Mean 2, sample variance 1, n = 3: half-width t(2)·sqrt(1/3) = 4.303 · 0.57735.
        let i = Interval::of(&[1.0, 2.0, 3.0]);
        assert_eq!(i.mean, 2.0);
        assert!((i.half - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(
            Interval::of(&[5.0]),
            Interval {
                mean: 5.0,
                half: 0.0
            }
        );
        assert_eq!(student_t_975(1000), 1.96);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 3.0);
        assert!(median(&[]).is_nan());
    }
}
