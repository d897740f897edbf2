//! A run's memory limit, page cache included: the run process (SQLite's engine runs in it)
//! and a managed server's processes join a control group with `memory.max` (v1:
//! `memory.limit_in_bytes`) once the pristine database is built (building needs more memory
//! than measuring) and before the fresh copy is made. Everything the run reads is then
//! charged to the group, so a database larger than the limit really reads from storage, as
//! seeds 000 and 001 arranged with databases larger than their servers' memory.
//!
//! The variants' FUSE daemons get a group of their own: sharing their callers' group
//! deadlocks. Reclaim in the group (v1) waits for the writeback of a dirty FUSE page
//! (SQLite's mmapped -shm), which only the daemon can finish, while the daemon waits on that
//! reclaim for memory. Their group holds a quarter of the limit (at least 16MB): what they
//! cache of the backing files (gocryptfs's ciphertext) stays small, so a FUSE variant still
//! reads from storage, with a little more memory in all than the others. Whatever was moved
//! in goes back where it was afterwards.

use crate::sys::cgroup::{Group, Version};
use anyhow::{Context, Result};
use std::path::PathBuf;

pub struct MemoryLimit {
    bytes: u64,
    group: Group,
    /// The FUSE daemons' group (a quarter of the limit), made when there are daemons.
    daemons: Option<Group>,
    /// Processes moved in, with the group directory each came from.
    moved: Vec<(u32, PathBuf)>,
}

/// What the FUSE daemons' group may hold of a run's limit of `bytes`.
fn daemons_share(bytes: u64) -> u64 {
    (bytes / 4).max(16 << 20)
}

/// A memory group limited to `bytes`.
fn limited(name: &str, bytes: u64) -> Result<Group> {
    let group = Group::create(name, &["memory"])?;
    let v1 = group.version == Version::V1;
    group.set(if v1 { "memory.limit_in_bytes" } else { "memory.max" }, &bytes.to_string())?;
    Ok(group)
}

impl MemoryLimit {
    /// A group limited to `bytes`, empty until processes are admitted.
    pub fn new(bytes: u64) -> Result<Self> {
        Ok(MemoryLimit { bytes, group: limited("run-memory", bytes)?, daemons: None, moved: Vec::new() })
    }

    /// Moves this process and `server` (a managed server's processes) into the group, and
    /// `daemons` into the daemons' group; children they start from then on are born there.
    pub fn admit(&mut self, server: &[u32], daemons: &[u32]) -> Result<()> {
        let dir = self.group.dir_for("memory.max").to_path_buf();
        let own: Vec<u32> = std::iter::once(std::process::id()).chain(server.iter().copied()).collect();
        self.move_into(&dir, &own)?;
        if daemons.is_empty() {
            return Ok(());
        }
        let group = match self.daemons.take() {
            Some(g) => g,
            None => limited("run-memory-fuse", daemons_share(self.bytes))?,
        };
        let dir = group.dir_for("memory.max").to_path_buf();
        self.daemons = Some(group);
        self.move_into(&dir, daemons)
    }

    /// Moves `pids` into the group at `dir`. One that has exited meanwhile (a server's
    /// backend whose connection closed) is passed over.
    fn move_into(&mut self, dir: &std::path::Path, pids: &[u32]) -> Result<()> {
        for &pid in pids {
            if self.moved.iter().any(|(p, _)| *p == pid) {
                continue;
            }
            let gone = || !std::path::Path::new(&format!("/proc/{pid}")).exists();
            let moved = current_group(pid, self.group.version).and_then(|from| {
                std::fs::write(dir.join("cgroup.procs"), pid.to_string())
                    .with_context(|| format!("cannot move process {pid} into the memory limit's group"))?;
                Ok(from)
            });
            match moved {
                Ok(from) => self.moved.push((pid, from)),
                Err(_) if pid != std::process::id() && gone() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// What the limit did so far (peak use, times it was hit), for the run record, so a
    /// limit that never bit is visible.
    pub fn record(&self) -> crate::record::LimitsRecord {
        crate::record::LimitsRecord {
            applied_to: "the run's memory (this process and its server; FUSE daemons in a group of their own with \
                         a quarter of the limit, at least 16MB)"
                .into(),
            usage: crate::sys::cgroup::Usage::read(&self.group.dirs),
        }
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        // Back where they were, so the group is empty and can go.
        for (pid, from) in self.moved.drain(..).rev() {
            let _ = std::fs::write(from.join("cgroup.procs"), pid.to_string());
        }
    }
}

/// The directory of `pid`'s memory control group.
fn current_group(pid: u32, version: Version) -> Result<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .with_context(|| format!("cannot read the control groups of process {pid}"))?;
    memory_group(&text, version).with_context(|| format!("process {pid} is in no memory control group"))
}

/// The memory group's directory in a `/proc/PID/cgroup` text.
fn memory_group(text: &str, version: Version) -> Option<PathBuf> {
    let (root, path) = text
        .lines()
        .filter_map(|l| {
            let mut fields = l.splitn(3, ':').skip(1);
            fields.next().zip(fields.next())
        })
        .find_map(|(controllers, path)| match version {
            Version::V1 => controllers.split(',').any(|c| c == "memory").then_some(("memory", path)),
            Version::V2 => controllers.is_empty().then_some(("", path)),
        })?;
    Some(PathBuf::from(crate::sys::cgroup::ROOT).join(root).join(path.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuse_daemons_get_a_quarter_of_the_limit_and_at_least_16mb() {
        assert_eq!(daemons_share(1 << 30), 256 << 20);
        assert_eq!(daemons_share(48 << 20), 16 << 20);
    }

    #[test]
    fn the_memory_group_is_found_on_both_hierarchies() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(memory_group(v1, Version::V1).unwrap(), PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"));
        let v2 = "0::/user.slice/session-1.scope\n";
        assert_eq!(memory_group(v2, Version::V2).unwrap(), PathBuf::from("/sys/fs/cgroup/user.slice/session-1.scope"));
        assert!(memory_group("1:cpu:/\n", Version::V1).is_none());
    }
}
