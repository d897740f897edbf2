//! MariaDB (and MySQL) on a server the user points at (`mysql://user@host:port/db`) or on a
//! private instance dbvs starts ([`super::managed_maria`]).
//!
//! The database named in the URL is the pristine one. MariaDB has no template databases: on
//! a managed instance each run gets a copy of the whole data directory (see
//! [`super::managed_maria::ManagedMaria::serve_copy`]); on the user's server it gets a
//! logical copy (`CREATE TABLE ... LIKE` plus `INSERT ... SELECT` per table) in
//! `<db>_run_<pid>`, dropped afterwards. Builds go into `<db>_building_<pid>` and their
//! tables are renamed into place when complete.

use super::backup::BackupPlace;
use super::{valid_identifier, BuildMeta, Connection, Database, Keepalive, RunCopy, StagedBuild, Target, TargetInfo};
use anyhow::{bail, Context, Result};
use mysql::prelude::Queryable;
use std::collections::BTreeMap;

#[derive(Clone)]
pub struct MyConnInfo {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub dbname: String,
    /// A cluster's other nodes (their ports on `host`): a run's sessions spread over
    /// `port` and these in turn. Administration stays on `port`.
    pub other_nodes: Vec<u16>,
}

/// The node the next session of a cluster connects to.
static NEXT_NODE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The most statements one connection keeps prepared.
pub const SESSION_STATEMENTS: usize = 1024;

/// A deadlock (1213) or lock wait timeout (1205), by name: the transaction should be run again.
pub fn conflict(code: u16) -> Option<&'static str> {
    match code {
        1213 => Some("deadlock"),
        1205 => Some("lock wait timeout"),
        _ => None,
    }
}

/// A connection on the `mysql` crate (builds, checks, administration) that keeps its
/// settings, so a worker's session can open it on dbvs's own client ([`crate::targets::sql`])
/// instead. The crate's connection opens at its first use: a session that runs on dbvs's
/// client never opens it (a replay's sessions connect as often as the application did).
pub struct MyConnection {
    conn: Option<mysql::Conn>,
    pub session: crate::targets::sql::WireOpts,
}

impl MyConnection {
    /// The `mysql` crate's connection, opened now if it was not yet.
    pub fn conn(&mut self) -> Result<&mut mysql::Conn> {
        if self.conn.is_none() {
            let o = &self.session;
            let info = MyConnInfo {
                host: o.host.clone(),
                port: o.port,
                user: o.user.clone(),
                password: o.password.clone(),
                dbname: o.db.clone(),
                other_nodes: vec![],
            };
            self.conn = Some(match o.wait_for_cluster {
                false => info.connect(Some(&o.db))?,
                // A node applies the others' writes a moment after they commit, so it may
                // not have the database yet: a read first waits for it (wsrep_sync_wait).
                true => {
                    let mut c = info.connect(None)?;
                    c.query_drop("SELECT 1")?;
                    c.query_drop(format!("USE `{}`", o.db))?;
                    c
                }
            });
        }
        Ok(self.conn.as_mut().expect("opened above"))
    }

    /// The `mysql` crate's connection, for good.
    pub fn into_conn(mut self) -> Result<mysql::Conn> {
        self.conn()?;
        Ok(self.conn.take().expect("opened above"))
    }
}

impl MyConnInfo {
    /// Parses `mysql://user@host[:port]/db`; a password in the URL is refused.
    pub fn parse(url: &str, password: Option<String>) -> Result<Self> {
        let u = super::parse_server_url(url, &["mysql", "mariadb"], 3306, "MYSQL_PWD")?;
        Ok(Self { host: u.host, port: u.port, user: u.user, password, dbname: u.dbname, other_nodes: vec![] })
    }

    /// The variables MariaDB's clients read, for database `db` (the password too: the
    /// environment of a child, never its argv).
    pub(crate) fn client_env(&self, db: &str) -> Vec<(String, String)> {
        let mut env = vec![
            ("DBVS_ENGINE".to_string(), "mariadb".to_string()),
            ("MYSQL_HOST".into(), self.host.clone()),
            ("MYSQL_TCP_PORT".into(), self.port.to_string()),
            ("MYSQL_USER".into(), self.user.clone()),
            ("MYSQL_DATABASE".into(), db.into()),
        ];
        env.extend(self.password.clone().map(|p| ("MYSQL_PWD".to_string(), p)));
        env
    }

    pub fn connect(&self, db: Option<&str>) -> Result<mysql::Conn> {
        let opts = mysql::OptsBuilder::new()
            .ip_or_hostname(Some(self.host.clone()))
            .tcp_port(self.port)
            .user(Some(self.user.clone()))
            .pass(self.password.clone())
            .db_name(db.map(String::from))
            .tcp_connect_timeout(Some(std::time::Duration::from_secs(10)))
            // A session keeps its prepared statements for its life, but the crate closes what
            // its cache evicts (32 by default): the cache must hold a whole session's (oltp
            // prepares 9 per table).
            .stmt_cache_size(Some(SESSION_STATEMENTS));
        mysql::Conn::new(opts).map_err(|e| {
            let fix = if e.to_string().contains("Too many connections") {
                "use fewer --threads, or raise max_connections (--server-setting max_connections=N on a managed server)"
            } else {
                "check the server is running, the user, and MYSQL_PWD"
            };
            anyhow::anyhow!("cannot connect to MariaDB at {}:{} as {}: {e}; {fix}", self.host, self.port, self.user)
        })
    }

    /// Where a worker's session on database `db` connects: node `port` of this server.
    /// A worker session's settings on node `port` (this server's own port on a single one).
    fn session(&self, port: u16, db: &str) -> crate::targets::sql::WireOpts {
        crate::targets::sql::WireOpts {
            host: self.host.clone(),
            port,
            user: self.user.clone(),
            password: self.password.clone(),
            db: db.to_string(),
            wait_for_cluster: !self.other_nodes.is_empty(),
        }
    }

    /// The port of the next node in turn (this server's on a single one), so that a
    /// cluster's sessions spread over its nodes.
    fn next_node(&self) -> u16 {
        let n = NEXT_NODE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % (self.other_nodes.len() + 1);
        if n == 0 {
            self.port
        } else {
            self.other_nodes[n - 1]
        }
    }

    fn admin(&self, statements: &[String]) -> Result<()> {
        let mut c = self.connect(None)?;
        for s in statements {
            c.query_drop(s)?;
        }
        Ok(())
    }

    fn tables(&self, db: &str) -> Result<Vec<String>> {
        Ok(self.connect(None)?.exec(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name",
            (db,),
        )?)
    }

    /// Drops run copies and staging databases of killed dbvs processes.
    fn sweep(&self) -> Result<()> {
        let names: Vec<String> = self.connect(None)?.exec(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE ?",
            (format!("{}\\_%", self.dbname),),
        )?;
        let dead = super::orphans(&self.host, &self.dbname, names);
        self.admin(&dead.iter().map(|d| format!("DROP DATABASE IF EXISTS {d}")).collect::<Vec<_>>())
    }

    /// Moves every table of `from` into a new database `to` (replacing it), then drops `from`.
    fn move_tables(&self, from: &str, to: &str) -> Result<()> {
        let mut stmts = vec![format!("DROP DATABASE IF EXISTS {to}"), format!("CREATE DATABASE {to}")];
        stmts.extend(self.tables(from)?.iter().map(|t| format!("RENAME TABLE {from}.{t} TO {to}.{t}")));
        stmts.push(format!("DROP DATABASE {from}"));
        self.admin(&stmts)
    }
}

pub struct MyTarget {
    info: MyConnInfo,
    location: String,
    server: Keepalive,
    /// A server dbvs manages: runs get a copy of its data directory.
    managed: Option<std::sync::Arc<super::managed_maria::ManagedMaria>>,
    /// Data-at-rest encryption is configured: confirm it before every run.
    require_encryption: bool,
    backups: BackupPlace,
}

/// How long to wait for InnoDB's background threads to finish encrypting tablespaces.
const ENCRYPTION_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

impl MyTarget {
    /// A server the user runs: runs get logical copies.
    pub fn external(info: MyConnInfo, location: String) -> Self {
        Self {
            info,
            location,
            server: None,
            managed: None,
            require_encryption: false,
            backups: BackupPlace::client_side(),
        }
    }

    /// A cluster dbvs manages (`info` on its first node): runs get logical copies, which
    /// the cluster replicates.
    pub fn cluster(
        info: MyConnInfo,
        location: String,
        cluster: std::sync::Arc<super::galera::Galera>,
        require_encryption: bool,
    ) -> Self {
        let backups = BackupPlace::beside(&super::ManagedServer::data_dir(cluster.as_ref()), None);
        Self { info, location, server: Some(cluster), managed: None, require_encryption, backups }
    }

    /// A server dbvs manages: runs get a copy of the whole data directory.
    pub fn managed(
        info: MyConnInfo,
        location: String,
        server: std::sync::Arc<super::managed_maria::ManagedMaria>,
        require_encryption: bool,
    ) -> Self {
        let keepalive: std::sync::Arc<dyn super::ManagedServer> = server.clone();
        let backups = BackupPlace::beside(server.data_dir(), None);
        Self { info, location, server: Some(keepalive), managed: Some(server), require_encryption, backups }
    }

    /// Waits until information_schema shows every InnoDB tablespace encrypted and settled.
    /// The temporary tablespace is left out: it is rebuilt at every start, its pages follow
    /// `innodb_encrypt_temporary_tables`, and information_schema does not report it.
    fn confirm_encrypted(&self) -> Result<()> {
        let sql = "SELECT t.NAME FROM information_schema.INNODB_SYS_TABLESPACES t \
                   LEFT JOIN information_schema.INNODB_TABLESPACES_ENCRYPTION e ON e.SPACE = t.SPACE \
                   WHERE t.NAME <> 'innodb_temporary' \
                   AND (e.SPACE IS NULL OR e.ENCRYPTION_SCHEME = 0 OR e.ROTATING_OR_FLUSHING = 1)";
        let mut c = self.info.connect(None)?;
        let t = std::time::Instant::now();
        loop {
            let plain: Vec<String> = c.query(sql)?;
            if plain.is_empty() {
                return Ok(());
            }
            if t.elapsed() > ENCRYPTION_WAIT {
                bail!(
                    "data-at-rest encryption is configured but {} tablespaces are not encrypted, e.g. {}",
                    plain.len(),
                    plain[0]
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    fn db(&self, name: String) -> MyDb {
        MyDb {
            info: self.info.clone(),
            name,
            _server: self.server.clone(),
            backups: self.backups.clone(),
            managed: self.managed.clone(),
        }
    }
}

impl Target for MyTarget {
    fn managed(&self) -> super::Keepalive {
        self.managed.clone().map(|m| m as std::sync::Arc<dyn super::ManagedServer>)
    }

    fn info(&self) -> TargetInfo {
        TargetInfo { engine: super::Engine::Mariadb, location: self.location.clone(), encrypted: false }
    }

    fn versions(&self) -> Result<BTreeMap<String, String>> {
        let v: Option<String> = self.info.connect(None)?.query_first("SELECT VERSION()")?;
        // Which client ran matters to a reader comparing with another tool's figures.
        let client = "dbvs's binary-protocol client, column definitions cached; writes whose counts are not \
                      read pipelined with the next statement, a run of one in one bulk execution except on Galera";
        Ok(BTreeMap::from([
            ("mariadb".to_string(), v.unwrap_or_default()),
            ("mariadb client".to_string(), client.to_string()),
        ]))
    }

    fn pristine_files(&self) -> Vec<std::path::PathBuf> {
        self.managed.iter().map(|m| m.data_dir().to_path_buf()).collect()
    }

    fn pristine(&self) -> Result<Option<BuildMeta>> {
        let exists: Option<String> = self.info.connect(None)?.exec_first(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name = ?",
            (&self.info.dbname,),
        )?;
        if exists.is_none() {
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
        self.info.sweep()?;
        let name = format!("{}_building_{}", self.info.dbname, std::process::id());
        self.info.admin(&[format!("DROP DATABASE IF EXISTS {name}"), format!("CREATE DATABASE {name}")]).with_context(
            || format!("cannot create database {name}; does {} have CREATE privileges?", self.info.user),
        )?;
        Ok(Box::new(Staged { db: self.db(name), dest: self.info.dbname.clone() }))
    }

    fn diagnostics(&self) -> Option<String> {
        self.server.as_ref().map(|s| format!("server log: {}", s.log_tail()))
    }

    fn watch(&self) -> super::Watch {
        super::Watch::server(&self.server)
    }

    fn existing(&self) -> Result<Box<dyn Database>> {
        Ok(Box::new(self.db(self.info.dbname.clone())))
    }

    fn fresh_copy(&self) -> Result<Box<dyn RunCopy>> {
        if let Some(server) = &self.managed {
            let pristine = server.data_dir();
            let dir = pristine.with_file_name(format!(
                "{}.run-{}",
                pristine.file_name().map_or_else(|| "data".into(), |n| n.to_string_lossy()),
                std::process::id()
            ));
            // Each managed server (one per variant) serves one copy of its data directory.
            if dir.exists() {
                bail!(
                    "a managed MariaDB serves one run copy at a time (it copies its whole data directory); \
                     for several instances use mysql://USER@HOST/DB, PostgreSQL or SQLite"
                );
            }
            server.serve_copy(&dir).context("cannot copy the data directory for the run")?;
            let copy = DirCopy { db: self.db(self.info.dbname.clone()), server: server.clone(), dir };
            if self.require_encryption {
                self.confirm_encrypted()?;
            }
            return Ok(Box::new(copy));
        }
        self.info.sweep()?;
        let suffix = super::copy_suffix('_');
        let (from, name) = (&self.info.dbname, format!("{}_run_{}{suffix}", self.info.dbname, std::process::id()));
        let copy = Copied(self.db(name.clone()));
        let mut stmts = vec![format!("DROP DATABASE IF EXISTS {name}"), format!("CREATE DATABASE {name}")];
        for t in self.info.tables(from)? {
            stmts.push(format!("CREATE TABLE {name}.{t} LIKE {from}.{t}"));
            stmts.push(format!("INSERT INTO {name}.{t} SELECT * FROM {from}.{t}"));
        }
        self.info.admin(&stmts).with_context(|| format!("cannot copy database {from} for the run"))?;
        if self.require_encryption {
            self.confirm_encrypted()?;
        }
        Ok(Box::new(copy))
    }
}

struct MyDb {
    info: MyConnInfo,
    name: String,
    _server: Keepalive,
    backups: BackupPlace,
    /// A single server dbvs manages, whose files a physical backup may read.
    managed: Option<std::sync::Arc<super::managed_maria::ManagedMaria>>,
}

impl Database for MyDb {
    /// A session on the next node of a cluster, or on the server.
    fn connect(&self) -> Result<Connection> {
        let mut c = MyConnection { conn: None, session: self.info.session(self.info.next_node(), &self.name) };
        c.conn()?;
        Ok(Connection::MySql(c))
    }
    /// The `mysql` crate's connection opens only if something needs it; a worker's session
    /// connects once, on dbvs's own client (which, on a cluster's node, waits for it to
    /// have the database).
    fn connect_session(&self) -> Result<Connection> {
        let info = &self.info;
        Ok(Connection::MySql(MyConnection { conn: None, session: info.session(info.next_node(), &self.name) }))
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        Ok(self.info.client_env(&self.name))
    }
    fn go_cold(&self) -> Result<()> {
        super::go_cold_on(&self._server)
    }
    fn backup(&self, name: &str) -> Result<std::path::PathBuf> {
        let dest = self.backups.file(name);
        match &self.managed {
            Some(server) => server.backup(&self.name, &dest)?,
            None => super::backup::mariadb_dump(&self.backups, &self.info, &self.name, &dest)?,
        }
        Ok(dest)
    }
}

struct Staged {
    db: MyDb,
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
        self.db.info.move_tables(&self.db.name, &self.dest)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = self.db.info.admin(&[format!("DROP DATABASE IF EXISTS {}", self.db.name)]);
    }
}

/// A copy of a managed server's data directory, served for one run; removed on drop.
struct DirCopy {
    db: MyDb,
    server: std::sync::Arc<super::managed_maria::ManagedMaria>,
    dir: std::path::PathBuf,
}

impl Database for DirCopy {
    fn connect(&self) -> Result<Connection> {
        self.db.connect()
    }
    fn connect_session(&self) -> Result<Connection> {
        self.db.connect_session()
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        self.db.client_env()
    }
    fn go_cold(&self) -> Result<()> {
        self.db.go_cold()
    }
    fn backup(&self, name: &str) -> Result<std::path::PathBuf> {
        self.db.backup(name)
    }
}

impl RunCopy for DirCopy {
    fn keep(self: Box<Self>, _dest: &str) -> Result<()> {
        bail!(
            "--keep-db is not available on managed MariaDB, whose run copies are whole data directories; \
             run against mysql://USER@HOST/DB to keep a run's database"
        )
    }
}

impl Drop for DirCopy {
    fn drop(&mut self) {
        self.server.discard_copy(&self.dir);
    }
}

struct Copied(MyDb);

impl Database for Copied {
    fn connect(&self) -> Result<Connection> {
        self.0.connect()
    }
    fn connect_session(&self) -> Result<Connection> {
        self.0.connect_session()
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
    /// `INSERT ... SELECT` leaves the copy's pages dirty in the buffer pool; waits (up to a
    /// minute) until InnoDB has written all but 1% of the pool out. An idle server's page
    /// cleaner writes a few hundred pages a second, so where the user may, InnoDB is asked
    /// to flush everything meanwhile (`innodb_max_dirty_pages_pct = 0`), and the setting
    /// is put back after.
    fn settle(&self) -> Result<()> {
        let mut c = self.0.info.connect(None)?;
        let status = |c: &mut mysql::Conn, name: &str| -> Result<u64> {
            let row: Option<(String, String)> = c.query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))?;
            Ok(row.and_then(|(_, v)| v.parse().ok()).unwrap_or(0))
        };
        let was: Option<String> = c.query_first("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")?;
        let hurried = was.is_some() && c.query_drop("SET GLOBAL innodb_max_dirty_pages_pct = 0").is_ok();
        let waited = (|| -> Result<()> {
            let total = status(&mut c, "Innodb_buffer_pool_pages_total")?.max(1);
            let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while status(&mut c, "Innodb_buffer_pool_pages_dirty")? * 100 > total && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Ok(())
        })();
        if let (true, Some(was)) = (hurried, was) {
            c.query_drop(format!("SET GLOBAL innodb_max_dirty_pages_pct = {was}"))?;
        }
        waited
    }

    fn keep(self: Box<Self>, dest: &str) -> Result<()> {
        if !valid_identifier(dest) {
            bail!("--keep-db for MariaDB takes a database name (letters, digits, _), got '{dest}'");
        }
        self.0.info.move_tables(&self.0.name, dest)
    }
}

impl Drop for Copied {
    fn drop(&mut self) {
        let _ = self.0.info.admin(&[format!("DROP DATABASE IF EXISTS {}", self.0.name)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_passwords_stay_out_of_them() {
        let c = MyConnInfo::parse("mysql://bench@db1:3307/ds2", None).unwrap();
        assert_eq!((c.host.as_str(), c.port, c.user.as_str(), c.dbname.as_str()), ("db1", 3307, "bench", "ds2"));
        assert_eq!(MyConnInfo::parse("mariadb://u@h/d", None).unwrap().port, 3306);
        assert!(MyConnInfo::parse("mysql://u:pw@h/d", None).err().unwrap().to_string().contains("MYSQL_PWD"));
        for bad in ["mysql://h/d", "mysql://u@h", "mysql://u@h/d-x"] {
            assert!(MyConnInfo::parse(bad, None).is_err(), "{bad}");
        }
    }
}
