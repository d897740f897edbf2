//! DS2 row generators, following the distributions of DS2.1's data generators.
//!
//! Each table draws from its own ChaCha stream derived from `--seed`, so a build is
//! byte-for-byte reproducible and one table's size never shifts another table's values.

use super::size::Size;
use super::words::words;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub const CATEGORIES: [&str; 16] = [
    "Action",
    "Animation",
    "Children",
    "Classics",
    "Comedy",
    "Documentary",
    "Drama",
    "Family",
    "Foreign",
    "Games",
    "Horror",
    "Music",
    "New",
    "Sci-Fi",
    "Sports",
    "Travel",
];
const STATES: [&str; 51] = [
    "AK", "AL", "AR", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "HI", "IA", "ID", "IL", "IN", "KS", "KY", "LA",
    "MA", "MD", "ME", "MI", "MN", "MO", "MS", "MT", "NC", "ND", "NE", "NH", "NJ", "NM", "NV", "NY", "OH", "OK", "OR",
    "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VA", "VT", "WA", "WI", "WV", "WY",
];
const COUNTRIES: [&str; 10] =
    ["Australia", "Canada", "Chile", "China", "France", "Germany", "Japan", "Russia", "South Africa", "UK"];
/// Products whose id is a multiple of this are the hot sellers: 10x the stock, 10x the demand.
pub const HOT_EVERY: i64 = 10_000;
/// Order dates fall in this year, as in DS2.1.
const ORDER_YEAR: i32 = 2009;

/// One RNG stream per table.
#[derive(Clone, Copy)]
pub enum Stream {
    Customers = 1,
    Products = 2,
    Orders = 3,
    Inventory = 4,
}

pub fn rng(seed: u64, stream: Stream) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream as u64);
    r
}

pub struct Customer {
    pub id: i64,
    pub firstname: String,
    pub lastname: String,
    pub address1: String,
    /// Empty, except the plaintext canary on every tenth pristine customer.
    pub address2: &'static str,
    pub city: String,
    pub state: &'static str,
    pub zip: String,
    pub country: &'static str,
    pub region: i32,
    pub email: String,
    pub phone: String,
    pub creditcardtype: i32,
    pub creditcard: String,
    pub creditcardexpiration: String,
    pub username: String,
    pub password: &'static str,
    pub age: i32,
    pub income: i32,
    pub gender: &'static str,
}

fn letters(rng: &mut impl Rng, n: usize) -> String {
    (0..n).map(|_| rng.random_range(b'A'..=b'Z') as char).collect()
}

fn digits(rng: &mut impl Rng, n: usize) -> String {
    (0..n).map(|_| rng.random_range(b'0'..=b'9') as char).collect()
}

/// A customer row; `us` picks region 1 (US) or 2 (rest of the world).
pub fn customer(rng: &mut impl Rng, id: i64, us: bool, username: String) -> Customer {
    let firstname = letters(rng, 6);
    let lastname = letters(rng, 10);
    let city = letters(rng, 7);
    let (state, zip, country, region) = if us {
        (STATES[rng.random_range(0..STATES.len())], rng.random_range(10000..=99999).to_string(), "US", 1)
    } else {
        ("", "00000".to_string(), COUNTRIES[rng.random_range(0..COUNTRIES.len())], 2)
    };
    let phone = digits(rng, 10);
    Customer {
        id,
        address1: format!("{phone} Harbor Road"),
        address2: "",
        email: format!("{lastname}@example.com"),
        firstname,
        lastname,
        city,
        state,
        zip,
        country,
        region,
        phone,
        creditcardtype: rng.random_range(1..=5),
        creditcard: digits(rng, 16),
        creditcardexpiration: format!("{}/{:02}", rng.random_range(2008..=2012), rng.random_range(1..=12)),
        username,
        password: "password",
        age: rng.random_range(18..=90),
        income: 20_000 * rng.random_range(1..=5),
        gender: if rng.random_bool(0.5) { "M" } else { "F" },
    }
}

/// The pristine customers: the first half are US, the second half the rest of the world.
pub fn initial_customer(rng: &mut impl Rng, id: i64, size: &Size) -> Customer {
    let mut c = customer(rng, id, id <= size.customers / 2, format!("user{id}"));
    if id % 10 == 0 {
        c.address2 = crate::workloads::CANARY;
    }
    c
}

pub struct Product {
    pub id: i64,
    pub category: i32,
    pub title: String,
    pub actor: String,
    pub price: f64,
    pub special: i32,
    pub common_prod_id: i64,
}

/// Titles are deterministic pairs of title words, unique up to a million products; actors are
/// random first and last names.
pub fn product(rng: &mut impl Rng, id: i64, size: &Size) -> Product {
    let w = words();
    let i = (id - 1) as usize;
    Product {
        id,
        category: rng.random_range(1..=16),
        title: format!("{} {}", w.titles[(i / 1000) % 1000], w.titles[i % 1000]),
        actor: random_actor(rng),
        price: 9.99 + rng.random_range(0..=20) as f64,
        special: i32::from(rng.random_ratio(1, size.special_one_in())),
        common_prod_id: rng.random_range(1..=size.products),
    }
}

pub fn random_actor(rng: &mut impl Rng) -> String {
    let w = words();
    format!(
        "{} {}",
        w.first_names[rng.random_range(0..w.first_names.len())],
        w.last_names[rng.random_range(0..w.last_names.len())]
    )
}

pub fn random_title_words(rng: &mut impl Rng) -> String {
    let w = &words().titles;
    format!("{} {}", w[rng.random_range(0..w.len())], w[rng.random_range(0..w.len())])
}

pub struct Order {
    pub id: i64,
    pub date: String,
    pub customer: i64,
    pub net: f64,
    pub tax: f64,
    pub total: f64,
    /// (product, quantity); the line number is the position + 1.
    pub lines: Vec<(i64, i32)>,
}

/// DS2 taxes every order at 8.25%.
pub fn tax_on(net: f64) -> f64 {
    (net * 0.0825 * 100.0).round() / 100.0
}

/// Order `id` in `month` (1..=12). Its net amount is independent of its lines, as in DS2.
pub fn order(rng: &mut impl Rng, id: i64, month: u32, size: &Size) -> Order {
    const DAYS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let day = rng.random_range(1..=DAYS[month as usize - 1]);
    let net = rng.random_range(1..=40_000) as f64 / 100.0;
    let tax = tax_on(net);
    let n_lines = rng.random_range(1..=9);
    Order {
        id,
        date: format!("{ORDER_YEAR}-{month:02}-{day:02}"),
        customer: rng.random_range(1..=size.customers),
        net,
        tax,
        total: ((net + tax) * 100.0).round() / 100.0,
        lines: (0..n_lines).map(|_| (rng.random_range(1..=size.products), rng.random_range(1..=3))).collect(),
    }
}

/// Initial stock: uniform 0..=500, ten times that for the hot sellers.
pub fn stock(rng: &mut impl Rng, product: i64) -> i64 {
    let s = rng.random_range(0..=500);
    if product % HOT_EVERY == 0 {
        s * 10
    } else {
        s
    }
}

/// Draws a product the way DS2 fills carts: from an array where hot sellers appear ten
/// times and every other product once (without materializing the array).
pub fn weighted_product(rng: &mut impl Rng, products: i64) -> i64 {
    let hot = products / HOT_EVERY;
    let r = rng.random_range(0..products + 9 * hot);
    if r < products {
        r + 1
    } else {
        ((r - products) / 9 + 1) * HOT_EVERY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_rows_other_seed_other_rows() {
        let size = Size::parse("1MB").unwrap();
        let row = |seed| {
            let mut r = rng(seed, Stream::Customers);
            let c = initial_customer(&mut r, 7, &size);
            (c.firstname, c.creditcard, c.zip)
        };
        assert_eq!(row(1), row(1));
        assert_ne!(row(1), row(2));
    }

    #[test]
    fn orders_follow_ds2_distributions() {
        let size = Size::parse("S").unwrap();
        let mut r = rng(1, Stream::Orders);
        let orders: Vec<_> = (1..=5000).map(|i| order(&mut r, i, 2, &size)).collect();
        let lines: usize = orders.iter().map(|o| o.lines.len()).sum();
        let mean = lines as f64 / orders.len() as f64;
        assert!((mean - 5.0).abs() < 0.15, "{mean}");
        assert!(orders.iter().all(|o| o.date.as_str() >= "2009-02-01" && o.date.as_str() <= "2009-02-28"));
        assert!(orders.iter().all(|o| (o.total - o.net - o.tax).abs() < 1e-9 && o.net <= 400.0));
    }

    #[test]
    fn hot_sellers_are_drawn_ten_times_as_often() {
        let mut r = rng(3, Stream::Orders);
        let n = 200_000;
        let hits = (0..n).filter(|_| weighted_product(&mut r, 20_000) % HOT_EVERY == 0).count();
        // 2 hot products of weight 10 in a total weight of 20,018.
        let expect = n as f64 * 20.0 / 20_018.0;
        assert!((hits as f64 - expect).abs() < 5.0 * expect.sqrt(), "{hits} vs {expect}");
    }

    #[test]
    fn titles_are_unique_per_product() {
        let size = Size::parse("S").unwrap();
        let mut r = rng(1, Stream::Products);
        let titles: std::collections::HashSet<_> = (1..=10_000).map(|i| product(&mut r, i, &size).title).collect();
        assert_eq!(titles.len(), 10_000);
    }
}
