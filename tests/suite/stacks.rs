//! Variants as stacks of layers through the real binary: storage layers (ext4 image, tmpfs),
//! encryption layers with keys from commands and files, the controls a study adds, the
//! canary on every layer, the report's stack and control tables, and a run's memory limit
//! pushing reads to storage.

use crate::common::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn study(dir: &Path, body: &str) -> (Value, String) {
    let f = dir.join("s.toml");
    std::fs::write(&f, body).unwrap();
    let out = dir.join("out");
    let o = ok(&["study", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let report = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    (report, format!("{}{}", stdout(&o), stderr(&o)))
}

fn no_mounts_under(dir: &Path) {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let d = dir.to_str().unwrap();
    assert!(!mounts.contains(d), "mounts left under {d}:\n{mounts}");
}

#[test]
fn encrypted_stacks_are_measured_against_controls_that_differ_in_the_encryption_only() {
    let _s = share();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("fs.key");
    std::fs::write(&key, "ab".repeat(64)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let body = format!(
        "name = \"stacks\"\nseed = 3\nblocks = {{ min = 2, max = 2 }}\ninterleave = \"100ms\"\n\
         [workload]\nname = \"ds2\"\nsize = \"1MB\"\nthreads = 1\nduration = \"1s\"\nwarmup = \"0.2s\"\n\
         [[variants]]\nname = \"plain\"\n\
         [[variants]]\nname = \"fscrypt\"\nstorage = {{ on = \"ext4-image\", size = \"128MB\" }}\n\
         encryption = {{ layer = \"fscrypt\", key = {{ file = \"{}\" }} }}\n\
         [[variants]]\nname = \"fscrypt-128\"\nstorage = {{ on = \"ext4-image\", size = \"128MB\" }}\n\
         encryption = {{ layer = \"fscrypt\", key_bits = 128 }}\n\
         [[variants]]\nname = \"gocryptfs on tmpfs\"\nstorage = {{ on = \"tmpfs\", size = \"128MB\" }}\n\
         encryption = {{ layer = \"gocryptfs\", key = {{ command = \"echo a-passphrase\" }} }}\n",
        key.display()
    );
    let (r, out) = study(dir.path(), &body);
    assert_eq!(r["status"], "completed", "{out}");
    let variant = |n: &str| r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == n).unwrap().clone();
    let mut names: Vec<&str> =
        r["variants"].as_array().unwrap().iter().map(|v| v["info"]["name"].as_str().unwrap()).collect();
    names.sort();
    let all =
        ["fscrypt", "fscrypt-128", "gocryptfs on tmpfs", "plain", "plain on ext4 image", "plain on tmpfs through FUSE"];
    assert_eq!(names, all);
    // AES-128 fscrypt needs the kernel's ESSIV template; without it the variant is skipped, saying so.
    let f128 = variant("fscrypt-128");
    assert!(f128["status"] == "ran" || f128["reason"].as_str().unwrap().contains("CONFIG_CRYPTO_ESSIV"), "{f128}");
    assert!(f128["info"]["cipher"].as_str().unwrap().contains("AES-128"), "{f128}");

    // Each encrypted variant against its control, besides the baseline.
    let controls: Vec<(&str, &str)> = r["controls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["variant"].as_str().unwrap(), c["against"].as_str().unwrap()))
        .filter(|(v, _)| *v != "fscrypt-128")
        .collect();
    assert_eq!(controls, [("fscrypt", "plain on ext4 image"), ("gocryptfs on tmpfs", "plain on tmpfs through FUSE")]);
    assert!(out.contains("fscrypt vs its control plain on ext4 image:"), "{out}");
    assert_eq!(variant("fscrypt")["info"]["differs_from_baseline"], serde_json::json!(["storage", "encryption"]));
    assert_eq!(variant("plain on ext4 image")["info"]["differs_from_baseline"], serde_json::json!(["storage"]));

    // The canary: ciphertext at rest on the encrypted layers, plaintext on their controls
    // (read through the ext4 image and the FUSE passthrough's backing directory).
    for c in r["canary"].as_array().unwrap() {
        let hits = c["hits"].as_u64().unwrap();
        match c["encrypted"].as_bool().unwrap() {
            true => assert_eq!(hits, 0, "{c}"),
            false => assert!(hits > 0, "{c}"),
        }
        assert_eq!(c["ok"], true, "{c}");
    }
    assert!(r["canary"].as_array().unwrap().len() >= 5);

    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("Variants as stacks of layers") && md.contains("ext4 image (128MB, loop device) *"), "{md}");
    assert!(md.contains("Changes vs each variant's control"), "{md}");
    // The key file is the user's and stays; nothing is left mounted.
    assert!(key.exists());
    no_mounts_under(dir.path());
}

#[test]
fn without_controls_the_study_warns_what_the_verdict_mixes_in() {
    let _s = share();
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = study(
        dir.path(),
        "name = \"nc\"\ncontrols = false\nblocks = { min = 2, max = 2 }\n\
         [workload]\nname = \"ds2\"\nsize = \"1MB\"\nthreads = 1\nduration = \"1s\"\nwarmup = \"0.2s\"\n\
         [[variants]]\nname = \"plain\"\n\
         [[variants]]\nname = \"fscrypt\"\nkind = \"fscrypt\"\nimage_size = \"128MB\"\n",
    );
    assert_eq!(r["variants"].as_array().unwrap().len(), 2);
    assert!(r["controls"].as_array().unwrap().is_empty());
    assert!(out.contains("warning: variant 'fscrypt' differs from the baseline 'plain' in storage"), "{out}");
}

/// Disk reads (MB/s, all disks) over a run's measured window.
fn read_mb_s(record: &Value) -> f64 {
    let disks = record["telemetry"]["window"]["disks"].as_object().unwrap();
    disks.values().map(|d| d["read_mb_s"].as_f64().unwrap()).sum()
}

/// A server's write-ahead log on a volume of its own, under the same encryption as the data
/// (as seed 000's BitLocker covered the data and log volumes): WAL or redo writes land on the
/// log's device, the canary finds no plaintext on either volume, and its control has the
/// same two volumes in plain.
fn log_on_its_own_volume(engine: &str) {
    let _t = turn();
    let dir = reachable_tempdir();
    let body = format!(
        "name = \"log apart\"\nseed = 5\nblocks = {{ min = 2, max = 2 }}\n\
         [target]\nengine = \"{engine}\"\nsettings = {{ {} }}\n\
         [workload]\nname = \"ds2\"\nsize = \"1MB\"\nthreads = 1\nduration = \"1s\"\nwarmup = \"0.2s\"\n\
         [[variants]]\nname = \"plain\"\n\
         [[variants]]\nname = \"fscrypt\"\nstorage = {{ on = \"ext4-image\", size = \"128MB\" }}\n\
         log_storage = {{ on = \"ext4-image\", size = \"256MB\" }}\nencryption = \"fscrypt\"\n",
        if engine == "mariadb" { "innodb_buffer_pool_size = \"64M\"" } else { "" }
    );
    // (The log's image holds two copies of MariaDB's 96MB redo log: the pristine one and a run's.)
    let (r, out) = study(dir.path(), &body);
    assert_eq!(r["status"], "completed", "{out}");
    let control = "plain on ext4 image, log on ext4 image";
    let variant = |n: &str| r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == n).unwrap().clone();
    assert_eq!(variant(control)["info"]["differs_from_baseline"], serde_json::json!(["storage", "log storage"]));
    for c in r["canary"].as_array().unwrap() {
        let hits = c["hits"].as_u64().unwrap();
        match c["variant"].as_str().unwrap() {
            "fscrypt" => assert_eq!((hits, c["scanned"].as_array().unwrap().len()), (0, 2), "{c}"),
            _ => assert!(hits > 0, "{c}"),
        }
    }
    // The log's loop device is not the data's, and the log was written to it.
    let t = &variant("fscrypt")["telemetry"];
    let loop_of = |volume: &str| {
        let layers = t["layers"].as_array().unwrap();
        let l = layers.iter().find(|l| l["volume"] == volume && l["fs_type"] == "ext4").unwrap();
        l["device"].as_str().unwrap().to_string()
    };
    let (data, log) = (loop_of("data"), loop_of("log"));
    assert!(data.starts_with("loop") && log.starts_with("loop") && data != log, "{t}");
    assert!(t["window"]["disks"][&log]["writes_s"].as_f64().unwrap() > 0.0, "no log writes on {log}: {t}");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains(&format!("{log} (ext4 on")) && md.contains("[log volume]"), "{md}");
    no_mounts_under(dir.path());
}

#[test]
fn file_system_images_are_mounted_as_asked_and_a_refused_option_fails_only_its_variant() {
    let _s = share();
    let dir = reachable_tempdir();
    let image = |fs: &str, options: &str| format!("storage = {{ on = \"{fs}-image\", size = \"512MB\"{options} }}");
    let body = format!(
        "name = \"fs\"\nblocks = {{ min = 2, max = 2 }}\n{SMALL}\n\
         [[variants]]\nname = \"ext4\"\n{}\n\
         [[variants]]\nname = \"xfs\"\n{}\n\
         [[variants]]\nname = \"btrfs\"\n{}\n\
         [[variants]]\nname = \"refused\"\n{}\n",
        image("ext4", ""),
        image("xfs", ", mount_options = \"noatime\""),
        image("btrfs", ", mount_options = \"compress=zstd\", mkfs_options = \"--csum xxhash\""),
        image("xfs", ", mount_options = \"data=journal\""),
    );
    let (r, out) = study(dir.path(), &body);
    assert_eq!(r["status"], "completed", "{out}");
    let variant =
        |name: &str| r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == name).unwrap().clone();
    for (name, shown) in [
        ("xfs", "xfs image (512MB, loop device; noatime)"),
        ("btrfs", "btrfs image (512MB, loop device; mkfs --csum xxhash, compress=zstd)"),
    ] {
        let v = variant(name);
        assert_eq!(v["status"], "ran", "{v}");
        assert_eq!(v["info"]["stack"][0], serde_json::json!(["storage", shown]), "{v}");
        assert_eq!(v["info"]["differs_from_baseline"], serde_json::json!(["storage"]), "{v}");
    }
    // Each image's loop device counts its writes; btrfs names its mounts with anonymous
    // device numbers, so its device comes from the mount's source.
    let written =
        r["measures"].as_array().unwrap().iter().find(|m| m["measure"]["name"] == "storage KB written per unit");
    let compared: Vec<&str> = written
        .map(|m| m["comparisons"].as_array().unwrap().iter().filter_map(|c| c["variant"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(compared, ["xfs", "btrfs"], "{written:?}");
    let refused = variant("refused");
    assert_eq!(refused["status"], "skipped", "{refused}");
    assert!(
        refused["reason"].as_str().unwrap().contains("cannot loop-mount the xfs image with options loop,data=journal"),
        "{refused}"
    );
    no_mounts_under(dir.path());
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    #[test]
    fn postgres_wal_on_its_own_volume() {
        log_on_its_own_volume("postgres");
    }

    #[test]
    fn mariadb_redo_log_on_its_own_volume() {
        log_on_its_own_volume("mariadb");
    }

    #[test]
    fn a_memory_limit_makes_a_database_larger_than_it_read_from_storage() {
        let _t = turn();
        let dir = tempfile::tempdir().unwrap();
        let db = target(dir.path(), "ds2.db");
        ok(&["build", "--target", &db, "--size", "40MB"]);
        let run = |memory: Option<&str>| -> Value {
            let json = dir.path().join("r.json");
            let mut args = vec!["run", "--target", &db, "--size", "40MB", "--threads", "2", "--duration", "4s"];
            args.extend(["--warmup", "2s", "--no-store", "--json", json.to_str().unwrap()]);
            if let Some(m) = memory {
                args.extend(["--memory", m]);
            }
            ok(&args);
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
        };
        let (free, limited) = (run(None), run(Some("24MB")));
        assert_eq!(limited["status"], "completed", "{limited}");
        let (a, b) = (read_mb_s(&free), read_mb_s(&limited));
        assert!(b > 1.0 && b > 10.0 * a, "reads with the limit {b:.2} MB/s vs without {a:.2} MB/s");
        assert!(limited["settle_s"].as_f64().unwrap() >= 0.0);
        // The storage reads per order are a measure under the limit, and the limit bit.
        let measure =
            |r: &Value, name: &str| r["measures"].as_array().unwrap().iter().find(|m| m["name"] == name).cloned();
        let kb = measure(&limited, "storage KB read per unit").expect("a measure under a memory limit");
        assert!(kb["value"].as_f64().unwrap() > 1.0, "{kb}");
        assert!(measure(&free, "storage KB read per unit").is_none());
        // Writes are a measure in cache too: every order commits to the WAL.
        let written = measure(&free, "storage KB written per unit").and_then(|m| m["value"].as_f64());
        assert!(written.is_some_and(|kb| kb > 0.1 && kb < 1000.0), "{written:?} KB written per order");
        assert!(limited["limits"]["usage"]["memory_peak_mb"].as_f64().unwrap() > 0.0, "{}", limited["limits"]);
        // A limit that cannot hold the run itself, and one on a server dbvs does not manage.
        let o = dbvs(&["run", "--target", &db, "--size", "40MB", "--memory", "1MB", "--no-store"]);
        assert!(!o.status.success() && stderr(&o).contains("at least 16MB"), "{}", stderr(&o));
        let o = dbvs(&["run", "--target", "postgres://u@127.0.0.1:1/x", "--memory", "64MB", "--no-store"]);
        assert!(!o.status.success() && stderr(&o).contains("your own server is not limited"), "{}", stderr(&o));
    }

    #[test]
    fn a_managed_servers_reads_under_a_memory_limit_are_measured_per_unit() {
        let _t = turn();
        let dir = reachable_tempdir();
        let (data, json) = (dir.path().join("pg"), dir.path().join("r.json"));
        // The run builds the database first, outside the limit (generating the data takes more
        // memory than measuring), then moves itself and the server into it.
        let mut args =
            vec!["run", "--target", "managed-postgres", "--data-dir", data.to_str().unwrap(), "--size", "24MB"];
        args.extend([
            "--server-setting",
            "shared_buffers=16MB",
            "--threads",
            "2",
            "--duration",
            "3s",
            "--warmup",
            "1s",
        ]);
        args.extend(["--memory", "40MB", "--no-store", "--json", json.to_str().unwrap()]);
        ok(&args);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["status"], "completed", "{r}");
        let measures = r["measures"].as_array().unwrap();
        let kb =
            measures.iter().find(|m| m["name"] == "storage KB read per unit").expect("a measure under a memory limit");
        assert!(kb["value"].as_f64().unwrap() > 1.0, "the server's processes read from storage: {kb}");
    }
}
