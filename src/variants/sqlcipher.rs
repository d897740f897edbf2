//! SQLCipher: SQLite's pages encrypted inside the engine (AES-256-CBC, HMAC-SHA512 per page
//! in SQLCipher 4). Built into dbvs, so it needs nothing installed.

use super::keys::{KeySource, Shape};
use super::{InForce, Prepared};
use crate::sys::lease::Lease;
use crate::targets::sqlite::KeyKind;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const CIPHER: &str = "AES-256-CBC, HMAC-SHA512 per page";
/// SQLite's default page size: with the same cipher page size, B-tree fan-out is equal.
const PLAIN_PAGE_SIZE: u32 = 4096;

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    #[serde(default = "default_page_size")]
    pub cipher_page_size: u32,
    /// Per-page HMAC (integrity); off saves a hash per page read and write.
    #[serde(default = "super::yes")]
    pub hmac: bool,
    /// PBKDF2 iterations; only used with passphrase keys.
    pub kdf_iter: Option<u32>,
    #[serde(default)]
    pub key: KeySource,
    #[serde(default)]
    pub key_format: KeyKind,
    /// SQLCipher 4 has AES-256 only; stated for symmetry with the other layers.
    pub key_bits: Option<u32>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            cipher_page_size: PLAIN_PAGE_SIZE,
            hmac: true,
            kdf_iter: None,
            key: KeySource::Generate,
            key_format: KeyKind::Raw,
            key_bits: None,
        }
    }
}

fn default_page_size() -> u32 {
    PLAIN_PAGE_SIZE
}

impl Settings {
    pub fn describe(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::from([
            ("cipher_page_size".into(), self.cipher_page_size.to_string()),
            ("hmac".into(), self.hmac.to_string()),
            ("key_format".into(), format!("{:?}", self.key_format).to_lowercase()),
            ("key_source".into(), self.key.describe()),
        ]);
        if let Some(k) = self.kdf_iter {
            m.insert("kdf_iter".into(), k.to_string());
        }
        m
    }

    pub fn validate(&self) -> Result<()> {
        if !matches!(self.key_bits, None | Some(256)) {
            bail!("sqlcipher: key_bits must be 256 (SQLCipher 4 encrypts with AES-256 only)");
        }
        self.key.validate()
    }

    pub fn preflight(&self) -> Result<()> {
        if !self.cipher_page_size.is_power_of_two() || !(512..=65536).contains(&self.cipher_page_size) {
            bail!("cipher_page_size must be a power of two from 512 to 65536, got {}", self.cipher_page_size);
        }
        if self.kdf_iter.is_some() && self.key_format == KeyKind::Raw {
            bail!("kdf_iter only applies to passphrase keys; set key_format = \"passphrase\" or drop kdf_iter");
        }
        Ok(())
    }

    /// Keys the database: a key file beside the work directory's data, and the pragmas.
    pub fn setup(&self, dir: &std::path::Path, lease: &mut Lease, p: &mut Prepared) -> Result<()> {
        let shape = match self.key_format {
            KeyKind::Raw => Shape::HexBytes(32),
            KeyKind::Passphrase => Shape::Passphrase,
        };
        let key_file = lease.secret_file(dir.join("sqlcipher.key"), self.key.material(shape)?.as_bytes())?;
        p.key = Some((key_file, self.key_format));
        p.cipher_pragmas.push(format!("cipher_page_size={}", self.cipher_page_size).parse()?);
        if !self.hmac {
            p.cipher_pragmas.push("cipher_use_hmac=OFF".parse()?);
        }
        if let Some(k) = self.kdf_iter {
            p.cipher_pragmas.push(format!("kdf_iter={k}").parse()?);
        }
        p.encrypted = true;
        p.in_force.push(InForce::SqlcipherFiles { dir: p.data_dir.clone() });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(extra: &str) -> Settings {
        toml::from_str(extra).unwrap()
    }

    #[test]
    fn defaults_match_plain_page_size_with_hmac_and_a_raw_generated_key() {
        let s = settings("");
        assert_eq!(
            (s.cipher_page_size, s.hmac, s.key_format, &s.key),
            (4096, true, KeyKind::Raw, &KeySource::Generate)
        );
        assert_eq!(s, Settings::default());
    }

    #[test]
    fn bad_settings_are_refused_up_front() {
        assert!(settings("cipher_page_size = 1000").preflight().is_err());
        assert!(settings("kdf_iter = 1000").preflight().unwrap_err().to_string().contains("passphrase"));
        assert!(settings("kdf_iter = 1000\nkey_format = 'passphrase'").preflight().is_ok());
        assert!(settings("key_bits = 128").validate().unwrap_err().to_string().contains("AES-256 only"));
    }
}
