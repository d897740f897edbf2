//! A private PostgreSQL instance that dbvs owns: initdb on a data directory, a free loopback
//! port, and `pg_ctl stop` when the last user of it goes away (on every exit path, since
//! it is a Drop). As root, the server runs as the `postgres` system user, because
//! PostgreSQL refuses to run as root.

use super::spec::Binaries;
use crate::sys::lease::{Lease, Step};
use crate::sys::lock::DirLock;
use crate::sys::Placement;
use anyhow::{bail, Context, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The system user a root-run dbvs starts PostgreSQL as.
const SERVER_USER: &str = "postgres";
/// The superuser initdb creates; trust authentication, loopback only.
pub const SUPERUSER: &str = "dbvs";

pub struct ManagedPg {
    bin: PathBuf,
    data: PathBuf,
    pub port: u16,
    pub version: String,
    run_as: Option<(u32, u32)>,
    /// Control groups the postmaster (and so every backend) joins: a variant's limits.
    place: Placement,
    /// Stops the server if dbvs is killed.
    _lease: Lease,
    _lock: DirLock,
}

/// The server binaries' directory of `binaries` (the newest installed when packaged).
pub fn bin_dir(binaries: &Binaries) -> Result<PathBuf> {
    find_bin(binaries).map(|(bin, _)| bin)
}

/// Settings PostgreSQL fixes when its data directory is made: initdb takes them, and the
/// server reads them back (`SHOW`) but cannot change them.
pub const AT_INITDB: &[&str] = &["data_checksums", "wal_segment_size"];

/// initdb's arguments for the settings among `settings` that it fixes.
fn initdb_args(settings: &[(String, String)]) -> Result<Vec<String>> {
    let mut args = vec![];
    for (name, value) in settings.iter().filter(|(k, _)| AT_INITDB.contains(&k.as_str())) {
        match (name.as_str(), value.to_ascii_lowercase().as_str()) {
            ("data_checksums", "on" | "true" | "1") => args.push("--data-checksums".to_string()),
            ("data_checksums", "off" | "false" | "0") => {}
            ("wal_segment_size", v) => {
                let mb: u32 = v
                    .trim_end_matches("mb")
                    .parse()
                    .ok()
                    .filter(|m: &u32| m.is_power_of_two() && *m <= 1024)
                    .with_context(|| {
                        format!("wal_segment_size = {value}: a power of two from 1MB to 1024MB, e.g. \"64MB\"")
                    })?;
                args.push(format!("--wal-segsize={mb}"));
            }
            _ => bail!("{name} = {value}: on or off"),
        }
    }
    Ok(args)
}

/// The server binaries' directory and the server's version.
fn find_bin(binaries: &Binaries) -> Result<(PathBuf, String)> {
    let version = match binaries {
        Binaries::Packaged => None,
        Binaries::Version(v) => Some(v.as_str()),
        Binaries::Prefix(prefix) => return installed_in(prefix),
    };
    let missing = "PostgreSQL server binaries not found: install them with 'apt-get install postgresql'";
    let mut versions: Vec<u32> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| anyhow::anyhow!(missing))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|v| Path::new(&format!("/usr/lib/postgresql/{v}/bin/initdb")).is_file())
        .collect();
    versions.sort_unstable();
    let v = match version {
        Some(want) => {
            let want: u32 = want.parse().with_context(|| format!("'{want}' is not a PostgreSQL major version"))?;
            if !versions.contains(&want) {
                bail!("PostgreSQL {want} is not installed (found {versions:?}); apt-get install postgresql-{want}");
            }
            want
        }
        None => *versions.last().context(missing)?,
    };
    Ok((PathBuf::from(format!("/usr/lib/postgresql/{v}/bin")), v.to_string()))
}

/// The binaries of an installation directory (`make install`'s prefix), and the version
/// its server says it is (the started server adds the binary it runs, see `ManagedPg::start`).
fn installed_in(prefix: &Path) -> Result<(PathBuf, String)> {
    let bin = prefix.join("bin");
    if let Some(missing) = ["initdb", "postgres", "pg_ctl"].into_iter().find(|t| !bin.join(t).is_file()) {
        bail!(
            "{} has no bin/{missing}: give a PostgreSQL installation directory (the prefix its `make install` \
             installed into, holding bin/initdb, bin/postgres and bin/pg_ctl)",
            prefix.display()
        );
    }
    let out = Command::new(bin.join("postgres")).arg("--version").output();
    let said = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    let version = said.split_whitespace().nth(2).filter(|v| v.starts_with(|c: char| c.is_ascii_digit()));
    let version = version.with_context(|| {
        format!(
            "{} does not say its version ('{}'): is it a PostgreSQL server?",
            bin.join("postgres").display(),
            said.trim()
        )
    })?;
    Ok((bin, version.to_string()))
}

/// uid and gid to run the server as, when we are root.
fn server_user() -> Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::ffi::CString::new(SERVER_USER).expect("no NUL");
    // SAFETY: getpwnam returns a pointer into static storage or null; we copy out at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        bail!("running as root, dbvs starts PostgreSQL as the '{SERVER_USER}' user, which does not exist: apt-get install postgresql");
    }
    // SAFETY: pw is non-null and points at a valid passwd record.
    Ok(Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) }))
}

/// The major version of the PostgreSQL data directory `dir`, if dbvs can start a copy of it:
/// 12 or newer (older ones recover by `recovery.conf`), with its server installed.
pub fn data_dir_version(dir: &Path) -> Result<u32> {
    let said = std::fs::read_to_string(dir.join("PG_VERSION"))
        .map_err(|_| anyhow::anyhow!("{} is not a PostgreSQL data directory (it has no PG_VERSION)", dir.display()))?;
    let version = said.trim().parse::<u32>().ok().filter(|v| *v >= 12).with_context(|| {
        format!(
            "{} is PostgreSQL {}'s: dbvs starts copies of PostgreSQL 12 and newer; give a dump (pg_dump) instead",
            dir.display(),
            said.trim()
        )
    })?;
    find_bin(&Binaries::Version(version.to_string()))?;
    Ok(version)
}

/// Makes a copy of a user's data directory fit to start privately ([`super::data_copy`]):
/// no pid file, standby signal or tablespace map of the user's server (the copy holds its
/// tablespaces), its own configuration (Debian keeps the user's in /etc; `ALTER SYSTEM`'s
/// is dropped), all of it the server user's, and dbvs's superuser with a random password,
/// which loopback asks for. Returns the settings that keep its server from archiving,
/// replicating or loading the user's libraries, and the password.
pub fn prepare_copy(copy: &Path, binaries: &Binaries) -> Result<(Vec<(String, String)>, String)> {
    for leftover in ["postmaster.pid", "standby.signal", "recovery.signal", "tablespace_map"] {
        let _ = std::fs::remove_file(copy.join(leftover));
    }
    let (hba, ident) = (copy.join("pg_hba.conf"), copy.join("pg_ident.conf"));
    std::fs::write(&hba, format!("host all {SUPERUSER} 127.0.0.1/32 md5\n"))?;
    std::fs::write(&ident, "")?;
    std::fs::write(copy.join("postgresql.conf"), "# dbvs: a private copy, to dump a database from\n")?;
    std::fs::write(copy.join("postgresql.auto.conf"), "")?;
    let path = |p: &Path| p.display().to_string();
    let settings: Vec<(String, String)> = [
        ("hba_file", path(&hba)),
        ("ident_file", path(&ident)),
        ("archive_mode", "off".into()),
        ("primary_conninfo", String::new()),
        ("restore_command", String::new()),
        ("ssl", "off".into()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .into();
    let run_as = server_user()?;
    if let Some((uid, gid)) = run_as {
        let mut chown = Command::new(crate::sys::require("chown", "coreutils")?);
        chown.arg("-R").arg(format!("{uid}:{gid}")).arg(copy);
        crate::sys::run_tool(&mut chown)?;
    }
    use rand::Rng;
    let password: String = rand::rng().sample_iter(rand::distr::Alphanumeric).take(32).map(char::from).collect();
    // A standalone backend is the bootstrap superuser, whatever the user named it.
    let mut single = Command::new(bin_dir(binaries)?.join("postgres"));
    single.arg("--single").arg("-D").arg(copy);
    for (k, v) in &settings {
        single.arg("-c").arg(format!("{k}={v}"));
    }
    if let Some((uid, gid)) = run_as {
        single.uid(uid).gid(gid);
    }
    let role = format!("{SUPERUSER} SUPERUSER LOGIN PASSWORD '{password}'");
    let sql = format!(
        "DO $$BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{SUPERUSER}') THEN ALTER ROLE {role}; \
         ELSE CREATE ROLE {role}; END IF; END$$;\n"
    );
    single.arg("template1").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut backend = single.spawn().context("cannot start PostgreSQL's standalone backend")?;
    // Dropped after writing: the backend reads to the end of its input, then exits.
    std::io::Write::write_all(&mut backend.stdin.take().context("the backend's input")?, sql.as_bytes())?;
    let out = backend.wait_with_output()?;
    let said = (String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr)).replace(&password, "***");
    let error = said.lines().find(|l| l.contains("ERROR:") || l.contains("FATAL:") || l.contains("PANIC:"));
    if !out.status.success() || error.is_some() {
        bail!("PostgreSQL does not open the copy: {}", error.unwrap_or(said.lines().last().unwrap_or("")).trim());
    }
    Ok((settings, password))
}

/// Where a managed instance lives unless `--data-dir` says otherwise. As root the server
/// runs as `postgres`, which cannot enter root's home, so the data goes under /var/lib.
pub fn default_data_dir(binaries: &Binaries) -> Result<PathBuf> {
    let name = match binaries {
        Binaries::Packaged => "postgres-default".to_string(),
        Binaries::Version(v) => format!("postgres-{v}"),
        // A data directory belongs to one major version: an installation's is its own.
        Binaries::Prefix(prefix) => format!("postgres-{}", crate::sys::names::slug(&prefix.display().to_string())),
    };
    Ok(match server_user()? {
        Some(_) => PathBuf::from("/var/lib/dbvs/managed").join(name),
        None => crate::sys::data_home().join("managed").join(name),
    })
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl ManagedPg {
    fn command(&self, tool: &str) -> Command {
        let mut c = Command::new(self.bin.join(tool));
        if let Some((uid, gid)) = self.run_as {
            c.uid(uid).gid(gid);
        }
        c.stdin(Stdio::null());
        c
    }

    fn log(&self) -> PathBuf {
        self.data.join("dbvs-server.log")
    }

    /// Creates the data directory if needed (its WAL in `log` when given) and starts the server.
    pub fn start(
        binaries: &Binaries,
        data: &Path,
        log: Option<&Path>,
        settings: &[(String, String)],
        place: &Placement,
    ) -> Result<Self> {
        let (bin, version) = find_bin(binaries)?;
        let run_as = server_user()?;
        std::fs::create_dir_all(data).with_context(|| format!("cannot create data directory {}", data.display()))?;
        let data = data.canonicalize()?;
        let lock = DirLock::acquire(&data, "the managed PostgreSQL data directory")?;
        let mut lease = Lease::new(&format!("managed PostgreSQL on {}", data.display()))?;
        lease.push(Step::StopServer { pid_file: data.join("postmaster.pid"), comm: "postgres".into() })?;
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&data, Some(uid), Some(gid))?;
        }
        let mut pg =
            Self { bin, data, port: free_port()?, version, run_as, place: place.clone(), _lease: lease, _lock: lock };
        if !pg.data.join("PG_VERSION").exists() {
            let mut initdb = pg.command("initdb");
            initdb.arg("-D").arg(&pg.data).args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-locale"]);
            initdb.args(initdb_args(settings)?);
            if let Some(log) = log {
                initdb.arg(format!("--waldir={}", pg.prepare_wal_dir(log)?.display()));
            }
            let out = initdb.output()?;
            if !out.status.success() {
                bail!(
                    "initdb failed (the '{SERVER_USER}' user must be able to reach {}): {}",
                    pg.data.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        } else if let Some(log) = log {
            if super::ManagedServer::log_dir(&pg) != log.canonicalize().ok() {
                bail!(
                    "{} was made with its WAL elsewhere, not in {}: delete the data directory or give the --log-dir \
                     it was made with",
                    pg.data.display(),
                    log.display()
                );
            }
        }
        // Every client connects over TCP, and no Unix socket: its path (under a data directory
        // deep in a study's output) can exceed the kernel's 107 bytes, and the server then
        // refuses to start.
        let mut opts = format!("-p {} -c listen_addresses=127.0.0.1 -k ''", pg.port);
        for (k, v) in settings.iter().filter(|(k, _)| !AT_INITDB.contains(&k.as_str())) {
            // pg_ctl hands these to a shell; a value holds no quote (settings::parse_setting).
            opts += &format!(" -c {k}='{v}'");
        }
        let mut start = pg.command("pg_ctl");
        start.args(["start", "-w", "-t", "60", "-D"]).arg(&pg.data).arg("-l").arg(pg.log()).args(["-o", &opts]);
        // The postmaster and every backend inherit a study variant's resource limits.
        pg.place.on_spawn(&mut start)?;
        let started = start.output()?;
        if !started.status.success() {
            let tail = super::ManagedServer::log_tail(&pg);
            bail!("PostgreSQL did not start (port {} busy, or a bad setting?): {tail}", pg.port);
        }
        if let Binaries::Prefix(_) = binaries {
            pg.version = format!("{} from {}", pg.version, crate::sys::executable_of(pg.postmaster_pid()));
        }
        pg.version += &pg.place.said_of(pg.postmaster_pid());
        Ok(pg)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The running postmaster's pid, from the first line of its pid file.
    fn postmaster_pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.data.join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// Lets client hosts in at the server's other address (started with `listen_addresses`
    /// naming it): every address but loopback must give a password (a line in
    /// pg_hba.conf), and the superuser gets a new random one, returned. It lives in this
    /// process's memory only (the server keeps its SCRAM hash) and reaches client hosts
    /// inside their ssh sessions.
    pub fn admit_remote(&self) -> Result<String> {
        const RULE: &str = "host all all all scram-sha-256 # dbvs: client hosts, with a password";
        let hba = self.data.join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba).with_context(|| format!("cannot read {}", hba.display()))?;
        if !rules.lines().any(|l| l == RULE) {
            std::fs::write(&hba, format!("{rules}{RULE}\n"))
                .with_context(|| format!("cannot write {}", hba.display()))?;
        }
        use rand::Rng;
        let password: String = rand::rng().sample_iter(rand::distr::Alphanumeric).take(32).map(char::from).collect();
        let local = super::postgres::PgConnInfo {
            host: "127.0.0.1".into(),
            port: self.port,
            user: SUPERUSER.into(),
            password: None,
            dbname: "postgres".into(),
        };
        local.admin(&[format!("ALTER ROLE {SUPERUSER} PASSWORD '{password}'"), "SELECT pg_reload_conf()".into()])?;
        Ok(password)
    }

    /// Makes `log` (the WAL's own directory) the server user's; its canonical path.
    fn prepare_wal_dir(&self, log: &Path) -> Result<PathBuf> {
        std::fs::create_dir_all(log).with_context(|| format!("cannot create WAL directory {}", log.display()))?;
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(log, Some(uid), Some(gid))?;
        }
        Ok(log.canonicalize()?)
    }

    /// The server's own client tools (pg_dump of the same major version).
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }
}

impl super::ManagedServer for ManagedPg {
    fn cgroups(&self) -> &[PathBuf] {
        &self.place.cgroups
    }

    fn stderr_log(&self) -> Option<PathBuf> {
        Some(self.log())
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = &lines[lines.len().saturating_sub(3)..];
        // A PANIC a few lines up (before the crash recovery messages) is the cause.
        let recent = &lines[lines.len().saturating_sub(20)..lines.len() - tail.len()];
        let panic = recent.iter().rev().find(|l| l.contains("PANIC:"));
        panic.into_iter().chain(tail).copied().collect::<Vec<_>>().join(" / ")
    }

    fn data_dir(&self) -> PathBuf {
        self.data.clone()
    }

    /// `pg_wal` is a link to the WAL's directory when initdb was given `--waldir`.
    fn log_dir(&self) -> Option<PathBuf> {
        let wal = self.data.join("pg_wal");
        std::fs::symlink_metadata(&wal).ok()?.file_type().is_symlink().then(|| wal.canonicalize().ok())?
    }

    fn restart(&self) -> Result<()> {
        // pg_ctl restart reuses the options the server was started with (postmaster.opts).
        let mut restart = self.command("pg_ctl");
        restart.args(["restart", "-m", "fast", "-w", "-t", "60", "-D"]).arg(&self.data).arg("-l").arg(self.log());
        self.place.on_spawn(&mut restart)?;
        let out = restart.output()?;
        if !out.status.success() {
            bail!("PostgreSQL did not restart: {}", super::ManagedServer::log_tail(self));
        }
        Ok(())
    }
}

impl Drop for ManagedPg {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").args(["stop", "-m", "fast", "-w", "-D"]).arg(&self.data).output();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_fixed_at_initdb_go_to_initdb() {
        let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(initdb_args(&set("data_checksums", "on")).unwrap(), ["--data-checksums"]);
        assert!(initdb_args(&set("data_checksums", "off")).unwrap().is_empty());
        assert_eq!(initdb_args(&set("wal_segment_size", "64MB")).unwrap(), ["--wal-segsize=64"]);
        assert!(initdb_args(&set("wal_segment_size", "48MB")).unwrap_err().to_string().contains("power of two"));
        assert!(initdb_args(&set("shared_buffers", "1GB")).unwrap().is_empty());
    }
}
