//! TPC-C consistency conditions 1-4 (clause 3.3.2), plus dbvs's own row-count invariants
//! when the run's counts are known. Each condition is one portable query counting the
//! warehouses or districts that violate it.

use super::{CUSTOMERS_PER_DISTRICT, DISTRICTS};
use crate::driver::FromStart;
use crate::targets::sql::{DbError, Rows};
use crate::workloads::Check;

/// (name, query counting violations).
const CONDITIONS: &[(&str, &str)] = &[
    (
        "condition 1: W_YTD = sum(D_YTD) per warehouse",
        "SELECT count(*) FROM warehouse WHERE abs(w_ytd - (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id)) > 0.01",
    ),
    (
        "condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district",
        "SELECT count(*) FROM district WHERE d_next_o_id - 1 <> \
         (SELECT max(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id) \
         OR d_next_o_id - 1 <> coalesce((SELECT max(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id), \
         d_next_o_id - 1)",
    ),
    (
        "condition 3: NEW_ORDER ids per district are contiguous",
        "SELECT count(*) FROM (SELECT no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1 AS span, count(*) AS n \
         FROM new_order GROUP BY no_w_id, no_d_id) x WHERE span <> n",
    ),
    (
        "condition 4: sum(O_OL_CNT) = ORDER_LINE rows per district",
        "SELECT count(*) FROM (SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS ol_cnt FROM orders GROUP BY o_w_id, o_d_id) o \
         WHERE ol_cnt <> (SELECT count(*) FROM order_line WHERE ol_w_id = o.o_w_id AND ol_d_id = o.o_d_id)",
    ),
];

/// The New-Order counter HammerDB reads for NOPM: it moves only when a New-Order commits.
pub const NEXT_ORDER_SUM: &str = "SELECT sum(d_next_o_id) FROM district";

/// Runs the checks with `query` (one portable statement at a time). `done` carries the
/// run's counts; without it (`dbvs check`), only the spec's conditions are checked.
pub fn run(
    mut query: impl FnMut(&str) -> Result<Rows, DbError>,
    warehouses: i64,
    done: Option<&FromStart>,
) -> anyhow::Result<Vec<Check>> {
    let mut checks = Vec::new();
    for (name, sql) in CONDITIONS {
        let bad = query(sql)?.int(0, 0)?;
        checks.push(Check {
            name: (*name).into(),
            ok: bad == 0,
            detail: format!("{bad} violating warehouses or districts"),
        });
    }
    let Some(done) = done else { return Ok(checks) };
    let initial = warehouses * DISTRICTS * CUSTOMERS_PER_DISTRICT;
    let new_orders = done.op("new_order").saturating_sub(done.rolled_back) as i64;
    let same = |name: &'static str, found: i64, want: i64| Check {
        name: name.into(),
        ok: found == want,
        detail: format!("{found} vs {want}"),
    };
    let next = query(NEXT_ORDER_SUM)?.int(0, 0)?;
    checks.push(same(
        "sum(D_NEXT_O_ID) moved by the committed New-Orders",
        next - warehouses * DISTRICTS * (CUSTOMERS_PER_DISTRICT + 1),
        new_orders,
    ));
    checks.push(same(
        "ORDERS rows = initial + committed New-Orders",
        query("SELECT count(*) FROM orders")?.int(0, 0)?,
        initial + new_orders,
    ));
    checks.push(same(
        "HISTORY rows = initial + Payments",
        query("SELECT count(*) FROM history")?.int(0, 0)?,
        initial + done.op("payment") as i64,
    ));
    checks.push(rollback_check(done.op("new_order"), done.rolled_back));
    Ok(checks)
}

/// 1% of New-Orders must roll back (clause 2.4.1.4); the observed share must be within five
/// standard errors of that.
fn rollback_check(new_orders: u64, rolled_back: u64) -> Check {
    let n = new_orders as f64;
    let rate = if n > 0.0 { rolled_back as f64 / n } else { 0.0 };
    let se = (0.01 * 0.99 / n.max(1.0)).sqrt();
    Check {
        name: "New-Order rollbacks near 1%".into(),
        ok: (rate - 0.01).abs() <= 5.0 * se + 1e-12,
        detail: format!("{rolled_back} of {new_orders} ({:.2}%, allowed 1% +- {:.2}%)", 100.0 * rate, 500.0 * se),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollback_rate_must_be_near_one_percent() {
        assert!(rollback_check(10_000, 100).ok);
        assert!(rollback_check(10_000, 125).ok);
        assert!(!rollback_check(10_000, 200).ok);
        assert!(!rollback_check(10_000, 0).ok);
        assert!(rollback_check(20, 0).ok, "a short run has a wide band");
    }
}
