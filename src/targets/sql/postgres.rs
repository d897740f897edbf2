//! The seam on PostgreSQL: statements prepared once per connection, values converted to
//! the column types the server inferred (it is strict: an INT4 column takes no INT8).

use super::{Arg, DbError, Rows, Session, Tx, Val, Q};
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::postgres::PgConnection;
use crate::targets::Engine;
use anyhow::Result;
use bytes::BytesMut;
use futures_util::future::{join_all, try_join_all};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{FromSql, IsNull, ToSql, Type};
use postgres::Client;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::Decimal;
use std::future::Future;
use tokio_postgres::Statement;

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

/// A worker's connection: tokio-postgres on a current-thread runtime of the worker's own,
/// so the connection is polled on the worker's thread while it waits (no hand-off to
/// another thread), and statements queued together leave in one write (a pipeline).
pub struct PgSession {
    rt: tokio::runtime::Runtime,
    c: tokio_postgres::Client,
    st: Vec<Statement>,
}

impl PgSession {
    /// Reopens `conn`'s database on the pipelining driver and prepares `sql` there (all
    /// statements in one round trip).
    pub fn open(conn: PgConnection, sql: &[String]) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (c, connection) = rt.block_on(conn.config.connect(tokio_postgres::NoTls))?;
        drop(conn.client);
        // Runs whenever the worker waits on `rt`; ends when the client is dropped.
        rt.spawn(connection);
        let st = rt.block_on(try_join_all(sql.iter().map(|s| c.prepare(s))))?;
        Ok(Self { rt, c, st })
    }
}

/// An owned [`Arg`], for a statement that waits in the pipeline after its caller returned.
enum Owned {
    Int(i64),
    Real(f64),
    Text(String),
    Null,
}

impl Owned {
    fn of(a: &Arg) -> Self {
        match *a {
            Arg::Int(v) => Owned::Int(v),
            Arg::Real(v) => Owned::Real(v),
            Arg::Text(s) => Owned::Text(s.to_string()),
            Arg::Null => Owned::Null,
        }
    }

    fn arg(&self) -> Arg<'_> {
        match self {
            Owned::Int(v) => Arg::Int(*v),
            Owned::Real(v) => Arg::Real(*v),
            Owned::Text(s) => Arg::Text(s),
            Owned::Null => Arg::Null,
        }
    }
}

/// A statement that travels with the next one: the transaction's BEGIN, or a statement
/// whose count or rows the workload does not use ([`Tx::defer`], [`Tx::defer_read`]).
enum Pending {
    Begin,
    Unread(Q, Vec<Owned>),
}

impl Pending {
    async fn send(&self, c: &tokio_postgres::Client, st: &[Statement]) -> Result<(), tokio_postgres::Error> {
        match self {
            Pending::Begin => c.batch_execute("BEGIN").await,
            Pending::Unread(q, owned) => {
                let args: Vec<Arg> = owned.iter().map(Owned::arg).collect();
                // A read's rows arrive and are dropped, as pgbench drops them.
                c.execute(&st[*q], &params(&args)).await.map(drop)
            }
        }
    }
}

struct PgTx<'a> {
    s: &'a PgSession,
    pending: Vec<Pending>,
}

impl PgTx<'_> {
    /// Sends what is pending and then `last` in one pipeline and waits for all of it. The
    /// first failure in statement order is the one returned: after it the server rejects
    /// the rest of the transaction ("current transaction is aborted").
    fn flush<T>(&mut self, last: impl Future<Output = Result<T, tokio_postgres::Error>>) -> Result<T, DbError> {
        let pending = std::mem::take(&mut self.pending);
        let (c, st) = (&self.s.c, &self.s.st[..]);
        self.s.rt.block_on(async {
            // `join!` polls in argument order and each statement is queued when first
            // polled, so they reach the server in the order written.
            let (earlier, last) = futures_util::join!(join_all(pending.iter().map(|p| p.send(c, st))), last);
            earlier.into_iter().collect::<Result<(), _>>()?;
            Ok(last?)
        })
    }
}

fn params<'a>(args: &'a [Arg<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
}

impl Tx for PgTx<'_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        let s = self.s;
        let rows = self.flush(s.c.query(&s.st[q], &params(args)))?;
        collect(&rows, s.st[q].columns().len())
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        let s = self.s;
        self.flush(s.c.execute(&s.st[q], &params(args)))
    }

    fn defer(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        self.pending.push(Pending::Unread(q, args.iter().map(Owned::of).collect()));
        Ok(())
    }

    fn defer_read(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        self.defer(q, args)
    }
}

impl Session for PgSession {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        let rows = self.rt.block_on(self.c.query(&self.st[q], &params(args)))?;
        collect(&rows, self.st[q].columns().len())
    }

    /// BEGIN travels with the transaction's first statement, deferred writes with the next
    /// statement or with COMMIT.
    fn transaction(
        &mut self,
        _read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        let s = &*self;
        restarting(rec, DbError::conflict, || {
            let mut tx = PgTx { s, pending: vec![Pending::Begin] };
            let done = body(&mut tx).and_then(|outcome| {
                let end = if outcome == Outcome::Committed { "COMMIT" } else { "ROLLBACK" };
                tx.flush(s.c.batch_execute(end)).map(|()| outcome)
            });
            if done.is_err() {
                // The transaction may be open, aborted or already ended by a COMMIT that
                // followed the failure in the pipeline; outside one, ROLLBACK only warns.
                let _ = s.rt.block_on(s.c.batch_execute("ROLLBACK"));
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
