//! TPC-C and the batch suite driven through the real binary: on SQLite in detail, and on
//! managed PostgreSQL and MariaDB for the same invariants and the same batch results.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn record(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn run(target: &str, extra: &[&str], json: &Path) -> Value {
    let mut args = vec!["run", "--target", target, "--no-store", "--json", json.to_str().unwrap()];
    args.extend_from_slice(extra);
    ok(&args);
    record(json)
}

fn assert_checks_pass(r: &Value) {
    let checks = r["checks"].as_array().unwrap();
    assert!(checks.len() >= 8 || r["workload"] == "batch", "{checks:?}");
    assert!(checks.iter().all(|c| c["ok"] == true), "{checks:#?}");
}

#[test]
fn tpcc_on_sqlite_keeps_the_consistency_conditions_and_counts_nopm_from_the_schema() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), "c.db");
    let json = dir.path().join("r.json");
    let kept = dir.path().join("kept.db");
    let r = run(
        &t,
        &[
            "--workload",
            "tpcc",
            "--threads",
            "3",
            "--duration",
            "6s",
            "--warmup",
            "1s",
            "--keep-db",
            kept.to_str().unwrap(),
        ],
        &json,
    );
    assert_eq!(r["status"], "completed");
    assert_checks_pass(&r);
    let m = &r["metrics"];
    let minutes = r["elapsed_s"].as_f64().unwrap() / 60.0;
    // NOPM comes from D_NEXT_O_ID; the client's own count of committed New-Orders must agree.
    let client_no = m["latency_ms"]["new_order"]["count"].as_f64().unwrap() - m["rollbacks"].as_f64().unwrap();
    let nopm = m["nopm"].as_f64().unwrap();
    assert!(nopm > 1000.0, "{m}");
    assert!((nopm / (client_no / minutes) - 1.0).abs() < 0.03, "NOPM {nopm} vs client {}", client_no / minutes);
    let tpm = m["tpm"].as_f64().unwrap();
    assert!((tpm - m["transactions"].as_f64().unwrap() / minutes).abs() < 1.0);
    // The standard deck: 45/43/4/4/4.
    let mix = &m["mix_pct"];
    assert!((mix["new_order"].as_f64().unwrap() - 45.0).abs() < 2.0, "{mix}");
    assert!((mix["payment"].as_f64().unwrap() - 43.0).abs() < 2.0, "{mix}");
    assert!(mix["delivery"].as_f64().unwrap() > 3.0, "{mix}");

    // The kept database passes `dbvs check`; a broken warehouse YTD fails it.
    let kept_t = format!("sqlite:{}", kept.display());
    let o = ok(&["check", "--target", &kept_t, "--workload", "tpcc"]);
    assert!(stdout(&o).contains("all 4 checks passed"), "{}", stdout(&o));
    let c = rusqlite::Connection::open(&kept).unwrap();
    c.execute("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1", []).unwrap();
    drop(c);
    let o = dbvs(&["check", "--target", &kept_t, "--workload", "tpcc"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("FAILED: condition 1"), "{}", stdout(&o));
}

#[test]
fn hammerora_profiles_iterations_and_sleeps_pace_the_run() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), "c.db");
    let json = dir.path().join("r.json");
    // Seed 002's query-intensive profile, as 2 users x 166 requests (two whole decks each).
    let r = run(&t, &["--workload", "tpcc", "--profile", "query", "--users", "2", "--iterations", "166"], &json);
    assert_eq!(r["status"], "completed");
    assert_checks_pass(&r);
    let m = &r["metrics"];
    assert_eq!(m["transactions"], 332);
    let n = |op: &str| m["latency_ms"][op]["count"].as_u64().unwrap();
    // Weights NO/P/D/SL/OS = 1/1/1/50/30 per 83 cards.
    assert_eq!((n("new_order"), n("payment"), n("delivery"), n("stock_level"), n("order_status")), (4, 4, 4, 200, 120));
    assert_eq!(r["params"]["profile"], "hammerora-query");

    // A random sleep of up to 40 ms after each of 30 requests: about 0.6 s of sleeping.
    let r = run(&t, &["--workload", "tpcc", "--iterations", "30", "--random-sleep", "40ms"], &json);
    assert!(r["elapsed_s"].as_f64().unwrap() > 0.35, "{}", r["elapsed_s"]);
    assert!((r["params"]["pacing"]["think_time"].as_f64().unwrap() - 0.02).abs() < 1e-9);

    // Spec keying (18 s before a New-Order, 2-3 s before the others) allows at most one
    // transaction per user in 2.5 s.
    let r = run(
        &t,
        &["--workload", "tpcc", "--spec-pacing", "--threads", "2", "--duration", "2.5s", "--warmup", "0"],
        &json,
    );
    assert!(r["metrics"]["transactions"].as_u64().unwrap() <= 2, "{}", r["metrics"]);

    let o = dbvs(&["run", "--target", &t, "--workload", "tpcc", "--iterations", "5", "--warmup", "5s"]);
    assert!(stderr(&o).contains("--warmup is not taken with iterations"), "{}", stderr(&o));
    let o = dbvs(&["run", "--target", &t, "--workload", "tpcc", "--profile", "fast"]);
    assert!(stderr(&o).contains("unknown TPC-C profile 'fast'"), "{}", stderr(&o));
}

#[test]
fn batch_on_sqlite_times_each_statement_with_a_confidence_interval() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path(), "c.db");
    let json = dir.path().join("r.json");
    let r = run(&t, &["--workload", "batch", "--repeat", "3", "--threads", "4"], &json);
    assert_eq!(r["status"], "completed");
    assert_checks_pass(&r);
    assert_eq!(r["params"]["pacing"]["threads"], 1, "the suite runs in one session");
    let s = &r["metrics"]["statements"];
    for q in ["q1", "q2", "q3", "q4", "q5"] {
        assert_eq!(s[q]["executions"], 3, "{q}");
        assert!(s[q]["mean_ms"].as_f64().unwrap() > 0.0);
        assert!(s[q]["ci95_ms"].as_f64().unwrap().is_finite(), "{q}: {}", s[q]);
    }
    assert_eq!(s["q2"]["rows"].as_array().unwrap().len(), 10);
    assert!(s["q3"]["rows"][0].as_str().unwrap().starts_with('E'));
    assert_eq!(files_in(dir.path()), vec!["c.db", "r.json"]);
    // Seed 002's indexes make the order-line amount range an index range scan, as the seed
    // states its plans were.
    let db = rusqlite::Connection::open(dir.path().join("c.db")).unwrap();
    let plan = |q: usize| -> Vec<String> {
        let sql = r["params"]["statements"][q].as_str().unwrap();
        let mut plan = db.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        plan.query_map([], |row| row.get(3)).unwrap().map(Result::unwrap).collect()
    };
    let steps = plan(1);
    assert!(steps.iter().any(|s| s.contains("USING INDEX order_line_i2 (ol_amount>? AND ol_amount<?)")), "{steps:?}");
    // Every column is selected, as the seed's were, so no index alone answers a query.
    for q in 0..4 {
        assert!(plan(q).iter().all(|s| !s.contains("COVERING INDEX")), "q{}: {:?}", q + 1, plan(q));
    }
    // A TPC-C run refuses that database: TPC-C's writes would pay for the extra indexes.
    let o = dbvs(&["run", "--target", &t, "--workload", "tpcc", "--duration", "1s"]);
    assert!(!o.status.success() && stderr(&o).contains("batch"), "{}", stderr(&o));
}

/// The same seed gives the same data on every engine, so the batch statements must return
/// the same rows; and TPC-C keeps its conditions on the servers too.
#[test]
fn batch_returns_the_same_rows_on_every_engine() {
    let _share = long_share();
    let dir = reachable_tempdir();
    let json = dir.path().join("r.json");
    let (sqlite, sqlite_tpcc) = (target(dir.path(), "batch.db"), target(dir.path(), "tpcc.db"));
    let pg_dir = dir.path().join("pg");
    let my_dir = dir.path().join("my");
    // Targets for the batch suite and TPC-C: a SQLite path holds one database.
    let engines: [(&str, &str, Vec<&str>); 3] = [
        (sqlite.as_str(), sqlite_tpcc.as_str(), vec![]),
        ("managed-postgres", "managed-postgres", vec!["--data-dir", pg_dir.to_str().unwrap()]),
        ("managed-mariadb", "managed-mariadb", vec!["--data-dir", my_dir.to_str().unwrap()]),
    ];
    let mut rows = Vec::new();
    for (t, tpcc, extra) in &engines {
        let mut args = vec!["--workload", "batch", "--repeat", "2"];
        args.extend(extra);
        let r = run(t, &args, &json);
        assert_checks_pass(&r);
        let s = &r["metrics"]["statements"];
        rows.push(["q1", "q2", "q3", "q4", "q5"].map(|q| s[q]["rows"].clone()));

        let mut args = vec!["--workload", "tpcc", "--threads", "3", "--duration", "3s", "--warmup", "1s"];
        args.extend(extra);
        let r = run(tpcc, &args, &json);
        assert_eq!(r["status"], "completed", "{tpcc}: {r}");
        assert_checks_pass(&r);
        assert!(r["metrics"]["nopm"].as_f64().unwrap() > 0.0);

        // The same transactions as stored procedures, one call each, keep the same conditions.
        let mut args =
            vec!["--workload", "tpcc", "--procedures", "--threads", "3", "--duration", "3s", "--warmup", "1s"];
        args.extend(extra);
        if extra.is_empty() {
            let o = dbvs(
                &["run", "--target", tpcc, "--no-store", "--json", json.to_str().unwrap()]
                    .into_iter()
                    .chain(args.iter().copied())
                    .collect::<Vec<_>>(),
            );
            assert!(!o.status.success(), "SQLite ran procedures");
            assert!(stderr(&o).contains("--procedures needs PostgreSQL or MariaDB"), "{}", stderr(&o));
            continue;
        }
        let r = run(tpcc, &args, &json);
        assert_eq!(r["status"], "completed", "{tpcc} with procedures: {r}");
        assert_checks_pass(&r);
        assert!(r["params"]["transactions"].as_str().unwrap().starts_with("stored procedures"), "{}", r["params"]);
        let latency = &r["metrics"]["latency_ms"];
        for op in ["new_order", "payment", "order_status", "delivery", "stock_level"] {
            assert!(latency[op]["count"].as_u64().unwrap() > 0, "{tpcc}: no {op} ran: {latency}");
        }
    }
    assert!(rows[0][1].as_array().unwrap().len() == 10 && rows[0][4][0].as_str().unwrap().parse::<u64>().unwrap() > 0);
    assert_eq!(rows[1], rows[0], "PostgreSQL differs from SQLite");
    assert_eq!(rows[2], rows[0], "MariaDB differs from SQLite");

    // Cold executions restart the managed server before each one.
    let r = run(
        "managed-postgres",
        &["--data-dir", pg_dir.to_str().unwrap(), "--workload", "batch", "--repeat", "2", "--cold"],
        &json,
    );
    assert_eq!(r["status"], "completed");
    assert_eq!(r["params"]["cold"], true);
    assert_eq!(r["metrics"]["statements"]["q2"]["rows"], rows[0][1]);
}
