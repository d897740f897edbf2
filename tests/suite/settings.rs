//! A variant's own engine settings (`settings = { ... }`), per engine: a misspelt name is
//! refused on its line by the engine's own list, and a setting is in force on the engine,
//! read back into every run record, as the variant's one difference from the baseline.

use crate::common::*;

/// A two-variant study on `engine`: the engine's defaults, and `name = value`.
fn study_file(engine: &str, name: &str, value: &str) -> String {
    format!(
        "name = \"settings\"\nblocks = {{ min = 2, max = 2 }}\n[target]\nengine = \"{engine}\"\n{SMALL}\n\
         [[variants]]\nname = \"defaults\"\nkind = \"plain\"\n\
         [[variants]]\nname = \"tuned\"\nkind = \"plain\"\nsettings = {{ {name} = \"{value}\" }}\n"
    )
}

fn a_variant_s_setting_is_in_force_and_a_misspelt_one_is_refused(engine: &str, set: (&str, &str, &str), typo: &str) {
    let _share = share();
    let (name, value, reads_back) = set;
    let dir = reachable_tempdir();
    let text = study_file(engine, typo, value);
    let line = 1 + text.lines().position(|l| l.starts_with("settings")).unwrap();
    let o = dbvs(&["study", &write_study(dir.path(), &text)]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.trim_end().lines().count() == 1, "{e}");
    assert!(e.contains(&format!("line {line}: settings: {typo} is not a")), "{e}");
    assert!(e.trim_end().ends_with(&format!("did you mean {name}?")), "{e}");

    let f = write_study(dir.path(), &study_file(engine, name, value));
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let (tuned, defaults) = (records(&out, "tuned"), records(&out, "defaults"));
    assert_eq!((tuned.len(), defaults.len()), (2, 2), "two blocks");
    assert!(tuned.iter().all(|r| r["settings"][name] == reads_back), "{tuned:?}");
    assert!(defaults.iter().all(|r| r["settings"].is_null()), "the baseline asked for nothing");
    let r = report(&out);
    let tuned = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "tuned").unwrap();
    assert_eq!(tuned["info"]["differs_from_baseline"], serde_json::json!(["engine settings"]), "{tuned}");
    assert_eq!(tuned["settings_in_force"][name], reads_back, "{tuned}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(&format!("{name} = {value} *")), "the stacks table: {md}");
    assert!(md.contains(&format!("| tuned | {name} | {reads_back} |")), "the settings in force: {md}");
}

#[test]
fn sqlite() {
    a_variant_s_setting_is_in_force_and_a_misspelt_one_is_refused("sqlite", ("synchronous", "off", "0"), "synchronus");
}

#[test]
fn postgres() {
    let set = ("synchronous_commit", "off", "off");
    a_variant_s_setting_is_in_force_and_a_misspelt_one_is_refused("postgres", set, "synchronus_commit");
}

#[test]
fn mariadb() {
    let set = ("innodb_flush_log_at_trx_commit", "2", "2");
    a_variant_s_setting_is_in_force_and_a_misspelt_one_is_refused("mariadb", set, "innodb_flush_log_at_trx_comit");
}

#[test]
fn a_pragma_sqlite_does_not_take_fails_the_run_naming_what_it_reads_back() {
    let _share = share();
    let dir = tempfile::tempdir().unwrap();
    let target = format!("sqlite:{}", dir.path().join("d.db").display());
    let run = |pragma: &str| {
        let load = ["--size", "1MB", "--duration", "1s", "--warmup", "0s", "--pragma", pragma];
        dbvs(&[&["run", "--workload", "ds2", "--target", &target][..], &load].concat())
    };
    let o = run("journal_mode=wal2");
    assert!(!o.status.success(), "{}", stdout(&o));
    let text = format!("{}{}", stdout(&o), stderr(&o));
    assert!(text.contains("PRAGMA journal_mode = wal2 is not in force: SQLite reads back delete"), "{text}");
    let o = run("mmap_size=1048576");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run("jornal_mode=wal");
    assert!(!o.status.success() && stderr(&o).contains("did you mean journal_mode?"), "{}", stderr(&o));
}

#[test]
fn postgres_data_checksums_make_the_variant_its_own_data_directory() {
    let set = ("data_checksums", "on", "on");
    a_variant_s_setting_is_in_force_and_a_misspelt_one_is_refused("postgres", set, "data_checksum");
}

#[test]
fn mariadb_page_size_makes_the_variant_its_own_data_directory() {
    let set = ("innodb_page_size", "8k", "8192");
    a_variant_s_setting_is_in_force_and_a_misspelt_one_is_refused("mariadb", set, "innodb_page_sise");
}

#[test]
fn a_value_the_server_refuses_skips_its_variant_with_the_server_s_words_and_the_others_run() {
    let _share = share();
    let dir = reachable_tempdir();
    let body = format!(
        "{}[[variants]]\nname = \"broken\"\nkind = \"plain\"\nsettings = {{ synchronous_commit = \"maybe\" }}\n",
        study_file("postgres", "synchronous_commit", "off")
    );
    let out = dir.path().join("out");
    ok(&["study", &write_study(dir.path(), &body), "--out", out.to_str().unwrap()]);
    let r = report(&out);
    let broken = r["variants"].as_array().unwrap().iter().find(|v| v["info"]["name"] == "broken").unwrap();
    assert_eq!(broken["status"], "skipped", "{broken}");
    let why = broken["reason"].as_str().unwrap();
    assert!(why.contains("invalid value for parameter \"synchronous_commit\": \"maybe\""), "{why}");
    assert_eq!(records(&out, "tuned").len(), 2, "the others ran");
}
