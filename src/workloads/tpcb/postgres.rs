//! TPC-B on PostgreSQL: pgbench's schema (so pgbench itself can run on a dbvs-built
//! database) and its transaction as prepared statements, like `pgbench -M prepared`.

use super::{Pick, ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH};
use crate::driver::{restarting, UnitRecorder};
use crate::targets::postgres::conflict;
use anyhow::Result;
use indicatif::ProgressBar;
use postgres::{Client, Statement};
use std::io::Write;

const SCHEMA: &str = "
CREATE TABLE pgbench_branches (bid INT NOT NULL, bbalance INT, filler CHAR(88)) WITH (fillfactor = 100);
CREATE TABLE pgbench_tellers (tid INT NOT NULL, bid INT, tbalance INT, filler CHAR(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_accounts (aid INT NOT NULL, bid INT, abalance INT, filler CHAR(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT, mtime TIMESTAMP, filler CHAR(22));
";

const KEYS: &str = "
ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);
";

pub fn load(c: &mut Client, scale: i64, progress: &ProgressBar) -> Result<u64> {
    c.batch_execute(SCHEMA)?;
    let mut tx = c.transaction()?;
    let copy = |tx: &mut postgres::Transaction, table: &str, rows: &mut dyn Iterator<Item = String>| -> Result<()> {
        let mut w = tx.copy_in(&format!("COPY {table} FROM STDIN"))?;
        let mut buf = Vec::with_capacity(1 << 20);
        for (i, r) in rows.enumerate() {
            buf.extend_from_slice(r.as_bytes());
            buf.push(b'\n');
            if buf.len() > 1 << 20 {
                w.write_all(&buf)?;
                buf.clear();
                progress.set_position(i as u64);
                if crate::interrupt::interrupted() {
                    return Err(crate::interrupt::Interrupted.into());
                }
            }
        }
        w.write_all(&buf)?;
        w.finish()?;
        Ok(())
    };
    // The branch filler carries the plaintext marker the canary scan looks for.
    let canary = crate::workloads::CANARY;
    copy(&mut tx, "pgbench_branches", &mut (1..=scale).map(|b| format!("{b}\t0\t{canary}")))?;
    copy(
        &mut tx,
        "pgbench_tellers",
        &mut (1..=TELLERS_PER_BRANCH * scale).map(|t| format!("{t}\t{}\t0\t", (t - 1) / TELLERS_PER_BRANCH + 1)),
    )?;
    copy(
        &mut tx,
        "pgbench_accounts",
        &mut (1..=ACCOUNTS_PER_BRANCH * scale).map(|a| format!("{a}\t{}\t0\t", (a - 1) / ACCOUNTS_PER_BRANCH + 1)),
    )?;
    tx.commit()?;
    c.batch_execute(KEYS)?;
    // VACUUM cannot share a multi-statement batch: that runs as one transaction.
    c.batch_execute("VACUUM ANALYZE")?;
    Ok((scale * (1 + TELLERS_PER_BRANCH + ACCOUNTS_PER_BRANCH)) as u64)
}

pub struct Session {
    c: Client,
    st: [Statement; 5],
}

impl Session {
    pub fn new(mut c: Client) -> Result<Self> {
        let st = [
            c.prepare("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2")?,
            c.prepare("SELECT abalance FROM pgbench_accounts WHERE aid = $1")?,
            c.prepare("UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2")?,
            c.prepare("UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2")?,
            c.prepare(
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
            )?,
        ];
        Ok(Self { c, st })
    }
}

impl super::Session for Session {
    fn transaction(&mut self, p: &Pick, rec: &mut UnitRecorder) -> Result<()> {
        let (c, st) = (&mut self.c, &self.st);
        restarting(rec, conflict, || {
            let mut tx = c.transaction()?;
            tx.execute(&st[0], &[&p.delta, &p.aid])?;
            tx.query_one(&st[1], &[&p.aid])?;
            tx.execute(&st[2], &[&p.delta, &p.tid])?;
            tx.execute(&st[3], &[&p.delta, &p.bid])?;
            tx.execute(&st[4], &[&p.tid, &p.bid, &p.aid, &p.delta])?;
            tx.commit()
        })
    }
}
