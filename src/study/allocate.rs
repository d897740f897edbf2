//! How an interleaved block shares its measured time among the variants. Each comparison's
//! per-block noise falls with the time its two variants get (on this VM about as white
//! noise does: an A/A pair's sd is 1.7% at a quarter of a 5 s block each, 1.1% at half),
//! so a study whose intervals are not equally far from their targets gives more slices to
//! the variants of the widest ones (Neyman's allocation, with a minimax aim: every interval
//! reaches its target at about the same block).

/// One comparison's claim on the time: its two variants (indices into the study's), the
/// per-block noise of its log ratio so far (what its interval reflects), and the half-width
/// it must reach.
#[derive(Clone, Copy, Debug)]
pub struct Need {
    pub sides: (usize, usize),
    pub sd: f64,
    pub target: f64,
}

/// Blocks measured with equal shares before the noise is known well enough to share by.
pub const EQUAL_BLOCKS: usize = 6;

/// How much the widest interval outweighs the others in the shares.
const POWER: i32 = 4;

/// Slices per variant in one round: enough to share in steps of a quarter of an equal share.
const SLICES_PER_VARIANT: usize = 4;

/// The fewest a variant gets, as a part of its equal share: a variant with a thin share
/// measures few units per slice and a short warm-up's worth, which no interval shows.
const FLOOR: f64 = 0.5;

/// The next blocks' share of the measured time for each of `variants` variants (summing
/// to 1), given what each comparison needs and the mean share each variant had so far
/// (`used`). A variant in no comparison keeps its floor.
pub fn shares(variants: usize, needs: &[Need], used: &[f64]) -> Vec<f64> {
    let equal = 1.0 / variants.max(1) as f64;
    let used = |v: usize| used.get(v).copied().filter(|u| *u > 0.0).unwrap_or(equal);
    // What a comparison's variance is per unit of 1/share on each side, over its target².
    let weight: Vec<f64> = needs
        .iter()
        .map(|n| n.sd.powi(2) / (1.0 / used(n.sides.0) + 1.0 / used(n.sides.1)) / n.target.powi(2))
        .collect();
    let mut f = vec![equal; variants];
    for _ in 0..200 {
        // The fixed point of minimising the sum of the loads to the power POWER: a share
        // grows with the square root of what its comparisons' loads would gain from it
        // (Neyman's rule; the power leans it toward the widest interval, and a baseline in
        // every comparison gets about sqrt(comparisons) times a variant's share, Dunnett's).
        let load: Vec<f64> =
            needs.iter().zip(&weight).map(|(n, w)| w * (1.0 / f[n.sides.0] + 1.0 / f[n.sides.1])).collect();
        let top = load.iter().copied().fold(0.0, f64::max);
        if !(top > 0.0 && top.is_finite()) {
            return vec![equal; variants];
        }
        let gain = |v: usize| -> f64 {
            let mine = needs.iter().enumerate().filter(|(_, n)| n.sides.0 == v || n.sides.1 == v);
            mine.map(|(c, _)| (load[c] / top).powi(POWER - 1) * weight[c] / top).sum::<f64>().sqrt()
        };
        let wanted: Vec<f64> = (0..variants).map(gain).collect();
        let sum: f64 = wanted.iter().sum();
        for (x, w) in f.iter_mut().zip(&wanted) {
            *x = 0.5 * *x + 0.5 * w / sum;
        }
        floor_and_normalize(&mut f, FLOOR * equal);
    }
    f
}

/// Scales `f` to sum to 1 with none below `floor`.
fn floor_and_normalize(f: &mut [f64], floor: f64) {
    for _ in 0..f.len() + 1 {
        let sum: f64 = f.iter().sum();
        f.iter_mut().for_each(|x| *x /= sum);
        let low: Vec<bool> = f.iter().map(|x| *x < floor).collect();
        if !low.contains(&true) {
            return;
        }
        let pinned = floor * low.iter().filter(|l| **l).count() as f64;
        let free: f64 = f.iter().zip(&low).filter(|(_, l)| !**l).map(|(x, _)| x).sum();
        for (x, l) in f.iter_mut().zip(&low) {
            *x = if *l { floor } else { *x / free * (1.0 - pinned) };
        }
        if f.iter().all(|x| *x >= floor - 1e-12) {
            return;
        }
    }
}

/// A study's shares of the measured time, block by block.
pub struct Plan {
    /// The shares the next block gets.
    next: Vec<f64>,
    /// Each variant's shares summed over the blocks so far.
    used: Vec<f64>,
    blocks: usize,
}

impl Plan {
    pub fn new(variants: usize) -> Self {
        Self { next: vec![1.0 / variants.max(1) as f64; variants], used: vec![0.0; variants], blocks: 0 }
    }

    /// `done` blocks (the last with the planned shares) have given these intervals: plans
    /// the next block's shares.
    pub fn plan(&mut self, done: usize, widths: &[super::summary::Width]) {
        self.used.iter_mut().zip(&self.next).for_each(|(u, n)| *u += n);
        self.blocks += 1;
        if done < EQUAL_BLOCKS {
            return;
        }
        let needs: Vec<Need> = widths
            .iter()
            .filter_map(|w| {
                Some(Need { sides: w.sides, sd: w.noise_log.filter(|s| s.is_finite() && *s > 0.0)?, target: w.target })
            })
            .collect();
        let used: Vec<f64> = self.used.iter().map(|u| u / self.blocks as f64).collect();
        if !needs.is_empty() {
            // Half way from the last plan: a few blocks' sd is itself noisy, and shares
            // that swing with it would chase the noise.
            let wanted = shares(self.next.len(), &needs, &used);
            self.next.iter_mut().zip(wanted).for_each(|(n, w)| *n = 0.5 * *n + 0.5 * w);
        }
    }

    /// Slices per round for the variants that take turns (`places`, indices into the
    /// study's variants, in their places' order); empty for equal shares.
    pub fn slices(&self, places: &[usize]) -> Vec<u32> {
        let mine: Vec<f64> = places.iter().map(|&v| self.next[v]).collect();
        let sum: f64 = mine.iter().sum();
        let n = slices_per_round(&mine.iter().map(|s| s / sum).collect::<Vec<_>>());
        if n.windows(2).all(|w| w[0] == w[1]) {
            vec![]
        } else {
            n
        }
    }

    /// The shares the next block gets, per variant.
    pub fn next(&self) -> &[f64] {
        &self.next
    }
}

/// `shares` as slices per round, each at least one, and none more than all the others
/// together: then no place need ever take two slices in a row (see `run/slices.rs`).
pub fn slices_per_round(shares: &[f64]) -> Vec<u32> {
    let round = (SLICES_PER_VARIANT * shares.len()) as f64;
    let mut n: Vec<u32> = shares.iter().map(|s| ((s * round).round() as u32).max(1)).collect();
    let total: u32 = n.iter().sum();
    if let Some(most) = n.iter_mut().max_by_key(|c| **c) {
        *most = (*most).min(total - *most);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(a: usize, b: usize, sd: f64, target: f64) -> Need {
        Need { sides: (a, b), sd, target }
    }

    #[test]
    fn equal_needs_give_the_baseline_of_every_comparison_the_square_root_rules_share() {
        let needs = [need(1, 0, 0.03, 0.01), need(2, 0, 0.03, 0.01)];
        let f = shares(3, &needs, &[]);
        // sqrt(2) times either variant's share: 0.414 against 0.293.
        assert!((f[0] - 0.414).abs() < 0.01 && (f[1] - f[2]).abs() < 1e-9, "{f:?}");
        let two = shares(2, &[need(1, 0, 0.03, 0.01)], &[]);
        assert!((two[0] - 0.5).abs() < 1e-6 && (two[1] - 0.5).abs() < 1e-6, "{two:?}");
    }

    #[test]
    fn the_comparison_furthest_from_its_target_gets_the_time_and_every_variant_keeps_its_floor() {
        // Variant 1 must reach 0.5% with 3% noise, variant 2 1% with 3%: 1 needs four times
        // the variance cut, so 1 and the baseline get the most.
        let needs = [need(1, 0, 0.03, 0.005), need(2, 0, 0.03, 0.01), need(3, 0, 0.03, 0.01)];
        let f = shares(4, &needs, &[]);
        assert!((f.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(f[1] > 2.0 * f[2] && f[0] > f[2] && (f[2] - f[3]).abs() < 1e-6, "{f:?}");
        assert!(f.iter().all(|x| *x >= FLOOR / 4.0 - 1e-9), "{f:?}");
        // The worst interval is narrower than with equal shares.
        let worst = |f: &[f64]| {
            needs
                .iter()
                .map(|n| n.sd.powi(2) * (1.0 / f[n.sides.0] + 1.0 / f[n.sides.1]) / n.target.powi(2))
                .fold(0.0, f64::max)
        };
        assert!(worst(&f) < 0.8 * worst(&[0.25; 4]), "{} vs {}", worst(&f), worst(&[0.25; 4]));
    }

    #[test]
    fn noise_is_read_against_the_shares_it_was_measured_with() {
        // The same sd measured at half the time means half the noise per unit of time.
        let needs = [need(1, 0, 0.02, 0.01), need(2, 0, 0.02, 0.01)];
        let f = shares(3, &needs, &[0.4, 0.4, 0.2]);
        assert!(f[1] > f[2], "{f:?}");
    }

    #[test]
    fn a_plan_shares_equally_until_the_noise_is_known_then_by_need() {
        let width = |sides, noise_log, target| super::super::summary::Width {
            name: String::new(),
            half_width: 0.01,
            target,
            sides,
            noise_log: Some(noise_log),
            cost: false,
        };
        let widths = [width((1, 0), 0.03, 0.005), width((2, 0), 0.03, 0.01), width((3, 0), 0.03, 0.01)];
        let mut plan = Plan::new(4);
        for done in 1..EQUAL_BLOCKS {
            plan.plan(done, &widths);
            assert!(plan.slices(&[0, 1, 2, 3]).is_empty(), "equal shares after {done} blocks");
        }
        plan.plan(EQUAL_BLOCKS, &widths);
        let n = plan.slices(&[0, 1, 2, 3]);
        assert!(n[1] > n[2] && n[0] > n[2] && n[2] == n[3], "{n:?}");
        // A variant that no longer runs leaves its share to the others.
        assert_eq!(plan.slices(&[0, 1, 3]).len(), 3);
        assert!((plan.next().iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn shares_become_slices_per_round() {
        assert_eq!(slices_per_round(&[0.5, 0.25, 0.25]), vec![6, 3, 3]);
        assert_eq!(slices_per_round(&[0.96, 0.02, 0.02]), vec![2, 1, 1], "at most the others' slices");
    }
}
