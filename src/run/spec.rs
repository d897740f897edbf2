//! The run contract: everything one run needs, typed, built once (from the command line or
//! a study file), checked once, and handed to a child process whole as JSON. A child reads
//! it back with `dbvs run --spec FILE`; nothing is translated to and from argv.

use super::load::Load;
use crate::targets::sqlite::{CipherPragma, Key, KeyKind};
use crate::targets::{self, Target, TargetSpec};
use crate::telemetry::power::PowerSpec;
use crate::workloads::{Workload, WorkloadSpec};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which database and which workload: what `build`, `check` and `run` share.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DbSpec {
    /// `None` for a workload without a database (fileio, cipher).
    #[serde(default)]
    pub target: Option<TargetSpec>,
    pub workload: WorkloadSpec,
    /// SQLCipher key file (mode 0600); the key itself never enters a spec.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    #[serde(default)]
    pub key_kind: KeyKind,
    #[serde(default)]
    pub cipher_pragmas: Vec<CipherPragma>,
    /// Server password file (mode 0600); else PGPASSWORD or MYSQL_PWD.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// Data directory of a managed server.
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// A managed server's write-ahead log (WAL, redo log) on storage of its own.
    #[serde(default)]
    pub log_dir: Option<PathBuf>,
    #[serde(default)]
    pub server_settings: Vec<(String, String)>,
    /// SQLite's pragmas, set on every connection of a run (those that shape the file, on
    /// the build's too) and read back before it measures.
    #[serde(default)]
    pub pragmas: Vec<(String, String)>,
    /// A managed server also listens on this address, for client hosts (`--listen`).
    #[serde(default)]
    pub listen: Option<String>,
    /// A study variant's control groups, and whose processes they limit.
    #[serde(default)]
    pub limits: Option<Limits>,
    /// Test-only: a busy-wait in every unit (a known slowdown for verdict checks).
    #[serde(default)]
    pub inject_delay: crate::driver::InjectedSlowdown,
    /// The FUSE daemons under the data (gocryptfs, bindfs), which a memory limit takes in.
    #[serde(default)]
    pub fuse_daemons: Vec<u32>,
    /// The image file systems under the data, trimmed before the fresh copy is made.
    #[serde(default)]
    pub images: Vec<PathBuf>,
}

/// Control groups a run is limited by.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Limits {
    pub groups: Vec<PathBuf>,
    pub applies_to: LimitScope,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitScope {
    /// The run process: its parent started it inside the groups (SQLite's engine runs in it).
    Process,
    /// The managed server this run starts (the driver stays unlimited).
    Server,
}

impl LimitScope {
    pub fn describe(self) -> &'static str {
        match self {
            LimitScope::Process => "the run process",
            LimitScope::Server => "server processes",
        }
    }
}

impl DbSpec {
    /// The workload (a multi-instance run makes one per instance).
    pub fn workload(&self) -> Result<Box<dyn Workload>> {
        self.workload.driven()
    }

    /// A managed server's settings: the study's and the variant's, and under a run's memory
    /// limit its cache sized to the limit unless they size it (see `cache_within`).
    pub fn server_settings_within(&self, memory: Option<u64>) -> Vec<(String, String)> {
        let mut settings = self.server_settings.clone();
        if let (Some(m), Some(t)) = (memory, &self.target) {
            if !t.is_own_server() {
                settings.extend(targets::settings::cache_within(t.engine(), m, &self.server_settings));
            }
        }
        settings
    }

    /// The target and the workload. A managed server starts here, on `server_cpus` (none:
    /// wherever the scheduler puts it), its cache sized to `memory` (the run's limit), and
    /// stops when the target (and every database handed out by it) is dropped.
    pub fn open(&self, server_cpus: &[usize], memory: Option<u64>) -> Result<(Box<dyn Target>, Box<dyn Workload>)> {
        let key = self.key_file.as_deref().map(|f| Key::from_file(f, self.key_kind)).transpose()?;
        let workload = self.workload()?;
        let password = self.password_file.as_deref().map(crate::sys::read_secret_file).transpose()?;
        let id = workload.build_identity();
        // Named after the build, so workloads sharing one (tpcc and batch) share the database.
        let size = id["size"].to_ascii_lowercase().replace('.', "p");
        let default_db = format!("{}_{size}_s{}", id["workload"], self.workload.seed);
        let server_cgroups = match &self.limits {
            Some(l) if l.applies_to == LimitScope::Server => l.groups.clone(),
            _ => vec![],
        };
        let spec = self.target.as_ref().context("this workload needs a --target, e.g. --target sqlite:shop.db")?;
        let target = targets::open(
            spec,
            targets::TargetOptions {
                key,
                cipher_pragmas: self.cipher_pragmas.clone(),
                password,
                data_dir: self.data_dir.clone(),
                log_dir: self.log_dir.clone(),
                server_settings: self.server_settings_within(memory),
                pragmas: self.pragmas.clone(),
                server_place: crate::sys::Placement { cgroups: server_cgroups, cpus: server_cpus.to_vec() },
                default_db,
                listen: self.listen.clone(),
            },
        )?;
        Ok((target, workload))
    }
}

/// How the driver paces a run: the load asked for, and how often it reports progress.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PacingSpec {
    #[serde(flatten)]
    pub load: Load,
    #[serde(with = "crate::sys::units::duration_text")]
    pub report_interval: Duration,
}

impl Default for PacingSpec {
    fn default() -> Self {
        Self { load: Load::default(), report_interval: Duration::from_secs(10) }
    }
}

impl PacingSpec {
    /// The driver's pacing, with the defaults filled in.
    pub fn pacing(&self, seed: u64) -> crate::driver::Pacing {
        crate::driver::Pacing {
            threads: self.load.threads as usize,
            ramp_rate: self.load.ramp_rate,
            warmup: self.load.warmup(),
            duration: self.load.window(),
            think_time: self.load.think(),
            iterations: self.load.iterations,
            report_interval: self.report_interval,
            seed,
            injected_delay: crate::driver::InjectedSlowdown::None,
            first_worker: 0,
            worker_cpu: false,
            pin_workers: false,
        }
    }
}

/// What telemetry samples, and how power is read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TelemetrySpec {
    pub sample_interval: Duration,
    pub power: PowerSpec,
    pub idle_power: Duration,
    /// Summaries also cover the window's last N minutes.
    pub peak_minutes: f64,
    /// Serve live metrics here during the run (see `openmetrics`), e.g. 127.0.0.1:9100.
    #[serde(default)]
    pub metrics_addr: Option<String>,
    /// Publish them to a file instead, which the study serves.
    #[serde(default)]
    pub live_file: Option<LiveFile>,
}

/// Where a study's child run publishes its live metrics, and the variant of each side.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LiveFile {
    pub path: PathBuf,
    pub variants: Vec<String>,
}

impl Default for TelemetrySpec {
    fn default() -> Self {
        Self {
            sample_interval: Duration::from_secs(1),
            power: PowerSpec::Auto,
            idle_power: Duration::from_secs(5),
            peak_minutes: 10.0,
            metrics_addr: None,
            live_file: None,
        }
    }
}

/// A second workload beside every instance, on an embedded SQLite database of its own in
/// the run's storage (seed 004's mail VMs beside its database VMs): it starts with the
/// instances and measures in the same window, and each companion is recorded apart
/// ([`crate::record::RunRecord::companions`]), so its latency can be held to an SLA of its own.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Companion {
    pub db: DbSpec,
    /// Its threads and think time; its warmup and window are the run's.
    pub pacing: PacingSpec,
}

/// One run, whole.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSpec {
    pub db: DbSpec,
    pub pacing: PacingSpec,
    /// Independent databases side by side, each with `pacing.threads` workers.
    pub instances: u32,
    /// Flush and drop the OS page cache before the run.
    pub cold: bool,
    /// Idle this long after the fresh copy is settled, before the run starts.
    #[serde(default)]
    pub idle: Duration,
    /// Bytes of memory the run may use, page cache included (see `run::memory`).
    #[serde(default)]
    pub memory: Option<u64>,
    pub telemetry: TelemetrySpec,
    /// Where the run record goes (JSON).
    pub json: Option<PathBuf>,
    /// Record the run in the results store.
    pub store: bool,
    /// Keep the (first) run database under this name instead of deleting it.
    pub keep_db: Option<String>,
    /// Other variants' databases measured in the same run, taking turns with `db` in slices
    /// (see `run::slices`); the run then writes one record per variant, `db`'s first.
    #[serde(default)]
    pub interleave: Vec<Side>,
    /// The length of one slice of an interleaved run.
    #[serde(default = "default_slice")]
    pub slice: Duration,
    /// Seeds the order of the slices in each round. A study draws a new one per block, so
    /// no variant holds the same places in every block (the request stream keeps the
    /// workload's seed: every variant does the same work).
    #[serde(default)]
    pub slice_seed: u64,
    /// Each place's slices per round of the measured window (one each when empty): a study
    /// gives more to the variants whose intervals are furthest from their target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slice_shares: Vec<u32>,
    /// Each variant's storage is a disk no other variant writes to (each its own RAM disk
    /// model): an interleaved run then counts what its disks wrote over its whole window,
    /// background writes in other variants' slices included, not only in its own slices.
    #[serde(default)]
    pub disks_of_their_own: bool,
    /// This run takes turns with other run processes too (see `run::start`): its variants'
    /// places in their common schedule. It then waits for a go on stdin before measuring.
    #[serde(default)]
    pub turns: Option<super::start::SharedTurns>,
    /// Other hosts that run the workers (see `crate::remote`); the run's database must be
    /// on a server they reach.
    #[serde(default)]
    pub clients: Option<crate::remote::ClientsSpec>,
    /// A companion workload beside every instance.
    #[serde(default)]
    pub companion: Option<Companion>,
}

/// Another variant in an interleaved run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Side {
    pub db: DbSpec,
    /// Keep this side's run database under this name instead of deleting it.
    #[serde(default)]
    pub keep_db: Option<String>,
}

fn default_slice() -> Duration {
    Duration::from_secs(1)
}

impl RunSpec {
    /// A run of `db` with the default pacing and telemetry (a build's spec needs no more).
    pub fn of(db: DbSpec) -> Self {
        Self {
            db,
            pacing: PacingSpec::default(),
            instances: 1,
            cold: false,
            idle: Duration::ZERO,
            memory: None,
            telemetry: TelemetrySpec::default(),
            json: None,
            store: false,
            keep_db: None,
            interleave: vec![],
            slice: default_slice(),
            slice_seed: 0,
            slice_shares: vec![],
            disks_of_their_own: false,
            turns: None,
            clients: None,
            companion: None,
        }
    }

    /// The run of each interleaved variant on its own: `db` first, then `interleave`.
    pub fn sides(&self) -> Vec<RunSpec> {
        let first = Side { db: self.db.clone(), keep_db: self.keep_db.clone() };
        std::iter::once(&first)
            .chain(&self.interleave)
            .map(|side| RunSpec {
                db: side.db.clone(),
                keep_db: side.keep_db.clone(),
                interleave: vec![],
                json: None,
                store: false,
                ..self.clone()
            })
            .collect()
    }

    /// Checks everything that can be checked before a run starts; errors name the flag.
    pub fn check(&self) -> Result<()> {
        if let Some((key, what)) = self.pacing.load.problem() {
            bail!("--{} {what}", key.replace('_', "-"));
        }
        if self.pacing.report_interval < Duration::from_millis(100) {
            bail!("--report-interval must be at least 100ms");
        }
        let t = &self.telemetry;
        if t.sample_interval < Duration::from_millis(100) {
            bail!("--sample-interval must be at least 100ms, e.g. --sample-interval 1s");
        }
        if !(t.peak_minutes > 0.0 && t.peak_minutes.is_finite()) {
            bail!("--peak-minutes must be a positive number of minutes, e.g. --peak-minutes 10");
        }
        if !(1..=256).contains(&self.instances) {
            bail!("--instances must be between 1 and 256");
        }
        if self.memory.is_some() && self.db.target.as_ref().is_some_and(TargetSpec::is_own_server) {
            bail!(
                "--memory limits this process and a server it manages; your own server is not limited \
                 (use sqlite:, managed-postgres or managed-mariadb, or limit the server's memory yourself)"
            );
        }
        if self.memory.is_some_and(|m| m < 16 << 20) {
            bail!("--memory must be at least 16MB, e.g. --memory 64MB");
        }
        if let Some(c) = &self.clients {
            self.check_clients(c)?;
        }
        Ok(())
    }

    fn check_clients(&self, c: &crate::remote::ClientsSpec) -> Result<()> {
        if c.hosts.is_empty() {
            bail!("--clients names no host; give them as user@host1,user@host2");
        }
        if let Some(h) = c.hosts.iter().find(|h| h.is_empty() || h.starts_with('-') || h.contains(char::is_whitespace))
        {
            bail!("--clients: '{h}' is not a host; give them as user@host1,user@host2");
        }
        if (self.pacing.load.threads as usize) < c.hosts.len() {
            bail!(
                "--threads {} is fewer than the {} client hosts; give each host a worker at least",
                self.pacing.load.threads,
                c.hosts.len()
            );
        }
        if self.memory.is_some() || self.db.limits.as_ref().is_some_and(|l| l.applies_to == LimitScope::Process) {
            bail!("--clients runs the workers elsewhere, so there is no run process here to limit; limit the server instead");
        }
        Ok(())
    }

    /// A warning when ramping the threads up takes longer than the measured window.
    pub fn ramp_warning(&self) -> Option<String> {
        let p = &self.pacing.load;
        let ramp = f64::from(p.threads) / p.ramp_rate;
        let window = Some(p.window().as_secs_f64()).filter(|_| p.iterations.is_none())?;
        (ramp > window).then(|| {
            format!(
                "warning: starting {} threads at --ramp-rate {} takes {ramp:.0} s, longer than the {window:.0} s \
                 measured; raise --ramp-rate (e.g. --ramp-rate {}) or use fewer --threads",
                p.threads, p.ramp_rate, p.threads
            )
        })
    }

    /// Writes the spec for a child process.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text).with_context(|| format!("cannot write run spec {}", path.display()))
    }

    /// Reads a spec a parent wrote.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read run spec {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is not a dbvs run spec", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RunSpec {
        RunSpec {
            db: DbSpec {
                target: Some(TargetSpec::Sqlite("/tmp/x.db".into())),
                workload: WorkloadSpec { seed: 7, ..Default::default() },
                key_file: Some("/k".into()),
                key_kind: KeyKind::Raw,
                cipher_pragmas: vec!["cipher_page_size=4096".parse().unwrap()],
                password_file: None,
                data_dir: None,
                log_dir: None,
                server_settings: vec![],
                pragmas: vec![],
                listen: None,
                limits: Some(Limits { groups: vec!["/sys/fs/cgroup/x".into()], applies_to: LimitScope::Server }),
                inject_delay: crate::driver::InjectedSlowdown::None,
                fuse_daemons: vec![],
                images: vec![],
            },
            pacing: PacingSpec {
                load: Load { threads: 4, duration: Some(Duration::from_secs(5)), ..Load::default() },
                ..Default::default()
            },
            instances: 1,
            cold: false,
            idle: Duration::ZERO,
            memory: None,
            telemetry: TelemetrySpec { power: PowerSpec::Command("echo 5".into()), ..Default::default() },
            json: None,
            store: false,
            keep_db: None,
            interleave: vec![],
            slice: Duration::from_secs(1),
            slice_seed: 0,
            slice_shares: vec![],
            disks_of_their_own: false,
            turns: None,
            clients: Some(crate::remote::ClientsSpec {
                hosts: vec!["me@a".into(), "b".into()],
                dbvs: "/opt/dbvs".into(),
                ssh_config: None,
            }),
            companion: None,
        }
    }

    #[test]
    fn a_spec_round_trips_through_json() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        spec().write(&p).unwrap();
        let back = RunSpec::read(&p).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(spec()).unwrap());
        assert_eq!(back.telemetry.power, PowerSpec::Command("echo 5".into()));
        assert_eq!(back.db.limits.unwrap().applies_to, LimitScope::Server);
    }

    #[test]
    fn a_tampered_pragma_is_refused_on_reading() {
        let text = serde_json::to_string(&spec()).unwrap().replace("cipher_page_size=4096", "journal_mode=off");
        assert!(serde_json::from_str::<RunSpec>(&text).is_err());
    }

    #[test]
    fn client_hosts_are_checked() {
        let with = |hosts: &[&str], threads| {
            let mut s = spec();
            s.db.limits = None;
            s.pacing.load.threads = threads;
            s.clients.as_mut().unwrap().hosts = hosts.iter().map(|h| h.to_string()).collect();
            s.check().err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert_eq!(with(&["a", "b"], 2), "");
        let mut many = spec();
        (many.db.limits, many.instances) = (None, 3);
        assert!(many.check().is_ok(), "every host drives a share of each instance");
        assert!(with(&["a", "b"], 1).contains("fewer than the 2 client hosts"));
        assert!(with(&["-oProxyCommand=x"], 1).contains("is not a host"));
        assert!(with(&[], 1).contains("names no host"));
    }

    #[test]
    fn checks_name_the_flag() {
        let mut s = spec();
        s.clients = None;
        s.pacing.load.iterations = Some(3);
        s.pacing.load.warmup = Some(Duration::from_secs(1));
        assert!(s.check().unwrap_err().to_string().contains("--warmup"));
        let mut s = spec();
        s.pacing.load.duration = Some(Duration::ZERO);
        assert!(s.check().unwrap_err().to_string().contains("--duration"));
        assert!(spec().check().is_ok());
        assert_eq!(spec().pacing.pacing(1).warmup, super::super::load::DEFAULT_WARMUP);
    }

    #[test]
    fn a_ramp_longer_than_the_window_is_warned_about() {
        let mut s = spec();
        assert_eq!(s.ramp_warning(), None, "4 threads at 10/s ramp in 0.4 s");
        s.pacing.load.threads = 1024;
        s.pacing.load.duration = Some(Duration::from_secs(2));
        let w = s.ramp_warning().unwrap();
        assert!(w.contains("102 s") && w.contains("--ramp-rate"), "{w}");
    }
}
