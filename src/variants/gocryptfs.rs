//! gocryptfs: the database directory inside a FUSE mount that encrypts every file with
//! AES-256-GCM in 4 KiB blocks. The ciphertext directory is what lies on disk.

use super::{InForce, Prepared};
use crate::sys::lease::{Lease, Step};
use crate::sys::{random_hex, require, run_tool};
use anyhow::{bail, Result};
use std::path::Path;
use std::process::Command;

pub const CIPHER: &str = "AES-256-GCM per 4 KiB block";

pub fn preflight() -> Result<()> {
    require("gocryptfs", "gocryptfs")?;
    require("fusermount3", "fuse3")?;
    if !Path::new("/dev/fuse").exists() {
        bail!("/dev/fuse is missing: load the fuse module (modprobe fuse) or run where FUSE is available");
    }
    Ok(())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn setup(dir: &Path, env: &[(String, String)]) -> Result<Prepared> {
    let cipher = dir.join("gocryptfs-cipher");
    std::fs::create_dir_all(&cipher)?;
    let mut p = Prepared::plain(dir)?;
    let mut lease = Lease::new(&format!("gocryptfs variant in {}", dir.display()))?;
    let pass = lease.secret_file(dir.join("gocryptfs.pass"), random_hex(32).as_bytes())?;
    let gocryptfs = |args: &[&std::ffi::OsStr]| {
        let mut c = Command::new(require("gocryptfs", "gocryptfs")?);
        c.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        run_tool(&mut c)
    };
    // scryptn only protects the master key in gocryptfs.conf; it does not touch the data path.
    gocryptfs(&[
        "-init".as_ref(),
        "-q".as_ref(),
        "-scryptn".as_ref(),
        "10".as_ref(),
        "-passfile".as_ref(),
        pass.as_os_str(),
        cipher.as_os_str(),
    ])?;
    // allow_other: a managed server runs as its own user and must see the mount too.
    let allow_other: &std::ffi::OsStr = if is_root() { "-allow_other".as_ref() } else { "-q".as_ref() };
    lease.push(Step::Unmount { path: p.data_dir.clone(), fuse: true })?;
    gocryptfs(&[
        "-q".as_ref(),
        allow_other,
        "-passfile".as_ref(),
        pass.as_os_str(),
        cipher.as_os_str(),
        p.data_dir.as_os_str(),
    ])?;
    // The passphrase is only needed to mount; it goes at once.
    std::fs::remove_file(&pass)?;
    p.in_force.push(InForce::Mount { path: p.data_dir.clone(), fs_type: "fuse.gocryptfs" });
    p.lease = Some(lease);
    p.backing = vec![cipher];
    p.encrypted = true;
    Ok(p)
}
