//! `dbvs run`: the flags of one run, turned into a [`RunSpec`] once.

use super::DbArgs;
use crate::run::{PacingSpec, RunSpec, TelemetrySpec};
use crate::sys::units::parse_duration;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Worker threads (virtual users), each with its own connection.
    #[arg(long, visible_alias = "users", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,
    /// Measured time after warmup (e.g. 60s, 10m) [default: 60s; with --iterations, no limit].
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    duration: Option<Duration>,
    /// Time before measuring (HammerDB's rampup); statistics are reset when it ends.
    #[arg(long, visible_alias = "rampup", value_parser = parse_duration, allow_hyphen_values = true)]
    warmup: Option<Duration>,
    /// Units each thread runs, then stops (HammerDB's per-user iterations, e.g. 1000); the run
    /// ends when all are done. Counts from the first unit, so it takes no --warmup.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    iterations: Option<u64>,
    /// Mean think time after each unit; each pause is uniform in [0, 2 x think time).
    #[arg(long, default_value = "0", value_parser = parse_duration, allow_hyphen_values = true, conflicts_with = "random_sleep")]
    think_time: Duration,
    /// A random sleep of up to this long after each unit (HammerDB-style, e.g. 10ms): the
    /// same as a think time of half of it.
    #[arg(long, value_name = "MAX", value_parser = parse_duration, allow_hyphen_values = true)]
    random_sleep: Option<Duration>,
    /// Threads started per second during ramp-up (DS2's ramp_rate).
    #[arg(long, default_value_t = 10.0)]
    ramp_rate: f64,
    /// How often to print a DS2-format progress line.
    #[arg(long, default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true)]
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
    /// Idle this long before the run, after the fresh copy is settled (checkpointed and
    /// written back), as the seeds idled after each restore.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    idle: Duration,
    /// The memory the run may use, page cache included (e.g. 64MB): this process and a
    /// managed server it starts share a control group with that limit, so a database
    /// larger than it reads from storage (needs root).
    #[arg(long, value_name = "SIZE", value_parser = crate::sys::units::parse_bytes)]
    memory: Option<u64>,
    /// Do not record the run in the results store.
    #[arg(long)]
    no_store: bool,
    /// How often telemetry samples CPU, disks, memory, pressure and power.
    #[arg(long, default_value = "1s", value_parser = parse_duration, allow_hyphen_values = true)]
    sample_interval: Duration,
    /// Power source: auto (RAPL when readable), none, rapl, ipmi (ipmitool dcmi power
    /// reading), or cmd:COMMAND (a command printing watts, e.g. an external meter's reader).
    #[arg(long, default_value = "auto", value_name = "SOURCE")]
    power: crate::telemetry::power::PowerSpec,
    /// Serve live metrics for Prometheus at http://ADDR/metrics during the run (OpenMetrics
    /// text: throughput, latency and rollbacks per report interval, warm-up or measuring),
    /// e.g. 127.0.0.1:9100 or :9100. Off unless given.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<String>,
    /// With a power source: how long to read idle power before the load starts.
    #[arg(long, default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true)]
    idle_power: Duration,
    /// Telemetry summaries also cover the window's last N minutes (seed 000: "the last 10
    /// minutes of peak performance").
    #[arg(long, default_value_t = 10.0, value_name = "N")]
    peak_minutes: f64,
    /// Independent databases run side by side, each a copy of the pristine with its own
    /// --threads workers, starting together (or --stagger apart), as seed 000's and 001's client VMs. The record
    /// gives the total and each instance's figures.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    instances: u32,
    /// With several --instances, start each this long after the one before (seed 000's
    /// clients started 15 s apart); each is measured over its own window.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    stagger: Duration,
    /// Run the workers on these hosts instead of here (user@host1,user@host2, as ssh takes
    /// them; the user's own keys and known hosts), split evenly; the target must be a
    /// server they reach. Each host needs the same dbvs version (see --client-dbvs).
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    clients: Vec<String>,
    /// The dbvs program on the client hosts.
    #[arg(long, value_name = "PATH", default_value = "dbvs", requires = "clients")]
    client_dbvs: String,
    /// An ssh configuration file for reaching the client hosts (ssh -F FILE).
    #[arg(long, value_name = "FILE", requires = "clients")]
    ssh_config: Option<PathBuf>,
    /// Test-only: busy-wait this long after every order, or run this share more orders
    /// uncounted (e.g. 2%): a known slowdown for verdict tests.
    #[arg(long, hide = true, default_value = "0")]
    inject_delay: crate::driver::InjectedSlowdown,
}

pub fn main(args: RunArgs) -> Result<ExitCode> {
    let spec = match args.db.spec_file() {
        Some(spec) => spec?,
        None => args.spec()?,
    };
    crate::run::run(&spec)
}

impl RunArgs {
    fn spec(self) -> Result<RunSpec> {
        Ok(RunSpec {
            db: crate::run::DbSpec { inject_delay: self.inject_delay, ..self.db.flags(self.cold)? },
            pacing: PacingSpec {
                threads: self.threads,
                duration: self.duration,
                warmup: self.warmup,
                iterations: self.iterations,
                think_time: self.think_time,
                random_sleep: self.random_sleep,
                ramp_rate: self.ramp_rate,
                report_interval: self.report_interval,
                stagger: self.stagger,
            },
            instances: self.instances,
            cold: self.cold,
            idle: self.idle,
            memory: self.memory,
            telemetry: TelemetrySpec {
                sample_interval: self.sample_interval,
                power: self.power,
                idle_power: self.idle_power,
                peak_minutes: self.peak_minutes,
                metrics_addr: self.metrics_addr,
                live_file: None,
            },
            json: self.json,
            store: !self.no_store,
            keep_db: self.keep_db,
            interleave: vec![],
            slice: std::time::Duration::from_secs(1),
            slice_seed: 0,
            slice_shares: vec![],
            turns: None,
            clients: (!self.clients.is_empty()).then_some(crate::remote::ClientsSpec {
                hosts: self.clients,
                dbvs: self.client_dbvs,
                ssh_config: self.ssh_config,
            }),
            companion: None,
        })
    }
}
