//! The DS2 order flow, independent of the engine. Every random choice is made here, so
//! every engine sees the same request stream for the same seed; the engine modules only
//! carry out the four operations.

use super::data::{self, Customer};
use super::size::Size;
use super::{Mix, BROWSE, LOGIN, NEW_CUSTOMER, PURCHASE};
use crate::driver::{Outcome, UnitRecorder, Worker};
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

/// The SQL steps of a purchase on one engine, inside an open transaction. The flow and the
/// restock rule live once, in [`place_order`], so every engine applies the same rule.
pub trait PurchaseSteps {
    type Error;
    /// Inserts the order row and returns its id.
    fn insert_order(&mut self, customer: i64, cart: &Cart) -> Result<i64, Self::Error>;
    /// Reads a product's stock, locking its row until the transaction ends.
    fn stock_for_update(&mut self, product: i64) -> Result<i64, Self::Error>;
    /// Stock stays (restock rule): count the sale and record a REORDER row.
    fn sell_and_reorder(&mut self, product: i64, qty: i32, left: i64) -> Result<(), Self::Error>;
    /// Takes the units from stock and counts the sale.
    fn sell(&mut self, product: i64, qty: i32, left: i64) -> Result<(), Self::Error>;
    /// Writes the order line and the customer's history row.
    fn add_line(&mut self, order: i64, line: usize, product: i64, qty: i32, customer: i64) -> Result<(), Self::Error>;
}

/// A purchase: the order, then each line against the stock. Returns `RolledBack` as soon as
/// a line lacks stock; the caller then rolls the whole transaction back.
pub fn place_order<S: PurchaseSteps>(tx: &mut S, customer: i64, cart: &Cart) -> Result<Outcome, S::Error> {
    let order = tx.insert_order(customer, cart)?;
    for (i, &(product, qty)) in cart.lines.iter().enumerate() {
        let left = tx.stock_for_update(product)? - i64::from(qty);
        if left < 0 {
            return Ok(Outcome::RolledBack);
        }
        if left < super::RESTOCK_FLOOR {
            tx.sell_and_reorder(product, qty, left)?;
        } else {
            tx.sell(product, qty, left)?;
        }
        tx.add_line(order, i + 1, product, qty, customer)?;
    }
    Ok(Outcome::Committed)
}

/// The DS2 operations on one engine connection.
pub trait Session {
    /// Looks the customer up and reads their recent purchase history; `None` if unknown.
    fn login(&mut self, username: &str) -> Result<Option<i64>>;
    /// Registers a customer; `None` if the username is taken.
    fn new_customer(&mut self, c: &Customer, rec: &mut UnitRecorder) -> Result<Option<i64>>;
    /// Runs one catalogue search with the given row limit; returns the rows read.
    fn browse(&mut self, by: Browse<'_>, limit: u32) -> Result<usize>;
    fn price(&mut self, product: i64) -> Result<f64>;
    /// Places the order in one transaction, or rolls it all back on insufficient stock.
    fn purchase(&mut self, customer: i64, cart: &Cart, rec: &mut UnitRecorder) -> Result<Outcome>;
    /// Lock waits since the last call (engines that do not count them return 0).
    fn take_lock_waits(&mut self) -> u64;
}

pub struct OrderWorker<S> {
    session: S,
    rng: ChaCha8Rng,
    size: Size,
    mix: Mix,
    cart: Cart,
}

impl<S: Session> OrderWorker<S> {
    pub fn new(session: S, rng: ChaCha8Rng, size: Size, mix: Mix) -> Self {
        Self { session, rng, size, mix, cart: Cart::default() }
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
                if let Some(id) = self.session.new_customer(&c, rec)? {
                    rec.op(NEW_CUSTOMER, t.elapsed());
                    return Ok(id);
                }
            }
            bail!("could not find a free new-customer username in {MAX_USERNAME_TRIES} tries");
        }
        let username = format!("user{}", self.rng.random_range(1..=self.size.customers));
        let t = Instant::now();
        let id = self.session.login(&username)?;
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
            self.session.browse(by, limit)?;
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
            net += q as f64 * self.session.price(p)?;
        }
        rec.untimed(t.elapsed());
        self.cart.net = (net * 100.0).round() / 100.0;
        self.cart.tax = data::tax_on(self.cart.net);
        self.cart.total = ((self.cart.net + self.cart.tax) * 100.0).round() / 100.0;
        Ok(())
    }
}

impl<S: Session> Worker for OrderWorker<S> {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> Result<Outcome> {
        let customer = self.sign_in(rec)?;
        self.browse(rec)?;
        self.fill_cart(rec)?;
        let t = Instant::now();
        let outcome = self.session.purchase(customer, &self.cart, rec)?;
        rec.op(PURCHASE, t.elapsed());
        rec.lock_waits(self.session.take_lock_waits());
        Ok(outcome)
    }
}
