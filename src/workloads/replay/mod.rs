//! `replay`: the user's own traffic as a workload. A captured server log (PostgreSQL's
//! stderr or csvlog with every statement logged; MariaDB's or MySQL's general query log, or
//! slow query log with every statement) is replayed against a fresh copy of the user's own
//! database (restored once from their dump), each captured session on its own
//! connection with its statements in order, so transactions stay transactions. Paced as
//! recorded (the measure is the statements' latencies and how far the replay falls behind)
//! or as fast as possible (the replay's time and statements per second). Statements are
//! told apart by class (their text without literals), each with its latency percentiles
//! and how its failures compare with the capture's.

pub mod capture;
mod event;
mod mylog;
mod pglog;
mod play;
mod prefix;
mod restore;
pub mod tables;
mod tally;

use super::{Check, Measure, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, Outcome, Pacing, RunResult, UnitRecorder, Worker};
use crate::targets::{BuildMeta, Database, Engine};
use anyhow::{bail, Context, Result};
use event::Event;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;
use tally::Summary;

pub use play::Pacing as ReplayPacing;

const OPERATIONS: &[&str] = &["replay"];
/// Classes a run's summary lists, by the time they took in all.
const CLASSES_SHOWN: usize = 10;

/// The log formats a replay reads.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// PostgreSQL's stderr log, each line behind its log_line_prefix.
    Stderr,
    /// PostgreSQL's csvlog.
    Csvlog,
    /// MariaDB's or MySQL's general query log.
    General,
    /// MariaDB's or MySQL's slow query log, with long_query_time = 0.
    Slow,
}

impl LogFormat {
    /// The engine whose logs these are.
    fn engine(self) -> Engine {
        match self {
            LogFormat::Stderr | LogFormat::Csvlog => Engine::Postgres,
            LogFormat::General | LogFormat::Slow => Engine::Mariadb,
        }
    }

    fn name(self) -> &'static str {
        match self {
            LogFormat::Stderr => "stderr",
            LogFormat::Csvlog => "csvlog",
            LogFormat::General => "general",
            LogFormat::Slow => "slow",
        }
    }

    /// Whether the log says which statements failed (PostgreSQL's ERROR lines).
    fn records_failures(self) -> bool {
        self.engine() == Engine::Postgres
    }

    /// The format of `log`, from its name and first lines: a slow log's entries start with
    /// `# Time:` or `# User@Host:`, a general log's lines with a MariaDB or ISO time or its
    /// header; else csvlog for a `.csv` file, else PostgreSQL's stderr.
    fn of(log: &Path) -> Result<Self> {
        use std::io::BufRead;
        let file =
            std::fs::File::open(log).with_context(|| format!("replay: cannot read the log {}", log.display()))?;
        let general = mylog::general::Patterns::compiled();
        for line in BufReader::new(file).lines().take(20) {
            let line = line.unwrap_or_default();
            if line.starts_with("# Time: ") || line.starts_with("# User@Host: ") {
                return Ok(LogFormat::Slow);
            }
            if general.is_entry(&line) {
                return Ok(LogFormat::General);
            }
        }
        let csv = log.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        Ok(if csv { LogFormat::Csvlog } else { LogFormat::Stderr })
    }
}

/// How the replay is paced.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PacingName {
    /// At the captured times (see speed): the measure is latency and how far it falls behind.
    #[default]
    Recorded,
    /// Each session as fast as it can: the measure is the replay's time.
    Fast,
}

/// The replay workload's options, on the command line and in study files.
#[derive(clap::Args, Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[group(id = "replay_options")]
pub struct Options {
    /// replay: the captured server log (PostgreSQL with log_statement = 'all' or
    /// log_min_duration_statement = 0, log_connections and log_disconnections on; MariaDB's
    /// general query log, or its slow query log with long_query_time = 0).
    #[arg(long = "replay-log", value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// replay: the log's format [default: from its first lines (general, slow), else csvlog
    /// for a .csv file, else stderr].
    #[arg(long = "log-format", value_enum)]
    pub format: Option<LogFormat>,
    /// replay: the server's log_line_prefix, for a stderr log [default: '%m [%p] '].
    #[arg(long = "log-prefix", value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// replay: the user's database as pg_dump wrote it (plain SQL or custom format) or
    /// mariadb-dump (mysqldump) did, or a data directory (a stopped server's copy, or a
    /// base backup) holding it; restored once as the pristine database every run copies;
    /// without it, runs start from an empty database.
    #[arg(long, value_name = "PATH")]
    pub dump: Option<PathBuf>,
    /// replay: as recorded, or as fast as possible.
    #[arg(long, value_enum)]
    pub pacing: Option<PacingName>,
    /// replay: how many times faster than recorded the recorded pacing plays [default: 1].
    #[arg(long, value_name = "FACTOR")]
    pub speed: Option<f64>,
    /// replay: only the sessions the log says connected to this database, and the database
    /// a data directory given as dump holds [default: all sessions; the directory's only database].
    #[arg(long = "replay-database", value_name = "NAME")]
    pub database: Option<String>,
    /// replay: sessions open at once, at most; a log with more is refused [default: 90].
    #[arg(long = "max-sessions", value_name = "N")]
    pub sessions: Option<usize>,
}

pub struct Replay {
    log: PathBuf,
    format: LogFormat,
    prefix: String,
    dump: Option<PathBuf>,
    pacing: play::Pacing,
    database: Option<String>,
    sessions: usize,
    /// What the last replay found.
    last: Mutex<Option<Summary>>,
    /// The rows per table the capture ended with (kept beside its log), and how the last
    /// replay's compare, in words.
    captured_rows: Option<tables::Counts>,
    rows: Mutex<Option<String>>,
}

impl Replay {
    pub fn new(spec: &WorkloadSpec, o: &Options) -> Result<Self> {
        let Some(log) = o.log.clone() else {
            bail!("replay: say which log to replay: log = 'capture.log' (dbvs capture makes one)")
        };
        let readable = |what: &str, p: &Path| {
            std::fs::File::open(p).map(drop).with_context(|| format!("replay: cannot read the {what} {}", p.display()))
        };
        readable("log", &log)?;
        if let Some(d) = &o.dump {
            readable("dump", d)?;
        }
        if spec.repeat.is_some_and(|r| r != 1) {
            bail!("replay: a replay runs once per run (a second would start from what the first left); ask a study for more blocks instead of repeat");
        }
        let speed = o.speed.unwrap_or(1.0);
        if !(speed.is_finite() && speed > 0.0) {
            bail!("replay: speed must be a positive factor (2 plays twice as fast as recorded), not {speed}");
        }
        if o.speed.is_some() && o.pacing == Some(PacingName::Fast) {
            bail!("replay: speed applies to pacing = 'recorded'; pacing = 'fast' plays as fast as it can");
        }
        let sessions = o.sessions.unwrap_or(90);
        if sessions == 0 {
            bail!("replay: sessions must be at least 1");
        }
        let format = match o.format {
            Some(f) => f,
            None => LogFormat::of(&log)?,
        };
        if o.prefix.is_some() && format.engine() != Engine::Postgres {
            bail!("replay: prefix is PostgreSQL's log_line_prefix; a {} log has none (leave it out)", format.name());
        }
        let prefix = o.prefix.clone().unwrap_or_else(|| prefix::DEFAULT.to_string());
        prefix::Prefix::new(&prefix).context("replay: prefix")?;
        Ok(Self {
            format,
            prefix,
            dump: o.dump.clone(),
            pacing: match o.pacing.unwrap_or_default() {
                PacingName::Recorded => play::Pacing::Recorded { speed },
                PacingName::Fast => play::Pacing::Fast,
            },
            database: o.database.clone(),
            sessions,
            last: Mutex::new(None),
            captured_rows: tables::load(&log)?,
            log,
            rows: Mutex::new(None),
        })
    }

    /// The log's events, streamed.
    fn events(&self) -> Result<Box<dyn Iterator<Item = Result<Event>>>> {
        let file = std::fs::File::open(&self.log).with_context(|| format!("cannot open {}", self.log.display()))?;
        let reader = BufReader::with_capacity(1 << 20, file);
        Ok(match self.format {
            LogFormat::Stderr => Box::new(pglog::PgLog::stderr(reader, &self.prefix)?),
            LogFormat::Csvlog => Box::new(pglog::PgLog::csv(reader)),
            LogFormat::General => Box::new(mylog::general::GeneralLog::new(reader)),
            LogFormat::Slow => Box::new(mylog::slow::SlowLog::new(reader)),
        })
    }

    fn last(&self) -> Option<Summary> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn recorded(&self) -> bool {
        matches!(self.pacing, play::Pacing::Recorded { .. })
    }

    /// A file's identity for the build: its path, size and modification time; a data
    /// directory's size is its files', its time the newest of theirs.
    fn identity_of(p: &Path) -> String {
        let (size, modified) = size_and_newest(p);
        format!("{} ({size} bytes, modified {modified})", p.display())
    }
}

/// The bytes in `p` (a file, or a directory's files), and the newest modification among
/// them, in seconds since 1970. A symbolic link under a directory counts as itself (a link
/// may loop).
fn size_and_newest(p: &Path) -> (u64, u64) {
    let Ok(meta) = std::fs::metadata(p) else { return (0, 0) };
    tree_size_and_newest(p, meta)
}

fn tree_size_and_newest(p: &Path, meta: std::fs::Metadata) -> (u64, u64) {
    let since = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    let modified = since.map_or(0, |d| d.as_secs());
    if !meta.is_dir() {
        return (meta.len(), modified);
    }
    let entries = std::fs::read_dir(p).into_iter().flatten().flatten();
    let each = entries.filter_map(|e| Some(tree_size_and_newest(&e.path(), std::fs::symlink_metadata(e.path()).ok()?)));
    each.fold((0, modified), |(size, newest), (s, m)| (size + s, newest.max(m)))
}

struct ReplayWorker<'a> {
    replay: &'a Replay,
    db: &'a dyn Database,
}

impl Worker for ReplayWorker<'_> {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> Result<Outcome> {
        let r = self.replay;
        let t = Instant::now();
        let connect = || self.db.connect_session();
        let play =
            play::Play { connect: &connect, pacing: r.pacing, database: r.database.as_deref(), sessions: r.sessions };
        let summary = play.run(r.events()?)?;
        rec.op(0, t.elapsed());
        if summary.statements == 0 {
            bail!(
                "the log {} holds no statement to replay{}: was log_statement = 'all' (or log_min_duration_statement = 0) on?",
                r.log.display(),
                r.database.as_deref().map(|d| format!(" of database {d}")).unwrap_or_default()
            );
        }
        *r.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(summary);
        Ok(Outcome::Committed)
    }
}

impl Workload for Replay {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn operations(&self) -> &'static [&'static str] {
        OPERATIONS
    }

    /// The dump the pristine database was restored from.
    fn build_identity(&self) -> BuildMeta {
        let mut dump = self.dump.as_deref().map_or_else(|| "none (an empty database)".to_string(), Self::identity_of);
        if let (Some(true), Some(database)) = (self.dump.as_ref().map(|d| d.is_dir()), &self.database) {
            dump += &format!(", database {database}");
        }
        // Every build identity has a size (it names the database); a replay's is its dump's.
        let size = if self.dump.is_some() { "dump" } else { "empty" };
        BuildMeta::from([("workload".into(), "replay".into()), ("size".into(), size.into()), ("dump".into(), dump)])
    }

    fn build(&self, db: &dyn Database, _progress: &ProgressBar) -> Result<u64> {
        let engine = db.connect()?.engine();
        let logged = self.format.engine();
        if engine != logged {
            bail!("replay: a {} log is {logged}'s and replays on {logged}; the target is {engine}", self.format.name());
        }
        if let Some(dump) = &self.dump {
            restore::restore(dump, db, engine, self.database.as_deref())?;
            // A dump of a database dbvs built holds its build facts: these are the replay's.
            crate::targets::sql::exec(
                &mut db.connect()?,
                &format!("DROP TABLE IF EXISTS {}", crate::targets::META_TABLE),
            )?;
        }
        let mut meta = self.build_identity();
        // The plaintext canary scan needs a marker in the data; the user's tables have none.
        meta.insert("canary".into(), super::CANARY.into());
        crate::targets::write_meta(&mut db.connect()?, &meta)?;
        Ok(0)
    }

    fn worker<'a>(&'a self, db: &'a dyn Database, _meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>> {
        if index > 0 {
            bail!("the replay runs in one worker; the log's sessions are its clients");
        }
        Ok(Box::new(ReplayWorker { replay: self, db }))
    }

    fn check(&self, db: &dyn Database, _meta: &BuildMeta, done: Option<&FromStart>) -> Result<Vec<Check>> {
        let Some(done) = done else { return Ok(vec![]) };
        if let Some(then) = &self.captured_rows {
            let now = tables::count(&mut db.connect()?)?;
            *self.rows.lock().unwrap_or_else(|p| p.into_inner()) = Some(tables::compare(&now, then));
        }
        let replayed = done.op(OPERATIONS[0]) == 1 && self.last().is_some();
        Ok(vec![Check { name: "the log was replayed to its end".into(), ok: replayed, detail: format!("{replayed}") }])
    }

    /// The driver runs the replay once, in one worker; the log's sessions are its clients.
    fn adjust_pacing(&self, p: &mut Pacing) {
        p.fixed_work(1);
    }

    fn params(&self) -> serde_json::Value {
        let pacing = match self.pacing {
            play::Pacing::Recorded { speed } => json!({ "recorded": { "speed": speed } }),
            play::Pacing::Fast => json!("fast"),
        };
        json!({
            "log": Self::identity_of(&self.log), "format": self.format, "prefix": self.prefix,
            "dump": self.dump, "pacing": pacing, "database": self.database, "sessions": self.sessions,
        })
    }

    fn metrics(&self, _run: &RunResult) -> serde_json::Value {
        json!({ "replay": self.last(), "rows": *self.rows.lock().unwrap_or_else(|p| p.into_inner()) })
    }

    /// As recorded, the schedule sets the replay's time, so what a change shows is in the
    /// statements' latencies and how far they fall behind; as fast as possible, in the time.
    fn measures(&self, run: Option<&RunResult>) -> Vec<Measure> {
        let last = run.and(self.last());
        let of = |f: fn(&Summary) -> f64| last.as_ref().map(f);
        let mut m = vec![];
        if !self.recorded() {
            m.push(Measure::lower("replay time", "s", of(|s| s.elapsed_s)));
            m.push(Measure::higher("statements per second", "statements/s", of(|s| s.statements_per_s)));
        }
        m.push(Measure::lower("statement latency", "ms", of(|s| s.latency.mean_ms)));
        m.push(Measure::lower("statement latency p95", "ms", of(|s| s.latency.p95_ms)));
        if self.recorded() {
            m.push(Measure::lower("lag behind the recording", "ms", of(|s| s.lag.as_ref().map_or(0.0, |l| l.mean_ms))));
        }
        // A log that does not say what failed at capture (MariaDB's) counts every failure.
        let failed =
            if self.format.records_failures() { "statements failed, not as captured" } else { "statements failed" };
        m.push(Measure::cost(failed, "statements", of(|s| s.failed.differing() as f64)));
        m
    }

    /// As recorded, the statements' mean latency; as fast as possible, the replay's time.
    fn headline(&self, run: Option<&RunResult>) -> Measure {
        let m = self.measures(run);
        let name = if self.recorded() { "statement latency" } else { "replay time" };
        m.into_iter().find(|m| m.name == name).expect("declared above")
    }

    fn details(&self, _run: &RunResult) -> Vec<String> {
        let Some(s) = self.last() else { return vec![] };
        let mut lines = vec![format!(
            "{} statements in {} sessions, {:.1} s; latency mean {:.2} ms, p95 {:.2} ms, p99 {:.2} ms{}",
            s.statements,
            s.sessions,
            s.elapsed_s,
            s.latency.mean_ms,
            s.latency.p95_ms,
            s.latency.p99_ms,
            s.lag
                .as_ref()
                .map(|l| format!("; behind the recording: mean {:.1} ms, p99 {:.1} ms", l.mean_ms, l.p99_ms))
                .unwrap_or_default()
        )];
        lines.extend(self.rows.lock().unwrap_or_else(|p| p.into_inner()).clone());
        let f = s.failed;
        lines.push(match self.format.records_failures() {
            true => format!(
                "failed: {} as at capture, {} now only, {} at capture only",
                f.as_captured, f.now_only, f.then_only
            ),
            false => format!("failed: {} (the log does not say which failed at capture)", f.now_only),
        });
        for c in s.classes.iter().take(CLASSES_SHOWN) {
            let failed = match c.failed.differing() {
                0 => String::new(),
                n => {
                    format!(", {n} failed unlike the capture ({})", c.first_error.as_deref().unwrap_or("succeeded now"))
                }
            };
            lines.push(format!(
                "{:>8} x {:.2} ms mean, p95 {:.2} ms: {}{failed}",
                c.statements, c.latency.mean_ms, c.latency.p95_ms, c.class
            ));
        }
        lines
    }

    fn interval_line(&self, s: &IntervalSample) -> String {
        format!("replay: {:.0} s", s.et_s)
    }

    fn final_line(&self, _run: &RunResult) -> String {
        match self.last() {
            Some(s) => format!(
                "replay: {} statements in {:.1} s ({:.0} per second), latency mean {:.2} ms",
                s.statements, s.elapsed_s, s.statements_per_s, s.latency.mean_ms
            ),
            None => "replay: did not finish".into(),
        }
    }
}
