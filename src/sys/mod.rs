//! The ground floor: what dbvs asks of the operating system. Tools on PATH, secret files,
//! the page cache, control groups, process trees and the units people write. Nothing here
//! imports any other dbvs module.

pub mod cgroup;
pub mod disk_writes;
pub mod fscrypt;
pub mod lease;
pub mod lock;
pub mod mounts;
pub mod names;
pub mod placement;
pub mod private;
pub mod ramdisk;
pub mod tree;
pub mod units;

pub use placement::Placement;
pub use private::read_secret_file;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// dbvs's data directory: `$XDG_DATA_HOME/dbvs`, else `~/.local/share/dbvs`.
pub fn data_home() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".local/share")
    });
    base.join("dbvs")
}

/// The file process `pid` runs (`/proc/PID/exe`), as a record says which binary really
/// served: said from what the kernel runs, not from what was asked for.
pub fn executable_of(pid: Option<u32>) -> String {
    let exe = pid.and_then(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok());
    exe.map_or("an executable /proc does not show".into(), |e| e.display().to_string())
}

/// Finds `tool` on PATH or in the sbin directories, or says which package provides it.
pub fn require(tool: &str, package: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .ok_or_else(|| anyhow::anyhow!("{tool} not found: install it with 'apt-get install {package}'"))
}

/// Runs a command, turning a failure into an error with its stderr.
pub fn run_tool(cmd: &mut std::process::Command) -> Result<()> {
    let out = cmd.stdin(std::process::Stdio::null()).output()?;
    if !out.status.success() {
        bail!("{:?} failed ({}): {}", cmd.get_program(), out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// A process's start time from /proc (clock ticks after boot), or `None` when it does not
/// exist; with the pid it names one process, even after the pid is reused.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after it are plain.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Memory the kernel could hand out now without swapping (MemAvailable), in bytes.
pub fn available_memory() -> anyhow::Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    let kb = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .ok_or_else(|| anyhow::anyhow!("/proc/meminfo has no MemAvailable"))?;
    Ok(kb * 1024)
}

/// Bytes tasks had read from storage, from the kernel's per-task I/O accounting
/// (`/proc/<task>/io` read_bytes): page-cache misses, each the whole folio read in. Its
/// write_bytes is not used: it counts a whole folio each time a write dirties one
/// (`disk_writes` says how far that is from what the disk wrote).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StorageIo {
    pub read: u64,
}

impl StorageIo {
    /// One task's so far: `task` is `thread-self`, `self` or a pid; `None` where the kernel
    /// does not account I/O per task.
    pub fn of(task: &str) -> Option<Self> {
        let text = std::fs::read_to_string(format!("/proc/{task}/io")).ok()?;
        let read = text.lines().find_map(|l| l.strip_prefix("read_bytes:")).and_then(|v| v.trim().parse().ok())?;
        Some(Self { read })
    }

    /// The processes' together (those that are gone count nothing).
    pub fn of_processes(pids: &[u32]) -> Self {
        Self { read: pids.iter().filter_map(|p| Self::of(&p.to_string())).map(|io| io.read).sum() }
    }

    /// What was done between `earlier` and `self`.
    pub fn since(self, earlier: Self) -> Self {
        Self { read: self.read.saturating_sub(earlier.read) }
    }
}

/// `PID:START`: this process's identity for records other processes judge later.
pub fn process_tag(pid: u32) -> String {
    format!("{pid}:{}", process_start_time(pid).unwrap_or(0))
}

/// Whether the process a [`process_tag`] names still runs.
pub fn process_alive(tag: &str) -> bool {
    let parsed = tag.split_once(':').and_then(|(p, s)| Some((p.parse::<u32>().ok()?, s.parse::<u64>().ok()?)));
    parsed.is_some_and(|(pid, start)| process_start_time(pid) == Some(start))
}

/// Makes `cmd`'s process receive SIGTERM (and so stop, cleaning up its own run) when the
/// thread that starts it dies, e.g. when a study is killed with SIGKILL.
pub fn end_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; the closure touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// Creates (truncates) an output file up front, so a bad path fails before a long run.
pub fn create_output(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("cannot write {}; choose a writable path", path.display()))
}

/// Writes dirty pages out and empties the OS page cache, so reads come from the device.
pub fn drop_caches() -> Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        anyhow::anyhow!("cannot drop the page cache for a cold start ({e}); run as root, or leave out --cold")
    })
}

/// Gives the blocks the file systems mounted at `mounts` (loop-mounted images) have freed
/// back to the storage under their images. A deleted copy's blocks are free inside an image
/// but still taken in the image file, so without this an image on a small disk (a RAM disk
/// model's share) fills it a copy at a time, however little the image holds.
pub fn trim(mounts: &[PathBuf]) -> Result<()> {
    for m in mounts {
        run_tool(std::process::Command::new(require("fstrim", "util-linux")?).arg(m))
            .with_context(|| format!("cannot trim the image file system at {}", m.display()))?;
    }
    Ok(())
}

/// Checks that loop devices can be made here (losetup, and the loop module loaded).
pub fn require_loop_devices() -> Result<()> {
    require("losetup", "mount")?;
    if !Path::new("/dev/loop-control").exists() {
        anyhow::bail!("no loop devices (/dev/loop-control missing): load the loop module (modprobe loop)");
    }
    Ok(())
}

/// Reads every file under `paths` (files, or directories walked) through the page cache,
/// so their pages are cached and charged to this process's memory group now. Returns the
/// bytes read. A file that vanishes meanwhile (a server's temporary file) is passed over.
pub fn cache_files(paths: &[PathBuf]) -> Result<u64> {
    let mut bytes = 0;
    let mut todo: Vec<PathBuf> = paths.to_vec();
    while let Some(path) = todo.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.is_dir() {
            let entries = std::fs::read_dir(&path).with_context(|| format!("cannot read {}", path.display()))?;
            todo.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
        } else if meta.is_file() {
            if let Ok(mut f) = std::fs::File::open(&path) {
                bytes += std::io::copy(&mut f, &mut std::io::sink()).unwrap_or(0);
            }
        }
    }
    Ok(bytes)
}

/// CPU time the calling thread has used so far (user and system).
pub fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Pins the calling thread to the `i`-th of the CPUs it may run on (round robin); returns
/// that CPU. Worker `i` of every variant in a sliced run is pinned alike, so the variants
/// take turns on the same CPUs: a VM's vCPUs differ in speed from moment to moment (what
/// the host runs beside them), and a variant whose worker the scheduler kept on the slower
/// one would carry that into the comparison.
pub fn pin_thread(i: usize) -> Result<usize> {
    let cpus = allowed_cpus()?;
    let Some(cpu) = worker_cpu(&cpus, i) else {
        bail!("this thread may run on no CPU");
    };
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call only reads the set we pass,
    // for the calling thread (pid 0).
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) != 0 {
            bail!("cannot pin a worker to CPU {cpu}: {}", std::io::Error::last_os_error());
        }
    }
    Ok(cpu)
}

/// The CPU worker `i` is pinned to among `cpus` (round robin).
fn worker_cpu(cpus: &[usize], i: usize) -> Option<usize> {
    cpus.get(i % cpus.len().max(1)).copied()
}

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call only writes the set we pass.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) != 0 {
            bail!("cannot read the CPUs this thread may run on: {}", std::io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &allowed)).collect())
    }
}

/// `n` random bytes as lowercase hex, from the OS.
pub fn random_hex(n: usize) -> String {
    use rand::TryRngCore;
    let mut buf = vec![0u8; n];
    rand::rngs::OsRng.try_fill_bytes(&mut buf).expect("the OS random source works");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_hex_has_two_digits_a_byte() {
        let (a, b) = (random_hex(32), random_hex(32));
        assert!(a.len() == 64 && a.bytes().all(|c| c.is_ascii_hexdigit()) && a != b);
    }

    /// A 64MB file deleted from an ext4 image still takes its blocks in the image file
    /// until the file system is trimmed.
    #[test]
    fn trimming_an_image_gives_a_deleted_file_s_blocks_back_to_the_disk_under_it() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let image = dir.path().join("ext4.img");
        std::fs::File::create(&image).unwrap().set_len(256 << 20).unwrap();
        let mkfs = require("mkfs.ext4", "e2fsprogs").unwrap();
        run_tool(std::process::Command::new(mkfs).args(["-q", "-F", "-E", "nodiscard"]).arg(&image)).unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        run_tool(std::process::Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&mnt)).unwrap();
        struct Unmount(PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg(&self.0).status();
            }
        }
        let _mounted = Unmount(mnt.clone());
        let taken = || {
            // SAFETY: sync has no preconditions.
            unsafe { libc::sync() };
            std::fs::metadata(&image).unwrap().blocks() * 512
        };
        let file = mnt.join("copy");
        std::fs::write(&file, vec![1u8; 64 << 20]).unwrap();
        let with_file = taken();
        std::fs::remove_file(&file).unwrap();
        let deleted = taken();
        assert!(deleted + (8 << 20) > with_file, "{} MB taken before, {} MB after", with_file >> 20, deleted >> 20);
        trim(std::slice::from_ref(&mnt)).unwrap();
        let trimmed = taken();
        assert!(
            trimmed + (56 << 20) < with_file,
            "{} MB taken with the file, {} MB trimmed",
            with_file >> 20,
            trimmed >> 20
        );
    }

    #[test]
    fn caching_files_reads_every_file_under_the_paths_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/one"), vec![1u8; 5000]).unwrap();
        std::fs::write(dir.path().join("a/b/two"), vec![2u8; 300]).unwrap();
        std::fs::write(dir.path().join("three"), vec![3u8; 7]).unwrap();
        let paths = [dir.path().join("a"), dir.path().join("three"), dir.path().join("gone")];
        assert_eq!(cache_files(&paths).unwrap(), 5307);
    }

    #[test]
    fn workers_are_pinned_round_robin_to_the_cpus_they_may_use() {
        let allowed = allowed_cpus().unwrap();
        for i in 0..2 * allowed.len() + 1 {
            // A thread of its own each time: a pinned thread may use only its CPU.
            let (cpu, now) =
                std::thread::spawn(move || (pin_thread(i).unwrap(), allowed_cpus().unwrap())).join().unwrap();
            assert_eq!(cpu, allowed[i % allowed.len()]);
            assert_eq!(now, vec![cpu], "worker {i} runs on its CPU alone");
        }
        let (n, last) = (allowed.len(), *allowed.last().unwrap());
        let within = std::thread::spawn(move || (pin_thread(n - 1).unwrap(), pin_thread(7).unwrap())).join().unwrap();
        assert_eq!(within, (last, last), "a thread limited to fewer CPUs is pinned among those");
    }

    #[test]
    fn missing_tools_name_their_package() {
        let e = require("no-such-tool-dbvs", "some-package").unwrap_err().to_string();
        assert!(e.contains("apt-get install some-package"), "{e}");
    }
}
