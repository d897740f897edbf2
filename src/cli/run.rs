//! `dbvs run`: one measured run on a fresh copy of the pristine database.

use super::build::ensure_built;
use super::{create_output, parse_duration, summary, DbArgs};
use crate::driver::{self, Event, Pacing, RunStatus};
use crate::record::{Env, RunRecord};
use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Worker threads, each with its own connection.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,
    /// Measured time after warmup (e.g. 60s, 10m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    duration: Duration,
    /// Time before measuring; statistics are reset when it ends.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    warmup: Duration,
    /// Mean think time after each order; each pause is uniform in [0, 2 x think time).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    think_time: Duration,
    /// Threads started per second during ramp-up (DS2's ramp_rate).
    #[arg(long, default_value_t = 10.0)]
    ramp_rate: f64,
    /// How often to print a DS2-format progress line.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    report_interval: Duration,
    /// Write the run record (parameters, environment, metrics, checks) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Keep the run's database afterwards instead of deleting it, for inspection: a file
    /// path for SQLite, a database name on a server.
    #[arg(long, value_name = "NAME")]
    keep_db: Option<String>,
    /// Start cold: flush and drop the OS page cache before the run (needs root), as the seeds
    /// rebooted between runs. A managed server is always freshly started for each run.
    #[arg(long)]
    cold: bool,
    /// Do not record the run in the results store.
    #[arg(long)]
    no_store: bool,
    /// Test-only: busy-wait this long in every order (a known slowdown for verdict tests).
    #[arg(long, hide = true, default_value = "0", value_parser = parse_duration)]
    inject_delay: Duration,
}

pub fn main(args: RunArgs) -> Result<ExitCode> {
    if args.duration.is_zero() {
        anyhow::bail!("--duration must be longer than 0, e.g. --duration 60s");
    }
    if !(args.ramp_rate > 0.0 && args.ramp_rate.is_finite()) {
        anyhow::bail!("--ramp-rate must be a positive number of threads per second, e.g. --ramp-rate 10");
    }
    if args.report_interval < Duration::from_millis(100) {
        anyhow::bail!("--report-interval must be at least 100ms");
    }
    let json_out = args.json.as_deref().map(create_output).transpose()?;
    let (target, workload) = args.db.open()?;
    let meta = ensure_built(target.as_ref(), workload.as_ref())?;
    let env = Env {
        host: crate::host::collect(),
        engine_versions: target.versions()?,
        dbvs_version: env!("CARGO_PKG_VERSION"),
    };
    let copy = target.fresh_copy()?;
    if args.cold {
        drop_caches()?;
    }
    if crate::interrupt::interrupted() {
        return Err(crate::interrupt::Interrupted.into());
    }

    let pacing = Pacing {
        threads: args.threads as usize,
        ramp_rate: args.ramp_rate,
        warmup: args.warmup,
        duration: args.duration,
        think_time: args.think_time,
        report_interval: args.report_interval,
        seed: args.db.seed,
        injected_delay: args.inject_delay,
    };
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let bar = ProgressBar::with_draw_target(Some(pacing.warmup.as_secs()), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} s  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let db = copy.as_ref();
    let result =
        driver::run(&pacing, workload.operations(), &|i| workload.worker(db, &meta, i), &mut |event| match event {
            Event::Tick { elapsed, of, warmup } => {
                bar.set_prefix(if warmup { "warmup" } else { "measure" });
                bar.set_length(of.as_secs());
                bar.set_position(elapsed.as_secs().min(of.as_secs()));
            }
            Event::Interval { sample, warmup } => {
                bar.set_message(format!("{} per min {:.0}", workload.headline(), sample.per_min));
                let prefix = if warmup { "warmup " } else { "" };
                bar.suspend(|| eprintln!("{prefix}{}", workload.interval_line(sample)));
            }
            Event::StatsReset => bar.suspend(|| eprintln!("Stats reset")),
        });
    bar.finish_and_clear();
    let mut result = result;
    if let (driver::RunStatus::Failed(cause), Some(d)) = (&mut result.status, target.diagnostics()) {
        cause.push_str(&format!(" ({d})"));
    }

    // A run whose database is gone (a dead server) is still recorded, with the reason.
    let checks = workload.check(db, &meta, &result.from_start).unwrap_or_else(|e| {
        vec![crate::workloads::Check { name: "post-run checks could run", ok: false, detail: format!("{e:#}") }]
    });
    let final_line = workload.final_line(&result);
    let record = RunRecord::new(workload.as_ref(), target.info(), &pacing, env, started_at, result, checks);
    eprintln!("{final_line}");
    summary::print(&record, workload.headline());

    if let (Some(mut f), Some(path)) = (json_out, &args.json) {
        serde_json::to_writer_pretty(&mut f, &record)?;
        writeln!(f)?;
        eprintln!("run record written to {}", path.display());
    }
    if !args.no_store {
        let mut store = crate::store::Store::open(&crate::store::default_path())?;
        let id = store.add_run(None, &serde_json::to_value(&record)?, workload.headline())?;
        eprintln!("stored as run {id} in {}", store.path.display());
    }
    if let Some(dest) = &args.keep_db {
        copy.keep(dest)?;
        eprintln!("run database kept as {dest}");
    }
    Ok(match &record.status {
        RunStatus::Completed if record.checks.iter().all(|c| c.ok) => ExitCode::SUCCESS,
        RunStatus::Completed => {
            eprintln!("error: the database failed its post-run checks (see above)");
            ExitCode::FAILURE
        }
        RunStatus::Interrupted => {
            eprintln!("interrupted: the figures above cover the time measured before Ctrl-C");
            ExitCode::from(130)
        }
        RunStatus::Failed(cause) => {
            eprintln!("error: run failed: {cause}");
            ExitCode::FAILURE
        }
    })
}

/// Writes dirty pages out and empties the page cache, so the run starts from disk.
fn drop_caches() -> Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| anyhow::anyhow!("--cold cannot drop the page cache ({e}); run as root, or leave out --cold"))
}
