//! TPC-B on MariaDB (InnoDB): pgbench's schema and transaction as prepared statements.

use super::{Pick, ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH};
use crate::driver::{restarting, UnitRecorder};
use crate::targets::mysql::conflict;
use anyhow::Result;
use indicatif::ProgressBar;
use mysql::prelude::Queryable;
use mysql::{Conn, Statement, TxOpts};

const SCHEMA: &[&str] = &[
    "CREATE TABLE pgbench_branches (bid INT PRIMARY KEY, bbalance INT, filler CHAR(88)) ENGINE=InnoDB",
    "CREATE TABLE pgbench_tellers (tid INT PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84)) ENGINE=InnoDB",
    "CREATE TABLE pgbench_accounts (aid INT PRIMARY KEY, bid INT, abalance INT, filler CHAR(84)) ENGINE=InnoDB",
    "CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT, mtime TIMESTAMP, filler CHAR(22)) ENGINE=InnoDB",
];

/// Rows per multi-row INSERT while loading.
const ROWS_PER_INSERT: i64 = 5000;

pub fn load(c: &mut Conn, scale: i64, progress: &ProgressBar) -> Result<u64> {
    for s in SCHEMA {
        c.query_drop(s)?;
    }
    let mut insert = |table: &str, n: i64, row: &dyn Fn(i64) -> String| -> Result<()> {
        let mut lo = 1;
        while lo <= n {
            let hi = (lo + ROWS_PER_INSERT - 1).min(n);
            let rows: Vec<String> = (lo..=hi).map(row).collect();
            c.query_drop(format!("INSERT INTO {table} VALUES {}", rows.join(",")))?;
            progress.set_position(hi as u64);
            if crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
            lo = hi + 1;
        }
        Ok(())
    };
    // The branch filler carries the plaintext marker the canary scan looks for.
    insert("pgbench_branches", scale, &|b| format!("({b}, 0, '{}')", crate::workloads::CANARY))?;
    let teller = |t: i64| format!("({t}, {}, 0, '')", (t - 1) / TELLERS_PER_BRANCH + 1);
    insert("pgbench_tellers", TELLERS_PER_BRANCH * scale, &teller)?;
    let account = |a: i64| format!("({a}, {}, 0, '')", (a - 1) / ACCOUNTS_PER_BRANCH + 1);
    insert("pgbench_accounts", ACCOUNTS_PER_BRANCH * scale, &account)?;
    c.query_drop("ANALYZE TABLE pgbench_branches, pgbench_tellers, pgbench_accounts")?;
    Ok((scale * (1 + TELLERS_PER_BRANCH + ACCOUNTS_PER_BRANCH)) as u64)
}

pub struct Session {
    c: Conn,
    st: [Statement; 5],
}

impl Session {
    pub fn new(mut c: Conn) -> Result<Self> {
        let st = [
            c.prep("UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?")?,
            c.prep("SELECT abalance FROM pgbench_accounts WHERE aid = ?")?,
            c.prep("UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?")?,
            c.prep("UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?")?,
            c.prep("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)")?,
        ];
        Ok(Self { c, st })
    }
}

impl super::Session for Session {
    fn transaction(&mut self, p: &Pick, rec: &mut UnitRecorder) -> Result<()> {
        let (c, st) = (&mut self.c, &self.st);
        restarting(rec, conflict, || {
            let mut tx = c.start_transaction(TxOpts::default())?;
            tx.exec_drop(&st[0], (p.delta, p.aid))?;
            tx.exec_first::<i64, _, _>(&st[1], (p.aid,))?;
            tx.exec_drop(&st[2], (p.delta, p.tid))?;
            tx.exec_drop(&st[3], (p.delta, p.bid))?;
            tx.exec_drop(&st[4], (p.tid, p.bid, p.aid, p.delta))?;
            tx.commit()
        })
    }
}
