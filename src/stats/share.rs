//! A change stated as seed 003 stated it: per block, the difference between two variants
//! as a share of the larger of them, averaged over blocks, with a Student-t interval ("TDE
//! cost 25.2% of execution time over base" is mean((TDE - base) / TDE); "NLE was 17.2%
//! faster than TDE" is mean((TDE - NLE) / TDE)). Beside dbvs's paired ratio it lets a
//! reader hold a figure against the seed's own.

use serde::{Deserialize, Serialize};

/// The mean over blocks of (variant - reference) / (the side with the larger mean), in %.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShareOfLarger {
    pub pct: f64,
    pub ci_pct: (f64, f64),
    /// Whether the variant is the larger side (the share is of its own value), else the
    /// reference is.
    pub of_variant: bool,
    pub blocks: usize,
}

/// The share from paired per-block values; `None` with fewer than two pairs.
pub fn share_of_larger(reference: &[f64], variant: &[f64], confidence: f64) -> Option<ShareOfLarger> {
    let n = reference.len().min(variant.len());
    if n < 2 {
        return None;
    }
    let (reference, variant) = (&reference[..n], &variant[..n]);
    let of_variant = super::mean(variant) > super::mean(reference);
    let shares: Vec<f64> =
        reference.iter().zip(variant).map(|(r, v)| 100.0 * (v - r) / if of_variant { v } else { r }).collect();
    let mean = super::mean(&shares);
    let half = super::t_critical_at((n - 1) as f64, confidence) * super::sd(&shares) / (n as f64).sqrt();
    Some(ShareOfLarger { pct: mean, ci_pct: (mean - half, mean + half), of_variant, blocks: n })
}

impl ShareOfLarger {
    /// "+25.2% [+24.8%, +25.6%] of tde's" with `variant` and `reference` named.
    pub fn text(&self, variant: &str, reference: &str) -> String {
        let of = if self.of_variant { variant } else { reference };
        format!("{:+.1}% [{:+.1}%, {:+.1}%] of {of}'s", self.pct, self.ci_pct.0, self.ci_pct.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slower_variant_s_cost_is_a_share_of_its_own_time_a_faster_one_s_of_the_reference() {
        // TDE takes 4/3 of base's time in every block: (4 - 3) / 4 = 25% of TDE's time.
        let base = [3.0, 6.0, 9.0];
        let tde = [4.0, 8.0, 12.0];
        let s = share_of_larger(&base, &tde, 0.95).unwrap();
        assert!((s.pct - 25.0).abs() < 1e-9 && s.of_variant, "{s:?}");
        assert!((s.ci_pct.0 - 25.0).abs() < 1e-9 && (s.ci_pct.1 - 25.0).abs() < 1e-9, "no spread, no width");
        assert_eq!(s.text("tde", "plain"), "+25.0% [+25.0%, +25.0%] of tde's");
        // Against TDE, base is (3 - 4) / 4 = -25% of TDE's time: faster by a quarter.
        let back = share_of_larger(&tde, &base, 0.95).unwrap();
        assert!((back.pct + 25.0).abs() < 1e-9 && !back.of_variant, "{back:?}");
        assert!(share_of_larger(&[1.0], &[2.0], 0.95).is_none());
    }

    #[test]
    fn the_interval_is_student_s_over_the_blocks() {
        // Shares of 10%, 20% and 30% of the variant's value: mean 20, sd 10, t(2) = 4.303.
        let base = [9.0, 8.0, 7.0];
        let variant = [10.0, 10.0, 10.0];
        let s = share_of_larger(&base, &variant, 0.95).unwrap();
        let half = 4.302_652_729_911_275 * 10.0 / 3f64.sqrt();
        assert!((s.pct - 20.0).abs() < 1e-9, "{s:?}");
        assert!((s.ci_pct.1 - s.pct - half).abs() < 1e-6, "{s:?}");
    }
}
