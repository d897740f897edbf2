//! What the FUSE daemons of a run under a memory limit may cache of their backing files.
//!
//! Their group's limit used to be fixed: a cache share plus room for their own memory (heap,
//! request buffers), which grows with the load. The room they did not use became cache as
//! well, and a database of twice the run's limit fit in it whole: gocryptfs variants read
//! next to nothing from storage while the others read on every order. So the limit follows
//! their own memory: every [`PERIOD`] it is set to what the group holds besides page cache,
//! plus the share. Should their own memory outgrow the share between two settings, the
//! kernel pauses them (v1: the group's OOM killer is off; v2: `memory.high` throttles, and
//! `memory.max` stays the fixed ceiling) until the next setting lets them go on.

use crate::sys::cgroup::Version;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the limit follows the daemons' own memory.
const PERIOD: Duration = Duration::from_millis(50);

/// Changes smaller than this leave the limit as it is (fewer writes, each of which may
/// reclaim).
const STEADY: u64 = 1 << 20;

/// The thread that keeps a daemons' group at its own memory plus a cache share; it stops
/// when dropped.
pub struct CacheCap {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl CacheCap {
    /// Starts following the group at `dir` (its memory controller's directory).
    pub fn start(dir: PathBuf, version: Version, share: u64) -> anyhow::Result<Self> {
        let files = Files::of(version);
        if let Some((file, value)) = files.pause_instead_of_kill {
            std::fs::write(dir.join(file), value).map_err(|e| {
                anyhow::anyhow!("cannot turn the FUSE daemons' OOM killer off in {}: {e}", dir.display())
            })?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new().name("fuse-cache-cap".into()).spawn(move || {
            let mut set = None;
            while !stopped.load(Ordering::Relaxed) {
                set = files.follow(&dir, share, set);
                std::thread::sleep(PERIOD);
            }
        })?;
        Ok(CacheCap { stop, thread: Some(thread) })
    }
}

impl Drop for CacheCap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The group's files on one cgroup version.
#[derive(Clone, Copy)]
struct Files {
    usage: &'static str,
    /// The page cache's key in `memory.stat`.
    cache_key: &'static str,
    limit: &'static str,
    pause_instead_of_kill: Option<(&'static str, &'static str)>,
}

impl Files {
    fn of(version: Version) -> Files {
        match version {
            Version::V1 => Files {
                usage: "memory.usage_in_bytes",
                cache_key: "cache",
                limit: "memory.limit_in_bytes",
                pause_instead_of_kill: Some(("memory.oom_control", "1")),
            },
            Version::V2 => {
                Files { usage: "memory.current", cache_key: "file", limit: "memory.high", pause_instead_of_kill: None }
            }
        }
    }

    /// Sets the limit for what the group holds now, unless it is within [`STEADY`] of the
    /// last one set; returns the limit in force. (A write the kernel refuses, when it cannot
    /// reclaim enough at once, is tried again next time.)
    fn follow(&self, dir: &Path, share: u64, set: Option<u64>) -> Option<u64> {
        let usage = read_number(&dir.join(self.usage))?;
        let cache = stat_field(&std::fs::read_to_string(dir.join("memory.stat")).ok()?, self.cache_key)?;
        let want = limit_for(usage, cache, share);
        if set.is_some_and(|s| s.abs_diff(want) < STEADY) {
            return set;
        }
        match std::fs::write(dir.join(self.limit), want.to_string()) {
            Ok(()) => Some(want),
            Err(_) => set,
        }
    }
}

/// The limit that leaves the daemons all they hold besides page cache, and `share` of cache.
fn limit_for(usage: u64, cache: u64, share: u64) -> u64 {
    usage.saturating_sub(cache) + share
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
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

    #[test]
    fn the_limit_leaves_the_daemons_their_own_memory_and_the_share_of_cache() {
        // 60MB in use of which 50MB cache: 10MB of their own, 8MB of cache allowed.
        assert_eq!(limit_for(60 << 20, 50 << 20, 8 << 20), 18 << 20);
        assert_eq!(limit_for(10 << 20, 0, 8 << 20), 18 << 20);
    }

    #[test]
    fn the_cache_is_read_from_the_group_s_own_line() {
        let v1 = "cache 1000\nrss 200\ntotal_cache 5000\n";
        assert_eq!(stat_field(v1, "cache"), Some(1000));
        let v2 = "anon 300\nfile 4096\nfile_mapped 10\n";
        assert_eq!(stat_field(v2, "file"), Some(4096));
        assert_eq!(stat_field(v2, "shmem"), None);
    }

    /// A reader in the group reads a file four times its share; the cap keeps what the
    /// group caches of it near the share, where the fixed limit let it cache it whole.
    #[test]
    fn a_reader_in_a_capped_group_caches_no_more_than_its_share() {
        let version = crate::sys::cgroup::version(&["memory"]).unwrap();
        let group = crate::sys::cgroup::Group::create("fuse-cache-test", &["memory"]).unwrap();
        let dir = group.dir_for("memory.max").to_path_buf();
        let files = Files::of(version);
        let ceiling = if version == Version::V1 { "memory.limit_in_bytes" } else { "memory.max" };
        group.set(ceiling, &(256u64 << 20).to_string()).unwrap();
        let share = 8 << 20;
        let cap = CacheCap::start(dir.clone(), version, share).unwrap();
        let data = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
        std::fs::write(data.path(), vec![7u8; 32 << 20]).unwrap();
        crate::sys::drop_caches().unwrap();
        let mut reader = std::process::Command::new("sh");
        reader.args(["-c", "cat \"$1\" \"$1\" > /dev/null", "sh"]).arg(data.path());
        crate::sys::cgroup::join_on_spawn(&mut reader, std::slice::from_ref(&dir)).unwrap();
        assert!(reader.status().unwrap().success());
        let cache = stat_field(&std::fs::read_to_string(dir.join("memory.stat")).unwrap(), files.cache_key).unwrap();
        drop(cap);
        assert!(cache <= share + 2 * STEADY, "the group caches {} MB with a share of 8 MB", cache >> 20);
    }
}
