//! MariaDB's and MySQL's slow query log with `long_query_time = 0`: every statement, as an
//! entry of `# ` header lines (its time, session, how long it took) and then its text.
//!
//! ```text
//! # Time: 261129  0:07:54                      (MariaDB: only when the second changed)
//! # User@Host: app[app] @ localhost []         (MySQL adds `Id: 8`)
//! # Thread_id: 3  Schema: shop  QC_hit: No     (MariaDB)
//! # Query_time: 0.000131  Lock_time: 0.000040  Rows_sent: 1  Rows_examined: 1
//! use shop;
//! SET timestamp=1795910874;
//! select * from a where id=1;
//! ```
//!
//! A statement started its query time before the entry's time (MySQL's, to the
//! microsecond), or at its `SET timestamp` (MariaDB's, to the second). The log records no
//! connection or disconnection: a session opens at its first statement, into the schema
//! its entry names, and is taken as closed once the log has gone on for [`IDLE`] without
//! it (or at MySQL's `# administrator command: Quit`). Prepared statements are logged with
//! their values written in and replay as text; the log does not say which statements failed.

use super::super::event::{Event, What};
use super::{is_header, is_use, micros, Lines};
use anyhow::{bail, Context, Result};
use std::collections::{HashMap, VecDeque};
use std::io::BufRead;

/// How long in the log's time a session may go without a statement before it is taken as
/// closed.
pub const IDLE_S: i64 = 60;

/// An entry being read.
#[derive(Default)]
struct Entry {
    line: u64,
    id: Option<String>,
    schema: Option<String>,
    query_us: i64,
    /// `SET timestamp`: the statement's start, to the second.
    started_s: Option<i64>,
    sql: String,
    /// MySQL's `# administrator command: Quit;`.
    quit: bool,
}

pub struct SlowLog<R: BufRead> {
    lines: Lines<R>,
    /// The last `# Time:`, and whether it had a fraction of a second.
    time_us: i64,
    time_exact: bool,
    entry: Option<Entry>,
    /// Each open session's last statement's time.
    last_seen: HashMap<String, i64>,
    swept_us: i64,
    out: VecDeque<Event>,
}

impl<R: BufRead> SlowLog<R> {
    pub fn new(reader: R) -> Self {
        Self {
            lines: Lines::new(reader),
            time_us: 0,
            time_exact: false,
            entry: None,
            last_seen: HashMap::new(),
            swept_us: i64::MIN,
            out: VecDeque::new(),
        }
    }

    fn read_line(&mut self) -> Result<bool> {
        let Some(text) = self.lines.next_line()? else {
            self.finish()?;
            return Ok(false);
        };
        let line = self.lines.number;
        let bad = |what: &str| anyhow::anyhow!("line {line}: {what}: '{}'", super::super::event::shorten(&text, 80));
        if let Some(time) = text.strip_prefix("# Time: ") {
            self.finish()?;
            self.time_us = micros(time.trim()).map_err(|_| bad("not a time"))?;
            self.time_exact = time.contains('.');
        } else if let Some(rest) = text.strip_prefix("# User@Host: ") {
            self.finish()?;
            let id = rest.split_once("Id:").map(|(_, id)| id.trim().to_string());
            self.entry = Some(Entry { line, id, ..Entry::default() });
        } else if let Some(rest) =
            text.strip_prefix("# ").filter(|_| self.entry.as_ref().is_none_or(|e| e.sql.is_empty()))
        {
            let Some(e) = self.entry.as_mut() else {
                return Ok(true); // a comment outside an entry
            };
            if let Some(id) = field(rest, "Thread_id:") {
                e.id = Some(id.to_string());
            }
            if let Some(schema) = field(rest, "Schema:").filter(|s| !s.contains(':')) {
                e.schema = Some(schema.to_string());
            }
            if let Some(q) = field(rest, "Query_time:") {
                let s: f64 = q.parse().map_err(|_| bad("a query time that is not a number"))?;
                e.query_us = (s * 1e6) as i64;
            }
            e.quit |= rest.starts_with("administrator command: Quit");
        } else if is_header(&text) {
            self.finish()?;
        } else {
            let Some(e) = self.entry.as_mut() else {
                if text.trim().is_empty() {
                    return Ok(true);
                }
                return Err(bad("not in a slow log entry (one starts with '# User@Host:')"));
            };
            let meta = e.sql.is_empty() && e.started_s.is_none();
            match text.strip_prefix("SET timestamp=").and_then(|t| t.strip_suffix(';')) {
                Some(t) if e.sql.is_empty() => e.started_s = Some(t.parse().map_err(|_| bad("not a timestamp"))?),
                // The entry's schema, before its statement (MySQL names it only so).
                _ if meta && is_use(&text) => {
                    let db = text.trim_end_matches(';').split_whitespace().nth(1).unwrap_or_default();
                    e.schema.get_or_insert_with(|| db.trim_matches('`').to_string());
                }
                _ => {
                    if !e.sql.is_empty() {
                        e.sql.push('\n');
                    }
                    e.sql.push_str(&text);
                }
            }
        }
        Ok(true)
    }

    /// The entry read so far, as events.
    fn finish(&mut self) -> Result<()> {
        let Some(e) = self.entry.take() else { return Ok(()) };
        let Some(id) = e.id.clone() else {
            bail!("line {}: a slow log entry with no thread id (Thread_id: or Id:)", e.line);
        };
        let at_us = match (self.time_exact, e.started_s) {
            (false, Some(s)) => s * 1_000_000,
            _ => self.time_us - e.query_us,
        };
        self.sweep(at_us);
        let push =
            |out: &mut VecDeque<Event>, what| out.push_back(Event { at_us, session: id.clone(), what, line: e.line });
        if e.quit {
            if self.last_seen.remove(&id).is_some() {
                push(&mut self.out, What::Disconnect);
            }
            return Ok(());
        }
        let sql = e.sql.strip_suffix(';').unwrap_or(&e.sql).to_string();
        // The application's own USE: a replay's sessions stay on the run's copy.
        if sql.trim().is_empty() || is_use(&sql) {
            return Ok(());
        }
        // Idle from when its statement ended: one longer than IDLE_S is not a closed session.
        if self.last_seen.insert(id.clone(), at_us + e.query_us).is_none() {
            push(&mut self.out, What::Connect { database: e.schema.clone() });
        }
        push(&mut self.out, What::Statement { sql, params: vec![], prepared: None });
        Ok(())
    }

    /// Closes the sessions the log has gone on without for [`IDLE_S`] (once a second of its time).
    fn sweep(&mut self, now_us: i64) {
        if now_us.saturating_sub(self.swept_us) < 1_000_000 {
            return;
        }
        self.swept_us = now_us;
        let idle: Vec<String> =
            self.last_seen.iter().filter(|(_, t)| now_us - **t > IDLE_S * 1_000_000).map(|(k, _)| k.clone()).collect();
        for id in idle {
            let at_us = self.last_seen.remove(&id).unwrap_or(now_us);
            self.out.push_back(Event { at_us, session: id, what: What::Disconnect, line: self.lines.number });
        }
    }
}

impl<R: BufRead> Iterator for SlowLog<R> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        while self.out.is_empty() {
            match self.read_line().context("the slow query log") {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Some(Err(e)),
            }
        }
        self.out.pop_front().map(Ok)
    }
}

/// The word after `name` in a header line: `Thread_id: 3  Schema: shop` -> `3`.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let (_, after) = line.split_once(name)?;
    after.split_whitespace().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(log: &str) -> Vec<Event> {
        SlowLog::new(log.as_bytes()).map(Result::unwrap).collect()
    }

    fn statement(sql: &str) -> What {
        What::Statement { sql: sql.into(), params: vec![], prepared: None }
    }

    #[test]
    fn mariadb_s_entries_open_sessions_into_their_schema_with_multi_line_text() {
        let e = events(
            "/usr/sbin/mariadbd, Version: 10.11.19-MariaDB-log. started with:
Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock
Time\t\t    Id Command\tArgument
# Time: 261129  0:07:54
# User@Host: root[root] @ localhost []
# Thread_id: 3  Schema: shop  QC_hit: No
# Query_time: 0.000175  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
# Rows_affected: 1  Bytes_sent: 11
use `shop`;
SET timestamp=1795910874;
create table a(id int,
  v text);
# User@Host: root[root] @ localhost []
# Thread_id: 4  Schema:   QC_hit: No
# Query_time: 0.1  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 0
SET timestamp=1795910875;
use shop;
# User@Host: root[root] @ localhost []
# Thread_id: 4  Schema: shop  QC_hit: No
# Query_time: 0.1  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 0
SET timestamp=1795910875;
INSERT INTO notes VALUES ('
# a heading, not a header');
",
        );
        let whats: Vec<(&str, &What)> = e.iter().map(|e| (e.session.as_str(), &e.what)).collect();
        assert_eq!(
            whats,
            vec![
                ("3", &What::Connect { database: Some("shop".into()) }),
                ("3", &statement("create table a(id int,\n  v text)")),
                ("4", &What::Connect { database: Some("shop".into()) }),
                ("4", &statement("INSERT INTO notes VALUES ('\n# a heading, not a header')")),
            ]
        );
        assert_eq!(e[3].at_us - e[1].at_us, 1_000_000);
        assert_eq!(e[1].line, 5);
    }

    #[test]
    fn mysql_s_exact_times_less_the_query_time_are_starts_and_idle_sessions_close() {
        let entry = |time: &str, id: u32, sql: &str| {
            format!("# Time: {time}\n# User@Host: app[app] @ localhost []  Id: {id}\n# Query_time: 0.250000  Lock_time: 0.000000 Rows_sent: 1  Rows_examined: 0\nSET timestamp=1;\n{sql};\n")
        };
        let log = [
            entry("2026-11-29T00:00:01.500000Z", 8, "SELECT 1"),
            entry("2026-11-29T00:00:45.000000Z", 9, "SELECT 2"),
            entry("2026-11-29T00:01:30.000000Z", 9, "SELECT 2"),
            entry("2026-11-29T00:02:00.000000Z", 9, "SELECT 3"),
            "# Time: 2026-11-29T00:02:01.000000Z\n# User@Host: app[app] @ localhost []  Id: 9\n# Query_time: 0.000001  Lock_time: 0.000000 Rows_sent: 0  Rows_examined: 0\n# administrator command: Quit;\n".into(),
        ]
        .concat();
        let e = events(&log);
        let whats: Vec<(&str, &What)> = e.iter().map(|e| (e.session.as_str(), &e.what)).collect();
        let closed = [("8", &What::Disconnect), ("9", &statement("SELECT 2")), ("9", &statement("SELECT 3"))];
        assert_eq!(whats[4..], [&closed[..], &[("9", &What::Disconnect)]].concat());
        assert_eq!(e[3].at_us - e[1].at_us, 43_500_000, "each started its query time before its entry's time");
        assert_eq!(e[1].at_us % 1_000_000, 250_000);
    }

    #[test]
    fn text_outside_an_entry_is_an_error_naming_its_line() {
        let err = SlowLog::new("# Time: 261129  0:07:54\nSELECT 1;\n".as_bytes()).find_map(Result::err).unwrap();
        assert!(format!("{err:#}").contains("line 2: not in a slow log entry"), "{err:#}");
    }
}
