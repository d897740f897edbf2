//! Upgrade ladders (`ladder = true`), as seed 004 climbed one: old server, then a faster CPU,
//! then SSDs, then the network. The variants are the steps, in order; each takes the previous
//! step's keys and changes what it names, so a step is written as its one change. Each step
//! is compared with the one before it (what that change did) as well as with the first (how
//! far the ladder has come), and the report sets them side by side.

use super::file::StudyFile;
use super::text::Places;
use crate::variants::VariantConfig;
use anyhow::{bail, Context, Result};

/// Keys a step does not take from the one before it: its own name, and the control it
/// names (the control of the step before is that step's, not this one's).
const OWN: [&str; 2] = ["name", "control"];

/// Rewrites `file`'s variants as the ladder's cumulative steps, and compares each step with
/// the one before it. `text` is the study file, whose `[[variants]]` tables the steps read.
pub(super) fn climb(file: &mut StudyFile, text: &str, places: &Places) -> Result<()> {
    let steps = steps(text, "variants", |i| places.line(places.variants.get(i), "name"))?;
    file.steps = steps.iter().map(|s| s.name.clone()).collect();
    for pair in file.steps.windows(2).skip(1) {
        let wanted = (pair[1].clone(), pair[0].clone());
        if !file.compare.contains(&wanted) {
            file.compare.push(wanted);
        }
    }
    file.variants = steps;
    Ok(())
}

/// The tables of the array `key` in `text` (`[[variants]]`, a capacity file's
/// `[[configurations]]`) as cumulative steps: each takes the keys of the one before and
/// must change something. `at(i)` says where entry `i` stands, for an error.
pub fn steps(text: &str, key: &str, at: impl Fn(usize) -> String) -> Result<Vec<VariantConfig>> {
    let raw: toml::Table = toml::from_str(text)?;
    let entries = raw.get(key).and_then(toml::Value::as_array).cloned().unwrap_or_default();
    let mut inherited = toml::Table::new();
    let mut steps: Vec<VariantConfig> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let entry = entry.as_table().with_context(|| format!("each [[{key}]] entry is a table"))?;
        inherited.retain(|k, _| !OWN.contains(&k));
        for (key, value) in entry {
            match (key.as_str(), inherited.get_mut(key), value) {
                // A step's settings add to the step before's (each setting is one change).
                ("settings", Some(toml::Value::Table(before)), toml::Value::Table(more)) => before.extend(more.clone()),
                _ => drop(inherited.insert(key.clone(), value.clone())),
            }
        }
        let step: VariantConfig = toml::Value::Table(inherited.clone()).try_into().map_err(|e| {
            anyhow::anyhow!("{}ladder step {}: with the keys of the steps before it, {e}", at(i), i + 1)
        })?;
        if let Some(before) = steps.last().filter(|b| step.differences(b).is_empty()) {
            bail!("{}ladder step '{}' changes nothing from '{}': name what it changes", at(i), step.name, before.name);
        }
        steps.push(step);
    }
    Ok(steps)
}

/// What each step after the first changes from the one before it: the layers, each with
/// the step's own value.
pub fn changes(steps: &[&VariantConfig]) -> Vec<(String, Vec<String>)> {
    let changed = |before: &VariantConfig, step: &VariantConfig| -> Vec<String> {
        let layers = step.layers();
        let shown =
            |layer: &str| layers.iter().find(|(l, _)| *l == layer).map_or("the study's".into(), |(_, s)| s.clone());
        step.differences(before).into_iter().map(|layer| format!("{layer}: {}", shown(layer))).collect()
    };
    steps.windows(2).map(|p| (p[1].name.clone(), changed(p[0], p[1]))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(variants: &str) -> Result<StudyFile> {
        let text = format!("name = \"l\"\nladder = true\n[workload]\nname = \"ds2\"\nsize = \"1MB\"\n{variants}");
        StudyFile::parse("ladder.toml", &text)
    }

    #[test]
    fn each_step_takes_the_keys_before_it_and_is_compared_with_the_one_before() {
        let f = study(
            "[[variants]]\nname = \"old\"\nlimits = { cpus = 1 }\nsettings = { synchronous = \"full\" }\n\
             [[variants]]\nname = \"+ tmpfs\"\nstorage = \"tmpfs\"\n\
             [[variants]]\nname = \"+ normal sync\"\nsettings = { cache_size = \"-4000\" }\n\
             [[variants]]\nname = \"+ whole machine\"\nlimits = {}\n",
        )
        .unwrap();
        let names: Vec<&str> = f.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["old", "+ tmpfs", "+ normal sync", "+ whole machine"]);
        assert_eq!(f.steps, names);
        let last = &f.variants[3];
        assert!(matches!(last.storage, crate::variants::Storage::Tmpfs { .. }), "inherited: {:?}", last.storage);
        assert_eq!(last.settings.len(), 2, "settings add up: {:?}", last.settings);
        assert!(f.variants[2].limits.is_some() && last.limits.is_none(), "lifted by limits = {{}}");
        let pairs: Vec<(&str, &str)> = f.compare.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(pairs, [("+ normal sync", "+ tmpfs"), ("+ whole machine", "+ normal sync")]);
        let steps: Vec<&VariantConfig> = f.variants.iter().collect();
        let changes = changes(&steps);
        assert_eq!(changes[0], ("+ tmpfs".to_string(), vec![format!("storage: {}", last.storage.describe())]));
        assert_eq!(changes[2].1, vec!["limits: none".to_string()]);
    }

    #[test]
    fn a_step_that_changes_nothing_is_refused() {
        let e = study("[[variants]]\nname = \"a\"\n[[variants]]\nname = \"b\"\n").unwrap_err().to_string();
        assert!(e.contains("ladder step 'b' changes nothing from 'a'"), "{e}");
    }
}
