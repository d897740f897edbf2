//! An executed prepared statement as MariaDB's and MySQL's logs show it, with its
//! parameters written into its text (`Execute  SELECT c FROM t WHERE id=5`), split back
//! into the statement its session prepared (`Prepare  SELECT c FROM t WHERE id=?`) and its
//! parameters, so the replay runs it as the application did: prepared once, executed with
//! values. A text no prepared statement of the session matches is replayed as text.

use super::super::event::Param;

/// Statements a session keeps prepared for matching (an application that prepares without
/// end keeps its most recent).
const KEPT: usize = 256;

/// A session's prepared statements, the one matched last first.
#[derive(Default)]
pub struct Prepared {
    templates: Vec<Template>,
}

struct Template {
    text: String,
    /// The text between its placeholders: one more than it has placeholders.
    parts: Vec<String>,
}

impl Prepared {
    /// The session prepared `text`.
    pub fn add(&mut self, text: &str) {
        self.templates.retain(|t| t.text != text);
        self.templates.insert(0, Template { text: text.to_string(), parts: parts(text) });
        self.templates.truncate(KEPT);
    }

    /// The prepared statement `executed` ran, and its parameters.
    pub fn split(&mut self, executed: &str) -> Option<(String, Vec<Param>)> {
        let (i, params) = self.templates.iter().enumerate().find_map(|(i, t)| Some((i, t.split(executed)?)))?;
        let t = self.templates.remove(i);
        let text = t.text.clone();
        self.templates.insert(0, t);
        Some((text, params))
    }
}

impl Template {
    fn split(&self, executed: &str) -> Option<Vec<Param>> {
        let mut rest = executed.strip_prefix(self.parts[0].as_str())?;
        let mut params = Vec::with_capacity(self.parts.len() - 1);
        for part in &self.parts[1..] {
            let (param, after) = literal(rest)?;
            params.push(param);
            rest = after.strip_prefix(part.as_str())?;
        }
        rest.is_empty().then_some(params)
    }
}

/// `text` cut at its placeholders (`?` outside quotes).
fn parts(text: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quote = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '?') => {
                parts.push(String::new());
                continue;
            }
            (None, '\'' | '"' | '`') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') => {
                parts.last_mut().expect("one at least").push(c);
                match chars.next() {
                    Some(next) => parts.last_mut().expect("one at least").push(next),
                    None => break,
                }
                continue;
            }
            _ => {}
        }
        parts.last_mut().expect("one at least").push(c);
    }
    parts
}

/// The SQL literal `s` starts with, as a parameter, and what follows it: NULL, a number,
/// or a quoted string (after a character set introducer such as `_binary`).
fn literal(s: &str) -> Option<(Param, &str)> {
    if let Some(rest) = s.strip_prefix("NULL") {
        return Some((Param::Null, rest));
    }
    let unintroduced = match s.strip_prefix('_') {
        Some(r) => r.trim_start_matches(|c: char| c.is_ascii_alphanumeric()),
        None => s,
    };
    if let Some(quoted) = unintroduced.strip_prefix('\'') {
        let (value, rest) = quoted_string(quoted)?;
        return Some((Param::Text(value), rest));
    }
    let end = number_end(s)?;
    Some((Param::Number(s[..end].to_string()), &s[end..]))
}

/// Where the number `s` starts with ends: `-12`, `3.5`, `1e-05`.
fn number_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > from
    };
    let whole = digits(&mut i);
    let fraction = b.get(i) == Some(&b'.') && {
        i += 1;
        digits(&mut i)
    };
    if !(whole || fraction) {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mark = i;
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            i = mark;
        }
    }
    Some(i)
}

/// A string after its opening quote, with MariaDB's escapes (`\'`, `\\`, `\n`, `''` ...);
/// what follows its closing quote.
fn quoted_string(s: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => value.push(match chars.next()?.1 {
                '0' => '\0',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'b' => '\u{8}',
                'Z' => '\u{1a}',
                other => other,
            }),
            '\'' if s[i + 1..].starts_with('\'') => {
                value.push('\'');
                chars.next();
            }
            '\'' => return Some((value, &s[i + 1..])),
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Param {
        Param::Text(s.into())
    }

    fn number(s: &str) -> Param {
        Param::Number(s.into())
    }

    #[test]
    fn an_execution_splits_into_its_statement_and_typed_parameters() {
        let mut p = Prepared::default();
        p.add("SELECT c FROM t WHERE id BETWEEN ? AND ?");
        p.add("UPDATE t SET c=? WHERE id=?");
        p.add("INSERT INTO t VALUES (?, ?, ?, ?)");
        let (sql, params) = p.split("UPDATE t SET c='it\\'s, ok' WHERE id=-6").unwrap();
        assert_eq!((sql.as_str(), params), ("UPDATE t SET c=? WHERE id=?", vec![text("it's, ok"), number("-6")]));
        let (_, params) = p.split("SELECT c FROM t WHERE id BETWEEN 5 AND 1.5e+03").unwrap();
        assert_eq!(params, vec![number("5"), number("1.5e+03")]);
        let (_, params) = p.split("INSERT INTO t VALUES (NULL, 'a''b', _binary'x', '')").unwrap();
        assert_eq!(params, vec![Param::Null, text("a'b"), text("x"), text("")]);
    }

    #[test]
    fn a_text_no_prepared_statement_matches_is_left_as_text() {
        let mut p = Prepared::default();
        p.add("SELECT c FROM t WHERE id=?");
        assert_eq!(p.split("SELECT c FROM t WHERE id=5 LIMIT 1"), None);
        assert_eq!(p.split("SELECT c FROM t WHERE id=abs(5)"), None);
        assert_eq!(p.split("SELECT c FROM u WHERE id=5"), None);
    }

    #[test]
    fn a_question_mark_inside_quotes_is_not_a_placeholder() {
        let mut p = Prepared::default();
        p.add("SELECT '?', \"a\\\"?\" FROM t WHERE id = ?");
        let (_, params) = p.split("SELECT '?', \"a\\\"?\" FROM t WHERE id = 7").unwrap();
        assert_eq!(params, vec![number("7")]);
    }
}
