//! DS2 and tpcb on a real MariaDB server: one the test starts itself (an "external" server
//! for dbvs, inspected afterwards) and a managed one.

mod common;
use common::*;
use dbvs::targets::managed_maria::ManagedMaria;
use mysql::prelude::Queryable;
use serde_json::Value;

fn count(c: &mut mysql::Conn, table: &str) -> i64 {
    c.query_first(format!("SELECT count(*) FROM {table}")).unwrap().unwrap()
}

#[test]
fn ds2_and_tpcb_on_an_external_mariadb_keep_their_invariants() {
    let dir = reachable_tempdir();
    let server = ManagedMaria::start(&dir.path().join("maria"), &[], &[]).unwrap();
    let url = format!("mysql://dbvs@127.0.0.1:{}/ds2test", server.port);
    let json = dir.path().join("r.json");
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
    assert_eq!((r["status"].as_str(), r["target"]["engine"].as_str()), (Some("completed"), Some("mariadb")));
    assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);

    let opts = mysql::OptsBuilder::new().ip_or_hostname(Some("127.0.0.1")).tcp_port(server.port).user(Some("dbvs"));
    let mut c = mysql::Conn::new(opts).unwrap();
    let committed = r["totals"]["committed"].as_i64().unwrap();
    assert_eq!(count(&mut c, "ds2test.orders"), 1200, "the pristine database is untouched");
    assert_eq!(count(&mut c, "ds2kept.orders"), 1200 + committed);
    let negative = count(&mut c, "ds2kept.inventory WHERE quan_in_stock < 0");
    assert_eq!(negative, 0);
    // Boolean-mode full-text search with every word required finds a product by its title.
    let title: String = c.query_first("SELECT title FROM ds2test.products WHERE prod_id = 17").unwrap().unwrap();
    let query = title.split(' ').map(|w| format!("+{w}")).collect::<Vec<_>>().join(" ");
    let hits: i64 = c
        .exec_first("SELECT count(*) FROM ds2test.products WHERE MATCH(title) AGAINST (? IN BOOLEAN MODE)", (query,))
        .unwrap()
        .unwrap();
    assert!(hits >= 1);
    let leftovers: i64 = c
        .query_first("SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'ds2test\\_%'")
        .unwrap()
        .unwrap();
    assert_eq!(leftovers, 0, "run copies and staging databases are removed");

    let tpcb = format!("mysql://dbvs@127.0.0.1:{}/tpcbtest", server.port);
    ok(&[
        "run",
        "--target",
        &tpcb,
        "--workload",
        "tpcb",
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
    assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);
}

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
