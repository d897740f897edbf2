//! A private MariaDB instance that dbvs owns: `mariadb-install-db` on a data directory,
//! `mariadbd` on a free loopback port as a child process, stopped (SIGTERM, then waited
//! for) when the last user goes away. As root the server drops to the `mysql` user itself.
//!
//! A run's fresh copy is a copy of the whole data directory, made while the server is
//! stopped; the server then restarts on the copy (same port) for the run. With a log
//! directory, each data directory's InnoDB redo log lives in a subdirectory of it named
//! after the data directory, and is copied with it.

use super::{Binaries, ManagedServer};
use crate::sys::lease::{Lease, Step};
use crate::sys::lock::DirLock;
use crate::sys::Placement;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The user dbvs creates and connects as; no password, loopback only.
pub const SUPERUSER: &str = "dbvs";
const SERVER_USER: &str = "mysql";

pub struct ManagedMaria {
    mariadbd: PathBuf,
    /// An installation directory's server looks up its messages and plugins under it.
    basedir: Option<PathBuf>,
    settings: Vec<(String, String)>,
    as_root: bool,
    /// The pristine data directory.
    data: PathBuf,
    /// Where the redo logs live, when not in the data directories.
    log: Option<PathBuf>,
    pub port: u16,
    pub version: String,
    /// The running server and the data directory it serves.
    running: Mutex<Option<(Child, PathBuf)>>,
    /// Control groups the server joins: a variant's limits.
    place: Placement,
    /// Stops the server if dbvs is killed (the step names the running server's pid).
    lease: Mutex<Lease>,
    _lock: DirLock,
}

/// The server and its installer: the packaged ones, or an installation directory's (its
/// `--basedir`, where the installer finds the system tables' scripts).
struct Tools {
    mariadbd: PathBuf,
    install: PathBuf,
    basedir: Option<PathBuf>,
}

impl Tools {
    fn of(binaries: &Binaries) -> Result<Self> {
        match binaries {
            Binaries::Packaged => Ok(Self {
                mariadbd: crate::sys::require("mariadbd", "mariadb-server")?,
                install: crate::sys::require("mariadb-install-db", "mariadb-server")?,
                basedir: None,
            }),
            Binaries::Version(v) => {
                bail!("MariaDB has one packaged version here; name MariaDB {v}'s installation directory instead")
            }
            Binaries::Prefix(prefix) => {
                let find =
                    |name: &str, dirs: &[&str]| dirs.iter().map(|d| prefix.join(d).join(name)).find(|p| p.is_file());
                let missing = |what: &str| {
                    anyhow::anyhow!(
                        "{} has no {what}: give a MariaDB installation directory (the prefix its `make install` or \
                         binary tarball made)",
                        prefix.display()
                    )
                };
                Ok(Self {
                    mariadbd: find("mariadbd", &["sbin", "bin"]).ok_or_else(|| missing("sbin/ or bin/mariadbd"))?,
                    install: find("mariadb-install-db", &["bin", "scripts"])
                        .ok_or_else(|| missing("bin/ or scripts/mariadb-install-db"))?,
                    basedir: Some(prefix.clone()),
                })
            }
        }
    }
}

/// Whether `binaries` names a MariaDB this host has; the error says what is missing.
pub fn check_binaries(binaries: &Binaries) -> Result<()> {
    Tools::of(binaries).map(drop)
}

/// The `mariadbd` of `binaries`.
pub fn server_binary(binaries: &Binaries) -> Result<PathBuf> {
    Tools::of(binaries).map(|t| t.mariadbd)
}

pub fn default_data_dir(binaries: &Binaries) -> PathBuf {
    let name = match binaries {
        Binaries::Prefix(prefix) => format!("mariadb-{}", crate::sys::names::slug(&prefix.display().to_string())),
        _ => "mariadb".into(),
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        PathBuf::from("/var/lib/dbvs/managed").join(name)
    } else {
        crate::sys::data_home().join("managed").join(name)
    }
}

fn error_log(data: &Path) -> PathBuf {
    data.join("dbvs-server.log")
}

fn tmpdir(data: &Path) -> PathBuf {
    data.join("tmp")
}

/// The server's socket: in its data directory, or, where that path is longer than a socket
/// address holds (107 bytes; mariadbd refuses to start), in /tmp under a name derived from
/// the data directory.
fn socket(data: &Path) -> PathBuf {
    let beside = data.join("mariadbd.sock");
    if beside.as_os_str().len() <= SOCKET_PATH_MAX {
        return beside;
    }
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut h);
    PathBuf::from(format!("/tmp/dbvs-mariadb-{:016x}.sock", h.finish()))
}

/// The longest path a Unix socket address takes (`sun_path` less its terminating zero).
const SOCKET_PATH_MAX: usize = 107;

/// Settings MariaDB fixes when its data directory is installed: the install's bootstrap
/// server takes them too, or the server would refuse the data directory.
const AT_INSTALL: &[&str] = &["innodb_page_size", "lower_case_table_names"];

/// The settings of a server on a private copy of a user's data directory
/// ([`super::data_copy`]): no grant tables (it has no password of the user's to ask), so
/// no network either, only the socket in the copy's own directory; and no replication.
pub fn private_copy_settings() -> Vec<(String, String)> {
    ["skip-grant-tables", "skip-networking", "skip-slave-start"].map(|k| (k.to_string(), "1".to_string())).into()
}

impl ManagedMaria {
    /// Installs the data directory if needed (its redo log under `log` when given) and
    /// starts the server.
    pub fn start(
        binaries: &Binaries,
        data: &Path,
        log: Option<&Path>,
        settings: &[(String, String)],
        place: &Placement,
    ) -> Result<Self> {
        let tools = Tools::of(binaries)?;
        std::fs::create_dir_all(data).with_context(|| format!("cannot create data directory {}", data.display()))?;
        let data = data.canonicalize()?;
        let lock = DirLock::acquire(&data, "the managed MariaDB data directory")?;
        let lease = Lease::new(&format!("managed MariaDB on {}", data.display()))?;
        // SAFETY: geteuid has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        // Temporary files stay on the data directory's storage (so an encrypted layer covers
        // them too), and concurrent installs cannot collide in a shared /tmp.
        std::fs::create_dir_all(tmpdir(&data))?;
        let fresh = !data.join("mysql").exists();
        if let Some(l) = log.filter(|l| !fresh && !redo_dir(l, &data).join("ib_logfile0").exists()) {
            bail!(
                "{} was made with its redo log elsewhere, not under {}: delete the data directory or give the \
                 --log-dir it was made with",
                data.display(),
                l.display()
            );
        }
        let log = match log {
            Some(l) => {
                std::fs::create_dir_all(redo_dir(l, &data))
                    .with_context(|| format!("cannot create log directory {}", l.display()))?;
                Some(l.canonicalize()?)
            }
            None => None,
        };
        for dir in std::iter::once(&data).chain(&log) {
            give_to_server(dir)?;
        }
        if fresh {
            let mut c = Command::new(&tools.install);
            c.arg("--no-defaults")
                .args(tools.basedir.iter().map(|b| format!("--basedir={}", b.display())))
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--tmpdir={}", tmpdir(&data).display()))
                .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
            // Options install-db does not know go to its bootstrap server.
            if let Some(l) = &log {
                c.arg(format!("--innodb-log-group-home-dir={}", redo_dir(l, &data).display()));
            }
            for (k, v) in settings.iter().filter(|(k, _)| AT_INSTALL.contains(&k.replace('-', "_").as_str())) {
                c.arg(format!("--{k}={v}"));
            }
            if as_root {
                c.arg(format!("--user={SERVER_USER}"));
            }
            let out = c.stdin(Stdio::null()).output()?;
            if !out.status.success() {
                bail!("mariadb-install-db failed: {}", String::from_utf8_lossy(&out.stderr).trim());
            }
        }
        let mut server = Self {
            mariadbd: tools.mariadbd,
            basedir: tools.basedir,
            settings: settings.to_vec(),
            as_root,
            port: std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port(),
            version: String::new(),
            running: Mutex::new(None),
            place: place.clone(),
            lease: Mutex::new(lease),
            _lock: lock,
            data,
            log,
        };
        server.start_on(&server.data.clone())?;
        server.version = server.first_answer()?;
        let pid = server.running.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|(c, _)| c.id());
        if server.basedir.is_some() {
            server.version = format!("{} from {}", server.version, crate::sys::executable_of(pid));
        }
        server.version += &place.said_of(pid);
        if fresh {
            server.admin_when_ready(|c| {
                use mysql::prelude::Queryable;
                c.query_drop(format!(
                    "CREATE USER IF NOT EXISTS '{SUPERUSER}'@'127.0.0.1'; \
                     GRANT ALL ON *.* TO '{SUPERUSER}'@'127.0.0.1' WITH GRANT OPTION"
                ))?;
                Ok(())
            })?;
        }
        Ok(server)
    }

    /// Starts mariadbd on `data` and waits until it accepts connections.
    fn start_on(&self, data: &Path) -> Result<()> {
        let mut c = Command::new(&self.mariadbd);
        c.arg("--no-defaults")
            .args(self.basedir.iter().map(|b| format!("--basedir={}", b.display())))
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmpdir(data).display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", socket(data).display()))
            .arg(format!("--pid-file={}", data.join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", error_log(data).display()));
        if let Some(redo) = self.redo_dir(data) {
            c.arg(format!("--innodb-log-group-home-dir={}", redo.display()));
        }
        for (k, v) in &self.settings {
            c.arg(format!("--{k}={v}"));
        }
        if self.as_root {
            c.arg(format!("--user={SERVER_USER}"));
        }
        // The server inherits a study variant's resource limits.
        self.place.on_spawn(&mut c)?;
        // A socket file left by a server that did not shut down cleanly would pass for ready.
        let sock = socket(data);
        let _ = std::fs::remove_file(&sock);
        if !sock.starts_with(data) {
            // In /tmp (a long data directory's): removed after the server stops, killed or not.
            let mut lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
            lease.forget(|s| matches!(s, Step::RemoveFile { path } if *path == sock))?;
            lease.push_last_undone(Step::RemoveFile { path: sock })?;
        }
        // The server inherits dbvs's environment, AES-NI masking included.
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start mariadbd")?;
        let step = Step::StopProcess { pid: child.id(), comm: "mariadbd".into() };
        self.lease
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(|s| matches!(s, Step::StopProcess { .. }), step)?;
        let t = Instant::now();
        let tail = || last_lines(&error_log(data));
        while t.elapsed() < Duration::from_secs(60) {
            if let Some(status) = child.try_wait()? {
                use std::os::unix::process::ExitStatusExt;
                let likely = match status.signal() {
                    // Nothing else here sends SIGKILL to a starting server.
                    Some(libc::SIGKILL) => "killed: under a memory limit, the kernel's OOM killer; raise the limit \
                                           or size the server's buffers down with server settings"
                        .to_string(),
                    _ => format!("port {} busy, or a bad setting?", self.port),
                };
                bail!("mariadbd exited at start ({status}; {likely}): {}", tail());
            }
            // Ready when both listeners accept: TCP (runs) and the socket (administration);
            // a server without networking (a private copy's) has the socket alone.
            let networked = !self.settings.iter().any(|(k, _)| k == "skip-networking");
            if std::os::unix::net::UnixStream::connect(socket(data)).is_ok()
                && (!networked || std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok())
            {
                *self.running.lock().unwrap_or_else(|p| p.into_inner()) = Some((child, data.to_path_buf()));
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        bail!("mariadbd did not accept connections within 60 s: {}", tail())
    }

    /// Stops the server (SIGTERM, then waits; SIGKILL after a minute).
    fn stop(&self) {
        let Some((mut child, _)) = self.running.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Stops the server, copies the pristine data directory (and its redo log) to `dest`
    /// and serves the copy.
    pub fn serve_copy(&self, dest: &Path) -> Result<()> {
        self.stop();
        let mut copies = vec![(self.data.clone(), dest.to_path_buf())];
        copies.extend(self.redo_dir(&self.data).zip(self.redo_dir(dest)));
        // If dbvs is killed, the copy goes once the server is stopped.
        let mut lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
        for (_, to) in &copies {
            lease.push_last_undone(Step::RemoveDir { path: to.clone() })?;
        }
        drop(lease);
        for (from, to) in copies {
            let out = Command::new("cp").args(["-a", "--reflink=auto"]).arg(&from).arg(&to).output()?;
            if !out.status.success() {
                self.discard_copy(dest);
                self.start_on(&self.data.clone())?;
                bail!("cannot copy {}: {}", from.display(), String::from_utf8_lossy(&out.stderr).trim());
            }
        }
        self.start_on(dest)
    }

    /// Stops serving a copy and removes it with its redo log.
    pub fn discard_copy(&self, copy: &Path) {
        self.stop();
        let dirs: Vec<PathBuf> = std::iter::once(copy.to_path_buf()).chain(self.redo_dir(copy)).collect();
        for d in &dirs {
            let _ = std::fs::remove_dir_all(d);
        }
        let mut lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
        let _ = lease.forget(|s| matches!(s, Step::RemoveDir { path } if dirs.contains(path)));
    }

    /// Where `data`'s redo log lives, when the redo logs are kept apart.
    fn redo_dir(&self, data: &Path) -> Option<PathBuf> {
        self.log.as_deref().map(|l| redo_dir(l, data))
    }

    /// The pristine data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// A physical backup of database `db` of the data directory being served, into the new
    /// directory `dest` ([`super::backup::mariabackup`]), read with the server's own options.
    pub fn backup(&self, db: &str, dest: &Path) -> Result<()> {
        let data = self.serving().context("the managed MariaDB is not running")?;
        let path = |p: &Path| p.display().to_string();
        let mut options = vec![("datadir".to_string(), path(&data)), ("tmpdir".to_string(), path(&tmpdir(&data)))];
        options.extend(self.redo_dir(&data).map(|r| ("innodb_log_group_home_dir".to_string(), path(&r))));
        options.extend(self.settings.iter().cloned());
        super::backup::mariabackup(&options, &socket(&data), db, dest, &self.place.cgroups)
    }

    /// One of the server's status variables (`SHOW GLOBAL STATUS`), as text; empty when
    /// the server has no such variable. Asked again while a joining Galera node drops
    /// connections.
    pub fn status(&self, name: &str) -> Result<String> {
        self.admin_when_ready(|c| {
            use mysql::prelude::Queryable;
            let row: Option<(String, String)> = c.exec_first(
                "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = UPPER(?)",
                (name,),
            )?;
            Ok(row.map(|(_, v)| v).unwrap_or_default())
        })
    }

    /// The server's version, asked until it answers.
    fn first_answer(&self) -> Result<String> {
        self.admin_when_ready(|c| {
            use mysql::prelude::Queryable;
            Ok(c.query_first::<String, _>("SELECT VERSION()")?.unwrap_or_default())
        })
    }

    /// Runs `f` as root, again while the server is not ready for it (for up to a minute): a
    /// Galera node that has just joined accepts connections and may still drop them while it
    /// takes the cluster's state, or refuse statements until WSREP has prepared it (1047).
    fn admin_when_ready<T>(&self, f: impl Fn(&mut mysql::Conn) -> Result<T>) -> Result<T> {
        let t = Instant::now();
        loop {
            match self.admin(&f) {
                Err(e) if not_ready(&e) && t.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(200))
                }
                done => return done,
            }
        }
    }

    /// Runs `f` as root over the running server's socket.
    fn admin<T>(&self, f: impl FnOnce(&mut mysql::Conn) -> Result<T>) -> Result<T> {
        let data = self.serving().context("the managed MariaDB is not running")?;
        let opts = mysql::OptsBuilder::new().user(Some("root")).socket(Some(socket(&data).display().to_string()));
        let mut c = mysql::Conn::new(opts).context("cannot reach the managed MariaDB over its socket")?;
        f(&mut c)
    }

    /// The running server's socket.
    pub fn socket(&self) -> Option<PathBuf> {
        self.serving().map(|data| socket(&data))
    }

    fn serving(&self) -> Option<PathBuf> {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|(_, d)| d.clone())
    }
}

/// The directory holding `data`'s redo log under the log directory `log`: `log`/<data's name>.
fn redo_dir(log: &Path, data: &Path) -> PathBuf {
    log.join(data.file_name().unwrap_or_default())
}

fn last_lines(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

impl ManagedServer for ManagedMaria {
    fn log_tail(&self) -> String {
        last_lines(&error_log(&self.serving().unwrap_or_else(|| self.data.clone())))
    }

    fn restart(&self) -> Result<()> {
        let data = self.serving().context("the managed MariaDB is not running")?;
        self.stop();
        self.start_on(&data)
    }
    fn data_dir(&self) -> PathBuf {
        self.serving().unwrap_or_else(|| self.data.clone())
    }
    fn log_dir(&self) -> Option<PathBuf> {
        self.redo_dir(&super::ManagedServer::data_dir(self))
    }
    fn pid_file(&self) -> PathBuf {
        super::ManagedServer::data_dir(self).join("mariadbd.pid")
    }
}

impl Drop for ManagedMaria {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Makes `dir` the server's own: as root the server runs as the `mysql` user, otherwise
/// as this one, who owns it already.
pub(crate) fn give_to_server(dir: &Path) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let out = Command::new("chown").arg("-R").arg(format!("{SERVER_USER}:{SERVER_USER}")).arg(dir).output()?;
    if !out.status.success() {
        bail!("cannot give {} to the {SERVER_USER} user: is mariadb-server installed?", dir.display());
    }
    Ok(())
}

/// Whether a statement failed because the server is not ready yet: a dropped connection,
/// or a Galera node that WSREP has not prepared for use (ER_UNKNOWN_COM_ERROR, 1047).
fn not_ready(e: &anyhow::Error) -> bool {
    e.chain().any(|c| match c.downcast_ref::<mysql::Error>() {
        Some(mysql::Error::IoError(_)) => true,
        Some(mysql::Error::MySqlError(m)) => m.code == 1047,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_path_too_long_for_an_address_moves_to_tmp_per_data_directory() {
        let short = Path::new("/var/tmp/d");
        assert_eq!(socket(short), short.join("mariadbd.sock"));
        let long = PathBuf::from(format!("/work/{}/data/server.run-1", "x".repeat(100)));
        let (a, b) = (socket(&long), socket(&long.with_file_name("server.run-2")));
        assert!(a.starts_with("/tmp") && a.as_os_str().len() <= SOCKET_PATH_MAX, "{}", a.display());
        assert_eq!(a, socket(&long), "the same data directory, the same socket");
        assert_ne!(a, b, "another data directory, another socket");
    }
}
