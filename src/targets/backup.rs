//! Native online backups, as each engine's users take them. Physical where dbvs manages the
//! server (seed 003's benchmark 10 was SQL Server's page-level full backup, which a TDE
//! database keeps encrypted): `mariabackup` of the run's database, `pg_basebackup` of the
//! cluster, SQLite's `VACUUM INTO` (SQLCipher's copy is encrypted with the same key).
//! Logical for a user's server, where dbvs may not read the data files:
//! `pg_dump -Fc` and `mariadb-dump --single-transaction`. A backup is a file or a directory;
//! [`size`] and [`remove`] take either.
//!
//! Seed 003 backed up to a device on the instance's own storage, so a backup goes next to
//! the database: beside the SQLite file, or beside a managed server's data directory. Both
//! sit on whatever layer the variant put under the data (an encrypted file system also
//! carries the backup). For a server dbvs does not manage the dump lands in the system's
//! temporary directory, where the client runs.

use super::mysql::MyConnInfo;
use super::postgres::PgConnInfo;
use super::Engine;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where a server's backups go and which client tools write them.
#[derive(Clone, Debug)]
pub struct BackupPlace {
    pub dir: PathBuf,
    /// The directory of the engine's client tools; `None` looks them up on PATH.
    pub bin: Option<PathBuf>,
}

impl BackupPlace {
    /// Beside a managed server's data directory; backups a killed dbvs left there are removed.
    pub fn beside(data_dir: &Path, bin: Option<PathBuf>) -> Self {
        let place = Self { dir: data_dir.parent().unwrap_or(Path::new("/")).to_path_buf(), bin };
        place.sweep();
        place
    }

    /// Removes the backups of dbvs processes that are gone.
    fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name.to_str().and_then(|n| n.strip_prefix("dbvs-backup-")?.split('-').next()?.parse().ok());
            if pid.is_some_and(|pid| crate::sys::process_start_time(pid).is_none()) {
                remove(&entry.path());
            }
        }
    }

    /// For a server elsewhere: the client's temporary directory.
    pub fn client_side() -> Self {
        Self { dir: std::env::temp_dir(), bin: None }
    }

    fn tool(&self, name: &str, package: &str) -> Result<PathBuf> {
        match &self.bin {
            Some(b) => Ok(b.join(name)),
            None => crate::sys::require(name, package),
        }
    }

    /// A file name in the place, unique to this process.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("dbvs-backup-{}-{name}", std::process::id()))
    }
}

/// `VACUUM INTO`: a consistent, compacted copy made through the open connection, so a
/// SQLCipher database's copy is encrypted with the same key.
pub fn sqlite(conn: &rusqlite::Connection, dest: &Path) -> Result<()> {
    let _ = std::fs::remove_file(dest);
    let path = dest.to_str().context("the backup path is not valid UTF-8")?;
    conn.execute("VACUUM INTO ?1", [path]).with_context(|| format!("VACUUM INTO {} failed", dest.display()))?;
    sync(dest)
}

/// `pg_dump -Fc` of one database. The password goes through the environment, never argv.
pub fn pg_dump(place: &BackupPlace, info: &PgConnInfo, db: &str, dest: &Path) -> Result<()> {
    let mut cmd = Command::new(place.tool("pg_dump", "postgresql-client")?);
    cmd.args(["-Fc", "--no-password", "-h", &info.host, "-p", &info.port.to_string(), "-U", &info.user, "-f"])
        .arg(dest)
        .arg(db);
    if let Some(p) = &info.password {
        cmd.env("PGPASSWORD", p);
    }
    run(cmd, "pg_dump")?;
    sync(dest)
}

/// `mariadb-dump --single-transaction` of one database into `dest`. A password goes in a
/// 0600 option file that is removed afterwards, never on the command line.
pub fn mariadb_dump(place: &BackupPlace, info: &MyConnInfo, db: &str, dest: &Path) -> Result<()> {
    let tool = place.tool("mariadb-dump", "mariadb-client")?;
    let options = tempfile::Builder::new().prefix("dbvs-dump-").tempfile()?;
    // tempfile creates the file 0600.
    writeln!(options.as_file(), "[client]\nuser={}", info.user)?;
    if let Some(p) = &info.password {
        writeln!(options.as_file(), "password={p}")?;
    }
    let out = std::fs::File::create(dest).with_context(|| format!("cannot create backup {}", dest.display()))?;
    let mut cmd = Command::new(tool);
    cmd.arg(format!("--defaults-extra-file={}", options.path().display()))
        .args(["--single-transaction", "--protocol=TCP", "-h", &info.host, "-P", &info.port.to_string(), db])
        .stdout(out);
    run(cmd, "mariadb-dump")?;
    sync(dest)
}

/// The database a client environment names ([`super::Database::client_env`]; on MariaDB
/// `MYSQL_UNIX_PORT` reaches it by its socket), dumped as a replay restores it: pg_dump's custom format, or mariadb-dump's SQL with routines and
/// triggers, in one transaction; dbvs's own table of build facts left out (a replay's
/// build writes its own). `bin` holds the engine's client tools (else they are on PATH).
pub fn logical(engine: Engine, env: &[(String, String)], bin: Option<&Path>, to: &Path) -> Result<()> {
    let var = |k: &str| super::env_value(env, k);
    let tool = |name: &str, package: &str| match bin {
        Some(b) => Ok(b.join(name)),
        None => crate::sys::require(name, package),
    };
    let mut c = match engine {
        Engine::Mariadb => {
            let mut c = Command::new(tool("mariadb-dump", "mariadb-client")?);
            let db = var("MYSQL_DATABASE");
            let meta = format!("--ignore-table={db}.{}", super::META_TABLE);
            match var("MYSQL_UNIX_PORT") {
                "" => c.arg("--protocol=TCP"),
                socket => c.args(["--protocol=SOCKET", &format!("--socket={socket}")]),
            };
            c.args(["--single-transaction", "--routines", "--triggers", "--user", var("MYSQL_USER"), &meta]);
            c.arg("--result-file").arg(to).arg(db);
            c
        }
        _ => {
            let mut c = Command::new(tool("pg_dump", "postgresql-client")?);
            let meta = format!("--exclude-table={}", super::META_TABLE);
            c.args(["--format=custom", "--no-owner", &meta, "--file"]).arg(to);
            c
        }
    };
    c.envs(env.iter().map(|(k, v)| (k, v)));
    crate::sys::run_tool(&mut c)
}

/// `pg_basebackup` of the whole cluster into the new directory `dest`, as plain files with
/// the WAL it needs. PostgreSQL has no physical backup of one database.
pub fn pg_basebackup(place: &BackupPlace, info: &PgConnInfo, dest: &Path, cgroups: &[PathBuf]) -> Result<()> {
    let mut cmd = Command::new(place.tool("pg_basebackup", "postgresql-client")?);
    crate::sys::cgroup::join_on_spawn(&mut cmd, cgroups)?;
    cmd.args(["-Fp", "-X", "fetch", "-c", "fast", "--no-password", "-h", &info.host, "-p", &info.port.to_string()])
        .args(["-U", &info.user, "-D"])
        .arg(dest);
    if let Some(p) = &info.password {
        cmd.env("PGPASSWORD", p);
    }
    run(cmd, "pg_basebackup").inspect_err(|_| remove(dest))?;
    sync_tree(dest)
}

/// `mariabackup` of database `db` of the server on `socket` into the new directory `dest`:
/// its InnoDB pages as they are on disk (encrypted ones stay encrypted), the system
/// tablespace and the redo log written meanwhile. `server` holds the server's own options
/// (data directory, encryption plugin and key file), which mariabackup reads to open the
/// files; they go in an option file, as the server's would.
pub fn mariabackup(
    server: &[(String, String)],
    socket: &Path,
    db: &str,
    dest: &Path,
    cgroups: &[PathBuf],
) -> Result<()> {
    let tool = crate::sys::require("mariabackup", "mariadb-backup")?;
    let options = tempfile::Builder::new().prefix("dbvs-mariabackup-").tempfile()?;
    writeln!(options.as_file(), "[mysqld]")?;
    for (k, v) in server {
        writeln!(options.as_file(), "{k}={v}")?;
    }
    let mut cmd = Command::new(tool);
    crate::sys::cgroup::join_on_spawn(&mut cmd, cgroups)?;
    cmd.arg(format!("--defaults-file={}", options.path().display()))
        .args(["--backup", "--user=root"])
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--databases={db}"))
        .arg(format!("--target-dir={}", dest.display()));
    run(cmd, "mariabackup").inspect_err(|_| remove(dest))?;
    sync_tree(dest)
}

/// The bytes a backup (a file, or a directory of them) takes.
pub fn size(path: &Path) -> u64 {
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| size(&e.path())).sum(),
        Err(_) => std::fs::symlink_metadata(path).map_or(0, |m| m.len()),
    }
}

/// The name a backup kept for a study's plaintext scan takes, beside the database.
pub const KEPT_FOR_SCAN: &str = "dbvs-backup-kept-for-scan";

/// Keeps `backup` for the scan, in place of the one kept before.
pub fn keep_for_scan(backup: &Path) -> Result<()> {
    let kept = backup.with_file_name(KEPT_FOR_SCAN);
    remove(&kept);
    std::fs::rename(backup, &kept).with_context(|| format!("cannot keep {} for the plaintext scan", backup.display()))
}

/// Removes a backup, file or directory.
pub fn remove(path: &Path) {
    let _ = std::fs::remove_dir_all(path).or_else(|_| std::fs::remove_file(path));
}

fn run(mut cmd: Command, what: &str) -> Result<()> {
    let out = cmd.stdin(Stdio::null()).stderr(Stdio::piped()).spawn()?.wait_with_output()?;
    if !out.status.success() {
        bail!("{what} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// A backup is taken when it is on stable storage.
fn sync(dest: &Path) -> Result<()> {
    std::fs::File::open(dest).and_then(|f| f.sync_all()).with_context(|| format!("cannot sync {}", dest.display()))
}

/// [`sync`] for a directory's every file and the directories themselves.
fn sync_tree(dir: &Path) -> Result<()> {
    if std::fs::symlink_metadata(dir)?.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            sync_tree(&entry?.path())?;
        }
    }
    sync(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backups_of_processes_that_are_gone_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(format!("dbvs-backup-{}-b10-0", u32::MAX - 1));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("ibdata1"), b"x").unwrap();
        let ours = dir.path().join(format!("dbvs-backup-{}-b10-0", std::process::id()));
        std::fs::write(&ours, b"x").unwrap();
        std::fs::write(dir.path().join(KEPT_FOR_SCAN), b"x").unwrap();
        BackupPlace::beside(&dir.path().join("server"), None);
        let mut left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        left.sort();
        assert_eq!(left, [ours.file_name().unwrap().to_owned(), KEPT_FOR_SCAN.into()]);
    }

    #[test]
    fn a_sqlcipher_backup_is_encrypted_with_the_same_key() {
        let dir = tempfile::tempdir().unwrap();
        let key = format!("PRAGMA key = \"x'{}'\";", "ab".repeat(32));
        let c = rusqlite::Connection::open(dir.path().join("db")).unwrap();
        c.execute_batch(&format!("{key} CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('plain-marker-123');")).unwrap();
        let dest = dir.path().join("backup");
        sqlite(&c, &dest).unwrap();
        let bytes = std::fs::read(&dest).unwrap();
        assert!(bytes.len() > 1000);
        assert!(!bytes.windows(16).any(|w| w == b"plain-marker-123"), "the backup holds plaintext");
        let b = rusqlite::Connection::open(&dest).unwrap();
        b.execute_batch(&key).unwrap();
        let v: String = b.query_row("SELECT v FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(v, "plain-marker-123");
    }
}
