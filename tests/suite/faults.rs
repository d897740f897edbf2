//! Fault injection through the real binary: an encryption layer that vanishes mid-study,
//! SIGKILL of a study (with and without its watchdog), SIGKILL of a run on a managed
//! server, and two runs on one managed data directory. After each, nothing false is
//! counted and nothing decrypted, mounted or running is left behind.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A lease directory of this test's own, so sweeps see only what the test left.
fn leases(dir: &Path) -> PathBuf {
    dir.join("leases")
}

fn spawn<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S], log: &Path) -> Child {
    let mut c = command();
    c.env("DBVS_LEASES", leases(dir)).args(args).stdin(Stdio::null());
    let f = std::fs::File::create(log).unwrap();
    c.stdout(f.try_clone().unwrap()).stderr(f);
    // A session of its own, as a user's `setsid dbvs ...`: killing it kills only dbvs.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            libc::setsid();
            Ok(())
        });
    }
    c.spawn().unwrap()
}

fn run_in<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> std::process::Output {
    command().env("DBVS_LEASES", leases(dir)).args(args).output().unwrap()
}

/// Waits until `cond` holds, or fails after `secs` with `what`.
fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn mounts_under(dir: &Path) -> Vec<String> {
    let d = dir.canonicalize().unwrap().display().to_string();
    std::fs::read_to_string("/proc/mounts").unwrap().lines().filter(|l| l.contains(&d)).map(String::from).collect()
}

fn files_named(dir: &Path, ends: &[&str]) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files_named(&p, ends));
        } else if ends.iter().any(|x| p.to_string_lossy().ends_with(x)) {
            out.push(p);
        }
    }
    out
}

fn processes_mentioning(needle: &str) -> Vec<String> {
    let o = Command::new("pgrep").args(["-af", needle]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.contains("pgrep")).map(String::from).collect()
}

fn log_has(log: &Path, text: &str) -> bool {
    std::fs::read_to_string(log).unwrap_or_default().contains(text)
}

const ENCRYPTED: &str = r#"
name = "k"
blocks = { min = 2, max = 4 }
[workload]
name = "ds2"
size = "1MB"
threads = 1
duration = "3s"
warmup = "0.5s"
[[variants]]
name = "plain"
kind = "plain"
[[variants]]
name = "go"
kind = "gocryptfs"
[[variants]]
name = "fs"
kind = "fscrypt"
image_size = "128MB"
[[variants]]
name = "sc"
kind = "sqlcipher"
"#;

/// Starts the study `body` (output in `dir/out`) and waits until its first block is done.
fn study_after_one_block(dir: &Path, body: &str) -> Child {
    let (study, out, log) = (dir.join("s.toml"), dir.join("out"), dir.join("log"));
    std::fs::write(&study, body).unwrap();
    let child = spawn(dir, &["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()], &log);
    wait_for(120, "the study's first block", || log_has(&log, "block 1 done"));
    child
}

/// `dbvs run` on a managed PostgreSQL in `pg` under the test's directory.
fn pg_run(data: &Path) -> Vec<String> {
    let args = ["run", "--target", "managed-postgres", "--data-dir", data.to_str().unwrap(), "--size", "1MB"];
    args.iter().map(|a| a.to_string()).chain(["--no-store".to_string()]).collect()
}

/// Starts a run of `duration` on a managed PostgreSQL and waits until it measures.
fn measuring_on_managed_postgres(dir: &Path, duration: &str) -> Child {
    let log = dir.join("log");
    let mut args = pg_run(&dir.join("pg"));
    args.extend(["--duration", duration, "--warmup", "1s"].map(String::from));
    let child = spawn(dir, &args, &log);
    wait_for(120, "the run to start measuring", || log_has(&log, "Stats reset") || log_has(&log, "et="));
    child
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    /// A study killed with SIGKILL mid-block: its watchdog unmounts, locks and deletes at once.
    #[test]
    fn a_killed_study_leaves_nothing_decrypted_behind() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let out = dir.path().join("out");
        let mut child = study_after_one_block(dir.path(), ENCRYPTED);
        assert!(mounts_under(dir.path()).len() >= 2, "gocryptfs and fscrypt are mounted");
        child.kill().unwrap();
        child.wait().unwrap();
        wait_for(30, "the watchdog to clean up", || mounts_under(dir.path()).is_empty());
        wait_for(10, "the work directory to go", || files_named(&out, &[".key", ".pass", ".img"]).is_empty());
        wait_for(10, "the leases to be carried out", || files_in(&leases(dir.path())).is_empty());
        wait_for(10, "child runs to end", || processes_mentioning(out.to_str().unwrap()).is_empty());
        let o = run_in(dir.path(), &["cleanup"]);
        assert!(stdout(&o).contains("nothing to clean up"), "{}", stdout(&o));
    }

    /// A study whose output went through a pipe, killed with its reader (`dbvs study X 2>&1 |
    /// cat > log`, the whole group killed, as a CI runner or `timeout` does): the watchdog
    /// finds its stderr pipe dead and still undoes every lease. It once died on the first line
    /// it printed, leaving gocryptfs and fscrypt mounted and the SQLCipher key on disk.
    #[test]
    fn a_study_killed_with_the_reader_of_its_output_leaves_nothing_decrypted_behind() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let (study, out, log) = (dir.path().join("s.toml"), dir.path().join("out"), dir.path().join("log"));
        std::fs::write(&study, ENCRYPTED).unwrap();
        let line =
            format!("\"$DBVS\" study {} --out {} 2>&1 | cat > {}", study.display(), out.display(), log.display());
        let mut group = Command::new("bash");
        group.args(["-c", &line]).env("DBVS", env!("CARGO_BIN_EXE_dbvs")).stdin(Stdio::null());
        for (k, v) in command().get_envs() {
            if let Some(v) = v {
                group.env(k, v);
            }
        }
        group.env("DBVS_LEASES", leases(dir.path()));
        // SAFETY: setsid is async-signal-safe; the pipeline is a process group of its own.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut group, || {
                libc::setsid();
                Ok(())
            });
        }
        let mut shell = group.spawn().unwrap();
        wait_for(120, "the study's first block", || log_has(&log, "block 1 done"));
        assert!(mounts_under(dir.path()).len() >= 2, "gocryptfs and fscrypt are mounted");
        // SAFETY: the pipeline's session leader is our child; its group is the whole pipeline.
        unsafe { libc::kill(-(shell.id() as i32), libc::SIGKILL) };
        shell.wait().unwrap();
        let killed = Instant::now();
        wait_for(15, "the watchdog to unmount", || mounts_under(dir.path()).is_empty());
        wait_for(15, "the key files to go", || files_named(&out, &[".key", ".pass"]).is_empty());
        eprintln!("nothing decrypted left {:.1} s after the kill", killed.elapsed().as_secs_f64());
        wait_for(10, "the leases to be carried out", || files_in(&leases(dir.path())).is_empty());
        wait_for(10, "child runs to end", || processes_mentioning(out.to_str().unwrap()).is_empty());
    }

    /// The watchdog killed too (kill -9 of everything): the next dbvs command cleans up.
    #[test]
    fn the_next_command_cleans_up_what_a_killed_study_and_its_watchdog_left() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let out = dir.path().join("out");
        let mut child = study_after_one_block(dir.path(), ENCRYPTED);
        let watchdog = format!("dbvs watchdog {}", child.id());
        let o = Command::new("pkill").args(["-KILL", "-f", &watchdog]).output().unwrap();
        assert!(o.status.success(), "the study has a watchdog");
        child.kill().unwrap();
        child.wait().unwrap();
        std::thread::sleep(Duration::from_secs(2));
        assert!(!mounts_under(dir.path()).is_empty(), "with no watchdog, the mounts stay until the next command");
        let o = run_in(dir.path(), &["cleanup"]);
        assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("cleaned up after dbvs process"), "{}", stdout(&o));
        assert!(mounts_under(dir.path()).is_empty(), "{:?}", mounts_under(dir.path()));
        assert!(files_named(&out, &[".key", ".pass", ".img"]).is_empty());
        assert!(files_in(&leases(dir.path())).is_empty());
    }

    /// The gocryptfs mount vanishes mid-study: the runs after it fail; none is counted.
    #[test]
    fn a_vanished_encryption_layer_fails_its_runs_instead_of_counting_plaintext() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let out = dir.path().join("out");
        // Without gocryptfs's control (a FUSE passthrough) the failed variant is the only one compared.
        let body = ENCRYPTED
            .split("[[variants]]\nname = \"fs\"")
            .next()
            .unwrap()
            .replace("blocks =", "controls = false\nblocks =");
        let mut child = study_after_one_block(dir.path(), &body);
        let mount =
            mounts_under(dir.path()).into_iter().find(|m| m.contains("fuse.gocryptfs")).expect("gocryptfs mounted");
        let point = mount.split_whitespace().nth(1).unwrap().to_string();
        let o = Command::new("fusermount3").args(["-uz", &point]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let status = child.wait().unwrap();
        assert!(!status.success(), "a study whose only compared variant failed does not succeed");
        let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(r["status"], "failed", "{}", r["cause"]);
        let go = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "go").unwrap();
        assert_eq!(go["status"], "failed");
        assert!(go["reason"].as_str().unwrap().contains("no longer mounted"), "{go}");
        for run in
            r["runs"].as_array().unwrap().iter().filter(|x| x["variant"] == "go" && x["block"].as_u64() >= Some(1))
        {
            assert_eq!(run["status"], "failed", "a gocryptfs run after the unmount was counted: {run}");
        }
        assert!(r["comparisons"].as_array().unwrap().is_empty(), "no comparison rests on one block");
        assert!(mounts_under(dir.path()).is_empty());
    }

    /// A run on a managed PostgreSQL killed with SIGKILL: its server is stopped, and the next
    /// run on the same data directory works.
    #[test]
    fn a_killed_run_does_not_orphan_its_managed_server() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let data = dir.path().join("pg");
        let mut child = measuring_on_managed_postgres(dir.path(), "60s");
        assert!(!processes_mentioning(data.to_str().unwrap()).is_empty(), "the server runs");
        child.kill().unwrap();
        child.wait().unwrap();
        wait_for(40, "the server to stop", || processes_mentioning(data.to_str().unwrap()).is_empty());
        let again: Vec<String> =
            pg_run(&data).into_iter().chain(["--duration", "1s", "--warmup", "0s"].map(String::from)).collect();
        let o = run_in(dir.path(), &again);
        assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    }

    /// A run on a managed MariaDB whose data directory is too deep for a socket beside it
    /// (its socket goes to /tmp), its server and then itself killed with SIGKILL (as the
    /// kernel's OOM killer might): the server cannot remove its socket, the watchdog does.
    #[test]
    fn a_killed_run_leaves_no_managed_mariadb_socket_in_tmp() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let data = dir.path().join("a-data-directory-deep-enough-that-its-socket-would-pass-the-kernels-107-bytes");
        let sockets = || -> Vec<PathBuf> {
            let all = std::fs::read_dir("/tmp").unwrap().flatten().map(|e| e.path());
            all.filter(|p| p.to_str().is_some_and(|p| p.starts_with("/tmp/dbvs-mariadb-"))).collect()
        };
        let before = sockets();
        let log = dir.path().join("log");
        let args = ["run", "--target", "managed-mariadb", "--data-dir", data.to_str().unwrap(), "--size", "1MB"];
        let mut child =
            spawn(dir.path(), &[&args[..], &["--duration", "60s", "--warmup", "1s", "--no-store"]].concat(), &log);
        wait_for(120, "the run to start measuring", || log_has(&log, "Stats reset") || log_has(&log, "et="));
        let ours: Vec<PathBuf> = sockets().into_iter().filter(|s| !before.contains(s)).collect();
        assert_eq!(ours.len(), 1, "the server's socket is in /tmp: {ours:?}");
        for server in processes_mentioning(data.to_str().unwrap()).iter().filter(|p| p.contains("mariadbd")) {
            let pid: i32 = server.split_whitespace().next().unwrap().parse().unwrap();
            assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        }
        child.kill().unwrap();
        child.wait().unwrap();
        wait_for(30, "the watchdog to remove the killed server's socket", || !ours[0].exists());
        assert!(processes_mentioning(data.to_str().unwrap()).is_empty());
    }

    /// Two runs on one managed data directory: the second is refused, naming the first; the
    /// first is unharmed.
    #[test]
    fn a_managed_data_directory_serves_one_dbvs_at_a_time() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let data = dir.path().join("pg");
        let mut first = measuring_on_managed_postgres(dir.path(), "6s");
        let second: Vec<String> = pg_run(&data).into_iter().chain(["--duration".into(), "1s".into()]).collect();
        let o = run_in(dir.path(), &second);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains("in use by dbvs process") && e.contains(&first.id().to_string()), "{e}");
        assert_eq!(e.trim().lines().count(), 1, "one line: {e}");
        assert!(first.wait().unwrap().success(), "{}", std::fs::read_to_string(dir.path().join("log")).unwrap());
    }

    /// A study killed between blocks is marked aborted by the next start, and `--resume` takes
    /// it up from its first incomplete block; the report counts every block once. It ran its
    /// quick form, and resumes in it without being told `--quick` again. The AES table it
    /// measured before its first block survives the kill: the report-only resume and the
    /// resumed study show that one, not a new measurement.
    #[test]
    fn a_killed_study_is_aborted_then_resumed_from_its_first_incomplete_block() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let (study, out, log) = (dir.path().join("s.toml"), dir.path().join("out"), dir.path().join("log"));
        let body = "name = \"r\"\nblocks = { min = 9, max = 9 }\naes_table = { sizes = [\"100KB\"], runs = 1 }\n[quick]\nblocks = { min = 4, max = 4 }\n[workload]\nname = \"ds2\"\nsize = \"1MB\"\n\
                    duration = \"1s\"\nwarmup = \"0.2s\"\n[[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
                    [[variants]]\nname = \"slow\"\nkind = \"delay\"\nper_transaction = \"1ms\"\n";
        std::fs::write(&study, body).unwrap();
        let (s, o) = (study.to_str().unwrap(), out.to_str().unwrap());
        let store = dir.path().join("r.db");
        let spawn_with_store = |args: &[&str]| {
            let mut c = command();
            c.env("DBVS_RESULTS", &store).env("DBVS_LEASES", leases(dir.path())).args(args);
            c
        };
        let mut c = spawn_with_store(&["study", s, "--out", o, "--quick"]);
        let f = std::fs::File::create(&log).unwrap();
        let mut child = c.stdout(f.try_clone().unwrap()).stderr(f).spawn().unwrap();
        wait_for(120, "two blocks", || log_has(&log, "block 2 done"));
        child.kill().unwrap();
        child.wait().unwrap();
        let id = "1";
        let shown = spawn_with_store(&["results", "show", id]).output().unwrap();
        assert!(stdout(&shown).contains("aborted"), "{}", stdout(&shown));
        let report = spawn_with_store(&["report", id]).output().unwrap();
        assert!(!report.status.success() && stderr(&report).contains("--resume 1"), "{}", stderr(&report));
        let before: Value = {
            let rows = spawn_with_store(&["results", "show", id]).output().unwrap();
            assert!(rows.status.success());
            serde_json::json!(stdout(&rows).matches("completed").count())
        };
        // Report only: nothing set up or run, and the study stays resumable.
        let runs_stored = || count(&rusqlite::Connection::open(&store).unwrap(), "runs");
        let (stored_before, files_before) = (runs_stored(), files_in(&out.join("runs")));
        let only = spawn_with_store(&["study", s, "--out", o, "--resume", id, "--budget", "0"]).output().unwrap();
        assert!(only.status.success(), "{}\n{}", stdout(&only), stderr(&only));
        assert!(!stderr(&only).contains("block 3 done"), "{}", stderr(&only));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        assert_eq!((r["status"].as_str(), r["blocks_completed"].as_u64()), (Some("aborted"), Some(2)), "{r}");
        assert!(r["stop_reason"].as_str().unwrap().contains("report only"), "{}", r["stop_reason"]);
        let kept_table = r["aes_table"].clone();
        assert!(kept_table["series"].as_array().is_some_and(|s| !s.is_empty()), "the AES table was lost: {r}");
        assert_eq!(runs_stored(), stored_before, "a report-only resume stores no run");
        assert_eq!(files_in(&out.join("runs")), files_before, "no run at all");
        let resumed = spawn_with_store(&["study", s, "--out", o, "--resume", id]).output().unwrap();
        assert!(resumed.status.success(), "{}\n{}", stdout(&resumed), stderr(&resumed));
        assert!(stderr(&resumed).contains("resuming study 1 at block 3"), "{}", stderr(&resumed));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(r["status"], "completed", "{}", r["cause"]);
        assert_eq!(r["blocks_completed"], 4);
        assert!(stderr(&resumed).contains("AES table: the one study 1 measured"), "{}", stderr(&resumed));
        assert_eq!(r["aes_table"], kept_table, "the resumed study measured its AES table again");
        let runs = r["runs"].as_array().unwrap();
        for b in 0..4 {
            for v in ["plain", "slow"] {
                let n = runs.iter().filter(|x| x["block"] == b && x["variant"] == v).count();
                assert_eq!(n, 1, "block {b}, {v}: {n} runs in the report");
            }
        }
        assert!(before.as_u64().unwrap() >= 4, "the first two blocks' runs were stored before the kill");
        let again = spawn_with_store(&["study", s, "--resume", id]).output().unwrap();
        assert!(!again.status.success() && stderr(&again).contains("completed"), "{}", stderr(&again));
    }

    /// A disk that fills during the build: one line naming the cause, the failed run in the
    /// store, and no staging files left on the full disk.
    #[test]
    fn a_full_disk_fails_the_run_with_its_cause_and_records_it() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let small = dir.path().join("small");
        std::fs::create_dir(&small).unwrap();
        let o = Command::new("mount").args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"]).arg(&small).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let store = dir.path().join("r.db");
        let o = command()
            .env("DBVS_RESULTS", &store)
            .args(["run", "--target", &format!("sqlite:{}", small.join("ds2.db").display()), "--size", "10MB"])
            .output()
            .unwrap();
        let left = files_in(&small);
        let _ = Command::new("umount").arg(&small).output();
        let e = stderr(&o);
        assert!(!o.status.success());
        assert!(e.contains("full"), "{e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(left.is_empty(), "the failed build left {left:?} on the full disk");
        let runs = command().env("DBVS_RESULTS", &store).args(["results", "list", "--runs"]).output().unwrap();
        assert!(stdout(&runs).contains("failed"), "the set-up failure is recorded: {}", stdout(&runs));
    }

    /// A memory limit the run cannot live in: the run fails naming the OOM killer and the
    /// limit, and the study does not count it.
    #[test]
    fn a_run_killed_under_a_memory_limit_names_the_limit() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let (study, out) = (dir.path().join("s.toml"), dir.path().join("out"));
        let body = "name = \"m\"\nblocks = { min = 2, max = 2 }\n[workload]\nname = \"ds2\"\nsize = \"1MB\"\n\
                    duration = \"1s\"\nwarmup = \"0.2s\"\n[[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
                    [[variants]]\nname = \"tiny\"\nkind = \"limits\"\nmemory = \"1MB\"\n";
        std::fs::write(&study, body).unwrap();
        let o = run_in(dir.path(), &["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(!o.status.success(), "{}", stdout(&o));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        let tiny = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "tiny").unwrap();
        assert_eq!(tiny["status"], "failed", "{tiny}");
        assert!(tiny["reason"].as_str().unwrap().contains("OOM killer"), "{tiny}");
    }
}
