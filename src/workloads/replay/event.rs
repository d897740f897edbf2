//! What a captured log says happened, engine by engine the same: sessions opening, running
//! statements and closing, and which statements failed when they were captured.

pub use crate::targets::sql::replay::Param;

/// A captured session, as the log names it (PostgreSQL's session id or backend pid,
/// MariaDB's thread id), made unique within the log (a pid reused later is a new session).
pub type SessionKey = String;

/// One thing the log recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// When it started, in microseconds on the log's own clock.
    pub at_us: i64,
    pub session: SessionKey,
    pub what: What,
    /// The log's line this came from (its first line), for errors.
    pub line: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum What {
    /// A session opened, into `database` (when the log says).
    Connect {
        database: Option<String>,
    },
    /// A statement as the application sent it: its text, with its bind parameters when it
    /// was sent as a prepared statement; `prepared` names a statement prepared once and
    /// executed again (PostgreSQL's `S_1`, MariaDB's statement text), `None` an unnamed one.
    Statement {
        sql: String,
        params: Vec<Param>,
        prepared: Option<String>,
    },
    /// The session's last statement failed at capture (the log's ERROR for it).
    FailedAtCapture,
    Disconnect,
}

/// `text` as an error quotes it: its first `chars` characters.
pub fn shorten(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}
