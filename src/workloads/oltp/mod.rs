//! `oltp`: sysbench's OLTP family (oltp_read_write, oltp_read_only, oltp_write_only and
//! oltp_point_select), with sysbench's schema, statements and counts per transaction, so
//! a MariaDB or MySQL user's first benchmark runs in studies like every other workload,
//! and dbvs's driver can be compared with sysbench on the same database.
//!
//! `--size` is rows per table (sysbench's `--table-size`, default 10,000), `--tables` the
//! number of tables. Every id and `k` is drawn uniformly (sysbench's `--rand-type=uniform`).
//! A transaction runs, per mix: 10 point selects; a simple, a SUM, an ORDER BY and a
//! DISTINCT range of 100 ids; an update of the indexed `k`, one of `c`; a delete and the
//! insert of the same id. Each group of statements picks its table at random.

mod schema;

use super::{Check, Measure, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, Outcome, RunResult, UnitRecorder, Worker};
use crate::targets::sql::{self as seam, bulk, Arg, DbError, Session, Tx, Q};
use crate::targets::{BuildMeta, Database, Engine};
use anyhow::{bail, Result};
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schema::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

const FORMAT: &str = "1";
const OPERATIONS: &[&str] = &["transaction"];
/// sysbench's statement counts per transaction and its range length.
const POINT_SELECTS: usize = 10;
const RANGE_SIZE: i64 = 100;
/// Tables a worker keeps its statements prepared for (within a MariaDB connection's cache).
const MAX_TABLES: u32 = 100;
const _: () = assert!(MAX_TABLES as usize * PER_TABLE.len() <= crate::targets::mysql::SESSION_STATEMENTS);

/// Which of sysbench's scripts the transactions follow.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Mix {
    /// oltp_read_write: the reads and the writes, in one transaction.
    #[default]
    ReadWrite,
    /// oltp_read_only: the point selects and ranges, in a read-only transaction.
    ReadOnly,
    /// oltp_write_only: the two updates, the delete and the insert.
    WriteOnly,
    /// oltp_point_select: one point select, outside any transaction.
    PointSelect,
}

impl Mix {
    fn reads(self) -> bool {
        matches!(self, Mix::ReadWrite | Mix::ReadOnly)
    }

    fn writes(self) -> bool {
        matches!(self, Mix::ReadWrite | Mix::WriteOnly)
    }

    /// Statements per transaction as sysbench counts its queries (BEGIN and COMMIT too).
    fn queries(self) -> u64 {
        match self {
            Mix::PointSelect => 1,
            mix => 2 + if mix.reads() { POINT_SELECTS as u64 + 4 } else { 0 } + if mix.writes() { 4 } else { 0 },
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mix::ReadWrite => "read_write",
            Mix::ReadOnly => "read_only",
            Mix::WriteOnly => "write_only",
            Mix::PointSelect => "point_select",
        }
    }
}

/// oltp's options, on the command line and in run specs.
#[derive(clap::Args, Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[group(id = "oltp_options")]
pub struct Options {
    /// oltp: which sysbench script's transactions: read_write, read_only, write_only or point_select.
    #[arg(long, value_enum, default_value_t = Mix::ReadWrite)]
    pub mix: Mix,
    /// oltp: tables sbtest1..N (sysbench's --tables), up to 100: every worker keeps 9 statements per table prepared.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_TABLES as i64))]
    pub tables: u32,
}

impl Default for Options {
    fn default() -> Self {
        Self { mix: Mix::ReadWrite, tables: 1 }
    }
}

impl Options {
    /// The workload's name, with the mix when it is not read_write.
    pub fn describe(&self) -> String {
        match self.mix {
            Mix::ReadWrite => "oltp".into(),
            mix => format!("oltp {}", mix.name()),
        }
    }
}

pub struct Oltp {
    options: Options,
    rows: i64,
    seed: u64,
}

impl Oltp {
    pub fn new(args: &WorkloadSpec, options: &Options) -> Result<Self> {
        let rows = match args.size.as_deref().unwrap_or("10000").parse::<i64>() {
            Ok(n) if (1..=1_000_000_000).contains(&n) => n,
            _ => bail!(
                "oltp takes --size as rows per table (sysbench's --table-size), a whole number from 1 to 1000000000"
            ),
        };
        if !(1..=MAX_TABLES).contains(&options.tables) {
            bail!("oltp takes tables from 1 to {MAX_TABLES}, not {}", options.tables);
        }
        Ok(Self { options: options.clone(), rows, seed: args.seed })
    }
}

struct OltpWorker {
    session: Box<dyn Session>,
    draw: Draw,
}

/// A worker's random choices and what it sends, apart from its session so that a
/// transaction's body can borrow it while the session runs the transaction.
struct Draw {
    rng: ChaCha8Rng,
    mix: Mix,
    tables: u32,
    rows: i64,
    /// Reused buffers for the random `c` and `pad` values.
    c: String,
    pad: String,
}

impl Draw {
    /// Statement `q` on a table chosen at random, as sysbench picks one per group.
    fn on_some_table(&mut self, q: Q) -> Q {
        let t = self.rng.random_range(0..self.tables) as usize;
        t * PER_TABLE.len() + q
    }

    fn id(&mut self) -> i64 {
        self.rng.random_range(1..=self.rows)
    }

    fn transaction(&mut self, tx: &mut dyn Tx) -> Result<Outcome, DbError> {
        if self.mix.reads() {
            self.reads(tx)?;
        }
        if self.mix.writes() {
            self.writes(tx)?;
        }
        Ok(Outcome::Committed)
    }

    fn reads(&mut self, tx: &mut dyn Tx) -> Result<(), DbError> {
        let point = self.on_some_table(POINT_SELECT);
        for _ in 0..POINT_SELECTS {
            tx.query(point, &[Arg::Int(self.id())])?;
        }
        for q in [SIMPLE_RANGE, SUM_RANGE, ORDER_RANGE, DISTINCT_RANGE] {
            let (q, lo) = (self.on_some_table(q), self.id());
            tx.query(q, &[Arg::Int(lo), Arg::Int(lo + RANGE_SIZE - 1)])?;
        }
        Ok(())
    }

    fn writes(&mut self, tx: &mut dyn Tx) -> Result<(), DbError> {
        // The writes travel together where the engine pipelines (PostgreSQL); the insert's
        // duplicate must surface here, where it becomes a conflict, so it is not deferred.
        let q = self.on_some_table(INDEX_UPDATE);
        tx.defer(q, &[Arg::Int(self.id())])?;
        let (q, id) = (self.on_some_table(NON_INDEX_UPDATE), self.id());
        digits(&mut self.rng, C_GROUPS, &mut self.c);
        tx.defer(q, &[Arg::Text(&self.c), Arg::Int(id)])?;
        let table = self.on_some_table(0);
        let (id, k) = (self.id(), self.id());
        digits(&mut self.rng, C_GROUPS, &mut self.c);
        digits(&mut self.rng, PAD_GROUPS, &mut self.pad);
        tx.defer(table + DELETE, &[Arg::Int(id)])?;
        let row = [Arg::Int(id), Arg::Int(k), Arg::Text(&self.c), Arg::Text(&self.pad)];
        tx.execute(table + INSERT, &row).map_err(DbError::duplicate_as_conflict)?;
        Ok(())
    }
}

impl Worker for OltpWorker {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> Result<Outcome> {
        let t = std::time::Instant::now();
        let draw = &mut self.draw;
        let outcome = if draw.mix == Mix::PointSelect {
            let q = draw.on_some_table(POINT_SELECT);
            self.session.query(q, &[Arg::Int(draw.id())])?;
            Outcome::Committed
        } else {
            self.session.transaction(!draw.mix.writes(), rec, &mut |tx| draw.transaction(tx))?
        };
        rec.op(0, t.elapsed());
        Ok(outcome)
    }
}

impl Workload for Oltp {
    fn name(&self) -> &'static str {
        "oltp"
    }

    fn operations(&self) -> &'static [&'static str] {
        OPERATIONS
    }

    fn build_identity(&self) -> BuildMeta {
        BuildMeta::from([
            ("workload".into(), "oltp".into()),
            ("format".into(), FORMAT.into()),
            ("size".into(), self.rows.to_string()),
            ("tables".into(), self.options.tables.to_string()),
            ("seed".into(), self.seed.to_string()),
        ])
    }

    fn build(&self, db: &dyn Database, progress: &ProgressBar) -> Result<u64> {
        let mut conn = db.connect()?;
        let tables = self.options.tables;
        progress.set_length(self.rows as u64 * u64::from(tables));
        let engine = conn.engine();
        for t in 1..=tables {
            seam::script(&mut conn, &table(engine, t))?;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pieces = tables as usize * pieces_per_table(self.rows) as usize;
        bulk::load(db, &mut conn, cores.min(pieces), |sinks| generate(sinks, tables, self.rows, self.seed, progress))?;
        for t in 1..=tables {
            seam::script(&mut conn, &finish(engine, t))?;
        }
        if engine == Engine::Postgres {
            // VACUUM cannot share a multi-statement batch: that runs as one transaction.
            seam::script(&mut conn, "VACUUM")?;
        }
        let mut meta = self.build_identity();
        meta.insert("dbvs_version".into(), env!("CARGO_PKG_VERSION").into());
        // The rows are digits only: the marker the plaintext scan looks for sits here.
        meta.insert("canary".into(), super::CANARY.into());
        crate::targets::write_meta(&mut conn, &meta)?;
        Ok(self.rows as u64 * u64::from(tables))
    }

    fn worker<'a>(&'a self, db: &'a dyn Database, _meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>> {
        let rng = ChaCha8Rng::seed_from_u64(self.seed ^ ((index as u64 + 1) << 40));
        let session = seam::session_of(db.connect_session()?, &statements(self.options.tables))?;
        let (mix, tables, rows) = (self.options.mix, self.options.tables, self.rows);
        let draw = Draw { rng, mix, tables, rows, c: String::new(), pad: String::new() };
        Ok(Box::new(OltpWorker { session, draw }))
    }

    fn check(&self, db: &dyn Database, _meta: &BuildMeta, _done: Option<&FromStart>) -> Result<Vec<Check>> {
        // Every delete is followed by the insert of the same id in one transaction, so each
        // table keeps exactly the ids 1..=rows.
        let mut conn = db.connect()?;
        (1..=self.options.tables)
            .map(|t| {
                let sql = format!("SELECT count(*), min(id), max(id) FROM sbtest{t}");
                let r = seam::adhoc(&mut conn, &sql)?;
                let found = (r.int(0, 0)?, r.int(0, 1).unwrap_or(0), r.int(0, 2).unwrap_or(0));
                Ok(Check {
                    name: format!("sbtest{t} holds each id from 1 to {} once", self.rows).into(),
                    ok: found == (self.rows, 1, self.rows),
                    detail: format!("{} rows, ids {} to {}", found.0, found.1, found.2),
                })
            })
            .collect()
    }

    fn params(&self) -> serde_json::Value {
        json!({
            "mix": self.options.mix,
            "tables": self.options.tables,
            "table_size": self.rows,
            "seed": self.seed,
            "queries_per_transaction": self.options.mix.queries(),
        })
    }

    fn metrics(&self, run: &RunResult) -> serde_json::Value {
        let m = &run.measured;
        json!({
            "tps": run.per_second(),
            "qps": run.per_second() * self.options.mix.queries() as f64,
            "transactions": m.units,
            "retries": m.retries,
            "retries_by_cause": m.retries_by_cause,
            "latency_ms": { "transaction": m.unit_latency },
        })
    }

    fn measures(&self, run: Option<&RunResult>) -> Vec<Measure> {
        vec![self.headline(run)]
    }

    fn headline(&self, run: Option<&RunResult>) -> Measure {
        Measure::higher("TPS", "transactions/s", run.map(RunResult::per_second))
    }

    fn supports_instances(&self) -> bool {
        true
    }

    fn interval_line(&self, s: &IntervalSample) -> String {
        let tps = s.interval_per_min / 60.0;
        let qps = tps * self.options.mix.queries() as f64;
        format!("[ {:.0}s ] tps: {tps:.2} qps: {qps:.2} lat (ms,95%): {:.2}", s.et_s, s.p95_ms)
    }

    fn final_line(&self, run: &RunResult) -> String {
        let m = &run.measured;
        format!(
            "transactions: {} ({:.2} per sec.), queries: {} ({:.2} per sec.), retries: {}, latency avg: {:.2} ms",
            m.units,
            run.per_second(),
            m.units * self.options.mix.queries(),
            run.per_second() * self.options.mix.queries() as f64,
            m.retries,
            m.unit_latency.avg_ms,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(size: Option<&str>) -> WorkloadSpec {
        WorkloadSpec {
            options: super::super::Options::Oltp(Options::default()),
            size: size.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn size_is_rows_per_table() {
        assert_eq!(Oltp::new(&spec(None), &Options::default()).unwrap().rows, 10_000);
        assert_eq!(Oltp::new(&spec(Some("250")), &Options::default()).unwrap().rows, 250);
        for bad in ["0", "10MB", "-1"] {
            let e = Oltp::new(&spec(Some(bad)), &Options::default()).err().unwrap().to_string();
            assert!(e.contains("--table-size"), "{e}");
        }
        let many = Options { tables: 0, ..Default::default() };
        assert!(Oltp::new(&spec(None), &many).is_err());
    }

    #[test]
    fn queries_are_counted_as_sysbench_counts_them() {
        assert_eq!(Mix::ReadWrite.queries(), 20);
        assert_eq!(Mix::ReadOnly.queries(), 16);
        assert_eq!(Mix::WriteOnly.queries(), 6);
        assert_eq!(Mix::PointSelect.queries(), 1);
        let o: Options = serde_json::from_str(r#"{"mix":"write_only","tables":4}"#).unwrap();
        assert_eq!((o.describe(), o.tables), ("oltp write_only".to_string(), 4));
    }
}
