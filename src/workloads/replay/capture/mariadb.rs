//! A MariaDB server's window: the general query log turned on with the table among its
//! outputs (`SET GLOBAL`, so no restart), and at the end the window's rows of
//! `mysql.general_log` copied out as a general query log in MySQL's form, whose times keep
//! their microseconds (MariaDB's own log file has seconds). The rows stay in the table (a
//! CSV file in the server's data directory), and where the server already logged to a
//! file, the window's statements go there too.

use super::Reach;
use crate::sys::lease::Step;
use crate::targets::sql::{adhoc, exec};
use crate::targets::Connection;
use anyhow::{bail, Context, Result};
use mysql::prelude::Queryable;
use std::io::Write;
use std::path::Path;

/// The server's logging as it was, and the window's start.
pub struct Window<'a> {
    conn: &'a mut Connection,
    /// `general_log` and `log_output` as they were.
    before: (String, String),
    /// The window's start, to the microsecond, in UTC.
    start: String,
    /// This session's thread id: its own rows are left out.
    own: u64,
    /// The settings are the window's, not yet set back.
    changed: bool,
    /// When they were set back: the window's end.
    end: Option<String>,
}

impl<'a> Window<'a> {
    /// Reads the logging settings the window changes, and its start.
    pub fn open(conn: &'a mut Connection) -> Result<Self> {
        // Times in UTC, to the microsecond, whatever the server's zone.
        exec(conn, "SET time_zone = '+00:00'")?;
        let state = adhoc(conn, "SELECT @@global.general_log, @@global.log_output, CONNECTION_ID()")?;
        let before = (state.text(0, 0)?.into_owned(), state.text(0, 1)?.into_owned());
        let own = state.int(0, 2)? as u64;
        let start = now(conn)?;
        Ok(Window { conn, before, start, own, changed: false, end: None })
    }

    /// Turns the general log on, into the table too.
    pub fn start(&mut self) -> Result<()> {
        for (name, value) in self.settings() {
            exec(self.conn, &format!("SET GLOBAL {name} = '{value}'")).with_context(|| {
                format!(
                    "cannot set {name} (capture needs the SUPER privilege, to SET GLOBAL and read mysql.general_log)"
                )
            })?;
            self.changed = true;
        }
        Ok(())
    }

    /// What the window sets: the general log on, with the table among its outputs.
    fn settings(&self) -> [(&'static str, String); 2] {
        let mut outputs: Vec<&str> = self.before.1.split(',').filter(|o| *o != "NONE" && !o.is_empty()).collect();
        if !outputs.contains(&"TABLE") {
            outputs.push("TABLE");
        }
        [("log_output", outputs.join(",")), ("general_log", "ON".into())]
    }

    /// What the window changes, for the user.
    pub fn changes(&self) -> String {
        self.settings().iter().map(|(n, v)| format!("{n} = '{v}'")).collect::<Vec<_>>().join(", ")
    }

    /// The statements that set the logging back.
    fn restore_sql(&self) -> [String; 2] {
        let (general, output) = &self.before;
        [format!("SET GLOBAL general_log = {general}"), format!("SET GLOBAL log_output = '{output}'")]
    }

    /// Sets the logging back, if the window changed it; the window ends here.
    pub fn restore(&mut self) -> Result<()> {
        if !self.changed {
            return Ok(());
        }
        self.end = Some(now(self.conn)?);
        for sql in self.restore_sql() {
            exec(self.conn, &sql)?;
        }
        self.changed = false;
        Ok(())
    }

    /// The same as [`Window::restore`], by the `mariadb` client on a connection of its own
    /// (a lease's step).
    pub fn restore_step(&self, reach: &Reach) -> Step {
        let var = |k: &str| crate::targets::env_value(&reach.env, k).to_string();
        // Where the server is, from the window alone: an option file of whoever carries the
        // lease out must not send it elsewhere.
        let args = [
            "--no-defaults".to_string(),
            "--batch".into(),
            "--protocol=TCP".into(),
            format!("--host={}", var("MYSQL_HOST")),
            format!("--port={}", var("MYSQL_TCP_PORT")),
            format!("--user={}", var("MYSQL_USER")),
            "--connect-timeout=10".into(),
            "-e".into(),
            self.restore_sql().join("; "),
        ];
        reach.step("mariadb", "mariadb-client", args.into(), "MYSQL_PWD", &[])
    }

    /// Writes the window's rows of the log into `out`; returns the lines written.
    pub fn copy(&mut self, out: &Path) -> Result<u64> {
        let end = match self.end.clone() {
            Some(end) => end,
            None => now(self.conn)?,
        };
        let Connection::MySql(c) = &mut *self.conn else { bail!("a MariaDB window on another engine's connection") };
        let sql = format!(
            "SELECT DATE_FORMAT(event_time, '%Y-%m-%dT%H:%i:%s.%fZ'), thread_id, command_type, argument \
             FROM mysql.general_log WHERE event_time >= '{}' AND event_time <= '{end}' AND thread_id <> {}",
            self.start, self.own
        );
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(out).with_context(|| format!("cannot write {}", out.display()))?,
        );
        let mut lines = 0u64;
        for row in c.conn()?.query_iter(sql).context("cannot read mysql.general_log")? {
            let (time, thread, command, argument): (String, u64, String, Vec<u8>) = mysql::from_row(row?);
            writeln!(file, "{time}\t{thread:>6} {command}\t{}", String::from_utf8_lossy(&argument))?;
            lines += 1;
        }
        file.flush()?;
        Ok(lines)
    }
}

/// The server's time, to the microsecond (in UTC: the window's session is set so).
fn now(conn: &mut Connection) -> Result<String> {
    Ok(adhoc(conn, "SELECT DATE_FORMAT(NOW(6), '%Y-%m-%d %H:%i:%s.%f')")?.text(0, 0)?.into_owned())
}
