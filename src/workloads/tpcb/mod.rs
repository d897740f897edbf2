//! `tpcb`: pgbench's TPC-B-like workload, with pgbench's schema, scale rule and
//! transaction, so dbvs's driver can be compared with pgbench on the same PostgreSQL.
//!
//! Scale N means N branches, 10 N tellers and 100,000 N accounts, all balances 0. One
//! transaction picks aid, tid, bid and a delta in -5000..=5000 uniformly, updates the
//! account, reads it back, updates the teller and the branch, and inserts a history row.

mod schema;

use super::{Check, Measure, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, RunResult, Worker};
use crate::targets::sql::bulk::{self, Cell, Row};
use crate::targets::sql::{self as seam, statements, Arg::Int, Session, Statements};
use crate::targets::{BuildMeta, Database, Engine};
use anyhow::{bail, Result};
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use serde_json::json;

const OPERATIONS: &[&str] = &["transaction"];
const ACCOUNTS_PER_BRANCH: i64 = 100_000;
const TELLERS_PER_BRANCH: i64 = 10;
const FORMAT: &str = "2";

pub struct Tpcb {
    scale: i64,
    seed: u64,
}

impl Tpcb {
    pub fn new(args: &WorkloadSpec) -> Result<Self> {
        let scale = match args.size.as_deref().unwrap_or("1").parse::<i64>() {
            Ok(n) if (1..=100_000).contains(&n) => n,
            _ => bail!("tpcb takes --size as pgbench's scale factor, a whole number from 1 to 100000 (e.g. --size 10)"),
        };
        Ok(Self { scale, seed: args.seed })
    }
}

statements!(LIST {
    UPDATE_ACCOUNT = "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?";
    READ_ACCOUNT = "SELECT abalance FROM pgbench_accounts WHERE aid = ?";
    UPDATE_TELLER = "UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?";
    UPDATE_BRANCH = "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?";
    INSERT_HISTORY = "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)";
});

/// pgbench's statements, prepared once per connection like `pgbench -M prepared`.
const STATEMENTS: Statements = Statements::portable(LIST);

struct TpcbWorker {
    session: Box<dyn Session>,
    rng: rand_chacha::ChaCha8Rng,
    scale: i64,
}

impl Worker for TpcbWorker {
    fn run_unit(&mut self, rec: &mut crate::driver::UnitRecorder) -> Result<crate::driver::Outcome> {
        // One transaction's random choices, as pgbench's script draws them.
        let aid = Int(self.rng.random_range(1..=ACCOUNTS_PER_BRANCH * self.scale));
        let bid = Int(self.rng.random_range(1..=self.scale));
        let tid = Int(self.rng.random_range(1..=TELLERS_PER_BRANCH * self.scale));
        let delta = Int(self.rng.random_range(-5000..=5000));
        let t = std::time::Instant::now();
        // pgbench's seven statements; on PostgreSQL in one round trip (one pipeline, as
        // pgbench's \startpipeline sends them), where pgbench -M prepared makes seven.
        let outcome = self.session.transaction(false, rec, &mut |tx| {
            tx.defer(UPDATE_ACCOUNT, &[delta, aid])?;
            tx.defer_read(READ_ACCOUNT, &[aid])?;
            tx.defer(UPDATE_TELLER, &[delta, tid])?;
            tx.defer(UPDATE_BRANCH, &[delta, bid])?;
            tx.defer(INSERT_HISTORY, &[tid, bid, aid, delta])?;
            Ok(crate::driver::Outcome::Committed)
        })?;
        rec.op(0, t.elapsed());
        Ok(outcome)
    }
}

/// Rows handed to the loader at a time.
const CHUNK: i64 = 5000;

/// pgbench's initial rows: every balance 0, the branch filler carrying the plaintext marker
/// the canary scan looks for.
fn generate(sink: &mut dyn bulk::Sink, scale: i64, progress: &ProgressBar) -> Result<()> {
    let canary = crate::workloads::CANARY;
    // (table, rows, rows per branch for the bid column (branches have none), filler)
    let tables: [(&str, i64, Option<i64>, &str); 3] = [
        ("pgbench_branches", scale, None, canary),
        ("pgbench_tellers", TELLERS_PER_BRANCH * scale, Some(TELLERS_PER_BRANCH), ""),
        ("pgbench_accounts", ACCOUNTS_PER_BRANCH * scale, Some(ACCOUNTS_PER_BRANCH), ""),
    ];
    for (table, n, per_branch, filler) in tables {
        let mut lo = 1;
        while lo <= n {
            if crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
            let hi = (lo + CHUNK - 1).min(n);
            let rows: Vec<Row> = (lo..=hi)
                .map(|id| {
                    let bid = per_branch.map(|per| Cell::Int((id - 1) / per + 1));
                    [Some(Cell::Int(id)), bid, Some(Cell::Int(0)), Some(Cell::Text(filler.into()))]
                        .into_iter()
                        .flatten()
                        .collect()
                })
                .collect();
            sink.put(table, &rows)?;
            if table == "pgbench_accounts" {
                progress.set_position(hi as u64);
            }
            lo = hi + 1;
        }
    }
    sink.end_part()
}

/// Sums every balance table and the history must agree on, and the history's size.
struct Totals {
    accounts: i64,
    tellers: i64,
    branches: i64,
    history: i64,
    history_rows: i64,
}

const TOTALS_SQL: [&str; 5] = [
    "SELECT CAST(coalesce(sum(abalance), 0) AS BIGINT) FROM pgbench_accounts",
    "SELECT CAST(coalesce(sum(tbalance), 0) AS BIGINT) FROM pgbench_tellers",
    "SELECT CAST(coalesce(sum(bbalance), 0) AS BIGINT) FROM pgbench_branches",
    "SELECT CAST(coalesce(sum(delta), 0) AS BIGINT) FROM pgbench_history",
    "SELECT count(*) FROM pgbench_history",
];

impl Totals {
    fn read(mut one: impl FnMut(&str) -> Result<i64>) -> Result<Self> {
        Ok(Self {
            accounts: one(TOTALS_SQL[0])?,
            tellers: one(TOTALS_SQL[1])?,
            branches: one(TOTALS_SQL[2])?,
            history: one(TOTALS_SQL[3])?,
            history_rows: one(TOTALS_SQL[4])?,
        })
    }
}

impl Workload for Tpcb {
    fn name(&self) -> &'static str {
        "tpcb"
    }

    fn operations(&self) -> &'static [&'static str] {
        OPERATIONS
    }

    fn build_identity(&self) -> BuildMeta {
        BuildMeta::from([
            ("workload".into(), "tpcb".into()),
            ("format".into(), FORMAT.into()),
            ("size".into(), self.scale.to_string()),
        ])
    }

    fn build(&self, db: &dyn Database, progress: &ProgressBar) -> Result<u64> {
        let mut conn = db.connect()?;
        progress.set_length((ACCOUNTS_PER_BRANCH * self.scale) as u64);
        let engine = conn.engine();
        seam::script(&mut conn, schema::tables(engine))?;
        bulk::load(db, &mut conn, 1, |mut sinks| generate(sinks[0].as_mut(), self.scale, progress))?;
        seam::script(&mut conn, schema::finish(engine))?;
        if engine == Engine::Postgres {
            // VACUUM cannot share a multi-statement batch: that runs as one transaction.
            seam::script(&mut conn, "VACUUM ANALYZE")?;
        }
        let rows = (self.scale * (1 + TELLERS_PER_BRANCH + ACCOUNTS_PER_BRANCH)) as u64;
        let mut meta = self.build_identity();
        meta.insert("dbvs_version".into(), env!("CARGO_PKG_VERSION").into());
        crate::targets::write_meta(&mut conn, &meta)?;
        Ok(rows)
    }

    fn worker<'a>(&'a self, db: &'a dyn Database, _meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>> {
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ ((index as u64 + 1) << 40));
        let session = seam::session(db.connect_session()?, &STATEMENTS)?;
        Ok(Box::new(TpcbWorker { session, rng, scale: self.scale }))
    }

    fn check(&self, db: &dyn Database, _meta: &BuildMeta, done: Option<&FromStart>) -> Result<Vec<Check>> {
        let mut conn = db.connect()?;
        let t = Totals::read(|sql| Ok(seam::adhoc(&mut conn, sql)?.int(0, 0)?))?;
        let same =
            |name: &'static str, a: i64, b: i64| Check { name: name.into(), ok: a == b, detail: format!("{a} vs {b}") };
        let mut checks = vec![
            same("sum of account balances = sum of history deltas", t.accounts, t.history),
            same("sum of teller balances = sum of history deltas", t.tellers, t.history),
            same("sum of branch balances = sum of history deltas", t.branches, t.history),
        ];
        if let Some(done) = done {
            checks.insert(0, same("history rows = committed transactions", t.history_rows, done.committed as i64));
        }
        Ok(checks)
    }

    fn params(&self) -> serde_json::Value {
        json!({ "scale": self.scale, "seed": self.seed })
    }

    fn metrics(&self, run: &RunResult) -> serde_json::Value {
        let m = &run.measured;
        json!({
            "tps": run.per_second(),
            "transactions": m.units,
            "retries": m.retries,
            "lock_waits": m.lock_waits,
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
        format!("progress: {:.1} s, {:.1} tps, lat {:.3} ms", s.et_s, s.interval_per_min / 60.0, s.sampled_ms)
    }

    fn final_line(&self, run: &RunResult) -> String {
        let m = &run.measured;
        format!(
            "transactions: {}, duration: {:.1} s, tps = {:.1}, latency average = {:.3} ms, retries = {}",
            m.units,
            run.elapsed_s,
            run.per_second(),
            m.unit_latency.avg_ms,
            m.retries
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(size: Option<&str>) -> WorkloadSpec {
        WorkloadSpec {
            options: crate::workloads::Options::Tpcb(Default::default()),
            size: size.map(String::from),
            seed: 1,
            ..Default::default()
        }
    }

    #[test]
    fn scale_comes_from_size() {
        assert_eq!(Tpcb::new(&args(None)).unwrap().scale, 1);
        assert_eq!(Tpcb::new(&args(Some("10"))).unwrap().scale, 10);
        for bad in ["0", "10MB", "-1"] {
            assert!(Tpcb::new(&args(Some(bad))).err().unwrap().to_string().contains("scale factor"));
        }
    }
}
