//! Engine settings a variant (or a study's `[target]`) asks for: PostgreSQL's and MariaDB's
//! server settings, SQLite's pragmas. Each engine names its own settings, so a name is
//! checked against the engine's own list (`postgres --describe-config`, `mariadbd --verbose
//! --help`, SQLite's `pragma_list`) before anything starts, and what was in force is read
//! back from the engine at each run (`current_setting()`, `information_schema.GLOBAL_VARIABLES`,
//! `PRAGMA`), never copied from the file.

use super::{Binaries, Connection, Engine};
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// Pragmas dbvs sets itself or that belong to the SQLCipher layer: a variant's settings
/// must not change what the run measures behind its back, nor handle keys.
const SQLITE_RESERVED: &[&str] = &["key", "rekey", "hexkey", "hexrekey", "textkey", "textrekey", "foreign_keys"];

/// Pragmas that shape the database file, so a build takes them too (later they only read).
pub const SQLITE_FILE_FORMAT: &[&str] = &["page_size", "auto_vacuum", "encoding"];

/// A server setting (`name=value`) as a managed server takes it on its command line.
pub fn parse_setting(s: &str) -> Result<(String, String)> {
    let (k, v) = s.split_once('=').context("expected NAME=VALUE, e.g. shared_buffers=256MB")?;
    let ok =
        |x: &str, extra: &[u8]| !x.is_empty() && x.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b));
    if !ok(k, b"._-") || !ok(v, b"._-/:,=;") {
        bail!("server setting '{s}' must be NAME=VALUE with letters, digits and . _ - (the value also / : , = ;)");
    }
    Ok((k.into(), v.into()))
}

/// A managed server's fixed memory under a run's memory limit, each setting the user did not
/// give: its own cache a quarter of the limit, as PostgreSQL's documentation suggests for
/// shared_buffers (of the machine's RAM, which the limit stands for), and MariaDB's other
/// buffers allocated at start (the MyISAM key cache, the Aria page cache, the InnoDB log
/// buffer) cut to a fraction of the limit where their defaults are larger. With the
/// defaults (128MB of shared buffers, a 128MB InnoDB buffer pool, MariaDB's 74MB of buffers
/// at start) a small limit fills with memory no reclaim can free, and the kernel kills the
/// server before it takes a connection.
pub fn cache_within(engine: Engine, memory: u64, settings: &[(String, String)]) -> Vec<(String, String)> {
    const MB: u64 = 1 << 20;
    // (setting, fraction of the limit, the engine's default: never raised above it)
    let sized: &[(&str, u64, Option<u64>)] = match engine {
        Engine::Postgres => &[("shared_buffers", 4, None)],
        Engine::Mariadb => &[
            ("innodb_buffer_pool_size", 4, None),
            ("key_buffer_size", 16, Some(128 * MB)),
            ("aria_pagecache_buffer_size", 16, Some(128 * MB)),
            ("innodb_log_buffer_size", 32, Some(16 * MB)),
        ],
        Engine::Sqlite => &[],
    };
    let given = |name: &str| settings.iter().any(|(k, _)| k == name);
    sized
        .iter()
        .filter(|(name, _, _)| !given(name))
        .map(|&(name, fraction, default)| {
            let bytes = default.map_or(memory / fraction, |d| (memory / fraction).min(d));
            (name.to_string(), format!("{}kB", bytes / 1024))
        })
        .collect()
}

/// Checks a setting's name and value as text before any engine starts: letters, digits and
/// a few marks, so a value can go on a server's command line or into a pragma safely.
pub fn check_text(engine: Engine, name: &str, value: &str) -> Result<()> {
    match engine {
        Engine::Sqlite => {
            let ok = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
            if !ok(name) || !ok(value) {
                bail!("pragma {name} = {value}: a pragma's name and value are letters, digits and _ - .");
            }
            if SQLITE_RESERVED.contains(&name) || name.starts_with("cipher") {
                bail!(
                    "pragma {name} is dbvs's or the SQLCipher layer's to set (keys and cipher settings belong to \
                     kind = \"sqlcipher\")"
                );
            }
            Ok(())
        }
        Engine::Postgres | Engine::Mariadb => parse_setting(&format!("{name}={value}")).map(|_| ()),
    }
}

/// Checks that every name in `names` is a setting `engine` (run from `binaries`) knows; the
/// error names the closest one it does know.
pub fn check_names<'a>(engine: Engine, binaries: &Binaries, names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        return Ok(());
    }
    let known = known(engine, binaries)?;
    for name in names {
        if !known.contains(&canonical(engine, name)) && !custom(engine, name) {
            let near = known.iter().max_by(|a, b| {
                strsim::jaro_winkler(a, name).partial_cmp(&strsim::jaro_winkler(b, name)).expect("not NaN")
            });
            let meant = near.filter(|n| strsim::jaro_winkler(n, name) > 0.85).map(|n| format!("; did you mean {n}?"));
            bail!("{name} is not a {} setting ({}){}", engine_name(engine), source(engine), meant.unwrap_or_default());
        }
    }
    Ok(())
}

fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "SQLite",
        Engine::Postgres => "PostgreSQL",
        Engine::Mariadb => "MariaDB",
    }
}

/// Where the engine's own list of settings comes from, for the error.
fn source(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "SQLite's pragma_list has no such pragma",
        Engine::Postgres => "postgres --describe-config lists none by that name",
        Engine::Mariadb => "mariadbd --verbose --help lists none by that name",
    }
}

/// MariaDB spells a setting with dashes or underscores alike.
fn canonical(engine: Engine, name: &str) -> String {
    match engine {
        Engine::Mariadb => name.replace('-', "_"),
        _ => name.to_string(),
    }
}

/// PostgreSQL takes any `extension.name` (a module's own setting).
fn custom(engine: Engine, name: &str) -> bool {
    engine == Engine::Postgres && name.contains('.')
}

/// Every setting the engine knows, from the engine itself (its version's own list); asked
/// once per process and binaries.
fn known(engine: Engine, binaries: &Binaries) -> Result<Arc<BTreeSet<String>>> {
    type Known = Vec<((Engine, Binaries), Arc<BTreeSet<String>>)>;
    static KNOWN: Mutex<Known> = Mutex::new(vec![]);
    let key = (engine, binaries.clone());
    if let Some((_, set)) = KNOWN.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(k, _)| *k == key) {
        return Ok(set.clone());
    }
    let set = Arc::new(ask(engine, binaries)?);
    KNOWN.lock().unwrap_or_else(|p| p.into_inner()).push((key, set.clone()));
    Ok(set)
}

fn ask(engine: Engine, binaries: &Binaries) -> Result<BTreeSet<String>> {
    match engine {
        Engine::Sqlite => {
            let c = rusqlite::Connection::open_in_memory()?;
            let mut st = c.prepare("SELECT name FROM pragma_pragma_list")?;
            let names = st.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<_>>()?;
            Ok(names)
        }
        Engine::Postgres => {
            let bin = super::managed_pg::bin_dir(binaries)?;
            let text = output(Command::new(bin.join("postgres")).arg("--describe-config"), "postgres")?;
            let listed = text.lines().filter_map(|l| l.split('\t').next()).map(str::to_string);
            // initdb's own (data_checksums) are not in the list: the server cannot set them.
            Ok(listed.chain(super::managed_pg::AT_INITDB.iter().map(|s| s.to_string())).collect())
        }
        Engine::Mariadb => {
            let mariadbd = super::managed_maria::server_binary(binaries)?;
            let text = output(Command::new(mariadbd).args(["--no-defaults", "--verbose", "--help"]), "mariadbd")?;
            // The variables' table: "name   value" after its header's dashes.
            let table = text.split("Variables (--variable-name=value)").nth(1).unwrap_or_default();
            let rows = table.lines().skip_while(|l| !l.starts_with("---")).skip(1);
            Ok(rows.filter_map(|l| l.split_whitespace().next()).map(|n| n.replace('-', "_")).collect())
        }
    }
}

fn output(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd.output().with_context(|| format!("cannot run {what} to list its settings"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.trim().is_empty() {
        bail!("{what} listed no settings: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(text)
}

/// What the engine says each setting is, on this connection: the settings in force. A
/// server option that is not a variable (`plugin_load_add`) has nothing to read back.
pub fn read_back(conn: &mut Connection, names: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for name in names {
        let value: Option<String> = match conn {
            Connection::Sqlite(c) => Some(sqlite_pragma(c, name)?),
            Connection::Postgres(c) => c.client.query_one("SELECT current_setting($1, true)", &[name])?.get(0),
            Connection::MySql(c) => {
                use ::mysql::prelude::Queryable;
                c.conn()?.exec_first(
                    "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = ?",
                    (canonical(Engine::Mariadb, name).to_ascii_uppercase(),),
                )?
            }
        };
        out.extend(value.map(|v| (name.clone(), v)));
    }
    Ok(out)
}

/// A pragma's value on this connection, as text.
pub fn sqlite_pragma(c: &rusqlite::Connection, name: &str) -> Result<String> {
    use rusqlite::types::Value;
    let value = c.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, Value>(0))?;
    Ok(match value {
        Value::Integer(i) => i.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Text(t) => t,
        Value::Null | Value::Blob(_) => String::new(),
    })
}

/// Whether SQLite put a pragma in force: it ignores a value it does not take, so what it
/// reads back is compared with what was asked (its enumerations read back as numbers).
pub fn sqlite_took(name: &str, asked: &str, now: &str) -> bool {
    let asked = asked.to_ascii_lowercase();
    let number = match (name, asked.as_str()) {
        ("synchronous", "off") | ("auto_vacuum", "none") | ("temp_store", "default") => Some("0"),
        ("synchronous", "normal") | ("auto_vacuum", "full") | ("temp_store", "file") => Some("1"),
        ("synchronous", "full") | ("auto_vacuum", "incremental") | ("temp_store", "memory") => Some("2"),
        ("synchronous", "extra") => Some("3"),
        (_, "on" | "true" | "yes") => Some("1"),
        (_, "off" | "false" | "no") => Some("0"),
        _ => None,
    };
    let now = now.to_ascii_lowercase();
    let same_number = matches!((asked.parse::<f64>(), now.parse::<f64>()), (Ok(a), Ok(b)) if a == b);
    now == asked || number == Some(now.as_str()) || same_number
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_plain_words() {
        assert_eq!(parse_setting("shared_buffers=256MB").unwrap(), ("shared_buffers".into(), "256MB".into()));
    }

    #[test]
    fn under_a_memory_limit_a_server_s_cache_takes_a_quarter_unless_the_settings_size_it() {
        let limit = 64 << 20;
        let set = |k: &str| vec![(k.to_string(), "8MB".to_string())];
        let names = |engine, settings: &[(String, String)]| -> Vec<String> {
            cache_within(engine, limit, settings).into_iter().map(|(k, _)| k).collect()
        };
        assert_eq!(cache_within(Engine::Postgres, limit, &[]), [("shared_buffers".into(), "16384kB".into())]);
        let maria = cache_within(Engine::Mariadb, limit, &set("max_connections"));
        assert!(maria.contains(&("innodb_buffer_pool_size".into(), "16384kB".into())), "{maria:?}");
        assert!(maria.contains(&("aria_pagecache_buffer_size".into(), "4096kB".into())), "{maria:?}");
        assert!(maria.contains(&("innodb_log_buffer_size".into(), "2048kB".into())), "{maria:?}");
        assert_eq!(names(Engine::Mariadb, &set("key_buffer_size")).len(), 3);
        let large = cache_within(Engine::Mariadb, 4 << 30, &[]);
        assert!(large.contains(&("key_buffer_size".into(), "131072kB".into())), "never above the default: {large:?}");
        assert!(names(Engine::Postgres, &set("shared_buffers")).is_empty());
        assert!(!names(Engine::Mariadb, &set("innodb_buffer_pool_size")).contains(&"innodb_buffer_pool_size".into()));
        assert!(names(Engine::Sqlite, &[]).is_empty());
        assert!(parse_setting("fsync").is_err());
        assert!(parse_setting("a=b c").is_err());
        assert!(parse_setting("a=$(reboot)").is_err());
        assert!(parse_setting("a='b'").is_err());
        let galera = parse_setting("wsrep_provider_options=gcache.dir=/dev/shm;gcache.size=64M").unwrap();
        assert_eq!(galera.1, "gcache.dir=/dev/shm;gcache.size=64M");
    }

    #[test]
    fn sqlite_knows_its_pragmas_and_names_the_closest() {
        check_names(Engine::Sqlite, &Binaries::Packaged, ["journal_mode", "synchronous", "page_size", "mmap_size"])
            .unwrap();
        let e = check_names(Engine::Sqlite, &Binaries::Packaged, ["jornal_mode"]).unwrap_err().to_string();
        assert!(e.contains("jornal_mode is not a SQLite setting") && e.ends_with("did you mean journal_mode?"), "{e}");
    }

    #[test]
    fn a_pragma_is_plain_words_and_never_a_key() {
        check_text(Engine::Sqlite, "journal_mode", "wal").unwrap();
        assert!(check_text(Engine::Sqlite, "journal_mode", "wal; DROP TABLE x").is_err());
        assert!(check_text(Engine::Sqlite, "key", "x").unwrap_err().to_string().contains("sqlcipher"));
        assert!(check_text(Engine::Sqlite, "cipher_page_size", "4096").is_err());
        assert!(check_text(Engine::Postgres, "synchronous_commit", "off").is_ok());
        assert!(check_text(Engine::Postgres, "synchronous_commit", "$(reboot)").is_err());
    }

    #[test]
    fn sqlite_enumerations_read_back_as_numbers() {
        assert!(sqlite_took("synchronous", "NORMAL", "1"));
        assert!(!sqlite_took("synchronous", "full", "1"));
        assert!(sqlite_took("journal_mode", "WAL", "wal"));
        assert!(!sqlite_took("journal_mode", "wal2", "wal"));
        assert!(sqlite_took("mmap_size", "268435456", "268435456"));
        assert!(sqlite_took("cache_size", "-2000", "-2000"));
        assert!(!sqlite_took("cache_size", "-4000", "-2000"));
    }
}
