//! MariaDB's and MySQL's general query log (`general_log = ON`): one line per command a
//! session sent, behind its time (MariaDB's `261129  0:07:54`, to the second and only when
//! it changed; MySQL's `2026-11-29T00:07:54.123456Z` on every line; `dbvs capture` writes
//! the latter), the session's thread id and the command. A statement that spans lines
//! continues on the lines after it. Read line by line, so a log of any size streams through
//! in constant memory.
//!
//! What it reads: `Connect` (and the database named), `Query`, `Prepare` and `Execute`
//! (split back into the statement and its parameters: [`super::execute`]), `Quit`.
//! Everything else (`Init DB`, `Close stmt`, `Ping`, ...) is passed over: a replay's
//! sessions run on the database they are given, so a session's change of database (`Init
//! DB` or a `USE` query) is not replayed. The log does not say which statements failed.

use super::super::event::{Event, What};
use super::execute::Prepared;
use super::{is_header, micros, Lines};
use anyhow::{bail, Result};
use regex::Regex;
use std::collections::{HashMap, VecDeque};
use std::io::BufRead;

/// The commands MariaDB and MySQL log. A line without a time is an entry only if it names
/// one of these: otherwise it continues the statement before (a statement's own lines may
/// start with tabs and a number).
const COMMANDS: &str = "Sleep|Quit|Init DB|Query|Field List|Create DB|Drop DB|Refresh|Shutdown|Statistics|\
    Processlist|Connect|Kill|Debug|Ping|Time|Delayed insert|Change user|Binlog Dump GTID|Binlog Dump|\
    Table Dump|Connect Out|Register Slave|Prepare|Execute|Long Data|Close stmt|Reset stmt|Set option|Fetch|\
    Daemon|Reset connection|Bulk_execute|Slave_IO|Slave_SQL|Slave_worker";

/// The patterns of an entry's first line: with its time (any command name), or without (a
/// known one), then the thread id, the command and what it was given.
pub struct Patterns {
    timed: Regex,
    untimed: Regex,
    /// What a line that starts an entry begins with: one that does and is not one is malformed.
    looks_timed: Regex,
}

/// An entry's first line, read: its time (when it has one), thread id, command, argument.
struct Head<'a> {
    time: Option<&'a str>,
    id: &'a str,
    command: &'a str,
    arg: &'a str,
}

impl Patterns {
    pub fn compiled() -> Self {
        let time = super::TIME;
        let compile = |p: &str| Regex::new(p).expect("a valid pattern");
        Self {
            timed: compile(&format!(
                r"^(?P<time>{time})\s+(?P<id>\d+) (?P<command>[A-Za-z][A-Za-z_ ]*?)(?:\t(?P<arg>.*))?$"
            )),
            untimed: compile(&format!(r"^\t\t?\s*(?P<id>\d+) (?P<command>{COMMANDS})(?:\t(?P<arg>.*))?$")),
            looks_timed: compile(r"^(?:\d{6}\s+\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}[T ]\d{2}:)"),
        }
    }

    /// Whether `line` is a general log entry's first line.
    pub fn is_entry(&self, line: &str) -> bool {
        self.head(line).is_some()
    }

    fn head<'a>(&self, line: &'a str) -> Option<Head<'a>> {
        let c = self.timed.captures(line).or_else(|| self.untimed.captures(line))?;
        let text = |name| c.name(name).map_or("", |m| m.as_str());
        Some(Head {
            time: c.name("time").map(|m| m.as_str()),
            id: text("id"),
            command: text("command").trim_end(),
            arg: text("arg"),
        })
    }
}

/// One entry: the line it started on, its time, session, command and argument.
struct Entry {
    line: u64,
    at_us: i64,
    id: String,
    command: String,
    arg: String,
}

pub struct GeneralLog<R: BufRead> {
    lines: Lines<R>,
    patterns: Patterns,
    /// The entry being read (a statement may continue on the next lines).
    pending: Option<Entry>,
    /// The time of the last line that had one.
    at_us: i64,
    /// Each open session's prepared statements, by thread id.
    prepared: HashMap<String, Prepared>,
    /// How many times each thread id connected (a restarted server uses them again).
    generations: HashMap<String, u32>,
    out: VecDeque<Event>,
}

impl<R: BufRead> GeneralLog<R> {
    pub fn new(reader: R) -> Self {
        Self {
            lines: Lines::new(reader),
            patterns: Patterns::compiled(),
            pending: None,
            at_us: 0,
            prepared: HashMap::new(),
            generations: HashMap::new(),
            out: VecDeque::new(),
        }
    }

    /// Reads the next line into the pending entry; `false` at the end of the log.
    fn read_line(&mut self) -> Result<bool> {
        let Some(line) = self.lines.next_line()? else {
            if let Some(e) = self.pending.take() {
                self.emit(e);
            }
            return Ok(false);
        };
        let (text, number) = (line.as_str(), self.lines.number);
        if let Some(head) = self.patterns.head(text) {
            if let Some(t) = head.time {
                self.at_us = micros(t).map_err(|e| anyhow::anyhow!("line {number}: {e}"))?;
            }
            let next = Entry {
                line: number,
                at_us: self.at_us,
                id: head.id.to_string(),
                command: head.command.to_string(),
                arg: head.arg.to_string(),
            };
            if let Some(e) = self.pending.replace(next) {
                self.emit(e);
            }
        } else if is_header(text) {
            // The server (re)opened its log: a restart, or FLUSH LOGS.
            if let Some(e) = self.pending.take() {
                self.emit(e);
            }
        } else if self.patterns.looks_timed.is_match(text) || self.pending.is_none() {
            bail!(
                "line {number}: not a general query log entry (TIME  ID COMMAND<tab>ARGUMENT): '{}'",
                super::super::event::shorten(text, 80)
            );
        } else if let Some(e) = self.pending.as_mut() {
            e.arg.push('\n');
            e.arg.push_str(text);
        }
        Ok(true)
    }

    /// The session key of thread `id`: the id, and which of its connections this is.
    fn key(&self, id: &str) -> String {
        match self.generations.get(id) {
            Some(g) if *g > 1 => format!("{id}#{g}"),
            _ => id.to_string(),
        }
    }

    /// `what` happened to `e`'s session.
    fn push(&mut self, e: &Entry, what: What) {
        self.out.push_back(Event { at_us: e.at_us, session: self.key(&e.id), what, line: e.line });
    }

    fn emit(&mut self, e: Entry) {
        match e.command.as_str() {
            "Quit" => {
                self.prepared.remove(&e.id);
                return self.push(&e, What::Disconnect);
            }
            "Connect" if e.arg.contains("Access denied") => return,
            "Connect" => {
                // A thread id connecting again: the server restarted within the log.
                if self.prepared.insert(e.id.clone(), Prepared::default()).is_some() {
                    self.push(&e, What::Disconnect);
                }
                *self.generations.entry(e.id.clone()).or_insert(0) += 1;
                return self.push(&e, What::Connect { database: connected_to(&e.arg) });
            }
            _ => {}
        }
        let session = self.key(&e.id);
        let prepared = self.prepared.entry(e.id).or_default();
        let what = match e.command.as_str() {
            "Query" if super::is_use(&e.arg) => return,
            "Query" => What::Statement { sql: e.arg, params: vec![], prepared: None },
            "Prepare" => return prepared.add(&e.arg),
            "Execute" => match prepared.split(&e.arg) {
                Some((sql, params)) => What::Statement { prepared: Some(sql.clone()), sql, params },
                None => What::Statement { sql: e.arg, params: vec![], prepared: None },
            },
            _ => return,
        };
        self.out.push_back(Event { at_us: e.at_us, session, what, line: e.line });
    }
}

impl<R: BufRead> Iterator for GeneralLog<R> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        while self.out.is_empty() {
            match self.read_line() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Some(Err(e)),
            }
        }
        self.out.pop_front().map(Ok)
    }
}

/// The database of `root@localhost on shop using TCP/IP`, if one is named.
fn connected_to(arg: &str) -> Option<String> {
    let (_, after) = arg.split_once(" on ")?;
    let db = after.split(" using ").next().unwrap_or(after).trim();
    (!db.is_empty()).then(|| db.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::replay::event::Param;

    fn events(log: &str) -> Vec<Event> {
        GeneralLog::new(log.as_bytes()).map(Result::unwrap).collect()
    }

    const MARIADB: &str = "mariadbd, Version: 10.11.19-MariaDB-0+deb12u1-log (Debian 12). started with:
Tcp port: 3399  Unix socket: /tmp/s.sock
Time\t\t    Id Command\tArgument
261129  0:07:54\t     3 Connect\troot@localhost on shop using TCP/IP
\t\t     3 Query\tcreate table a(id int primary key,
  v varchar(20))
\t\t     3 Init DB\tshop
261129  0:07:55\t     3 Prepare\tSELECT v FROM a WHERE id=?
\t\t     4 Connect\troot@localhost on  using Socket
\t\t     3 Execute\tSELECT v FROM a WHERE id=5
\t\t     3 Close stmt\t
\t\t     3 Quit\t
";

    #[test]
    fn mariadb_s_entries_keep_their_session_time_and_multi_line_text() {
        let e = events(MARIADB);
        let whats: Vec<(&str, &What)> = e.iter().map(|e| (e.session.as_str(), &e.what)).collect();
        assert_eq!(
            whats,
            vec![
                ("3", &What::Connect { database: Some("shop".into()) }),
                (
                    "3",
                    &What::Statement {
                        sql: "create table a(id int primary key,\n  v varchar(20))".into(),
                        params: vec![],
                        prepared: None
                    }
                ),
                ("4", &What::Connect { database: None }),
                (
                    "3",
                    &What::Statement {
                        sql: "SELECT v FROM a WHERE id=?".into(),
                        params: vec![Param::Number("5".into())],
                        prepared: Some("SELECT v FROM a WHERE id=?".into())
                    }
                ),
                ("3", &What::Disconnect),
            ]
        );
        assert_eq!(e[1].at_us, e[0].at_us);
        assert_eq!(e[3].at_us - e[0].at_us, 1_000_000);
        assert_eq!((e[0].line, e[1].line, e[3].line), (4, 5, 10));
    }

    #[test]
    fn a_statement_s_own_lines_continue_it_whatever_they_start_with() {
        // Tab-indented SQL, a line with a number, bytes that are not UTF-8, an unknown
        // command behind a time.
        let log = b"261129  0:07:54\t     3 Query\tSELECT id,\n\t\t1 AS x\n\t\tFROM t WHERE v = '\xe9'\n\
                    261129  0:07:55\t     3 Bulk_execute\tINSERT INTO t VALUES (?)\n\t\t     3 Quit\t\n";
        let e: Vec<Event> = GeneralLog::new(&log[..]).map(Result::unwrap).collect();
        let What::Statement { sql, .. } = &e[0].what else { panic!("{e:?}") };
        assert_eq!(sql, "SELECT id,\n\t\t1 AS x\n\t\tFROM t WHERE v = '\u{fffd}'");
        assert_eq!(e[1].what, What::Disconnect);
    }

    #[test]
    fn mysql_s_iso_times_keep_microseconds() {
        let e = events(
            "2026-11-29T00:07:54.000100Z\t   8 Connect\tu@h on shop using SSL/TLS\n\
             2026-11-29T00:07:54.250100Z\t   8 Query\tSELECT 1\n\
             2026-11-29T00:07:54.250200Z\t   8 Query\tUSE shop\n\
             2026-11-29T00:07:55.000000Z\t   8 Quit\n",
        );
        assert_eq!(e.len(), 3);
        assert_eq!(e[1].at_us - e[0].at_us, 250_000);
        assert_eq!(e[2].what, What::Disconnect);
    }

    #[test]
    fn a_thread_id_that_connects_again_is_a_new_session() {
        // The server restarted: its log starts again, and so do its thread ids.
        let log = format!("{MARIADB}{}", MARIADB.replace("0:07:5", "0:08:5"));
        let e = events(&log);
        let sessions: Vec<&str> = e.iter().map(|e| e.session.as_str()).collect();
        assert_eq!(sessions, ["3", "3", "4", "3", "3", "3#2", "3#2", "4", "4#2", "3#2", "3#2"]);
        assert_eq!(e[7].what, What::Disconnect, "the first server's session 4 ended with it");
    }

    #[test]
    fn a_malformed_entry_is_an_error_naming_its_line() {
        let log = "261129  0:07:54\t     3 Connect\tu@h on  using TCP/IP\n261129  0:07:xx\t     3 Query\tSELECT 1\n";
        let err = GeneralLog::new(log.as_bytes()).find_map(Result::err).unwrap();
        assert!(err.to_string().starts_with("line 2: not a general query log entry"), "{err}");
        let err = GeneralLog::new("hello\n".as_bytes()).find_map(Result::err).unwrap();
        assert!(err.to_string().starts_with("line 1:"), "{err}");
    }
}
