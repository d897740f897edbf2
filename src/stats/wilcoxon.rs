//! The Wilcoxon signed-rank test on paired differences: distribution-free, so one odd run
//! cannot manufacture significance the way it can under a t-test, nor widen the interval
//! that inverts it the way it widens a t-interval.

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

/// The Hodges-Lehmann estimate of the differences' centre (the median of their Walsh
/// averages, (d_i + d_j) / 2 for i <= j) with the interval that inverts the signed-rank test
/// at `confidence`: the centres it does not reject (Hollander & Wolfe, Nonparametric
/// Statistical Methods, 3.2-3.3). Without ties or zero differences, the test rejects zero
/// exactly when the interval leaves it out. `None` when the differences are too few for the
/// test to reject anything.
pub fn signed_rank_interval(d: &[f64], confidence: f64) -> Option<(f64, (f64, f64))> {
    let n = d.len();
    let k = lower_walsh_rank(n, 1.0 - confidence)?;
    let mut walsh: Vec<f64> = (0..n).flat_map(|i| d[i..].iter().map(move |y| (d[i] + y) / 2.0)).collect();
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let centre = if m % 2 == 1 { walsh[m / 2] } else { (walsh[m / 2 - 1] + walsh[m / 2]) / 2.0 };
    Some((centre, (walsh[k - 1], walsh[m - k])))
}

/// The rank (1-based) of the Walsh average that bounds the interval below: the largest k
/// with P(W+ <= k - 1) <= alpha / 2 under the null, exact up to `EXACT_MAX_N` differences.
fn lower_walsh_rank(n: usize, alpha: f64) -> Option<usize> {
    let k = if n <= EXACT_MAX_N {
        let total = 2f64.powi(n as i32);
        let mut below = 0.0;
        null_counts(n)
            .iter()
            .take_while(|&&c| {
                below += c / total;
                below <= alpha / 2.0
            })
            .count()
    } else {
        let nf = n as f64;
        let z = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
        (nf * (nf + 1.0) / 4.0 - z * (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt()).floor() as usize
    };
    (k >= 1).then_some(k)
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

/// The null distribution of W+ with n differences: the subsets of {1..n} counted by sum.
fn null_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for k in 1..=n {
        for s in (k..=max).rev() {
            counts[s] += counts[s - k];
        }
    }
    counts
}

/// Exact two-sided p from the null distribution of W+.
fn exact_p(n: usize, w: usize) -> f64 {
    let counts = null_counts(n);
    let total = 2f64.powi(n as i32);
    let lower: f64 = counts[..=w].iter().sum::<f64>() / total;
    let upper: f64 = counts[w..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

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
    fn the_interval_is_the_walsh_averages_the_test_does_not_reject() {
        // [1, 2, 3]: Walsh averages 1, 1.5, 2, 2, 2.5, 3; their median is 2.
        assert_eq!(signed_rank_interval(&[3.0, 1.0, 2.0], 0.5).map(|c| c.0), Some(2.0));
        // Six differences: P(W+ = 0) = 1/64 <= 0.025 < P(W+ <= 1) = 2/64, so k = 1 and the
        // interval runs from the smallest difference to the largest (96.9% exactly).
        let six = [0.3, -0.1, 0.2, 0.5, 0.4, 0.1];
        assert_eq!(signed_rank_interval(&six, 0.95).map(|c| c.1), Some((-0.1, 0.5)));
        // Five are too few: even all of one sign gives p = 0.0625.
        assert_eq!(signed_rank_interval(&six[..5], 0.95), None);
        // Eight: P(W+ <= 3) = 5/256 <= 0.025 < P(W+ <= 4) = 7/256, so k = 4 of 36.
        assert_eq!(lower_walsh_rank(8, 0.05), Some(4));
        // Beyond the exact range, the normal approximation: n = 60 gives
        // floor(915 - 1.959964 x sqrt(18452.5)) = floor(648.76) = 648.
        assert_eq!(lower_walsh_rank(60, 0.05), Some(648));
    }

    #[test]
    fn the_interval_leaves_zero_out_exactly_when_the_test_rejects_it() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for n in [6, 7, 10, 16, 30, 50] {
            for _ in 0..200 {
                let shift = rng.random_range(-0.5..0.5);
                let d: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0) + shift).collect();
                let (_, (lo, hi)) = signed_rank_interval(&d, 0.95).unwrap();
                assert_eq!(lo > 0.0 || hi < 0.0, signed_rank_p(&d) < 0.05, "{d:?}");
            }
        }
    }

    #[test]
    fn one_wild_difference_moves_the_interval_little() {
        let calm: Vec<f64> = (0..20).map(|i| 0.01 * ((i * 7 % 11) as f64 - 5.0)).collect();
        let mut wild = calm.clone();
        wild[3] = -2.0;
        let width = |d: &[f64]| signed_rank_interval(d, 0.95).map(|(_, (lo, hi))| hi - lo).unwrap();
        assert!(width(&wild) < 1.3 * width(&calm), "{} vs {}", width(&wild), width(&calm));
        let t_width = |d: &[f64]| crate::stats::sd(d);
        assert!(t_width(&wild) > 10.0 * t_width(&calm));
    }

    #[test]
    fn no_difference_is_not_significant() {
        assert_eq!(signed_rank_p(&[0.0, 0.0]), 1.0);
        assert!(signed_rank_p(&[1.0, -1.0, 2.0, -2.0]) > 0.5);
    }
}
