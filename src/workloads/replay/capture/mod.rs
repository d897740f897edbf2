//! `dbvs capture`: a replay's log, from a server, for a window: logging of every statement
//! turned on, the traffic run (or waited for), every setting set back as it was, and what
//! the window logged copied out through SQL, so it works on a server on another host. The
//! capture's own session is left out. Each engine has its own window ([`postgres`],
//! [`mariadb`]).
//!
//! The settings are set back on every exit: by the window on errors and Ctrl-C, and, should
//! dbvs be killed (SIGKILL included), by a lease that runs the engine's client (dbvs's
//! watchdog at once, else the next dbvs command or `dbvs cleanup`).

pub mod mariadb;
pub mod postgres;

pub use postgres::PREFIX;

use crate::sys::lease::{Lease, Step};
use crate::targets::{Connection, Engine};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// How the engine's client reaches the server, to set it back without dbvs: the client's
/// variables ([`crate::targets::Database::client_env`]) with the password left out, which a
/// lease must never hold, and the file it is read from, if the user gave one.
pub struct Reach {
    pub env: Vec<(String, String)>,
    pub password_file: Option<PathBuf>,
}

impl Reach {
    /// The password file's path is made absolute: a later `dbvs cleanup` may run elsewhere.
    pub fn new(env: &[(String, String)], password_file: Option<PathBuf>) -> Result<Self> {
        let secret = |k: &str| matches!(k, "PGPASSWORD" | "MYSQL_PWD");
        let password_file = password_file.map(std::path::absolute).transpose()?;
        Ok(Reach { env: env.iter().filter(|(k, _)| !secret(k)).cloned().collect(), password_file })
    }

    /// A lease's step that runs `program` with `args` against the server, `more_env` beside
    /// the client's variables.
    fn step(
        &self,
        program: &str,
        package: &str,
        args: Vec<String>,
        password_var: &str,
        more_env: &[(&str, &str)],
    ) -> Step {
        let more = more_env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Step::RunTool {
            program: program.into(),
            package: package.into(),
            args,
            env: self.env.iter().cloned().chain(more).collect(),
            password: self.password_file.clone().map(|f| (password_var.to_string(), f)),
        }
    }
}

/// One engine's window.
enum Server<'a> {
    Postgres(postgres::Window<'a>),
    Mariadb(mariadb::Window<'a>),
}

/// Logging turned on for a window, set back when closed or dropped.
pub struct Window<'a> {
    server: Server<'a>,
    lease: Lease,
}

impl<'a> Window<'a> {
    /// Turns the logging on, once the lease that sets it back is written. A PostgreSQL
    /// server's lines go behind `prefix`, into its stderr log, which is `log` on a server
    /// dbvs manages (else the server says where).
    pub fn open(conn: &'a mut Connection, reach: &Reach, log: Option<PathBuf>, prefix: &str) -> Result<Self> {
        let server = match conn.engine() {
            Engine::Mariadb => Server::Mariadb(mariadb::Window::open(conn)?),
            _ => Server::Postgres(match log {
                Some(log) => postgres::Window::open_on(conn, log, prefix)?,
                None => postgres::Window::open(conn, prefix)?,
            }),
        };
        let mut lease = Lease::new("a capture's logging settings on its server")?;
        lease.push(match &server {
            Server::Postgres(w) => w.restore_step(reach),
            Server::Mariadb(w) => w.restore_step(reach),
        })?;
        let mut window = Window { server, lease };
        match &mut window.server {
            Server::Postgres(w) => w.start()?,
            Server::Mariadb(w) => w.start()?,
        }
        Ok(window)
    }

    /// What the window changed, for the user.
    pub fn changes(&self) -> String {
        match &self.server {
            Server::Postgres(w) => w.changes(),
            Server::Mariadb(w) => w.changes(),
        }
    }

    /// Sets everything back on the window's own connection; the lease is then done.
    fn restore(&mut self) -> Result<()> {
        match &mut self.server {
            Server::Postgres(w) => w.restore()?,
            Server::Mariadb(w) => w.restore()?,
        }
        self.lease.forget(|_| true)
    }

    /// Sets everything back, and copies what the window logged into `out`; returns the lines
    /// copied.
    pub fn close(mut self, out: &Path) -> Result<u64> {
        self.restore()?;
        match &mut self.server {
            Server::Postgres(w) => w.copy(out),
            Server::Mariadb(w) => w.copy(out),
        }
    }
}

impl Drop for Window<'_> {
    /// On errors and Ctrl-C. Should the window's connection fail to set the settings back,
    /// the lease (dropped next) tries again with the engine's client, and is kept if that
    /// fails too.
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("warning: could not set the server's logging back on the capture's connection: {e:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_that_sets_a_server_back_holds_no_password() {
        let env: Vec<(String, String)> = [("PGHOST", "db"), ("PGPASSWORD", "hunter2"), ("MYSQL_PWD", "hunter2")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let reach = Reach::new(&env, Some("/secrets/pw".into())).unwrap();
        let step = reach.step("psql", "postgresql-client", vec!["-c".into(), "SELECT 1".into()], "PGPASSWORD", &[]);
        let written = serde_json::to_string(&step).unwrap();
        assert!(!written.contains("hunter2"), "{written}");
        assert!(written.contains("PGHOST") && written.contains("/secrets/pw"), "{written}");
    }
}
