//! What taking turns cost each interleaved variant of a workload, from its runs' turn
//! starts ([`TurnStarts`]), and how far that can move a ratio between two of them: a
//! measure of the slices' own error, study by study, where `--validate` is the costly check.

use crate::record::TurnStarts;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnStartsReport {
    pub workload: String,
    /// Each interleaved variant's turn starts over its completed runs, in the study's order.
    pub variants: Vec<VariantTurnStarts>,
    /// How far the turn starts move the ratio of the two variants' rates furthest apart
    /// (0.002: 0.2%); `None` with fewer than two shares.
    pub largest_move: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantTurnStarts {
    pub variant: String,
    #[serde(flatten)]
    pub tally: TurnStarts,
    /// The share of its time at work that its turns' starts added ([`TurnStarts::share`]).
    pub share: Option<f64>,
}

impl TurnStartsReport {
    pub fn new(workload: String, tallies: Vec<(String, TurnStarts)>) -> Self {
        let variants: Vec<VariantTurnStarts> = tallies
            .into_iter()
            .map(|(variant, tally)| VariantTurnStarts { variant, share: tally.share(), tally })
            .collect();
        let shares: Vec<f64> = variants.iter().filter_map(|v| v.share).collect();
        // A rate over time at work is the warm rate over 1 + share.
        let moves = shares.iter().flat_map(|a| shares.iter().map(move |b| ((1.0 + a) / (1.0 + b) - 1.0).abs()));
        let largest_move = moves.reduce(f64::max).filter(|_| shares.len() > 1);
        Self { workload, variants, largest_move }
    }

    fn shares(&self) -> impl Iterator<Item = (&str, f64)> {
        self.variants.iter().filter_map(|v| Some((v.variant.as_str(), v.share?)))
    }

    /// One line for the report and the study's log.
    pub fn text(&self) -> String {
        let each: Vec<String> = self.shares().map(|(name, s)| format!("{:+.2}% of {name}'s", 100.0 * s)).collect();
        let turns: Vec<String> = self.variants.iter().map(|v| v.tally.turns.to_string()).collect();
        let mut line = format!(
            "{}: turn starts (a worker's first {} units of a turn, against the pace of the turn's later units) \
             took {} time at work (over {} turns)",
            self.workload,
            TurnStarts::FIRST_UNITS,
            each.join(", "),
            turns.join(", ")
        );
        if let Some(m) = self.largest_move {
            line += &format!("; that moves the ratio of the two furthest apart by about {:.2}%", 100.0 * m);
        }
        line
    }

    /// What the answer says when the turn starts can move a ratio by half the practical
    /// `threshold` or more.
    pub fn warning(&self, threshold: f64) -> Option<String> {
        let m = self.largest_move.filter(|m| *m >= threshold / 2.0)?;
        let each: Vec<String> = self.shares().map(|(name, s)| format!("{name} {:+.1}%", 100.0 * s)).collect();
        Some(format!(
            "{}: taking turns cost the variants unequally ({} of their time at work), so a ratio between them may \
             be off by up to {:.1}% from what each shows alone: check it with --validate, or give `interleave` a \
             longer slice",
            self.workload,
            each.join(", "),
            100.0 * m
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(shares: &[(&str, f64)]) -> TurnStartsReport {
        let tallies = shares
            .iter()
            .map(|&(name, s)| (name.to_string(), TurnStarts { turns: 100, excess_s: s, at_work_s: 1.0 + s }))
            .collect();
        TurnStartsReport::new("ds2".into(), tallies)
    }

    #[test]
    fn a_ratio_moves_by_the_variants_shares_of_their_time_at_work() {
        let r = report(&[("plain", 0.004), ("sqlcipher", 0.001), ("fscrypt", 0.002)]);
        let m = r.largest_move.unwrap();
        assert!((m - (1.004 / 1.001 - 1.0)).abs() < 1e-12, "{m}");
        assert!(r.text().contains("+0.40% of plain's, +0.10% of sqlcipher's"), "{}", r.text());
        assert!(r.text().contains("the two furthest apart by about 0.30%"), "{}", r.text());
        assert_eq!(report(&[("plain", 0.004)]).largest_move, None, "one variant has nothing to move against");
    }

    #[test]
    fn the_answer_warns_only_when_a_ratio_can_move_by_half_the_threshold() {
        assert_eq!(report(&[("plain", 0.004), ("sqlcipher", 0.001)]).warning(0.01), None);
        let w = report(&[("plain", 0.009), ("sqlcipher", 0.001)]).warning(0.01).unwrap();
        assert!(w.contains("plain +0.9%, sqlcipher +0.1%") && w.contains("up to 0.8%"), "{w}");
    }
}
