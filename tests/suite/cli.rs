//! The command-line contract: bad input, interruption, encryption, help.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

/// Asserts a clean failure: non-zero exit, one line on stderr naming `needle`, no panic.
fn fails_with(args: &[&str], needle: &str) {
    let o = dbvs(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} should fail");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: expected one line, got:\n{err}");
    assert!(err.contains(needle), "{args:?}: expected '{needle}' in: {err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
}

#[test]
fn bad_input_gets_one_clear_line() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), "x.db");
    fails_with(&["run", "--target", &t, "--size", "XL"], "unknown size 'XL'");
    fails_with(&["build", "--target", &t, "--size", "0MB"], "unknown size '0MB'");
    fails_with(&["run", "--target", &t, "--threads", "0"], "--threads");
    fails_with(&["run", "--target", "x.db"], "expected sqlite:PATH");
    fails_with(&["run", "--target", "postgres://localhost/db"], "expected postgres://USER@HOST");
    fails_with(&["run", "--target", "mongodb://h/db"], "expected sqlite:PATH");
    fails_with(&["build", "--target", "sqlite:/nonexistent-dir/x.db"], "choose a writable path");
    fails_with(&["run", "--target", &t, "--duration", "soon"], "not a duration");
    fails_with(&["run", "--target", &t, "--duration", "0"], "--duration must be longer than 0");
    fails_with(&["run", "--target", &t, "--json", "/nonexistent-dir/r.json"], "choose a writable path");
    fails_with(&["run", "--target", &t, "--pct-newcustomers", "101"], "--pct-newcustomers");
    fails_with(&["run", "--target", &t, "--key-file", "/nonexistent-key"], "cannot read key file");
    fails_with(&["run", "--target", &t, "--workload", "nope"], "nope");
    // Values that start with '-' are values, not unknown flags.
    fails_with(&["run", "--target", &t, "--size", "-10MB"], "unknown size '-10MB'");
    fails_with(&["run", "--target", &t, "--duration", "-1s"], "'-1s' is not a duration");
    let key = dir.path().join("k");
    std::fs::write(&key, "5a".repeat(32)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let k = key.to_str().unwrap();
    fails_with(&["run", "--target", &t, "--key-file", k, "--cipher-pragma", "cipher_page_size=3"], "power of two");
    std::fs::remove_file(&key).unwrap();
    assert!(files_in(dir.path()).is_empty(), "failed commands left files: {:?}", files_in(dir.path()));
}

/// A results store that cannot take runs fails the run before it measures, naming the
/// store and the fix.
#[test]
fn a_broken_results_store_fails_before_measuring() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.db");
    std::fs::write(&store, "this is not a SQLite database, it is plain text and long enough").unwrap();
    let t = target(dir.path(), "x.db");
    let o = command().env("DBVS_RESULTS", &store).args(["run", "--target", &t, "--size", "1MB"]).output().unwrap();
    let e = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains(store.to_str().unwrap()) && e.contains("DBVS_RESULTS"), "{e}");
    assert!(!dir.path().join("x.db").exists(), "nothing was built or measured first");
}

#[test]
fn a_pristine_database_of_another_size_is_refused() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), "x.db");
    ok(&["build", "--target", &t, "--size", "1MB"]);
    fails_with(&["run", "--target", &t, "--size", "2MB"], "built with size 1MB");
    // Rebuilding with the same settings is a no-op; another size needs --force.
    assert!(stderr(&ok(&["build", "--target", &t, "--size", "1MB"])).contains("already built"));
    fails_with(&["build", "--target", &t, "--size", "2MB"], "--force");
    ok(&["build", "--target", &t, "--size", "2MB", "--force"]);
    std::fs::write(dir.path().join("junk.db"), b"not a database at all, just some text.....").unwrap();
    fails_with(&["run", "--target", &target(dir.path(), "junk.db")], "not a SQLite database");
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_keyed_database_is_ciphertext_on_disk_and_runs_like_plain() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "3f".repeat(32)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key_arg = key.to_str().unwrap();
    let enc = target(dir.path(), "enc.db");
    let kept = dir.path().join("kept.db");
    ok(&["build", "--target", &target(dir.path(), "plain.db"), "--size", "1MB"]);
    let out = ok(&[
        "run",
        "--target",
        &enc,
        "--size",
        "1MB",
        "--key-file",
        key_arg,
        "--cipher-pragma",
        "cipher_page_size=4096",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "--keep-db",
        kept.to_str().unwrap(),
    ]);
    assert!(stdout(&out).contains("check ok"));
    // The build writes these strings into every customer row.
    let plain = std::fs::read(dir.path().join("plain.db")).unwrap();
    assert!(contains(&plain, b"password") && contains(&plain, b"Harbor Road"), "the scan must see plaintext");
    for f in ["enc.db", "kept.db"] {
        let bytes = std::fs::read(dir.path().join(f)).unwrap();
        assert!(!contains(&bytes, b"password") && !contains(&bytes, b"Harbor Road"), "{f} leaks plaintext");
        assert!(!contains(&bytes, b"SQLite format 3"), "{f} has a plaintext header");
    }
    fails_with(&["run", "--target", &enc, "--size", "1MB"], "another key");
    // Neither the key nor its file name's contents appear in any output.
    assert!(!stderr(&out).contains(&"3f".repeat(32)) && !stdout(&out).contains(&"3f".repeat(32)));
}

#[test]
fn help_explains_every_flag() {
    let _turn = share();
    for cmd in ["build", "run"] {
        let h = stdout(&ok(&[cmd, "--help"]));
        for flag in [
            "--target",
            "--workload",
            "--size",
            "--seed",
            "--key-file",
            "--pct-newcustomers",
            "--n-searches",
            "--search-batch-size",
            "--n-line-items",
        ] {
            assert!(h.contains(flag), "{cmd} --help lacks {flag}");
        }
    }
    let h = stdout(&ok(&["run", "--help"]));
    for flag in [
        "--threads",
        "--duration",
        "--warmup",
        "--think-time",
        "--ramp-rate",
        "--json",
        "--keep-db",
        "--report-interval",
    ] {
        assert!(h.contains(flag), "run --help lacks {flag}");
    }
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    /// A FIFO given as the key file is refused at once: opening it to read would wait for a
    /// writer, with Ctrl-C unheard.
    #[test]
    fn a_fifo_as_the_key_file_fails_at_once() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("key");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path we pass.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = target(dir.path(), "x.db");
        let args = ["run", "--target", &t, "--key-file", fifo.to_str().unwrap()];
        let mut child = command().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                child.kill().unwrap();
                panic!("dbvs run hangs on a FIFO key file");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(!o.status.success() && err.trim_end().lines().count() == 1, "{err}");
        assert!(err.contains(fifo.to_str().unwrap()) && err.contains("a FIFO, not a regular file"), "{err}");
    }

    #[test]
    fn ctrl_c_stops_the_run_reports_it_and_leaves_no_stray_files() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let child = command()
            .args(["run", "--target", &target(dir.path(), "p.db"), "--size", "1MB", "--threads", "2"])
            .args(["--duration", "120s", "--warmup", "1s", "--json", json.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(4));
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let t = std::time::Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(t.elapsed() < Duration::from_secs(15), "took {:?} to stop", t.elapsed());
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert!(stdout(&out).contains("INTERRUPTED"), "{}", stdout(&out));
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["status"], "interrupted");
        assert!(r["elapsed_s"].as_f64().unwrap() > 1.0, "measured time is reported: {}", r["elapsed_s"]);
        assert!(r["metrics"]["orders"].as_u64().unwrap() > 0);
        assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);
        assert_eq!(files_in(dir.path()), vec!["p.db", "r.json"]);
    }

    #[test]
    fn ctrl_c_during_a_build_leaves_nothing_behind() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let child = command()
            .args(["build", "--target", &target(dir.path(), "big.db"), "--size", "1GB"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(2));
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert!(stderr(&out).contains("interrupted"));
        assert!(files_in(dir.path()).is_empty(), "left: {:?}", files_in(dir.path()));
    }

    #[test]
    fn a_cold_run_drops_the_page_cache_first() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let o = ok(&[
            "run",
            "--target",
            &target(dir.path(), "c.db"),
            "--size",
            "1MB",
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--cold",
        ]);
        assert!(stdout(&o).contains("completed"), "{}", stdout(&o));
    }
}
