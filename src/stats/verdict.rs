//! Turning a ratio estimate into words, the way criterion does: a change must be both
//! statistically significant and larger than the noise threshold on its whole interval.

use super::RatioEstimate;
use serde::Serialize;

/// What it takes to call a change: the confidence of the interval and the test, and the
/// practical threshold. A change is called only when it is significant and its whole
/// interval lies beyond the threshold (criterion's default noise threshold is 1%).
#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Rules {
    pub confidence: f64,
    pub threshold: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Self { confidence: super::CONFIDENCE, threshold: 0.01 }
    }
}

impl Rules {
    pub fn alpha(&self) -> f64 {
        1.0 - self.confidence
    }

    /// Why the rules cannot be used, if they cannot.
    pub fn problem(&self) -> Option<String> {
        if !(0.5..1.0).contains(&self.confidence) {
            return Some(format!("confidence = {} must be from 0.5 to below 1 (e.g. 0.95)", self.confidence));
        }
        if !(0.0..0.5).contains(&self.threshold) {
            return Some(format!("threshold = {} must be from 0 to below 0.5 (0.01 = 1%)", self.threshold));
        }
        None
    }
}

#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Worse by `pct` percent, with the 95% interval of that percentage.
    Slower {
        pct: f64,
        ci_pct: (f64, f64),
        #[serde(default = "default_confidence")]
        confidence: f64,
    },
    Faster {
        pct: f64,
        ci_pct: (f64, f64),
        #[serde(default = "default_confidence")]
        confidence: f64,
    },
    NoSignificantDifference {
        reason: String,
    },
}

impl Verdict {
    /// The verdict in a word or two, for places that give the numbers beside it.
    pub fn word(&self) -> &'static str {
        self.word_for(false)
    }

    /// The word for a measure that is a speed (slower/faster) or, with `cost`, an amount
    /// spent (higher/lower: "bytes written per unit: faster" would read wrong).
    pub fn word_for(&self, cost: bool) -> &'static str {
        match (self, cost) {
            (Verdict::Slower { .. }, false) => "slower",
            (Verdict::Faster { .. }, false) => "faster",
            (Verdict::Slower { .. }, true) => "higher",
            (Verdict::Faster { .. }, true) => "lower",
            (Verdict::NoSignificantDifference { .. }, _) => "no significant difference",
        }
    }

    /// The verdict with its size and interval, worded for a speed or a cost.
    pub fn text(&self, cost: bool) -> String {
        match self {
            Verdict::Slower { pct, ci_pct, confidence } | Verdict::Faster { pct, ci_pct, confidence } => format!(
                "{} by {pct:.1}% [{} CI {:.1}%, {:.1}%]",
                self.word_for(cost),
                level(*confidence),
                ci_pct.0,
                ci_pct.1
            ),
            Verdict::NoSignificantDifference { reason } => format!("no significant difference ({reason})"),
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text(false))
    }
}

fn default_confidence() -> f64 {
    super::CONFIDENCE
}

/// A confidence level as people write it: 0.95 as "95%", 0.995 as "99.5%".
pub fn level(confidence: f64) -> String {
    format!("{}%", (1000.0 * confidence).round() / 10.0)
}

/// `est` is variant / baseline of a metric; `higher_is_better` says which way is faster
/// (true for throughput, false for latency or seconds). The test is significant when the
/// p-value it tests (adjusted over its family, see [`super::family`]) is below alpha.
pub fn verdict(est: &RatioEstimate, higher_is_better: bool, rules: &Rules) -> Verdict {
    let alpha = rules.alpha();
    let adjusted = match est.p_adjusted {
        Some(p) => format!(", {p:.3} over its {} measures", est.tested_among),
        None => String::new(),
    };
    if est.tested_p() >= alpha {
        return Verdict::NoSignificantDifference { reason: format!("p = {:.3}{adjusted} >= {alpha:.3}", est.p_value) };
    }
    let noise = rules.threshold;
    // The size of the change in the measure itself, as every change column shows it (a
    // CPU cost 39.4% higher is "slower by 39.4%", not by the 28.3% its inverse fell), with
    // its interval nearest bound first.
    let size = |x: f64| 100.0 * (x - 1.0).abs();
    let ci_pct = if est.ratio < 1.0 { (size(est.ci.1), size(est.ci.0)) } else { (size(est.ci.0), size(est.ci.1)) };
    let (up, down) = (est.ci.0 > 1.0 + noise, est.ci.1 < 1.0 - noise);
    let (worse, better) = if higher_is_better { (down, up) } else { (up, down) };
    let (pct, confidence) = (size(est.ratio), rules.confidence);
    if worse {
        Verdict::Slower { pct, ci_pct, confidence }
    } else if better {
        Verdict::Faster { pct, ci_pct, confidence }
    } else {
        Verdict::NoSignificantDifference {
            reason: format!(
                "p = {:.3}{adjusted}, but the interval reaches within {:.0}% of no change",
                est.p_value,
                100.0 * noise
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(ratio: f64, ci: (f64, f64), p: f64) -> RatioEstimate {
        RatioEstimate {
            n: 8,
            ratio,
            ci,
            bootstrap_ci: ci,
            p_value: p,
            test: Default::default(),
            sd_log: 0.0,
            confidence: 0.95,
            tested_among: 1,
            p_adjusted: None,
        }
    }

    #[test]
    fn a_measure_tested_among_others_is_called_by_its_adjusted_p() {
        let alone = est(0.98, (0.97, 0.989), 0.03);
        assert!(matches!(verdict(&alone, true, &Rules::default()), Verdict::Slower { .. }));
        let among = RatioEstimate { tested_among: 4, p_adjusted: Some(0.09), ..alone };
        let v = verdict(&among, true, &Rules::default());
        assert_eq!(v.to_string(), "no significant difference (p = 0.030, 0.090 over its 4 measures >= 0.050)");
    }

    #[test]
    fn throughput_down_is_slower() {
        let v = verdict(&est(0.90, (0.88, 0.92), 0.01), true, &Rules::default());
        assert_eq!(v.to_string(), "slower by 10.0% [95% CI 8.0%, 12.0%]");
    }

    #[test]
    fn latency_down_is_faster_and_a_cost_up_is_slower_by_the_measures_own_change() {
        let v = verdict(&est(0.80, (0.78, 0.82), 0.01), false, &Rules::default());
        assert_eq!(v.to_string(), "faster by 20.0% [95% CI 18.0%, 22.0%]");
        let v = verdict(&est(1.394, (1.335, 1.455), 0.01), false, &Rules::default());
        assert_eq!(v.to_string(), "slower by 39.4% [95% CI 33.5%, 45.5%]");
        assert_eq!(v.text(true), "higher by 39.4% [95% CI 33.5%, 45.5%]", "a cost went up");
        assert_eq!(v.word_for(true), "higher");
        let near = verdict(&est(1.02, (1.005, 1.035), 0.01), false, &Rules::default());
        assert!(near.to_string().contains("within 1%"), "{near}");
    }

    #[test]
    fn insignificant_or_tiny_changes_are_no_difference() {
        assert!(matches!(
            verdict(&est(0.90, (0.8, 1.0), 0.2), true, &Rules::default()),
            Verdict::NoSignificantDifference { .. }
        ));
        let v = verdict(&est(0.995, (0.992, 0.998), 0.01), true, &Rules::default());
        assert!(v.to_string().contains("within 1%"), "{v}");
    }

    #[test]
    fn the_rules_set_the_threshold_and_the_confidence() {
        let three_pct = est(0.97, (0.96, 0.98), 0.02);
        assert!(matches!(verdict(&three_pct, true, &Rules::default()), Verdict::Slower { .. }));
        let lenient = Rules { threshold: 0.05, ..Rules::default() };
        assert!(verdict(&three_pct, true, &lenient).to_string().contains("within 5%"));
        let strict = Rules { confidence: 0.99, ..Rules::default() };
        assert!(verdict(&three_pct, true, &strict).to_string().contains("p = 0.020 >= 0.010"));
        let v = verdict(&est(0.9, (0.85, 0.95), 0.001), true, &strict);
        assert_eq!(v.to_string(), "slower by 10.0% [99% CI 5.0%, 15.0%]");
        assert!(Rules { confidence: 1.0, ..Rules::default() }.problem().is_some());
        assert!(Rules { threshold: -0.1, ..Rules::default() }.problem().is_some());
        assert_eq!(level(0.995), "99.5%");
    }
}
