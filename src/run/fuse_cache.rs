//! What the FUSE daemons of a run under a memory limit may cache of their backing files.
//!
//! Their group's limit used to be fixed: a cache share plus room for their own memory (heap,
//! request buffers), which grows with the load. The room they did not use became cache as
//! well, and a database of twice the run's limit fit in it whole: gocryptfs variants read
//! next to nothing from storage while the others read on every order. So the limit follows
//! their own memory: every [`PERIOD`] it is set to what the group holds besides its
//! reclaimable page cache, plus the share, never above the group's ceiling. Should their
//! own memory outgrow the share between two settings, the kernel holds them back until the
//! next setting: v1 with the group's OOM killer off (a page fault waits; an allocation
//! inside a system call may fail, only once the cache is gone too), v2 by `memory.high`
//! (reclaim and throttling; `memory.max` stays the ceiling). At the ceiling a runaway daemon
//! is killed as before (v1: the OOM killer goes back on).

use crate::sys::cgroup::Version;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the limit follows the daemons' own memory.
const PERIOD: Duration = Duration::from_millis(50);

/// Changes smaller than this leave the limit as it is (fewer writes, each of which may
/// reclaim).
const MIN_CHANGE: u64 = 1 << 20;

/// The thread that keeps a daemons' group at its own memory plus a cache share. Dropped, it
/// stops and lifts the limit to the ceiling, so no daemon stays held back.
pub struct CacheCap {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    cap: Cap,
}

impl CacheCap {
    /// Starts following the group at `dir` (its memory controller's directory), whose
    /// fixed limit is `ceiling`.
    pub fn start(dir: PathBuf, version: Version, share: u64, ceiling: u64) -> anyhow::Result<Self> {
        let cap = Cap { dir, files: CapFiles::of(version), share, ceiling };
        cap.hold_back_instead_of_killing(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let following = cap.clone();
        let thread = std::thread::Builder::new().name("fuse-cache-cap".into()).spawn(move || {
            let mut set = None;
            while !stopped.load(Ordering::Relaxed) {
                set = following.follow(set);
                std::thread::sleep(PERIOD);
            }
        })?;
        Ok(CacheCap { stop, thread: Some(thread), cap })
    }
}

impl Drop for CacheCap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.cap.lift();
    }
}

/// One group's cap: where it is, its files, the cache share and the ceiling.
#[derive(Clone)]
struct Cap {
    dir: PathBuf,
    files: CapFiles,
    share: u64,
    ceiling: u64,
}

impl Cap {
    /// Sets the limit for what the group holds now, unless it is within [`MIN_CHANGE`] of
    /// the last one set; returns the limit in force. (A write the kernel refuses, when it
    /// cannot reclaim enough at once, is tried again next time.)
    fn follow(&self, set: Option<u64>) -> Option<u64> {
        let Some((usage, cache)) = self.read() else { return set };
        let want = limit_for(usage, cache, self.share).min(self.ceiling);
        if set.is_some_and(|s| s.abs_diff(want) < MIN_CHANGE) {
            return set;
        }
        if want == self.ceiling {
            let _ = self.hold_back_instead_of_killing(false);
        }
        match std::fs::write(self.dir.join(self.files.cap_file), want.to_string()) {
            Ok(()) => Some(want),
            Err(_) => set,
        }
    }

    /// What the group holds, and how much of it is page cache reclaim can free (file pages:
    /// not shared memory, which it cannot without swap).
    fn read(&self) -> Option<(u64, u64)> {
        let usage = std::fs::read_to_string(self.dir.join(self.files.usage)).ok()?.trim().parse().ok()?;
        let stat = std::fs::read_to_string(self.dir.join("memory.stat")).ok()?;
        Some((usage, stat_field(&stat, "active_file")? + stat_field(&stat, "inactive_file")?))
    }

    /// v1: whether the group's OOM killer is off (a daemon over the limit waits).
    fn hold_back_instead_of_killing(&self, hold: bool) -> anyhow::Result<()> {
        let Some(file) = self.files.oom_control else { return Ok(()) };
        std::fs::write(self.dir.join(file), if hold { "1" } else { "0" })
            .map_err(|e| anyhow::anyhow!("cannot set the FUSE daemons' OOM killer in {}: {e}", self.dir.display()))
    }

    /// The limit back at the ceiling and the OOM killer on.
    fn lift(&self) {
        let _ = self.hold_back_instead_of_killing(false);
        let top = self.files.lifted.map_or_else(|| self.ceiling.to_string(), str::to_string);
        let _ = std::fs::write(self.dir.join(self.files.cap_file), top);
    }
}

/// The group's files on one cgroup version.
#[derive(Clone, Copy)]
struct CapFiles {
    usage: &'static str,
    /// The limit that follows the daemons' own memory.
    cap_file: &'static str,
    /// What lifts the cap, when not the ceiling (v2's `memory.high` has `max`).
    lifted: Option<&'static str>,
    oom_control: Option<&'static str>,
}

impl CapFiles {
    fn of(version: Version) -> CapFiles {
        match version {
            Version::V1 => CapFiles {
                usage: "memory.usage_in_bytes",
                cap_file: "memory.limit_in_bytes",
                lifted: None,
                oom_control: Some("memory.oom_control"),
            },
            Version::V2 => {
                CapFiles { usage: "memory.current", cap_file: "memory.high", lifted: Some("max"), oom_control: None }
            }
        }
    }
}

/// The limit that leaves the daemons all they hold besides page cache, and `share` of cache.
fn limit_for(usage: u64, cache: u64, share: u64) -> u64 {
    usage.saturating_sub(cache) + share
}

/// `key`'s value in a `memory.stat` text (the group's own line, not `total_<key>`).
fn stat_field(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cgroup::{join_on_spawn, Group};
    use std::path::Path;

    #[test]
    fn the_limit_leaves_the_daemons_their_own_memory_and_the_share_of_cache() {
        // 60MB in use of which 50MB cache: 10MB of their own, 8MB of cache allowed.
        assert_eq!(limit_for(60 << 20, 50 << 20, 8 << 20), 18 << 20);
        assert_eq!(limit_for(10 << 20, 0, 8 << 20), 18 << 20);
    }

    #[test]
    fn the_cache_is_read_from_the_group_s_own_lines() {
        let stat = "active_file 1000\ninactive_file 24\nshmem 77\ntotal_active_file 5000\n";
        assert_eq!(stat_field(stat, "active_file"), Some(1000));
        assert_eq!(stat_field(stat, "inactive_file"), Some(24));
        assert_eq!(stat_field(stat, "file"), None);
    }

    /// A memory group `name` with a ceiling of 256MB, capped with a share of 8MB.
    fn capped(name: &str) -> (Group, CacheCap) {
        let version = crate::sys::cgroup::version(&["memory"]).unwrap();
        let group = Group::create(name, &["memory"]).unwrap();
        let ceiling = 256 << 20;
        let fixed = if version == Version::V1 { "memory.limit_in_bytes" } else { "memory.max" };
        group.set(fixed, &ceiling.to_string()).unwrap();
        let cap = CacheCap::start(group.dir_for("memory.max").to_path_buf(), version, 8 << 20, ceiling).unwrap();
        (group, cap)
    }

    /// Runs `script` (with `arg` as $1) in the group's directory `dir`; whether it succeeded.
    fn run_in(dir: &Path, script: &str, arg: &Path) -> bool {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script, "sh"]).arg(arg);
        join_on_spawn(&mut cmd, &[dir.to_path_buf()]).unwrap();
        cmd.status().unwrap().success()
    }

    /// A reader in the group reads a file four times its share through the page cache;
    /// the cap keeps what the group caches of it near the share, where the fixed limit let
    /// it cache the file whole.
    #[test]
    fn a_reader_in_a_capped_group_caches_no_more_than_its_share() {
        use std::os::fd::AsRawFd;
        let (group, cap) = capped("fuse-cache-reader");
        let dir = group.dir_for("memory.max").to_path_buf();
        let data = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
        std::fs::write(data.path(), vec![7u8; 32 << 20]).unwrap();
        // Its pages out of the cache, so the reader's group is charged with them.
        let file = std::fs::File::open(data.path()).unwrap();
        file.sync_all().unwrap();
        // SAFETY: a valid open file descriptor; the advice has no memory-safety effect.
        assert_eq!(unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) }, 0);
        assert!(run_in(&dir, "cat \"$1\" \"$1\" > /dev/null", data.path()));
        let (_, cache) = cap.cap.read().unwrap();
        let peak = crate::sys::cgroup::Usage::read(std::slice::from_ref(&dir)).memory_peak_mb;
        drop(cap);
        assert!(peak >= 8.0, "the file was not read through the group's cache (peak {peak} MB)");
        assert!(cache <= (8 << 20) + 2 * MIN_CHANGE, "the group caches {} MB with a share of 8 MB", cache >> 20);
    }

    /// A process whose own memory outgrows the share at once is held back until the cap
    /// follows it, not killed.
    #[test]
    fn a_process_that_needs_more_than_the_share_at_once_still_finishes() {
        let (group, cap) = capped("fuse-cache-grower");
        let dir = group.dir_for("memory.max").to_path_buf();
        // dd's 64MB buffer, eight times the share, filled from /dev/zero.
        assert!(run_in(&dir, "dd if=/dev/zero of=/dev/null bs=64M count=2 2>/dev/null", Path::new("-")));
        drop(cap);
    }
}
