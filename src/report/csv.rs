//! CSV: one row per run, for spreadsheets. `headline` is the run's workload's first
//! measure (OPM, TPM, or the batch suite's q1 latency in ms).

use super::StudyReport;
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
        "study_id,run_id,block,variant,workload,status,cause,headline,units,rollback_rate,p95_ms,cpu_pct\n",
    );
    for run in &r.runs {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
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
            num(run.cpu_pct),
        );
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
}
