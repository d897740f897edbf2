//! Interleaved slices: several variants measured in one run, taking turns on the machine in
//! short slices (Abedi & Brecht's randomized multiple interleaved trials, at a finer grain).
//! Each round of slices gives every variant one slice, in a random order drawn from the
//! seed, so no variant always follows another. The machine's noise comes in bursts of
//! seconds (disk flushes, CPU steal); slices that close together share it, and the ratio of
//! two variants' throughputs over the same run leaves most of it out.
//!
//! A worker only starts units in its variant's slices ([`Sliced`]); a variant's rate is its
//! units over its own slice time inside its measured window ([`Slices::active`]), so windows
//! that start a few milliseconds apart do not favour anyone.

use crate::driver::{Outcome, UnitRecorder, Worker};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::time::{Duration, Instant};

pub struct Slices {
    origin: Instant,
    slice: Duration,
    variants: usize,
    seed: u64,
}

impl Slices {
    /// Slices of `slice` from `origin` on (earlier ones too: the warm-up alternates as well).
    pub fn new(variants: usize, slice: Duration, origin: Instant, seed: u64) -> Self {
        Self { origin, slice, variants: variants.max(1), seed }
    }

    /// The slice `at` falls in (negative before the origin).
    fn index(&self, at: Instant) -> i64 {
        let secs = match at.checked_duration_since(self.origin) {
            Some(d) => d.as_secs_f64(),
            None => -(self.origin - at).as_secs_f64(),
        };
        (secs / self.slice.as_secs_f64()).floor() as i64
    }

    fn start(&self, k: i64) -> Instant {
        let offset = self.slice.mul_f64(k.unsigned_abs() as f64);
        if k >= 0 {
            self.origin + offset
        } else {
            self.origin - offset
        }
    }

    /// The variant whose slice `k` is: round `k / variants` is a seeded permutation.
    fn owner(&self, k: i64) -> usize {
        let n = self.variants as i64;
        let round = k.div_euclid(n) as u64;
        let mut order: Vec<usize> = (0..self.variants).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        order.shuffle(&mut rng);
        order[k.rem_euclid(n) as usize]
    }

    /// How long `variant` waits for its next slice (zero within its own).
    pub fn wait(&self, variant: usize) -> Duration {
        let now = Instant::now();
        let k = self.index(now);
        (k..k + 2 * self.variants as i64)
            .find(|&j| self.owner(j) == variant)
            .map_or(Duration::ZERO, |j| self.start(j).saturating_duration_since(now))
    }

    /// `variant`'s slice time between `from` and `to`.
    pub fn active(&self, variant: usize, from: Instant, to: Instant) -> Duration {
        let mut total = Duration::ZERO;
        for k in self.index(from)..=self.index(to) {
            if self.owner(k) == variant {
                let (a, b) = (self.start(k).max(from), self.start(k + 1).min(to));
                total += b.saturating_duration_since(a);
            }
        }
        total
    }
}

/// A worker that starts units only in its variant's slices.
pub struct Sliced<'a> {
    pub inner: Box<dyn Worker + 'a>,
    pub slices: &'a Slices,
    pub variant: usize,
}

impl Worker for Sliced<'_> {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome> {
        self.inner.run_unit(rec)
    }

    fn pause(&mut self) -> anyhow::Result<Duration> {
        let own = self.inner.pause()?;
        Ok(own.max(self.slices.wait(self.variant)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_gives_each_variant_one_slice_in_a_seeded_order() {
        let s = Slices::new(3, Duration::from_secs(1), Instant::now(), 7);
        let mut orders = std::collections::BTreeSet::new();
        for round in -3..40i64 {
            let mut owners: Vec<usize> = (0..3).map(|p| s.owner(3 * round + p)).collect();
            orders.insert(owners.clone());
            owners.sort();
            assert_eq!(owners, vec![0, 1, 2], "round {round}");
        }
        assert!(orders.len() >= 4, "the order varies from round to round: {orders:?}");
        let again = Slices::new(3, Duration::from_secs(1), Instant::now(), 7);
        assert!((0..30).all(|k| s.owner(k) == again.owner(k)), "the seed fixes the schedule");
    }

    #[test]
    fn active_time_splits_any_window_between_the_variants() {
        let origin = Instant::now();
        let s = Slices::new(2, Duration::from_millis(500), origin, 1);
        let (from, to) = (origin + Duration::from_millis(130), origin + Duration::from_millis(10_370));
        let (a, b) = (s.active(0, from, to), s.active(1, from, to));
        assert_eq!(a + b, to - from);
        // Whole rounds split evenly; the partial slices at the two ends add up to one slice.
        assert!(a.abs_diff(b) <= Duration::from_millis(500), "{a:?} vs {b:?}");
        let whole = (origin, origin + Duration::from_secs(10));
        assert_eq!(s.active(0, whole.0, whole.1), Duration::from_secs(5));
    }

    #[test]
    fn a_variant_waits_until_its_own_slice_and_not_within_it() {
        let origin = Instant::now() - Duration::from_millis(10);
        let s = Slices::new(2, Duration::from_secs(100), origin, 3);
        let (mine, other) = (s.owner(0), 1 - s.owner(0));
        assert_eq!(s.wait(mine), Duration::ZERO);
        let w = s.wait(other);
        assert!(w > Duration::from_secs(99) && w <= Duration::from_secs(200), "{w:?}");
    }
}
