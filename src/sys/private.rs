//! Files only this user controls. A secret file (a key, a password) is read only when no
//! one else may read it; a lease is carried out only when no one else could have written it,
//! since carrying one out deletes, unmounts and stops what it names. Every such file is
//! opened without blocking (a FIFO would hold `open` with Ctrl-C unheard) and checked on
//! the opened descriptor, so what is checked is what is read.

use anyhow::{bail, Context, Result};
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Reads a secret (key or password) from a regular file that only its owner may access;
/// the trailing newline is dropped.
pub fn read_secret_file(path: &Path) -> Result<String> {
    let (file, meta) = open_regular(path, "key file", true, "put it in a regular file of mode 0600")?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "key file {} is accessible by other users (mode {mode:04o}); run: chmod 600 {}",
            path.display(),
            path.display()
        );
    }
    let text = read_all(file, path, "key file")?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

/// Reads `what` at `path` only if this user alone could have written it: a regular file (a
/// symlink is not followed) owned by the effective user and writable by no one else. `fix`
/// ends the error.
pub fn read_own_file(path: &Path, what: &str, fix: &str) -> Result<String> {
    let (file, meta) = open_regular(path, what, false, fix)?;
    if let Some(problem) = not_mine(&meta) {
        bail!("{what} {} {problem}; {fix}", path.display());
    }
    read_all(file, path, what)
}

/// Creates `dir` (mode 0700, parents too) unless it exists, and checks it as [`check_own_dir`].
pub fn own_dir(dir: &Path, what: &str, fix: &str) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the {what} {}; {fix}", dir.display()))?;
    check_own_dir(dir, what, fix)
}

/// Checks that only this user may change what `dir` holds: a directory owned by the
/// effective user that neither its group nor others may write. `fix` ends the error.
pub fn check_own_dir(dir: &Path, what: &str, fix: &str) -> Result<()> {
    let meta = std::fs::metadata(dir).with_context(|| format!("cannot read the {what} {}; {fix}", dir.display()))?;
    let problem = match meta.is_dir() {
        false => Some("is not a directory".into()),
        true => not_mine(&meta),
    };
    let shown = dir.display();
    match problem {
        // A directory of the user's that others may write: taking their access away does.
        Some(p) if meta.is_dir() && meta.uid() == euid() => {
            bail!("the {what} {shown} {p}; run: chmod go-w {shown}, or {fix}")
        }
        Some(p) => bail!("the {what} {shown} {p}; {fix}"),
        None => Ok(()),
    }
}

/// Opens `path` for reading without blocking (and, unless `follow`, without following a
/// symlink there); refuses anything but a regular file, the error ending in `fix`.
fn open_regular(path: &Path, what: &str, follow: bool, fix: &str) -> Result<(File, Metadata)> {
    let flags = libc::O_NONBLOCK | if follow { 0 } else { libc::O_NOFOLLOW };
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Err(e) if !follow && e.raw_os_error() == Some(libc::ELOOP) => {
            bail!("{what} {} is a symbolic link; {fix}", path.display())
        }
        other => other.with_context(|| format!("cannot read {what} {}", path.display()))?,
    };
    let meta = file.metadata().with_context(|| format!("cannot read {what} {}", path.display()))?;
    let t = meta.file_type();
    let kind = match () {
        _ if t.is_file() => return Ok((file, meta)),
        _ if t.is_fifo() => "a FIFO",
        _ if t.is_dir() => "a directory",
        _ if t.is_socket() => "a socket",
        _ => "a device",
    };
    bail!("{what} {} is {kind}, not a regular file; {fix}", path.display())
}

/// What makes a file another user's to change, if anything: another owner, or write
/// access for its group or others.
fn not_mine(meta: &Metadata) -> Option<String> {
    let me = euid();
    let mode = meta.mode() & 0o777;
    if meta.uid() != me {
        Some(format!("belongs to uid {}, not to this user (uid {me})", meta.uid()))
    } else if mode & 0o022 != 0 {
        Some(format!("is writable by other users (mode {mode:04o})"))
    } else {
        None
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn read_all(mut file: File, path: &Path, what: &str) -> Result<String> {
    let mut text = String::new();
    file.read_to_string(&mut text).with_context(|| format!("cannot read {what} {}", path.display()))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_secret_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        std::fs::write(&p, "x\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_secret_file(&p).unwrap_err().to_string().contains("chmod 600"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_secret_file(&p).unwrap(), "x");
    }

    #[test]
    fn a_fifo_as_a_secret_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("k");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path we pass.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Read on a thread of its own: a blocking open would hang the test, not fail it.
        let (tx, rx) = std::sync::mpsc::channel();
        let p = fifo.clone();
        std::thread::spawn(move || tx.send(read_secret_file(&p).map_err(|e| format!("{e:#}"))));
        let got = rx.recv_timeout(std::time::Duration::from_secs(5)).expect("reading a FIFO key file hangs");
        let e = got.unwrap_err();
        assert!(e.contains(&fifo.display().to_string()) && e.contains("a FIFO, not a regular file"), "{e}");
        let e = read_secret_file(dir.path()).unwrap_err().to_string();
        assert!(e.contains("a directory, not a regular file"), "{e}");
    }

    #[test]
    fn own_files_are_regular_mine_and_written_by_me_alone() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_own_file(&f, "lease", "remove it").unwrap(), "x");
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(read_own_file(&link, "lease", "remove it").unwrap_err().to_string().contains("symbolic link"));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(read_own_file(&f, "lease", "remove it").unwrap_err().to_string().contains("writable by other users"));
    }

    #[test]
    fn own_directories_are_made_private_and_shared_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("a/b");
        let fix = "use a directory of your own";
        own_dir(&mine, "lease directory", fix).unwrap();
        assert_eq!(std::fs::metadata(&mine).unwrap().mode() & 0o777, 0o700);
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = own_dir(&mine, "lease directory", fix).unwrap_err().to_string();
        assert!(e.contains(&mine.display().to_string()) && e.contains("writable by other users (mode 0777)"), "{e}");
        assert!(e.ends_with(&format!("; run: chmod go-w {}, or {fix}", mine.display())), "{e}");
    }
}
