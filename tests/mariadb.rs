//! What is particular to MariaDB targets: a server dbvs manages, run on copies of its data
//! directory, and its errors. The workloads' contract per engine is in tests/engines.rs.

mod common;
use common::*;
use serde_json::Value;

#[test]
fn a_managed_mariadb_starts_runs_and_stops() {
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
