//! Variants: the configurations a study compares (plain, SQLCipher, gocryptfs, fscrypt...).
//!
//! A variant checks up front that the host can run it (naming the package to install when
//! not), then sets itself up in a directory dbvs owns. Set-up returns a [`Prepared`] whose
//! guards tear everything down (unmount, lock keys, delete key files) when it is dropped, so
//! clean-up happens on every exit path: success, error, or Ctrl-C unwinding the study.

mod fscrypt;
mod gocryptfs;
mod limits;
mod mariadb_tde;
mod sqlcipher;

use crate::sys::lease::Lease;
use crate::targets::sqlite::KeyKind;
use crate::targets::Engine;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::cipher::OPENSSL_NO_AESNI;
/// Go's equivalent switch, for gocryptfs's own AES-GCM.
pub const GODEBUG_NO_AESNI: &str = "cpu.aes=off,cpu.pclmulqdq=off";

/// One `[[variants]]` entry of a study file. (Unknown keys are refused by each kind's
/// settings; serde cannot deny them here because of the flattened kind.)
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct VariantConfig {
    pub name: String,
    #[serde(flatten)]
    pub kind: Kind,
    /// `false` runs this variant with AES-NI masked from user-space crypto.
    #[serde(default = "yes")]
    pub aesni: bool,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Kind {
    /// The database as is.
    Plain {},
    /// SQLCipher page encryption inside SQLite.
    Sqlcipher(sqlcipher::Settings),
    /// The database inside a gocryptfs (FUSE, AES-256-GCM) mount.
    Gocryptfs {},
    /// MariaDB's own data-at-rest encryption (InnoDB, redo log, temp files, Aria).
    #[serde(rename = "mariadb-tde")]
    MariadbTde(mariadb_tde::Settings),
    /// The database in an fscrypt-encrypted directory (kernel AES-256-XTS) on an ext4 loop image.
    Fscrypt(fscrypt::Settings),
    /// Plain storage on an emulated smaller or slower machine (cgroup CPU, cores, I/O and
    /// memory limits), optionally on another path.
    Limits(limits::Settings),
    /// Test-only: plain, plus a fixed busy-wait inside every transaction, to check that
    /// studies detect a known slowdown.
    Delay {
        #[serde(with = "humantime_serde_compat")]
        per_transaction: Duration,
    },
}

mod humantime_serde_compat {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| serde::de::Error::custom(format!("'{s}' is not a duration: {e}")))
    }
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
}

/// What a report says about a variant (never the key itself).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VariantInfo {
    pub name: String,
    pub layer: String,
    pub cipher: String,
    pub key_bits: Option<u32>,
    pub aesni: bool,
    pub settings: BTreeMap<String, String>,
}

/// A variant set up and ready for runs. Dropping it tears it down.
pub struct Prepared {
    /// Where the database files live.
    pub data_dir: PathBuf,
    /// SQLCipher key file and its kind, when the database itself is encrypted.
    pub key: Option<(PathBuf, KeyKind)>,
    pub cipher_pragmas: Vec<crate::targets::sqlite::CipherPragma>,
    /// Settings for a managed server (MariaDB encryption, for example).
    pub server_settings: Vec<(String, String)>,
    /// Environment for each run's child process.
    pub env: Vec<(String, String)>,
    /// Test-only: a busy-wait each run adds to every unit.
    pub inject_delay: Duration,
    /// The bytes at rest: what the plaintext canary scan reads.
    pub backing: Vec<PathBuf>,
    /// Whether data at rest must be ciphertext (the canary must find nothing).
    pub encrypted: bool,
    /// Control groups the runs (SQLite) or the managed server must join.
    pub cgroups: Vec<PathBuf>,
    /// What must still hold for a run on this variant to count (a mount, a key).
    in_force: Vec<InForce>,
    /// Mounts, keyring keys and key files to undo: at tear-down, or, if dbvs is killed,
    /// by its watchdog or the next dbvs command.
    lease: Option<Lease>,
    /// Other tear-down steps (control groups, directories), dropped last-in first-out.
    guards: Vec<Box<dyn Send>>,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        while let Some(g) = self.guards.pop() {
            drop(g);
        }
        drop(self.lease.take());
    }
}

/// One thing that must still hold for a run on a variant to measure what it claims.
enum InForce {
    /// A file system of this type mounted exactly at `path` (the gocryptfs mount; the
    /// fscrypt image). Without it, writes land in plain files underneath.
    Mount { path: PathBuf, fs_type: &'static str },
    /// An fscrypt policy on `dir` with its key in the keyring of `mount`.
    Fscrypt { mount: PathBuf, dir: PathBuf, identifier: [u8; 16] },
    /// Every SQLite file in `dir` is ciphertext: none starts with SQLite's plain header.
    SqlcipherFiles { dir: PathBuf },
    /// A key file the server reads at every start.
    File { path: PathBuf, what: &'static str },
}

impl InForce {
    fn check(&self) -> Result<()> {
        match self {
            InForce::Mount { path, fs_type } => match crate::sys::mounts::mounted_at(path) {
                Some(m) if m.fs_type == *fs_type => Ok(()),
                Some(m) => bail!("{} is mounted as {}, not {fs_type}", path.display(), m.fs_type),
                None => bail!("{} is no longer mounted ({fs_type})", path.display()),
            },
            InForce::Fscrypt { mount, dir, identifier } => {
                crate::sys::fscrypt::ensure_encrypted(mount, dir, identifier)
            }
            InForce::SqlcipherFiles { dir } => {
                for e in std::fs::read_dir(dir)?.flatten() {
                    let path = e.path();
                    if path.extension().is_some_and(|x| x == "db") && sqlite_plaintext(&path)? {
                        bail!("{} is a plain SQLite file, not SQLCipher ciphertext", path.display());
                    }
                }
                Ok(())
            }
            InForce::File { path, what } if !path.exists() => bail!("{what} {} is gone", path.display()),
            InForce::File { .. } => Ok(()),
        }
    }
}

/// Whether a file starts with SQLite's plaintext header.
fn sqlite_plaintext(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 16];
    let n = std::fs::File::open(path)?.read(&mut head)?;
    Ok(n == 16 && &head == b"SQLite format 3\0")
}

impl Prepared {
    fn plain(dir: &Path) -> Result<Self> {
        let data_dir = dir.join("data");
        std::fs::create_dir_all(&data_dir)?;
        Ok(Self {
            backing: vec![data_dir.clone()],
            data_dir,
            key: None,
            cipher_pragmas: vec![],
            server_settings: vec![],
            env: vec![],
            inject_delay: Duration::ZERO,
            encrypted: false,
            cgroups: vec![],
            in_force: vec![],
            lease: None,
            guards: vec![],
        })
    }

    /// Checks that the variant is still what it claims (its encryption layer mounted, its
    /// key present, its files ciphertext); a run on a variant that is not is never counted.
    pub fn ensure_in_force(&self) -> Result<()> {
        for c in &self.in_force {
            c.check().context("the variant is no longer in force")?;
        }
        Ok(())
    }
}

impl VariantConfig {
    pub fn info(&self) -> VariantInfo {
        let (layer, cipher, key_bits, settings) = match &self.kind {
            Kind::Plain {} => ("none", "none", None, BTreeMap::new()),
            Kind::Sqlcipher(s) => ("database (SQLCipher page encryption)", sqlcipher::CIPHER, Some(256), s.describe()),
            Kind::Gocryptfs {} => ("file system (gocryptfs, FUSE)", gocryptfs::CIPHER, Some(256), BTreeMap::new()),
            Kind::Fscrypt(s) => ("file system (fscrypt, kernel)", fscrypt::CIPHER, Some(512), s.describe()),
            Kind::Limits(s) => {
                ("none (cgroup limits: an emulated smaller or slower machine)", "none", None, s.describe())
            }
            Kind::MariadbTde(s) => {
                ("database (MariaDB data-at-rest encryption)", mariadb_tde::CIPHER, Some(256), s.describe())
            }
            Kind::Delay { per_transaction } => (
                "none (test-only injected delay)",
                "none",
                None,
                BTreeMap::from([("per_transaction".into(), humantime::format_duration(*per_transaction).to_string())]),
            ),
        };
        VariantInfo {
            name: self.name.clone(),
            layer: layer.into(),
            cipher: cipher.into(),
            key_bits,
            aesni: self.aesni,
            settings,
        }
    }

    /// Checks the variant's own settings, before anything runs.
    pub fn validate(&self) -> Result<()> {
        match &self.kind {
            Kind::Limits(s) => s.validate().map_err(|e| anyhow::anyhow!("variant '{}': {e}", self.name)),
            Kind::Sqlcipher(s) => s.validate().map_err(|e| anyhow::anyhow!("variant '{}': {e}", self.name)),
            _ => Ok(()),
        }
    }

    /// Checks that this host and engine can run the variant; the error names what to install.
    pub fn preflight(&self, engine: Engine) -> Result<()> {
        match (&self.kind, engine) {
            (Kind::Sqlcipher(_), e) if e != Engine::Sqlite => {
                bail!("sqlcipher applies to the sqlite engine only, not {e}")
            }
            (Kind::MariadbTde(_), e) if e != Engine::Mariadb => {
                bail!("mariadb-tde applies to the mariadb engine only, not {e}")
            }
            _ => {}
        }
        match &self.kind {
            Kind::Fscrypt(_) if !self.aesni => {
                bail!("aesni = false cannot apply to fscrypt: its AES runs in the kernel, not in OpenSSL or Go")
            }
            Kind::Gocryptfs {} => gocryptfs::preflight(),
            Kind::Fscrypt(_) => fscrypt::preflight(),
            Kind::Sqlcipher(s) => s.preflight(),
            Kind::MariadbTde(_) => mariadb_tde::preflight(),
            Kind::Limits(s) => s.preflight(),
            Kind::Plain {} | Kind::Delay { .. } => Ok(()),
        }
    }

    /// Sets the variant up inside `dir`, an empty directory dbvs owns.
    pub fn setup(&self, dir: &Path) -> Result<Prepared> {
        let gocryptfs_env: Vec<(String, String)> = if self.aesni { vec![] } else { aesni_off_env() };
        let mut p = match &self.kind {
            Kind::Plain {} => Prepared::plain(dir)?,
            Kind::Delay { per_transaction } => {
                let mut p = Prepared::plain(dir)?;
                p.inject_delay = *per_transaction;
                p
            }
            Kind::Sqlcipher(s) => s.setup(dir)?,
            Kind::Gocryptfs {} => gocryptfs::setup(dir, &gocryptfs_env)?,
            Kind::Fscrypt(s) => s.setup(dir)?,
            Kind::MariadbTde(s) => s.setup(dir)?,
            Kind::Limits(s) => s.setup(dir, &self.name)?,
        };
        if !self.aesni {
            p.env.extend(aesni_off_env());
        }
        Ok(p)
    }
}

fn aesni_off_env() -> Vec<(String, String)> {
    vec![("OPENSSL_ia32cap".into(), OPENSSL_NO_AESNI.into()), ("GODEBUG".into(), GODEBUG_NO_AESNI.into())]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<VariantConfig, toml::de::Error> {
        toml::from_str(toml_text)
    }

    #[test]
    fn variants_parse_from_toml() {
        assert!(matches!(parse("name = 'p'\nkind = 'plain'").unwrap().kind, Kind::Plain {}));
        let v = parse("name = 's'\nkind = 'sqlcipher'\ncipher_page_size = 8192\naesni = false").unwrap();
        assert!(!v.aesni);
        assert_eq!(v.info().settings["cipher_page_size"], "8192");
        let e = parse("name = 'x'\nkind = 'bitlocker'").unwrap_err().to_string();
        assert!(e.contains("bitlocker"), "{e}");
        let e = parse("name = 's'\nkind = 'sqlcipher'\ncipher_page_sise = 1").unwrap_err().to_string();
        assert!(e.contains("cipher_page_sise"), "{e}");
        let e = parse("name = 'p'\nkind = 'plain'\ncolour = 1").unwrap_err().to_string();
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn plain_setup_and_teardown() {
        let dir = tempfile::tempdir().unwrap();
        let v = parse("name = 'p'\nkind = 'plain'\naesni = false").unwrap();
        let p = v.setup(dir.path()).unwrap();
        assert!(p.data_dir.is_dir() && !p.encrypted);
        assert!(p.env.iter().any(|(k, v)| k == "OPENSSL_ia32cap" && v == OPENSSL_NO_AESNI));
    }
}
