//! A process tree dbvs can stop as a whole: a user's command (`sh -c '...'`) and everything
//! it starts, however deep and whichever process group or session it moves to.
//!
//! As root the tree lives in a control group of its own (v2: a child of dbvs's own group, so
//! a memory or CPU limit on the run still holds; v1: in the freezer hierarchy, else pids or
//! cpuacct, beside the limits'), written down in a lease first: if dbvs is killed with
//! SIGKILL, its watchdog kills the whole group. Without root the tree is its process group,
//! and `sh` dies with dbvs (PR_SET_PDEATHSIG); a process that leaves the group, or outlives
//! dbvs, is out of reach, which is said once.
//!
//! Stopping escalates and never waits unboundedly: SIGTERM to every process, a grace period
//! (cut short when asked again), SIGKILL to every process, and a bounded wait for them to go.

use super::cgroup;
use super::lease::{Lease, Step};
use anyhow::{bail, Context, Result};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long the processes get to exit on SIGTERM before they are killed.
pub const GRACE: Duration = Duration::from_secs(5);
/// How long killed processes may take to be gone.
const KILLED_WITHIN: Duration = Duration::from_secs(10);
/// The v1 hierarchies that list every process of a group, in order of preference: the
/// freezer also stops the group forking while it is killed.
const V1_HIERARCHIES: &[&str] = &["freezer", "pids", "cpuacct"];

static NEXT: AtomicUsize = AtomicUsize::new(0);
static FALLBACK_SAID: std::sync::Once = std::sync::Once::new();

/// A running process tree; dropping it kills whatever of it is left.
pub struct Tree {
    /// What runs, in messages (e.g. "the command").
    what: String,
    child: Child,
    group: Option<Contained>,
}

/// The tree's control group; its lease kills what is in it and removes it, when dropped or
/// by the watchdog of a dbvs that died.
struct Contained {
    dir: PathBuf,
    _lease: Lease,
}

/// How a stop went, for the caller's words.
#[derive(Debug, PartialEq)]
pub enum Stopped {
    /// Nothing was left to stop.
    Gone,
    /// Every process exited on SIGTERM.
    Terminated,
    /// Killed (SIGKILL) after the grace period, or at once when asked again.
    Killed,
}

impl Tree {
    /// Starts `cmd` as the root of a tree: in a process group of its own (so a terminal's
    /// Ctrl-C reaches dbvs only, which stops the tree its own way) and, as root, in a
    /// control group of its own.
    pub fn spawn(mut cmd: Command, what: &str) -> Result<Tree> {
        cmd.process_group(0);
        // SAFETY: prctl is async-signal-safe; it only sets this child's parent-death signal.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let group = match contain(&mut cmd, what) {
            Ok(group) => Some(group),
            Err(e) => {
                FALLBACK_SAID.call_once(|| {
                    eprintln!(
                        "warning: {what}'s processes are stopped as a process group only ({e:#}): one that leaves \
                         the group, or outlives dbvs killed by SIGKILL, runs on; run dbvs as root to contain them"
                    )
                });
                None
            }
        };
        let child = cmd.spawn().with_context(|| format!("cannot start {what}"))?;
        Ok(Tree { what: what.into(), child, group })
    }

    /// The root process's output pipes, for the caller to read.
    pub fn take_output(&mut self) -> (Option<ChildStdout>, Option<ChildStderr>) {
        (self.child.stdout.take(), self.child.stderr.take())
    }

    /// The root process's exit status, once it has exited (what it started may run on).
    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        self.child.try_wait().with_context(|| format!("cannot wait for {}", self.what))
    }

    /// Stops every process of the tree: SIGTERM, up to [`GRACE`] for them to exit (cut short
    /// once `insisted` says so), then SIGKILL and a bounded wait.
    pub fn stop(&mut self, insisted: &mut dyn FnMut() -> bool) -> Result<Stopped> {
        if self.gone() {
            return Ok(Stopped::Gone);
        }
        self.signal(libc::SIGTERM);
        let until = Instant::now() + GRACE;
        loop {
            if self.gone() {
                return Ok(Stopped::Terminated);
            }
            if insisted() {
                eprintln!("asked again: killing {}'s processes at once (SIGKILL)", self.what);
                break;
            }
            if Instant::now() >= until {
                eprintln!("{} outlived SIGTERM by {} s: killing its processes (SIGKILL)", self.what, GRACE.as_secs());
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill()?;
        Ok(Stopped::Killed)
    }

    /// SIGKILL to every process, then waits (bounded) until they are gone.
    fn kill(&mut self) -> Result<()> {
        match &self.group {
            Some(g) => cgroup::kill_all(&g.dir)?,
            None => self.signal(libc::SIGKILL),
        }
        let until = Instant::now() + KILLED_WITHIN;
        while !self.gone() {
            if Instant::now() >= until {
                bail!(
                    "{} (process {}) outlived SIGKILL for {} s (stuck in I/O?): kill what is left of it by hand",
                    self.what,
                    self.child.id(),
                    KILLED_WITHIN.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn signal(&self, signal: i32) {
        match &self.group {
            Some(g) => cgroup::signal_all(&g.dir, signal),
            // SAFETY: kill has no memory-safety preconditions; the group is the child's own.
            None => unsafe {
                libc::kill(-(self.child.id() as i32), signal);
            },
        }
    }

    /// Whether the root has exited (and is reaped) and no other process of the tree is left.
    fn gone(&mut self) -> bool {
        if matches!(self.child.try_wait(), Ok(None)) {
            return false;
        }
        match &self.group {
            Some(g) => cgroup::procs(&g.dir).is_empty(),
            // SAFETY: signal 0 only asks whether any process of the group exists.
            None => unsafe { libc::kill(-(self.child.id() as i32), 0) != 0 },
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if !self.gone() {
            if let Err(e) = self.kill() {
                eprintln!("warning: {e:#}");
            }
        }
    }
}

/// Makes `cmd`'s process start in a new control group, written down in a lease first.
fn contain(cmd: &mut Command, what: &str) -> Result<Contained> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("dbvs is not running as root");
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").context("cannot read /proc/self/cgroup")?;
    let parent = parent_dir(&own, std::path::Path::new(cgroup::ROOT).join("cgroup.controllers").exists())?;
    let name = format!("dbvs-{}-tree-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let dir = parent.join(name);
    let mut lease = Lease::new(&format!("{what}'s processes in {}", dir.display()))?;
    lease.push(Step::KillCgroup { dir: dir.clone() })?;
    std::fs::create_dir(&dir).with_context(|| format!("cannot create control group {}", dir.display()))?;
    let group = Contained { dir, _lease: lease };
    cgroup::join_on_spawn(cmd, std::slice::from_ref(&group.dir))?;
    Ok(group)
}

/// Where the tree's group goes, given this process's `/proc/self/cgroup`: under its own
/// group in the v2 tree (`v2`, a pure v2 host), else in the first v1 hierarchy of
/// [`V1_HIERARCHIES`] mounted here.
fn parent_dir(own: &str, v2: bool) -> Result<PathBuf> {
    if v2 {
        return cgroup::dir_in(own, None).context("this process is in no cgroup v2 group");
    }
    V1_HIERARCHIES
        .iter()
        .filter(|h| std::path::Path::new(cgroup::ROOT).join(h).is_dir())
        .find_map(|h| cgroup::dir_in(own, Some(h)))
        .with_context(|| {
            format!(
                "neither cgroup v2 nor a v1 {} hierarchy is mounted under {}",
                V1_HIERARCHIES.join(", "),
                cgroup::ROOT
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_goes_under_this_process_s_own() {
        let v2 = "0::/system.slice/dbvs.service\n";
        assert_eq!(parent_dir(v2, true).unwrap(), PathBuf::from("/sys/fs/cgroup/system.slice/dbvs.service"));
        assert!(parent_dir("4:memory:/x\n", true).is_err());
    }

    fn ignoring_sigterm() -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("trap '' TERM; sleep 1000 & sleep 1000");
        cmd
    }

    /// Stops `tree` insisting at once; checks the grace period was cut short and all is gone.
    fn stop_insisting(mut tree: Tree) {
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(tree.exited().unwrap(), None);
        let t = Instant::now();
        assert_eq!(tree.stop(&mut || true).unwrap(), Stopped::Killed);
        assert!(t.elapsed() < GRACE, "asked again, the grace period is cut short");
        assert!(tree.gone());
    }

    #[test]
    fn a_tree_that_ignores_sigterm_is_killed_whole_and_asking_again_hurries() {
        stop_insisting(Tree::spawn(ignoring_sigterm(), "the test command").unwrap());
        let mut quick = Command::new("sh");
        quick.arg("-c").arg("exit 0");
        let mut tree = Tree::spawn(quick, "the test command").unwrap();
        while tree.exited().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(tree.stop(&mut || false).unwrap(), Stopped::Gone);
    }

    #[test]
    fn without_a_control_group_the_process_group_is_stopped() {
        let mut cmd = ignoring_sigterm();
        cmd.process_group(0);
        stop_insisting(Tree { what: "the test command".into(), child: cmd.spawn().unwrap(), group: None });
    }
}
