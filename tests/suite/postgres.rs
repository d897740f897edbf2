//! What is particular to PostgreSQL targets: a server dbvs manages, its errors, and a
//! server that dies mid-run. The workloads' contract per engine is in tests/engines.rs.

use crate::common::*;
use serde_json::Value;

#[test]
fn a_managed_postgres_starts_runs_and_stops() {
    let _turn = share();
    let dir = reachable_tempdir();
    // Deep enough that a Unix socket in it would pass the kernel's 107 bytes: the server
    // must still start (its clients use TCP).
    let data = dir
        .path()
        .join("a-data-directory-deep-enough-for-a-unix-socket-path-in-it-to-pass-the-kernels-107-bytes-limit")
        .join("pgdata");
    let json = dir.path().join("r.json");
    ok(&[
        "run",
        "--target",
        "managed-postgres",
        "--data-dir",
        data.to_str().unwrap(),
        "--server-setting",
        "shared_buffers=64MB",
        "--size",
        "1MB",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
        "--no-store",
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed");
    assert!(r["target"]["location"].as_str().unwrap().contains("managed PostgreSQL"));
    let version = r["env"]["engine_versions"]["postgresql"].as_str().unwrap();
    assert!(version.starts_with(|c: char| c.is_ascii_digit()), "{version}");
    assert!(!data.join("postmaster.pid").exists(), "the managed server must be stopped after the run");
    // The server's CPU per order: every backend's and background process's threads.
    let m = r["measures"].as_array().unwrap().iter().find(|m| m["name"] == "server CPU per unit");
    let per_order_ms = m.and_then(|m| m["value"].as_f64()).unwrap_or_else(|| panic!("{}", r["measures"]));
    let server_s = per_order_ms / 1e3 * r["counts"]["units"].as_f64().unwrap();
    let most = r["elapsed_s"].as_f64().unwrap() * r["env"]["cores"].as_f64().unwrap();
    assert!(per_order_ms > 0.05 && server_s <= most, "{per_order_ms} ms per order, {server_s} s of {most}");
    // Every order commits, so the disk wrote the server's WAL (and whatever the tests beside
    // this one wrote: how much it is, `alone` checks).
    let m = r["measures"].as_array().unwrap().iter().find(|m| m["name"] == "storage KB written per unit");
    let kb = m.and_then(|m| m["value"].as_f64()).unwrap_or_else(|| panic!("{}", r["measures"]));
    assert!(kb > 1.0, "{kb} KB written per order");
    // dbvs talks to the server over loopback: traffic there, each byte sent once and
    // received once.
    let lo = &r["telemetry"]["window"]["net"]["lo"];
    let (rx, tx) = (lo["rx_mbit_s"].as_f64().unwrap_or(0.0), lo["tx_mbit_s"].as_f64().unwrap_or(0.0));
    assert!(rx > 0.01 && (rx / tx - 1.0).abs() < 0.01, "{}", r["telemetry"]["window"]);
}

#[test]
fn a_fixed_work_run_counts_the_cpu_of_backends_that_ended_before_its_window() {
    let _turn = share();
    let dir = reachable_tempdir();
    let (data, json) = (dir.path().join("pg"), dir.path().join("r.json"));
    // A fixed amount of work (seed 002's shape): each user's backend ends with its
    // connection, before the window does; its CPU must still be the server's.
    let fixed = ["--workload", "tpcc", "--size", "1", "--users", "2", "--iterations", "100"];
    ok(&["run", "--target", "managed-postgres", "--data-dir", data.to_str().unwrap()]
        .into_iter()
        .chain(fixed)
        .chain(["--no-store", "--json", json.to_str().unwrap()])
        .collect::<Vec<_>>());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed");
    let m = r["measures"].as_array().unwrap().iter().find(|m| m["name"] == "server CPU per unit");
    let per_unit_ms = m.and_then(|m| m["value"].as_f64()).unwrap_or_else(|| panic!("{}", r["measures"]));
    // Every TPC-C transaction takes the server well over 0.05 ms of CPU.
    assert!(per_unit_ms > 0.05, "{per_unit_ms} ms per transaction");
}

#[test]
fn under_a_memory_limit_a_managed_postgres_gets_a_quarter_of_it_as_shared_buffers() {
    let _share = share();
    let dir = reachable_tempdir();
    let json = dir.path().join("r.json");
    let data = dir.path().join("pgdata");
    ok(&["run", "--target", "managed-postgres", "--data-dir", data.to_str().unwrap(), "--workload", "ds2"]
        .into_iter()
        .chain(["--size", "48MB", "--memory", "64MB", "--duration", "2s", "--warmup", "1s"])
        .chain(["--json", json.to_str().unwrap(), "--no-store"])
        .collect::<Vec<_>>());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    // Read back from the server, not copied from the spec; 128MB (the default) would not
    // fit beside the page cache.
    assert_eq!(r["settings"]["shared_buffers"], "16MB", "{}", r["settings"]);
    let read = r["measures"].as_array().unwrap().iter().find(|m| m["name"] == "storage KB read per unit");
    assert!(read.is_some_and(|m| m["value"].as_f64().unwrap() > 0.0), "larger than memory: {read:?}");
}

#[test]
fn server_target_errors_are_one_clear_line() {
    let _turn = share();
    let check = |args: &[&str], needle: &str| {
        let o = dbvs(args);
        let err = stderr(&o);
        assert!(!o.status.success());
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "expected '{needle}' in {err}");
    };
    check(&["run", "--target", "postgres://dbvs@127.0.0.1:1/ds2"], "cannot connect to PostgreSQL at 127.0.0.1:1");
    check(&["run", "--target", "postgres://dbvs:secret@127.0.0.1/ds2"], "PGPASSWORD");
    check(&["run", "--target", "managed-postgres:99"], "PostgreSQL 99 is not installed");
    check(&["run", "--target", "managed-postgres", "--server-setting", "a=b c"], "--server-setting");
}

/// A worker's session on dbvs's own pipelining client: a value a parameter cannot take
/// fails its transaction before anything of it leaves, a server error is one line with its
/// SQLSTATE, text passed to a number is the number it spells, a value dbvs cannot read
/// fails its statement, and the session goes on; a COPY FROM STDIN fails instead of
/// waiting for data, and takes its session out of use.
#[test]
fn a_worker_session_fails_a_transaction_cleanly_and_goes_on() {
    use dbvs::driver::{Outcome, UnitRecorder};
    use dbvs::targets::{managed_pg::ManagedPg, sql, sql::Arg::Int, sql::Arg::Text, Binaries, TargetOptions};
    let _turn = share();
    let dir = reachable_tempdir();
    let server =
        ManagedPg::start(&Binaries::Packaged, &dir.path().join("pgdata"), None, &[], &Default::default()).unwrap();
    let target = format!("postgres://dbvs@127.0.0.1:{}/tpcb", server.port);
    ok(&["build", "--target", &target, "--workload", "tpcb", "--size", "1"]);
    let open = || {
        let t = dbvs::targets::open(&target.parse().unwrap(), TargetOptions::default()).unwrap();
        let list = sql::Statements::portable(&[
            "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?",
            "SELECT bbalance FROM pgbench_branches WHERE bid = ?",
            "SELECT 1 / (bbalance - bbalance) FROM pgbench_branches WHERE bid = ?",
            "SELECT bid + 1 FROM pgbench_branches WHERE bid = ?",
            "COPY pgbench_history FROM STDIN",
            "SELECT CAST('NaN' AS NUMERIC) FROM pgbench_branches WHERE bid = ?",
        ]);
        sql::session(t.existing().unwrap().connect().unwrap(), &list).unwrap()
    };
    let (add, read, divide, next, copy, nan) = (0, 1, 2, 3, 4, 5);
    let mut session = open();
    let mut rec = UnitRecorder::default();
    let balance = |s: &mut Box<dyn sql::Session>| s.query(read, &[Int(1)]).unwrap().int(0, 0).unwrap();

    let unbound = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(5), Int(1)])?;
        tx.query(read, &[Int(i64::MAX)])?; // bid is an INT4
        Ok(Outcome::Committed)
    });
    let e = format!("{:#}", unbound.unwrap_err());
    assert!(e.contains("out of range"), "{e}");
    assert_eq!(balance(&mut session), 0, "the write queued before the unbindable read never left");

    let failed = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(5), Int(1)])?;
        tx.query(divide, &[Int(1)])?;
        Ok(Outcome::Committed)
    });
    let e = format!("{:#}", failed.unwrap_err());
    assert!(e.contains("division by zero") && e.contains("SQLSTATE 22012") && !e.contains('\n'), "{e}");
    assert_eq!(balance(&mut session), 0, "the failed transaction was rolled back");

    // Text to an INT4 parameter goes as text, for the server to parse (as binary, "1" is
    // no INT4 and "1234" would be 825373492).
    assert_eq!(session.query(next, &[Text("1")]).unwrap().int(0, 0).unwrap(), 2);

    // A value dbvs cannot read fails its statement; the answers after it are still read.
    let e = format!("{:#}", session.query(nan, &[Int(1)]).unwrap_err());
    assert!(e.contains("cannot read a numeric value"), "{e}");

    let other = &mut open();
    let done = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(7), Int(1)])?;
        Ok(Outcome::Committed)
    });
    assert_eq!(done.unwrap(), Outcome::Committed);
    assert_eq!(balance(other), 7, "the session goes on after its failures");

    let copied = session.transaction(false, &mut rec, &mut |tx| {
        tx.execute(copy, &[])?;
        Ok(Outcome::Committed)
    });
    let e = format!("{:#}", copied.unwrap_err());
    assert!(e.contains("COPY FROM STDIN"), "{e}");
    let e = format!("{:#}", session.query(read, &[Int(1)]).unwrap_err());
    assert!(e.contains("takes no more statements"), "{e}");
    assert_eq!(balance(other), 7, "the copy's transaction never committed");
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    /// What the disk wrote per TPC-B transaction: the WAL page each commit writes and syncs,
    /// about 10 KB here with the file system's journal. The kernel's per-process count said
    /// 217-258 KB (a whole 256 KB page-cache folio each time a write dirtied one).
    #[test]
    fn storage_kb_written_per_transaction_is_what_the_disk_wrote() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let (data, json) = (dir.path().join("pgdata"), dir.path().join("r.json"));
        ok(&["run", "--target", "managed-postgres", "--data-dir", data.to_str().unwrap(), "--workload", "tpcb"]
            .into_iter()
            .chain([
                "--threads",
                "1",
                "--duration",
                "5s",
                "--warmup",
                "1s",
                "--json",
                json.to_str().unwrap(),
                "--no-store",
            ])
            .collect::<Vec<_>>());
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let m = r["measures"].as_array().unwrap().iter().find(|m| m["name"] == "storage KB written per unit");
        let kb = m.and_then(|m| m["value"].as_f64()).unwrap_or_else(|| panic!("{}", r["measures"]));
        assert!((4.0..64.0).contains(&kb), "{kb} KB written per transaction");
    }

    #[test]
    fn a_server_that_dies_mid_run_fails_the_run_with_its_log() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let data = dir.path().join("pgdata");
        let json = dir.path().join("r.json");
        let child = command()
            .args(["run", "--target", "managed-postgres", "--data-dir", data.to_str().unwrap(), "--size", "1MB"])
            .args(["--duration", "60s", "--warmup", "0", "--json", json.to_str().unwrap(), "--no-store"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid_file = data.join("postmaster.pid");
        let t = std::time::Instant::now();
        // Let the server start and the run get going.
        while !(pid_file.exists() && t.elapsed() > std::time::Duration::from_secs(4)) {
            assert!(t.elapsed() < std::time::Duration::from_secs(60), "the managed server never started");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().lines().next().unwrap().trim().parse().unwrap();
        // SAFETY: killing the test's own grandchild server process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["status"], "failed");
        assert!(r["cause"].as_str().unwrap().contains("server log"), "{}", r["cause"]);
    }
}
