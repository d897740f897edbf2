//! Control groups, for the hardware-emulation variant (`variants::limits`) and the managed
//! servers it limits: create them, put processes in them, read what the limits did, remove them.
//! A group also holds every process of a user's command (`sys::tree`), so that all of them
//! can be killed at once.
//!
//! cgroup v2 (one tree with cpu.max, cpuset.cpus, io.max, memory.max) is used where the
//! controllers are on it; on hybrid hosts whose controllers sit on v1 hierarchies, v1's
//! equivalents are used (cpu.cfs_quota_us, cpuset.cpus, blkio.throttle.*,
//! memory.limit_in_bytes). Either way a run records the counters that prove the limits
//! bit: CPU periods throttled, memory peak and limit hits, I/O done.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const ROOT: &str = "/sys/fs/cgroup";
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Version {
    V1,
    V2,
}

/// Which version this host offers for `controllers` (v2 names: cpu, cpuset, io, memory).
pub fn version(controllers: &[&str]) -> Result<Version> {
    let v2 = std::fs::read_to_string(format!("{ROOT}/cgroup.controllers")).unwrap_or_default();
    if controllers.iter().all(|c| v2.split_whitespace().any(|x| x == *c)) && !v2.is_empty() {
        return Ok(Version::V2);
    }
    let missing: Vec<&str> =
        controllers.iter().filter(|c| !Path::new(ROOT).join(v1_name(c)).is_dir()).copied().collect();
    if missing.is_empty() {
        return Ok(Version::V1);
    }
    bail!(
        "the cgroup controllers {} are not available here (needs root and cgroup v2, or v1 hierarchies, with them mounted under {ROOT})",
        missing.join(", ")
    )
}

fn v1_name(controller: &str) -> &str {
    if controller == "io" {
        "blkio"
    } else {
        controller
    }
}

/// A set of control groups (one in v2; one per controller in v1), removed when dropped.
pub struct Group {
    pub version: Version,
    pub dirs: Vec<PathBuf>,
}

impl Group {
    /// Creates `name` for `controllers`, sweeping groups that dead dbvs processes left.
    pub fn create(name: &str, controllers: &[&str]) -> Result<Self> {
        let version = version(controllers)?;
        let parents: Vec<PathBuf> = match version {
            Version::V2 => {
                let want: String = controllers.iter().map(|c| format!("+{c} ")).collect();
                std::fs::write(format!("{ROOT}/cgroup.subtree_control"), want.trim()).with_context(|| {
                    format!("cannot enable the {} controllers for child groups", controllers.join(", "))
                })?;
                vec![PathBuf::from(ROOT)]
            }
            Version::V1 => controllers.iter().map(|c| Path::new(ROOT).join(v1_name(c))).collect(),
        };
        for p in &parents {
            sweep(p);
        }
        let dirs: Vec<PathBuf> = parents
            .iter()
            .map(|p| p.join(format!("dbvs-{}-{}", std::process::id(), super::names::slug(name))))
            .collect();
        let group = Group { version, dirs };
        for d in &group.dirs {
            std::fs::create_dir(d).with_context(|| format!("cannot create control group {}", d.display()))?;
            if d.parent().is_some_and(|p| p.ends_with("cpuset")) || version == Version::V2 {
                // A v1 cpuset group admits no process until it has cpus and mems.
                inherit(d, "cpuset.cpus");
                inherit(d, "cpuset.mems");
            }
        }
        Ok(group)
    }

    /// The group directory holding `file` (v2: the one group; v1: the controller's).
    pub fn dir_for(&self, file: &str) -> &Path {
        let controller = file.split('.').next().unwrap_or("");
        self.dirs
            .iter()
            .find(|d| self.version == Version::V2 || d.parent().is_some_and(|p| p.ends_with(controller)))
            .unwrap_or(&self.dirs[0])
    }

    /// Writes a limit and reads it back: the kernel may refuse or round it.
    pub fn set(&self, file: &str, value: &str) -> Result<String> {
        let path = self.dir_for(file).join(file);
        std::fs::write(&path, value).with_context(|| format!("the kernel refused {value:?} for {}", path.display()))?;
        Ok(std::fs::read_to_string(&path).unwrap_or_default().trim().to_string())
    }
}

/// cgroup v2: a group made inside `parent`, a dbvs group that holds processes under limits
/// of its own (a variant's CPU or I/O limits), so that those processes keep them and take
/// the child's `controller` limit as well (v2 applies a group's limits to everything below
/// it). v2 lets no process stay in a group whose children use a controller, so
/// [`Nested::enter`] moves the parent's processes down first and [`Nested::leave`] moves
/// them back up after the controller is off again. `root` is the v2 mount (`ROOT`).
pub struct Nested {
    root: PathBuf,
    parent: PathBuf,
    pub dir: PathBuf,
    controller: &'static str,
    entered: bool,
}

impl Nested {
    /// Makes the (empty) child group `name` of `parent`.
    pub fn create(root: &Path, parent: &Path, name: &str, controller: &'static str) -> Result<Self> {
        sweep(parent);
        let dir = parent.join(format!("dbvs-{}-{}", std::process::id(), super::names::slug(name)));
        std::fs::create_dir(&dir).with_context(|| format!("cannot create control group {}", dir.display()))?;
        let (root, parent) = (root.to_path_buf(), parent.to_path_buf());
        Ok(Nested { root, parent, dir, controller, entered: false })
    }

    /// Moves every process of the parent and `pids` into the child, turns its controller
    /// on and writes `value` to its `file` (e.g. memory.max). Returns the processes moved.
    pub fn enter(&mut self, pids: &[u32], file: &str, value: &str) -> Result<Vec<u32>> {
        let on = format!("+{}", self.controller);
        std::fs::write(self.root.join("cgroup.subtree_control"), &on)
            .with_context(|| format!("cannot enable the {} controller for child groups", self.controller))?;
        let parent_procs: Vec<u32> =
            read(&self.parent, "cgroup.procs").lines().filter_map(|l| l.parse().ok()).collect();
        let mut moved = Vec::new();
        for &pid in parent_procs.iter().chain(pids) {
            if moved.contains(&pid) {
                continue;
            }
            match std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()) {
                Ok(()) => moved.push(pid),
                // A process that exited meanwhile leaves nothing behind to limit.
                Err(_) if !Path::new(&format!("/proc/{pid}")).exists() => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot move process {pid} into {}", self.dir.display()))
                }
            }
        }
        self.entered = true;
        std::fs::write(self.parent.join("cgroup.subtree_control"), &on).with_context(|| {
            format!(
                "cannot enable the {} controller under {} (it still holds a process?)",
                self.controller,
                self.parent.display()
            )
        })?;
        let path = self.dir.join(file);
        std::fs::write(&path, value).with_context(|| format!("the kernel refused {value:?} for {}", path.display()))?;
        Ok(moved)
    }

    /// Turns the controller off under the parent and moves the child's processes back up,
    /// so the child can go (dropping it removes it).
    pub fn leave(&mut self) {
        if !std::mem::take(&mut self.entered) {
            return;
        }
        let _ = std::fs::write(self.parent.join("cgroup.subtree_control"), format!("-{}", self.controller));
        for pid in read(&self.dir, "cgroup.procs").lines() {
            let _ = std::fs::write(self.parent.join("cgroup.procs"), pid);
        }
    }
}

impl Drop for Nested {
    fn drop(&mut self) {
        self.leave();
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// Makes a group able to take processes again after a run killed inside it left a
/// [`Nested`] group behind (v2 takes no process into a group whose children use a
/// controller): the dead run's group goes, and with no child left, so do the controllers
/// it turned on below the group.
fn reopen(dir: &Path) {
    sweep(dir);
    let children = std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| e.path().is_dir());
    let on = read(dir, "cgroup.subtree_control");
    if !children && !on.trim().is_empty() {
        let off: Vec<String> = on.split_whitespace().map(|c| format!("-{c}")).collect();
        let _ = std::fs::write(dir.join("cgroup.subtree_control"), off.join(" "));
    }
}

/// Copies a cpuset setting from the parent when the child's is empty.
fn inherit(dir: &Path, file: &str) {
    let mine = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
    if mine.trim().is_empty() {
        if let Some(parent) = dir.parent() {
            let value = std::fs::read_to_string(parent.join(file)).unwrap_or_default();
            let _ = std::fs::write(dir.join(file), value.trim());
        }
    }
}

/// Removes groups named after dbvs processes that no longer exist.
fn sweep(parent: &Path) {
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix("dbvs-").and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for d in &self.dirs {
            // A run killed inside it may have left a group of its own there (`Nested`).
            sweep(d);
            // A FUSE daemon admitted to the group outlives it (its mount goes last): back to
            // the parent, so the group can go.
            if let Some(parent) = d.parent() {
                for pid in read(d, "cgroup.procs").lines() {
                    let _ = std::fs::write(parent.join("cgroup.procs"), pid);
                }
            }
            // The runs' processes have exited by now; give the kernel a moment to notice.
            for _ in 0..50 {
                if std::fs::remove_dir(d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

/// Moves the running process `pid` (all its threads) into the group at `dir`.
pub fn move_to(dir: &Path, pid: u32) -> Result<()> {
    std::fs::write(dir.join("cgroup.procs"), pid.to_string())
        .with_context(|| format!("cannot move process {pid} into control group {}", dir.display()))
}

/// Makes `cmd`'s process join the groups in `dirs` before it executes, so everything it
/// starts is limited too.
pub fn join_on_spawn(cmd: &mut std::process::Command, dirs: &[PathBuf]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    for d in dirs {
        reopen(d);
    }
    let files: Vec<std::fs::File> = dirs
        .iter()
        .map(|d| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(d.join("cgroup.procs"))
                .with_context(|| format!("cannot join control group {}", d.display()))
        })
        .collect::<Result<_>>()?;
    let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
    // SAFETY: between fork and exec only write(2) runs, which is async-signal-safe; the
    // files stay open in the parent (moved into the closure) until the command is dropped.
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &files;
            for fd in &fds {
                if libc::write(*fd, b"0\n".as_ptr().cast(), 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(())
}

/// The directory of the group a `/proc/PID/cgroup` text puts its process in: in the v1
/// hierarchy that holds `controller`, or in the v2 tree when `controller` is `None`.
pub fn dir_in(text: &str, controller: Option<&str>) -> Option<PathBuf> {
    let (root, path) = text
        .lines()
        .filter_map(|l| {
            let mut fields = l.splitn(3, ':').skip(1);
            fields.next().zip(fields.next())
        })
        .find_map(|(controllers, path)| match controller {
            Some(c) => controllers.split(',').any(|x| x == c).then_some((c, path)),
            None => controllers.is_empty().then_some(("", path)),
        })?;
    Some(Path::new(ROOT).join(root).join(path.trim_start_matches('/')))
}

/// The processes in the group at `dir`, none when it is gone.
pub fn procs(dir: &Path) -> Vec<i32> {
    read(dir, "cgroup.procs").lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Sends `signal` to every process in the group at `dir`.
pub fn signal_all(dir: &Path, signal: i32) {
    for pid in procs(dir) {
        // SAFETY: kill has no memory-safety preconditions; the group holds only what we put in it.
        unsafe { libc::kill(pid, signal) };
    }
}

/// How long killed processes may take to leave their group.
const KILLED_WITHIN: Duration = Duration::from_secs(10);

/// Kills every process in the group at `dir` and waits until it is empty. v2's
/// `cgroup.kill` (Linux 5.14+) does it in one write; elsewhere the group is frozen (v1's
/// freezer, v2's `cgroup.freeze`), so no process forks a new one while each gets SIGKILL,
/// then thawed, so they die.
pub fn kill_all(dir: &Path) -> Result<()> {
    let until = Instant::now() + KILLED_WITHIN;
    loop {
        let pids = procs(dir);
        if pids.is_empty() {
            return Ok(());
        }
        if Instant::now() > until {
            bail!(
                "processes {pids:?} of control group {} outlived SIGKILL for {} s (stuck in I/O?): kill them, then rmdir the group",
                dir.display(),
                KILLED_WITHIN.as_secs()
            );
        }
        if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
            freeze(dir, true);
            signal_all(dir, libc::SIGKILL);
            freeze(dir, false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Freezes (or thaws) the group at `dir` where the kernel can: v1's freezer hierarchy or
/// v2's `cgroup.freeze`; waits up to a second for the freeze to hold.
fn freeze(dir: &Path, on: bool) {
    let (file, value) = match dir.join("freezer.state").exists() {
        true => ("freezer.state", if on { "FROZEN" } else { "THAWED" }),
        false => ("cgroup.freeze", if on { "1" } else { "0" }),
    };
    if std::fs::write(dir.join(file), value).is_err() || !on {
        return;
    }
    let frozen = || read(dir, "freezer.state").trim() == "FROZEN" || read(dir, "cgroup.events").contains("frozen 1");
    let until = Instant::now() + Duration::from_secs(1);
    while !frozen() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kills every process in the group at `dir`, then removes it (nothing to do when it is gone).
pub fn remove(dir: &Path) -> Result<()> {
    kill_all(dir)?;
    for _ in 0..50 {
        match std::fs::remove_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                std::thread::sleep(Duration::from_millis(100));
            }
            _ => return Ok(()),
        }
    }
    std::fs::remove_dir(dir).with_context(|| format!("cannot remove control group {}", dir.display()))
}

/// Processes the kernel's OOM killer has ended inside the groups so far.
pub fn oom_kills(dirs: &[PathBuf]) -> u64 {
    dirs.iter()
        .map(|d| field(&read(d, "memory.events"), "oom_kill ") + field(&read(d, "memory.oom_control"), "oom_kill "))
        .sum()
}

/// Cumulative counters of a group set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub cpu_periods: u64,
    pub cpu_throttled_periods: u64,
    pub cpu_throttled_s: f64,
    pub memory_peak_mb: f64,
    pub memory_limit_hits: u64,
    pub io_read_mb: f64,
    pub io_write_mb: f64,
    pub cpus_effective: String,
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_default()
}

fn field(text: &str, key: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(key)?.trim().parse().ok()).unwrap_or(0)
}

impl Usage {
    pub fn read(dirs: &[PathBuf]) -> Usage {
        let mut u = Usage::default();
        for d in dirs {
            let stat = read(d, "cpu.stat");
            u.cpu_periods += field(&stat, "nr_periods ");
            u.cpu_throttled_periods += field(&stat, "nr_throttled ");
            u.cpu_throttled_s +=
                field(&stat, "throttled_time ") as f64 / 1e9 + field(&stat, "throttled_usec ") as f64 / 1e6;
            let peak = field(&read(d, "memory.peak"), "") + field(&read(d, "memory.max_usage_in_bytes"), "");
            u.memory_peak_mb = u.memory_peak_mb.max(peak as f64 / 1e6);
            u.memory_limit_hits += field(&read(d, "memory.events"), "max ") + field(&read(d, "memory.failcnt"), "");
            for l in read(d, "io.stat").lines() {
                let get =
                    |k: &str| l.split_whitespace().find_map(|f| f.strip_prefix(k)?.parse::<u64>().ok()).unwrap_or(0);
                u.io_read_mb += get("rbytes=") as f64 / 1e6;
                u.io_write_mb += get("wbytes=") as f64 / 1e6;
            }
            for l in read(d, "blkio.throttle.io_service_bytes").lines() {
                let f: Vec<&str> = l.split_whitespace().collect();
                match (f.get(1), f.get(2).and_then(|n| n.parse::<u64>().ok())) {
                    (Some(&"Read"), Some(n)) => u.io_read_mb += n as f64 / 1e6,
                    (Some(&"Write"), Some(n)) => u.io_write_mb += n as f64 / 1e6,
                    _ => {}
                }
            }
            for f in ["cpuset.cpus.effective", "cpuset.effective_cpus"] {
                let c = read(d, f);
                if !c.trim().is_empty() {
                    u.cpus_effective = c.trim().to_string();
                }
            }
        }
        u
    }

    /// What happened between two readings (the peak and the cpuset are the later values).
    pub fn since(&self, before: &Usage) -> Usage {
        Usage {
            cpu_periods: self.cpu_periods.saturating_sub(before.cpu_periods),
            cpu_throttled_periods: self.cpu_throttled_periods.saturating_sub(before.cpu_throttled_periods),
            cpu_throttled_s: (self.cpu_throttled_s - before.cpu_throttled_s).max(0.0),
            memory_peak_mb: self.memory_peak_mb,
            memory_limit_hits: self.memory_limit_hits.saturating_sub(before.memory_limit_hits),
            io_read_mb: (self.io_read_mb - before.io_read_mb).max(0.0),
            io_write_mb: (self.io_write_mb - before.io_write_mb).max(0.0),
            cpus_effective: self.cpus_effective.clone(),
        }
    }
}

/// The evidence in words, e.g. "CPU throttled in 412 of 600 periods (21.3 s)...".
pub fn describe(u: &Usage) -> String {
    let mut parts = vec![format!(
        "CPU throttled in {} of {} periods ({:.1} s)",
        u.cpu_throttled_periods, u.cpu_periods, u.cpu_throttled_s
    )];
    if u.memory_peak_mb > 0.0 {
        parts.push(format!("memory peak {:.0} MB, {} limit hits", u.memory_peak_mb, u.memory_limit_hits));
    }
    parts.push(format!("I/O {:.1} MB read, {:.1} MB written", u.io_read_mb, u.io_write_mb));
    if !u.cpus_effective.is_empty() {
        parts.push(format!("cores {}", u.cpus_effective));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a v2 tree laid out in files (this host's controllers are on v1): the writes a
    /// nested group makes, and in which groups.
    #[test]
    fn a_nested_group_takes_the_parent_s_processes_and_turns_its_controller_on_and_off() {
        let root = tempfile::tempdir().unwrap();
        let variant = root.path().join("dbvs-1-slow-disk");
        std::fs::create_dir(&variant).unwrap();
        std::fs::write(variant.join("cgroup.procs"), "1\n").unwrap();
        let mut n = Nested::create(root.path(), &variant, "run-memory", "memory").unwrap();
        assert!(n.dir.starts_with(&variant) && n.dir.is_dir());
        let me = std::process::id();
        assert_eq!(n.enter(&[me, 1], "memory.max", "67108864").unwrap(), [1, me], "the parent's, then the run's, once");
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(&root.path().join("cgroup.subtree_control")), "+memory");
        assert_eq!(read(&variant.join("cgroup.subtree_control")), "+memory");
        assert_eq!(read(&n.dir.join("memory.max")), "67108864");
        n.leave();
        assert_eq!(read(&variant.join("cgroup.subtree_control")), "-memory", "off before the processes go back up");
        assert_eq!(read(&variant.join("cgroup.procs")), me.to_string());
        for f in ["cgroup.procs", "memory.max"] {
            std::fs::remove_file(n.dir.join(f)).unwrap();
        }
        let dir = n.dir.clone();
        drop(n);
        assert!(!dir.exists());
    }

    #[test]
    fn a_group_a_killed_run_nested_in_takes_processes_again() {
        let variant = tempfile::tempdir().unwrap();
        let left = variant.path().join("dbvs-4000000000-run-memory");
        std::fs::create_dir(&left).unwrap();
        std::fs::write(variant.path().join("cgroup.subtree_control"), "memory").unwrap();
        reopen(variant.path());
        assert!(!left.exists(), "the dead run's group goes");
        let control = std::fs::read_to_string(variant.path().join("cgroup.subtree_control")).unwrap();
        assert_eq!(control, "-memory", "and the controller it turned on below");
    }

    #[test]
    fn usage_reads_v1_and_v2_counters() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::write(p.join("cpu.stat"), "nr_periods 10\nnr_throttled 4\nthrottled_time 2000000000\n").unwrap();
        std::fs::write(p.join("memory.max_usage_in_bytes"), "5000000\n").unwrap();
        std::fs::write(p.join("memory.failcnt"), "3\n").unwrap();
        std::fs::write(
            p.join("blkio.throttle.io_service_bytes"),
            "254:0 Read 1000000\n254:0 Write 2000000\nTotal 3000000\n",
        )
        .unwrap();
        let u = Usage::read(&[p.to_path_buf()]);
        assert_eq!((u.cpu_periods, u.cpu_throttled_periods, u.cpu_throttled_s), (10, 4, 2.0));
        assert_eq!((u.memory_peak_mb, u.memory_limit_hits, u.io_read_mb, u.io_write_mb), (5.0, 3, 1.0, 2.0));
        let e = tempfile::tempdir().unwrap();
        std::fs::write(
            e.path().join("cpu.stat"),
            "usage_usec 5\nnr_periods 7\nnr_throttled 1\nthrottled_usec 500000\n",
        )
        .unwrap();
        std::fs::write(e.path().join("memory.events"), "low 0\nhigh 0\nmax 2\noom 0\n").unwrap();
        std::fs::write(e.path().join("io.stat"), "254:0 rbytes=3000000 wbytes=0 rios=3 wios=0\n").unwrap();
        let v = Usage::read(&[e.path().to_path_buf()]);
        assert_eq!((v.cpu_throttled_periods, v.cpu_throttled_s, v.memory_limit_hits, v.io_read_mb), (1, 0.5, 2, 3.0));
        assert_eq!(v.since(&v).cpu_throttled_periods, 0);
    }
}
