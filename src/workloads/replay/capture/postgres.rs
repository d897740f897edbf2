//! A PostgreSQL server's window: it turns on logging every statement, connection and
//! disconnection (`ALTER SYSTEM` and a reload, so no restart) while the traffic runs, sets
//! every setting back as it was, and copies the lines the window added to the server's log
//! through SQL (`pg_read_binary_file`), so it works on a server on another host. Its own
//! session's lines are left out.

use super::super::prefix::Prefix;
use super::Reach;
use crate::sys::lease::Step;
use crate::targets::sql::{adhoc, exec};
use crate::targets::Connection;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The prefix a capture sets unless told another, and a replay of it reads.
pub const PREFIX: &str = "%m [%p] %q%u@%d ";

/// What a capture sets for its window, its lines behind `prefix`.
fn settings(prefix: &str) -> [(&'static str, String); 5] {
    [
        ("log_statement", "all".into()),
        ("log_connections", "on".into()),
        ("log_disconnections", "on".into()),
        ("log_line_prefix", prefix.into()),
        // Statements in full, parameters too (a replay runs them).
        ("log_parameter_max_length", "-1".into()),
    ]
}

/// How much of the log one read copies.
const CHUNK: i64 = 8 << 20;

/// A server's settings as they were, and the log's end when the window opened.
pub struct Window<'a> {
    conn: &'a mut Connection,
    /// Each setting, and the value `postgresql.auto.conf` gave it before (`None`: it gave none).
    before: Vec<(String, Option<String>)>,
    log: PathBuf,
    prefix: String,
    start: i64,
    /// This session's pid and session id (`%p`, `%c`): its own lines are left out.
    own: (String, String),
    /// The settings are the window's, not yet set back.
    changed: bool,
}

impl<'a> Window<'a> {
    /// Reads the settings the window changes, and where the server's stderr log is.
    pub fn open(conn: &'a mut Connection, prefix: &str) -> Result<Self> {
        let text = |conn: &mut Connection, sql: &str| -> Result<Option<String>> {
            let rows = adhoc(conn, sql)?;
            Ok(if rows.is_empty() { None } else { rows.text(0, 0).ok().map(|t| t.into_owned()) })
        };
        let destination = text(conn, "SHOW log_destination")?.unwrap_or_default();
        if !destination.split(',').any(|d| d.trim() == "stderr") {
            bail!("the server logs to '{destination}', not stderr: capture reads the stderr log; add stderr to log_destination");
        }
        let log = match text(conn, "SELECT pg_current_logfile('stderr')")? {
            Some(f) => PathBuf::from(f),
            None => bail!(
                "the server does not say where its log is (logging_collector is off, its stderr goes elsewhere): turn \
                 logging_collector on, or capture a server dbvs manages"
            ),
        };
        Self::open_on(conn, log, prefix)
    }

    /// [`Window::open`] on a server whose stderr log is `log` (a managed server's own file);
    /// the log's current end is where the capture starts.
    pub fn open_on(conn: &'a mut Connection, log: PathBuf, prefix: &str) -> Result<Self> {
        Prefix::new(prefix).context("--log-prefix")?;
        let mut before = Vec::new();
        for (name, _) in settings(prefix) {
            let sql = format!(
                "SELECT setting FROM pg_settings WHERE name = '{name}' AND sourcefile LIKE '%postgresql.auto.conf'"
            );
            let rows = adhoc(conn, &sql).with_context(|| format!("cannot read the setting {name}"))?;
            before.push((
                name.to_string(),
                (!rows.is_empty()).then(|| rows.text(0, 0).map(|t| t.into_owned())).transpose()?,
            ));
        }
        let own = adhoc(
            conn,
            "SELECT pid::text, to_hex(trunc(extract(epoch FROM backend_start))::int) || '.' || to_hex(pid) \
             FROM pg_stat_activity WHERE pid = pg_backend_pid()",
        )?;
        let own = (own.text(0, 0)?.into_owned(), own.text(0, 1)?.into_owned());
        let start = file_size(conn, &log)?;
        Ok(Window { conn, before, log, prefix: prefix.to_string(), start, own, changed: false })
    }

    /// Turns the logging on.
    pub fn start(&mut self) -> Result<()> {
        for (name, value) in settings(&self.prefix) {
            exec(self.conn, &format!("ALTER SYSTEM SET {name} = '{value}'")).with_context(|| {
                format!("cannot set {name} (capture needs a superuser, to ALTER SYSTEM and read the log)")
            })?;
            self.changed = true;
        }
        self.reload()
    }

    fn reload(&mut self) -> Result<()> {
        adhoc(self.conn, RELOAD)?;
        // Every backend reads the new settings at its next statement; the server's own
        // processes within moments.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(())
    }

    /// The statements that set every setting back (before a reload).
    fn restore_sql(&self) -> Vec<String> {
        self.before
            .iter()
            .map(|(name, value)| match value {
                Some(v) => format!("ALTER SYSTEM SET {name} = '{}'", v.replace('\'', "''")),
                None => format!("ALTER SYSTEM RESET {name}"),
            })
            .collect()
    }

    /// Sets every setting back, if the window changed them.
    pub fn restore(&mut self) -> Result<()> {
        if !self.changed {
            return Ok(());
        }
        for sql in self.restore_sql() {
            exec(self.conn, &sql)?;
        }
        self.reload()?;
        self.changed = false;
        Ok(())
    }

    /// The same as [`Window::restore`], by `psql` on a connection of its own (a lease's step).
    pub fn restore_step(&self, reach: &Reach) -> Step {
        // Never a password prompt (-w): no one may be there to answer.
        let mut args: Vec<String> = ["-X", "-q", "-w", "-v", "ON_ERROR_STOP=1"].map(String::from).into();
        for sql in self.restore_sql().into_iter().chain([RELOAD.to_string()]) {
            args.extend(["-c".to_string(), sql]);
        }
        reach.step("psql", "postgresql-client", args, "PGPASSWORD", &[("PGCONNECT_TIMEOUT", "10")])
    }

    /// Copies what the window added to the log into `out`; returns the lines copied.
    pub fn copy(&mut self, out: &Path) -> Result<u64> {
        let end = file_size(self.conn, &self.log)?;
        copy_lines(self.conn, &self.log, (self.start, end), (&self.prefix, &self.own), out)
    }

    /// What the window changes, for the user.
    pub fn changes(&self) -> String {
        settings(&self.prefix).iter().map(|(n, v)| format!("{n} = '{v}'")).collect::<Vec<_>>().join(", ")
    }
}

const RELOAD: &str = "SELECT pg_reload_conf()";

fn file_size(conn: &mut Connection, log: &Path) -> Result<i64> {
    let sql = format!("SELECT size FROM pg_stat_file('{}')", log.display().to_string().replace('\'', "''"));
    Ok(adhoc(conn, &sql).with_context(|| format!("cannot see the server's log {}", log.display()))?.int(0, 0)?)
}

/// Copies the log's bytes in `range` into `out`: the lines behind `prefix`, and their
/// continuation lines, except those of the session `own` (its pid and session id).
fn copy_lines(
    conn: &mut Connection,
    log: &Path,
    (start, end): (i64, i64),
    (prefix, own): (&str, &(String, String)),
    out: &Path,
) -> Result<u64> {
    let prefix = Prefix::new(prefix)?;
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(out).with_context(|| format!("cannot write {}", out.display()))?);
    let (mut at, mut partial, mut keep, mut lines) = (start, Vec::<u8>::new(), false, 0u64);
    let path = log.display().to_string().replace('\'', "''");
    while at < end {
        let len = CHUNK.min(end - at);
        let sql = format!("SELECT encode(pg_read_binary_file('{path}', {at}, {len}), 'base64')");
        let chunk = adhoc(conn, &sql)?.text(0, 0)?.replace('\n', "");
        partial.extend(base64::Engine::decode(&base64::engine::general_purpose::STANDARD, chunk)?);
        at += len;
        let last_end = partial.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        for line in partial[..last_end].split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let text = String::from_utf8_lossy(line);
            if !text.starts_with('\t') {
                keep = prefix.line.captures(&text).is_some_and(|c| {
                    c.name("pid").is_none_or(|p| p.as_str() != own.0)
                        && c.name("session").is_none_or(|s| s.as_str() != own.1)
                });
            }
            if keep {
                file.write_all(line)?;
                file.write_all(b"\n")?;
                lines += 1;
            }
        }
        partial.drain(..last_end);
    }
    file.flush()?;
    Ok(lines)
}
