//! MariaDB data-at-rest encryption: the file_key_management plugin with AES-CTR and a
//! generated key file (0600, readable only by the server's user, deleted with the variant),
//! encrypting InnoDB tables, the redo log, temporary tables and files, Aria tables and,
//! optionally, the binary log. Before measuring, the target confirms through
//! information_schema that every InnoDB tablespace is encrypted.

use super::{InForce, Prepared};
use crate::sys::lease::Lease;
use crate::sys::{random_hex, require};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const CIPHER: &str = "AES-256-CTR (file_key_management)";

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Also write and encrypt a binary log.
    #[serde(default)]
    pub binlog: bool,
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
    pub fn describe(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("encrypted".into(), "InnoDB tables, redo log, temporary tables and files, Aria".into()),
            ("binlog".into(), self.binlog.to_string()),
        ])
    }

    pub fn setup(&self, dir: &Path) -> Result<Prepared> {
        let mut p = Prepared::plain(dir)?;
        let mut lease = Lease::new(&format!("mariadb-tde variant in {}", dir.display()))?;
        let keys = lease.secret_file(dir.join("tde.keys"), format!("1;{}\n", random_hex(32)).as_bytes())?;
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
        p.lease = Some(lease);
        Ok(p)
    }
}
