//! A MariaDB server's window: the general query log turned on with the table among its
//! outputs (`SET GLOBAL`, so no restart), and at the end the window's rows of
//! `mysql.general_log` copied out as a general query log in MySQL's form, whose times keep
//! their microseconds (MariaDB's own log file has seconds). The rows stay in the table (a
//! CSV file in the server's data directory), and where the server already logged to a
//! file, the window's statements go there too.

use crate::targets::sql::{adhoc, exec};
use crate::targets::Connection;
use anyhow::{bail, Context, Result};
use mysql::prelude::Queryable;
use std::io::Write;
use std::path::Path;

/// The server's logging as it was, put back when dropped.
pub struct Window<'a> {
    conn: &'a mut Connection,
    /// `general_log` and `log_output` as they were.
    before: (String, String),
    /// The window's start, to the microsecond, in UTC.
    start: String,
    /// This session's thread id: its own rows are left out.
    own: u64,
    restored: bool,
}

impl<'a> Window<'a> {
    /// Turns the general log on, into the table too.
    pub fn open(conn: &'a mut Connection) -> Result<Self> {
        // Times in UTC, to the microsecond, whatever the server's zone.
        exec(conn, "SET time_zone = '+00:00'")?;
        let now = adhoc(
            conn,
            "SELECT @@global.general_log, @@global.log_output, DATE_FORMAT(NOW(6), '%Y-%m-%d %H:%i:%s.%f'), CONNECTION_ID()",
        )?;
        let before = (now.text(0, 0)?.into_owned(), now.text(0, 1)?.into_owned());
        let (start, own) = (now.text(0, 2)?.into_owned(), now.int(0, 3)? as u64);
        let w = Window { conn, before, start, own, restored: false };
        for (name, value) in w.settings() {
            exec(w.conn, &format!("SET GLOBAL {name} = '{value}'")).with_context(|| {
                format!(
                    "cannot set {name} (capture needs the SUPER privilege, to SET GLOBAL and read mysql.general_log)"
                )
            })?;
        }
        Ok(w)
    }

    /// What the window sets: the general log on, with the table among its outputs.
    fn settings(&self) -> [(&'static str, String); 2] {
        let mut outputs: Vec<&str> = self.before.1.split(',').filter(|o| *o != "NONE" && !o.is_empty()).collect();
        if !outputs.contains(&"TABLE") {
            outputs.push("TABLE");
        }
        [("log_output", outputs.join(",")), ("general_log", "ON".into())]
    }

    /// What the window changed, for the user.
    pub fn changes(&self) -> String {
        self.settings().iter().map(|(n, v)| format!("{n} = '{v}'")).collect::<Vec<_>>().join(", ")
    }

    fn restore(&mut self) -> Result<()> {
        let (general, output) = self.before.clone();
        exec(self.conn, &format!("SET GLOBAL general_log = {general}"))?;
        exec(self.conn, &format!("SET GLOBAL log_output = '{output}'"))?;
        self.restored = true;
        Ok(())
    }

    /// Sets everything back, and writes the window's rows of the log into `out`; returns
    /// the lines written.
    pub fn close(mut self, out: &Path) -> Result<u64> {
        let end = adhoc(self.conn, "SELECT DATE_FORMAT(NOW(6), '%Y-%m-%d %H:%i:%s.%f')")?.text(0, 0)?.into_owned();
        self.restore()?;
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
        for row in c.query_iter(sql).context("cannot read mysql.general_log")? {
            let (time, thread, command, argument): (String, u64, String, Vec<u8>) = mysql::from_row(row?);
            writeln!(file, "{time}\t{thread:>6} {command}\t{}", String::from_utf8_lossy(&argument))?;
            lines += 1;
        }
        file.flush()?;
        Ok(lines)
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        if !self.restored {
            if let Err(e) = self.restore() {
                eprintln!(
                    "warning: could not set the server's logging back ({e:#}): SET GLOBAL general_log = {}, \
                     log_output = '{}'",
                    self.before.0, self.before.1
                );
            }
        }
    }
}
