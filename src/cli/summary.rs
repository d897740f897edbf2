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

    if let Some(rows) = &r.instances {
        println!("{}", instance_table(rows, headline, m[headline].as_f64().unwrap_or(0.0)));
    }
    if let Some(t) = &r.telemetry {
        telemetry(t);
    }
    if let Some(l) = &r.limits {
        if let Ok(u) = serde_json::from_value::<crate::variants::cgroup::Usage>(l["usage"].clone()) {
            println!(
                "limits (cgroup, on {}): {}",
                l["applied_to"].as_str().unwrap_or("?"),
                crate::variants::cgroup::describe(&u)
            );
        }
    }
    if let Some(benchmarks) = m["benchmarks"].as_object().filter(|b| b.values().any(|b| b["units"].as_u64() > Some(0)))
    {
        println!("{}", benchmark_table(benchmarks));
    }
    if let Some(ops) = m["latency_ms"].as_object().filter(|o| !o.is_empty()) {
        println!("{}", latency_table(ops));
    }
    for c in &r.checks {
        println!("check {}: {} ({})", if c.ok { "ok    " } else { "FAILED" }, c.name, c.detail);
    }
}

fn right_aligned(mut t: Table) -> Table {
    t.load_preset(UTF8_FULL_CONDENSED);
    for c in t.column_iter_mut().skip(1) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    t
}

fn latency_table(ops: &serde_json::Map<String, Value>) -> Table {
    let mut t = Table::new();
    t.set_header(["latency (ms)", "count", "avg", "p50", "p90", "p95", "p99", "max"]);
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
    right_aligned(t)
}

/// bignw's per-benchmark figures, as seed 003 tabulated them.
fn benchmark_table(benchmarks: &serde_json::Map<String, Value>) -> Table {
    let mut t = Table::new();
    t.set_header([
        "benchmark",
        "category",
        "iterations",
        "units",
        "mean unit (s)",
        "+-% (95%)",
        "per iteration (ms)",
        "rows",
    ]);
    let mut rows: Vec<&Value> = benchmarks.values().filter(|b| b["units"].as_u64() > Some(0)).collect();
    rows.sort_by_key(|b| b["benchmark"].as_u64());
    for b in rows {
        let f = |k: &str, p: usize| b[k].as_f64().map_or("-".into(), |v| format!("{v:.p$}"));
        t.add_row([
            format!("{} {}", b["benchmark"], b["name"].as_str().unwrap_or("")),
            b["category"].as_str().unwrap_or("").to_string(),
            b["iterations"].to_string(),
            b["units"].to_string(),
            f("mean_s", 3),
            f("ci95_pct", 1),
            f("per_iteration_ms", 2),
            b["rows_per_iteration"].as_u64().map_or("-".into(), |r| r.to_string()),
        ]);
    }
    right_aligned(t)
}

/// The machine during the measurement window: CPU, pressure, disks, power.
fn telemetry(t: &crate::telemetry::Telemetry) {
    let Some(w) = &t.window else { return };
    let server = w.server_cpu_pct.map_or_else(|| t.server_cpu.clone(), |c| format!("{c:.0}% of a core"));
    println!(
        "system CPU {:.1}% busy (user {:.1}, system {:.1}, iowait {:.1}, steal {:.1}); dbvs {:.0}% of a core; server {server}",
        w.cpu_busy_pct, w.cpu_user_pct, w.cpu_system_pct, w.cpu_iowait_pct, w.cpu_steal_pct, w.dbvs_cpu_pct
    );
    println!(
        "pressure: cpu {:.1}%, io {:.1}% (full {:.1}%), memory {:.1}% of the time stalled; {:.0} context switches/s; {:.0} MB available",
        w.psi_cpu_some_pct, w.psi_io_some_pct, w.psi_io_full_pct, w.psi_memory_some_pct, w.ctxt_per_s, w.mem_available_mb
    );
    for (d, r) in &w.disks {
        let layer = t.layers.iter().find(|l| l.device.as_deref() == Some(d.as_str()));
        println!(
            "disk {d}{}: {:.0} r/s, {:.0} w/s, {:.1} MB/s read, {:.1} MB/s written, await {:.2} ms, util {:.0}%",
            layer.map_or(String::new(), |l| format!(" ({} on {})", l.fs_type, l.mount_point)),
            r.reads_s,
            r.writes_s,
            r.read_mb_s,
            r.write_mb_s,
            r.await_ms,
            r.util_pct
        );
    }
    let p = &t.power;
    match (p.window_w, p.idle_w) {
        (Some(w), idle) => println!(
            "power ({}): {w:.1} W in the window{}{}",
            p.source,
            idle.map_or(String::new(), |i| format!(", {i:.1} W idle before")),
            p.per_watt.map_or(String::new(), |v| format!(", {v:.1} {}", p.per_watt_unit.as_deref().unwrap_or("")))
        ),
        (None, _) => println!("power: unavailable (no RAPL counters; --power ipmi or cmd:COMMAND reads a meter)"),
    }
    println!(
        "telemetry: {} samples every {:.1} s, sampler {:.2}% of a core",
        t.samples.len(),
        t.interval_s,
        t.sampler_cpu_pct
    );
}

/// Seeds 000 and 001's per-client table: each instance's headline and unit p95, then the total.
fn instance_table(rows: &[Value], headline: &str, total: f64) -> Table {
    let mut t = Table::new();
    t.set_header(["instance", &headline.to_uppercase(), "unit p95 (ms)", "status"]);
    for r in rows {
        t.add_row([
            r["instance"].to_string(),
            format!("{:.0}", r[headline].as_f64().unwrap_or(0.0)),
            format!("{:.2}", r["unit_p95_ms"].as_f64().unwrap_or(0.0)),
            r["status"].as_str().unwrap_or("").to_string(),
        ]);
    }
    t.add_row(["total".to_string(), format!("{total:.0}"), String::new(), String::new()]);
    right_aligned(t)
}
