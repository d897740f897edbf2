//! Variants: the configurations a study compares. A variant is a stack of layers
//! ([`stack`]): storage (a host directory, an ext4 image, tmpfs, a path of the user's), an
//! optional encryption layer (SQLCipher, MariaDB TDE, fscrypt, gocryptfs) or a FUSE
//! passthrough, resource limits, AES-NI masking.
//!
//! A variant checks up front that the host can run it (naming the package to install when
//! not), then sets itself up in a directory dbvs owns, bottom layer first. Set-up returns a
//! [`Prepared`] whose lease and guards tear everything down (lock keys, unmount, delete key
//! files and images) when it is dropped, so clean-up happens on every exit path: success,
//! error, or Ctrl-C unwinding the study.

mod fscrypt;
mod gocryptfs;
mod keys;
mod limits;
mod mariadb_tde;
mod sqlcipher;
mod stack;
pub use stack::STACK_KEYS;
mod storage;

use crate::sys::lease::Lease;
use crate::targets::sqlite::KeyKind;
use crate::targets::{Binaries, Engine};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use stack::Encryption;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
pub use storage::Storage;

pub use crate::cipher::OPENSSL_NO_AESNI;
/// Go's equivalent switch, for gocryptfs's own AES-GCM.
pub const GODEBUG_NO_AESNI: &str = "cpu.aes=off,cpu.pclmulqdq=off";

/// One `[[variants]]` entry of a study file: a name and a stack of layers. Written back
/// (into run records and reports) in the stack form; read from either form (see [`stack`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantConfig {
    pub name: String,
    /// The engine this variant runs when it is not the study's (engine against engine);
    /// a study whose variants name engines fills it in for every variant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// A managed server's binaries: another installed version, or an installation of the
    /// user's (a version upgrade as a study).
    #[serde(skip_serializing_if = "is_packaged")]
    pub server: Binaries,
    pub storage: Storage,
    /// A server's write-ahead log (PostgreSQL's WAL, MariaDB's redo log) on storage of its
    /// own, under the same file-system layers as the data (as BitLocker covered both volumes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_storage: Option<Storage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Encryption>,
    /// A FUSE file system that passes calls through (bindfs): gocryptfs's control.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fuse_passthrough: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<limits::Settings>,
    /// `false` runs this variant with AES-NI masked from user-space crypto.
    pub aesni: bool,
    /// Test-only: a busy-wait inside every unit, so verdict checks have a known slowdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<crate::driver::InjectedSlowdown>,
    /// The variant this one's cost is measured against besides the baseline: the same
    /// stack without the encryption layer. A study fills it in (see `study::controls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<String>,
    /// The engine's own settings for this variant: a managed server's settings, or SQLite's
    /// pragmas (`settings = { synchronous_commit = "off" }`); see `targets::settings`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
}

impl<'de> Deserialize<'de> for VariantConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entry = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        Self::from_entry(entry).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
    }
}

fn yes() -> bool {
    true
}

fn is_packaged(b: &Binaries) -> bool {
    *b == Binaries::Packaged
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
    /// The stack, bottom up: (layer, what this variant has there).
    #[serde(default)]
    pub stack: Vec<(String, String)>,
    /// The variant measured against besides the baseline (same stack, no encryption).
    #[serde(default)]
    pub control: Option<String>,
    /// The layers in which this variant differs from the baseline (a study fills it in).
    #[serde(default)]
    pub differs_from_baseline: Vec<String>,
}

/// A variant set up and ready for runs. Dropping it tears it down.
pub struct Prepared {
    /// The engine the variant runs.
    pub engine: Engine,
    /// The managed server's binaries.
    pub binaries: Binaries,
    /// Where the database files live.
    pub data_dir: PathBuf,
    /// Where a server's write-ahead log lives, when it has storage of its own.
    pub log_dir: Option<PathBuf>,
    /// SQLCipher key file and its kind, when the database itself is encrypted.
    pub key: Option<(PathBuf, KeyKind)>,
    pub cipher_pragmas: Vec<crate::targets::sqlite::CipherPragma>,
    /// Settings for a managed server (MariaDB encryption, for example).
    pub server_settings: Vec<(String, String)>,
    /// The variant's own engine settings (server settings or pragmas), applied last.
    pub engine_settings: Vec<(String, String)>,
    /// Environment for each run's child process.
    pub env: Vec<(String, String)>,
    /// Test-only: a busy-wait each run adds to every unit.
    pub inject_delay: crate::driver::InjectedSlowdown,
    /// The bytes at rest: what the plaintext canary scan reads.
    pub backing: Vec<PathBuf>,
    /// Whether data at rest must be ciphertext (the canary must find nothing).
    pub encrypted: bool,
    /// Control groups the runs (SQLite) or the managed server must join.
    pub cgroups: Vec<PathBuf>,
    /// The FUSE daemons serving the stack (gocryptfs, bindfs): a run's memory limit takes
    /// them in, since their page cache is the stack's too.
    pub daemons: Vec<u32>,
    /// The stack's loop-mounted image file systems, trimmed before each run's fresh copy
    /// ([`crate::sys::trim`]).
    pub images: Vec<PathBuf>,
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
    /// A variant known by its configuration only, never set up: a report of stored blocks
    /// (`--resume ID --budget 0`) mounts, keys and builds nothing.
    pub fn not_set_up() -> Self {
        Self::empty()
    }

    fn empty() -> Self {
        Self {
            engine: Engine::default(),
            binaries: Binaries::Packaged,
            backing: vec![],
            data_dir: PathBuf::new(),
            log_dir: None,
            key: None,
            cipher_pragmas: vec![],
            server_settings: vec![],
            engine_settings: vec![],
            env: vec![],
            inject_delay: crate::driver::InjectedSlowdown::None,
            encrypted: false,
            cgroups: vec![],
            daemons: vec![],
            images: vec![],
            in_force: vec![],
            lease: None,
            guards: vec![],
        }
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
    /// What a report says about the variant, with the layers that differ from `baseline`'s.
    pub fn info(&self, baseline: &VariantConfig) -> VariantInfo {
        let mut settings = match &self.encryption {
            Some(Encryption::Sqlcipher(s)) => s.describe(),
            Some(Encryption::MariadbTde(s)) => s.describe(),
            Some(Encryption::Fscrypt(s)) => s.describe(),
            Some(Encryption::Gocryptfs(s)) => s.describe(),
            None => BTreeMap::new(),
        };
        if let Some(l) = &self.limits {
            settings.extend(l.describe());
        }
        let layer = match (&self.encryption, &self.limits, self.delay) {
            (Some(e), _, _) => format!("{} ({})", e.level(), e.name()),
            (None, Some(_), _) => "none (cgroup limits: an emulated smaller or slower machine)".into(),
            (None, None, Some(_)) => "none (test-only injected delay)".into(),
            (None, None, None) => "none".into(),
        };
        VariantInfo {
            name: self.name.clone(),
            layer,
            cipher: self.encryption.as_ref().map_or("none".into(), Encryption::cipher),
            key_bits: self.encryption.as_ref().map(Encryption::key_bits),
            aesni: self.aesni,
            settings,
            stack: self.layers().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            control: self.control.clone(),
            differs_from_baseline: self.differences(baseline).into_iter().map(String::from).collect(),
        }
    }

    /// Why this variant must run alone in each block rather than take turns in slices.
    pub fn why_alone(&self) -> Option<&'static str> {
        self.limits.as_ref().and_then(limits::Settings::why_alone)
    }

    /// What does part of this variant's work outside the threads that run its units, when
    /// something does. The kernel schedules it, so in an interleaved run some of it falls in
    /// other variants' slices.
    pub fn background_work(&self) -> Option<BackgroundWork> {
        let on_image = |s: &Storage| matches!(s, Storage::Ext4Image(_) | Storage::XfsImage(_) | Storage::BtrfsImage(_));
        if self.fuse_passthrough || matches!(self.encryption, Some(Encryption::Gocryptfs(_))) {
            Some(BackgroundWork::FuseDaemon)
        } else if on_image(&self.storage) || self.log_storage.as_ref().is_some_and(on_image) {
            Some(BackgroundWork::LoopDevice)
        } else {
            None
        }
    }

    /// Whether all of this variant's storage lies in its place in the work directory, none
    /// on a path of the user's (which other variants, or anything else, may write to).
    pub fn stores_in_its_place(&self) -> bool {
        let elsewhere = |s: &Storage| matches!(s, Storage::Path { .. });
        !elsewhere(&self.storage) && !self.log_storage.as_ref().is_some_and(elsewhere)
    }

    /// Checks that this host and engine can run the variant; the error names what to install.
    pub fn preflight(&self, engine: Engine) -> Result<()> {
        self.validate()?;
        for (name, value) in &self.settings {
            crate::targets::settings::check_text(engine, name, value)
                .with_context(|| format!("variant '{}': settings", self.name))?;
        }
        match (&self.encryption, engine) {
            (Some(Encryption::Sqlcipher(_)), e) if e != Engine::Sqlite => {
                bail!("sqlcipher applies to the sqlite engine only, not {e}")
            }
            (Some(Encryption::MariadbTde(_)), e) if e != Engine::Mariadb => {
                bail!("mariadb-tde applies to the mariadb engine only, not {e}")
            }
            _ => {}
        }
        self.check_server(engine, None)?;
        if self.log_storage.is_some() && engine == Engine::Sqlite {
            bail!(
                "variant '{}': log_storage applies to the postgres and mariadb engines (SQLite keeps its WAL \
                 beside the database file)",
                self.name
            );
        }
        self.storage.preflight()?;
        if let Some(log) = &self.log_storage {
            log.preflight()?;
        }
        if self.fuse_passthrough {
            storage::fuse_preflight("bindfs", "bindfs")?;
        }
        match &self.encryption {
            Some(Encryption::Gocryptfs(_)) => storage::fuse_preflight("gocryptfs", "gocryptfs")?,
            Some(Encryption::Fscrypt(_)) => fscrypt::preflight()?,
            Some(Encryption::Sqlcipher(s)) => s.preflight()?,
            Some(Encryption::MariadbTde(_)) => mariadb_tde::preflight()?,
            None => {}
        }
        match &self.limits {
            Some(l) => l.preflight(),
            None => Ok(()),
        }
    }

    /// Checks that the variant's server binaries are there, for a managed server (of
    /// `nodes` Galera nodes, when given).
    pub fn check_server(&self, engine: Engine, nodes: Option<usize>) -> Result<()> {
        let at = || format!("variant '{}': server", self.name);
        match (engine, &self.server) {
            (_, Binaries::Packaged) => Ok(()),
            (Engine::Sqlite, _) => bail!(
                "{}: server binaries apply to the postgres and mariadb engines (SQLite is compiled into dbvs)",
                at()
            ),
            _ if nodes.is_some() => bail!("{}: a Galera cluster runs the packaged MariaDB; drop server or nodes", at()),
            (Engine::Postgres, b) => crate::targets::managed_pg::bin_dir(b).map(drop).with_context(at),
            (Engine::Mariadb, b) => crate::targets::managed_maria::check_binaries(b).with_context(at),
        }
    }

    /// Sets the stack up inside `dir`, an empty directory dbvs owns, bottom layer first.
    pub fn setup(&self, dir: &Path) -> Result<Prepared> {
        let mut p = Prepared::empty();
        p.binaries = self.server.clone();
        let mut lease = Lease::new(&format!("variant '{}' in {}", self.name, dir.display()))?;
        let result = self.build(dir, &mut lease, &mut p);
        // Whatever was set up before a failure is undone with the lease.
        p.lease = Some(lease);
        result?;
        Ok(p)
    }

    fn build(&self, dir: &Path, lease: &mut Lease, p: &mut Prepared) -> Result<()> {
        p.data_dir = self.volume(dir, &self.storage, &self.name, lease, p)?;
        if let Some(log) = &self.log_storage {
            let log_dir = dir.join("log");
            std::fs::create_dir_all(&log_dir)?;
            p.log_dir = Some(self.volume(&log_dir, log, &format!("{}-log", self.name), lease, p)?);
        }
        match &self.encryption {
            Some(Encryption::Sqlcipher(s)) => s.setup(dir, lease, p)?,
            Some(Encryption::MariadbTde(s)) => s.setup(dir, lease, p)?,
            Some(_) => p.encrypted = true,
            None => {}
        }
        if let Some(l) = &self.limits {
            l.setup(&self.name, p)?;
        }
        p.engine_settings = self.settings.clone().into_iter().collect();
        p.inject_delay = self.delay.unwrap_or_default();
        if !self.aesni {
            p.env.extend(aesni_off_env());
        }
        Ok(())
    }
}

impl VariantConfig {
    /// One volume inside `dir`: `storage` with the stack's file-system layer (fscrypt,
    /// gocryptfs or the FUSE passthrough) over it. Returns the directory the database
    /// writes to; what the canary scan reads goes into `p.backing`.
    fn volume(
        &self,
        dir: &Path,
        storage: &Storage,
        name: &str,
        lease: &mut Lease,
        p: &mut Prepared,
    ) -> Result<PathBuf> {
        let base = storage.setup(dir, name, lease, p)?;
        let mount = dir.join("data");
        let (top, backing) = match &self.encryption {
            Some(Encryption::Fscrypt(s)) => (s.setup(&base, lease, p)?, base.backing),
            Some(Encryption::Gocryptfs(s)) => {
                let env = if self.aesni { vec![] } else { aesni_off_env() };
                let cipher = s.setup(&base, &mount, &env, lease, p)?;
                (mount, cipher)
            }
            _ if self.fuse_passthrough => {
                let source = storage::passthrough(&base, &mount, lease, p)?;
                (mount, source)
            }
            _ => {
                let data = base.dir.join("data");
                std::fs::create_dir_all(&data)?;
                std::fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
                (data, base.backing)
            }
        };
        p.backing.push(backing);
        Ok(top)
    }
}

fn aesni_off_env() -> Vec<(String, String)> {
    vec![("OPENSSL_ia32cap".into(), OPENSSL_NO_AESNI.into()), ("GODEBUG".into(), GODEBUG_NO_AESNI.into())]
}

/// What does part of a variant's work outside the threads that run its units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackgroundWork {
    /// A FUSE file system's daemon (gocryptfs, the bindfs passthrough).
    FuseDaemon,
    /// A loop device's kernel work, under a file-system image.
    LoopDevice,
}

impl std::fmt::Display for BackgroundWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackgroundWork::FuseDaemon => "a FUSE daemon",
            BackgroundWork::LoopDevice => "a loop device",
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_layer_key_is_in_the_reference() {
        use crate::reference_docs::{fields, Page, STUDY_FILE};
        let page = Page::of(STUDY_FILE);
        page.assert_lists("[[variants]]", stack::STACK_KEYS.iter().chain(&["kind"]));
        let layers = [
            fields::<sqlcipher::Settings>(),
            fields::<mariadb_tde::Settings>(),
            fields::<fscrypt::Settings>(),
            fields::<gocryptfs::Settings>(),
        ];
        page.assert_lists("[[variants]] encryption", layers.concat().into_iter().chain(["layer"]));
        page.assert_lists("[[variants]] limits", fields::<limits::Settings>());
    }

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn parse(toml_text: &str) -> VariantConfig {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn plain_setup_and_teardown() {
        let dir = tempfile::tempdir().unwrap();
        let p = parse("name = 'p'\nkind = 'plain'\naesni = false").setup(dir.path()).unwrap();
        assert!(p.data_dir.is_dir() && !p.encrypted);
        assert!(p.data_dir.starts_with(dir.path()) && p.backing == vec![dir.path().join("store")]);
        assert!(p.env.iter().any(|(k, v)| k == "OPENSSL_ia32cap" && v == OPENSSL_NO_AESNI));
    }

    #[test]
    fn engine_settings_are_a_layer_of_their_own_that_controls_keep() {
        let v = parse("name = 'g'\nkind = 'gocryptfs'\nsettings = { synchronous_commit = 'off', wal_compression = true, commit_delay = 10 }");
        let want = [("commit_delay", "10"), ("synchronous_commit", "off"), ("wal_compression", "on")];
        assert_eq!(v.settings, want.map(|(k, x)| (k.to_string(), x.to_string())).into_iter().collect());
        let base = parse("name = 'p'");
        assert_eq!(v.differences(&base), ["FUSE", "encryption", "engine settings"]);
        let control = v.control_stack().unwrap();
        assert_eq!(v.differences(&control), ["encryption"], "the control has the same settings");
        assert!(toml::from_str::<VariantConfig>("name = 'x'\nsettings = { a = [1] }").is_err());
        let dir = tempfile::tempdir().unwrap();
        let p = parse("name = 'p'\nsettings = { synchronous = 'off' }").setup(dir.path()).unwrap();
        assert_eq!(p.engine_settings, [("synchronous".to_string(), "off".to_string())]);
    }

    #[test]
    fn a_sqlcipher_key_is_private_and_goes_with_the_variant() {
        let dir = tempfile::tempdir().unwrap();
        let p = parse("name = 's'\nkind = 'sqlcipher'").setup(dir.path()).unwrap();
        let (key, kind) = p.key.clone().unwrap();
        assert_eq!(kind, KeyKind::Raw);
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(crate::targets::sqlite::Key::from_file(&key, KeyKind::Raw).is_ok());
        assert!(p.encrypted && p.cipher_pragmas.contains(&"cipher_page_size=4096".parse().unwrap()));
        drop(p);
        assert!(!key.exists(), "the key file goes with the variant");
    }

    #[test]
    fn the_key_command_is_every_layers_kms_hook() {
        let dir = tempfile::tempdir().unwrap();
        let hex = "ab".repeat(32);
        let text = format!(
            "name = 's'\nencryption = {{ layer = 'sqlcipher', hmac = false, key = {{ command = 'printf {hex}' }} }}"
        );
        let p = parse(&text).setup(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&p.key.as_ref().unwrap().0).unwrap(), hex);
        assert!(p.cipher_pragmas.contains(&"cipher_use_hmac=OFF".parse().unwrap()));
        let bad = parse("name = 's'\nencryption = { layer = 'sqlcipher', key = { command = 'echo nope' } }");
        let e = bad.setup(&dir.path().join("b")).err().unwrap().to_string();
        assert!(e.contains("64 hex digits"), "{e}");
    }

    #[test]
    fn a_variant_name_stays_inside_the_storage_path_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let (ssd, work) = (dir.path().join("ssd"), dir.path().join("work"));
        std::fs::create_dir_all(&ssd).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let v = parse(&format!("name = '../../../escape'\nstorage = {{ path = '{}' }}", ssd.display()));
        let p = v.setup(&work).unwrap();
        assert!(p.data_dir.starts_with(&ssd) && !dir.path().join("escape").exists(), "{}", p.data_dir.display());
        let made: Vec<String> =
            std::fs::read_dir(&ssd).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(made, [format!("dbvs-{}-_________escape", std::process::id())]);
    }

    #[test]
    fn only_a_server_keeps_its_log_apart() {
        let v = parse("name = 'a'\nlog_storage = 'tmpfs'");
        let e = v.preflight(Engine::Sqlite).unwrap_err().to_string();
        assert!(e.contains("log_storage applies to the postgres and mariadb engines"), "{e}");
    }

    #[test]
    fn the_gocryptfs_daemon_shares_the_variants_cpu_limit_and_the_group_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = parse("name = 'g'\nencryption = 'gocryptfs'\nlimits = { cpus = 0.5 }").setup(dir.path()).unwrap();
        let (daemon, groups) = (p.daemons[0], p.cgroups.clone());
        let cgroup = std::fs::read_to_string(format!("/proc/{daemon}/cgroup")).unwrap();
        for g in &groups {
            let name = g.file_name().unwrap().to_string_lossy().into_owned();
            assert!(cgroup.contains(&name), "the daemon is in {name}: {cgroup}");
        }
        drop(p);
        assert!(groups.iter().all(|g| !g.exists()), "the group goes with the variant though the daemon outlived it");
    }

    #[test]
    fn a_failed_setup_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let v = parse("name = 's'\nencryption = { layer = 'sqlcipher', key = { command = 'exit 1' } }");
        assert!(v.setup(dir.path()).is_err());
        let leases = crate::sys::lease::dir();
        let mine = format!("{}-", std::process::id());
        let left: Vec<_> = std::fs::read_dir(&leases)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&mine))
            .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(&dir.path().display().to_string())))
            .collect();
        assert!(left.is_empty(), "the lease of a failed set-up is carried out: {left:?}");
    }
}
