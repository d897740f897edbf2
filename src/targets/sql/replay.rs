//! The seam for a captured statement replayed as the application sent it: its own SQL
//! text, not portable SQL, with its bind parameters as text. PostgreSQL runs a statement
//! without parameters by the simple protocol (one string may hold several statements, as
//! `psql` sends them) and one with parameters by the extended protocol, its parameters in
//! text format with the types the server infers, as libpq's `PQexecParams` sends them; a
//! statement the application prepared by name is prepared once per session, an unnamed
//! one at every execution, as the application had it. Results are read and dropped, so memory stays flat whatever they hold.

use super::{Connection, DbError};
use bytes::BytesMut;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{Format, IsNull, ToSql, Type};
use std::collections::HashMap;

/// Prepared statements a session keeps by name before it starts over (an application
/// that names statements without end).
const PREPARED_KEPT: usize = 1024;

/// One replayed session's connection.
pub struct ReplaySession {
    conn: Connection,
    /// PostgreSQL's statements prepared by name, with the text they were prepared from.
    prepared: HashMap<String, (String, tokio_postgres::Statement)>,
}

/// Why a replayed statement did not run.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The server refused it (a syntax error, a missing table, a constraint): counted, and
    /// the session goes on.
    #[error("{0}")]
    Refused(String),
    /// The connection is gone: the session cannot go on.
    #[error("the connection broke: {0}")]
    Broken(String),
}

impl From<DbError> for Failure {
    fn from(e: DbError) -> Self {
        let refused = match &e {
            DbError::Postgres(p) => p.as_db_error().is_some(),
            _ => false,
        };
        match refused {
            true => Failure::Refused(e.to_string()),
            false => Failure::Broken(e.to_string()),
        }
    }
}

/// A parameter in text format, of whatever type the server inferred for it.
#[derive(Debug)]
struct Text<'a>(Option<&'a str>);

impl ToSql for Text<'_> {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Some(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }

    postgres::types::to_sql_checked!();
}

impl ReplaySession {
    pub fn new(conn: Connection) -> Self {
        Self { conn, prepared: HashMap::new() }
    }

    /// Runs `sql` with `params` (prepared once as `prepared` when the application named
    /// it); returns the rows it returned.
    pub fn run(&mut self, sql: &str, params: &[Option<String>], prepared: Option<&str>) -> Result<u64, Failure> {
        match &mut self.conn {
            Connection::Postgres(c) if params.is_empty() && prepared.is_none() => {
                let messages = c.simple_query(sql).map_err(DbError::from)?;
                Ok(messages.iter().filter(|m| matches!(m, postgres::SimpleQueryMessage::Row(_))).count() as u64)
            }
            Connection::Postgres(c) => {
                let params = params.iter().map(|p| Text(p.as_deref()));
                let rows = match prepared {
                    Some(name) => {
                        let st = prepare_named(&mut self.prepared, c, name, sql)?;
                        c.query_raw(&st, params)
                    }
                    None => c.query_raw(sql, params),
                };
                let mut rows = rows.map_err(DbError::from)?;
                let mut n = 0;
                while let Some(r) = rows.next().map_err(DbError::from)? {
                    std::hint::black_box(r);
                    n += 1;
                }
                Ok(n)
            }
            Connection::MySql(_) | Connection::Sqlite(_) => {
                Err(Failure::Broken("a captured PostgreSQL log replays on PostgreSQL".into()))
            }
        }
    }
}

/// The statement prepared as `name` from `sql`, prepared now if it was not yet (or was
/// prepared from another text: the application deallocated and reused the name).
fn prepare_named(
    kept: &mut HashMap<String, (String, tokio_postgres::Statement)>,
    c: &mut postgres::Client,
    name: &str,
    sql: &str,
) -> Result<tokio_postgres::Statement, Failure> {
    if let Some((text, st)) = kept.get(name) {
        if text == sql {
            return Ok(st.clone());
        }
    }
    if kept.len() >= PREPARED_KEPT {
        kept.clear();
    }
    let st = c.prepare(sql).map_err(DbError::from)?;
    kept.insert(name.to_string(), (sql.to_string(), st.clone()));
    Ok(st)
}
