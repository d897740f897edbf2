//! MariaDB data-at-rest encryption: the file_key_management plugin with AES-CTR and a
//! generated key file (0600, readable only by the server's user, deleted with the variant),
//! encrypting InnoDB tables, the redo log, temporary tables and files, Aria tables and,
//! optionally, the binary log. Before measuring, the target confirms through
//! information_schema that every InnoDB tablespace is encrypted.

use super::keys::{KeySource, Shape};
use super::{InForce, Prepared};
use crate::sys::lease::Lease;
use crate::sys::require;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Also write and encrypt a binary log.
    #[serde(default)]
    pub binlog: bool,
    /// 128, 192 or 256 (the default): the length of the AES-CTR key.
    pub key_bits: Option<u32>,
    /// Key 1 of file_key_management, as hex digits.
    #[serde(default)]
    pub key: KeySource,
}

pub fn preflight() -> Result<()> {
    require("mariadbd", "mariadb-server")?;
    if !Path::new("/usr/lib/mysql/plugin/file_key_management.so").exists() {
        bail!("MariaDB's file_key_management plugin is missing: apt-get install mariadb-server");
    }
    Ok(())
}

/// The `mysql` user's ids, when we are root (the server must read its key file).
fn server_ids() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions; getpwnam returns static storage or null, read at once.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let pw = libc::getpwnam(c"mysql".as_ptr());
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

impl Settings {
    pub fn key_bits(&self) -> u32 {
        self.key_bits.unwrap_or(256)
    }

    pub fn cipher(&self) -> String {
        format!("AES-{}-CTR (file_key_management)", self.key_bits())
    }

    pub fn describe(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("encrypted".into(), "InnoDB tables, redo log, temporary tables and files, Aria".into()),
            ("binlog".into(), self.binlog.to_string()),
            ("key_source".into(), self.key.describe()),
        ])
    }

    pub fn validate(&self) -> Result<()> {
        if !matches!(self.key_bits, None | Some(128 | 192 | 256)) {
            bail!("mariadb-tde: key_bits must be 128, 192 or 256");
        }
        self.key.validate()
    }

    /// The server settings and a key file (0600, the server's user's) in `dir`.
    pub fn setup(&self, dir: &Path, lease: &mut Lease, p: &mut Prepared) -> Result<()> {
        let key = self.key.material(Shape::HexBytes(self.key_bits() as usize / 8))?;
        let keys = lease.secret_file(dir.join("tde.keys"), format!("1;{key}\n").as_bytes())?;
        if let Some((uid, gid)) = server_ids() {
            std::os::unix::fs::chown(&keys, Some(uid), Some(gid))?;
        }
        let set = |k: &str, v: &str| (k.to_string(), v.to_string());
        p.server_settings = vec![
            set("plugin_load_add", "file_key_management"),
            set("file_key_management_filename", &keys.display().to_string()),
            set("file_key_management_encryption_algorithm", "AES_CTR"),
            set("innodb_encrypt_tables", "FORCE"),
            set("innodb_encrypt_log", "ON"),
            set("innodb_encrypt_temporary_tables", "ON"),
            set("innodb_encryption_threads", "4"),
            set("encrypt_tmp_files", "ON"),
            set("encrypt_tmp_disk_tables", "ON"),
            set("aria_encrypt_tables", "ON"),
        ];
        if self.binlog {
            p.server_settings.push(set("log_bin", "binlog"));
            p.server_settings.push(set("encrypt_binlog", "ON"));
        }
        p.encrypted = true;
        p.in_force.push(InForce::File { path: keys, what: "the TDE key file" });
        Ok(())
    }
}
