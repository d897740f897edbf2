//! What is particular to MariaDB targets: a server dbvs manages, run on copies of its data
//! directory, and its errors. The workloads' contract per engine is in tests/engines.rs.

use crate::common::*;
use serde_json::Value;

#[test]
fn a_managed_mariadb_starts_runs_and_stops() {
    let _turn = share();
    let dir = reachable_tempdir();
    let data = dir.path().join("maria");
    ok(&[
        "run",
        "--target",
        "managed-mariadb",
        "--data-dir",
        data.to_str().unwrap(),
        "--server-setting",
        "innodb_buffer_pool_size=64M",
        "--size",
        "1MB",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "--no-store",
    ]);
    assert!(!data.join("mariadbd.pid").exists(), "the managed server must be stopped after the run");
    let o = dbvs(&["run", "--target", "mysql://dbvs@127.0.0.1:1/x"]);
    assert!(!o.status.success() && stderr(&o).contains("cannot connect to MariaDB"), "{}", stderr(&o));
    let o = dbvs(&["run", "--target", "mysql://dbvs:pw@127.0.0.1/x"]);
    assert!(stderr(&o).contains("MYSQL_PWD"), "{}", stderr(&o));
}

#[test]
fn managed_mariadb_runs_on_a_copy_of_the_data_directory() {
    let _turn = share();
    let dir = reachable_tempdir();
    let data = dir.path().join("maria");
    let json = dir.path().join("r.json");
    for _ in 0..2 {
        ok(&[
            "run",
            "--target",
            "managed-mariadb",
            "--data-dir",
            data.to_str().unwrap(),
            "--size",
            "1MB",
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--json",
            json.to_str().unwrap(),
            "--no-store",
        ]);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        // The second run starts from the same 1,200 orders: the first run's orders went with its copy.
        assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);
    }
    assert_eq!(files_in(dir.path()), vec!["maria", "r.json"], "run copies of the data directory are removed");
    let o = dbvs(&[
        "run",
        "--target",
        "managed-mariadb",
        "--data-dir",
        data.to_str().unwrap(),
        "--size",
        "1MB",
        "--duration",
        "1s",
        "--keep-db",
        "x",
        "--no-store",
    ]);
    assert!(!o.status.success() && stderr(&o).contains("--keep-db is not available"), "{}", stderr(&o));
}

/// A worker's session runs on dbvs's own client for the binary protocol: it logs in with a
/// password (mysql_native_password), reads each column type back as the seam's values, a
/// statement the server refuses leaves the session usable, and one whose connection broke
/// takes no more statements.
#[test]
fn a_worker_session_logs_in_with_a_password_and_reads_every_column_type() {
    let _turn = share();
    use dbvs::targets::managed_maria::ManagedMaria;
    use dbvs::targets::{sql, TargetOptions};
    let dir = reachable_tempdir();
    let server = ManagedMaria::start(
        &dbvs::targets::Binaries::Packaged,
        &dir.path().join("maria"),
        None,
        &[],
        &Default::default(),
    )
    .unwrap();
    let connect = |user: &str, password: Option<&str>, db: &str| {
        let url = format!("mysql://{user}@127.0.0.1:{}/{db}", server.port);
        let opts = TargetOptions { password: password.map(String::from), ..Default::default() };
        dbvs::targets::open(&url.parse().unwrap(), opts).unwrap().existing().unwrap().connect().unwrap()
    };
    let mut admin = connect("dbvs", None, "mysql");
    for statement in [
        "CREATE DATABASE typ",
        "CREATE TABLE typ.t (id INT PRIMARY KEY, tu TINYINT UNSIGNED, s SMALLINT, b BIGINT, d DOUBLE, \
         f FLOAT, m DECIMAL(10,2), v VARCHAR(20), c CHAR(3), x TEXT, at DATETIME, n INT)",
        "INSERT INTO typ.t VALUES (1, 250, -7, 5000000000, 2.5, 0.5, 12.34, 'vé', 'abc', 'long', '2026-11-26 10:00:00', NULL)",
        "INSERT INTO typ.t (id) VALUES (2)",
        "CREATE USER pw@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('s3cret')",
        "GRANT ALL ON typ.* TO pw@'127.0.0.1'",
    ] {
        sql::adhoc(&mut admin, statement).unwrap();
    }
    let statements = [
        "SELECT tu, s, b, d, f, m, v, c, x, at, n FROM t WHERE id = ?".to_string(),
        "SELECT id FROM t WHERE id = (SELECT id FROM t)".to_string(),
        "SELECT CONNECTION_ID()".to_string(),
    ];
    let mut session = sql::session_of(connect("pw", Some("s3cret"), "typ"), &statements).unwrap();
    let row = session.query(0, &[sql::Arg::Int(1)]).unwrap();
    assert_eq!(
        format!("{:?}", row.vals),
        r#"[Int(250), Int(-7), Int(5000000000), Real(2.5), Real(0.5), Text("12.34"), Text("vé"), Text("abc"), Text("long"), Other, Null]"#
    );
    let refused = session.query(1, &[]).map(|r| r.vals).expect_err("a subquery of two rows is refused");
    assert!(refused.to_string().contains("1242"), "{refused}");
    assert_eq!(
        session.query(0, &[sql::Arg::Int(2)]).unwrap().vals.iter().filter(|v| **v == sql::Val::Null).count(),
        11
    );
    assert!(session.query(0, &[sql::Arg::Int(3)]).unwrap().is_empty());

    // A session whose connection the server killed fails (with the server's word, then
    // the connection's), and from then on fails at once, reading nothing.
    let id = session.query(2, &[]).unwrap().int(0, 0).unwrap();
    sql::adhoc(&mut admin, &format!("KILL {id}")).unwrap();
    let errors: Vec<String> = (0..3).map(|_| session.query(0, &[sql::Arg::Int(1)]).unwrap_err().to_string()).collect();
    assert!(errors[2].contains("takes no more statements"), "{errors:?}");
}

#[test]
fn under_a_memory_limit_a_managed_mariadb_fits_its_start_up_buffers_in_it() {
    let _share = long_share();
    let dir = reachable_tempdir();
    let json = dir.path().join("r.json");
    let data = dir.path().join("maria");
    ok(&["run", "--target", "managed-mariadb", "--data-dir", data.to_str().unwrap(), "--workload", "ds2"]
        .into_iter()
        .chain(["--size", "128MB", "--memory", "128MB", "--duration", "2s", "--warmup", "1s"])
        .chain(["--json", json.to_str().unwrap(), "--no-store"])
        .collect::<Vec<_>>());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // With the defaults (a 128MB buffer pool, 128MB key and Aria caches) it was killed at start.
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    let setting = |name: &str| r["settings"][name].as_str().map(String::from);
    assert_eq!(setting("innodb_buffer_pool_size").as_deref(), Some("33554432"), "{}", r["settings"]);
    assert_eq!(setting("aria_pagecache_buffer_size").as_deref(), Some("8388608"), "{}", r["settings"]);
    let read = r["measures"].as_array().unwrap().iter().find(|m| m["name"] == "storage KB read per unit");
    assert!(read.is_some_and(|m| m["value"].as_f64().unwrap() > 0.0), "larger than memory: {read:?}");
}
