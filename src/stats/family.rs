//! A comparison's measures tested together. A study compares a variant with its baseline on
//! several measures (throughput, CPU per unit, bytes written and read per unit, each
//! statement's time); tested each at 5%, identical variants show "a difference" somewhere in
//! one study of five or six. Holm's step-down adjustment keeps that to one in twenty over the
//! whole family, and costs a change as large as the seeds' almost nothing: a 2% change is
//! many standard errors from 1, far below any adjusted threshold.

use serde::{Deserialize, Serialize};

/// A measure's p-value adjusted for the other measures of its comparison.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Family {
    /// The measures tested together, this one among them.
    pub measures: usize,
    /// Holm's adjusted p-value: significant at the study's confidence when below its alpha.
    pub p_adjusted: f64,
}

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

    /// Simulated A/A studies of four independent measures: tested each at 5%, about one in
    /// five shows a difference somewhere; adjusted, at most one in twenty does.
    #[test]
    fn identical_variants_show_a_difference_on_some_measure_in_at_most_one_study_of_twenty() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let studies = 4000;
        let (mut each, mut family) = (0, 0);
        for _ in 0..studies {
            // Under no difference a p-value is uniform on (0, 1).
            let ps: Vec<f64> = (0..4).map(|_| rng.random::<f64>()).collect();
            each += ps.iter().any(|&p| p < 0.05) as usize;
            family += holm(&ps).iter().any(|&p| p < 0.05) as usize;
        }
        let (each, family) = (each as f64 / studies as f64, family as f64 / studies as f64);
        assert!(each > 0.15, "each at 5%: {each}");
        assert!(family <= 0.055, "family-wise: {family}");
    }
}
