//! The human summary printed at the end of a run.

use crate::driver::{LatencySummary, RunStatus};
use crate::record::{InstanceRow, RunRecord};
use crate::workloads::Measure;
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};

/// Prints the run's summary; `details` are the workload's own lines (per statement, per
/// benchmark).
pub fn print(r: &RunRecord, details: &[String]) {
    let status = match &r.status {
        RunStatus::Completed => "completed".to_string(),
        RunStatus::Interrupted => "INTERRUPTED".to_string(),
        RunStatus::Failed(c) => format!("FAILED: {c}"),
    };
    let (engine, location) = r.target.as_ref().map_or(("", ""), |t| (t.engine.name(), t.location.as_str()));
    println!("{} on {engine} {location}: {status}, {:.1} s measured", r.workload, r.elapsed_s);
    let mut line = figure(&r.headline);
    for m in r.measures.iter().filter(|m| m.name != r.headline.name && m.higher_is_better) {
        line += &format!("   {}", figure(m));
    }
    let c = &r.counts;
    let rate = if c.units > 0 { 100.0 * c.rollbacks as f64 / c.units as f64 } else { 0.0 };
    line += &format!(
        "   units {}   rollbacks {} ({rate:.2}%)   retries {}   lock waits {}",
        c.units, c.rollbacks, c.retries, c.lock_waits
    );
    println!("{line}");
    for d in details {
        println!("{d}");
    }
    let process =
        if r.clients.is_some() { "coordinator (the workers ran on the client hosts)" } else { "dbvs process" };
    let memory = r.driver.rss_mb.map_or(String::new(), |(start, end)| {
        format!("; memory (RSS) {start:.1} MB at the window's start, {end:.1} MB at its end")
    });
    println!(
        "CPU: {process} {:.1}% of {} cores; driver code {:.2}% of worker time{memory}",
        r.driver.process_cpu_pct,
        r.env.as_ref().map_or(0, |e| e.host.cores),
        r.driver.driver_overhead_pct
    );

    if let Some(rows) = &r.instances {
        println!("{}", instance_table(rows, &r.headline));
    }
    if let Some(c) = &r.clients {
        println!("{}", client_table(c));
    }
    if let Some(t) = &r.telemetry {
        telemetry(t);
    }
    if let Some(l) = &r.limits {
        println!("limits (cgroup, on {}): {}", l.applied_to, crate::sys::cgroup::describe(&l.usage));
    }
    if !r.latency.is_empty() {
        println!("{}", latency_table(&r.unit_latency, &r.latency));
    }
    for c in &r.checks {
        println!("check {}: {} ({})", if c.ok { "ok    " } else { "FAILED" }, c.name, c.detail);
    }
}

/// `OPM 1234.5`, or `OPM -` when the run could not measure it.
fn figure(m: &Measure) -> String {
    m.value.map_or_else(|| format!("{} -", m.name), |v| format!("{} {v:.1}", m.name))
}

fn right_aligned(mut t: Table) -> Table {
    t.load_preset(UTF8_FULL_CONDENSED);
    for c in t.column_iter_mut().skip(1) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    t
}

/// One row per client host: its share of the work and whether it kept up.
fn client_table(c: &crate::driver::ClientsRecord) -> Table {
    let mut t = Table::new();
    t.set_header(["client host", "workers", "units", "CPU % of its cores", "clock offset ms", "round trip ms"]);
    for h in &c.hosts {
        t.add_row([
            h.host.clone(),
            h.workers.to_string(),
            h.units.to_string(),
            format!("{:.1} of {}", h.cpu_pct, h.cores),
            format!("{:+.3}", h.clock_offset_ms),
            format!("{:.3}", h.rtt_ms),
        ]);
    }
    right_aligned(t)
}

fn latency_table(unit: &LatencySummary, ops: &[(String, LatencySummary)]) -> Table {
    let mut t = Table::new();
    t.set_header(["latency (ms)", "count", "avg", "p50", "p90", "p95", "p99", "max"]);
    for (name, l) in std::iter::once(("unit", unit)).chain(ops.iter().map(|(n, l)| (n.as_str(), l))) {
        t.add_row(
            [name.to_string(), l.count.to_string()]
                .into_iter()
                .chain([l.avg_ms, l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.max_ms].map(|x| format!("{x:.2}"))),
        );
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
        println!(
            "disk {}: {:.0} r/s, {:.0} w/s, {:.1} MB/s read, {:.1} MB/s written, await {:.2} ms, util {:.0}%",
            crate::telemetry::devices::describe(d, &t.layers),
            r.reads_s,
            r.writes_s,
            r.read_mb_s,
            r.write_mb_s,
            r.await_ms,
            r.util_pct
        );
    }
    for (i, r) in &w.net {
        println!("network {i}: {:.1} Mbit/s in, {:.1} Mbit/s out", r.rx_mbit_s, r.tx_mbit_s);
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
    let (n, every) = (t.samples.len(), t.interval_s);
    let kept = match t.series_halvings {
        0 => format!("{n} samples every {every:.1} s"),
        h => format!("a sample every {every:.1} s, kept as {n} means of {}", 1u64 << h),
    };
    println!("telemetry: {kept}, sampler {:.2}% of a core", t.sampler_cpu_pct);
}

/// Seeds 000 and 001's per-client table: each instance's headline and unit p95, then the total.
fn instance_table(rows: &[InstanceRow], headline: &Measure) -> Table {
    let mut t = Table::new();
    t.set_header(["instance", &headline.name, "unit p95 (ms)", "status"]);
    for r in rows {
        let status = match &r.status {
            RunStatus::Failed(c) => format!("failed: {c}"),
            s => format!("{s:?}").to_lowercase(),
        };
        t.add_row([
            r.instance.to_string(),
            format!("{:.0}", r.headline.value.unwrap_or(0.0)),
            format!("{:.2}", r.unit_p95_ms),
            status,
        ]);
    }
    t.add_row(["total".to_string(), format!("{:.0}", headline.value.unwrap_or(0.0)), String::new(), String::new()]);
    right_aligned(t)
}
