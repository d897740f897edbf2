//! Telemetry through the real binary: CPU, disks under the data, power from a command
//! meter and perf per watt in a run record, a clear error for a bad power source, and the
//! machine and disk tables of a study report with an encrypted layer's backing device.

use crate::common::*;
use serde_json::Value;

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    #[test]
    fn a_run_serves_its_live_figures_for_prometheus() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let db = target(dir.path(), "t.db");
        let args = ["run", "--target", &db, "--size", "1MB", "--duration", "4s", "--warmup", "1s"];
        let (port, mut child) = serving(&[&args[..], &["--report-interval", "1s", "--no-store"]].concat());
        let body = scrape_until(port, "dbvs_run_measuring{workload=\"ds2\",instance=\"0\"} 1", &mut child);
        assert!(child.wait().unwrap().success());
        assert!(body.starts_with("HTTP/1.1 200 OK") && body.trim_end().ends_with("# EOF"), "{body}");
        let rate =
            body.lines().find(|l| l.starts_with("dbvs_run_units_per_minute{")).unwrap_or_else(|| panic!("{body}"));
        let rate: f64 = rate.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(rate > 100.0, "{body}");
        let o = dbvs(&["run", "--target", &target(dir.path(), "t.db"), "--size", "1MB", "--metrics-addr", "nowhere"]);
        assert!(
            !o.status.success() && stderr(&o).contains("cannot listen on nowhere for --metrics-addr"),
            "{}",
            stderr(&o)
        );
        assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
    }

    #[test]
    fn a_run_records_cpu_disks_and_power_from_a_command_meter() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        ok(&[
            "run",
            "--target",
            &target(dir.path(), "t.db"),
            "--size",
            "1MB",
            "--duration",
            "3s",
            "--warmup",
            "1s",
            "--no-store",
            "--power",
            "cmd:echo 42.5 W",
            "--idle-power",
            "1s",
            "--json",
            json.to_str().unwrap(),
        ]);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let t = &r["telemetry"];
        // One sample a second over idle-less warmup and window (the idle read comes before).
        let n = t["samples"].as_array().unwrap().len();
        assert!((3..=6).contains(&n), "{n} samples");
        let w = &t["window"];
        assert!(w["cpu_busy_pct"].as_f64().unwrap() > 1.0, "{w}");
        assert!(w["dbvs_cpu_pct"].as_f64().unwrap() > 10.0, "{w}");
        assert_eq!(t["server_cpu"].as_str().unwrap(), "embedded: the engine runs inside dbvs (see dbvs CPU)");
        assert!(!t["devices"].as_array().unwrap().is_empty(), "{t}");
        assert!(w["disks"].as_object().unwrap().values().any(|d| d["writes_s"].as_f64().unwrap() > 0.0), "{w}");
        let p = &t["power"];
        assert_eq!((p["idle_w"].as_f64(), p["window_w"].as_f64()), (Some(42.5), Some(42.5)), "{p}");
        let opm = r["metrics"]["opm"].as_f64().unwrap();
        assert!((p["per_watt"].as_f64().unwrap() - opm / 42.5).abs() < 1e-6, "{p}");
        assert_eq!(p["per_watt_unit"], "OPM/W");
        assert!(t["sampler_cpu_pct"].as_f64().unwrap() < 1.0, "{t}");
    }

    #[test]
    fn without_a_sensor_power_is_unavailable_and_a_bad_source_is_one_line() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path(), "t.db");
        let o = ok(&[
            "run",
            "--target",
            &t,
            "--size",
            "1MB",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--no-store",
            "--power",
            "none",
        ]);
        assert!(stdout(&o).contains("power: unavailable"), "{}", stdout(&o));
        for (bad, says) in [("cmd:echo no watts", "must print watts"), ("meter", "cmd:COMMAND"), ("rapl", "RAPL")] {
            let o = dbvs(&["run", "--target", &t, "--size", "1MB", "--duration", "1s", "--no-store", "--power", bad]);
            let e = stderr(&o);
            assert!(!o.status.success() && e.contains(says), "{bad}: {e}");
            assert!(!e.contains("panicked") && e.trim().lines().count() <= 2, "{bad}: {e}");
        }
    }

    /// Runs a study of plain against gocryptfs, DS2 on 1MB in two blocks of short runs, with
    /// `settings` at its top; its report.json and report.md.
    fn plain_and_gocryptfs(settings: &str) -> (Value, String) {
        let dir = tempfile::tempdir().unwrap();
        let study = dir.path().join("s.toml");
        let body = "blocks = { min = 2, max = 2 }\n\
             [workload]\nname = \"ds2\"\nsize = \"1MB\"\nduration = \"1.5s\"\nwarmup = \"0.3s\"\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"gocryptfs\"\nkind = \"gocryptfs\"\n";
        std::fs::write(&study, format!("name = \"tel\"\n{settings}{body}")).unwrap();
        let out = dir.path().join("out");
        ok(&["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        let report = std::fs::read_to_string(out.join("report.json")).unwrap();
        (serde_json::from_str(&report).unwrap(), std::fs::read_to_string(out.join("report.md")).unwrap())
    }

    #[test]
    fn a_study_report_has_machine_and_disk_tables_down_to_the_backing_device() {
        let _turn = turn();
        // Each variant alone: the machine's power and work per watt are then each variant's own
        // (taking turns, they share one machine's watts).
        let (r, md) = plain_and_gocryptfs("power = \"cmd:echo 60\"\nidle_power = \"0.3s\"\ninterleave = \"off\"\n");
        for v in r["variants"].as_array().unwrap() {
            let t = &v["telemetry"];
            assert_eq!(t["runs"], 2, "{t}");
            assert_eq!(t["power"]["window_w"], 60.0, "{t}");
            assert!(!t["window"]["disks"].as_object().unwrap().is_empty(), "{t}");
        }
        let layers = &r["variants"][1]["telemetry"]["layers"];
        assert_eq!(layers[0]["fs_type"], "fuse.gocryptfs", "{layers}");
        assert!(layers[1]["device"].is_string(), "the backing device: {layers}");
        assert!(md.contains("## Machine during the runs") && md.contains("OPM/W"), "{md}");
        assert!(md.contains("under fuse.gocryptfs"), "{md}");
    }

    #[test]
    fn variants_taking_turns_each_report_their_own_storage_layers() {
        let _turn = turn();
        // On the RAM disk model each variant has a disk of its own, so each side's disk table
        // must name its own device, under its own layers.
        // Its slice named, so that gocryptfs takes turns (by default it runs alone).
        let (r, _) =
            plain_and_gocryptfs("interleave = \"10ms\"\ntarget = { disk = { model = \"ram\", size = \"256MB\" } }\n");
        assert!(r["design"][0]["slice"].is_string(), "the variants took turns: {}", r["design"]);
        let t = |i: usize| r["variants"][i]["telemetry"].clone();
        let disks = |i: usize| t(i)["window"]["disks"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(t(0)["layers"][0]["fs_type"], "ext4", "{}", t(0));
        assert_eq!(t(1)["layers"][0]["fs_type"], "fuse.gocryptfs", "{}", t(1));
        assert!(!disks(0).is_empty() && !disks(1).is_empty(), "{} {}", t(0), t(1));
        assert!(disks(0).iter().all(|d| !disks(1).contains(d)), "each its own disk: {:?} {:?}", disks(0), disks(1));
    }
}
