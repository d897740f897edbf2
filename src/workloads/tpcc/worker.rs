//! One TPC-C terminal: draws the next transaction from the mix deck, draws its inputs the
//! way clause 2 prescribes, and runs it through the engine seam's [`Session`].

use super::mix::{Deck, TxType};
use super::random::{self, Constants};
use super::txn::{self, Line, Transactions, Who};
use super::{CUSTOMERS_PER_DISTRICT, DISTRICTS, ITEMS};
use crate::driver::{Outcome, UnitRecorder, Worker};
use crate::targets::sql::Session;
use anyhow::Result;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

pub struct Terminal {
    pub session: Box<dyn Session>,
    pub txns: &'static dyn Transactions,
    pub rng: ChaCha8Rng,
    pub warehouses: i64,
    /// The terminal's home warehouse and its fixed Stock-Level district.
    pub home: i64,
    pub stock_level_district: i64,
    pub c: Constants,
    pub deck: Deck,
    /// Clause 5.2.5 keying and think times.
    pub spec_pacing: bool,
    pub next: Option<TxType>,
    pub last: Option<TxType>,
}

/// Clause 5.2.5.7: keying times, and mean think times (negative exponential, truncated at
/// ten times the mean), in seconds.
fn keying(t: TxType) -> f64 {
    match t {
        TxType::NewOrder => 18.0,
        TxType::Payment => 3.0,
        TxType::OrderStatus | TxType::Delivery | TxType::StockLevel => 2.0,
    }
}

fn mean_think(t: TxType) -> f64 {
    match t {
        TxType::NewOrder | TxType::Payment => 12.0,
        TxType::OrderStatus => 10.0,
        TxType::Delivery | TxType::StockLevel => 5.0,
    }
}

impl Terminal {
    fn other_warehouse(&mut self) -> i64 {
        if self.warehouses == 1 {
            return self.home;
        }
        let w = self.rng.random_range(1..self.warehouses);
        if w >= self.home {
            w + 1
        } else {
            w
        }
    }

    fn customer(&mut self) -> i64 {
        random::nurand(&mut self.rng, random::A_CUSTOMER, self.c.customer, 1, CUSTOMERS_PER_DISTRICT)
    }

    fn who(&mut self) -> Who {
        if self.rng.random_range(0..100) < 60 {
            Who::LastName(random::last_name(random::nurand(&mut self.rng, random::A_LAST, self.c.last, 0, 999)))
        } else {
            Who::Id(self.customer())
        }
    }

    fn new_order(&mut self) -> txn::NewOrder {
        let d = self.rng.random_range(1..=DISTRICTS);
        let c = self.customer();
        let rollback = self.rng.random_range(0..100) == 0;
        let n = self.rng.random_range(5..=15);
        let mut lines: Vec<Line> = (0..n)
            .map(|_| {
                let item = random::nurand(&mut self.rng, random::A_ITEM, self.c.item, 1, ITEMS);
                let supply_w = if self.rng.random_range(0..100) == 0 { self.other_warehouse() } else { self.home };
                Line { item, supply_w, qty: self.rng.random_range(1..=10) }
            })
            .collect();
        if rollback {
            lines.last_mut().expect("5 to 15 lines").item = ITEMS + 1;
        }
        lines.sort_by_key(|l| (l.item, l.supply_w));
        txn::NewOrder { w: self.home, d, c, lines, rollback }
    }

    fn payment(&mut self) -> txn::Payment {
        let d = self.rng.random_range(1..=DISTRICTS);
        let (c_w, c_d) = if self.rng.random_range(0..100) < 85 || self.warehouses == 1 {
            (self.home, d)
        } else {
            (self.other_warehouse(), self.rng.random_range(1..=DISTRICTS))
        };
        let who = self.who();
        let amount = self.rng.random_range(100..=500_000) as f64 / 100.0;
        txn::Payment { w: self.home, d, c_w, c_d, who, amount }
    }

    fn run(&mut self, t: TxType, rec: &mut UnitRecorder) -> Result<Outcome> {
        let txns = self.txns;
        match t {
            TxType::NewOrder => {
                let r = self.new_order();
                let outcome = self.session.transaction(false, rec, &mut |tx| txns.new_order(tx, &r))?;
                if r.rollback != (outcome == Outcome::RolledBack) {
                    anyhow::bail!(
                        "a New-Order {} but should have {}",
                        verb(outcome),
                        verb(if r.rollback { Outcome::RolledBack } else { Outcome::Committed })
                    );
                }
                Ok(outcome)
            }
            TxType::Payment => {
                let r = self.payment();
                self.session.transaction(false, rec, &mut |tx| txns.payment(tx, &r))
            }
            TxType::OrderStatus => {
                let d = self.rng.random_range(1..=DISTRICTS);
                let r = txn::OrderStatus { w: self.home, d, who: self.who() };
                self.session.transaction(true, rec, &mut |tx| txns.order_status(tx, &r))
            }
            TxType::Delivery => {
                let r = txn::Delivery { w: self.home, carrier: self.rng.random_range(1..=10) };
                let mut skipped = 0;
                let outcome = self.session.transaction(false, rec, &mut |tx| {
                    skipped = txns.delivery(tx, &r)?;
                    Ok(Outcome::Committed)
                })?;
                for _ in 0..skipped {
                    rec.event("delivery: district with nothing to deliver");
                }
                Ok(outcome)
            }
            TxType::StockLevel => {
                let r = txn::StockLevel {
                    w: self.home,
                    d: self.stock_level_district,
                    threshold: self.rng.random_range(10..=20),
                };
                self.session.transaction(true, rec, &mut |tx| txns.stock_level(tx, &r))
            }
        }
    }
}

fn verb(o: Outcome) -> &'static str {
    match o {
        Outcome::Committed => "committed",
        Outcome::RolledBack => "rolled back",
    }
}

impl Worker for Terminal {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> Result<Outcome> {
        let t = match self.next.take() {
            Some(t) => t,
            None => self.deck.draw(&mut self.rng),
        };
        let started = Instant::now();
        let outcome = self.run(t, rec)?;
        rec.op(t as usize, started.elapsed());
        self.last = Some(t);
        Ok(outcome)
    }

    fn pause(&mut self) -> Result<Duration> {
        if !self.spec_pacing {
            return Ok(Duration::ZERO);
        }
        let next = self.deck.draw(&mut self.rng);
        self.next = Some(next);
        let think = self.last.map_or(0.0, |t| {
            let mean = mean_think(t);
            (-(1.0 - self.rng.random::<f64>()).ln() * mean).min(10.0 * mean)
        });
        Ok(Duration::from_secs_f64(think + keying(next)))
    }
}
