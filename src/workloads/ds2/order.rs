//! The DS2 order flow, written once for every engine. Every random choice is made here, so
//! every engine sees the same request stream for the same seed; the statements go through
//! the engine seam ([`super::sql`]).

use super::data::{self, Customer};
use super::size::Size;
use super::sql::{self, search_text};
use super::{Mix, BROWSE, LOGIN, NEW_CUSTOMER, PURCHASE};
use crate::driver::{Outcome, UnitRecorder, Worker};
use crate::targets::sql::{self as seam, Arg, Arg::*, DbError, Session, Tx};
use crate::targets::Database;
use crate::workloads::Check;
use anyhow::{bail, Result};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// New customers are named `newuser<N>` with N drawn from this range. DS2 draws N from
/// 1..=max_customer, which small databases exhaust within minutes, after which every
/// registration retries forever; a wide range keeps name clashes rare at any size.
const NEW_USERNAME_SPACE: i64 = 1_000_000_000_000;
const MAX_USERNAME_TRIES: u32 = 100;

pub enum Browse<'a> {
    Category(i32),
    Actor(&'a str),
    Title(&'a str),
}

/// A priced cart: (product, quantity) lines and the order amounts.
#[derive(Default)]
pub struct Cart {
    pub lines: Vec<(i64, i32)>,
    pub net: f64,
    pub tax: f64,
    pub total: f64,
}

/// A purchase: the order, then each line against the stock. Returns `RolledBack` as soon as
/// a line lacks stock; the caller then rolls the whole transaction back.
///
/// **Restock rule**: a line that would leave fewer than [`super::RESTOCK_FLOOR`] units
/// leaves the stock as it is, counts the sale and records a REORDER row.
fn place_order(tx: &mut dyn Tx, customer: i64, cart: &Cart) -> Result<Outcome, DbError> {
    let order =
        tx.query(sql::INSERT_ORDER, &[Int(customer), Real(cart.net), Real(cart.tax), Real(cart.total)])?.int(0, 0)?;
    for (i, &(product, qty)) in cart.lines.iter().enumerate() {
        let qty = i64::from(qty);
        let stock = tx.query(sql::STOCK, &[Int(product)])?;
        if stock.is_empty() {
            return Err(DbError::Data(format!("product {product} has no inventory row")));
        }
        let left = stock.int(0, 0)? - qty;
        if left < 0 {
            return Ok(Outcome::RolledBack);
        }
        if left < super::RESTOCK_FLOOR {
            tx.execute(sql::ADD_SALES, &[Int(qty), Int(product)])?;
            tx.execute(sql::REORDER, &[Int(product), Int(left)])?;
        } else {
            tx.execute(sql::SET_STOCK, &[Int(left), Int(qty), Int(product)])?;
        }
        tx.execute(sql::INSERT_LINE, &[Int(i as i64 + 1), Int(order), Int(product), Int(qty)])?;
        tx.execute(sql::INSERT_HIST, &[Int(customer), Int(order), Int(product)])?;
    }
    Ok(Outcome::Committed)
}

/// A new customer's row in [`sql::NEW_CUSTOMER`]'s column order.
fn customer_args(c: &Customer) -> [Arg<'_>; 19] {
    [
        Text(&c.firstname),
        Text(&c.lastname),
        Text(&c.address1),
        Text(c.address2),
        Text(&c.city),
        Text(c.state),
        Text(&c.zip),
        Text(c.country),
        Int(c.region.into()),
        Text(&c.email),
        Text(&c.phone),
        Int(c.creditcardtype.into()),
        Text(&c.creditcard),
        Text(&c.creditcardexpiration),
        Text(&c.username),
        Text(c.password),
        Int(c.age.into()),
        Int(c.income.into()),
        Text(c.gender),
    ]
}

/// One DS2 user: a session on the database and the random stream of its requests.
pub struct OrderWorker {
    session: Box<dyn Session>,
    rng: ChaCha8Rng,
    size: Size,
    mix: Mix,
    cart: Cart,
}

impl OrderWorker {
    pub fn new(session: Box<dyn Session>, rng: ChaCha8Rng, size: Size, mix: Mix) -> Self {
        Self { session, rng, size, mix, cart: Cart::default() }
    }

    /// Looks the customer up and reads their recent purchase history; `None` if unknown.
    fn login(&mut self, username: &str) -> Result<Option<i64>> {
        let found = self.session.query(sql::LOGIN, &[Text(username), Text("password")])?;
        if found.is_empty() {
            return Ok(None);
        }
        let id = found.int(0, 0)?;
        self.session.query(sql::HISTORY, &[Int(id)])?;
        Ok(Some(id))
    }

    /// Registers a customer; `None` if the username is taken.
    fn new_customer(&mut self, c: &Customer, rec: &mut UnitRecorder) -> Result<Option<i64>> {
        let mut id = None;
        self.session.transaction(false, rec, &mut |tx| {
            let row = tx.query(sql::NEW_CUSTOMER, &customer_args(c))?;
            id = if row.is_empty() { None } else { Some(row.int(0, 0)?) };
            Ok(Outcome::Committed)
        })?;
        Ok(id)
    }

    /// Runs one catalogue search with the given row limit; returns the rows read.
    fn search(&mut self, by: Browse<'_>, limit: u32) -> Result<usize> {
        let engine = self.session.engine();
        let limit = Int(limit.into());
        let rows = match by {
            Browse::Category(cat) => self.session.query(sql::BY_CATEGORY, &[Int(cat.into()), limit])?,
            Browse::Actor(text) => {
                self.session.query(sql::BY_ACTOR, &[Text(&search_text(engine, "actor", text)), limit])?
            }
            Browse::Title(text) => {
                self.session.query(sql::BY_TITLE, &[Text(&search_text(engine, "title", text)), limit])?
            }
        };
        Ok(rows.len())
    }

    /// DS2's "average N": uniform 1..=2N-1.
    fn around(&mut self, n: u32) -> u32 {
        self.rng.random_range(1..=2 * n - 1)
    }

    fn sign_in(&mut self, rec: &mut UnitRecorder) -> Result<i64> {
        if self.rng.random_range(0..100) < self.mix.pct_newcustomers {
            let t = Instant::now();
            for _ in 0..MAX_USERNAME_TRIES {
                let n = self.rng.random_range(1..=NEW_USERNAME_SPACE);
                let us = self.rng.random_bool(0.5);
                let c = data::customer(&mut self.rng, 0, us, format!("newuser{n}"));
                if let Some(id) = self.new_customer(&c, rec)? {
                    rec.op(NEW_CUSTOMER, t.elapsed());
                    return Ok(id);
                }
            }
            bail!("could not find a free new-customer username in {MAX_USERNAME_TRIES} tries");
        }
        let username = format!("user{}", self.rng.random_range(1..=self.size.customers));
        let t = Instant::now();
        let id = self.login(&username)?;
        rec.op(LOGIN, t.elapsed());
        match id {
            Some(id) => Ok(id),
            None => bail!("login failed: customer {username} does not exist; was the database built with this --size?"),
        }
    }

    fn browse(&mut self, rec: &mut UnitRecorder) -> Result<()> {
        for _ in 0..self.around(self.mix.n_searches) {
            let limit = self.around(self.mix.search_batch_size);
            let text;
            let by = match self.rng.random_range(0..3) {
                0 => Browse::Category(self.rng.random_range(1..=16)),
                1 => {
                    text = data::random_actor(&mut self.rng);
                    Browse::Actor(&text)
                }
                _ => {
                    text = data::random_title_words(&mut self.rng);
                    Browse::Title(&text)
                }
            };
            let t = Instant::now();
            self.search(by, limit)?;
            rec.op(BROWSE, t.elapsed());
        }
        Ok(())
    }

    /// Fills and prices the cart. Pricing is a database read that DS2 leaves out of the
    /// order's response time, so it is recorded as untimed.
    fn fill_cart(&mut self, rec: &mut UnitRecorder) -> Result<()> {
        let n = self.around(self.mix.n_line_items);
        self.cart.lines.clear();
        for _ in 0..n {
            let p = data::weighted_product(&mut self.rng, self.size.products);
            self.cart.lines.push((p, self.rng.random_range(1..=3)));
        }
        let t = Instant::now();
        let mut net = 0.0;
        for i in 0..self.cart.lines.len() {
            let (p, q) = self.cart.lines[i];
            let price = self.session.query(sql::PRICE, &[Int(p)])?;
            if price.is_empty() {
                bail!("product {p} is missing; was the database built with this --size?");
            }
            net += q as f64 * price.real(0, 0)?;
        }
        rec.untimed(t.elapsed());
        self.cart.net = (net * 100.0).round() / 100.0;
        self.cart.tax = data::tax_on(self.cart.net);
        self.cart.total = ((self.cart.net + self.cart.tax) * 100.0).round() / 100.0;
        Ok(())
    }
}

impl Worker for OrderWorker {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> Result<Outcome> {
        let customer = self.sign_in(rec)?;
        self.browse(rec)?;
        self.fill_cart(rec)?;
        let t = Instant::now();
        let cart = &self.cart;
        let outcome = self.session.transaction(false, rec, &mut |tx| place_order(tx, customer, cart))?;
        rec.op(PURCHASE, t.elapsed());
        Ok(outcome)
    }
}

/// The catalogue search finds a product by the words of its own title and of its actor. A
/// missing or stale full-text index would otherwise turn every browse into an empty read,
/// and the run would measure less work than DS2 asks for without a sign.
pub fn search_check(db: &dyn Database) -> Result<Check> {
    let mut conn = db.connect()?;
    let product = seam::adhoc(&mut conn, "SELECT title, actor FROM products WHERE prod_id = 1")?;
    let (title, actor) = (product.text(0, 0)?.into_owned(), product.text(0, 1)?.into_owned());
    let mut session = seam::session(conn, &sql::STATEMENTS)?;
    let engine = session.engine();
    let mut finds_product_1 = |q, column, text: &str| -> Result<bool> {
        let rows = session.query(q, &[Text(&search_text(engine, column, text)), Int(100_000)])?;
        Ok((0..rows.len()).any(|r| rows.int(r, 0).is_ok_and(|id| id == 1)))
    };
    let by_title = finds_product_1(sql::BY_TITLE, "title", &title)?;
    let by_actor = finds_product_1(sql::BY_ACTOR, "actor", &actor)?;
    Ok(Check {
        name: "catalogue search finds a product by its title and by its actor".into(),
        ok: by_title && by_actor,
        detail: format!("title '{title}': {by_title}, actor '{actor}': {by_actor}"),
    })
}
