//! `dbvs run`: the flags of one run, turned into a [`RunSpec`] once.

use super::DbArgs;
use crate::run::load::Load;
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
    #[command(flatten)]
    load: Load,
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
    /// larger than it reads from storage (needs root); the server's cache is a quarter of
    /// it unless a --server-setting sizes it.
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
            pacing: PacingSpec { load: self.load, report_interval: self.report_interval },
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
            disks_of_their_own: false,
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
