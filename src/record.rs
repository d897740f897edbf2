//! The record of one run: what was run, where, on what machine, and what it measured.
//! This is the JSON `dbvs run --json` writes, and what later tooling reads back.

use crate::driver::{FromStart, IntervalSample, Pacing, RunResult, RunStatus};
use crate::host::HostInfo;
use crate::targets::TargetInfo;
use crate::workloads::{Check, Workload};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Serialize)]
pub struct Env {
    #[serde(flatten)]
    pub host: HostInfo,
    pub engine_versions: BTreeMap<String, String>,
    pub dbvs_version: &'static str,
}

#[derive(Serialize)]
pub struct DriverUsage {
    /// CPU of the whole dbvs process (driver and, for embedded engines, the engine) as % of all cores.
    pub process_cpu_pct: f64,
    /// Share of worker time spent in driver code rather than in database calls.
    pub driver_overhead_pct: f64,
}

#[derive(Serialize)]
pub struct RunRecord {
    #[serde(flatten)]
    pub status: RunStatus,
    pub started_at: String,
    pub workload: &'static str,
    pub target: TargetInfo,
    pub params: serde_json::Value,
    pub env: Env,
    pub metrics: serde_json::Value,
    pub elapsed_s: f64,
    /// Latency of whole units (a DS2 order cycle, a TPC-B or TPC-C transaction).
    pub unit_latency: crate::driver::LatencySummary,
    pub driver: DriverUsage,
    pub intervals: Vec<IntervalSample>,
    /// What the run did to the database from its first second, warmup included: the
    /// numbers the post-run checks hold the database to.
    pub totals: FromStart,
    pub checks: Vec<Check>,
    /// What the machine did during the run (CPU, disks, memory, pressure, power).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::Telemetry>,
    /// What a study variant's cgroup limits did during the run (throttling, peaks, I/O).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<serde_json::Value>,
    /// With `--instances N`: one row per instance (the metrics above are their total).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<Vec<serde_json::Value>>,
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
            metrics: workload.metrics(&run),
            status: run.status,
            started_at,
            workload: workload.name(),
            target,
            params,
            env,
            elapsed_s: run.elapsed_s,
            unit_latency: run.measured.unit_latency.clone(),
            driver: DriverUsage {
                process_cpu_pct: run.process_cpu_pct,
                driver_overhead_pct: run.measured.driver_overhead_pct,
            },
            intervals: run.intervals,
            totals: run.from_start,
            checks,
            telemetry: None,
            limits: None,
            instances: None,
        }
    }
}
