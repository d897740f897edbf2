//! A variant's server binaries (`server = { version | prefix }`): a version upgrade, or a
//! build of one's own against the release, as a study. Only PostgreSQL 15 and MariaDB 10.11
//! are packaged here, so the "other" binaries are a copy of the packaged ones laid out as an
//! installation directory: the test shows that the variant's server is the one started from
//! there, not that two versions differ.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The packaged PostgreSQL copied into `dir` as an installation directory: its binaries and
/// libraries copied, its share directory linked where those binaries look for it.
fn postgres_installed_in(dir: &Path) -> PathBuf {
    let packaged = std::fs::read_dir("/usr/lib/postgresql").unwrap().flatten().map(|e| e.file_name()).max().unwrap();
    let version = packaged.to_str().unwrap();
    let prefix = dir.join("usr/lib/postgresql").join(version);
    std::fs::create_dir_all(prefix.parent().unwrap()).unwrap();
    let copied = Command::new("cp").arg("-a").arg(format!("/usr/lib/postgresql/{version}")).arg(&prefix).status();
    assert!(copied.unwrap().success());
    // Debian's binaries find their share directory at ../../../../share/postgresql/N.
    let share = dir.join("usr/share/postgresql");
    std::fs::create_dir_all(&share).unwrap();
    std::os::unix::fs::symlink(format!("/usr/share/postgresql/{version}"), share.join(version)).unwrap();
    prefix
}

fn study(engine: &str, server: &str) -> String {
    format!(
        "name = \"binaries\"\nblocks = {{ min = 2, max = 2 }}\n[target]\nengine = \"{engine}\"\n\
         [workload]\nname = \"tpcb\"\nsize = \"1\"\nduration = \"1s\"\nwarmup = \"0.3s\"\n\
         [[variants]]\nname = \"packaged\"\n\
         [[variants]]\nname = \"other\"\nserver = {server}\nsettings = {{ work_mem = \"8MB\" }}\n"
    )
}

#[test]
fn a_variant_runs_the_server_of_its_own_installation_directory() {
    let _share = share();
    let dir = reachable_tempdir();
    let prefix = postgres_installed_in(dir.path());
    let f = write_study(dir.path(), &study("postgres", &format!("{{ prefix = \"{}\" }}", prefix.display())));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let location = |r: &serde_json::Value| r["target"]["location"].as_str().unwrap().to_string();
    let (other, packaged) = (records(&out, "other"), records(&out, "packaged"));
    assert_eq!((other.len(), packaged.len()), (2, 2), "two blocks");
    // The server the kernel ran, read from /proc by dbvs.
    let from = format!(" from {}/bin/postgres on CPUs ", prefix.display());
    assert!(other.iter().all(|r| location(r).contains(&from)), "{:?}", other.iter().map(location).collect::<Vec<_>>());
    assert!(
        packaged.iter().all(|r| !location(r).contains(" from ")),
        "{:?}",
        packaged.iter().map(location).collect::<Vec<_>>()
    );
    assert!(other.iter().all(|r| r["settings"]["work_mem"] == "8MB"), "{other:?}");
    let r = report(&out);
    let info = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "other").unwrap();
    let differs = &info["info"]["differs_from_baseline"];
    assert_eq!(differs, &serde_json::json!(["server binaries", "engine settings"]), "{info}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(&format!("installed in {}", prefix.display())), "the stacks table: {md}");
    let stacks = md.lines().find(|l| l.starts_with("| packaged |")).unwrap_or_else(|| panic!("{md}"));
    assert!(stacks.starts_with("| packaged | the study's | host directory"), "the baseline's binaries: {stacks}");
}

#[test]
fn binaries_that_are_not_there_are_refused_on_the_variant_s_line() {
    let _share = share();
    let dir = tempfile::tempdir().unwrap();
    let refused = |engine: &str, server: &str, needle: &str| {
        let text = study(engine, server);
        let line = 1 + text.lines().position(|l| l.starts_with("server")).unwrap();
        let o = dbvs(&["study", &write_study(dir.path(), &text)]);
        let e = stderr(&o);
        assert!(!o.status.success() && e.trim_end().lines().count() == 1, "{e}");
        assert!(e.contains(&format!("line {line}: variant 'other': server")) && e.contains(needle), "{e}");
    };
    refused("postgres", "{ version = \"99\" }", "PostgreSQL 99 is not installed");
    refused("postgres", "{ prefix = \"/nonexistent\" }", "/nonexistent has no bin/initdb");
    refused("mariadb", "{ prefix = \"/nonexistent\" }", "has no sbin/ or bin/mariadbd");
    refused("mariadb", "{ version = \"11.4\" }", "name MariaDB 11.4's installation directory");
    refused("sqlite", "{ version = \"16\" }", "apply to the postgres and mariadb engines");
}

/// The packaged MariaDB laid out in `dir` as an installation directory: the server and its
/// installer copied, the rest linked where `--basedir` finds it.
fn mariadb_installed_in(dir: &Path) -> PathBuf {
    let prefix = dir.join("mariadb");
    for sub in ["sbin", "bin", "share", "lib/mysql"] {
        std::fs::create_dir_all(prefix.join(sub)).unwrap();
    }
    std::fs::copy("/usr/sbin/mariadbd", prefix.join("sbin/mariadbd")).unwrap();
    std::fs::copy("/usr/bin/mariadb-install-db", prefix.join("bin/mariadb-install-db")).unwrap();
    let link = |from: &str, to: &str| std::os::unix::fs::symlink(from, prefix.join(to)).unwrap();
    link("/usr/bin/my_print_defaults", "bin/my_print_defaults");
    link("/usr/bin/resolveip", "bin/resolveip");
    link("/usr/share/mysql", "share/mysql");
    link("/usr/lib/mysql/plugin", "lib/mysql/plugin");
    prefix
}

#[test]
fn a_managed_mariadb_runs_the_server_of_an_installation_directory() {
    let _share = share();
    let dir = reachable_tempdir();
    let prefix = mariadb_installed_in(dir.path());
    let json = dir.path().join("run.json");
    let target = format!("managed-mariadb:{}", prefix.display());
    let data = dir.path().join("data");
    ok(&["run", "--target", &target, "--data-dir", data.to_str().unwrap(), "--workload", "tpcb", "--size", "1"]
        .into_iter()
        .chain(["--duration", "1s", "--warmup", "0s", "--no-store", "--json", json.to_str().unwrap()])
        .collect::<Vec<_>>());
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let location = r["target"]["location"].as_str().unwrap();
    assert!(location.contains(&format!(" from {}/sbin/mariadbd in ", prefix.display())), "{location}");
}
