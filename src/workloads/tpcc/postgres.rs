//! TPC-C on PostgreSQL: loader threads each COPY their parts over their own connection;
//! transactions run as prepared statements at read committed with row locks.

use super::load::{self, Cell, Row, Sink, Table};
use super::random::Constants;
use super::sql::{dialect, Arg, DbError, Dialect, Rows, Tx, Val, Q, STATEMENTS};
use super::worker::Session;
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::{Connection, Database};
use anyhow::Result;
use bytes::BytesMut;
use indicatif::ProgressBar;
use postgres::types::{FromSql, IsNull, ToSql, Type};
use postgres::{Client, Statement};
use std::fmt::Write as _;
use std::io::Write as _;

fn client(db: &dyn Database) -> Result<Client> {
    match db.connect()? {
        Connection::Postgres(c) => Ok(c),
        _ => unreachable!("a PostgreSQL database gives PostgreSQL connections"),
    }
}

/// One loader thread: a connection, and the open transaction of its current part.
struct CopySink {
    c: Client,
    open: bool,
    buf: String,
}

impl Sink for CopySink {
    fn put(&mut self, table: Table, rows: &[Row]) -> Result<()> {
        if !self.open {
            self.c.batch_execute("BEGIN")?;
            self.open = true;
        }
        self.buf.clear();
        for row in rows {
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    self.buf.push('\t');
                }
                match v {
                    Cell::Int(x) => write!(self.buf, "{x}")?,
                    Cell::Real(x) => write!(self.buf, "{x}")?,
                    // Generated text is letters, digits and spaces: nothing COPY must escape.
                    Cell::Text(s) => self.buf.push_str(s),
                    Cell::Null => self.buf.push_str("\\N"),
                }
            }
            self.buf.push('\n');
        }
        let mut w = self.c.copy_in(&format!("COPY {} FROM STDIN", table.name()))?;
        w.write_all(self.buf.as_bytes())?;
        w.finish()?;
        Ok(())
    }

    fn end_part(&mut self) -> Result<()> {
        if self.open {
            self.c.batch_execute("COMMIT")?;
            self.open = false;
        }
        Ok(())
    }
}

pub fn load(db: &dyn Database, warehouses: i64, seed: u64, consts: Constants, progress: &ProgressBar) -> Result<()> {
    let mut c = client(db)?;
    for t in super::schema::tables(Dialect::Postgres) {
        c.batch_execute(&t)?;
    }
    let sinks = (0..super::loader_threads(warehouses))
        .map(|_| Ok(Box::new(CopySink { c: client(db)?, open: false, buf: String::new() }) as Box<dyn Sink + Send>))
        .collect::<Result<Vec<_>>>()?;
    load::generate(warehouses, seed, consts, sinks, progress)?;
    for i in super::schema::indexes() {
        c.batch_execute(i)?;
    }
    // VACUUM cannot share a multi-statement batch: that runs as one transaction.
    c.batch_execute("VACUUM ANALYZE")?;
    Ok(())
}

impl ToSql for Arg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Arg::Int(v) if *ty == Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
            Arg::Int(v) if *ty == Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
            Arg::Int(v) if *ty == Type::INT8 => v.to_sql(ty, out),
            Arg::Int(v) if *ty == Type::FLOAT8 => (v as f64).to_sql(ty, out),
            Arg::Real(v) if *ty == Type::FLOAT8 => v.to_sql(ty, out),
            Arg::Text(s) => s.to_sql(ty, out),
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

pub struct PgSession {
    c: Client,
    st: Vec<Statement>,
}

impl PgSession {
    pub fn new(mut c: Client) -> Result<Self> {
        let st = STATEMENTS.iter().map(|s| c.prepare(&dialect(s, Dialect::Postgres))).collect::<Result<_, _>>()?;
        Ok(Self { c, st })
    }
}

struct PgTx<'a, 'c> {
    tx: &'a mut postgres::Transaction<'c>,
    st: &'a [Statement],
}

fn params<'a>(args: &'a [Arg<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
}

impl Tx for PgTx<'_, '_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        collect(&self.tx.query(&self.st[q], &params(args))?, self.st[q].columns().len())
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        Ok(self.tx.execute(&self.st[q], &params(args))?)
    }
}

impl Session for PgSession {
    fn transaction(
        &mut self,
        _read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        let (c, st) = (&mut self.c, &self.st);
        restarting(rec, DbError::conflict, || {
            let mut tx = c.transaction()?;
            let outcome = body(&mut PgTx { tx: &mut tx, st })?;
            match outcome {
                Outcome::Committed => tx.commit()?,
                Outcome::RolledBack => tx.rollback()?,
            }
            Ok(outcome)
        })
    }
}

/// Runs one portable statement outside the prepared set (checks, batch queries).
pub fn adhoc(c: &mut Client, sql: &str) -> Result<Rows, DbError> {
    let st = c.prepare(&dialect(sql, Dialect::Postgres))?;
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
