//! A private MariaDB instance that dbvs owns: `mariadb-install-db` on a data directory,
//! `mariadbd` on a free loopback port as a child process, stopped (SIGTERM, then waited
//! for) when the last user goes away. As root the server drops to the `mysql` user itself.

use super::ManagedServer;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The user dbvs creates and connects as; no password, loopback only.
pub const SUPERUSER: &str = "dbvs";
const SERVER_USER: &str = "mysql";

pub struct ManagedMaria {
    child: Child,
    data: PathBuf,
    pub port: u16,
    pub version: String,
}

fn tool(name: &str) -> Result<PathBuf> {
    crate::variants::require(name, "mariadb-server")
}

pub fn default_data_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        PathBuf::from("/var/lib/dbvs/managed/mariadb")
    } else {
        crate::store::data_home().join("managed/mariadb")
    }
}

impl ManagedMaria {
    fn log(data: &Path) -> PathBuf {
        data.join("dbvs-server.log")
    }

    pub fn socket(&self) -> PathBuf {
        self.data.join("mariadbd.sock")
    }

    /// Installs the data directory if needed and starts the server.
    pub fn start(data: &Path, settings: &[(String, String)], env: &[(String, String)]) -> Result<Self> {
        let (mariadbd, install) = (tool("mariadbd")?, tool("mariadb-install-db")?);
        std::fs::create_dir_all(data).with_context(|| format!("cannot create data directory {}", data.display()))?;
        let data = data.canonicalize()?;
        // SAFETY: geteuid has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        let user_arg = |c: &mut Command| {
            if as_root {
                c.arg(format!("--user={SERVER_USER}"));
            }
        };
        if as_root {
            let out = Command::new("chown").arg(format!("{SERVER_USER}:{SERVER_USER}")).arg(&data).output()?;
            if !out.status.success() {
                bail!("cannot give {} to the {SERVER_USER} user: is mariadb-server installed?", data.display());
            }
        }
        let fresh = !data.join("mysql").exists();
        if fresh {
            let mut c = Command::new(&install);
            c.arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
            user_arg(&mut c);
            let out = c.stdin(Stdio::null()).output()?;
            if !out.status.success() {
                bail!("mariadb-install-db failed: {}", String::from_utf8_lossy(&out.stderr).trim());
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut c = Command::new(&mariadbd);
        c.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", data.join("mariadbd.sock").display()))
            .arg(format!("--pid-file={}", data.join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", Self::log(&data).display()));
        for (k, v) in settings {
            c.arg(format!("--{k}={v}"));
        }
        user_arg(&mut c);
        let child = c
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start mariadbd")?;
        let mut server = Self { child, data, port, version: String::new() };
        server.wait_ready()?;
        server.version = server.admin(|c| {
            use mysql::prelude::Queryable;
            Ok(c.query_first::<String, _>("SELECT VERSION()")?.unwrap_or_default())
        })?;
        if fresh {
            server.admin(|c| {
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

    /// Runs `f` as root over the server's socket.
    fn admin<T>(&self, f: impl FnOnce(&mut mysql::Conn) -> Result<T>) -> Result<T> {
        let opts = mysql::OptsBuilder::new().user(Some("root")).socket(Some(self.socket().display().to_string()));
        let mut c = mysql::Conn::new(opts).context("cannot reach the managed MariaDB over its socket")?;
        f(&mut c)
    }

    fn wait_ready(&mut self) -> Result<()> {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "mariadbd exited at start ({status}; port {} busy, or a bad setting?): {}",
                    self.port,
                    self.log_tail()
                );
            }
            if self.socket().exists() && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("mariadbd did not accept connections within 60 s: {}", self.log_tail())
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

impl super::ManagedServer for ManagedMaria {
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(Self::log(&self.data)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(3)..].join(" / ")
    }
}

impl Drop for ManagedMaria {
    fn drop(&mut self) {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
