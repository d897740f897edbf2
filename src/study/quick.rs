//! A study file's quick form (`dbvs study FILE --quick`): a `[quick]` table at the top and
//! a `quick = { ... }` table in a workload entry replace those keys, so one file holds both
//! a seed's full scale and a form that runs in minutes (for tests and a first look). The
//! full form ignores the quick tables.

use anyhow::{bail, Result};
use toml::{Table, Value};

/// The text of `text`'s quick form: every quick table's keys in place of its parent's.
pub fn fold(text: &str) -> Result<String> {
    let mut root: Table = toml::from_str(text)?;
    let mut found = fold_into(&mut root, "the study")?;
    for single in ["workload", "companion"] {
        if let Some(Value::Table(w)) = root.get_mut(single) {
            found |= fold_into(w, &format!("[{single}]"))?;
        }
    }
    if let Some(Value::Array(ws)) = root.get_mut("workloads") {
        for (i, w) in ws.iter_mut().enumerate() {
            if let Value::Table(w) = w {
                found |= fold_into(w, &format!("[[workloads]] entry {}", i + 1))?;
            }
        }
    }
    if !found {
        bail!("it has no quick form: add a [quick] table (e.g. budget = \"2m\") or quick = {{ ... }} in a workload");
    }
    Ok(format!("# the quick form (--quick)\n{}", toml::to_string(&root)?))
}

/// Moves `t`'s quick table's keys into `t`; whether it had one.
fn fold_into(t: &mut Table, what: &str) -> Result<bool> {
    match t.remove("quick") {
        None => Ok(false),
        Some(Value::Table(quick)) => {
            for (k, v) in quick {
                if k == "quick" {
                    bail!("{what}: a quick table cannot hold another");
                }
                t.insert(k, v);
            }
            Ok(true)
        }
        Some(_) => bail!("{what}: quick must be a table of the keys to replace, e.g. quick = {{ size = \"1MB\" }}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_tables_replace_their_parents_keys() {
        let text = "name = \"s\"\nbudget = \"1h\"\nblocks = { min = 6, max = 20 }\n\
                    [quick]\nbudget = \"2m\"\nblocks = { min = 2, max = 2 }\n\
                    [[workloads]]\nname = \"ds2\"\nsize = \"1GB\"\nquick = { size = \"1MB\", duration = \"2s\" }\n\
                    [[workloads]]\nname = \"tpcb\"\nsize = \"10\"\n";
        let folded: Table = toml::from_str(&fold(text).unwrap()).unwrap();
        assert_eq!(folded["budget"].as_str(), Some("2m"));
        assert_eq!(folded["blocks"]["max"].as_integer(), Some(2));
        let ws = folded["workloads"].as_array().unwrap();
        assert_eq!((ws[0]["size"].as_str(), ws[0]["duration"].as_str()), (Some("1MB"), Some("2s")));
        assert_eq!(ws[1]["size"].as_str(), Some("10"));
        assert!(!fold(text).unwrap().contains("[quick]") && !folded.contains_key("quick"));
        assert!(fold("name = \"s\"\n").unwrap_err().to_string().contains("no quick form"));
        assert!(fold("quick = 3\n").unwrap_err().to_string().contains("must be a table"));
    }
}
