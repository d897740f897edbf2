//! Helpers for tests that drive the real `dbvs` binary.
#![allow(dead_code)] // each test file uses a different subset

use std::path::Path;
use std::process::{Command, Output};

/// `dbvs` with the results store and the lease directory in Cargo's scratch directory for
/// tests (under target/, so nothing is left in /tmp), never the user's own.
pub fn command() -> Command {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let mut c = Command::new(env!("CARGO_BIN_EXE_dbvs"));
    c.env("DBVS_RESULTS", scratch.join(format!("dbvs-test-results-{}.db", std::process::id())));
    c.env("DBVS_LEASES", scratch.join("leases"));
    c
}

pub fn dbvs(args: &[&str]) -> Output {
    command().args(args).output().expect("dbvs runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs dbvs and asserts success, showing its output otherwise.
pub fn ok(args: &[&str]) -> Output {
    let o = dbvs(args);
    assert!(o.status.success(), "dbvs {args:?} failed:\n{}\n{}", stdout(&o), stderr(&o));
    o
}

pub fn target(dir: &Path, name: &str) -> String {
    format!("sqlite:{}", dir.join(name).display())
}

pub fn count(c: &rusqlite::Connection, table: &str) -> i64 {
    c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap()
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A scratch directory a server's own system user (postgres, mysql) can enter.
pub fn reachable_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}
