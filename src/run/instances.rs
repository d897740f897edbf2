//! Multi-instance runs (`--instances N`): one record for N databases that ran side by side,
//! with the total and a row per instance, as seeds 000 and 001 tabulated their client VMs.

use crate::driver::RunStatus;
use crate::record::{InstanceRow, RunRecord};
use crate::workloads::Measure;
use serde_json::json;

/// Folds the instances' records into one: the headline and every measure are their total
/// (only throughput workloads run several instances); every instance's status, figures,
/// unit p95 and full metrics are kept in `instances`; checks from all of them, each naming
/// its instance. One record passes through unchanged.
pub fn combine(mut records: Vec<RunRecord>) -> RunRecord {
    if records.len() == 1 {
        return records.pop().expect("one record");
    }
    let values: Vec<f64> = records.iter().map(|r| r.headline.value.unwrap_or(0.0)).collect();
    let rows: Vec<InstanceRow> = records.iter().enumerate().map(|(i, r)| row(i + 1, r)).collect();
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
    let measures = summed(&records);
    let counts = crate::record::Counts {
        units: records.iter().map(|r| r.counts.units).sum(),
        rollbacks: records.iter().map(|r| r.counts.rollbacks).sum(),
        retries: records.iter().map(|r| r.counts.retries).sum(),
        lock_waits: records.iter().map(|r| r.counts.lock_waits).sum(),
    };
    let clients: Vec<_> = records.iter().filter_map(|r| r.clients.as_ref()).collect();
    let clients = crate::driver::ClientsRecord::sum(&clients);
    let mut first = records.swap_remove(0);
    first.metrics = json!({
        first.headline.name.to_lowercase(): total,
        "instances": values.len(),
        "per_instance_mean": total / n,
        "per_instance_min": values.iter().copied().fold(f64::INFINITY, f64::min),
        "per_instance_max": values.iter().copied().fold(0.0, f64::max),
        "unit_p95_ms_max": p95_max,
    });
    first.headline.value = Some(total);
    first.measures = measures;
    first.counts = counts;
    first.status = status;
    first.checks = checks;
    first.elapsed_s = elapsed;
    first.instances = Some(rows);
    first.clients = clients;
    first
}

/// Instance `instance`'s row: its status, figures, unit p95, checks and metrics.
pub fn row(instance: usize, r: &RunRecord) -> InstanceRow {
    InstanceRow {
        instance,
        status: r.status.clone(),
        headline: r.headline.clone(),
        measures: r.measures.clone(),
        unit_p95_ms: r.unit_latency.p95_ms,
        checks_ok: r.checks.iter().all(|c| c.ok),
        metrics: r.metrics.clone(),
    }
}

/// The workload's checks after a run. A run whose database is gone (a dead server) is
/// still recorded, with the reason as a failed check.
pub fn checks_after(
    w: &dyn crate::workloads::Workload,
    copy: &dyn crate::targets::RunCopy,
    meta: &crate::targets::BuildMeta,
    result: &crate::driver::RunResult,
) -> Vec<crate::workloads::Check> {
    let mut checks = w.check(copy, meta, Some(&result.from_start)).unwrap_or_else(|e| {
        vec![crate::workloads::Check { name: "post-run checks could run".into(), ok: false, detail: format!("{e:#}") }]
    });
    checks.extend(no_work(&result.status, result.measured.units, result.elapsed_s));
    checks
}

/// A run that completed no unit in its window measured a stall (seen on a Galera cluster
/// under a busy machine: 2 s without an answer), not the workload: it must not count.
fn no_work(status: &crate::driver::RunStatus, units: u64, elapsed_s: f64) -> Option<crate::workloads::Check> {
    let completed = *status == crate::driver::RunStatus::Completed;
    (completed && units == 0).then(|| crate::workloads::Check {
        name: "the measured window completed work".into(),
        ok: false,
        detail: format!(
            "no unit completed in its {:.1} s: the database did not answer (a stall), so the run measures nothing",
            elapsed_s
        ),
    })
}

/// Each measure over the instances: rates (higher is better) add up, costs per unit are
/// averaged over the units; `None` when any instance lacks it.
fn summed(records: &[RunRecord]) -> Vec<Measure> {
    records[0]
        .measures
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let values = records.iter().map(|r| Some((r.measures.get(i)?.value?, r.counts.units as f64)));
            let value = match m.higher_is_better {
                true => values.map(|v| v.map(|(x, _)| x)).sum(),
                false => values.collect::<Option<Vec<_>>>().and_then(|v| {
                    let units: f64 = v.iter().map(|(_, u)| u).sum();
                    (units > 0.0).then(|| v.iter().map(|(x, u)| x * u).sum::<f64>() / units)
                }),
            };
            Measure { value, ..m.clone() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::RunStatus;

    #[test]
    fn a_completed_run_without_a_unit_does_not_count_and_others_are_left_to_their_status() {
        let stalled = no_work(&RunStatus::Completed, 0, 2.0).unwrap();
        assert!(!stalled.ok && stalled.detail.contains("no unit completed in its 2.0 s"), "{stalled:?}");
        assert!(no_work(&RunStatus::Completed, 1, 2.0).is_none());
        assert!(no_work(&RunStatus::Failed("x".into()), 0, 0.0).is_none());
    }
}
