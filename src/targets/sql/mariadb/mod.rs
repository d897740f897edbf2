//! The seam on MariaDB (InnoDB): server-side prepared statements, locking reads as written.

use super::{Arg, DbError, Rows, Session, Tx, Val, Q};
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::mysql::MyConnection;
use crate::targets::Engine;
use anyhow::Result;
use mysql::prelude::Queryable;
use mysql::{Conn, Value};

mod codec;
mod wire;

/// The replay's sessions speak the same protocol ([`super::replay`]).
pub(in crate::targets::sql) use wire::{Prepared, Wire};
pub use wire::{WireError, WireOpts};

fn val(v: Value) -> Val {
    match v {
        Value::NULL => Val::Null,
        Value::Int(i) => Val::Int(i),
        Value::UInt(u) => Val::Int(u as i64),
        Value::Float(f) => Val::Real(f.into()),
        Value::Double(d) => Val::Real(d),
        Value::Bytes(b) => Val::text(b),
        _ => Val::Other,
    }
}

/// A deferred write's argument, kept until it is sent.
fn owned(a: &Arg) -> Val {
    match a {
        Arg::Int(v) => Val::Int(*v),
        Arg::Real(v) => Val::Real(*v),
        Arg::Text(s) => Val::Text(s.to_string()),
        Arg::Null => Val::Null,
    }
}

fn arg(v: &Val) -> Arg<'_> {
    match v {
        Val::Int(v) => Arg::Int(*v),
        Val::Real(v) => Arg::Real(*v),
        Val::Text(s) => Arg::Text(s),
        Val::Null | Val::Other => Arg::Null,
    }
}

/// A worker's session: its own connection on dbvs's binary-protocol client ([`wire`]).
pub struct MariaSession {
    w: Wire,
    st: Vec<Prepared>,
}

impl MariaSession {
    /// Opens the worker's connection with the settings of `conn` (whose own connection, if
    /// something opened it, is then closed) and prepares `sql` on it.
    pub fn open(conn: MyConnection, sql: &[String]) -> Result<Self> {
        let opts = conn.session.clone();
        drop(conn);
        let mut w = Wire::connect(&opts)
            .map_err(|e| anyhow::anyhow!("cannot open a session on MariaDB at {}:{}: {e}", opts.host, opts.port))?;
        let st = sql
            .iter()
            .map(|s| w.prepare(s).map_err(|e| anyhow::anyhow!("cannot prepare `{s}` on MariaDB: {e}")))
            .collect::<Result<_>>()?;
        Ok(Self { w, st })
    }
}

struct MariaTx<'a> {
    w: &'a mut Wire,
    st: &'a mut [Prepared],
    /// Writes deferred ([`Tx::defer`]) and not yet sent.
    deferred: Vec<(Q, Vec<Val>)>,
}

impl MariaTx<'_> {
    /// Queues the deferred writes, in order, to leave with the next statement: a run of the
    /// same statement (a New-Order's stock updates) as one bulk execution
    /// (COM_STMT_BULK_EXECUTE; not on Galera, see [`Wire`]).
    fn queue_deferred(&mut self) -> Result<(), DbError> {
        let deferred = std::mem::take(&mut self.deferred);
        for run in deferred.chunk_by(|a, b| a.0 == b.0) {
            let args: Vec<Vec<Arg>> = run.iter().map(|(_, vals)| vals.iter().map(arg).collect()).collect();
            let batch: Vec<&[Arg]> = args.iter().map(Vec::as_slice).collect();
            self.w.queue_batch(&self.st[run[0].0], &batch)?;
        }
        Ok(())
    }
}

impl Tx for MariaTx<'_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        self.queue_deferred()?;
        Ok(self.w.rows(&mut self.st[q], args)?)
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        self.queue_deferred()?;
        Ok(self.w.execute(&mut self.st[q], args, None)?)
    }

    fn defer(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        self.deferred.push((q, args.iter().map(owned).collect()));
        Ok(())
    }
}

impl Session for MariaSession {
    fn engine(&self) -> Engine {
        Engine::Mariadb
    }

    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        Ok(self.w.rows(&mut self.st[q], args)?)
    }

    /// The transaction opens by `autocommit = 0`, which travels with its first statement,
    /// not by a round trip of its own. It also keeps pipelined writes safe: when one fails
    /// with a deadlock, InnoDB rolls the transaction back, and the statements queued after
    /// it (already on their way) open a new one instead of committing one by one; the
    /// ROLLBACK below discards that. A COMMIT never leaves before every write's answer.
    fn transaction(
        &mut self,
        _read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        let (w, st) = (&mut self.w, &mut self.st);
        restarting(rec, DbError::conflict, || {
            w.queue_query("SET autocommit = 0");
            let mut work = MariaTx { w: &mut *w, st: &mut st[..], deferred: Vec::new() };
            let done = body(&mut work).and_then(|outcome| {
                match outcome {
                    Outcome::Committed => {
                        work.queue_deferred()?;
                        work.w.sync()?;
                        work.w.queue_query("COMMIT");
                    }
                    Outcome::RolledBack => work.w.queue_query("ROLLBACK"),
                };
                work.w.query("SET autocommit = 1")?;
                Ok(outcome)
            });
            if done.is_err() {
                // The server may have rolled back already (a deadlock does); this makes sure.
                w.queue_query("ROLLBACK");
                let _ = w.query("SET autocommit = 1");
            }
            done
        })
    }
}

/// An UPDATE reports the rows it matched, as the other engines do, not only the rows it
/// changed.
pub fn adhoc(c: &mut Conn, sql: &str) -> Result<Rows, DbError> {
    let mut result = c.exec_iter(sql, ())?;
    let cols = result.columns().as_ref().len();
    if cols == 0 {
        let info = result.info_str().into_owned();
        let matched = info
            .strip_prefix("Rows matched: ")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(result.affected_rows() as i64);
        return Ok(Rows { cols: 1, vals: vec![Val::Int(matched)] });
    }
    let mut out = Rows { cols, vals: Vec::new() };
    for row in result.by_ref() {
        out.vals.extend(row?.unwrap().into_iter().map(val));
    }
    Ok(out)
}

/// Runs each `;`-separated statement of a DDL script in turn.
pub fn script(c: &mut Conn, sql: &str) -> Result<()> {
    for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        c.query_drop(statement)?;
    }
    Ok(())
}

/// The text protocol: MariaDB cannot prepare every statement (BEGIN, temporary DDL).
pub fn exec(c: &mut Conn, sql: &str) -> Result<u64> {
    c.query_drop(sql)?;
    Ok(c.affected_rows())
}

pub fn drain(c: &mut Conn, sql: &str) -> Result<u64> {
    let mut n = 0;
    for r in c.query_iter(sql)? {
        std::hint::black_box(r?);
        n += 1;
    }
    Ok(n)
}
