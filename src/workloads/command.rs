//! `command`: a benchmark the user already has (a pgbench script, a sysbench Lua test, a
//! HammerDB or BenchBase run) as a workload. Its `setup` runs once into the empty database
//! when the pristine one is built (`pgbench -i`, `sysbench ... prepare`); its `command` runs
//! `repeat` times per run against the run's fresh copy. Both run under `sh -c`, reaching
//! the database through the conventional client variables ([`Database::client_env`]:
//! `PGHOST`/`PGPORT`/`PGUSER`/`PGDATABASE`, `MYSQL_HOST`/`MYSQL_TCP_PORT`/..., or
//! `DBVS_SQLITE_PATH`), with the run's shape in `DBVS_THREADS`, `DBVS_DURATION`,
//! `DBVS_WARMUP` and `DBVS_SIZE` (seconds as whole numbers). The figure it prints (a
//! regex's first group, or a JSON pointer into its output) is the run's measure, compared in
//! studies like a built-in workload's.
//!
//! Each execution is a process tree dbvs stops as a whole ([`script`]): when dbvs is asked
//! to stop, when dbvs dies, and when it runs past the warm-up and duration it was given plus
//! a margin, which fails the run. Its output is read as it comes; only its end is kept.

mod figure;
mod output;
mod script;

use super::{Check, Measure, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, Outcome, Pacing, RunResult, UnitRecorder, Worker};
use crate::targets::{BuildMeta, Database};
use anyhow::{bail, Context, Result};
use figure::Figure;
use indicatif::ProgressBar;
use script::{Bound, Script};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const OPERATIONS: &[&str] = &["command"];
/// How much of its output an error about a missing figure quotes.
const QUOTED_LINES: usize = 5;
/// What an execution may take beyond the warm-up and duration it was asked for (to connect,
/// to finish): this, or a tenth of those for long runs.
const MARGIN: Duration = Duration::from_secs(30);

/// The command workload's options, on the command line and in study files.
#[derive(clap::Args, Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[group(id = "command_options")]
pub struct Options {
    /// command: the benchmark to run (by sh -c) against each run's database, e.g.
    /// 'pgbench -n -c $DBVS_THREADS -T $DBVS_DURATION'.
    #[arg(long = "command", id = "command_script", value_name = "SCRIPT", default_value = "")]
    pub command: String,
    /// command: what builds the pristine database once, before any run (e.g. 'pgbench -i -s $DBVS_SIZE').
    #[arg(long, value_name = "SCRIPT")]
    pub setup: Option<String>,
    /// command: the figure in the command's output: a regex whose first group (or whole
    /// match) is the number, e.g. 'tps = ([0-9.]+)'.
    #[arg(long, value_name = "REGEX")]
    pub regex: Option<String>,
    /// command: the figure as a JSON pointer into the command's output (e.g. /tps).
    #[arg(long, value_name = "POINTER", conflicts_with = "regex")]
    pub json_pointer: Option<String>,
    /// command: the figure's name in records and reports [default: figure].
    #[arg(long, value_name = "NAME")]
    pub measure: Option<String>,
    /// command: the figure's unit, e.g. tps.
    #[arg(long, value_name = "UNIT")]
    pub unit: Option<String>,
    /// command: a smaller figure is better (a time); by default a larger one is (a rate).
    #[arg(long)]
    pub lower_is_better: bool,
}

/// The run's shape as the user asked for it, which the command gets in its environment:
/// the driver itself runs the command in one worker, once per repeat.
#[derive(Clone, Copy)]
struct Asked {
    threads: usize,
    duration: Duration,
    warmup: Duration,
}

pub struct Command {
    options: Options,
    figure: Figure,
    size: Option<String>,
    seed: u64,
    repeat: u32,
    asked: Mutex<Option<Asked>>,
    /// The figure of each execution so far.
    figures: Mutex<Vec<f64>>,
}

impl Command {
    pub fn new(spec: &WorkloadSpec, o: &Options) -> Result<Self> {
        if o.command.trim().is_empty() {
            bail!("command: say what to run: command = 'pgbench -n -T $DBVS_DURATION' (run by sh -c per run)");
        }
        if o.measure.as_deref().is_some_and(|m| m.trim().is_empty()) {
            bail!("command: measure names the figure; it cannot be empty");
        }
        Ok(Self {
            figure: Figure::new(o)?,
            options: o.clone(),
            size: spec.size.clone(),
            seed: spec.seed,
            repeat: spec.repeat_or(1)?,
            asked: Mutex::new(None),
            figures: Mutex::default(),
        })
    }

    fn figure_measure(&self, value: Option<f64>) -> Measure {
        let name = self.options.measure.clone().unwrap_or_else(|| "figure".into());
        let unit = self.options.unit.as_deref().unwrap_or("");
        match self.options.lower_is_better {
            true => Measure::lower(name, unit, value),
            false => Measure::higher(name, unit, value),
        }
    }

    fn figures(&self) -> Vec<f64> {
        self.figures.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The run's shape as asked for (a build, which has none, gets one thread for a minute).
    fn asked(&self) -> Asked {
        let asked = *self.asked.lock().unwrap_or_else(|p| p.into_inner());
        asked.unwrap_or(Asked { threads: 1, duration: Duration::from_secs(60), warmup: Duration::ZERO })
    }

    /// The environment a script gets: the database's client variables and the run's shape.
    fn env(&self, db: &dyn Database) -> Result<Vec<(String, String)>> {
        let asked = self.asked();
        let mut env = db.client_env()?;
        env.extend([
            ("DBVS_THREADS".to_string(), asked.threads.to_string()),
            ("DBVS_DURATION".to_string(), whole_seconds(asked.duration).to_string()),
            ("DBVS_WARMUP".to_string(), asked.warmup.as_secs().to_string()),
            ("DBVS_SIZE".to_string(), self.size.clone().unwrap_or_default()),
            ("DBVS_SEED".to_string(), self.seed.to_string()),
        ]);
        Ok(env)
    }
}

/// How long one execution may run: the warm-up and duration it gets (as whole seconds) and
/// a [`MARGIN`]. A command that runs on past that is stopped, and the run fails; a study's
/// runs are bounded so too (the study starts no block that would overrun its budget).
fn bound(asked: Asked) -> Bound {
    let (warmup, duration) = (asked.warmup.as_secs(), whole_seconds(asked.duration));
    let margin = MARGIN.as_secs().max((warmup + duration) / 10);
    Bound {
        limit: Duration::from_secs(warmup + duration + margin),
        why: format!("{warmup} s warm-up + the run's {duration} s + {margin} s margin"),
        fix: "make it end within $DBVS_WARMUP + $DBVS_DURATION seconds (e.g. pgbench -T $DBVS_DURATION), or raise \
              --duration"
            .into(),
    }
}

/// A duration as the whole seconds benchmarks take (`-T 20`), at least one.
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs_f64().round().max(1.0) as u64
}

struct CommandWorker<'a> {
    workload: &'a Command,
    env: Vec<(String, String)>,
    executions: usize,
}

impl Worker for CommandWorker<'_> {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> Result<Outcome> {
        let w = self.workload;
        let t = Instant::now();
        let script =
            Script { text: &w.options.command, env: &self.env, what: "command", bound: Some(bound(w.asked())) };
        let out = script::run(&script, w.figure.scanner())?;
        rec.op(0, t.elapsed());
        self.executions += 1;
        eprintln!("command output (execution {}):\n{}", self.executions, out.shown().trim_end());
        let value = w.figure.find(&out).with_context(|| {
            format!("the command's figure is not in its output (last lines: {})", out.last_lines(QUOTED_LINES))
        })?;
        w.figures.lock().unwrap_or_else(|p| p.into_inner()).push(value);
        Ok(Outcome::Committed)
    }
}

impl Workload for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn operations(&self) -> &'static [&'static str] {
        OPERATIONS
    }

    /// What the pristine database was built with: the setup script (a run's command may
    /// change from run to run on the same build) and the size it was given.
    fn build_identity(&self) -> BuildMeta {
        BuildMeta::from([
            ("workload".into(), "command".into()),
            ("size".into(), self.size.clone().unwrap_or_else(|| "default".into())),
            ("setup".into(), self.options.setup.clone().unwrap_or_default()),
        ])
    }

    fn build(&self, db: &dyn Database, _progress: &ProgressBar) -> Result<u64> {
        if let Some(setup) = &self.options.setup {
            let env = self.env(db)?;
            let out = script::run(&Script { text: setup, env: &env, what: "setup", bound: None }, Box::new(|_| None))?;
            eprintln!("setup output:\n{}", out.shown().trim_end());
        }
        let mut meta = self.build_identity();
        // The plaintext canary scan needs a marker in the data; the user's tables have none.
        meta.insert("canary".into(), super::CANARY.into());
        crate::targets::write_meta(&mut db.connect()?, &meta)?;
        Ok(0)
    }

    fn worker<'a>(&'a self, db: &'a dyn Database, _meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>> {
        if index > 0 {
            bail!("the command workload runs its command in one worker; the command starts its own clients");
        }
        Ok(Box::new(CommandWorker { workload: self, env: self.env(db)?, executions: 0 }))
    }

    fn check(&self, _db: &dyn Database, _meta: &BuildMeta, done: Option<&FromStart>) -> Result<Vec<Check>> {
        Ok(match done {
            Some(done) => {
                let ran = done.op(OPERATIONS[0]);
                vec![Check {
                    name: "the command ran --repeat times and printed its figure".into(),
                    ok: ran == u64::from(self.repeat) && self.figures().len() == self.repeat as usize,
                    detail: format!("{} of {}", self.figures().len(), self.repeat),
                }]
            }
            None => vec![],
        })
    }

    /// The driver runs the command `repeat` times in one worker; the threads, duration and
    /// warm-up asked for go to the command instead.
    fn adjust_pacing(&self, p: &mut Pacing) {
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        asked.get_or_insert(Asked { threads: p.threads, duration: p.duration, warmup: p.warmup });
        p.fixed_work(u64::from(self.repeat));
    }

    fn params(&self) -> serde_json::Value {
        let o = &self.options;
        json!({
            "command": o.command, "setup": o.setup, "regex": o.regex, "json_pointer": o.json_pointer,
            "size": self.size, "repeat": self.repeat,
        })
    }

    fn metrics(&self, _run: &RunResult) -> serde_json::Value {
        json!({ "figures": self.figures() })
    }

    fn measures(&self, run: Option<&RunResult>) -> Vec<Measure> {
        vec![self.headline(run)]
    }

    /// The mean figure over the run's executions.
    fn headline(&self, run: Option<&RunResult>) -> Measure {
        let figures = self.figures();
        let mean = (run.is_some() && !figures.is_empty()).then(|| figures.iter().sum::<f64>() / figures.len() as f64);
        self.figure_measure(mean)
    }

    fn interval_line(&self, s: &IntervalSample) -> String {
        format!("command: {:.0} s, {} executions done", s.et_s, s.units)
    }

    fn final_line(&self, run: &RunResult) -> String {
        let m = self.headline(Some(run));
        match m.value {
            Some(v) => format!("command: {} = {v:.3} {} (mean of {} executions)", m.name, m.unit, self.figures().len()),
            None => format!("command: no {} (no execution finished)", m.name),
        }
    }
}

/// Runs a user's script to its end (as `dbvs capture` runs the traffic it captures), with
/// `env`; what it printed.
pub fn run_script(text: &str, env: &[(String, String)], what: &'static str) -> Result<String> {
    let out = script::run(&Script { text, env, what, bound: None }, Box::new(|_| None))?;
    Ok(out.shown())
}

/// Options of a command that prints its figure, read by `regex` or `json_pointer`.
#[cfg(test)]
fn test_options(regex: Option<&str>, pointer: Option<&str>) -> Options {
    Options {
        command: "true".into(),
        regex: regex.map(String::from),
        json_pointer: pointer.map(String::from),
        ..Options::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_options as options;

    #[test]
    fn bad_options_are_refused_with_the_fix() {
        let spec = WorkloadSpec::default();
        let err = |o: &Options| Command::new(&spec, o).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err(&options(None, None)).contains("regex ="), "{}", err(&options(None, None)));
        assert!(err(&options(Some("("), None)).contains("invalid"));
        assert!(err(&options(None, Some("tps"))).contains("start with '/'"));
        assert!(err(&Options { command: " ".into(), ..options(Some("x"), None) }).contains("say what to run"));
        assert!(Command::new(&spec, &options(Some("x"), None)).is_ok());
    }

    #[test]
    fn an_execution_is_bounded_by_what_it_was_asked_for_and_a_margin() {
        let short = bound(Asked { threads: 1, duration: Duration::from_millis(1600), warmup: Duration::from_secs(1) });
        assert_eq!(
            (short.limit, short.why.as_str()),
            (Duration::from_secs(33), "1 s warm-up + the run's 2 s + 30 s margin")
        );
        let long = bound(Asked { threads: 1, duration: Duration::from_secs(3600), warmup: Duration::ZERO });
        assert_eq!(long.limit, Duration::from_secs(3960));
    }
}
