//! SQLCipher: SQLite's pages encrypted inside the engine (AES-256-CBC, HMAC-SHA512 per page
//! in SQLCipher 4). Built into dbvs, so it needs nothing installed.

use super::{InForce, Prepared};
use crate::sys::lease::Lease;
use crate::sys::random_hex;
use crate::targets::sqlite::{Key, KeyKind};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const CIPHER: &str = "AES-256-CBC, HMAC-SHA512 per page";
/// SQLite's default page size: with the same cipher page size, B-tree fan-out is equal.
const PLAIN_PAGE_SIZE: u32 = 4096;

#[derive(Clone, Debug, Deserialize, Serialize)]
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
}

fn default_page_size() -> u32 {
    PLAIN_PAGE_SIZE
}

/// Where the key comes from.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeySource {
    /// A fresh random key per study.
    #[default]
    Generate,
    /// A key file of the user's (mode 0600); it is read, never deleted.
    File(PathBuf),
    /// A command that prints the key on stdout: the hook for a key management service.
    Command(String),
}

impl Settings {
    pub fn describe(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::from([
            ("cipher_page_size".into(), self.cipher_page_size.to_string()),
            ("hmac".into(), self.hmac.to_string()),
            ("key_format".into(), format!("{:?}", self.key_format).to_lowercase()),
            (
                "key_source".into(),
                match &self.key {
                    KeySource::Generate => "generated per study".into(),
                    KeySource::File(p) => format!("file {}", p.display()),
                    KeySource::Command(_) => "key command".into(),
                },
            ),
        ]);
        if let Some(k) = self.kdf_iter {
            m.insert("kdf_iter".into(), k.to_string());
        }
        m
    }

    /// Refuses a key written into the key command itself: it would sit in the study file,
    /// the results store, every report and the process list.
    pub fn validate(&self) -> Result<()> {
        if let KeySource::Command(c) = &self.key {
            let longest_hex = c.split(|ch: char| !ch.is_ascii_hexdigit()).map(str::len).max().unwrap_or(0);
            if longest_hex >= 32 {
                bail!(
                    "the key command holds what looks like the key itself; put the key in a 0600 file and use \
                     key = {{ file = \"PATH\" }}, or a command that fetches it (e.g. from a key management service)"
                );
            }
        }
        Ok(())
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

    /// Fetches or makes the key, and stores it in a 0600 file that dies with the variant.
    fn key_material(&self) -> Result<String> {
        Ok(match &self.key {
            KeySource::Generate => match self.key_format {
                KeyKind::Raw => random_hex(32),
                KeyKind::Passphrase => random_hex(16),
            },
            KeySource::File(p) => {
                Key::from_file(p, self.key_format)?;
                std::fs::read_to_string(p)?.trim().to_string()
            }
            KeySource::Command(cmd) => {
                let out = std::process::Command::new("sh")
                    .args(["-c", cmd])
                    .stdin(std::process::Stdio::null())
                    .output()
                    .context("cannot run the key command")?;
                if !out.status.success() {
                    bail!("the key command failed ({}); check the command in the study file", out.status);
                }
                let key = String::from_utf8(out.stdout).context("the key command printed non-UTF-8 output")?;
                let key = key.trim().to_string();
                if self.key_format == KeyKind::Raw {
                    Key::from_hex(&key).context("the key command must print 64 hex digits")?;
                }
                key
            }
        })
    }

    pub fn setup(&self, dir: &Path) -> Result<Prepared> {
        let mut p = Prepared::plain(dir)?;
        let mut lease = Lease::new(&format!("sqlcipher variant in {}", dir.display()))?;
        let key_file = lease.secret_file(dir.join("sqlcipher.key"), self.key_material()?.as_bytes())?;
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
        p.lease = Some(lease);
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn settings(extra: &str) -> Settings {
        toml::from_str(extra).unwrap()
    }

    #[test]
    fn defaults_match_plain_page_size_with_hmac_and_a_raw_generated_key() {
        let s = settings("");
        assert_eq!((s.cipher_page_size, s.hmac, s.key_format), (4096, true, KeyKind::Raw));
        let dir = tempfile::tempdir().unwrap();
        let p = s.setup(dir.path()).unwrap();
        let (key, _) = p.key.clone().unwrap();
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(Key::from_file(&key, KeyKind::Raw).is_ok());
        drop(p);
        assert!(!key.exists(), "the key file goes with the variant");
    }

    #[test]
    fn key_command_is_the_kms_hook() {
        let s = settings(&format!("key = {{ command = 'echo {}' }}\nhmac = false", "ab".repeat(32)));
        let dir = tempfile::tempdir().unwrap();
        let p = s.setup(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&p.key.as_ref().unwrap().0).unwrap(), "ab".repeat(32));
        assert!(p.cipher_pragmas.contains(&"cipher_use_hmac=OFF".parse().unwrap()));
        let bad = settings("key = { command = 'echo nope' }");
        assert!(bad.setup(dir.path()).err().unwrap().to_string().contains("64 hex digits"));
    }

    #[test]
    fn bad_settings_are_refused_up_front() {
        assert!(settings("cipher_page_size = 1000").preflight().is_err());
        assert!(settings("kdf_iter = 1000").preflight().unwrap_err().to_string().contains("passphrase"));
        assert!(settings("kdf_iter = 1000\nkey_format = 'passphrase'").preflight().is_ok());
    }
}
