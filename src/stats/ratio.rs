//! The ratio of a variant to the baseline from paired blocks.
//!
//! Each block runs every variant once, close in time, so block-to-block drift (other load,
//! thermal state) cancels in the per-block ratio. Where the blocks are enough for
//! Wilcoxon's signed-rank test (six at 95%), it decides, and the estimate and interval are
//! the ones that invert it: the Hodges-Lehmann estimate of the log ratios' centre and the
//! signed-rank interval. On a shared VM a few blocks in a long study are disrupted (a
//! neighbour's burst, a stall); a few such blocks in 75 widened a t-interval from about
//! +-0.9% to +-2.4% here, while the signed-rank interval stays as narrow as the undisrupted
//! blocks allow (its efficiency is 95% of the t-interval's when the noise is normal). Below six blocks
//! the paired t-test on the log ratios decides, with the geometric mean and a t-interval
//! (Kalibera & Jones; research statistics.md 5.3): a seed-shaped study of three long runs
//! still gets an honest answer, with its true, wide interval. A percentile bootstrap over
//! blocks is reported beside either as a distribution-free check.

use super::{fewest_for_significance, mean, sd, signed_rank_interval, signed_rank_p, t_critical_at, t_test_p};
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// Bootstrap resamples: enough for stable 2.5/97.5 percentiles.
const RESAMPLES: usize = 10_000;

#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct RatioEstimate {
    /// Blocks with both values.
    pub n: usize,
    /// Variant / baseline: the Hodges-Lehmann centre of the log ratios under the signed-rank
    /// test, their mean (the geometric mean of the ratios) under the paired t-test.
    pub ratio: f64,
    /// The interval of the ratio at the study's confidence that inverts `test`.
    pub ci: (f64, f64),
    /// Percentile bootstrap interval of the ratio at the same confidence.
    pub bootstrap_ci: (f64, f64),
    /// Two-sided p-value of the log ratios under `test`.
    pub p_value: f64,
    #[serde(default)]
    pub test: Test,
    /// The per-block standard deviation of the log ratio: the comparison's noise floor.
    #[serde(default)]
    pub sd_log: f64,
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// The measures tested together with this one, itself included (see [`super::family`]).
    #[serde(default = "alone")]
    pub tested_among: usize,
    /// Its p-value adjusted over those measures (Holm), which its verdict tests; none when
    /// it was tested alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
}

fn default_confidence() -> f64 {
    super::CONFIDENCE
}

fn alone() -> usize {
    1
}

/// The power the smallest detectable change is quoted at: called four times in five.
const POWER: f64 = 0.8;

/// Which paired test gave the p-value.
#[derive(Clone, Copy, Debug, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    #[default]
    SignedRank,
    PairedT,
}

impl RatioEstimate {
    /// Half the CI width relative to the ratio: the precision adaptive stopping aims for.
    pub fn relative_half_width(&self) -> f64 {
        (self.ci.1 - self.ci.0) / 2.0 / self.ratio
    }

    /// The per-block noise of the log ratio that this interval reflects: under the t-test
    /// their sd; under the signed-rank test the sd a t-interval of the same width would
    /// have, which a few disrupted blocks raise far less than they raise the sd.
    pub fn noise_log(&self) -> f64 {
        let n = self.n as f64;
        match self.test {
            Test::SignedRank if self.n >= 2 => {
                (self.ci.1 / self.ci.0).ln() / 2.0 * n.sqrt() / t_critical_at(n - 1.0, self.confidence)
            }
            _ => self.sd_log,
        }
    }

    /// The p-value its verdict tests: adjusted over its family, or its own.
    pub fn tested_p(&self) -> f64 {
        self.p_adjusted.unwrap_or(self.p_value)
    }

    /// The smallest change (as a fraction) that this many blocks with this noise would call
    /// significant with 80% power: (t_{1-a/2} + t_{0.8}) x noise / sqrt(n) on the log scale,
    /// at the level of the first step of its family's test (alpha / measures).
    pub fn detectable(&self) -> f64 {
        let n = self.n as f64;
        if self.n < 2 {
            return f64::INFINITY;
        }
        let level = 1.0 - (1.0 - self.confidence) / self.tested_among as f64;
        let t = t_critical_at(n - 1.0, level) + t_critical_at(n - 1.0, 2.0 * POWER - 1.0);
        (t * self.noise_log() / n.sqrt()).exp() - 1.0
    }

    /// The blocks a half-width of `target` (0.01 = 1%) would take at this noise.
    pub fn blocks_for(&self, target: f64) -> usize {
        let (width, noise) = ((1.0 + target).ln(), self.noise_log());
        (2..100_000)
            .find(|&n| t_critical_at((n - 1) as f64, self.confidence) * noise / (n as f64).sqrt() <= width)
            .unwrap_or(100_000)
    }
}

/// Compares `variant` to `baseline`, block by block (equal lengths, positive values), with
/// intervals at `confidence`, as one of `tested_among` measures tested together: the
/// signed-rank test decides once it can reach the family's first adjusted level
/// (alpha / tested_among), the paired t-test below that. `seed` makes the bootstrap
/// reproducible.
pub fn paired_ratio(
    baseline: &[f64],
    variant: &[f64],
    seed: u64,
    confidence: f64,
    tested_among: usize,
) -> RatioEstimate {
    assert_eq!(baseline.len(), variant.len(), "paired samples must have equal lengths");
    assert!(!baseline.is_empty(), "need at least one block");
    let d: Vec<f64> = baseline.iter().zip(variant).map(|(b, v)| (v / b).ln()).collect();
    let n = d.len();
    let m = mean(&d);
    let half =
        if n < 2 { f64::INFINITY } else { t_critical_at((n - 1) as f64, confidence) * sd(&d) / (n as f64).sqrt() };
    let tested_among = tested_among.max(1);
    let inverted = (n >= fewest_for_significance((1.0 - confidence) / tested_among as f64))
        .then(|| signed_rank_interval(&d, confidence));
    let (test, (centre, (lo, hi))) = match inverted.flatten() {
        Some(walsh) => (Test::SignedRank, walsh),
        None => (Test::PairedT, (m, (m - half, m + half))),
    };
    RatioEstimate {
        n,
        ratio: centre.exp(),
        ci: (lo.exp(), hi.exp()),
        bootstrap_ci: bootstrap(&d, seed, confidence),
        p_value: match test {
            Test::SignedRank => signed_rank_p(&d),
            Test::PairedT => t_test_p(&d),
        },
        test,
        sd_log: if n < 2 { 0.0 } else { sd(&d) },
        confidence,
        tested_among,
        p_adjusted: None,
    }
}

fn bootstrap(d: &[f64], seed: u64, confidence: f64) -> (f64, f64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = d.len();
    let mut means: Vec<f64> =
        (0..RESAMPLES).map(|_| (0..n).map(|_| d[rng.random_range(0..n)]).sum::<f64>() / n as f64).collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * RESAMPLES as f64) as usize).min(RESAMPLES - 1)].exp();
    let tail = (1.0 - confidence) / 2.0;
    (at(tail), at(1.0 - tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_log_ratio_interval_matches_reference() {
        // d = ln(v/b) = ln([0.9, 0.95, 0.92, 0.97, 0.93]); reference with numpy and scipy 1.17:
        // mean(d) = -0.068613, sd(d) = 0.028896, stats.t.ppf(0.975, 4) = 2.776445,
        // ratio = exp(mean) = 0.933688, CI = exp(mean -+ 2.776445 * 0.028896 / sqrt(5))
        // = [0.900782, 0.967796].
        let b = [100.0, 200.0, 150.0, 120.0, 80.0];
        let v = [90.0, 190.0, 138.0, 116.4, 74.4];
        let r = paired_ratio(&b, &v, 1, 0.95, 1);
        assert!((r.ratio - 0.933688).abs() < 1e-5, "{r:?}");
        assert!((r.ci.0 - 0.900782).abs() < 1e-5 && (r.ci.1 - 0.967796).abs() < 1e-5, "{r:?}");
        // Five blocks are too few for the signed-rank test at 95%: the paired t-test decides.
        // t = -5.309566 on 4 df; p = I_{4/(4+t^2)}(2, 1/2) = 0.006048 (the regularized
        // incomplete beta by Numerical Recipes' continued fraction, computed apart from statrs).
        assert_eq!(r.test, Test::PairedT);
        assert!((r.p_value - 0.006048).abs() < 1e-5, "{r:?}");
        assert!(r.bootstrap_ci.0 >= 0.9 - 1e-9 && r.bootstrap_ci.1 <= 0.97 + 1e-9);
        assert!(r.bootstrap_ci.0 < r.ratio && r.ratio < r.bootstrap_ci.1);
    }

    #[test]
    fn the_noise_floor_gives_the_detectable_change_and_the_blocks_a_target_needs() {
        // sd of the log ratios 0.02 over 10 blocks: (t_0.975,9 + t_0.8,9) x 0.02 / sqrt(10) =
        // (2.262157 + 0.8834) x 0.006325 = 0.019894, i.e. 2.01% (t quantiles by bisection on
        // the incomplete-beta CDF, apart from statrs).
        let e = RatioEstimate {
            n: 10,
            ratio: 1.0,
            ci: (0.99, 1.01),
            bootstrap_ci: (0.99, 1.01),
            p_value: 1.0,
            test: Test::PairedT,
            sd_log: 0.02,
            confidence: 0.95,
            tested_among: 1,
            p_adjusted: None,
        };
        assert!((e.detectable() - 0.020093).abs() < 2e-4, "{}", e.detectable());
        // One of four measures tested together is first tested at 0.05 / 4: t_0.99375,9 =
        // 3.110935 (bisection on a Simpson-integrated t density), so (3.110935 + 0.8834) x
        // 0.006325 = 0.025262, i.e. 2.56%.
        let in_four = RatioEstimate { tested_among: 4, ..e.clone() };
        assert!((in_four.detectable() - 0.025584).abs() < 2e-4, "{}", in_four.detectable());
        // +-1% needs t_{n-1} x 0.02 / sqrt(n) <= ln(1.01): n = 18 (t_17 = 2.109816).
        assert_eq!(e.blocks_for(0.01), 18);
        assert!(e.blocks_for(0.005) > 60);
    }

    #[test]
    fn from_six_blocks_the_signed_rank_interval_shrugs_off_a_disrupted_block() {
        // Twelve blocks 2% slower give or take 0.5%, one of them disrupted to 30% slower.
        let b = [100.0; 12];
        let mut v: Vec<f64> = (0..12).map(|i| 98.0 + 0.5 * ((i * 5 % 7) as f64 - 3.0) / 3.0).collect();
        v[4] = 70.0;
        let r = paired_ratio(&b, &v, 3, 0.95, 1);
        assert_eq!(r.test, Test::SignedRank);
        assert!((r.ratio - 0.98).abs() < 0.003 && r.ci.1 < 0.985 && r.ci.0 > 0.97, "{r:?}");
        // The t-interval of the same blocks spans about +-6%, and the noise the interval
        // reflects is a tenth of the sd.
        assert!(r.sd_log > 0.09 && r.noise_log() < 0.1 * r.sd_log, "{r:?}");
        // The estimate and interval invert the test: the interval leaves 1 out, p < 0.05.
        assert!(r.p_value < 0.05);
    }

    /// Among four measures the first adjusted level is 0.0125, which the signed-rank test
    /// cannot reach before eight blocks (2 / 2^7 = 0.0156): below that the t-test decides,
    /// so a few blocks can still call a clear change.
    #[test]
    fn in_a_family_the_signed_rank_test_decides_once_it_can_reach_the_adjusted_level() {
        let b = [100.0; 8];
        let v = [90.0, 91.0, 89.5, 90.5, 90.2, 89.8, 90.1, 90.3];
        let (seven, eight) = (paired_ratio(&b[..7], &v[..7], 1, 0.95, 4), paired_ratio(&b, &v, 1, 0.95, 4));
        assert_eq!((seven.test, eight.test), (Test::PairedT, Test::SignedRank));
        assert!(seven.p_value < 0.0125 && eight.p_value < 0.0125, "{seven:?} {eight:?}");
        assert_eq!(paired_ratio(&b[..7], &v[..7], 1, 0.95, 1).test, Test::SignedRank, "alone, six are enough");
        assert_eq!((seven.tested_among, seven.p_adjusted), (4, None), "adjusted when tested together");
    }

    #[test]
    fn block_level_drift_cancels() {
        // The machine gets 10x faster between blocks; the variant is always 5% slower.
        let b: Vec<f64> = (0..8).map(|i| 100.0 * 10f64.powi(i % 2)).collect();
        let v: Vec<f64> = b.iter().map(|x| x * 0.95).collect();
        let r = paired_ratio(&b, &v, 2, 0.95, 1);
        assert!((r.ratio - 0.95).abs() < 1e-12 && r.relative_half_width() < 1e-9);
    }

    #[test]
    fn bootstrap_is_reproducible_per_seed() {
        let b = [1.0, 1.1, 0.9, 1.05, 0.97, 1.02];
        let v = [1.01, 1.0, 0.95, 1.1, 0.99, 1.0];
        assert_eq!(paired_ratio(&b, &v, 7, 0.95, 1).bootstrap_ci, paired_ratio(&b, &v, 7, 0.95, 1).bootstrap_ci);
    }
}
