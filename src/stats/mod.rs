//! Statistics as pure functions over slices: summaries, paired ratios with confidence
//! intervals, the Wilcoxon signed-rank test, and the verdict. Nothing here knows about
//! databases, files or output, so each function is tested against independently computed
//! reference values.

mod family;
mod ratio;
mod share;
mod shift;
mod verdict;
mod wilcoxon;

pub use family::{holm, test_together};
pub use ratio::{paired_ratio, RatioEstimate, Test};
pub use share::{share_of_larger, ShareOfLarger};
pub use shift::{mean_shift, ratio_shift, Shift};
pub use verdict::{level, verdict, Rules, Verdict};
pub use wilcoxon::{fewest_for_significance, signed_rank_interval, signed_rank_p};

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Confidence level of the intervals dbvs reports where no study sets one.
pub const CONFIDENCE: f64 = 0.95;

/// The two-sided critical value of Student's t for `CONFIDENCE` and `df` degrees of freedom.
pub fn t_critical(df: f64) -> f64 {
    t_critical_at(df, CONFIDENCE)
}

/// The two-sided critical value of Student's t for `confidence` and `df` degrees of freedom.
pub fn t_critical_at(df: f64, confidence: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).expect("df > 0").inverse_cdf(0.5 + confidence / 2.0)
}

/// Two-sided p-value of the one-sample t-test that `xs` is centred on zero (1 when it
/// cannot be computed: fewer than two values).
pub fn t_test_p(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s = sd(xs);
    if xs.len() < 2 {
        return 1.0;
    }
    if s == 0.0 {
        return if mean(xs) == 0.0 { 1.0 } else { 0.0 };
    }
    let t = mean(xs) / (s / n.sqrt());
    2.0 * (1.0 - StudentsT::new(0.0, 1.0, n - 1.0).expect("df > 0").cdf(t.abs()))
}

/// Mean, median and a 95% t-interval of the mean.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub sd: f64,
    /// 95% confidence interval of the mean; equal to the mean when n < 2.
    pub ci: (f64, f64),
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n - 1 denominator); 0 for fewer than two values.
pub fn sd(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Summarizes a non-empty sample.
pub fn summarize(xs: &[f64]) -> Summary {
    assert!(!xs.is_empty(), "summarize needs at least one value");
    let (m, s, n) = (mean(xs), sd(xs), xs.len());
    let half = if n < 2 { 0.0 } else { t_critical((n - 1) as f64) * s / (n as f64).sqrt() };
    Summary { n, mean: m, median: median(xs), sd: s, ci: (m - half, m + half) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_test_matches_an_independent_computation() {
        // t = 1.841880 on 3 df, p = I_{3/(3+t^2)}(3/2, 1/2) = 0.162733 (the regularized
        // incomplete beta by Numerical Recipes' continued fraction, computed apart from statrs).
        assert!((t_test_p(&[0.01, 0.03, -0.005, 0.02]) - 0.162733).abs() < 1e-5);
        // The 99.5% point of t on 4 df, by bisection on that CDF: 4.604095.
        assert!((t_critical_at(4.0, 0.99) - 4.604095).abs() < 1e-5);
        assert_eq!(t_test_p(&[0.1]), 1.0);
    }

    #[test]
    fn t_critical_matches_tables() {
        // scipy.stats.t.ppf(0.975, df) for df = 1, 5, 30: 12.7062047, 2.5705818, 2.0422725.
        for (df, t) in [(1.0, 12.706204736), (5.0, 2.570581836), (30.0, 2.042272456)] {
            assert!((t_critical(df) - t).abs() < 1e-6, "df {df}");
        }
    }

    #[test]
    fn summary_matches_reference() {
        // Reference (numpy, scipy 1.17 stats.t.interval(0.95, 7, loc=mean, scale=sem)):
        // mean 5.0, median 4.5, sd 2.138089935, interval [3.212512, 6.787488].
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((s.n, s.mean, s.median), (8, 5.0, 4.5));
        assert!((s.sd - 2.138089935).abs() < 1e-9);
        assert!((s.ci.0 - 3.212512).abs() < 1e-5 && (s.ci.1 - 6.787488).abs() < 1e-5, "{:?}", s.ci);
    }

    #[test]
    fn single_value_has_a_degenerate_interval() {
        let s = summarize(&[3.0]);
        assert_eq!((s.sd, s.ci), (0.0, (3.0, 3.0)));
    }
}
