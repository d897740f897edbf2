//! The `command` workload: the benchmarks users already have (pgbench, sysbench) run by dbvs
//! against each run's fresh copy, their figure parsed from what they print, in runs and in
//! studies with verdicts.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const PGBENCH_SETUP: &str = "pgbench -i -q -s $DBVS_SIZE";
const PGBENCH: &str = "pgbench -n -M prepared -c $DBVS_THREADS -j $DBVS_THREADS -T $DBVS_DURATION";
const PGBENCH_TPS: &str = r"tps = ([0-9.]+)";

fn record(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn pgbench_runs_on_a_fresh_copy_and_its_tps_is_the_measure() {
    let _turn = share();
    let dir = reachable_tempdir();
    let data = dir.path().join("pgdata");
    let json = dir.path().join("r.json");
    let (data_s, json_s) = (data.to_str().unwrap(), json.to_str().unwrap());
    let run = |json: &str| {
        ok(&[
            "run",
            "--target",
            "managed-postgres",
            "--data-dir",
            data_s,
            "--workload",
            "command",
            "--setup",
            PGBENCH_SETUP,
            "--size",
            "1",
            "--command",
            PGBENCH,
            "--regex",
            PGBENCH_TPS,
            "--measure",
            "tps",
            "--unit",
            "tps",
            "--threads",
            "2",
            "--duration",
            "2s",
            "--repeat",
            "2",
            "--json",
            json,
            "--no-store",
        ])
    };
    let o = run(json_s);
    let r = record(&json);
    assert_eq!(r["status"], "completed", "{}", stderr(&o));
    assert_eq!((r["headline"]["name"].as_str(), r["headline"]["unit"].as_str()), (Some("tps"), Some("tps")));
    assert_eq!(r["headline"]["higher_is_better"], true);
    let figures: Vec<f64> = r["metrics"]["figures"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(figures.len(), 2, "{}", r["metrics"]);
    let mean = r["headline"]["value"].as_f64().unwrap();
    assert!((mean - (figures[0] + figures[1]) / 2.0).abs() < 1e-9 && mean > 20.0, "{figures:?} {mean}");
    assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);
    // pgbench saw what dbvs asked for: two clients for two seconds, each time.
    let err = stderr(&o);
    assert_eq!(err.matches("number of clients: 2").count(), 2, "{err}");
    assert!(err.contains("duration: 2 s"), "{err}");
    // The build ran once: the second run finds the pristine database and runs on a copy.
    let again = run(json_s);
    assert!(!stderr(&again).contains("setup output"), "{}", stderr(&again));
    assert_eq!(record(&json)["status"], "completed");
    assert!(!data.join("postmaster.pid").exists(), "the managed server must be stopped after the run");
}

#[test]
fn sysbench_oltp_read_write_runs_on_a_managed_mariadb() {
    let _turn = share();
    let dir = reachable_tempdir();
    let data = dir.path().join("mydata");
    let json = dir.path().join("r.json");
    let sysbench = |action: &str| {
        format!(
            "sysbench oltp_read_write --db-driver=mysql --mysql-host=$MYSQL_HOST --mysql-port=$MYSQL_TCP_PORT \
             --mysql-user=$MYSQL_USER --mysql-db=$MYSQL_DATABASE --tables=1 --table-size=2000 {action}"
        )
    };
    let o = ok(&[
        "run",
        "--target",
        "managed-mariadb",
        "--data-dir",
        data.to_str().unwrap(),
        "--workload",
        "command",
        "--setup",
        &sysbench("prepare"),
        "--command",
        &sysbench("--threads=$DBVS_THREADS --time=$DBVS_DURATION run"),
        "--regex",
        r"transactions:\s+\d+\s+\(([0-9.]+) per sec",
        "--measure",
        "tps",
        "--unit",
        "tps",
        "--threads",
        "2",
        "--duration",
        "2s",
        "--json",
        json.to_str().unwrap(),
        "--no-store",
    ]);
    let r = record(&json);
    assert_eq!(r["status"], "completed", "{}", stderr(&o));
    assert!(r["headline"]["value"].as_f64().unwrap() > 5.0, "{}", r["headline"]);
    assert!(stderr(&o).contains("Number of threads: 2"), "{}", stderr(&o));
}

#[test]
fn a_failing_command_fails_the_run_with_its_words_and_bad_options_are_one_line() {
    let _turn = share();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = target(dir.path(), "cmd.db");
    let json = dir.path().join("r.json");
    // On SQLite the script gets the copy's path; it fails on purpose after printing.
    let failing =
        "test -f \"$DBVS_SQLITE_PATH\" && echo \"opened $DBVS_ENGINE\" && echo 'relation missing' >&2 && exit 4";
    let o = dbvs(&[
        "run",
        "--target",
        &target,
        "--workload",
        "command",
        "--command",
        failing,
        "--regex",
        "x",
        "--json",
        json.to_str().unwrap(),
        "--no-store",
    ]);
    assert!(!o.status.success());
    let r = record(&json);
    let cause = r["cause"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(cause.contains("exit status: 4") && cause.contains("relation missing"), "{cause}");
    // A figure the output lacks names the regex and quotes the output.
    let o = dbvs(&[
        "run",
        "--target",
        &target,
        "--workload",
        "command",
        "--command",
        "echo opened $DBVS_ENGINE",
        "--regex",
        r"tps = (\d+)",
        "--json",
        json.to_str().unwrap(),
        "--no-store",
    ]);
    assert!(!o.status.success());
    let cause = record(&json)["cause"].as_str().unwrap().to_string();
    assert!(cause.contains("tps = ") && cause.contains("opened sqlite"), "{cause}");
    for (args, needle) in [
        (vec!["--regex", "x"], "say what to run"),
        (vec!["--command", "true"], "regex ="),
        (vec!["--command", "true", "--regex", "("], "invalid"),
    ] {
        let mut all = vec!["run", "--target", &target, "--workload", "command", "--no-store"];
        all.extend(args);
        let o = dbvs(&all);
        let err = stderr(&o);
        assert!(!o.status.success() && err.trim_end().lines().count() == 1 && err.contains(needle), "{err}");
    }
}

// A command's processes never outlive dbvs, and a command is bounded in time and memory.

/// dbvs running a command on a SQLite database, killed (SIGKILL) if a test ends early.
struct Running {
    dbvs: std::process::Child,
    /// Where its stderr goes.
    log: std::path::PathBuf,
}

impl Running {
    /// Starts `dbvs run` of `script` for `duration`; its stderr goes to a file in `dir`.
    fn start(dir: &Path, script: &str, regex: &str, duration: &str) -> Running {
        let log = dir.join("dbvs.log");
        let json = dir.join("r.json");
        let dbvs = command()
            .args(["run", "--target", &target(dir, "cmd.db"), "--workload", "command", "--command", script])
            .args(["--regex", regex, "--duration", duration, "--warmup", "0s", "--json", json.to_str().unwrap()])
            .arg("--no-store")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Running { dbvs, log }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: signalling the dbvs process this test started.
        assert_eq!(unsafe { libc::kill(self.dbvs.id() as i32, signal) }, 0);
    }

    /// The pids a script wrote to `file`, once it has written `n` of them.
    fn pids_written(&mut self, file: &Path, n: usize) -> Vec<u32> {
        for _ in 0..1200 {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.len() >= n {
                return pids;
            }
            assert!(self.dbvs.try_wait().unwrap().is_none(), "dbvs ended early:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the command never wrote its pids:\n{}", self.stderr());
    }

    /// Waits for dbvs to exit, at most `limit`.
    fn exits_within(&mut self, limit: Duration) {
        let until = Instant::now() + limit;
        while self.dbvs.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "dbvs still runs after {limit:?}:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.dbvs.kill();
        let _ = self.dbvs.wait();
    }
}

/// Whether process `pid` runs: a zombie (dead, not yet reaped) does not.
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
}

/// The processes of `pids` that still run after `limit`.
fn survivors(pids: &[u32], limit: Duration) -> Vec<u32> {
    let until = Instant::now() + limit;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| running(*p)).collect();
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A script that writes its shell's pid and a background child's to `pids`, then waits.
fn with_a_child(pids: &Path, head: &str) -> String {
    let p = pids.display();
    format!("echo $$ > {p}; {head} sleep 1000 & echo $! >> {p}; wait")
}

/// The control group dbvs put `pid` in (as root), from /proc/PID/cgroup.
fn tree_group(pid: u32) -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':').skip(1);
        let (controllers, path) = (f.next()?, f.next()?);
        let hierarchy = controllers.split(',').next().unwrap_or("");
        path.contains("-tree-").then(|| Path::new("/sys/fs/cgroup").join(hierarchy).join(&path[1..]))
    })
}

fn as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_command_running_far_past_the_run_s_duration_fails_the_run_naming_the_overrun() {
    // Thirty seconds of waiting for the bound, on no figure of its own: a share.
    let _share = share();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let pids_file = dir.path().join("pids");
    let mut run = Running::start(dir.path(), &with_a_child(&pids_file, ""), "x", "1s");
    let pids = run.pids_written(&pids_file, 2);
    // Its bound is the run's 1 s and a 30 s margin.
    run.exits_within(Duration::from_secs(300));
    assert!(!run.dbvs.wait().unwrap().success());
    assert_eq!(survivors(&pids, Duration::from_secs(10)), Vec::<u32>::new());
    let r = record(&dir.path().join("r.json"));
    assert_eq!(r["status"], "failed", "{}", run.stderr());
    let cause = r["cause"].as_str().unwrap();
    let named = "the command ran past its bound of 31 s (0 s warm-up + the run's 1 s + 30 s margin)";
    assert!(cause.contains(named) && cause.contains("--duration"), "{cause}");
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    #[test]
    fn a_study_compares_variants_by_pgbench_tps() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let study = dir.path().join("pgbench.toml");
        std::fs::write(
            &study,
            format!(
                "name = \"pgbench-aa\"\nseed = 1\nblocks = {{ min = 2, max = 2 }}\n[target]\nengine = \"postgres\"\n\
                 [workload]\nname = \"command\"\nsetup = '{PGBENCH_SETUP}'\nsize = \"1\"\ncommand = '{PGBENCH}'\n\
                 regex = '{PGBENCH_TPS}'\nmeasure = \"tps\"\nunit = \"tps\"\nthreads = 2\nduration = \"2s\"\n\
                 [[variants]]\nname = \"plain\"\nkind = \"plain\"\n[[variants]]\nname = \"plain-again\"\nkind = \"plain\"\n"
            ),
        )
        .unwrap();
        let out = dir.path().join("out");
        ok(&["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        let report: Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        let tps = report["measures"].as_array().unwrap().iter().find(|m| m["measure"]["name"] == "tps");
        let tps = tps.unwrap_or_else(|| panic!("{}", report["measures"]));
        let c = &tps["comparisons"][0];
        assert!(c["estimate"]["ratio"].as_f64().unwrap() > 0.0, "{c}");
        assert_eq!(c["variant"], "plain-again", "{c}");
        assert!(!c["verdict"].is_null(), "{c}");
        assert!(std::fs::read_to_string(out.join("report.md")).unwrap().contains("tps"));
    }

    #[test]
    fn a_command_that_ignores_sigterm_is_killed_after_the_grace_period_when_dbvs_is_stopped() {
        let _turn = turn();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let pids_file = dir.path().join("pids");
        let mut run = Running::start(dir.path(), &with_a_child(&pids_file, "trap '' TERM;"), "x", "60s");
        let pids = run.pids_written(&pids_file, 2);
        if as_root() {
            assert!(tree_group(pids[1]).is_some(), "the command runs in a control group of its own");
        }
        run.signal(libc::SIGTERM);
        // The grace period is 5 s; the bound checks that the wait ends, not its speed.
        run.exits_within(Duration::from_secs(60));
        assert_eq!(survivors(&pids, Duration::from_secs(10)), Vec::<u32>::new(), "{}", run.stderr());
        let err = run.stderr();
        assert!(err.contains("the command outlived SIGTERM by 5 s: killing its processes (SIGKILL)"), "{err}");
    }

    #[test]
    fn a_second_sigterm_while_stopping_kills_the_command_at_once() {
        let _turn = turn();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let pids_file = dir.path().join("pids");
        let mut run = Running::start(dir.path(), &with_a_child(&pids_file, "trap '' TERM;"), "x", "60s");
        let pids = run.pids_written(&pids_file, 2);
        run.signal(libc::SIGTERM);
        // Within a second, a second signal is the first one seen twice (a study forwards it).
        std::thread::sleep(Duration::from_millis(2500));
        run.signal(libc::SIGTERM);
        run.exits_within(Duration::from_secs(60));
        assert_eq!(survivors(&pids, Duration::from_secs(10)), Vec::<u32>::new());
        let err = run.stderr();
        assert!(err.contains("asked again: killing the command's processes at once (SIGKILL)"), "{err}");
        assert!(!err.contains("outlived SIGTERM"), "{err}");
    }

    #[test]
    fn a_command_s_children_die_with_dbvs_killed_by_sigkill() {
        let _turn = turn();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let pids_file = dir.path().join("pids");
        let mut run = Running::start(dir.path(), &with_a_child(&pids_file, ""), "x", "60s");
        let pids = run.pids_written(&pids_file, 2);
        let group = tree_group(pids[1]);
        assert_eq!(group.is_some(), as_root(), "as root, the command runs in a control group of its own");
        run.dbvs.kill().unwrap();
        run.dbvs.wait().unwrap();
        // The watchdog kills the group at once; the bound is generous for a loaded machine.
        assert_eq!(survivors(&pids, Duration::from_secs(10)), Vec::<u32>::new(), "{}", run.stderr());
        if let Some(group) = group {
            let until = Instant::now() + Duration::from_secs(10);
            while group.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(!group.exists(), "the watchdog removes {}", group.display());
        }
    }

    #[test]
    fn a_command_printing_200_mb_leaves_dbvs_s_memory_small() {
        let _turn = turn();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        // After its output, the command idles, so the test reads dbvs's peak after all of it.
        let script = "yes | head -c 200000000; echo 'tps = 7'; sleep 2";
        let mut run = Running::start(dir.path(), script, r"tps = (\d+)", "120s");
        let mut peak_kb = 0;
        while run.dbvs.try_wait().unwrap().is_none() {
            let status = std::fs::read_to_string(format!("/proc/{}/status", run.dbvs.id())).unwrap_or_default();
            let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:")?.trim().strip_suffix(" kB")?.parse().ok());
            peak_kb = hwm.unwrap_or(peak_kb).max(peak_kb);
            std::thread::sleep(Duration::from_millis(50));
        }
        let r = record(&dir.path().join("r.json"));
        assert_eq!(r["status"], "completed", "{}", run.stderr());
        assert_eq!(r["headline"]["value"], 7.0);
        assert!(peak_kb > 0 && peak_kb < 100_000, "dbvs's peak RSS was {peak_kb} kB");
        let err = run.stderr();
        let head: String = err.lines().take(20).collect::<Vec<_>>().join("\n");
        assert!(err.contains("[the last 64 KiB of 200.0 MB]"), "{head}");
    }
}
