//! `tpcc`: a TPC-C-class OLTP workload (not a TPC-C result: no pricing, audit or 2-hour
//! steady state, so its figures are NOPM and TPM as HammerDB names them, never tpmC).
//!
//! - Schema and initial population per clause 1 and 4.3 (`--size` = warehouses), loaded by
//!   parallel threads that split the warehouses ([`load`]).
//! - The five transactions of clause 2 as client-side SQL written once ([`txn`]), with
//!   NURand, the load/run C-constant rule, 1% rolled-back New-Orders, 60% last-name
//!   lookups, remote warehouses, and Delivery over all ten districts.
//! - Mixes ([`mix`]): the standard deck or the seed's Hammerora profiles; optional spec
//!   keying and think times.
//!
//! Metrics, as HammerDB computes them where it can:
//! - NOPM = the change of sum(D_NEXT_O_ID) over DISTRICT between the start and the end of
//!   the measured window, per minute. Read from the schema; rolled-back New-Orders do not
//!   move it.
//! - TPM = transactions the client finished in the window (committed and rolled back) per
//!   minute. Counted by dbvs, not read from engine counters, so it is comparable across
//!   engines (HammerDB's TPM is each engine's own commit counter).

mod check;
mod load;
mod mix;
mod procedures;
mod random;
mod schema;
mod sql;
mod txn;
mod worker;

pub use mix::Profile;

use super::{Check, Measure, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, RunResult, Worker};
use crate::targets::sql::{self as seam, bulk};
use crate::targets::{BuildMeta, Database};
use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use random::Constants;
use serde_json::json;

pub const DISTRICTS: i64 = 10;
pub const CUSTOMERS_PER_DISTRICT: i64 = 3000;
pub const ITEMS: i64 = 100_000;
/// Orders from this id on are undelivered at load time (a NEW_ORDER row each).
pub const NEW_ORDERS_FROM: i64 = 2101;
const FORMAT: &str = "1";

/// TPC-C's options, on the command line and in run specs.
#[derive(clap::Args, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
#[group(id = "tpcc_options")]
pub struct Options {
    /// tpcc: transaction mix: standard (45/43/4/4/4), hammerora-default (20/10/10/50/30),
    /// hammerora-query (1/1/1/50/30), hammerora-update (20/10/10/1/1), or weights
    /// NewOrder/Payment/Delivery/StockLevel/OrderStatus.
    #[arg(long, default_value = "standard")]
    pub profile: Profile,
    /// tpcc: keying and think times per the TPC-C spec (18 s keying before a New-Order...).
    #[arg(long)]
    pub spec_pacing: bool,
    /// tpcc: run each transaction as one call of a stored procedure, as HammerDB does
    /// (PostgreSQL and MariaDB; dbvs creates them in the run's database): one round trip
    /// per transaction instead of one per statement.
    #[arg(long)]
    pub procedures: bool,
}

impl Options {
    /// The workload's name, with the profile when it is not the standard mix.
    pub fn describe(&self) -> String {
        let mut name = match self.profile == Profile::default() {
            true => "tpcc".to_string(),
            false => format!("tpcc {}", String::from(self.profile.clone())),
        };
        if self.procedures {
            name += " (procedures)";
        }
        name
    }
}

/// Loader threads: one per core, but no more than there are parts to load.
fn loader_threads(warehouses: i64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(1 + 4 * warehouses as usize)
}

/// Parses `--size` as a warehouse count.
pub fn warehouses(size: Option<&str>) -> Result<i64> {
    match size.unwrap_or("1").trim_end_matches(['w', 'W']).parse::<i64>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n),
        _ => bail!("tpcc takes --size as a number of warehouses from 1 to 10000 (e.g. --size 4)"),
    }
}

/// The build identity every TPC-C-schema workload shares (tpcc and batch use one database).
pub fn identity(warehouses: i64, seed: u64) -> BuildMeta {
    BuildMeta::from([
        ("workload".into(), "tpcc".into()),
        ("format".into(), FORMAT.into()),
        ("size".into(), warehouses.to_string()),
        ("seed".into(), seed.to_string()),
    ])
}

/// Builds the TPC-C database: schema, parallel load, indexes, statistics, metadata.
pub fn build(db: &dyn Database, warehouses: i64, seed: u64, progress: &ProgressBar) -> Result<u64> {
    build_as(db, warehouses, seed, identity(warehouses, seed), &[], progress)
}

/// Builds the TPC-C database of `warehouses` and `seed` with `extra_indexes` beside TPC-C's
/// own, and writes `identity` as its metadata.
pub fn build_as(
    db: &dyn Database,
    warehouses: i64,
    seed: u64,
    identity: BuildMeta,
    extra_indexes: &[&str],
    progress: &ProgressBar,
) -> Result<u64> {
    let load_c = Constants::random(&mut ChaCha8Rng::seed_from_u64(seed ^ 0xC0));
    progress.set_length(load::total_rows(warehouses));
    let mut conn = db.connect()?;
    let engine = conn.engine();
    for t in schema::tables(engine) {
        seam::exec(&mut conn, &t)?;
    }
    bulk::load(db, &mut conn, loader_threads(warehouses), |sinks| {
        load::generate(warehouses, seed, load_c, sinks, progress)
    })?;
    for i in schema::indexes().iter().chain(extra_indexes) {
        seam::exec(&mut conn, i)?;
    }
    seam::script(&mut conn, schema::statistics(engine))?;
    let mut meta = identity;
    meta.insert("c_last_load".into(), load_c.last.to_string());
    meta.insert("c_customer_load".into(), load_c.customer.to_string());
    meta.insert("c_item_load".into(), load_c.item.to_string());
    meta.insert("dbvs_version".into(), env!("CARGO_PKG_VERSION").into());
    crate::targets::write_meta(&mut conn, &meta)?;
    Ok(progress.position())
}

pub struct Tpcc {
    warehouses: i64,
    seed: u64,
    opts: Options,
}

impl Tpcc {
    pub fn new(args: &WorkloadSpec, opts: &Options) -> Result<Self> {
        Ok(Self { warehouses: warehouses(args.size.as_deref())?, seed: args.seed, opts: opts.clone() })
    }
}

fn load_constants(meta: &BuildMeta) -> Result<Constants> {
    let get = |k: &str| -> Result<i64> {
        meta.get(k)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("the database's build metadata lacks {k}; rebuild it"))
    };
    Ok(Constants { last: get("c_last_load")?, customer: get("c_customer_load")?, item: get("c_item_load")? })
}

impl Workload for Tpcc {
    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn operations(&self) -> &'static [&'static str] {
        mix::OPERATIONS
    }

    fn build_identity(&self) -> BuildMeta {
        identity(self.warehouses, self.seed)
    }

    fn build(&self, db: &dyn Database, progress: &ProgressBar) -> Result<u64> {
        build(db, self.warehouses, self.seed, progress)
    }

    fn worker<'a>(&'a self, db: &'a dyn Database, meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>> {
        // Every terminal uses the same run-time constants (clause 2.1.6).
        let c = Constants::for_run(&load_constants(meta)?, &mut ChaCha8Rng::seed_from_u64(self.seed ^ 0xC1));
        let w = self.warehouses;
        let i = index as i64;
        let mut conn = db.connect_session()?;
        let (statements, txns): (_, &'static dyn txn::Transactions) = if self.opts.procedures {
            procedures::install(&mut conn)?;
            (procedures::calls(conn.engine()), &procedures::Procedures)
        } else {
            (sql::all(), &txn::ClientSide)
        };
        Ok(Box::new(worker::Terminal {
            session: seam::session_of(conn, &statements)?,
            txns,
            rng: ChaCha8Rng::seed_from_u64(self.seed ^ ((index as u64 + 1) << 40)),
            warehouses: w,
            home: i % w + 1,
            stock_level_district: (i / w) % DISTRICTS + 1,
            c,
            deck: mix::Deck::new(&self.opts.profile),
            spec_pacing: self.opts.spec_pacing,
            next: None,
            last: None,
        }))
    }

    fn check(&self, db: &dyn Database, _meta: &BuildMeta, done: Option<&FromStart>) -> Result<Vec<Check>> {
        let mut conn = db.connect()?;
        check::run(|sql| seam::adhoc(&mut conn, sql), self.warehouses, done)
    }

    fn window_counter(&self, db: &dyn Database) -> Result<Option<i64>> {
        Ok(Some(seam::adhoc(&mut db.connect()?, check::NEXT_ORDER_SUM)?.int(0, 0)?))
    }

    fn params(&self) -> serde_json::Value {
        json!({
            "warehouses": self.warehouses,
            "seed": self.seed,
            "profile": self.opts.profile.name,
            "weights_no_p_d_sl_os": self.opts.profile.weights,
            "spec_pacing": self.opts.spec_pacing,
            "transactions": if self.opts.procedures {
                "stored procedures: one call per transaction"
            } else {
                "client-side SQL; New-Order set-oriented: items in one query, stock locked in one query per \
                 supplying warehouse, lines in one multi-row INSERT"
            },
        })
    }

    fn metrics(&self, run: &RunResult) -> serde_json::Value {
        let m = &run.measured;
        let count = |op: &str| m.op_latency.iter().find(|(n, _)| n == op).map_or(0, |(_, l)| l.count);
        let new_orders = count("new_order");
        let mix: serde_json::Map<_, _> = mix::OPERATIONS
            .iter()
            .map(|op| {
                (op.to_string(), json!(if m.units > 0 { 100.0 * count(op) as f64 / m.units as f64 } else { 0.0 }))
            })
            .collect();
        json!({
            "nopm": nopm(run),
            "tpm": tpm(run),
            "new_orders_committed": run.window_counter,
            "transactions": m.units,
            "rollbacks": m.rollbacks,
            "rollback_pct_of_new_orders": if new_orders > 0 { 100.0 * m.rollbacks as f64 / new_orders as f64 } else { 0.0 },
            "retries": m.retries,
            "retries_by_cause": m.retries_by_cause,
            "events": m.events,
            "mix_pct": mix,
            "latency_ms": m.op_latency.iter().map(|(n, l)| (n.clone(), json!(l))).collect::<serde_json::Map<_, _>>(),
        })
    }

    /// Seed 002 reported TPM for every profile; NOPM is HammerDB's headline.
    fn measures(&self, run: Option<&RunResult>) -> Vec<Measure> {
        vec![Measure::higher("TPM", "transactions/min", run.map(tpm)), self.headline(run)]
    }

    fn headline(&self, run: Option<&RunResult>) -> Measure {
        Measure::higher("NOPM", "new orders/min", run.and_then(nopm))
    }

    fn supports_instances(&self) -> bool {
        true
    }

    fn interval_line(&self, s: &IntervalSample) -> String {
        format!(
            "{:.0} s: {:.0} TPM now, {:.0} TPM overall, avg {:.2} ms, rolled back {:.2}%",
            s.et_s, s.interval_per_min, s.per_min, s.sampled_ms, s.rollback_pct
        )
    }

    fn final_line(&self, run: &RunResult) -> String {
        let m = self.metrics(run);
        let nopm = m["nopm"].as_f64().map_or("(no counter)".into(), |v| format!("{v:.0}"));
        format!(
            "System achieved {nopm} NOPM from {:.0} TPM (transactions counted by the client)",
            m["tpm"].as_f64().unwrap_or(0.0)
        )
    }
}

/// Transactions of every kind per minute, counted by the client.
fn tpm(run: &RunResult) -> f64 {
    per_minute(run.measured.units as f64, run.elapsed_s)
}

/// New orders per minute from the database's own counter (sum of D_NEXT_O_ID), as HammerDB
/// reads it; `None` when the counter could not be read.
fn nopm(run: &RunResult) -> Option<f64> {
    run.window_counter.map(|d| per_minute(d as f64, run.elapsed_s))
}

fn per_minute(n: f64, secs: f64) -> f64 {
    if secs > 0.0 {
        60.0 * n / secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_is_a_warehouse_count() {
        assert_eq!(warehouses(None).unwrap(), 1);
        assert_eq!(warehouses(Some("20")).unwrap(), 20);
        assert_eq!(warehouses(Some("4W")).unwrap(), 4);
        for bad in ["0", "10MB", "-1", "x"] {
            assert!(warehouses(Some(bad)).unwrap_err().to_string().contains("warehouses"), "{bad}");
        }
    }
}
