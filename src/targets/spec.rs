//! Which database a run uses, typed: what `--target` names, parsed once at the edge and
//! handed between processes as itself, never as a string to be read back by prefix.

use super::Engine;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetSpec {
    /// An SQLite file (SQLCipher when a key is given).
    Sqlite(PathBuf),
    /// The user's own PostgreSQL server, by URL (never with a password in it).
    Postgres(String),
    /// The user's own MariaDB or MySQL server, by URL.
    Mysql(String),
    /// A private PostgreSQL server dbvs starts.
    ManagedPostgres(Binaries),
    /// A private MariaDB server dbvs starts (the packaged one, or an installation's).
    ManagedMariadb(Binaries),
    /// A managed MariaDB Galera cluster of this many nodes.
    ManagedGalera(usize),
}

/// Which server binaries a managed server runs: a version is a study variant's change too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Binaries {
    /// The package manager's (PostgreSQL: the newest installed major version).
    #[default]
    Packaged,
    /// An installed PostgreSQL major version, e.g. "16" (`/usr/lib/postgresql/16`).
    Version(String),
    /// An installation directory, as `make install` or a binary tarball leaves it: PostgreSQL's
    /// `bin/initdb`, `bin/postgres`, `bin/pg_ctl`; MariaDB's `sbin/` or `bin/mariadbd` and
    /// `bin/` or `scripts/mariadb-install-db`. Your own build, say.
    Prefix(PathBuf),
}

impl Binaries {
    /// `VERSION` or `/PREFIX` after `managed-postgres:` or `managed-mariadb:`.
    fn parse(arg: Option<&str>) -> Option<Self> {
        match arg {
            None => Some(Binaries::Packaged),
            Some(a) if a.starts_with('/') => Some(Binaries::Prefix(a.into())),
            Some(a) if !a.is_empty() => Some(Binaries::Version(a.into())),
            Some(_) => None,
        }
    }
}

impl fmt::Display for Binaries {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Binaries::Packaged => Ok(()),
            Binaries::Version(v) => write!(f, ":{v}"),
            Binaries::Prefix(p) => write!(f, ":{}", p.display()),
        }
    }
}

const TARGET_HINT: &str = "expected sqlite:PATH, postgres://USER@HOST[:PORT]/DB, mysql://USER@HOST[:PORT]/DB, \
     managed-postgres[:VERSION|:/PREFIX], managed-mariadb[:/PREFIX] or managed-galera[:NODES]";

impl FromStr for TargetSpec {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        let invalid = || format!("invalid target '{s}': {TARGET_HINT}");
        if ["postgres://", "postgresql://"].iter().any(|p| s.starts_with(p)) {
            return Ok(TargetSpec::Postgres(s.into()));
        }
        if ["mysql://", "mariadb://"].iter().any(|p| s.starts_with(p)) {
            return Ok(TargetSpec::Mysql(s.into()));
        }
        let (kind, arg) = match s.split_once(':') {
            Some((kind, arg)) => (kind, Some(arg)),
            None => (s, None),
        };
        Ok(match (kind, arg) {
            ("sqlite", Some(path)) if !path.is_empty() => TargetSpec::Sqlite(path.into()),
            ("managed-postgres", arg) => TargetSpec::ManagedPostgres(Binaries::parse(arg).with_context(invalid)?),
            ("managed-mariadb", arg) => match Binaries::parse(arg).with_context(invalid)? {
                Binaries::Version(v) => bail!(
                    "invalid target '{s}': MariaDB has one packaged version here; name another one's installation \
                     directory instead, e.g. managed-mariadb:/opt/mariadb-{v}"
                ),
                binaries => TargetSpec::ManagedMariadb(binaries),
            },
            ("managed-galera", None) => TargetSpec::ManagedGalera(3),
            ("managed-galera", Some(n)) => TargetSpec::ManagedGalera(
                n.parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .with_context(|| format!("invalid target '{s}': managed-galera:N, N nodes"))?,
            ),
            _ => bail!(invalid()),
        })
    }
}

impl fmt::Display for TargetSpec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            TargetSpec::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            TargetSpec::Postgres(url) | TargetSpec::Mysql(url) => f.write_str(url),
            TargetSpec::ManagedPostgres(b) => write!(f, "managed-postgres{b}"),
            TargetSpec::ManagedMariadb(b) => write!(f, "managed-mariadb{b}"),
            TargetSpec::ManagedGalera(n) => write!(f, "managed-galera:{n}"),
        }
    }
}

impl TargetSpec {
    pub fn engine(&self) -> Engine {
        match self {
            TargetSpec::Sqlite(_) => Engine::Sqlite,
            TargetSpec::Postgres(_) | TargetSpec::ManagedPostgres(_) => Engine::Postgres,
            TargetSpec::Mysql(_) | TargetSpec::ManagedMariadb(_) | TargetSpec::ManagedGalera(_) => Engine::Mariadb,
        }
    }

    /// The user's own server, which dbvs reaches but does not start, limit or configure.
    pub fn is_own_server(&self) -> bool {
        matches!(self, TargetSpec::Postgres(_) | TargetSpec::Mysql(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_form_reads_back_as_itself() {
        for s in [
            "sqlite:/tmp/x.db",
            "postgres://me@db1:5433/shop",
            "postgresql://me@db1/shop",
            "mysql://me@db1/shop",
            "mariadb://me@db1:3307/shop",
            "managed-postgres",
            "managed-postgres:15",
            "managed-postgres:/opt/pg16",
            "managed-mariadb",
            "managed-mariadb:/opt/mariadb-11.4",
            "managed-galera:5",
        ] {
            let spec: TargetSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
            let json = serde_json::to_string(&spec).unwrap();
            assert_eq!(serde_json::from_str::<TargetSpec>(&json).unwrap(), spec, "{json}");
        }
        assert_eq!("managed-galera".parse::<TargetSpec>().unwrap(), TargetSpec::ManagedGalera(3));
    }

    #[test]
    fn anything_else_is_refused_naming_every_form() {
        for bad in
            ["sqlite:", "x.db", "mongo://h/db", "", "managed-postgresql", "managed-postgres:", "managed-mariadb:"]
        {
            let e = bad.parse::<TargetSpec>().unwrap_err().to_string();
            assert!(e.contains("expected sqlite:PATH") && e.contains("managed-galera[:NODES]"), "{e}");
        }
        let e = "managed-mariadb:11".parse::<TargetSpec>().unwrap_err().to_string();
        assert!(e.contains("installation directory") && e.contains("managed-mariadb:/opt/mariadb-11"), "{e}");
        for bad in ["managed-galera:0", "managed-galera:x"] {
            let e = bad.parse::<TargetSpec>().unwrap_err().to_string();
            assert!(e.contains("managed-galera:N, N nodes"), "{e}");
        }
    }
}
