//! Engine against engine (`engine = "..."` on a variant): the same workload on PostgreSQL
//! and on MariaDB, each variant on its own engine with its own settings, compared on what
//! both engines measure, and the report saying that engines differ in more than one thing.

use crate::common::*;

#[test]
fn postgres_against_mariadb_on_the_same_workload() {
    let _share = share();
    let dir = reachable_tempdir();
    let f = write_study(
        dir.path(),
        "name = \"versus\"\nblocks = { min = 2, max = 2 }\n\
         [target]\nengine = \"postgres\"\nsettings = { work_mem = \"8MB\" }\n\
         [workload]\nname = \"tpcb\"\nsize = \"1\"\nduration = \"1s\"\nwarmup = \"0.3s\"\n\
         [[variants]]\nname = \"pg\"\n\
         [[variants]]\nname = \"maria\"\nengine = \"mariadb\"\nsettings = { innodb_flush_log_at_trx_commit = 2 }\n",
    );
    let out = dir.path().join("out");
    let o = ok(&["study", &f, "--out", out.to_str().unwrap()]);
    assert!(stderr(&o).contains("warning: variant 'maria' runs mariadb, the baseline 'pg' postgres"), "{}", stderr(&o));
    let (pg, maria) = (records(&out, "pg"), records(&out, "maria"));
    assert_eq!((pg.len(), maria.len()), (2, 2), "two blocks");
    for r in &pg {
        assert!(r["target"]["location"].as_str().unwrap().contains("PostgreSQL"), "{}", r["target"]);
        assert_eq!(r["settings"]["work_mem"], "8MB", "the study's settings are its engine's: {}", r["settings"]);
    }
    for r in &maria {
        assert!(r["target"]["location"].as_str().unwrap().contains("MariaDB"), "{}", r["target"]);
        assert_eq!(r["settings"]["innodb_flush_log_at_trx_commit"], "2", "{}", r["settings"]);
        assert!(r["settings"]["work_mem"].is_null(), "not the other engine's settings: {}", r["settings"]);
    }
    let r = report(&out);
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    let names: Vec<&str> =
        r["measures"].as_array().unwrap().iter().map(|m| m["measure"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["TPS", "server CPU per unit", "storage KB written per unit"]);
    let maria = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "maria").unwrap();
    assert_eq!(maria["info"]["differs_from_baseline"], serde_json::json!(["engine", "engine settings"]));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Another engine differs in more than one thing"), "{md}");
}

#[test]
fn engine_against_sqlite_compares_only_what_both_measure() {
    let _share = share();
    let dir = reachable_tempdir();
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"versus-sqlite\"\nblocks = {{ min = 2, max = 2 }}\n{SMALL}\n\
             [[variants]]\nname = \"sqlite\"\n[[variants]]\nname = \"pg\"\nengine = \"postgres\"\n"
        ),
    );
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let r = report(&out);
    let names: Vec<&str> =
        r["measures"].as_array().unwrap().iter().map(|m| m["measure"]["name"].as_str().unwrap()).collect();
    // CPU per unit is the workers' on SQLite and the server's on PostgreSQL: not compared.
    assert_eq!(names, ["OPM", "storage KB written per unit"]);
    assert_eq!(r["comparisons"][0]["variant"], "pg", "{}", r["comparisons"]);
}
