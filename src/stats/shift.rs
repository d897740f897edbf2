//! How far an estimate moved between two independent studies: the same study file run on
//! two dates, two machines or two versions. Each study's interval gives its standard
//! error; the change gets a Welch t-interval from both, so it is "beyond the noise" only
//! when the interval leaves no change out.

use super::{t_critical_at, Summary};
use serde::Serialize;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Shift {
    /// B relative to A (B / A for ratios; for means, (B - A) / A + 1).
    pub factor: f64,
    /// Its interval at the confidence asked for.
    pub ci: (f64, f64),
    /// The interval leaves out "no change" (a factor of 1).
    pub beyond_noise: bool,
}

impl Shift {
    fn new(factor: f64, ci: (f64, f64)) -> Self {
        Self { factor, ci, beyond_noise: ci.0 > 1.0 || ci.1 < 1.0 }
    }
}

/// One study's estimate on a scale where its interval is symmetric: centre, standard
/// error and degrees of freedom.
struct Estimate {
    centre: f64,
    se: f64,
    df: f64,
}

/// Welch's interval of `b.centre - a.centre`: (difference, half-width).
fn welch(a: &Estimate, b: &Estimate, confidence: f64) -> Option<(f64, f64)> {
    let (va, vb) = (a.se * a.se, b.se * b.se);
    if !(a.df >= 1.0 && b.df >= 1.0 && va + vb > 0.0) {
        return None;
    }
    let df = (va + vb).powi(2) / (va * va / a.df + vb * vb / b.df);
    Some((b.centre - a.centre, t_critical_at(df, confidence) * (va + vb).sqrt()))
}

/// The change of a paired ratio between two studies, from each one's t-interval on the log
/// ratio over `n` blocks (taken at `confidence_*`, the study's own level).
pub fn ratio_shift(
    (ratio_a, ci_a, n_a, confidence_a): (f64, (f64, f64), usize, f64),
    (ratio_b, ci_b, n_b, confidence_b): (f64, (f64, f64), usize, f64),
    confidence: f64,
) -> Option<Shift> {
    let on_log = |ratio: f64, ci: (f64, f64), n: usize, level: f64| {
        let df = n.checked_sub(1).filter(|&d| d >= 1)? as f64;
        let se = (ci.1.ln() - ci.0.ln()) / 2.0 / t_critical_at(df, level);
        Some(Estimate { centre: ratio.ln(), se, df })
    };
    let a = on_log(ratio_a, ci_a, n_a, confidence_a)?;
    let b = on_log(ratio_b, ci_b, n_b, confidence_b)?;
    let (d, half) = welch(&a, &b, confidence)?;
    Some(Shift::new(d.exp(), ((d - half).exp(), (d + half).exp())))
}

/// The change of a mean (a variant's throughput, say) between two studies, relative to
/// A's mean (its own uncertainty is in the interval through A's standard error).
pub fn mean_shift(a: &Summary, b: &Summary, confidence: f64) -> Option<Shift> {
    let of = |s: &Summary| Estimate { centre: s.mean, se: s.sd / (s.n as f64).sqrt(), df: s.n as f64 - 1.0 };
    let (d, half) = welch(&of(a), &of(b), confidence)?;
    (a.mean != 0.0).then(|| Shift::new(1.0 + d / a.mean, (1.0 + (d - half) / a.mean, 1.0 + (d + half) / a.mean)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(n: usize, mean: f64, sd: f64) -> Summary {
        Summary { n, mean, median: mean, sd, ci: (mean, mean) }
    }

    #[test]
    fn welch_matches_an_independent_computation() {
        // A: mean 100, sd 4, n 10; B: mean 104, sd 8, n 15. se^2 = 1.6 + 4.2667 = 5.8667;
        // Welch df = 5.8667^2 / (1.6^2/9 + 4.2667^2/14) = 21.718; its 97.5% t point (bisection
        // on a numerically integrated t density, apart from statrs) 2.07544: half-width 5.02696.
        let s = mean_shift(&summary(10, 100.0, 4.0), &summary(15, 104.0, 8.0), 0.95).unwrap();
        assert!((s.factor - 1.04).abs() < 1e-12);
        assert!((s.ci.0 - (1.04 - 0.0502696)).abs() < 1e-6 && (s.ci.1 - (1.04 + 0.0502696)).abs() < 1e-6, "{s:?}");
        assert!(!s.beyond_noise);
        let far = mean_shift(&summary(10, 100.0, 4.0), &summary(15, 120.0, 8.0), 0.95).unwrap();
        assert!(far.beyond_noise && far.ci.0 > 1.1, "{far:?}");
    }

    #[test]
    fn a_ratio_shift_is_the_change_of_the_log_ratio() {
        // Both studies' intervals +-2% on the log scale over 20 blocks: the same se each, so
        // the change's half-width is sqrt(2) times theirs on equal df (38 > 19: a bit less).
        let t19 = t_critical_at(19.0, 0.95);
        let ci = |r: f64| (r * (-0.02f64).exp(), r * 0.02f64.exp());
        let s = ratio_shift((0.5, ci(0.5), 20, 0.95), (0.52, ci(0.52), 20, 0.95), 0.95).unwrap();
        assert!((s.factor - 1.04).abs() < 1e-12);
        let half = (s.ci.1 / s.factor).ln();
        let se = 0.02 / t19 * 2f64.sqrt();
        assert!((half - t_critical_at(38.0, 0.95) * se).abs() < 1e-9, "{half}");
        assert!(s.beyond_noise, "4% apart with +-2.8%: {s:?}");
        let same = ratio_shift((0.5, ci(0.5), 20, 0.95), (0.505, ci(0.505), 20, 0.95), 0.95).unwrap();
        assert!(!same.beyond_noise);
        assert!(ratio_shift((0.5, ci(0.5), 1, 0.95), (0.5, ci(0.5), 20, 0.95), 0.95).is_none(), "one block: no se");
    }
}
