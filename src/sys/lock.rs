//! Exclusive use of a directory by one dbvs process (a managed server's data directory):
//! an flock on a lock file beside it, which the kernel releases when the process dies, so a
//! killed holder never leaves a stale lock. The file names the holder for the error, and
//! the holder deletes it when done.

use anyhow::{bail, Context, Result};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Held while alive.
pub struct DirLock {
    _file: std::fs::File,
    path: PathBuf,
}

impl DirLock {
    /// Takes `dir` for this process, or fails naming the process that has it.
    pub fn acquire(dir: &Path, what: &str) -> Result<Self> {
        let name = dir.file_name().map_or_else(|| "data".into(), |n| n.to_string_lossy().into_owned());
        let path = dir.with_file_name(format!(".{name}.dbvs-lock"));
        loop {
            if let Some(lock) = Self::try_once(&path, dir, what)? {
                return Ok(lock);
            }
        }
    }

    /// One attempt; `None` when the file was deleted by its last holder between our open
    /// and our lock (then the lock is on a file nobody else will see).
    fn try_once(path: &Path, dir: &Path, what: &str) -> Result<Option<Self>> {
        use std::os::unix::fs::MetadataExt;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("cannot create the lock file {}", path.display()))?;
        // SAFETY: flock on a file we own; non-blocking.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            bail!(
                "{what} {} is in use by dbvs process {}; wait for it to finish, or choose another --data-dir",
                dir.display(),
                if holder.is_empty() { "(unknown)" } else { holder }
            );
        }
        let same = std::fs::metadata(path).is_ok_and(|m| m.ino() == file.metadata().map_or(0, |f| f.ino()));
        if !same {
            return Ok(None);
        }
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        file.flush()?;
        Ok(Some(DirLock { _file: file, path: path.to_path_buf() }))
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Deleted while still locked, so a waiting opener sees the file change and retries.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("pg");
        let first = DirLock::acquire(&data, "data directory").unwrap();
        let e = DirLock::acquire(&data, "data directory").err().unwrap().to_string();
        assert!(e.contains(&std::process::id().to_string()) && e.contains("in use"), "{e}");
        drop(first);
        let again = DirLock::acquire(&data, "data directory").unwrap();
        drop(again);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the lock file goes with the lock");
    }
}
