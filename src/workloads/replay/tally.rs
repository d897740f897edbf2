//! What a replay measured, per statement class: a class is the statement's text with its
//! literals and parameters as `?` and its whitespace folded (as `pg_stat_statements` and
//! pt-query-digest group statements), so `WHERE id = 5` and `WHERE id = 7` are one class.
//! Each session keeps its own tally and adds it to the replay's when it ends.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::HashMap;

/// Classes a replay tells apart; statements of any class beyond them count as one more.
pub const MAX_CLASSES: usize = 500;
/// How much of a class's text is kept.
const CLASS_TEXT: usize = 300;
const OTHER: &str = "(other statements, beyond the classes kept)";

/// How a statement's outcome compares with the capture's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Failed {
    /// Failed now, succeeded at capture: what the change (or the replay) broke.
    pub now_only: u64,
    /// Failed now as at capture.
    pub as_captured: u64,
    /// Succeeded now, failed at capture.
    pub then_only: u64,
}

impl Failed {
    fn add(&mut self, o: &Failed) {
        self.now_only += o.now_only;
        self.as_captured += o.as_captured;
        self.then_only += o.then_only;
    }

    /// Statements whose outcome differs from the capture's.
    pub fn differing(&self) -> u64 {
        self.now_only + self.then_only
    }
}

struct Class {
    latency: Histogram<u64>,
    failed: Failed,
    /// The first error the class met now, to show beside its count.
    first_error: Option<String>,
}

impl Class {
    fn new() -> Self {
        Self { latency: histogram(), failed: Failed::default(), first_error: None }
    }
}

/// Latencies in microseconds, to an hour, with 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

pub struct Tally {
    classes: HashMap<String, Class>,
    all: Histogram<u64>,
    /// How late each statement started against the recorded schedule (as recorded).
    lag: Histogram<u64>,
    failed: Failed,
}

impl Default for Tally {
    fn default() -> Self {
        Self { classes: HashMap::new(), all: histogram(), lag: histogram(), failed: Failed::default() }
    }
}

impl Tally {
    /// One statement: its class, how long it took and how late it started (µs), and how
    /// it failed now (`error`) and at capture.
    pub fn statement(
        &mut self,
        class: String,
        took_us: u64,
        lag_us: Option<u64>,
        error: Option<&str>,
        failed_then: bool,
    ) {
        let full = self.classes.len() >= MAX_CLASSES && !self.classes.contains_key(&class);
        let c = self.classes.entry(if full { OTHER.to_string() } else { class }).or_insert_with(Class::new);
        let took = took_us.max(1);
        let _ = c.latency.record(took);
        let _ = self.all.record(took);
        if let Some(lag) = lag_us {
            let _ = self.lag.record(lag.max(1));
        }
        let f = match (error.is_some(), failed_then) {
            (true, false) => Failed { now_only: 1, ..Failed::default() },
            (true, true) => Failed { as_captured: 1, ..Failed::default() },
            (false, true) => Failed { then_only: 1, ..Failed::default() },
            (false, false) => return,
        };
        c.failed.add(&f);
        self.failed.add(&f);
        if c.first_error.is_none() {
            c.first_error = error.map(String::from);
        }
    }

    /// Adds a session's tally.
    pub fn add(&mut self, o: Tally) {
        for (name, class) in o.classes {
            let full = self.classes.len() >= MAX_CLASSES && !self.classes.contains_key(&name);
            let c = self.classes.entry(if full { OTHER.to_string() } else { name }).or_insert_with(Class::new);
            let _ = c.latency.add(&class.latency);
            c.failed.add(&class.failed);
            c.first_error = c.first_error.take().or(class.first_error);
        }
        let _ = self.all.add(&o.all);
        let _ = self.lag.add(&o.lag);
        self.failed.add(&o.failed);
    }

    pub fn statements(&self) -> u64 {
        self.all.len()
    }

    /// The replay's figures, its classes by the time they took in all, longest first.
    pub fn summary(&self, elapsed_s: f64, sessions: u64, recorded: bool) -> Summary {
        let mut classes: Vec<ClassSummary> = self
            .classes
            .iter()
            .map(|(text, c)| ClassSummary {
                class: text.clone(),
                statements: c.latency.len(),
                total_ms: c.latency.mean() * c.latency.len() as f64 / 1000.0,
                latency: Percentiles::of(&c.latency),
                failed: c.failed,
                first_error: c.first_error.clone(),
            })
            .collect();
        classes.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then(a.class.cmp(&b.class)));
        Summary {
            elapsed_s,
            sessions,
            statements: self.statements(),
            statements_per_s: self.statements() as f64 / elapsed_s.max(1e-9),
            latency: Percentiles::of(&self.all),
            lag: recorded.then(|| Percentiles::of(&self.lag)),
            failed: self.failed,
            classes,
        }
    }
}

/// Mean and percentiles of a histogram, in ms.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Self {
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.5)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ClassSummary {
    pub class: String,
    pub statements: u64,
    pub total_ms: f64,
    pub latency: Percentiles,
    pub failed: Failed,
    pub first_error: Option<String>,
}

/// What one replay found.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub elapsed_s: f64,
    pub sessions: u64,
    pub statements: u64,
    pub statements_per_s: f64,
    pub latency: Percentiles,
    /// How late statements started against the recorded schedule (as recorded only).
    pub lag: Option<Percentiles>,
    pub failed: Failed,
    pub classes: Vec<ClassSummary>,
}

/// A statement's class: its literals, numbers and parameters as `?`, runs of them (an IN
/// list, a multi-row VALUES) as one, whitespace folded, comments and a trailing `;` left out.
pub fn class_of(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len().min(CLASS_TEXT));
    let mut chars = sql.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                while let Some(n) = chars.next() {
                    if n == '\'' && chars.peek() != Some(&'\'') {
                        break;
                    }
                    if n == '\'' {
                        chars.next();
                    }
                }
                push(&mut out, '?', &mut space);
            }
            '-' if chars.peek() == Some(&'-') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                space = true;
            }
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                push(&mut out, '?', &mut space);
            }
            // A number, not an identifier's digits (`t1`): after whitespace (which `push` has
            // not yet written) or after anything but a word.
            c if c.is_ascii_digit() && (space || !out.ends_with(|p: char| p.is_alphanumeric() || p == '_')) => {
                while chars.peek().is_some_and(|n| n.is_ascii_digit() || *n == '.') {
                    chars.next();
                }
                push(&mut out, '?', &mut space);
            }
            c if c.is_whitespace() => space = true,
            c => push(&mut out, c, &mut space),
        }
        if out.len() > CLASS_TEXT * 4 {
            break;
        }
    }
    let out = fold_runs(out.trim_end_matches(';').trim_end());
    match out.char_indices().nth(CLASS_TEXT) {
        Some((i, _)) => format!("{}...", &out[..i]),
        None => out,
    }
}

/// Appends `c`, with one space before it where whitespace was (none next to brackets,
/// commas and a negative number's sign turned `?`).
fn push(out: &mut String, c: char, space: &mut bool) {
    if c == '?' && out.ends_with(" -") {
        out.pop();
    }
    if *space && !out.is_empty() && !matches!(c, ',' | ')') && !out.ends_with('(') {
        out.push(' ');
    }
    *space = false;
    out.push(c);
}

/// Runs of values as one: `?, ?, ?` as `?` (an IN list) and `(?), (?)` as `(?)` (a
/// multi-row VALUES).
fn fold_runs(s: &str) -> String {
    let mut s = s.to_string();
    for (run, one) in [("?, ?", "?"), ("(?), (?)", "(?)")] {
        while s.contains(run) {
            s = s.replace(run, one);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_parameters_and_whitespace_make_one_class() {
        let a = class_of("SELECT abalance FROM pgbench_accounts WHERE aid = 5;");
        assert_eq!(a, "SELECT abalance FROM pgbench_accounts WHERE aid = ?");
        assert_eq!(class_of("SELECT abalance\n  FROM pgbench_accounts WHERE aid = $1"), a);
        assert_eq!(
            class_of("UPDATE t1 SET v = 'it''s', n = -4.5 WHERE k = 'x' -- why\n"),
            "UPDATE t1 SET v = ?, n = ? WHERE k = ?"
        );
        assert_eq!(class_of("SELECT * FROM t WHERE id IN (1, 2, 3)"), class_of("SELECT * FROM t WHERE id IN (7)"));
        assert_eq!(class_of("INSERT INTO t VALUES (1, 'a'), (2, 'b')"), "INSERT INTO t VALUES (?)");
        // Numbers after a keyword, as a slow log writes a prepared statement's values in.
        assert_eq!(
            class_of("SELECT c FROM sbtest1 WHERE id BETWEEN 101 AND 200 LIMIT 5"),
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? LIMIT ?"
        );
    }

    #[test]
    fn failures_count_against_the_capture_and_classes_are_capped() {
        let mut t = Tally::default();
        t.statement("a".into(), 1000, None, Some("boom"), false);
        t.statement("a".into(), 3000, None, Some("boom"), true);
        t.statement("a".into(), 2000, None, None, true);
        for i in 0..MAX_CLASSES + 5 {
            let mut s = Tally::default();
            s.statement(format!("class {i}"), 10, Some(5), None, false);
            t.add(s);
        }
        let s = t.summary(1.0, 2, true);
        assert_eq!(s.failed, Failed { now_only: 1, as_captured: 1, then_only: 1 });
        assert_eq!(s.classes[0].class, "a");
        assert_eq!((s.classes[0].statements, s.classes[0].first_error.as_deref()), (3, Some("boom")));
        assert!((s.classes[0].latency.mean_ms - 2.0).abs() < 0.01);
        assert_eq!(s.classes.len(), MAX_CLASSES + 1);
        assert!(s.classes.iter().any(|c| c.class == OTHER && c.statements == 6));
        assert_eq!(s.statements, 3 + MAX_CLASSES as u64 + 5);
    }
}
