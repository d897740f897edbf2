//! fscrypt: the database in a directory encrypted by the kernel (v2 policy) on the stack's
//! ext4 file system, which must have the `encrypt` feature (`storage = "ext4-image"` makes
//! one). The key goes straight into the file system's keyring by ioctl
//! ([`crate::sys::fscrypt`]), so there is no fscrypt tool configuration to touch and no key
//! on any command line.

use super::keys::{hex_bytes, KeySource, Shape};
use super::storage::Base;
use super::{InForce, Prepared};
use crate::sys::fscrypt::{self, Modes, MASTER_KEY_BYTES};
use crate::sys::lease::{Lease, Step};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// 256 (contents AES-256-XTS, names AES-256-CTS; the default) or 128 (contents
    /// AES-128-CBC-ESSIV, names AES-128-CTS).
    pub key_bits: Option<u32>,
    /// The 512-bit master key as 128 hex digits.
    #[serde(default)]
    pub key: KeySource,
}

impl Settings {
    fn modes(&self) -> Modes {
        if self.key_bits == Some(128) {
            Modes::Aes128
        } else {
            Modes::Aes256
        }
    }

    pub fn cipher(&self) -> &'static str {
        match self.modes() {
            Modes::Aes256 => "AES-256-XTS contents, AES-256-CTS names (kernel)",
            Modes::Aes128 => "AES-128-CBC-ESSIV contents, AES-128-CTS names (kernel)",
        }
    }

    pub fn key_bits(&self) -> u32 {
        self.key_bits.unwrap_or(256)
    }

    pub fn describe(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("policy".into(), "v2".into()),
            ("key_source".into(), self.key.describe()),
            ("kernel_cipher".into(), self.modes().kernel_implementation()),
        ])
    }

    pub fn validate(&self) -> Result<()> {
        if !matches!(self.key_bits, None | Some(128 | 256)) {
            bail!("fscrypt: key_bits must be 128 or 256");
        }
        self.key.validate()
    }

    /// Encrypts `base/data` with a fresh policy; returns the directory.
    pub fn setup(&self, base: &Base, lease: &mut Lease, p: &mut Prepared) -> Result<PathBuf> {
        let Some(mnt) = &base.ext4 else {
            bail!("fscrypt needs an ext4 file system with the encrypt feature: use storage = \"ext4-image\"")
        };
        let raw: [u8; MASTER_KEY_BYTES] = hex_bytes(&self.key.material(Shape::HexBytes(MASTER_KEY_BYTES))?);
        let identifier = fscrypt::add_key(mnt, raw)?;
        // Unmounting also drops the file system's keyring; this step locks the files sooner.
        lease.push(Step::RemoveFscryptKey { mount: mnt.clone(), identifier: fscrypt::identifier_hex(&identifier) })?;
        let data = base.dir.join("data");
        std::fs::create_dir(&data)?;
        fscrypt::set_policy(&data, &identifier, self.modes())?;
        probe(&data, self.cipher())?;
        p.in_force.push(InForce::Fscrypt { mount: mnt.clone(), dir: data.clone(), identifier });
        Ok(data)
    }
}

/// Creates a file in the new directory: the kernel only looks for the policy's ciphers then.
fn probe(dir: &Path, cipher: &str) -> Result<()> {
    let file = dir.join(".dbvs-probe");
    match std::fs::write(&file, b"probe") {
        Ok(()) => Ok(std::fs::remove_file(&file)?),
        Err(e) if e.raw_os_error() == Some(libc::ENOPKG) => bail!(
            "this kernel lacks the crypto fscrypt needs for {cipher} (for AES-128: CONFIG_CRYPTO_ESSIV); \
             use key_bits = 256"
        ),
        Err(e) => Err(e).with_context(|| format!("cannot write into the fscrypt directory {}", dir.display())),
    }
}

pub fn preflight() -> Result<()> {
    if !Path::new("/sys/fs/ext4/features/encryption").exists() {
        bail!("this kernel's ext4 lacks encryption support (no /sys/fs/ext4/features/encryption)");
    }
    Ok(())
}
