//! TPC-B on SQLite, pgbench's schema and statements with SQLite parameters.

use super::{Pick, ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH};
use crate::driver::UnitRecorder;
use crate::targets::sqlite::SqliteConnection;
use anyhow::Result;
use indicatif::ProgressBar;
use rusqlite::params;

const SCHEMA: &str = "
CREATE TABLE pgbench_branches (bid INTEGER PRIMARY KEY, bbalance INTEGER NOT NULL, filler CHAR(88));
CREATE TABLE pgbench_tellers (tid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, tbalance INTEGER NOT NULL, filler CHAR(84));
CREATE TABLE pgbench_accounts (aid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, abalance INTEGER NOT NULL, filler CHAR(84));
CREATE TABLE pgbench_history (tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime TIMESTAMP, filler CHAR(22));
";

pub fn load(c: &mut SqliteConnection, scale: i64, progress: &ProgressBar) -> Result<u64> {
    c.execute_batch(SCHEMA)?;
    let tx = c.transaction()?;
    for b in 1..=scale {
        // The branch filler carries the plaintext marker the canary scan looks for.
        tx.execute("INSERT INTO pgbench_branches VALUES (?1, 0, ?2)", (b, crate::workloads::CANARY))?;
    }
    for t in 1..=TELLERS_PER_BRANCH * scale {
        tx.execute("INSERT INTO pgbench_tellers VALUES (?1, ?2, 0, '')", [t, (t - 1) / TELLERS_PER_BRANCH + 1])?;
    }
    {
        let mut st = tx.prepare("INSERT INTO pgbench_accounts VALUES (?1, ?2, 0, '')")?;
        for a in 1..=ACCOUNTS_PER_BRANCH * scale {
            st.execute([a, (a - 1) / ACCOUNTS_PER_BRANCH + 1])?;
            if a % 10_000 == 0 {
                progress.set_position(a as u64);
                if crate::interrupt::interrupted() {
                    return Err(crate::interrupt::Interrupted.into());
                }
            }
        }
    }
    tx.commit()?;
    c.execute_batch("ANALYZE")?;
    Ok((scale * (1 + TELLERS_PER_BRANCH + ACCOUNTS_PER_BRANCH)) as u64)
}

pub struct Session(SqliteConnection);

impl Session {
    pub fn new(c: SqliteConnection) -> Self {
        Self(c)
    }
}

impl super::Session for Session {
    fn transaction(&mut self, p: &Pick, rec: &mut UnitRecorder) -> Result<()> {
        self.0.write(rec, |c| {
            c.prepare_cached("UPDATE pgbench_accounts SET abalance = abalance + ?1 WHERE aid = ?2")?
                .execute(params![p.delta, p.aid])?;
            c.prepare_cached("SELECT abalance FROM pgbench_accounts WHERE aid = ?1")?
                .query_row([p.aid], |r| r.get::<_, i64>(0))?;
            c.prepare_cached("UPDATE pgbench_tellers SET tbalance = tbalance + ?1 WHERE tid = ?2")?
                .execute(params![p.delta, p.tid])?;
            c.prepare_cached("UPDATE pgbench_branches SET bbalance = bbalance + ?1 WHERE bid = ?2")?
                .execute(params![p.delta, p.bid])?;
            c.prepare_cached(
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?1, ?2, ?3, ?4, CURRENT_TIMESTAMP)",
            )?
            .execute(params![p.tid, p.bid, p.aid, p.delta])?;
            Ok(())
        })
    }
}
