//! The reference pages list every study-file key and every command-line flag: each module's
//! tests check its own keys against the page, so a key added without its docs fails a test.

use std::collections::{BTreeMap, BTreeSet};

/// A reference page: each heading's table keys (the backticked first cell of a row, up
/// to its first space: "| `--threads N` |" gives `--threads`).
pub struct Page {
    name: &'static str,
    sections: BTreeMap<String, BTreeSet<String>>,
}

pub const STUDY_FILE: (&str, &str) = ("docs/reference/study-file.md", include_str!("../docs/reference/study-file.md"));
pub const CLI: (&str, &str) = ("docs/reference/cli.md", include_str!("../docs/reference/cli.md"));

impl Page {
    pub fn of((name, text): (&'static str, &'static str)) -> Self {
        let mut sections: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut heading = String::new();
        for line in text.lines() {
            if let Some(h) = line.strip_prefix("## ").or_else(|| line.strip_prefix("### ")) {
                heading = h.trim().to_string();
                sections.entry(heading.clone()).or_default();
            } else if let Some(cell) = line.strip_prefix("| `") {
                let key = cell.split(['`', ' ']).next().unwrap_or_default();
                sections.entry(heading.clone()).or_default().insert(key.to_string());
            }
        }
        Page { name, sections }
    }

    /// Fails naming every key of `keys` that the section headed `heading` does not list.
    pub fn assert_lists(&self, heading: &str, keys: impl IntoIterator<Item = impl AsRef<str>>) {
        let listed = self
            .sections
            .get(heading)
            .unwrap_or_else(|| panic!("{} has no section '## {heading}'; add it with a table of its keys", self.name));
        let missing: Vec<String> =
            keys.into_iter().map(|k| k.as_ref().to_string()).filter(|k| !listed.contains(k)).collect();
        assert!(missing.is_empty(), "{} '## {heading}' does not document {missing:?}: add a row for each", self.name);
    }
}

/// The fields a struct's `Deserialize` takes.
pub fn fields<'de, T: serde::Deserialize<'de>>() -> Vec<&'static str> {
    serde_aux::serde_introspection::serde_introspect::<T>().to_vec()
}
