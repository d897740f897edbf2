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

use super::{Check, Measure, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, Outcome, Pacing, RunResult, UnitRecorder, Worker};
use crate::targets::{BuildMeta, Database};
use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const OPERATIONS: &[&str] = &["command"];
/// How much of a failed command's output an error quotes.
const QUOTED_LINES: usize = 5;

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

/// Where the figure is in the command's output.
enum Figure {
    Regex(regex::Regex),
    Json(String),
}

impl Figure {
    fn new(o: &Options) -> Result<Self> {
        match (&o.regex, &o.json_pointer) {
            (Some(r), None) => {
                let re = regex::Regex::new(r).map_err(|e| {
                    // The crate draws the error over several lines; an error here is one.
                    let why = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                    anyhow::anyhow!("command: the regex '{r}' is invalid: {why}")
                })?;
                Ok(Figure::Regex(re))
            }
            (None, Some(p)) if p.is_empty() || p.starts_with('/') => Ok(Figure::Json(p.clone())),
            (None, Some(p)) => bail!("command: the JSON pointer '{p}' must start with '/' (e.g. /tps)"),
            (None, None) => {
                bail!("command: say where its figure is: regex = 'tps = ([0-9.]+)' or json_pointer = '/tps'")
            }
            (Some(_), Some(_)) => bail!("command: give regex or json_pointer, not both"),
        }
    }

    /// The figure in `out`: the regex's last match (a benchmark's summary comes last), or
    /// the pointer into the whole output or, failing that, into its last JSON line.
    fn find(&self, out: &str) -> Result<f64> {
        let text = match self {
            Figure::Regex(re) => {
                let caps = re.captures_iter(out).last().with_context(|| format!("no match for regex '{re}'"))?;
                caps.get(1).or_else(|| caps.get(0)).map_or("", |m| m.as_str()).to_string()
            }
            Figure::Json(pointer) => {
                let json = serde_json::from_str::<serde_json::Value>(out).ok().or_else(|| {
                    out.lines().rev().find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
                });
                let value = json.context("no JSON in the output")?;
                let found = value.pointer(pointer).with_context(|| format!("no value at JSON pointer '{pointer}'"))?;
                match found {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                }
            }
        };
        text.trim().replace(',', "").parse().with_context(|| format!("'{text}' is not a number"))
    }
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

    /// The environment a script gets: the database's client variables and the run's shape.
    fn env(&self, db: &dyn Database) -> Result<Vec<(String, String)>> {
        let asked = *self.asked.lock().unwrap_or_else(|p| p.into_inner());
        let asked = asked.unwrap_or(Asked { threads: 1, duration: Duration::from_secs(60), warmup: Duration::ZERO });
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

/// A duration as the whole seconds benchmarks take (`-T 20`), at least one.
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs_f64().round().max(1.0) as u64
}

/// Runs `script` by `sh -c` with `env` added, and returns its standard output. It runs in
/// a process group of its own, which Ctrl-C (the interrupt flag) ends as a whole, and it
/// dies with dbvs. A failure quotes the end of what it printed.
fn run_script(script: &str, env: &[(String, String)], what: &str) -> Result<String> {
    let sh = crate::sys::require("sh", "dash")?;
    let mut cmd = std::process::Command::new(sh);
    cmd.arg("-c").arg(script).envs(env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null());
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    // SAFETY: prctl is async-signal-safe; it only sets this child's parent-death signal.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().with_context(|| format!("cannot start the {what}"))?;
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let status = wait_or_interrupt(&mut child)?;
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    if !status.success() {
        let said = if err.trim().is_empty() { &out } else { &err };
        let tail: Vec<&str> = said.lines().rev().take(QUOTED_LINES).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("the {what} '{script}' failed ({status}): {}", tail.join(" | "));
    }
    Ok(out)
}

/// Reads a child's pipe to the end on a thread of its own, so neither pipe fills and blocks it.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut p) = pipe {
            let mut bytes = Vec::new();
            let _ = p.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// Waits for the child; on an interrupt, ends its whole process group and says so.
fn wait_or_interrupt(child: &mut Child) -> Result<std::process::ExitStatus> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if crate::interrupt::interrupted() {
            // SAFETY: kill has no memory-safety preconditions; the group is the child's own.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) };
            let _ = child.wait();
            return Err(crate::interrupt::Interrupted.into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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
        let out = run_script(&w.options.command, &self.env, "command")?;
        rec.op(0, t.elapsed());
        self.executions += 1;
        eprintln!("command output (execution {}):\n{}", self.executions, out.trim_end());
        let value = w.figure.find(&out).with_context(|| {
            let tail: Vec<&str> = out.lines().rev().take(QUOTED_LINES).collect();
            format!("the command's figure is not in its output (last lines: {})", tail.join(" | "))
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
            let out = run_script(setup, &self.env(db)?, "setup")?;
            eprintln!("setup output:\n{}", out.trim_end());
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
        p.threads = 1;
        p.warmup = Duration::ZERO;
        p.think_time = Duration::ZERO;
        p.iterations = Some(u64::from(self.repeat));
        p.duration = p.duration.max(Duration::from_secs(7 * 24 * 3600));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(regex: Option<&str>, pointer: Option<&str>) -> Options {
        Options {
            command: "true".into(),
            regex: regex.map(String::from),
            json_pointer: pointer.map(String::from),
            ..Options::default()
        }
    }

    #[test]
    fn figures_come_from_the_last_regex_match_or_a_json_pointer() {
        let pgbench = "progress: 1.0 s, 900.5 tps\ntps = 1,234.56 (without initial connection time)\n";
        let f = Figure::new(&options(Some(r"tps = ([0-9.,]+)"), None)).unwrap();
        assert_eq!(f.find(pgbench).unwrap(), 1234.56);
        let whole = Figure::new(&options(Some(r"[0-9]+\.[0-9]+"), None)).unwrap();
        assert_eq!(whole.find("took 2.5 s").unwrap(), 2.5);
        let json = Figure::new(&options(None, Some("/results/tps"))).unwrap();
        assert_eq!(json.find("warming up\n{\"results\": {\"tps\": 812.5}}\n").unwrap(), 812.5);
        assert_eq!(json.find("{\"results\": {\"tps\": \"99\"}}").unwrap(), 99.0);
        assert!(json.find("{\"results\": {}}").unwrap_err().to_string().contains("/results/tps"));
        assert!(f.find("no summary").unwrap_err().to_string().contains("no match"));
    }

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
    fn a_script_gets_its_environment_and_a_failure_quotes_its_output() {
        let env = vec![("DBVS_THREADS".to_string(), "3".to_string())];
        assert_eq!(run_script("echo threads=$DBVS_THREADS", &env, "command").unwrap().trim(), "threads=3");
        let e = run_script("echo connecting; echo 'no such table' >&2; exit 3", &env, "command").unwrap_err();
        let e = e.to_string();
        assert!(e.contains("exit status: 3") && e.contains("no such table"), "{e}");
    }
}
