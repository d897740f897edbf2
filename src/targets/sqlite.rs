//! Embedded SQLite, with SQLCipher compiled in (rusqlite's bundled SQLCipher with vendored
//! OpenSSL), so encrypted databases need nothing installed on the host.
//!
//! Every connection runs in WAL mode with a lock-wait handler that counts how often a
//! writer had to wait, so SQLite's single-writer lock shows up in the numbers instead of
//! hiding inside latencies.

use super::{Connection, Database, RunCopy, StagedBuild, Target, TargetInfo};
use anyhow::{bail, Context, Result};
use rusqlite::{ErrorCode, OpenFlags};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// What a SQLCipher key file holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    /// 64 hex digits: a raw 256-bit key. Skips key derivation, so opening a connection costs
    /// the same as for a plain database.
    #[default]
    Raw,
    /// A passphrase, stretched by SQLCipher's PBKDF2 on every connection open (kdf_iter).
    Passphrase,
}

/// A SQLCipher key. Never printed.
#[derive(Clone)]
pub enum Key {
    Raw(String),
    Passphrase(String),
}

impl Key {
    /// Reads a key file. The file must not be accessible by other users.
    pub fn from_file(path: &Path, kind: KeyKind) -> Result<Self> {
        let text = crate::sys::read_secret_file(path)?;
        match kind {
            KeyKind::Raw => Self::from_hex(&text).with_context(|| format!("bad key file {}", path.display())),
            KeyKind::Passphrase if text.is_empty() => bail!("key file {} is empty", path.display()),
            KeyKind::Passphrase => Ok(Self::Passphrase(text)),
        }
    }

    pub fn from_hex(hex: &str) -> Result<Self> {
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("a raw key must be exactly 64 hex digits (256 bits)");
        }
        Ok(Self::Raw(hex.to_ascii_lowercase()))
    }

    /// The `PRAGMA key` statement for this key.
    fn pragma(&self) -> String {
        match self {
            Key::Raw(hex) => format!("PRAGMA key = \"x'{hex}'\";"),
            Key::Passphrase(p) => format!("PRAGMA key = '{}';", p.replace('\'', "''")),
        }
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// A SQLCipher setting applied right after the key, e.g. `cipher_page_size=4096`. Checked
/// when parsed, so a run spec carries only settings that passed the allow-list.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CipherPragma {
    name: String,
    value: String,
}

impl std::str::FromStr for CipherPragma {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        const ALLOWED: &[&str] = &[
            "cipher_page_size",
            "cipher_use_hmac",
            "kdf_iter",
            "cipher_hmac_algorithm",
            "cipher_kdf_algorithm",
            "cipher_plaintext_header_size",
        ];
        let (name, value) = s.split_once('=').context("expected NAME=VALUE, e.g. cipher_page_size=4096")?;
        if !ALLOWED.contains(&name) {
            bail!("unknown cipher pragma '{name}'; allowed: {}", ALLOWED.join(", "));
        }
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            bail!("cipher pragma {name} needs a plain word or number as its value, got '{value}'");
        }
        // SQLCipher ignores or fails obscurely on out-of-range values; say so here instead.
        let number = value.parse::<u64>().ok();
        match name {
            "cipher_page_size" if !number.is_some_and(|n| n.is_power_of_two() && (512..=65536).contains(&n)) => {
                bail!("cipher_page_size must be a power of two from 512 to 65536, e.g. 4096, not '{value}'")
            }
            "kdf_iter" if number.is_none_or(|n| n < 1) => {
                bail!("kdf_iter must be a whole number of at least 1, e.g. 256000, not '{value}'")
            }
            "cipher_plaintext_header_size" if number.is_none_or(|n| n > 100) => {
                bail!("cipher_plaintext_header_size must be a number of bytes from 0 to 100, not '{value}'")
            }
            "cipher_use_hmac" if !["ON", "OFF"].contains(&value.to_ascii_uppercase().as_str()) => {
                bail!("cipher_use_hmac must be ON or OFF, not '{value}'")
            }
            _ => {}
        }
        Ok(Self { name: name.into(), value: value.into() })
    }
}

impl TryFrom<String> for CipherPragma {
    type Error = anyhow::Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<CipherPragma> for String {
    fn from(p: CipherPragma) -> String {
        format!("{}={}", p.name, p.value)
    }
}

/// How a connection is tuned: a bulk build or a measured run.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// No journal and no syncs: the staging file is discarded if anything goes wrong.
    Build,
    /// WAL, production durability defaults, foreign keys enforced like on a server.
    Run,
}

pub struct SqliteTarget {
    path: PathBuf,
    key: Option<Key>,
    cipher_pragmas: Vec<CipherPragma>,
    pragmas: Vec<(String, String)>,
}

impl SqliteTarget {
    pub fn new(path: PathBuf, key: Option<Key>, cipher_pragmas: Vec<CipherPragma>) -> Self {
        Self { path, key, cipher_pragmas, pragmas: vec![] }
    }

    /// A variant's own pragmas (see `targets::settings`), set after dbvs's own.
    pub fn with_pragmas(self, pragmas: Vec<(String, String)>) -> Self {
        Self { pragmas, ..self }
    }

    fn db(&self, path: PathBuf, mode: Mode) -> SqliteDb {
        SqliteDb {
            path,
            key: self.key.clone(),
            cipher_pragmas: self.cipher_pragmas.clone(),
            pragmas: self.pragmas.clone(),
            mode,
            gate: WriteGate::default(),
        }
    }

    fn file_name(&self) -> String {
        self.path.file_name().map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned())
    }

    /// A sibling of the pristine file, hidden, unique to this process. Sweeps away the
    /// siblings of dbvs processes that died without cleaning up (kill -9, power loss).
    fn sibling(&self, what: &str) -> PathBuf {
        let prefix = format!(".{}.", self.file_name());
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix(&prefix).and_then(owner_pid) {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        self.path.with_file_name(format!("{prefix}{what}-{}", std::process::id()))
    }
}

impl Target for SqliteTarget {
    fn info(&self) -> TargetInfo {
        TargetInfo {
            engine: super::Engine::Sqlite,
            location: self.path.display().to_string(),
            encrypted: self.key.is_some(),
        }
    }

    fn versions(&self) -> Result<BTreeMap<String, String>> {
        let c = rusqlite::Connection::open_in_memory()?;
        // The crypto provider is only reported once a key is set; this throwaway key
        // protects nothing (the in-memory database is empty and dropped at once).
        c.execute_batch(&format!("PRAGMA key = \"x'{}'\";", "0".repeat(64)))?;
        let mut v = BTreeMap::from([("sqlite".to_string(), rusqlite::version().to_string())]);
        for (name, pragma) in [("sqlcipher", "cipher_version"), ("crypto_provider", "cipher_provider_version")] {
            let value: String = c.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?;
            v.insert(name.to_string(), value);
        }
        Ok(v)
    }

    fn pristine_files(&self) -> Vec<std::path::PathBuf> {
        vec![self.path.clone()]
    }

    fn pristine(&self) -> Result<Option<super::BuildMeta>> {
        if !self.path.exists() {
            return Ok(None);
        }
        if !self.path.is_file() {
            bail!("{} is not a regular file; choose a file path for sqlite:PATH", self.path.display());
        }
        let mut conn = self.db(self.path.clone(), Mode::Run).connect()?;
        match super::read_meta(&mut conn)? {
            Some(meta) => Ok(Some(meta)),
            None => bail!("{} exists but was not built by dbvs; remove it or choose another path", self.path.display()),
        }
    }

    fn stage_build(&self) -> Result<Box<dyn StagedBuild>> {
        let staging = self.sibling("building");
        std::fs::File::create(&staging).with_context(|| {
            format!("cannot create a database next to {}; choose a writable path", self.path.display())
        })?;
        Ok(Box::new(Staged { db: self.db(staging, Mode::Build), dest: self.path.clone() }))
    }

    fn existing(&self) -> Result<Box<dyn Database>> {
        Ok(Box::new(self.db(self.path.clone(), Mode::Run)))
    }

    fn watch(&self) -> super::Watch {
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        super::Watch {
            volumes: vec![("data".into(), dir.to_path_buf())],
            server_pid_files: vec![],
            note: "embedded: the engine runs inside dbvs (see dbvs CPU)",
        }
    }

    fn fresh_copy(&self) -> Result<Box<dyn RunCopy>> {
        let first = self.sibling("run");
        let copy = first.with_file_name(format!(
            "{}{}",
            first.file_name().map_or_else(Default::default, |n| n.to_string_lossy()),
            super::copy_suffix('-')
        ));
        let db = self.db(copy, Mode::Run);
        let guard = Copied(db);
        // Synced, the copy's pages are clean before the run: otherwise the run's first
        // checkpoint writes the whole copy back inside the measured window, a stall that
        // falls on one variant of a block at random.
        std::fs::copy(&self.path, &guard.0.path)
            .and_then(|_| std::fs::File::open(&guard.0.path)?.sync_all())
            .with_context(|| {
                format!(
                    "cannot copy {} for the run; is its directory writable and is there space?",
                    self.path.display()
                )
            })?;
        Ok(Box::new(guard))
    }
}

#[derive(Clone)]
struct SqliteDb {
    path: PathBuf,
    key: Option<Key>,
    cipher_pragmas: Vec<CipherPragma>,
    pragmas: Vec<(String, String)>,
    mode: Mode,
    gate: WriteGate,
}

/// SQLite admits one writer at a time and makes the others poll its file lock with sleeps.
/// Connections opened from one database share this gate, so dbvs's own writers queue on
/// an in-process mutex instead: throughput is then the engine's, not a polling artifact.
#[derive(Clone, Default)]
pub struct WriteGate(Arc<Mutex<()>>);

impl WriteGate {
    /// Waits for the right to write; the flag says whether another writer held it.
    pub fn enter(&self) -> (MutexGuard<'_, ()>, bool) {
        match self.0.try_lock() {
            Ok(g) => (g, false),
            Err(_) => (self.0.lock().unwrap_or_else(|p| p.into_inner()), true),
        }
    }
}

/// A SQLite connection plus the write gate it shares with its siblings.
pub struct SqliteConnection {
    pub conn: rusqlite::Connection,
    pub gate: WriteGate,
}

impl SqliteConnection {
    /// Runs `body` as one write transaction: queued behind the write gate, `BEGIN
    /// IMMEDIATE`, committed unless `body` ended the transaction itself (a rollback), and
    /// restarted while the database is busy (another process holds the lock).
    pub fn write<T>(
        &self,
        rec: &mut crate::driver::UnitRecorder,
        body: impl FnMut(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        self.write_with(rec, conflict, body)
    }

    /// [`Self::write`] for a body with its own error type, which `conflict` classifies.
    pub fn write_with<T, E>(
        &self,
        rec: &mut crate::driver::UnitRecorder,
        conflict: impl Fn(&E) -> Option<&'static str>,
        mut body: impl FnMut(&rusqlite::Connection) -> Result<T, E>,
    ) -> Result<T>
    where
        E: std::error::Error + From<rusqlite::Error> + Send + Sync + 'static,
    {
        let (_turn, waited) = self.gate.enter();
        rec.lock_waits(u64::from(waited));
        let c = &self.conn;
        let result = crate::driver::restarting(rec, conflict, || {
            c.execute_batch("BEGIN IMMEDIATE")?;
            let outcome = body(c).and_then(|v| {
                if !c.is_autocommit() {
                    c.execute_batch("COMMIT")?;
                }
                Ok(v)
            });
            if outcome.is_err() && !c.is_autocommit() {
                c.execute_batch("ROLLBACK")?;
            }
            outcome
        });
        rec.lock_waits(take_lock_waits());
        result
    }
}

impl std::ops::Deref for SqliteConnection {
    type Target = rusqlite::Connection;
    fn deref(&self) -> &rusqlite::Connection {
        &self.conn
    }
}

impl std::ops::DerefMut for SqliteConnection {
    fn deref_mut(&mut self) -> &mut rusqlite::Connection {
        &mut self.conn
    }
}

impl SqliteDb {
    fn open(&self) -> Result<rusqlite::Connection> {
        let mut c = rusqlite::Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("cannot open {}", self.path.display()))?;
        if let Some(key) = &self.key {
            // SQLCipher logs a wrong key to stderr itself; we report it as one clear error.
            c.execute_batch("PRAGMA cipher_log_level = NONE;")?;
            // The key must be the first statement that touches the database.
            c.execute_batch(&key.pragma())?;
            for p in &self.cipher_pragmas {
                c.execute_batch(&format!("PRAGMA {} = {};", p.name, p.value))?;
            }
        }
        c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(())).map_err(|e| match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => anyhow::anyhow!(
                "cannot read {}: not a SQLite database, or encrypted with another key (check --key-file)",
                self.path.display()
            ),
            _ => anyhow::Error::new(e).context(format!("cannot read {}", self.path.display())),
        })?;
        match self.mode {
            Mode::Build => c.execute_batch(
                "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;",
            )?,
            Mode::Run => {
                // WAL unless the variant names its own journal: switching back and forth at
                // every connection's open would need the database to itself each time.
                if !self.pragmas.iter().any(|(name, _)| name == "journal_mode") {
                    c.execute_batch("PRAGMA journal_mode = WAL;")?;
                }
                c.execute_batch("PRAGMA foreign_keys = ON;")?;
                c.busy_handler(Some(on_busy))?;
            }
        }
        self.set_pragmas(&c)?;
        Ok(c)
    }

    /// Sets the variant's pragmas: on a build, only those that shape the file (the build's
    /// own journal settings stay); on a run, all of them, each checked to be in force, since
    /// SQLite ignores a value it does not take.
    fn set_pragmas(&self, c: &rusqlite::Connection) -> Result<()> {
        use super::settings::{sqlite_took, SQLITE_FILE_FORMAT};
        let build = matches!(self.mode, Mode::Build);
        for (name, value) in self.pragmas.iter().filter(|(n, _)| !build || SQLITE_FILE_FORMAT.contains(&n.as_str())) {
            c.execute_batch(&format!("PRAGMA {name} = {value};"))
                .with_context(|| format!("PRAGMA {name} = {value}"))?;
            if build {
                continue;
            }
            let now = super::settings::sqlite_pragma(c, name)?;
            if !sqlite_took(name, value, &now) {
                bail!("PRAGMA {name} = {value} is not in force: SQLite reads back {now} (it ignores a value it does not take)");
            }
        }
        Ok(())
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Database for SqliteDb {
    fn connect(&self) -> Result<Connection> {
        Ok(Connection::Sqlite(SqliteConnection { conn: self.open()?, gate: self.gate.clone() }))
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        if self.key.is_some() {
            bail!("an SQLCipher database cannot be handed to another program: its key never leaves dbvs");
        }
        Ok(vec![("DBVS_ENGINE".into(), "sqlite".into()), ("DBVS_SQLITE_PATH".into(), self.path.display().to_string())])
    }
    fn backup(&self, name: &str) -> Result<PathBuf> {
        // A run copy's name carries its pid, so a backup left by a killed run is swept too.
        let dest = PathBuf::from(format!("{}-backup-{name}", self.path.display()));
        super::backup::sqlite(&self.open()?, &dest)?;
        Ok(dest)
    }
}

struct Staged {
    db: SqliteDb,
    dest: PathBuf,
}

impl Database for Staged {
    fn connect(&self) -> Result<Connection> {
        self.db.connect()
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        self.db.client_env()
    }
}

impl StagedBuild for Staged {
    fn publish(self: Box<Self>) -> Result<()> {
        {
            // Runs use WAL; the journal mode is stored in the file, so set it once here.
            let c = SqliteDb { mode: Mode::Run, ..self.db.clone() }.open()?;
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
        }
        std::fs::File::open(&self.db.path)?.sync_all()?;
        std::fs::rename(&self.db.path, &self.dest).with_context(|| format!("cannot create {}", self.dest.display()))?;
        self.db.remove();
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.db.remove();
    }
}

struct Copied(SqliteDb);

impl Database for Copied {
    fn connect(&self) -> Result<Connection> {
        self.0.connect()
    }
    fn client_env(&self) -> Result<Vec<(String, String)>> {
        self.0.client_env()
    }
    fn backup(&self, name: &str) -> Result<PathBuf> {
        self.0.backup(name)
    }
}

impl RunCopy for Copied {
    fn keep(self: Box<Self>, dest: &str) -> Result<()> {
        {
            let c = self.0.open()?;
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
        }
        std::fs::rename(&self.0.path, dest).with_context(|| format!("cannot keep the run database as {dest}"))?;
        Ok(())
    }
}

impl Drop for Copied {
    fn drop(&mut self) {
        self.0.remove();
    }
}

/// The process id in a sibling's name such as `run-123` or `building-123-wal`.
fn owner_pid(rest: &str) -> Option<u32> {
    let rest = rest.strip_prefix("run-").or_else(|| rest.strip_prefix("building-"))?;
    rest.split('-').next()?.parse().ok()
}

thread_local! {
    static LOCK_WAITS: Cell<u64> = const { Cell::new(0) };
}

/// Give up on a lock after this many waits (about 10 s in all), then the caller retries.
const MAX_LOCK_WAITS: i32 = 2000;

/// SQLite calls this when another connection holds the write lock. Backs off from 50 us to
/// 5 ms: finer than SQLite's default busy timeout (1 ms to 100 ms steps), which would add
/// latency the engine itself does not need.
fn on_busy(attempt: i32) -> bool {
    LOCK_WAITS.with(|c| c.set(c.get() + 1));
    if attempt >= MAX_LOCK_WAITS {
        return false;
    }
    std::thread::sleep(Duration::from_micros((50u64 << attempt.min(7)).min(5_000)));
    true
}

/// Lock waits on this thread since the last call.
pub fn take_lock_waits() -> u64 {
    LOCK_WAITS.with(|c| c.replace(0))
}

/// "busy" when another process held the database: the transaction should be retried.
pub fn conflict(e: &rusqlite::Error) -> Option<&'static str> {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)).then_some("busy")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keys_must_be_64_hex_digits() {
        assert!(Key::from_hex(&"ab".repeat(32)).is_ok());
        assert_eq!(Key::Passphrase("it's".into()).pragma(), "PRAGMA key = 'it''s';");
        assert!(Key::from_hex("abc").is_err());
        assert!(Key::from_hex(&"zz".repeat(32)).is_err());
        assert_eq!(format!("{:?}", Key::from_hex(&"ab".repeat(32)).unwrap()), "Key(<redacted>)");
    }

    #[test]
    fn key_files_readable_by_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        std::fs::write(&p, "ab".repeat(32)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(Key::from_file(&p, KeyKind::Raw).unwrap_err().to_string().contains("chmod 600"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Key::from_file(&p, KeyKind::Raw).is_ok());
    }

    #[test]
    fn cipher_pragmas_are_allow_listed() {
        assert!("cipher_page_size=4096".parse::<CipherPragma>().is_ok());
        assert!("journal_mode=OFF".parse::<CipherPragma>().is_err());
        assert!("kdf_iter=1; DROP TABLE x".parse::<CipherPragma>().is_err());
        for bad in ["cipher_page_size=3", "cipher_page_size=131072", "kdf_iter=0", "cipher_use_hmac=maybe"] {
            let e = bad.parse::<CipherPragma>().unwrap_err().to_string();
            assert!(e.contains("must be"), "{bad}: {e}");
        }
        assert!("cipher_use_hmac=off".parse::<CipherPragma>().is_ok());
    }

    #[test]
    fn encrypted_database_needs_its_key_and_holds_no_plaintext() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.db");
        let key = Key::from_hex(&"5a".repeat(32)).unwrap();
        let t = SqliteTarget::new(path.clone(), Some(key), vec![]);
        let staged = t.stage_build().unwrap();
        {
            let mut conn = staged.connect().unwrap();
            let Connection::Sqlite(c) = &conn else { unreachable!("a SQLite target gives SQLite connections") };
            c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES ('canary-plaintext-marker');").unwrap();
            super::super::write_meta(&mut conn, &BTreeMap::new()).unwrap();
        }
        staged.publish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(!bytes.windows(23).any(|w| w == b"canary-plaintext-marker"));
        assert!(t.pristine().unwrap().is_some());
        let wrong = SqliteTarget::new(path, Some(Key::from_hex(&"00".repeat(32)).unwrap()), vec![]);
        assert!(wrong.pristine().unwrap_err().to_string().contains("another key"));
    }

    #[test]
    fn files_of_dead_processes_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let t = SqliteTarget::new(dir.path().join("p.db"), None, vec![]);
        let me = std::process::id();
        for f in [".p.db.run-999999999", ".p.db.run-999999999-wal", ".p.db.building-999999999", "other.db"] {
            std::fs::write(dir.path().join(f), b"x").unwrap();
        }
        std::fs::write(dir.path().join(format!(".p.db.run-{me}-wal")), b"x").unwrap();
        t.sibling("run");
        let mut left: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, vec![format!(".p.db.run-{me}-wal"), "other.db".into()]);
    }

    #[test]
    fn copies_and_failed_builds_leave_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let t = SqliteTarget::new(dir.path().join("p.db"), None, vec![]);
        drop(t.stage_build().unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let staged = t.stage_build().unwrap();
        super::super::write_meta(&mut staged.connect().unwrap(), &BTreeMap::new()).unwrap();
        staged.publish().unwrap();
        let copy = t.fresh_copy().unwrap();
        copy.connect().unwrap();
        drop(copy);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec!["p.db"]);
    }
}
