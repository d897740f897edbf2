//! The Wilcoxon signed-rank test on paired differences: distribution-free, so one odd run
//! cannot manufacture significance the way it can under a t-test.

use statrs::distribution::{ContinuousCDF, Normal};

/// Below this many non-zero differences (and without ties) the exact null distribution is
/// used, as scipy does; above it the normal approximation is accurate.
const EXACT_MAX_N: usize = 50;

/// The fewest paired differences with which the exact test can reach p < `alpha`: with n
/// differences the smallest two-sided p is 2 / 2^n (all of one sign), 0.0625 at n = 5 and
/// 0.03125 at n = 6 for alpha = 0.05. With fewer, the paired t-test decides instead.
pub fn fewest_for_significance(alpha: f64) -> usize {
    (1..64).find(|&n| 2.0 / 2f64.powi(n as i32) < alpha).unwrap_or(64)
}

/// Two-sided p-value of the signed-rank test that the differences are centred on zero.
/// Zero differences are dropped (Wilcoxon's convention). Returns 1 when nothing is left.
pub fn signed_rank_p(diffs: &[f64]) -> f64 {
    let d: Vec<f64> = diffs.iter().copied().filter(|x| *x != 0.0).collect();
    let n = d.len();
    if n == 0 {
        return 1.0;
    }
    let (ranks, ties) = abs_ranks(&d);
    let w_plus: f64 = d.iter().zip(&ranks).filter(|(x, _)| **x > 0.0).map(|(_, r)| r).sum();
    if ties.is_empty() && n <= EXACT_MAX_N {
        return exact_p(n, w_plus.round() as usize);
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum::<f64>() / 48.0;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term).sqrt();
    if sd == 0.0 {
        return 1.0;
    }
    let z = (w_plus - mean) / sd;
    (2.0 * Normal::standard().sf(z.abs())).min(1.0)
}

/// Average ranks of |d| (1-based) and the sizes of tied groups larger than one.
fn abs_ranks(d: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut idx: Vec<usize> = (0..d.len()).collect();
    idx.sort_by(|&a, &b| d[a].abs().total_cmp(&d[b].abs()));
    let mut ranks = vec![0.0; d.len()];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && d[idx[j + 1]].abs() == d[idx[i]].abs() {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = avg;
        }
        if j > i {
            ties.push(j - i + 1);
        }
        i = j + 1;
    }
    (ranks, ties)
}

/// Exact two-sided p: the null distribution of W+ counts the subsets of {1..n} by sum.
fn exact_p(n: usize, w: usize) -> f64 {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for k in 1..=n {
        for s in (k..=max).rev() {
            counts[s] += counts[s - k];
        }
    }
    let total = 2f64.powi(n as i32);
    let lower: f64 = counts[..=w].iter().sum::<f64>() / total;
    let upper: f64 = counts[w..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_differences_are_the_fewest_that_can_be_significant() {
        let all_up = |n: usize| signed_rank_p(&(1..=n).map(|i| i as f64).collect::<Vec<_>>());
        for alpha in [0.05, 0.01, 0.1] {
            let n = fewest_for_significance(alpha);
            assert!(all_up(n) < alpha && all_up(n - 1) >= alpha, "alpha {alpha}: {n}");
        }
        assert_eq!(fewest_for_significance(0.05), 6);
    }

    // Reference p-values from scipy.stats.wilcoxon (scipy 1.17, zero_method='wilcox'; the
    // exact method for small samples without ties, method='approx' (no continuity
    // correction) for samples with ties).
    #[test]
    fn exact_small_samples_match_scipy() {
        // scipy.stats.wilcoxon([1, 2, 3, 4, 5]).pvalue == 0.0625
        assert!((signed_rank_p(&[1.0, 2.0, 3.0, 4.0, 5.0]) - 0.0625).abs() < 1e-12);
        // scipy.stats.wilcoxon([-1.5, 2.1, 3.2, -0.4, 5.3, 6.1, 0.2]).pvalue == 0.15625
        assert!((signed_rank_p(&[-1.5, 2.1, 3.2, -0.4, 5.3, 6.1, 0.2]) - 0.15625).abs() < 1e-12);
        // Six positive differences: 2 / 2^6 = 0.03125, the smallest p six blocks can give.
        assert!((signed_rank_p(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) - 0.03125).abs() < 1e-12);
    }

    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        // scipy.stats.wilcoxon([1, 1, 2, 2, -3, 4, 4, 5], method='approx').pvalue == 0.067685673
        // (W+ = 31, mean 18, var 51 - (6 + 6 + 6) / 48 = 50.625, z = 1.8271)
        let p = signed_rank_p(&[1.0, 1.0, 2.0, 2.0, -3.0, 4.0, 4.0, 5.0]);
        assert!((p - 0.067685673).abs() < 1e-8, "{p}");
    }

    #[test]
    fn no_difference_is_not_significant() {
        assert_eq!(signed_rank_p(&[0.0, 0.0]), 1.0);
        assert!(signed_rank_p(&[1.0, -1.0, 2.0, -2.0]) > 0.5);
    }
}
