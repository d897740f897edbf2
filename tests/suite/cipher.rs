//! `dbvs cipher` against the machine: sane next to `openssl speed`, and AES-NI masking
//! measurably slower where the CPU has AES-NI.

use crate::common::*;
use serde_json::Value;

fn mean(r: &Value, aesni: bool) -> f64 {
    let s = r["series"].as_array().unwrap().iter().find(|s| s["aesni"] == aesni).unwrap();
    let pts = s["points"].as_array().unwrap();
    pts.iter().map(|p| p["mean_mbs"].as_f64().unwrap()).sum::<f64>() / pts.len() as f64
}

#[test]
fn bad_sizes_and_threads_get_one_line() {
    let _turn = share();
    let o = dbvs(&["cipher", "--sizes", "3MB"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown buffer size '3MB'") && stderr(&o).lines().count() == 1, "{}", stderr(&o));
    let o = dbvs(&["cipher", "--threads", "0", "--sizes", "100KB"]);
    assert!(stderr(&o).contains("--threads takes a number"), "{}", stderr(&o));
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    #[test]
    fn cipher_table_is_sane_next_to_openssl_speed_and_aes_ni_matters() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let (json, html) = (dir.path().join("c.json"), dir.path().join("c.html"));
        let o = ok(&[
            "cipher",
            "--sizes",
            "100KB,1MB",
            "--runs",
            "2",
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        assert!(stdout(&o).contains("AES-NI gain") && stdout(&o).contains("average"), "{}", stdout(&o));
        // One thread per core by default, as TrueCrypt's table; the medians and each run's table.
        let cores = std::thread::available_parallelism().unwrap().get();
        assert!(stdout(&o).contains(&format!("; {cores} thread(s); median of 2 runs")), "{}", stdout(&o));
        for title in ["aes-256-xts, median of 2 run(s)", "aes-256-xts, run 1", "aes-256-xts, run 2"] {
            assert!(stdout(&o).contains(title), "{title}: {}", stdout(&o));
        }
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["series"].as_array().unwrap().len(), 2);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("<svg") && page.contains("aes-256-xts"));

        // `openssl speed` on 16 KB blocks, in 1000s of bytes per second.
        let speed = std::process::Command::new("openssl")
            .args(["speed", "-evp", "aes-256-xts", "-elapsed", "-seconds", "1", "-bytes", "16384"])
            .output()
            .expect("openssl is installed");
        let text = String::from_utf8_lossy(&speed.stdout);
        let line = text.lines().rev().find(|l| l.to_ascii_uppercase().starts_with("AES-256-XTS")).expect(&text);
        let kbs: f64 = line.split_whitespace().last().unwrap().trim_end_matches('k').parse().unwrap();
        let ours = r["series"][0]["points"][1]["encrypt_mbs"].as_f64().unwrap();
        let ratio = ours / (kbs / 1000.0);
        assert!((0.25..4.0).contains(&ratio), "dbvs {ours} MB/s vs openssl speed {} MB/s", kbs / 1000.0);

        let host_has_aesni = std::fs::read_to_string("/proc/cpuinfo").unwrap().split_whitespace().any(|w| w == "aes");
        if host_has_aesni {
            let (on, off) = (mean(&r, true), mean(&r, false));
            assert!(on > 2.0 * off, "masking AES-NI should cost more than half: on {on}, off {off}");
        }
    }

    #[test]
    fn a_study_measures_what_masking_aes_ni_costs_the_cipher() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.toml");
        std::fs::write(
            &f,
            "name = \"aesni\"\nblocks = { min = 2, max = 2 }\n\
             [workload]\nname = \"cipher\"\ncipher = \"aes-256-gcm\"\nsize = \"1MB\"\nrepeat = 1\n\
             [[variants]]\nname = \"aesni\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"no-aesni\"\nkind = \"plain\"\naesni = false\n",
        )
        .unwrap();
        let out = dir.path().join("out");
        ok(&["study", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(r["status"], "completed", "{}", r["cause"]);
        assert_eq!(r["measures"][0]["measure"]["name"], "mean MB/s");
        assert!(r["canary"].as_array().unwrap().is_empty(), "nothing at rest to scan");
        let ratio = r["measures"][0]["comparisons"][0]["estimate"]["ratio"].as_f64().unwrap();
        let host_has_aesni = std::fs::read_to_string("/proc/cpuinfo").unwrap().split_whitespace().any(|w| w == "aes");
        if host_has_aesni {
            assert!(ratio < 0.5, "masked AES-NI should more than halve GCM throughput: ratio {ratio}");
        }
        let bad = std::fs::read_to_string(&f).unwrap().replace("aes-256-gcm", "rot13");
        std::fs::write(&f, bad).unwrap();
        let o = dbvs(&["study", f.to_str().unwrap()]);
        let e = stderr(&o);
        assert!(e.contains("unknown variant `rot13`") && e.contains("aes-256-xts") && e.contains("line"), "{e}");
    }
}
