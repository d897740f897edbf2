//! Multi-instance runs (`--instances N`): one record for N databases that ran side by side,
//! with the total and a row per instance, as seeds 000 and 001 tabulated their client VMs.

use crate::driver::RunStatus;
use crate::record::RunRecord;
use serde_json::json;

/// Folds the instances' records into one: the headline is their total; every instance's
/// status, headline, unit p95 and full metrics are kept in `instances`; checks from all of
/// them, each naming its instance. One record passes through unchanged.
pub fn combine(mut records: Vec<RunRecord>, headline: &str) -> RunRecord {
    if records.len() == 1 {
        return records.pop().expect("one record");
    }
    let values: Vec<f64> = records.iter().map(|r| r.metrics[headline].as_f64().unwrap_or(0.0)).collect();
    let rows: Vec<serde_json::Value> = records
        .iter()
        .zip(&values)
        .enumerate()
        .map(|(i, (r, v))| {
            json!({
                "instance": i + 1,
                "status": match &r.status {
                    RunStatus::Completed => "completed".to_string(),
                    RunStatus::Interrupted => "interrupted".to_string(),
                    RunStatus::Failed(c) => format!("failed: {c}"),
                },
                headline: v,
                "unit_p95_ms": r.unit_latency.p95_ms,
                "checks_ok": r.checks.iter().all(|c| c.ok),
                "metrics": r.metrics,
            })
        })
        .collect();
    let n = values.len() as f64;
    let total: f64 = values.iter().sum();
    let status = records
        .iter()
        .map(|r| r.status.clone())
        .find(|s| matches!(s, RunStatus::Failed(_)))
        .or_else(|| records.iter().map(|r| r.status.clone()).find(|s| matches!(s, RunStatus::Interrupted)))
        .unwrap_or(RunStatus::Completed);
    let mut checks = Vec::new();
    for (i, r) in records.iter().enumerate() {
        for c in &r.checks {
            checks.push(crate::workloads::Check { detail: format!("instance {}: {}", i + 1, c.detail), ..c.clone() });
        }
    }
    let p95_max = records.iter().map(|r| r.unit_latency.p95_ms).fold(0.0, f64::max);
    let elapsed = records.iter().map(|r| r.elapsed_s).fold(0.0, f64::max);
    let mut first = records.swap_remove(0);
    first.metrics = json!({
        headline: total,
        "instances": values.len(),
        "per_instance_mean": total / n,
        "per_instance_min": values.iter().copied().fold(f64::INFINITY, f64::min),
        "per_instance_max": values.iter().copied().fold(0.0, f64::max),
        "unit_p95_ms_max": p95_max,
    });
    first.status = status;
    first.checks = checks;
    first.elapsed_s = elapsed;
    first.instances = Some(rows);
    first
}
