//! The cgroup "smaller machine" variant through the real binary: limits on the run process
//! (SQLite) and on a managed server's processes (PostgreSQL), the kernel's throttling
//! counters as evidence, clean-up of the groups, and clear errors for bad limits.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn study(dir: &Path, body: &str) -> Value {
    let f = dir.join("s.toml");
    std::fs::write(&f, body).unwrap();
    let out = dir.join("out");
    ok(&["study", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

fn no_groups_left() {
    for c in ["cpu", "cpuset", "memory", "blkio", ""] {
        let dir = Path::new("/sys/fs/cgroup").join(c);
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Groups are named after the study's dbvs process; none may outlive it.
            let owner =
                name.strip_prefix("dbvs-").and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok());
            let alive = owner.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
            assert!(owner.is_none() || alive, "left behind: {}", e.path().display());
        }
    }
}

#[test]
fn bad_limits_are_refused_with_the_fix() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.toml");
    let base =
        "name = \"x\"\n[workload]\nname = \"ds2\"\nsize = \"1MB\"\n[[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
                [[variants]]\nname = \"l\"\nkind = \"limits\"\n";
    for (extra, says) in [
        ("cpus = 0\n", "cpus must be at least 0.01"),
        ("memory = \"lots\"\n", "limits: memory"),
        ("data_path = \"/nonexistent/disk\"\n", "is not a directory"),
        ("cpu = 1\n", "unknown field"),
    ] {
        std::fs::write(&f, format!("{base}{extra}")).unwrap();
        let o = dbvs(&["study", f.to_str().unwrap(), "--out", dir.path().join("o").to_str().unwrap()]);
        let text = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!o.status.success() && text.contains(says), "{extra}: {text}");
        assert!(stderr(&o).contains(" line ") && stderr(&o).trim().lines().count() == 1, "{text}");
    }
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    #[test]
    fn a_cpu_quota_on_sqlite_slows_the_run_and_the_kernel_says_it_throttled() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let r = study(
            dir.path(),
            "name = \"lim\"\nblocks = { min = 2, max = 2 }\n\
             [workload]\nname = \"ds2\"\nsize = \"1MB\"\nduration = \"2s\"\nwarmup = \"0.5s\"\nthreads = 2\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"fifth\"\nkind = \"limits\"\ncpus = 0.2\nmemory = \"1GB\"\n",
        );
        assert_eq!(r["status"], "completed");
        let ratio = r["comparisons"][0]["estimate"]["ratio"].as_f64().unwrap();
        // The kernel's throttling below is the proof; the ratio is only "slower", since whatever
        // else the machine runs takes from the unlimited variant too (0.62 with a build beside it).
        assert!(ratio < 0.9, "a fifth of a core should cut OPM below the unlimited run: {ratio}");
        let l = &r["variants"][1]["limits"];
        assert!(l["cpu_throttled_periods"].as_u64().unwrap() > 0, "{l}");
        assert!(l["memory_peak_mb"].as_f64().unwrap() > 0.0, "{l}");
        assert!(r["variants"][0]["limits"].is_null());
        no_groups_left();
    }

    #[test]
    fn limits_on_postgres_apply_to_the_server_processes() {
        let _turn = turn();
        let dir = reachable_tempdir();
        let r = study(
            dir.path(),
            "name = \"limpg\"\nblocks = { min = 2, max = 2 }\n[target]\nengine = \"postgres\"\n\
             [workload]\nname = \"ds2\"\nsize = \"1MB\"\nduration = \"2s\"\nwarmup = \"0.5s\"\nthreads = 2\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"small\"\nkind = \"limits\"\ncpus = 0.2\n",
        );
        assert_eq!(r["status"], "completed");
        let runs: Vec<Value> = std::fs::read_dir(dir.path().join("out/runs"))
            .unwrap()
            .map(|e| serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap())
            .filter(|v: &Value| !v["limits"].is_null())
            .collect();
        assert_eq!(runs.len(), 2);
        for run in &runs {
            assert_eq!(run["limits"]["applied_to"], "server processes");
            assert!(run["limits"]["usage"]["cpu_throttled_periods"].as_u64().unwrap() > 0, "{}", run["limits"]);
        }
        assert!(r["comparisons"][0]["estimate"]["ratio"].as_f64().unwrap() < 0.8, "{}", r["comparisons"][0]);
        no_groups_left();
    }
}
