//! The seam for a captured statement replayed as the application sent it: its own SQL
//! text, not portable SQL, with its bind parameters. PostgreSQL runs a statement without
//! parameters by the simple protocol (one string may hold several statements, as `psql`
//! sends them) and one with parameters by the extended protocol, its parameters in text
//! format with the types the server infers, as libpq's `PQexecParams` sends them. MariaDB
//! runs a statement by the text protocol, and one the application prepared by the binary
//! protocol, its numbers as numbers and its strings as strings, as the log shows them. A
//! statement the application prepared by name is prepared once per session, an unnamed one
//! at every execution, as the application had it. Results are read and dropped, so memory
//! stays flat whatever they hold.

use super::mariadb::{Prepared, Wire, WireError};
use super::{Arg, Connection, DbError};
use bytes::BytesMut;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{Format, IsNull, ToSql, Type};
use std::collections::HashMap;

/// Prepared statements a session keeps by name before it starts over (an application
/// that names statements without end).
const PREPARED_KEPT: usize = 1024;
/// The same on MariaDB, whose statements count against the server's
/// `max_prepared_stmt_count` (16,382 by default) in all: 90 sessions of 128 stay under it.
const MARIADB_PREPARED_KEPT: usize = 128;

/// A bind parameter as the log shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Null,
    /// A string (PostgreSQL logs every parameter as one).
    Text(String),
    /// A number as written (MariaDB logs an executed statement's numbers bare).
    Number(String),
}

impl Param {
    /// The value as text (`None` for NULL).
    pub fn text(&self) -> Option<&str> {
        match self {
            Param::Null => None,
            Param::Text(s) | Param::Number(s) => Some(s),
        }
    }
}

/// One replayed session's connection, and the statements it prepared by name with the
/// text they were prepared from.
pub enum ReplaySession {
    Postgres { conn: postgres::Client, prepared: HashMap<String, (String, tokio_postgres::Statement)> },
    Mariadb { wire: Wire, prepared: HashMap<String, (String, Prepared)> },
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
            DbError::Pg(p) => p.code().is_some(),
            _ => false,
        };
        match refused {
            true => Failure::Refused(e.to_string()),
            false => Failure::Broken(e.to_string()),
        }
    }
}

impl From<WireError> for Failure {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Server { .. } => Failure::Refused(e.to_string()),
            _ => Failure::Broken(e.to_string()),
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
    /// A session on `conn` (a MariaDB session opens it on dbvs's own client).
    pub fn new(conn: Connection) -> Result<Self, Failure> {
        match conn {
            Connection::Postgres(c) => Ok(Self::Postgres { conn: c.client, prepared: HashMap::new() }),
            Connection::MySql(c) => {
                let opts = c.session.clone();
                drop(c);
                Ok(Self::Mariadb { wire: Wire::connect(&opts)?, prepared: HashMap::new() })
            }
            Connection::Sqlite(_) => Err(Failure::Broken("a replay runs on PostgreSQL or MariaDB".into())),
        }
    }

    /// Runs `sql` with `params` (prepared once as `prepared` when the application named
    /// it); returns the rows it returned or affected.
    pub fn run(&mut self, sql: &str, params: &[Param], prepared: Option<&str>) -> Result<u64, Failure> {
        match self {
            Self::Postgres { conn, prepared: kept } => postgres_run(conn, kept, sql, params, prepared),
            Self::Mariadb { wire, .. } if params.is_empty() && prepared.is_none() => Ok(wire.query(sql)?),
            Self::Mariadb { wire, prepared: kept } => {
                let args: Vec<Arg> = params.iter().map(mariadb_arg).collect();
                let name = prepared.unwrap_or(sql);
                for (_, st) in evicted(kept, name, MARIADB_PREPARED_KEPT) {
                    wire.close(st)?;
                }
                let st = named(kept, name, sql, |sql| Ok(wire.prepare(sql)?))?;
                Ok(wire.execute(st, &args, None)?)
            }
        }
    }
}

fn postgres_run(
    c: &mut postgres::Client,
    kept: &mut HashMap<String, (String, tokio_postgres::Statement)>,
    sql: &str,
    params: &[Param],
    prepared: Option<&str>,
) -> Result<u64, Failure> {
    if params.is_empty() && prepared.is_none() {
        let messages = c.simple_query(sql).map_err(DbError::from)?;
        return Ok(messages.iter().filter(|m| matches!(m, postgres::SimpleQueryMessage::Row(_))).count() as u64);
    }
    let params = params.iter().map(|p| Text(p.text()));
    let rows = match prepared {
        Some(name) => {
            // A statement's handle closes it on the server when dropped.
            drop(evicted(kept, name, PREPARED_KEPT));
            let st = named(kept, name, sql, |sql| Ok(c.prepare(sql).map_err(DbError::from)?))?.clone();
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

/// A number as MariaDB's binary protocol takes it: an integer as one, any other as its
/// text, which the server converts exactly (a DECIMAL's digits are kept).
fn mariadb_arg(p: &Param) -> Arg<'_> {
    match p {
        Param::Null => Arg::Null,
        Param::Number(n) => n.parse().map_or(Arg::Text(n), Arg::Int),
        Param::Text(s) => Arg::Text(s),
    }
}

/// Every statement kept, taken out to be closed, when `name` would be one more than `most`.
fn evicted<S>(kept: &mut HashMap<String, (String, S)>, name: &str, most: usize) -> Vec<(String, S)> {
    match kept.len() >= most && !kept.contains_key(name) {
        true => kept.drain().map(|(_, kept)| kept).collect(),
        false => vec![],
    }
}

/// The statement prepared as `name` from `sql`, prepared now by `prepare` if it was not
/// yet (or was prepared from another text: the application deallocated and reused the name).
fn named<'k, S>(
    kept: &'k mut HashMap<String, (String, S)>,
    name: &str,
    sql: &str,
    prepare: impl FnOnce(&str) -> Result<S, Failure>,
) -> Result<&'k mut S, Failure> {
    if kept.get(name).is_none_or(|(text, _)| text != sql) {
        let st = prepare(sql)?;
        kept.insert(name.to_string(), (sql.to_string(), st));
    }
    Ok(&mut kept.get_mut(name).expect("kept above").1)
}
