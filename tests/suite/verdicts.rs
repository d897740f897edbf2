//! How trustworthy a study's verdicts are, through the real binary: A/A and injected
//! slowdowns with known true ratios, timing of interleaved slices, variant pairs, the
//! comparison of stored studies, and how a block's time is shared among the variants.

use crate::common::*;
use serde_json::Value;

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
    // Widened to 1.5 times, as `assert_covers` does: a 95% interval misses by chance.
    let stretch = (hi - lo) / 4.0;
    assert!(
        lo - stretch - MODEL_BIAS <= truth && truth <= hi + stretch + MODEL_BIAS,
        "CI [{lo}, {hi}] misses the true ratio {truth}"
    );
    // The point estimate is only as close as the noise allows (CPU steal reached 14% here);
    // an inverted or mispaired ratio would be off by far more.
    assert!((ratio - truth).abs() < MODEL_BIAS + (hi - lo).max(0.02), "ratio {ratio} vs true {truth}");
}

/// The comparison's CI, widened to 1.5 times its half-width (so that a true ratio outside
/// it is about a 1-in-300 event, not 1 in 20) and by `slack` (low, high factors of the
/// truth), covers `truth`; and it is as narrow as the blocks' own noise allows.
fn assert_covers(c: &Value, truth: f64, slack: (f64, f64)) {
    let (low, high) = slack;
    let (lo, hi) = (c["estimate"]["ci"][0].as_f64().unwrap(), c["estimate"]["ci"][1].as_f64().unwrap());
    let stretch = (hi - lo) / 4.0;
    assert!(lo - stretch < truth * high && hi + stretch > truth * low, "CI [{lo}, {hi}] vs true {truth}: {c}");
    // Six blocks' signed-rank interval spans about 2.5 per-block sds (log scale): wider than
    // both 1.5x and 4 sds would mean a broken interval, not a noisy day.
    let sd = c["estimate"]["sd_log"].as_f64().unwrap();
    assert!((hi / lo).ln() < 1.5f64.ln().max(4.0 * sd), "a CI this wide would cover anything: {c}");
}

/// How far an estimate may fall from the truth: `floor` on a quiet day, three standard
/// errors of the blocks' own noise on a noisy one.
fn allowance(c: &Value, floor: f64) -> f64 {
    let (sd, n) = (c["estimate"]["sd_log"].as_f64().unwrap(), c["estimate"]["n"].as_f64().unwrap());
    floor.max(3.0 * sd / n.sqrt())
}

/// Block `block`'s shared run in `runs`: its variants in the order the block set them up
/// (as its file is named), its records in that order, and its spec.
fn shared_run(runs: &std::path::Path, block: usize) -> (Vec<String>, Value, Value) {
    let prefix = format!("block{block:02}-");
    let name = files_in(runs)
        .into_iter()
        .find(|f| f.starts_with(&prefix) && f.contains('+') && f.ends_with("-ds2.json"))
        .unwrap_or_else(|| panic!("no shared run of block {block} in {:?}", files_in(runs)));
    let order = name[prefix.len()..name.len() - "-ds2.json".len()].split('+').map(String::from).collect();
    let read = |f: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(runs.join(f)).unwrap()).unwrap() };
    (order, read(&name), read(&name.replace(".json", ".spec.json")))
}

#[test]
fn validate_runs_the_study_again_with_each_variant_alone_and_sets_every_ratio_beside_its_twin() {
    // Whether the two agree is a measurement (5% of honest checks disagree by chance); what
    // must hold is that every ratio is set beside its alone twin with the interval of their
    // difference, and the second study really ran each variant alone.
    let _share = share();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(dir.path(), &busy_waits("twins", 2, "", &[("base", "1ms", ""), ("slower", "2ms", "")]));
    let out = dir.path().join("out");
    // A slice length given on the command line is the one checked.
    let o = ok(&["study", &f, "--validate", "--interleave", "20ms", "--out", out.to_str().unwrap()]);
    let text = stdout(&o);
    let (first, alone) = (report(&out), report(&out.join("alone")));
    assert_eq!(first["design"][0]["slice"], "20ms", "{}", first["design"]);
    let why = alone["design"][0]["alone_because"].as_str().unwrap_or_else(|| panic!("{}", alone["design"]));
    assert!(why.contains("--interleave off"), "{why}");
    // Taking turns, each variant's turn starts are tallied and said; alone there are none.
    let starts = first["turn_starts"][0]["variants"].as_array().unwrap_or_else(|| panic!("{}", first["turn_starts"]));
    let names: Vec<&str> = starts.iter().map(|v| v["variant"].as_str().unwrap()).collect();
    assert_eq!(names, ["base", "slower"], "{starts:?}");
    assert!(starts.iter().all(|v| v["turns"].as_u64().unwrap() > 0 && v["share"].is_f64()), "{starts:?}");
    assert!(alone.get("turn_starts").is_none(), "{}", alone["turn_starts"]);
    assert!(text.contains("  turn starts: ds2: turn starts ("), "{text}");
    let ratios: usize =
        first["measures"].as_array().unwrap().iter().map(|m| m["comparisons"].as_array().unwrap().len()).sum();
    let summary = text
        .lines()
        .find(|l| l.starts_with("validate: ") && l.contains(" ratios agree "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(summary.contains(&format!(" of {ratios} ratios agree ")), "{summary}");
    let md = std::fs::read_to_string(out.join("validate.md")).unwrap();
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("| slower vs base |")).collect();
    assert_eq!(rows.len(), ratios, "{md}");
    assert!(rows.iter().all(|r| r.ends_with("| agree |") || r.ends_with("| disagree |")), "{md}");
    // The override is checked as the study file's key is, and the two flags do not mix.
    let o = dbvs(&["study", &f, "--interleave", "5ms"]);
    assert!(!o.status.success() && stderr(&o).contains("from 10ms to 10m"), "{}", stderr(&o));
    let o = dbvs(&["study", &f, "--validate", "--resume", "1"]);
    assert!(!o.status.success() && stderr(&o).contains("--resume"), "{}", stderr(&o));
    let o = dbvs(&["study", &f, "--validate", "--interleave", "off"]);
    assert!(!o.status.success() && stderr(&o).contains("drop --interleave off"), "{}", stderr(&o));
}

#[test]
fn a_variants_think_time_counts_in_its_rate_when_variants_take_turns_as_alone() {
    // Two users who think 20 ms on average after each order run at most 2 x 60 / 0.020 =
    // 6,000 orders a minute alone, whatever the orders cost. Taking turns, a rate over the
    // orders' time alone (think time left out) came out many times that.
    let _share = share();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(
        dir.path(),
        "name = \"think\"\nblocks = { min = 2, max = 2 }\n\
         [workload]\nname = \"ds2\"\nsize = \"1MB\"\nthreads = 2\nduration = \"2s\"\nwarmup = \"0.3s\"\n\
         think_time = \"20ms\"\n\
         [[variants]]\nname = \"a\"\nkind = \"plain\"\n[[variants]]\nname = \"b\"\nkind = \"plain\"\n",
    );
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    assert!(report(&out)["design"][0]["slice"].is_string(), "the variants took turns");
    for variant in ["a", "b"] {
        for r in records(&out, variant) {
            let opm = r["metrics"]["opm"].as_f64().unwrap();
            // Some 70 think times per user: their mean is within a few percent of 20 ms.
            assert!(opm > 0.0 && opm < 1.3 * 6000.0, "{variant}: {opm} orders a minute");
        }
    }
}

/// The tests that take their turn alone (see `common::turn`): `scripts/test` runs them
/// one by one after the others.
mod alone {
    use super::*;

    #[test]
    fn an_a_a_study_s_interval_covers_no_difference() {
        // The same variant twice, interleaved as the main job runs (separate runs once gave
        // b 4.0% slower in all six blocks here, [0.933, 0.988], a false alarm the noise of
        // separate runs allows). A 2 ms busy-wait per order dominates each order's time. A
        // calibrated 95% interval misses 1 once in 20 A/A studies, so one study cannot check
        // the verdict's error rate (scripts/verdict-checks counts it over many); the interval
        // widened to 1.5 times must cover 1.
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let f = write_study(dir.path(), &busy_waits("aa", 6, "", &[("a", "2ms", ""), ("b", "2ms", "")]));
        let out = dir.path().join("out");
        ok(&["study", &f, "--out", out.to_str().unwrap()]);
        let r = report(&out);
        let c = &r["comparisons"][0];
        assert_covers(c, 1.0, (1.0, 1.0));
        assert!((c["estimate"]["ratio"].as_f64().unwrap() - 1.0).abs() < allowance(c, 0.05), "{c}");
        assert_eq!(r["blocks_completed"], 6);
        // Each block sets the two up in its own random order (a first, or b), so whatever
        // being first brings falls on both.
        let mut orders = std::collections::BTreeSet::new();
        for block in 1..=6 {
            let (order, run, _) = shared_run(&out.join("runs"), block);
            orders.insert(order);
            for side in run.as_array().unwrap() {
                assert_eq!(side["params"]["pacing"]["pin_workers"], true, "worker i of a and b on the same CPU");
            }
        }
        assert_eq!(orders.len(), 2, "every block set a and b up in the same order: {orders:?}");
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
        let shared = |f: &&String| f.contains("base+slower") || f.contains("slower+base");
        assert_eq!(runs.iter().filter(shared).filter(|f| !f.ends_with(".spec.json")).count(), 6, "{runs:?}");
        let (_, records, _) = shared_run(&out.join("runs"), 1);
        assert_eq!(records.as_array().unwrap().len(), 2);
        for rec in records.as_array().unwrap() {
            let elapsed = rec["elapsed_s"].as_f64().unwrap();
            assert!((0.5..1.0).contains(&elapsed), "each variant worked its 0.75 s window: {elapsed}");
        }
        // The engine runs in the workers' threads, so their CPU per order is compared too: the
        // 2 ms more of busy-wait is CPU (less whatever the hypervisor stole mid-spin).
        // Interleaved, the variants share the machine: its CPU busy % is nobody's own.
        assert!(!r["measures"].to_string().contains("system CPU busy %"));
        let cpu = r["measures"].as_array().unwrap().iter().find(|m| m["measure"]["name"] == "in-process CPU per unit");
        let cpu = cpu.unwrap_or_else(|| panic!("no CPU measure in {}", r["measures"]));
        let mean = |i: usize| cpu["summaries"][i][1]["mean"].as_f64().unwrap();
        assert_eq!(cpu["summaries"][0][0], "base");
        // A spin waits wall-clock time: with another busy process on its CPU it gets about half
        // of it, so only the bounds hold on a loaded machine (the verdict below checks the rest).
        assert!((0.0..2.5).contains(&(mean(1) - mean(0))), "CPU per order {} vs {} ms", mean(1), mean(0));
        assert_eq!(cpu["comparisons"][0]["verdict"]["verdict"], "slower", "{cpu}");
        // Each block drew its own slice order.
        let seeds: std::collections::BTreeSet<u64> = runs
            .iter()
            .filter(shared)
            .filter(|f| f.ends_with(".spec.json"))
            .map(|f| {
                let spec: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(out.join("runs").join(f)).unwrap()).unwrap();
                spec["slice_seed"].as_u64().unwrap()
            })
            .collect();
        assert_eq!(seeds.len(), 6, "{seeds:?}");
    }

    #[test]
    fn variants_with_long_units_and_short_ones_are_timed_alike() {
        // A slice ends while the variant's last unit still runs. Timed by its slices, that unit
        // counted for it while the next variant shared the machine: here the ratio came out
        // 5% above the truth (twice). Now the next slice waits for it, and each variant is
        // timed by its workers' time at work: 2-3% below the truth, with 100 ms slices as with
        // 2 s ones, since an order runs a little slower after a 25 ms spin than after a 1 ms one
        // (1.9-3.4% below in eight runs beside CPU load in bursts, 7.3% in one CI run). So the
        // check is tight above, where the old bias was, and below allows 12%: charging each
        // slice's last long unit's time twice (one unit in about four) would still fail it.
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let f = write_study(dir.path(), &busy_waits("long", 6, "", &[("base", "1ms", ""), ("slower", "25ms", "")]));
        let out = dir.path().join("out");
        ok(&["study", &f, "--out", out.to_str().unwrap()]);
        let (ratio, _, _, truth) = ratio_and_truth(&report(&out), 0.024);
        assert!(ratio < truth * 1.015 && ratio > truth * 0.88, "ratio {ratio} vs true {truth}");
    }

    #[test]
    fn extra_uncounted_units_slow_throughput_and_cost_per_unit_by_exactly_their_share() {
        // One unit in three runs uncounted: the same work as the others, so the truth, 1 / 1.5
        // in throughput as in CPU per unit, holds by construction, with no spin to overrun (the
        // verdict checks inject 2% this way). A share given alone ("50%") means exactly this:
        // as a busy-wait of half of each order's time it once cost 80% (issue 40). Half again
        // as much work stays clear of a noisy day's blocks. With CPU load beside them in bursts
        // (two busy processes on and off for 20-600 ms) these short runs' ratios came out up to
        // 3% nearer 1 than the truth in three runs of three, and 3.5% in one CI run (quiet:
        // within 2.5% either side of it), so the slack is 3.5%: issue 40's busy-wait (0.56) or
        // an extra unit counted (1.0) still fails.
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let variants = [("base", "0", ""), ("slower", "50%", "")];
        let f = write_study(dir.path(), &busy_waits("extra", 10, "", &variants));
        let out = dir.path().join("out");
        ok(&["study", &f, "--out", out.to_str().unwrap()]);
        let r = report(&out);
        let truth = 1.0 / 1.5;
        let cpu = r["measures"].as_array().unwrap().iter().find(|m| m["measure"]["name"] == "in-process CPU per unit");
        let cpu = &cpu.unwrap_or_else(|| panic!("no CPU per unit: {}", r["measures"]))["comparisons"][0];
        for (c, truth) in [(&r["comparisons"][0], truth), (cpu, 1.0 / truth)] {
            assert_eq!(c["verdict"]["verdict"], "slower", "{c}");
            assert_covers(c, truth, (0.965, 1.035));
        }
        assert!(r["variants"].to_string().contains("50% more units"), "the report names it: {}", r["variants"]);
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
                assert!((0.5..1.0).contains(&elapsed), "each variant worked its 0.75 s window: {elapsed}");
            }
            for rec in [base, &slower[0]] {
                assert_eq!(rec["params"]["pacing"]["pin_workers"], true, "worker i of both on the same CPU");
            }
            assert_eq!(
                (base["env"]["aes_ni_masked"].as_bool(), slower[0]["env"]["aes_ni_masked"].as_bool()),
                (Some(false), Some(true))
            );
        }
    }

    #[test]
    fn a_study_compares_the_variant_pairs_its_file_names() {
        // seed 003's headline is one encryptor against the other: here 10 ms of busy-wait
        // against 5 ms, both beside a 4 ms baseline.
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let variants = [("base", "4ms", ""), ("mid", "5ms", ""), ("slower", "10ms", "")];
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
        // A geometric mean of block ratios makes the pair's ratio exactly the quotient of the
        // two variants' ratios to the baseline, whatever the machine's noise (a check against
        // the busy-waits' expected ratio failed CI on a day of 16% per-block sd).
        let ratio = |c: &Value| c["estimate"]["ratio"].as_f64().unwrap();
        let to_base = |v: &str| {
            let all = r["measures"][0]["comparisons"].as_array().unwrap();
            ratio(all.iter().find(|c| c["variant"] == v && c["against"].is_null()).unwrap())
        };
        let quotient = to_base("slower") / to_base("mid");
        assert!((ratio(pair) / quotient - 1.0).abs() < 1e-9, "{pair} vs {quotient}");
        // Twice the busy-wait: about 0.55 of mid's throughput, far from "no change".
        assert!(ratio(pair) < 0.8, "{pair}");
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("Variant against variant") && md.contains("| slower | mid |"), "{md}");
        let answer = md.lines().find(|l| l.starts_with("- slower:")).unwrap_or_default();
        assert!(answer.contains("Against mid: "), "{answer}");
        // A pair must name two variants, neither the baseline.
        let bad = write_study(dir.path(), &std::fs::read_to_string(&f).unwrap().replace("\"mid\"]]", "\"base\"]]"));
        let o = dbvs(&["study", &bad]);
        assert!(
            !o.status.success() && stderr(&o).contains("compare:") && stderr(&o).contains("line 4"),
            "{}",
            stderr(&o)
        );
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

    #[test]
    fn a_tighter_target_gets_its_variants_more_of_each_blocks_time_without_moving_any_ratio() {
        // Three variants of the same work: "tight" must reach 0.1%, "loose" the study's 10%.
        // Once the noise is known (six blocks), tight and the baseline get more slices than
        // loose; every variant still does the same work, so no ratio may move.
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let head = "ci_target = 0.1\nci_targets = { tight = 0.001 }\n";
        let variants = [("base", "2ms", ""), ("tight", "2ms", ""), ("loose", "2ms", "")];
        let f = write_study(dir.path(), &busy_waits("shares", 9, head, &variants));
        let out = dir.path().join("out");
        let o = ok(&["study", &f, "--out", out.to_str().unwrap()]);
        assert!(stderr(&o).contains("next block's shares of the measured time"), "{}", stderr(&o));
        // A 1.5 s window holds about one round of 100 ms slices, so one block's times show the
        // shares only roughly; three blocks' show them.
        let mut at_work = [0.0; 3];
        for block in 1..=9 {
            let (order, records, spec) = shared_run(&out.join("runs"), block);
            let shares: Vec<u64> =
                spec["slice_shares"].as_array().map_or(vec![], |a| a.iter().filter_map(Value::as_u64).collect());
            if block <= 6 {
                assert!(shares.is_empty(), "block {block} shares equally: {spec}");
                continue;
            }
            // Each block's places are in the order it set the variants up.
            let at = |name: &str| order.iter().position(|n| n == name).unwrap();
            let (base, tight, loose) = (at("base"), at("tight"), at("loose"));
            assert!(
                shares.len() == 3 && shares[tight] > shares[loose] && shares[base] > shares[loose],
                "block {block}: {order:?} {shares:?}"
            );
            for (t, place) in at_work.iter_mut().zip([base, tight, loose]) {
                *t += records[place]["elapsed_s"].as_f64().unwrap();
            }
        }
        assert!(at_work[1] > 1.3 * at_work[2], "at work in blocks 7-9: {at_work:?}");
        let r = report(&out);
        for c in r["comparisons"].as_array().unwrap() {
            assert_covers(c, 1.0, (1.0, 1.0));
            assert!((c["estimate"]["ratio"].as_f64().unwrap() - 1.0).abs() < allowance(c, 0.03), "{c}");
        }
    }
}
