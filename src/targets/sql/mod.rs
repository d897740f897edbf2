//! The seam between workloads and engines: portable SQL in, typed values out.
//!
//! A workload writes each statement once, in portable SQL with `?` placeholders, in a
//! [`Statements`] list; an engine that spells a statement its own way (full-text search, an
//! upsert) gets an override by name, as BenchBase's dialect files override single
//! statements. Values cross the seam as [`Arg`] and [`Val`], which each engine maps to its
//! own types, and transactions run through a [`Session`], so no workload matches on the
//! connection or keeps a copy of its logic per engine. The engine modules here are the
//! only code that knows a driver crate.

pub mod bulk;
mod mariadb;
pub use mariadb::{WireError, WireOpts};
mod net;
mod postgres;
pub use postgres::wire::WireError as PgWireError;
pub mod replay;
mod sqlite;

use super::{Connection, Engine};
use crate::driver::{Outcome, UnitRecorder};
use anyhow::Result;
use std::borrow::Cow;

/// Translates portable SQL for an engine: PostgreSQL numbers its placeholders, SQLite has
/// no row locks (its writers are serialized whole), MariaDB casts to SIGNED, not BIGINT.
pub fn translate(sql: &str, engine: Engine) -> String {
    match engine {
        Engine::Sqlite => sql.replace(" FOR UPDATE", ""),
        Engine::Mariadb => sql.replace(" AS BIGINT)", " AS SIGNED)"),
        Engine::Postgres => {
            let mut out = String::with_capacity(sql.len() + 16);
            let mut n = 0;
            for c in sql.chars() {
                if c == '?' {
                    n += 1;
                    out.push_str(&format!("${n}"));
                } else {
                    out.push(c);
                }
            }
            out
        }
    }
}

/// A parameter value. Engines convert it to the column's type (PostgreSQL is strict).
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Int(i64),
    Real(f64),
    Text(&'a str),
    Null,
}

/// A result value. Types the transactions never read back (timestamps) are fetched but
/// not decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Other,
}

impl Val {
    /// Text as the engine sent it: checked as UTF-8 in place (the lossy conversion's
    /// chunk-by-chunk scan took a twentieth of the client's CPU on sysbench's range
    /// reads), with invalid bytes replaced.
    pub fn text(bytes: Vec<u8>) -> Val {
        Val::Text(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

/// Rows of one result, stored flat to keep allocations per statement at one.
#[derive(Default, Debug)]
pub struct Rows {
    pub cols: usize,
    pub vals: Vec<Val>,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.vals.len().checked_div(self.cols).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    fn at(&self, row: usize, col: usize) -> Result<&Val, DbError> {
        self.vals
            .get(row * self.cols + col)
            .ok_or_else(|| DbError::Data(format!("no value at row {row}, column {col}")))
    }

    pub fn int(&self, row: usize, col: usize) -> Result<i64, DbError> {
        match self.at(row, col)? {
            Val::Int(v) => Ok(*v),
            Val::Real(v) if v.fract() == 0.0 => Ok(*v as i64),
            // MariaDB returns SUM over integers as DECIMAL, which arrives as text.
            Val::Text(s) if s.parse::<i64>().is_ok() => Ok(s.parse().expect("checked")),
            v => Err(DbError::Data(format!("expected an integer, got {v:?}"))),
        }
    }

    /// A number; NULL reads as 0 (an empty SUM).
    pub fn real(&self, row: usize, col: usize) -> Result<f64, DbError> {
        match self.at(row, col)? {
            Val::Int(v) => Ok(*v as f64),
            Val::Real(v) => Ok(*v),
            Val::Null => Ok(0.0),
            Val::Text(s) if s.parse::<f64>().is_ok() => Ok(s.parse().expect("checked")),
            v => Err(DbError::Data(format!("expected a number, got {v:?}"))),
        }
    }

    pub fn text(&self, row: usize, col: usize) -> Result<Cow<'_, str>, DbError> {
        match self.at(row, col)? {
            Val::Text(s) => Ok(Cow::Borrowed(s)),
            Val::Int(v) => Ok(Cow::Owned(v.to_string())),
            v => Err(DbError::Data(format!("expected text, got {v:?}"))),
        }
    }

    /// Every row's first `k` columns as canonical text, for comparing results across engines.
    pub fn canonical_prefix(&self, k: usize) -> Vec<String> {
        let cell = |v: &Val| match v {
            Val::Null => "NULL".to_string(),
            Val::Int(i) => i.to_string(),
            Val::Real(f) => format!("{f:.2}"),
            Val::Text(s) => s.clone(),
            Val::Other => "?".into(),
        };
        self.vals.chunks(self.cols.max(1)).map(|r| r.iter().take(k).map(cell).collect::<Vec<_>>().join("|")).collect()
    }
}

/// Why a statement failed. Engine errors keep their type so conflicts can be told apart
/// from real failures and retried.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Postgres(#[from] ::postgres::Error),
    #[error(transparent)]
    MySql(#[from] ::mysql::Error),
    #[error(transparent)]
    Maria(#[from] WireError),
    #[error(transparent)]
    Pg(#[from] PgWireError),
    /// The database holds something the workload did not put there.
    #[error("{0}")]
    Data(String),
    /// A conflict the workload recognized itself (see [`DbError::duplicate_as_conflict`]).
    #[error("{0}")]
    Conflict(&'static str),
    /// A connection opened at its first use could not be opened.
    #[error("{0:#}")]
    Connect(anyhow::Error),
}

impl DbError {
    /// The kind of conflict, when the transaction should simply be run again.
    pub fn conflict(&self) -> Option<&'static str> {
        match self {
            DbError::Sqlite(e) => super::sqlite::conflict(e),
            DbError::Postgres(e) => super::postgres::conflict(e.code()),
            DbError::Pg(e) => super::postgres::conflict(e.code()),
            DbError::MySql(::mysql::Error::MySqlError(e)) => super::mysql::conflict(e.code),
            DbError::MySql(_) => None,
            DbError::Maria(e) => e.code().and_then(super::mysql::conflict),
            DbError::Data(_) | DbError::Connect(_) => None,
            DbError::Conflict(kind) => Some(kind),
        }
    }

    /// A duplicate key turned into a conflict that restarts the transaction: for a workload
    /// that re-inserts a row it just deleted, where a concurrent transaction can re-insert
    /// it first (PostgreSQL's delete then finds nothing to wait for), as sysbench retries it.
    pub fn duplicate_as_conflict(self) -> Self {
        let duplicate = match &self {
            DbError::Sqlite(e) => sqlite::duplicate(e),
            DbError::Postgres(e) => e.code() == Some(&::postgres::error::SqlState::UNIQUE_VIOLATION),
            DbError::Pg(e) => e.code() == Some(&::postgres::error::SqlState::UNIQUE_VIOLATION),
            DbError::MySql(::mysql::Error::MySqlError(m)) => m.code == 1062,
            DbError::Maria(e) => e.code() == Some(1062),
            _ => false,
        };
        if duplicate {
            DbError::Conflict("duplicate key")
        } else {
            self
        }
    }
}

/// One open transaction on some engine.
pub trait Tx {
    /// Runs statement `q` of the session's [`Statements`] and returns its rows.
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError>;
    /// Runs statement `q` and returns the number of rows it matched.
    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError>;
    /// Runs write `q`, whose count the transaction does not read, no later than the next
    /// statement or the commit; its failure surfaces there. PostgreSQL sends it with that
    /// statement in one pipeline (one round trip for both); MariaDB sends a run of one
    /// statement as one bulk execution; SQLite runs it now.
    fn defer(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        self.execute(q, args).map(drop)
    }
    /// Runs read `q`, whose rows the transaction does not use (pgbench's read of the
    /// balance), no later than the next statement or the commit, as [`Tx::defer`] does a
    /// write: PostgreSQL sends it in that pipeline; the other engines run it now.
    fn defer_read(&mut self, q: Q, args: &[Arg]) -> Result<(), DbError> {
        self.query(q, args).map(drop)
    }
}

/// Index into a [`Statements`] list, named by the workload's constants.
pub type Q = usize;

/// A workload's statements: the portable text, and the ones an engine spells its own way.
pub struct Statements {
    pub portable: &'static [&'static str],
    pub overrides: fn(Engine, Q) -> Option<&'static str>,
}

impl Statements {
    /// Statements every engine runs as written.
    pub const fn portable(portable: &'static [&'static str]) -> Self {
        Self { portable, overrides: no_overrides }
    }

    /// Statement `q` as `engine` runs it.
    pub fn text(&self, engine: Engine, q: Q) -> String {
        translate((self.overrides)(engine, q).unwrap_or(self.portable[q]), engine)
    }

    fn all(&self, engine: Engine) -> Vec<String> {
        (0..self.portable.len()).map(|q| self.text(engine, q)).collect()
    }
}

fn no_overrides(_: Engine, _: Q) -> Option<&'static str> {
    None
}

/// Declares statements as constants that index a list: `statements!(LIST { NAME = "sql"; })`.
macro_rules! statements {
    ($list:ident { $($name:ident = $sql:expr;)* }) => {
        $crate::targets::sql::statements!(@index 0usize; $($name)*);
        /// Every statement, in portable SQL, indexed by the constants above.
        pub const $list: &[&str] = &[$($sql),*];
    };
    (@index $n:expr; $name:ident $($rest:ident)*) => {
        pub const $name: $crate::targets::sql::Q = $n;
        $crate::targets::sql::statements!(@index $n + 1usize; $($rest)*);
    };
    (@index $n:expr;) => {};
}
pub(crate) use statements;

/// One connection with a workload's statements prepared: the engine side of a worker.
pub trait Session: Send {
    fn engine(&self) -> Engine;
    /// Runs a read outside any transaction (writes go through [`Session::transaction`], so
    /// SQLite's write gate sees them).
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError>;
    /// Runs `body` as one transaction: committed when it says `Committed`, rolled back on
    /// `RolledBack`, restarted (and the restart counted in `rec`) on conflicts.
    fn transaction(
        &mut self,
        read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome>;
}

/// Opens a session on `conn` with `statements` prepared for its engine.
pub fn session(conn: Connection, statements: &Statements) -> Result<Box<dyn Session>> {
    let sql = statements.all(conn.engine());
    prepared(conn, sql)
}

/// Opens a session on `conn` with statements written at run time (one set per table), in
/// portable SQL, indexed as given.
pub fn session_of(conn: Connection, portable: &[String]) -> Result<Box<dyn Session>> {
    let engine = conn.engine();
    prepared(conn, portable.iter().map(|s| translate(s, engine)).collect())
}

fn prepared(conn: Connection, sql: Vec<String>) -> Result<Box<dyn Session>> {
    Ok(match conn {
        Connection::Sqlite(c) => Box::new(sqlite::SqliteSession::new(c, sql)),
        Connection::Postgres(c) => Box::new(postgres::PgSession::open(c, &sql)?),
        Connection::MySql(c) => Box::new(mariadb::MariaSession::open(c, &sql)?),
    })
}

/// Runs one portable statement outside a transaction (checks, reports, batch queries). A
/// statement without a result set returns the rows it matched as one value.
pub fn adhoc(conn: &mut Connection, sql: &str) -> Result<Rows, DbError> {
    let sql = translate(sql, conn.engine());
    match conn {
        Connection::Sqlite(c) => sqlite::adhoc(c, &sql),
        Connection::Postgres(c) => postgres::adhoc(c, &sql),
        Connection::MySql(c) => mariadb::adhoc(c.conn().map_err(DbError::Connect)?, &sql),
    }
}

/// Transactions the server has counted so far, committed and rolled back: PostgreSQL's
/// for the connection's database; MariaDB's for the whole server, which keeps no count per
/// database (its storage engines' commits, autocommitted statements included).
pub fn server_transactions(conn: &mut Connection) -> Result<(u64, u64)> {
    let sql = match conn.engine() {
        Engine::Postgres => {
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        }
        Engine::Mariadb => {
            "SELECT CAST(MAX(CASE WHEN VARIABLE_NAME = 'HANDLER_COMMIT' THEN VARIABLE_VALUE END) AS UNSIGNED), \
             CAST(MAX(CASE WHEN VARIABLE_NAME = 'HANDLER_ROLLBACK' THEN VARIABLE_VALUE END) AS UNSIGNED) \
             FROM information_schema.GLOBAL_STATUS"
        }
        Engine::Sqlite => anyhow::bail!("SQLite keeps no count of transactions"),
    };
    let rows = adhoc(conn, sql)?;
    Ok((rows.int(0, 0)? as u64, rows.int(0, 1)? as u64))
}

/// The first column of the first row of a portable query as a number (NULL reads as 0).
pub fn number(conn: &mut Connection, sql: &str) -> Result<f64> {
    Ok(adhoc(conn, sql)?.real(0, 0)?)
}

/// Runs a script of `;`-separated statements in the engine's own SQL (DDL).
pub fn script(conn: &mut Connection, sql: &str) -> Result<()> {
    match conn {
        Connection::Sqlite(c) => c.execute_batch(sql)?,
        Connection::Postgres(c) => c.batch_execute(sql)?,
        Connection::MySql(c) => mariadb::script(c.conn()?, sql)?,
    }
    Ok(())
}

/// Runs one statement of the engine's own SQL as text, not prepared (MariaDB cannot prepare
/// every statement); returns the rows it changed or matched (0 for DDL).
pub fn exec(conn: &mut Connection, sql: &str) -> Result<u64> {
    Ok(match conn {
        Connection::Sqlite(c) => c.execute(sql, [])? as u64,
        Connection::Postgres(c) => c.execute(sql, &[])?,
        Connection::MySql(c) => mariadb::exec(c.conn()?, sql)?,
    })
}

/// Runs a query and receives every row and value, keeping none (client memory stays
/// flat, as seed 003's scripts read whole results); returns the row count.
pub fn drain(conn: &mut Connection, sql: &str) -> Result<u64> {
    match conn {
        Connection::Sqlite(c) => sqlite::drain(c, sql),
        Connection::Postgres(c) => postgres::drain(c, sql),
        Connection::MySql(c) => mariadb::drain(c.conn()?, sql),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_deadlock_or_serialization_failure_is_a_conflict_and_a_duplicate_can_be_one() {
        use ::postgres::error::SqlState;
        let server = |code: SqlState| {
            DbError::Pg(PgWireError::Server { severity: "ERROR".into(), code, message: String::new() })
        };
        assert_eq!(server(SqlState::T_R_SERIALIZATION_FAILURE).conflict(), Some("serialization failure"));
        assert_eq!(server(SqlState::T_R_DEADLOCK_DETECTED).conflict(), Some("deadlock"));
        assert_eq!(server(SqlState::DIVISION_BY_ZERO).conflict(), None);
        assert_eq!(server(SqlState::UNIQUE_VIOLATION).duplicate_as_conflict().conflict(), Some("duplicate key"));
    }

    #[test]
    fn statements_translate_placeholders_locks_and_casts() {
        let sql = "SELECT a FROM t WHERE x = ? AND y = ? FOR UPDATE";
        assert_eq!(translate(sql, Engine::Postgres), "SELECT a FROM t WHERE x = $1 AND y = $2 FOR UPDATE");
        assert_eq!(translate(sql, Engine::Sqlite), "SELECT a FROM t WHERE x = ? AND y = ?");
        let now = "INSERT INTO t VALUES (CURRENT_TIMESTAMP, ?)";
        assert_eq!(translate(now, Engine::Mariadb), now);
        assert_eq!(translate("SELECT CAST(x AS BIGINT) FROM t", Engine::Mariadb), "SELECT CAST(x AS SIGNED) FROM t");
    }

    mod listed {
        crate::targets::sql::statements!(LIST { FIRST = "SELECT 1"; SECOND = "SELECT ?"; });
    }

    #[test]
    fn statement_names_index_the_list_and_overrides_replace_one() {
        assert_eq!((listed::FIRST, listed::SECOND), (0, 1));
        assert_eq!(listed::LIST[listed::SECOND], "SELECT ?");
        let st = Statements {
            portable: listed::LIST,
            overrides: |e, q| (e == Engine::Postgres && q == listed::FIRST).then_some("SELECT 2"),
        };
        assert_eq!(st.text(Engine::Postgres, listed::FIRST), "SELECT 2");
        assert_eq!(st.text(Engine::Postgres, listed::SECOND), "SELECT $1");
        assert_eq!(st.text(Engine::Sqlite, listed::FIRST), "SELECT 1");
    }

    #[test]
    fn rows_read_typed_values() {
        let r = Rows { cols: 2, vals: vec![Val::Int(3), Val::Text("x".into()), Val::Null, Val::Real(2.5)] };
        assert_eq!(r.len(), 2);
        assert_eq!(r.int(0, 0).unwrap(), 3);
        assert_eq!(r.real(1, 0).unwrap(), 0.0);
        assert_eq!(r.real(1, 1).unwrap(), 2.5);
        assert!(r.int(0, 1).is_err());
        assert!(r.int(5, 0).is_err());
        assert_eq!(r.canonical_prefix(2), vec!["3|x", "NULL|2.50"]);
        assert_eq!(r.canonical_prefix(1), vec!["3", "NULL"]);
    }
}
