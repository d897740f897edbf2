//! Synthetic Northwind-shaped data with BigNW's row counts (Northwind expanded x100:
//! 9,191 customers, 83,830 orders, 217,655 order details; the small tables at Northwind
//! size), times a scale factor. Names are built from our own syllables and every value
//! comes from the seed: no sample data is shipped.
//!
//! Shapes follow Northwind where the benchmarks depend on them: order dates run from
//! 1996-07-04 to 1998-05-06 in order-id order, the latest orders are not shipped yet,
//! customers and ship-to countries follow Northwind's mix (Germany and the USA lead),
//! and order lines carry distinct products with Northwind-like quantities and discounts.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Row counts at scale 1 (BigNW).
const CUSTOMERS: f64 = 9191.0;
const ORDERS: f64 = 83830.0;
const ORDER_DETAILS: f64 = 217_655.0;
pub const CATEGORIES: i64 = 8;
pub const SUPPLIERS: i64 = 29;
pub const SHIPPERS: i64 = 3;
pub const PRODUCTS: i64 = 77;
pub const REGIONS: i64 = 4;
pub const TERRITORIES: i64 = 53;
pub const EMPLOYEES: i64 = 9;
pub const EMPLOYEE_TERRITORIES: i64 = 49;
/// Northwind's first order date and its span in days (1996-07-04 to 1998-05-06).
const FIRST_ORDER_DAY: i64 = 9681;
const ORDER_DAYS: i64 = 671;
/// The share of the latest orders that are not shipped yet (21 of 830 in Northwind).
const UNSHIPPED: f64 = 0.025;

/// Countries with weights close to Northwind's customer mix.
const COUNTRIES: &[(&str, u32)] = &[
    ("USA", 13),
    ("Germany", 11),
    ("France", 11),
    ("Brazil", 9),
    ("UK", 7),
    ("Spain", 5),
    ("Mexico", 5),
    ("Venezuela", 4),
    ("Argentina", 3),
    ("Italy", 3),
    ("Canada", 3),
    ("Sweden", 2),
    ("Austria", 2),
    ("Belgium", 2),
    ("Portugal", 2),
    ("Switzerland", 2),
    ("Finland", 2),
    ("Denmark", 2),
    ("Ireland", 1),
    ("Norway", 1),
    ("Poland", 1),
];

const SYLLABLES: &[&str] = &[
    "ba", "ker", "lo", "min", "sa", "tor", "vel", "du", "ran", "ko", "pe", "lis", "mar", "no", "ti", "gra", "fen",
    "ho", "ul", "zen", "ca", "dor", "mi", "ste", "ra", "bel", "qui", "an", "vo", "lek",
];

/// Table sizes for a scale factor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizes {
    pub customers: i64,
    pub orders: i64,
    pub order_details: i64,
}

impl Sizes {
    pub fn at(scale: f64) -> Self {
        let n = |base: f64| ((base * scale).round() as i64).max(1);
        let orders = n(ORDERS).max(20);
        Self { customers: n(CUSTOMERS), orders, order_details: n(ORDER_DETAILS).max(orders) }
    }

    pub fn total_rows(&self) -> u64 {
        (self.customers
            + self.orders
            + self.order_details
            + CATEGORIES
            + SUPPLIERS
            + SHIPPERS
            + PRODUCTS
            + REGIONS
            + TERRITORIES
            + EMPLOYEES
            + EMPLOYEE_TERRITORIES) as u64
    }
}

/// One value of a generated row.
#[derive(Clone, Debug)]
pub enum V {
    Int(i64),
    Money(f64),
    Text(String),
    Date(i64),
    Null,
}

impl V {
    /// The value as an SQL literal every engine reads alike.
    pub fn literal(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            V::Int(i) => write!(out, "{i}"),
            V::Money(m) => write!(out, "{m:.2}"),
            V::Text(s) => write!(out, "'{}'", s.replace('\'', "''")),
            V::Date(d) => write!(out, "'{}'", date(*d)),
            V::Null => write!(out, "NULL"),
        }
        .expect("writing to a String cannot fail");
    }
}

/// `YYYY-MM-DD` of a day number counted from 1970-01-01 (civil-from-days).
pub fn date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Generates every table's rows, table by table in load order, handing them to `put` in
/// chunks.
pub struct Generator {
    rng: ChaCha8Rng,
    sizes: Sizes,
    /// Products' list prices, which order lines start from.
    prices: Vec<f64>,
}

fn word(rng: &mut ChaCha8Rng, syllables: usize) -> String {
    let mut w: String = (0..syllables).map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())]).collect();
    w[..1].make_ascii_uppercase();
    w
}

fn country(rng: &mut ChaCha8Rng) -> &'static str {
    let total: u32 = COUNTRIES.iter().map(|c| c.1).sum();
    let mut pick = rng.random_range(0..total);
    for (name, w) in COUNTRIES {
        if pick < *w {
            return name;
        }
        pick -= w;
    }
    unreachable!("the pick is below the total weight")
}

fn phone(rng: &mut ChaCha8Rng) -> V {
    V::Text(format!(
        "({:03}) {:03}-{:04}",
        rng.random_range(100..999),
        rng.random_range(100..999),
        rng.random_range(0..9999)
    ))
}

fn t(s: impl Into<String>) -> V {
    V::Text(s.into())
}

/// A customer id such as `C000042`.
pub fn customer_id(i: i64) -> String {
    format!("C{i:06}")
}

impl Generator {
    pub fn new(sizes: Sizes, seed: u64) -> Self {
        Self { rng: ChaCha8Rng::seed_from_u64(seed ^ 0x4E57), sizes, prices: Vec::new() }
    }

    /// Every table in load order: its name and rows.
    pub fn tables(&mut self, mut put: impl FnMut(&str, Vec<Vec<V>>) -> anyhow::Result<()>) -> anyhow::Result<()> {
        let r = &mut self.rng;
        put(
            "categories",
            (1..=CATEGORIES)
                .map(|i| {
                    // The plaintext marker the canary scan looks for at rest.
                    let about = if i == 1 { crate::workloads::CANARY.to_string() } else { word(r, 4) + " goods" };
                    vec![V::Int(i), t(word(r, 3)), t(about)]
                })
                .collect(),
        )?;
        put(
            "suppliers",
            (1..=SUPPLIERS)
                .map(|i| {
                    let mut row = vec![V::Int(i), t(word(r, 3) + " Ltd"), t(word(r, 2) + " " + &word(r, 3))];
                    row.extend([t("Sales Manager"), t(format!("{} {}", r.random_range(1..999), word(r, 3)))]);
                    row.extend([t(word(r, 3)), V::Null, t(format!("{:05}", r.random_range(0..99999)))]);
                    row.extend([t(country(r)), phone(r)]);
                    row
                })
                .collect(),
        )?;
        put("shippers", (1..=SHIPPERS).map(|i| vec![V::Int(i), t(word(r, 3) + " Express"), phone(r)]).collect())?;
        self.prices = (0..PRODUCTS).map(|_| (r.random_range(250..26_000) as f64) / 100.0).collect();
        let prices = self.prices.clone();
        put(
            "products",
            (1..=PRODUCTS)
                .map(|i| {
                    let mut row = vec![V::Int(i), t(word(r, 4)), V::Int(r.random_range(1..=SUPPLIERS))];
                    row.extend([V::Int(r.random_range(1..=CATEGORIES)), t(format!("{} boxes", r.random_range(1..48)))]);
                    row.extend([V::Money(prices[i as usize - 1]), V::Int(r.random_range(0..125))]);
                    row.extend([V::Int(r.random_range(0..4) * 10), V::Int(r.random_range(0..6) * 5)]);
                    row.push(V::Int(i64::from(r.random_bool(0.1))));
                    row
                })
                .collect(),
        )?;
        put("region", (1..=REGIONS).map(|i| vec![V::Int(i), t(word(r, 2) + "ern")]).collect())?;
        let territory = |i: i64| format!("{:05}", 1000 + i * 137);
        put(
            "territories",
            (1..=TERRITORIES).map(|i| vec![t(territory(i)), t(word(r, 3)), V::Int((i - 1) % REGIONS + 1)]).collect(),
        )?;
        put(
            "employees",
            (1..=EMPLOYEES)
                .map(|i| {
                    let mut row = vec![V::Int(i), t(word(r, 3)), t(word(r, 2)), t("Sales Representative")];
                    row.extend([
                        t("Ms."),
                        V::Date(-3000 - r.random_range(0..9000)),
                        V::Date(8000 + r.random_range(0..800)),
                    ]);
                    row.extend([t(format!("{} {}", r.random_range(1..999), word(r, 2))), t(word(r, 3)), V::Null]);
                    let home = if i <= 5 { "USA" } else { "UK" };
                    row.extend([t(format!("{:05}", r.random_range(0..99999))), t(home), phone(r)]);
                    row.extend([
                        t(format!("{}", r.random_range(1000..9999))),
                        t(word(r, 8)),
                        V::Int(if i == 2 { 0 } else { 2 }),
                    ]);
                    row
                })
                .collect(),
        )?;
        put(
            "employee_territories",
            (0..EMPLOYEE_TERRITORIES).map(|i| vec![V::Int(i % EMPLOYEES + 1), t(territory(i + 1))]).collect(),
        )?;
        self.customers(&mut put)?;
        self.orders(&mut put)
    }

    fn customers(&mut self, put: &mut impl FnMut(&str, Vec<Vec<V>>) -> anyhow::Result<()>) -> anyhow::Result<()> {
        let r = &mut self.rng;
        let rows = (1..=self.sizes.customers)
            .map(|i| {
                let mut row =
                    vec![t(customer_id(i)), t(word(r, 3) + " " + &word(r, 2)), t(word(r, 2) + " " + &word(r, 3))];
                row.extend([t("Owner"), t(format!("{} {}", r.random_range(1..999), word(r, 3))), t(word(r, 3))]);
                row.extend([V::Null, t(format!("{:05}", r.random_range(0..99999))), t(country(r)), phone(r), phone(r)]);
                row
            })
            .collect();
        put("customers", rows)
    }

    /// Orders and their lines, a chunk of orders at a time so memory stays small at any scale.
    fn orders(&mut self, put: &mut impl FnMut(&str, Vec<Vec<V>>) -> anyhow::Result<()>) -> anyhow::Result<()> {
        const CHUNK: i64 = 5000;
        let Sizes { customers, orders, order_details } = self.sizes;
        let shipped_until = orders - ((orders as f64) * UNSHIPPED).round() as i64;
        let mut start = 0;
        while start < orders {
            let end = (start + CHUNK).min(orders);
            let (mut os, mut ds) = (Vec::new(), Vec::new());
            for i in start..end {
                let r = &mut self.rng;
                let day = FIRST_ORDER_DAY + i * ORDER_DAYS / orders;
                let cust = r.random_range(1..=customers);
                let shipped = if i < shipped_until { V::Date(day + r.random_range(1..=35)) } else { V::Null };
                let mut o = vec![V::Int(i + 1), t(customer_id(cust)), V::Int(r.random_range(1..=EMPLOYEES))];
                o.extend([V::Date(day), V::Date(day + 28), shipped, V::Int(r.random_range(1..=SHIPPERS))]);
                let freight = 0.02 + 400.0 * r.random::<f64>().powi(3);
                o.extend([
                    V::Money(freight),
                    t(word(r, 3) + " " + &word(r, 2)),
                    t(format!("{} {}", r.random_range(1..999), word(r, 3))),
                ]);
                o.extend([t(word(r, 3)), V::Null, t(format!("{:05}", r.random_range(0..99999))), t(country(r))]);
                os.push(o);
                // Exactly `order_details` lines in all, spread evenly (2 or 3 at BigNW's ratio).
                let lines = (i + 1) * order_details / orders - i * order_details / orders;
                let first = r.random_range(0..PRODUCTS);
                for l in 0..lines {
                    let product = (first + l * 7) % PRODUCTS + 1;
                    let price = self.prices[product as usize - 1];
                    let discount = if r.random_bool(0.6) { 0.0 } else { f64::from(r.random_range(1..=5u8)) * 0.05 };
                    let quantity = 1 + (r.random::<f64>().powi(2) * 100.0) as i64;
                    ds.push(vec![
                        V::Int(i + 1),
                        V::Int(product),
                        V::Money(price),
                        V::Int(quantity),
                        V::Money(discount),
                    ]);
                }
            }
            put("orders", os)?;
            put("order_details", ds)?;
            start = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bignw_counts_at_scale_one() {
        let s = Sizes::at(1.0);
        assert_eq!((s.customers, s.orders, s.order_details), (9191, 83830, 217_655));
        assert_eq!(Sizes::at(0.01).orders, 838);
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(FIRST_ORDER_DAY), "1996-07-04");
        assert_eq!(date(FIRST_ORDER_DAY + ORDER_DAYS), "1998-05-06");
        assert_eq!(date(11016), "2000-02-29");
    }

    #[test]
    fn generates_exact_counts_with_distinct_products_per_order() {
        let sizes = Sizes::at(0.05);
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        let mut lines = std::collections::BTreeSet::new();
        let mut canary = false;
        Generator::new(sizes, 7)
            .tables(|name, rows| {
                if name == "order_details" {
                    for r in &rows {
                        let (V::Int(o), V::Int(p)) = (&r[0], &r[1]) else { panic!() };
                        assert!(lines.insert((*o, *p)), "order {o} has product {p} twice");
                    }
                }
                canary |= rows.iter().flatten().any(|v| matches!(v, V::Text(s) if s == crate::workloads::CANARY));
                *counts.entry(name.into()).or_default() += rows.len();
                Ok(())
            })
            .unwrap();
        assert_eq!(counts["orders"] as i64, sizes.orders);
        assert_eq!(counts["order_details"] as i64, sizes.order_details);
        assert_eq!(counts["customers"] as i64, sizes.customers);
        assert_eq!(counts.values().sum::<usize>() as u64, sizes.total_rows());
        assert!(canary);
    }
}
