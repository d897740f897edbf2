//! PostgreSQL's server log, as `log_statement = 'all'` (or `log_min_duration_statement = 0`)
//! with `log_connections` and `log_disconnections` write it: in the stderr format, each line
//! behind the server's `log_line_prefix` ([`super::prefix`]), or in csvlog. Read line by
//! line, so a log of any size streams through in constant memory.
//!
//! What it reads: `statement: ...` (the simple protocol), `execute NAME: ...` with its
//! `DETAIL:  parameters: $1 = '...'` (the extended protocol; `<unnamed>` or a prepared
//! statement's name), the same after `duration: D ms  ` (logged when the statement ended, so
//! it started D ms earlier), `connection authorized`, `disconnection`, and ERROR or FATAL,
//! which marks the session's last statement as failed at capture. Everything else (a
//! checkpoint, autovacuum, `parse` and `bind` durations) is passed over.

use super::event::{Event, Param, What};
use super::prefix::Prefix;
use anyhow::{bail, Context, Result};
use std::collections::{HashMap, VecDeque};
use std::io::BufRead;

/// One log message, whatever the format: its time, session, severity and text.
struct Message {
    at_us: i64,
    /// The session id (`%c`, csvlog's `session_id`) or the backend's pid.
    session: String,
    database: Option<String>,
    severity: String,
    text: String,
    detail: Option<String>,
    line: u64,
}

/// Where messages come from.
enum Source<R: BufRead> {
    Stderr(Stderr<R>),
    Csv(csv::StringRecordsIntoIter<R>),
}

/// The log's events, in the order the log has them.
pub struct PgLog<R: BufRead> {
    source: Source<R>,
    /// How many times each session key opened (a pid reused by a later backend).
    generations: HashMap<String, u32>,
    out: VecDeque<Event>,
}

impl<R: BufRead> PgLog<R> {
    /// The stderr format, its lines behind `prefix` (the server's `log_line_prefix`).
    pub fn stderr(reader: R, prefix: &str) -> Result<Self> {
        let prefix = Prefix::new(prefix)?;
        Ok(Self::from(Source::Stderr(Stderr { reader, prefix, ahead: None, line: 0 })))
    }

    pub fn csv(reader: R) -> Self {
        let records = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(reader).into_records();
        Self::from(Source::Csv(records))
    }

    fn from(source: Source<R>) -> Self {
        Self { source, generations: HashMap::new(), out: VecDeque::new() }
    }

    /// The session's key now: its id, and which of its openings this is.
    fn key(&self, session: &str) -> String {
        match self.generations.get(session) {
            Some(g) if *g > 1 => format!("{session}#{g}"),
            _ => session.to_string(),
        }
    }

    /// What `m` says, as events.
    fn read(&mut self, m: Message) -> Result<()> {
        let mut at_us = m.at_us;
        let what = match m.severity.as_str() {
            "ERROR" | "FATAL" | "PANIC" => What::FailedAtCapture,
            "LOG" if m.text.starts_with("connection authorized:") => {
                *self.generations.entry(m.session.clone()).or_insert(0) += 1;
                What::Connect { database: field(&m.text, "database=").or(m.database.clone()) }
            }
            "LOG" if m.text.starts_with("disconnection:") => What::Disconnect,
            "LOG" => match statement(&m)? {
                Some((took_us, what)) => {
                    at_us -= took_us;
                    what
                }
                None => return Ok(()),
            },
            _ => return Ok(()),
        };
        self.out.push_back(Event { at_us, session: self.key(&m.session), what, line: m.line });
        Ok(())
    }

    /// The next message, or `None` at the end of the log.
    fn next_message(&mut self) -> Result<Option<Message>> {
        match &mut self.source {
            Source::Stderr(s) => s.message(),
            Source::Csv(records) => csv_message(records),
        }
    }
}

impl<R: BufRead> Iterator for PgLog<R> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        while self.out.is_empty() {
            match self.next_message() {
                Ok(Some(m)) => {
                    if let Err(e) = self.read(m) {
                        return Some(Err(e));
                    }
                }
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
        self.out.pop_front().map(Ok)
    }
}

/// The statement a LOG message records, with how long it took when it was logged at its
/// end; `None` for any other message.
fn statement(m: &Message) -> Result<Option<(i64, What)>> {
    let (took_us, rest) = match m.text.strip_prefix("duration: ") {
        Some(d) => {
            let (ms, rest) = d.split_once(" ms").unwrap_or((d, ""));
            let ms: f64 =
                ms.parse().with_context(|| format!("line {}: a duration that is not a number: {ms}", m.line))?;
            (((ms * 1000.0) as i64), rest.trim_start())
        }
        None => (0, m.text.as_str()),
    };
    if let Some(sql) = rest.strip_prefix("statement: ") {
        return Ok(Some((took_us, What::Statement { sql: sql.to_string(), params: vec![], prepared: None })));
    }
    let Some(named) = rest.strip_prefix("execute ") else { return Ok(None) };
    let Some((name, sql)) = named.split_once(": ") else { return Ok(None) };
    // `execute S_1/C_1` is a portal of statement S_1.
    let name = name.split('/').next().unwrap_or(name);
    let prepared = (name != "<unnamed>").then(|| name.to_string());
    let params = match m.detail.as_deref().and_then(|d| d.strip_prefix("parameters: ")) {
        Some(p) => parameters(p).with_context(|| format!("line {}: cannot read the parameters '{p}'", m.line))?,
        None => vec![],
    };
    Ok(Some((took_us, What::Statement { sql: sql.to_string(), params, prepared })))
}

/// `$1 = '5', $2 = NULL, $3 = 'it''s'` as text values in order.
fn parameters(text: &str) -> Result<Vec<Param>> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some((_, value)) = rest.split_once(" = ") else { bail!("no ' = ' after a parameter's name") };
        if let Some(after) = value.strip_prefix("NULL") {
            out.push(Param::Null);
            rest = after;
        } else if let Some(quoted) = value.strip_prefix('\'') {
            let (v, after) = quoted_value(quoted).context("a value's quote does not close")?;
            out.push(Param::Text(v));
            rest = after;
        } else {
            bail!("a value neither NULL nor quoted");
        }
        rest = rest.strip_prefix(", ").unwrap_or(rest);
    }
    Ok(out)
}

/// A value after its opening quote, with `''` as a quote; what follows its closing quote.
fn quoted_value(s: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\'' {
            value.push(c);
        } else if chars.peek().is_some_and(|(_, n)| *n == '\'') {
            chars.next();
            value.push('\'');
        } else {
            return Some((value, &s[i + 1..]));
        }
    }
    None
}

/// `key=value` in a message (`database=shop`), up to the next space.
fn field(text: &str, key: &str) -> Option<String> {
    let at = text.find(key)? + key.len();
    Some(text[at..].split(' ').next().unwrap_or("").to_string())
}

/// A stderr log: its lines behind the prefix, read one message ahead.
struct Stderr<R: BufRead> {
    reader: R,
    prefix: Prefix,
    /// The message whose first line was read after the one before was complete.
    ahead: Option<Message>,
    line: u64,
}

impl<R: BufRead> Stderr<R> {
    /// The next line, without its end, and its number.
    fn next_line(&mut self) -> Result<Option<String>> {
        let mut s = String::new();
        if self.reader.read_line(&mut s).context("cannot read the log")? == 0 {
            return Ok(None);
        }
        self.line += 1;
        s.truncate(s.trim_end_matches(['\n', '\r']).len());
        Ok(Some(s))
    }

    /// A line that starts a message, as a message of that line alone.
    fn head(&self, text: &str) -> Result<Message> {
        let c = self.prefix.line.captures(text).with_context(|| {
            format!(
                "line {} is not a log line behind the log_line_prefix given: '{}': set the replay's `prefix` to the \
                 server's log_line_prefix, or remove the line",
                self.line,
                super::event::shorten(text, 80)
            )
        })?;
        let at_us = match (c.name("time"), c.name("epoch")) {
            (Some(t), _) => micros(t.as_str()),
            (None, Some(e)) => e.as_str().parse::<f64>().map(|s| (s * 1e6) as i64).map_err(anyhow::Error::from),
            (None, None) => unreachable!("the prefix has a time (Prefix::new)"),
        }
        .with_context(|| format!("line {}: cannot read the time", self.line))?;
        let session = c.name("session").or(c.name("pid")).map_or("", |m| m.as_str()).to_string();
        Ok(Message {
            at_us,
            session,
            database: c.name("database").map(|d| d.as_str().to_string()),
            severity: c["severity"].to_string(),
            text: c["message"].to_string(),
            detail: None,
            line: self.line,
        })
    }

    /// The next message: a line behind the prefix, its continuation lines (a tab first)
    /// and the DETAIL the server writes right behind it.
    fn message(&mut self) -> Result<Option<Message>> {
        let mut m = match self.ahead.take() {
            Some(m) => m,
            None => loop {
                let Some(text) = self.next_line()? else { return Ok(None) };
                // A continuation of a message left out (a DETAIL with nothing before it).
                if text.starts_with('\t') {
                    continue;
                }
                break self.head(&text)?;
            },
        };
        while let Some(text) = self.next_line()? {
            if let Some(more) = text.strip_prefix('\t') {
                let into = m.detail.as_mut().unwrap_or(&mut m.text);
                into.push('\n');
                into.push_str(more);
                continue;
            }
            let next = self.head(&text)?;
            if next.severity == "DETAIL" && m.detail.is_none() && next.session == m.session {
                m.detail = Some(next.text);
                continue;
            }
            self.ahead = Some(next);
            break;
        }
        Ok(Some(m))
    }
}

/// The next message of a csvlog: one record, its fields by position (PostgreSQL 13 to 17).
fn csv_message<R: std::io::Read>(records: &mut csv::StringRecordsIntoIter<R>) -> Result<Option<Message>> {
    let Some(record) = records.next() else { return Ok(None) };
    let record = record.context("cannot read the csvlog")?;
    let line = record.position().map_or(0, |p| p.line());
    let get = |i: usize| record.get(i).unwrap_or("");
    if record.len() < 15 {
        bail!(
            "line {line} is not a csvlog record ({} fields, PostgreSQL writes 23 or more): is the log csvlog?",
            record.len()
        );
    }
    let at_us = micros(get(0)).with_context(|| format!("line {line}: cannot read the time '{}'", get(0)))?;
    // session_id, else the pid.
    let session = if get(5).is_empty() { get(3) } else { get(5) }.to_string();
    Ok(Some(Message {
        at_us,
        session,
        database: Some(get(2).to_string()).filter(|d| !d.is_empty()),
        severity: get(11).to_string(),
        text: get(13).to_string(),
        detail: Some(get(14).to_string()).filter(|d| !d.is_empty()),
        line,
    }))
}

/// `2026-11-28 20:35:01.123` (the zone that follows is left out: a replay needs times
/// relative to each other) in microseconds since the epoch.
fn micros(time: &str) -> Result<i64> {
    let time = time.get(..23.min(time.len())).unwrap_or(time).trim_end();
    let at = humantime::parse_rfc3339_weak(time)?;
    Ok(at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(log: &str) -> Vec<Event> {
        PgLog::stderr(log.as_bytes(), super::super::prefix::DEFAULT).unwrap().map(Result::unwrap).collect()
    }

    fn statement(sql: &str, params: &[Option<&str>], prepared: Option<&str>) -> What {
        What::Statement {
            sql: sql.into(),
            params: params.iter().map(|p| p.map_or(Param::Null, |v| Param::Text(v.into()))).collect(),
            prepared: prepared.map(String::from),
        }
    }

    #[test]
    fn simple_and_extended_statements_keep_their_session_parameters_and_times() {
        let log = "\
2026-11-28 20:00:00.000 UTC [10] LOG:  connection authorized: user=bob database=shop application_name=pgbench
2026-11-28 20:00:00.005 UTC [10] LOG:  statement: BEGIN;
2026-11-28 20:00:00.010 UTC [11] LOG:  checkpoint starting: time
2026-11-28 20:00:00.020 UTC [10] LOG:  execute P_1: UPDATE a SET b = b + $1
\tWHERE aid = $2;
2026-11-28 20:00:00.020 UTC [10] DETAIL:  parameters: $1 = '-5', $2 = 'it''s', $3 = NULL
2026-11-28 20:00:00.050 UTC [10] LOG:  duration: 20.000 ms  execute <unnamed>: SELECT 1
2026-11-28 20:00:00.060 UTC [10] ERROR:  division by zero
2026-11-28 20:00:00.060 UTC [10] STATEMENT:  SELECT 1/0
2026-11-28 20:00:00.070 UTC [10] LOG:  disconnection: session time: 0:00:00.070 user=bob database=shop
2026-11-28 20:00:01.000 UTC [10] LOG:  connection authorized: user=bob database=shop
";
        let e = events(log);
        let t0 = micros("2026-11-28 20:00:00.000").unwrap();
        let seen: Vec<(i64, &str, &What)> = e.iter().map(|e| (e.at_us - t0, e.session.as_str(), &e.what)).collect();
        assert_eq!(
            seen,
            vec![
                (0, "10", &What::Connect { database: Some("shop".into()) }),
                (5_000, "10", &statement("BEGIN;", &[], None)),
                (
                    20_000,
                    "10",
                    &statement(
                        "UPDATE a SET b = b + $1\nWHERE aid = $2;",
                        &[Some("-5"), Some("it's"), None],
                        Some("P_1")
                    )
                ),
                (30_000, "10", &statement("SELECT 1", &[], None)),
                (60_000, "10", &What::FailedAtCapture),
                (70_000, "10", &What::Disconnect),
                // The pid again: another session.
                (1_000_000, "10#2", &What::Connect { database: Some("shop".into()) }),
            ]
        );
        assert_eq!(e[2].line, 4);
    }

    #[test]
    fn a_line_the_prefix_does_not_fit_is_one_error_naming_it() {
        let log = "2026-11-28 20:00:00.000 UTC [10] LOG:  statement: SELECT 1\nwaiting for server to start\n";
        let e: Vec<Result<Event>> = PgLog::stderr(log.as_bytes(), "%m [%p] ").unwrap().collect();
        let err = e.iter().find_map(|r| r.as_ref().err()).unwrap().to_string();
        assert!(
            err.starts_with("line 2 is not a log line") && err.contains("waiting for server") && err.contains("prefix"),
            "{err}"
        );
    }

    #[test]
    fn csvlog_records_give_the_same_events() {
        let log = "\
2026-11-28 20:00:00.000 UTC,bob,shop,10,\"[local]\",6749a1b2.a,1,authentication,2026-11-28 20:00:00 UTC,,0,LOG,00000,\"connection authorized: user=bob database=shop\",,,,,,,,,\"\",client backend,,0
2026-11-28 20:00:00.020 UTC,bob,shop,10,\"[local]\",6749a1b2.a,2,SELECT,2026-11-28 20:00:00 UTC,3/4,0,LOG,00000,\"execute <unnamed>: SELECT $1,
  'x'\",\"parameters: $1 = '7'\",,,,,,,,\"pgbench\",client backend,,0
";
        let e: Vec<Event> = PgLog::csv(log.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(e[0].what, What::Connect { database: Some("shop".into()) });
        assert_eq!(
            (e[1].session.as_str(), &e[1].what),
            ("6749a1b2.a", &statement("SELECT $1,\n  'x'", &[Some("7")], None))
        );
        assert_eq!(e[1].at_us - e[0].at_us, 20_000);
        let bad: Vec<Result<Event>> = PgLog::csv("just,three,fields\n".as_bytes()).collect();
        assert!(bad[0].as_ref().unwrap_err().to_string().contains("is the log csvlog?"));
    }

    #[test]
    fn parameters_read_quotes_nulls_and_commas_inside_values() {
        let p = parameters("$1 = 'a, b', $2 = NULL, $3 = ''''").unwrap();
        assert_eq!(p, vec![Param::Text("a, b".into()), Param::Null, Param::Text("'".into())]);
        assert!(parameters("$1 = 'open").is_err());
    }
}
