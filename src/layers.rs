//! The layers docs/architecture.md lists hold: no module imports one on a higher layer, so a
//! lower layer can change without knowing who uses it. Test code is left out (a test may
//! reach across, e.g. to read the reference docs).

use std::collections::BTreeMap;
use std::path::Path;

const ARCHITECTURE: &str = include_str!("../docs/architecture.md");

/// Each module's layer, from the "Layers" table: `| N | `a`, `b` | ... |`.
fn layers() -> BTreeMap<String, u32> {
    let table = ARCHITECTURE.split("## Layers").nth(1).expect("docs/architecture.md has a '## Layers' section");
    let mut layers = BTreeMap::new();
    for row in table.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(level) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else { continue };
        for module in cells[2].split(',') {
            layers.insert(module.trim().trim_matches('`').to_string(), level);
        }
    }
    layers
}

/// The top-level modules a source file's non-test code names (`crate::x`).
fn imports(text: &str) -> Vec<String> {
    let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            if let Some(list) = rest.strip_prefix('{') {
                let list = list.split('}').next().unwrap_or_default();
                out.extend(list.split(',').map(|m| m.trim().split("::").next().unwrap_or_default().to_string()));
            } else {
                out.push(rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("").into());
            }
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") && path.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_one_on_a_higher_layer() {
    let layers = layers();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let module = rel.iter().next().unwrap().to_string_lossy().trim_end_matches(".rs").to_string();
        if ["lib", "main", "layers", "reference_docs"].contains(&module.as_str()) {
            continue;
        }
        let own =
            *layers.get(&module).unwrap_or_else(|| panic!("module {module} is in no layer of docs/architecture.md"));
        for used in imports(&std::fs::read_to_string(&file).unwrap()) {
            let theirs =
                *layers.get(&used).unwrap_or_else(|| panic!("{} names crate::{used}, in no layer", rel.display()));
            if theirs > own {
                upward.push(format!("{} (layer {own}) imports {used} (layer {theirs})", rel.display()));
            }
        }
    }
    assert!(upward.is_empty(), "imports from a lower layer to a higher one:\n{}", upward.join("\n"));
}

#[test]
fn imports_are_read_from_paths_and_lists() {
    let text = "use crate::{driver::X, sys};\n// crate::study in a comment\nlet a = crate::stats::mean();\n#[cfg(test)]\nmod tests { use crate::cli; }";
    assert_eq!(imports(text), ["driver", "sys", "stats"]);
}
