//! sysbench's OLTP tables (`sbtest1..N`) in each engine's DDL, their statements, and their
//! rows: the same layout sysbench's `prepare` makes, so sysbench can run on a database dbvs
//! built and the other way round.

use crate::targets::sql::bulk::{Cell, Row, Sink};
use crate::targets::sql::statements;
use crate::targets::Engine;
use anyhow::Result;
use indicatif::ProgressBar;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Groups of 11 digits in `c` (119 characters of CHAR(120)) and in `pad` (59 of CHAR(60)).
pub const C_GROUPS: usize = 10;
pub const PAD_GROUPS: usize = 5;

/// One table's DDL; `{t}` is the table's number.
pub fn table(engine: Engine, t: u32) -> String {
    let ddl = match engine {
        Engine::Sqlite => {
            "CREATE TABLE sbtest{t} (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '')"
        }
        Engine::Postgres => {
            "CREATE TABLE sbtest{t} (id INTEGER NOT NULL, k INTEGER NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id))"
        }
        Engine::Mariadb => {
            "CREATE TABLE sbtest{t} (id INTEGER NOT NULL, k INTEGER NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id)) ENGINE=InnoDB"
        }
    };
    ddl.replace("{t}", &t.to_string())
}

/// The secondary index on `k` (sysbench's `create_secondary`) and planner statistics, after the load.
pub fn finish(engine: Engine, t: u32) -> String {
    let analyze = if engine == Engine::Mariadb { "ANALYZE TABLE" } else { "ANALYZE" };
    format!("CREATE INDEX k_{t} ON sbtest{t}(k);\n{analyze} sbtest{t};")
}

statements!(PER_TABLE {
    POINT_SELECT = "SELECT c FROM sbtest{t} WHERE id = ?";
    SIMPLE_RANGE = "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?";
    SUM_RANGE = "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?";
    ORDER_RANGE = "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c";
    DISTINCT_RANGE = "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c";
    INDEX_UPDATE = "UPDATE sbtest{t} SET k = k + 1 WHERE id = ?";
    NON_INDEX_UPDATE = "UPDATE sbtest{t} SET c = ? WHERE id = ?";
    DELETE = "DELETE FROM sbtest{t} WHERE id = ?";
    INSERT = "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)";
});

/// Every table's statements in portable SQL: statement `q` of table `t` (from 1) is at
/// `(t - 1) * PER_TABLE.len() + q`.
pub fn statements(tables: u32) -> Vec<String> {
    (1..=tables).flat_map(|t| PER_TABLE.iter().map(move |s| s.replace("{t}", &t.to_string()))).collect()
}

/// `groups` groups of 11 random digits joined by dashes, into `out` (cleared first).
pub fn digits(rng: &mut impl RngCore, groups: usize, out: &mut String) {
    out.clear();
    for g in 0..groups {
        if g > 0 {
            out.push('-');
        }
        for _ in 0..11 {
            out.push(char::from(b'0' + rng.random_range(0..10u8)));
        }
    }
}

/// Rows generated per piece of work a loader thread takes, and handed to its sink at a time.
const PIECE: i64 = 50_000;
const CHUNK: i64 = 5_000;

/// How many pieces one table's rows are loaded in (loader threads beyond that would idle).
pub fn pieces_per_table(rows: i64) -> i64 {
    (rows + PIECE - 1) / PIECE
}

/// Every table's rows: ids 1..=rows, k uniform in 1..=rows, random `c` and `pad`. Loader
/// threads take pieces of the tables in turn; each piece draws from its own seeded stream,
/// so the data is the same whichever thread loads it.
pub fn generate(sinks: Vec<Box<dyn Sink>>, tables: u32, rows: i64, seed: u64, progress: &ProgressBar) -> Result<()> {
    let pieces: Vec<(u32, i64)> =
        (1..=tables).flat_map(|t| (0..pieces_per_table(rows)).map(move |p| (t, 1 + p * PIECE))).collect();
    let next = AtomicUsize::new(0);
    let load = |mut sink: Box<dyn Sink>| -> Result<()> {
        while let Some(&(t, first)) = pieces.get(next.fetch_add(1, Ordering::Relaxed)) {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (u64::from(t) << 48) ^ first as u64);
            let end = (first + PIECE).min(rows + 1);
            let (mut c, mut pad) = (String::new(), String::new());
            for lo in (first..end).step_by(CHUNK as usize) {
                if crate::interrupt::interrupted() {
                    return Err(crate::interrupt::Interrupted.into());
                }
                let batch: Vec<Row> = (lo..(lo + CHUNK).min(end))
                    .map(|id| {
                        digits(&mut rng, C_GROUPS, &mut c);
                        digits(&mut rng, PAD_GROUPS, &mut pad);
                        let k = rng.random_range(1..=rows);
                        vec![Cell::Int(id), Cell::Int(k), Cell::Text(c.clone()), Cell::Text(pad.clone())]
                    })
                    .collect();
                sink.put(&format!("sbtest{t}"), &batch)?;
                progress.inc(batch.len() as u64);
            }
            sink.end_part()?;
        }
        Ok(())
    };
    std::thread::scope(|s| {
        let loaders: Vec<_> = sinks.into_iter().map(|sink| s.spawn(|| load(sink))).collect();
        loaders.into_iter().try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_sysbenchs_shape() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut c = String::new();
        digits(&mut rng, C_GROUPS, &mut c);
        assert_eq!(c.len(), 119);
        assert_eq!(c.split('-').count(), 10);
        assert!(c.split('-').all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())), "{c}");
        digits(&mut rng, PAD_GROUPS, &mut c);
        assert_eq!(c.len(), 59);
    }

    #[test]
    fn each_table_has_its_statements() {
        let all = statements(2);
        assert_eq!(all.len(), 2 * PER_TABLE.len());
        assert_eq!(all[POINT_SELECT], "SELECT c FROM sbtest1 WHERE id = ?");
        assert_eq!(all[PER_TABLE.len() + DELETE], "DELETE FROM sbtest2 WHERE id = ?");
        assert!(table(Engine::Mariadb, 3).starts_with("CREATE TABLE sbtest3 ("));
        assert!(finish(Engine::Postgres, 3).starts_with("CREATE INDEX k_3 ON sbtest3(k);"));
    }
}
