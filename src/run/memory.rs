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
//! reclaim for memory. What they cache of the backing files (gocryptfs's ciphertext) is held
//! to an eighth of the limit (at least 8MB), so a FUSE variant reads from storage with a
//! little more memory in all than the others; their own memory (gocryptfs's heap and request
//! buffers, which grow with the load) is theirs beside it ([`super::fuse_cache`]), up to 96MB
//! (the kernel killed gocryptfs at 16MB in all, and again at 48MB with 57MB anonymous, on a
//! busy machine; it now runs with Go's soft limit GOMEMLIMIT; a killed daemon's mount fails
//! with "Transport endpoint is not connected"). Whatever was moved in goes back where it was
//! afterwards.
//!
//! On cgroup v2 a process is in one group, so a run held by a variant's limits (its CPU or
//! I/O caps, seed 001's slow disk) gets its memory group inside the variant's
//! ([`Nested`]): v2 applies the variant's limits to everything below them.

use super::fuse_cache::CacheCap;
use crate::sys::cgroup::{Group, Nested, Version};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The names of the run's group and of its FUSE daemons' (after `dbvs-PID-`).
const GROUP: &str = "run-memory";
const DAEMONS_GROUP: &str = "run-memory-fuse";

pub struct MemoryLimit {
    bytes: u64,
    group: Place,
    /// The FUSE daemons' group ([`daemons_limit`]) and what holds their cache to its
    /// share, made when there are daemons.
    daemons: Option<(CacheCap, Group)>,
    /// Processes moved in, with the group directory each came from.
    moved: Vec<(u32, PathBuf)>,
}

/// Where the run's group is.
enum Place {
    /// At the top of the memory hierarchy, limited from the start.
    Top(Group),
    /// (v2) Inside the variant's group that holds this process; limited once admitted.
    Within(Nested),
}

impl Place {
    fn version(&self) -> Version {
        match self {
            Place::Top(g) => g.version,
            Place::Within(_) => Version::V2,
        }
    }
}

/// The most the FUSE daemons' own memory (heap, request buffers) may grow to, beside what
/// they cache.
const DAEMONS_OWN: u64 = 96 << 20;

/// What the FUSE daemons may cache of their backing files under a run's limit of `bytes`.
fn daemons_cache_share(bytes: u64) -> u64 {
    (bytes / 8).max(8 << 20)
}

/// The most the FUSE daemons' group may ever hold beside a run's limit of `bytes`: its cache
/// share and the daemons' own memory at its largest.
fn daemons_limit(bytes: u64) -> u64 {
    daemons_cache_share(bytes) + DAEMONS_OWN
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
        let group = match held_by_limits(crate::sys::cgroup::version(&["memory"])?)? {
            Some(variant) => {
                Place::Within(Nested::create(Path::new(crate::sys::cgroup::ROOT), &variant, GROUP, "memory")?)
            }
            None => Place::Top(limited(GROUP, bytes)?),
        };
        Ok(MemoryLimit { bytes, group, daemons: None, moved: Vec::new() })
    }

    /// Moves this process and `server` (a managed server's processes) into the group, and
    /// `daemons` into the daemons' group; children they start from then on are born there.
    pub fn admit(&mut self, server: &[u32], daemons: &[u32]) -> Result<()> {
        let own: Vec<u32> = std::iter::once(std::process::id()).chain(server.iter().copied()).collect();
        match &mut self.group {
            Place::Top(g) => {
                let dir = g.dir_for("memory.max").to_path_buf();
                self.move_into(&dir, &own)?;
            }
            // The variant's other processes come along; they go back up when it is dropped.
            Place::Within(n) => drop(n.enter(&own, "memory.max", &self.bytes.to_string())?),
        }
        if daemons.is_empty() {
            return Ok(());
        }
        let (cap, group) = match self.daemons.take() {
            Some(made) => made,
            None => {
                let (share, ceiling) = (daemons_cache_share(self.bytes), daemons_limit(self.bytes));
                let group = limited(DAEMONS_GROUP, ceiling)?;
                let dir = group.dir_for("memory.max").to_path_buf();
                (CacheCap::start(dir, group.version, share, ceiling)?, group)
            }
        };
        let dir = group.dir_for("memory.max").to_path_buf();
        self.daemons = Some((cap, group));
        self.move_into(&dir, daemons)
    }

    /// Moves `pids` into the group at `dir`. One that has exited meanwhile (a server's
    /// backend whose connection closed) is passed over.
    fn move_into(&mut self, dir: &Path, pids: &[u32]) -> Result<()> {
        for &pid in pids {
            if self.moved.iter().any(|(p, _)| *p == pid) {
                continue;
            }
            let gone = || !Path::new(&format!("/proc/{pid}")).exists();
            let moved = current_group(pid, self.group.version()).and_then(|from| {
                // Born in the group (a server started after this process joined it).
                if from == dir {
                    return Ok(None);
                }
                refuse_leaving_limits(&from, pid)?;
                std::fs::write(dir.join("cgroup.procs"), pid.to_string())
                    .with_context(|| format!("cannot move process {pid} into the memory limit's group"))?;
                Ok(Some(from))
            });
            match moved {
                Ok(Some(from)) => self.moved.push((pid, from)),
                Ok(None) => {}
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
            applied_to: "the run's memory (this process and its server; FUSE daemons in a group of their own that \
                         caches an eighth of the limit, at least 8MB, beside their own memory, up to 96MB)"
                .into(),
            usage: crate::sys::cgroup::Usage::read(match &self.group {
                Place::Top(g) => &g.dirs,
                Place::Within(n) => std::slice::from_ref(&n.dir),
            }),
        }
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        // The daemons' cap lifted first: a daemon it held back would stay held elsewhere.
        let daemons = self.daemons.take().map(|(cap, group)| {
            drop(cap);
            group
        });
        // Back where they were, so the groups are empty and can go.
        for (pid, from) in self.moved.drain(..).rev() {
            let _ = std::fs::write(from.join("cgroup.procs"), pid.to_string());
        }
        drop(daemons);
    }
}

/// A process in a dbvs group other than a run's memory groups, in the memory hierarchy
/// (v1) or any (v2, one group per process), is held by a variant's limits: moving it would
/// lift them without a word. (A FUSE daemon may still be in the group of a run that was
/// killed; it moves on.)
fn refuse_leaving_limits(from: &Path, pid: u32) -> Result<()> {
    if variant_group(from) {
        anyhow::bail!(
            "process {pid} is held by the control group {} (a variant's limits); a memory limit for the run \
             would take it out: put the memory limit in the variant's limits instead",
            from.display()
        );
    }
    Ok(())
}

/// The variant's group that holds this process, on cgroup v2 (on v1 the memory hierarchy is
/// apart from the others a variant limits, and [`refuse_leaving_limits`] guards it).
fn held_by_limits(version: Version) -> Result<Option<PathBuf>> {
    if version == Version::V1 {
        return Ok(None);
    }
    let dir = current_group(std::process::id(), version)?;
    Ok(variant_group(&dir).then_some(dir))
}

/// Whether `dir` is a group of a variant's limits: a dbvs group other than a run's.
fn variant_group(dir: &Path) -> bool {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let run_group = [GROUP, DAEMONS_GROUP].iter().any(|g| name.ends_with(&format!("-{g}")));
    name.starts_with("dbvs-") && !run_group
}

/// The directory of `pid`'s memory control group.
fn current_group(pid: u32, version: Version) -> Result<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .with_context(|| format!("cannot read the control groups of process {pid}"))?;
    memory_group(&text, version).with_context(|| format!("process {pid} is in no memory control group"))
}

/// The memory group's directory in a `/proc/PID/cgroup` text.
fn memory_group(text: &str, version: Version) -> Option<PathBuf> {
    crate::sys::cgroup::dir_in(text, (version == Version::V1).then_some("memory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuse_daemons_cache_an_eighth_of_the_limit_at_least_8mb_beside_room_of_their_own() {
        assert_eq!(daemons_cache_share(1 << 30), 128 << 20);
        assert_eq!(daemons_cache_share(32 << 20), 8 << 20);
        assert_eq!(daemons_limit(1 << 30), (128 + 96) << 20);
    }

    #[test]
    fn the_memory_group_is_found_on_both_hierarchies() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(memory_group(v1, Version::V1).unwrap(), PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"));
        let v2 = "0::/user.slice/session-1.scope\n";
        assert_eq!(memory_group(v2, Version::V2).unwrap(), PathBuf::from("/sys/fs/cgroup/user.slice/session-1.scope"));
        assert!(memory_group("1:cpu:/\n", Version::V1).is_none());
    }

    #[test]
    fn a_process_held_by_a_variant_s_limits_is_not_moved_out_of_them() {
        let held = Path::new("/sys/fs/cgroup/memory/dbvs-123-small");
        let e = refuse_leaving_limits(held, 7).unwrap_err().to_string();
        assert!(e.contains("process 7") && e.contains("dbvs-123-small") && e.contains("variant's limits"), "{e}");
        refuse_leaving_limits(Path::new("/sys/fs/cgroup/user.slice/session-1.scope"), 7).unwrap();
        refuse_leaving_limits(Path::new("/sys/fs/cgroup/memory/dbvs-99-run-memory-fuse"), 7).unwrap();
    }
}
