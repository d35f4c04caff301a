//! Summaries of repeated measurements: a mean over runs (seeds) with its 95% interval, and
//! the median of timings.

pub use simlsh::estimate::{MeanInterval as Interval, median, student_t_975};

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
