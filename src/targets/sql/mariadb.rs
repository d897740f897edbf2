//! The seam on MariaDB (InnoDB): server-side prepared statements, locking reads as written.

use super::{Arg, DbError, Rows, Session, Tx, Val, Q};
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::Engine;
use anyhow::Result;
use mysql::prelude::Queryable;
use mysql::{Conn, Statement, TxOpts, Value};

fn value(a: &Arg) -> Value {
    match a {
        Arg::Int(v) => Value::Int(*v),
        Arg::Real(v) => Value::Double(*v),
        Arg::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
        Arg::Null => Value::NULL,
    }
}

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

pub struct MariaSession {
    c: Conn,
    st: Vec<Statement>,
}

impl MariaSession {
    pub fn new(mut c: Conn, sql: &[String]) -> Result<Self> {
        let st = sql.iter().map(|s| c.prep(s)).collect::<Result<_, _>>()?;
        Ok(Self { c, st })
    }
}

struct MariaTx<'a, 'c> {
    tx: &'a mut mysql::Transaction<'c>,
    st: &'a [Statement],
    /// Writes deferred ([`Tx::defer`]) and not yet sent.
    deferred: Vec<(Q, Vec<Value>)>,
}

impl MariaTx<'_, '_> {
    /// Sends the deferred writes, in order. The protocol has no pipeline, but a run of the
    /// same statement (a New-Order's stock updates) goes as one bulk execution
    /// (COM_STMT_BULK_EXECUTE): one round trip for the run.
    fn flush(&mut self) -> Result<(), DbError> {
        let mut deferred = std::mem::take(&mut self.deferred);
        for run in deferred.chunk_by_mut(|a, b| a.0 == b.0) {
            let st = &self.st[run[0].0];
            match run {
                [(_, args)] => self.tx.exec_drop(st, std::mem::take(args))?,
                _ => self.tx.exec_batch(st, run.iter_mut().map(|(_, args)| std::mem::take(args)))?,
            }
        }
        Ok(())
    }
}

/// The rows of the statement's first result set: a CALL's columns are known only once its
/// procedure has selected them, and the sets after it are drained unread.
fn query(c: &mut impl Queryable, st: &Statement, args: &[Arg]) -> Result<Rows, DbError> {
    let mut result = c.exec_iter(st, args.iter().map(value).collect::<Vec<_>>())?;
    let mut out = Rows { cols: result.columns().as_ref().len(), vals: Vec::new() };
    for row in result.by_ref() {
        out.vals.extend(row?.unwrap().into_iter().map(val));
    }
    Ok(out)
}

impl Tx for MariaTx<'_, '_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        self.flush()?;
        query(self.tx, &self.st[q], args)
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        self.flush()?;
        let result = self.tx.exec_iter(&self.st[q], args.iter().map(value).collect::<Vec<_>>())?;
        Ok(result.affected_rows())
    }

    fn defer(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        self.deferred.push((q, args.iter().map(value).collect()));
        Ok(())
    }
}

impl Session for MariaSession {
    fn engine(&self) -> Engine {
        Engine::Mariadb
    }

    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        query(&mut self.c, &self.st[q], args)
    }

    fn transaction(
        &mut self,
        _read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        let (c, st) = (&mut self.c, &self.st);
        restarting(rec, DbError::conflict, || {
            // Dropped on an error, the transaction rolls back.
            let mut tx = c.start_transaction(TxOpts::default())?;
            let mut work = MariaTx { tx: &mut tx, st, deferred: Vec::new() };
            let outcome = body(&mut work)?;
            match outcome {
                Outcome::Committed => {
                    work.flush()?;
                    tx.commit()?
                }
                Outcome::RolledBack => tx.rollback()?,
            }
            Ok(outcome)
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
