//! DS2 on real PostgreSQL servers: one the test starts itself (an "external" server for
//! dbvs, which the test can inspect afterwards) and one dbvs manages.

mod common;
use common::*;
use dbvs::targets::managed_pg::ManagedPg;
use serde_json::Value;

fn count(c: &mut postgres::Client, table: &str) -> i64 {
    c.query_one(&format!("SELECT count(*) FROM {table}"), &[]).unwrap().get(0)
}

#[test]
fn ds2_on_an_external_postgres_keeps_its_invariants() {
    let dir = reachable_tempdir();
    let server = ManagedPg::start(None, &dir.path().join("pg"), &[], &[]).unwrap();
    let url = format!("postgres://dbvs@127.0.0.1:{}/ds2test", server.port);
    let json = dir.path().join("r.json");
    ok(&["build", "--target", &url, "--size", "1MB"]);
    ok(&[
        "run",
        "--target",
        &url,
        "--size",
        "1MB",
        "--threads",
        "2",
        "--duration",
        "3s",
        "--warmup",
        "1s",
        "--json",
        json.to_str().unwrap(),
        "--keep-db",
        "ds2kept",
        "--no-store",
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed");
    assert_eq!(r["target"]["engine"], "postgres");
    let version = r["env"]["engine_versions"]["postgresql"].as_str().unwrap();
    assert!(version.starts_with(|c: char| c.is_ascii_digit()), "{version}");
    assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);
    assert!(r["metrics"]["orders"].as_u64().unwrap() > 50);

    let connect = |db: &str| {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(server.port)
            .user("dbvs")
            .dbname(db)
            .connect(postgres::NoTls)
            .unwrap()
    };
    let (mut before, mut after) = (connect("ds2test"), connect("ds2kept"));
    let committed = r["totals"]["committed"].as_i64().unwrap();
    assert_eq!(count(&mut before, "orders"), 1200, "the pristine database is untouched");
    assert_eq!(count(&mut after, "orders"), 1200 + committed);
    assert_eq!(
        count(&mut after, "orderlines") - count(&mut before, "orderlines"),
        count(&mut after, "cust_hist") - count(&mut before, "cust_hist")
    );
    let negative: i64 = after.query_one("SELECT count(*) FROM inventory WHERE quan_in_stock < 0", &[]).unwrap().get(0);
    assert_eq!(negative, 0);
    // Full-text search is an AND of words: a product's own title finds it.
    let hits: i64 = after
        .query_one(
            "SELECT count(*) FROM products WHERE to_tsvector('simple', title) @@ plainto_tsquery('simple', (SELECT title FROM products WHERE prod_id = 17))",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(hits >= 1);
    // No run copies or staging databases are left behind.
    let leftovers: i64 =
        before.query_one("SELECT count(*) FROM pg_database WHERE datname LIKE 'ds2test_%'", &[]).unwrap().get(0);
    assert_eq!(leftovers, 0);
}

#[test]
fn a_managed_postgres_starts_runs_and_stops() {
    let dir = reachable_tempdir();
    let data = dir.path().join("pgdata");
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
    assert!(!data.join("postmaster.pid").exists(), "the managed server must be stopped after the run");
}

#[test]
fn server_target_errors_are_one_clear_line() {
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

#[test]
fn tpcb_on_postgres_and_sqlite_keeps_balances_consistent() {
    let dir = reachable_tempdir();
    let server = ManagedPg::start(None, &dir.path().join("pg"), &[], &[]).unwrap();
    let url = format!("postgres://dbvs@127.0.0.1:{}/tpcbtest", server.port);
    let sqlite = format!("sqlite:{}", dir.path().join("tpcb.db").display());
    for target in [url.as_str(), sqlite.as_str()] {
        let json = dir.path().join("t.json");
        ok(&[
            "run",
            "--target",
            target,
            "--workload",
            "tpcb",
            "--size",
            "1",
            "--threads",
            "2",
            "--duration",
            "2s",
            "--warmup",
            "0",
            "--json",
            json.to_str().unwrap(),
            "--no-store",
        ]);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["workload"], "tpcb");
        assert!(r["metrics"]["tps"].as_f64().unwrap() > 10.0, "{target}: {}", r["metrics"]);
        assert_eq!(r["checks"].as_array().unwrap().len(), 4);
        assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{target}: {}", r["checks"]);
    }
    // pgbench's own tables: pgbench can run against the database dbvs built.
    let mut c = postgres::Config::new()
        .host("127.0.0.1")
        .port(server.port)
        .user("dbvs")
        .dbname("tpcbtest")
        .connect(postgres::NoTls)
        .unwrap();
    assert_eq!(count(&mut c, "pgbench_accounts"), 100_000);
    assert_eq!(count(&mut c, "pgbench_tellers"), 10);
}

#[test]
fn a_server_that_dies_mid_run_fails_the_run_with_its_log() {
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
