//! `dbvs agent`: a client host's side of a remote run. Started by the coordinator over ssh,
//! it reads [`ToAgent`] lines on stdin and answers with [`FromAgent`] lines on stdout;
//! it has no flags, writes no files and stops when its stdin closes.

use super::{unix_ns, FromAgent, Job, Shard, ToAgent, WireHistogram, PROTOCOL};
use crate::driver::{self, Event};
use crate::workloads::Workload;
use anyhow::{Context, Result};
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The agent's stdout, shared by the driver's thread and the pinging reader.
#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    /// Sends one message; a coordinator that went away stops the agent.
    fn send(&self, msg: &FromAgent) {
        let line = serde_json::to_string(msg).expect("messages serialize");
        let mut out = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            crate::interrupt::request();
        }
    }
}

pub fn main() -> Result<ExitCode> {
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    out.send(&FromAgent::Hello { version: super::version(), protocol: PROTOCOL, cores });
    let orders = listen(out.clone());
    let job = match orders.recv() {
        Ok(ToAgent::Job(job)) => job,
        // The coordinator went away (or refused this host) before giving a job.
        _ => return Ok(ExitCode::SUCCESS),
    };
    match open(&job) {
        Ok((db, workload)) => {
            let shard = drive(&job, db.as_ref(), workload.as_ref(), &orders, &out);
            out.send(&FromAgent::Done(Box::new(shard)));
        }
        Err(e) => out.send(&FromAgent::Failed { cause: format!("{e:#}") }),
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads the coordinator's lines on a thread of their own: pings are answered at once
/// (so the clock estimate does not wait on the driver), a stop or a closed stdin raises
/// the interrupt flag the driver polls, and the rest is handed on.
fn listen(out: Out) -> mpsc::Receiver<ToAgent> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match serde_json::from_str::<ToAgent>(&line) {
                Ok(ToAgent::Ping) => out.send(&FromAgent::Pong { unix_ns: unix_ns() }),
                Ok(ToAgent::Stop) => break,
                Err(e) => {
                    out.send(&FromAgent::Failed { cause: format!("it could not read the coordinator's message: {e}") });
                    break;
                }
                Ok(order) => {
                    if tx.send(order).is_err() {
                        break;
                    }
                }
            }
        }
        crate::interrupt::request();
    });
    rx
}

/// The run's database, reached from this host, and the workload.
fn open(job: &Job) -> Result<(Box<dyn crate::targets::Database>, Box<dyn Workload>)> {
    let db = crate::targets::from_client_env(&job.database).context("the run's database")?;
    Ok((db, job.workload.driven()?))
}

/// Drives the host's workers: every interval and the window's ends are sent as they
/// happen; the start waits for the coordinator's instant.
fn drive(
    job: &Job,
    db: &dyn crate::targets::Database,
    w: &dyn Workload,
    orders: &mpsc::Receiver<ToAgent>,
    out: &Out,
) -> Shard {
    let pacing = driver::Pacing { first_worker: job.first_worker, ..job.pacing.clone() };
    let make_worker = |i| w.worker(db, &job.meta, i);
    let mut gate = || {
        out.send(&FromAgent::Ready);
        match orders.recv() {
            Ok(ToAgent::Start { at_unix_ns }) => {
                crate::interrupt::sleep(Duration::from_nanos(at_unix_ns.saturating_sub(unix_ns())));
            }
            _ => crate::interrupt::request(),
        }
    };
    let result = driver::run_gated(&pacing, w.operations(), &make_worker, &mut gate, &mut |event| match event {
        Event::Interval { sample, latencies, warmup } => {
            out.send(&FromAgent::Interval { sample: sample.clone(), latencies: WireHistogram::of(latencies), warmup })
        }
        Event::WindowStart { .. } => out.send(&FromAgent::WindowStart),
        Event::WindowEnd => out.send(&FromAgent::WindowEnd),
        Event::Tick { .. } => {}
    });
    Shard {
        status: result.status,
        elapsed_s: result.elapsed_s,
        unit_latency: WireHistogram::of(&result.latencies.unit),
        op_latency: result.latencies.ops.iter().map(WireHistogram::of).collect(),
        measured: result.measured,
        from_start: result.from_start,
        process_cpu_pct: result.process_cpu_pct,
    }
}
