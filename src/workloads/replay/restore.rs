//! The pristine database of a replay: the user's own, restored once from their dump into
//! the empty database a build gets, by the engine's own client (`psql` for a plain
//! `pg_dump`, `pg_restore` for its custom format, `mariadb` for what `mariadb-dump` or
//! `mysqldump` wrote), or from their data directory by way of a dump of a private copy
//! ([`crate::targets::data_copy`]). Each run then gets a fresh copy of it, as for every
//! workload.

use crate::targets::{Database, Engine};
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// pg_dump's custom format starts with these bytes.
const CUSTOM_FORMAT: &[u8] = b"PGDMP";

/// Restores `dump` into `db`, an empty database on `engine`. A directory is a data
/// directory (a stopped server's, or a base backup): its database `database` (or its only
/// one) is dumped from a private copy first.
pub fn restore(dump: &Path, db: &dyn Database, engine: Engine, database: Option<&str>) -> Result<()> {
    if dump.is_dir() {
        crate::targets::data_copy::dump(dump, engine, database, |file| {
            restore_file(file, db, engine).with_context(|| {
                format!("cannot restore the database taken out of the data directory {}", dump.display())
            })
        })?;
        return Ok(());
    }
    restore_file(dump, db, engine)
}

fn restore_file(dump: &Path, db: &dyn Database, engine: Engine) -> Result<()> {
    let env = db.client_env()?;
    let var = |k: &str| crate::targets::env_value(&env, k);
    let mut cmd = match engine {
        Engine::Postgres if custom_format(dump)? => {
            let mut c = Command::new(crate::sys::require("pg_restore", "postgresql-client")?);
            c.args(["--no-owner", "--no-privileges", "--exit-on-error", "--dbname", var("PGDATABASE")]).arg(dump);
            c.stdin(Stdio::null());
            c
        }
        Engine::Postgres => {
            let mut c = Command::new(crate::sys::require("psql", "postgresql-client")?);
            c.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-f"]).arg(dump);
            c.stdin(Stdio::null());
            c
        }
        Engine::Mariadb => {
            // The client reads the host, port and password from the environment; the dump
            // goes in on stdin, into the database given (a dump of one database names none).
            let mut c = Command::new(crate::sys::require("mariadb", "mariadb-client")?);
            c.args(["--batch", "--protocol=TCP", "--user", var("MYSQL_USER"), var("MYSQL_DATABASE")]);
            let file = std::fs::File::open(dump).with_context(|| format!("cannot open the dump {}", dump.display()))?;
            c.stdin(file);
            c
        }
        other => bail!("a replay restores PostgreSQL and MariaDB dumps; the target is {other}"),
    };
    cmd.envs(env.iter().map(|(k, v)| (k, v))).stdout(Stdio::null());
    let out = cmd.output().with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let last = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        bail!(
            "restoring the dump {} failed ({}): {last}: is it a dump of this engine's database, made by its own dump tool?",
            dump.display(),
            out.status
        );
    }
    Ok(())
}

/// Whether `dump` is in pg_dump's custom format (else plain SQL).
fn custom_format(dump: &Path) -> Result<bool> {
    let mut head = [0u8; 5];
    let mut f = std::fs::File::open(dump).with_context(|| format!("cannot open the dump {}", dump.display()))?;
    let n = f.read(&mut head)?;
    Ok(head[..n] == *CUSTOM_FORMAT)
}
