//! The seam on SQLite: statements prepared from the connection's cache, writers queued
//! behind the shared write gate, readers on their WAL snapshot.

use super::{Arg, DbError, Rows, Session, Tx, Val, Q};
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::sqlite::SqliteConnection;
use crate::targets::Engine;
use anyhow::Result;
use rusqlite::types::{ToSqlOutput, ValueRef};

pub struct SqliteSession {
    c: SqliteConnection,
    sql: Vec<String>,
}

impl SqliteSession {
    pub fn new(c: SqliteConnection, sql: Vec<String>) -> Self {
        // Every statement of the session stays prepared (the cache holds 16 by default, and
        // TPC-C has more: re-preparing them would be CPU counted against the engine).
        c.set_prepared_statement_cache_capacity(sql.len().max(16));
        Self { c, sql }
    }
}

struct SqliteTx<'c> {
    c: &'c rusqlite::Connection,
    sql: &'c [String],
}

fn arg<'a>(a: &Arg<'a>) -> ToSqlOutput<'a> {
    ToSqlOutput::Borrowed(match a {
        Arg::Int(v) => ValueRef::Integer(*v),
        Arg::Real(v) => ValueRef::Real(*v),
        Arg::Text(s) => ValueRef::Text(s.as_bytes()),
        Arg::Null => ValueRef::Null,
    })
}

fn val(v: ValueRef) -> Val {
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Real(f) => Val::Real(f),
        ValueRef::Text(t) => Val::text(t.to_vec()),
        ValueRef::Blob(_) => Val::Other,
    }
}

fn prepared<'c>(
    c: &'c rusqlite::Connection,
    sql: &str,
    args: &[Arg],
) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
    let mut st = c.prepare_cached(sql)?;
    for (i, a) in args.iter().enumerate() {
        st.raw_bind_parameter(i + 1, arg(a))?;
    }
    Ok(st)
}

impl Tx for SqliteTx<'_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        read(&mut *prepared(self.c, &self.sql[q], args)?)
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        Ok(prepared(self.c, &self.sql[q], args)?.raw_execute()? as u64)
    }
}

impl Session for SqliteSession {
    fn engine(&self) -> Engine {
        Engine::Sqlite
    }

    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        read(&mut *prepared(&self.c, &self.sql[q], args)?)
    }

    fn transaction(
        &mut self,
        read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        let sql = &self.sql;
        if !read_only {
            return self.c.write_with(rec, DbError::conflict, |c| {
                let outcome = body(&mut SqliteTx { c, sql })?;
                if outcome == Outcome::RolledBack {
                    c.execute_batch("ROLLBACK")?;
                }
                Ok(outcome)
            });
        }
        // Readers need no gate: WAL gives them a snapshot while the writer goes on.
        let c = &self.c.conn;
        restarting(rec, DbError::conflict, || {
            c.execute_batch("BEGIN")?;
            let result = body(&mut SqliteTx { c, sql });
            c.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
            result
        })
    }
}

pub fn adhoc(c: &rusqlite::Connection, sql: &str) -> Result<Rows, DbError> {
    let mut st = c.prepare(sql)?;
    if st.column_count() == 0 {
        return Ok(Rows { cols: 1, vals: vec![Val::Int(st.raw_execute()? as i64)] });
    }
    read(&mut st)
}

/// Runs a bound statement and collects its rows.
fn read(st: &mut rusqlite::Statement) -> Result<Rows, DbError> {
    let cols = st.column_count();
    let mut out = Rows { cols, vals: Vec::new() };
    let mut rows = st.raw_query();
    while let Some(r) = rows.next()? {
        for i in 0..cols {
            out.vals.push(val(r.get_ref(i)?));
        }
    }
    Ok(out)
}

pub fn drain(c: &rusqlite::Connection, sql: &str) -> Result<u64> {
    let mut st = c.prepare_cached(sql)?;
    let cols = st.column_count();
    let mut rows = st.raw_query();
    let mut n = 0;
    // SQLite computes a value when it is asked for; a client that only counted rows would
    // skip work a real client does.
    while let Some(r) = rows.next()? {
        for i in 0..cols {
            std::hint::black_box(r.get_ref(i)?);
        }
        n += 1;
    }
    Ok(n)
}

/// A primary key or unique index already holds the value.
pub fn duplicate(e: &rusqlite::Error) -> bool {
    const PRIMARYKEY: i32 = rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY;
    const UNIQUE: i32 = rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE;
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if matches!(f.extended_code, PRIMARYKEY | UNIQUE))
}
