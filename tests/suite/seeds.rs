//! The five seed studies (`studies/seed-00N.toml`), each run end to end in its quick form,
//! checked for the tables and figures its seed reported.

use crate::common::*;
use std::path::Path;

/// Runs `dbvs study|capacity FILE --quick` into a scratch directory; returns the markdown
/// report and what the command printed. The quick forms check the seeds' tables, not their
/// figures, so the studies run beside other tests (`share`); the capacity search takes its
/// turn alone, as its answer (how many instances hold the SLA) is a measurement.
fn quick(command: &str, file: &str, report: &str) -> (String, String) {
    let (md, out, _) = quick_with_json(command, file, report);
    (md, out)
}

/// [`quick`], with the JSON report beside the markdown one.
fn quick_with_json(command: &str, file: &str, report: &str) -> (String, String, serde_json::Value) {
    let dir = reachable_tempdir();
    let out = dir.path().join("out");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("studies").join(file);
    let o = ok(&[command, file.to_str().unwrap(), "--quick", "--out", out.to_str().unwrap()]);
    let md = std::fs::read_to_string(out.join(report)).unwrap();
    let json = std::fs::read_to_string(out.join(report).with_extension("json")).unwrap();
    (md, stdout(&o), serde_json::from_str(&json).unwrap())
}

fn has(md: &str, needles: &[&str]) {
    for n in needles {
        assert!(md.contains(n), "'{n}' missing from:\n{md}");
    }
}

#[test]
fn seed_000_full_disk_encryption_under_ds2_instances() {
    let _share = share();
    let (md, out) = quick("study", "seed-000.toml", "report.md");
    has(&md, &["## Answer", "## Changes vs baseline", "## Per instance (mean over runs)", "## Runs"]);
    // The encryption alone, against the same unencrypted volume, as the seed switched
    // BitLocker on and off on one volume.
    has(&md, &["## Changes vs each variant's control", "| fscrypt | plain on ext4 image |"]);
    // The seed's CPU figure: system CPU busy, with its change in points.
    has(&md, &["system CPU busy", "points"]);
    assert!(out.contains("fscrypt") && out.contains("canary fscrypt"), "{out}");
    // The seed's claim on a layer that uses AES-NI here: with it, and with it masked.
    has(&md, &["| gocryptfs-no-aesni | gocryptfs |"]);
    // The seed's AES table, AES-NI on and off, for disk encryption's mode and gocryptfs's.
    has(&md, &["## AES in memory (seed 000's table): aes-256-xts", "## AES in memory (seed 000's table): aes-256-gcm"]);
    has(&md, &["| 100 KB |", "AES-NI gain"]);
}

#[test]
fn seed_001_slow_storage_against_fast_with_power() {
    let _share = share();
    let (md, _) = quick("study", "seed-001.toml", "report.md");
    has(&md, &["## Answer", "- ssd: ds2 / OPM", "## Disks under the data (window averages)"]);
    // The I/O limit bit: the machine table shows it per variant.
    // The slow storage's limit, and its disk counters against the fast one's.
    has(&md, &["read_iops 2900, write_iops 3000", "## Machine during the runs (window averages)"]);
    assert!(!md.contains(".work-"), "work directories leak into the report:\n{md}");
}

#[test]
fn seed_002_file_encryption_under_file_copies_tpcc_profiles_and_batch() {
    let _share = long_share();
    let (md, _) = quick("study", "seed-002.toml", "report.md");
    has(&md, &["| file test 256MB | write", "| file test 768MB | read"]);
    has(&md, &["tpcc hammerora-default", "tpcc hammerora-query", "tpcc hammerora-update"]);
    // Its FUSE variants run alone, as every variant with a FUSE daemon does by default.
    has(&md, &["tpcc hammerora-update: each variant ran alone in each block, because fewer than two variants can take turns (gocryptfs and plain through FUSE, alone: its FUSE daemon"]);
    has(&md, &["| batch | q1 latency", "| batch | q5 latency", "geometric mean of 5"]);
    has(&md, &["| gocryptfs | plain through FUSE |"]);
}

#[test]
fn seed_003_two_encryptors_on_bignw_with_their_pair() {
    let _share = long_share();
    let (md, _, r) = quick_with_json("study", "seed-003.toml", "report.md");
    has(&md, &["## Variant against variant", "| gocryptfs | tde |"]);
    // The seed's VMs (one core) and its host (the whole machine), each with its pair, and
    // each change also as the seed stated its own: a share of the slower side's time.
    has(&md, &["| gocryptfs-host | tde-host |", "; as a share of the larger: "]);
    has(&md, &["bignw b1 index seek on order date", "bignw b10 full backup", "geometric mean of 3"]);
    has(&md, &["## Mean per variant, +-% at 95% confidence"]);
    // The answer is the suite's mean, as the seed's was the average over its benchmarks.
    has(&md, &["- metric: bignw / geometric mean of 3 (lower is better)"]);
    // The scan covers a physical backup (mariabackup's copy of the InnoDB files): readable
    // without encryption, and as encrypted as the data under TDE, as the seed's was.
    let canary = |v: &str| r["canary"].as_array().unwrap().iter().find(|c| c["variant"] == v).unwrap().clone();
    let plain = canary("plain");
    let leaks: Vec<&str> = plain["leaks"].as_array().unwrap().iter().map(|l| l[0].as_str().unwrap()).collect();
    assert!(leaks.iter().any(|l| l.contains("dbvs-backup-kept-for-scan/") && l.ends_with(".ibd")), "{leaks:?}");
    for v in ["tde", "gocryptfs"] {
        assert_eq!((canary(v)["hits"].as_u64(), canary(v)["ok"].as_bool()), (Some(0), Some(true)), "{v}");
    }
}

#[test]
fn seed_004_the_upgrade_ladder_as_a_capacity_search() {
    // The search is a measured figure, but the test checks the report's shape only.
    let _share = share();
    let (md, out) = quick("capacity", "seed-004.toml", "capacity.md");
    let rungs = ["old: one core, slow disk", "new CPU: whole machine", "new storage: caps lifted"];
    has(&md, &rungs);
    has(&md, &["search: 1 instance at a time, up to 4"]);
    // A ladder: each rung says what it changed from the one before (the CPU, then the disk).
    has(&md, &["| changes from the step before |", "| limits: none |"]);
    // Each instance's companion (the seed's mail VM) is held to its own latency.
    has(&md, &["every companion's p95 <= 100 ms", "| companion p95 ms |"]);
    assert!(out.contains("instances") && out.contains("per instance"), "{out}");
}
