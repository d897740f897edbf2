//! The five TPC-C transactions (clause 2): their requests, the two ways to run them
//! ([`Transactions`]), and the client-side SQL way, run through [`Tx`]. Every random input
//! is drawn by the caller ([`super::worker`]) before the transaction starts, so a restart
//! after a conflict repeats exactly the same request.

use super::sql::*;
use crate::driver::Outcome;
use crate::targets::sql::{Arg, DbError, Tx};

/// A New-Order line: item, supplying warehouse, quantity.
#[derive(Clone, Copy, Debug)]
pub struct Line {
    pub item: i64,
    pub supply_w: i64,
    pub qty: i64,
}

pub struct NewOrder {
    pub w: i64,
    pub d: i64,
    pub c: i64,
    /// Sorted by (supplying warehouse, item), so concurrent New-Orders lock stock rows in one
    /// order and cannot deadlock on them.
    pub lines: Vec<Line>,
    /// The request carries an unused item id on its last line and must roll back (1%).
    pub rollback: bool,
}

/// How a customer is named in Payment and Order-Status: 60% by last name.
#[derive(Clone, Debug)]
pub enum Who {
    Id(i64),
    LastName(String),
}

pub struct Payment {
    pub w: i64,
    pub d: i64,
    pub c_w: i64,
    pub c_d: i64,
    pub who: Who,
    pub amount: f64,
}

pub struct OrderStatus {
    pub w: i64,
    pub d: i64,
    pub who: Who,
}

pub struct Delivery {
    pub w: i64,
    pub carrier: i64,
}

pub struct StockLevel {
    pub w: i64,
    pub d: i64,
    pub threshold: i64,
}

/// How a terminal runs each transaction inside the transaction its session opened: as
/// client-side SQL ([`ClientSide`]) or as one stored-procedure call
/// ([`super::procedures::Procedures`]).
pub trait Transactions: Sync {
    fn new_order(&self, tx: &mut dyn Tx, r: &NewOrder) -> Result<Outcome, DbError>;
    fn payment(&self, tx: &mut dyn Tx, r: &Payment) -> Result<Outcome, DbError>;
    fn order_status(&self, tx: &mut dyn Tx, r: &OrderStatus) -> Result<Outcome, DbError>;
    /// Returns how many districts had nothing to deliver (clause 2.7.4.2: skipped, and
    /// the skip is reported).
    fn delivery(&self, tx: &mut dyn Tx, r: &Delivery) -> Result<u32, DbError>;
    fn stock_level(&self, tx: &mut dyn Tx, r: &StockLevel) -> Result<Outcome, DbError>;
}

/// The transactions as client-side SQL: one round trip per statement, except that writes
/// whose counts are not read travel with the next statement where the engine pipelines
/// ([`Tx::defer`]), so a New-Order takes about five round trips on PostgreSQL.
pub struct ClientSide;

impl Transactions for ClientSide {
    fn new_order(&self, tx: &mut dyn Tx, r: &NewOrder) -> Result<Outcome, DbError> {
        new_order(tx, r)
    }

    fn payment(&self, tx: &mut dyn Tx, r: &Payment) -> Result<Outcome, DbError> {
        payment(tx, r)
    }

    fn order_status(&self, tx: &mut dyn Tx, r: &OrderStatus) -> Result<Outcome, DbError> {
        order_status(tx, r)
    }

    fn delivery(&self, tx: &mut dyn Tx, r: &Delivery) -> Result<u32, DbError> {
        delivery(tx, r)
    }

    fn stock_level(&self, tx: &mut dyn Tx, r: &StockLevel) -> Result<Outcome, DbError> {
        stock_level(tx, r)
    }
}

fn new_order(tx: &mut dyn Tx, r: &NewOrder) -> Result<Outcome, DbError> {
    use Arg::*;
    let (w, d) = (Int(r.w), Int(r.d));
    let cw = tx.query(NO_CUSTOMER_WAREHOUSE, &[w, d, Int(r.c)])?;
    let (discount, w_tax) = (cw.real(0, 0)?, cw.real(0, 3)?);
    let dist = tx.query(NO_DISTRICT, &[w, d])?;
    let (o_id, d_tax) = (dist.int(0, 0)?, dist.real(0, 1)?);
    tx.defer(NO_NEXT_ORDER, &[w, d])?;
    let n = r.lines.len();
    let all_local = r.lines.iter().all(|l| l.supply_w == r.w);
    tx.defer(NO_INSERT_ORDER, &[Int(o_id), d, w, Int(r.c), Int(n as i64), Int(all_local as i64)])?;
    tx.defer(NO_INSERT_NEW_ORDER, &[Int(o_id), d, w])?;
    let Some(prices) = prices(tx, &r.lines)? else {
        // Clause 2.4.2.3: an unused item id means "item not found"; roll back.
        return Ok(Outcome::RolledBack);
    };
    let mut stock = locked_stock(tx, &r.lines, r.d)?;
    let mut amounts = Vec::with_capacity(n);
    for (l, price) in r.lines.iter().zip(prices) {
        let s = stock
            .iter_mut()
            .find(|s| (s.w, s.item) == (l.supply_w, l.item))
            .ok_or_else(|| DbError::Data(format!("no stock row for item {} of warehouse {}", l.item, l.supply_w)))?;
        let left = if s.qty >= l.qty + 10 { s.qty - l.qty } else { s.qty - l.qty + 91 };
        // A second line of the same item starts from this one's quantity.
        s.qty = left;
        let remote = Int((l.supply_w != r.w) as i64);
        tx.defer(NO_UPDATE_STOCK, &[Int(left), Int(l.qty), remote, Int(l.item), Int(l.supply_w)])?;
        amounts.push((l.qty as f64 * price * 100.0).round() / 100.0);
    }
    let mut values = Vec::with_capacity(9 * n);
    for (number, (l, amount)) in (1..).zip(r.lines.iter().zip(&amounts)) {
        let info = stock.iter().find(|s| (s.w, s.item) == (l.supply_w, l.item)).map_or("", |s| &s.dist_info);
        values.extend([Int(o_id), d, w, Int(number), Int(l.item), Int(l.supply_w), Int(l.qty), Real(*amount)]);
        values.push(Text(info));
    }
    tx.defer(no_insert_lines(n), &values)?;
    // The order's total is part of the terminal output; computing it keeps the client work honest.
    std::hint::black_box(amounts.iter().sum::<f64>() * (1.0 - discount) * (1.0 + w_tax + d_tax));
    Ok(Outcome::Committed)
}

/// Each line's item price, in one query; `None` when an item does not exist.
fn prices(tx: &mut dyn Tx, lines: &[Line]) -> Result<Option<Vec<f64>>, DbError> {
    let ids: Vec<Arg> = lines.iter().map(|l| Arg::Int(l.item)).collect();
    let items = tx.query(no_items(lines.len()), &ids)?;
    let mut prices = Vec::with_capacity(lines.len());
    for l in lines {
        let Some(row) = (0..items.len()).find(|&i| items.int(i, 0).is_ok_and(|id| id == l.item)) else {
            return Ok(None);
        };
        prices.push(items.real(row, 1)?);
    }
    Ok(Some(prices))
}

/// A stock row New-Order locked: its quantity and the district's `s_dist_xx`.
struct StockRow {
    w: i64,
    item: i64,
    qty: i64,
    dist_info: String,
}

/// The lines' stock rows, locked with one query per supplying warehouse (the lines are
/// sorted by warehouse and item, so every New-Order locks in one order).
fn locked_stock(tx: &mut dyn Tx, lines: &[Line], district: i64) -> Result<Vec<StockRow>, DbError> {
    let mut stock = Vec::with_capacity(lines.len());
    for group in lines.chunk_by(|a, b| a.supply_w == b.supply_w) {
        let w = group[0].supply_w;
        let args: Vec<Arg> = std::iter::once(w).chain(group.iter().map(|l| l.item)).map(Arg::Int).collect();
        let rows = tx.query(no_stocks(group.len()), &args)?;
        for i in 0..rows.len() {
            // Columns: s_i_id, s_quantity, s_data, then s_dist_01..s_dist_10.
            let dist_info = rows.text(i, 2 + district as usize)?.into_owned();
            stock.push(StockRow { w, item: rows.int(i, 0)?, qty: rows.int(i, 1)?, dist_info });
        }
    }
    Ok(stock)
}

/// The customer a last name names: the middle row (ceil(n/2)) in first-name order.
fn customer_by_name(tx: &mut dyn Tx, w: i64, d: i64, last: &str) -> Result<i64, DbError> {
    let rows = tx.query(CUSTOMERS_BY_NAME, &[Arg::Int(w), Arg::Int(d), Arg::Text(last)])?;
    if rows.is_empty() {
        return Err(DbError::Data(format!("no customer named {last} in warehouse {w}, district {d}")));
    }
    rows.int(rows.len().div_ceil(2) - 1, 0)
}

fn payment(tx: &mut dyn Tx, r: &Payment) -> Result<Outcome, DbError> {
    use Arg::*;
    let (w, d, amount) = (Int(r.w), Int(r.d), Real(r.amount));
    tx.defer(PAY_WAREHOUSE_YTD, &[amount, w])?;
    let wh = tx.query(PAY_WAREHOUSE, &[w])?;
    tx.defer(PAY_DISTRICT_YTD, &[amount, w, d])?;
    let di = tx.query(PAY_DISTRICT, &[w, d])?;
    let c = match &r.who {
        Who::Id(c) => *c,
        Who::LastName(last) => customer_by_name(tx, r.c_w, r.c_d, last)?,
    };
    let key = [Int(r.c_w), Int(r.c_d), Int(c)];
    let cust = tx.query(PAY_CUSTOMER, &key)?;
    if cust.is_empty() {
        return Err(DbError::Data(format!("customer {c} of warehouse {}, district {} is missing", r.c_w, r.c_d)));
    }
    if cust.text(0, 10)? == "BC" {
        let old = tx.query(PAY_CUSTOMER_DATA, &key)?.text(0, 0)?.into_owned();
        let mut data = format!("{c} {} {} {} {} {:.2} | {old}", r.c_d, r.c_w, r.d, r.w, r.amount);
        data.truncate(500);
        tx.defer(PAY_UPDATE_BAD_CREDIT, &[amount, amount, Text(&data), key[0], key[1], key[2]])?;
    } else {
        tx.defer(PAY_UPDATE_CUSTOMER, &[amount, amount, key[0], key[1], key[2]])?;
    }
    let h_data = format!("{}    {}", wh.text(0, 0)?, di.text(0, 0)?);
    tx.defer(PAY_INSERT_HISTORY, &[Int(c), Int(r.c_d), Int(r.c_w), d, w, amount, Text(&h_data)])?;
    Ok(Outcome::Committed)
}

fn order_status(tx: &mut dyn Tx, r: &OrderStatus) -> Result<Outcome, DbError> {
    use Arg::*;
    let c = match &r.who {
        Who::Id(c) => *c,
        Who::LastName(last) => customer_by_name(tx, r.w, r.d, last)?,
    };
    tx.query(OS_CUSTOMER, &[Int(r.w), Int(r.d), Int(c)])?;
    let order = tx.query(OS_LAST_ORDER, &[Int(r.w), Int(r.d), Int(c)])?;
    if !order.is_empty() {
        tx.query(OS_LINES, &[Int(r.w), Int(r.d), Int(order.int(0, 0)?)])?;
    }
    Ok(Outcome::Committed)
}

/// Delivers the oldest undelivered order of every district; returns how many had none.
fn delivery(tx: &mut dyn Tx, r: &Delivery) -> Result<u32, DbError> {
    use Arg::*;
    let w = Int(r.w);
    let mut skipped = 0;
    for d in 1..=super::DISTRICTS {
        let d = Int(d);
        let oldest = tx.query(DL_OLDEST_NEW_ORDER, &[w, d])?;
        if oldest.is_empty() {
            skipped += 1;
            continue;
        }
        let o = Int(oldest.int(0, 0)?);
        if tx.execute(DL_DELETE_NEW_ORDER, &[w, d, o])? == 0 {
            // A concurrent Delivery took it first (possible under read committed).
            skipped += 1;
            continue;
        }
        let c = Int(tx.query(DL_ORDER_CUSTOMER, &[w, d, o])?.int(0, 0)?);
        tx.defer(DL_SET_CARRIER, &[Int(r.carrier), w, d, o])?;
        tx.defer(DL_STAMP_LINES, &[w, d, o])?;
        let total = tx.query(DL_ORDER_TOTAL, &[w, d, o])?.real(0, 0)?;
        tx.defer(DL_CREDIT_CUSTOMER, &[Real(total), w, d, c])?;
    }
    Ok(skipped)
}

fn stock_level(tx: &mut dyn Tx, r: &StockLevel) -> Result<Outcome, DbError> {
    use Arg::*;
    let next = tx.query(SL_NEXT_ORDER, &[Int(r.w), Int(r.d)])?.int(0, 0)?;
    let low = tx.query(SL_LOW_STOCK, &[Int(r.w), Int(r.d), Int(next), Int(next - 20), Int(r.w), Int(r.threshold)])?;
    std::hint::black_box(low.int(0, 0)?);
    Ok(Outcome::Committed)
}
