//! Runs a user's script (`setup`, `command`) by `sh -c` as a process tree dbvs stops whole
//! ([`crate::sys::tree`]): when it ends (what it left running is stopped too), when it runs
//! past its bound, and on Ctrl-C or SIGTERM. Its output is read as it comes ([`output`]).

use super::output::{Captured, Reader, Scan};
use crate::sys::tree::{Stopped, Tree};
use anyhow::{bail, Result};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How many of its last lines an error quotes of what a script printed.
const QUOTED_LINES: usize = 5;
/// How long the output may take to close once the script's processes are gone.
const CLOSED_WITHIN: Duration = Duration::from_secs(2);

/// A script to run.
pub struct Script<'a> {
    pub text: &'a str,
    pub env: &'a [(String, String)],
    /// What it is, in messages: "command", "setup".
    pub what: &'static str,
    pub bound: Option<Bound>,
}

/// How long a script may run, and what to say when it runs past that.
pub struct Bound {
    pub limit: Duration,
    /// The bound's make-up, e.g. "the run's 2 s + 0 s warm-up + 30 s margin".
    pub why: String,
    /// What the user can do about it.
    pub fix: String,
}

/// How a script came to an end.
enum Ended {
    Exited(ExitStatus),
    Overran,
    Interrupted,
}

/// Runs `s` with `scan` looking for its figure in its standard output, and returns that
/// output. A failure (it failed, ran past its bound) quotes the end of what it printed.
pub fn run(s: &Script, scan: Scan) -> Result<Captured> {
    let sh = crate::sys::require("sh", "dash")?;
    let mut cmd = std::process::Command::new(sh);
    cmd.arg("-c").arg(s.text).envs(s.env.iter().map(|(k, v)| (k, v)));
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut tree = Tree::spawn(cmd, &format!("the {}", s.what))?;
    let (out, err) = tree.take_output();
    let (out, err) = (Reader::spawn(out, scan), Reader::spawn(err, Box::new(|_| None)));
    let ended = watch(&mut tree, s.bound.as_ref());
    let mut insistence = crate::interrupt::Insistence::new();
    let stopped = tree.stop(&mut || insistence.insisted());
    drop(tree);
    let (out, err) = (out.finish(CLOSED_WITHIN), err.finish(CLOSED_WITHIN));
    if matches!(ended, Ok(Ended::Exited(_))) && stopped.as_ref().is_ok_and(|s| *s != Stopped::Gone) {
        eprintln!("the {} left processes running; they were stopped", s.what);
    }
    stopped?;
    judge(s, ended?, out, &err)
}

/// Waits until the script's first process exits, it runs past its bound, or the user asks
/// dbvs to stop.
fn watch(tree: &mut Tree, bound: Option<&Bound>) -> Result<Ended> {
    let until = bound.map(|b| Instant::now() + b.limit);
    loop {
        if let Some(status) = tree.exited()? {
            return Ok(Ended::Exited(status));
        }
        if crate::interrupt::interrupted() {
            return Ok(Ended::Interrupted);
        }
        if until.is_some_and(|u| Instant::now() >= u) {
            return Ok(Ended::Overran);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The script's output if it succeeded, else why not.
fn judge(s: &Script, ended: Ended, out: Captured, err: &Captured) -> Result<Captured> {
    let said = if err.tail.trim().is_empty() { &out } else { err };
    let quoted = said.last_lines(QUOTED_LINES);
    match ended {
        Ended::Exited(status) if status.success() => Ok(out),
        Ended::Exited(status) => bail!("the {} '{}' failed ({status}): {quoted}", s.what, s.text),
        Ended::Interrupted => Err(crate::interrupt::Interrupted.into()),
        Ended::Overran => {
            let (limit, why, fix) =
                s.bound.as_ref().map(|b| (b.limit.as_secs(), b.why.as_str(), b.fix.as_str())).unwrap_or_default();
            bail!(
                "the {} ran past its bound of {limit} s ({why}) and was stopped (last output: {quoted}): {fix}",
                s.what
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script<'a>(text: &'a str, env: &'a [(String, String)], bound: Option<Bound>) -> Script<'a> {
        Script { text, env, what: "command", bound }
    }

    #[test]
    fn a_script_gets_its_environment_and_a_failure_quotes_its_output() {
        let env = vec![("DBVS_THREADS".to_string(), "3".to_string())];
        let out = run(&script("echo threads=$DBVS_THREADS", &env, None), Box::new(|_| None)).unwrap();
        assert_eq!(out.tail.trim(), "threads=3");
        let failing = script("echo connecting; echo 'no such table' >&2; exit 3", &env, None);
        let e = run(&failing, Box::new(|_| None)).unwrap_err().to_string();
        assert!(e.contains("exit status: 3") && e.contains("no such table"), "{e}");
    }

    #[test]
    fn a_script_past_its_bound_is_stopped_with_the_bound_and_the_fix() {
        let bound = Bound { limit: Duration::from_millis(300), why: "a test's".into(), fix: "end sooner".into() };
        let t = Instant::now();
        let e = run(&script("echo started; sleep 1000", &[], Some(bound)), Box::new(|_| None)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(60));
        let e = e.to_string();
        assert!(
            e.contains("ran past its bound of 0 s (a test's)") && e.contains("started") && e.ends_with("end sooner")
        );
    }
}
