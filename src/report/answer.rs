//! The answer first: a sentence per variant on the headline measure (the change with its
//! CI, the verdict in a word, the smallest change the study could have detected, and the
//! encryption's own cost against the variant's control), and the rows of the forest plot
//! that charts every comparison of every measure.

use super::{Comparison, StudyReport};
use crate::stats::level;
use crate::status::VariantStatus;

/// "47.2% lower" or "3.1% higher": a ratio as the change of the measure itself.
fn moved(ratio: f64) -> String {
    let pct = 100.0 * (ratio - 1.0);
    if pct < 0.0 {
        format!("{:.1}% lower", -pct)
    } else {
        format!("{pct:.1}% higher")
    }
}

fn interval(c: &Comparison) -> String {
    let e = &c.estimate;
    format!("[{} CI {:+.1}%, {:+.1}%]", level(e.confidence), 100.0 * (e.ci.0 - 1.0), 100.0 * (e.ci.1 - 1.0))
}

/// ". Against X: 3.1% lower [CI]: slower", a comparison with another variant than the baseline.
fn clause(lead: &str, c: &Comparison) -> String {
    format!(". {lead}: {} {}: {}", moved(c.estimate.ratio), interval(c), c.word())
}

/// One line per variant besides the baseline.
pub fn lines(r: &StudyReport) -> Vec<String> {
    let others = r.variants.iter().filter(|v| v.info.name != r.baseline);
    let regime = r.regime.iter().filter_map(super::Regime::warning);
    let turn_starts = r.turn_starts.iter().filter_map(|t| t.warning(r.rules.threshold));
    others
        .map(|v| {
            let name = &v.info.name;
            let Some(c) = r.comparisons.iter().find(|c| c.variant == *name) else {
                let why = v.reason.as_deref().unwrap_or("too few completed blocks");
                return match v.status {
                    VariantStatus::Skipped => format!("{name}: not measured ({why})"),
                    _ => format!("{name}: no verdict ({why})"),
                };
            };
            let mut line = format!(
                "{name}: {} {} than {} {}: {}; the smallest change these blocks could detect is {:.1}%",
                r.metric,
                moved(c.estimate.ratio),
                r.baseline,
                interval(c),
                c.word(),
                100.0 * c.estimate.detectable()
            );
            if let Some(k) = r.controls.iter().find(|k| k.variant == *name) {
                let against = k.against.as_deref().unwrap_or_default();
                line += &clause(&format!("Against its control ({against}), the encryption alone"), k);
            }
            let headline_pairs = r.measures.first().map_or(&[][..], |m| m.pairs.as_slice());
            for p in headline_pairs.iter().filter(|p| p.variant == *name) {
                line += &clause(&format!("Against {}", p.against.as_deref().unwrap_or_default()), p);
            }
            if v.info.differs_from_baseline.iter().any(|l| l == "engine") {
                line += ". Another engine differs in more than one thing (storage engine, defaults, planner, the SQL \
                         sent): this compares the two as configured, not one feature";
            }
            line
        })
        .chain(regime)
        .chain(turn_starts)
        .collect()
}

/// One row of the forest plot: what is compared, and the change % with its CI.
pub struct Row {
    pub label: String,
    pub change: f64,
    pub ci: (f64, f64),
}

/// Every comparison of every measure: with the baseline, with controls, and the pairs the
/// study file names.
pub fn rows(r: &StudyReport) -> Vec<Row> {
    let several = r.measures.len() > 1;
    let mut rows = Vec::new();
    for m in &r.measures {
        for c in m.comparisons.iter().chain(&m.controls).chain(&m.pairs) {
            let against = c.against.as_deref().unwrap_or(&r.baseline);
            let mut label = format!("{} vs {against}", c.variant);
            if several {
                label += &format!(" ({})", m.measure.key());
            }
            let e = &c.estimate;
            let pct = |x: f64| 100.0 * (x - 1.0);
            rows.push(Row { label, change: pct(e.ratio), ci: (pct(e.ci.0), pct(e.ci.1)) });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_answer_names_the_change_its_interval_the_verdict_and_the_control() {
        let r = super::super::sample::report();
        let lines = super::lines(&r);
        assert_eq!(lines.len(), 3, "{lines:?}");
        // Six blocks' ratios 0.892-0.911: the Hodges-Lehmann centre 0.900, and the signed-rank
        // interval of six blocks runs from the lowest ratio to the highest.
        assert!(lines[0].starts_with("sqlcipher: opm 10.0% lower than plain [95% CI -10.8%, -8.9%]"), "{lines:?}");
        assert!(lines[0].contains(": slower; the smallest change these blocks could detect is "), "{lines:?}");
        assert!(lines[0].contains("Against its control (plain on ext4 image), the encryption alone: 1.0% lower"));
        assert!(lines[1].starts_with("fscrypt: not measured (mkfs.ext4 not found"), "{lines:?}");
        // A run that read nothing from storage under its memory limit is named, and said to
        // have run in cache.
        assert!(lines[2].starts_with("ds2: larger than memory not reached in 1 of 6 runs"), "{lines:?}");
        assert!(lines[2].contains("(block 2 plain)") && lines[2].contains("ran in cache"), "{lines:?}");
        let rows = super::rows(&r);
        assert_eq!(
            rows.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(),
            ["sqlcipher vs plain", "sqlcipher vs plain on ext4 image"]
        );
        assert!(rows[0].ci.0 < rows[0].change && rows[0].change < rows[0].ci.1 && rows[0].change < -5.0);
    }
}
