//! gocryptfs: the database directory inside a FUSE mount that encrypts every file with
//! AES-256-GCM in 4 KiB blocks. The ciphertext directory, on the stack's storage, is what
//! lies at rest.

use super::keys::{KeySource, Shape};
use super::storage::Base;
use super::{InForce, Prepared};
use crate::sys::lease::{Lease, Step};
use crate::sys::{require, run_tool};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const CIPHER: &str = "AES-256-GCM per 4 KiB block";

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// gocryptfs has AES-256 only; the key is stated for symmetry with the other layers.
    pub key_bits: Option<u32>,
    /// The passphrase that unlocks gocryptfs's master key.
    #[serde(default)]
    pub key: KeySource,
}

impl Settings {
    pub fn describe(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("key_source".into(), self.key.describe())])
    }

    pub fn validate(&self) -> Result<()> {
        if !matches!(self.key_bits, None | Some(256)) {
            bail!("gocryptfs: key_bits must be 256 (gocryptfs encrypts with AES-256-GCM only)");
        }
        self.key.validate()
    }

    /// Mounts gocryptfs at `mnt` over a ciphertext directory in `base`; returns that directory.
    pub fn setup(
        &self,
        base: &Base,
        mnt: &Path,
        env: &[(String, String)],
        lease: &mut Lease,
        p: &mut Prepared,
    ) -> Result<PathBuf> {
        let cipher = base.dir.join("gocryptfs-cipher");
        std::fs::create_dir_all(&cipher)?;
        std::fs::create_dir_all(mnt)?;
        // Absolute, so the daemon's arguments name the mount (see `fuse_daemon`).
        let mnt = &mnt.canonicalize()?;
        let pass = lease.secret_file(mnt.with_extension("pass"), self.key.material(Shape::Passphrase)?.as_bytes())?;
        let gocryptfs = |args: &[&std::ffi::OsStr]| {
            let mut c = Command::new(require("gocryptfs", "gocryptfs")?);
            c.args(args).envs(env.iter().map(|(k, v)| (k, v)));
            // Go's soft memory limit: under a run's memory limit the daemon's group is
            // small, and an unbounded heap got it killed by the OOM killer (run::memory).
            c.env("GOMEMLIMIT", "64MiB");
            run_tool(&mut c)
        };
        // scryptn only protects the master key in gocryptfs.conf; it does not touch the data path.
        let (passfile, q): (&std::ffi::OsStr, &std::ffi::OsStr) = ("-passfile".as_ref(), "-q".as_ref());
        gocryptfs(&[
            "-init".as_ref(),
            q,
            "-scryptn".as_ref(),
            "10".as_ref(),
            passfile,
            pass.as_os_str(),
            cipher.as_os_str(),
        ])?;
        // allow_other: a managed server runs as its own user and must see the mount too.
        let allow_other: &std::ffi::OsStr = if is_root() { "-allow_other".as_ref() } else { q };
        lease.push(Step::Unmount { path: mnt.to_path_buf(), fuse: true })?;
        gocryptfs(&[q, allow_other, passfile, pass.as_os_str(), cipher.as_os_str(), mnt.as_os_str()])?;
        // The passphrase is only needed to mount; it goes at once.
        std::fs::remove_file(&pass)?;
        p.in_force.push(InForce::Mount { path: mnt.to_path_buf(), fs_type: "fuse.gocryptfs" });
        p.daemons.push(super::storage::fuse_daemon(mnt)?);
        Ok(cipher)
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
