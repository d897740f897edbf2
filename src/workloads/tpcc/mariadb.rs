//! TPC-C on MariaDB (InnoDB): loader threads send multi-row INSERTs over their own
//! connections; transactions run as server-side prepared statements with locking reads.

use super::load::{self, Cell, Row, Sink, Table};
use super::random::Constants;
use super::sql::{dialect, Arg, DbError, Dialect, Rows, Tx, Val, Q, STATEMENTS};
use super::worker::Session;
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::{Connection, Database};
use anyhow::Result;
use indicatif::ProgressBar;
use mysql::prelude::Queryable;
use mysql::{Conn, Statement, TxOpts, Value};
use std::fmt::Write as _;

fn conn(db: &dyn Database) -> Result<Conn> {
    match db.connect()? {
        Connection::MySql(c) => Ok(c),
        _ => unreachable!("a MariaDB database gives MariaDB connections"),
    }
}

struct InsertSink {
    c: Conn,
    sql: String,
    open: bool,
}

impl Sink for InsertSink {
    fn put(&mut self, table: Table, rows: &[Row]) -> Result<()> {
        if !self.open {
            self.c.query_drop("BEGIN")?;
            self.open = true;
        }
        self.sql.clear();
        write!(self.sql, "INSERT INTO {} VALUES ", table.name())?;
        for (n, row) in rows.iter().enumerate() {
            self.sql.push_str(if n == 0 { "(" } else { ",(" });
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    self.sql.push(',');
                }
                match v {
                    Cell::Int(x) => write!(self.sql, "{x}")?,
                    Cell::Real(x) => write!(self.sql, "{x}")?,
                    // Generated text is letters, digits and spaces: nothing to escape.
                    Cell::Text(s) => write!(self.sql, "'{s}'")?,
                    Cell::Null => self.sql.push_str("NULL"),
                }
            }
            self.sql.push(')');
        }
        self.c.query_drop(&self.sql)?;
        Ok(())
    }

    fn end_part(&mut self) -> Result<()> {
        if self.open {
            self.c.query_drop("COMMIT")?;
            self.open = false;
        }
        Ok(())
    }
}

pub fn load(db: &dyn Database, warehouses: i64, seed: u64, consts: Constants, progress: &ProgressBar) -> Result<()> {
    let mut c = conn(db)?;
    for t in super::schema::tables(Dialect::MariaDb) {
        c.query_drop(t)?;
    }
    let sinks = (0..super::loader_threads(warehouses))
        .map(|_| Ok(Box::new(InsertSink { c: conn(db)?, sql: String::new(), open: false }) as Box<dyn Sink + Send>))
        .collect::<Result<Vec<_>>>()?;
    load::generate(warehouses, seed, consts, sinks, progress)?;
    for i in super::schema::indexes() {
        c.query_drop(i)?;
    }
    c.query_drop("ANALYZE TABLE item, warehouse, district, stock, customer, history, orders, new_order, order_line")?;
    Ok(())
}

fn value(a: &Arg) -> Value {
    match a {
        Arg::Int(v) => Value::Int(*v),
        Arg::Real(v) => Value::Double(*v),
        Arg::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
    }
}

fn val(v: Value) -> Val {
    match v {
        Value::NULL => Val::Null,
        Value::Int(i) => Val::Int(i),
        Value::UInt(u) => Val::Int(u as i64),
        Value::Float(f) => Val::Real(f.into()),
        Value::Double(d) => Val::Real(d),
        Value::Bytes(b) => Val::Text(String::from_utf8_lossy(&b).into_owned()),
        _ => Val::Other,
    }
}

pub struct MariaSession {
    c: Conn,
    st: Vec<Statement>,
}

impl MariaSession {
    pub fn new(mut c: Conn) -> Result<Self> {
        let st = STATEMENTS.iter().map(|s| c.prep(dialect(s, Dialect::MariaDb))).collect::<Result<_, _>>()?;
        Ok(Self { c, st })
    }
}

struct MariaTx<'a, 'c> {
    tx: &'a mut mysql::Transaction<'c>,
    st: &'a [Statement],
}

impl Tx for MariaTx<'_, '_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        let cols = self.st[q].num_columns() as usize;
        let mut out = Rows { cols, vals: Vec::new() };
        for row in self.tx.exec_iter(&self.st[q], args.iter().map(value).collect::<Vec<_>>())? {
            out.vals.extend(row?.unwrap().into_iter().map(val));
        }
        Ok(out)
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        let result = self.tx.exec_iter(&self.st[q], args.iter().map(value).collect::<Vec<_>>())?;
        Ok(result.affected_rows())
    }
}

impl Session for MariaSession {
    fn transaction(
        &mut self,
        _read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        let (c, st) = (&mut self.c, &self.st);
        restarting(rec, DbError::conflict, || {
            let mut tx = c.start_transaction(TxOpts::default())?;
            let outcome = body(&mut MariaTx { tx: &mut tx, st })?;
            match outcome {
                Outcome::Committed => tx.commit()?,
                Outcome::RolledBack => tx.rollback()?,
            }
            Ok(outcome)
        })
    }
}

/// Runs one portable statement outside the prepared set (checks, batch queries). An UPDATE
/// reports the rows it matched, as the other engines do, not only the rows it changed.
pub fn adhoc(c: &mut Conn, sql: &str) -> Result<Rows, DbError> {
    let mut result = c.exec_iter(dialect(sql, Dialect::MariaDb), ())?;
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
