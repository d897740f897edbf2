//! A database out of a user's data directory: a copy of the directory (a stopped server's,
//! or a base backup) is started by a throwaway managed server, which dumps the database and
//! goes. The user's directory is only read: the copy follows symbolic links (a WAL or
//! tablespace directory linked from elsewhere is copied, never written), and a directory
//! whose files name paths outside it (InnoDB's `.isl` files) is refused.
//!
//! The copy and the dump are the user's data: they live in a private directory under
//! `$TMPDIR`, removed on every exit path (a lease), and no other local user can log in to
//! the copy's server. PostgreSQL's takes a random password on loopback, MariaDB's listens
//! on its socket only, inside the copy's own directory. Neither archives, replicates,
//! or loads the user's libraries.

use super::backup;
use super::postgres::PgConnInfo;
use super::spec::Binaries;
use super::{managed_maria, managed_pg, Engine};
use crate::sys::lease::{Lease, Step};
use crate::sys::Placement;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// Dumps the database `database` (or the only one of the user's the directory holds) of
/// the data directory `source`, as the engine's dump tool writes it, and hands the dump to
/// `use_dump` before it is removed with the copy; returns the database's name.
pub fn dump(
    source: &Path,
    engine: Engine,
    database: Option<&str>,
    use_dump: impl FnOnce(&Path) -> Result<()>,
) -> Result<String> {
    let said = source.display().to_string();
    // What the directory is, before a copy of it that may take long.
    let postgres_version = match engine {
        Engine::Postgres => Some(managed_pg::data_dir_version(source)?),
        Engine::Mariadb if source.join("mysql").is_dir() => None,
        Engine::Mariadb => bail!("{said} is not a MariaDB data directory (it has no mysql/ directory)"),
        other => bail!("a data directory is PostgreSQL's or MariaDB's; the target is {other}"),
    };
    let work = tempfile::Builder::new().prefix("dbvs-data-copy-").tempdir()?;
    let mut lease = Lease::new(&format!("a copy of the data directory {said}"))?;
    lease.push(Step::RemoveDir { path: work.path().to_path_buf() })?;
    // The server's user passes through to the copy (itself 0700); the dump is 0600.
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o711))?;
    let (copy, dumped) = (work.path().join("data"), work.path().join("dump"));
    copy_dir(source, &copy)?;
    private_file(&dumped)?;
    // Each engine's server stops when its function returns; the lease then removes the copy
    // and the dump.
    let name = match postgres_version {
        Some(version) => postgres(&copy, version, database, &dumped),
        None => mariadb(&copy, database, &dumped),
    }
    .with_context(|| format!("cannot dump a database out of the data directory {said}"))?;
    use_dump(&dumped)?;
    drop(lease);
    Ok(name)
}

/// `cp -a`, following symbolic links.
fn copy_dir(source: &Path, copy: &Path) -> Result<()> {
    let mut cp = Command::new(crate::sys::require("cp", "coreutils")?);
    cp.args(["-a", "-L"]).arg(source).arg(copy);
    crate::sys::run_tool(&mut cp).with_context(|| format!("cannot copy the data directory {}", source.display()))?;
    std::fs::set_permissions(copy, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(())
}

/// An empty file only this user may read, for a tool to write into (it keeps the mode).
fn private_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    Ok(())
}

/// The database asked for, or the one database among `found` that is not one of `system`.
fn pick(found: Vec<String>, database: Option<&str>, system: &[&str]) -> Result<String> {
    if let Some(want) = database {
        if found.iter().any(|d| d == want) {
            return Ok(want.to_string());
        }
        bail!("it has no database {want} (it has: {})", found.join(", "));
    }
    let own: Vec<String> = found.into_iter().filter(|d| !system.contains(&d.as_str())).collect();
    match own.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!("it holds no database but the server's own"),
        many => bail!(
            "it holds {} databases ({}): say which with database = 'NAME' (--replay-database)",
            many.len(),
            many.join(", ")
        ),
    }
}

fn postgres(copy: &Path, version: u32, database: Option<&str>, dest: &Path) -> Result<String> {
    let binaries = Binaries::Version(version.to_string());
    let (settings, password) = managed_pg::prepare_copy(copy, &binaries)?;
    let server = managed_pg::ManagedPg::start(&binaries, copy, None, &settings, &Placement::default())?;
    let info = PgConnInfo {
        host: "127.0.0.1".into(),
        port: server.port,
        user: managed_pg::SUPERUSER.into(),
        password: Some(password),
        dbname: "template1".into(),
    };
    let sql = "SELECT datname FROM pg_database WHERE NOT datistemplate AND datallowconn ORDER BY 1";
    let found = info.connect("template1")?.query(sql, &[])?.iter().map(|r| r.get(0)).collect();
    let name = pick(found, database, &["postgres"])?;
    backup::logical(Engine::Postgres, &info.client_env(&name), Some(server.bin_dir()), dest)?;
    Ok(name)
}

fn mariadb(copy: &Path, database: Option<&str>, dest: &Path) -> Result<String> {
    if let Some(isl) = file_with_extension(copy, "isl") {
        bail!(
            "{} names a table's file outside the directory (created with DATA DIRECTORY): its server would write \
             there; copy the directory with those files moved in, or give a dump",
            isl.strip_prefix(copy).unwrap_or(&isl).display()
        );
    }
    let mut settings = managed_maria::private_copy_settings();
    // A mariabackup backup says the page size it needs (a server with another refuses it).
    let backup_cnf = std::fs::read_to_string(copy.join("backup-my.cnf")).unwrap_or_default();
    let page_size = backup_cnf.lines().find_map(|l| l.trim().strip_prefix("innodb_page_size="));
    settings.extend(page_size.map(|v| ("innodb_page_size".to_string(), v.trim().to_string())));
    let server = managed_maria::ManagedMaria::start(&Binaries::Packaged, copy, None, &settings, &Placement::default())?;
    let socket = server.socket().context("the copy's MariaDB is not running")?;
    let opts = mysql::OptsBuilder::new().user(Some("root")).socket(Some(socket.display().to_string()));
    let mut conn = mysql::Conn::new(opts).context("cannot reach the copy's MariaDB over its socket")?;
    let listed: Vec<String> = mysql::prelude::Queryable::query(&mut conn, "SHOW DATABASES")?;
    // A database is a directory with its db.opt (dbvs's own tmp/ is a directory too).
    let found = listed.into_iter().filter(|d| copy.join(d).join("db.opt").is_file()).collect();
    let name = pick(found, database, &["mysql", "performance_schema", "sys"])?;
    let env = [
        ("MYSQL_UNIX_PORT", socket.display().to_string()),
        ("MYSQL_USER", "root".into()),
        ("MYSQL_DATABASE", name.clone()),
    ];
    backup::logical(Engine::Mariadb, &env.map(|(k, v)| (k.to_string(), v)), None, dest)?;
    Ok(name)
}

/// A file under `dir` whose name ends in `.ext`, if there is one.
fn file_with_extension(dir: &Path, ext: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let (path, kind) = (entry.path(), entry.file_type().ok()?);
        if kind.is_dir() {
            if let Some(found) = file_with_extension(&path, ext) {
                return Some(found);
            }
        } else if path.extension().is_some_and(|e| e == ext) {
            return Some(path);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_the_one_asked_for_or_the_only_one_of_the_user_s() {
        let found = || vec!["app".to_string(), "postgres".to_string(), "reports".to_string()];
        assert_eq!(pick(found(), Some("postgres"), &["postgres"]).unwrap(), "postgres", "asked for, it is taken");
        assert_eq!(pick(vec!["app".into(), "postgres".into()], None, &["postgres"]).unwrap(), "app");
        let e = pick(found(), None, &["postgres"]).unwrap_err().to_string();
        assert!(e.contains("holds 2 databases (app, reports)") && e.contains("--replay-database"), "{e}");
        let e = pick(found(), Some("shop"), &["postgres"]).unwrap_err().to_string();
        assert!(e.contains("has no database shop (it has: app, postgres, reports)"), "{e}");
        assert!(pick(vec!["postgres".into()], None, &["postgres"]).is_err());
    }

    #[test]
    fn a_file_naming_a_path_outside_is_found_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("shop")).unwrap();
        std::fs::write(dir.path().join("shop/orders.ibd"), "").unwrap();
        assert_eq!(file_with_extension(dir.path(), "isl"), None);
        std::fs::write(dir.path().join("shop/orders.isl"), "/elsewhere/orders.ibd").unwrap();
        assert_eq!(file_with_extension(dir.path(), "isl"), Some(dir.path().join("shop/orders.isl")));
    }
}
