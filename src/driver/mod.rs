//! The closed-loop load driver shared by every workload.
//!
//! Workers ramp up and connect, wait for a common start, then run units of work (a DS2
//! order, a TPC-C transaction) back to back until the run ends. Warmup statistics are thrown
//! away when warmup ends, as DS2 does. The controller ticks every 100 ms so Ctrl-C is
//! answered quickly; it never formats output itself, it hands events to an observer.

mod clients;
pub mod inject;
pub mod stats;

use crate::interrupt::{self, Stop};
use crate::sys::{thread_cpu, StorageIo};
pub use clients::{ClientRow, ClientsRecord, ServerTransactions};
use hdrhistogram::Histogram;
pub use inject::InjectedSlowdown;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use stats::{Counters, SharedStats};
pub use stats::{FromStart, Latencies, LatencySummary, Measured, Outcome, UnitRecorder};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// One database session running units of work. Created on its own thread.
pub trait Worker {
    /// Runs one unit of work, timing each operation into `rec`. An error ends the run as failed.
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> anyhow::Result<Outcome>;

    /// Time to wait before the next unit, outside its response time (TPC-C keying and think
    /// times). The driver sleeps it, so a stop request cuts it short.
    fn pause(&mut self) -> anyhow::Result<Duration> {
        Ok(Duration::ZERO)
    }

    /// The driver is done with the last unit: its injected busy-wait and its counting are
    /// over, and a think time may follow.
    fn unit_done(&mut self) {}
}

/// Restarts of one transaction before the run fails: a database that conflicts this often
/// is not being measured any more.
pub const MAX_RESTARTS: u32 = 100;

/// Runs `attempt` until it succeeds, restarting it (and counting a retry of that kind) while
/// it fails with an error `conflict` names: a deadlock, a serialization failure, a busy
/// database.
pub fn restarting<T, E>(
    rec: &mut UnitRecorder,
    conflict: impl Fn(&E) -> Option<&'static str>,
    mut attempt: impl FnMut() -> Result<T, E>,
) -> anyhow::Result<T>
where
    E: std::error::Error + Send + Sync + 'static,
{
    for _ in 0..MAX_RESTARTS {
        match attempt() {
            Ok(v) => return Ok(v),
            Err(e) => match conflict(&e) {
                Some(kind) => rec.retry(kind),
                None => return Err(e.into()),
            },
        }
    }
    anyhow::bail!("one transaction conflicted or found the database busy {MAX_RESTARTS} times in a row")
}

/// How the driver paces the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Pacing {
    pub threads: usize,
    /// Threads started per second: thread i waits uniform [0, threads / ramp_rate) s.
    pub ramp_rate: f64,
    #[serde(with = "secs")]
    pub warmup: Duration,
    #[serde(with = "secs")]
    pub duration: Duration,
    /// Mean think time; each worker sleeps uniform [0, 2 x think_time) after a unit.
    #[serde(with = "secs")]
    pub think_time: Duration,
    /// Units each worker runs before it stops (HammerDB's per-user request count); the run
    /// ends when every worker is done. `None`: workers run until the duration is up.
    pub iterations: Option<u64>,
    #[serde(with = "secs")]
    pub report_interval: Duration,
    pub seed: u64,
    /// The index of this process's first worker among all of the run's workers (a remote
    /// client drives a slice of them); workers take their identity and stream from it.
    #[serde(skip)]
    pub first_worker: usize,
    /// Test-only: a busy-wait added to every unit, or extra uncounted units, so verdict tests
    /// have a known slowdown.
    #[serde(default, skip_serializing_if = "InjectedSlowdown::is_none")]
    pub injected_delay: InjectedSlowdown,
    /// Read each worker thread's CPU time around every unit: the engine's cost where it runs
    /// in those threads (SQLite), elsewhere two system calls per unit of client cost only.
    #[serde(skip)]
    pub worker_cpu: bool,
    /// Worker `i` runs on the `i`-th CPU the process may use (round robin): in a sliced run,
    /// every variant's workers then take turns on the same CPUs ([`crate::sys::pin_thread`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pin_workers: bool,
}

impl Pacing {
    /// A fixed amount of work in one session: `units` units in one worker, with no warm-up
    /// or think time, however long they take (the batch suite, bignw, a command, a replay).
    pub fn fixed_work(&mut self, units: u64) {
        self.threads = 1;
        self.warmup = Duration::ZERO;
        self.think_time = Duration::ZERO;
        self.iterations = Some(units);
        self.duration = self.duration.max(Duration::from_secs(7 * 24 * 3600));
    }
}

mod secs {
    use serde::Deserialize;

    pub fn serialize<S: serde::Serializer>(d: &std::time::Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<std::time::Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        std::time::Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

/// One reporting interval of the measured window (DS2 prints one every 10 s).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Seconds since the statistics were last reset.
    pub et_s: f64,
    /// Units since the reset (DS2 `n_overall`).
    pub units: u64,
    /// Cumulative rate since the reset, per minute (DS2 `opm`).
    pub per_min: f64,
    /// Rate within this interval only, per minute (for over-time charts).
    pub interval_per_min: f64,
    pub lastn_max_ms: f64,
    pub avg_ms: f64,
    /// Mean unit latency of the units finished in this interval (DS2 `rt_tot_sampled`).
    pub sampled_ms: f64,
    pub rollbacks: u64,
    pub rollback_pct: f64,
    /// Unit latency percentiles of the units finished in this interval (absent in records
    /// written before they were kept).
    #[serde(default)]
    pub p50_ms: f64,
    #[serde(default)]
    pub p95_ms: f64,
    #[serde(default)]
    pub p99_ms: f64,
}

impl IntervalSample {
    fn new(et: Duration, now: Counters, prev: Counters, since_prev: Duration, latencies: &Histogram<u64>) -> Self {
        let q = stats::IntervalQuantiles::of(latencies);
        let et_s = et.as_secs_f64();
        let per = |n: u64, secs: f64| if secs > 0.0 { 60.0 * n as f64 / secs } else { 0.0 };
        let avg = |us: u64, n: u64| if n > 0 { us as f64 / n as f64 / 1000.0 } else { 0.0 };
        let d_units = now.units - prev.units;
        Self {
            et_s,
            units: now.units,
            per_min: per(now.units, et_s),
            interval_per_min: per(d_units, since_prev.as_secs_f64()),
            lastn_max_ms: now.lastn_max_us as f64 / 1000.0,
            avg_ms: avg(now.unit_us_sum, now.units),
            sampled_ms: avg(now.unit_us_sum - prev.unit_us_sum, d_units),
            rollbacks: now.rollbacks,
            rollback_pct: if now.units > 0 { 100.0 * now.rollbacks as f64 / now.units as f64 } else { 0.0 },
            p50_ms: q.p50_ms,
            p95_ms: q.p95_ms,
            p99_ms: q.p99_ms,
        }
    }
}

/// What the observer hears about while the run goes on.
pub enum Event<'a> {
    /// Every controller tick: progress through the current phase, in seconds, or in units
    /// when the run counts iterations.
    Tick { done: u64, of: u64, warmup: bool },
    Interval {
        sample: &'a IntervalSample,
        /// The unit latencies of this interval (its percentiles are in `sample`).
        latencies: &'a Histogram<u64>,
        warmup: bool,
    },
    /// The measured window starts now; `after_warmup`: warmup ended and statistics were zeroed.
    WindowStart { after_warmup: bool },
    /// The measured window ends now (workers may still finish their current unit).
    WindowEnd,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", content = "cause", rename_all = "lowercase")]
pub enum RunStatus {
    Completed,
    Interrupted,
    Failed(String),
}

/// Everything a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    #[serde(flatten)]
    pub status: RunStatus,
    /// Length of the measured window in seconds (0 if it never started).
    pub elapsed_s: f64,
    pub measured: Measured,
    pub from_start: FromStart,
    pub intervals: Vec<IntervalSample>,
    /// CPU used by this whole process over the measured window, as % of all cores.
    pub process_cpu_pct: f64,
    /// This process's resident memory (MB) when the measured window started and ended: a
    /// driver that keeps nothing per unit ends where it started.
    pub rss_mb: Option<(f64, f64)>,
    /// How much the workload's database counter moved over the window, when it has one
    /// (see `Workload::window_counter`); the caller fills it in.
    pub window_counter: Option<i64>,
    /// The histograms behind `measured`'s percentiles.
    #[serde(skip)]
    pub latencies: Latencies,
    /// The client hosts that drove the run, when they were remote (see `crate::remote`).
    #[serde(skip)]
    pub remote: Option<ClientsRecord>,
}

impl RunResult {
    /// Units per second over the measured window (TPS for a transaction workload).
    pub fn per_second(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.measured.units as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
}

const PHASE_WARMUP: u8 = 0;
const PHASE_MEASURE: u8 = 1;
const PHASE_DONE: u8 = 2;
const TICK: Duration = Duration::from_millis(100);

/// Runs `make_worker(i)` on each of `pacing.threads` threads and drives them to the end.
pub fn run<'w>(
    pacing: &Pacing,
    op_names: &[&str],
    make_worker: &(dyn Fn(usize) -> anyhow::Result<Box<dyn Worker + 'w>> + Sync),
    observe: &mut dyn FnMut(Event),
) -> RunResult {
    run_gated(pacing, op_names, make_worker, &mut || {}, observe)
}

/// [`run`], with a start gate: once every worker is connected (or failed to), `gate` is
/// called and no unit starts before it returns; a remote client waits there for the
/// coordinator's common start.
pub fn run_gated<'w>(
    pacing: &Pacing,
    op_names: &[&str],
    make_worker: &(dyn Fn(usize) -> anyhow::Result<Box<dyn Worker + 'w>> + Sync),
    gate: &mut dyn FnMut(),
    observe: &mut dyn FnMut(Event),
) -> RunResult {
    let crew = Crew::new(pacing, op_names.len());
    let mut watched = Watched::new();
    std::thread::scope(|scope| {
        for i in 0..pacing.threads {
            let crew = &crew;
            std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn_scoped(scope, move || crew.worker(i, make_worker))
                .expect("spawning a worker thread");
        }
        crew.connected.wait();
        gate();
        crew.go.wait();
        watched.control(&crew, observe);
        crew.phase.store(PHASE_DONE, Relaxed);
        crew.stop.request();
    });
    watched.result(crew, op_names)
}

/// What a run's worker threads and its control loop share.
struct Crew<'p> {
    pacing: &'p Pacing,
    stats: SharedStats,
    stop: Stop,
    phase: AtomicU8,
    /// The first failure, which ends the run.
    failure: Mutex<Option<String>>,
    /// Every worker connected (or failed to), then the common go.
    connected: Barrier,
    go: Barrier,
    finished: AtomicUsize,
}

impl<'p> Crew<'p> {
    fn new(pacing: &'p Pacing, ops: usize) -> Self {
        Self {
            pacing,
            stats: SharedStats::new(pacing.threads, ops),
            stop: Stop::default(),
            phase: AtomicU8::new(if pacing.warmup.is_zero() { PHASE_MEASURE } else { PHASE_WARMUP }),
            failure: Mutex::new(None),
            connected: Barrier::new(pacing.threads + 1),
            go: Barrier::new(pacing.threads + 1),
            finished: AtomicUsize::new(0),
        }
    }

    fn fail(&self, msg: String) {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(msg);
        self.stop.request();
    }

    /// Worker `i`'s thread: connects at a random point of the ramp-up, waits for the common
    /// go, then works until the run stops.
    fn worker<'w>(&self, i: usize, make_worker: &(dyn Fn(usize) -> anyhow::Result<Box<dyn Worker + 'w>> + Sync)) {
        let pacing = self.pacing;
        let id = pacing.first_worker + i;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(pacing.seed ^ ((id as u64 + 1) << 32));
        let ramp = pacing.threads as f64 / pacing.ramp_rate;
        let pinned = if pacing.pin_workers { crate::sys::pin_thread(i).map(drop) } else { Ok(()) };
        let worker = if self.stop.sleep(Duration::from_secs_f64(rng.random_range(0.0..ramp))) {
            None
        } else if let Err(e) = pinned {
            self.fail(format!("worker {id}: {e:#}"));
            None
        } else {
            make_worker(id).map_err(|e| self.fail(format!("worker {id} could not start: {e:#}"))).ok()
        };
        self.connected.wait();
        self.go.wait();
        if let Some(mut w) = worker {
            let fail = |msg: String| self.fail(msg);
            work(i, w.as_mut(), &mut rng, pacing, &self.stats, &self.stop, &self.phase, &fail);
        }
        self.finished.fetch_add(1, Relaxed);
    }
}

/// What the control loop saw: how the run ended, its report intervals, and the measured
/// window with the process's CPU time and memory at its two ends.
struct Watched {
    status: RunStatus,
    intervals: Vec<IntervalSample>,
    window: (Option<Instant>, Option<Instant>),
    cpu: (f64, f64),
    rss: (Option<f64>, Option<f64>),
}

impl Watched {
    fn new() -> Self {
        Self {
            status: RunStatus::Completed,
            intervals: vec![],
            window: (None, None),
            cpu: (0.0, 0.0),
            rss: (None, None),
        }
    }

    fn open_window(&mut self, at: Instant, after_warmup: bool, observe: &mut dyn FnMut(Event)) {
        self.window.0 = Some(at);
        (self.cpu.0, self.rss.0) = (process_cpu_seconds(), process_rss_mb());
        observe(Event::WindowStart { after_warmup });
    }

    /// Ticks until the window is over, every unit done, the run failed or interrupted:
    /// ends the warm-up, reports progress and takes each report interval.
    fn control(&mut self, crew: &Crew, observe: &mut dyn FnMut(Event)) {
        let pacing = crew.pacing;
        let start = Instant::now();
        let mut measure_start = start;
        if crew.phase.load(Relaxed) == PHASE_MEASURE {
            self.open_window(start, false, observe);
        }
        let total_units = pacing.iterations.map(|n| n * pacing.threads as u64);
        let mut prev = (Counters::default(), Duration::ZERO);
        loop {
            if crew.stop.sleep(TICK) {
                break;
            }
            if interrupt::interrupted() {
                self.status = RunStatus::Interrupted;
                break;
            }
            let now = Instant::now();
            let warmup = crew.phase.load(Relaxed) == PHASE_WARMUP;
            if warmup && now - start >= pacing.warmup {
                crew.stats.reset_measured();
                crew.phase.store(PHASE_MEASURE, Relaxed);
                measure_start = now;
                prev = (Counters::default(), Duration::ZERO);
                self.open_window(now, true, observe);
                continue;
            }
            let et = now - measure_start;
            let of = if warmup { pacing.warmup } else { pacing.duration };
            match total_units.filter(|_| !warmup) {
                Some(of) => observe(Event::Tick { done: crew.stats.counters().units, of, warmup }),
                None => observe(Event::Tick { done: et.as_secs().min(of.as_secs()), of: of.as_secs(), warmup }),
            }
            if et - prev.1 >= pacing.report_interval {
                let c = crew.stats.counters();
                let latencies = crew.stats.take_interval();
                let sample = IntervalSample::new(et, c, prev.0, et - prev.1, &latencies);
                observe(Event::Interval { sample: &sample, latencies: &latencies, warmup });
                if !warmup {
                    self.intervals.push(sample);
                }
                prev = (c, et);
            }
            if !warmup && (et >= pacing.duration || crew.finished.load(Relaxed) == pacing.threads) {
                break;
            }
        }
        if self.window.0.is_some() {
            self.window.1 = Some(Instant::now());
            (self.cpu.1, self.rss.1) = (process_cpu_seconds(), process_rss_mb());
            observe(Event::WindowEnd);
        }
    }

    fn result(self, crew: Crew, op_names: &[&str]) -> RunResult {
        let status = match crew.failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(msg) => RunStatus::Failed(msg),
            None => self.status,
        };
        let elapsed = match self.window {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            _ => 0.0,
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let latencies = crew.stats.latencies(op_names.len());
        RunResult {
            status,
            elapsed_s: elapsed,
            measured: crew.stats.measured(op_names, &latencies),
            from_start: crew.stats.from_start(op_names),
            intervals: self.intervals,
            process_cpu_pct: if elapsed > 0.0 { 100.0 * (self.cpu.1 - self.cpu.0) / elapsed / cores } else { 0.0 },
            rss_mb: self.rss.0.zip(self.rss.1),
            window_counter: None,
            latencies,
            remote: None,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn work(
    i: usize,
    worker: &mut dyn Worker,
    rng: &mut impl Rng,
    pacing: &Pacing,
    stats: &SharedStats,
    stop: &Stop,
    phase: &AtomicU8,
    fail: &dyn Fn(String),
) {
    let mut rec = UnitRecorder::default();
    let think = pacing.think_time.as_secs_f64();
    let mut done = 0;
    let mut injected = inject::Injector::new(pacing.injected_delay);
    // The thread's storage I/O when it started its first measured unit.
    let mut io_from: Option<Option<StorageIo>> = None;
    while !stop.is_requested() && pacing.iterations.is_none_or(|n| done < n) {
        match worker.pause() {
            Ok(d) if d.is_zero() => {}
            Ok(d) => {
                if stop.sleep(d) {
                    break;
                }
            }
            Err(e) => return fail(format!("{e:#}")),
        }
        if io_from.is_none() && phase.load(Relaxed) == PHASE_MEASURE {
            io_from = Some(StorageIo::of("thread-self"));
        }
        rec.clear();
        let t0 = Instant::now();
        let cpu0 = pacing.worker_cpu.then(thread_cpu);
        let outcome = match worker.run_unit(&mut rec) {
            Ok(o) => o,
            // A unit cut short by Ctrl-C (a read that gave up waiting, a managed server the
            // signal stopped too): the controller records the run as interrupted.
            Err(e) if e.is::<interrupt::Interrupted>() || interrupt::interrupted() => return,
            Err(e) => return fail(format!("{e:#}")),
        };
        injected.spin(&mut rec);
        // An injected extra unit costs its time and CPU like any other, and the database
        // holds its work (the invariant checks count it), but it is not measured.
        let counted = injected.counts_this_unit();
        stats.count_from_start(&rec, outcome);
        done += u64::from(counted);
        if phase.load(Relaxed) != PHASE_DONE {
            if counted {
                stats.record(i, &rec, outcome);
            }
            let cpu = cpu0.map_or(Duration::ZERO, |c| thread_cpu().saturating_sub(c).saturating_sub(rec.turn_cpu()));
            stats.account(&rec, t0.elapsed(), cpu);
        }
        worker.unit_done();
        if think > 0.0 && stop.sleep(Duration::from_secs_f64(rng.random_range(0.0..2.0 * think))) {
            break;
        }
    }
    if let (Some(Some(from)), Some(to)) = (io_from, StorageIo::of("thread-self")) {
        stats.add_storage_reads(to.since(from));
    }
}

/// User plus system CPU seconds this process has used so far.
pub(crate) fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// This process's resident set in MB, from /proc/self/statm (Linux).
fn process_rss_mb() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some((pages * page.max(1) as u64) as f64 / 1e6)
}

#[cfg(test)]
mod tests;
