//! The three things the benchmarks ask of an engine: run a statement, read a result to
//! its end, and read one number. Results stream through: the client receives every row
//! (as seed 003's scripts did) but keeps none, so client memory stays flat.

use crate::targets::Connection;
use anyhow::Result;
use mysql::prelude::Queryable;
use postgres::fallible_iterator::FallibleIterator;

/// The SQL dialect of a connection's engine.
pub fn dialect(conn: &Connection) -> crate::workloads::tpcc::Dialect {
    use crate::workloads::tpcc::Dialect;
    match conn {
        Connection::Sqlite(_) => Dialect::Sqlite,
        Connection::Postgres(_) => Dialect::Postgres,
        Connection::MySql(_) => Dialect::MariaDb,
    }
}

/// Runs one statement; returns the rows it changed or matched (0 for DDL).
pub fn exec(conn: &mut Connection, sql: &str) -> Result<u64> {
    Ok(match conn {
        Connection::Sqlite(c) => c.execute(sql, [])? as u64,
        Connection::Postgres(c) => c.execute(sql, &[])?,
        // The text protocol: MariaDB cannot prepare every statement (BEGIN, temporary DDL).
        Connection::MySql(c) => {
            c.query_drop(sql)?;
            c.affected_rows()
        }
    })
}

/// Runs a query and reads every row; returns the row count.
pub fn drain(conn: &mut Connection, sql: &str) -> Result<u64> {
    let mut n = 0;
    match conn {
        Connection::Sqlite(c) => {
            let mut st = c.prepare_cached(sql)?;
            let cols = st.column_count();
            let mut rows = st.raw_query();
            // SQLite computes a value when it is asked for; a client that only counted
            // rows would skip work a real client does.
            while let Some(r) = rows.next()? {
                for i in 0..cols {
                    std::hint::black_box(r.get_ref(i)?);
                }
                n += 1;
            }
        }
        Connection::Postgres(c) => {
            let mut rows = c.query_raw(sql, std::iter::empty::<&(dyn postgres::types::ToSql + Sync)>())?;
            while let Some(r) = rows.next()? {
                std::hint::black_box(r);
                n += 1;
            }
        }
        Connection::MySql(c) => {
            for r in c.query_iter(sql)? {
                std::hint::black_box(r?);
                n += 1;
            }
        }
    }
    Ok(n)
}

/// The first column of the first row as a number (NULL reads as 0).
pub fn number(conn: &mut Connection, sql: &str) -> Result<f64> {
    Ok(crate::workloads::tpcc::adhoc(conn, sql)?.real(0, 0)?)
}
