//! Helpers for tests that drive the real `dbvs` binary.

use std::path::Path;
use std::process::{Command, Output};

/// `dbvs` with the results store and the lease directory in Cargo's scratch directory for
/// tests (under target/, so nothing is left in /tmp), never the user's own.
/// Lines a running dbvs has yet to print on stderr.
pub type StderrLines = std::io::Lines<std::io::BufReader<std::process::ChildStderr>>;

/// Starts dbvs with `args` and reads its stderr until the measured window begins (the
/// "Stats reset" line), for tests that break something mid-run.
pub fn spawn_into_window<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (std::process::Child, StderrLines) {
    use std::io::BufRead;
    let (quiet, piped) = (std::process::Stdio::null(), std::process::Stdio::piped());
    let mut child = command().args(args).stdout(quiet).stderr(piped).spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    while !seen.contains("Stats reset") {
        seen += &lines.next().expect("the run reaches its window").unwrap();
    }
    (child, lines)
}

pub fn command() -> Command {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let mut c = Command::new(env!("CARGO_BIN_EXE_dbvs"));
    c.env("DBVS_RESULTS", scratch.join(format!("dbvs-test-results-{}.db", std::process::id())));
    c.env("DBVS_LEASES", scratch.join("leases"));
    c
}

pub fn dbvs(args: &[&str]) -> Output {
    command().args(args).output().expect("dbvs runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs dbvs and asserts success, showing its output otherwise.
pub fn ok(args: &[&str]) -> Output {
    let o = dbvs(args);
    assert!(o.status.success(), "dbvs {args:?} failed:\n{}\n{}", stdout(&o), stderr(&o));
    o
}

pub fn target(dir: &Path, name: &str) -> String {
    format!("sqlite:{}", dir.join(name).display())
}

pub fn count(c: &rusqlite::Connection, table: &str) -> i64 {
    c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap()
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A scratch directory a server's own system user (postgres, mysql) can enter.
pub fn reachable_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Starts dbvs with `args` and `--metrics-addr` on a free local port, its output dropped;
/// returns the port and the child (see `scrape_until`).
pub fn serving(args: &[&str]) -> (u16, std::process::Child) {
    let port = free_port();
    let child = command()
        .args(args)
        .arg("--metrics-addr")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    (port, child)
}

/// A free local port for a test's listener.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The body of `GET /metrics` on `port`, once it answers with a line containing `needle`
/// (polled while `child` runs); panics with what it last saw otherwise.
pub fn scrape_until(port: u16, needle: &str, child: &mut std::process::Child) -> String {
    use std::io::{Read, Write};
    let mut last = String::new();
    for _ in 0..600 {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
            last.clear();
            let _ = s.read_to_string(&mut last);
            if last.lines().any(|l| l.contains(needle)) {
                return last;
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("no '{needle}' served on port {port}; last scrape:\n{last}");
}

// Studies (tests/study.rs, tests/verdicts.rs).

/// Tests whose assertions rest on a measured figure (a ratio, a rate, a time, a capacity), or
/// that look at or change what the whole machine shares (the page cache, every process or
/// mount, control groups), take their turn alone (`turn`): anything beside them on a small
/// machine would make their numbers the neighbours'. The rest, studies too when they check
/// what their own output holds and not how fast it ran, run beside each other (`share`),
/// never beside a turn.
///
/// A test that takes a turn lives in its file's `mod alone`, so `scripts/test` can run the
/// shares first, beside each other (`--skip ::alone::`), then the turns one by one
/// (`::alone::`, one test thread): a turn waiting among the shares would hold a test thread
/// idle, and the shares would run short of threads. `turn` and `share` check where they are
/// called from (libtest names each test's thread after the test).
///
/// Run all at once (`cargo test`), the lock keeps them apart still: shares go first (a turn
/// waits until no share runs, and a share never waits for a turn that is only waiting), up
/// to [`SHARES_AT_ONCE`] beside each other. (std's RwLock does the opposite: a waiting writer
/// holds back every new reader, and the shares seldom overlapped.)
///
/// The lock, not libtest, orders the shares: `scripts/test` starts every test at once (libtest
/// starts them in name order, which put the longest near the end, each then running on with
/// the machine half idle), and a share that takes a minute or more (`long_share`) goes before
/// every other share waiting.
static TURNS: Turns = Turns {
    state: std::sync::Mutex::new(State { shares: 0, turn: false, long_waiting: 0 }),
    changed: std::sync::Condvar::new(),
};

struct Turns {
    state: std::sync::Mutex<State>,
    changed: std::sync::Condvar,
}

struct State {
    shares: usize,
    turn: bool,
    long_waiting: usize,
}

impl Turns {
    fn wait_until(&self, free: impl Fn(&State) -> bool) -> std::sync::MutexGuard<'_, State> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.changed.wait_while(state, |s| !free(s)).unwrap_or_else(|p| p.into_inner())
    }
}

/// Held while a test runs; see [`TURNS`].
pub struct Held {
    alone: bool,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut state = TURNS.state.lock().unwrap_or_else(|p| p.into_inner());
        if self.alone {
            state.turn = false;
        } else {
            state.shares -= 1;
        }
        TURNS.changed.notify_all();
    }
}

pub fn turn() -> Held {
    assert!(in_alone(), "a test that takes a turn belongs in its file's `mod alone` (see common::TURNS)");
    TURNS.wait_until(|s| !s.turn && s.shares == 0).turn = true;
    Held { alone: true }
}

/// Whether the calling test is in a `mod alone`.
fn in_alone() -> bool {
    std::thread::current().name().is_some_and(|n| n.contains("::alone::"))
}

/// Three shares keep this two-core machine busy while their servers start and their runs
/// wait, and leave each server the CPU to start within its timeout.
const SHARES_AT_ONCE: usize = 3;

pub fn share() -> Held {
    assert!(!in_alone(), "a test that shares the machine does not belong in `mod alone` (see common::TURNS)");
    TURNS.wait_until(|s| !s.turn && s.shares < SHARES_AT_ONCE && s.long_waiting == 0).shares += 1;
    Held { alone: false }
}

/// A share that takes a minute or more even on a quiet machine: it starts before the shorter
/// shares waiting, so that none of the longest is left running alone at the end.
pub fn long_share() -> Held {
    assert!(!in_alone(), "a test that shares the machine does not belong in `mod alone` (see common::TURNS)");
    TURNS.state.lock().unwrap_or_else(|p| p.into_inner()).long_waiting += 1;
    let mut state = TURNS.wait_until(|s| !s.turn && s.shares < SHARES_AT_ONCE);
    state.long_waiting -= 1;
    state.shares += 1;
    Held { alone: false }
}

pub fn write_study(dir: &Path, body: &str) -> String {
    let p = dir.join("study.toml");
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

/// The run records of `variant` in a study's output: `runs/blockNN-A+B-WORKLOAD.json` holds
/// an interleaved run's records in the order its name gives the variants.
pub fn records(out: &Path, variant: &str) -> Vec<serde_json::Value> {
    // File names hold the variants' names as slugs (`sys::names::slug`).
    let variant = dbvs::sys::names::slug(variant);
    let runs = out.join("runs");
    let mut mine = vec![];
    for f in files_in(&runs).iter().filter(|f| f.starts_with("block") && !f.ends_with(".spec.json")) {
        let names: Vec<&str> = f.split('-').nth(1).unwrap().split('+').collect();
        let Some(i) = names.iter().position(|n| *n == variant) else { continue };
        let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(runs.join(f)).unwrap()).unwrap();
        mine.push(match record {
            serde_json::Value::Array(mut all) => all.remove(i),
            one => one,
        });
    }
    mine
}

pub fn report(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

pub const SMALL: &str = r#"
[workload]
name = "ds2"
size = "1MB"
threads = 1
duration = "1.5s"
warmup = "0.3s"
"#;

/// [`SMALL`] for variants taking turns: each measures its own `duration` in its turns, so a
/// shorter one keeps a block of two as long as one of SMALL's runs.
const SMALL_TAKING_TURNS: &str = r#"
[workload]
name = "ds2"
size = "1MB"
threads = 1
duration = "0.75s"
warmup = "0.3s"
"#;

/// A study of busy-wait variants (`(name, busy-wait per order, extra keys)`, the first the
/// baseline), interleaved in 100 ms slices over `blocks` blocks, with `head` as more
/// top-level keys.
pub fn busy_waits(name: &str, blocks: usize, head: &str, variants: &[(&str, &str, &str)]) -> String {
    let mut body = format!(
        "name = \"{name}\"\nblocks = {{ min = {blocks}, max = {blocks} }}\ninterleave = \"100ms\"\n{head}\
         {SMALL_TAKING_TURNS}\n"
    );
    for (v, wait, extra) in variants {
        body += &format!("[[variants]]\nname = \"{v}\"\nkind = \"delay\"\nper_transaction = \"{wait}\"\n{extra}");
    }
    body
}
