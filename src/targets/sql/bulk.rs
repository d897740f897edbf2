//! Bulk loading: generated rows into each engine's fastest path (COPY on PostgreSQL,
//! multi-row INSERTs on MariaDB, prepared INSERTs on SQLite), so a workload's loader is
//! written once.

use crate::targets::{Connection, Database};
use anyhow::Result;
use mysql::prelude::Queryable;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::mpsc;

#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(i64),
    Real(f64),
    Text(String),
    Null,
}

pub type Row = Vec<Cell>;

/// Where a loader thread puts its rows. A part is the unit of commit: rows put since the
/// last `end_part` become visible together.
pub trait Sink: Send {
    fn put(&mut self, table: &str, rows: &[Row]) -> Result<()>;
    fn end_part(&mut self) -> Result<()>;
}

/// Chunks the SQLite writer keeps in flight: enough to keep it busy, few enough to bound memory.
const QUEUE: usize = 64;
/// Rows per SQLite load transaction.
const COMMIT_EVERY: usize = 200_000;

/// Loads what `generate` puts into `threads` sinks. On PostgreSQL and MariaDB each sink has
/// its own connection to `db`; SQLite has one writer (a build holds its file exclusively),
/// so the sinks feed the building connection `conn` through a queue while `generate` runs
/// on other threads (one fewer, as the writer takes a core).
pub fn load<G>(db: &dyn Database, conn: &mut Connection, threads: usize, generate: G) -> Result<()>
where
    G: FnOnce(Vec<Box<dyn Sink>>) -> Result<()> + Send,
{
    let threads = threads.max(1);
    let Connection::Sqlite(writer) = conn else {
        let sinks = (0..threads).map(|_| server_sink(db.connect()?)).collect::<Result<Vec<_>>>()?;
        return generate(sinks);
    };
    let threads = threads.saturating_sub(1).max(1);
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    std::thread::scope(|s| -> Result<()> {
        let generator = s.spawn(move || {
            let sinks = (0..threads).map(|_| Box::new(Queued(tx.clone())) as Box<dyn Sink>).collect();
            generate(sinks)
        });
        let written = write_sqlite(writer, rx);
        let generated = generator.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        // The writer's own error first: the generator only sees that the queue closed.
        written.and(generated)
    })
}

fn server_sink(conn: Connection) -> Result<Box<dyn Sink>> {
    Ok(match conn {
        Connection::Postgres(c) => Box::new(CopySink { c: c.client, open: false, buf: String::new() }),
        Connection::MySql(c) => Box::new(InsertSink { c: c.into_conn()?, sql: String::new(), open: false }),
        Connection::Sqlite(_) => unreachable!("SQLite rows go through its one writer"),
    })
}

struct Queued(mpsc::SyncSender<(String, Vec<Row>)>);

impl Sink for Queued {
    fn put(&mut self, table: &str, rows: &[Row]) -> Result<()> {
        self.0.send((table.to_string(), rows.to_vec())).map_err(|_| anyhow::anyhow!("the SQLite writer stopped"))
    }
    fn end_part(&mut self) -> Result<()> {
        Ok(())
    }
}

fn sqlite_cell(c: &Cell) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match c {
        Cell::Int(v) => ValueRef::Integer(*v),
        Cell::Real(v) => ValueRef::Real(*v),
        Cell::Text(s) => ValueRef::Text(s.as_bytes()),
        Cell::Null => ValueRef::Null,
    })
}

fn write_sqlite(c: &rusqlite::Connection, rx: mpsc::Receiver<(String, Vec<Row>)>) -> Result<()> {
    let mut since_commit = 0;
    c.execute_batch("BEGIN")?;
    for (table, rows) in rx {
        let Some(first) = rows.first() else { continue };
        let marks = vec!["?"; first.len()].join(", ");
        let mut st = c.prepare_cached(&format!("INSERT INTO {table} VALUES ({marks})"))?;
        for row in &rows {
            for (i, v) in row.iter().enumerate() {
                st.raw_bind_parameter(i + 1, sqlite_cell(v))?;
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

/// One loader connection on PostgreSQL, and the open transaction of its current part.
struct CopySink {
    c: postgres::Client,
    open: bool,
    buf: String,
}

/// COPY's text format: a backslash, tab, newline or carriage return in a value is escaped.
fn copy_text(out: &mut String, s: &str) {
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

impl Sink for CopySink {
    fn put(&mut self, table: &str, rows: &[Row]) -> Result<()> {
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
                    Cell::Text(s) => copy_text(&mut self.buf, s),
                    Cell::Null => self.buf.push_str("\\N"),
                }
            }
            self.buf.push('\n');
        }
        let mut w = self.c.copy_in(&format!("COPY {table} FROM STDIN"))?;
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

/// Rows per multi-row INSERT: large statements amortize parsing, within max_allowed_packet.
const ROWS_PER_INSERT: usize = 2000;

/// One loader connection on MariaDB, sending multi-row INSERTs.
struct InsertSink {
    c: mysql::Conn,
    sql: String,
    open: bool,
}

/// A MariaDB string literal: quotes doubled, backslashes escaped (the server's default mode
/// reads them as escapes).
fn quoted(out: &mut String, s: &str) {
    out.push('\'');
    for ch in s.chars() {
        match ch {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

impl Sink for InsertSink {
    fn put(&mut self, table: &str, rows: &[Row]) -> Result<()> {
        if !self.open {
            self.c.query_drop("BEGIN")?;
            self.open = true;
        }
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            self.sql.clear();
            write!(self.sql, "INSERT INTO {table} VALUES ")?;
            for (n, row) in chunk.iter().enumerate() {
                self.sql.push_str(if n == 0 { "(" } else { ",(" });
                for (i, v) in row.iter().enumerate() {
                    if i > 0 {
                        self.sql.push(',');
                    }
                    match v {
                        Cell::Int(x) => write!(self.sql, "{x}")?,
                        Cell::Real(x) => write!(self.sql, "{x}")?,
                        Cell::Text(s) => quoted(&mut self.sql, s),
                        Cell::Null => self.sql.push_str("NULL"),
                    }
                }
                self.sql.push(')');
            }
            self.c.query_drop(&self.sql)?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_copy_and_for_insert() {
        let mut copy = String::new();
        copy_text(&mut copy, "a\tb\\c\nd");
        assert_eq!(copy, "a\\tb\\\\c\\nd");
        let mut insert = String::new();
        quoted(&mut insert, "it's a\\b");
        assert_eq!(insert, "'it''s a\\\\b'");
    }
}
