//! One measured run on fresh copies of the pristine database: the run engine behind
//! `dbvs run`, driven by a [`RunSpec`] from the command line or from a study's child.

pub mod board;
mod build;
pub mod canary;
mod companion;
pub mod config;
mod fuse_cache;
mod instances;
mod interleave;
pub mod launch;
mod live;
pub mod load;
mod memory;
mod slice_writes;
mod slices;
pub mod spec;
pub mod start;
mod summary;
mod together;
pub mod workdir;

pub use build::{build, ensure_built};
pub use spec::{Companion, DbSpec, LimitScope, Limits, LiveFile, PacingSpec, RunSpec, Side, TelemetrySpec};

use crate::driver::{self, Event, Pacing, RunStatus};
use crate::host::Env;
use crate::record::RunRecord;
use crate::store::Store;
use crate::sys::{create_output, StorageIo};
use crate::targets::Engine;
use crate::workloads::{Kind, Measure, Standalone, Workload};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

/// Writes the record (or an interleaved run's records) to the `--json` file.
fn write_record(mut f: std::fs::File, spec: &RunSpec, record: &impl serde::Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut f, record)?;
    writeln!(f)?;
    if let Some(path) = &spec.json {
        eprintln!("run record written to {}", path.display());
    }
    Ok(())
}

/// Runs `spec`: builds the pristine database if missing, measures on fresh copies, prints
/// the summary, writes the record and stores it.
pub fn run(spec: &RunSpec) -> Result<ExitCode> {
    if let Ok(Kind::Standalone(w)) = spec.db.workload.kind() {
        return standalone(spec, w.as_ref());
    }
    if !spec.interleave.is_empty() || spec.turns.is_some() {
        return interleave::run(spec);
    }
    spec.check()?;
    if let Some(w) = spec.ramp_warning() {
        eprintln!("{w}");
    }
    let json_out = spec.json.as_deref().map(create_output).transpose()?;
    let mut memory = memory_limit(spec)?;
    // The store opens first: one that cannot take runs fails before anything is measured.
    let mut store = spec.store.then(|| Store::open(&crate::store::default_path())).transpose()?;
    let mut set = match SetUp::new(spec, memory.as_mut(), spec.turns.is_some()) {
        Ok(set) => set,
        Err(e) => {
            // A run that could not start (disk full while copying, a server that would not
            // start, a server killed during the build) is recorded as failed, with its cause.
            let interrupted = e.is::<crate::interrupt::Interrupted>();
            if let (Some(store), false) = (&store, interrupted) {
                let _ = store.add_failed_run(None, spec.db.workload.name(), &format!("{e:#}"));
            }
            if let Some(f) = json_out {
                write_record(f, spec, &failed_record(spec, &e)?)?;
            }
            return Err(e);
        }
    };
    let (mut record, details) = set.measure(spec)?;
    if let (Some(m), None) = (&memory, &record.limits) {
        record.limits = Some(m.record());
    }
    summary::print(&record, &details);
    if let Some(f) = json_out {
        write_record(f, spec, &record)?;
    }
    if let Some(store) = &mut store {
        keep_in_store(store, &record, spec.json.as_deref())?;
    }
    if let Some(dest) = &spec.keep_db {
        let (_, copy) = set.instances.swap_remove(0);
        copy.keep(dest)?;
        eprintln!("run database kept as {dest}");
    }
    Ok(exit_code(&record))
}

/// The run's memory limit, when it has one (its processes join it in [`SetUp::new`]).
fn memory_limit(spec: &RunSpec) -> Result<Option<memory::MemoryLimit>> {
    spec.memory.map(memory::MemoryLimit::new).transpose()
}

/// Runs a workload that needs no database (fileio, cipher) in the spec's data directory,
/// in this process (where the variant's environment and limits apply).
fn standalone(spec: &RunSpec, w: &dyn Standalone) -> Result<ExitCode> {
    let json_out = spec.json.as_deref().map(create_output).transpose()?;
    let mut store = spec.store.then(|| Store::open(&crate::store::default_path())).transpose()?;
    let run = w.run(spec.db.data_dir.as_deref(), spec.pacing.load.threads as usize, spec.keep_db.is_some())?;
    let record = RunRecord::of_standalone(spec.db.workload.name(), run);
    summary::print(&record, &[]);
    if let Some(f) = json_out {
        write_record(f, spec, &record)?;
    }
    if let Some(store) = &mut store {
        keep_in_store(store, &record, spec.json.as_deref())?;
    }
    Ok(exit_code(&record))
}

/// The record of a run that could not start: failed with `e`, or interrupted.
fn failed_record(spec: &RunSpec, e: &anyhow::Error) -> Result<RunRecord> {
    let status = match e.is::<crate::interrupt::Interrupted>() {
        true => RunStatus::Interrupted,
        false => RunStatus::Failed(format!("{e:#}")),
    };
    let workload = spec.db.workload()?;
    let (headline, measures) = (workload.headline(None), workload.measures(None));
    Ok(RunRecord::standalone(spec.db.workload.name(), status, workload.params(), headline, measures, json!({})))
}

/// Everything a run needs before it measures: the target (a managed server started), the
/// pristine database built and checked, one fresh copy and workload per instance.
/// One instance of a run: its workload (with its own statistics) and its database copy.
type Instance = (Box<dyn crate::workloads::Workload>, Box<dyn crate::targets::RunCopy>);

struct SetUp {
    target: Box<dyn crate::targets::Target>,
    meta: crate::targets::BuildMeta,
    env: Env,
    instances: Vec<Instance>,
    /// Seconds [`settle`] took.
    settle_s: f64,
    /// Whether the run has a memory limit (its storage reads are then a measure).
    memory_limited: bool,
    /// The client hosts that run the workers, when they are remote: one session with every
    /// host per instance, so each instance's workers are split among all the hosts.
    fleets: Vec<crate::remote::Fleet>,
    /// A companion workload beside the instances.
    companions: Option<companion::Companions>,
    /// The settings the run asked for, as the engine read them back.
    settings: BTreeMap<String, String>,
}

impl SetUp {
    /// Opens the target, builds the pristine database if needed, then (inside `memory`'s
    /// limit, when given) makes and settles the fresh copies. With `pinned` workers, a
    /// managed server runs on fixed CPUs too ([`crate::sys::placement`]).
    fn new(spec: &RunSpec, memory: Option<&mut memory::MemoryLimit>, pinned: bool) -> Result<Self> {
        let server_cpus =
            if pinned { crate::sys::placement::server_cpus(spec.pacing.load.threads as usize)? } else { vec![] };
        let (target, workload) = spec.db.open(&server_cpus, spec.memory)?;
        if spec.instances > 1 && !workload.supports_instances() {
            anyhow::bail!(
                "--instances runs throughput workloads side by side (ds2, tpcb, tpcc); {} is a suite of timed statements",
                workload.name()
            );
        }
        let ready = (|| -> Result<_> {
            let meta = ensure_built(target.as_ref(), workload.as_ref())?;
            // The last run's copy was deleted; its blocks go back to the disk under the image.
            // Where they cannot (no hole punching under the image), the image only grows.
            if let Err(e) = crate::sys::trim(&spec.db.images) {
                eprintln!("warning: {e:#}: the image keeps its deleted copies' blocks and may fill the disk under it");
            }
            // Before anything is copied, so every page the run reads is charged to the limit.
            if let Some(m) = memory {
                // But not the pristine's pages, which the copy reads: a host may page cold ones
                // out between runs (proactive reclaim, e.g. DAMON's), and read back inside the
                // limit they would take some of one run's memory and not another's.
                crate::sys::cache_files(&target.pristine_files())?;
                let server = crate::telemetry::server_processes(&target.watch().server_pid_files);
                m.admit(&server, &spec.db.fuse_daemons)?;
            }
            let env = Env::new(target.versions()?);
            // One database and one workload (with its own statistics) per instance.
            let mut instances = vec![(workload, target.fresh_copy()?)];
            for _ in 1..spec.instances {
                instances.push((spec.db.workload()?, target.fresh_copy()?));
            }
            let fleets = match &spec.clients {
                Some(c) => instances
                    .iter()
                    .map(|(_, copy)| crate::remote::Fleet::connect(c, &spec.db.workload, copy.as_ref()))
                    .collect::<Result<_>>()?,
                None => vec![],
            };
            let companions = companion::Companions::set_up(spec)?;
            let settings = settings_in_force(spec, instances[0].1.as_ref())?;
            let settle_s = settle(&instances, spec.idle)?;
            if spec.cold {
                crate::sys::drop_caches()?;
            }
            Ok((meta, env, instances, settle_s, fleets, companions, settings))
        })();
        match ready {
            Ok(_) if crate::interrupt::interrupted() => Err(crate::interrupt::Interrupted.into()),
            Ok((meta, env, instances, settle_s, fleets, companions, settings)) => Ok(Self {
                target,
                meta,
                env,
                instances,
                settle_s,
                memory_limited: spec.memory.is_some(),
                fleets,
                companions,
                settings,
            }),
            // What the engine said (a managed server's log) explains a set-up that failed.
            Err(e) => match target.diagnostics().filter(|_| !e.is::<crate::interrupt::Interrupted>()) {
                Some(log) => Err(anyhow::anyhow!("{e:#} ({log})")),
                None => Err(e),
            },
        }
    }

    /// How this set's workers are paced for `spec`, their streams drawn from `seed`.
    fn pacing(&self, spec: &RunSpec, seed: u64) -> Pacing {
        let mut pacing = spec.pacing.pacing(seed);
        pacing.injected_delay = spec.db.inject_delay;
        pacing.worker_cpu = self.target.info().engine == Engine::Sqlite;
        pacing.pin_workers = spec.turns.is_some(); // as interleaved sides are, for the same reason (and the servers, in `new`)
        self.instances[0].0.adjust_pacing(&mut pacing);
        pacing
    }

    /// Drives every instance at once, with telemetry, and folds their records into one;
    /// also returns the workload's own summary lines.
    fn measure(&mut self, spec: &RunSpec) -> Result<(RunRecord, Vec<String>)> {
        let pacing = self.pacing(spec, spec.db.workload.seed);
        let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let bar = ProgressBar::with_draw_target(Some(pacing.warmup.as_secs()), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len}  {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        let groups = spec.db.limits.as_ref().map_or(&[][..], |l| &l.groups[..]);
        let limits_before = crate::sys::cgroup::Usage::read(groups);
        let sampler = sampler(spec, self.target.watch())?;
        // The instances start together, or `stagger` apart (seed 000's clients, 15 s); the
        // first drives the progress bar.
        let companions = self.companions.as_ref();
        let start = std::sync::Barrier::new(self.instances.len() + companions.map_or(0, |c| c.instances.len()));
        let stagger = spec.pacing.load.stagger;
        let meta = &self.meta;
        let watch = self.target.watch();
        let server = watch.server_pid_files;
        let disks =
            crate::sys::disk_writes::DiskWrites::open(&crate::telemetry::devices::written_devices(&watch.volumes));
        let live = live::Live::of(spec)?;
        let live = &live;
        let (results, companion_results) = std::thread::scope(|s| {
            // Companion i starts with instance i, staggered alike.
            let beside: Vec<_> = companions
                .iter()
                .flat_map(|c| c.instances.iter().map(move |instance| (c, instance)))
                .enumerate()
                .map(|(i, (c, (w, copy)))| {
                    let (sampler, start) = (&sampler, &start);
                    s.spawn(move || {
                        start.wait();
                        crate::interrupt::sleep(stagger * i as u32);
                        measure(w.as_ref(), copy.as_ref(), &c.meta, &c.pacing, sampler, None, Placement::default())
                    })
                })
                .collect();
            let handles: Vec<_> = self
                .instances
                .iter()
                .enumerate()
                .map(|(i, (w, copy))| {
                    let (pacing, sampler, bar, start, server, disks) =
                        (&pacing, &sampler, &bar, &start, &server, &disks);
                    let remote = self.fleets.get(i);
                    s.spawn(move || {
                        start.wait();
                        crate::interrupt::sleep(stagger * i as u32);
                        // One instance's share of the FUSE daemons' and the server's I/O,
                        // and of the disks' writes, cannot be told apart; the first carries them.
                        let live = live.as_ref().map(|l| (l, i));
                        let side = match i {
                            0 => Placement {
                                daemons: &spec.db.fuse_daemons,
                                server,
                                disks: Some(disks),
                                live,
                                turn: None,
                                remote,
                            },
                            _ => Placement { live, remote, ..Placement::default() },
                        };
                        measure(w.as_ref(), copy.as_ref(), meta, pacing, sampler, (i == 0).then_some(bar), side)
                    })
                })
                .collect();
            let join = |h: std::thread::ScopedJoinHandle<'_, driver::RunResult>| {
                h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            };
            let results: Vec<_> = handles.into_iter().map(join).collect();
            (results, beside.into_iter().map(join).collect::<Vec<_>>())
        });
        bar.finish_and_clear();
        let (records, details) = self.records(results, &pacing, &started_at);
        let mut record = instances::combine(records);
        record.companions = self.companions.as_ref().map(|c| c.rows(companion_results, &self.env, &started_at));
        // Work per watt only for throughputs (OPM/W, TPS/W); a suite time per watt means nothing.
        let headline = record.headline.clone();
        let total = headline.value.filter(|_| headline.higher_is_better);
        let telemetry = sampler.finish(total.map(|v| (v, headline.name.as_str())));
        let power = spec.telemetry.power != crate::telemetry::power::PowerSpec::None;
        record.measures.extend(crate::telemetry::Telemetry::measures(Some(&telemetry), power));
        record.telemetry = Some(telemetry);
        if let Some(l) = &spec.db.limits {
            let usage = crate::sys::cgroup::Usage::read(groups).since(&limits_before);
            let mut applied_to = l.applies_to.describe().to_string();
            if !spec.db.fuse_daemons.is_empty() {
                applied_to.push_str(" and the FUSE daemon");
            }
            record.limits = Some(crate::record::LimitsRecord { applied_to, usage });
        }
        Ok((record, details))
    }

    /// Each instance's record, with its post-run checks; the first instance's summary lines.
    fn records(
        &self,
        results: Vec<driver::RunResult>,
        pacing: &Pacing,
        started_at: &str,
    ) -> (Vec<RunRecord>, Vec<String>) {
        let mut records = Vec::new();
        let mut details = Vec::new();
        let many = self.instances.len() > 1;
        for (((w, copy), mut result), i) in self.instances.iter().zip(results).zip(1..) {
            if let (RunStatus::Failed(cause), Some(d)) = (&mut result.status, self.target.diagnostics()) {
                cause.push_str(&format!(" ({d})"));
            }
            let checks = instances::checks_after(w.as_ref(), copy.as_ref(), &self.meta, &result);
            let prefix = if many { format!("instance {i}: ") } else { String::new() };
            eprintln!("{prefix}{}", w.final_line(&result));
            if i == 1 {
                details = w.details(&result);
            }
            let mut checks = checks;
            checks.extend(result.remote.as_ref().map(crate::remote::server_check));
            let (target, env) = (self.target.info(), self.env.clone());
            let server = !self.target.watch().server_pid_files.is_empty();
            let own = cost_measures(target.engine, w.as_ref(), Some(&result), server, self.memory_limited);
            let mut record = RunRecord::new(w.as_ref(), target, pacing, env, started_at.into(), result, checks);
            record.measures.extend(own);
            record.settle_s = Some(self.settle_s);
            record.settings = self.settings.clone();
            records.push(record);
        }
        (records, details)
    }
}

/// The telemetry sampler for a run, watching what `watch` names: a target's disks and
/// server, or every side's of an interleaved run.
fn sampler(spec: &RunSpec, watch: crate::targets::Watch) -> Result<crate::telemetry::Sampler> {
    crate::telemetry::Sampler::start(crate::telemetry::Options {
        interval: spec.telemetry.sample_interval,
        power: spec.telemetry.power.clone(),
        idle: spec.telemetry.idle_power,
        volumes: watch.volumes,
        server_pid_files: watch.server_pid_files,
        server_note: watch.note,
        peak_minutes: spec.telemetry.peak_minutes,
    })
}

/// The engine settings `spec` asks for, read back from the engine on `copy`.
fn settings_in_force(spec: &RunSpec, copy: &dyn crate::targets::RunCopy) -> Result<BTreeMap<String, String>> {
    let names: std::collections::BTreeSet<String> = spec
        .db
        .server_settings_within(spec.memory)
        .iter()
        .chain(&spec.db.pragmas)
        .map(|(name, _)| name.clone())
        .collect();
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let names: Vec<String> = names.into_iter().collect();
    crate::targets::settings::read_back(&mut copy.connect()?, &names).context("reading back the engine's settings")
}

/// Settles fresh copies before a run: each engine's own write-out (a checkpoint), then the
/// OS's write-back of every file system, then `idle`. Returns the seconds it took.
fn settle(instances: &[Instance], idle: Duration) -> Result<f64> {
    let t = std::time::Instant::now();
    for (_, copy) in instances {
        copy.settle()?;
    }
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    if crate::interrupt::sleep(idle) {
        return Err(crate::interrupt::Interrupted.into());
    }
    Ok(t.elapsed().as_secs_f64())
}

/// The measure that says whether a memory-limited run read from storage.
pub const STORAGE_READ_PER_UNIT: &str = "storage KB read per unit";

/// What the run engine measures itself beside a throughput workload's own measures, each
/// per unit (order, transaction), as costs that show a change more precisely than
/// throughput can (time the hypervisor stole is in no CPU time):
/// - with the engine inside this process (SQLite), the CPU time its worker threads spent:
///   the engine's work, SQLCipher's encryption included; work outside the process (a FUSE
///   daemon, the kernel's writeback) is not in it;
/// - with a managed server (`server`), the CPU time of its processes, every thread and
///   background worker (checkpointer, WAL writer, InnoDB's threads);
/// - on every engine, the KB the disks under the database wrote (their own counters, in
///   the run's window or its slices, so the WAL's fsyncs, checkpoints, a FUSE layer's
///   ciphertext and the file system's journal, and whatever else the machine wrote
///   meanwhile); `None` for a run that wrote nothing, where a ratio means nothing;
/// - under a memory limit (`memory_limited`), on every engine, the KB read from storage:
///   the engine's page-cache misses (its worker threads', or the managed server's
///   processes') plus its FUSE daemons' reads, what the regime costs.
///
/// Declared (no value) without a run.
pub fn cost_measures(
    engine: Engine,
    w: &dyn Workload,
    run: Option<&driver::RunResult>,
    server: bool,
    memory_limited: bool,
) -> Vec<Measure> {
    if !w.supports_instances() {
        return vec![];
    }
    let measured = run.map(|r| &r.measured).filter(|m| m.units > 0);
    let per_unit = |total: fn(&driver::Measured) -> f64| measured.map(|m| total(m) / m.units as f64);
    let mut own = vec![];
    if engine == Engine::Sqlite {
        own.push(Measure::cost("in-process CPU per unit", "ms", per_unit(|m| 1e3 * m.worker_cpu_s)));
    }
    if server {
        own.push(Measure::cost("server CPU per unit", "ms", per_unit(|m| 1e3 * m.server_cpu_s)));
    }
    let written =
        measured.filter(|m| m.storage_write_bytes > 0).map(|m| m.storage_write_bytes as f64 / 1024.0 / m.units as f64);
    own.push(Measure::cost("storage KB written per unit", "KB", written));
    if memory_limited {
        own.push(Measure::cost(STORAGE_READ_PER_UNIT, "KB", per_unit(|m| m.storage_read_bytes as f64 / 1024.0)));
    }
    own
}

/// Stores the record; when the store cannot take it, the record is kept in a file and the
/// error says where, so a finished run is never lost.
fn keep_in_store(store: &mut Store, record: &RunRecord, json: Option<&std::path::Path>) -> Result<()> {
    match store.add_run(None, record) {
        Ok(id) => {
            eprintln!("stored as run {id} in {}", store.path.display());
            Ok(())
        }
        Err(e) => {
            let kept = match json {
                Some(p) => p.to_path_buf(),
                None => {
                    let dir = crate::sys::data_home().join("unstored");
                    std::fs::create_dir_all(&dir)?;
                    let p = dir.join(format!("run-{}-{}.json", record.started_at.replace(':', ""), std::process::id()));
                    std::fs::write(&p, serde_json::to_vec_pretty(record)?)?;
                    p
                }
            };
            anyhow::bail!(
                "the results store {} could not take the run ({e:#}); the record is kept in {}; \
                 fix the store (or point DBVS_RESULTS at a writable file) before the next run",
                store.path.display(),
                kept.display()
            )
        }
    }
}

fn exit_code(record: &RunRecord) -> ExitCode {
    match &record.status {
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
    }
}

/// Drives one instance's workload on its database: the driver, the window counter read
/// over its own connection at both ends of the window (as HammerDB's monitor reads TPC-C's
/// next order ids), and the telemetry window marks. With a `turn` (an interleaved run's
/// slices and this variant's place in them) its workers take turns with the other
/// variants', and its elapsed time is its workers' time at work inside the window, per
/// worker, and so are its report intervals' rates.
fn measure(
    workload: &dyn crate::workloads::Workload,
    db: &dyn crate::targets::Database,
    meta: &crate::targets::BuildMeta,
    pacing: &Pacing,
    sampler: &crate::telemetry::Sampler,
    bar: Option<&ProgressBar>,
    side: Placement,
) -> driver::RunResult {
    let turn = side.turn;
    let mut counter = Counter { start: None, end: None, error: None };
    let mut others_io = (StorageIo::default(), StorageIo::default());
    let mut disk_bytes = (0, 0);
    let mut server_cpu = (Duration::ZERO, Duration::ZERO);
    let (mut at_work_rates, mut at_work_intervals) = (slices::AtWorkRates::default(), vec![]);
    let make_worker = |i| -> Result<Box<dyn driver::Worker + '_>> {
        let inner = workload.worker(db, meta, i)?;
        Ok(match turn {
            Some((slices, variant)) => Box::new(slices::Sliced::new(inner, slices, variant)),
            None => inner,
        })
    };
    let mut observe = |event: Event| match event {
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
        Event::Interval { sample, warmup, .. } => {
            let adjusted;
            let sample = match turn {
                Some((slices, variant)) if !warmup => {
                    adjusted = at_work_rates.adjust(sample, slices.at_work(variant), pacing.threads);
                    at_work_intervals.push(adjusted.clone());
                    &adjusted
                }
                _ => sample,
            };
            if let Some((live, i)) = side.live {
                live.interval(i, workload.name(), sample, warmup);
            }
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
            if let Some((slices, variant)) = turn {
                slices.window_start(variant);
            }
            sampler.window_start();
            counter.start = counter.read(workload, db);
            others_io.0 = side.io();
            disk_bytes.0 = side.disks.map_or(0, |d| d.bytes());
            server_cpu.0 = side.server_cpu();
        }
        Event::WindowEnd => {
            if let Some((slices, variant)) = turn {
                slices.window_end(variant);
            }
            sampler.window_end();
            counter.end = counter.read(workload, db);
            others_io.1 = side.io();
            disk_bytes.1 = side.disks.map_or(0, |d| d.bytes());
            server_cpu.1 = side.server_cpu();
        }
    };
    let ops = workload.operations();
    let mut result = match side.remote {
        Some(fleet) => fleet.drive(db, meta, pacing, ops, &mut observe),
        None => driver::run(pacing, ops, &make_worker, &mut observe),
    };
    result.measured.storage_read_bytes += others_io.1.since(others_io.0).read;
    result.measured.storage_write_bytes = match turn {
        Some((slices, variant)) => slices.written(variant).unwrap_or(0),
        None => disk_bytes.1.saturating_sub(disk_bytes.0),
    };
    result.measured.server_cpu_s = server_cpu.1.saturating_sub(server_cpu.0).as_secs_f64();
    if let Some((slices, variant)) = turn {
        result.elapsed_s = slices.at_work(variant).as_secs_f64() / pacing.threads.max(1) as f64;
        result.intervals = at_work_intervals;
    }
    result.window_counter = counter.start.zip(counter.end).map(|(a, b)| b - a);
    if let (RunStatus::Completed, Some(e)) = (&result.status, counter.error) {
        result.status = RunStatus::Failed(format!("could not read the workload's counter in the database: {e}"));
    }
    result
}

/// Where one instance's workers run: their turn in an interleaved run's slices, and the
/// processes whose storage reads are the instance's too: the FUSE daemons that serve its
/// database, and a managed server (named by its pid file). Run alone, the disks under its
/// database count their writes in its window (in slices, [`slices::Slices::written`]).
#[derive(Clone, Copy, Default)]
struct Placement<'a> {
    turn: Option<(&'a slices::Slices, usize)>,
    daemons: &'a [u32],
    server: &'a [std::path::PathBuf],
    disks: Option<&'a crate::sys::disk_writes::DiskWrites>,
    /// Where its live metrics go, under its index (an instance, or an interleaved side).
    live: Option<(&'a live::Live, usize)>,
    /// The client hosts that run its workers, when they are remote.
    remote: Option<&'a crate::remote::Fleet>,
}

impl Placement<'_> {
    /// Bytes the daemons and the server's processes have had read from storage so far (their
    /// writes are the disks').
    fn io(&self) -> StorageIo {
        let server = crate::telemetry::server_processes(self.server);
        StorageIo::of_processes(&[self.daemons, &server].concat())
    }

    /// CPU time the server's processes have used so far (zero without a managed server).
    fn server_cpu(&self) -> Duration {
        crate::telemetry::cpu_time(&crate::telemetry::server_processes(self.server))
    }
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
