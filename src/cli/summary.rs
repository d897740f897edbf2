//! The human summary printed at the end of a run.

use crate::driver::RunStatus;
use crate::record::RunRecord;
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};
use serde_json::Value;

pub fn print(r: &RunRecord, headline: &str) {
    let m = &r.metrics;
    let status = match &r.status {
        RunStatus::Completed => "completed".to_string(),
        RunStatus::Interrupted => "INTERRUPTED".to_string(),
        RunStatus::Failed(c) => format!("FAILED: {c}"),
    };
    println!("{} on {} {}: {status}, {:.1} s measured", r.workload, r.target.engine, r.target.location, r.elapsed_s);
    let mut line = format!("{} {:.1}", headline.to_uppercase(), m[headline].as_f64().unwrap_or(0.0));
    if let Some(tpm) = m["tpm"].as_f64() {
        line += &format!("   TPM {tpm:.1}");
    }
    for key in ["orders", "transactions", "rollbacks", "retries", "lock_waits"] {
        if let Some(v) = m[key].as_u64() {
            line += &format!("   {} {v}", key.replace('_', " "));
        }
    }
    if let Some(rate) = m["rollback_rate"].as_f64() {
        line += &format!("   rollback rate {:.2}%", 100.0 * rate);
    }
    println!("{line}");
    if let Value::Object(statements) = &m["statements"] {
        for (q, s) in statements {
            let rows = s["rows"].as_array().map_or(0, Vec::len);
            println!(
                "{q}: {:.1} ms +- {:.1} (95% CI, {} executions), {rows} result rows",
                s["mean_ms"].as_f64().unwrap_or(f64::NAN),
                s["ci95_ms"].as_f64().unwrap_or(f64::NAN),
                s["executions"]
            );
        }
    }
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
