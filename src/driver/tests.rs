//! The driver end to end on toy workers: warm-up, failures, pauses, iterations, injection.

use super::*;

struct Sleeper(Duration, u32);
impl Worker for Sleeper {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome> {
        std::thread::sleep(self.0);
        rec.op(0, self.0);
        self.1 += 1;
        if self.1 == 1000 {
            anyhow::bail!("boom")
        }
        Ok(if self.1.is_multiple_of(4) { Outcome::RolledBack } else { Outcome::Committed })
    }
}

fn pacing(threads: usize, warmup_ms: u64, ms: u64) -> Pacing {
    Pacing {
        threads,
        ramp_rate: 1000.0,
        warmup: Duration::from_millis(warmup_ms),
        duration: Duration::from_millis(ms),
        think_time: Duration::ZERO,
        iterations: None,
        report_interval: Duration::from_millis(200),
        seed: 1,
        injected_delay: InjectedSlowdown::None,
        first_worker: 0,
        worker_cpu: true,
        pin_workers: false,
    }
}

#[test]
fn warmup_is_excluded_and_from_start_is_not() {
    let mk = |_| Ok(Box::new(Sleeper(Duration::from_millis(5), 0)) as Box<dyn Worker>);
    let mut resets = 0;
    let r = run(&pacing(2, 300, 600), &["op"], &mk, &mut |e| {
        if let Event::WindowStart { after_warmup: true } = e {
            resets += 1
        }
    });
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(resets, 1);
    let total = r.from_start.committed + r.from_start.rolled_back;
    assert!(r.measured.units > 20 && r.measured.units < total, "{r:?}");
    assert!(r.elapsed_s >= 0.6 && r.elapsed_s < 1.5);
    assert!(!r.intervals.is_empty());
    // Every fourth unit rolls back.
    let rate = r.measured.rollbacks as f64 / r.measured.units as f64;
    assert!((rate - 0.25).abs() < 0.05, "{rate}");
}

/// Burns `self.0` of CPU per unit.
/// Computes for a set amount of its thread's CPU time: however often the machine takes the
/// core away, the unit's CPU is the same.
struct Spinner(Duration);
impl Worker for Spinner {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome> {
        let (t, cpu) = (Instant::now(), crate::sys::thread_cpu());
        while crate::sys::thread_cpu() - cpu < self.0 {
            std::hint::spin_loop();
        }
        rec.op(0, t.elapsed());
        Ok(Outcome::Committed)
    }
}

/// Burns `self.0` of CPU waiting for its turn (as a worker polling for its slice does),
/// then `self.1` in the unit.
struct TurnTaker(Duration, Duration);
impl Worker for TurnTaker {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome> {
        let (t, cpu) = (Instant::now(), crate::sys::thread_cpu());
        Spinner(self.0).run_unit(&mut UnitRecorder::default())?;
        rec.waited_for_turn(t.elapsed(), crate::sys::thread_cpu() - cpu);
        Spinner(self.1).run_unit(rec)
    }
}

#[test]
fn worker_cpu_counts_what_units_compute_not_what_they_wait_for() {
    let per_unit = |mk: &(dyn Fn(usize) -> anyhow::Result<Box<dyn Worker>> + Sync)| {
        let r = run(&pacing(1, 0, 400), &["op"], mk, &mut |_| {});
        r.measured.worker_cpu_s / r.measured.units as f64
    };
    // A unit that computes for 2 ms of CPU counts those (and the driver's few microseconds);
    // one that sleeps as long counts next to nothing. (Spinning for 2 ms of wall time made a
    // busy machine's preemptions fail the test.)
    let spin = per_unit(&|_| Ok(Box::new(Spinner(Duration::from_millis(2))) as Box<dyn Worker>));
    assert!((0.0019..0.003).contains(&spin), "{spin}");
    let sleep = per_unit(&|_| Ok(Box::new(Sleeper(Duration::from_millis(2), 0)) as Box<dyn Worker>));
    assert!(sleep < 0.0004, "{sleep}");
    // The CPU spent polling for a turn is the interleaving's, not the unit's.
    let turns = |_| Ok(Box::new(TurnTaker(Duration::from_millis(2), Duration::from_millis(1))) as Box<dyn Worker>);
    let turn = per_unit(&turns);
    assert!((0.0009..0.0015).contains(&turn), "{turn}");
}

#[test]
fn a_failing_worker_fails_the_run_with_its_cause() {
    let mk = |i| {
        if i == 1 {
            anyhow::bail!("no connection")
        }
        Ok(Box::new(Sleeper(Duration::from_millis(1), 0)) as Box<dyn Worker>)
    };
    let r = run(&pacing(2, 0, 5000), &["op"], &mk, &mut |_| {});
    assert_eq!(r.status, RunStatus::Failed("worker 1 could not start: no connection".into()));
}

#[test]
fn an_error_mid_run_stops_everything() {
    let mk = |_| Ok(Box::new(Sleeper(Duration::ZERO, 0)) as Box<dyn Worker>);
    let t = Instant::now();
    let r = run(&pacing(1, 0, 60_000), &["op"], &mk, &mut |_| {});
    assert_eq!(r.status, RunStatus::Failed("boom".into()));
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn iterations_end_the_run_when_every_worker_is_done() {
    let mk = |_| Ok(Box::new(Sleeper(Duration::from_millis(1), 0)) as Box<dyn Worker>);
    let mut p = pacing(3, 0, 60_000);
    p.iterations = Some(50);
    let mut windows = (0, 0);
    let r = run(&p, &["op"], &mk, &mut |e| match e {
        Event::WindowStart { after_warmup: false } => windows.0 += 1,
        Event::WindowEnd => windows.1 += 1,
        _ => {}
    });
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!((r.measured.units, r.from_start.committed + r.from_start.rolled_back), (150, 150));
    assert_eq!(windows, (1, 1));
    assert!(r.elapsed_s < 5.0, "{}", r.elapsed_s);
}

/// Counts the units it runs.
struct Counter(std::sync::Arc<AtomicUsize>);
impl Worker for Counter {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome> {
        self.0.fetch_add(1, Relaxed);
        rec.op(0, Duration::from_micros(10));
        Ok(Outcome::Committed)
    }
}

#[test]
fn injected_extra_units_are_run_but_not_counted() {
    let ran = std::sync::Arc::new(AtomicUsize::new(0));
    let mk = |_| Ok(Box::new(Counter(ran.clone())) as Box<dyn Worker>);
    let mut p = pacing(2, 0, 60_000);
    (p.iterations, p.injected_delay) = (Some(40), "25% more units".parse().unwrap());
    let r = run(&p, &["op"], &mk, &mut |_| {});
    assert_eq!(r.status, RunStatus::Completed);
    // Each worker's 40 counted units had 10 extra ones after them (the last after unit 40
    // ends its run before it starts); the database saw them all.
    assert_eq!(ran.load(Relaxed), 2 * (40 + 9), "extras run beside the counted units");
    assert_eq!((r.measured.units, r.from_start.committed), (80, 98));
    assert_eq!(r.measured.unit_latency.count, 80, "extras leave no latency");
}

/// Pauses 10 ms three times, then a minute; counts the units the driver says are done.
struct Pauser(u32, std::sync::Arc<AtomicUsize>);
impl Worker for Pauser {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome> {
        rec.op(0, Duration::from_micros(10));
        Ok(Outcome::Committed)
    }
    fn pause(&mut self) -> anyhow::Result<Duration> {
        self.0 += 1;
        Ok(Duration::from_millis(if self.0 > 3 { 60_000 } else { 10 }))
    }
    fn unit_done(&mut self) {
        self.1.fetch_add(1, Relaxed);
    }
}

#[test]
fn pauses_are_slept_outside_units_and_cut_short_by_the_end() {
    let done = std::sync::Arc::new(AtomicUsize::new(0));
    let mk = |_| Ok(Box::new(Pauser(0, done.clone())) as Box<dyn Worker>);
    let t = Instant::now();
    let r = run(&pacing(1, 0, 500), &["op"], &mk, &mut |_| {});
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.measured.units, 3);
    assert_eq!(done.load(Relaxed), 3, "the worker hears of every unit's end");
    assert!(t.elapsed() < Duration::from_secs(5));
}
