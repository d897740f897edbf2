//! fscrypt: the database in a directory encrypted by the kernel (contents AES-256-XTS, names
//! AES-256-CTS, v2 policy) on an ext4 image with the `encrypt` feature, mounted through a
//! loop device. The key goes straight into the filesystem keyring by ioctl, so there is no
//! fscrypt tool configuration to touch and no key on any command line.

use super::Prepared;
use crate::sys::{random_hex, require, run_tool};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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
        std::fs::File::create(&image)?.set_len(bytes)?;
        p.guards.push(Box::new(RemoveFile(image.clone())));
        run_tool(Command::new("mkfs.ext4").args(["-q", "-F", "-O", "encrypt", "-E", "nodiscard"]).arg(&image))?;
        std::fs::create_dir_all(&mnt)?;
        run_tool(Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&mnt))
            .context("cannot loop-mount the ext4 image (needs root and loop devices)")?;
        p.guards.push(Box::new(Unmount(mnt.clone())));
        let key = KeyInKeyring::add(&mnt)?;
        let data = mnt.join("data");
        std::fs::create_dir(&data)?;
        set_policy(&data, &key.identifier)?;
        p.guards.push(Box::new(key));
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

struct RemoveFile(PathBuf);

impl Drop for RemoveFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Unmounts the image (which also frees its auto-clearing loop device).
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        for _ in 0..50 {
            if run_tool(Command::new("umount").arg(&self.0)).is_ok() {
                let _ = std::fs::remove_dir(&self.0);
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = run_tool(Command::new("umount").arg("-l").arg(&self.0));
    }
}

// linux/fscrypt.h
const FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER: u32 = 2;
const FSCRYPT_POLICY_V2: u8 = 2;
const FSCRYPT_MODE_AES_256_XTS: u8 = 1;
const FSCRYPT_MODE_AES_256_CTS: u8 = 4;
const FSCRYPT_POLICY_FLAGS_PAD_32: u8 = 0x03;
/// AES-256-XTS takes a 512-bit key.
const MASTER_KEY_BYTES: usize = 64;

#[repr(C)]
struct KeySpecifier {
    kind: u32,
    reserved: u32,
    identifier: [u8; 32],
}

#[repr(C)]
struct AddKeyArg {
    spec: KeySpecifier,
    raw_size: u32,
    key_id: u32,
    reserved: [u32; 8],
    raw: [u8; MASTER_KEY_BYTES],
}

#[repr(C)]
struct RemoveKeyArg {
    spec: KeySpecifier,
    removal_status_flags: u32,
    reserved: [u32; 5],
}

#[repr(C)]
struct PolicyV2 {
    version: u8,
    contents_mode: u8,
    filenames_mode: u8,
    flags: u8,
    log2_data_unit_size: u8,
    reserved: [u8; 3],
    identifier: [u8; 16],
}

const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | ((b'f' as u64) << 8) | nr
}
const IOC_READ: u64 = 2;
const IOC_RW: u64 = 3;
/// The kernel defines SET_ENCRYPTION_POLICY with the 12-byte v1 struct size for every version.
const FS_IOC_SET_ENCRYPTION_POLICY: u64 = ioc(IOC_READ, 19, 12);
const FS_IOC_ADD_ENCRYPTION_KEY: u64 = ioc(IOC_RW, 23, std::mem::size_of::<AddKeyArg>() - MASTER_KEY_BYTES);
const FS_IOC_REMOVE_ENCRYPTION_KEY: u64 = ioc(IOC_RW, 24, std::mem::size_of::<RemoveKeyArg>());

fn ioctl<T>(path: &Path, request: u64, arg: &mut T) -> Result<()> {
    let f = std::fs::File::open(path)?;
    // SAFETY: `arg` is a #[repr(C)] struct matching the kernel's layout for `request`, and
    // it outlives the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), request as _, arg as *mut T) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

/// The master key, present in the filesystem's keyring until dropped (which locks the files).
struct KeyInKeyring {
    mount: PathBuf,
    identifier: [u8; 16],
}

impl KeyInKeyring {
    fn add(mount: &Path) -> Result<Self> {
        let hex = random_hex(MASTER_KEY_BYTES);
        let mut raw = [0u8; MASTER_KEY_BYTES];
        for (i, b) in raw.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex from random_hex");
        }
        let mut arg = AddKeyArg {
            spec: KeySpecifier { kind: FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER, reserved: 0, identifier: [0; 32] },
            raw_size: MASTER_KEY_BYTES as u32,
            key_id: 0,
            reserved: [0; 8],
            raw,
        };
        let result = ioctl(mount, FS_IOC_ADD_ENCRYPTION_KEY, &mut arg).context("cannot add the fscrypt key");
        arg.raw = [0; MASTER_KEY_BYTES];
        result?;
        let mut identifier = [0u8; 16];
        identifier.copy_from_slice(&arg.spec.identifier[..16]);
        Ok(Self { mount: mount.to_path_buf(), identifier })
    }
}

impl Drop for KeyInKeyring {
    fn drop(&mut self) {
        let mut spec = KeySpecifier { kind: FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER, reserved: 0, identifier: [0; 32] };
        spec.identifier[..16].copy_from_slice(&self.identifier);
        let mut arg = RemoveKeyArg { spec, removal_status_flags: 0, reserved: [0; 5] };
        let _ = ioctl(&self.mount, FS_IOC_REMOVE_ENCRYPTION_KEY, &mut arg);
    }
}

fn set_policy(dir: &Path, identifier: &[u8; 16]) -> Result<()> {
    let mut policy = PolicyV2 {
        version: FSCRYPT_POLICY_V2,
        contents_mode: FSCRYPT_MODE_AES_256_XTS,
        filenames_mode: FSCRYPT_MODE_AES_256_CTS,
        flags: FSCRYPT_POLICY_FLAGS_PAD_32,
        log2_data_unit_size: 0,
        reserved: [0; 3],
        identifier: *identifier,
    };
    ioctl(dir, FS_IOC_SET_ENCRYPTION_POLICY, &mut policy).context("cannot set the fscrypt policy")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_kernel_headers() {
        // From linux/fscrypt.h compiled on x86_64.
        assert_eq!(FS_IOC_SET_ENCRYPTION_POLICY, 0x800c6613);
        assert_eq!(FS_IOC_ADD_ENCRYPTION_KEY, 0xc0506617);
        assert_eq!(FS_IOC_REMOVE_ENCRYPTION_KEY, 0xc0406618);
    }

    #[test]
    fn image_sizes_parse() {
        let s = |v: &str| Settings { image_size: v.into() }.image_bytes();
        assert_eq!(s("1GB").unwrap(), 1 << 30);
        assert_eq!(s("512mb").unwrap(), 512 << 20);
        assert!(s("10MB").is_err() && s("big").is_err());
    }
}
