//! Turning a ratio estimate into words, the way criterion does: a change must be both
//! statistically significant and larger than the noise threshold on its whole interval.

use super::RatioEstimate;
use serde::Serialize;

/// Significance level of the signed-rank test.
pub const ALPHA: f64 = 0.05;
/// Changes whose whole 95% interval lies within this of 1.0 are called noise (criterion's
/// default noise threshold).
pub const NOISE: f64 = 0.01;

#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Worse by `pct` percent, with the 95% interval of that percentage.
    Slower {
        pct: f64,
        ci_pct: (f64, f64),
    },
    Faster {
        pct: f64,
        ci_pct: (f64, f64),
    },
    NoSignificantDifference {
        reason: String,
    },
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Slower { pct, ci_pct } => {
                write!(f, "slower by {pct:.1}% [95% CI {:.1}%, {:.1}%]", ci_pct.0, ci_pct.1)
            }
            Verdict::Faster { pct, ci_pct } => {
                write!(f, "faster by {pct:.1}% [95% CI {:.1}%, {:.1}%]", ci_pct.0, ci_pct.1)
            }
            Verdict::NoSignificantDifference { reason } => write!(f, "no significant difference ({reason})"),
        }
    }
}

/// `est` is variant / baseline of a metric; `higher_is_better` says which way is faster
/// (true for throughput, false for latency or seconds).
pub fn verdict(est: &RatioEstimate, higher_is_better: bool) -> Verdict {
    if est.p_value >= ALPHA {
        return Verdict::NoSignificantDifference { reason: format!("p = {:.3} >= {ALPHA}", est.p_value) };
    }
    // Express everything as "how much better": >1 is better for the variant.
    let (better, lo, hi) = if higher_is_better {
        (est.ratio, est.ci.0, est.ci.1)
    } else {
        (1.0 / est.ratio, 1.0 / est.ci.1, 1.0 / est.ci.0)
    };
    let pct = |x: f64| 100.0 * (x - 1.0).abs();
    if hi < 1.0 - NOISE {
        Verdict::Slower { pct: pct(better), ci_pct: (pct(hi), pct(lo)) }
    } else if lo > 1.0 + NOISE {
        Verdict::Faster { pct: pct(better), ci_pct: (pct(lo), pct(hi)) }
    } else {
        Verdict::NoSignificantDifference {
            reason: format!(
                "p = {:.3}, but the interval reaches within {:.0}% of no change",
                est.p_value,
                100.0 * NOISE
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(ratio: f64, ci: (f64, f64), p: f64) -> RatioEstimate {
        RatioEstimate { n: 8, ratio, ci, bootstrap_ci: ci, p_value: p }
    }

    #[test]
    fn throughput_down_is_slower() {
        let v = verdict(&est(0.90, (0.88, 0.92), 0.01), true);
        assert_eq!(v.to_string(), "slower by 10.0% [95% CI 8.0%, 12.0%]");
    }

    #[test]
    fn latency_down_is_faster() {
        let v = verdict(&est(0.80, (0.78, 0.82), 0.01), false);
        let Verdict::Faster { pct, ci_pct } = v else { panic!("{v:?}") };
        assert!((pct - 25.0).abs() < 1e-9 && ci_pct.0 < pct && pct < ci_pct.1);
    }

    #[test]
    fn insignificant_or_tiny_changes_are_no_difference() {
        assert!(matches!(verdict(&est(0.90, (0.8, 1.0), 0.2), true), Verdict::NoSignificantDifference { .. }));
        let v = verdict(&est(0.995, (0.992, 0.998), 0.01), true);
        assert!(v.to_string().contains("within 1%"), "{v}");
    }
}
