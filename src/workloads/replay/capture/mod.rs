//! `dbvs capture`: a replay's log, from a server, for a window: logging of every statement
//! turned on, the traffic run (or waited for), every setting set back as it was (on errors
//! and Ctrl-C too), and what the window logged copied out through SQL, so it works on a
//! server on another host. The capture's own session is left out. Each engine has its own
//! window ([`postgres`], [`mariadb`]).

pub mod mariadb;
pub mod postgres;

pub use postgres::PREFIX;

use crate::targets::{Connection, Engine};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Logging turned on for a window, set back when closed or dropped.
pub enum Window<'a> {
    Postgres(postgres::Window<'a>),
    Mariadb(mariadb::Window<'a>),
}

impl<'a> Window<'a> {
    /// Turns the logging on. A PostgreSQL server's lines go behind `prefix`, into its
    /// stderr log, which is `log` on a server dbvs manages (else the server says where).
    pub fn open(conn: &'a mut Connection, log: Option<PathBuf>, prefix: &str) -> Result<Self> {
        Ok(match conn.engine() {
            Engine::Mariadb => Window::Mariadb(mariadb::Window::open(conn)?),
            _ => Window::Postgres(match log {
                Some(log) => postgres::Window::open_on(conn, log, prefix)?,
                None => postgres::Window::open(conn, prefix)?,
            }),
        })
    }

    /// What the window changed, for the user.
    pub fn changes(&self) -> String {
        match self {
            Window::Postgres(w) => w.changes(),
            Window::Mariadb(w) => w.changes(),
        }
    }

    /// Sets everything back, and copies what the window logged into `out`; returns the lines
    /// copied.
    pub fn close(self, out: &Path) -> Result<u64> {
        match self {
            Window::Postgres(w) => w.close(out),
            Window::Mariadb(w) => w.close(out),
        }
    }
}
