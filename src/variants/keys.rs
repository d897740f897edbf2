//! Where an encryption layer's key comes from: generated per study, a file of the user's, or
//! a command that prints it (the hook for a key management service). Every layer takes the
//! same `key = ...` setting; the material only ever travels through 0600 files.

use crate::sys::random_hex;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
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

/// What a layer's key must look like.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Exactly this many bytes, written as hex digits.
    HexBytes(usize),
    /// Any text (a passphrase).
    Passphrase,
}

impl KeySource {
    pub fn describe(&self) -> String {
        match self {
            KeySource::Generate => "generated per study".into(),
            KeySource::File(p) => format!("file {}", p.display()),
            KeySource::Command(_) => "key command".into(),
        }
    }

    /// Refuses a key written into the key command itself: it would sit in the study file,
    /// the results store, every report and the process list.
    pub fn validate(&self) -> Result<()> {
        if let KeySource::Command(c) = self {
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

    /// The key as text, checked against `shape`.
    pub fn material(&self, shape: Shape) -> Result<String> {
        let key = match self {
            KeySource::Generate => {
                return Ok(match shape {
                    Shape::HexBytes(n) => random_hex(n),
                    Shape::Passphrase => random_hex(16),
                })
            }
            KeySource::File(p) => crate::sys::read_secret_file(p)?,
            KeySource::Command(cmd) => {
                let out = std::process::Command::new("sh")
                    .args(["-c", cmd])
                    .stdin(std::process::Stdio::null())
                    .output()
                    .context("cannot run the key command")?;
                if !out.status.success() {
                    bail!("the key command failed ({}); check the command in the study file", out.status);
                }
                String::from_utf8(out.stdout).context("the key command printed non-UTF-8 output")?
            }
        };
        let key = key.trim().to_string();
        match shape {
            Shape::HexBytes(n) if key.len() != 2 * n || !key.bytes().all(|b| b.is_ascii_hexdigit()) => {
                bail!("the key must be {} hex digits ({} bytes), from the {}", 2 * n, n, self.describe())
            }
            Shape::Passphrase if key.is_empty() => bail!("the key from the {} is empty", self.describe()),
            _ => Ok(key),
        }
    }
}

/// `hex` (checked by [`KeySource::material`]) as bytes.
pub fn hex_bytes<const N: usize>(hex: &str) -> [u8; N] {
    std::array::from_fn(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex digits checked"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_in_the_shape_the_layer_needs() {
        let k = KeySource::Generate.material(Shape::HexBytes(64)).unwrap();
        assert_eq!(k.len(), 128);
        let echo = |s: &str| KeySource::Command(format!("echo {s}"));
        assert_eq!(echo("ab").material(Shape::HexBytes(1)).unwrap(), "ab");
        let e = echo("abc").material(Shape::HexBytes(1)).unwrap_err().to_string();
        assert!(e.contains("2 hex digits") && e.contains("key command"), "{e}");
        assert!(echo("").material(Shape::Passphrase).is_err());
        assert!(KeySource::Command("exit 3".into())
            .material(Shape::Passphrase)
            .unwrap_err()
            .to_string()
            .contains("failed"));
        assert_eq!(hex_bytes::<2>("0aff"), [10, 255]);
    }

    #[test]
    fn a_key_inside_the_command_is_refused() {
        assert!(KeySource::Command(format!("echo {}", "ab".repeat(32))).validate().is_err());
        assert!(KeySource::Command("vault kv get -field=key secret/db".into()).validate().is_ok());
    }

    #[test]
    fn key_files_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("k");
        std::fs::write(&f, "secret\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(KeySource::File(f.clone()).material(Shape::Passphrase).is_err());
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(KeySource::File(f).material(Shape::Passphrase).unwrap(), "secret");
    }
}
