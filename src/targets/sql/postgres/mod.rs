//! The seam on PostgreSQL: statements prepared once per connection, values converted to
//! the column types the server inferred (it is strict: an INT4 column takes no INT8), and
//! a transaction's statements pipelined on dbvs's own client ([`wire`]).

use super::{Arg, DbError, Rows, Session, Tx, Val, Q};
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::postgres::PgConnection;
use crate::targets::Engine;
use anyhow::Result;
use bytes::BytesMut;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{FromSql, IsNull, ToSql, Type};
use postgres::Client;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::Decimal;
use wire::Wire;

pub mod wire;

impl ToSql for Arg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Arg::Int(v) if *ty == Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
            Arg::Int(v) if *ty == Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
            Arg::Int(v) if *ty == Type::INT8 => v.to_sql(ty, out),
            Arg::Int(v) if *ty == Type::FLOAT8 => (v as f64).to_sql(ty, out),
            Arg::Int(v) if *ty == Type::NUMERIC => Decimal::from(v).to_sql(ty, out),
            Arg::Real(v) if *ty == Type::FLOAT8 => v.to_sql(ty, out),
            Arg::Real(v) if *ty == Type::NUMERIC => {
                Decimal::from_f64(v).ok_or_else(|| format!("{v} does not fit a NUMERIC"))?.to_sql(ty, out)
            }
            Arg::Text(s) => s.to_sql(ty, out),
            Arg::Null => Ok(IsNull::Yes),
            _ => Err(format!("cannot pass {self:?} as {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

impl<'a> FromSql<'a> for Val {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(if *ty == Type::INT4 {
            Val::Int(i32::from_sql(ty, raw)?.into())
        } else if *ty == Type::INT8 {
            Val::Int(i64::from_sql(ty, raw)?)
        } else if *ty == Type::INT2 {
            Val::Int(i16::from_sql(ty, raw)?.into())
        } else if *ty == Type::FLOAT8 {
            Val::Real(f64::from_sql(ty, raw)?)
        } else if *ty == Type::NUMERIC {
            Val::Real(Decimal::from_sql(ty, raw)?.to_f64().unwrap_or(f64::NAN))
        } else if *ty == Type::VARCHAR || *ty == Type::TEXT || *ty == Type::BPCHAR || *ty == Type::NAME {
            Val::Text(String::from_sql(ty, raw)?)
        } else {
            Val::Other
        })
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Val::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A worker's connection, on dbvs's own pipelining client ([`wire`]).
pub struct PgSession {
    w: Wire,
    /// The numbers of BEGIN, COMMIT and ROLLBACK, prepared after the workload's statements.
    begin: usize,
    commit: usize,
    rollback: usize,
}

impl PgSession {
    /// Reopens `conn`'s database on the pipelining client and prepares `sql` there (all
    /// statements in one round trip).
    pub fn open(conn: PgConnection, sql: &[String]) -> Result<Self> {
        let mut w = Wire::connect(&conn.config)?;
        drop(conn.client);
        let mut all: Vec<&str> = sql.iter().map(String::as_str).collect();
        all.extend(["BEGIN", "COMMIT", "ROLLBACK"]);
        let begin = w.prepare(&all)? + sql.len();
        Ok(Self { w, begin, commit: begin + 1, rollback: begin + 2 })
    }
}

/// A transaction's statements: those whose counts or rows it does not use wait in the
/// queue and leave with the next one it does, or with COMMIT.
struct PgTx<'a> {
    w: &'a mut Wire,
}

impl Tx for PgTx<'_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        self.w.queue(q, args)?;
        let mut rows = Rows::default();
        self.w.sync(Some(&mut rows))?;
        Ok(rows)
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        self.w.queue(q, args)?;
        Ok(self.w.sync(None)?)
    }

    fn defer(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        Ok(self.w.queue(q, args)?)
    }

    fn defer_read(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        // A read's rows arrive and are dropped, as pgbench drops them.
        self.defer(q, args)
    }
}

impl Session for PgSession {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        PgTx { w: &mut self.w }.query(q, args)
    }

    /// BEGIN travels with the transaction's first statement, deferred writes with the next
    /// statement or with COMMIT.
    fn transaction(
        &mut self,
        _read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        let (begin, commit, rollback) = (self.begin, self.commit, self.rollback);
        let w = &mut self.w;
        restarting(rec, DbError::conflict, || {
            w.queue(begin, &[])?;
            let done = body(&mut PgTx { w: &mut *w }).and_then(|outcome| {
                w.queue(if outcome == Outcome::Committed { commit } else { rollback }, &[])?;
                w.sync(None)?;
                Ok(outcome)
            });
            if done.is_err() {
                // What the body queued after its failure never leaves; a transaction the
                // server holds open (or failed) ends here.
                w.abandon();
                if w.in_transaction() {
                    let _ = w.queue(rollback, &[]).and_then(|()| w.sync(None));
                }
            }
            done
        })
    }
}

pub fn adhoc(c: &mut Client, sql: &str) -> Result<Rows, DbError> {
    let st = c.prepare(sql)?;
    let cols = st.columns().len();
    if cols == 0 {
        return Ok(Rows { cols: 1, vals: vec![Val::Int(c.execute(&st, &[])? as i64)] });
    }
    collect(&c.query(&st, &[])?, cols)
}

fn collect(rows: &[postgres::Row], cols: usize) -> Result<Rows, DbError> {
    let mut out = Rows { cols, vals: Vec::with_capacity(rows.len() * cols) };
    for r in rows {
        for i in 0..cols {
            out.vals.push(r.try_get(i)?);
        }
    }
    Ok(out)
}

pub fn drain(c: &mut Client, sql: &str) -> Result<u64> {
    let mut rows = c.query_raw(sql, std::iter::empty::<&(dyn ToSql + Sync)>())?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        std::hint::black_box(r);
        n += 1;
    }
    Ok(n)
}
