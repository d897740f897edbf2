//! MariaDB's and MySQL's logs of every statement: the general query log ([`general`]) and
//! the slow query log with `long_query_time = 0` ([`slow`]), read as the same events as
//! PostgreSQL's log.

mod execute;
pub mod general;
pub mod slow;

use anyhow::{bail, Context, Result};
use std::io::BufRead;

/// A time as MariaDB (`261129  0:07:54`) or MySQL (`2026-11-29T00:07:54.123456Z`) writes it.
pub const TIME: &str =
    r"\d{6}\s+\d{1,2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?";

/// `USE shop` (`use \`shop\`;`): a change of database, which a replay does not make (its
/// sessions run on the run's copy).
pub fn is_use(sql: &str) -> bool {
    let mut words = sql.trim_end().trim_end_matches(';').split_whitespace();
    words.next().is_some_and(|w| w.eq_ignore_ascii_case("use")) && words.count() == 1
}

/// A log's lines, numbered, each as text without its line end. Bytes that are not UTF-8
/// (a statement's latin1 data) are kept as well as they can be, not an error.
pub struct Lines<R: BufRead> {
    reader: R,
    buf: Vec<u8>,
    /// The number of the line read last.
    pub number: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Self {
        Self { reader, buf: Vec::new(), number: 0 }
    }

    /// The next line, or `None` at the end of the log.
    pub fn next_line(&mut self) -> Result<Option<String>> {
        self.buf.clear();
        let read = self.reader.read_until(b'\n', &mut self.buf);
        if read.with_context(|| format!("cannot read the log after line {}", self.number))? == 0 {
            return Ok(None);
        }
        self.number += 1;
        Ok(Some(String::from_utf8_lossy(&self.buf).trim_end_matches(['\n', '\r']).to_string()))
    }
}

/// The lines a server writes when it opens its log (at start, and at FLUSH LOGS).
pub fn is_header(line: &str) -> bool {
    line.contains(", Version: ") && line.ends_with("started with:")
        || line.starts_with("Tcp port: ")
        || line.starts_with("Time") && line.ends_with("Argument")
}

/// MariaDB's `261129  0:07:54` or MySQL's `2026-11-29T00:07:54.123456Z` in microseconds since
/// the epoch (the zone is left out: a replay needs times relative to each other).
pub fn micros(time: &str) -> Result<i64> {
    let iso = match time.split_once(char::is_whitespace) {
        Some((date, clock)) if date.len() == 6 && date.bytes().all(|b| b.is_ascii_digit()) => {
            let clock = clock.trim();
            let clock = if clock.find(':') == Some(1) { format!("0{clock}") } else { clock.to_string() };
            format!("20{}-{}-{} {clock}", &date[..2], &date[2..4], &date[4..])
        }
        _ => time.trim_end_matches('Z').to_string(),
    };
    // An offset such as +01:00 is left out with the zone.
    let iso = match iso.get(19..).and_then(|rest| rest.find(['+', '-'])) {
        Some(at) => iso[..19 + at].to_string(),
        None => iso,
    };
    match humantime::parse_rfc3339_weak(&iso) {
        Ok(at) => Ok(at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)),
        Err(_) => bail!("not a time: '{time}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_is_a_change_of_database_and_nothing_else() {
        assert!(is_use("USE shop") && is_use("use `shop`;") && is_use("use shop ;"));
        assert!(!is_use("user_id = 5") && !is_use("USE shop; SELECT 1") && !is_use("SELECT 1"));
    }

    #[test]
    fn both_servers_times_read_to_the_microsecond() {
        let maria = micros("261129  0:07:54").unwrap();
        assert_eq!(micros("2026-11-29T00:07:54.000001Z").unwrap() - maria, 1);
        assert_eq!(micros("2026-11-29T00:07:54.5+01:00").unwrap() - maria, 500_000);
        assert_eq!(micros("261129 10:07:54").unwrap() - maria, 36_000_000_000);
        assert!(micros("26112 0:07:54").is_err());
    }
}
