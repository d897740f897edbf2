//! PostgreSQL, on a server the user points at (`postgres://user@host:port/db`) or on a
//! private instance dbvs starts ([`super::managed_pg`]).
//!
//! The database named in the URL is the pristine one; each run gets
//! `CREATE DATABASE <db>_run_<pid> TEMPLATE <db>`, dropped afterwards. Builds go into
//! `<db>_building_<pid>` and are renamed when complete. The user needs CREATEDB.

use super::backup::BackupPlace;
use super::{valid_identifier, BuildMeta, Connection, Database, Keepalive, RunCopy, StagedBuild, Target, TargetInfo};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;

/// Where and as whom to connect. The password never comes from the command line.
#[derive(Clone)]
pub struct PgConnInfo {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub dbname: String,
}

impl std::fmt::Debug for PgConnInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "postgres://{}@{}:{}/{}", self.user, self.host, self.port, self.dbname)
    }
}

impl PgConnInfo {
    /// Parses `postgres://user@host[:port]/db`; a password in the URL is refused because
    /// command lines are visible to every user of the machine.
    pub fn parse(url: &str, password: Option<String>) -> Result<Self> {
        let u = super::parse_server_url(url, &["postgres", "postgresql"], 5432, "PGPASSWORD")?;
        Ok(Self { host: u.host, port: u.port, user: u.user, password, dbname: u.dbname })
    }

    /// The connection settings for database `dbname`, as the async driver takes them (the
    /// blocking one converts them).
    fn config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.host(&self.host).port(self.port).user(&self.user).dbname(dbname).application_name("dbvs");
        c.connect_timeout(std::time::Duration::from_secs(10));
        if let Some(p) = &self.password {
            c.password(p);
        }
        c
    }

    /// Runs statements one at a time on the maintenance database (CREATE/DROP DATABASE
    /// cannot share an implicit transaction).
    pub(crate) fn admin(&self, statements: &[String]) -> Result<()> {
        let mut c = self.connect("postgres")?;
        for s in statements {
            c.batch_execute(s)?;
        }
        Ok(())
    }

    /// libpq's variables for database `dbname` (the password too: the environment of a
    /// child, never its argv).
    pub(crate) fn client_env(&self, dbname: &str) -> Vec<(String, String)> {
        let mut env = vec![
            ("DBVS_ENGINE".to_string(), "postgres".to_string()),
            ("PGHOST".into(), self.host.clone()),
            ("PGPORT".into(), self.port.to_string()),
            ("PGUSER".into(), self.user.clone()),
            ("PGDATABASE".into(), dbname.into()),
        ];
        env.extend(self.password.clone().map(|p| ("PGPASSWORD".to_string(), p)));
        env
    }

    pub fn connect(&self, dbname: &str) -> Result<postgres::Client> {
        postgres::Config::from(self.config(dbname)).connect(postgres::NoTls).map_err(|e| {
            let why = e.as_db_error().map_or_else(|| format!("{e:#}"), |d| d.message().to_string());
            let fix = if why.contains("too many clients") {
                "use fewer --threads, or raise max_connections (--server-setting max_connections=N on a managed server)"
            } else {
                "check the server is running, the user, and PGPASSWORD"
            };
            anyhow::anyhow!(
                "cannot connect to PostgreSQL at {}:{} as {} (database {dbname}): {why}; {fix}",
                self.host,
                self.port,
                self.user
            )
        })
    }
}

/// A blocking connection (builds, checks, COPY) that keeps its settings, so a worker's
/// session can reopen it on the pipelining driver ([`super::sql`]).
pub struct PgConnection {
    pub client: postgres::Client,
    pub config: Box<tokio_postgres::Config>,
}

impl std::ops::Deref for PgConnection {
    type Target = postgres::Client;
    fn deref(&self) -> &postgres::Client {
        &self.client
    }
}

impl std::ops::DerefMut for PgConnection {
    fn deref_mut(&mut self) -> &mut postgres::Client {
        &mut self.client
    }
}

/// A deadlock or serialization failure (the transaction should be run again), by name.
pub fn conflict(code: Option<&::postgres::error::SqlState>) -> Option<&'static str> {
    use ::postgres::error::SqlState;
    match code {
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED => Some("deadlock"),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE => Some("serialization failure"),
        _ => None,
    }
}

pub struct PgTarget {
    info: PgConnInfo,
    location: String,
    server: Keepalive,
    backups: BackupPlace,
}

impl PgTarget {
    pub fn new(info: PgConnInfo, location: String, server: Keepalive, backups: BackupPlace) -> Self {
        Self { info, location, server, backups }
    }

    fn db(&self, name: String) -> PgDb {
        PgDb { info: self.info.clone(), name, _server: self.server.clone(), backups: self.backups.clone() }
    }

    /// Drops run copies and staging databases of killed dbvs processes.
    fn sweep(&self) -> Result<()> {
        let pattern = format!("{}\\_%", self.info.dbname);
        let rows = self
            .info
            .connect("postgres")?
            .query("SELECT datname FROM pg_database WHERE datname LIKE $1", &[&pattern])?;
        let dead = super::orphans(&self.info.host, &self.info.dbname, rows.iter().map(|r| r.get::<_, String>(0)));
        self.info.admin(&dead.iter().map(|d| format!("DROP DATABASE IF EXISTS {d} WITH (FORCE)")).collect::<Vec<_>>())
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self
            .info
            .connect("postgres")?
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])?
            .is_some())
    }
}

impl Target for PgTarget {
    fn managed(&self) -> super::Keepalive {
        self.server.clone()
    }

    fn info(&self) -> TargetInfo {
        TargetInfo { engine: super::Engine::Postgres, location: self.location.clone(), encrypted: false }
    }

    fn versions(&self) -> Result<BTreeMap<String, String>> {
        let v: String = self.info.connect("postgres")?.query_one("SHOW server_version", &[])?.get(0);
        // Which client ran matters to a reader comparing with another tool's figures.
        let client =
            "dbvs's own; statements whose counts or rows are not used are pipelined with the next statement, one Sync each pipeline";
        Ok(BTreeMap::from([("postgresql".to_string(), v), ("postgresql client".to_string(), client.to_string())]))
    }

    fn pristine(&self) -> Result<Option<BuildMeta>> {
        if !self.exists(&self.info.dbname)? {
            return Ok(None);
        }
        let mut conn = self.db(self.info.dbname.clone()).connect()?;
        match super::read_meta(&mut conn)? {
            Some(meta) => Ok(Some(meta)),
            None => bail!(
                "database {} exists but was not built by dbvs; drop it or name another database in the target URL",
                self.info.dbname
            ),
        }
    }

    fn stage_build(&self) -> Result<Box<dyn StagedBuild>> {
        self.sweep()?;
        let name = format!("{}_building_{}", self.info.dbname, std::process::id());
        self.info
            .admin(&[format!("DROP DATABASE IF EXISTS {name}"), format!("CREATE DATABASE {name}")])
            .with_context(|| format!("cannot create database {name}; does {} have CREATEDB?", self.info.user))?;
        Ok(Box::new(Staged { db: self.db(name), dest: self.info.dbname.clone() }))
    }

    fn diagnostics(&self) -> Option<String> {
        self.server.as_ref().map(|s| format!("server log: {}", s.log_tail()))
    }

    fn pristine_files(&self) -> Vec<std::path::PathBuf> {
        self.server.iter().map(|s| s.data_dir()).collect()
    }

    fn watch(&self) -> super::Watch {
        super::Watch::server(&self.server)
    }

    fn existing(&self) -> Result<Box<dyn Database>> {
        Ok(Box::new(self.db(self.info.dbname.clone())))
    }

    fn fresh_copy(&self) -> Result<Box<dyn RunCopy>> {
        self.sweep()?;
        let name = format!("{}_run_{}{}", self.info.dbname, std::process::id(), super::copy_suffix('_'));
        let copy = Copied(self.db(name.clone()));
        self.info
            .admin(&[
                format!("DROP DATABASE IF EXISTS {name}"),
                format!("CREATE DATABASE {name} TEMPLATE {}", self.info.dbname),
            ])
            .with_context(|| {
                format!("cannot copy database {} for the run (is someone connected to it?)", self.info.dbname)
            })?;
        Ok(Box::new(copy))
    }
}

struct PgDb {
    info: PgConnInfo,
    name: String,
    _server: Keepalive,
    backups: BackupPlace,
}

impl PgDb {
    fn drop_database(&self) -> Result<()> {
        self.info.admin(&[format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)])
    }
}

impl Database for PgDb {
    fn connect(&self) -> Result<Connection> {
        let client = self.info.connect(&self.name)?;
        Ok(Connection::Postgres(PgConnection { client, config: Box::new(self.info.config(&self.name)) }))
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        Ok(self.info.client_env(&self.name))
    }
    fn go_cold(&self) -> Result<()> {
        super::go_cold_on(&self._server)
    }
    fn backup(&self, name: &str) -> Result<std::path::PathBuf> {
        let dest = self.backups.file(name);
        match &self._server {
            Some(s) => super::backup::pg_basebackup(&self.backups, &self.info, &dest, s.cgroups())?,
            None => super::backup::pg_dump(&self.backups, &self.info, &self.name, &dest)?,
        }
        Ok(dest)
    }
}

struct Staged {
    db: PgDb,
    dest: String,
}

impl Database for Staged {
    fn connect(&self) -> Result<Connection> {
        self.db.connect()
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        self.db.client_env()
    }
}

impl StagedBuild for Staged {
    fn publish(self: Box<Self>) -> Result<()> {
        let (from, to) = (&self.db.name, &self.dest);
        self.db
            .info
            .admin(&[
                format!("DROP DATABASE IF EXISTS {to} WITH (FORCE)"),
                format!("ALTER DATABASE {from} RENAME TO {to}"),
            ])
            .with_context(|| format!("cannot rename {from} to {to}"))?;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // After a publish the staging name no longer exists, so this is a no-op then.
        let _ = self.db.drop_database();
    }
}

struct Copied(PgDb);

impl Database for Copied {
    fn connect(&self) -> Result<Connection> {
        self.0.connect()
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        self.0.client_env()
    }
    fn go_cold(&self) -> Result<()> {
        self.0.go_cold()
    }
    fn backup(&self, name: &str) -> Result<std::path::PathBuf> {
        self.0.backup(name)
    }
}

impl RunCopy for Copied {
    /// `CREATE DATABASE ... TEMPLATE` writes the whole copy through the WAL; without a
    /// checkpoint now, the server would write it all out again during the measured window.
    fn settle(&self) -> Result<()> {
        match self.0.info.admin(&["CHECKPOINT".into()]) {
            Err(e) if format!("{e:#}").contains("permission denied") || format!("{e:#}").contains("must be") => {
                eprintln!(
                    "warning: cannot CHECKPOINT after copying the database ({e:#}); grant pg_checkpoint to the user, \
                     or the copy's writes may fall into the measured window"
                );
                Ok(())
            }
            other => other.context("cannot CHECKPOINT after copying the database"),
        }
    }

    fn keep(self: Box<Self>, dest: &str) -> Result<()> {
        if !valid_identifier(dest) {
            bail!("--keep-db for PostgreSQL takes a database name (letters, digits, _), got '{dest}'");
        }
        self.0.info.admin(&[
            format!("DROP DATABASE IF EXISTS {dest} WITH (FORCE)"),
            format!("ALTER DATABASE {} RENAME TO {dest}", self.0.name),
        ])
    }
}

impl Drop for Copied {
    fn drop(&mut self) {
        let _ = self.0.drop_database();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_passwords_stay_out_of_them() {
        let c = PgConnInfo::parse("postgres://bench@db1:6543/ds2", Some("s3cret".into())).unwrap();
        assert_eq!((c.host.as_str(), c.port, c.user.as_str(), c.dbname.as_str()), ("db1", 6543, "bench", "ds2"));
        assert_eq!(format!("{c:?}"), "postgres://bench@db1:6543/ds2");
        assert_eq!(PgConnInfo::parse("postgresql://u@h/d", None).unwrap().port, 5432);
        let e = PgConnInfo::parse("postgres://u:pw@h/d", None).unwrap_err().to_string();
        assert!(e.contains("PGPASSWORD"), "{e}");
        for bad in ["postgres://h/d", "postgres://u@h", "postgres://u@h:x/d", "postgres://u@h/d;drop"] {
            assert!(PgConnInfo::parse(bad, None).is_err(), "{bad}");
        }
    }
}
