//! The client hosts' figures made one: counts add up, rates add up, latency percentiles
//! come from the merged histograms (never from averaging each host's percentiles).

use super::{ClientRow, ClientsRecord, Shard};
use crate::driver::stats::IntervalQuantiles;
use crate::driver::{FromStart, IntervalSample, Latencies, LatencySummary, Measured, RunResult, RunStatus};
use anyhow::Result;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// One host's report interval: its figures and its unit latencies.
type Part = (IntervalSample, Histogram<u64>);

/// One report interval from each host, gathered until all of them have sent it.
pub struct Intervals {
    hosts: usize,
    /// How many intervals each host has sent, in warm-up and in the window.
    sent: Vec<[usize; 2]>,
    /// By (in the window?, index in its phase): what each host sent of it.
    pending: BTreeMap<(bool, usize), Vec<Option<Part>>>,
    /// The window's merged intervals, for the record.
    pub measured: Vec<IntervalSample>,
}

impl Intervals {
    pub fn new(hosts: usize) -> Self {
        Self { hosts, sent: vec![[0; 2]; hosts], pending: BTreeMap::new(), measured: vec![] }
    }

    /// Host `i`'s next interval; once every host has sent this one, the merged interval.
    pub fn add(&mut self, i: usize, warmup: bool, sample: IntervalSample, latencies: Histogram<u64>) -> Option<Part> {
        let phase = usize::from(!warmup);
        let key = (!warmup, self.sent[i][phase]);
        self.sent[i][phase] += 1;
        let slot = self.pending.entry(key).or_insert_with(|| vec![None; self.hosts]);
        slot[i] = Some((sample, latencies));
        if slot.iter().any(Option::is_none) {
            return None;
        }
        let parts: Vec<_> = self.pending.remove(&key)?.into_iter().flatten().collect();
        let merged = interval(&parts);
        if !warmup {
            self.measured.push(merged.0.clone());
        }
        Some(merged)
    }
}

/// One interval over all hosts: rates and counts add up, percentiles from the merged
/// histogram, means weighted by units.
fn interval(parts: &[Part]) -> Part {
    let mut latencies = parts[0].1.clone();
    for (_, h) in &parts[1..] {
        latencies.add(h).expect("histograms share bounds");
    }
    let sum = |f: fn(&IntervalSample) -> f64| parts.iter().map(|(s, _)| f(s)).sum::<f64>();
    let max = |f: fn(&IntervalSample) -> f64| parts.iter().map(|(s, _)| f(s)).fold(0.0, f64::max);
    let units: u64 = parts.iter().map(|(s, _)| s.units).sum();
    let rollbacks: u64 = parts.iter().map(|(s, _)| s.rollbacks).sum();
    let per_unit = |total: f64| if units > 0 { total / units as f64 } else { 0.0 };
    let q = IntervalQuantiles::of(&latencies);
    let sample = IntervalSample {
        et_s: max(|s| s.et_s),
        units,
        per_min: sum(|s| s.per_min),
        interval_per_min: sum(|s| s.interval_per_min),
        lastn_max_ms: max(|s| s.lastn_max_ms),
        avg_ms: per_unit(sum(|s| s.avg_ms * s.units as f64)),
        sampled_ms: if latencies.is_empty() { 0.0 } else { latencies.mean() / 1000.0 },
        rollbacks,
        rollback_pct: 100.0 * per_unit(rollbacks as f64),
        p50_ms: q.p50_ms,
        p95_ms: q.p95_ms,
        p99_ms: q.p99_ms,
    };
    (sample, latencies)
}

/// The run's result from every host's shard (in host order, as `rows`).
pub fn result(
    shards: Vec<Shard>,
    rows: Vec<ClientRow>,
    intervals: Vec<IntervalSample>,
    coordinator_cpu_pct: f64,
    ops: &[&str],
) -> Result<RunResult> {
    let mut latencies = Latencies::new(ops.len());
    for s in &shards {
        let ops = s.op_latency.iter().map(|h| h.histogram()).collect::<Result<Vec<_>>>()?;
        latencies.add(&Latencies { unit: s.unit_latency.histogram()?, ops });
    }
    let status = status(&shards, &rows);
    let parts: Vec<&Measured> = shards.iter().map(|s| &s.measured).collect();
    let mut measured = measured(&parts);
    measured.unit_latency = LatencySummary::of(&latencies.unit);
    measured.op_latency = ops.iter().zip(&latencies.ops).map(|(n, h)| (n.to_string(), LatencySummary::of(h))).collect();
    Ok(RunResult {
        status,
        elapsed_s: shards.iter().map(|s| s.elapsed_s).fold(0.0, f64::max),
        measured,
        from_start: from_start(shards.iter().map(|s| &s.from_start)),
        intervals,
        process_cpu_pct: coordinator_cpu_pct,
        rss_mb: None,
        window_counter: None,
        latencies,
        remote: Some(ClientsRecord { hosts: rows, coordinator_cpu_pct, server: None }),
    })
}

/// A run that failed before any host finished: nothing is counted.
pub fn failed(cause: String, ops: &[&str]) -> RunResult {
    RunResult {
        status: RunStatus::Failed(cause),
        elapsed_s: 0.0,
        measured: Measured::default(),
        from_start: FromStart::default(),
        intervals: vec![],
        process_cpu_pct: 0.0,
        rss_mb: None,
        window_counter: None,
        latencies: Latencies::new(ops.len()),
        remote: None,
    }
}

/// A host's failure fails the run (naming the host); else an interruption interrupts it.
fn status(shards: &[Shard], rows: &[ClientRow]) -> RunStatus {
    let failed = shards.iter().zip(rows).find_map(|(s, r)| match &s.status {
        RunStatus::Failed(cause) => Some(RunStatus::Failed(format!("client host {}: {cause}", r.host))),
        _ => None,
    });
    let interrupted = shards.iter().any(|s| s.status == RunStatus::Interrupted);
    failed.unwrap_or(if interrupted { RunStatus::Interrupted } else { RunStatus::Completed })
}

/// The hosts' counts added up (latencies are merged from histograms by the caller).
fn measured(parts: &[&Measured]) -> Measured {
    let sum = |f: fn(&Measured) -> u64| parts.iter().map(|m| f(m)).sum::<u64>();
    let sum_f = |f: fn(&Measured) -> f64| parts.iter().map(|m| f(m)).sum::<f64>();
    let units = sum(|m| m.units);
    let busy_weighted = sum_f(|m| m.driver_overhead_pct * m.units as f64);
    Measured {
        units,
        rollbacks: sum(|m| m.rollbacks),
        retries: sum(|m| m.retries),
        retries_by_cause: added(parts.iter().map(|m| &m.retries_by_cause)),
        events: added(parts.iter().map(|m| &m.events)),
        lock_waits: sum(|m| m.lock_waits),
        driver_overhead_pct: if units > 0 { busy_weighted / units as f64 } else { 0.0 },
        worker_cpu_s: sum_f(|m| m.worker_cpu_s),
        storage_read_bytes: sum(|m| m.storage_read_bytes),
        storage_write_bytes: sum(|m| m.storage_write_bytes),
        ..Measured::default()
    }
}

fn from_start<'a>(parts: impl Iterator<Item = &'a FromStart> + Clone) -> FromStart {
    FromStart {
        committed: parts.clone().map(|f| f.committed).sum(),
        rolled_back: parts.clone().map(|f| f.rolled_back).sum(),
        ops: added(parts.map(|f| &f.ops)),
    }
}

fn added<'a>(maps: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut all = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            *all.entry(k.clone()).or_default() += v;
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        values.iter().for_each(|v| h.record(*v).unwrap());
        h
    }

    fn sample(units: u64, per_min: f64, avg_ms: f64) -> IntervalSample {
        IntervalSample { et_s: 1.0, units, per_min, interval_per_min: per_min, avg_ms, ..IntervalSample::default() }
    }

    #[test]
    fn an_interval_merges_once_every_host_sent_it() {
        let mut all = Intervals::new(2);
        assert!(all.add(0, false, sample(10, 600.0, 1.0), histogram(&[1_000; 10])).is_none());
        // Host 0 runs ahead: its second interval waits for host 1's.
        assert!(all.add(0, false, sample(20, 600.0, 1.0), histogram(&[1_000; 10])).is_none());
        let (merged, h) = all.add(1, false, sample(30, 1800.0, 3.0), histogram(&[3_000; 30])).unwrap();
        assert_eq!((merged.units, merged.per_min), (40, 2400.0));
        assert!((merged.avg_ms - 2.5).abs() < 1e-9, "weighted by units: {}", merged.avg_ms);
        // The merged p50 is the pooled one (3 ms), not the mean of the hosts' (2 ms).
        assert!((merged.p50_ms - 3.0).abs() < 0.01, "{}", merged.p50_ms);
        assert_eq!(h.len(), 40);
        assert_eq!(all.measured.len(), 1);
    }

    #[test]
    fn a_failed_host_fails_the_run_by_name() {
        let rows: Vec<ClientRow> = ["a", "b"]
            .iter()
            .map(|h| ClientRow {
                host: h.to_string(),
                workers: 1,
                units: 0,
                cpu_pct: 0.0,
                cores: 1,
                clock_offset_ms: 0.0,
                rtt_ms: 0.0,
            })
            .collect();
        let shard = |status| Shard {
            status,
            elapsed_s: 1.0,
            measured: Measured::default(),
            unit_latency: super::super::WireHistogram::of(&histogram(&[])),
            op_latency: vec![],
            from_start: FromStart::default(),
            process_cpu_pct: 0.0,
        };
        let s = status(&[shard(RunStatus::Interrupted), shard(RunStatus::Failed("boom".into()))], &rows);
        assert_eq!(s, RunStatus::Failed("client host b: boom".into()));
        assert_eq!(
            status(&[shard(RunStatus::Completed), shard(RunStatus::Interrupted)], &rows),
            RunStatus::Interrupted
        );
    }
}
