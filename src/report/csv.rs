//! CSV: one row per run, for spreadsheets. `headline` is the run's workload's first
//! measure (OPM, TPM, or the batch suite's q1 latency in ms). Beside it, the runs'
//! samples over time: the driver's intervals and the telemetry's.

use super::StudyReport;
use crate::record::RunRecord;
use std::fmt::Write;

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| format!("{v}"))
}

pub fn render(r: &StudyReport) -> String {
    let mut out = String::from(
        "study_id,run_id,block,variant,workload,status,cause,headline,units,rollback_rate,p95_ms,system_cpu_busy_pct,dbvs_cpu_pct\n",
    );
    for run in &r.runs {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.study_id,
            run.run_id,
            run.block + 1,
            field(&run.variant),
            field(&run.workload),
            run.status,
            field(run.cause.as_deref().unwrap_or("")),
            num(run.metric),
            run.orders.map_or(String::new(), |o| o.to_string()),
            num(run.rollback_rate),
            num(run.p95_ms),
            num(run.system_cpu_pct),
            num(run.cpu_pct),
        );
    }
    out
}

/// Where a run sits: its run id, block (from 1) and variant, and its workload.
pub struct Placed<'a> {
    pub run_id: i64,
    pub block: Option<i64>,
    pub variant: &'a str,
    pub record: &'a RunRecord,
}

fn place(p: &Placed) -> String {
    format!(
        "{},{},{},{}",
        p.run_id,
        p.block.map_or(String::new(), |b| (b + 1).to_string()),
        field(p.variant),
        field(&p.record.workload)
    )
}

/// The driver's samples of every run: one row per report interval of the measured window
/// (`et_s` from the window's start; rates per minute).
pub fn intervals(runs: &[Placed]) -> String {
    let mut out = String::from(
        "run_id,block,variant,workload,et_s,units,per_min,interval_per_min,avg_ms,sampled_ms,lastn_max_ms,rollback_pct,\
         p50_ms,p95_ms,p99_ms\n",
    );
    for p in runs {
        for s in &p.record.intervals {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                place(p),
                s.et_s,
                s.units,
                s.per_min,
                s.interval_per_min,
                s.avg_ms,
                s.sampled_ms,
                s.lastn_max_ms,
                s.rollback_pct,
                s.p50_ms,
                s.p95_ms,
                s.p99_ms
            );
        }
    }
    out
}

/// The telemetry's samples of every run (the whole run, warm-up included: `t_s` from the
/// sampler's start), the machine's CPU, pressure, the processes' CPU and power.
pub fn telemetry(runs: &[Placed]) -> String {
    let mut out = String::from(
        "run_id,block,variant,workload,t_s,cpu_busy_pct,cpu_user_pct,cpu_system_pct,cpu_iowait_pct,cpu_steal_pct,\
         psi_cpu_some_pct,psi_io_some_pct,psi_memory_some_pct,dbvs_cpu_pct,server_cpu_pct,watts\n",
    );
    for p in runs {
        for s in p.record.telemetry.iter().flat_map(|t| &t.samples) {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                place(p),
                s.t_s,
                s.cpu_busy_pct,
                s.cpu_user_pct,
                s.cpu_system_pct,
                s.cpu_iowait_pct,
                s.cpu_steal_pct,
                s.psi_cpu_some_pct,
                s.psi_io_some_pct,
                s.psi_memory_some_pct,
                s.dbvs_cpu_pct,
                num(s.server_cpu_pct),
                num(s.watts)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_row_per_run_with_quoted_fields() {
        let mut r = super::super::sample::report();
        r.runs[0].cause = Some("said \"no\", twice".into());
        let csv = super::render(&r);
        assert_eq!(csv.lines().count(), 1 + r.runs.len());
        assert!(csv.contains("\"said \"\"no\"\", twice\""));
        assert!(csv.starts_with("study_id,run_id,block,variant,workload,status,cause,headline,"));
        assert!(csv.lines().nth(1).unwrap().contains(",plain,ds2,completed,"));
    }

    #[test]
    fn a_row_per_sample_with_the_runs_place() {
        let record: crate::record::RunRecord = serde_json::from_value(serde_json::json!({
            "status": "completed", "started_at": "", "workload": "ds2", "params": null,
            "headline": {"name": "OPM", "unit": "orders/min", "higher_is_better": true},
            "measures": [], "metrics": null, "elapsed_s": 2.0,
            "intervals": [
                {"et_s": 1.0, "units": 10, "per_min": 600.0, "interval_per_min": 600.0, "lastn_max_ms": 3.0,
                 "avg_ms": 1.5, "sampled_ms": 1.5, "rollbacks": 0, "rollback_pct": 0.0},
                {"et_s": 2.0, "units": 30, "per_min": 900.0, "interval_per_min": 1200.0, "lastn_max_ms": 3.0,
                 "avg_ms": 1.0, "sampled_ms": 0.8, "rollbacks": 1, "rollback_pct": 3.3,
                 "p50_ms": 0.7, "p95_ms": 2.5, "p99_ms": 3.0}
            ]
        }))
        .unwrap();
        let csv =
            super::intervals(&[super::Placed { run_id: 7, block: Some(0), variant: "plain, v2", record: &record }]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3, "{csv}");
        // A record from before the percentiles were kept reads them as 0.
        assert!(lines[1].ends_with(",0,0,0"), "{}", lines[1]);
        assert_eq!(lines[2], "7,1,\"plain, v2\",ds2,2,30,900,1200,1,0.8,3,3.3,0.7,2.5,3");
        assert_eq!(super::telemetry(&[]).lines().count(), 1, "a header only");
    }
}
