//! How a `[[variants]]` entry is read. A variant is a stack of layers, written as keys:
//!
//! ```toml
//! [[variants]]
//! name = "fscrypt on one core"
//! server = { version = "16" }       # a server's binaries: packaged (default), { prefix = "/opt/pg" }
//! storage = "ext4-image"            # host (default), ext4-image, tmpfs, { path = "/mnt/ssd" }
//! encryption = "fscrypt"            # or { layer = "fscrypt", key_bits = 128, key = { command = "..." } }
//! log_storage = "ext4-image"        # a server's WAL / redo log on its own volume (same layers above)
//! limits = { cpus = 1, memory = "256MB" }
//! aesni = true
//! ```
//!
//! `kind = "..."` (plain, sqlcipher, gocryptfs, fscrypt, mariadb-tde, limits, delay) with its
//! own flat keys is shorthand for a one-layer stack, and can still take the stack keys
//! beside it (`kind = "gocryptfs"` with `limits = {...}`).

use super::storage::Storage;
use super::{fscrypt, gocryptfs, limits, mariadb_tde, sqlcipher, VariantConfig};
use crate::targets::Binaries;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The encryption layer of a stack, named by `layer`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "layer", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Encryption {
    /// SQLCipher page encryption inside SQLite.
    Sqlcipher(sqlcipher::Settings),
    /// MariaDB's own data-at-rest encryption (InnoDB, redo log, temp files, Aria).
    MariadbTde(mariadb_tde::Settings),
    /// A directory encrypted by the kernel (fscrypt) on the stack's ext4 file system.
    Fscrypt(fscrypt::Settings),
    /// A gocryptfs (FUSE, AES-256-GCM) mount over the stack's storage.
    Gocryptfs(gocryptfs::Settings),
}

impl Encryption {
    pub fn name(&self) -> &'static str {
        match self {
            Encryption::Sqlcipher(_) => "sqlcipher",
            Encryption::MariadbTde(_) => "mariadb-tde",
            Encryption::Fscrypt(_) => "fscrypt",
            Encryption::Gocryptfs(_) => "gocryptfs",
        }
    }

    /// The layer's level, as a report says it.
    pub fn level(&self) -> &'static str {
        match self {
            Encryption::Sqlcipher(_) | Encryption::MariadbTde(_) => "database",
            Encryption::Fscrypt(_) => "file system (kernel)",
            Encryption::Gocryptfs(_) => "file system (FUSE)",
        }
    }

    pub fn cipher(&self) -> String {
        match self {
            Encryption::Sqlcipher(_) => sqlcipher::CIPHER.into(),
            Encryption::MariadbTde(s) => s.cipher(),
            Encryption::Fscrypt(s) => s.cipher().into(),
            Encryption::Gocryptfs(_) => gocryptfs::CIPHER.into(),
        }
    }

    pub fn key_bits(&self) -> u32 {
        match self {
            Encryption::MariadbTde(s) => s.key_bits(),
            Encryption::Fscrypt(s) => s.key_bits(),
            Encryption::Sqlcipher(_) | Encryption::Gocryptfs(_) => 256,
        }
    }

    pub fn validate(&self) -> Result<()> {
        match self {
            Encryption::Sqlcipher(s) => s.validate(),
            Encryption::MariadbTde(s) => s.validate(),
            Encryption::Fscrypt(s) => s.validate(),
            Encryption::Gocryptfs(s) => s.validate(),
        }
    }
}

/// The shorthand: one kind of variant with its own flat keys.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum Kind {
    Plain {},
    Sqlcipher(sqlcipher::Settings),
    Gocryptfs {},
    #[serde(rename = "mariadb-tde")]
    MariadbTde(mariadb_tde::Settings),
    Fscrypt {
        #[serde(default = "super::storage::default_image_size")]
        image_size: String,
    },
    Limits(limits::Settings),
    Delay {
        per_transaction: String,
    },
}

/// The stack keys of an entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    name: String,
    engine: Option<crate::targets::Engine>,
    server: Option<Binaries>,
    storage: Option<Value>,
    log_storage: Option<Value>,
    encryption: Option<Value>,
    #[serde(default)]
    fuse_passthrough: bool,
    limits: Option<limits::Settings>,
    aesni: Option<bool>,
    delay: Option<String>,
    control: Option<String>,
    #[serde(default)]
    settings: Map<String, Value>,
}

/// The engine settings as text: a TOML string as it is, a number or a boolean (on/off) as
/// the engines spell them.
fn settings_text(settings: Map<String, Value>) -> Result<std::collections::BTreeMap<String, String>> {
    settings
        .into_iter()
        .map(|(name, value)| {
            let text = match value {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => if b { "on" } else { "off" }.to_string(),
                _ => bail!("settings: {name} must be a string, a number or true/false"),
            };
            Ok((name, text))
        })
        .collect()
}

/// The keys every entry takes, beside a shorthand `kind`'s own (serde's message for an
/// unknown key beside a `kind` lists only the kind's, so a "did you mean" looks here too).
pub const STACK_KEYS: [&str; 12] = [
    "name",
    "engine",
    "server",
    "storage",
    "log_storage",
    "encryption",
    "fuse_passthrough",
    "limits",
    "aesni",
    "delay",
    "control",
    "settings",
];

fn injected(text: &str, key: &str) -> Result<crate::driver::InjectedSlowdown> {
    text.parse().map_err(|e| anyhow::anyhow!("{key}: {e}"))
}

/// A name alone stands for a table with only that name: `"ext4-image"` is `{ on = "ext4-image" }`.
fn named(value: Value, tag: &str) -> Value {
    match value {
        Value::String(s) => Value::Object(Map::from_iter([(tag.to_string(), Value::String(s))])),
        Value::Object(mut m) if tag == "on" && !m.contains_key("on") && m.contains_key("path") => {
            m.insert("on".into(), Value::String("path".into()));
            Value::Object(m)
        }
        other => other,
    }
}

impl VariantConfig {
    /// Reads one entry: the stack keys, and the shorthand `kind` with its keys if present.
    pub(super) fn from_entry(mut entry: Map<String, Value>) -> Result<Self> {
        let shorthand: Map<String, Value> = match entry.contains_key("kind") {
            true => {
                let own: Vec<String> = entry.keys().filter(|k| !STACK_KEYS.contains(&k.as_str())).cloned().collect();
                own.into_iter().filter_map(|k| entry.remove_entry(&k)).collect()
            }
            false => Map::new(),
        };
        let keys: Keys = serde_json::from_value(Value::Object(entry)).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut v = VariantConfig {
            name: keys.name,
            engine: keys.engine,
            server: keys.server.unwrap_or_default(),
            storage: keys.storage.map(|s| serde_json::from_value(named(s, "on"))).transpose()?.unwrap_or_default(),
            log_storage: keys.log_storage.map(|s| serde_json::from_value(named(s, "on"))).transpose()?,
            encryption: keys.encryption.map(|e| serde_json::from_value(named(e, "layer"))).transpose()?,
            fuse_passthrough: keys.fuse_passthrough,
            // `limits = {}` is no limits (how a ladder's step lifts the step before's).
            limits: keys.limits.filter(|l| !l.describe().is_empty() || l.data_path.is_some()),
            aesni: keys.aesni.unwrap_or(true),
            delay: keys.delay.as_deref().map(|d| injected(d, "delay")).transpose()?,
            control: keys.control,
            settings: settings_text(keys.settings)?,
        };
        if !shorthand.is_empty() {
            let kind: Kind = serde_json::from_value(Value::Object(shorthand)).map_err(|e| anyhow::anyhow!("{e}"))?;
            v.apply(kind)?;
        }
        Ok(v)
    }

    /// Lays the shorthand's layer onto the stack keys given beside it.
    fn apply(&mut self, kind: Kind) -> Result<()> {
        let name = self.name.clone();
        let set_encryption = |v: &mut Self, e: Encryption| {
            if v.encryption.is_some() {
                bail!(
                    "variant '{name}': kind = \"{}\" already names the encryption layer; drop kind or encryption",
                    e.name()
                );
            }
            v.encryption = Some(e);
            Ok(())
        };
        match kind {
            Kind::Plain {} => {}
            Kind::Sqlcipher(s) => set_encryption(self, Encryption::Sqlcipher(s))?,
            Kind::Gocryptfs {} => set_encryption(self, Encryption::Gocryptfs(Default::default()))?,
            Kind::MariadbTde(s) => set_encryption(self, Encryption::MariadbTde(s))?,
            Kind::Fscrypt { image_size } => {
                set_encryption(self, Encryption::Fscrypt(Default::default()))?;
                match &self.storage {
                    Storage::Host => {
                        self.storage =
                            Storage::Ext4Image(super::storage::Image { size: image_size, ..Default::default() })
                    }
                    Storage::Ext4Image(_) => {}
                    other => {
                        bail!("variant '{name}': fscrypt needs storage = \"ext4-image\", not {}", other.describe())
                    }
                }
            }
            Kind::Limits(mut l) => {
                if self.limits.is_some() {
                    bail!("variant '{name}': kind = \"limits\" and limits = {{...}} both set limits; keep one");
                }
                if let Some(path) = l.data_path.take() {
                    self.storage = Storage::Path { path };
                }
                self.limits = Some(l);
            }
            Kind::Delay { per_transaction } => self.delay = Some(injected(&per_transaction, "per_transaction")?),
        }
        Ok(())
    }

    /// Checks the stack's own settings and that its layers fit together.
    pub fn validate(&self) -> Result<()> {
        let at = |e: anyhow::Error| anyhow::anyhow!("variant '{}': {e}", self.name);
        self.storage.validate().map_err(at)?;
        if let Some(log) = &self.log_storage {
            log.validate().map_err(|e| at(anyhow::anyhow!("log_storage: {e}")))?;
        }
        if let Some(e) = &self.encryption {
            e.validate().map_err(at)?;
        }
        if let Some(l) = &self.limits {
            l.validate().map_err(at)?;
        }
        match (&self.encryption, &self.storage) {
            (Some(Encryption::Fscrypt(_)), s) if !matches!(s, Storage::Ext4Image(_)) => Err(at(anyhow::anyhow!(
                "fscrypt needs an ext4 file system with the encrypt feature: add storage = \"ext4-image\" (it is on {})",
                s.describe()
            ))),
            (Some(Encryption::Gocryptfs(_)), _) if self.fuse_passthrough => {
                Err(at(anyhow::anyhow!("fuse_passthrough is gocryptfs's control; a stack has one FUSE layer")))
            }
            (Some(Encryption::Fscrypt(_)), _) if !self.aesni => Err(at(anyhow::anyhow!(
                "aesni = false cannot apply to fscrypt: its AES runs in the kernel, not in OpenSSL or Go"
            ))),
            _ => Ok(()),
        }
    }

    /// The layers as a report lists them, bottom up: (layer, what this stack has there).
    pub fn layers(&self) -> Vec<(&'static str, String)> {
        self.layer_keys().into_iter().map(|(layer, shown, _)| (layer, shown)).collect()
    }

    /// Each layer with what is shown and what a comparison compares: FUSE is compared as
    /// present or not, since gocryptfs's control stands in with a passthrough.
    fn layer_keys(&self) -> Vec<(&'static str, String, String)> {
        let encryption = self
            .encryption
            .as_ref()
            .map_or("none".into(), |e| format!("{} ({}, {}-bit key)", e.name(), e.level(), e.key_bits()));
        let limits = self.limits.as_ref().map_or("none".into(), |l| {
            let d = l.describe();
            if d.is_empty() {
                "none".into()
            } else {
                d.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            }
        });
        let fuse = match (&self.encryption, self.fuse_passthrough) {
            (Some(Encryption::Gocryptfs(_)), _) => "gocryptfs",
            (_, true) => "bindfs passthrough",
            _ => "none",
        };
        let same = |s: &String| (s.clone(), s.clone());
        let log = self.log_storage.as_ref().map_or("with the data".into(), Storage::describe);
        let settings = match self.settings.is_empty() {
            true => "the engine's defaults".to_string(),
            false => self.settings.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", "),
        };
        let server = match &self.server {
            Binaries::Packaged => None,
            Binaries::Version(v) => Some(format!("version {v}")),
            Binaries::Prefix(p) => Some(format!("installed in {}", p.display())),
        };
        // The engine and the server binaries are rows only where a variant names them: a
        // stack without the row has the study's (see `differences`).
        let engine = self.engine.map(|e| ("engine", same(&e.to_string())));
        let server = server.map(|s| ("server binaries", same(&s)));
        let rows = [
            ("storage", same(&self.storage.describe())),
            ("log storage", same(&log)),
            ("FUSE", (fuse.to_string(), if fuse == "none" { "none" } else { "fuse" }.to_string())),
            ("encryption", same(&encryption)),
            ("limits", same(&limits)),
            ("AES-NI", same(&if self.aesni { "on".into() } else { "masked".into() })),
            ("injected delay", same(&self.delay.map_or("none".into(), |d| d.to_string()))),
            ("engine settings", same(&settings)),
        ];
        let rows = engine.into_iter().chain(server).chain(rows);
        rows.map(|(layer, (shown, key))| (layer, shown, key)).collect()
    }

    /// The layers in which `self` differs from `other`; a layer one of them has no row for
    /// (the engine, the server binaries) is the study's there.
    pub fn differences(&self, other: &VariantConfig) -> Vec<&'static str> {
        let (mine, theirs) = (self.layer_keys(), other.layer_keys());
        let key = |rows: &[(&'static str, String, String)], layer: &str| {
            rows.iter().find(|r| r.0 == layer).map(|r| r.2.clone())
        };
        let mut layers: Vec<&'static str> = mine.iter().map(|r| r.0).collect();
        for (i, r) in theirs.iter().enumerate() {
            if !layers.contains(&r.0) {
                layers.insert(i.min(layers.len()), r.0);
            }
        }
        layers.into_iter().filter(|l| key(&mine, l) != key(&theirs, l)).collect()
    }

    /// The stack that differs from this one in its encryption only: the same storage and
    /// limits, no encryption, and FUSE passthrough in place of gocryptfs. (AES-NI stays on:
    /// without an encryption layer nothing uses it.)
    pub fn control_stack(&self) -> Option<VariantConfig> {
        let e = self.encryption.as_ref()?;
        Some(VariantConfig {
            name: control_name(self, e),
            encryption: None,
            fuse_passthrough: matches!(e, Encryption::Gocryptfs(_)),
            control: None,
            delay: None,
            aesni: true,
            ..self.clone()
        })
    }

    /// Whether two variants have the same stack (names and controls aside).
    pub fn same_stack(&self, other: &VariantConfig) -> bool {
        self.differences(other).is_empty()
            && self.storage == other.storage
            && self.log_storage == other.log_storage
            && self.limits == other.limits
            && self.encryption == other.encryption
    }
}

/// A generated control's name says what it is: "plain on ext4 image", "plain through FUSE".
fn control_name(v: &VariantConfig, e: &Encryption) -> String {
    let on = |s: &Storage| match s {
        Storage::Host => "host directory".to_string(),
        Storage::Ext4Image(_) => "ext4 image".into(),
        Storage::XfsImage(_) => "xfs image".into(),
        Storage::BtrfsImage(_) => "btrfs image".into(),
        Storage::Tmpfs { .. } => "tmpfs".into(),
        Storage::Path { path } => path.display().to_string(),
    };
    let mut parts = vec!["plain".to_string()];
    if v.storage != Storage::Host {
        parts.push(format!("on {}", on(&v.storage)));
    }
    if let Some(log) = &v.log_storage {
        parts.last_mut().expect("plain").push(',');
        parts.push(format!("log on {}", on(log)));
    }
    if matches!(e, Encryption::Gocryptfs(_)) {
        parts.push("through FUSE".into());
    }
    if v.limits.is_some() {
        parts.push(format!("({} limits)", v.name));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<VariantConfig, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn the_shorthand_and_the_stack_are_the_same_variant() {
        let pairs = [
            ("kind = 'plain'", ""),
            (
                "kind = 'sqlcipher'\ncipher_page_size = 8192",
                "encryption = { layer = 'sqlcipher', cipher_page_size = 8192 }",
            ),
            ("kind = 'gocryptfs'", "encryption = 'gocryptfs'"),
            (
                "kind = 'fscrypt'\nimage_size = '2GB'",
                "storage = { on = 'ext4-image', size = '2GB' }\nencryption = 'fscrypt'",
            ),
            ("kind = 'mariadb-tde'\nbinlog = true", "encryption = { layer = 'mariadb-tde', binlog = true }"),
            ("kind = 'limits'\ncpus = 0.5\ndata_path = '/tmp'", "storage = { path = '/tmp' }\nlimits = { cpus = 0.5 }"),
            ("kind = 'delay'\nper_transaction = '35us'", "delay = '35us'"),
        ];
        for (short, long) in pairs {
            let (a, b) =
                (parse(&format!("name = 'v'\n{short}")).unwrap(), parse(&format!("name = 'v'\n{long}")).unwrap());
            assert_eq!(a, b, "{short} vs {long}");
            // The stack form written back reads as the same variant.
            let json = serde_json::to_value(&a).unwrap();
            assert_eq!(serde_json::from_value::<VariantConfig>(json).unwrap(), a, "{short}");
        }
    }

    #[test]
    fn layers_combine() {
        let v =
            parse("name = 'v'\nkind = 'gocryptfs'\nstorage = 'tmpfs'\nlimits = { memory = '256MB' }\naesni = false")
                .unwrap();
        assert!(matches!(v.encryption, Some(Encryption::Gocryptfs(_))));
        assert_eq!(v.storage, Storage::Tmpfs { size: "1GB".into() });
        assert_eq!(v.limits.as_ref().unwrap().memory.as_deref(), Some("256MB"));
        assert!(!v.aesni);
        v.validate().unwrap();
        let tde = parse("name = 't'\nencryption = { layer = 'mariadb-tde', key_bits = 128 }").unwrap();
        assert_eq!(tde.encryption.as_ref().unwrap().key_bits(), 128);
        assert!(tde.encryption.as_ref().unwrap().cipher().contains("AES-128"));
    }

    #[test]
    fn mistakes_are_named() {
        let err = |text: &str| {
            let v = parse(&format!("name = 'v'\n{text}"));
            v.and_then(|v| v.validate().map_err(|e| e.to_string())).unwrap_err()
        };
        assert!(err("kind = 'bitlocker'").contains("bitlocker"));
        assert!(err("kind = 'sqlcipher'\ncipher_page_sise = 1").contains("unknown field `cipher_page_sise`"));
        assert!(err("colour = 1").contains("unknown field `colour`"));
        assert!(err("kind = 'plain'\ncolour = 1").contains("colour"));
        assert!(err("encryption = 'truecrypt'").contains("truecrypt"));
        assert!(err("storage = 'floppy'").contains("floppy"));
        assert!(err("kind = 'sqlcipher'\nencryption = 'gocryptfs'").contains("already names the encryption"));
        assert!(err("encryption = 'fscrypt'").contains("storage = \"ext4-image\""));
        assert!(err("kind = 'fscrypt'\nstorage = 'tmpfs'").contains("ext4-image"));
        assert!(err("encryption = 'gocryptfs'\nfuse_passthrough = true").contains("one FUSE layer"));
        assert!(err("storage = 'ext4-image'\nencryption = 'fscrypt'\naesni = false").contains("kernel"));
        assert!(
            err("storage = 'ext4-image'\nencryption = { layer = 'fscrypt', key_bits = 192 }").contains("128 or 256")
        );
        assert!(err("encryption = { layer = 'gocryptfs', key_bits = 128 }").contains("AES-256-GCM only"));
        assert!(err("storage = { on = 'tmpfs', size = '1MB' }").contains("at least 64MB"));
        assert!(err("storage = { path = '/no/such/dir' }").contains("not a directory"));
        assert!(err("limits = { data_path = '/tmp' }").contains("storage = { path"));
        assert!(err("delay = 'soon'").contains("soon"));
        assert!(err("log_storage = 'floppy'").contains("floppy"));
        assert!(err("log_storage = { on = 'tmpfs', size = '1MB' }").contains("log_storage: storage size"));
    }

    #[test]
    fn a_control_differs_in_the_encryption_layer_only() {
        let fscrypt = parse("name = 'f'\nkind = 'fscrypt'").unwrap();
        let control = fscrypt.control_stack().unwrap();
        assert_eq!(control.name, "plain on ext4 image");
        assert_eq!(control.storage, fscrypt.storage);
        assert_eq!(fscrypt.differences(&control), vec!["encryption"]);
        let plain = parse("name = 'p'").unwrap();
        assert_eq!(fscrypt.differences(&plain), vec!["storage", "encryption"]);

        let goc = parse("name = 'g'\nkind = 'gocryptfs'").unwrap();
        let control = goc.control_stack().unwrap();
        assert_eq!(control.name, "plain through FUSE");
        assert!(control.fuse_passthrough);
        assert_eq!(goc.differences(&control), vec!["encryption"]);
        assert_eq!(goc.differences(&plain), vec!["FUSE", "encryption"]);
        assert!(goc.layers().contains(&("FUSE", "gocryptfs".into())));

        let sqlcipher = parse("name = 's'\nkind = 'sqlcipher'").unwrap();
        assert!(sqlcipher.control_stack().unwrap().same_stack(&plain), "SQLCipher's control is plain itself");
        assert!(plain.control_stack().is_none());
        let apart = parse("name = 'a'\nstorage = 'ext4-image'\nlog_storage = 'tmpfs'\nencryption = 'fscrypt'").unwrap();
        let control = apart.control_stack().unwrap();
        assert_eq!(control.name, "plain on ext4 image, log on tmpfs");
        assert_eq!(apart.differences(&control), vec!["encryption"]);
        assert_eq!(apart.differences(&plain), vec!["storage", "log storage", "encryption"]);
        let limited = parse("name = 'l'\nencryption = 'gocryptfs'\nlimits = { cpus = 1 }").unwrap();
        assert_eq!(limited.control_stack().unwrap().limits, limited.limits);
    }
}
