//! A worker's MariaDB session on the binary protocol, written for the hot path.
//!
//! The `mysql` crate stays for builds, checks and administration. A worker's statements go
//! through this client instead, because on a 2-core machine the client's CPU is taken from
//! the server: the crate builds a row object per row, takes pooled buffers from a queue
//! shared by every thread, and re-reads each statement's column definitions on every
//! execution. Here a statement is one write and, for a point select, one read; rows decode
//! straight into [`Rows`]; and the server sends column definitions only when they change
//! (MariaDB's metadata cache, 10.6 and later). The handshake's packets come from
//! `mysql_common`, the crate's own protocol library.
//!
//! Commands can be queued ([`Wire::queue_query`], [`Wire::queue_batch`]): they leave with
//! the next command that waits for its answer, in the same write, and the server answers
//! them in order (it reads one command after another from the socket), so a transaction's
//! writes whose counts are not read cost no round trip of their own.

use super::codec::{arg_type, decode_row, is_end, ok, protocol, put_arg, server_error, Col, Cursor, MAX_PAYLOAD};
use crate::targets::sql::net::Socket;
use crate::targets::sql::{Arg, Rows, Val};
use mysql_common::constants::{CapabilityFlags as Caps, ColumnFlags, ColumnType, MariadbCapabilities as Ext};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use std::time::Duration;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;
const COM_STMT_BULK_EXECUTE: u8 = 0xfa;
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
/// What `inbuf` holds between answers; a larger answer grows it for as long as it lasts.
const INBUF: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("ERROR {code} ({state}): {message}")]
    Server { code: u16, state: String, message: String },
    #[error("MariaDB connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("MariaDB protocol: {0}")]
    Protocol(String),
}

impl WireError {
    pub fn code(&self) -> Option<u16> {
        match self {
            WireError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type Result<T, E = WireError> = std::result::Result<T, E>;

/// Where and as whom a session connects.
#[derive(Clone, Debug)]
pub struct WireOpts {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub db: String,
    /// A cluster node, which applies the others' writes a moment after they commit and so
    /// may not have the database yet: the session connects without it, reads once (the
    /// nodes' `wsrep_sync_wait` makes a read wait for the cluster's writes) and then uses it.
    pub wait_for_cluster: bool,
}

/// A server-side prepared statement and the column types its rows come in.
#[derive(Debug)]
pub struct Prepared {
    id: u32,
    params: usize,
    cols: Vec<Col>,
}

/// The first packet of a statement's response.
enum Head {
    Ok((u64, u16)),
    ResultSet { count: usize, metadata: bool },
}

pub struct Wire {
    socket: Socket,
    /// Bytes read and not yet consumed: `inbuf[start..end]`.
    inbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// A packet that spans several frames (16 MB or more), joined.
    joined: Vec<u8>,
    /// Packets to send: the queued commands' and the one being written.
    out: Vec<u8>,
    /// Where the packet being written starts in `out`.
    packet_at: usize,
    /// Commands sent or queued whose answers are still to be read, in order.
    owed: usize,
    /// The sequence number of the next packet, written or read: each command's starts at
    /// 0 and its answer's at 1, so a packet read with another is out of step.
    seq: u8,
    cache_metadata: bool,
    bulk: bool,
    /// Set when an operation failed other than by the server's answer (a broken
    /// connection, an answer dbvs could not read), which may leave answers unread: every
    /// later call fails at once instead of reading another command's answers.
    broken: bool,
}

impl Wire {
    pub fn connect(o: &WireOpts) -> Result<Self> {
        let mut w = Self::over(Socket::tcp(&o.host, o.port, Duration::from_secs(10))?);
        match o.wait_for_cluster {
            false => w.handshake(o)?,
            true => {
                w.handshake(&WireOpts { db: String::new(), ..o.clone() })?;
                w.query("SELECT 1")?;
                w.query(&format!("USE `{}`", o.db))?;
            }
        }
        // On a Galera node, a bulk execution that a replicated write set aborts can lose
        // its transaction's writes (MDEV-23872's territory: seen here as balances that no
        // longer matched the history on a 3-node cluster); single executions are safe.
        if w.bulk && w.galera()? {
            w.bulk = false;
        }
        Ok(w)
    }

    /// A session on `socket`, before its handshake.
    fn over(socket: Socket) -> Self {
        Wire {
            socket,
            inbuf: vec![0; INBUF],
            start: 0,
            end: 0,
            joined: Vec::new(),
            out: Vec::with_capacity(4096),
            packet_at: 0,
            owed: 0,
            seq: 0,
            cache_metadata: false,
            bulk: false,
            broken: false,
        }
    }

    fn galera(&mut self) -> Result<bool> {
        let mut st = match self.prepare("SELECT @@wsrep_on") {
            // Unknown system variable: a server built without Galera.
            Err(WireError::Server { code: 1193, .. }) => return Ok(false),
            prepared => prepared?,
        };
        let rows = self.rows(&mut st, &[])?;
        self.close(st)?;
        Ok(matches!(rows.vals.first(), Some(Val::Int(1)))
            || matches!(rows.vals.first(), Some(Val::Text(t)) if t == "1" || t == "ON"))
    }

    fn handshake(&mut self, o: &WireOpts) -> Result<()> {
        let hello = self.packet()?.to_vec();
        if hello.first() == Some(&0xff) {
            return Err(server_error(&hello));
        }
        let hs: HandshakePacket = ParseBuf(&hello).parse(())?;
        if hs.capabilities().contains(Caps::CLIENT_LONG_PASSWORD) {
            return protocol("the server is not MariaDB (dbvs's worker sessions speak MariaDB's protocol)");
        }
        let wanted = Caps::CLIENT_PROTOCOL_41
            | Caps::CLIENT_SECURE_CONNECTION
            | Caps::CLIENT_PLUGIN_AUTH
            | Caps::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
            | Caps::CLIENT_TRANSACTIONS
            | Caps::CLIENT_MULTI_RESULTS
            | Caps::CLIENT_PS_MULTI_RESULTS
            | Caps::CLIENT_DEPRECATE_EOF
            | Caps::CLIENT_LONG_FLAG
            // Counts of rows matched, not only changed, as the other engines report.
            | Caps::CLIENT_FOUND_ROWS;
        if !hs.capabilities().contains(wanted) {
            return protocol("the server lacks protocol 4.1 features dbvs needs (MariaDB 10.2 or later)");
        }
        let ext = hs.mariadb_ext_capabilities()
            & (Ext::MARIADB_CLIENT_CACHE_METADATA | Ext::MARIADB_CLIENT_STMT_BULK_OPERATIONS);
        self.cache_metadata = ext.contains(Ext::MARIADB_CLIENT_CACHE_METADATA);
        self.bulk = ext.contains(Ext::MARIADB_CLIENT_STMT_BULK_OPERATIONS);
        let nonce = hs.nonce();
        let scramble = native_scramble(&nonce, o.password.as_deref());
        let version = hs.maria_db_server_version_parsed().or(hs.server_version_parsed()).unwrap_or((10, 11, 0));
        let response = HandshakeResponse::new(
            Some(scramble.as_slice()),
            version,
            Some(o.user.as_bytes()),
            Some(o.db.as_bytes()),
            Some(AuthPlugin::MysqlNativePassword),
            wanted,
            None,
            1 << 30,
        )
        .with_mariadb_ext_capabilities(ext);
        self.begin();
        response.serialize(&mut self.out);
        self.seal();
        self.send()?;
        self.authenticated(o)
    }

    /// Answers what the server asks after the handshake response until it says OK.
    fn authenticated(&mut self, o: &WireOpts) -> Result<()> {
        loop {
            let p = self.packet()?;
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(server_error(p)),
                Some(0xfe) if p.len() == 1 => {
                    return protocol(&format!(
                        "user {} has a pre-4.1 password (mysql_old_password), which dbvs's MariaDB client does \
                         not speak; give the benchmark user mysql_native_password",
                        o.user
                    ))
                }
                Some(0xfe) => {
                    let body = &p[1..];
                    let name_end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
                    let (name, data) = (&body[..name_end], body.get(name_end + 1..).unwrap_or(&[]));
                    if name != b"mysql_native_password" {
                        return protocol(&format!(
                            "user {} authenticates with {}, which dbvs's MariaDB client does not speak; \
                             give the benchmark user mysql_native_password",
                            o.user,
                            String::from_utf8_lossy(name)
                        ));
                    }
                    let nonce = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
                    self.begin();
                    self.out.extend_from_slice(&native_scramble(&nonce, o.password.as_deref()));
                    self.seal();
                    self.send()?;
                }
                Some(0x01) => {
                    return protocol(&format!(
                        "user {}'s authentication plugin asks for more data, which dbvs's MariaDB client does \
                         not give; give the benchmark user mysql_native_password",
                        o.user
                    ))
                }
                _ => return protocol("unexpected packet during authentication"),
            }
        }
    }

    /// Fails at once on a session that lost step with the server before.
    fn usable(&self) -> Result<()> {
        match self.broken {
            true => protocol("the session's connection failed earlier; it takes no more statements"),
            false => Ok(()),
        }
    }

    /// Runs one of the session's operations. A server's error is read in step (it ends
    /// its answer); any other failure may leave answers unread, and takes the session out
    /// of use.
    fn in_step<T>(&mut self, op: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.usable()?;
        let done = op(self);
        if matches!(done, Err(WireError::Io(_) | WireError::Protocol(_))) {
            self.broken = true;
        }
        done
    }

    /// Prepares `sql` on the server and reads its column types.
    pub fn prepare(&mut self, sql: &str) -> Result<Prepared> {
        // What was queued is answered first, so that a statement is never left prepared
        // behind a failure.
        self.sync()?;
        self.in_step(|w| {
            w.command(COM_STMT_PREPARE, sql.as_bytes())?;
            let p = w.packet()?;
            if p.first() == Some(&0xff) {
                return Err(server_error(p));
            }
            let mut c = Cursor(p);
            c.u8()?;
            let id = u32::from_le_bytes(c.le()?);
            let cols = u16::from_le_bytes(c.le()?) as usize;
            let params = u16::from_le_bytes(c.le()?) as usize;
            for _ in 0..params {
                w.packet()?;
            }
            let cols = (0..cols).map(|_| w.column()).collect::<Result<_>>()?;
            Ok(Prepared { id, params, cols })
        })
    }

    fn column(&mut self) -> Result<Col> {
        let mut c = Cursor(self.packet()?);
        for _ in 0..6 {
            c.lenenc_bytes()?; // catalog, schema, table, original table, name, original name
        }
        c.lenenc()?;
        c.take(6)?; // character set, display length
        let ty = ColumnType::try_from(c.u8()?).map_err(|_| WireError::Protocol("unknown column type".into()))?;
        let flags = ColumnFlags::from_bits_truncate(u16::from_le_bytes(c.le()?));
        Ok(Col { ty, unsigned: flags.contains(ColumnFlags::UNSIGNED_FLAG) })
    }

    /// Runs `st` with `args`; its first result set's rows go to `rows` (when given), later
    /// ones (a procedure's) are read and dropped. Returns the rows the statement affected.
    pub fn execute(&mut self, st: &mut Prepared, args: &[Arg], rows: Option<&mut Rows>) -> Result<u64> {
        self.in_step(|w| {
            w.put_execute(st, args)?;
            w.send()?;
            w.answered(|w| w.result(Some(st), rows))
        })
    }

    /// Writes an execution of `st` with `args` into `out`.
    fn put_execute(&mut self, st: &Prepared, args: &[Arg]) -> Result<()> {
        if args.len() != st.params {
            return protocol(&format!("statement takes {} parameters, got {}", st.params, args.len()));
        }
        self.seq = 0;
        self.begin();
        self.out.push(COM_STMT_EXECUTE);
        self.out.extend_from_slice(&st.id.to_le_bytes());
        self.out.push(0); // no cursor
        self.out.extend_from_slice(&1u32.to_le_bytes());
        if !args.is_empty() {
            let bitmap = self.out.len();
            self.out.resize(bitmap + args.len().div_ceil(8), 0);
            for (i, a) in args.iter().enumerate() {
                if matches!(a, Arg::Null) {
                    self.out[bitmap + i / 8] |= 1 << (i % 8);
                }
            }
            self.out.push(1); // types follow
            for a in args {
                self.out.extend_from_slice(&[arg_type(a) as u8, 0]);
            }
            for a in args {
                put_arg(&mut self.out, a);
            }
        }
        self.seal();
        Ok(())
    }

    /// Runs `st` with `args` and returns its rows.
    pub fn rows(&mut self, st: &mut Prepared, args: &[Arg]) -> Result<Rows> {
        let mut rows = Rows::default();
        self.execute(st, args, Some(&mut rows))?;
        Ok(rows)
    }

    /// Queues `st` once per row of `batch`: as one bulk execution where the server takes
    /// them (COM_STMT_BULK_EXECUTE), one execution each otherwise. Its answers are read
    /// by the next command that waits for its own. Only a statement without rows can
    /// wait so: a queued answer's column definitions would be read and dropped, and the
    /// server, which sends them only when they change, would not send them again.
    pub fn queue_batch(&mut self, st: &Prepared, batch: &[&[Arg]]) -> Result<()> {
        if !st.cols.is_empty() {
            return protocol("a statement that returns rows cannot be queued; run it with execute");
        }
        self.in_step(|w| w.put_batch(st, batch))
    }

    fn put_batch(&mut self, st: &Prepared, batch: &[&[Arg]]) -> Result<()> {
        if let Some(bad) = batch.iter().find(|a| a.len() != st.params) {
            return protocol(&format!("statement takes {} parameters, got {}", st.params, bad.len()));
        }
        // A column's type is its first value's (a NULL travels as an indicator); a batch
        // whose rows differ in a column's type runs one execution per row.
        let types: Vec<ColumnType> = (0..st.params)
            .map(|i| {
                batch
                    .iter()
                    .map(|a| &a[i])
                    .find(|a| !matches!(a, Arg::Null))
                    .map_or(ColumnType::MYSQL_TYPE_NULL, arg_type)
            })
            .collect();
        let alike =
            batch.iter().all(|a| a.iter().zip(&types).all(|(v, &ty)| matches!(v, Arg::Null) || arg_type(v) == ty));
        if !self.bulk || st.params == 0 || batch.len() == 1 || !alike {
            for args in batch {
                self.put_execute(st, args)?;
                self.owed += 1;
            }
            return Ok(());
        }
        self.seq = 0;
        self.begin();
        self.out.push(COM_STMT_BULK_EXECUTE);
        self.out.extend_from_slice(&st.id.to_le_bytes());
        self.out.extend_from_slice(&128u16.to_le_bytes()); // types follow
        for ty in types {
            self.out.extend_from_slice(&[ty as u8, 0]);
        }
        for args in batch {
            for a in *args {
                match a {
                    Arg::Null => self.out.push(1),
                    a => {
                        self.out.push(0);
                        put_arg(&mut self.out, a);
                    }
                }
            }
        }
        self.seal();
        self.owed += 1;
        Ok(())
    }

    /// Closes `st` on the server (it sends no answer).
    pub fn close(&mut self, st: Prepared) -> Result<()> {
        self.in_step(|w| w.command(COM_STMT_CLOSE, &st.id.to_le_bytes()))
    }

    /// Runs `sql` on the text protocol (transaction control), dropping any rows.
    pub fn query(&mut self, sql: &str) -> Result<u64> {
        self.in_step(|w| {
            w.command(COM_QUERY, sql.as_bytes())?;
            w.answered(|w| w.result(None, None))
        })
    }

    /// Queues `sql` on the text protocol, like [`Wire::query`].
    pub fn queue_query(&mut self, sql: &str) {
        self.put_command(COM_QUERY, sql.as_bytes());
        self.owed += 1;
    }

    /// Sends what is queued and reads every answer owed; returns the first error.
    pub fn sync(&mut self) -> Result<()> {
        if self.owed == 0 && self.out.is_empty() {
            return Ok(());
        }
        self.in_step(|w| {
            w.send()?;
            w.read_owed()?.map_or(Ok(()), Err)
        })
    }

    /// Sends `cmd` with `body`, after what is queued.
    fn command(&mut self, cmd: u8, body: &[u8]) -> Result<()> {
        self.put_command(cmd, body);
        self.send()
    }

    fn put_command(&mut self, cmd: u8, body: &[u8]) {
        self.seq = 0;
        self.begin();
        self.out.push(cmd);
        self.out.extend_from_slice(body);
        self.seal();
    }

    /// Reads the answers owed to the commands queued before the last one sent, then the
    /// last one's (`own`); the first error of them all is returned, after every answer was
    /// read, so the session stays in step with the server.
    fn answered<T>(&mut self, own: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let earlier = self.read_owed()?;
        let mine = own(self);
        match earlier {
            Some(e) if !matches!(mine, Err(WireError::Io(_) | WireError::Protocol(_))) => Err(e),
            _ => mine,
        }
    }

    /// Reads the answers owed, in order; a server error among them is returned as a value
    /// (the first one), a broken connection as the error.
    fn read_owed(&mut self) -> Result<Option<WireError>> {
        let mut first = None;
        while self.owed > 0 {
            self.owed -= 1;
            match self.result(None, None) {
                Ok(_) => {}
                Err(e @ WireError::Server { .. }) => {
                    first.get_or_insert(e);
                }
                Err(e) => {
                    self.owed = 0;
                    return Err(e);
                }
            }
        }
        Ok(first)
    }

    /// Starts a packet at the end of `out`, leaving room for its frame header.
    fn begin(&mut self) {
        self.packet_at = self.out.len();
        self.out.extend_from_slice(&[0; 4]);
    }

    /// Reads a statement's whole response: OK, error, or result sets.
    fn result(&mut self, mut st: Option<&mut Prepared>, mut rows: Option<&mut Rows>) -> Result<u64> {
        let cache_metadata = self.cache_metadata;
        self.seq = 1;
        let mut affected = 0;
        loop {
            let head = {
                let p = self.packet()?;
                match p.first() {
                    Some(0x00) => Head::Ok(ok(p)?),
                    Some(0xff) => return Err(server_error(p)),
                    Some(_) => {
                        let mut c = Cursor(p);
                        let count = c.lenenc()? as usize;
                        Head::ResultSet { count, metadata: !cache_metadata || c.u8()? == 1 }
                    }
                    None => return protocol("empty packet"),
                }
            };
            let status = match head {
                Head::Ok((n, status)) => {
                    affected += n;
                    status
                }
                // The first result set's columns are decoded (and their types cached);
                // a procedure's later sets are read and dropped.
                Head::ResultSet { count, metadata } => match st.take() {
                    Some(st) => {
                        if metadata {
                            st.cols = (0..count).map(|_| self.column()).collect::<Result<_>>()?;
                        } else if st.cols.len() != count {
                            return protocol("the server skipped column definitions dbvs does not have");
                        }
                        self.read_rows(rows.take().map(|r| (&st.cols[..], r)))?
                    }
                    None => {
                        for _ in 0..if metadata { count } else { 0 } {
                            self.packet()?;
                        }
                        self.read_rows(None)?
                    }
                },
            };
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(affected);
            }
        }
    }

    /// Reads a result set's rows up to its end, decoding them into `into` when given.
    fn read_rows(&mut self, mut into: Option<(&[Col], &mut Rows)>) -> Result<u16> {
        if let Some((cols, rows)) = into.as_mut() {
            rows.cols = cols.len();
        }
        loop {
            let p = self.packet()?;
            if is_end(p) {
                return ok(p).map(|(_, status)| status);
            }
            if p.first() == Some(&0xff) {
                return Err(server_error(p));
            }
            if let Some((cols, rows)) = into.as_mut() {
                decode_row(p, cols, &mut rows.vals)?;
            }
        }
    }

    /// Ends the packet begun in `out` ([`Wire::begin`]): one frame, or frames of at most
    /// 16 MB each.
    fn seal(&mut self) {
        let at = self.packet_at;
        let len = self.out.len() - at - 4;
        if len < MAX_PAYLOAD {
            self.out[at..at + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
            self.out[at + 3] = self.seq;
            self.seq = self.seq.wrapping_add(1);
            return;
        }
        let payload = self.out.split_off(at + 4);
        self.out.truncate(at);
        // A payload of a whole number of full frames ends with an empty one.
        for chunk in payload.chunks(MAX_PAYLOAD).chain(len.is_multiple_of(MAX_PAYLOAD).then_some(&[][..])) {
            self.out.extend_from_slice(&(chunk.len() as u32).to_le_bytes()[..3]);
            self.out.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.out.extend_from_slice(chunk);
        }
    }

    /// Sends every packet in `out` in one write.
    fn send(&mut self) -> Result<()> {
        let sent = self.socket.write_all(&self.out);
        self.out.clear();
        Ok(sent?)
    }

    /// The next packet's payload; valid until the next read.
    fn packet(&mut self) -> Result<&[u8]> {
        // The last packet's, if it was 16 MB or more: not kept for the session's life.
        self.joined = Vec::new();
        let (first, len) = self.frame()?;
        if len < MAX_PAYLOAD {
            return Ok(&self.inbuf[first..first + len]);
        }
        let mut joined = self.inbuf[first..first + len].to_vec();
        loop {
            let (at, n) = self.frame()?;
            joined.extend_from_slice(&self.inbuf[at..at + n]);
            if n < MAX_PAYLOAD {
                break;
            }
        }
        self.joined = joined;
        Ok(&self.joined)
    }

    /// Reads one frame; returns where its payload starts in `inbuf` and its length.
    fn frame(&mut self) -> Result<(usize, usize)> {
        self.fill(4)?;
        let h = &self.inbuf[self.start..self.start + 4];
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let (seq, due) = (h[3], self.seq);
        self.seq = seq.wrapping_add(1);
        self.fill(4 + len)?;
        let at = self.start + 4;
        self.start = at + len;
        if seq != due {
            // A server that ends the connection (KILL, shutdown) says why out of turn.
            let said = match self.inbuf[at..at + len].first() {
                Some(0xff) => format!(": {}", server_error(&self.inbuf[at..at + len])),
                _ => String::new(),
            };
            return protocol(&format!("packet {seq} arrived where {due} was due, out of step{said}"));
        }
        Ok((at, len))
    }

    /// Makes at least `n` unread bytes available in `inbuf[start..]`.
    fn fill(&mut self, n: usize) -> Result<()> {
        if self.end - self.start >= n {
            return Ok(());
        }
        self.inbuf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.inbuf.len() < n {
            self.inbuf.resize(n.next_power_of_two(), 0);
        } else if self.inbuf.len() > INBUF && n.max(self.end) <= INBUF {
            self.inbuf.truncate(INBUF);
            self.inbuf.shrink_to_fit();
        }
        while self.end < n {
            match self.socket.read(&mut self.inbuf[self.end..])? {
                0 => return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into()),
                got => self.end += got,
            }
        }
        Ok(())
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.command(COM_QUIT, &[]);
    }
}

/// mysql_native_password's answer to `nonce` (empty without a password).
fn native_scramble(nonce: &[u8], password: Option<&str>) -> Vec<u8> {
    match password.filter(|p| !p.is_empty()) {
        Some(p) => mysql_common::scramble::scramble_native(nonce, p.as_bytes()).map(Vec::from).unwrap_or_default(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A session whose server, after the handshake, answers each command it reads with
    /// the next of `answers` (its frames, headers included).
    fn session_answered(answers: Vec<Vec<u8>>) -> Wire {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            for answer in answers {
                if s.read(&mut buf).unwrap_or(0) == 0 {
                    return;
                }
                s.write_all(&answer).unwrap();
            }
        });
        Wire::over(Socket::tcp("127.0.0.1", port, Duration::from_secs(5)).unwrap())
    }

    fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        f.push(seq);
        f.extend_from_slice(payload);
        f
    }

    const OK: &[u8] = &[0x00, 0, 0, 2, 0, 0, 0];

    #[test]
    fn an_answer_out_of_sequence_takes_the_session_out_of_use() {
        let mut w = session_answered(vec![frame(1, OK), frame(2, OK)]);
        assert_eq!(w.query("SELECT 1").unwrap(), 0);
        let e = w.query("SELECT 1").unwrap_err().to_string();
        assert!(e.contains("packet 2 arrived where 1 was due"), "{e}");
        let e = w.query("SELECT 1").unwrap_err().to_string();
        assert!(e.contains("takes no more statements"), "{e}");
    }

    #[test]
    fn a_server_error_out_of_sequence_keeps_the_server_s_word() {
        let killed = [&[0xff, 0x87, 0x07][..], b"#70100Connection was killed"].concat();
        let mut w = session_answered(vec![frame(0, &killed)]);
        let e = w.query("SELECT 1").unwrap_err().to_string();
        assert!(e.contains("out of step: ERROR 1927 (70100): Connection was killed"), "{e}");
    }

    #[test]
    fn a_statement_with_rows_is_run_not_queued() {
        let prepared = [0x00, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        let column =
            [&[0u8; 6][..], &[0x0c, 33, 0, 11, 0, 0, 0, ColumnType::MYSQL_TYPE_LONG as u8, 0, 0, 0, 0, 0]].concat();
        let mut w = session_answered(vec![[frame(1, &prepared), frame(2, &column)].concat()]);
        let st = w.prepare("SELECT 1").unwrap();
        let e = w.queue_batch(&st, &[&[]]).unwrap_err().to_string();
        assert!(e.contains("returns rows cannot be queued"), "{e}");
        assert!(w.usable().is_ok(), "refusing to queue leaves the session in step");
    }
}
