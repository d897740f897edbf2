//! Leases: what a dbvs process must undo if it dies without cleaning up. Every mount,
//! keyring key, secret file, server and command a process sets up is written down first,
//! in a lease file in dbvs's data directory; clean tear-down deletes the lease. A lease whose
//! process is gone is carried out by that process's watchdog at once (SIGKILL included:
//! the watchdog sees its pipe from the dead process close), or by the next dbvs command,
//! or by `dbvs cleanup`.
//!
//! Carrying a lease out deletes, unmounts and stops what it names, as whoever runs dbvs
//! (often root), so only leases no other user could have written are carried out: the
//! directory must be the user's alone, and each lease file a regular file of the user's
//! that no one else may write (see `super::private`).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// One thing to undo. Steps run in order: keys are removed before their file system is
/// unmounted, mounts before the directories beneath them are deleted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Lock an fscrypt directory: remove its key from the keyring of the mount.
    RemoveFscryptKey {
        mount: PathBuf,
        identifier: String,
    },
    /// Unmount (FUSE or a loop-mounted image); lazily when it stays busy.
    Unmount {
        path: PathBuf,
        fuse: bool,
    },
    /// Stop a server process (the postmaster, mariadbd) named in a pid file, if it is still
    /// the program `comm` names.
    StopServer {
        pid_file: PathBuf,
        comm: String,
    },
    /// Stop a process by its id, if it is still the program `comm` names.
    StopProcess {
        pid: u32,
        comm: String,
    },
    /// Kill every process in a control group (a user's command and all it started), then
    /// remove the group.
    KillCgroup {
        dir: PathBuf,
    },
    /// Run a program (a server's client, setting back what a capture changed on it). The
    /// password is never written down: `password` names the variable to set and the file to
    /// read it from; without one, the program inherits the variable from whoever carries the
    /// lease out.
    RunTool {
        program: String,
        /// The Debian package that has `program`, for the error when it is missing.
        package: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        password: Option<(String, PathBuf)>,
    },
    RemoveFile {
        path: PathBuf,
    },
    RemoveDir {
        path: PathBuf,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LeaseFile {
    pid: u32,
    /// The process's start time (clock ticks after boot), so a reused pid is not mistaken
    /// for the owner.
    started: u64,
    what: String,
    steps: Vec<Step>,
}

/// Where leases live: `$DBVS_LEASES`, else `leases/` in dbvs's data directory.
pub fn dir() -> PathBuf {
    std::env::var_os("DBVS_LEASES").map_or_else(|| super::data_home().join("leases"), PathBuf::from)
}

/// How an error about the lease directory ends.
const DIR_FIX: &str = "set DBVS_LEASES to a directory only you can write";

use super::process_start_time as start_time;

fn alive(pid: u32, started: u64) -> bool {
    start_time(pid) == Some(started)
}

/// Undo steps, written down before what they undo is done. Dropping the lease carries them
/// out (newest first) and deletes the lease file once all succeeded, so the owner's clean
/// exit, a watchdog and a later sweep all undo the same way.
pub struct Lease {
    path: PathBuf,
    file: LeaseFile,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Lease {
    /// Starts a lease for `what` (e.g. `gocryptfs variant in /x/v1`), and makes sure this
    /// process has a watchdog.
    pub fn new(what: &str) -> Result<Self> {
        Self::in_dir(&dir(), what)
    }

    fn in_dir(dir: &Path, what: &str) -> Result<Self> {
        let pid = std::process::id();
        super::private::own_dir(dir, "lease directory", DIR_FIX)?;
        let path = dir.join(format!("{pid}-{}.json", NEXT.fetch_add(1, Ordering::Relaxed)));
        let file = LeaseFile { pid, started: start_time(pid).unwrap_or(0), what: what.into(), steps: vec![] };
        let lease = Lease { path, file };
        lease.save()?;
        watchdog::ensure();
        Ok(lease)
    }

    /// Adds a step, written to disk before the caller does what it undoes.
    pub fn push(&mut self, step: Step) -> Result<()> {
        self.file.steps.push(step);
        self.save()
    }

    /// Adds a step that is undone after every other (a directory a server still uses is
    /// removed only once the server is stopped).
    pub fn push_last_undone(&mut self, step: Step) -> Result<()> {
        self.file.steps.insert(0, step);
        self.save()
    }

    /// Drops the steps `done` picks: their work was undone already.
    pub fn forget(&mut self, done: impl Fn(&Step) -> bool) -> Result<()> {
        self.file.steps.retain(|s| !done(s));
        self.save()
    }

    /// Replaces the step `old` picks, or adds `new` (a server restarted with a new pid).
    pub fn replace(&mut self, old: impl Fn(&Step) -> bool, new: Step) -> Result<()> {
        match self.file.steps.iter_mut().find(|s| old(s)) {
            Some(s) => *s = new,
            None => self.file.steps.push(new),
        }
        self.save()
    }

    /// Writes a secret file (0600) whose removal the lease guarantees.
    pub fn secret_file(&mut self, path: PathBuf, contents: &[u8]) -> Result<PathBuf> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        self.push(Step::RemoveFile { path: path.clone() })?;
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        f.write_all(contents)?;
        f.sync_all()?;
        Ok(path)
    }

    /// Writes the lease (0600) beside its place, then moves it there whole.
    fn save(&self) -> Result<()> {
        use std::io::Write;
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let tmp = self.path.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            f.write_all(&serde_json::to_vec_pretty(&self.file)?)
        };
        write().with_context(|| format!("cannot write lease {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path).with_context(|| format!("cannot write lease {}", self.path.display()))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let outcome = undo(&self.path, &self.file);
        if !outcome.starts_with("cleaned up") {
            say(&format!("warning: {outcome}"));
        }
    }
}

/// Carries out the leases of every dead process; says what it did, one line per lease.
pub fn sweep() -> Vec<String> {
    sweep_in(&dir())
}

fn sweep_in(dir: &Path) -> Vec<String> {
    if !dir.exists() {
        return vec![];
    }
    if let Err(e) = super::private::check_own_dir(dir, "lease directory", DIR_FIX) {
        return vec![format!("warning: leases not carried out: {e}")];
    }
    let mut done = Vec::new();
    for path in newest_first(dir, None) {
        if path.extension().is_some_and(|x| x == "tmp") {
            // A half-written lease of a process that died while writing it.
            if owner(&path).is_some_and(|(pid, _)| start_time(pid).is_none()) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        let lease = match read_lease(&path) {
            Ok(Some(lease)) => lease,
            Ok(None) => continue,
            Err(e) => {
                done.push(format!("warning: {e}"));
                continue;
            }
        };
        if alive(lease.pid, lease.started) {
            continue;
        }
        done.push(undo(&path, &lease));
    }
    done
}

/// Carries out the leases of one dead process (the watchdog's job).
fn sweep_pid(pid: u32) {
    let dir = dir();
    if let Err(e) = super::private::check_own_dir(&dir, "lease directory", DIR_FIX) {
        say(&format!("dbvs watchdog: {e}"));
        return;
    }
    for path in newest_first(&dir, Some(pid)) {
        match read_lease(&path) {
            Ok(Some(lease)) if lease.pid == pid => {
                say(&format!("dbvs watchdog: {}", super::names::printable(&undo(&path, &lease))))
            }
            Ok(_) => {}
            Err(e) => say(&format!("dbvs watchdog: warning: {e}")),
        }
    }
}

/// Tells stderr what a clean-up did, if anyone still reads it: a watchdog whose study was
/// killed with its reader (`dbvs study X | tee log`) finds the pipe closed, and must go on
/// undoing (`eprintln!` would panic on the first line, leaving the rest mounted).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A lease file, if this user alone could have written it; `None` when it is gone (its
/// owner finished with it meanwhile).
fn read_lease(path: &Path) -> Result<Option<LeaseFile>> {
    let fix = "not carried out (remove it if no dbvs process of yours wrote it)";
    let text = match super::private::read_own_file(path, "lease", fix) {
        Ok(text) => text,
        Err(_) if path.symlink_metadata().is_err() => return Ok(None),
        Err(e) => return Err(e),
    };
    let lease = serde_json::from_str(&text);
    lease.map(Some).map_err(|_| anyhow::anyhow!("{}: unreadable lease left as it is", path.display()))
}

/// The process and sequence number in a lease file's name (`PID-N.json`).
fn owner(p: &Path) -> Option<(u32, usize)> {
    let (pid, n) = p.file_stem()?.to_str()?.split_once('-')?;
    Some((pid.parse().ok()?, n.parse().ok()?))
}

/// Lease files (`PID-N.json`, or leftover `.tmp`), each process's newest first: a study's
/// variants are undone before the study's own work directory.
fn newest_first(dir: &Path, pid: Option<u32>) -> Vec<PathBuf> {
    let mut files: Vec<(u32, usize, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let (owner, n) = owner(&p)?;
            pid.is_none_or(|want| want == owner).then_some((owner, n, p))
        })
        .collect();
    files.sort_by_key(|(owner, n, _)| (*owner, std::cmp::Reverse(*n)));
    files.into_iter().map(|(_, _, p)| p).collect()
}

fn undo(path: &Path, lease: &LeaseFile) -> String {
    let mut failed = Vec::new();
    for step in lease.steps.iter().rev() {
        if let Err(e) = run(step) {
            failed.push(format!("{e:#}"));
        }
    }
    if failed.is_empty() {
        let _ = std::fs::remove_file(path);
        format!("cleaned up after dbvs process {} ({})", lease.pid, lease.what)
    } else {
        // Kept, so a later sweep (or the user, told here) can finish it.
        format!(
            "could not fully clean up after dbvs process {} ({}): {}; lease kept in {}",
            lease.pid,
            lease.what,
            failed.join("; "),
            path.display()
        )
    }
}

fn run(step: &Step) -> Result<()> {
    match step {
        Step::RemoveFscryptKey { mount, identifier } => {
            let Some(id) = super::fscrypt::identifier_from_hex(identifier) else { return Ok(()) };
            if !super::mounts::is_mount_point(mount) {
                return Ok(());
            }
            match super::fscrypt::remove_key(mount, &id) {
                // Already gone (removed, or the file system was remounted).
                Err(e)
                    if e.root_cause().downcast_ref::<std::io::Error>().and_then(|e| e.raw_os_error())
                        == Some(libc::ENOKEY) =>
                {
                    Ok(())
                }
                other => other,
            }
        }
        Step::Unmount { path, fuse } => unmount(path, *fuse),
        Step::StopServer { pid_file, comm } => {
            let pid = std::fs::read_to_string(pid_file).ok().and_then(|t| t.lines().next()?.trim().parse().ok());
            match pid {
                Some(pid) => stop(pid, comm),
                None => Ok(()),
            }
        }
        Step::StopProcess { pid, comm } => stop(*pid, comm),
        Step::KillCgroup { dir } => super::cgroup::remove(dir),
        Step::RunTool { program, package, args, env, password } => {
            let mut cmd = std::process::Command::new(super::require(program, package)?);
            cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
            if let Some((var, file)) = password {
                cmd.env(var, super::read_secret_file(file)?);
            }
            super::run_tool(&mut cmd)
        }
        Step::RemoveFile { path } => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", path.display()))
            }
            _ => Ok(()),
        },
        Step::RemoveDir { path } => {
            // Never delete through a mount that is still up.
            if super::mounts::any_under(path) {
                anyhow::bail!("{} still has a file system mounted under it", path.display());
            }
            match std::fs::remove_dir_all(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("cannot remove {}", path.display()))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Unmounts `path`, lazily if it stays busy; nothing to do when it is not mounted.
pub fn unmount(path: &Path, fuse: bool) -> Result<()> {
    // Found where `require` looks (PATH, then the sbin directories), as at set-up.
    let tool = if fuse { super::require("fusermount3", "fuse3")? } else { super::require("umount", "mount")? };
    for _ in 0..50 {
        if !super::mounts::is_mount_point(path) {
            return Ok(());
        }
        let arg = if fuse { "-u" } else { "--" };
        if super::run_tool(std::process::Command::new(&tool).arg(arg).arg(path)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let lazy = if fuse { "-uz" } else { "-l" };
    super::run_tool(std::process::Command::new(&tool).arg(lazy).arg(path))
        .with_context(|| format!("cannot unmount {}", path.display()))
}

/// Stops `pid` if it is still `comm`: SIGTERM, then SIGKILL after 30 s.
fn stop(pid: u32, comm: &str) -> Result<()> {
    let is_it = || std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm);
    if !is_it() {
        return Ok(());
    }
    // SAFETY: signalling a process we verified is the server we started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    for _ in 0..300 {
        if !is_it() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    Ok(())
}

/// The watchdog: a process started once per dbvs process that holds leases. It reads a
/// pipe whose other end only its parent holds; when the parent dies, by any signal, the
/// pipe closes and the watchdog carries out the parent's remaining leases, so decrypted
/// data stays exposed for as short a time as possible.
pub mod watchdog {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::{ChildStdin, Command, Stdio};
    use std::sync::{Mutex, OnceLock};

    static PIPE: OnceLock<Mutex<Option<ChildStdin>>> = OnceLock::new();

    /// Starts this process's watchdog unless it runs already.
    pub fn ensure() {
        PIPE.get_or_init(|| Mutex::new(spawn()));
    }

    fn spawn() -> Option<ChildStdin> {
        let exe = std::env::current_exe().ok()?;
        // Only the dbvs binary has the `watchdog` command (not a test harness using the library).
        if exe.file_name()? != "dbvs" {
            return None;
        }
        let mut cmd = Command::new(exe);
        cmd.arg("watchdog")
            .arg(std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // SAFETY: setsid is async-signal-safe. A session of its own keeps the watchdog
        // alive when the parent's whole process group is killed.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        cmd.spawn().ok()?.stdin.take()
    }

    /// The watchdog's main: waits for the parent to go, then sweeps its leases.
    pub fn main(parent: u32) {
        // Ctrl-C goes to the parent, which cleans up itself; the watchdog only acts on EOF.
        // SAFETY: ignoring signals has no preconditions.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
        }
        let mut buf = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        super::sweep_pid(parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_process_lease_is_carried_out_and_a_live_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("key");
        std::fs::write(&victim, "secret").unwrap();
        let leases = dir.path().join("leases");
        std::fs::create_dir(&leases).unwrap();
        let dead = LeaseFile {
            pid: u32::MAX - 1,
            started: 1,
            what: "test".into(),
            steps: vec![Step::RemoveFile { path: victim.clone() }],
        };
        std::fs::write(leases.join("1-0.json"), serde_json::to_vec(&dead).unwrap()).unwrap();
        let me = LeaseFile {
            pid: std::process::id(),
            started: start_time(std::process::id()).unwrap(),
            what: "live".into(),
            steps: vec![Step::RemoveFile { path: victim.clone() }],
        };
        std::fs::write(leases.join("2-0.json"), serde_json::to_vec(&me).unwrap()).unwrap();
        let done = sweep_in(&leases);
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(done[0].contains("cleaned up"), "{done:?}");
        assert!(!victim.exists(), "the dead process's secret file is removed");
        assert!(!leases.join("1-0.json").exists() && leases.join("2-0.json").exists());
    }

    #[test]
    fn a_lease_undoes_its_steps_when_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let leases = dir.path().join("leases");
        let mut lease = Lease::in_dir(&leases, "test").unwrap();
        let key = lease.secret_file(dir.path().join("k"), b"secret").unwrap();
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&lease.path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&leases).unwrap().permissions().mode() & 0o777, 0o700);
        let written: LeaseFile = serde_json::from_slice(&std::fs::read(&lease.path).unwrap()).unwrap();
        assert_eq!(written.steps, [Step::RemoveFile { path: key.clone() }], "written before the file");
        drop(lease);
        assert!(!key.exists());
        assert_eq!(std::fs::read_dir(&leases).unwrap().count(), 0, "a carried-out lease is deleted");
    }

    #[test]
    fn a_step_put_last_is_undone_last_and_a_forgotten_one_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let mut lease = Lease::in_dir(&dir.path().join("leases"), "test").unwrap();
        let (copy, kept) = (dir.path().join("copy"), dir.path().join("kept"));
        lease.push(Step::StopProcess { pid: u32::MAX - 1, comm: "mariadbd".into() }).unwrap();
        lease.push_last_undone(Step::RemoveDir { path: copy.clone() }).unwrap();
        lease.push_last_undone(Step::RemoveDir { path: kept.clone() }).unwrap();
        lease.forget(|s| matches!(s, Step::RemoveDir { path } if *path == kept)).unwrap();
        let written: LeaseFile = serde_json::from_slice(&std::fs::read(&lease.path).unwrap()).unwrap();
        assert!(
            matches!(written.steps.as_slice(), [Step::RemoveDir { path }, Step::StopProcess { .. }] if *path == copy)
        );
        std::fs::create_dir(&copy).unwrap();
        std::fs::create_dir(&kept).unwrap();
        drop(lease);
        assert!(!copy.exists() && kept.exists());
    }

    #[test]
    fn a_tool_step_gets_its_password_from_the_file_in_its_environment_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (password, out) = (dir.path().join("pw"), dir.path().join("out"));
        std::fs::write(&password, "s3cret\n").unwrap();
        std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o600)).unwrap();
        let step = Step::RunTool {
            program: "sh".into(),
            package: "dash".into(),
            args: vec!["-c".into(), format!("printf '%s %s' \"$PGPASSWORD\" \"$PGHOST\" > {}", out.display())],
            env: vec![("PGHOST".into(), "db".into())],
            password: Some(("PGPASSWORD".into(), password)),
        };
        assert!(!serde_json::to_string(&step).unwrap().contains("s3cret"));
        run(&step).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "s3cret db");
        let failing = Step::RunTool {
            program: "false".into(),
            package: "coreutils".into(),
            args: vec![],
            env: vec![],
            password: None,
        };
        assert!(run(&failing).is_err(), "a tool that fails fails the step, so its lease is kept");
    }

    /// A lease directory holding one dead process's lease that would delete `victim`.
    fn planted(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        let victim = dir.join("victim");
        std::fs::create_dir(&victim).unwrap();
        let leases = dir.join("leases");
        std::fs::create_dir(&leases).unwrap();
        let lease = LeaseFile {
            pid: u32::MAX - 1,
            started: 1,
            what: "planted".into(),
            steps: vec![Step::RemoveDir { path: victim.clone() }],
        };
        let file = leases.join("1-0.json");
        std::fs::write(&file, serde_json::to_vec(&lease).unwrap()).unwrap();
        (victim, leases, file)
    }

    #[test]
    fn a_lease_another_user_owns_is_not_carried_out() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: giving a file to another user needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (victim, leases, file) = planted(dir.path());
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let done = sweep_in(&leases);
        assert!(victim.exists() && file.exists(), "{done:?}");
        assert!(matches!(done.as_slice(), [l] if l.contains("belongs to uid 65534") && l.contains("not carried out")));
    }

    #[test]
    fn a_lease_others_may_write_or_a_symlink_is_not_carried_out() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (victim, leases, file) = planted(dir.path());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let done = sweep_in(&leases);
        assert!(victim.exists() && matches!(done.as_slice(), [l] if l.contains("writable by other users")));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let outside = dir.path().join("outside.json");
        std::fs::rename(&file, &outside).unwrap();
        std::os::unix::fs::symlink(&outside, &file).unwrap();
        let done = sweep_in(&leases);
        assert!(victim.exists() && matches!(done.as_slice(), [l] if l.contains("symbolic link")), "{done:?}");
    }

    #[test]
    fn a_lease_directory_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (victim, leases, _) = planted(dir.path());
        std::fs::set_permissions(&leases, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let done = sweep_in(&leases);
        assert!(victim.exists(), "{done:?}");
        let shown = leases.display().to_string();
        assert!(matches!(done.as_slice(), [l] if l.contains(&shown) && l.contains("DBVS_LEASES")), "{done:?}");
        let e = Lease::in_dir(&leases, "test").err().unwrap().to_string();
        assert!(e.contains(&shown) && e.contains("writable by other users") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn start_times_tell_a_reused_pid() {
        let me = std::process::id();
        let t = start_time(me).unwrap();
        assert!(alive(me, t));
        assert!(!alive(me, t + 1));
        assert!(!alive(u32::MAX - 1, t));
    }
}
