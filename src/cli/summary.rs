//! The human summary printed at the end of a run.

use crate::driver::RunStatus;
use crate::record::RunRecord;
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};
use serde_json::Value;

pub fn print(r: &RunRecord, rate_name: &str) {
    let m = &r.metrics;
    let num = |k: &str| m[k].as_f64().unwrap_or(0.0);
    let status = match &r.status {
        RunStatus::Completed => "completed".to_string(),
        RunStatus::Interrupted => "INTERRUPTED".to_string(),
        RunStatus::Failed(c) => format!("FAILED: {c}"),
    };
    println!("{} on {} {}: {status}, {:.1} s measured", r.workload, r.target.engine, r.target.location, r.elapsed_s);
    println!(
        "{rate_name} {:.0}   orders {:.0}   rollbacks {:.0} ({:.2}%)   retries {:.0}   lock waits {:.0}",
        num("opm"),
        num("orders"),
        num("rollbacks"),
        100.0 * num("rollback_rate"),
        num("retries"),
        num("lock_waits"),
    );
    println!(
        "CPU: dbvs process {:.1}% of {} cores; driver code {:.2}% of worker time",
        r.driver.process_cpu_pct, r.env.host.cores, r.driver.driver_overhead_pct
    );

    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["latency (ms)", "count", "avg", "p50", "p90", "p95", "p99", "max"]);
    if let Value::Object(ops) = &m["latency_ms"] {
        for (name, l) in ops {
            let f = |k: &str| format!("{:.2}", l[k].as_f64().unwrap_or(0.0));
            t.add_row([
                name.clone(),
                l["count"].to_string(),
                f("avg_ms"),
                f("p50_ms"),
                f("p90_ms"),
                f("p95_ms"),
                f("p99_ms"),
                f("max_ms"),
            ]);
        }
    }
    for c in t.column_iter_mut().skip(1) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    println!("{t}");
    for c in &r.checks {
        println!("check {}: {} ({})", if c.ok { "ok    " } else { "FAILED" }, c.name, c.detail);
    }
}
