//! The launcher: runs `dbvs build` and `dbvs run` as child processes for a variant (its
//! spec, environment, logs, Ctrl-C forwarding) and reads the run record back. Studies and
//! capacity searches both launch their runs through it.

use super::canary;
use super::config::{TargetConfig, WorkloadConfig};
use crate::driver::RunStatus;
use crate::interrupt;
use crate::record::CanaryResult;
use crate::record::RunRecord;
use crate::run::board::Board;
use crate::run::start::SharedTurns;
use crate::run::{DbSpec, LimitScope, Limits, LiveFile, PacingSpec, RunSpec, Side, TelemetrySpec};
use crate::sys::names::slug;
use crate::targets::{Engine, TargetSpec};
use crate::variants::{Prepared, VariantConfig};
use anyhow::{bail, Context as _, Result};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// What every run a study (or a capacity search) launches shares.
pub struct Context<'a> {
    pub exe: &'a Path,
    pub out: &'a Path,
    /// The work directory (variants, scratch files), torn down with the study.
    pub work: &'a super::workdir::WorkDir,
    /// Where runs publish their live metrics, when the study serves them.
    pub live: Option<&'a Path>,
    pub target: &'a TargetConfig,
    /// The seed of every workload's data and choices.
    pub seed: u64,
    /// Where power readings come from (`auto`, `none` or a source), and the idle time
    /// measured before each run.
    pub power: &'a str,
    pub idle_power: Duration,
    pub clients: Option<&'a crate::remote::ClientsSpec>,
}

const SCAN_COPY: &str = "canary-scan.db";
/// Where a standalone workload (fileio) writes on a variant's storage.
const STANDALONE_DIR: &str = "standalone";

/// Whether `w` runs without a database (fileio, cipher).
fn standalone(w: &WorkloadConfig) -> bool {
    w.kind().is_ok_and(|k| k.as_driven().is_none())
}

/// The SQLite file of a workload's build, named by its build identity: workloads sharing a
/// build share it.
pub fn db_file(w: &WorkloadConfig) -> Result<String> {
    let identity = w.kind()?.as_driven().map(|w| w.build_identity()).unwrap_or_default();
    let build = identity.get("workload").map_or(w.name(), String::as_str);
    Ok(format!("{build}-{}.db", slug(w.size.as_deref().unwrap_or("default"))))
}

/// Sets variant `v` up in `dir` and builds its pristine database for each of `workloads`.
pub fn prepare(ctx: &Context, v: &VariantConfig, dir: &Path, workloads: &[WorkloadConfig]) -> Result<Prepared> {
    let engine = v.engine.unwrap_or(ctx.target.engine);
    v.preflight(engine)?;
    std::fs::create_dir_all(dir)?;
    let mut p = v.setup(dir)?;
    p.engine = engine;
    let mut built = std::collections::BTreeSet::new();
    for w in workloads {
        // Workloads sharing a database (tpcc and batch; bignw's benchmarks) build it once.
        if built.insert(db_file(w)?) {
            build(ctx, v, &p, w)?;
        }
    }
    Ok(p)
}

/// The database a run uses: target, workload, size, seed and encryption. A managed
/// server keeps every workload's database in its one data directory; a standalone
/// workload (fileio) works in a directory of the variant's storage.
fn db_spec(ctx: &Context, p: &Prepared, w: &WorkloadConfig) -> Result<DbSpec> {
    let server_dir = Some(p.data_dir.join("server"));
    let (target, data_dir) = match p.engine {
        _ if standalone(w) => (None, Some(p.data_dir.join(STANDALONE_DIR))),
        Engine::Postgres => (Some(TargetSpec::ManagedPostgres(p.binaries.clone())), server_dir),
        Engine::Mariadb => match ctx.target.nodes {
            Some(n) => (Some(TargetSpec::ManagedGalera(n)), server_dir),
            None => (Some(TargetSpec::ManagedMariadb(p.binaries.clone())), server_dir),
        },
        Engine::Sqlite => (Some(TargetSpec::Sqlite(p.data_dir.join(db_file(w)?))), None),
    };
    // The study's settings (for its engine's variants), then the variant's layers', then the
    // variant's own: the last of a name wins. A server takes them as settings, SQLite as pragmas.
    let study = ctx.target.settings.iter().filter(|_| p.engine == ctx.target.engine);
    let settings: Vec<(String, String)> = study
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(p.server_settings.iter().cloned())
        .chain(p.engine_settings.iter().cloned())
        .collect();
    let (server_settings, pragmas) = match p.engine {
        _ if standalone(w) => (vec![], vec![]),
        Engine::Sqlite => (vec![], settings),
        Engine::Postgres | Engine::Mariadb => (settings, vec![]),
    };
    Ok(DbSpec {
        target,
        workload: w.args(ctx.seed),
        key_file: p.key.as_ref().map(|(f, _)| f.clone()),
        key_kind: p.key.as_ref().map(|(_, k)| *k).unwrap_or_default(),
        cipher_pragmas: p.cipher_pragmas.clone(),
        password_file: None,
        log_dir: match p.engine {
            Engine::Postgres | Engine::Mariadb if !standalone(w) => p.log_dir.as_ref().map(|d| d.join("server")),
            _ => None,
        },
        data_dir,
        server_settings,
        pragmas,
        listen: ctx.target.listen.clone().filter(|_| !standalone(w)),
        limits: None,
        inject_delay: p.inject_delay,
        fuse_daemons: p.daemons.clone(),
        images: p.images.clone(),
    })
}

/// Writes `spec` beside the run's record, where a child reads it (and a person can rerun it
/// with `dbvs run --spec FILE`).
fn spec_file(ctx: &Context, name: &str, spec: &RunSpec) -> Result<PathBuf> {
    let path = ctx.out.join("runs").join(format!("{name}.spec.json"));
    spec.write(&path)?;
    Ok(path)
}

fn log_file(ctx: &Context, name: &str) -> Result<(PathBuf, std::fs::File)> {
    let path = ctx.out.join("logs").join(name);
    let f = std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok((path, f))
}

/// Runs a child to completion, forwarding Ctrl-C; returns its exit status.
fn wait(mut cmd: Command, log: std::fs::File) -> Result<std::process::ExitStatus> {
    crate::sys::end_with_parent(&mut cmd);
    let mut child = cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn()?;
    wait_child(&mut child)
}

/// Waits for a spawned child, forwarding each Ctrl-C (or SIGTERM) to it: asked again, the
/// child cuts its stop short too.
pub(super) fn wait_child(child: &mut std::process::Child) -> Result<std::process::ExitStatus> {
    let mut forwarded = 0;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if interrupt::signals() > forwarded {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            forwarded = interrupt::signals();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last lines of a log, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(2)..].join(" / ")
}

/// Builds the variant's pristine database for `w` inside its storage (a no-op when an
/// earlier workload already built the same database).
pub fn build(ctx: &Context, v: &VariantConfig, p: &Prepared, w: &WorkloadConfig) -> Result<()> {
    if standalone(w) {
        return Ok(());
    }
    let name = format!("build-{}-{}", slug(&v.name), slug(&w.label()));
    let (log_path, log) = log_file(ctx, &format!("{name}.log"))?;
    p.ensure_in_force()?;
    let spec = RunSpec::of(db_spec(ctx, p, w)?);
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("build").arg("--spec").arg(spec_file(ctx, &name, &spec)?).envs(p.env.iter().map(|(k, v)| (k, v)));
    let status = wait(cmd, log)?;
    if interrupt::interrupted() {
        return Err(interrupt::Interrupted.into());
    }
    if !status.success() {
        bail!("building its database failed: {}", tail(&log_path));
    }
    p.ensure_in_force()
}

/// One measured run; returns the child's run record. With `keep_for_scan` the run's
/// database is kept in the variant's storage for the canary scan. The variant must be in
/// force before and after the run (its layer mounted, its key present); a run whose layer
/// vanished is failed, whatever it measured.
pub fn run(
    ctx: &Context,
    v: &VariantConfig,
    p: &Prepared,
    w: &WorkloadConfig,
    tag: &str,
    keep_for_scan: bool,
) -> Result<RunRecord> {
    run_shaped(ctx, v, p, w, tag, keep_for_scan, |_| ())
}

/// [`run`] with `companion` beside every instance, on an embedded SQLite database of its
/// own in the variant's storage (see [`crate::run::Companion`]).
pub fn run_beside(
    ctx: &Context,
    v: &VariantConfig,
    p: &Prepared,
    w: &WorkloadConfig,
    companion: &WorkloadConfig,
    tag: &str,
) -> Result<RunRecord> {
    let db = DbSpec {
        target: Some(TargetSpec::Sqlite(p.data_dir.join(format!("companion-{}", db_file(companion)?)))),
        workload: companion.args(ctx.seed),
        key_file: None,
        key_kind: Default::default(),
        cipher_pragmas: vec![],
        password_file: None,
        data_dir: None,
        log_dir: None,
        server_settings: vec![],
        pragmas: vec![],
        listen: None,
        limits: None,
        inject_delay: crate::driver::InjectedSlowdown::None,
        fuse_daemons: vec![],
        images: vec![],
    };
    let companion = crate::run::Companion { db, pacing: pacing(companion) };
    run_shaped(ctx, v, p, w, tag, false, |spec| spec.companion = Some(companion))
}

fn run_shaped(
    ctx: &Context,
    v: &VariantConfig,
    p: &Prepared,
    w: &WorkloadConfig,
    tag: &str,
    keep_for_scan: bool,
    shape: impl FnOnce(&mut RunSpec),
) -> Result<RunRecord> {
    p.ensure_in_force()?;
    let ooms = crate::sys::cgroup::oom_kills(&p.cgroups);
    let result = (|| {
        let run = RunCommand::new(ctx, &[(v, p)], w, tag, keep_for_scan, shape)?;
        let status = wait(run.cmd, run.log)?;
        read_record(&run.json, &run.log_path, status, run.memory)
    })();
    settle(p, result, ooms)
}

/// A run's outcome with what the variant adds: the OOM killer named when it ended a
/// process under the variant's memory limit (else that shows only as "signal: 9"), and
/// the run failed when the variant's layer vanished during it.
fn settle(p: &Prepared, result: Result<RunRecord>, ooms_before: u64) -> Result<RunRecord> {
    let oom = (crate::sys::cgroup::oom_kills(&p.cgroups) > ooms_before).then_some(
        "the kernel's OOM killer ended a process under the variant's memory limit; raise its memory or use a smaller workload",
    );
    let mut record = match (result, oom) {
        (Err(e), Some(why)) => bail!("{e:#}; {why}"),
        (result, _) => result?,
    };
    if let (RunStatus::Failed(cause), Some(why)) = (&mut record.status, oom) {
        *cause = format!("{cause}; {why}");
    }
    if let Err(e) = p.ensure_in_force() {
        record.status = RunStatus::Failed(format!("{e:#} (checked after the run); its figures are not counted"));
    }
    Ok(record)
}

/// A `dbvs run` child for one or more variants (several only when they can share a
/// process), its spec written, its record and log paths named.
struct RunCommand {
    cmd: Command,
    json: PathBuf,
    log_path: PathBuf,
    log: std::fs::File,
    /// The run's own memory limit (`[workload] memory`), if any.
    memory: Option<u64>,
}

impl RunCommand {
    fn new(
        ctx: &Context,
        sides: &[(&VariantConfig, &Prepared)],
        w: &WorkloadConfig,
        tag: &str,
        keep_for_scan: bool,
        shape: impl FnOnce(&mut RunSpec),
    ) -> Result<Self> {
        let names: Vec<String> = sides.iter().map(|(v, _)| slug(&v.name)).collect();
        let name = format!("{tag}-{}-{}", names.join("+"), slug(&w.label()));
        let json = ctx.out.join("runs").join(format!("{name}.json"));
        let (log_path, log) = log_file(ctx, &format!("{name}.log"))?;
        let mut cmd = Command::new(ctx.exe);
        let mut all = Vec::new();
        for (_, p) in sides {
            // Limits apply where the work runs: the run process for SQLite and standalone
            // workloads, else the server.
            let in_process = p.engine == Engine::Sqlite || standalone(w);
            let scope = if in_process { LimitScope::Process } else { LimitScope::Server };
            let mut db = db_spec(ctx, p, w)?;
            db.workload.keep_backup = keep_for_scan;
            if !p.cgroups.is_empty() {
                db.limits = Some(Limits { groups: p.cgroups.clone(), applies_to: scope });
                if scope == LimitScope::Process {
                    crate::sys::cgroup::join_on_spawn(&mut cmd, &p.cgroups)?;
                }
            }
            cmd.envs(p.env.iter().map(|(k, v)| (k, v)));
            let keep_db = match standalone(w) {
                // What it wrote stays where it is, in the directory the scan reads.
                true => keep_for_scan.then(|| p.data_dir.join(STANDALONE_DIR).display().to_string()),
                false => scan_copy(p, keep_for_scan),
            };
            all.push(Side { db, keep_db });
        }
        let first = all.remove(0);
        let mut spec = RunSpec { keep_db: first.keep_db, interleave: all, ..run_spec(ctx, first.db, w, &json)? };
        spec.disks_of_their_own = ctx.work.disks_of_their_own() && sides.iter().all(|(v, _)| v.stores_in_its_place());
        spec.telemetry.live_file = ctx.live.map(|dir| LiveFile {
            path: dir.join(format!("{name}.prom")),
            variants: sides.iter().map(|(v, _)| v.name.clone()).collect(),
        });
        shape(&mut spec);
        cmd.arg("run").arg("--spec").arg(spec_file(ctx, &name, &spec)?);
        Ok(Self { cmd, json, log_path, log, memory: spec.memory })
    }
}

/// Where a run keeps its database for the canary scan: SQLite's run copy is kept so the
/// scan also sees what a run wrote (a server's data directory already holds the pristine
/// database, its logs and WAL).
fn scan_copy(p: &Prepared, keep_for_scan: bool) -> Option<String> {
    (keep_for_scan && p.engine == Engine::Sqlite).then(|| p.data_dir.join(SCAN_COPY).display().to_string())
}

/// Whether a variant can share a run process with others: it needs no environment of its
/// own (AES-NI masking) and no control group (limits apply to whole processes).
pub fn can_share(p: &Prepared) -> bool {
    p.env.is_empty() && p.cgroups.is_empty()
}

/// How one block's interleaved runs take turns (see `run::slices`): the slice length, the
/// seed of their order, and each place's slices per round (empty: one each).
pub struct Schedule {
    pub slice: Duration,
    pub seed: u64,
    pub shares: Vec<u32>,
}

/// One block's interleaved runs of a workload: every group of variants (those that can
/// share a process together, each of the others alone) in a process of its own, all
/// taking turns in one schedule of slices (see `run::slices`; across processes,
/// `run::start`). Returns each group's records, in the order given. Every variant must be
/// in force before and after.
pub fn run_interleaved(
    ctx: &Context,
    groups: &[Vec<(&VariantConfig, &Prepared)>],
    w: &WorkloadConfig,
    tag: &str,
    schedule: &Schedule,
    keep_for_scan: bool,
) -> Vec<Vec<Result<RunRecord>>> {
    let of = groups.iter().map(Vec::len).sum();
    let mut places = 0..of;
    let mut ooms = Vec::new();
    let board = ctx.work.path().join(format!("{tag}-{}.turns", slug(&w.label())));
    let shared = groups.len() > 1;
    let commands = groups
        .iter()
        .map(|sides| {
            let turns = shared.then(|| SharedTurns {
                places: places.by_ref().take(sides.len()).collect(),
                of,
                board: board.clone(),
            });
            for (_, p) in sides {
                p.ensure_in_force()?;
            }
            ooms.push(sides.iter().map(|(_, p)| crate::sys::cgroup::oom_kills(&p.cgroups)).collect::<Vec<_>>());
            RunCommand::new(ctx, sides, w, tag, keep_for_scan, |spec| {
                (spec.slice, spec.slice_seed, spec.turns) = (schedule.slice, schedule.seed, turns);
                spec.slice_shares = schedule.shares.clone();
            })
        })
        .collect::<Result<Vec<_>>>();
    let commands = match commands.and_then(|c| {
        if shared {
            Board::create(&board, of)?;
        }
        Ok(c)
    }) {
        Ok(c) => c,
        Err(e) => return groups.iter().map(|g| g.iter().map(|_| Err(anyhow::anyhow!("{e:#}"))).collect()).collect(),
    };
    let (paths, children): (Vec<_>, Vec<_>) =
        commands.into_iter().map(|r| ((r.json, r.log_path, r.memory), (r.cmd, r.log))).unzip();
    let statuses = match children.len() {
        1 => children.into_iter().map(|(cmd, log)| wait(cmd, log)).collect(),
        _ => super::together::run_together(children),
    };
    let _ = std::fs::remove_file(&board);
    groups
        .iter()
        .zip(paths.iter().zip(statuses))
        .zip(ooms)
        .map(|((sides, ((json, log_path, memory), status)), ooms)| {
            let records = status.and_then(|status| read_records(json, log_path, status, *memory, sides.len()));
            match records {
                Err(e) => sides
                    .iter()
                    .zip(ooms)
                    .map(|((_, p), ooms)| settle(p, Err(anyhow::anyhow!("{e:#}")), ooms))
                    .collect(),
                Ok(records) => records
                    .into_iter()
                    .zip(sides)
                    .zip(ooms)
                    .map(|((record, (_, p)), ooms)| settle(p, Ok(record), ooms))
                    .collect(),
            }
        })
        .collect()
}

/// How the driver paces `w`'s runs: about a dozen progress samples per run for the
/// over-time chart, at least 1 s apart.
fn pacing(w: &WorkloadConfig) -> PacingSpec {
    let window = w.load.duration.unwrap_or(crate::run::load::DEFAULT_DURATION);
    PacingSpec {
        load: w.load.clone(),
        report_interval: (window / 12).clamp(Duration::from_secs(1), Duration::from_secs(10)),
    }
}

/// A measured run of `db` with the study's pacing for `w`, its record written to `json`.
fn run_spec(ctx: &Context, db: DbSpec, w: &WorkloadConfig, json: &Path) -> Result<RunSpec> {
    Ok(RunSpec {
        db,
        pacing: pacing(w),
        instances: w.instances,
        cold: w.cold,
        idle: w.idle,
        memory: w.memory_bytes()?,
        telemetry: TelemetrySpec {
            power: ctx.power.parse().map_err(anyhow::Error::msg)?,
            idle_power: ctx.idle_power,
            ..TelemetrySpec::default()
        },
        json: Some(json.to_path_buf()),
        store: false,
        keep_db: None,
        interleave: vec![],
        slice: Duration::from_secs(1),
        slice_seed: 0,
        slice_shares: vec![],
        disks_of_their_own: false,
        turns: None,
        clients: ctx.clients.filter(|_| !standalone(w)).cloned(),
        companion: None,
    })
}

/// The record a finished child wrote, or why there is none.
fn read_record(json: &Path, log_path: &Path, status: ExitStatus, memory: Option<u64>) -> Result<RunRecord> {
    Ok(read_records(json, log_path, status, memory, 1)?.remove(0))
}

/// The `count` records a finished child wrote, or why there are none; `memory` is the
/// run's own memory limit, whose OOM killer leaves no record.
fn read_records(
    json: &Path,
    log_path: &Path,
    status: ExitStatus,
    memory: Option<u64>,
    count: usize,
) -> Result<Vec<RunRecord>> {
    let records = match std::fs::metadata(json) {
        Ok(m) if m.len() > 0 => RunRecord::read_all(json)?,
        _ => {
            let why = match (status.signal(), memory) {
                (Some(libc::SIGKILL), Some(bytes)) => format!(
                    "{status}: the kernel's OOM killer, as a rule, when the run and its server outgrow the run's memory \
                     limit of {} MB; raise [workload] memory or size the server's buffers down",
                    bytes >> 20
                ),
                _ => status.to_string(),
            };
            match tail(log_path) {
                t if t.is_empty() => bail!("the run produced no record ({why})"),
                t => bail!("the run produced no record ({why}): {t}"),
            }
        }
    };
    if records.len() != count {
        bail!("the run wrote {} records for {count} variants", records.len());
    }
    Ok(records)
}

/// Scans the variant's bytes at rest for the build's plaintext marker, then removes the
/// database kept for the scan. What it scanned is named inside the study's `work`
/// directory, which is gone when the report is read.
pub fn scan_canary(variant: &str, p: &Prepared, work: &Path) -> Result<CanaryResult> {
    let in_work = |path: &Path| path.strip_prefix(work).unwrap_or(path).to_path_buf();
    // Push everything written through the layers (FUSE, loop device) down to the backing files.
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    let found = canary::scan(&p.backing, crate::workloads::CANARY.as_bytes())?;
    let _ = std::fs::remove_file(p.data_dir.join(SCAN_COPY));
    let _ = std::fs::remove_dir_all(p.data_dir.join(STANDALONE_DIR));
    crate::targets::backup::remove(&p.data_dir.join(crate::targets::backup::KEPT_FOR_SCAN));
    Ok(CanaryResult {
        variant: variant.into(),
        scanned: p.backing.iter().map(|b| in_work(b)).collect(),
        bytes_scanned: found.bytes,
        hits: found.hits,
        leaks: found.files.iter().map(|(f, hits)| (in_work(f), *hits)).collect(),
        encrypted: p.encrypted,
        ok: if p.encrypted { found.hits == 0 } else { found.hits > 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(dir: &Path, encrypted: bool, contents: &str) -> Prepared {
        let mut p = toml::from_str::<crate::variants::VariantConfig>("name = 'v'").unwrap().setup(dir).unwrap();
        std::fs::write(p.data_dir.join("f"), contents).unwrap();
        p.encrypted = encrypted;
        p
    }

    #[test]
    fn an_encrypted_variant_with_plaintext_fails_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let leak = prepared(dir.path(), true, crate::workloads::CANARY);
        assert!(!scan_canary("v", &leak, dir.path()).unwrap().ok);
    }

    #[test]
    fn a_plain_variant_without_plaintext_means_the_scan_is_blind() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!scan_canary("v", &prepared(dir.path(), false, "nothing"), dir.path()).unwrap().ok);
        let dir = tempfile::tempdir().unwrap();
        let found = scan_canary("v", &prepared(dir.path(), false, crate::workloads::CANARY), dir.path()).unwrap();
        assert!(found.ok && found.scanned.iter().all(|p| p.is_relative()), "{:?}", found.scanned);
    }
}
