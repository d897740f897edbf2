//! Every OLTP workload's contract, run once per engine by one macro (as ripgrep runs its
//! tests per regex engine): build, run on a kept copy, every invariant check passes, the
//! pristine database is untouched, the kept copy grew by exactly the committed work, and no
//! run copy or staging database is left behind. The seam's deferred writes too.

use crate::common::*;
use dbvs::targets::managed_maria::ManagedMaria;
use dbvs::targets::managed_pg::ManagedPg;
use dbvs::targets::{sql, Binaries, Engine, TargetOptions};
use serde_json::Value;

/// A database server (or SQLite directory) of one engine that the test owns.
struct Place {
    dir: tempfile::TempDir,
    server: Server,
}

enum Server {
    Sqlite,
    Postgres(ManagedPg),
    Mariadb(ManagedMaria),
}

impl Place {
    fn start(engine: Engine) -> Self {
        let dir = reachable_tempdir();
        // The servers keep their write-ahead log apart (`--log-dir`), so every workload's
        // contract holds with it too (MariaDB's run copies carry their redo log along).
        let (data, log) = (dir.path().join("server"), dir.path().join("log"));
        let server = match engine {
            Engine::Sqlite => Server::Sqlite,
            Engine::Postgres => Server::Postgres(
                ManagedPg::start(&Binaries::Packaged, &data, Some(&log), &[], &Default::default()).unwrap(),
            ),
            Engine::Mariadb => Server::Mariadb(
                ManagedMaria::start(&Binaries::Packaged, &data, Some(&log), &[], &Default::default()).unwrap(),
            ),
        };
        Self { dir, server }
    }

    /// The `--target` for database `db`.
    fn target(&self, db: &str) -> String {
        match &self.server {
            Server::Sqlite => format!("sqlite:{}", self.dir.path().join(format!("{db}.db")).display()),
            Server::Postgres(s) => format!("postgres://dbvs@127.0.0.1:{}/{db}", s.port),
            Server::Mariadb(s) => format!("mysql://dbvs@127.0.0.1:{}/{db}", s.port),
        }
    }

    /// One number from a query on database `db`, through dbvs's own engine seam.
    fn number(&self, db: &str, query: &str) -> i64 {
        let target = dbvs::targets::open(&self.target(db).parse().unwrap(), TargetOptions::default()).unwrap();
        sql::number(&mut target.existing().unwrap().connect().unwrap(), query).unwrap() as i64
    }

    /// Databases (or SQLite files) named after `db` but not `db` itself: run copies or
    /// staging left behind.
    fn leftovers(&self, db: &str) -> Vec<String> {
        let names: Vec<String> = match &self.server {
            Server::Sqlite => files_in(self.dir.path()),
            Server::Postgres(_) | Server::Mariadb(_) => {
                let query = match self.server {
                    Server::Postgres(_) => "SELECT datname FROM pg_database",
                    _ => "SELECT schema_name FROM information_schema.schemata",
                };
                let target = dbvs::targets::open(&self.target(db).parse().unwrap(), TargetOptions::default()).unwrap();
                let rows = sql::adhoc(&mut target.existing().unwrap().connect().unwrap(), query).unwrap();
                (0..rows.len()).map(|r| rows.text(r, 0).unwrap().into_owned()).collect()
            }
        };
        // Copies and staging are `DB_...` on a server and `.DB.db.*` beside a SQLite file.
        let (server_copy, sqlite_copy) = (format!("{db}_"), format!(".{db}.db."));
        names.into_iter().filter(|n| n.starts_with(&server_copy) || n.starts_with(&sqlite_copy)).collect()
    }
}

/// Runs `workload` for a few seconds on a kept copy; returns the run record.
fn run_kept(place: &Place, workload: &str, size: &str, kept: &str, options: &[&str]) -> Value {
    let json = place.dir.path().join(format!("{workload}.json"));
    let pristine = place.target(workload);
    let kept_name = match place.server {
        Server::Sqlite => place.dir.path().join(format!("{kept}.db")).display().to_string(),
        _ => kept.to_string(),
    };
    ok(&[&["build", "--target", &pristine, "--workload", workload, "--size", size], options].concat());
    let run = [
        "run",
        "--target",
        &pristine,
        "--workload",
        workload,
        "--size",
        size,
        "--threads",
        "2",
        "--duration",
        "3s",
        "--warmup",
        "1s",
        "--json",
        json.to_str().unwrap(),
        "--keep-db",
        &kept_name,
        "--no-store",
    ];
    ok(&[&run[..], options].concat());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed", "{r}");
    let checks = r["checks"].as_array().unwrap();
    assert!(!checks.is_empty() && checks.iter().all(|c| c["ok"] == true), "{}", r["checks"]);
    assert!(r["totals"]["committed"].as_i64().unwrap() > 10, "{}", r["totals"]);
    let rss = &r["driver"]["rss_mb"];
    assert!(rss[0].as_f64().unwrap() > 1.0 && rss[1].as_f64().unwrap() > 1.0, "RSS at the window's ends: {rss}");
    for db in [workload, kept] {
        assert_eq!(place.leftovers(db), Vec::<String>::new(), "run copies and staging are removed");
    }
    r
}

fn ds2(engine: Engine) {
    let place = Place::start(engine);
    let r = run_kept(&place, "ds2", "1MB", "ds2kept", &[]);
    assert_eq!(r["target"]["engine"], engine.name());
    let committed = r["totals"]["committed"].as_i64().unwrap();
    let count = |db: &str, table: &str| place.number(db, &format!("SELECT count(*) FROM {table}"));
    assert_eq!(count("ds2", "orders"), 1200, "the pristine database is untouched");
    assert_eq!(count("ds2kept", "orders"), 1200 + committed);
    assert_eq!(
        count("ds2kept", "orderlines") - count("ds2", "orderlines"),
        count("ds2kept", "cust_hist") - count("ds2", "cust_hist")
    );
    assert_eq!(count("ds2kept", "inventory WHERE quan_in_stock < 0"), 0);
    let names: Vec<&str> = r["checks"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert!(names.iter().any(|n| n.contains("catalogue search")), "{names:?}");
}

fn tpcb(engine: Engine) {
    let place = Place::start(engine);
    let r = run_kept(&place, "tpcb", "1", "tpcbkept", &[]);
    assert_eq!(r["checks"].as_array().unwrap().len(), 4, "{}", r["checks"]);
    // pgbench's own tables and sizes: pgbench can run against the database dbvs built.
    assert_eq!(place.number("tpcb", "SELECT count(*) FROM pgbench_accounts"), 100_000);
    assert_eq!(place.number("tpcb", "SELECT count(*) FROM pgbench_tellers"), 10);
    let committed = r["totals"]["committed"].as_i64().unwrap();
    assert_eq!(place.number("tpcbkept", "SELECT count(*) FROM pgbench_history"), committed);
}

fn tpcc(engine: Engine) {
    let place = Place::start(engine);
    let r = run_kept(&place, "tpcc", "1", "tpcckept", &[]);
    // The kept copy holds the warm-up's orders too; NOPM counts the measured window's.
    let new_orders = place.number("tpcckept", "SELECT count(*) FROM orders") - 30_000;
    let measured = r["metrics"]["new_orders_committed"].as_i64().unwrap();
    assert!(measured > 0 && new_orders >= measured, "{new_orders} orders in the copy, {measured} measured");
}

fn oltp(engine: Engine) {
    let place = Place::start(engine);
    // More tables than one connection's default statement cache holds statements for (32).
    let tables = ["--tables", "4"];
    let r = run_kept(&place, "oltp", "1000", "oltpkept", &tables);
    assert_eq!(r["checks"].as_array().unwrap().len(), 4, "{}", r["checks"]);
    let tps = r["metrics"]["tps"].as_f64().unwrap();
    assert!((r["metrics"]["qps"].as_f64().unwrap() - 20.0 * tps).abs() < 1e-6 * tps, "{}", r["metrics"]);
    // The other mixes, briefly, on fresh copies; their checks ran too (run_kept's for read_write).
    for mix in ["read_only", "write_only", "point_select"] {
        let pristine = place.target("oltp");
        let args =
            ["run", "--target", &pristine, "--workload", "oltp", "--size", "1000", "--tables", "4", "--mix", mix];
        let out =
            stdout(&ok(&[&args[..], &["--threads", "2", "--duration", "1s", "--warmup", "0s", "--no-store"]].concat()));
        assert!(out.contains("check ok") && !out.contains("FAILED"), "{mix}: {out}");
    }
    // sysbench itself runs on the copy dbvs built and ran: the same tables, statements and ids.
    let driver = match &place.server {
        Server::Sqlite => return,
        Server::Postgres(s) => format!(
            "--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port={} --pgsql-user=dbvs --pgsql-db=oltpkept",
            s.port
        ),
        Server::Mariadb(s) => format!(
            "--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port={} --mysql-user=dbvs --mysql-db=oltpkept",
            s.port
        ),
    };
    let sysbench = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("sysbench oltp_read_write {driver} --tables=4 --table-size=1000 --threads=2 --time=1 run"),
        ])
        .output()
        .expect("sysbench runs (scripts/setup installs it)");
    let said = String::from_utf8_lossy(&sysbench.stdout);
    assert!(
        sysbench.status.success() && said.contains("transactions:"),
        "{said}{}",
        String::from_utf8_lossy(&sysbench.stderr)
    );
    let kept = place.target("oltpkept");
    let out = stdout(&ok(&["check", "--target", &kept, "--workload", "oltp", "--size", "1000", "--tables", "4"]));
    assert!(out.contains("check ok") && !out.contains("FAILED"), "{out}");
}

/// Writes (and unused reads) deferred through the seam ([`sql::Tx::defer`], pipelined on
/// the servers) run in the order written and inside their transaction: a later read sees them, a failing one
/// fails the transaction at the next statement and nothing of it stays, a rollback drops
/// them, and the session goes on afterwards.
fn deferred(engine: Engine) {
    use dbvs::driver::{Outcome, UnitRecorder};
    use sql::Arg::Int;
    const LIST: &[&str] = &[
        "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?",
        "INSERT INTO pgbench_branches (bid, bbalance, filler) VALUES (?, 0, '')",
        "SELECT bbalance FROM pgbench_branches WHERE bid = ?",
    ];
    let (add, insert, read) = (0, 1, 2);
    let place = Place::start(engine);
    ok(&["build", "--target", &place.target("tpcb"), "--workload", "tpcb", "--size", "1"]);
    let target = dbvs::targets::open(&place.target("tpcb").parse().unwrap(), TargetOptions::default()).unwrap();
    let conn = target.existing().unwrap().connect().unwrap();
    let mut session = sql::session(conn, &sql::Statements::portable(LIST)).unwrap();
    let mut rec = UnitRecorder::default();
    let balance = |s: &mut Box<dyn sql::Session>| s.query(read, &[Int(1)]).unwrap().int(0, 0).unwrap();

    let failed = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(5), Int(1)])?;
        tx.defer(insert, &[Int(1)])?; // branch 1 exists: a duplicate key
        tx.query(read, &[Int(1)])?;
        Ok(Outcome::Committed)
    });
    assert!(failed.is_err(), "the duplicate fails the transaction");
    assert_eq!(balance(&mut session), 0, "the update before the duplicate was rolled back");
    // A write that follows a failed one in the same pipeline does not stay either.
    let failed = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(insert, &[Int(1)])?;
        tx.execute(add, &[Int(9), Int(1)])?;
        Ok(Outcome::Committed)
    });
    assert!(failed.is_err(), "the duplicate fails the transaction");
    assert_eq!(balance(&mut session), 0, "the write after the duplicate was rolled back");

    let mut seen = 0;
    let done = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(7), Int(1)])?;
        seen = tx.query(read, &[Int(1)])?.int(0, 0)?;
        tx.defer(add, &[Int(1), Int(1)])?;
        Ok(Outcome::Committed)
    });
    assert_eq!(done.unwrap(), Outcome::Committed);
    assert_eq!(seen, 7, "a read sees the write deferred before it");
    assert_eq!(balance(&mut session), 8, "the write deferred last ran with the commit");

    let undone = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(100), Int(1)])?;
        Ok(Outcome::RolledBack)
    });
    assert_eq!(undone.unwrap(), Outcome::RolledBack);
    assert_eq!(balance(&mut session), 8, "a rollback drops what was deferred");

    // A run of one statement goes as one batch where the engine has them (MariaDB).
    let batched = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(2), Int(1)])?;
        tx.defer(add, &[Int(3), Int(1)])?;
        Ok(Outcome::Committed)
    });
    assert_eq!(batched.unwrap(), Outcome::Committed);
    assert_eq!(balance(&mut session), 13, "every write of a run ran, once");
    let failed = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(insert, &[Int(2)])?;
        tx.defer(insert, &[Int(1)])?; // a duplicate inside the run
        Ok(Outcome::Committed)
    });
    assert!(failed.is_err(), "a duplicate inside a run fails the transaction at the commit");
    assert!(session.query(read, &[Int(2)]).unwrap().is_empty(), "and its first write is rolled back");

    // A read whose rows the transaction does not use travels with the writes around it
    // ([`sql::Tx::defer_read`], one pipeline on PostgreSQL), and hides no failure after it.
    let read_along = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(4), Int(1)])?;
        tx.defer_read(read, &[Int(1)])?;
        tx.defer(add, &[Int(1), Int(1)])?;
        Ok(Outcome::Committed)
    });
    assert_eq!(read_along.unwrap(), Outcome::Committed);
    assert_eq!(balance(&mut session), 18, "the writes around a deferred read ran, once each");
    let failed = session.transaction(false, &mut rec, &mut |tx| {
        tx.defer(add, &[Int(4), Int(1)])?;
        tx.defer_read(read, &[Int(1)])?;
        tx.defer(insert, &[Int(1)])?; // a duplicate after the read
        Ok(Outcome::Committed)
    });
    assert!(failed.is_err(), "a duplicate after a deferred read fails the transaction");
    assert_eq!(balance(&mut session), 18, "and nothing of it stays");
}

/// One test per workload and engine: `workload::engine`.
macro_rules! per_engine {
    ($($workload:ident),*) => {$(
        mod $workload {
            #[test]
            fn sqlite() {
                let _share = crate::common::share();
                super::$workload(dbvs::targets::Engine::Sqlite)
            }
            #[test]
            fn postgres() {
                let _share = crate::common::share();
                super::$workload(dbvs::targets::Engine::Postgres)
            }
            #[test]
            fn mariadb() {
                let _share = crate::common::share();
                super::$workload(dbvs::targets::Engine::Mariadb)
            }
        }
    )*};
}

per_engine!(ds2, tpcb, tpcc, oltp, deferred);
