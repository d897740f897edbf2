//! Targets: the database engines dbvs measures, and how a run gets a database on them.
//!
//! A run must start from the same state every time, as the seed studies restored a backup
//! before each run. So a target keeps one *pristine* database per workload build and hands
//! each run a *fresh copy* that is thrown away afterwards. Builds go into a staging database
//! that only becomes the pristine once complete, so an interrupted build never looks done.

pub mod sqlite;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// An open connection to an engine. Workloads match on it to pick their dialect module.
pub enum Connection {
    Sqlite(sqlite::SqliteConnection),
}

/// What a report says about the target.
#[derive(Clone, Debug, Serialize)]
pub struct TargetInfo {
    pub engine: &'static str,
    pub location: String,
    pub encrypted: bool,
}

/// Facts a build records inside the database (workload, size, seed, initial row counts),
/// so a later run can check it is running against what it thinks it is.
pub type BuildMeta = BTreeMap<String, String>;

/// A database engine plus where its pristine database lives.
pub trait Target: Send + Sync {
    fn info(&self) -> TargetInfo;
    /// Engine and crypto library versions, for the report's system-under-test section.
    fn versions(&self) -> Result<BTreeMap<String, String>>;
    /// The pristine database's build metadata, or `None` when nothing has been built yet.
    fn pristine(&self) -> Result<Option<BuildMeta>>;
    /// An empty database to build into. Dropping it without `publish` discards it.
    fn stage_build(&self) -> Result<Box<dyn StagedBuild>>;
    /// A fresh copy of the pristine database for one run. Dropping it deletes it.
    fn fresh_copy(&self) -> Result<Box<dyn RunCopy>>;
}

/// A concrete database that can be connected to.
pub trait Database: Send + Sync {
    fn connect(&self) -> Result<Connection>;
}

pub trait StagedBuild: Database {
    /// Atomically makes the finished build the target's pristine database.
    fn publish(self: Box<Self>) -> Result<()>;
}

pub trait RunCopy: Database {
    /// Keeps the run's database at `dest` (for inspection) instead of deleting it.
    fn keep(self: Box<Self>, dest: &Path) -> Result<()>;
}

/// Parses a `--target` value.
pub fn parse(
    spec: &str,
    key: Option<sqlite::Key>,
    cipher_pragmas: Vec<sqlite::CipherPragma>,
) -> Result<Box<dyn Target>> {
    match spec.split_once(':') {
        Some(("sqlite", path)) if !path.is_empty() => {
            Ok(Box::new(sqlite::SqliteTarget::new(path.into(), key, cipher_pragmas)))
        }
        _ => bail!("invalid target '{spec}': expected sqlite:PATH, for example sqlite:/var/tmp/ds2.db"),
    }
}

const META_TABLE: &str = "dbvs_meta";

/// Writes build metadata into the database being built.
pub fn write_meta(conn: &mut Connection, meta: &BuildMeta) -> Result<()> {
    match conn {
        Connection::Sqlite(c) => {
            c.execute_batch(&format!("CREATE TABLE {META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"))?;
            let mut st = c.prepare(&format!("INSERT INTO {META_TABLE} (key, value) VALUES (?1, ?2)"))?;
            for (k, v) in meta {
                st.execute((k, v))?;
            }
        }
    }
    Ok(())
}

/// Reads build metadata; `None` when the database has no metadata table (not built by dbvs).
pub fn read_meta(conn: &mut Connection) -> Result<Option<BuildMeta>> {
    match conn {
        Connection::Sqlite(c) => {
            let exists: bool = c.query_row(
                "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [META_TABLE],
                |r| r.get(0),
            )?;
            if !exists {
                return Ok(None);
            }
            let mut st = c.prepare(&format!("SELECT key, value FROM {META_TABLE}"))?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(Some(rows.collect::<rusqlite::Result<_>>().context("reading build metadata")?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sqlite_targets_and_rejects_the_rest() {
        assert_eq!(parse("sqlite:/tmp/x.db", None, vec![]).unwrap().info().location, "/tmp/x.db");
        for bad in ["sqlite:", "x.db", "mongo://h/db", ""] {
            let e = parse(bad, None, vec![]).err().unwrap().to_string();
            assert!(e.contains("expected sqlite:PATH"), "{e}");
        }
    }
}
