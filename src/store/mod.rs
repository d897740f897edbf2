//! The results store: one SQLite file holding studies, runs, their metrics and per-interval
//! samples. Each run is committed in its own transaction the moment it ends (WAL, full
//! sync), so a study killed with -9 loses nothing it had finished.

use crate::cipher::table::AesTable;
use crate::record::RunRecord;
use crate::status::Status;
use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use std::path::{Path, PathBuf};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS studies (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT,
  status TEXT NOT NULL, cause TEXT, study_file TEXT NOT NULL, report_json TEXT);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, study_id INTEGER REFERENCES studies(id), block INTEGER, variant TEXT,
  workload TEXT NOT NULL, status TEXT NOT NULL, cause TEXT, finished_at TEXT NOT NULL,
  headline REAL, record_json TEXT);
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY (run_id, name));
CREATE TABLE IF NOT EXISTS samples (
  run_id INTEGER NOT NULL REFERENCES runs(id), et_s REAL NOT NULL, units INTEGER NOT NULL,
  per_min REAL NOT NULL, interval_per_min REAL NOT NULL, avg_ms REAL NOT NULL, rollback_pct REAL NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_study ON runs(study_id);
";

pub struct Store {
    conn: Connection,
    pub path: PathBuf,
}

/// Where the store lives: `$DBVS_RESULTS`, else `results.db` in [`crate::sys::data_home`].
pub fn default_path() -> PathBuf {
    std::env::var_os("DBVS_RESULTS").map_or_else(|| crate::sys::data_home().join("results.db"), PathBuf::from)
}

#[derive(Clone, Debug, Serialize)]
pub struct StudyRow {
    pub id: i64,
    pub name: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: Status,
    pub cause: Option<String>,
    pub runs: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub study_id: Option<i64>,
    pub block: Option<i64>,
    pub variant: Option<String>,
    pub workload: String,
    pub status: Status,
    pub cause: Option<String>,
    pub finished_at: String,
    pub headline: Option<f64>,
    pub record_json: Option<String>,
}

/// Where a run sits in a study.
pub struct Placement<'a> {
    pub study: i64,
    pub block: usize,
    pub variant: &'a str,
    /// The workload's label in the study (e.g. `tpcc hammerora-query`).
    pub workload: &'a str,
}

/// How long a process waits for others sharing the store.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

fn is_busy(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error_code)
            .is_some_and(|code| code == rusqlite::ErrorCode::DatabaseBusy)
    })
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl Store {
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the results store directory {}", dir.display()))?;
        }
        let unusable = || {
            format!(
                "cannot use the results store {}; repair or move it, or set DBVS_RESULTS to another file",
                path.display()
            )
        };
        // A few steps of opening (the switch to WAL above all) answer "busy" at once instead
        // of waiting when another process opens the same new store; those steps are retried.
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        loop {
            let conn = Connection::open(path).with_context(unusable)?;
            match Self::set_up(conn, path) {
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                done => return done.with_context(unusable),
            }
        }
    }

    /// Readies an open store: WAL, full sync, the schema, stale studies aborted.
    fn set_up(mut conn: Connection, path: &Path) -> Result<Self> {
        // Several dbvs processes may share the store; wait for each other's writes.
        conn.busy_timeout(BUSY_WAIT)?;
        // Switching to WAL can fail busy without waiting, so only switch when needed.
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.execute_batch("PRAGMA journal_mode = WAL;")?;
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        // One process at a time sets the schema up: two that both found a column missing
        // would both add it, and the second would fail.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let exists: bool =
            tx.query_row("SELECT count(*) > 0 FROM sqlite_master WHERE name = 'runs'", [], |r| r.get(0))?;
        if !exists {
            tx.execute_batch(SCHEMA).context("cannot set up the results store")?;
        }
        // Stores from before studies recorded their process, and their AES table.
        for column in ["owner", "aes_table_json"] {
            let has: bool =
                tx.query_row("SELECT count(*) > 0 FROM pragma_table_info('studies') WHERE name = ?1", [column], |r| {
                    r.get(0)
                })?;
            if !has {
                tx.execute_batch(&format!("ALTER TABLE studies ADD COLUMN {column} TEXT"))?;
            }
        }
        tx.commit()?;
        let store = Self { conn, path: path.to_path_buf() };
        store.abort_orphans()?;
        Ok(store)
    }

    pub fn begin_study(&self, name: &str, study_file: &str) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO studies (name, started_at, status, study_file, owner) VALUES (?1, ?2, 'running', ?3, ?4)",
            params![name, now(), study_file, crate::sys::process_tag(std::process::id())],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Marks `aborted` every study still `running` whose process is gone (killed, or the
    /// machine restarted): it will never finish. Its finished runs stay in the store.
    fn abort_orphans(&self) -> Result<()> {
        let mut st = self.conn.prepare("SELECT id, owner FROM studies WHERE status = 'running'")?;
        let running: Vec<(i64, Option<String>)> =
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        for (id, owner) in running {
            let alive = owner.as_deref().is_some_and(crate::sys::process_alive);
            if !alive {
                let cause = "the dbvs process running it ended without finishing it (killed, or the machine \
                             restarted); its finished runs are kept";
                self.conn.execute(
                    "UPDATE studies SET status = 'aborted', cause = ?2, finished_at = ?3 \
                     WHERE id = ?1 AND status = 'running'",
                    params![id, cause, now()],
                )?;
            }
        }
        Ok(())
    }

    pub fn finish_study(&self, id: i64, status: Status, cause: Option<&str>, report_json: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE studies SET finished_at = ?2, status = ?3, cause = ?4, report_json = ?5 WHERE id = ?1",
            params![id, now(), status, cause, report_json],
        )?;
        Ok(())
    }

    /// Keeps the AES table study `id` measured before its blocks, so that resuming it or
    /// reporting its stored blocks has the table without measuring it again.
    pub fn keep_aes_table(&self, id: i64, table: &AesTable) -> Result<()> {
        let json = serde_json::to_string(table)?;
        self.conn.execute("UPDATE studies SET aes_table_json = ?2 WHERE id = ?1", params![id, json])?;
        Ok(())
    }

    /// The AES table study `id` kept, if it measured one.
    pub fn aes_table(&self, id: i64) -> Result<Option<AesTable>> {
        let json: Option<String> =
            self.conn.query_row("SELECT aes_table_json FROM studies WHERE id = ?1", [id], |r| r.get(0))?;
        json.map(|j| serde_json::from_str(&j).context("the stored AES table is not readable")).transpose()
    }

    /// Stores a finished run's record (completed, interrupted or failed) with its headline,
    /// measures and per-interval samples.
    pub fn add_run(&mut self, at: Option<Placement>, record: &RunRecord) -> Result<i64> {
        let status = Status::from(&record.status);
        let cause = record.cause();
        let json = serde_json::to_string(record)?;
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (study_id, block, variant, workload, status, cause, finished_at, headline, record_json) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                at.as_ref().map(|p| p.study),
                at.as_ref().map(|p| p.block as i64),
                at.as_ref().map(|p| p.variant),
                at.as_ref().map_or(record.workload.as_str(), |p| p.workload),
                status,
                cause,
                now(),
                // A failed or interrupted run's figure is not a result; listings show none.
                record.headline.value.filter(|_| status == Status::Completed),
                json
            ],
        )?;
        let id = tx.last_insert_rowid();
        let mut named: Vec<(&str, f64)> = vec![];
        for m in std::iter::once(&record.headline).chain(&record.measures) {
            if let Some(v) = m.value.filter(|_| !named.iter().any(|(n, _)| *n == m.name)) {
                named.push((&m.name, v));
            }
        }
        for (name, v) in named {
            tx.execute("INSERT INTO metrics VALUES (?1, ?2, ?3)", params![id, name, v])?;
        }
        for s in &record.intervals {
            tx.execute(
                "INSERT INTO samples VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![id, s.et_s, s.units as i64, s.per_min, s.interval_per_min, s.avg_ms, s.rollback_pct],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Records a run that produced no record at all (its process died), with the cause.
    /// Records a run that failed before it produced a record (in a study, or a `dbvs run`
    /// whose set-up failed).
    pub fn add_failed_run(&self, at: Option<Placement>, workload: &str, cause: &str) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO runs (study_id, block, variant, workload, status, cause, finished_at) \
             VALUES (?1, ?2, ?3, ?4, 'failed', ?5, ?6)",
            params![
                at.as_ref().map(|p| p.study),
                at.as_ref().map(|p| p.block as i64),
                at.as_ref().map(|p| p.variant),
                workload,
                cause,
                now()
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn studies(&self) -> Result<Vec<StudyRow>> {
        let mut st = self.conn.prepare(
            "SELECT s.id, s.name, s.started_at, s.finished_at, s.status, s.cause, \
             (SELECT count(*) FROM runs r WHERE r.study_id = s.id) FROM studies s ORDER BY s.id",
        )?;
        let rows = st.query_map([], study_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn study(&self, id: i64) -> Result<(StudyRow, Option<String>)> {
        self.conn
            .query_row(
                "SELECT s.id, s.name, s.started_at, s.finished_at, s.status, s.cause, \
                 (SELECT count(*) FROM runs r WHERE r.study_id = s.id), s.report_json FROM studies s WHERE s.id = ?1",
                [id],
                |r| Ok((study_row(r)?, r.get(7)?)),
            )
            .optional()?
            .with_context(|| format!("no study {id} in {}; see 'dbvs results list'", self.path.display()))
    }

    /// The study file study `id` ran with (its quick form, if it ran that).
    pub fn study_file(&self, id: i64) -> Result<String> {
        self.study(id)?;
        Ok(self.conn.query_row("SELECT study_file FROM studies WHERE id = ?1", [id], |r| r.get(0))?)
    }

    /// Takes up a study that did not finish (aborted, interrupted or failed) again, with the
    /// same study file; returns the runs it has.
    pub fn resume_study(&self, id: i64, study_file: &str) -> Result<Vec<RunRow>> {
        let (row, _) = self.study(id)?;
        let stored = self.study_file(id)?;
        match row.status {
            Status::Aborted | Status::Interrupted | Status::Failed => {}
            Status::Running => anyhow::bail!("study {id} is still running; it cannot be resumed twice"),
            Status::Completed => {
                anyhow::bail!("study {id} completed; only an aborted, interrupted or failed study can be resumed")
            }
        }
        if stored != study_file {
            anyhow::bail!("the study file differs from the one study {id} ran with; resume it with the same file");
        }
        self.conn.execute(
            "UPDATE studies SET status = 'running', cause = NULL, finished_at = NULL, report_json = NULL, owner = ?2 \
             WHERE id = ?1",
            params![id, crate::sys::process_tag(std::process::id())],
        )?;
        self.runs_of(id)
    }

    pub fn runs_of(&self, study: i64) -> Result<Vec<RunRow>> {
        let mut st = self.conn.prepare(&format!("{RUN_SELECT} WHERE study_id = ?1 ORDER BY id"))?;
        let rows = st.query_map([study], run_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn run(&self, id: i64) -> Result<RunRow> {
        self.conn
            .query_row(&format!("{RUN_SELECT} WHERE id = ?1"), [id], run_row)
            .optional()?
            .with_context(|| format!("no run {id} in {}; see 'dbvs results list --runs'", self.path.display()))
    }

    pub fn recent_runs(&self, limit: usize) -> Result<Vec<RunRow>> {
        let mut st = self.conn.prepare(&format!("{RUN_SELECT} ORDER BY id DESC LIMIT ?1"))?;
        let rows = st.query_map([limit as i64], run_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

const RUN_SELECT: &str =
    "SELECT id, study_id, block, variant, workload, status, cause, finished_at, headline, record_json FROM runs";

fn study_row(r: &rusqlite::Row) -> rusqlite::Result<StudyRow> {
    Ok(StudyRow {
        id: r.get(0)?,
        name: r.get(1)?,
        started_at: r.get(2)?,
        finished_at: r.get(3)?,
        status: r.get(4)?,
        cause: r.get(5)?,
        runs: r.get(6)?,
    })
}

fn run_row(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        study_id: r.get(1)?,
        block: r.get(2)?,
        variant: r.get(3)?,
        workload: r.get(4)?,
        status: r.get(5)?,
        cause: r.get(6)?,
        finished_at: r.get(7)?,
        headline: r.get(8)?,
        record_json: r.get(9)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_opening_a_new_store_at_once_all_get_it() {
        let dir = tempfile::tempdir().unwrap();
        // The race is narrow: try it on many fresh files.
        for round in 0..40 {
            let path = dir.path().join(format!("r{round}.db"));
            std::thread::scope(|s| {
                let opens: Vec<_> = (0..8).map(|_| s.spawn(|| Store::open(&path).map(|_| ()))).collect();
                for o in opens {
                    o.join().unwrap().unwrap();
                }
            });
        }
    }

    #[test]
    fn a_study_whose_process_is_gone_is_aborted_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let store = Store::open(&path).unwrap();
        let mine = store.begin_study("live", "").unwrap();
        let dead = store.begin_study("dead", "").unwrap();
        store.conn.execute("UPDATE studies SET owner = '4294967294:1' WHERE id = ?1", [dead]).unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        let (row, _) = store.study(dead).unwrap();
        assert_eq!(row.status, Status::Aborted);
        assert!(row.cause.unwrap().contains("finished runs are kept"));
        assert_eq!(store.study(mine).unwrap().0.status, Status::Running, "a live study is left alone");
    }

    #[test]
    fn studies_and_failed_runs_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("sub/results.db")).unwrap();
        let id = store.begin_study("s", "name = 's'").unwrap();
        let run = store
            .add_failed_run(Some(Placement { study: id, block: 0, variant: "plain", workload: "ds2" }), "ds2", "boom")
            .unwrap();
        store.finish_study(id, Status::Completed, None, Some("{}")).unwrap();
        let (row, report) = store.study(id).unwrap();
        assert_eq!((row.status, row.runs, report.as_deref()), (Status::Completed, 1, Some("{}")));
        let r = store.run(run).unwrap();
        assert_eq!((r.status, r.cause.as_deref()), (Status::Failed, Some("boom")));
        assert!(store.study(99).unwrap_err().to_string().contains("no study 99"));
        assert!(store.aes_table(id).unwrap().is_none());
        let table =
            AesTable { openssl: "OpenSSL 3".into(), threads: 2, runs: 1, series: vec![], skipped_sizes: vec![] };
        store.keep_aes_table(id, &table).unwrap();
        assert_eq!(store.aes_table(id).unwrap().map(|t| t.openssl).as_deref(), Some("OpenSSL 3"));
        // A second handle sees everything: each write was committed on its own.
        let again = Store::open(&dir.path().join("sub/results.db")).unwrap();
        assert_eq!(again.studies().unwrap().len(), 1);
    }
}
