//! Interleaved slices: several variants measured in one run, taking turns on the machine in
//! short slices (Abedi & Brecht's randomized multiple interleaved trials, at a finer grain).
//! Each round of slices gives every variant one slice, in a random order drawn from the
//! seed, so no variant always follows another. Where variants get unequal shares, no
//! variant takes two slices in a row: a slice that follows another variant's starts with
//! cold caches, and a variant that often followed itself would be measured cheaper (in
//! A/A/A studies here, 0.2-0.3% less CPU per order for each tenth of the time more). The
//! machine's noise comes in bursts of seconds (disk flushes, CPU steal); slices that close
//! together share it, and the ratio of two variants' throughputs over the same run leaves
//! most of it out.
//!
//! A worker starts units only in its variant's slices, and only once every other variant's
//! units have finished ([`super::board`]), so no two variants ever share the machine
//! ([`Sliced`]). A variant's rate is its units over its workers' time at work inside its
//! measured window ([`Slices::at_work`]): a worker's whole time but its waits for its turn,
//! each unit's cycle counted from its start to the next unit's start or the next wait, so
//! with its think time or keying pause, as a user's cycle is alone. That time runs past the
//! slice's end by the last units' length (and their think times) and leaves out the wait for
//! the others, so variants with long units and short ones are timed alike, and windows that
//! start a few milliseconds apart do not favour anyone.
//! What the disks write is counted per slice too, or per window where each variant has
//! disks of its own ([`super::slice_writes`]).

use super::board::Board;
use super::slice_writes::PlaceWrites;
use crate::driver::{IntervalSample, Outcome, UnitRecorder, Worker};
use crate::record::TurnStarts;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a worker looks again whether the previous variant's units have finished.
const DRAIN_POLL: Duration = Duration::from_micros(100);
/// An unset window mark.
const UNSET: u64 = u64::MAX;
/// The weighted rounds kept once drawn; a worker asks for the current round or the next
/// two, so more are only needed after a stall of many rounds (then they are drawn again).
const KEPT_ROUNDS: usize = 64;

pub struct Slices {
    origin: Instant,
    slice: Duration,
    variants: usize,
    /// Each place's slices per round in the measured window (one each when empty); the
    /// warm-up gives every place one per round.
    shares: Vec<u32>,
    seed: u64,
    board: Board,
    /// What each place's workers did, for the places this process runs.
    accounts: Vec<Account>,
    /// The measured window's weighted rounds, drawn in order, each after the one before.
    weighted: Mutex<Weighted>,
    /// What window marks count from.
    epoch: Instant,
    /// What the disks under each place's database wrote, where known.
    writes: Vec<Option<PlaceWrites>>,
}

/// One place's measured window (nanoseconds from the epoch), its workers' time at work in
/// it, and what the starts of their turns cost.
struct Account {
    from: AtomicU64,
    to: AtomicU64,
    at_work_ns: AtomicU64,
    turn_starts: Mutex<TurnStarts>,
}

impl Account {
    fn new() -> Self {
        Self {
            from: AtomicU64::new(UNSET),
            to: AtomicU64::new(UNSET),
            at_work_ns: AtomicU64::new(0),
            turn_starts: Mutex::default(),
        }
    }
}

impl Slices {
    /// Slices of `slice` from `origin` on (earlier ones too: the warm-up alternates as well),
    /// for `variants` places whose units in flight `board` counts.
    pub fn new(variants: usize, slice: Duration, origin: Instant, seed: u64, board: Board) -> Self {
        let accounts = (0..variants.max(1)).map(|_| Account::new()).collect();
        let (shares, weighted) = (vec![], Mutex::default());
        let writes = (0..variants.max(1)).map(|_| None).collect();
        Self {
            origin,
            slice,
            variants: variants.max(1),
            shares,
            seed,
            board,
            accounts,
            weighted,
            epoch: Instant::now(),
            writes,
        }
    }

    /// Counts what `disks` write in `place`'s slices, or over its whole window when no other
    /// place writes to them ([`Slices::written`]).
    pub fn with_disks(mut self, place: usize, disks: crate::sys::disk_writes::DiskWrites, of_its_own: bool) -> Self {
        self.writes[place] = Some(PlaceWrites::new(disks, of_its_own));
        self
    }

    /// From the origin on, each round gives place `p` `shares[p]` slices (at least one).
    pub fn with_shares(mut self, shares: &[u32]) -> Self {
        if shares.len() == self.variants {
            self.shares = shares.iter().map(|&n| n.max(1)).collect();
        }
        self
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

    /// The round slice `k` falls in: its first slice and each of its slices' place. A round
    /// is a seeded permutation of every place's slices: one each in the warm-up, `shares`
    /// from the origin on (there, no place twice in a row).
    fn round_of(&self, k: i64) -> (i64, Vec<usize>) {
        if k >= 0 && !self.shares.is_empty() {
            let n = self.shares.iter().sum::<u32>() as i64;
            let round = k.div_euclid(n);
            return (round * n, self.weighted_round(round as u64));
        }
        let n = self.variants as i64;
        let mut order: Vec<usize> = (0..self.variants).collect();
        order.shuffle(&mut self.rng(k.div_euclid(n) as u64));
        (k.div_euclid(n) * n, order)
    }

    fn rng(&self, round: u64) -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// Weighted round `round`: each round depends on how the one before ended, so they are
    /// drawn in order from the first, and the latest kept. Every process that takes turns
    /// draws the same ones from the seed.
    fn weighted_round(&self, round: u64) -> Vec<usize> {
        let mut w = self.weighted.lock().unwrap_or_else(|e| e.into_inner());
        if round < w.first {
            *w = Weighted::default();
        }
        while w.first + w.kept.len() as u64 <= round {
            let r = w.first + w.kept.len() as u64;
            // The last warm-up slice's place comes before the first weighted round.
            let before = match w.kept.back() {
                Some(last) => last.last().copied(),
                None => Some(self.round_of(-1).1[self.variants - 1]),
            };
            // Weighted rounds draw from a stream of their own, apart from the warm-up's.
            let next = arrange(&self.shares, before, &mut self.rng(r ^ 0x5EED));
            w.kept.push_back(next);
            if w.kept.len() > KEPT_ROUNDS {
                w.kept.pop_front();
                w.first += 1;
            }
        }
        w.kept[(round - w.first) as usize].clone()
    }

    #[cfg(test)]
    fn owner(&self, k: i64) -> usize {
        let (first, order) = self.round_of(k);
        order[(k - first) as usize]
    }

    /// How long `variant` waits for its next slice (zero within its own).
    fn wait(&self, variant: usize) -> Duration {
        let now = Instant::now();
        let mut k = self.index(now);
        // Every round has a slice of every place: the next one is in this round or the next
        // (or the one after, where the warm-up's rounds meet the measured window's).
        for _ in 0..3 {
            let (first, order) = self.round_of(k);
            let from = (k - first) as usize;
            if let Some(p) = order[from..].iter().position(|&o| o == variant) {
                return self.start(k + p as i64).saturating_duration_since(now);
            }
            k = first + order.len() as i64;
        }
        Duration::ZERO
    }

    /// Lets a worker of `variant` start a unit (zero: it may, and is now at work) or says how
    /// long to wait: for its next slice, or a moment for the others' last units.
    fn enter(&self, variant: usize) -> Duration {
        let wait = self.wait(variant);
        if !wait.is_zero() {
            return wait;
        }
        if self.board.others_at_work(variant) {
            return DRAIN_POLL;
        }
        let first = self.board.enter(variant) == 0;
        // Another variant's worker that looked at the clock before this slice began may
        // have entered meanwhile; it leaves when it sees the time, and so would this one.
        let wait = self.wait(variant);
        if !wait.is_zero() {
            self.board.leave(variant);
        } else if let (true, Some(PlaceWrites::Slices(w))) = (first, &self.writes[variant]) {
            let now = Instant::now();
            w.started(self.index(now), self.ns(now), |at| self.in_window(variant, at));
        }
        wait
    }

    /// A worker of `variant` ends its unit; returns whether the unit ended inside the
    /// variant's measured window (then it counts, and so does its time at work).
    fn leave(&self, variant: usize) -> bool {
        let last = self.board.leave(variant) == 1;
        if let (true, Some(PlaceWrites::Slices(w))) = (last, &self.writes[variant]) {
            w.idle();
        }
        self.in_window(variant, self.ns(Instant::now()))
    }

    fn add_at_work(&self, variant: usize, took: Duration) {
        self.accounts[variant].at_work_ns.fetch_add(took.as_nanos() as u64, Relaxed);
    }

    /// Whether `at` (nanoseconds from the epoch) falls in `variant`'s measured window.
    fn in_window(&self, variant: usize, at: u64) -> bool {
        let account = &self.accounts[variant];
        let (a, b) = (account.from.load(Relaxed), account.to.load(Relaxed));
        a != UNSET && at >= a && (b == UNSET || at <= b)
    }

    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// `variant`'s measured window starts now.
    pub fn window_start(&self, variant: usize) {
        self.accounts[variant].from.store(self.ns(Instant::now()), Relaxed);
        if let Some(PlaceWrites::Window(w)) = &self.writes[variant] {
            w.start();
        }
    }

    /// `variant`'s measured window ends now.
    pub fn window_end(&self, variant: usize) {
        self.accounts[variant].to.store(self.ns(Instant::now()), Relaxed);
        if let Some(PlaceWrites::Window(w)) = &self.writes[variant] {
            w.end();
        }
    }

    /// Bytes the disks under `variant`'s database wrote in its slices that started in its
    /// window, or over the window when they are its own (`None` where they are not counted).
    pub fn written(&self, variant: usize) -> Option<u64> {
        self.writes[variant].as_ref()?.written(|at| self.in_window(variant, at))
    }

    /// The time `variant`'s workers were at work in its window, summed over workers.
    pub fn at_work(&self, variant: usize) -> Duration {
        Duration::from_nanos(self.accounts[variant].at_work_ns.load(Relaxed))
    }

    fn add_turn(&self, variant: usize, turn: &TurnStarts) {
        self.accounts[variant].turn_starts.lock().unwrap_or_else(|e| e.into_inner()).add(turn);
    }

    /// What the starts of `variant`'s workers' turns cost it in its window (`None` when no
    /// turn had units to compare).
    pub fn turn_starts(&self, variant: usize) -> Option<TurnStarts> {
        let tally = *self.accounts[variant].turn_starts.lock().unwrap_or_else(|e| e.into_inner());
        (tally.turns > 0).then_some(tally)
    }
}

/// The weighted rounds drawn so far: `kept[i]` is round `first + i`.
#[derive(Default)]
struct Weighted {
    first: u64,
    kept: VecDeque<Vec<usize>>,
}

/// A random order of `counts[p]` slices of each place p in which no place follows itself,
/// the first not `before`. Where no order fits (one place has more slices than all the
/// others together), that place follows itself.
fn arrange(counts: &[u32], before: Option<usize>, rng: &mut impl rand::Rng) -> Vec<usize> {
    let mut left = counts.to_vec();
    let total = counts.iter().sum::<u32>();
    let mut order = Vec::with_capacity(total as usize);
    for remaining in (1..=total).rev() {
        let pick = draw(&left, order.last().copied().or(before), remaining, rng);
        left[pick] -= 1;
        order.push(pick);
    }
    order
}

/// The next slice's place: one with more than half of the `remaining` slices must come now
/// or never fit; otherwise any but `prev`, in proportion to the slices it has left.
fn draw(left: &[u32], prev: Option<usize>, remaining: u32, rng: &mut impl rand::Rng) -> usize {
    let open: Vec<usize> = (0..left.len()).filter(|&p| left[p] > 0 && Some(p) != prev).collect();
    if let Some(&forced) = open.iter().find(|&&p| 2 * left[p] > remaining) {
        return forced;
    }
    let weight: u32 = open.iter().map(|&p| left[p]).sum();
    if weight == 0 {
        return prev.expect("slices are left");
    }
    let mut at = rng.random_range(0..weight);
    for &p in &open {
        if at < left[p] {
            return p;
        }
        at -= left[p];
    }
    unreachable!("the draw lies within the open places' weight")
}

/// Report intervals' rates over a variant's own time at work, not the wall clock: an
/// interleaved variant works only its share of each interval, so its wall-clock rate would
/// be a fraction of the rate its record reports.
#[derive(Default)]
pub struct AtWorkRates {
    /// Units and time at work per worker (s) at the last interval.
    last: (u64, f64),
}

impl AtWorkRates {
    /// `sample` with its rates over the time at work so far (`at_work`, summed over
    /// `threads` workers).
    pub fn adjust(&mut self, sample: &IntervalSample, at_work: Duration, threads: usize) -> IntervalSample {
        let at_work = at_work.as_secs_f64() / threads.max(1) as f64;
        let (units, since) = (sample.units.saturating_sub(self.last.0), at_work - self.last.1);
        let mut out = sample.clone();
        if since > 0.0 {
            out.interval_per_min = units as f64 / since * 60.0;
        }
        if at_work > 0.0 {
            out.per_min = sample.units as f64 / at_work * 60.0;
        }
        self.last = (sample.units, at_work);
        out
    }
}

/// A worker that starts units only in its variant's slices, once the others' have finished.
pub struct Sliced<'a> {
    pub inner: Box<dyn Worker + 'a>,
    pub slices: &'a Slices,
    pub variant: usize,
    /// When this worker's current unit started, and its place in the worker's turn, while
    /// it runs.
    in_unit: Option<(Instant, u32)>,
    /// The last unit's cycle, not yet counted: when the unit started, whether it ended
    /// inside the window, and its place in the turn. It runs on through the think time or
    /// pause after the unit, to the next unit's start or the next wait for a turn.
    cycle: Option<(Instant, bool, u32)>,
    /// The worker's current turn: its units so far, and their cycles in the window.
    turn: Turn,
    /// Whether the worker has waited for its turn since its last unit: the next starts one.
    between_turns: bool,
}

/// One worker's turn: the units it started, and the time at work of the counted ones: its
/// first units' apart from the later ones', and the last apart from both (it may run on
/// after the other worker has stopped, quicker than the turn's pace).
#[derive(Default)]
struct Turn {
    started: u32,
    first: (Duration, u32),
    later: (Duration, u32),
    last: Option<Duration>,
}

impl Turn {
    fn add(&mut self, place: u32, took: Duration) {
        if place < TurnStarts::FIRST_UNITS {
            self.first.0 += took;
            self.first.1 += 1;
        } else if let Some(before) = self.last.replace(took) {
            self.later.0 += before;
            self.later.1 += 1;
        }
    }

    /// The first units' time beyond the later ones' pace, and the turn's time at work;
    /// `None` for a turn without both.
    fn tally(&self) -> Option<TurnStarts> {
        let ((first, n_first), (later, n_later)) = (self.first, self.later);
        if n_first == 0 || n_later == 0 {
            return None;
        }
        let pace = later.as_secs_f64() / f64::from(n_later);
        let excess_s = first.as_secs_f64() - f64::from(n_first) * pace;
        let at_work = first + later + self.last.unwrap_or_default();
        Some(TurnStarts { turns: 1, excess_s, at_work_s: at_work.as_secs_f64() })
    }
}

impl<'a> Sliced<'a> {
    pub fn new(inner: Box<dyn Worker + 'a>, slices: &'a Slices, variant: usize) -> Self {
        Self { inner, slices, variant, in_unit: None, cycle: None, turn: Turn::default(), between_turns: false }
    }

    /// Waits until this worker may start a unit (its slice, the others' last units ended);
    /// returns how long that took.
    fn start_work(&mut self) -> Duration {
        let asked = Instant::now();
        let mut waited = false;
        loop {
            let wait = self.slices.enter(self.variant);
            if wait.is_zero() {
                break;
            }
            waited = true;
            std::thread::sleep(wait);
        }
        let now = Instant::now();
        self.end_cycle(if waited { asked } else { now });
        if waited || self.between_turns {
            self.end_turn();
        }
        self.in_unit = Some((now, self.turn.started));
        self.turn.started += 1;
        now - asked
    }

    fn stop_work(&mut self) {
        if let Some((since, place)) = self.in_unit.take() {
            self.cycle = Some((since, self.slices.leave(self.variant), place));
        }
    }

    /// The last unit's cycle ends `at`: its time at work counts if the unit did.
    fn end_cycle(&mut self, at: Instant) {
        if let Some((since, counts, place)) = self.cycle.take() {
            if counts {
                let took = at.saturating_duration_since(since);
                self.slices.add_at_work(self.variant, took);
                self.turn.add(place, took);
            }
        }
    }

    /// The worker's turn is over: its tally joins the variant's.
    fn end_turn(&mut self) {
        if let Some(tally) = self.turn.tally() {
            self.slices.add_turn(self.variant, &tally);
        }
        self.turn = Turn::default();
        self.between_turns = false;
    }
}

impl Worker for Sliced<'_> {
    /// The driver has slept the pause to this worker's slice; within it, the unit may
    /// still have to wait a moment for the previous variant's last units. That wait, and
    /// the CPU its polling takes, is neither the unit's response time, nor its work, nor
    /// driver code.
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome> {
        let cpu = crate::sys::thread_cpu();
        let waited = self.start_work();
        rec.waited_for_turn(waited, crate::sys::thread_cpu().saturating_sub(cpu));
        self.inner.run_unit(rec)
    }

    /// A worker with no pause of its own sleeps until its next slice: a wait, not work. A
    /// pause of its own (TPC-C's keying time) is part of its cycle, as alone.
    fn pause(&mut self) -> anyhow::Result<Duration> {
        let own = self.inner.pause()?;
        if !own.is_zero() {
            return Ok(own);
        }
        let wait = self.slices.wait(self.variant);
        if !wait.is_zero() {
            self.end_cycle(Instant::now());
            self.between_turns = true;
        }
        Ok(wait)
    }

    /// The unit (with what the driver did after it: an injected busy-wait, its counting)
    /// ends here, so the other variants may start theirs: a think time after it holds no
    /// one up, though it counts in this worker's cycle.
    fn unit_done(&mut self) {
        self.stop_work();
        self.inner.unit_done();
    }
}

impl Drop for Sliced<'_> {
    /// A worker that stops mid-slice must not hold the others back.
    fn drop(&mut self) {
        self.stop_work();
        self.end_cycle(Instant::now());
        self.end_turn();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slices(variants: usize, slice: Duration, origin: Instant, seed: u64) -> Slices {
        Slices::new(variants, slice, origin, seed, Board::local(variants))
    }

    #[test]
    fn disks_of_a_place_s_own_count_its_whole_window_and_shared_ones_only_its_slices() {
        use crate::sys::disk_writes::DiskWrites;
        let dir = tempfile::tempdir().unwrap();
        let stat = |name: &str, bytes: u64| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("0 0 0 0 0 0 {} 0\n", bytes / 512)).unwrap();
            path
        };
        let (own, shared) = (stat("own", 0), stat("shared", 0));
        let s = slices(2, Duration::from_secs(60), Instant::now(), 1)
            .with_disks(0, DiskWrites::of_stat_files([&own]), true)
            .with_disks(1, DiskWrites::of_stat_files([&shared]), false);
        stat("own", 1024);
        s.window_start(0);
        s.window_start(1);
        // Background writes while neither place's units run.
        stat("own", 5120);
        stat("shared", 4096);
        assert_eq!((s.written(0), s.written(1)), (Some(4096), Some(0)));
        s.window_end(0);
        stat("own", 9216);
        assert_eq!(s.written(0), Some(4096), "what is written after the window does not count");
    }

    #[test]
    fn every_round_gives_each_variant_one_slice_in_a_seeded_order() {
        let s = slices(3, Duration::from_secs(1), Instant::now(), 7);
        let mut orders = std::collections::BTreeSet::new();
        for round in -3..40i64 {
            let mut owners: Vec<usize> = (0..3).map(|p| s.owner(3 * round + p)).collect();
            orders.insert(owners.clone());
            owners.sort();
            assert_eq!(owners, vec![0, 1, 2], "round {round}");
        }
        assert!(orders.len() >= 4, "the order varies from round to round: {orders:?}");
        let again = slices(3, Duration::from_secs(1), Instant::now(), 7);
        assert!((0..30).all(|k| s.owner(k) == again.owner(k)), "the seed fixes the schedule");
    }

    #[test]
    fn shares_give_each_round_of_the_measured_window_that_many_slices_of_each_place() {
        let s = slices(3, Duration::from_secs(1), Instant::now(), 7).with_shares(&[3, 1, 2]);
        for round in 0..20i64 {
            let mut owners: Vec<usize> = (0..6).map(|p| s.owner(6 * round + p)).collect();
            owners.sort();
            assert_eq!(owners, vec![0, 0, 0, 1, 2, 2], "round {round}");
        }
        for round in -4..0i64 {
            let mut owners: Vec<usize> = (0..3).map(|p| s.owner(3 * round + p)).collect();
            owners.sort();
            assert_eq!(owners, vec![0, 1, 2], "the warm-up's round {round} gives one each");
        }
        let one = slices(2, Duration::from_secs(1), Instant::now(), 7).with_shares(&[4, 0]);
        assert_eq!((0..5).filter(|&k| one.owner(k) == 1).count(), 1, "every place keeps a slice per round");
    }

    #[test]
    fn with_unequal_shares_no_place_takes_two_slices_in_a_row() {
        let s = slices(4, Duration::from_secs(1), Instant::now(), 11).with_shares(&[3, 2, 2, 1]);
        let owners: Vec<usize> = (-4..8 * 300).map(|k| s.owner(k)).collect();
        assert!(owners.windows(2).all(|w| w[0] != w[1]), "from the warm-up's last slice on, across rounds");
        let orders: std::collections::BTreeSet<&[usize]> = owners[4..].chunks(8).collect();
        assert!(orders.len() > 20, "the rounds still vary: {}", orders.len());
        // A round asked for long after it was drawn is drawn again, the same; another
        // process with the same seed draws the same rounds.
        let again = slices(4, Duration::from_secs(1), Instant::now(), 11).with_shares(&[3, 2, 2, 1]);
        assert!((0..80)
            .chain(8 * 299..8 * 300)
            .all(|k| s.owner(k) == again.owner(k) && s.owner(k) == owners[k as usize + 4]));
        // Where one place has more slices than the others together, it follows itself as
        // little as it must: five slices, after one of its own, two others to go between.
        for seed in 0..20 {
            let order = arrange(&[5, 1, 1], Some(0), &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
            assert_eq!(order.iter().filter(|&&p| p == 0).count(), 5, "{order:?}");
            assert_eq!(order.windows(2).filter(|w| w[0] == w[1]).count(), 3, "{order:?}");
        }
    }

    #[test]
    fn a_variant_waits_until_its_own_slice_and_not_within_it() {
        let origin = Instant::now() - Duration::from_millis(10);
        let s = slices(2, Duration::from_secs(100), origin, 3);
        let (mine, other) = (s.owner(0), 1 - s.owner(0));
        assert_eq!(s.wait(mine), Duration::ZERO);
        let w = s.wait(other);
        assert!(w > Duration::from_secs(99) && w <= Duration::from_secs(200), "{w:?}");
    }

    #[test]
    fn a_slice_starts_only_when_the_previous_variants_last_unit_has_ended() {
        let slice = Duration::from_millis(40);
        let s = slices(2, slice, Instant::now(), 5);
        let (first, second) = (s.owner(0), s.owner(1));
        assert_eq!(s.enter(first), Duration::ZERO, "slice 0 is the first variant's");
        std::thread::sleep(s.start(1).saturating_duration_since(Instant::now()) + Duration::from_millis(2));
        assert_eq!(s.enter(second), DRAIN_POLL, "the first variant's unit still runs");
        s.leave(first);
        assert_eq!(s.enter(second), Duration::ZERO);
        assert!(s.enter(first) > Duration::ZERO, "the first variant's slice is over");
    }

    #[test]
    fn interval_rates_are_over_the_time_at_work() {
        let sample = |units, et_s| IntervalSample {
            et_s,
            units,
            per_min: units as f64 / et_s * 60.0,
            interval_per_min: 0.0,
            ..IntervalSample::default()
        };
        let mut rates = AtWorkRates::default();
        // Two workers, each at work a quarter of the first 1 s interval: 50 units in 0.25 s.
        let first = rates.adjust(&sample(50, 1.0), Duration::from_millis(500), 2);
        assert!((first.per_min - 12000.0).abs() < 1e-6 && (first.interval_per_min - 12000.0).abs() < 1e-6);
        let second = rates.adjust(&sample(80, 2.0), Duration::from_millis(1100), 2);
        assert!((second.interval_per_min - 30.0 / 0.3 * 60.0).abs() < 1e-6, "{}", second.interval_per_min);
        assert!((second.per_min - 80.0 / 0.55 * 60.0).abs() < 1e-6, "{}", second.per_min);
    }

    /// A worker whose units take `unit` and who pauses `pause` before each, as the driver
    /// runs it: its pause, then its unit, then `unit_done`.
    struct Paced {
        unit: Duration,
        pause: Duration,
    }

    impl Worker for Paced {
        fn run_unit(&mut self, _: &mut UnitRecorder) -> anyhow::Result<Outcome> {
            std::thread::sleep(self.unit);
            Ok(Outcome::Committed)
        }

        fn pause(&mut self) -> anyhow::Result<Duration> {
            Ok(self.pause)
        }
    }

    fn cycle(w: &mut Sliced) {
        std::thread::sleep(w.pause().unwrap());
        w.run_unit(&mut UnitRecorder::default()).unwrap();
        w.unit_done();
    }

    #[test]
    fn time_at_work_counts_the_units_that_end_inside_the_window() {
        let s = slices(1, Duration::from_secs(100), Instant::now(), 1);
        let mut w = Sliced::new(Box::new(Paced { unit: Duration::ZERO, pause: Duration::ZERO }), &s, 0);
        let mut unit = |ms| {
            w.inner = Box::new(Paced { unit: Duration::from_millis(ms), pause: Duration::ZERO });
            cycle(&mut w);
        };
        // The units outside the window are long, so that counting either shows beyond any
        // oversleep of the two inside on a loaded machine.
        unit(400);
        s.window_start(0);
        unit(20);
        unit(30);
        s.window_end(0);
        unit(400);
        drop(w);
        let t = s.at_work(0);
        assert!(t >= Duration::from_millis(50) && t < Duration::from_millis(400), "{t:?}");
    }

    #[test]
    fn a_workers_think_time_counts_as_its_time_at_work_and_its_waits_for_a_turn_do_not() {
        // Alone, a user who thinks 8 ms before each 2 ms unit runs 100 units a second; taking
        // turns with another variant it must run at that rate over its time at work too.
        let s = slices(2, Duration::from_millis(50), Instant::now(), 9);
        let mut w =
            Sliced::new(Box::new(Paced { unit: Duration::from_millis(2), pause: Duration::from_millis(8) }), &s, 0);
        let start = Instant::now();
        s.window_start(0);
        let mut units = 0;
        while start.elapsed() < Duration::from_millis(800) {
            cycle(&mut w);
            units += 1;
        }
        s.window_end(0);
        let wall = start.elapsed();
        drop(w);
        let per_unit = s.at_work(0) / units;
        assert!(per_unit >= Duration::from_millis(9), "{per_unit:?} per unit: the think time counts");
        assert!(
            s.at_work(0) < wall.mul_f64(0.8),
            "{:?} of {wall:?}: the waits for the other's slices do not",
            s.at_work(0)
        );
    }

    #[test]
    fn a_turns_first_units_are_tallied_against_the_pace_of_its_later_ones() {
        let ms = Duration::from_millis;
        let turn = |units: &[u64]| {
            let mut turn = Turn::default();
            for (place, &took) in (0..).zip(units) {
                turn.add(place, ms(took));
            }
            turn.tally()
        };
        // The last unit (quick: its sibling had stopped) sets no pace.
        let tally = turn(&[4, 1, 1, 1, 0]).unwrap();
        assert_eq!(tally.turns, 1);
        assert!((tally.excess_s - 0.003).abs() < 1e-9 && (tally.at_work_s - 0.007).abs() < 1e-9, "{tally:?}");
        assert_eq!(turn(&[4, 1, 1]), None, "a turn without units between its first and its last has no pace");
    }

    /// A worker whose unit takes 1 ms, or `cold` when it follows a gap of 10 ms or more
    /// (the other variant's slice): its caches were refilled by someone else.
    struct ColdAfterGap {
        cold: Duration,
        last_end: Option<Instant>,
    }

    impl Worker for ColdAfterGap {
        fn run_unit(&mut self, _: &mut UnitRecorder) -> anyhow::Result<Outcome> {
            let after_gap = self.last_end.is_none_or(|t| t.elapsed() >= Duration::from_millis(10));
            std::thread::sleep(if after_gap { self.cold } else { Duration::from_millis(1) });
            self.last_end = Some(Instant::now());
            Ok(Outcome::Committed)
        }
    }

    /// The turn starts' time beyond the later units' pace, per turn, of a worker of
    /// variant 0 of two, taking 30 ms turns for 600 ms.
    fn excess_per_turn(cold: Duration) -> Duration {
        let s = slices(2, Duration::from_millis(30), Instant::now(), 4);
        let mut w = Sliced::new(Box::new(ColdAfterGap { cold, last_end: None }), &s, 0);
        s.window_start(0);
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(600) {
            cycle(&mut w);
        }
        s.window_end(0);
        drop(w);
        let t = s.turn_starts(0).expect("turns with later units");
        assert!(t.turns >= 3, "{t:?}");
        Duration::from_secs_f64(t.excess_s.max(0.0) / t.turns as f64)
    }

    #[test]
    fn what_a_turns_first_unit_costs_beyond_the_others_is_its_turn_start() {
        // 5 ms more for each turn's first unit; an oversleep on a loaded machine falls on
        // first and later units alike.
        let cold = excess_per_turn(Duration::from_millis(6));
        assert!(cold >= Duration::from_millis(3) && cold <= Duration::from_millis(12), "{cold:?}");
        let warm = excess_per_turn(Duration::from_millis(1));
        assert!(warm < Duration::from_millis(2), "{warm:?}: no cost, none found");
    }
}
