//! Seed 003's ten benchmarks in five categories. A *unit* is one benchmark repeated a
//! calibrated number of iterations and timed as a whole; setup and restoration around the
//! timed part put the database back as it was, so inserts and deletes never drift from one
//! unit to the next.

use super::data::{customer_id, date, Sizes};
use super::schema::{self, EMPLOYEE_SALES_BY_COUNTRY};
use crate::targets::sql::{drain, exec};
use crate::targets::{backup, Engine};
use crate::targets::{Connection, Database};
use anyhow::{Context, Result};
use std::time::{Duration, Instant};

pub struct Benchmark {
    pub key: &'static str,
    pub category: &'static str,
    pub name: &'static str,
    /// Whether every engine reports the rows an iteration touched. `CREATE TABLE AS` (5) and
    /// backups (10) do not: their row count is left out rather than shown as 0.
    pub counts_rows: bool,
}

pub const ALL: [Benchmark; 10] = [
    Benchmark { key: "b1", category: "retrieve", name: "index seek on order date", counts_rows: true },
    Benchmark { key: "b2", category: "retrieve", name: "scan for ship country", counts_rows: true },
    Benchmark { key: "b3", category: "retrieve", name: "orders join customers", counts_rows: true },
    Benchmark { key: "b4", category: "retrieve", name: "invoices view", counts_rows: true },
    Benchmark { key: "b5", category: "retrieve", name: "sales by country into temp table", counts_rows: false },
    Benchmark { key: "b6", category: "insert", name: "orders into temp table", counts_rows: true },
    Benchmark { key: "b7", category: "insert", name: "new orders", counts_rows: true },
    Benchmark { key: "b8", category: "update", name: "update orders", counts_rows: true },
    Benchmark { key: "b9", category: "delete", name: "delete orders", counts_rows: true },
    Benchmark { key: "b10", category: "backup", name: "full backup", counts_rows: false },
];

/// The operation names the driver records, one per benchmark.
pub const KEYS: &[&str] = &["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10"];

const SEEK: &str = "SELECT order_id, customer_id, employee_id, order_date, freight FROM orders \
    WHERE order_date >= '1996-01-01'";
const SCAN: &str = "SELECT order_id, customer_id, order_date, ship_city, ship_country FROM orders \
    WHERE ship_country = 'Germany'";
const JOIN: &str = "SELECT o.order_id, o.order_date, o.freight, c.company_name, c.city, c.country \
    FROM orders o JOIN customers c ON c.customer_id = o.customer_id";
const INVOICES: &str = "SELECT * FROM invoices";
/// Benchmark 8 flips the sign of these orders' freight: exact in floating point, so an
/// even number of flips restores every value.
const FLIP_FREIGHT: &str = "UPDATE orders SET freight = -freight WHERE order_date >= '1998-01-01'";
/// New orders per iteration of benchmark 7, with this many lines each.
const NEW_ORDERS: i64 = 10;
const NEW_LINES: i64 = 3;
/// Orders removed per iteration of benchmark 9.
const DELETED: i64 = 10;

/// The first order benchmark 9 deletes: past the oldest twentieth, so a long unit still
/// finds orders to remove.
fn first_deleted(sizes: &Sizes) -> i64 {
    sizes.orders / 20 + 1
}

/// What one unit did.
pub struct UnitResult {
    pub took: Duration,
    /// Rows read, written or removed per iteration (0 where engines do not say alike:
    /// CREATE TABLE AS, backups).
    pub rows: u64,
    /// Setup and restoration around the timed part.
    pub untimed: Duration,
    /// Bytes of the last backup (benchmark 10).
    pub backup_bytes: Option<u64>,
    /// Times the caches were emptied inside the unit (cold iterations).
    pub cache_clears: u64,
}

/// The most iterations a unit of benchmark `b` can do: deletes need orders to remove.
pub fn max_iterations(b: usize, sizes: &Sizes) -> u64 {
    match b {
        8 => ((sizes.orders - first_deleted(sizes)) / DELETED).max(1) as u64,
        _ => 1_000_000,
    }
}

/// The timed iterations of one unit. With `cold` the caches are emptied before each one
/// (the seed cleared them between executions): the server restarted where dbvs manages it,
/// the page cache dropped and the session opened again, all outside the timed part.
struct Iterations<'a> {
    db: &'a dyn Database,
    cold: bool,
    count: u64,
    clears: std::cell::Cell<u64>,
}

impl Iterations<'_> {
    /// Times `count` runs of `body`; the rows of the last.
    fn timed(
        &self,
        conn: &mut Connection,
        mut body: impl FnMut(&mut Connection, u64) -> Result<u64>,
    ) -> Result<(Duration, u64)> {
        let mut took = Duration::ZERO;
        let mut rows = 0;
        for i in 0..self.count {
            if self.cold {
                self.db.go_cold()?;
                *conn = self.db.connect()?;
                self.clears.set(self.clears.get() + 1);
            }
            let t = Instant::now();
            rows = body(conn, i)?;
            took += t.elapsed();
        }
        Ok((took, rows))
    }
}

/// How one unit runs: which benchmark (0-based), how many iterations, and whether the caches
/// are emptied before every iteration.
#[derive(Clone, Copy)]
pub struct UnitPlan {
    pub benchmark: usize,
    pub iterations: u64,
    pub cold_iterations: bool,
    /// Keep the unit's last backup for the plaintext scan.
    pub keep_backup: bool,
}

/// Runs one unit as `plan` says.
pub fn unit(conn: &mut Connection, db: &dyn Database, sizes: &Sizes, plan: UnitPlan) -> Result<UnitResult> {
    let UnitPlan { benchmark: b, iterations, cold_iterations, keep_backup } = plan;
    let it = Iterations { db, cold: cold_iterations, count: iterations, clears: Default::default() };
    let mut backup_bytes = None;
    let start = Instant::now();
    let (took, rows) = match b {
        0 => it.timed(conn, |c, _| drain(c, SEEK))?,
        1 => it.timed(conn, |c, _| drain(c, SCAN))?,
        2 => it.timed(conn, |c, _| drain(c, JOIN))?,
        3 => it.timed(conn, |c, _| drain(c, INVOICES))?,
        4 => it.timed(conn, |conn, _| {
            exec(conn, &format!("CREATE TEMPORARY TABLE sales_by_country AS {EMPLOYEE_SALES_BY_COUNTRY}"))?;
            exec(conn, "DROP TABLE sales_by_country")?;
            Ok(0)
        })?,
        5 => {
            let create = format!("CREATE TEMPORARY TABLE orders_copy ({})", temp_columns());
            it.timed(conn, |conn, _| {
                exec(conn, &create)?;
                let n = exec(conn, "INSERT INTO orders_copy SELECT * FROM orders")?;
                exec(conn, "DROP TABLE orders_copy")?;
                Ok(n)
            })?
        }
        6 => {
            let r = it.timed(conn, |c, i| new_orders(c, sizes, i))?;
            let last = sizes.orders;
            exec(conn, &format!("DELETE FROM order_details WHERE order_id > {last}"))?;
            exec(conn, &format!("DELETE FROM orders WHERE order_id > {last}"))?;
            r
        }
        7 => {
            let r = it.timed(conn, |c, _| exec(c, FLIP_FREIGHT))?;
            if iterations % 2 == 1 {
                exec(conn, FLIP_FREIGHT)?;
            }
            r
        }
        8 => delete_orders(conn, sizes, &it)?,
        9 => {
            let mut files = Vec::new();
            let r = it.timed(conn, |_, i| {
                files.push(db.backup(&format!("b10-{i}"))?);
                Ok(0)
            });
            backup_bytes = files.last().map(|f| backup::size(f));
            let kept = if keep_backup { files.pop() } else { None };
            for f in &files {
                backup::remove(f);
            }
            if let Some(last) = kept {
                backup::keep_for_scan(&last)?;
            }
            r?
        }
        _ => anyhow::bail!("there is no benchmark {}", b + 1),
    };
    let cache_clears = it.clears.get();
    Ok(UnitResult { took, rows, untimed: start.elapsed().saturating_sub(took), backup_bytes, cache_clears })
}

/// The orders table's columns without keys, for its temporary copy.
fn temp_columns() -> String {
    schema::ORDER_COLUMNS
        .replace(" NOT NULL PRIMARY KEY", "")
        .split(", ")
        .map(|c| c.split(" REFERENCES").next().unwrap_or(c))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Benchmark 7's iteration `i`: ten orders with three lines each, in one transaction, with
/// ids after the loaded ones (removed again after the unit).
fn new_orders(conn: &mut Connection, sizes: &Sizes, i: u64) -> Result<u64> {
    exec(conn, "BEGIN")?;
    for k in 0..NEW_ORDERS {
        let id = sizes.orders + 1 + i as i64 * NEW_ORDERS + k;
        let customer = customer_id(id % sizes.customers + 1);
        let day = date(10_354 + k);
        exec(
            conn,
            &format!(
                "INSERT INTO orders (order_id, customer_id, employee_id, order_date, required_date, ship_via, freight, \
                 ship_name, ship_address, ship_city, ship_postal_code, ship_country) VALUES ({id}, '{customer}', {}, \
                 '{day}', '{day}', {}, 12.50, 'New order', '1 Main Street', 'Boston', '02101', 'USA')",
                id % 9 + 1,
                id % 3 + 1
            ),
        )?;
        for l in 0..NEW_LINES {
            exec(
                conn,
                &format!(
                    "INSERT INTO order_details (order_id, product_id, unit_price, quantity, discount) \
                     VALUES ({id}, {}, 18.00, {}, 0)",
                    (id + l * 11) % 77 + 1,
                    l + 1
                ),
            )?;
        }
    }
    exec(conn, "COMMIT")?;
    Ok((NEW_ORDERS * (1 + NEW_LINES)) as u64)
}

/// Benchmark 9: each iteration deletes ten orders with their lines, in one transaction.
/// The rows are saved before the unit and put back after it.
fn delete_orders(conn: &mut Connection, sizes: &Sizes, it: &Iterations) -> Result<(Duration, u64)> {
    let iterations = it.count;
    let first = first_deleted(sizes);
    let end = first + iterations as i64 * DELETED;
    let range = format!("order_id >= {first} AND order_id < {end}");
    let ddl = |t: &str| match conn.engine() {
        Engine::Mariadb => format!("CREATE TABLE {t} ENGINE=InnoDB AS "),
        _ => format!("CREATE TABLE {t} AS "),
    };
    let (save_orders, save_lines) = (ddl("bignw_saved_orders"), ddl("bignw_saved_lines"));
    exec(conn, &format!("{save_orders}SELECT * FROM orders WHERE {range}"))?;
    exec(conn, &format!("{save_lines}SELECT * FROM order_details WHERE {range}"))?;
    let result = it.timed(conn, |conn, i| {
        let lo = first + i as i64 * DELETED;
        let these = format!("order_id >= {lo} AND order_id < {}", lo + DELETED);
        exec(conn, "BEGIN")?;
        let lines = exec(conn, &format!("DELETE FROM order_details WHERE {these}"))?;
        let orders = exec(conn, &format!("DELETE FROM orders WHERE {these}"))?;
        exec(conn, "COMMIT")?;
        Ok(lines + orders)
    });
    if result.is_err() {
        let _ = exec(conn, "ROLLBACK");
    }
    exec(conn, "INSERT INTO orders SELECT * FROM bignw_saved_orders")
        .and_then(|_| exec(conn, "INSERT INTO order_details SELECT * FROM bignw_saved_lines"))
        .context("putting the deleted orders back")?;
    exec(conn, "DROP TABLE bignw_saved_orders")?;
    exec(conn, "DROP TABLE bignw_saved_lines")?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_copy_has_the_columns_without_keys() {
        let c = temp_columns();
        assert!(c.starts_with("order_id INTEGER, customer_id VARCHAR(10), employee_id INTEGER"), "{c}");
        assert!(!c.contains("REFERENCES") && !c.contains("PRIMARY"), "{c}");
        assert_eq!(c.split(", ").count(), 14);
        assert_eq!(ALL.iter().map(|b| b.key).collect::<Vec<_>>(), KEYS);
    }
}
