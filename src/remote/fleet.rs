//! The coordinator's side: the ssh sessions to the client hosts, the handshake (versions,
//! clocks), the common start, and the run's messages turned back into the driver's events
//! and one merged result.

use super::merge::{self, Intervals};
use super::{unix_ns, ClientRow, ClientsSpec, FromAgent, Job, ServerTransactions, Shard, ToAgent, PROTOCOL};
use crate::driver::{process_cpu_seconds, Event, FromStart, IntervalSample, Pacing, RunResult};
use crate::targets::{BuildMeta, Database};
use crate::workloads::WorkloadSpec;
use anyhow::{bail, Result};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a host may take to answer its ssh session with a hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// Pings per host; the one with the shortest round trip sets the clock offset.
const PINGS: usize = 5;
/// Between the start order and the start itself, beyond the slowest round trip.
const START_LEAD: Duration = Duration::from_millis(500);

/// What the coordinator hears from host `i`.
enum Heard {
    Said(FromAgent),
    /// The session ended (or sent something that is not the protocol).
    Gone(String),
}

struct Client {
    host: String,
    ssh: Child,
    stdin: Mutex<ChildStdin>,
    /// What ssh (and the agent) wrote to stderr: the cause when a session ends.
    stderr: Arc<Mutex<String>>,
    cores: usize,
    offset_ns: i64,
    rtt_ns: u64,
}

impl Client {
    fn send(&self, msg: &ToAgent) -> Result<()> {
        let line = serde_json::to_string(msg).expect("messages serialize");
        let mut stdin = self.stdin.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(stdin, "{line}").and_then(|_| stdin.flush())?;
        Ok(())
    }

    /// The last lines ssh wrote to stderr, for an error.
    fn said(&self) -> String {
        let all = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let tail: Vec<&str> = all.lines().rev().take(3).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("; ")
    }
}

/// Every host's messages, in one channel; what one host said while another's answer was
/// awaited waits in its own queue.
struct Inbox {
    rx: mpsc::Receiver<(usize, Heard)>,
    waiting: Vec<VecDeque<Heard>>,
}

impl Inbox {
    /// The next message from host `only`, or from any host.
    fn next(&mut self, only: Option<usize>, timeout: Duration) -> Result<(usize, Heard), RecvTimeoutError> {
        let queued = match only {
            Some(i) => self.waiting[i].pop_front().map(|h| (i, h)),
            None => (0..self.waiting.len()).find_map(|i| self.waiting[i].pop_front().map(|h| (i, h))),
        };
        if let Some(heard) = queued {
            return Ok(heard);
        }
        let until = Instant::now() + timeout;
        loop {
            let (i, heard) = self.rx.recv_timeout(until.saturating_duration_since(Instant::now()))?;
            match only {
                Some(j) if j != i => self.waiting[i].push_back(heard),
                _ => return Ok((i, heard)),
            }
        }
    }
}

/// The client hosts of a run, connected and handshaken; the sessions end when it drops.
pub struct Fleet {
    clients: Vec<Client>,
    inbox: Mutex<Inbox>,
    workload: WorkloadSpec,
}

impl Fleet {
    /// Starts `dbvs agent` on every host over ssh and checks that each runs this version
    /// of dbvs; measures each host's clock against this one. `db` is the run's database,
    /// which the hosts must be able to reach.
    pub fn connect(spec: &ClientsSpec, workload: &WorkloadSpec, db: &dyn Database) -> Result<Self> {
        reachable(db)?;
        let ssh = crate::sys::require("ssh", "openssh-client")?;
        let (tx, rx) = mpsc::channel();
        let mut clients = Vec::new();
        for (i, host) in spec.hosts.iter().enumerate() {
            clients.push(start(&ssh, spec, host, i, tx.clone())?);
        }
        let inbox = Inbox { rx, waiting: clients.iter().map(|_| VecDeque::new()).collect() };
        let mut fleet = Self { clients, inbox: Mutex::new(inbox), workload: workload.clone() };
        for i in 0..fleet.clients.len() {
            let host = fleet.clients[i].host.clone();
            let cores = fleet.hello(i, &spec.dbvs).map_err(|e| anyhow::anyhow!("client host {host}: {e:#}"))?;
            let (offset_ns, rtt_ns) = fleet.clock(i)?;
            let c = &mut fleet.clients[i];
            (c.cores, c.offset_ns, c.rtt_ns) = (cores, offset_ns, rtt_ns);
        }
        Ok(fleet)
    }

    /// The next message from host `i` (the handshake is one host at a time).
    fn next_from(&self, i: usize, timeout: Duration) -> Result<FromAgent> {
        let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        match inbox.next(Some(i), timeout) {
            Ok((_, Heard::Said(msg))) => Ok(msg),
            Ok((_, Heard::Gone(why))) => bail!("{why}"),
            Err(_) => bail!("no answer in {} s", timeout.as_secs()),
        }
    }

    /// Host `i`'s hello, checked; returns its cores.
    fn hello(&self, i: usize, dbvs: &str) -> Result<usize> {
        let c = &self.clients[i];
        let msg = self.next_from(i, HELLO_TIMEOUT).map_err(|e| {
            // Let ssh's stderr reader catch up with the session's end.
            std::thread::sleep(Duration::from_millis(200));
            let said = c.said();
            if said.contains("not found") || said.contains("No such file") {
                anyhow::anyhow!(
                    "'{dbvs}' is not on it ({said}): install the same dbvs there, or name it with --client-dbvs PATH"
                )
            } else {
                anyhow::anyhow!("cannot start dbvs there over ssh ({e:#}): {said}")
            }
        })?;
        match msg {
            FromAgent::Hello { version, protocol, .. } if protocol != PROTOCOL || version != super::version() => bail!(
                "it runs dbvs {version} (protocol {protocol}), this is dbvs {} (protocol {PROTOCOL}): install the same \
                 version on every client host",
                super::version()
            ),
            FromAgent::Hello { cores, .. } => Ok(cores),
            other => bail!("it did not start with a hello but with {other:?}"),
        }
    }

    /// Host `i`'s clock minus this one's, and the round trip it was measured over.
    fn clock(&self, i: usize) -> Result<(i64, u64)> {
        let c = &self.clients[i];
        let mut best = (0i64, u64::MAX);
        for _ in 0..PINGS {
            let t0 = unix_ns();
            c.send(&ToAgent::Ping)?;
            let theirs = match self.next_from(i, HELLO_TIMEOUT)? {
                FromAgent::Pong { unix_ns } => unix_ns,
                other => bail!("client host {} answered a ping with {other:?}", c.host),
            };
            let t1 = unix_ns();
            let rtt = t1.saturating_sub(t0);
            if rtt < best.1 {
                best = (theirs as i64 - ((t0 as i128 + t1 as i128) / 2) as i64, rtt);
            }
        }
        Ok(best)
    }

    /// Drives the run from the client hosts: each gets its slice of the workers, all start
    /// at one instant, and their intervals and results come back merged. The observer
    /// hears the events a local run's would. A host lost on the way fails the run, and
    /// then nothing any host counted is reported.
    pub fn drive(
        &self,
        db: &dyn Database,
        meta: &BuildMeta,
        pacing: &Pacing,
        ops: &[&str],
        observe: &mut dyn FnMut(Event),
    ) -> RunResult {
        match self.try_drive(db, meta, pacing, ops, observe) {
            Ok(result) => result,
            Err(e) => {
                self.stop_all();
                merge::failed(format!("{e:#}"), ops)
            }
        }
    }

    fn try_drive(
        &self,
        db: &dyn Database,
        meta: &BuildMeta,
        pacing: &Pacing,
        ops: &[&str],
        observe: &mut dyn FnMut(Event),
    ) -> Result<RunResult> {
        let shares = shares(pacing.threads, self.clients.len());
        let database = db.client_env()?;
        let mut first = 0;
        for (c, &threads) in self.clients.iter().zip(&shares) {
            let job = Job {
                workload: self.workload.clone(),
                database: database.clone(),
                meta: meta.clone(),
                pacing: Pacing { threads, ..pacing.clone() },
                first_worker: first,
            };
            first += threads;
            c.send(&ToAgent::Job(Box::new(job)))?;
        }
        // Connecting takes the ramp-up (threads / ramp rate) and then some.
        let ramp = Duration::from_secs_f64(pacing.threads as f64 / pacing.ramp_rate);
        self.all_ready(ramp + HELLO_TIMEOUT)?;
        let before = server_transactions(db).ok();
        let slowest = self.clients.iter().map(|c| c.rtt_ns).max().unwrap_or(0);
        let at = unix_ns() + START_LEAD.as_nanos() as u64 + slowest;
        for c in &self.clients {
            c.send(&ToAgent::Start { at_unix_ns: (at as i64 + c.offset_ns) as u64 })?;
        }
        crate::interrupt::sleep(Duration::from_nanos(at.saturating_sub(unix_ns())));
        let (shards, intervals, cpu_pct) = self.follow(pacing, observe)?;
        let rows = self.clients.iter().zip(&shares).zip(&shards).map(|((c, &workers), s)| row(c, workers, s)).collect();
        let mut result = merge::result(shards, rows, intervals, cpu_pct, ops)?;
        if let (Some(before), Some(remote)) = (before, &mut result.remote) {
            remote.server = counted_since(db, before, &result.from_start);
        }
        Ok(result)
    }

    /// Waits until every host's workers are connected.
    fn all_ready(&self, timeout: Duration) -> Result<()> {
        let mut ready = vec![false; self.clients.len()];
        let until = Instant::now() + timeout;
        while !ready.iter().all(|r| *r) {
            let (i, msg) = self.hear(until.saturating_duration_since(Instant::now()), &|_| false)?;
            match msg {
                FromAgent::Ready => ready[i] = true,
                FromAgent::Failed { cause } => bail!("client host {}: {cause}", self.clients[i].host),
                other => bail!("client host {} sent {other:?} before it was ready", self.clients[i].host),
            }
        }
        Ok(())
    }

    /// The next message from any host; a lost host is an error naming it, unless it is
    /// `finished` (an agent ends its session after its result).
    fn hear(&self, timeout: Duration, finished: &dyn Fn(usize) -> bool) -> Result<(usize, FromAgent)> {
        let until = Instant::now() + timeout;
        let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match inbox.next(None, until.saturating_duration_since(Instant::now())) {
                Ok((i, Heard::Said(msg))) => return Ok((i, msg)),
                Ok((i, Heard::Gone(_))) if finished(i) => {}
                Ok((i, Heard::Gone(why))) => {
                    std::thread::sleep(Duration::from_millis(200));
                    let c = &self.clients[i];
                    bail!(
                        "client host {} was lost ({why}; ssh said: {}); nothing the run counted is reported",
                        c.host,
                        c.said()
                    )
                }
                Err(RecvTimeoutError::Timeout) => return Err(Silence.into()),
                Err(RecvTimeoutError::Disconnected) => bail!("every client host's session ended"),
            }
        }
    }

    /// Follows the run to every host's result, passing the merged events on; returns the
    /// results, the window's merged intervals and this process's CPU over the window (% of
    /// its cores).
    fn follow(
        &self,
        pacing: &Pacing,
        observe: &mut dyn FnMut(Event),
    ) -> Result<(Vec<Shard>, Vec<IntervalSample>, f64)> {
        let n = self.clients.len();
        let mut shards: Vec<Option<Shard>> = (0..n).map(|_| None).collect();
        let mut intervals = Intervals::new(n);
        let (mut started, mut ended) = (0, 0);
        let start = Instant::now();
        let mut last_heard = vec![Instant::now(); n];
        // A host may be quiet for a report interval; beyond this it is hung.
        let quiet = 3 * pacing.report_interval + Duration::from_secs(20);
        let mut stopping = false;
        let mut window = (None, None);
        while shards.iter().any(Option::is_none) {
            if crate::interrupt::interrupted() && !stopping {
                stopping = true;
                self.stop_all();
            }
            let (i, msg) = match self.hear(Duration::from_millis(100), &|i| shards[i].is_some()) {
                Ok(heard) => heard,
                Err(e) if e.is::<Silence>() => {
                    tick(start, pacing, observe);
                    if let Some(i) = (0..n).find(|&i| shards[i].is_none() && last_heard[i].elapsed() > quiet) {
                        bail!(
                            "client host {} was silent for {} s; nothing the run counted is reported",
                            self.clients[i].host,
                            quiet.as_secs()
                        );
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            last_heard[i] = Instant::now();
            match msg {
                FromAgent::Interval { sample, latencies, warmup } => {
                    if let Some((sample, latencies)) = intervals.add(i, warmup, sample, latencies.histogram()?) {
                        observe(Event::Interval { sample: &sample, latencies: &latencies, warmup });
                    }
                }
                FromAgent::WindowStart => {
                    started += 1;
                    if started == 1 {
                        window.0 = Some((Instant::now(), process_cpu_seconds()));
                        observe(Event::WindowStart { after_warmup: !pacing.warmup.is_zero() });
                    }
                }
                FromAgent::WindowEnd => {
                    ended += 1;
                    if ended == n {
                        window.1 = Some((Instant::now(), process_cpu_seconds()));
                        observe(Event::WindowEnd);
                    }
                }
                FromAgent::Done(shard) => shards[i] = Some(*shard),
                other => bail!("client host {} sent {other:?} during the run", self.clients[i].host),
            }
        }
        if started > 0 && ended < n {
            window.1 = Some((Instant::now(), process_cpu_seconds()));
            observe(Event::WindowEnd);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let cpu_pct = match window {
            (Some((t0, c0)), Some((t1, c1))) if t1 > t0 => 100.0 * (c1 - c0) / (t1 - t0).as_secs_f64() / cores,
            _ => 0.0,
        };
        Ok((shards.into_iter().flatten().collect(), intervals.measured, cpu_pct))
    }

    fn stop_all(&self) {
        for c in &self.clients {
            let _ = c.send(&ToAgent::Stop);
        }
    }
}

/// Refuses a database the client hosts cannot reach: SQLite inside this process, or a
/// server on this machine's loopback.
fn reachable(db: &dyn Database) -> Result<()> {
    let env = db.client_env()?;
    let host = env.iter().find(|(k, _)| k == "PGHOST" || k == "MYSQL_HOST").map(|(_, v)| v.as_str());
    match host {
        None => bail!(
            "--clients drives a PostgreSQL or MariaDB server; a SQLite database lives inside the process that runs it"
        ),
        Some(h @ ("127.0.0.1" | "localhost" | "::1")) => bail!(
            "--clients: the client hosts cannot reach a server at {h}, this machine's loopback; give the address they \
             reach it at, e.g. postgres://USER@10.0.0.5/DB (a managed server listens on loopback only)"
        ),
        Some(_) => Ok(()),
    }
}

/// The server's transaction counters (committed, rolled back), from a connection of
/// their own (PostgreSQL's statistics are a snapshot per transaction).
fn server_transactions(db: &dyn Database) -> Result<(u64, u64)> {
    crate::targets::sql::server_transactions(&mut db.connect()?)
}

/// What the server counted since `before`, beside what the clients counted. A server
/// publishes its counts a moment after a session ends (PostgreSQL's backends report
/// their statistics as they exit), so this waits up to a few seconds for the count to
/// reach the clients'.
fn counted_since(db: &dyn Database, before: (u64, u64), clients: &FromStart) -> Option<ServerTransactions> {
    let until = Instant::now() + Duration::from_secs(5);
    let mut conn = db.connect().ok()?;
    let server_wide = conn.engine() == crate::targets::Engine::Mariadb;
    loop {
        let now = crate::targets::sql::server_transactions(&mut conn).ok()?;
        let (commits, rollbacks) = (now.0.saturating_sub(before.0), now.1.saturating_sub(before.1));
        if commits >= clients.committed || Instant::now() > until {
            return Some(ServerTransactions {
                commits,
                rollbacks,
                client_committed: clients.committed,
                client_rolled_back: clients.rolled_back,
                server_wide,
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What host `c`, which ran `workers` of the run's workers, did.
fn row(c: &Client, workers: usize, s: &Shard) -> ClientRow {
    ClientRow {
        host: c.host.clone(),
        workers,
        units: s.measured.units,
        cpu_pct: s.process_cpu_pct,
        cores: c.cores,
        clock_offset_ms: c.offset_ns as f64 / 1e6,
        rtt_ms: c.rtt_ns as f64 / 1e6,
    }
}

/// No message came in time (not an error by itself while a run goes on).
#[derive(Debug, thiserror::Error)]
#[error("no message from the client hosts")]
struct Silence;

/// The progress a local run's controller would report, by this host's clock.
fn tick(start: Instant, pacing: &Pacing, observe: &mut dyn FnMut(Event)) {
    let et = start.elapsed();
    let warmup = et < pacing.warmup;
    let (done, of) = match warmup {
        true => (et, pacing.warmup),
        false => (et - pacing.warmup, pacing.duration),
    };
    observe(Event::Tick { done: done.as_secs().min(of.as_secs()), of: of.as_secs(), warmup });
}

impl Drop for Fleet {
    /// Ends every session: the agents stop when their stdin closes.
    fn drop(&mut self) {
        for c in &mut self.clients {
            let _ = c.ssh.kill();
            let _ = c.ssh.wait();
        }
    }
}

/// Starts host `i`'s session; its stdout is read into `tx` and its stderr kept.
fn start(
    ssh: &std::path::Path,
    spec: &ClientsSpec,
    host: &str,
    i: usize,
    tx: mpsc::Sender<(usize, Heard)>,
) -> Result<Client> {
    let mut cmd = Command::new(ssh);
    if let Some(config) = &spec.ssh_config {
        cmd.arg("-F").arg(config);
    }
    // Keep-alives find a dead network in about 6 s; BatchMode never prompts.
    cmd.args(["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
    cmd.args(["-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3", host]);
    cmd.arg(format!("{} agent", shell_quote(&spec.dbvs)));
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Out of the terminal's process group: Ctrl-C reaches this process, which stops the
    // hosts in order and keeps what they measured, not ssh, which would just drop them.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().map_err(|e| anyhow::anyhow!("cannot run {}: {e}", ssh.display()))?;
    let (stdin, stdout, mut err) =
        (child.stdin.take().expect("piped"), child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let stderr = Arc::new(Mutex::new(String::new()));
    let kept = Arc::clone(&stderr);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut s = kept.lock().unwrap_or_else(|p| p.into_inner());
            s.push_str(&String::from_utf8_lossy(&buf[..n]));
            // Only the end explains anything.
            if s.len() > 16 * 1024 {
                let cut = s.len() - 8 * 1024;
                let cut = (cut..s.len()).find(|&c| s.is_char_boundary(c)).unwrap_or(s.len());
                s.drain(..cut);
            }
        }
    });
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let heard = match line.map(|l| serde_json::from_str::<FromAgent>(&l).map_err(|e| (e, l))) {
                Ok(Ok(msg)) => Heard::Said(msg),
                Ok(Err((e, l))) => {
                    let l: String = l.chars().take(120).collect();
                    Heard::Gone(format!("it sent '{l}', which is not dbvs's protocol ({e})"))
                }
                Err(e) => Heard::Gone(format!("its session failed: {e}")),
            };
            let gone = matches!(heard, Heard::Gone(_));
            if tx.send((i, heard)).is_err() || gone {
                return;
            }
        }
        let _ = tx.send((i, Heard::Gone("its session ended".into())));
    });
    Ok(Client { host: host.into(), ssh: child, stdin: Mutex::new(stdin), stderr, cores: 0, offset_ns: 0, rtt_ns: 0 })
}

/// `s` as one word for the remote shell ssh hands the command to.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `threads` split over `hosts` as evenly as can be, the first hosts taking one more.
fn shares(threads: usize, hosts: usize) -> Vec<usize> {
    (0..hosts).map(|h| threads / hosts + usize::from(h < threads % hosts)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_split_evenly_over_hosts() {
        assert_eq!(shares(4, 2), vec![2, 2]);
        assert_eq!(shares(5, 3), vec![2, 2, 1]);
        assert_eq!(shares(2, 2), vec![1, 1]);
    }

    #[test]
    fn remote_words_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("/opt/my dbvs"), "'/opt/my dbvs'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
