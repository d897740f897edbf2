//! A worker's PostgreSQL session on the extended query protocol, written for the hot path.
//!
//! The `postgres` crates stay for builds, checks and administration. A worker's statements
//! go through this client instead, because tokio-postgres ends every statement with a Sync:
//! the server then answers each statement with a ReadyForQuery of its own and writes it at
//! once, so a pipelined transaction of seven statements cost seven writes and wake-ups on
//! each side, where pgbench's pipeline mode costs one. Here statements queue
//! ([`Wire::queue`], a Bind and an Execute each) and leave together, closed by one Sync
//! ([`Wire::sync`]); the server answers them in one write, and after a failure it skips the
//! rest up to the Sync, so a transaction stops at its first failure. The messages come from
//! `postgres-protocol`, the crates' own protocol library.
//!
//! Queued statements are written whole before anything is read. A transaction's statements
//! are a few kilobytes, far less than the socket's buffers hold, so the server can always
//! take them while its answers wait.

use crate::targets::sql::net::Socket;
use crate::targets::sql::{Arg, Rows, Val};
use bytes::BytesMut;
use postgres::error::SqlState;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{FromSql, IsNull, Kind, ToSql, Type};
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{DataRowBody, ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::Config;

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("{severity}: {message} (SQLSTATE {})", code.code())]
    Server { severity: String, code: SqlState, message: String },
    #[error("PostgreSQL connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("PostgreSQL protocol: {0}")]
    Protocol(String),
    /// A value the statement's parameter cannot take (the statement never left).
    #[error("{0}")]
    Param(String),
}

impl WireError {
    pub fn code(&self) -> Option<&SqlState> {
        match self {
            WireError::Server { code, .. } => Some(code),
            _ => None,
        }
    }
}

pub type Result<T, E = WireError> = std::result::Result<T, E>;

fn protocol<T>(what: &str) -> Result<T> {
    Err(WireError::Protocol(what.to_string()))
}

/// A statement prepared on the server, by number: its parameters' and columns' types.
struct Prepared {
    name: String,
    params: Vec<Type>,
    cols: Vec<Type>,
}

/// The longest message a server may send before the session is in: a server that speaks
/// another protocol is refused, not waited on for gigabytes (libpq's limit is alike).
const LONGEST_BEFORE_LOGIN: usize = 30_000;

pub struct Wire {
    socket: Socket,
    statements: Vec<Prepared>,
    /// Statement names given so far, failed preparations' included: a name is never
    /// given twice, as the server may hold one whose preparation failed later on.
    named: usize,
    /// Messages queued and not yet sent.
    out: BytesMut,
    /// Bytes read and not yet parsed, and what one read takes in.
    inbuf: BytesMut,
    chunk: Box<[u8]>,
    /// Statements queued or sent whose answers are still to be read, and the last of them.
    owed: usize,
    last: usize,
    /// The server's transaction status at its last ReadyForQuery: idle, in a transaction,
    /// or in a failed one.
    status: u8,
    /// Set when the connection failed or lost step with the server: every later call
    /// fails at once instead of reading another statement's answers.
    broken: bool,
    logged_in: bool,
}

impl Wire {
    /// Connects as `config` says (its first host; TCP or a Unix socket directory) and
    /// logs in with a password, MD5 or SCRAM-SHA-256 where the server asks for one.
    pub fn connect(config: &Config) -> Result<Self> {
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let timeout = config.get_connect_timeout().copied().unwrap_or(Duration::from_secs(10));
        let socket = match config.get_hosts().first() {
            Some(Host::Unix(dir)) => Socket::unix(&dir.join(format!(".s.PGSQL.{port}")))?,
            Some(Host::Tcp(host)) => Socket::tcp(host, port, timeout)?,
            None => return protocol("the connection names no host"),
        };
        let mut w = Wire {
            socket,
            statements: Vec::new(),
            named: 0,
            out: BytesMut::with_capacity(4096),
            inbuf: BytesMut::with_capacity(64 * 1024),
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            owed: 0,
            last: 0,
            status: b'I',
            broken: false,
            logged_in: false,
        };
        w.startup(config)?;
        w.logged_in = true;
        Ok(w)
    }

    fn startup(&mut self, config: &Config) -> Result<()> {
        let user = config.get_user().unwrap_or("postgres");
        let mut params = vec![
            ("user", user),
            ("database", config.get_dbname().unwrap_or(user)),
            ("client_encoding", "UTF8"),
            ("application_name", config.get_application_name().unwrap_or("dbvs")),
        ];
        if let Some(options) = config.get_options() {
            params.push(("options", options));
        }
        frontend::startup_message(params, &mut self.out)?;
        self.send()?;
        self.authenticate(user, config.get_password())?;
        loop {
            match self.message()? {
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ErrorResponse(e) => return Err(server_error(&e)),
                _ => {} // the server's settings, its key for cancelling, notices
            }
        }
    }

    /// Answers what the server asks until it lets the session in.
    fn authenticate(&mut self, user: &str, password: Option<&[u8]>) -> Result<()> {
        let needed = || WireError::Protocol(format!("user {user} needs a password and the target gives none"));
        // SCRAM's exchange, and whether the server proved it knows the password.
        let mut scram: Option<(sasl::ScramSha256, bool)> = None;
        loop {
            match self.message()? {
                Message::AuthenticationOk if scram.as_ref().is_some_and(|(_, proved)| !proved) => {
                    return protocol("the server let the session in before SCRAM-SHA-256 ended, without proving itself")
                }
                Message::AuthenticationOk => return Ok(()),
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password.ok_or_else(needed)?, &mut self.out)?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(user.as_bytes(), password.ok_or_else(needed)?, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.out)?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    if !mechanisms.any(|m| Ok(m == sasl::SCRAM_SHA_256))? {
                        return protocol("the server offers no SASL mechanism dbvs speaks (SCRAM-SHA-256)");
                    }
                    // No TLS, so no channel binding to offer.
                    let s = sasl::ScramSha256::new(password.ok_or_else(needed)?, sasl::ChannelBinding::unsupported());
                    frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut self.out)?;
                    scram = Some((s, false));
                }
                Message::AuthenticationSaslContinue(body) => {
                    let Some((s, _)) = scram.as_mut() else { return protocol("SASL data before SASL began") };
                    s.update(body.data())?;
                    frontend::sasl_response(s.message(), &mut self.out)?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let Some((s, proved)) = scram.as_mut() else { return protocol("SASL data before SASL began") };
                    s.finish(body.data())?;
                    *proved = true;
                    continue;
                }
                Message::ErrorResponse(e) => return Err(server_error(&e)),
                other => {
                    let method = match other {
                        Message::AuthenticationGss | Message::AuthenticationGssContinue(_) => "GSSAPI",
                        Message::AuthenticationSspi => "SSPI",
                        Message::AuthenticationKerberosV5 => "Kerberos V5",
                        Message::AuthenticationScmCredential => "SCM credentials",
                        _ => return protocol("the server answered the login with a message out of place"),
                    };
                    return protocol(&format!(
                        "user {user} must log in by {method}, which dbvs's PostgreSQL client does not speak \
                         (it speaks password, md5 and scram-sha-256): change the user's pg_hba.conf method"
                    ));
                }
            }
            self.send()?;
        }
    }

    /// Prepares `sql` (in PostgreSQL's own spelling, `$1` placeholders) all in one round
    /// trip; statement `i` is then number `first + i`, where `first` is returned.
    pub fn prepare(&mut self, sql: &[&str]) -> Result<usize> {
        self.usable()?;
        let first = self.statements.len();
        let mut names = Vec::with_capacity(sql.len());
        for s in sql {
            let name = format!("s{}", self.named);
            self.named += 1;
            frontend::parse(&name, s, None, &mut self.out)?;
            frontend::describe(b'S', &name, &mut self.out)?;
            names.push(name);
        }
        frontend::sync(&mut self.out);
        self.send()?;
        let mut names = names.into_iter();
        let mut failure = None;
        let mut described: Option<Vec<Type>> = None;
        loop {
            match self.message()? {
                Message::ParseComplete => {}
                Message::ParameterDescription(body) => {
                    described = Some(body.parameters().map(|oid| Ok(type_of(oid))).collect()?);
                }
                Message::RowDescription(body) => {
                    let cols: Vec<Type> = body.fields().map(|f| Ok(type_of(f.type_oid()))).collect()?;
                    self.described(names.next(), described.take(), cols)?;
                }
                Message::NoData => self.described(names.next(), described.take(), Vec::new())?,
                Message::ErrorResponse(e) => failure = Some(server_error(&e)),
                Message::ReadyForQuery(body) => {
                    self.status = body.status();
                    break;
                }
                _ => {}
            }
        }
        match failure {
            Some(e) => {
                self.statements.truncate(first);
                Err(e)
            }
            None => Ok(first),
        }
    }

    fn described(&mut self, name: Option<String>, params: Option<Vec<Type>>, cols: Vec<Type>) -> Result<()> {
        let (Some(name), Some(params)) = (name, params) else {
            return self.lost_step("a statement's columns came before its parameters, or more than were prepared");
        };
        self.statements.push(Prepared { name, params, cols });
        Ok(())
    }

    /// Queues statement `st` with `args` (binary values both ways, but text passed to a
    /// parameter of a type that is not text: the server parses it); it leaves with the
    /// next [`Wire::sync`].
    pub fn queue(&mut self, st: usize, args: &[Arg]) -> Result<()> {
        self.usable()?;
        let Wire { statements, out, .. } = self;
        let Some(p) = statements.get(st) else { return protocol(&format!("no prepared statement {st}")) };
        if args.len() != p.params.len() {
            return Err(WireError::Param(format!("statement takes {} parameters, got {}", p.params.len(), args.len())));
        }
        let mark = out.len();
        let formats = args.iter().zip(&p.params).map(|(a, ty)| format_of(a, ty));
        let values = args.iter().zip(&p.params);
        let bound = frontend::bind("", &p.name, formats, values, |(a, ty), buf| encode(a, ty, buf), Some(1), out);
        if let Err(e) = bound {
            // Nothing of a statement that cannot be bound leaves.
            out.truncate(mark);
            return Err(match e {
                frontend::BindError::Conversion(e) => WireError::Param(e.to_string()),
                frontend::BindError::Serialization(e) => WireError::Io(e),
            });
        }
        frontend::execute("", 0, out)?;
        self.owed += 1;
        self.last = st;
        Ok(())
    }

    /// Sends what is queued with one Sync and reads every answer. Returns the rows the
    /// last statement matched, and its rows into `rows` when given. A failure is the
    /// first statement's that failed: the server skipped the rest.
    pub fn sync(&mut self, mut rows: Option<&mut Rows>) -> Result<u64> {
        self.usable()?;
        frontend::sync(&mut self.out);
        self.send()?;
        if let Some(r) = rows.as_deref_mut() {
            r.cols = self.last_columns().len();
        }
        let (mut answered, mut count, mut failure) = (0, 0, None);
        loop {
            // A server that ends the session says why first (FATAL): that is the failure.
            let message = self.message().map_err(|e| failure.take().unwrap_or(e))?;
            // Whatever fails, the answers are read up to the ReadyForQuery, so that the next
            // transaction starts in step with the server.
            match message {
                Message::DataRow(row) if answered + 1 == self.owed => {
                    if let Some(r) = rows.as_deref_mut() {
                        if let Err(e) = decode(&row, self.last_columns(), r) {
                            failure.get_or_insert(e);
                        }
                    }
                }
                Message::CommandComplete(body) => {
                    match body.tag() {
                        Ok(tag) => count = affected(tag),
                        Err(e) => {
                            failure.get_or_insert(e.into());
                        }
                    }
                    answered += 1;
                }
                Message::EmptyQueryResponse => answered += 1,
                Message::CopyInResponse(_) => {
                    // The server waits for the data, having ignored the Sync, and whether
                    // it answers one more depends on what followed the COPY: the copy is
                    // refused and the session taken out of use rather than left guessing.
                    frontend::copy_fail("dbvs's worker sessions do not copy in", &mut self.out)?;
                    let _ = self.send();
                    return self.lost_step("a statement began a COPY FROM STDIN, which a worker session cannot feed");
                }
                Message::ErrorResponse(e) => failure = Some(server_error(&e)),
                Message::ReadyForQuery(body) => {
                    self.status = body.status();
                    break;
                }
                // Bindings, rows nobody reads, notices.
                _ => {}
            }
        }
        self.owed = 0;
        match failure {
            Some(e) => Err(e),
            None => Ok(count),
        }
    }

    /// Drops what is queued and not yet sent.
    pub fn abandon(&mut self) {
        self.out.clear();
        self.owed = 0;
    }

    /// Whether the session is inside a transaction (a failed one too).
    pub fn in_transaction(&self) -> bool {
        self.status != b'I'
    }

    /// The columns of the last statement queued, whose rows a sync returns.
    fn last_columns(&self) -> &[Type] {
        self.statements.get(self.last).map_or(&[], |p| &p.cols)
    }

    /// Fails at once on a connection that broke or lost step before.
    fn usable(&self) -> Result<()> {
        match self.broken {
            true => protocol("the session's connection failed earlier; it takes no more statements"),
            false => Ok(()),
        }
    }

    /// The connection no longer knows which answer is whose: it takes no more statements.
    fn lost_step<T>(&mut self, what: &str) -> Result<T> {
        self.broken = true;
        protocol(what)
    }

    fn send(&mut self) -> Result<()> {
        let sent = self.socket.write_all(&self.out);
        self.out.clear();
        if let Err(e) = sent {
            self.broken = true;
            // A server that closed the session said why first (FATAL): that is the cause.
            return Err(match self.message() {
                Ok(Message::ErrorResponse(body)) => server_error(&body),
                _ => e.into(),
            });
        }
        Ok(())
    }

    /// The next message from the server.
    fn message(&mut self) -> Result<Message> {
        let got = self.next_message();
        if got.is_err() {
            self.broken = true;
        }
        got
    }

    fn next_message(&mut self) -> Result<Message> {
        loop {
            if !self.logged_in && self.inbuf.len() >= 5 {
                let length = u32::from_be_bytes([self.inbuf[1], self.inbuf[2], self.inbuf[3], self.inbuf[4]]) as usize;
                if length > LONGEST_BEFORE_LOGIN {
                    return protocol(&format!(
                        "the server sent a message of {length} bytes before login: is it a PostgreSQL server? \
                         check the target's host and port"
                    ));
                }
            }
            if let Some(m) = Message::parse(&mut self.inbuf)? {
                return Ok(m);
            }
            let n = self.socket.read(&mut self.chunk)?;
            if n == 0 {
                return protocol("the server closed the connection");
            }
            self.inbuf.extend_from_slice(&self.chunk[..n]);
        }
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.out.clear();
        frontend::terminate(&mut self.out);
        let _ = self.send();
    }
}

/// A parameter's format: text for text passed to a type that is not text (a date, a
/// number, an enum), so that the server parses it as it would a literal; binary otherwise.
fn format_of(a: &Arg, ty: &Type) -> i16 {
    match a {
        Arg::Text(_) if !<&str as ToSql>::accepts(ty) => 0,
        _ => 1,
    }
}

/// A type by its number; one the crate does not know (an enum, a domain) keeps its number.
fn type_of(oid: u32) -> Type {
    Type::from_oid(oid).unwrap_or_else(|| Type::new(format!("type {oid}"), oid, Kind::Simple, String::new()))
}

fn encode(
    a: &Arg,
    ty: &Type,
    buf: &mut BytesMut,
) -> Result<postgres_protocol::IsNull, Box<dyn std::error::Error + Sync + Send>> {
    Ok(match a.to_sql(ty, buf)? {
        IsNull::Yes => postgres_protocol::IsNull::Yes,
        IsNull::No => postgres_protocol::IsNull::No,
    })
}

fn decode(row: &DataRowBody, cols: &[Type], rows: &mut Rows) -> Result<()> {
    let buf = row.buffer();
    let mut ranges = row.ranges();
    for ty in cols {
        let Some(range) = ranges.next()? else { return protocol("a row with fewer columns than described") };
        let v = match range {
            Some(r) => Val::from_sql(ty, &buf[r]),
            None => Val::from_sql_null(ty),
        };
        rows.vals.push(v.map_err(|e| WireError::Protocol(format!("cannot read a {ty} value: {e}")))?);
    }
    Ok(())
}

/// The rows a command tag counts ("UPDATE 1", "INSERT 0 1", "SELECT 5"); 0 for "BEGIN".
fn affected(tag: &str) -> u64 {
    tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn server_error(body: &ErrorResponseBody) -> WireError {
    let (mut severity, mut code, mut message) = (String::from("ERROR"), String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        let value = String::from_utf8_lossy(f.value_bytes()).into_owned();
        match f.type_() {
            b'V' => severity = value,
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    WireError::Server { severity, code: SqlState::from_code(&code), message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_tag_gives_the_rows_it_counts() {
        assert_eq!(affected("UPDATE 3"), 3);
        assert_eq!(affected("INSERT 0 1"), 1);
        assert_eq!(affected("SELECT 25"), 25);
        assert_eq!(affected("BEGIN"), 0);
    }

    #[test]
    fn text_goes_as_text_to_a_parameter_that_is_not_text_and_everything_else_as_binary() {
        assert_eq!(format_of(&Arg::Text("1234"), &Type::INT4), 0);
        assert_eq!(format_of(&Arg::Text("2026-12-07"), &Type::DATE), 0);
        assert_eq!(format_of(&Arg::Text("x"), &Type::VARCHAR), 1);
        assert_eq!(format_of(&Arg::Text("x"), &Type::BPCHAR), 1);
        assert_eq!(format_of(&Arg::Int(1), &Type::INT4), 1);
        assert_eq!(format_of(&Arg::Null, &Type::DATE), 1);
    }

    #[test]
    fn a_type_the_crate_does_not_know_keeps_its_number() {
        assert_eq!(type_of(23), Type::INT4);
        assert_eq!(type_of(99_999).oid(), 99_999);
    }
}
