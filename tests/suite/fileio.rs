//! The file copy test on real storage: a plain directory, and in a study on gocryptfs and
//! fscrypt, where the file must not be readable at rest.

use crate::common::*;
use serde_json::Value;

#[test]
fn fileio_times_copies_onto_the_storage_and_back_and_cleans_up() {
    let _share = share();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let data = dir.path().join("data");
    let plain = dir.path().join("plain");
    let o = ok(&[
        "fileio",
        "--dir",
        data.to_str().unwrap(),
        "--from",
        plain.to_str().unwrap(),
        "--size",
        "16MB",
        "--runs",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(stdout(&o).contains("copy onto") && stdout(&o).contains("copy back to"), "{}", stdout(&o));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed");
    assert_eq!(r["metrics"]["runs"].as_array().unwrap().len(), 2);
    assert!(r["metrics"]["write_s"].as_f64().unwrap() > 0.0 && r["metrics"]["read_mbs"].as_f64().unwrap() > 0.0);
    assert_eq!(r["params"]["from"], plain.to_str().unwrap());
    assert!(files_in(&data).is_empty(), "the test file is removed");
    assert!(files_in(&plain).is_empty(), "the source and the copy back are removed");

    ok(&["fileio", "--dir", data.to_str().unwrap(), "--size", "16MB", "--runs", "1", "--keep"]);
    let bytes = std::fs::read(data.join("dbvs-fileio.bin")).unwrap();
    assert_eq!(bytes.len(), 16 << 20);
    assert!(bytes.starts_with(dbvs::workloads::CANARY.as_bytes()));

    let o = dbvs(&["fileio", "--dir", data.to_str().unwrap(), "--size", "10"]);
    assert!(stderr(&o).contains("at least 1MB"), "{}", stderr(&o));
    let o = dbvs(&["fileio", "--dir", data.to_str().unwrap(), "--size", "100000GB"]);
    assert!(stderr(&o).contains("choose a smaller size"), "{}", stderr(&o));
}

#[test]
fn a_fileio_study_compares_encrypted_storage_and_finds_no_plaintext() {
    let _share = share();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.toml");
    std::fs::write(
        &f,
        "name = \"files\"\nblocks = { min = 2, max = 2 }\n\
         [workload]\nname = \"fileio\"\nsize = \"32MB\"\nrepeat = 2\n\
         [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
         [[variants]]\nname = \"gocryptfs\"\nkind = \"gocryptfs\"\n\
         [[variants]]\nname = \"fscrypt\"\nkind = \"fscrypt\"\nimage_size = \"256MB\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    ok(&["study", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    let names: Vec<&str> =
        r["measures"].as_array().unwrap().iter().map(|m| m["measure"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["write time", "read time"]);
    for m in r["measures"].as_array().unwrap() {
        // gocryptfs, fscrypt and their controls (a FUSE passthrough, plain on an ext4 image)
        // against plain; the two encrypted ones against their controls too.
        assert_eq!(m["comparisons"].as_array().unwrap().len(), 4, "{m}");
        assert_eq!(m["controls"].as_array().unwrap().len(), 2, "{m}");
        assert_eq!(m["measure"]["higher_is_better"], false);
    }
    let canary = r["canary"].as_array().unwrap();
    assert_eq!(canary.len(), 5);
    assert!(canary.iter().all(|c| c["ok"] == true), "{canary:?}");
    assert!(canary.iter().find(|c| c["variant"] == "plain").unwrap()["hits"].as_u64().unwrap() >= 4);
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(dir.path().to_str().unwrap()), "{mounts}");
}
