//! Run processes that take turns in one schedule of slices (`run::start`): all are
//! started, each says when it is set up (copies and servers take different times), and
//! every ready one gets the same go. One that ends before it is ready is left out; the
//! others run without it and its run is failed with the cause in its log.

use super::launch::wait_child;
use super::start::{go_line, READY};
use crate::interrupt;
use anyhow::Result;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

/// Time between the go and the common start, for every run to read it.
const LEAD: Duration = Duration::from_millis(50);

struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Says once whether the run got ready (false: its output ended first).
    ready: Receiver<bool>,
    pump: std::thread::JoinHandle<()>,
}

/// Starts a run; a thread copies its output to its log and reports the ready line.
fn start(mut cmd: Command, log: std::fs::File) -> Result<Running> {
    crate::sys::end_with_parent(&mut cmd);
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(log.try_clone()?).spawn()?;
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take().expect("stdout is piped"));
    let (tx, ready) = mpsc::channel();
    let pump = std::thread::spawn(move || {
        let mut log = log;
        let mut said = false;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if !said && line == READY {
                said = tx.send(true).is_ok();
            } else {
                let _ = writeln!(log, "{line}");
            }
        }
        if !said {
            let _ = tx.send(false);
        }
    });
    Ok(Running { child, stdin, ready, pump })
}

/// Runs the commands together with one common start; returns each one's exit status.
pub fn run_together(commands: Vec<(Command, std::fs::File)>) -> Vec<Result<ExitStatus>> {
    let mut runs: Vec<Result<Running>> = commands.into_iter().map(|(cmd, log)| start(cmd, log)).collect();
    let mut ready: Vec<Option<bool>> = runs.iter().map(|r| r.as_ref().err().map(|_| false)).collect();
    while ready.iter().any(Option::is_none) && !interrupt::interrupted() {
        for (r, state) in runs.iter().zip(ready.iter_mut()).filter(|(_, s)| s.is_none()) {
            if let Ok(run) = r {
                match run.ready.try_recv() {
                    Ok(got) => *state = Some(got),
                    Err(TryRecvError::Disconnected) => *state = Some(false),
                    Err(TryRecvError::Empty) => {}
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if !interrupt::interrupted() {
        let go = go_line(LEAD);
        for (run, _) in runs.iter_mut().zip(&ready).filter(|(_, r)| **r == Some(true)) {
            if let Ok(Running { stdin: Some(stdin), .. }) = run {
                let _ = stdin.write_all(go.as_bytes()).and_then(|_| stdin.flush());
            }
        }
    }
    // A run still waiting for a go (Ctrl-C came first) reads the end of its input and stops.
    for run in runs.iter_mut().flatten() {
        run.stdin = None;
    }
    runs.into_iter()
        .map(|run| {
            let mut run = run?;
            let status = wait_child(&mut run.child);
            let _ = run.pump.join();
            status
        })
        .collect()
}
