//! Command line: argument parsing, and turning errors into one clear line and an exit code.

mod build;
mod capacity;
mod capture;
mod check;
mod cipher;
mod fileio;
mod history;
mod results;
mod run;
mod study;
mod validate;

use crate::interrupt::Interrupted;
use crate::run::DbSpec;
use crate::sys::names::printable;
use crate::targets::{self, sqlite, Binaries};
use crate::workloads::{self, Options, WorkloadSpec};
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "dbvs", version = crate::host::VERSION, about = "What does this change cost my database? Database benchmark studies.")]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the pristine database a workload runs against (runs use fresh copies of it).
    Build(build::BuildArgs),
    /// Run a workload on a fresh copy of the pristine database (built first if missing).
    Run(Box<run::RunArgs>),
    /// Check a database's consistency (TPC-C conditions 1-4, DS2 and TPC-B invariants): a
    /// pristine database, or one kept with --keep-db.
    Check(check::CheckArgs),
    /// Write and read back a random file on some storage, with the page cache dropped (seed 002's copy test).
    Fileio(fileio::FileioArgs),
    /// AES throughput by buffer size (TrueCrypt-style table), with AES-NI on, off or both.
    Cipher(cipher::CipherArgs),
    /// Run a study: variants x workload in randomized blocks, with verdicts and reports.
    Study(study::StudyArgs),
    /// Find how many database instances each configuration holds at an SLA (step up, then bisect).
    Capacity(capacity::CapacityArgs),
    /// Capture a PostgreSQL or MariaDB server's traffic for a window (every statement logged,
    /// then the settings put back) with the database as the window began: the log a replay plays.
    Capture(capture::CaptureArgs),
    /// Browse the results store ($DBVS_RESULTS, default ~/.local/share/dbvs/results.db).
    #[command(subcommand)]
    Results(results::ResultsCommand),
    /// Render a stored study's report in any format.
    Report(results::ReportArgs),
    /// Compare two stored runs side by side (ad hoc A/B, no confidence interval), or with
    /// --studies two stored studies of one design (dates, machines, versions) with intervals.
    Compare(results::CompareArgs),
    /// Undo what killed dbvs processes left behind: unmount their encrypted layers, lock
    /// their fscrypt keys, delete their key files and work directories, stop their servers,
    /// set back a capture's logging settings.
    /// Every dbvs command does this first; this command does only this, and says what it did.
    Cleanup,
    /// Internal: waits for dbvs process PID to exit, then undoes what it left behind.
    #[command(hide = true)]
    Watchdog { pid: u32 },
    /// Internal: a client host's side of a run with --clients, started by the coordinator
    /// over ssh; speaks its protocol on stdin and stdout.
    #[command(hide = true)]
    Agent,
}

/// Which database, which workload, which data.
#[derive(Args)]
struct DbArgs {
    /// Where to run: sqlite:PATH (the pristine database file), postgres://USER@HOST[:PORT]/DB or
    /// mysql://USER@HOST[:PORT]/DB (DB is the pristine database; runs use copies; needs CREATEDB or
    /// CREATE), managed-postgres[:VERSION|:/PREFIX] / managed-mariadb[:/PREFIX] (a private instance
    /// dbvs starts and stops: the packaged server, an installed major version, or the binaries of an
    /// installation directory such as your own build's), or managed-galera[:NODES] (a private
    /// MariaDB Galera cluster of NODES nodes, 3 by default).
    #[arg(long, value_name = "TARGET", required_unless_present = "spec")]
    target: Option<String>,
    /// Everything about the run from a run spec (JSON) that dbvs wrote for a child process;
    /// takes no other flag.
    #[arg(long, value_name = "FILE", hide = true, exclusive = true)]
    spec: Option<PathBuf>,
    /// The workload.
    #[arg(long, default_value = "ds2", value_parser = clap::builder::PossibleValuesParser::new(workloads::driven_names()))]
    workload: String,
    /// Data size. ds2: S, M, L (DS2's 10MB, 1GB, 100GB) or <n>MB / <n>GB [default: 10MB].
    /// tpcb: pgbench's scale factor (100,000 accounts each) [default: 1].
    /// tpcc and batch: warehouses [default: 1].
    /// oltp: rows per table, as sysbench's --table-size [default: 10000].
    /// bignw: scale factor, 1 = BigNW's 83,830 orders, 0.01 = about Northwind's [default: 1].
    /// command: passed to its scripts as DBVS_SIZE.
    #[arg(long, allow_hyphen_values = true)]
    size: Option<String>,
    /// Seed for the data generator and the workers' random choices; same seed, same data.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// batch: timed executions of each statement [default: 5]; bignw: units of each benchmark [default: 5];
    /// command: executions of the command per run [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeat: Option<u32>,
    /// SQLCipher key file (mode 0600): encrypts the database. See --key-kind.
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// What the key file holds: raw = 64 hex digits (a 256-bit key), passphrase = text run through SQLCipher's KDF.
    #[arg(long, value_enum, default_value_t = sqlite::KeyKind::Raw, requires = "key_file")]
    key_kind: sqlite::KeyKind,
    /// SQLCipher setting applied after the key, e.g. cipher_page_size=4096, kdf_iter=1, cipher_use_hmac=OFF (repeatable).
    #[arg(long, value_name = "NAME=VALUE", requires = "key_file")]
    cipher_pragma: Vec<sqlite::CipherPragma>,
    /// File holding the server password (mode 0600); otherwise PGPASSWORD (PostgreSQL) or MYSQL_PWD
    /// (MariaDB) is used. Never put it in the URL.
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// Data directory of a managed server [default: /var/lib/dbvs/managed/<engine>-<version> as root, else
    /// ~/.local/share/dbvs/managed/<engine>-<version>].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// A managed server's write-ahead log (PostgreSQL's WAL, MariaDB's redo log) in DIR, e.g.
    /// on another disk, instead of inside the data directory. Given when the data directory
    /// is first made, and again with it on every later run.
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// A managed PostgreSQL also listens on this address of this machine, so client hosts
    /// (--clients) reach it; they must give a password, which dbvs makes anew at every start
    /// and hands them inside their ssh sessions.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Setting for a managed server, e.g. shared_buffers=256MB (repeatable).
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_server_setting)]
    server_setting: Vec<(String, String)>,
    /// SQLite pragma for every connection of the run, e.g. synchronous=normal (repeatable);
    /// one that shapes the file (page_size) applies to a new build. Checked to be in force.
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_pragma)]
    pragma: Vec<(String, String)>,
    #[command(flatten)]
    ds2: workloads::ds2::Mix,
    #[command(flatten)]
    tpcc: workloads::tpcc::Options,
    #[command(flatten)]
    oltp: workloads::oltp::Options,
    #[command(flatten)]
    bignw: workloads::bignw::Options,
    #[command(flatten)]
    command: workloads::command::Options,
    #[command(flatten)]
    replay: workloads::replay::Options,
}

fn parse_server_setting(s: &str) -> Result<(String, String), String> {
    targets::settings::parse_setting(s).map_err(|e| e.to_string())
}

fn parse_pragma(s: &str) -> Result<(String, String), String> {
    use targets::{settings, Engine};
    let (name, value) = s.split_once('=').ok_or("expected NAME=VALUE, e.g. synchronous=normal")?;
    settings::check_text(Engine::Sqlite, name, value)
        .and_then(|_| settings::check_names(Engine::Sqlite, &Binaries::Packaged, [name]))
        .map_err(|e| e.to_string())?;
    Ok((name.to_string(), value.to_string()))
}

impl DbArgs {
    /// The run spec a parent wrote (`--spec`), if one was given.
    fn spec_file(&self) -> Option<Result<crate::run::RunSpec>> {
        self.spec.as_deref().map(crate::run::RunSpec::read)
    }

    /// Which database and workload: from `--spec`, or from the flags.
    fn db(&self, cold: bool) -> Result<DbSpec> {
        match self.spec_file() {
            Some(spec) => Ok(spec?.db),
            None => self.flags(cold),
        }
    }

    /// The workload's options from its own flags.
    fn options(&self) -> Result<Options> {
        Ok(match Options::named(&self.workload)? {
            Options::Ds2(_) => Options::Ds2(self.ds2.clone()),
            Options::Tpcc(_) => Options::Tpcc(self.tpcc.clone()),
            Options::Oltp(_) => Options::Oltp(self.oltp.clone()),
            Options::Bignw(_) => Options::Bignw(self.bignw.clone()),
            Options::Command(_) => Options::Command(self.command.clone()),
            Options::Replay(_) => Options::Replay(self.replay.clone()),
            other => other,
        })
    }

    fn flags(&self, cold: bool) -> Result<DbSpec> {
        Ok(DbSpec {
            target: self.target.as_deref().map(str::parse).transpose()?,
            workload: WorkloadSpec {
                options: self.options()?,
                size: self.size.clone(),
                repeat: self.repeat,
                seed: self.seed,
                cold,
                keep_backup: false,
            },
            key_file: self.key_file.clone(),
            key_kind: self.key_kind,
            cipher_pragmas: self.cipher_pragma.clone(),
            password_file: self.password_file.clone(),
            data_dir: self.data_dir.clone(),
            log_dir: self.log_dir.clone(),
            server_settings: self.server_setting.clone(),
            pragmas: self.pragma.clone(),
            listen: self.listen.clone(),
            limits: None,
            inject_delay: crate::driver::InjectedSlowdown::None,
            fuse_daemons: vec![],
            images: vec![],
        })
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Watchdog { pid } => {
            crate::sys::lease::watchdog::main(pid);
            return ExitCode::SUCCESS;
        }
        Command::Cleanup => return cleanup(),
        // A client host's agent manages nothing there, so it has nothing to sweep.
        Command::Agent => {}
        // What killed dbvs processes left mounted, keyed or running goes before anything starts.
        _ => {
            for line in crate::sys::lease::sweep() {
                eprintln!("{}", printable(&line));
            }
        }
    }
    if let Err(e) = crate::interrupt::install() {
        eprintln!("error: cannot install signal handlers: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Build(a) => build::main(a),
        Command::Run(a) => run::main(*a),
        Command::Check(a) => check::main(a),
        Command::Cipher(a) => cipher::main(a),
        Command::Fileio(a) => fileio::main(a),
        Command::Study(a) => study::main(a),
        Command::Capacity(a) => capacity::main(a),
        Command::Capture(a) => capture::main(a),
        Command::Results(c) => results::results(c),
        Command::Report(a) => results::report(a),
        Command::Compare(a) => results::compare(a),
        Command::Agent => crate::remote::agent_main(),
        Command::Cleanup | Command::Watchdog { .. } => unreachable!("handled before the signal handlers"),
    };
    result.unwrap_or_else(|e| {
        if e.is::<Interrupted>() {
            eprintln!("interrupted: stopped and cleaned up");
            return ExitCode::from(130);
        }
        eprintln!("error: {}", printable(&one_line(&format!("{e:#}"))));
        ExitCode::FAILURE
    })
}

/// `dbvs cleanup`: the sweep, reported; fails when something could not be undone.
fn cleanup() -> ExitCode {
    let done = crate::sys::lease::sweep();
    if done.is_empty() {
        println!("nothing to clean up: no dbvs process left mounts, keys or servers behind");
        return ExitCode::SUCCESS;
    }
    for line in &done {
        println!("{}", printable(line));
    }
    if done.iter().all(|l| l.starts_with("cleaned up")) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Folds a multi-line message into one line, dropping clap's "For more information" tip.
fn one_line(msg: &str) -> String {
    let mut out = String::new();
    for line in msg.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("For more information")) {
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_command_and_flag_is_in_the_reference() {
        use crate::reference_docs::{Page, CLI};
        use clap::CommandFactory;
        let page = Page::of(CLI);
        let mut commands: Vec<(String, clap::Command)> =
            Cli::command().get_subcommands().map(|c| (format!("dbvs {}", c.get_name()), c.clone())).collect();
        while let Some((path, command)) = commands.pop() {
            if command.is_hide_set() {
                continue;
            }
            commands.extend(command.get_subcommands().map(|c| (format!("{path} {}", c.get_name()), c.clone())));
            if command.has_subcommands() {
                continue;
            }
            let flags = command
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long())
                .filter(|l| !["help", "version"].contains(l))
                .map(|l| format!("--{l}"));
            page.assert_lists(&path, flags);
        }
    }

    use super::*;

    #[test]
    fn messages_fold_into_one_line() {
        assert_eq!(one_line("error: bad\n\nUsage: x\n\nFor more information, try '--help'.\n"), "error: bad; Usage: x");
        assert_eq!(one_line("error: missing:\n  --target\n"), "error: missing: --target");
    }
}
