//! `dbvs capture`: a log to replay, from a PostgreSQL or MariaDB server, with the database as it was
//! when the capture began (see [`crate::workloads::replay::capture`]). On a managed server
//! the traffic is `--command`, run against a fresh copy of the pristine database `--setup`
//! built; on your own server it is whatever reaches it for `--duration`.

use crate::run::DbSpec;
use crate::sys::units::parse_duration;
use crate::targets::{Database, Engine};
use crate::workloads::command;
use crate::workloads::replay::capture::{Reach, Window, PREFIX};
use crate::workloads::replay::tables;
use crate::workloads::{Options, WorkloadSpec};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct CaptureArgs {
    /// The server: postgres://USER@HOST[:PORT]/DB or mysql://USER@HOST[:PORT]/DB (your own:
    /// DB is the database dumped), managed-postgres[:VERSION|:/PREFIX] or managed-mariadb
    /// (a private instance; see --setup).
    #[arg(long, value_name = "TARGET")]
    target: String,
    /// Data directory of a managed server [default: as for dbvs run].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// File holding the server password (mode 0600); otherwise PGPASSWORD or MYSQL_PWD.
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// Setting for a managed server, e.g. shared_buffers=256MB (repeatable).
    #[arg(long, value_name = "NAME=VALUE", value_parser = super::parse_server_setting)]
    server_setting: Vec<(String, String)>,
    /// On a managed server: what builds the database the traffic runs on, e.g. 'pgbench -i -s 1'.
    /// It runs with the same variables as --command.
    #[arg(long, value_name = "SCRIPT")]
    setup: Option<String>,
    /// The traffic, run by sh -c against the database (PGHOST, PGPORT, PGUSER, PGDATABASE
    /// set; on MariaDB MYSQL_HOST, MYSQL_TCP_PORT, MYSQL_USER, MYSQL_DATABASE), e.g.
    /// 'pgbench -n -c 4 -T 60 -R 200'.
    #[arg(long, value_name = "SCRIPT")]
    command: Option<String>,
    /// Where the capture goes: capture.log (the log lines of the window), capture.tables.json
    /// (the rows per table it ended with) and the database as the window began: dump.pgdump
    /// (pg_dump's custom format) or dump.sql (mariadb-dump's).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// How long to capture when no --command makes the traffic; Ctrl-C ends it sooner and
    /// keeps what was captured.
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// PostgreSQL: the log_line_prefix to log with for the window (pgreplay reads '%m|%u|%d|%c|').
    #[arg(long, value_name = "PREFIX", default_value = PREFIX)]
    log_prefix: String,
    /// Leave out the dump (the replay's database is restored some other way).
    #[arg(long)]
    no_dump: bool,
}

pub fn main(args: CaptureArgs) -> Result<ExitCode> {
    let traffic = args.command.clone().filter(|c| !c.trim().is_empty());
    if traffic.is_none() && args.duration.is_none() {
        bail!("say what to capture: --command 'SCRIPT' runs the traffic, or --duration 10m captures what reaches the server");
    }
    let (target, workload) = spec(&args, traffic.as_deref())?.open(&[], None)?;
    let engine = target.info().engine;
    if !matches!(engine, Engine::Postgres | Engine::Mariadb) {
        bail!("capture reads PostgreSQL's and MariaDB's logs; the target is {engine}");
    }
    let managed = target.managed();
    let (copy, existing);
    let db: &dyn Database = match &managed {
        Some(_) => {
            if target.pristine()?.is_none() {
                crate::run::build(target.as_ref(), workload.as_ref())?;
            }
            copy = target.fresh_copy()?;
            copy.as_ref()
        }
        None => {
            existing = target.existing()?;
            existing.as_ref()
        }
    };
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let env = db.client_env()?;
    let dumped = args.out.join(if engine == Engine::Mariadb { "dump.sql" } else { "dump.pgdump" });
    if !args.no_dump {
        crate::targets::backup::logical(engine, &env, None, &dumped)
            .context("cannot dump the database before the capture")?;
    }
    let mut conn = db.connect()?;
    let reach = Reach::new(&env, args.password_file.clone())?;
    let log_file = managed.as_ref().and_then(|s| s.stderr_log());
    let window = Window::open(&mut conn, &reach, log_file, &args.log_prefix)?;
    eprintln!("capturing: set for the window: {}", window.changes());
    match &traffic {
        Some(script) => eprintln!("{}", command::run_script(script, &env, "command")?.trim_end()),
        None => {
            if crate::interrupt::sleep(args.duration.unwrap_or_default()) {
                eprintln!("stopped early: keeping what was captured");
            }
        }
    }
    let log = args.out.join("capture.log");
    let lines = window.close(&log)?;
    let counts = tables::count(&mut conn)?;
    tables::save(&counts, &tables::beside(&log))?;
    println!("captured {lines} log lines into {}; the server's settings are back as they were", log.display());
    println!("replay them in a study with:");
    println!("  [workload]\n  name = \"replay\"\n  log = \"{}\"", log.display());
    if engine == Engine::Postgres {
        println!("  prefix = \"{}\"", args.log_prefix);
    }
    if !args.no_dump {
        println!("  dump = \"{}\"", dumped.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The target, with the command workload, which builds the pristine database with
/// `--setup` (its figure is not read).
fn spec(args: &CaptureArgs, traffic: Option<&str>) -> Result<DbSpec> {
    let options = command::Options {
        command: traffic.unwrap_or("true").into(),
        setup: args.setup.clone(),
        regex: Some("(.*)".into()),
        ..command::Options::default()
    };
    Ok(DbSpec {
        target: Some(args.target.parse()?),
        workload: WorkloadSpec { options: Options::Command(options), seed: 42, ..WorkloadSpec::default() },
        key_file: None,
        key_kind: crate::targets::sqlite::KeyKind::Raw,
        cipher_pragmas: vec![],
        password_file: args.password_file.clone(),
        data_dir: args.data_dir.clone(),
        log_dir: None,
        server_settings: args.server_setting.clone(),
        pragmas: vec![],
        listen: None,
        limits: None,
        inject_delay: crate::driver::InjectedSlowdown::None,
        fuse_daemons: vec![],
        images: vec![],
    })
}
