//! Targets: the database engines dbvs measures, and how a run gets a database on them.
//!
//! A run must start from the same state every time, as the seed studies restored a backup
//! before each run. So a target keeps one *pristine* database per workload build and hands
//! each run a *fresh copy* that is thrown away afterwards. Builds go into a staging database
//! that only becomes the pristine once complete, so an interrupted build never looks done.

pub mod backup;
pub mod data_copy;
pub mod galera;
pub mod managed_maria;
pub mod managed_pg;
pub mod mysql;
pub mod postgres;
pub mod settings;
pub mod spec;
pub mod sql;
pub mod sqlite;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use spec::{Binaries, TargetSpec};

/// An open connection to an engine. Only `targets/` matches on it; workloads go through
/// the [`sql`] seam.
pub enum Connection {
    Sqlite(sqlite::SqliteConnection),
    Postgres(postgres::PgConnection),
    MySql(mysql::MyConnection),
}

impl Connection {
    pub fn engine(&self) -> Engine {
        match self {
            Connection::Sqlite(_) => Engine::Sqlite,
            Connection::Postgres(_) => Engine::Postgres,
            Connection::MySql(_) => Engine::Mariadb,
        }
    }
}

/// The database engines dbvs drives, spelled the same in study files, records and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Embedded SQLite (with SQLCipher compiled in).
    #[default]
    Sqlite,
    Postgres,
    Mariadb,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
            Engine::Mariadb => "mariadb",
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a report says about the target.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetInfo {
    pub engine: Engine,
    pub location: String,
    pub encrypted: bool,
}

/// Facts a build records inside the database (workload, size, seed, initial row counts),
/// so a later run can check it is running against what it thinks it is.
pub type BuildMeta = BTreeMap<String, String>;

/// A database engine plus where its pristine database lives.
pub trait Target: Send + Sync {
    fn info(&self) -> TargetInfo;
    /// Engine and crypto library versions, for the report's system-under-test section.
    fn versions(&self) -> Result<BTreeMap<String, String>>;
    /// The pristine database's build metadata, or `None` when nothing has been built yet.
    fn pristine(&self) -> Result<Option<BuildMeta>>;
    /// An empty database to build into. Dropping it without `publish` discards it.
    fn stage_build(&self) -> Result<Box<dyn StagedBuild>>;
    /// A fresh copy of the pristine database for one run. Dropping it deletes it.
    fn fresh_copy(&self) -> Result<Box<dyn RunCopy>>;
    /// The database the target names, as it is (a pristine or a kept run), for `dbvs check`.
    fn existing(&self) -> Result<Box<dyn Database>>;
    /// What the engine itself says, to explain a failed run (a managed server's log).
    fn diagnostics(&self) -> Option<String> {
        None
    }
    /// What a fresh copy reads: the pristine database's file, or a managed server's pristine
    /// data directory. A run under a memory limit reads them in before it joins the limit.
    fn pristine_files(&self) -> Vec<PathBuf> {
        vec![]
    }
    /// What telemetry watches for this target: its data's directories and, for a server
    /// dbvs runs, the server's pid file.
    fn watch(&self) -> Watch;
    /// The server dbvs runs for this target, if it does.
    fn managed(&self) -> Keepalive {
        None
    }
}

/// See [`Target::watch`].
pub struct Watch {
    /// Each volume the database writes to, by role ("data", "log"), with a directory on it.
    pub volumes: Vec<(String, PathBuf)>,
    /// The managed server's pid files: one, or a cluster's, one per node.
    pub server_pid_files: Vec<PathBuf>,
    /// Why server CPU is not measured, when it is not.
    pub note: &'static str,
}

impl Watch {
    /// A server: measured when dbvs manages it.
    pub(crate) fn server(server: &Keepalive) -> Self {
        match server {
            Some(s) => {
                let log = s.log_dir().map(|l| ("log".to_string(), l));
                let volumes = std::iter::once(("data".to_string(), s.data_dir())).chain(log).collect();
                Watch { volumes, server_pid_files: s.pid_files(), note: "" }
            }
            None => Watch {
                volumes: vec![],
                server_pid_files: vec![],
                note: "not measured: dbvs does not manage this server",
            },
        }
    }

    /// What several targets that share a run (an interleaved run's sides) have between them:
    /// every volume once and every server's pid files; the first one's note.
    pub fn merged(all: &[Watch]) -> Watch {
        let mut volumes = Vec::new();
        for v in all.iter().flat_map(|w| &w.volumes) {
            if !volumes.contains(v) {
                volumes.push(v.clone());
            }
        }
        let server_pid_files = all.iter().flat_map(|w| w.server_pid_files.iter().cloned()).collect();
        Watch { volumes, server_pid_files, note: all.first().map_or("", |w| w.note) }
    }
}

/// A server process dbvs started. Kept alive by every database handed out from it, and
/// stopped when the last one goes.
pub trait ManagedServer: Send + Sync {
    /// The last lines of the server's log, to explain a failure.
    fn log_tail(&self) -> String;
    /// Stops and starts the server on the same data and port: its caches start empty.
    fn restart(&self) -> Result<()>;
    /// The data directory it serves now (a run's copy, for managed MariaDB).
    fn data_dir(&self) -> PathBuf;
    /// Where its write-ahead log lives (PostgreSQL's WAL, MariaDB's redo log), when that is
    /// not inside the data directory.
    fn log_dir(&self) -> Option<PathBuf>;
    /// The control groups it runs in (a variant's limits), which its backup tool joins too:
    /// the seed's server backed up inside its one-core VM.
    fn cgroups(&self) -> &[PathBuf] {
        &[]
    }
    /// The file its stderr log goes to, when it goes to one dbvs chose.
    fn stderr_log(&self) -> Option<PathBuf> {
        None
    }
    /// The file holding the server's process id.
    fn pid_file(&self) -> PathBuf {
        self.data_dir().join("postmaster.pid")
    }
    /// Every process the server is made of, by pid file: a cluster has one per node.
    fn pid_files(&self) -> Vec<PathBuf> {
        vec![self.pid_file()]
    }
}

/// The server behind a target, when dbvs manages it.
pub type Keepalive = Option<std::sync::Arc<dyn ManagedServer>>;

/// A concrete database that can be connected to.
pub trait Database: Send + Sync {
    fn connect(&self) -> Result<Connection>;
    /// A connection for a session that runs on a client of its own (a workload's worker, a
    /// replayed session): [`Database::connect`]'s, except that on MariaDB, whose sessions run
    /// on dbvs's own client, the `mysql` crate's connection opens only if something needs it,
    /// so a session connects once.
    fn connect_session(&self) -> Result<Connection> {
        self.connect()
    }
    /// Empties the caches in front of the database: the OS page cache, and a managed
    /// server's own buffers (by restarting it). Connections must be reopened afterwards.
    fn go_cold(&self) -> Result<()> {
        crate::sys::drop_caches()
    }
    /// Takes the engine's native online backup ([`backup`]) into a file beside the
    /// database and returns its path; the caller removes it.
    fn backup(&self, _name: &str) -> Result<PathBuf> {
        bail!("this database cannot be backed up")
    }
    /// The environment a client program (a user's benchmark) needs to reach this database:
    /// libpq's `PGHOST`..., MariaDB's `MYSQL_HOST`..., or the SQLite file's path; the
    /// engine's name is in `DBVS_ENGINE`.
    fn client_env(&self) -> Result<Vec<(String, String)>>;
}

/// The value of `key` in a client environment ([`Database::client_env`]), empty when unset.
pub fn env_value<'a>(env: &'a [(String, String)], key: &str) -> &'a str {
    env.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
}

/// [`Database::go_cold`] for a database on a server dbvs may manage.
pub(crate) fn go_cold_on(server: &Keepalive) -> Result<()> {
    if let Some(s) = server {
        s.restart()?;
    }
    crate::sys::drop_caches()
}

pub trait StagedBuild: Database {
    /// Atomically makes the finished build the target's pristine database.
    fn publish(self: Box<Self>) -> Result<()>;
}

pub trait RunCopy: Database {
    /// Keeps the run's database as `dest` (a file path for SQLite, a database name on a
    /// server) instead of deleting it, for inspection.
    fn keep(self: Box<Self>, dest: &str) -> Result<()>;
    /// Writes out what making the copy left dirty inside the engine, so the measured window
    /// does not pay for it (the seeds restored, then idled before each run).
    fn settle(&self) -> Result<()> {
        Ok(())
    }
}

/// Everything besides the target spec that decides how to reach a target.
#[derive(Default)]
pub struct TargetOptions {
    pub key: Option<sqlite::Key>,
    pub cipher_pragmas: Vec<sqlite::CipherPragma>,
    /// Server password (from `PGPASSWORD`, `MYSQL_PWD` or a password file; never argv).
    pub password: Option<String>,
    /// Data directory of a managed server.
    pub data_dir: Option<PathBuf>,
    /// A managed server's write-ahead log (WAL, redo log) in this directory, on storage of
    /// its own, instead of inside the data directory.
    pub log_dir: Option<PathBuf>,
    pub server_settings: Vec<(String, String)>,
    /// SQLite's pragmas (see `settings`).
    pub pragmas: Vec<(String, String)>,
    /// The control groups a managed server joins (a study variant's limits) and the CPUs it
    /// runs on.
    pub server_place: crate::sys::Placement,
    /// Database name on managed servers, derived from the workload's build identity.
    pub default_db: String,
    /// A managed server also listens on this address of this machine, for client hosts
    /// (`--clients`), and asks them for a password.
    pub listen: Option<String>,
}

/// Opens the target a spec names. A managed server is started here and stops when the
/// target (and every database handed out by it) is dropped.
pub fn open(spec: &TargetSpec, opts: TargetOptions) -> Result<Box<dyn Target>> {
    if opts.listen.is_some() && !matches!(spec, TargetSpec::ManagedPostgres(_)) {
        bail!(
            "--listen applies to managed-postgres (your own server listens where you configured it; a managed \
             MariaDB listens on loopback only)"
        );
    }
    if opts.log_dir.is_some() && !matches!(spec, TargetSpec::ManagedMariadb(_) | TargetSpec::ManagedPostgres(_)) {
        bail!(
            "--log-dir applies to managed-postgres and managed-mariadb only (SQLite keeps its WAL beside the \
             database; your own server's log is its own configuration)"
        );
    }
    if !opts.pragmas.is_empty() && !matches!(spec, TargetSpec::Sqlite(_)) {
        bail!("--pragma applies to sqlite targets; a server takes --server-setting NAME=VALUE");
    }
    match spec {
        TargetSpec::Sqlite(path) => Ok(Box::new(
            sqlite::SqliteTarget::new(path.clone(), opts.key, opts.cipher_pragmas).with_pragmas(opts.pragmas),
        )),
        TargetSpec::Postgres(url) => {
            let password = opts.password.or_else(|| std::env::var("PGPASSWORD").ok());
            let info = postgres::PgConnInfo::parse(url, password)?;
            Ok(Box::new(postgres::PgTarget::new(info, url.clone(), None, backup::BackupPlace::client_side())))
        }
        TargetSpec::Mysql(url) => {
            let password = opts.password.or_else(|| std::env::var("MYSQL_PWD").ok());
            let info = mysql::MyConnInfo::parse(url, password)?;
            Ok(Box::new(mysql::MyTarget::external(info, url.clone())))
        }
        TargetSpec::ManagedPostgres(binaries) => managed_postgres(binaries, opts),
        TargetSpec::ManagedMariadb(binaries) => managed_mariadb(binaries, opts),
        TargetSpec::ManagedGalera(nodes) => managed_galera(*nodes, opts),
    }
}

fn managed_mariadb(binaries: &Binaries, opts: TargetOptions) -> Result<Box<dyn Target>> {
    let data = opts.data_dir.unwrap_or_else(|| managed_maria::default_data_dir(binaries));
    let server = managed_maria::ManagedMaria::start(
        binaries,
        &data,
        opts.log_dir.as_deref(),
        &opts.server_settings,
        &opts.server_place,
    )?;
    let info = mysql::MyConnInfo {
        host: "127.0.0.1".into(),
        port: server.port,
        user: managed_maria::SUPERUSER.into(),
        password: None,
        dbname: opts.default_db,
        other_nodes: vec![],
    };
    let location = format!("managed MariaDB {} in {}", server.version, server.data_dir().display());
    let encrypted = encrypts_tables(&opts.server_settings);
    Ok(Box::new(mysql::MyTarget::managed(info, location, std::sync::Arc::new(server), encrypted)))
}

fn managed_galera(nodes: usize, opts: TargetOptions) -> Result<Box<dyn Target>> {
    let data = opts.data_dir.unwrap_or_else(galera::default_data_dir);
    let cluster = galera::Galera::start(&data, nodes, &opts.server_settings, &opts.server_place)?;
    let ports = cluster.ports();
    let info = mysql::MyConnInfo {
        host: "127.0.0.1".into(),
        port: ports[0],
        user: managed_maria::SUPERUSER.into(),
        password: None,
        dbname: opts.default_db,
        other_nodes: ports[1..].to_vec(),
    };
    let location =
        format!("managed Galera cluster of {nodes} MariaDB {} nodes in {}", cluster.version(), data.display());
    let encrypted = encrypts_tables(&opts.server_settings);
    Ok(Box::new(mysql::MyTarget::cluster(info, location, std::sync::Arc::new(cluster), encrypted)))
}

fn managed_postgres(binaries: &Binaries, opts: TargetOptions) -> Result<Box<dyn Target>> {
    let data = match opts.data_dir {
        Some(d) => d,
        None => managed_pg::default_data_dir(binaries)?,
    };
    let mut settings = opts.server_settings.clone();
    settings.extend(opts.listen.as_ref().map(|a| ("listen_addresses".to_string(), format!("127.0.0.1,{a}"))));
    let server = managed_pg::ManagedPg::start(binaries, &data, opts.log_dir.as_deref(), &settings, &opts.server_place)?;
    let password = opts.listen.as_ref().map(|_| server.admit_remote()).transpose()?;
    let info = postgres::PgConnInfo {
        host: opts.listen.clone().unwrap_or_else(|| "127.0.0.1".into()),
        port: server.port,
        user: managed_pg::SUPERUSER.into(),
        password,
        dbname: opts.default_db,
    };
    let location = format!("managed PostgreSQL {} in {}", server.version, server.data_dir().display());
    let backups = backup::BackupPlace::beside(server.data_dir(), Some(server.bin_dir().to_path_buf()));
    Ok(Box::new(postgres::PgTarget::new(info, location, Some(std::sync::Arc::new(server)), backups)))
}

/// The database a client environment ([`Database::client_env`]) names, reached from this
/// host: how a remote client finds the run's database without a URL in any argv.
pub fn from_client_env(env: &[(String, String)]) -> Result<Box<dyn Database>> {
    let var = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let need = |k: &str| var(k).with_context(|| format!("the client environment lacks {k}"));
    let (url, password) = match var("DBVS_ENGINE").as_deref() {
        Some("postgres") => (
            format!("postgres://{}@{}:{}/{}", need("PGUSER")?, need("PGHOST")?, need("PGPORT")?, need("PGDATABASE")?),
            var("PGPASSWORD"),
        ),
        Some("mariadb") => (
            format!(
                "mysql://{}@{}:{}/{}",
                need("MYSQL_USER")?,
                need("MYSQL_HOST")?,
                need("MYSQL_TCP_PORT")?,
                need("MYSQL_DATABASE")?
            ),
            var("MYSQL_PWD"),
        ),
        other => bail!("remote clients reach PostgreSQL and MariaDB servers, not {}", other.unwrap_or("this engine")),
    };
    open(&url.parse()?, TargetOptions { password, ..TargetOptions::default() })?.existing()
}

/// Whether a MariaDB server's settings turn on InnoDB's data-at-rest encryption.
fn encrypts_tables(settings: &[(String, String)]) -> bool {
    settings.iter().any(|(k, v)| {
        k.replace('-', "_").eq_ignore_ascii_case("innodb_encrypt_tables") && !v.eq_ignore_ascii_case("off")
    })
}

/// Where a server URL points. Passwords are refused in URLs: command lines are visible to
/// every user of the machine.
pub struct ServerUrl {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub dbname: String,
}

/// Names of run copies and staging databases that a dbvs process left behind when it was
/// killed (its pid, in the name, is gone). Only servers on this machine can be judged.
pub(crate) fn orphans(host: &str, db: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    if !matches!(host, "127.0.0.1" | "localhost" | "::1") {
        return vec![];
    }
    let (run, building) = (format!("{db}_run_"), format!("{db}_building_"));
    names
        .into_iter()
        .filter(|n| {
            // `<db>_run_<pid>`, or `<db>_run_<pid>_<k>` for a multi-instance run's k-th copy.
            let rest = n.strip_prefix(&run).or_else(|| n.strip_prefix(&building));
            let pid = rest.and_then(|p| p.split('_').next()?.parse::<u32>().ok());
            pid.is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect()
}

/// Numbers this process's run copies (0, 1, 2...), so a multi-instance run's copies differ.
pub(crate) fn next_copy() -> usize {
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The suffix of a copy's name: none for the first, `<sep><k>` after.
pub(crate) fn copy_suffix(sep: char) -> String {
    match next_copy() {
        0 => String::new(),
        k => format!("{sep}{k}"),
    }
}

/// A database name dbvs can splice into SQL safely.
pub(crate) fn valid_identifier(s: &str) -> bool {
    !s.is_empty() && s.len() <= 40 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Parses `SCHEME://USER@HOST[:PORT]/DB` for one of `schemes` (e.g. `postgres`).
pub fn parse_server_url(url: &str, schemes: &[&str], default_port: u16, password_env: &str) -> Result<ServerUrl> {
    let hint = format!("expected {}://USER@HOST[:PORT]/DATABASE", schemes[0]);
    let rest = schemes.iter().find_map(|s| url.strip_prefix(s)?.strip_prefix("://")).with_context(|| hint.clone())?;
    let (auth, rest) = rest.split_once('@').with_context(|| format!("invalid target '{url}': no USER@; {hint}"))?;
    if auth.contains(':') {
        bail!("do not put the password in the target URL (it shows in process listings); set {password_env} or use --password-file");
    }
    let (hostport, db) =
        rest.split_once('/').with_context(|| format!("invalid target '{url}': no /DATABASE; {hint}"))?;
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().with_context(|| format!("invalid port '{p}' in '{url}'"))?),
        None => (hostport, default_port),
    };
    if auth.is_empty() || host.is_empty() || !valid_identifier(db) {
        bail!("invalid target '{url}': {hint}, with a database name of letters, digits and _");
    }
    Ok(ServerUrl { host: host.into(), port, user: auth.into(), dbname: db.into() })
}

pub const META_TABLE: &str = "dbvs_meta";

/// Writes build metadata into the database being built.
pub fn write_meta(conn: &mut Connection, meta: &BuildMeta) -> Result<()> {
    match conn {
        Connection::Sqlite(c) => {
            c.execute_batch(&format!("CREATE TABLE {META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"))?;
            let mut st = c.prepare(&format!("INSERT INTO {META_TABLE} (key, value) VALUES (?1, ?2)"))?;
            for (k, v) in meta {
                st.execute((k, v))?;
            }
        }
        Connection::Postgres(c) => {
            c.batch_execute(&format!("CREATE TABLE {META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"))?;
            let st = c.prepare(&format!("INSERT INTO {META_TABLE} (key, value) VALUES ($1, $2)"))?;
            for (k, v) in meta {
                c.execute(&st, &[k, v])?;
            }
        }
        Connection::MySql(c) => {
            use ::mysql::prelude::Queryable;
            let c = c.conn()?;
            c.query_drop(format!("CREATE TABLE {META_TABLE} (`key` VARCHAR(100) PRIMARY KEY, value TEXT NOT NULL)"))?;
            c.exec_batch(format!("INSERT INTO {META_TABLE} (`key`, value) VALUES (?, ?)"), meta.iter())?;
        }
    }
    Ok(())
}

/// Reads build metadata; `None` when the database has no metadata table (not built by dbvs).
pub fn read_meta(conn: &mut Connection) -> Result<Option<BuildMeta>> {
    match conn {
        Connection::Sqlite(c) => {
            let exists: bool = c.query_row(
                "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [META_TABLE],
                |r| r.get(0),
            )?;
            if !exists {
                return Ok(None);
            }
            let mut st = c.prepare(&format!("SELECT key, value FROM {META_TABLE}"))?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(Some(rows.collect::<rusqlite::Result<_>>().context("reading build metadata")?))
        }
        Connection::Postgres(c) => {
            let exists = c.query_opt("SELECT 1 FROM pg_tables WHERE tablename = $1", &[&META_TABLE])?.is_some();
            if !exists {
                return Ok(None);
            }
            let rows = c.query(&format!("SELECT key, value FROM {META_TABLE}"), &[])?;
            Ok(Some(rows.iter().map(|r| (r.get(0), r.get(1))).collect()))
        }
        Connection::MySql(c) => {
            use ::mysql::prelude::Queryable;
            let c = c.conn()?;
            let exists: Option<String> = c.exec_first(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?",
                (META_TABLE,),
            )?;
            if exists.is_none() {
                return Ok(None);
            }
            let rows: Vec<(String, String)> = c.query(format!("SELECT `key`, value FROM {META_TABLE}"))?;
            Ok(Some(rows.into_iter().collect()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_watches_name_every_volume_once_and_every_server() {
        let watch = |dir: &str, pid: &str| Watch {
            volumes: vec![("data".into(), PathBuf::from(dir))],
            server_pid_files: vec![PathBuf::from(pid)],
            note: "",
        };
        let m = Watch::merged(&[watch("/a", "/a.pid"), watch("/b", "/b.pid"), watch("/a", "/c.pid")]);
        assert_eq!(m.volumes, [("data".to_string(), PathBuf::from("/a")), ("data".to_string(), PathBuf::from("/b"))]);
        assert_eq!(m.server_pid_files, ["/a.pid", "/b.pid", "/c.pid"].map(PathBuf::from));
    }

    #[test]
    fn only_local_databases_of_dead_processes_are_orphans() {
        let names = || {
            [
                "ds2_run_999999999",
                "ds2_building_999999999",
                format!("ds2_run_{}", std::process::id()).as_str(),
                "ds2",
                "ds2_runx",
            ]
            .map(String::from)
        };
        assert_eq!(orphans("127.0.0.1", "ds2", names()), vec!["ds2_run_999999999", "ds2_building_999999999"]);
        let copies = ["ds2_run_999999999_3".to_string(), format!("ds2_run_{}_2", std::process::id())];
        assert_eq!(orphans("127.0.0.1", "ds2", copies), vec!["ds2_run_999999999_3"]);
        assert!(orphans("db1.example", "ds2", names()).is_empty());
    }

    #[test]
    fn an_sqlite_target_is_the_file_it_names() {
        let spec = TargetSpec::Sqlite("/tmp/x.db".into());
        assert_eq!(open(&spec, TargetOptions::default()).unwrap().info().location, "/tmp/x.db");
    }
}
