//! Upgrade ladders (`ladder = true`): each step takes the step before's keys and changes what
//! it names, is compared with the step before as well as with the first, and the report sets
//! the two side by side.

use crate::common::*;
use serde_json::json;

#[test]
fn each_step_keeps_the_steps_before_and_stands_against_the_one_before_and_the_first() {
    let _share = share();
    let dir = tempfile::tempdir().unwrap();
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"ladder\"\nladder = true\nblocks = {{ min = 2, max = 2 }}\n{SMALL}\n\
             [[variants]]\nname = \"defaults\"\n\
             [[variants]]\nname = \"+ synchronous off\"\nsettings = {{ synchronous = \"off\" }}\n\
             [[variants]]\nname = \"+ tmpfs\"\nstorage = \"tmpfs\"\n"
        ),
    );
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    // The last step still has the setting of the step before it, read back from SQLite.
    let last = records(&out, "+ tmpfs");
    assert!(!last.is_empty() && last.iter().all(|r| r["settings"]["synchronous"] == "0"), "{last:?}");
    let r = report(&out);
    assert_eq!(r["ladder"][0], json!(["+ synchronous off", ["engine settings: synchronous = off"]]), "{}", r["ladder"]);
    assert_eq!(r["ladder"][1][0], "+ tmpfs");
    assert!(r["ladder"][1][1][0].as_str().unwrap().starts_with("storage: tmpfs"), "{}", r["ladder"]);
    let pairs = r["measures"][0]["pairs"].as_array().unwrap();
    assert!(pairs.iter().any(|p| p["variant"] == "+ tmpfs" && p["against"] == "+ synchronous off"), "{pairs:?}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Upgrade ladder from defaults"), "{md}");
    let row = md.lines().find(|l| l.contains("| + tmpfs | storage: tmpfs")).unwrap_or_else(|| panic!("{md}"));
    assert!(!row.contains("| - |"), "both comparisons made: {row}");
}

#[test]
fn a_step_that_changes_nothing_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        format!("name = \"l\"\nladder = true\n{SMALL}\n[[variants]]\nname = \"a\"\n[[variants]]\nname = \"b\"\n");
    let o = dbvs(&["study", &write_study(dir.path(), &text)]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.trim_end().lines().count() == 1, "{e}");
    assert!(e.contains("ladder step 'b' changes nothing from 'a': name what it changes"), "{e}");
}
