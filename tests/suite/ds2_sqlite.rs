//! DS2 on embedded SQLite, end to end through the real binary.

use crate::common::*;
use rusqlite::Connection;
use serde_json::Value;

fn table_digest(path: &std::path::Path) -> Vec<String> {
    let c = Connection::open(path).unwrap();
    ["customers", "orders", "orderlines", "cust_hist", "products", "inventory", "categories"]
        .iter()
        .map(|t| {
            // Every column of every row, in a stable order, folded into one string per table.
            let mut st = c.prepare(&format!("SELECT * FROM {t} ORDER BY 1, 2")).unwrap();
            let n = st.column_count();
            let rows: Vec<String> = st
                .query_map([], |r| {
                    Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join(","))
                })
                .unwrap()
                .map(Result::unwrap)
                .collect();
            rows.join("|")
        })
        .collect()
}

#[test]
fn build_is_deterministic_per_seed_and_has_ds2_row_counts() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    for (name, seed) in [("a.db", "7"), ("b.db", "7"), ("c.db", "8")] {
        ok(&["build", "--target", &target(dir.path(), name), "--size", "1MB", "--seed", seed]);
    }
    let (a, b, c) = (
        table_digest(&dir.path().join("a.db")),
        table_digest(&dir.path().join("b.db")),
        table_digest(&dir.path().join("c.db")),
    );
    assert_eq!(a, b, "same seed must give the same data");
    assert_ne!(a[0], c[0], "another seed must give other customers");

    let db = Connection::open(dir.path().join("a.db")).unwrap();
    // 1MB = Small x 1/10: 2,000 customers, 100 orders/month, 1,000 products.
    assert_eq!(count(&db, "customers"), 2000);
    assert_eq!(count(&db, "orders"), 1200);
    assert_eq!(count(&db, "products"), 1000);
    assert_eq!(count(&db, "inventory"), 1000);
    assert_eq!(count(&db, "categories"), 16);
    assert_eq!(count(&db, "reorder"), 0);
    let lines = count(&db, "orderlines");
    assert_eq!(count(&db, "cust_hist"), lines);
    assert!((lines as f64 / 1200.0 - 5.0).abs() < 0.4, "about 5 lines per order, got {lines}");
    let meta: String = db.query_row("SELECT value FROM dbvs_meta WHERE key = 'orderlines'", [], |r| r.get(0)).unwrap();
    assert_eq!(meta, lines.to_string());
    // Full-text search finds every product by its own title.
    let hits: i64 = db
        .query_row(
            "SELECT count(*) FROM products_fts WHERE products_fts MATCH (SELECT 'title : (\"' || replace(title, ' ', '\" AND \"') || '\")' FROM products WHERE prod_id = 17)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(hits >= 1);
}

#[test]
fn small_size_has_ds2_row_counts() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    ok(&["build", "--target", &target(dir.path(), "s.db"), "--size", "S"]);
    let db = Connection::open(dir.path().join("s.db")).unwrap();
    assert_eq!((count(&db, "customers"), count(&db, "orders"), count(&db, "products")), (20_000, 12_000, 10_000));
    let specials: i64 = db.query_row("SELECT count(*) FROM products WHERE special = 1", [], |r| r.get(0)).unwrap();
    assert!((50..=150).contains(&specials), "about 1 in 100 products are specials: {specials}");
}

fn stocks(path: &std::path::Path) -> Vec<(i64, i64)> {
    let c = Connection::open(path).unwrap();
    let mut st = c.prepare("SELECT prod_id, quan_in_stock FROM inventory ORDER BY prod_id").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn run_keeps_the_ds2_invariants_and_reports_json() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("p.db");
    let kept = dir.path().join("kept.db");
    let json = dir.path().join("run.json");
    let t = target(dir.path(), "p.db");
    let out = ok(&[
        "run",
        "--target",
        &t,
        "--size",
        "1MB",
        "--threads",
        "2",
        "--duration",
        "3s",
        "--warmup",
        "1s",
        "--report-interval",
        "1s",
        "--json",
        json.to_str().unwrap(),
        "--keep-db",
        kept.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(err.contains("Stats reset"), "{err}");
    assert!(
        err.lines().any(|l| l.starts_with("et=") && l.contains("n_overall=") && l.contains("rollbacks: n=")),
        "{err}"
    );
    assert!(err.contains("Final ("), "{err}");
    assert!(stdout(&out).contains("latency (ms)"));

    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed");
    assert_eq!(r["workload"], "ds2");
    assert_eq!(r["target"]["engine"], "sqlite");
    assert_eq!(r["params"]["pacing"]["threads"], 2);
    for k in ["cpu_model", "cores", "memory_bytes", "kernel", "dbvs_version"] {
        assert!(!r["env"][k].is_null(), "env.{k} missing");
    }
    assert!(r["env"]["engine_versions"]["sqlite"].as_str().unwrap().starts_with('3'));
    assert!(r["env"]["engine_versions"]["sqlcipher"].as_str().unwrap().starts_with('4'));
    let m = &r["metrics"];
    let orders = m["orders"].as_u64().unwrap();
    assert!(orders > 100, "{m}");
    assert_eq!(m["purchases"].as_u64().unwrap() + m["rollbacks"].as_u64().unwrap(), orders);
    assert!(m["opm"].as_f64().unwrap() > 0.0);
    for op in ["order", "login", "new_customer", "browse", "purchase"] {
        let l = &m["latency_ms"][op];
        assert!(
            l["p50_ms"].as_f64().unwrap() <= l["p99_ms"].as_f64().unwrap()
                && l["p99_ms"].as_f64().unwrap() <= l["max_ms"].as_f64().unwrap(),
            "{op}: {l}"
        );
    }
    assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);

    // Verify the invariants independently of dbvs's own checks.
    let committed = r["totals"]["committed"].as_i64().unwrap();
    let new_customers = r["totals"]["ops"]["new_customer"].as_i64().unwrap();
    let before = Connection::open(&pristine).unwrap();
    let after = Connection::open(&kept).unwrap();
    assert_eq!(count(&after, "orders"), count(&before, "orders") + committed);
    assert_eq!(count(&after, "customers"), count(&before, "customers") + new_customers);
    let new_lines = count(&after, "orderlines") - count(&before, "orderlines");
    assert_eq!(count(&after, "cust_hist") - count(&before, "cust_hist"), new_lines);
    assert!(new_lines >= committed && new_lines <= 9 * committed);
    // Stock only falls, never below zero, never below min(initial, restock floor).
    for ((p, s0), (_, s1)) in stocks(&pristine).into_iter().zip(stocks(&kept)) {
        assert!(s1 <= s0 && s1 >= s0.min(3) && s1 >= 0, "product {p}: {s0} -> {s1}");
    }
    // The pristine database is untouched, and the run left only what was asked for.
    assert_eq!(count(&before, "orders"), 1200);
    drop((before, after));
    assert_eq!(files_in(dir.path()), vec!["kept.db", "p.db", "run.json"]);
}

#[test]
fn rollback_rate_with_default_settings_matches_the_restock_analysis() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    ok(&[
        "run",
        "--target",
        &target(dir.path(), "s.db"),
        "--size",
        "10MB",
        "--threads",
        "2",
        // Long enough for 1,000 orders while the suite's other tests load the machine
        // (4 s gave 836 in a full suite run).
        "--duration",
        "15s",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (orders, rate) = (r["metrics"]["orders"].as_f64().unwrap(), r["metrics"]["rollback_rate"].as_f64().unwrap());
    assert!(orders >= 1000.0, "too few orders to judge: {orders}");
    let predicted = dbvs::workloads::ds2::predicted_rollback_rate(&stocks(&dir.path().join("s.db")), 5);
    // The analysis: about 2/501 per line, about 2% per order of 1..9 lines.
    assert!((0.012..0.03).contains(&predicted), "predicted {predicted}");
    let se = (predicted * (1.0 - predicted) / orders).sqrt();
    assert!((rate - predicted).abs() < 5.0 * se, "observed {rate}, predicted {predicted} +- {se}");
}

#[test]
fn rollback_rate_stays_steady_through_the_run() {
    let _turn = share();
    // Without the restock rule stock would drain and rollbacks climb; compare the first
    // interval with the rest of the run.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    ok(&[
        "run",
        "--target",
        &target(dir.path(), "t.db"),
        "--size",
        "1MB",
        "--threads",
        "1",
        "--duration",
        "4s",
        "--warmup",
        "0",
        "--report-interval",
        "1s",
        "--json",
        json.to_str().unwrap(),
        "--n-line-items",
        "9",
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let iv = r["intervals"].as_array().unwrap();
    assert!(iv.len() >= 3, "{iv:?}");
    let first = (iv[0]["rollbacks"].as_f64().unwrap(), iv[0]["units"].as_f64().unwrap());
    let last = iv.last().unwrap();
    let (n, k) = (last["units"].as_f64().unwrap() - first.1, last["rollbacks"].as_f64().unwrap() - first.0);
    let (p1, p2) = (first.0 / first.1, k / n);
    let se = (p1 * (1.0 - p1) / first.1 + p2 * (1.0 - p2) / n).sqrt();
    assert!((p1 - p2).abs() < 5.0 * se + 0.005, "rollback rate drifted: {p1} then {p2}");
}

/// The embedded SQLite syncs a commit with fdatasync, as Linux distributions' builds do,
/// not with fsync, which also commits ext4's journal whenever the file's time moved.
#[test]
fn commits_sync_with_fdatasync_as_linux_builds_of_sqlite_do() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let db = target(dir.path(), "s.db");
    ok(&["build", "--target", &db, "--size", "1MB"]);
    let trace = dir.path().join("syncs");
    let dbvs = command();
    let traced = std::process::Command::new("strace")
        .args(["-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(&trace)
        .arg(dbvs.get_program())
        .args(["run", "--target", &db, "--size", "1MB", "--duration", "1s", "--warmup", "0", "--no-store"])
        .envs(dbvs.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .output()
        .expect("strace runs (scripts/setup installs it)");
    assert!(traced.status.success(), "{}", stderr(&traced));
    let syncs = std::fs::read_to_string(&trace).unwrap();
    let of_the_wal = |call: &str| syncs.lines().filter(|l| l.contains(call) && l.contains("-wal>")).count();
    assert!(of_the_wal("fdatasync(") > 10, "the run's commits sync the WAL with fdatasync:\n{syncs}");
    assert_eq!(of_the_wal(" fsync("), 0, "and never with fsync:\n{syncs}");
}
