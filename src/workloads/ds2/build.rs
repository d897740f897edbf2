//! The DS2 build pipeline: one thread generates rows while another loads them through the
//! engine's bulk path, so generation and insertion overlap on two cores. Each batch is
//! committed as one part.

use super::data::{self, Customer, Order, Product, Stream};
use super::schema;
use super::size::Size;
use crate::interrupt::{self, Interrupted};
use crate::targets::sql::bulk::{self, Cell, Row};
use crate::targets::sql::{self as seam};
use crate::targets::{BuildMeta, Connection, Database};
use anyhow::Result;
use indicatif::ProgressBar;
use std::sync::mpsc::sync_channel;

const BATCH: usize = 20_000;

pub enum Batch {
    Products(Vec<Product>),
    Customers(Vec<Customer>),
    Orders(Vec<Order>),
    /// (product, stock, sales)
    Inventory(Vec<(i64, i64, i64)>),
}

impl Batch {
    /// Rows this batch adds across all tables (an order adds its lines and history too).
    fn rows(&self) -> u64 {
        match self {
            Batch::Products(v) => v.len() as u64,
            Batch::Customers(v) => v.len() as u64,
            Batch::Orders(v) => v.iter().map(|o| 1 + 2 * o.lines.len() as u64).sum(),
            Batch::Inventory(v) => v.len() as u64,
        }
    }
}

impl Batch {
    /// The batch as table rows, in each table's column order.
    fn tables(&self) -> Vec<(&'static str, Vec<Row>)> {
        let text = |s: &str| Cell::Text(s.to_string());
        match self {
            Batch::Products(v) => vec![(
                "products",
                v.iter()
                    .map(|p| {
                        vec![
                            Cell::Int(p.id),
                            Cell::Int(p.category.into()),
                            text(&p.title),
                            text(&p.actor),
                            Cell::Real(p.price),
                            Cell::Int(p.special.into()),
                            Cell::Int(p.common_prod_id),
                        ]
                    })
                    .collect(),
            )],
            Batch::Customers(v) => vec![("customers", v.iter().map(customer_row).collect())],
            Batch::Orders(v) => vec![
                (
                    "orders",
                    v.iter()
                        .map(|o| {
                            vec![
                                Cell::Int(o.id),
                                text(&o.date),
                                Cell::Int(o.customer),
                                Cell::Real(o.net),
                                Cell::Real(o.tax),
                                Cell::Real(o.total),
                            ]
                        })
                        .collect(),
                ),
                (
                    "orderlines",
                    v.iter()
                        .flat_map(|o| {
                            o.lines.iter().enumerate().map(move |(i, &(p, q))| {
                                vec![
                                    Cell::Int(i as i64 + 1),
                                    Cell::Int(o.id),
                                    Cell::Int(p),
                                    Cell::Int(q.into()),
                                    text(&o.date),
                                ]
                            })
                        })
                        .collect(),
                ),
                (
                    "cust_hist",
                    v.iter()
                        .flat_map(|o| {
                            o.lines
                                .iter()
                                .map(move |&(p, _)| vec![Cell::Int(o.customer), Cell::Int(o.id), Cell::Int(p)])
                        })
                        .collect(),
                ),
            ],
            Batch::Inventory(v) => {
                vec![("inventory", v.iter().map(|&(p, s, q)| vec![Cell::Int(p), Cell::Int(s), Cell::Int(q)]).collect())]
            }
        }
    }
}

fn customer_row(c: &Customer) -> Row {
    let text = |s: &str| Cell::Text(s.to_string());
    vec![
        Cell::Int(c.id),
        text(&c.firstname),
        text(&c.lastname),
        text(&c.address1),
        text(c.address2),
        text(&c.city),
        text(c.state),
        text(&c.zip),
        text(c.country),
        Cell::Int(c.region.into()),
        text(&c.email),
        text(&c.phone),
        Cell::Int(c.creditcardtype.into()),
        text(&c.creditcard),
        text(&c.creditcardexpiration),
        text(&c.username),
        text(c.password),
        Cell::Int(c.age.into()),
        Cell::Int(c.income.into()),
        text(c.gender),
    ]
}

/// Builds a `size` database from `seed` on `db`: tables, the load, then indexes and
/// full-text search. Returns the rows loaded and adds the initial row counts to `meta`.
pub fn run(
    db: &dyn Database,
    conn: &mut Connection,
    size: Size,
    seed: u64,
    progress: &ProgressBar,
    meta: &mut BuildMeta,
) -> Result<u64> {
    let expected_rows = 2 * size.products + size.customers + 11 * size.orders() + data::CATEGORIES.len() as i64;
    progress.set_length(expected_rows as u64);
    progress.set_message("creating schema");
    let engine = conn.engine();
    seam::script(conn, schema::tables(engine))?;
    let mut rows = 0u64;
    let mut orderlines = 0u64;
    bulk::load(db, conn, 1, |mut sinks| {
        let sink = &mut sinks[0];
        let categories: Vec<Row> = data::CATEGORIES
            .iter()
            .enumerate()
            .map(|(i, n)| vec![Cell::Int(i as i64 + 1), Cell::Text(n.to_string())])
            .collect();
        sink.put("categories", &categories)?;
        rows += categories.len() as u64;
        let (tx, rx) = sync_channel::<Batch>(4);
        std::thread::scope(|s| -> Result<()> {
            let generator = s.spawn(move || generate(size, seed, |b| tx.send(b).is_ok()));
            for batch in rx {
                if interrupt::interrupted() {
                    return Err(Interrupted.into());
                }
                progress.set_message(match &batch {
                    Batch::Products(_) => "products",
                    Batch::Customers(_) => "customers",
                    Batch::Orders(_) => "orders",
                    Batch::Inventory(_) => "inventory",
                });
                for (table, table_rows) in batch.tables() {
                    sink.put(table, &table_rows)?;
                }
                sink.end_part()?;
                rows += batch.rows();
                progress.set_position(rows);
            }
            orderlines = generator.join().expect("generator thread panicked");
            Ok(())
        })
    })?;
    progress.set_message("indexes and full-text search");
    seam::script(conn, schema::finish(engine))?;
    for (k, v) in [
        ("customers", size.customers),
        ("orders", size.orders()),
        ("orderlines", orderlines as i64),
        ("products", size.products),
    ] {
        meta.insert(k.into(), v.to_string());
    }
    Ok(rows)
}

/// Produces every batch in load order; stops early when `send` returns false (the loader
/// gave up). Returns the number of order lines generated.
fn generate(size: Size, seed: u64, mut send: impl FnMut(Batch) -> bool) -> u64 {
    let chunks = |n: i64| (1..=n).step_by(BATCH).map(move |lo| lo..=(lo + BATCH as i64 - 1).min(n));

    let mut r = data::rng(seed, Stream::Products);
    for ids in chunks(size.products) {
        if !send(Batch::Products(ids.map(|i| data::product(&mut r, i, &size)).collect())) {
            return 0;
        }
    }
    let mut r = data::rng(seed, Stream::Customers);
    for ids in chunks(size.customers) {
        if !send(Batch::Customers(ids.map(|i| data::initial_customer(&mut r, i, &size)).collect())) {
            return 0;
        }
    }
    let mut sales = vec![0i64; size.products as usize + 1];
    let mut lines = 0u64;
    let mut r = data::rng(seed, Stream::Orders);
    for ids in chunks(size.orders()) {
        let batch: Vec<Order> = ids
            .map(|id| {
                let month = ((id - 1) / size.orders_per_month + 1) as u32;
                data::order(&mut r, id, month, &size)
            })
            .collect();
        for o in &batch {
            lines += o.lines.len() as u64;
            for &(p, q) in &o.lines {
                sales[p as usize] += q as i64;
            }
        }
        if !send(Batch::Orders(batch)) {
            return 0;
        }
    }
    let mut r = data::rng(seed, Stream::Inventory);
    for ids in chunks(size.products) {
        if !send(Batch::Inventory(ids.map(|p| (p, data::stock(&mut r, p), sales[p as usize])).collect())) {
            return 0;
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_covers_every_id_once_in_load_order() {
        let size = Size::parse("1MB").unwrap();
        let mut seen = (0, 0, 0, 0);
        let mut inventory_sales = 0;
        let lines = generate(size, 5, |b| {
            match &b {
                Batch::Products(v) => seen.0 += v.len(),
                Batch::Customers(v) => seen.1 += v.len(),
                Batch::Orders(v) => {
                    assert!(v.iter().all(|o| (1..=9).contains(&o.lines.len())));
                    seen.2 += v.len()
                }
                Batch::Inventory(v) => {
                    seen.3 += v.len();
                    inventory_sales += v.iter().map(|x| x.2).sum::<i64>();
                }
            }
            true
        });
        assert_eq!(seen, (1000, 2000, 1200, 1000));
        // Mean 2 units per line, so total sales are about twice the line count.
        assert!((inventory_sales as f64 / lines as f64 - 2.0).abs() < 0.1);
    }
}
