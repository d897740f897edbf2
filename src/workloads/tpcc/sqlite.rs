//! TPC-C on SQLite: generator threads feed one writer (SQLite has one), and transactions
//! run through the shared write gate like every dbvs writer.

use super::load::{self, Cell, Row, Sink, Table};
use super::random::Constants;
use super::sql::{dialect, Arg, DbError, Dialect, Rows, Tx, Val, Q, STATEMENTS};
use super::worker::Session;
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::sqlite::SqliteConnection;
use anyhow::Result;
use indicatif::ProgressBar;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::sync::mpsc;
use std::sync::LazyLock;

static SQL: LazyLock<Vec<String>> = LazyLock::new(|| STATEMENTS.iter().map(|s| dialect(s, Dialect::Sqlite)).collect());

/// Chunks a writer keeps in flight: enough to keep it busy, few enough to bound memory.
const QUEUE: usize = 64;
/// Rows per load transaction.
const COMMIT_EVERY: usize = 200_000;

struct Sender(mpsc::SyncSender<(Table, Vec<Row>)>);

impl Sink for Sender {
    fn put(&mut self, table: Table, rows: &[Row]) -> Result<()> {
        self.0.send((table, rows.to_vec())).map_err(|_| anyhow::anyhow!("the SQLite writer stopped"))
    }
    fn end_part(&mut self) -> Result<()> {
        Ok(())
    }
}

fn cell(c: &Cell) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match c {
        Cell::Int(v) => ValueRef::Integer(*v),
        Cell::Real(v) => ValueRef::Real(*v),
        Cell::Text(s) => ValueRef::Text(s.as_bytes()),
        Cell::Null => ValueRef::Null,
    })
}

pub fn load(
    c: &mut SqliteConnection,
    warehouses: i64,
    seed: u64,
    consts: Constants,
    progress: &ProgressBar,
) -> Result<()> {
    for t in super::schema::tables(Dialect::Sqlite) {
        c.execute_batch(&t)?;
    }
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let threads = super::loader_threads(warehouses).saturating_sub(1).max(1);
    std::thread::scope(|s| -> Result<()> {
        let generator = s.spawn(move || {
            let sinks = (0..threads).map(|_| Box::new(Sender(tx.clone())) as Box<dyn Sink + Send>).collect();
            load::generate(warehouses, seed, consts, sinks, progress)
        });
        let written = write_all(c, rx);
        generator.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        written
    })?;
    for i in super::schema::indexes() {
        c.execute_batch(i)?;
    }
    c.execute_batch("ANALYZE")?;
    Ok(())
}

fn write_all(c: &SqliteConnection, rx: mpsc::Receiver<(Table, Vec<Row>)>) -> Result<()> {
    let mut since_commit = 0;
    c.execute_batch("BEGIN")?;
    for (table, rows) in rx {
        let marks = vec!["?"; table.columns()].join(", ");
        let mut st = c.prepare_cached(&format!("INSERT INTO {} VALUES ({marks})", table.name()))?;
        for row in &rows {
            for (i, v) in row.iter().enumerate() {
                st.raw_bind_parameter(i + 1, cell(v))?;
            }
            st.raw_execute()?;
        }
        since_commit += rows.len();
        if since_commit >= COMMIT_EVERY {
            c.execute_batch("COMMIT; BEGIN")?;
            since_commit = 0;
        }
    }
    c.execute_batch("COMMIT")?;
    Ok(())
}

pub struct SqliteSession(pub SqliteConnection);

struct SqliteTx<'c>(&'c rusqlite::Connection);

fn arg<'a>(a: &Arg<'a>) -> ToSqlOutput<'a> {
    ToSqlOutput::Borrowed(match a {
        Arg::Int(v) => ValueRef::Integer(*v),
        Arg::Real(v) => ValueRef::Real(*v),
        Arg::Text(s) => ValueRef::Text(s.as_bytes()),
    })
}

fn val(v: ValueRef) -> Val {
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Real(f) => Val::Real(f),
        ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(_) => Val::Other,
    }
}

impl SqliteTx<'_> {
    fn prepared(&self, q: Q, args: &[Arg]) -> rusqlite::Result<rusqlite::CachedStatement<'_>> {
        let mut st = self.0.prepare_cached(&SQL[q])?;
        for (i, a) in args.iter().enumerate() {
            st.raw_bind_parameter(i + 1, arg(a))?;
        }
        Ok(st)
    }
}

impl Tx for SqliteTx<'_> {
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError> {
        let mut st = self.prepared(q, args)?;
        read(&mut st)
    }

    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError> {
        Ok(self.prepared(q, args)?.raw_execute()? as u64)
    }
}

impl Session for SqliteSession {
    fn transaction(
        &mut self,
        read_only: bool,
        rec: &mut UnitRecorder,
        body: &mut dyn FnMut(&mut dyn Tx) -> Result<Outcome, DbError>,
    ) -> Result<Outcome> {
        if !read_only {
            return self.0.write_with(rec, DbError::conflict, |c| {
                let outcome = body(&mut SqliteTx(c))?;
                if outcome == Outcome::RolledBack {
                    c.execute_batch("ROLLBACK")?;
                }
                Ok(outcome)
            });
        }
        // Readers need no gate: WAL gives them a snapshot while the writer goes on.
        let c = &self.0.conn;
        restarting(rec, DbError::conflict, || {
            c.execute_batch("BEGIN")?;
            let result = body(&mut SqliteTx(c));
            c.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
            result
        })
    }
}

/// Runs one portable statement outside the prepared set (checks, batch queries).
pub fn adhoc(c: &rusqlite::Connection, sql: &str) -> Result<Rows, DbError> {
    let mut st = c.prepare(&dialect(sql, Dialect::Sqlite))?;
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
