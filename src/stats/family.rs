//! A comparison's measures tested together. A study compares a variant with its baseline on
//! several measures of a workload (throughput, CPU per unit, bytes written and read per unit,
//! each statement's time); tested each at 5%, identical variants show "a difference"
//! somewhere in one study of five or six. Holm's step-down adjustment keeps that to one in
//! twenty over the family. Each estimate's test is chosen so that it can reach the smallest
//! adjusted level (see [`super::paired_ratio`]), so a few blocks still call a large change.

use super::RatioEstimate;

/// Holm's adjusted p-values, in the order given: the i-th smallest p times the number not
/// yet rejected (k - i), never below the one before it, at most 1. Rejecting where the
/// adjusted p is below alpha is Holm's step-down test at alpha over the family. A p-value
/// that is not a number counts as 1.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let p = |i: usize| if ps[i].is_nan() { 1.0 } else { ps[i] };
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_by(|&a, &b| p(a).total_cmp(&p(b)));
    let mut adjusted = vec![1.0; ps.len()];
    let mut floor: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        floor = floor.max(((ps.len() - rank) as f64 * p(i)).min(1.0));
        adjusted[i] = floor;
    }
    adjusted
}

/// Tests the estimates as one family: each gets its Holm-adjusted p-value, which its verdict
/// tests. Each was made knowing the family's size (`tested_among`); one alone keeps its own.
pub fn test_together(family: &mut [&mut RatioEstimate]) {
    if family.len() < 2 {
        return;
    }
    let ps: Vec<f64> = family.iter().map(|e| e.p_value).collect();
    for (e, p) in family.iter_mut().zip(holm(&ps)) {
        debug_assert_eq!(e.tested_among, ps.len(), "an estimate made for another family");
        e.p_adjusted = Some(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_multiplies_the_smallest_by_the_family_and_never_lets_a_larger_p_fall_below_it() {
        let adjusted = holm(&[0.04, 0.01, 0.03, 0.5]);
        let want = [0.09, 0.04, 0.09, 0.5];
        for (got, want) in adjusted.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{adjusted:?}");
        }
    }

    #[test]
    fn one_measure_is_its_own_p_and_no_adjusted_p_passes_one() {
        assert_eq!(holm(&[0.03]), vec![0.03]);
        assert_eq!(holm(&[0.4, 0.6, f64::NAN]), vec![1.0, 1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    /// Simulated A/A studies of four independent measures, each estimated from 12 blocks of
    /// normal noise: tested each at 5% (the signed-rank test's exact level at 12 blocks is
    /// a little under it), about one in six shows a difference somewhere; as a family, at
    /// most one in twenty does.
    #[test]
    fn identical_variants_show_a_difference_on_some_measure_in_at_most_one_study_of_twenty() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        // Box-Muller: a normal draw of sd 1% from two uniform ones.
        let mut noise = move || {
            let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random());
            0.01 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let studies = 1000;
        let (mut each, mut family) = (0, 0);
        for _ in 0..studies {
            let base = [1.0; 12];
            let mut estimates: Vec<RatioEstimate> = (0..4)
                .map(|_| {
                    let variant: Vec<f64> = (0..12).map(|_| f64::exp(noise())).collect();
                    super::super::paired_ratio(&base, &variant, 1, 0.95, 4)
                })
                .collect();
            each += estimates.iter().any(|e| e.p_value < 0.05) as usize;
            test_together(&mut estimates.iter_mut().collect::<Vec<_>>());
            family += estimates.iter().any(|e| e.tested_p() < 0.05) as usize;
        }
        let (each, family) = (each as f64 / studies as f64, family as f64 / studies as f64);
        assert!(each > 0.12, "each at 5%: {each}");
        assert!(family <= 0.055, "family-wise: {family}; each at 5%: {each}");
    }
}
