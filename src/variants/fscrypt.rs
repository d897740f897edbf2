//! fscrypt: the database in a directory encrypted by the kernel (contents AES-256-XTS, names
//! AES-256-CTS, v2 policy) on an ext4 image with the `encrypt` feature, mounted through a
//! loop device. The key goes straight into the filesystem keyring by ioctl
//! ([`crate::sys::fscrypt`]), so there is no fscrypt tool configuration to touch and no key
//! on any command line.

use super::{InForce, Prepared};
use crate::sys::fscrypt;
use crate::sys::lease::{Lease, Step};
use crate::sys::{random_hex, require, run_tool};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

pub const CIPHER: &str = "AES-256-XTS contents, AES-256-CTS names (kernel)";

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Size of the sparse ext4 image, e.g. "1GB"; must hold the database and its run copies.
    #[serde(default = "default_image_size")]
    pub image_size: String,
}

fn default_image_size() -> String {
    "1GB".into()
}

impl Settings {
    pub fn describe(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("image_size".into(), self.image_size.clone()), ("policy".into(), "v2".into())])
    }

    fn image_bytes(&self) -> Result<u64> {
        let s = self.image_size.trim().to_ascii_uppercase();
        let (num, mult) = if let Some(n) = s.strip_suffix("GB") {
            (n, 1u64 << 30)
        } else if let Some(n) = s.strip_suffix("MB") {
            (n, 1 << 20)
        } else {
            bail!("image_size '{}' needs a unit: e.g. 512MB or 2GB", self.image_size)
        };
        match num.trim().parse::<u64>() {
            Ok(n) if n * mult >= 64 << 20 => Ok(n * mult),
            _ => bail!("image_size '{}' must be a whole number of MB or GB, at least 64MB", self.image_size),
        }
    }

    pub fn setup(&self, dir: &Path) -> Result<Prepared> {
        let bytes = self.image_bytes()?;
        let image = dir.join("fscrypt.img");
        let mnt = dir.join("fscrypt-mnt");
        let mut p = Prepared::plain(dir)?;
        std::fs::remove_dir(&p.data_dir)?;
        let mut lease = Lease::new(&format!("fscrypt variant in {}", dir.display()))?;
        lease.push(Step::RemoveFile { path: image.clone() })?;
        std::fs::File::create(&image)?.set_len(bytes)?;
        run_tool(
            Command::new(require("mkfs.ext4", "e2fsprogs")?)
                .args(["-q", "-F", "-O", "encrypt", "-E", "nodiscard"])
                .arg(&image),
        )?;
        std::fs::create_dir_all(&mnt)?;
        // Unmounting also drops the file system's keyring, so this step alone locks the files.
        lease.push(Step::Unmount { path: mnt.clone(), fuse: false })?;
        run_tool(Command::new(require("mount", "mount")?).args(["-o", "loop"]).arg(&image).arg(&mnt))
            .context("cannot loop-mount the ext4 image (needs root and loop devices)")?;
        let identifier = fscrypt::add_key(&mnt, new_key())?;
        lease.push(Step::RemoveFscryptKey { mount: mnt.clone(), identifier: fscrypt::identifier_hex(&identifier) })?;
        let data = mnt.join("data");
        std::fs::create_dir(&data)?;
        fscrypt::set_policy(&data, &identifier)?;
        p.in_force.push(InForce::Mount { path: mnt.clone(), fs_type: "ext4" });
        p.in_force.push(InForce::Fscrypt { mount: mnt, dir: data.clone(), identifier });
        p.lease = Some(lease);
        p.data_dir = data;
        p.backing = vec![image];
        p.encrypted = true;
        Ok(p)
    }
}

pub fn preflight() -> Result<()> {
    require("mkfs.ext4", "e2fsprogs")?;
    require("mount", "mount")?;
    if !Path::new("/sys/fs/ext4/features/encryption").exists() {
        bail!("this kernel's ext4 lacks encryption support (no /sys/fs/ext4/features/encryption)");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the fscrypt variant needs root to loop-mount its ext4 image; run dbvs as root");
    }
    if !Path::new("/dev/loop-control").exists() {
        bail!("no loop devices (/dev/loop-control missing): load the loop module (modprobe loop)");
    }
    Ok(())
}

/// A fresh random master key.
fn new_key() -> [u8; fscrypt::MASTER_KEY_BYTES] {
    let hex = random_hex(fscrypt::MASTER_KEY_BYTES);
    std::array::from_fn(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex from random_hex"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_sizes_parse() {
        let s = |v: &str| Settings { image_size: v.into() }.image_bytes();
        assert_eq!(s("1GB").unwrap(), 1 << 30);
        assert_eq!(s("512mb").unwrap(), 512 << 20);
        assert!(s("10MB").is_err() && s("big").is_err());
    }
}
