//! The `command` workload: the benchmarks users already have (pgbench, sysbench) run by dbvs
//! against each run's fresh copy, their figure parsed from what they print, in runs and in
//! studies with verdicts.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

const PGBENCH_SETUP: &str = "pgbench -i -q -s $DBVS_SIZE";
const PGBENCH: &str = "pgbench -n -M prepared -c $DBVS_THREADS -j $DBVS_THREADS -T $DBVS_DURATION";
const PGBENCH_TPS: &str = r"tps = ([0-9.]+)";

fn record(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn pgbench_runs_on_a_fresh_copy_and_its_tps_is_the_measure() {
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

#[test]
fn a_study_compares_variants_by_pgbench_tps() {
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
