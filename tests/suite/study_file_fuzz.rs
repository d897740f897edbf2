//! The study-file parser under fuzzing: thousands of mutations of real study files (lines
//! dropped, duplicated or swapped, values replaced with hostile ones, bytes flipped). Every
//! input must give a study or one error line naming the file (and, when it cites a line,
//! one that exists), never a panic. `dbvs study` is not run: `StudyFile::load` is the parser.

use crate::common::share;
use dbvs::study::file::StudyFile;
use rand::{Rng, SeedableRng};

const SEEDS: &[&str] = &[
    include_str!("../../studies/encryption-at-rest.toml"),
    include_str!("../../studies/seed-002.toml"),
    include_str!("../../studies/seed-003.toml"),
    include_str!("../../studies/command-pgbench.toml"),
];

const HOSTILE: &[&str] = &[
    "\"\"",
    "0",
    "-1",
    "1e309",
    "\"-10MB\"",
    "\"0s\"",
    "\"99999h\"",
    "100000",
    "true",
    "[]",
    "{}",
    "\"\\u0000\"",
    "\"ds2\"",
    "\"tpcc\"",
    "\"fileio\"",
    "\"nope\"",
    "'''",
    "\"sqlcipher\"",
    "{ command = \"x\" }",
    "nan",
    "\"1MB\"",
    "[[variants]]",
    "[workload]",
    "\"plain\"",
    "18446744073709551616",
];

fn mutate(text: &str, rng: &mut impl Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for _ in 0..rng.random_range(1..4) {
        if lines.is_empty() {
            break;
        }
        let i = rng.random_range(0..lines.len());
        match rng.random_range(0..6) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 => {
                let j = rng.random_range(0..lines.len());
                lines.swap(i, j);
            }
            3 => {
                if let Some((k, _)) = lines[i].split_once('=') {
                    lines[i] = format!("{k}= {}", HOSTILE[rng.random_range(0..HOSTILE.len())]);
                }
            }
            4 => {
                let mut bytes = lines[i].clone().into_bytes();
                if !bytes.is_empty() {
                    let at = rng.random_range(0..bytes.len());
                    bytes[at] = rng.random_range(b' '..=b'~');
                }
                lines[i] = String::from_utf8_lossy(&bytes).into_owned();
            }
            _ => lines.insert(
                i,
                format!(
                    "{} = {}",
                    ["threads", "size", "kind", "name", "budget"][rng.random_range(0..5)],
                    HOSTILE[rng.random_range(0..HOSTILE.len())]
                ),
            ),
        }
    }
    lines.join("\n")
}

#[test]
fn every_mutated_study_file_loads_or_fails_with_one_line() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.toml");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let (mut loaded, mut refused) = (0, 0);
    for case in 0..3000 {
        let text = mutate(SEEDS[case % SEEDS.len()], &mut rng);
        std::fs::write(&path, &text).unwrap();
        let outcome = std::panic::catch_unwind(|| StudyFile::load(&path, false).map(|_| ()));
        let Ok(result) = outcome else { panic!("case {case} panicked on:\n{text}") };
        match result {
            Ok(()) => loaded += 1,
            Err(e) => {
                refused += 1;
                let msg = format!("{e:#}");
                assert!(!msg.contains('\n'), "case {case}: a multi-line error:\n{msg}\non:\n{text}");
                assert!(msg.contains("fuzz.toml"), "case {case}: the error does not name the file: {msg}");
                if let Some(n) = msg.split("line ").nth(1).and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()) {
                    if let Ok(n) = n.parse::<usize>() {
                        assert!(
                            n >= 1 && n <= text.lines().count().max(1),
                            "case {case}: line {n} of {}: {msg}",
                            text.lines().count()
                        );
                    }
                }
            }
        }
    }
    // The mutations must exercise both outcomes, or the test proves little.
    assert!(loaded > 100 && refused > 1000, "loaded {loaded}, refused {refused}");
}

#[test]
fn every_shipped_study_and_capacity_file_loads() {
    let _turn = share();
    let mut files = vec![];
    for dir in ["studies", "studies/checks"] {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "toml") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 8, "{files:?}");
    for path in files {
        // A capacity search's file (seed 004's ladder) is `dbvs capacity`'s, not a study.
        // A seed study's quick form is checked too.
        let seed = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("seed-"));
        for quick in [false, true].into_iter().filter(|q| !q || seed) {
            let loaded = match std::fs::read_to_string(&path).unwrap().contains("\n[sla]") {
                true => dbvs::capacity::CapacityFile::load(&path, quick).map(|_| ()),
                false => StudyFile::load(&path, quick).map(|_| ()),
            };
            if let Err(e) = loaded {
                panic!("{} (quick form: {quick}): {e:#}", path.display());
            }
        }
    }
}

/// A study whose second variant takes its key from a command, the variants written as
/// `[[variants]]` tables (`{variants}` is replaced by the two) or as one inline array.
const KEY_STUDY: &str = "name = \"keys\"\nbudget = \"2m\"\n{array}\n[workload]\nname = \"ds2\"\nsize = \"1MB\"\n\
                         duration = \"2s\"\n{tables}\n";

/// The secret key command as one of TOML's string spellings, the one `pick` chooses where
/// the secret can be written so.
fn toml_string(secret: &str, pick: usize) -> String {
    let basic = |multi: bool| {
        let mut out = String::new();
        for c in secret.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' if multi => out.push('\n'),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        out
    };
    let literal_ok = !secret.contains('\'');
    match pick % 4 {
        1 if literal_ok && !secret.contains('\n') => format!("'{secret}'"),
        2 => format!("\"\"\"\n{}\"\"\"", basic(true)),
        3 if literal_ok => format!("'''{secret}'''"),
        _ => format!("\"{}\"", basic(false)),
    }
}

/// A variant's entries that give it a key command `s`, each spelling as the lines of its
/// `[[variants]]` table or (joined with commas) as its inline table.
fn inline_spellings(s: &str) -> Vec<Vec<String>> {
    let sqlcipher = "kind = \"sqlcipher\"".to_string();
    vec![
        vec![sqlcipher.clone(), format!("key = {{ command = {s} }}")],
        vec![sqlcipher.clone(), format!("key={{\"command\"={s}}}")],
        vec![sqlcipher.clone(), format!("\"key\" = {{ 'command' = {s} }}")],
        vec![sqlcipher.clone(), format!("key.command = {s}")],
        vec![sqlcipher, format!("\"key\" . \"command\" = {s}")],
        vec![format!("encryption = {{ layer = \"sqlcipher\", key = {{ command = {s} }} }}")],
        vec![format!("encryption = {{ layer = 'sqlcipher', \"key\".command = {s} }}")],
        vec!["encryption.layer = \"sqlcipher\"".into(), format!("encryption.key.command = {s}")],
    ]
}

/// Spellings only a `[[variants]]` table has: sub-table headers.
fn header_spellings(s: &str) -> Vec<String> {
    vec![
        format!("kind = \"sqlcipher\"\n[variants.key]\ncommand = {s}"),
        format!("kind = \"sqlcipher\"\n[ variants . \"key\" ] # the key\n'command' = {s} # from the vault"),
        format!("[variants.encryption]\nlayer = \"sqlcipher\"\nkey = {{ command = {s} }}"),
        format!("[variants.encryption]\nlayer = \"sqlcipher\"\n[variants.encryption.key]\n\"command\" = {s}"),
        format!("[variants.encryption]\nlayer = \"sqlcipher\"\nkey.command = {s}"),
    ]
}

/// The study with the key command spelt as `pick` chooses.
fn key_study(s: &str, pick: usize, rng: &mut impl Rng) -> String {
    let inline = inline_spellings(s);
    let headers = header_spellings(s);
    let comment = if rng.random_bool(0.5) { "  # a comment\n" } else { "" };
    let (array, tables) = match pick % (2 * inline.len() + headers.len()) {
        i if i < inline.len() => {
            let entries = inline[i].join(", ");
            (format!("variants = [{{ name = \"plain\" }}, {{ name = \"enc\", {entries} }}]{comment}"), String::new())
        }
        i if i < 2 * inline.len() => (String::new(), inline[i - inline.len()].join(&format!("\n{comment}"))),
        i => (String::new(), headers[i - 2 * inline.len()].clone()),
    };
    let tables = match array.is_empty() {
        true => format!("[[variants]]\nname = \"plain\"\n{comment}[[variants]]\nname = \"enc\"\n{tables}"),
        false => tables,
    };
    KEY_STUDY.replace("{array}", &array).replace("{tables}", &tables)
}

#[test]
fn no_spelling_of_a_key_command_reaches_the_stored_text() {
    let _turn = share();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.toml");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    const NOISE: &[char] = &['"', '\'', '\\', '#', ' ', '=', '{', '}', '[', ']', ',', '.', '\t', '\n', 'é', '$'];
    for case in 0..800 {
        // Letters past `f`: never the run of hex digits a key command may not hold.
        let token: String = (0..16).map(|_| rng.random_range(b'g'..=b'z') as char).collect();
        let noise: String = (0..rng.random_range(0..8)).map(|_| NOISE[rng.random_range(0..NOISE.len())]).collect();
        let secret = format!("vault read -passphrase {token}{noise}");
        let value = toml_string(&secret, rng.random_range(0..4));
        let text = key_study(&value, rng.random_range(0..100), &mut rng);
        std::fs::write(&path, &text).unwrap();
        let (file, stored) = StudyFile::load(&path, false).unwrap_or_else(|e| panic!("case {case}: {e:#}\n{text}"));
        // The loader reads the spelling as the key command...
        let read = serde_json::to_string(&file.variants).unwrap();
        assert!(read.contains(&token), "case {case}: not read as a key command:\n{text}");
        // ...and what is stored holds none of it.
        assert!(!stored.contains(&token), "case {case}: the key command is stored:\n{stored}");
        assert!(stored.contains("(key command, not stored)") && stored.contains("name = \"enc\""), "{stored}");
    }
}
