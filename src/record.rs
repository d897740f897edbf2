//! The record of one run: what was run, where, on what machine, and what it measured.
//! This is the JSON `dbvs run --json` writes, and what studies and capacity searches read
//! back, typed, from their child runs. The non-driver workloads (`fileio`, `cipher`) write
//! the same record with the driver's parts left empty.

use crate::driver::{FromStart, IntervalSample, LatencySummary, Pacing, RunResult, RunStatus};
use crate::host::Env;
use crate::sys::cgroup::Usage;
use crate::targets::TargetInfo;
use crate::workloads::{Check, Measure, Workload};
use serde::{Deserialize, Serialize};

/// What the measured window did, in whole units of work.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counts {
    pub units: u64,
    pub rollbacks: u64,
    pub retries: u64,
    pub lock_waits: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DriverUsage {
    /// CPU of the whole dbvs process (driver and, for embedded engines, the engine) as % of all cores.
    pub process_cpu_pct: f64,
    /// Share of worker time spent in driver code rather than in database calls.
    pub driver_overhead_pct: f64,
    /// The dbvs process's resident memory (MB) at the measured window's start and end
    /// (for embedded engines the engine's page cache is part of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_mb: Option<(f64, f64)>,
}

/// What a variant's cgroup limits did during a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LimitsRecord {
    /// `the run process` (SQLite) or `server processes` (a managed server).
    pub applied_to: String,
    pub usage: Usage,
}

/// One instance of a multi-instance run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InstanceRow {
    pub instance: usize,
    pub status: RunStatus,
    pub headline: Measure,
    pub measures: Vec<Measure>,
    pub unit_p95_ms: f64,
    pub checks_ok: bool,
    pub metrics: serde_json::Value,
}

/// What taking turns cost an interleaved variant: how much longer the first units of its
/// workers' turns took than the same turns' later units (the last left out: it may run on
/// after its sibling stopped). A turn starts after the other variants' slices, with caches
/// they filled; a run alone has no such starts, so this is what the slices add to the
/// variant's time at work, and a ratio of two variants moves by the difference of their
/// shares. Summed over the turns in the measured window that had later units to compare
/// with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnStarts {
    /// The turns tallied (a worker's turn, with more units than the first ones).
    pub turns: u64,
    /// The first units' time at work beyond the pace of their turn's later units (negative:
    /// they were quicker), in seconds summed over the workers.
    pub excess_s: f64,
    /// The tallied turns' whole time at work, in seconds summed over the workers.
    pub at_work_s: f64,
}

impl TurnStarts {
    /// The units a turn's start counts: a worker's first two in each turn.
    pub const FIRST_UNITS: u32 = 2;

    /// The excess as a share of the time the same units took beside it (0.003: turn starts
    /// added 0.3%); `None` without a turn tallied.
    pub fn share(&self) -> Option<f64> {
        let warm = self.at_work_s - self.excess_s;
        (self.turns > 0 && warm > 0.0).then(|| self.excess_s / warm)
    }

    /// Both tallies as one.
    pub fn add(&mut self, other: &TurnStarts) {
        self.turns += other.turns;
        self.excess_s += other.excess_s;
        self.at_work_s += other.at_work_s;
    }
}

/// The version of the run record's JSON (and of a study's report.json): additions keep
/// it; a renamed, removed or re-meant field raises it. Files without it are version 1.
pub const SCHEMA_VERSION: u32 = 1;

pub fn schema_version() -> u32 {
    SCHEMA_VERSION
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// See [`SCHEMA_VERSION`].
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    #[serde(flatten)]
    pub status: RunStatus,
    #[serde(default)]
    pub started_at: String,
    pub workload: String,
    #[serde(default)]
    pub target: Option<TargetInfo>,
    #[serde(default)]
    pub params: serde_json::Value,
    #[serde(default)]
    pub env: Option<Env>,
    /// The figure listings and capacity searches use (with several instances, their total).
    pub headline: Measure,
    /// What studies compare, as the workload declared them.
    pub measures: Vec<Measure>,
    /// Everything else the workload reports, in its own shape; only it and people read this.
    #[serde(default)]
    pub metrics: serde_json::Value,
    /// What the workload calibrated, for later runs to take back (see `Workload::calibration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<String>,
    #[serde(default)]
    pub elapsed_s: f64,
    #[serde(default)]
    pub counts: Counts,
    /// Latency of whole units (a DS2 order cycle, a TPC-B or TPC-C transaction).
    #[serde(default)]
    pub unit_latency: LatencySummary,
    /// Latency per timed operation, in the workload's order.
    #[serde(default)]
    pub latency: Vec<(String, LatencySummary)>,
    #[serde(default)]
    pub driver: DriverUsage,
    #[serde(default)]
    pub intervals: Vec<IntervalSample>,
    /// What the run did to the database from its first second, warmup included: the
    /// numbers the post-run checks hold the database to.
    #[serde(default)]
    pub totals: FromStart,
    #[serde(default)]
    pub checks: Vec<Check>,
    /// What the machine did during the run (CPU, disks, memory, pressure, power).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::Telemetry>,
    /// What a study variant's cgroup limits did during the run (throttling, peaks, I/O).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsRecord>,
    /// The engine settings the run asked for (server settings, pragmas), as the engine read
    /// them back before the run measured.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub settings: std::collections::BTreeMap<String, String>,
    /// With `--instances N`: one row per instance (the figures above are their total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<Vec<InstanceRow>>,
    /// The companion workload beside the instances, one row each (see
    /// [`crate::run::Companion`]); not in the figures above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub companions: Option<Vec<InstanceRow>>,
    /// Seconds spent settling the fresh copy before the run: the engine's checkpoint, the
    /// write-back drained, and any idle time asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_s: Option<f64>,
    /// With `--clients`: the client hosts that drove the run, and the server's own count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<crate::driver::ClientsRecord>,
    /// In an interleaved run, what the starts of the variant's turns cost it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_starts: Option<TurnStarts>,
}

impl RunRecord {
    pub fn new(
        workload: &dyn Workload,
        target: TargetInfo,
        pacing: &Pacing,
        env: Env,
        started_at: String,
        run: RunResult,
        checks: Vec<Check>,
    ) -> Self {
        let mut params = workload.params();
        params["pacing"] = serde_json::to_value(pacing).expect("pacing serializes");
        Self {
            schema_version: SCHEMA_VERSION,
            metrics: workload.metrics(&run),
            headline: workload.headline(Some(&run)),
            measures: workload.measures(Some(&run)),
            calibration: workload.calibration(),
            status: run.status,
            started_at,
            workload: workload.name().into(),
            target: Some(target),
            params,
            env: Some(env),
            elapsed_s: run.elapsed_s,
            counts: Counts {
                units: run.measured.units,
                rollbacks: run.measured.rollbacks,
                retries: run.measured.retries,
                lock_waits: run.measured.lock_waits,
            },
            unit_latency: run.measured.unit_latency.clone(),
            latency: run.measured.op_latency.clone(),
            driver: DriverUsage {
                process_cpu_pct: run.process_cpu_pct,
                driver_overhead_pct: run.measured.driver_overhead_pct,
                rss_mb: run.rss_mb,
            },
            intervals: run.intervals,
            totals: run.from_start,
            checks,
            telemetry: None,
            limits: None,
            settings: Default::default(),
            instances: None,
            companions: None,
            settle_s: None,
            clients: run.remote,
            turn_starts: None,
        }
    }

    /// The record of a standalone workload's run.
    pub fn of_standalone(workload: &str, run: crate::workloads::StandaloneRun) -> Self {
        Self::standalone(workload, run.status, run.params, run.headline, run.measures, run.metrics)
    }

    /// A record of a workload that does not use the driver (fileio, cipher).
    pub fn standalone(
        workload: &str,
        status: RunStatus,
        params: serde_json::Value,
        headline: Measure,
        measures: Vec<Measure>,
        metrics: serde_json::Value,
    ) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            status,
            started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            workload: workload.into(),
            target: None,
            params,
            env: Some(Env::new(Default::default())),
            headline,
            measures,
            metrics,
            calibration: None,
            elapsed_s: 0.0,
            counts: Counts::default(),
            unit_latency: LatencySummary::default(),
            latency: vec![],
            driver: DriverUsage::default(),
            intervals: vec![],
            totals: FromStart::default(),
            checks: vec![],
            telemetry: None,
            limits: None,
            settings: Default::default(),
            instances: None,
            companions: None,
            settle_s: None,
            clients: None,
            turn_starts: None,
        }
    }

    /// Completed, with every post-run check passed: a run a comparison may count.
    pub fn counts(&self) -> bool {
        self.status == RunStatus::Completed && self.checks.iter().all(|c| c.ok)
    }

    /// The value of the measure called `name`, when the run completed.
    pub fn measure(&self, name: &str) -> Option<f64> {
        (self.status == RunStatus::Completed).then(|| crate::measure::value_of(&self.measures, name))?
    }

    /// The cause of a run that did not complete.
    pub fn cause(&self) -> Option<&str> {
        match &self.status {
            RunStatus::Failed(c) => Some(c),
            _ => None,
        }
    }

    /// The records a run wrote: its one, or an interleaved run's, one per variant.
    pub fn read_all(path: &std::path::Path) -> anyhow::Result<Vec<Self>> {
        use anyhow::Context;
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read run records {}", path.display()))?;
        let records = match text.trim_start().starts_with('[') {
            true => serde_json::from_str(&text),
            false => serde_json::from_str(&text).map(|one| vec![one]),
        };
        records.with_context(|| format!("unreadable run records {}", path.display()))
    }
}

/// What the plaintext canary scan found in one variant's bytes at rest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CanaryResult {
    pub variant: String,
    pub scanned: Vec<std::path::PathBuf>,
    pub bytes_scanned: u64,
    pub hits: u64,
    /// The files that held the marker, with their hits (inside the study's work directory).
    #[serde(default)]
    pub leaks: Vec<(std::path::PathBuf, u64)>,
    /// Whether the data at rest is supposed to be ciphertext.
    pub encrypted: bool,
    pub ok: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_typed() {
        let r = RunRecord::standalone(
            "fileio",
            RunStatus::Failed("disk full".into()),
            serde_json::json!({}),
            Measure::lower("write time", "s", Some(1.5)),
            vec![Measure::lower("write time", "s", Some(1.5))],
            serde_json::json!({ "write_s": 1.5 }),
        );
        let text = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((v["status"].as_str(), v["cause"].as_str()), (Some("failed"), Some("disk full")));
        let back: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.cause(), Some("disk full"));
        assert_eq!(back.measures, r.measures);
        assert_eq!(back.measure("write time"), None, "a failed run counts no value");
        let ok: RunRecord =
            serde_json::from_str(&text.replace(r#""status":"failed","cause":"disk full""#, r#""status":"completed""#))
                .unwrap();
        assert_eq!(ok.measure("write time"), Some(1.5));
        assert!(ok.counts());
    }
}
