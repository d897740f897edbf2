//! DS2-class e-commerce OLTP workload (DVD Store 2.1 order flow), measured in orders per
//! minute.
//!
//! An order is: log in (or register as a new customer), browse the catalogue 1..2n-1 times
//! by category, actor or title, then purchase a cart in one transaction. A purchase rolls
//! back whole when any line lacks stock; rolled-back orders still count towards OPM.
//!
//! **Restock rule** (the same on every engine, applied inside the purchase transaction):
//! when a line would leave a product with less than [`RESTOCK_FLOOR`] units, the stock is
//! left unchanged, a REORDER row records the event, and SALES still grows. This is DS2's
//! SQL Server/Oracle rule. Stock therefore never drops below min(initial, 3), only products
//! that start with 0-2 units can roll back, and the rollback rate stays steady for the
//! whole run: about 2/501 per line, or about 2% per order at the default 1..9 lines
//! ([`predicted_rollback_rate`] gives the exact figure for a built database).
//!
//! Search semantics are AND of the words on every engine ([`sql::search_text`]).

mod build;
mod data;
mod log;
mod order;
mod schema;
mod size;
mod sql;
mod words;

pub use size::Size;

use super::{Check, Measure, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, RunResult, Worker};
use crate::targets::sql as seam;
use crate::targets::{BuildMeta, Database};
use anyhow::{Context, Result};
use indicatif::ProgressBar;
use serde::Serialize;
use serde_json::json;

/// Purchases that would leave fewer units than this do not reduce the stock (restock rule).
pub const RESTOCK_FLOOR: i64 = 3;

pub const OPERATIONS: &[&str] = &["login", "new_customer", "browse", "purchase"];
const LOGIN: usize = 0;
const NEW_CUSTOMER: usize = 1;
const BROWSE: usize = 2;
const PURCHASE: usize = 3;

/// Bump when the generator or schema changes, so stale pristine databases are refused.
const FORMAT: &str = "2";

/// The order mix, with DS2's parameter names and defaults.
#[derive(Clone, Debug, Serialize, serde::Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct Mix {
    /// Percent of orders that register a new customer instead of logging in (0-100).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub pct_newcustomers: u32,
    /// Average browses per order; each order does uniform 1..2N-1.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub n_searches: u32,
    /// Average rows asked for per browse (the LIMIT); uniform 1..2N-1.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub search_batch_size: u32,
    /// Average lines per cart; uniform 1..2N-1.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub n_line_items: u32,
}

impl Default for Mix {
    fn default() -> Self {
        Self { pct_newcustomers: 20, n_searches: 3, search_batch_size: 5, n_line_items: 5 }
    }
}

pub struct Ds2 {
    size: Size,
    seed: u64,
    mix: Mix,
}

impl Ds2 {
    pub fn new(args: &WorkloadSpec, mix: &Mix) -> Result<Self> {
        Ok(Self { size: Size::parse(args.size.as_deref().unwrap_or("10MB"))?, seed: args.seed, mix: mix.clone() })
    }
}

/// Rows in the pristine database, as recorded at build time.
struct Initial {
    customers: i64,
    orders: i64,
    orderlines: i64,
}

impl Initial {
    fn from_meta(meta: &BuildMeta) -> Result<Self> {
        let get = |k: &str| -> Result<i64> {
            meta.get(k)
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("build metadata lacks '{k}'; rebuild the database"))
        };
        Ok(Self { customers: get("customers")?, orders: get("orders")?, orderlines: get("orderlines")? })
    }
}

/// What the post-run checks read from the database.
pub struct Observed {
    customers: i64,
    orders: i64,
    orderlines: i64,
    cust_hist: i64,
    orders_without_lines: i64,
    lines_without_order: i64,
    min_stock: i64,
    sales: i64,
    quantity_sold: i64,
}

/// Portable SQL (every engine) for stock levels, for the rollback prediction.
const STOCK_LEVELS_SQL: &str =
    "SELECT CAST(prod_id AS BIGINT), CAST(quan_in_stock AS BIGINT) FROM inventory ORDER BY prod_id";

impl Observed {
    /// Runs the check queries (portable SQL, every result a BIGINT) through `one`.
    fn read(mut one: impl FnMut(&str) -> Result<i64>) -> Result<Self> {
        Ok(Self {
            customers: one("SELECT count(*) FROM customers")?,
            orders: one("SELECT count(*) FROM orders")?,
            orderlines: one("SELECT count(*) FROM orderlines")?,
            cust_hist: one("SELECT count(*) FROM cust_hist")?,
            orders_without_lines: one(
                "SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM orderlines l WHERE l.orderid = o.orderid)",
            )?,
            lines_without_order: one(
                "SELECT count(*) FROM orderlines l WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.orderid = l.orderid)",
            )?,
            min_stock: one("SELECT CAST(coalesce(min(quan_in_stock), 0) AS BIGINT) FROM inventory")?,
            sales: one("SELECT CAST(coalesce(sum(sales), 0) AS BIGINT) FROM inventory")?,
            quantity_sold: one("SELECT CAST(coalesce(sum(quantity), 0) AS BIGINT) FROM orderlines")?,
        })
    }
}

impl Workload for Ds2 {
    fn name(&self) -> &'static str {
        "ds2"
    }

    fn operations(&self) -> &'static [&'static str] {
        OPERATIONS
    }

    fn build_identity(&self) -> BuildMeta {
        BuildMeta::from([
            ("workload".into(), "ds2".into()),
            ("format".into(), FORMAT.into()),
            ("size".into(), self.size.to_string()),
            ("seed".into(), self.seed.to_string()),
        ])
    }

    fn build(&self, db: &dyn Database, progress: &ProgressBar) -> Result<u64> {
        let mut conn = db.connect()?;
        let mut meta = self.build_identity();
        let rows = build::run(db, &mut conn, self.size, self.seed, progress, &mut meta)?;
        meta.insert("dbvs_version".into(), env!("CARGO_PKG_VERSION").into());
        crate::targets::write_meta(&mut conn, &meta)?;
        Ok(rows)
    }

    fn worker<'a>(&'a self, db: &'a dyn Database, meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>> {
        Initial::from_meta(meta)?;
        let rng = data::rng(self.seed ^ ((index as u64 + 1) << 40), data::Stream::Customers);
        let session = seam::session(db.connect_session()?, &sql::STATEMENTS)?;
        Ok(Box::new(order::OrderWorker::new(session, rng, self.size, self.mix.clone())))
    }

    fn check(&self, db: &dyn Database, meta: &BuildMeta, done: Option<&FromStart>) -> Result<Vec<Check>> {
        let init = Initial::from_meta(meta)?;
        let mut conn = db.connect()?;
        let seen = Observed::read(|sql| Ok(seam::adhoc(&mut conn, sql)?.int(0, 0)?))?;
        let levels = seam::adhoc(&mut conn, STOCK_LEVELS_SQL)?;
        let stocks =
            (0..levels.len()).map(|r| Ok((levels.int(r, 0)?, levels.int(r, 1)?))).collect::<Result<Vec<_>>>()?;
        let mut all = checks(&init, &seen, done);
        all.push(order::search_check(db)?);
        if let Some(done) = done {
            all.push(rollback_check(predicted_rollback_rate(&stocks, self.mix.n_line_items), done));
        }
        Ok(all)
    }

    fn params(&self) -> serde_json::Value {
        json!({ "size": self.size.to_string(), "seed": self.seed, "mix": self.mix })
    }

    fn metrics(&self, run: &RunResult) -> serde_json::Value {
        let m = &run.measured;
        let orders = m.units;
        json!({
            "opm": per_minute(orders, run.elapsed_s),
            "orders": orders,
            "purchases": orders - m.rollbacks,
            "rollbacks": m.rollbacks,
            "rollback_rate": if orders > 0 { m.rollbacks as f64 / orders as f64 } else { 0.0 },
            "retries": m.retries,
            "lock_waits": m.lock_waits,
            "latency_ms": {
                "order": m.unit_latency,
                "login": m.op_latency[LOGIN].1,
                "new_customer": m.op_latency[NEW_CUSTOMER].1,
                "browse": m.op_latency[BROWSE].1,
                "purchase": m.op_latency[PURCHASE].1,
            },
        })
    }

    fn measures(&self, run: Option<&RunResult>) -> Vec<Measure> {
        vec![self.headline(run)]
    }

    fn headline(&self, run: Option<&RunResult>) -> Measure {
        Measure::higher("OPM", "orders/min", run.map(|r| per_minute(r.measured.units, r.elapsed_s)))
    }

    fn supports_instances(&self) -> bool {
        true
    }

    fn interval_line(&self, sample: &IntervalSample) -> String {
        log::interval_line(sample)
    }

    fn final_line(&self, run: &RunResult) -> String {
        log::final_line(run)
    }
}

pub(crate) fn per_minute(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        60.0 * n as f64 / secs
    } else {
        0.0
    }
}

/// The invariants; the row counts only when the run's counts (`done`) are known.
fn checks(init: &Initial, seen: &Observed, done: Option<&FromStart>) -> Vec<Check> {
    let eq = |name: &'static str, expected: i64, found: i64| Check {
        name: name.into(),
        ok: expected == found,
        detail: format!("expected {expected}, found {found}"),
    };
    let mut all = Vec::new();
    if let Some(done) = done {
        all.push(eq("orders = initial + committed purchases", init.orders + done.committed as i64, seen.orders));
        let customers = init.customers + done.op("new_customer") as i64;
        all.push(eq("customers = initial + new customers", customers, seen.customers));
    }
    all.extend([
        eq(
            "orderlines have one cust_hist row each",
            seen.orderlines - init.orderlines,
            seen.cust_hist - init.orderlines,
        ),
        eq("every order has lines", 0, seen.orders_without_lines),
        eq("no orderline without its order", 0, seen.lines_without_order),
        eq("inventory sales = units sold", seen.quantity_sold, seen.sales),
        Check {
            name: "inventory never negative".into(),
            ok: seen.min_stock >= 0,
            detail: format!("lowest stock {}", seen.min_stock),
        },
    ]);
    all
}

/// Below this many orders the rollback rate is too noisy to judge.
const MIN_ORDERS_TO_JUDGE: u64 = 500;

/// The restock rule keeps the rollback rate at its predicted value; a rate more than five
/// standard errors off (a one-in-a-million fluke) means the rule or the purchase is broken.
fn rollback_check(predicted: f64, done: &FromStart) -> Check {
    let n = done.committed + done.rolled_back;
    let name = "rollback rate matches the restock rule";
    if n < MIN_ORDERS_TO_JUDGE {
        return Check {
            name: name.into(),
            ok: true,
            detail: format!("not judged: only {n} orders (needs {MIN_ORDERS_TO_JUDGE})"),
        };
    }
    let observed = done.rolled_back as f64 / n as f64;
    let se = (predicted * (1.0 - predicted) / n as f64).sqrt().max(0.5 / n as f64);
    Check {
        name: name.into(),
        ok: (observed - predicted).abs() <= 5.0 * se,
        detail: format!("predicted {:.2}%, observed {:.2}% over {n} orders", 100.0 * predicted, 100.0 * observed),
    }
}

/// The rollback rate the restock rule implies for the given stock levels (see the module
/// docs): a line fails when its quantity (uniform 1..=3) exceeds a stock below the floor,
/// and an order of uniform 1..2n-1 lines rolls back when any line fails.
pub fn predicted_rollback_rate(stocks: &[(i64, i64)], n_line_items: u32) -> f64 {
    let products = stocks.len() as i64;
    let hot = products / data::HOT_EVERY;
    let total_weight = (products + 9 * hot) as f64;
    let p_line: f64 = stocks
        .iter()
        .filter(|(_, s)| *s < RESTOCK_FLOOR)
        .map(|(id, s)| {
            let weight = if id % data::HOT_EVERY == 0 { 10.0 } else { 1.0 };
            weight * (3 - s.max(&0)) as f64 / 3.0
        })
        .sum::<f64>()
        / total_weight;
    let max_lines = 2 * n_line_items - 1;
    let survive: f64 = (1..=max_lines).map(|n| (1.0 - p_line).powi(n as i32)).sum::<f64>() / max_lines as f64;
    1.0 - survive
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicted_rate_matches_the_closed_form() {
        // One product of 501 at each stock level 0..=500: p_line = (1 + 2/3 + 1/3) / 501.
        let stocks: Vec<_> = (0..=500).map(|s| (s + 1, s)).collect();
        let p: f64 = 2.0 / 501.0;
        let expected = 1.0 - (1..=9).map(|n| (1.0 - p).powi(n)).sum::<f64>() / 9.0;
        assert!((predicted_rollback_rate(&stocks, 5) - expected).abs() < 1e-12);
        assert!((expected - 0.0198).abs() < 0.001);
    }

    #[test]
    fn checks_catch_a_lost_order() {
        let init = Initial { customers: 10, orders: 5, orderlines: 20 };
        let seen = Observed {
            customers: 11,
            orders: 7,
            orderlines: 25,
            cust_hist: 25,
            orders_without_lines: 0,
            lines_without_order: 0,
            min_stock: 0,
            sales: 50,
            quantity_sold: 50,
        };
        let done = FromStart { committed: 3, rolled_back: 1, ops: [("new_customer".into(), 1)].into() };
        let c = checks(&init, &seen, Some(&done));
        assert!(!c[0].ok && c[0].detail == "expected 8, found 7");
        assert!(c[1..].iter().all(|c| c.ok));
    }
}
