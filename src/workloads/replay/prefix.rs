//! PostgreSQL's `log_line_prefix` as a pattern: the stderr log puts the prefix the server
//! was configured with before every line, so reading the log means knowing it. Its escapes
//! become named groups for what a replay needs (the time, the session, the database); the
//! rest match whatever the server wrote there.

use anyhow::{bail, Result};
use regex::Regex;

/// The server's default prefix (PostgreSQL 10 and later); Debian's packages add
/// `%q%u@%d `.
pub const DEFAULT: &str = "%m [%p] ";

/// The severities a message line starts with after its prefix.
const SEVERITIES: &str =
    "LOG|ERROR|FATAL|PANIC|WARNING|NOTICE|INFO|DEBUG[1-5]?|DETAIL|HINT|CONTEXT|STATEMENT|QUERY|LOCATION";

/// A line's pattern: the prefix's time (`time` or `epoch`), session (`session` or `pid`)
/// and `database` as groups, then the `severity` and the `message`.
pub struct Prefix {
    pub line: Regex,
}

impl Prefix {
    /// The pattern for log lines written with `prefix`.
    pub fn new(prefix: &str) -> Result<Self> {
        let mut pattern = String::from("^");
        let mut optional = false;
        let mut chars = prefix.chars().peekable();
        let (mut time, mut session) = (false, false);
        while let Some(c) = chars.next() {
            if c != '%' {
                pattern.push_str(&regex::escape(&c.to_string()));
                continue;
            }
            // Padding (`%-10u`) puts spaces around the value.
            let mut padded = false;
            while chars.peek().is_some_and(|c| *c == '-' || c.is_ascii_digit()) {
                chars.next();
                padded = true;
            }
            let Some(escape) = chars.next() else { bail!("log_line_prefix '{prefix}' ends with a lone %") };
            let value = match escape {
                'm' if !time => r"(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})(?: \S+)?",
                'n' if !time => r"(?P<epoch>\d+\.\d{3})",
                't' if !time => r"(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: \S+)?",
                'm' | 's' => r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?(?: \S+)?",
                't' => r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: \S+)?",
                'n' => r"\d+\.\d{3}",
                'c' if !session => r"(?P<session>[0-9a-f]+\.[0-9a-f]+)",
                'c' => r"[0-9a-f]+\.[0-9a-f]+",
                'p' => r"(?P<pid>\d+)",
                'd' => r"(?P<database>.*?)",
                'u' | 'a' | 'i' | 'b' | 'r' | 'h' => r".*?",
                'P' | 'l' | 'x' => r"\d*",
                'Q' => r"-?\d*",
                'v' => r"[0-9/\-]*",
                'e' => r"[0-9A-Z]{5}",
                '%' => "%",
                'q' => {
                    // What follows is left out for processes without a session.
                    pattern.push_str("(?:");
                    optional = true;
                    continue;
                }
                other => bail!("log_line_prefix '{prefix}' has %{other}, which PostgreSQL does not know"),
            };
            time |= matches!(escape, 'm' | 'n' | 't');
            session |= escape == 'c';
            match padded {
                true => pattern.push_str(&format!(r"\s*{value}\s*")),
                false => pattern.push_str(value),
            }
        }
        if optional {
            pattern.push_str(")?");
        }
        if !time {
            bail!(
                "log_line_prefix '{prefix}' has no time (%m, %n or %t): a replay needs each statement's time; add %m"
            );
        }
        if !session && !pattern.contains("?P<pid>") {
            bail!("log_line_prefix '{prefix}' names no session (%c or %p): add %p to tell sessions apart");
        }
        pattern.push_str(&format!("(?P<severity>{SEVERITIES}):  (?P<message>.*)$"));
        Ok(Self { line: Regex::new(&pattern)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_and_debian_prefixes_give_time_session_and_message() {
        let p = Prefix::new(DEFAULT).unwrap();
        let c = p.line.captures("2026-11-28 20:35:01.123 UTC [4242] LOG:  statement: SELECT 1").unwrap();
        assert_eq!((&c["time"], &c["pid"], &c["severity"]), ("2026-11-28 20:35:01.123", "4242", "LOG"));
        assert_eq!(&c["message"], "statement: SELECT 1");
        let debian = Prefix::new("%m [%p] %q%u@%d ").unwrap();
        let c = debian.line.captures("2026-11-28 20:35:01.123 CET [7] bob@shop LOG:  statement: BEGIN").unwrap();
        assert_eq!((&c["database"], &c["message"]), ("shop", "statement: BEGIN"));
        // A process without a session (the checkpointer) leaves out what follows %q.
        let c = debian.line.captures("2026-11-28 20:35:01.123 CET [9] LOG:  checkpoint starting: time").unwrap();
        assert!(c.name("database").is_none());
    }

    #[test]
    fn session_ids_epochs_and_padding_are_read() {
        let p = Prefix::new("%n %c %-8u ").unwrap();
        let c = p.line.captures("1764362101.123 6749a1b2.1f4 bob      ERROR:  boom").unwrap();
        assert_eq!((&c["epoch"], &c["session"], &c["severity"]), ("1764362101.123", "6749a1b2.1f4", "ERROR"));
    }

    #[test]
    fn a_prefix_without_time_or_session_is_refused_with_the_fix() {
        let e = Prefix::new("[%p] ").err().unwrap().to_string();
        assert!(e.contains("add %m"), "{e}");
        let e = Prefix::new("%m ").err().unwrap().to_string();
        assert!(e.contains("add %p"), "{e}");
        assert!(Prefix::new("%m %z").err().unwrap().to_string().contains("%z"));
    }
}
