//! Studies end to end through the real binary: verdict validity, variants on real storage
//! layers, the canary scan, the results store and the reports.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

/// Studies measure time: running two at once on a small machine would make each other's
/// numbers meaningless, so the tests in this file take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn write_study(dir: &Path, body: &str) -> String {
    let p = dir.join("study.toml");
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

fn report(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

const SMALL: &str = r#"
[workload]
name = "ds2"
size = "1MB"
threads = 1
duration = "1.5s"
warmup = "0.3s"
"#;

/// A study of busy-wait variants (`(name, busy-wait per order, extra keys)`, the first the
/// baseline), interleaved in 100 ms slices over `blocks` blocks, with `head` as more
/// top-level keys.
fn busy_waits(name: &str, blocks: usize, head: &str, variants: &[(&str, &str, &str)]) -> String {
    let mut body = format!(
        "name = \"{name}\"\nblocks = {{ min = {blocks}, max = {blocks} }}\ninterleave = \"100ms\"\n{head}{SMALL}\n"
    );
    for (v, wait, extra) in variants {
        body += &format!("[[variants]]\nname = \"{v}\"\nkind = \"delay\"\nper_transaction = \"{wait}\"\n{extra}");
    }
    body
}

fn no_mounts_under(dir: &Path) {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let d = dir.to_str().unwrap();
    assert!(!mounts.contains(d), "mounts left under {d}:\n{mounts}");
}

#[test]
fn an_a_a_study_finds_no_significant_difference() {
    // The same variant twice, interleaved as the main job runs (separate runs once gave
    // b 4.0% slower in all six blocks here, [0.933, 0.988], a false alarm the noise of
    // separate runs allows). A 2 ms busy-wait per order dominates each order's time; what
    // must hold is the verdict and a CI that covers 1.
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(dir.path(), &busy_waits("aa", 6, "", &[("a", "2ms", ""), ("b", "2ms", "")]));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let r = report(&out);
    let c = &r["comparisons"][0];
    assert_eq!(c["verdict"]["verdict"], "no_significant_difference", "{c}");
    let (lo, hi) = (c["estimate"]["ci"][0].as_f64().unwrap(), c["estimate"]["ci"][1].as_f64().unwrap());
    assert!(lo <= 1.0 && 1.0 <= hi, "{c}");
    assert!((c["estimate"]["ratio"].as_f64().unwrap() - 1.0).abs() < 0.05, "{c}");
    assert_eq!(r["blocks_completed"], 6);
}

#[test]
fn an_injected_slowdown_is_detected_with_a_ci_around_the_true_ratio() {
    // Interleaved, as the main job runs; the same study also checks how the slices were run.
    // The truth below assumes an order's own database work costs the same in both variants.
    // On a shared VM it does not quite: after the longer busy-wait it ran 0.1-0.14 ms slower
    // (with or without PAUSE in the spin), which moves the ratio by about -0.012, and by up
    // to -0.024 (0.726 against 0.750) in a run of the whole suite. Busy-waits of 4 and 6 ms
    // dominate the cycle to keep that small, and the checks allow for it. (Timed by slice,
    // the longer unit's overrun used to offset part of it; see the test after these.)
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(dir.path(), &busy_waits("slow", 6, "", &[("base", "4ms", ""), ("slower", "6ms", "")]));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let r = report(&out);
    assert_slower_by_the_busy_wait(&r);
    // One child run per block measured both variants, each over its workers' time at work.
    let runs = files_in(&out.join("runs"));
    let shared: Vec<&String> = runs.iter().filter(|f| f.ends_with("-base+slower-ds2.json")).collect();
    assert_eq!(shared.len(), 6, "{runs:?}");
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(out.join("runs").join(shared[0])).unwrap()).unwrap();
    assert_eq!(records.len(), 2);
    for rec in &records {
        let elapsed = rec["elapsed_s"].as_f64().unwrap();
        assert!((0.5..1.0).contains(&elapsed), "each variant had about half of the 1.5 s window: {elapsed}");
    }
    // The engine runs in the workers' threads, so their CPU per order is compared too: the
    // 2 ms more of busy-wait is CPU (less whatever the hypervisor stole mid-spin).
    // Interleaved, the variants share the machine: its CPU busy % is nobody's own.
    assert!(!r["measures"].to_string().contains("system CPU busy %"));
    let cpu = r["measures"].as_array().unwrap().iter().find(|m| m["measure"]["name"] == "in-process CPU per unit");
    let cpu = cpu.unwrap_or_else(|| panic!("no CPU measure in {}", r["measures"]));
    let mean = |i: usize| cpu["summaries"][i][1]["mean"].as_f64().unwrap();
    assert_eq!(cpu["summaries"][0][0], "base");
    assert!((1.2..2.2).contains(&(mean(1) - mean(0))), "CPU per order {} vs {} ms", mean(1), mean(0));
    assert_eq!(cpu["comparisons"][0]["verdict"]["verdict"], "slower", "{cpu}");
    // Each block drew its own slice order.
    let seeds: std::collections::BTreeSet<u64> = runs
        .iter()
        .filter(|f| f.ends_with("-base+slower-ds2.spec.json"))
        .map(|f| {
            let spec: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("runs").join(f)).unwrap()).unwrap();
            spec["slice_seed"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(seeds.len(), 6, "{seeds:?}");
}

/// The "slower" variant's ratio to "base" with its CI, and the true ratio when the variant
/// adds `extra` seconds of busy-wait per order (one thread: an order cycle of the baseline
/// takes 60 / OPM seconds).
fn ratio_and_truth(r: &Value, extra: f64) -> (f64, f64, f64, f64) {
    let base_opm = r["variants"][0]["summary"]["mean"].as_f64().unwrap();
    let cycle = 60.0 / base_opm;
    let c = &r["comparisons"][0];
    assert_eq!(c["verdict"]["verdict"], "slower", "{c}");
    let e = &c["estimate"];
    let f = |v: &Value| v.as_f64().unwrap();
    (f(&e["ratio"]), f(&e["ci"][0]), f(&e["ci"][1]), cycle / (cycle + extra))
}

/// The study's "slower" variant (2 ms more busy-wait per order than "base") was called
/// slower, with a CI around the true ratio.
fn assert_slower_by_the_busy_wait(r: &Value) {
    let (ratio, lo, hi, truth) = ratio_and_truth(r, 0.002);
    const MODEL_BIAS: f64 = 0.025;
    assert!(lo - MODEL_BIAS <= truth && truth <= hi + MODEL_BIAS, "CI [{lo}, {hi}] misses the true ratio {truth}");
    // The point estimate is only as close as the noise allows (CPU steal reached 14% here);
    // an inverted or mispaired ratio would be off by far more.
    assert!((ratio - truth).abs() < MODEL_BIAS + (hi - lo).max(0.02), "ratio {ratio} vs true {truth}");
}

#[test]
fn variants_with_long_units_and_short_ones_are_timed_alike() {
    // A slice ends while the variant's last unit still runs. Timed by its slices, that unit
    // counted for it while the next variant shared the machine: here the ratio came out
    // 5% above the truth (twice). Now the next slice waits for it, and each variant is
    // timed by its workers' time at work: 2-3% below the truth, with 100 ms slices as with
    // 2 s ones, since an order runs a little slower after a 25 ms spin than after a 1 ms one.
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(dir.path(), &busy_waits("long", 6, "", &[("base", "1ms", ""), ("slower", "25ms", "")]));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let (ratio, _, _, truth) = ratio_and_truth(&report(&out), 0.024);
    assert!(ratio < truth * 1.015 && ratio > truth * 0.93, "ratio {ratio} vs true {truth}");
}

#[test]
fn a_slowdown_given_as_a_share_of_each_orders_time_has_a_known_true_ratio() {
    // Every order of "slower" takes 20% longer, so its throughput is 1 / 1.2 of base's
    // whatever the machine's speed (the verdict checks inject 2% this way). Nothing else
    // dominates an order's time here, so blocks are as noisy as the machine: on CI one block
    // in six once came out the wrong way (per-block sd 9%). Ten blocks and a 20% share keep
    // the verdict clear of that, and the ratio is held to the truth within its own CI.
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(dir.path(), &busy_waits("share", 10, "", &[("base", "0", ""), ("slower", "20%", "")]));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let r = report(&out);
    let c = &r["comparisons"][0];
    assert_eq!(c["verdict"]["verdict"], "slower", "{c}");
    let (lo, hi) = (c["estimate"]["ci"][0].as_f64().unwrap(), c["estimate"]["ci"][1].as_f64().unwrap());
    let truth = 1.0 / 1.2;
    // Orders run a little slower after a spin (see the tests above): a small bias downwards,
    // allowed for on the CI's upper side.
    assert!(lo < truth * 1.01 && hi > truth * 0.97, "CI [{lo}, {hi}] vs true {truth}: {c}");
    assert!(hi - lo < 0.25, "a CI this wide would cover anything: {c}");
    assert!(r["variants"].to_string().contains("20%"), "the report names the delay: {}", r["variants"]);
}

#[test]
fn extra_uncounted_units_slow_throughput_and_cost_per_unit_by_exactly_their_share() {
    // One unit in six runs uncounted: the same work as the others, so no spin's after-effects
    // bias the truth, 1 / 1.2, in throughput as in CPU per unit (the verdict checks inject
    // 2% this way).
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let variants = [("base", "0", ""), ("slower", "20% more units", "")];
    let f = write_study(dir.path(), &busy_waits("extra", 10, "", &variants));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let r = report(&out);
    let truth = 1.0 / 1.2;
    let cpu = r["measures"].as_array().unwrap().iter().find(|m| m["measure"]["name"] == "in-process CPU per unit");
    let cpu = &cpu.unwrap_or_else(|| panic!("no CPU per unit: {}", r["measures"]))["comparisons"][0];
    for (c, truth) in [(&r["comparisons"][0], truth), (cpu, 1.0 / truth)] {
        assert_eq!(c["verdict"]["verdict"], "slower", "{c}");
        let (lo, hi) = (c["estimate"]["ci"][0].as_f64().unwrap(), c["estimate"]["ci"][1].as_f64().unwrap());
        assert!(lo < truth * 1.005 && hi > truth * 0.995, "CI [{lo}, {hi}] vs true {truth}: {c}");
        assert!(hi / lo < 1.3, "a CI this wide would cover anything: {c}");
    }
    assert!(r["variants"].to_string().contains("20% more units"), "the report names it: {}", r["variants"]);
}

#[test]
fn a_variant_that_needs_its_own_process_takes_turns_with_the_others_from_it() {
    // AES-NI masking takes a process of its own: "slower" runs in one, base in another,
    // their slices in one schedule from a common start.
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let variants = [("base", "4ms", ""), ("slower", "6ms", "aesni = false\n")];
    let f = write_study(dir.path(), &busy_waits("turns", 6, "", &variants));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let r = report(&out);
    assert_slower_by_the_busy_wait(&r);
    let runs = files_in(&out.join("runs"));
    for block in 1..=6 {
        let record = |v: &str| -> Value {
            let path = out.join("runs").join(format!("block{block:02}-{v}-ds2.json"));
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{path:?} in {runs:?}")))
                .unwrap()
        };
        let (base, slower) = (&record("base")[0], record("slower"));
        assert_eq!(base["started_at"], slower[0]["started_at"], "the two processes start together");
        for rec in [base, &slower[0]] {
            let elapsed = rec["elapsed_s"].as_f64().unwrap();
            assert!((0.5..1.0).contains(&elapsed), "each variant had about half of the 1.5 s window: {elapsed}");
        }
        assert_eq!(
            (base["env"]["aes_ni_masked"].as_bool(), slower[0]["env"]["aes_ni_masked"].as_bool()),
            (Some(false), Some(true))
        );
    }
}

#[test]
fn a_study_compares_the_variant_pairs_its_file_names() {
    // seed 003's headline is one encryptor against the other: here 6 ms of busy-wait
    // against 5 ms, both beside a 4 ms baseline.
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let variants = [("base", "4ms", ""), ("mid", "5ms", ""), ("slower", "6ms", "")];
    let f = write_study(dir.path(), &busy_waits("pairs", 3, "compare = [[\"slower\", \"mid\"]]\n", &variants));
    let out = dir.path().join("out");
    // Its progress is served live while it runs, and so are its runs' own figures (each
    // run process publishes them for the study to serve), labelled by variant.
    let (port, mut child) = serving(&["study", &f, "--out", out.to_str().unwrap()]);
    let running = scrape_until(port, "variant=\"slower\"", &mut child);
    let rate = running.lines().find(|l| l.starts_with("dbvs_run_units_per_minute{") && l.contains("\"slower\""));
    assert!(rate.is_some_and(|l| l.contains("workload=\"ds2\"")), "{running}");
    assert_eq!(running.matches("# TYPE dbvs_run_units gauge").count(), 1, "{running}");
    let body = scrape_until(port, "dbvs_study_blocks_completed 2", &mut child);
    assert!(child.wait().unwrap().success());
    assert!(body.contains("dbvs_study_ci_half_width_ratio{comparison=\"slower vs mid ds2 / OPM\"}"), "{body}");
    assert!(body.contains("dbvs_study_mean{variant=\"base\",measure=\"ds2 / OPM\"}"), "{body}");
    let r = report(&out);
    let pair = &r["measures"][0]["pairs"][0];
    assert_eq!((pair["variant"].as_str(), pair["against"].as_str()), (Some("slower"), Some("mid")), "{pair}");
    // One thread: cycles of 60 / OPM s; 1 ms more busy-wait is about 1/(cycle of mid) slower.
    let ratio = pair["estimate"]["ratio"].as_f64().unwrap();
    let mid_cycle = 60.0 / r["measures"][0]["summaries"][1][1]["mean"].as_f64().unwrap();
    assert!((ratio - mid_cycle / (mid_cycle + 0.001)).abs() < 0.03, "{ratio} vs cycle {mid_cycle}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Variant against variant") && md.contains("| slower | mid |"), "{md}");
    let answer = md.lines().find(|l| l.starts_with("- slower:")).unwrap_or_default();
    assert!(answer.contains("Against mid: "), "{answer}");
    // A pair must name two variants, neither the baseline.
    let bad = write_study(dir.path(), &std::fs::read_to_string(&f).unwrap().replace("\"mid\"]]", "\"base\"]]"));
    let o = dbvs(&["study", &bad]);
    assert!(!o.status.success() && stderr(&o).contains("compare:") && stderr(&o).contains("line 4"), "{}", stderr(&o));
}

#[test]
fn two_stored_studies_are_compared_ratio_by_ratio_with_the_noise_of_both() {
    // 2 ms more busy-wait, then 12 ms more: the ratio halves and halves again, far beyond two
    // 5-block studies' noise even with one block of three upset (a 3-block study on the CI
    // machine once had a per-block sd of 22%); a study against itself moves by nothing.
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let study = |extra: &str, out: &str| -> String {
        let f = write_study(dir.path(), &busy_waits("gate", 5, "", &[("base", "4ms", ""), ("slower", extra, "")]));
        ok(&["study", &f, "--out", dir.path().join(out).to_str().unwrap()]);
        report(&dir.path().join(out))["study_id"].to_string()
    };
    let (a, b) = (study("6ms", "a"), study("16ms", "b"));
    let o = dbvs(&["compare", "--studies", &a, &b, "--fail-if-moved"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("the two study files differ"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("ds2 / OPM") && l.contains("slower vs base"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("moved") && !row.contains("within noise"), "{row}");
    let o = dbvs(&["compare", "--studies", &a, &a, "--fail-if-moved"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("+0.0% [") && stdout(&o).contains("0 of the ratios moved"), "{}", stdout(&o));
    let o = dbvs(&["compare", "--studies", &a, "999999"]);
    assert!(!o.status.success() && stderr(&o).lines().count() == 1, "{}", stderr(&o));
}

fn r_test(out: &std::path::Path) -> String {
    report(out)["comparisons"][0]["estimate"]["test"].as_str().unwrap_or_default().to_string()
}

#[test]
fn encryption_study_scans_for_plaintext_stores_runs_and_reports() {
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"enc\"\nblocks = {{ min = 2, max = 2 }}\n{SMALL}\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"sqlcipher\"\nkind = \"sqlcipher\"\n\
             [[variants]]\nname = \"sqlcipher-noaesni\"\nkind = \"sqlcipher\"\naesni = false\n\
             [[variants]]\nname = \"gocryptfs\"\nkind = \"gocryptfs\"\n\
             [[variants]]\nname = \"fscrypt\"\nkind = \"fscrypt\"\nimage_size = \"128MB\"\n\
             [[variants]]\nname = \"impossible\"\nkind = \"mariadb-tde\"\n"
        ),
    );
    let out = dir.path().join("out");
    let o = ok(&["study", &f, "--out", out.to_str().unwrap()]);
    assert!(stdout(&o).contains("report:"), "{}", stdout(&o));
    // Two blocks are too few for the signed-rank test: the paired t-test decides.
    assert_eq!(r_test(&out), "paired-t");
    let r = report(&out);
    assert_eq!(r["status"], "completed");
    let canary: Vec<(String, bool, u64)> = r["canary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["variant"].as_str().unwrap().to_string(), c["encrypted"] == true, c["hits"].as_u64().unwrap()))
        .collect();
    // The five, and the controls of gocryptfs and fscrypt the study added.
    assert_eq!(canary.len(), 7, "{canary:?}");
    for (v, encrypted, hits) in &canary {
        if *encrypted {
            assert_eq!(*hits, 0, "{v} leaks plaintext");
        } else {
            assert!(*hits > 0, "the scan must see plaintext in {v}'s plain storage");
        }
    }
    let skipped = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "impossible").unwrap();
    assert_eq!(skipped["status"], "skipped");
    assert!(skipped["reason"].as_str().unwrap().contains("mariadb engine only"), "{skipped}");
    assert_eq!(r["comparisons"].as_array().unwrap().len(), 6);
    assert_eq!(r["controls"].as_array().unwrap().len(), 2);
    // Each variant ran alone, so the machine's CPU busy % is its own and is compared too; a
    // power source none of the runs had is left out rather than reported empty.
    let measure = |name: &str| r["measures"].as_array().unwrap().iter().find(|m| m["measure"]["name"] == name).cloned();
    let cpu = measure("system CPU busy %").unwrap_or_else(|| panic!("{}", r["measures"]));
    assert_eq!(cpu["comparisons"].as_array().unwrap().len(), 6, "{cpu}");
    for (_, s) in cpu["summaries"].as_array().unwrap().iter().map(|p| (&p[0], &p[1])) {
        assert!((1.0..=100.0).contains(&s["mean"].as_f64().unwrap()), "{s}");
    }
    if let Some(power) = measure("power") {
        assert!(!power["summaries"].as_array().unwrap().is_empty(), "{power}");
    }
    for ext in ["html", "md", "csv", "json"] {
        assert!(out.join(format!("report.{ext}")).is_file());
    }
    let csv = std::fs::read_to_string(out.join("report.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 7, "{csv}");
    assert_eq!(r["schema_version"], 1);
    // The samples over time, every run's: the driver's intervals and the machine's.
    for (file, per_run) in [("intervals.csv", 1), ("telemetry.csv", 2)] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        let runs: std::collections::BTreeSet<&str> = text.lines().skip(1).filter_map(|l| l.split(',').next()).collect();
        assert_eq!(runs.len(), 2 * 7, "{file}: {text}");
        assert!(text.lines().count() > 2 * 7 * per_run, "{file}: {text}");
    }
    // Torn down: no mounts, no work directory, no key files.
    no_mounts_under(dir.path());
    let leftovers: Vec<String> = files_in(&out).into_iter().filter(|f| f.starts_with(".work")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // The store has the study, its runs, and renders its report again.
    let id = r["study_id"].as_i64().unwrap().to_string();
    assert!(stdout(&ok(&["results", "list"])).contains("enc"));
    let show = stdout(&ok(&["results", "show", &id]));
    assert!(show.contains("sqlcipher") && show.contains("gocryptfs"), "{show}");
    let md = stdout(&ok(&["report", &id, "--format", "md"]));
    assert!(md.contains("## Verdict") && md.contains("## Plaintext canary scan"), "{md}");
    let runs = &r["runs"];
    let (a, b) = (runs[0]["run_id"].to_string(), runs[1]["run_id"].to_string());
    let cmp = stdout(&ok(&["compare", &a, &b]));
    assert!(cmp.contains("OPM") && cmp.contains("no confidence interval"), "{cmp}");
    // Keys never reach the store or the reports.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!html.contains("sqlcipher.key") || !html.contains("PRAGMA key"));
}

#[test]
fn bad_study_files_get_one_line_with_the_line_number() {
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(
        dir.path(),
        &format!("name = \"x\"\n{SMALL}\nthreds = 2\n[[variants]]\nname = \"a\"\nkind = \"plain\"\n"),
    );
    let o = dbvs(&["study", &f]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("line 10") && err.contains("threds"), "{err}");
    let o = dbvs(&["study", "/nonexistent/study.toml"]);
    assert!(!o.status.success() && stderr(&o).contains("cannot read study file"));
}

#[test]
fn html_report_of_a_multi_workload_study_renders_its_charts_in_chromium() {
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let tpcb = "[[workloads]]\nname = \"tpcb\"\nsize = \"1\"\nthreads = 1\nduration = \"1.5s\"\nwarmup = \"0.3s\"\n";
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"chart\"\nblocks = {{ min = 2, max = 2 }}\n{}\n{tpcb}\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"sqlcipher\"\nkind = \"sqlcipher\"\n",
            SMALL.replace("[workload]", "[[workloads]]")
        ),
    );
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let png = dir.path().join("shot.png");
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| std::process::Command::new(c).arg("--version").output().is_ok())
        .expect("headless Chromium is needed for this test: apt-get install chromium");
    let status = std::process::Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", dir.path().join("profile").display()))
        .arg("--window-size=1200,6000")
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", out.join("report.html").display()))
        .output()
        .unwrap();
    assert!(png.is_file(), "no screenshot: {}", String::from_utf8_lossy(&status.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    // The bar of the first variant is drawn in the palette's blue at 60% over white.
    let blue =
        |p: &[u8]| (p[0] as i32 - 120).abs() < 20 && (p[1] as i32 - 173).abs() < 20 && (p[2] as i32 - 210).abs() < 20;
    let blue_pixels = buf[..info.buffer_size()].chunks(px).filter(|p| blue(p)).count();
    assert!(blue_pixels > 2000, "the chart bars did not render ({blue_pixels} bar pixels)");
    // A bar chart per workload and measure (OPM, TPS, the CPU and the KB written per unit
    // of each), two to a row: at least three rows of bars, apart from each other.
    let row_bytes = info.width as usize * px;
    let bar_rows: Vec<bool> = buf[..info.buffer_size()]
        .chunks(row_bytes)
        .map(|row| row.chunks(px).filter(|p| blue(p)).count() >= 30)
        .collect();
    let mut bands = 0;
    let mut gap = usize::MAX;
    for is_bar in bar_rows {
        match is_bar {
            true if gap > 40 => (bands, gap) = (bands + 1, 0),
            true => gap = 0,
            false => gap = gap.saturating_add(1),
        }
    }
    assert!(bands >= 3, "{bands} rows of bar charts rendered, not one per two measures of two workloads");
    // The forest plot at the top draws the first comparison's whisker and point in full blue.
    let full =
        |p: &[u8]| (p[0] as i32 - 31).abs() < 12 && (p[1] as i32 - 119).abs() < 12 && (p[2] as i32 - 180).abs() < 12;
    let whisker_pixels = buf[..info.buffer_size()].chunks(px).filter(|p| full(p)).count();
    assert!(whisker_pixels > 40, "the forest plot did not render ({whisker_pixels} whisker pixels)");
}

#[test]
fn ctrl_c_stops_a_study_unmounts_and_keeps_finished_runs() {
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"stop\"\nblocks = {{ min = 30, max = 30 }}\n{SMALL}\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"gocryptfs\"\nkind = \"gocryptfs\"\n"
        ),
    );
    let out = dir.path().join("out");
    let child = command()
        .args(["study", &f, "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(9));
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let r = report(&out);
    assert_eq!(r["status"], "interrupted");
    let completed = r["runs"].as_array().unwrap().iter().filter(|x| x["status"] == "completed").count();
    assert!(completed >= 2, "finished runs are kept: {}", r["runs"]);
    no_mounts_under(dir.path());
    assert!(files_in(&out).iter().all(|f| !f.starts_with(".work")), "{:?}", files_in(&out));
    let id = r["study_id"].as_i64().unwrap().to_string();
    assert!(stdout(&ok(&["results", "show", &id])).contains("interrupted"));
}

#[test]
fn a_mariadb_tde_study_encrypts_everything_at_rest() {
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"tde\"\nblocks = {{ min = 2, max = 2 }}\n\
             [target]\nengine = \"mariadb\"\nsettings = {{ innodb_buffer_pool_size = \"64M\" }}\n{SMALL}\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"tde\"\nkind = \"mariadb-tde\"\nbinlog = true\n\
             [[variants]]\nname = \"sqlcipher\"\nkind = \"sqlcipher\"\n"
        ),
    );
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let r = report(&out);
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    let hits =
        |v: &str| r["canary"].as_array().unwrap().iter().find(|c| c["variant"] == v).unwrap()["hits"].as_u64().unwrap();
    assert!(hits("plain") > 0, "the scan must see plaintext in a plain MariaDB data directory");
    assert_eq!(hits("tde"), 0, "MariaDB encryption left plaintext at rest (tables, redo log or binlog)");
    let sqlcipher = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "sqlcipher").unwrap();
    assert_eq!(sqlcipher["status"], "skipped");
    assert!(sqlcipher["reason"].as_str().unwrap().contains("sqlite engine only"));
    assert_eq!(r["comparisons"].as_array().unwrap().len(), 1);
    no_mounts_under(dir.path());
    let mariadbd = std::process::Command::new("pgrep").args(["-f", out.to_str().unwrap()]).output().unwrap();
    assert!(mariadbd.stdout.is_empty(), "a managed server outlived the study");
}

#[test]
fn a_postgres_study_puts_the_data_directory_on_the_encrypted_layer() {
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"pg\"\nblocks = {{ min = 2, max = 2 }}\n[target]\nengine = \"postgres\"\n{SMALL}\n\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"gocryptfs\"\nkind = \"gocryptfs\"\n"
        ),
    );
    let out = dir.path().join("out");
    // gocryptfs 2.3 mounted by root with allow_other now and then refuses a create by the
    // server's user with EPERM (its per-thread user switch; upstream issues #892/#893), and
    // PostgreSQL panics on it. The run then fails with that cause, as it should; this test
    // is about where the data lives, so it tries such a study once more.
    let mut o = dbvs(&["study", &f, "--out", out.to_str().unwrap()]);
    if !o.status.success() && stdout(&o).contains("Operation not permitted") {
        std::fs::remove_dir_all(&out).unwrap();
        o = dbvs(&["study", &f, "--out", out.to_str().unwrap()]);
    }
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let r = report(&out);
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    let canary = r["canary"].as_array().unwrap();
    let hits = |v: &str| canary.iter().find(|c| c["variant"] == v).unwrap()["hits"].as_u64().unwrap();
    assert!(hits("plain") > 0);
    assert_eq!(hits("gocryptfs"), 0, "PostgreSQL's data directory (tables and WAL) leaked through gocryptfs");
    assert!(r["sut"]["engine_versions"]["postgresql"].is_string());
    no_mounts_under(dir.path());
}

#[test]
fn a_seed_002_study_compares_tpcc_profiles_and_batch_statements_on_postgres() {
    let _turn = turn();
    let dir = reachable_tempdir();
    let f = write_study(
        dir.path(),
        "name = \"s2\"\nblocks = { min = 2, max = 2 }\n[target]\nengine = \"postgres\"\n\
         [[workloads]]\nname = \"tpcc\"\nprofile = \"update\"\nthreads = 2\nduration = \"1.5s\"\nwarmup = \"0.5s\"\n\
         [[workloads]]\nname = \"batch\"\nrepeat = 2\n\
         [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
         [[variants]]\nname = \"gocryptfs\"\nkind = \"gocryptfs\"\n",
    );
    let out = dir.path().join("out");
    let o = ok(&["study", &f, "--out", out.to_str().unwrap()]);
    assert!(stdout(&o).contains("batch / q5 latency"), "{}", stdout(&o));
    let r = report(&out);
    assert_eq!(r["status"], "completed", "{}", r["cause"]);
    let measures = r["measures"].as_array().unwrap();
    let keys: Vec<String> =
        measures.iter().map(|m| format!("{} / {}", m["measure"]["workload"], m["measure"]["name"])).collect();
    // TPM and NOPM, the server's CPU and storage writes per transaction and (the runs are
    // alone) the machine's CPU; the five statements and their geometric mean.
    assert_eq!(keys.len(), 11, "{keys:?}");
    assert_eq!(keys[0], "\"tpcc hammerora-update\" / \"TPM\"");
    assert_eq!(keys[3], "\"tpcc hammerora-update\" / \"storage KB written per unit\"");
    assert_eq!(keys[4], "\"tpcc hammerora-update\" / \"system CPU busy %\"");
    assert_eq!(keys[10], "\"batch\" / \"geometric mean of 5\"");
    for m in measures {
        assert_eq!(m["comparisons"][0]["variant"], "gocryptfs", "{m}");
        assert_eq!(m["controls"][0]["against"], "plain through FUSE", "{m}");
        assert_eq!(m["summaries"].as_array().unwrap().len(), 3, "{m}");
    }
    assert_eq!(measures[2]["measure"]["higher_is_better"], false);
    assert!(r["canary"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["canary"]);
    // Two blocks x three variants (gocryptfs's FUSE control added) x two workloads.
    assert_eq!(r["runs"].as_array().unwrap().iter().filter(|x| x["status"] == "completed").count(), 12);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Changes vs baseline") && md.contains("| batch | q3 latency |"), "{md}");
    let csv = std::fs::read_to_string(out.join("report.csv")).unwrap();
    assert!(csv.contains(",gocryptfs,batch,completed,"), "{csv}");
    no_mounts_under(dir.path());
}
