//! `dbvs results`, `dbvs report` and `dbvs compare`: reading the results store back.

use crate::driver::{LatencySummary, RunStatus};
use crate::measure::value_of;
use crate::record::RunRecord;
use crate::report::{Format, StudyReport};
use crate::status::{Status, VariantStatus};
use crate::store::{self, Store};
use crate::sys::names::printable;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum ResultsCommand {
    /// List studies (and, with --runs, recent runs).
    List {
        /// List the most recent runs instead of studies.
        #[arg(long)]
        runs: bool,
    },
    /// Show one study: status, verdicts and its runs.
    Show { id: i64 },
}

#[derive(Args)]
pub struct ReportArgs {
    /// The study id (see 'dbvs results list').
    id: i64,
    #[arg(long, value_enum, default_value_t = Format::Html)]
    format: Format,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Run id of A (see 'dbvs results list --runs'), or study id with --studies.
    run_a: i64,
    /// Run id of B, or study id with --studies.
    run_b: i64,
    /// Compare two studies (see 'dbvs results list'): the same study file run on two dates,
    /// machines or dbvs versions; says which ratios moved beyond the noise.
    #[arg(long)]
    studies: bool,
    /// With --studies: exit 1 when any ratio moved beyond the noise (a regression gate).
    #[arg(long, requires = "studies")]
    fail_if_moved: bool,
}

pub(super) fn open() -> Result<Store> {
    Store::open(&store::default_path())
}

pub(super) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header.to_vec());
    t
}

/// A table row whose cells (names and causes from the store) print safely on a terminal.
pub(super) fn row(cells: Vec<String>) -> Vec<String> {
    cells.iter().map(|c| printable(c)).collect()
}

pub fn results(cmd: ResultsCommand) -> Result<ExitCode> {
    let s = open()?;
    match cmd {
        ResultsCommand::List { runs: false } => {
            let mut t = table(&["study", "name", "started", "status", "runs"]);
            for r in s.studies()? {
                t.add_row(row(vec![r.id.to_string(), r.name, r.started_at, r.status.to_string(), r.runs.to_string()]));
            }
            println!("{t}");
        }
        ResultsCommand::List { runs: true } => {
            let mut t = table(&["run", "study", "block", "variant", "workload", "status", "headline", "finished"]);
            for r in s.recent_runs(50)? {
                let opt = |x: Option<i64>| x.map_or(String::new(), |v| v.to_string());
                let headline = headline_text(&r);
                t.add_row(row(vec![
                    r.id.to_string(),
                    opt(r.study_id),
                    opt(r.block.map(|b| b + 1)),
                    r.variant.unwrap_or_default(),
                    r.workload,
                    r.status.to_string(),
                    headline,
                    r.finished_at,
                ]));
            }
            println!("{t}");
        }
        ResultsCommand::Show { id } => {
            let (study, report) = s.study(id)?;
            println!(
                "study {} '{}': {} (started {}, finished {})",
                study.id,
                printable(&study.name),
                study.status,
                study.started_at,
                study.finished_at.unwrap_or_default()
            );
            if let Some(c) = study.cause {
                println!("cause: {}", printable(&c));
            }
            if let Some(r) = report.as_deref().map(serde_json::from_str::<StudyReport>).transpose()? {
                println!("stopped: {}", r.stop_reason);
                for v in &r.variants {
                    let what = if v.status == VariantStatus::Ran {
                        crate::report::verdict_text(&r, &v.info.name)
                    } else {
                        format!("{}: {}", v.status, v.reason.clone().unwrap_or_default())
                    };
                    println!("  {:<12} {}", printable(&v.info.name), printable(&what));
                }
            }
            let mut t = table(&["run", "block", "variant", "status", "headline", "cause"]);
            for r in s.runs_of(id)? {
                t.add_row(row(vec![
                    r.id.to_string(),
                    r.block.map_or(String::new(), |b| (b + 1).to_string()),
                    r.variant.clone().unwrap_or_default(),
                    r.status.to_string(),
                    headline_text(&r),
                    r.cause.unwrap_or_default(),
                ]));
            }
            println!("{t}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A run's headline with its name and unit from the stored record (`OPM 1234 orders/min`,
/// `suite 12.3 s`): the store's bare number means nothing without the workload's measure.
fn headline_text(r: &store::RunRow) -> String {
    let Some(value) = r.headline else { return String::new() };
    let measure =
        r.record_json.as_deref().and_then(|j| serde_json::from_str::<RunRecord>(j).ok()).map(|rec| rec.headline);
    match measure {
        Some(m) => format!("{} {} {}", m.name, significant(value), m.unit),
        None => significant(value),
    }
}

/// Four significant digits, so seconds and orders per minute both read well.
fn significant(v: f64) -> String {
    let digits = if v == 0.0 { 0 } else { (3 - v.abs().log10().floor() as i32).max(0) as usize };
    format!("{v:.digits$}")
}

pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let (row, json) = open()?.study(args.id)?;
    let json = json.with_context(|| match row.status {
        Status::Running => format!("study {} is still running; its report is written when it ends", row.id),
        status => format!(
            "study {} ended {status} before it wrote a report ({}); its finished runs are in the store \
             (dbvs results show {}); continue it with 'dbvs study FILE --resume {}', or report the blocks \
             it has with 'dbvs study FILE --resume {} --budget 0'",
            row.id,
            row.cause.as_deref().unwrap_or("no cause recorded"),
            row.id,
            row.id,
            row.id
        ),
    })?;
    let report: StudyReport = serde_json::from_str(&json).context("the stored report is unreadable")?;
    let text = args.format.render(&report)?;
    match &args.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    if args.studies {
        return super::history::compare_studies(args.run_a, args.run_b, args.fail_if_moved);
    }
    let s = open()?;
    let load = |id: i64| -> Result<RunRecord> {
        let r = s.run(id)?;
        let json = r
            .record_json
            .with_context(|| format!("run {id} failed without a record: {}", r.cause.unwrap_or_default()))?;
        serde_json::from_str(&json).with_context(|| format!("run {id}'s stored record is unreadable"))
    };
    let (a, b) = (load(args.run_a)?, load(args.run_b)?);
    for (id, r) in [(args.run_a, &a), (args.run_b, &b)] {
        if r.status != RunStatus::Completed {
            println!("note: run {id} did not complete ({}); its figures cover only what it measured", status_text(r));
        }
    }
    let mut rows: Vec<(String, Option<f64>, Option<f64>)> = Vec::new();
    for m in std::iter::once(&a.headline).chain(&a.measures) {
        if !rows.iter().any(|(n, _, _)| *n == m.name) {
            rows.push((
                m.name.clone(),
                m.value,
                value_of(&b.measures, &m.name).or(b.headline.value.filter(|_| b.headline.name == m.name)),
            ));
        }
    }
    let rate = |r: &RunRecord| (r.counts.units > 0).then(|| r.counts.rollbacks as f64 / r.counts.units as f64);
    rows.push(("units".into(), Some(a.counts.units as f64), Some(b.counts.units as f64)));
    rows.push(("rollback rate".into(), rate(&a), rate(&b)));
    for (op, la) in std::iter::once(("unit", &a.unit_latency)).chain(a.latency.iter().map(|(n, l)| (n.as_str(), l))) {
        let lb =
            if op == "unit" { Some(&b.unit_latency) } else { b.latency.iter().find(|(n, _)| n == op).map(|(_, l)| l) };
        for (stat, f) in [
            ("avg_ms", (|l: &LatencySummary| l.avg_ms) as fn(&LatencySummary) -> f64),
            ("p95_ms", |l| l.p95_ms),
            ("p99_ms", |l| l.p99_ms),
        ] {
            rows.push((format!("{op} {stat}"), Some(f(la)), lb.map(f)));
        }
    }
    rows.push(("process CPU %".into(), Some(a.driver.process_cpu_pct), Some(b.driver.process_cpu_pct)));
    let mut t = table(&["metric", &format!("run {}", args.run_a), &format!("run {}", args.run_b), "B vs A"]);
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    for (name, x, y) in rows {
        let change = match (x, y) {
            (Some(x), Some(y)) if x != 0.0 => format!("{:+.1}%", 100.0 * (y / x - 1.0)),
            _ => String::new(),
        };
        t.add_row(row(vec![name, f(x), f(y), change]));
    }
    println!("{t}");
    println!("Two single runs carry no confidence interval; run a study for a verdict.");
    Ok(ExitCode::SUCCESS)
}

fn status_text(r: &RunRecord) -> String {
    match &r.status {
        RunStatus::Failed(c) => format!("failed: {c}"),
        s => format!("{s:?}").to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::significant;

    #[test]
    fn headlines_keep_four_significant_digits() {
        assert_eq!(significant(12345.6), "12346");
        assert_eq!(significant(1234.56), "1235");
        assert_eq!(significant(12.3456), "12.35");
        assert_eq!(significant(0.012345), "0.01235");
        assert_eq!(significant(0.0), "0");
    }
}
