//! Run statistics in constant memory.
//!
//! Every latency goes into an HDR histogram (never a per-sample vector), so a run of hours
//! uses the same memory as a run of seconds. Workers record into a few sharded histogram
//! sets behind rarely contended mutexes; the controller only takes those locks to reset them
//! when warmup ends and to merge them at the end. Counters the controller's tick needs are
//! atomics.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// Highest latency a histogram tracks exactly (1 hour, in microseconds); longer ones saturate.
const MAX_TRACKABLE_US: u64 = 3_600_000_000;
/// DS2's `rt_tot_lastn_max` is the maximum over the latest 100 units.
const LASTN: usize = 100;

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 3).expect("static histogram bounds are valid")
}

/// What one unit of work (a DS2 order) did: the operations it timed and its bookkeeping.
/// Workers fill it in; the driver reuses one per worker, so recording allocates nothing.
#[derive(Default)]
pub struct UnitRecorder {
    ops: Vec<(usize, Duration)>,
    untimed: Duration,
    /// CPU time the worker's thread spent waiting for the unit's turn.
    turn_cpu: Duration,
    retries: Vec<&'static str>,
    events: Vec<&'static str>,
    lock_waits: u64,
}

impl UnitRecorder {
    pub(crate) fn clear(&mut self) {
        self.ops.clear();
        self.untimed = Duration::ZERO;
        self.turn_cpu = Duration::ZERO;
        self.retries.clear();
        self.events.clear();
        self.lock_waits = 0;
    }

    /// Records one timed operation (index into the workload's operation list).
    pub fn op(&mut self, op: usize, took: Duration) {
        self.ops.push((op, took));
    }

    /// Database time that is deliberately left out of the unit's response time (DS2's price
    /// lookup before a purchase). It is still database time, not driver overhead.
    pub fn untimed(&mut self, took: Duration) {
        self.untimed += took;
    }

    /// Time the unit waited for its turn before it started, and the CPU time its thread
    /// spent polling meanwhile: neither its response time nor its work.
    pub fn waited_for_turn(&mut self, took: Duration, cpu: Duration) {
        self.untimed += took;
        self.turn_cpu += cpu;
    }

    /// The CPU time its thread spent waiting for the unit's turn.
    pub fn turn_cpu(&self) -> Duration {
        self.turn_cpu
    }

    /// A whole transaction was restarted, because of `cause` (deadlock, busy database...).
    pub fn retry(&mut self, cause: &'static str) {
        self.retries.push(cause);
    }

    /// Something worth counting happened that is neither a retry nor a failure (TPC-C: a
    /// Delivery found a district with nothing to deliver).
    pub fn event(&mut self, what: &'static str) {
        self.events.push(what);
    }

    /// The engine made this unit wait for a lock this many times before it could proceed.
    pub fn lock_waits(&mut self, n: u64) {
        self.lock_waits += n;
    }

    fn timed_total(&self) -> Duration {
        self.ops.iter().map(|(_, d)| *d).sum()
    }
}

/// How a unit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// The unit's transaction rolled back by design (DS2: insufficient stock). It still
    /// counts as a unit, as in DS2, where rolled-back orders count towards OPM.
    RolledBack,
}

struct WorkerHistograms {
    unit: Histogram<u64>,
    ops: Vec<Histogram<u64>>,
    /// Unit latencies since the last report interval.
    interval: Histogram<u64>,
}

/// Unit latency percentiles of one report interval, in milliseconds (0 without units).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntervalQuantiles {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

impl IntervalQuantiles {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Self { p50_ms: ms(0.5), p95_ms: ms(0.95), p99_ms: ms(0.99) }
    }
}

/// The measured window's latency histograms, whole: what remote clients send back so
/// their percentiles merge exactly (percentiles of parts cannot be averaged).
#[derive(Clone, Debug)]
pub struct Latencies {
    pub unit: Histogram<u64>,
    /// One per operation, in the workload's operation order.
    pub ops: Vec<Histogram<u64>>,
}

impl Latencies {
    pub fn new(ops: usize) -> Self {
        Self { unit: new_histogram(), ops: (0..ops).map(|_| new_histogram()).collect() }
    }

    /// Adds `other`'s counts (histograms of the same operations).
    pub fn add(&mut self, other: &Latencies) {
        self.unit.add(&other.unit).expect("histograms share bounds");
        for (into, from) in self.ops.iter_mut().zip(&other.ops) {
            into.add(from).expect("histograms share bounds");
        }
    }
}

/// Percentiles of one latency distribution, in milliseconds.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub avg_ms: f64,
    /// Standard deviation, for confidence intervals on the mean.
    #[serde(default)]
    pub stdev_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Self {
            count: h.len(),
            avg_ms: h.mean() / 1000.0,
            stdev_ms: h.stdev() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
        }
    }
}

/// Histogram sets to spread the workers over: enough that workers rarely share a lock on
/// this many cores, few enough that memory stays flat with a thousand threads.
fn shards(workers: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    workers.clamp(1, 2 * cores)
}

/// Counters shared by all workers. "Measured" ones are zeroed when warmup ends;
/// "from start" ones never are, because the database invariants need every commit.
pub struct SharedStats {
    units: AtomicU64,
    rollbacks: AtomicU64,
    unit_us_sum: AtomicU64,
    lastn: [AtomicU64; LASTN],
    retries: AtomicU64,
    lock_waits: AtomicU64,
    driver_ns: AtomicU64,
    worker_busy_ns: AtomicU64,
    /// CPU time the workers' threads used for measured units.
    worker_cpu_ns: AtomicU64,
    /// Bytes the workers' threads read from storage (not the page cache) while measuring.
    storage_read_bytes: AtomicU64,
    committed_from_start: AtomicU64,
    rolled_back_from_start: AtomicU64,
    ops_from_start: Vec<AtomicU64>,
    workers: Vec<Mutex<WorkerHistograms>>,
    /// Retries by cause and events by name; rare, so one lock is enough.
    tallies: Mutex<Tallies>,
}

#[derive(Default)]
struct Tallies {
    retries: BTreeMap<&'static str, u64>,
    events: BTreeMap<&'static str, u64>,
}

/// The counters the controller reads every tick.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub units: u64,
    pub rollbacks: u64,
    pub unit_us_sum: u64,
    pub lastn_max_us: u64,
}

/// Totals since the run started, warmup included: what the database must now reflect.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct FromStart {
    pub committed: u64,
    pub rolled_back: u64,
    /// Per operation name, how many completed.
    pub ops: BTreeMap<String, u64>,
}

impl FromStart {
    pub fn op(&self, name: &str) -> u64 {
        self.ops.get(name).copied().unwrap_or(0)
    }
}

/// Measured-window results, merged over all workers.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Measured {
    pub units: u64,
    pub rollbacks: u64,
    pub retries: u64,
    pub retries_by_cause: BTreeMap<String, u64>,
    pub events: BTreeMap<String, u64>,
    pub lock_waits: u64,
    pub unit_latency: LatencySummary,
    pub op_latency: Vec<(String, LatencySummary)>,
    /// Share of the workers' busy time spent in driver code rather than waiting on the
    /// database: random choices, bookkeeping, histogram updates.
    pub driver_overhead_pct: f64,
    /// CPU seconds the workers' threads used for the measured units (with an embedded
    /// engine, the engine's work too; time stolen by the hypervisor is not in it).
    pub worker_cpu_s: f64,
    /// Bytes the workers' threads read from storage while measuring: with an embedded
    /// engine, its page-cache misses (the kernel's per-thread I/O accounting).
    pub storage_read_bytes: u64,
    /// Bytes the disks under the database wrote while measuring (set by the run engine,
    /// which knows the disks; `sys::disk_writes` says why not per thread).
    pub storage_write_bytes: u64,
    /// CPU seconds a managed server's processes used over the window (set by the run
    /// engine, which knows the server; zero without one).
    pub server_cpu_s: f64,
}

impl SharedStats {
    pub fn new(workers: usize, ops: usize) -> Self {
        Self {
            units: AtomicU64::new(0),
            rollbacks: AtomicU64::new(0),
            unit_us_sum: AtomicU64::new(0),
            lastn: std::array::from_fn(|_| AtomicU64::new(0)),
            retries: AtomicU64::new(0),
            lock_waits: AtomicU64::new(0),
            driver_ns: AtomicU64::new(0),
            worker_busy_ns: AtomicU64::new(0),
            worker_cpu_ns: AtomicU64::new(0),
            storage_read_bytes: AtomicU64::new(0),
            committed_from_start: AtomicU64::new(0),
            rolled_back_from_start: AtomicU64::new(0),
            ops_from_start: (0..ops).map(|_| AtomicU64::new(0)).collect(),
            workers: (0..shards(workers))
                .map(|_| {
                    Mutex::new(WorkerHistograms {
                        unit: new_histogram(),
                        ops: (0..ops).map(|_| new_histogram()).collect(),
                        interval: new_histogram(),
                    })
                })
                .collect(),
            tallies: Mutex::default(),
        }
    }

    /// Counts a finished unit towards the database totals. Always called.
    pub fn count_from_start(&self, rec: &UnitRecorder, outcome: Outcome) {
        match outcome {
            Outcome::Committed => self.committed_from_start.fetch_add(1, Relaxed),
            Outcome::RolledBack => self.rolled_back_from_start.fetch_add(1, Relaxed),
        };
        for (op, _) in &rec.ops {
            self.ops_from_start[*op].fetch_add(1, Relaxed);
        }
    }

    /// Records a finished unit into the measured statistics (only while measuring).
    pub fn record(&self, worker: usize, rec: &UnitRecorder, outcome: Outcome) {
        let unit_us = rec.timed_total().as_micros() as u64;
        // Counted under the shard's lock, which a reset holds while it zeroes everything:
        // a unit finishing as warm-up ends is in the counters and histograms alike, or in
        // neither.
        let mut h = self.workers[worker % self.workers.len()].lock().unwrap_or_else(|p| p.into_inner());
        let n = self.units.fetch_add(1, Relaxed);
        self.lastn[(n % LASTN as u64) as usize].store(unit_us, Relaxed);
        self.unit_us_sum.fetch_add(unit_us, Relaxed);
        if outcome == Outcome::RolledBack {
            self.rollbacks.fetch_add(1, Relaxed);
        }
        self.retries.fetch_add(rec.retries.len() as u64, Relaxed);
        self.lock_waits.fetch_add(rec.lock_waits, Relaxed);
        if !rec.retries.is_empty() || !rec.events.is_empty() {
            let mut t = self.tallies.lock().unwrap_or_else(|p| p.into_inner());
            for r in &rec.retries {
                *t.retries.entry(r).or_default() += 1;
            }
            for e in &rec.events {
                *t.events.entry(e).or_default() += 1;
            }
        }
        h.unit.saturating_record(unit_us);
        h.interval.saturating_record(unit_us);
        for (op, took) in &rec.ops {
            h.ops[*op].saturating_record(took.as_micros() as u64);
        }
    }

    /// Accounts the time a unit kept its worker busy (`busy`, from the start of the unit to
    /// the end of its bookkeeping), how much of that was driver code, and the CPU time the
    /// worker's thread used for it (`cpu`).
    pub fn account(&self, rec: &UnitRecorder, busy: Duration, cpu: Duration) {
        let db = rec.timed_total() + rec.untimed;
        let driver = busy.saturating_sub(db);
        self.driver_ns.fetch_add(driver.as_nanos() as u64, Relaxed);
        self.worker_busy_ns.fetch_add(busy.as_nanos() as u64, Relaxed);
        self.worker_cpu_ns.fetch_add(cpu.as_nanos() as u64, Relaxed);
    }

    /// Adds what one worker's thread read from storage over the measured window.
    pub fn add_storage_reads(&self, io: crate::sys::StorageIo) {
        self.storage_read_bytes.fetch_add(io.read, Relaxed);
    }

    /// Zeroes the measured statistics; called once when warmup ends.
    pub fn reset_measured(&self) {
        let mut shards: Vec<_> = self.workers.iter().map(|w| w.lock().unwrap_or_else(|p| p.into_inner())).collect();
        for a in [
            &self.units,
            &self.rollbacks,
            &self.unit_us_sum,
            &self.retries,
            &self.lock_waits,
            &self.driver_ns,
            &self.worker_busy_ns,
            &self.worker_cpu_ns,
        ] {
            a.store(0, Relaxed);
        }
        for a in &self.lastn {
            a.store(0, Relaxed);
        }
        *self.tallies.lock().unwrap_or_else(|p| p.into_inner()) = Tallies::default();
        for h in &mut shards {
            h.unit.reset();
            h.ops.iter_mut().for_each(Histogram::reset);
            h.interval.reset();
        }
    }

    /// The unit latency percentiles since the last call, merged exactly over the shards.
    /// The unit latencies since the last call, over all workers.
    pub fn take_interval(&self) -> Histogram<u64> {
        let mut all = new_histogram();
        for w in &self.workers {
            let mut h = w.lock().unwrap_or_else(|p| p.into_inner());
            let _ = all.add(&h.interval);
            h.interval.reset();
        }
        all
    }

    pub fn counters(&self) -> Counters {
        let units = self.units.load(Relaxed);
        let filled = units.min(LASTN as u64) as usize;
        Counters {
            units,
            rollbacks: self.rollbacks.load(Relaxed),
            unit_us_sum: self.unit_us_sum.load(Relaxed),
            lastn_max_us: self.lastn[..filled].iter().map(|a| a.load(Relaxed)).max().unwrap_or(0),
        }
    }

    pub fn from_start(&self, op_names: &[&str]) -> FromStart {
        FromStart {
            committed: self.committed_from_start.load(Relaxed),
            rolled_back: self.rolled_back_from_start.load(Relaxed),
            ops: op_names.iter().zip(&self.ops_from_start).map(|(n, c)| (n.to_string(), c.load(Relaxed))).collect(),
        }
    }

    /// The measured window's histograms, merged over the workers.
    pub fn latencies(&self, ops: usize) -> Latencies {
        let mut all = Latencies::new(ops);
        for w in &self.workers {
            let h = w.lock().unwrap_or_else(|p| p.into_inner());
            all.unit.add(&h.unit).expect("histograms share bounds");
            for (into, from) in all.ops.iter_mut().zip(&h.ops) {
                into.add(from).expect("histograms share bounds");
            }
        }
        all
    }

    pub fn measured(&self, op_names: &[&str], latencies: &Latencies) -> Measured {
        let (unit, ops) = (&latencies.unit, &latencies.ops);
        let busy = self.worker_busy_ns.load(Relaxed);
        let t = self.tallies.lock().unwrap_or_else(|p| p.into_inner());
        let named = |m: &BTreeMap<&'static str, u64>| m.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Measured {
            units: self.units.load(Relaxed),
            rollbacks: self.rollbacks.load(Relaxed),
            retries: self.retries.load(Relaxed),
            retries_by_cause: named(&t.retries),
            events: named(&t.events),
            lock_waits: self.lock_waits.load(Relaxed),
            unit_latency: LatencySummary::of(unit),
            op_latency: op_names.iter().zip(ops).map(|(n, h)| (n.to_string(), LatencySummary::of(h))).collect(),
            driver_overhead_pct: if busy == 0 {
                0.0
            } else {
                100.0 * self.driver_ns.load(Relaxed) as f64 / busy as f64
            },
            worker_cpu_s: self.worker_cpu_ns.load(Relaxed) as f64 / 1e9,
            storage_read_bytes: self.storage_read_bytes.load(Relaxed),
            storage_write_bytes: 0,
            server_cpu_s: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(ops: &[(usize, u64)]) -> UnitRecorder {
        let mut r = UnitRecorder::default();
        for &(op, ms) in ops {
            r.op(op, Duration::from_millis(ms));
        }
        r
    }

    #[test]
    fn unit_latency_is_the_sum_of_its_operations() {
        let s = SharedStats::new(1, 2);
        s.record(0, &unit(&[(0, 2), (1, 3), (1, 5)]), Outcome::Committed);
        let m = s.measured(&["a", "b"], &s.latencies(2));
        assert_eq!(m.units, 1);
        assert!((m.unit_latency.avg_ms - 10.0).abs() < 0.02);
        assert_eq!(m.op_latency[1].1.count, 2);
        assert!((m.op_latency[1].1.max_ms - 5.0).abs() < 0.01);
    }

    #[test]
    fn reset_clears_measured_but_not_from_start() {
        let s = SharedStats::new(2, 1);
        for w in 0..2 {
            let r = unit(&[(0, 1)]);
            s.count_from_start(&r, Outcome::RolledBack);
            s.record(w, &r, Outcome::RolledBack);
        }
        s.reset_measured();
        let m = s.measured(&["a"], &s.latencies(1));
        assert_eq!((m.units, m.rollbacks, m.unit_latency.count), (0, 0, 0));
        let f = s.from_start(&["a"]);
        assert_eq!((f.rolled_back, f.op("a")), (2, 2));
    }

    #[test]
    fn retries_and_events_are_tallied_by_name_and_reset_with_warmup() {
        let s = SharedStats::new(1, 1);
        let mut r = unit(&[(0, 1)]);
        r.retry("deadlock");
        r.retry("deadlock");
        r.event("empty district");
        s.record(0, &r, Outcome::Committed);
        let m = s.measured(&["a"], &s.latencies(1));
        assert_eq!((m.retries, m.retries_by_cause["deadlock"], m.events["empty district"]), (2, 2, 1));
        s.reset_measured();
        let m = s.measured(&["a"], &s.latencies(1));
        assert!(m.retries_by_cause.is_empty() && m.events.is_empty());
    }

    #[test]
    fn interval_percentiles_merge_every_worker_and_start_afresh() {
        let s = SharedStats::new(4, 1);
        // 100 units of 1..=100 ms, spread over the workers' shards.
        for ms in 1..=100 {
            s.record(ms as usize % 4, &unit(&[(0, ms)]), Outcome::Committed);
        }
        let q = IntervalQuantiles::of(&s.take_interval());
        assert!(
            (q.p50_ms - 50.0).abs() < 0.1 && (q.p95_ms - 95.0).abs() < 0.1 && (q.p99_ms - 99.0).abs() < 0.1,
            "{q:?}"
        );
        assert_eq!(
            IntervalQuantiles::of(&s.take_interval()),
            IntervalQuantiles::default(),
            "the next interval has no units yet"
        );
        s.record(0, &unit(&[(0, 7)]), Outcome::Committed);
        assert!((IntervalQuantiles::of(&s.take_interval()).p99_ms - 7.0).abs() < 0.01);
    }

    #[test]
    fn lastn_max_only_covers_the_latest_hundred_units() {
        let s = SharedStats::new(1, 1);
        s.record(0, &unit(&[(0, 900)]), Outcome::Committed);
        for _ in 0..LASTN {
            s.record(0, &unit(&[(0, 1)]), Outcome::Committed);
        }
        assert_eq!(s.counters().lastn_max_us, 1000);
    }

    #[test]
    fn driver_overhead_is_busy_time_not_spent_in_the_database() {
        let s = SharedStats::new(1, 1);
        let mut r = unit(&[(0, 6)]);
        r.untimed(Duration::from_millis(2));
        s.record(0, &r, Outcome::Committed);
        s.account(&r, Duration::from_millis(10), Duration::from_millis(3));
        let m = s.measured(&["a"], &s.latencies(1));
        assert!((m.driver_overhead_pct - 20.0).abs() < 1e-9 && (m.worker_cpu_s - 0.003).abs() < 1e-12, "{m:?}");
    }
}
