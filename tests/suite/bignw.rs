//! The BigNW micro-suite through the real binary: every benchmark on SQLite, PostgreSQL and
//! MariaDB with the database restored after each unit, native backups, calibration, and a
//! study in the balanced order.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn record(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn run(target: &str, extra: &[&str], json: &Path) -> Value {
    let mut args =
        vec!["run", "--target", target, "--workload", "bignw", "--no-store", "--json", json.to_str().unwrap()];
    args.extend_from_slice(extra);
    ok(&args);
    record(json)
}

fn assert_checks_pass(r: &Value) {
    let checks = r["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 3, "{checks:?}");
    assert!(checks.iter().all(|c| c["ok"] == true), "{checks:#?}");
}

/// Rows each benchmark touched per iteration, where every engine reports them alike.
fn rows(r: &Value) -> Vec<(String, u64)> {
    let b = r["metrics"]["benchmarks"].as_object().unwrap();
    ["b1", "b2", "b3", "b4", "b6", "b7", "b8", "b9"]
        .iter()
        .map(|k| (k.to_string(), b[*k]["rows_per_iteration"].as_u64().unwrap()))
        .collect()
}

#[test]
fn bignw_touches_the_same_rows_on_postgres_and_mariadb_as_on_sqlite() {
    let _turn = share();
    let dir = reachable_tempdir();
    let fixed = ["--size", "0.02", "--unit-iterations", "2", "--repeat", "1"];
    let sqlite = run(&target(dir.path(), "nw.db"), &fixed, &dir.path().join("s.json"));
    assert_checks_pass(&sqlite);
    for (engine, data) in [("managed-postgres", "pg"), ("managed-mariadb", "maria")] {
        let data_dir = dir.path().join(data);
        let mut args = fixed.to_vec();
        args.extend(["--data-dir", data_dir.to_str().unwrap()]);
        let r = run(engine, &args, &dir.path().join(format!("{data}.json")));
        assert_eq!(r["status"], "completed", "{engine}: {}", r["cause"]);
        assert_checks_pass(&r);
        assert_eq!(rows(&r), rows(&sqlite), "{engine}");
        assert_eq!(r["metrics"]["benchmarks"]["b1"]["iterations"], 2);
        // The physical backup sits beside the data directory only while its unit runs.
        assert!(r["metrics"]["benchmarks"]["b10"]["backup_bytes"].as_u64().unwrap() > 100_000);
        let leftovers: Vec<_> = files_in(dir.path()).into_iter().filter(|f| f.starts_with("dbvs-backup")).collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        // The seed's clearing between executions: the server restarted before every
        // iteration, outside the timed part.
        args.extend(["--benchmark", "1,10", "--cold-iterations"]);
        let cold = run(engine, &args, &dir.path().join(format!("{data}-cold.json")));
        assert_eq!(cold["status"], "completed", "{engine}: {}", cold["cause"]);
        assert_eq!(cold["params"]["cold_iterations"], true);
        for b in ["b1", "b10"] {
            let x = &cold["metrics"]["benchmarks"][b];
            assert_eq!((x["cache_clears"].as_u64(), x["iterations"].as_u64()), (Some(2), Some(2)), "{engine} {b}: {x}");
        }
        assert!(r["metrics"]["benchmarks"]["b1"]["cache_clears"] == 0, "{}", r["metrics"]["benchmarks"]["b1"]);
    }
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    #[test]
    fn bignw_on_sqlite_calibrates_restores_state_and_backs_up() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path(), "nw.db");
        let json = dir.path().join("r.json");
        let kept = dir.path().join("kept.db");
        let r = run(
            &t,
            &["--size", "0.05", "--unit-time", "0.2s", "--repeat", "2", "--keep-db", kept.to_str().unwrap()],
            &json,
        );
        assert_eq!(r["status"], "completed", "{}", r["cause"]);
        assert_checks_pass(&r);
        let b = &r["metrics"]["benchmarks"];
        assert_eq!(b.as_object().unwrap().len(), 10);
        for (k, x) in b.as_object().unwrap() {
            assert_eq!(x["units"], 2, "{k}: {x}");
            // Calibrated to about 1.2x the unit time; a unit of one iteration may be longer.
            let mean = x["mean_s"].as_f64().unwrap();
            assert!(mean > 0.08 && (mean < 1.0 || x["iterations"] == 1), "{k}: {x}");
        }
        // BigNW x 0.05: every order is on or after 1996-01-01; new orders write 10 x (1 + 3) rows.
        assert_eq!(b["b1"]["rows_per_iteration"], 4192);
        assert_eq!(b["b7"]["rows_per_iteration"], 40);
        // CREATE TABLE AS and backups report no row count alike on every engine: left out, not 0.
        assert!(b["b5"]["rows_per_iteration"].is_null() && b["b10"]["rows_per_iteration"].is_null(), "{b}");
        assert!(b["b10"]["backup_bytes"].as_u64().unwrap() > 1_000_000, "{}", b["b10"]);
        // Backups are removed after their unit; only the pristine and the kept copy remain.
        assert_eq!(files_in(dir.path()), ["kept.db", "nw.db", "r.json"]);

        // The kept database is as built; a changed freight is caught by `dbvs check`.
        let check =
            ["check", "--target", &format!("sqlite:{}", kept.display()), "--workload", "bignw", "--size", "0.05"];
        ok(&check);
        let c = rusqlite::Connection::open(&kept).unwrap();
        c.execute("UPDATE orders SET freight = freight + 1 WHERE order_id = 7", []).unwrap();
        drop(c);
        let o = dbvs(&check);
        assert!(!o.status.success(), "{}", stdout(&o));
        assert!(stdout(&o).contains("FAILED: the freight total"), "{}", stdout(&o));
    }

    #[test]
    fn a_bignw_study_runs_each_benchmark_on_every_variant_in_share() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let study = dir.path().join("s.toml");
        std::fs::write(
            &study,
            "name = \"nw\"\nblocks = { min = 2, max = 2 }\n\
             [workload]\nname = \"bignw\"\nsize = \"0.02\"\nunit_time = \"0.1s\"\nbenchmarks = [1, 8, 10]\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"sqlcipher\"\nkind = \"sqlcipher\"\n",
        )
        .unwrap();
        let out = dir.path().join("out");
        let o = ok(&["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(stderr(&o).contains("bignw b8 update orders: "), "{}", stderr(&o));
        let r = record(&out.join("report.json"));
        assert_eq!(r["status"], "completed");
        let measures: Vec<&str> =
            r["measures"].as_array().unwrap().iter().map(|m| m["measure"]["workload"].as_str().unwrap()).collect();
        // The suite's mean answers the study (it comes first), then each benchmark.
        assert_eq!(
            measures,
            ["bignw", "bignw b1 index seek on order date", "bignw b8 update orders", "bignw b10 full backup"]
        );
        // The suite's mean over the three benchmarks: per block the geometric mean of the times,
        // so (every benchmark measured in every block) its ratio is the geometric mean of theirs.
        let ratio = |m: &Value| m["comparisons"][0]["estimate"]["ratio"].as_f64().unwrap();
        let all = r["measures"].as_array().unwrap();
        assert_eq!(all[0]["measure"]["name"], "geometric mean of 3");
        let product: f64 = all[1..].iter().map(ratio).product();
        assert!((ratio(&all[0]) - product.cbrt()).abs() < 1e-9, "{} vs {}", ratio(&all[0]), product.cbrt());
        // Balanced order: within a block, a benchmark's runs on the two variants are adjacent,
        // and both variants ran it with the iterations calibrated on the baseline.
        let runs = r["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2 * 3 * 2);
        for pair in runs.chunks(2) {
            assert_eq!(pair[0]["workload"], pair[1]["workload"], "{pair:?}");
            assert_ne!(pair[0]["variant"], pair[1]["variant"], "{pair:?}");
        }
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("Mean per variant, +-% at 95% confidence"), "{md}");
        assert!(md.contains("| bignw b10 full backup | unit time (s) |"), "{md}");
        let records: Vec<Value> = std::fs::read_dir(out.join("runs"))
            .unwrap()
            .map(|e| record(&e.unwrap().path()))
            .filter(|v| v["params"]["benchmarks"][0] == "b8")
            .collect();
        assert_eq!(records.len(), 5, "a calibration run and four measured runs");
        let ks: Vec<&Value> = records.iter().map(|v| &v["metrics"]["benchmarks"]["b8"]["iterations"]).collect();
        assert!(ks.iter().all(|k| *k == ks[0]), "{ks:?}");
    }
}
