//! The TPC-C initial population (clause 4.3.3.1) and the parallel loader.
//!
//! The load is split into parts (the items, and per warehouse: its stock, its customers
//! with their history, its orders with their lines) that loader threads take from a shared
//! queue, as HammerDB splits warehouses among its build users. Each part draws from its own
//! random stream, so the data is the same for a seed whatever the thread count or engine.

use super::random::{self, Constants};
use super::{CUSTOMERS_PER_DISTRICT, DISTRICTS, ITEMS, NEW_ORDERS_FROM};
use crate::targets::sql::bulk::{Cell, Row, Sink};
use anyhow::Result;
use indicatif::ProgressBar;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The date every loaded row carries. Fixed, so builds are reproducible.
pub const LOAD_TIME: &str = "2026-01-01 00:00:00";

/// Rows handed to a sink at a time.
pub const CHUNK: usize = 2000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Item,
    Warehouse,
    District,
    Stock,
    Customer,
    History,
    Orders,
    NewOrder,
    OrderLine,
}

impl Table {
    pub fn name(self) -> &'static str {
        match self {
            Table::Item => "item",
            Table::Warehouse => "warehouse",
            Table::District => "district",
            Table::Stock => "stock",
            Table::Customer => "customer",
            Table::History => "history",
            Table::Orders => "orders",
            Table::NewOrder => "new_order",
            Table::OrderLine => "order_line",
        }
    }

    /// Columns in the order the generator fills them (HISTORY's are named: it has no key).
    pub fn columns(self) -> usize {
        match self {
            Table::Item => 5,
            Table::Warehouse => 9,
            Table::District => 11,
            Table::Stock => 17,
            Table::Customer => 21,
            Table::History => 8,
            Table::Orders => 8,
            Table::NewOrder => 3,
            Table::OrderLine => 10,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Part {
    Items,
    Warehouse(i64),
    Stock(i64),
    Customers(i64),
    Orders(i64),
}

fn parts(warehouses: i64) -> Vec<Part> {
    let mut p = vec![Part::Items];
    for w in 1..=warehouses {
        // The big parts first, so the last thread to finish has little left to do.
        p.extend([Part::Orders(w), Part::Stock(w), Part::Customers(w), Part::Warehouse(w)]);
    }
    p
}

/// Rows the whole load writes, for the progress bar.
pub fn total_rows(warehouses: i64) -> u64 {
    let per_w = 1 + DISTRICTS + ITEMS + 2 * DISTRICTS * CUSTOMERS_PER_DISTRICT;
    let orders = DISTRICTS * CUSTOMERS_PER_DISTRICT;
    let new_orders = DISTRICTS * (CUSTOMERS_PER_DISTRICT - NEW_ORDERS_FROM + 1);
    (ITEMS + warehouses * (per_w + orders + new_orders + 10 * orders)) as u64
}

/// Generates every part on `sinks.len()` threads, each thread writing to its own sink.
pub fn generate(
    warehouses: i64,
    seed: u64,
    load: Constants,
    sinks: Vec<Box<dyn Sink + '_>>,
    progress: &ProgressBar,
) -> Result<()> {
    let parts = parts(warehouses);
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = sinks
            .into_iter()
            .map(|mut sink| {
                let (parts, next) = (&parts, &next);
                s.spawn(move || -> Result<()> {
                    while let Some(&part) = parts.get(next.fetch_add(1, Relaxed)) {
                        if crate::interrupt::interrupted() {
                            return Err(crate::interrupt::Interrupted.into());
                        }
                        let mut out = Chunker::new(sink.as_mut(), progress);
                        generate_part(part, seed, load, &mut out)?;
                        out.flush()?;
                        sink.end_part()?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}

/// Groups rows into chunks for the sink, a chunk per table: a part that alternates tables
/// (an order, then its lines) still loads in chunks, not in a statement per order.
struct Chunker<'a> {
    sink: &'a mut dyn Sink,
    /// Rows waiting, by table, in the order their tables first came.
    waiting: Vec<(Table, Vec<Row>)>,
    progress: &'a ProgressBar,
}

impl<'a> Chunker<'a> {
    fn new(sink: &'a mut dyn Sink, progress: &'a ProgressBar) -> Self {
        Self { sink, waiting: Vec::new(), progress }
    }

    fn emit(&mut self, table: Table, row: Row) -> Result<()> {
        debug_assert_eq!(row.len(), table.columns(), "{table:?}");
        let i = match self.waiting.iter().position(|(t, _)| *t == table) {
            Some(i) => i,
            None => {
                self.waiting.push((table, Vec::with_capacity(CHUNK)));
                self.waiting.len() - 1
            }
        };
        let rows = &mut self.waiting[i].1;
        rows.push(row);
        if rows.len() >= CHUNK {
            self.put(i)?;
        }
        Ok(())
    }

    fn put(&mut self, i: usize) -> Result<()> {
        let (table, rows) = &mut self.waiting[i];
        if !rows.is_empty() {
            self.sink.put(table.name(), rows)?;
            self.progress.inc(rows.len() as u64);
            rows.clear();
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        (0..self.waiting.len()).try_for_each(|i| self.put(i))
    }
}

fn text(s: impl Into<String>) -> Cell {
    Cell::Text(s.into())
}

/// Cents as a money value.
fn money(cents: i64) -> Cell {
    Cell::Real(cents as f64 / 100.0)
}

/// A tax or discount rate with four decimals, `0..=max_bp` basis points.
fn rate(rng: &mut impl Rng, max_bp: i64) -> Cell {
    Cell::Real(rng.random_range(0..=max_bp) as f64 / 10_000.0)
}

fn address(rng: &mut impl Rng) -> [Cell; 5] {
    [
        text(random::astring(rng, 10, 20)),
        text(random::astring(rng, 10, 20)),
        text(random::astring(rng, 10, 20)),
        text(random::letters(rng, 2, 2)),
        text(random::zip(rng)),
    ]
}

fn part_rng(seed: u64, part: Part) -> ChaCha8Rng {
    let (kind, w) = match part {
        Part::Items => (1, 0),
        Part::Warehouse(w) => (2, w),
        Part::Stock(w) => (3, w),
        Part::Customers(w) => (4, w),
        Part::Orders(w) => (5, w),
    };
    ChaCha8Rng::seed_from_u64(seed ^ (kind << 56) ^ (w as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn generate_part(part: Part, seed: u64, load: Constants, out: &mut Chunker) -> Result<()> {
    let rng = &mut part_rng(seed, part);
    match part {
        Part::Items => {
            for i in 1..=ITEMS {
                let row = vec![
                    Cell::Int(i),
                    Cell::Int(rng.random_range(1..=10_000)),
                    text(random::astring(rng, 14, 24)),
                    money(rng.random_range(100..=10_000)),
                    text(random::data_with_original(rng)),
                ];
                out.emit(Table::Item, row)?;
            }
        }
        Part::Warehouse(w) => {
            let mut row = vec![Cell::Int(w), text(random::astring(rng, 6, 10))];
            row.extend(address(rng));
            row.extend([rate(rng, 2000), money(30_000_000)]);
            out.emit(Table::Warehouse, row)?;
            for d in 1..=DISTRICTS {
                let mut row = vec![Cell::Int(d), Cell::Int(w), text(random::astring(rng, 6, 10))];
                row.extend(address(rng));
                row.extend([rate(rng, 2000), money(3_000_000), Cell::Int(CUSTOMERS_PER_DISTRICT + 1)]);
                out.emit(Table::District, row)?;
            }
        }
        Part::Stock(w) => {
            for i in 1..=ITEMS {
                let mut row = vec![Cell::Int(i), Cell::Int(w), Cell::Int(rng.random_range(10..=100))];
                row.extend((0..10).map(|_| text(random::astring(rng, 24, 24))));
                row.extend([Cell::Int(0), Cell::Int(0), Cell::Int(0), text(random::data_with_original(rng))]);
                out.emit(Table::Stock, row)?;
            }
        }
        Part::Customers(w) => {
            for d in 1..=DISTRICTS {
                for c in 1..=CUSTOMERS_PER_DISTRICT {
                    out.emit(Table::Customer, customer(rng, w, d, c, load))?;
                }
                for c in 1..=CUSTOMERS_PER_DISTRICT {
                    let row = vec![
                        Cell::Int(c),
                        Cell::Int(d),
                        Cell::Int(w),
                        Cell::Int(d),
                        Cell::Int(w),
                        text(LOAD_TIME),
                        money(1000),
                        text(random::astring(rng, 12, 24)),
                    ];
                    out.emit(Table::History, row)?;
                }
            }
        }
        Part::Orders(w) => orders(rng, w, out)?,
    }
    Ok(())
}

/// A warehouse's orders, district by district: each customer's one order (those before
/// `NEW_ORDERS_FROM` delivered) with its 5-15 lines, then the undelivered new orders.
fn orders(rng: &mut ChaCha8Rng, w: i64, out: &mut Chunker) -> Result<()> {
    for d in 1..=DISTRICTS {
        let mut customers: Vec<i64> = (1..=CUSTOMERS_PER_DISTRICT).collect();
        customers.shuffle(rng);
        let mut lines = Vec::with_capacity(15);
        for (o, &c) in (1..).zip(&customers) {
            let delivered = o < NEW_ORDERS_FROM;
            let count = rng.random_range(5..=15);
            let carrier = if delivered { Cell::Int(rng.random_range(1..=10)) } else { Cell::Null };
            let row = vec![
                Cell::Int(o),
                Cell::Int(c),
                Cell::Int(d),
                Cell::Int(w),
                text(LOAD_TIME),
                carrier,
                Cell::Int(count),
                Cell::Int(1),
            ];
            out.emit(Table::Orders, row)?;
            lines.clear();
            for n in 1..=count {
                lines.push(vec![
                    Cell::Int(o),
                    Cell::Int(d),
                    Cell::Int(w),
                    Cell::Int(n),
                    Cell::Int(rng.random_range(1..=ITEMS)),
                    Cell::Int(w),
                    if delivered { text(LOAD_TIME) } else { Cell::Null },
                    Cell::Int(5),
                    if delivered { money(0) } else { money(rng.random_range(1..=999_999)) },
                    text(random::astring(rng, 24, 24)),
                ]);
            }
            for l in lines.drain(..) {
                out.emit(Table::OrderLine, l)?;
            }
        }
        for o in NEW_ORDERS_FROM..=CUSTOMERS_PER_DISTRICT {
            out.emit(Table::NewOrder, vec![Cell::Int(o), Cell::Int(d), Cell::Int(w)])?;
        }
    }
    Ok(())
}

fn customer(rng: &mut ChaCha8Rng, w: i64, d: i64, c: i64, load: Constants) -> Row {
    let last = if c <= 1000 { c - 1 } else { random::nurand(rng, random::A_LAST, load.last, 0, 999) };
    let mut row = vec![
        Cell::Int(c),
        Cell::Int(d),
        Cell::Int(w),
        text(random::letters(rng, 8, 16)),
        text("OE"),
        text(random::last_name(last)),
    ];
    row.extend(address(rng));
    let credit = if rng.random_range(0..10) == 0 { "BC" } else { "GC" };
    let mut data = random::astring(rng, 300, 500);
    // Every tenth customer carries the plaintext canary, so a scan of the files at rest can
    // tell whether they are readable.
    if c % 10 == 0 {
        data.replace_range(..crate::workloads::CANARY.len(), crate::workloads::CANARY);
    }
    row.extend([
        text(random::nstring(rng, 16)),
        text(LOAD_TIME),
        text(credit),
        money(5_000_000),
        rate(rng, 5000),
        money(-1000),
        money(1000),
        Cell::Int(1),
        Cell::Int(0),
        text(data),
    ]);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts rows per table, and the sink's calls.
    struct Count(std::collections::BTreeMap<String, u64>, Vec<Row>, u64);
    impl Sink for Count {
        fn put(&mut self, table: &str, rows: &[Row]) -> Result<()> {
            *self.0.entry(table.to_string()).or_default() += rows.len() as u64;
            self.2 += 1;
            if table == Table::Customer.name() {
                self.1.extend_from_slice(&rows[..rows.len().min(5)]);
            }
            Ok(())
        }
        fn end_part(&mut self) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn one_warehouse_has_the_spec_cardinalities_and_is_deterministic() {
        let load = Constants { last: 10, customer: 20, item: 30 };
        let run = |threads: usize| {
            let mut counts: Vec<Count> = (0..threads).map(|_| Count(Default::default(), vec![], 0)).collect();
            let sinks = counts.iter_mut().map(|c| Box::new(c) as Box<dyn Sink + '_>).collect();
            generate(1, 5, load, sinks, &ProgressBar::hidden()).unwrap();
            let mut all = std::collections::BTreeMap::new();
            for c in &counts {
                for (k, v) in &c.0 {
                    *all.entry(k.clone()).or_insert(0) += v;
                }
            }
            (all, counts.iter().map(|c| c.2).sum::<u64>())
        };
        let (one, puts) = run(1);
        assert_eq!(one["item"], 100_000);
        assert_eq!(one["stock"], 100_000);
        assert_eq!(one["customer"], 30_000);
        assert_eq!(one["history"], 30_000);
        assert_eq!(one["orders"], 30_000);
        assert_eq!(one["new_order"], 9_000);
        assert!((280_000..320_000).contains(&one["order_line"]), "{}", one["order_line"]);
        // An order and its lines alternate: each table still goes in whole chunks.
        let rows: u64 = one.values().sum();
        assert!(puts < rows / CHUNK as u64 + 60, "{puts} puts for {rows} rows");
        let sum = rows as f64;
        assert!((sum / total_rows(1) as f64 - 1.0).abs() < 0.02, "{sum} vs estimate {}", total_rows(1));
        assert_eq!(run(3).0, one, "thread count must not change the data");
    }

    impl Sink for &mut Count {
        fn put(&mut self, table: &str, rows: &[Row]) -> Result<()> {
            (**self).put(table, rows)
        }
        fn end_part(&mut self) -> Result<()> {
            Ok(())
        }
    }
}
