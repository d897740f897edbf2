//! The seam on PostgreSQL: statements prepared once per connection, values converted to
//! the column types the server inferred (it is strict: an INT4 column takes no INT8).

use super::{Arg, DbError, Rows, Session, Tx, Val, Q};
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::Engine;
use anyhow::Result;
use bytes::BytesMut;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{FromSql, IsNull, ToSql, Type};
use postgres::{Client, Statement};
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::Decimal;

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

pub struct PgSession {
    c: Client,
    st: Vec<Statement>,
}

impl PgSession {
    pub fn new(mut c: Client, sql: &[String]) -> Result<Self> {
        let st = sql.iter().map(|s| c.prepare(s)).collect::<Result<_, _>>()?;
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
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        collect(&self.c.query(&self.st[q], &params(args))?, self.st[q].columns().len())
    }

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
