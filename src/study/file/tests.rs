use super::*;
use crate::workloads::Options;

const GOOD: &str = r#"
name = "t"
budget = "2m"
[workload]
name = "ds2"
size = "1MB"
duration = "2s"
pct_newcustomers = 5
[[variants]]
name = "plain"
kind = "plain"
[[variants]]
name = "enc"
kind = "sqlcipher"
"#;

fn load(text: &str) -> Result<StudyFile> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    StudyFile::load(&p, false).map(|(f, _)| f)
}

#[test]
fn a_good_file_loads_with_defaults() {
    let f = load(GOOD).unwrap();
    assert_eq!((f.budget, f.blocks.min, f.ci_target()), (Duration::from_secs(120), 6, 0.005));
    let tight = load(&GOOD.replace("budget = \"2m\"", "budget = \"2m\"\nci_targets = { enc = 0.002 }")).unwrap();
    assert_eq!((tight.targets().of("enc", None), tight.targets().of("other", Some("plain"))), (0.002, 0.005));
    let Options::Ds2(mix) = &f.workloads[0].options else { panic!("{:?}", f.workloads[0].options) };
    assert_eq!((mix.pct_newcustomers, mix.n_line_items), (5, 5));
}

#[test]
fn the_target_is_half_the_verdict_s_threshold_unless_the_file_names_one() {
    let with = |keys: &str| load(&GOOD.replace("budget = \"2m\"", &format!("budget = \"2m\"\n{keys}"))).unwrap();
    assert_eq!(with("verdict = { threshold = 0.02 }").ci_target(), 0.01);
    assert_eq!(with("verdict = { threshold = 0.0 }").ci_target(), 0.005, "significance alone: half the default");
    assert_eq!(with("ci_target = 0.01\nverdict = { threshold = 0.02 }").ci_target(), 0.01);
    assert_eq!(load(GOOD).unwrap().blocks.max, 200);
}

#[test]
fn errors_name_the_line_and_key() {
    let e = load(&GOOD.replace("duration = \"2s\"", "duration = \"2s\"\nthreds = 4")).unwrap_err().to_string();
    assert!(e.contains("line 8") && e.contains("threds"), "{e}");
    let e = load(&GOOD.replace("size = \"1MB\"", "size = \"huge\"")).unwrap_err().to_string();
    assert!(e.contains("line 6") && e.contains("huge"), "{e}");
    let e = load(&GOOD.replace("name = \"enc\"", "name = \"plain\"")).unwrap_err().to_string();
    assert!(e.contains("used twice"), "{e}");
    let e = load(&GOOD.replace("kind = \"sqlcipher\"", "kind = \"rot13\"")).unwrap_err().to_string();
    assert!(e.contains("rot13") && e.contains("line"), "{e}");
    for (from, to, says) in [
        ("budget = \"2m\"", "budget = \"0s\"", "budget must be longer than 0"),
        ("duration = \"2s\"", "duration = \"400d\"", "at most 24h"),
        ("duration = \"2s\"", "duration = \"2s\"\nthreads = 100000", "between 1 and 1024"),
        (
            "budget = \"2m\"",
            "budget = \"2m\"\nci_targets = { plain = 0.005 }",
            "'plain' is not a variant other than the baseline",
        ),
        ("budget = \"2m\"", "budget = \"2m\"\nci_targets = { enc = 5 }", "enc = 5 must be a fraction"),
    ] {
        let e = load(&GOOD.replace(from, to)).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("line"), "{to}: {e}");
    }
    let e = load(&GOOD.replace("budget = \"2m\"", "budget = \"soon\"")).unwrap_err().to_string();
    assert!(e.contains("line 3") && e.contains("soon"), "{e}");
}

#[test]
fn key_commands_are_not_stored_and_inline_keys_are_refused() {
    let with =
        |cmd: &str| GOOD.replace("kind = \"sqlcipher\"", &format!("kind = \"sqlcipher\"\nkey = {{ command = {cmd} }}"));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, with("\"vault kv get -field=key secret/db\"")).unwrap();
    let (f, text) = StudyFile::load(&p, false).unwrap();
    assert_eq!(f.variants.len(), 2);
    assert!(!text.contains("vault") && text.contains("(key command, not stored)"), "{text}");
    let hex = "0123456789abcdef".repeat(4);
    let e = load(&with(&format!("'echo {hex}'"))).unwrap_err().to_string();
    assert!(e.contains("looks like the key itself") && !e.contains(&hex), "{e}");
}

#[test]
fn a_bignw_entry_becomes_one_workload_per_benchmark_and_standalone_ones_load() {
    let text = GOOD.replace(
        "[workload]\nname = \"ds2\"\nsize = \"1MB\"\nduration = \"2s\"\npct_newcustomers = 5\n",
        "[[workloads]]\nname = \"bignw\"\nbenchmarks = [1, 4]\nunit_time = \"2s\"\n\
         [[workloads]]\nname = \"fileio\"\nsize = \"64MB\"\n[[workloads]]\nname = \"cipher\"\ncipher = \"aes-256-gcm\"\n",
    );
    let f = load(&text).unwrap();
    let labels: Vec<String> = f.workloads.iter().map(WorkloadConfig::label).collect();
    assert_eq!(labels.len(), 4, "{labels:?}");
    assert!(labels[0].starts_with("bignw b1") && labels[1].starts_with("bignw b4"), "{labels:?}");
    assert!(f.workloads[0].needs_calibration() && !f.workloads[2].needs_calibration());
    let mut w = f.workloads[0].clone();
    w.calibrate("1=12").unwrap();
    assert!(!w.needs_calibration());
    assert!(!f.workloads[3].kind().unwrap().leaves_data() && f.workloads[2].kind().unwrap().leaves_data());
    let e = load(&text.replace("aes-256-gcm", "rot13")).unwrap_err().to_string();
    assert!(e.contains("rot13") && e.contains("line"), "{e}");
}

#[test]
fn several_workloads_are_labelled_and_checked() {
    let many = GOOD.replace(
        "[workload]\nname = \"ds2\"\nsize = \"1MB\"\nduration = \"2s\"\npct_newcustomers = 5\n",
        "[[workloads]]\nname = \"tpcc\"\nprofile = \"query\"\n[[workloads]]\nname = \"batch\"\nrepeat = 3\n",
    );
    let f = load(&many).unwrap();
    assert_eq!(f.workloads.iter().map(WorkloadConfig::label).collect::<Vec<_>>(), ["tpcc hammerora-query", "batch"]);
    let e = load(&many.replace("profile = \"query\"", "profile = \"fast\"")).unwrap_err().to_string();
    assert!(e.contains("unknown TPC-C profile 'fast'"), "{e}");
    let e = load(&many.replace("name = \"batch\"\nrepeat = 3", "name = \"tpcc\"\nprofile = \"query\"")).unwrap_err();
    assert!(e.to_string().contains("label"), "{e}");
    // An error in the second entry points at the second entry, not at the first's key.
    let two = many.replace("profile = \"query\"", "profile = \"query\"\nthreads = 2\nsize = \"1\"");
    let line_of = |text: &str, l: &str| text.lines().position(|x| x == l).unwrap() + 1;
    let bad = two.replace("repeat = 3", "repeat = 3\nthreads = 0");
    let e = load(&bad).unwrap_err().to_string();
    assert!(e.contains(&format!("line {}:", line_of(&bad, "threads = 0"))), "{e}");
    let bad = two.replace("repeat = 3", "size = \"0\"");
    let e = load(&bad).unwrap_err().to_string();
    assert!(e.contains(&format!("line {}:", line_of(&bad, "size = \"0\""))), "{e}");
    // Another workload's option is a stray key, found on its own line.
    let bad = two.replace("repeat = 3", "repeat = 3\nprofile = \"query\"");
    let e = load(&bad).unwrap_err().to_string();
    let second = bad.lines().enumerate().filter(|(_, l)| *l == "profile = \"query\"").nth(1).unwrap().0 + 1;
    assert!(e.contains(&format!("line {second}:")) && e.contains("unknown field `profile`"), "{e}");
    let e = load(&many.replace("name = \"batch\"", "name = \"tpcd\"")).unwrap_err().to_string();
    assert!(e.contains("unknown variant `tpcd`") && e.contains("fileio"), "{e}");
    let both = format!("{many}\n[workload]\nname = \"ds2\"\n");
    assert!(load(&both).unwrap_err().to_string().contains("not both"));
}

#[test]
fn workloads_that_share_one_cache_state_keep_equal_shares() {
    let with =
        |extra: &str| load(&GOOD.replace("pct_newcustomers = 5", &format!("pct_newcustomers = 5\n{extra}"))).unwrap();
    assert!(with("").workloads[0].shares_by_need());
    assert!(!with("memory = \"64MB\"").workloads[0].shares_by_need());
    assert!(!with("cold = true").workloads[0].shares_by_need());
}

#[test]
fn each_variant_taking_turns_warms_up_and_measures_as_long_as_alone_in_cache_or_under_a_memory_limit() {
    let with =
        |extra: &str| load(&GOOD.replace("pct_newcustomers = 5", &format!("pct_newcustomers = 5\n{extra}"))).unwrap();
    let secs = std::time::Duration::from_secs;
    let limited = with("memory = \"64MB\"\nwarmup = \"1s\"").workloads.remove(0);
    assert!(limited.a_process_per_variant());
    let turns = limited.taking_turns(3);
    assert_eq!((turns.load.warmup(), turns.load.window()), (secs(3), secs(6)));
    let cached = with("warmup = \"1s\"").workloads.remove(0);
    assert!(!cached.a_process_per_variant());
    let turns = cached.taking_turns(3);
    assert_eq!((turns.load.warmup(), turns.load.window()), (secs(3), secs(6)));
}

#[test]
fn a_workload_s_memory_limit_and_a_variant_s_limits_on_one_process_are_refused() {
    let memory = GOOD.replace("pct_newcustomers = 5", "pct_newcustomers = 5\nmemory = \"64MB\"");
    let with = |limits: &str| load(&format!("{memory}limits = {limits}\n"));
    let e = with("{ memory = \"32MB\" }").unwrap_err().to_string();
    assert!(e.contains("the limits.memory of variant 'enc' both limit memory") && e.contains("line"), "{e}");
    // On either hierarchy, SQLite's run nests its memory group in the variant's (v2) or
    // keeps it in a hierarchy of its own (v1).
    let sqlite = with("{ cpus = 1 }").unwrap();
    sqlite.check_memory_beside_limits_on(true).unwrap();
    sqlite.check_memory_beside_limits_on(false).unwrap();
    // A server's limits hold the server alone: on v2 its run cannot share its memory group.
    let server = load(
        &format!("{memory}limits = {{ cpus = 1 }}\n")
            .replace("[workload]", "[target]\nengine = \"postgres\"\n[workload]")
            .replace("sqlcipher", "plain"),
    )
    .unwrap();
    let e = server.check_memory_beside_limits_on(true).unwrap_err().to_string();
    assert!(e.contains("variant 'enc'") && e.contains("cgroup v2") && e.contains("limits.memory"), "{e}");
    server.check_memory_beside_limits_on(false).unwrap();
}

#[test]
fn the_disk_is_the_host_s_a_ram_model_or_a_one_line_error() {
    use crate::run::config::Disk;
    let with = |disk: &str| load(&GOOD.replace("[workload]\n", &format!("[target]\ndisk = {disk}\n[workload]\n")));
    assert_eq!(load(GOOD).unwrap().target.disk, Disk::Host);
    assert_eq!(with("\"ram\"").unwrap().target.disk, Disk::Ram { size: "2GB".into() });
    let sized = with("{ model = \"ram\", size = \"512MB\" }").unwrap().target.disk;
    assert_eq!(sized, Disk::Ram { size: "512MB".into() });
    assert_eq!(sized.ram_bytes_each(2).unwrap(), Some(256 << 20), "each variant gets an even share");
    for (bad, says) in [
        ("\"ssd\"", "no disk model 'ssd': disk is \"host\", \"ram\" or"),
        ("{ model = \"ram\", sise = \"1GB\" }", "disk is \"host\", \"ram\" or { model = \"ram\", size = \"4GB\" }"),
        ("{ model = \"host\", size = \"1GB\" }", "disk \"host\" takes no size"),
        ("{ model = \"ram\", size = \"1MB\" }", "disk size '1MB' is too small for a RAM disk: at least 64MB"),
        ("{ model = \"ram\", size = \"lots\" }", "disk size:"),
        ("{ model = \"ram\", size = \"100MB\" }", "gives each of 2 variants (controls included) a RAM disk of less"),
    ] {
        let e = with(bad).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("line"), "{bad}: {e}");
    }
}

#[test]
fn every_study_file_key_is_in_the_reference() {
    use crate::reference_docs::{fields, Page, STUDY_FILE};
    let page = Page::of(STUDY_FILE);
    // Tables have sections of their own (a missing one fails below).
    let tables = ["target", "workload", "workloads", "variants", "clients", "quick"];
    page.assert_lists("Top level", fields::<StudyFile>().into_iter().filter(|k| !tables.contains(k)));
    page.assert_lists("blocks", fields::<Blocks>());
    page.assert_lists("verdict", fields::<crate::stats::Rules>());
    page.assert_lists("[target]", fields::<TargetConfig>());
    page.assert_lists("[clients]", fields::<crate::remote::ClientsSpec>());
    page.assert_lists("[quick]", Vec::<&str>::new());
    // A workload entry flattens its workload's options in, so its own keys are read from
    // what it writes (every field but the quick form's, which `[quick]` documents).
    let entry: WorkloadConfig = toml::from_str("name = 'tpcb'").unwrap();
    let value = serde_json::to_value(&entry).unwrap();
    page.assert_lists("[workload]", value.as_object().unwrap().keys().chain([&"quick".to_string()]));
}

#[test]
fn long_names_and_names_with_control_characters_are_refused_on_their_line() {
    let long = "x".repeat(crate::sys::names::LONGEST + 1);
    let line_of = |text: &str, l: &str| text.lines().position(|x| x == l).unwrap() + 1;
    for (from, to, says) in [
        ("name = \"t\"", format!("name = \"{long}\""), "the study name is 201 characters long; keep it to 200"),
        ("name = \"enc\"", format!("name = \"{long}\""), "the variant name is 201 characters long"),
        ("name = \"enc\"", "name = \"a\\u001b[2Jb\"".to_string(), "the variant name holds a control character"),
        ("size = \"1MB\"", format!("size = \"1MB\"\nlabel = \"{long}\""), "the workload label is 201 characters"),
    ] {
        let text = GOOD.replace(from, &to);
        let e = load(&text).unwrap_err().to_string();
        let line = line_of(&text, to.lines().last().unwrap());
        assert!(e.contains(&format!("line {line}: {says}")) && !e.contains(&long) && !e.contains('\u{1b}'), "{e}");
    }
    let at_limit = GOOD.replace("name = \"enc\"", &format!("name = \"{}\"", "x".repeat(200)));
    assert!(load(&at_limit).is_ok());
}

#[test]
fn a_misspelt_key_gets_the_key_meant() {
    for (from, to, meant) in [
        ("duration = \"2s\"", "duration = \"2s\"\nthread = 4", "`threads`"),
        ("duration = \"2s\"", "duraton = \"2s\"", "`duration`"),
        ("duration = \"2s\"", "duration = \"2s\"\niteration = 5", "`iterations`"),
        ("name = \"ds2\"", "name = \"tpcb\"\nthraeds = 4", "`threads`"),
        ("pct_newcustomers = 5", "pct_newcustomer = 5", "`pct_newcustomers`"),
        ("budget = \"2m\"", "bugdet = \"2m\"", "`budget`"),
        ("kind = \"sqlcipher\"", "kind = \"sqlcipher\"\nhmca = true", "`hmac`"),
        ("kind = \"sqlcipher\"", "kind = \"sqlcipher\"\nstorge = \"tmpfs\"", "`storage`"),
    ] {
        let e = load(&GOOD.replace(from, to)).unwrap_err().to_string();
        assert!(e.ends_with(&format!("; did you mean {meant}?")) && !e.contains('\n'), "{to}: {e}");
    }
    let e = load(&GOOD.replace("duration = \"2s\"", "duration = \"2s\"\ncolour = 1")).unwrap_err().to_string();
    assert!(e.contains("unknown field `colour`") && !e.contains("did you mean"), "{e}");
    assert!(WorkloadConfig::common_keys().contains(&"threads".to_string()));
}

#[test]
fn a_change_can_also_be_stated_as_a_share_of_the_larger_side_and_nothing_else() {
    assert_eq!(load(GOOD).unwrap().also_as, None);
    let with = |value: &str| load(&format!("also_as = {value}\n{GOOD}"));
    assert_eq!(with("\"share-of-larger\"").unwrap().also_as, Some(super::AlsoAs::ShareOfLarger));
    let e = with("\"percent\"").unwrap_err().to_string();
    assert!(e.contains("share-of-larger") && !e.contains('\n'), "{e}");
}

#[test]
fn an_aes_table_takes_known_sizes_and_a_sane_number_of_runs() {
    let with = |value: &str| load(&format!("aes_table = {value}\n{GOOD}"));
    let t = with("{}").unwrap().aes_table.unwrap();
    assert_eq!((t.sizes().unwrap().len(), t.runs, t.ciphers.len()), (0, 3, 1), "every size that fits, 3 runs, XTS");
    assert_eq!(with("{ sizes = [\"100KB\", \"1 GB\"] }").unwrap().aes_table.unwrap().sizes().unwrap().len(), 2);
    for (bad, says) in [("{ sizes = [\"3MB\"] }", "unknown buffer size '3MB'"), ("{ runs = 0 }", "runs = 0")] {
        let e = with(bad).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("aes_table") && !e.contains('\n'), "{e}");
    }
}
