//! Rows per table: what a capture's window ended with, kept beside its log, and what a
//! replay of it ends with, so a user sees whether the replay did what the capture did.

use crate::targets::sql::{adhoc, number};
use crate::targets::{Connection, Engine};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Rows in each of the database's own tables (`schema.table`), dbvs's own left out.
pub type Counts = BTreeMap<String, i64>;

/// On PostgreSQL, every schema's tables as `schema.table`; on MariaDB, the connection's
/// database's by name alone (a replay's copy is a database of another name).
pub fn count(conn: &mut Connection) -> Result<Counts> {
    let maria = conn.engine() == Engine::Mariadb;
    let tables = adhoc(
        conn,
        if maria {
            "SELECT table_schema, table_name FROM information_schema.tables \
             WHERE table_type IN ('BASE TABLE', 'SYSTEM VERSIONED') AND table_schema = DATABASE() ORDER BY 2"
        } else {
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' \
             AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
        },
    )?;
    let quote = if maria { '`' } else { '"' };
    let quoted = |s: &str| format!("{quote}{}{quote}", s.replace(quote, &format!("{quote}{quote}")));
    let mut counts = Counts::new();
    for i in 0..tables.len() {
        let (schema, table) = (tables.text(i, 0)?.into_owned(), tables.text(i, 1)?.into_owned());
        if table == crate::targets::META_TABLE {
            continue;
        }
        let n = number(conn, &format!("SELECT count(*) FROM {}.{}", quoted(&schema), quoted(&table)))?;
        counts.insert(if maria { table } else { format!("{schema}.{table}") }, n as i64);
    }
    Ok(counts)
}

/// Where a capture's counts are kept: beside its log, `capture.log` -> `capture.tables.json`.
pub fn beside(log: &Path) -> PathBuf {
    log.with_extension("tables.json")
}

pub fn save(counts: &Counts, to: &Path) -> Result<()> {
    std::fs::write(to, serde_json::to_string_pretty(counts)?).with_context(|| format!("cannot write {}", to.display()))
}

/// The counts kept beside `log`, when there are.
pub fn load(log: &Path) -> Result<Option<Counts>> {
    let path = beside(log);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(
            serde_json::from_str(&text).with_context(|| format!("{} is not a table of row counts", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// How `now` compares with `then`, in words: "all 4 tables as at capture" or what differs.
pub fn compare(now: &Counts, then: &Counts) -> String {
    let differ: Vec<String> = then
        .keys()
        .chain(now.keys().filter(|k| !then.contains_key(*k)))
        .filter(|k| now.get(*k) != then.get(*k))
        .map(|k| {
            let show = |c: &Counts| c.get(k).map_or("none".to_string(), |n| n.to_string());
            format!("{k} {} now, {} at capture", show(now), show(then))
        })
        .collect();
    match differ.is_empty() {
        true => format!("all {} tables have the rows they had at the end of the capture", then.len()),
        false => format!("rows differ from the end of the capture: {}", differ.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_compare_table_by_table() {
        let then = Counts::from([("public.a".into(), 5), ("public.b".into(), 1)]);
        assert_eq!(compare(&then, &then), "all 2 tables have the rows they had at the end of the capture");
        let now = Counts::from([("public.a".into(), 4), ("public.c".into(), 1)]);
        let said = compare(&now, &then);
        assert!(
            said.contains("public.a 4 now, 5 at capture")
                && said.contains("public.b none now")
                && said.contains("public.c 1 now, none"),
            "{said}"
        );
        assert_eq!(beside(Path::new("/x/capture.log")), PathBuf::from("/x/capture.tables.json"));
    }
}
