//! Files only this user controls. A secret file (a key, a password) is read only when no
//! one else may read it. Every such file is opened without blocking (a FIFO would hold
//! `open` with Ctrl-C unheard) and checked on the opened descriptor, so what is checked is
//! what is read.

use anyhow::{bail, Context, Result};
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
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

/// Opens `path` for reading without blocking; refuses anything but a regular file, the
/// error ending in `fix`.
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
}
