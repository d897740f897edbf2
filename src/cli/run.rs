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
    /// Worker threads (virtual users), each with its own connection.
    #[arg(long, visible_alias = "users", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,
    /// Measured time after warmup (e.g. 60s, 10m) [default: 60s; with --iterations, no limit].
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Time before measuring (HammerDB's rampup); statistics are reset when it ends.
    #[arg(long, visible_alias = "rampup", value_parser = parse_duration)]
    warmup: Option<Duration>,
    /// Units each thread runs, then stops (HammerDB's per-user iterations, e.g. 1000); the run
    /// ends when all are done. Counts from the first unit, so it takes no --warmup.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    iterations: Option<u64>,
    /// Mean think time after each unit; each pause is uniform in [0, 2 x think time).
    #[arg(long, default_value = "0", value_parser = parse_duration, conflicts_with = "random_sleep")]
    think_time: Duration,
    /// A random sleep of up to this long after each unit (HammerDB-style, e.g. 10ms): the
    /// same as a think time of half of it.
    #[arg(long, value_name = "MAX", value_parser = parse_duration)]
    random_sleep: Option<Duration>,
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
    /// path for SQLite, a database name on a server (with --instances, the first's).
    #[arg(long, value_name = "NAME")]
    keep_db: Option<String>,
    /// Start cold: flush and drop the OS page cache before the run (needs root), as the seeds
    /// rebooted between runs. A managed server is always freshly started for each run.
    #[arg(long)]
    cold: bool,
    /// Do not record the run in the results store.
    #[arg(long)]
    no_store: bool,
    /// How often telemetry samples CPU, disks, memory, pressure and power.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    sample_interval: Duration,
    /// Power source: auto (RAPL when readable), none, rapl, ipmi (ipmitool dcmi power
    /// reading), or cmd:COMMAND (a command printing watts, e.g. an external meter's reader).
    #[arg(long, default_value = "auto", value_name = "SOURCE")]
    power: crate::telemetry::power::PowerSpec,
    /// With a power source: how long to read idle power before the load starts.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    idle_power: Duration,
    /// Telemetry summaries also cover the window's last N minutes (seed 000: "the last 10
    /// minutes of peak performance").
    #[arg(long, default_value_t = 10.0, value_name = "N")]
    peak_minutes: f64,
    /// Independent databases run side by side, each a copy of the pristine with its own
    /// --threads workers, all starting together (seed 000's and 001's client VMs). The record
    /// gives the total and each instance's figures.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    instances: u32,
    /// Test-only: busy-wait this long in every order (a known slowdown for verdict tests).
    #[arg(long, hide = true, default_value = "0", value_parser = parse_duration)]
    inject_delay: Duration,
}

pub fn main(args: RunArgs) -> Result<ExitCode> {
    if args.iterations.is_some() && args.warmup.is_some_and(|w| !w.is_zero()) {
        anyhow::bail!(
            "--iterations counts from the first unit, so it takes no --warmup; drop --warmup, or use --duration"
        );
    }
    let duration = match (args.duration, args.iterations) {
        (Some(d), _) => d,
        (None, Some(_)) => Duration::from_secs(365 * 24 * 3600),
        (None, None) => Duration::from_secs(60),
    };
    if duration.is_zero() {
        anyhow::bail!("--duration must be longer than 0, e.g. --duration 60s");
    }
    if !(args.ramp_rate > 0.0 && args.ramp_rate.is_finite()) {
        anyhow::bail!("--ramp-rate must be a positive number of threads per second, e.g. --ramp-rate 10");
    }
    if args.report_interval < Duration::from_millis(100) {
        anyhow::bail!("--report-interval must be at least 100ms");
    }
    if args.sample_interval < Duration::from_millis(100) {
        anyhow::bail!("--sample-interval must be at least 100ms, e.g. --sample-interval 1s");
    }
    if !(args.peak_minutes > 0.0 && args.peak_minutes.is_finite()) {
        anyhow::bail!("--peak-minutes must be a positive number of minutes, e.g. --peak-minutes 10");
    }
    let json_out = args.json.as_deref().map(create_output).transpose()?;
    let (target, workload) = args.db.open(args.cold)?;
    let headline = workload.headline();
    let throughput = ["opm", "tps", "nopm"].contains(&headline);
    if args.instances > 1 && !throughput {
        anyhow::bail!(
            "--instances runs throughput workloads side by side (ds2, tpcb, tpcc); {} is a suite of timed statements",
            workload.name()
        );
    }
    let meta = ensure_built(target.as_ref(), workload.as_ref())?;
    let env = Env {
        host: crate::host::collect(),
        engine_versions: target.versions()?,
        dbvs_version: env!("CARGO_PKG_VERSION"),
    };
    // One database and one workload (with its own statistics) per instance.
    let mut instances = vec![(workload, target.fresh_copy()?)];
    for _ in 1..args.instances {
        instances.push((args.db.workload(args.cold)?, target.fresh_copy()?));
    }
    if args.cold {
        crate::targets::drop_caches()?;
    }
    if crate::interrupt::interrupted() {
        return Err(crate::interrupt::Interrupted.into());
    }

    let mut pacing = Pacing {
        threads: args.threads as usize,
        ramp_rate: args.ramp_rate,
        warmup: args.warmup.unwrap_or(if args.iterations.is_some() { Duration::ZERO } else { Duration::from_secs(10) }),
        duration,
        think_time: args.random_sleep.map_or(args.think_time, |max| max / 2),
        iterations: args.iterations,
        report_interval: args.report_interval,
        seed: args.db.seed,
        injected_delay: args.inject_delay,
    };
    instances[0].0.adjust_pacing(&mut pacing);
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let bar = ProgressBar::with_draw_target(Some(pacing.warmup.as_secs()), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len}  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let groups = crate::variants::cgroup::handed_down();
    let limits_before = crate::variants::cgroup::Usage::read(&groups);
    let watch = target.watch();
    let sampler = crate::telemetry::Sampler::start(crate::telemetry::Options {
        interval: args.sample_interval,
        power: args.power.clone(),
        idle: args.idle_power,
        dirs: watch.dirs,
        server_pid_file: watch.server_pid_file,
        server_note: watch.note,
        peak_minutes: args.peak_minutes,
    })?;
    // Every instance starts together (seed 000's clients started at once); the first
    // drives the progress bar.
    let start = std::sync::Barrier::new(instances.len());
    let results: Vec<driver::RunResult> = std::thread::scope(|s| {
        let handles: Vec<_> = instances
            .iter()
            .enumerate()
            .map(|(i, (w, copy))| {
                let (meta, pacing, sampler, bar, start) = (&meta, &pacing, &sampler, &bar, &start);
                s.spawn(move || {
                    start.wait();
                    measure(w.as_ref(), copy.as_ref(), meta, pacing, sampler, (i == 0).then_some(bar))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    bar.finish_and_clear();

    let mut records = Vec::new();
    for (((w, copy), mut result), i) in instances.iter().zip(results).zip(0..) {
        if let (driver::RunStatus::Failed(cause), Some(d)) = (&mut result.status, target.diagnostics()) {
            cause.push_str(&format!(" ({d})"));
        }
        // A run whose database is gone (a dead server) is still recorded, with the reason.
        let checks = w.check(copy.as_ref(), &meta, Some(&result.from_start)).unwrap_or_else(|e| {
            vec![crate::workloads::Check { name: "post-run checks could run", ok: false, detail: format!("{e:#}") }]
        });
        let prefix = if instances.len() > 1 { format!("instance {}: ", i + 1) } else { String::new() };
        eprintln!("{prefix}{}", w.final_line(&result));
        records.push(RunRecord::new(
            w.as_ref(),
            target.info(),
            &pacing,
            env.clone(),
            started_at.clone(),
            result,
            checks,
        ));
    }
    let mut record = super::instances::combine(records, headline);
    // Work per watt only for throughputs (OPM/W, TPS/W); a suite time per watt means nothing.
    let unit = headline.to_uppercase();
    let total = throughput.then(|| record.metrics[headline].as_f64()).flatten();
    record.telemetry = Some(sampler.finish(total.map(|v| (v, unit.as_str()))));
    if !groups.is_empty() {
        let used = crate::variants::cgroup::Usage::read(&groups).since(&limits_before);
        let applied_to = if crate::variants::cgroup::for_server() { "server processes" } else { "the run process" };
        record.limits = Some(serde_json::json!({ "applied_to": applied_to, "usage": used }));
    }
    summary::print(&record, headline);

    if let (Some(mut f), Some(path)) = (json_out, &args.json) {
        serde_json::to_writer_pretty(&mut f, &record)?;
        writeln!(f)?;
        eprintln!("run record written to {}", path.display());
    }
    if !args.no_store {
        let mut store = crate::store::Store::open(&crate::store::default_path())?;
        let id = store.add_run(None, &serde_json::to_value(&record)?, headline)?;
        eprintln!("stored as run {id} in {}", store.path.display());
    }
    if let Some(dest) = &args.keep_db {
        let (_, copy) = instances.swap_remove(0);
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

/// Drives one instance's workload on its database: the driver, the window counter read
/// over its own connection at both ends of the window (as HammerDB's monitor reads TPC-C's
/// next order ids), and the telemetry window marks.
fn measure(
    workload: &dyn crate::workloads::Workload,
    db: &dyn crate::targets::Database,
    meta: &crate::targets::BuildMeta,
    pacing: &Pacing,
    sampler: &crate::telemetry::Sampler,
    bar: Option<&ProgressBar>,
) -> driver::RunResult {
    let mut counter = Counter { start: None, end: None, error: None };
    let mut result =
        driver::run(pacing, workload.operations(), &|i| workload.worker(db, meta, i), &mut |event| match event {
            Event::Tick { done, of, warmup } => {
                if let Some(bar) = bar {
                    bar.set_prefix(match (warmup, pacing.iterations) {
                        (true, _) => "warmup s",
                        (false, None) => "measure s",
                        (false, Some(_)) => "units",
                    });
                    bar.set_length(of);
                    bar.set_position(done.min(of));
                }
            }
            Event::Interval { sample, warmup } => {
                if let Some(bar) = bar {
                    bar.set_message(format!("{:.0}/min", sample.per_min));
                    let prefix = if warmup { "warmup " } else { "" };
                    bar.suspend(|| eprintln!("{prefix}{}", workload.interval_line(sample)));
                }
            }
            Event::WindowStart { after_warmup } => {
                if let (true, Some(bar)) = (after_warmup, bar) {
                    bar.suspend(|| eprintln!("Stats reset"));
                }
                sampler.window_start();
                counter.start = counter.read(workload, db);
            }
            Event::WindowEnd => {
                sampler.window_end();
                counter.end = counter.read(workload, db);
            }
        });
    result.window_counter = counter.start.zip(counter.end).map(|(a, b)| b - a);
    if let (RunStatus::Completed, Some(e)) = (&result.status, counter.error) {
        result.status = RunStatus::Failed(format!("could not read the workload's counter in the database: {e}"));
    }
    result
}

/// The workload's database counter at both ends of the window; the first failure is kept
/// to fail the run.
struct Counter {
    start: Option<i64>,
    end: Option<i64>,
    error: Option<String>,
}

impl Counter {
    fn read(&mut self, workload: &dyn crate::workloads::Workload, db: &dyn crate::targets::Database) -> Option<i64> {
        workload.window_counter(db).unwrap_or_else(|e| {
            self.error.get_or_insert(format!("{e:#}"));
            None
        })
    }
}
