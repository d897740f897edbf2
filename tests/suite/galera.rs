//! A managed MariaDB Galera cluster (`managed-galera:N`), for real: three nodes started,
//! loaded and checked, every node holding the run's work; a node killed mid-run; and a
//! study of plain against TDE with the canary scan over every node's data.

use crate::common::*;
use dbvs::targets::galera::Galera;
use dbvs::targets::{sql, TargetOptions};
use serde_json::Value;
use std::path::Path;

/// Three nodes with small buffer pools: this machine runs all of them.
const SMALL_POOL: &str = "innodb_buffer_pool_size=64M";

/// One at a time: each test runs a whole cluster. Taken before the share, so that a test
/// waiting for the cluster holds no share idle.
static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mariadbd_under(dir: &Path) -> bool {
    let o = std::process::Command::new("pgrep").args(["-f", &format!("mariadbd.*{}", dir.display())]).output().unwrap();
    !o.stdout.is_empty()
}

#[test]
fn a_cluster_runs_checks_and_holds_the_work_on_every_node() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let _share = long_share();
    let dir = reachable_tempdir();
    let data = dir.path().join("cluster");
    let json = dir.path().join("run.json");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--target", "managed-galera:3", "--data-dir", data.to_str().unwrap()];
        args.extend(["--workload", "tpcb", "--size", "1", "--threads", "3", "--server-setting", SMALL_POOL]);
        args.extend(["--json", json.to_str().unwrap(), "--no-store", "--report-interval", "1s"]);
        args.extend(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let o = command().args(run(&["--warmup", "1s", "--duration", "3s", "--keep-db", "kept"])).output().unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(r["target"]["location"].as_str().unwrap().contains("Galera cluster of 3"), "{}", r["target"]);
    let committed = r["totals"]["committed"].as_i64().unwrap();
    assert!(committed > 0);
    assert!(!mariadbd_under(&data), "a node outlived its run");

    // Every node holds every committed transaction of the kept copy.
    let cluster =
        Galera::start(&data, 3, &[("innodb_buffer_pool_size".into(), "64M".into())], &Default::default()).unwrap();
    for port in cluster.ports() {
        let url = format!("mysql://dbvs@127.0.0.1:{port}/kept");
        let target = dbvs::targets::open(&url.parse().unwrap(), TargetOptions::default()).unwrap();
        let history =
            sql::number(&mut target.existing().unwrap().connect().unwrap(), "SELECT count(*) FROM pgbench_history");
        assert_eq!(history.unwrap() as i64, committed, "node on port {port}");
    }
    drop(cluster);

    // A node killed mid-run fails the run with its cause; the rest of the cluster stops.
    let (mut child, lines) = spawn_into_window(&run(&["--warmup", "1s", "--duration", "60s"]));
    let pid: i32 = std::fs::read_to_string(data.join("node2/mariadbd.pid")).unwrap().trim().parse().unwrap();
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(!child.wait().unwrap().success());
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "failed", "{}", rest.join("\n"));
    assert!(!mariadbd_under(&data), "nodes outlived the failed run");

    // The next run starts the cluster again, the killed node rejoining it.
    let o = command().args(run(&["--warmup", "0s", "--duration", "2s"])).output().unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
}

/// A plain-against-TDE study on a 2-node cluster with `settings` (two nodes show that every
/// node's data is scanned, in two thirds of three's start-up time); its report.
fn tde_study(dir: &Path, blocks: usize, settings: &str) -> (std::process::Output, Value) {
    let study = dir.join("study.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"galera-tde\"\nblocks = {{ min = {blocks}, max = {} }}\n\
             [target]\nengine = \"mariadb\"\nnodes = 2\nsettings = {{ innodb_buffer_pool_size = \"64M\"{settings} }}\n\
             [workload]\nname = \"tpcb\"\nsize = \"1\"\nthreads = 3\nduration = \"2s\"\nwarmup = \"1s\"\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"tde\"\nkind = \"mariadb-tde\"\n",
            // A block whose runs stalled on a busy machine does not count: room for one more.
            blocks + 1
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = command().args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]).output().unwrap();
    let report = std::fs::read_to_string(out.join("report.json")).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let report = serde_json::from_str(&report).unwrap();
    (o, report)
}

fn canary_hits(r: &Value, variant: &str) -> u64 {
    r["canary"].as_array().unwrap().iter().find(|c| c["variant"] == variant).unwrap()["hits"].as_u64().unwrap()
}

#[test]
fn tde_on_a_cluster_leaves_the_write_set_caches_plaintext_unless_they_are_in_memory() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let _share = long_share();
    // Galera 26.4 does not encrypt its write-set cache: the replicated rows lie in plaintext
    // in every node's galera.cache, and the scan of every node's data must say so.
    let dir = tempfile::tempdir().unwrap();
    let (o, r) = tde_study(dir.path(), 2, "");
    assert!(!o.status.success());
    assert_eq!(r["status"], "failed");
    let cause = r["cause"].as_str().unwrap();
    for node in 1..=2 {
        assert!(cause.contains(&format!("node{node}/galera.cache")), "{cause}");
    }
    assert!(canary_hits(&r, "plain") > 0);
    assert!(!mariadbd_under(dir.path()), "a node outlived the study");

    // With the caches in memory (a tmpfs), nothing of TDE's nodes is plaintext at rest, and
    // the study gives its verdict.
    let dir = tempfile::tempdir().unwrap();
    let memory = tempfile::tempdir_in("/dev/shm").unwrap();
    std::fs::set_permissions(memory.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let options = format!(", wsrep_provider_options = \"gcache.dir={}\"", memory.path().display());
    let (o, r) = tde_study(dir.path(), 2, &options);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    assert!(canary_hits(&r, "plain") > 0, "the scan must see plaintext in a plain cluster's data");
    assert_eq!(canary_hits(&r, "tde"), 0, "TDE on every node left plaintext at rest on some node");
    assert_eq!(r["comparisons"].as_array().unwrap().len(), 1, "runs: {}", r["runs"]);
    assert!(!mariadbd_under(dir.path()), "a node outlived the study");
    let left: Vec<_> = std::fs::read_dir(memory.path()).unwrap().collect();
    assert!(left.is_empty(), "write-set caches left behind: {left:?}");
}
