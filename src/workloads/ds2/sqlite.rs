//! DS2 on SQLite: schema, bulk loader, the four operations, and post-run queries.
//!
//! Full-text search uses an FTS5 index over PRODUCTS(TITLE, ACTOR) with external content;
//! PRODUCTS never changes during a run, so the index needs no triggers.

use super::build::{Batch, Loader as LoaderTrait};
use super::data::Customer;
use super::order::{place_order, Browse, Cart, PurchaseSteps, Session as SessionTrait};
use crate::driver::{Outcome, UnitRecorder};
use crate::targets::sqlite::{take_lock_waits, SqliteConnection};
use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension, ToSql};

const SCHEMA: &str = "
CREATE TABLE customers (
  customerid INTEGER PRIMARY KEY, firstname VARCHAR(50) NOT NULL, lastname VARCHAR(50) NOT NULL,
  address1 VARCHAR(50) NOT NULL, address2 VARCHAR(50), city VARCHAR(50) NOT NULL, state VARCHAR(50),
  zip VARCHAR(9), country VARCHAR(50) NOT NULL, region SMALLINT NOT NULL, email VARCHAR(50),
  phone VARCHAR(50), creditcardtype INTEGER NOT NULL, creditcard VARCHAR(50) NOT NULL,
  creditcardexpiration VARCHAR(50) NOT NULL, username VARCHAR(50) NOT NULL, password VARCHAR(50) NOT NULL,
  age SMALLINT, income INTEGER, gender VARCHAR(1));
CREATE TABLE cust_hist (
  customerid INTEGER NOT NULL REFERENCES customers(customerid) ON DELETE CASCADE,
  orderid INTEGER NOT NULL, prod_id INTEGER NOT NULL);
CREATE TABLE orders (
  orderid INTEGER PRIMARY KEY, orderdate DATE NOT NULL,
  customerid INTEGER REFERENCES customers(customerid) ON DELETE SET NULL,
  netamount NUMERIC(12,2) NOT NULL, tax NUMERIC(12,2) NOT NULL, totalamount NUMERIC(12,2) NOT NULL);
CREATE TABLE orderlines (
  orderlineid SMALLINT NOT NULL, orderid INTEGER NOT NULL REFERENCES orders(orderid) ON DELETE CASCADE,
  prod_id INTEGER NOT NULL, quantity SMALLINT NOT NULL, orderdate DATE NOT NULL);
CREATE TABLE products (
  prod_id INTEGER PRIMARY KEY, category SMALLINT NOT NULL, title VARCHAR(50) NOT NULL,
  actor VARCHAR(50) NOT NULL, price NUMERIC(12,2) NOT NULL, special SMALLINT, common_prod_id INTEGER NOT NULL);
CREATE TABLE inventory (prod_id INTEGER PRIMARY KEY, quan_in_stock INTEGER NOT NULL, sales INTEGER NOT NULL);
CREATE TABLE categories (category SMALLINT PRIMARY KEY, categoryname VARCHAR(50) NOT NULL);
CREATE TABLE reorder (
  prod_id INTEGER NOT NULL, date_low DATE NOT NULL, quan_low INTEGER NOT NULL,
  date_reordered DATE, quan_reordered INTEGER, date_expected DATE);
";

const INDEXES: &str = "
CREATE UNIQUE INDEX ix_cust_username ON customers(username);
CREATE INDEX ix_cust_hist_customerid ON cust_hist(customerid);
CREATE INDEX ix_order_custid ON orders(customerid);
CREATE UNIQUE INDEX ix_orderlines_orderid ON orderlines(orderid, orderlineid);
CREATE INDEX ix_prod_category_special ON products(category, special);
CREATE INDEX ix_prod_special ON products(special);
CREATE VIRTUAL TABLE products_fts USING fts5(title, actor, content='products', content_rowid='prod_id');
INSERT INTO products_fts(products_fts) VALUES ('rebuild');
ANALYZE;
";

pub struct Loader<'c>(&'c mut Connection);

impl<'c> Loader<'c> {
    pub fn new(c: &'c mut Connection) -> Self {
        Self(c)
    }
}

impl LoaderTrait for Loader<'_> {
    fn create_schema(&mut self) -> Result<()> {
        // A large page cache makes the index builds at the end mostly in-memory sorts.
        self.0.execute_batch("PRAGMA cache_size = -262144;")?;
        self.0.execute_batch(SCHEMA)?;
        let tx = self.0.transaction()?;
        for (i, name) in super::data::CATEGORIES.iter().enumerate() {
            tx.execute("INSERT INTO categories VALUES (?1, ?2)", params![i as i64 + 1, name])?;
        }
        Ok(tx.commit()?)
    }

    fn load(&mut self, batch: &Batch) -> Result<()> {
        let tx = self.0.transaction()?;
        match batch {
            Batch::Products(v) => {
                let mut st = tx.prepare_cached("INSERT INTO products VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
                for p in v {
                    st.execute(params![p.id, p.category, p.title, p.actor, p.price, p.special, p.common_prod_id])?;
                }
            }
            Batch::Customers(v) => {
                let mut st = tx.prepare_cached(INSERT_CUSTOMER_WITH_ID)?;
                for c in v {
                    st.execute(customer_params(c, &Some(c.id)))?;
                }
            }
            Batch::Orders(v) => {
                let mut o_st = tx.prepare_cached("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
                let mut l_st = tx.prepare_cached("INSERT INTO orderlines VALUES (?1, ?2, ?3, ?4, ?5)")?;
                let mut h_st = tx.prepare_cached("INSERT INTO cust_hist VALUES (?1, ?2, ?3)")?;
                for o in v {
                    o_st.execute(params![o.id, o.date, o.customer, o.net, o.tax, o.total])?;
                    for (i, &(prod, qty)) in o.lines.iter().enumerate() {
                        l_st.execute(params![i as i64 + 1, o.id, prod, qty, o.date])?;
                        h_st.execute(params![o.customer, o.id, prod])?;
                    }
                }
            }
            Batch::Inventory(v) => {
                let mut st = tx.prepare_cached("INSERT INTO inventory VALUES (?1, ?2, ?3)")?;
                for &(p, stock, sales) in v {
                    st.execute(params![p, stock, sales])?;
                }
            }
        }
        Ok(tx.commit()?)
    }

    fn finish(&mut self) -> Result<()> {
        Ok(self.0.execute_batch(INDEXES)?)
    }
}

const INSERT_CUSTOMER_WITH_ID: &str = "INSERT INTO customers (firstname, lastname, address1, address2, city, state, zip, \
     country, region, email, phone, creditcardtype, creditcard, creditcardexpiration, username, password, age, income, \
     gender, customerid) VALUES (?1, ?2, ?3, ?20, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";

/// The customer's columns in INSERT_CUSTOMER_WITH_ID order; a `None` id lets SQLite assign one.
fn customer_params<'a>(c: &'a Customer, id: &'a Option<i64>) -> [&'a dyn ToSql; 20] {
    [
        &c.firstname,
        &c.lastname,
        &c.address1,
        &c.city,
        &c.state,
        &c.zip,
        &c.country,
        &c.region,
        &c.email,
        &c.phone,
        &c.creditcardtype,
        &c.creditcard,
        &c.creditcardexpiration,
        &c.username,
        &c.password,
        &c.age,
        &c.income,
        &c.gender,
        id,
        &c.address2,
    ]
}

pub struct Session(SqliteConnection);

impl Session {
    pub fn new(c: SqliteConnection) -> Self {
        Self(c)
    }
}

const PRODUCT_COLUMNS: &str = "p.prod_id, p.category, p.title, p.actor, p.price, p.special, p.common_prod_id";

struct Steps<'c>(&'c Connection);

impl PurchaseSteps for Steps<'_> {
    type Error = rusqlite::Error;

    fn insert_order(&mut self, customer: i64, cart: &Cart) -> rusqlite::Result<i64> {
        self.0
            .prepare_cached(
                "INSERT INTO orders (orderdate, customerid, netamount, tax, totalamount) VALUES (date('now'), ?1, ?2, ?3, ?4)",
            )?
            .execute(params![customer, cart.net, cart.tax, cart.total])?;
        Ok(self.0.last_insert_rowid())
    }

    /// SQLite's write lock (BEGIN IMMEDIATE) already serializes purchases.
    fn stock_for_update(&mut self, product: i64) -> rusqlite::Result<i64> {
        self.0
            .prepare_cached("SELECT quan_in_stock FROM inventory WHERE prod_id = ?1")?
            .query_row([product], |r| r.get(0))
    }

    fn sell_and_reorder(&mut self, product: i64, qty: i32, left: i64) -> rusqlite::Result<()> {
        self.0
            .prepare_cached("UPDATE inventory SET sales = sales + ?1 WHERE prod_id = ?2")?
            .execute(params![qty, product])?;
        self.0
            .prepare_cached("INSERT INTO reorder (prod_id, date_low, quan_low) VALUES (?1, date('now'), ?2)")?
            .execute(params![product, left])?;
        Ok(())
    }

    fn sell(&mut self, product: i64, qty: i32, left: i64) -> rusqlite::Result<()> {
        self.0
            .prepare_cached("UPDATE inventory SET quan_in_stock = ?1, sales = sales + ?2 WHERE prod_id = ?3")?
            .execute(params![left, qty, product])?;
        Ok(())
    }

    fn add_line(&mut self, order: i64, line: usize, product: i64, qty: i32, customer: i64) -> rusqlite::Result<()> {
        self.0.prepare_cached("INSERT INTO orderlines VALUES (?1, ?2, ?3, ?4, date('now'))")?.execute(params![
            line as i64,
            order,
            product,
            qty
        ])?;
        self.0
            .prepare_cached("INSERT INTO cust_hist VALUES (?1, ?2, ?3)")?
            .execute(params![customer, order, product])?;
        Ok(())
    }
}

/// An FTS5 query for rows whose `column` holds every word of `text`.
fn all_words(column: &str, text: &str) -> String {
    let terms: Vec<String> = text.split_whitespace().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect();
    format!("{column} : ({})", terms.join(" AND "))
}

impl SessionTrait for Session {
    fn login(&mut self, username: &str) -> Result<Option<i64>> {
        let id: Option<i64> = self
            .0
            .prepare_cached("SELECT customerid FROM customers WHERE username = ?1 AND password = ?2")?
            .query_row(params![username, "password"], |r| r.get(0))
            .optional()?;
        if let Some(id) = id {
            let mut st = self.0.prepare_cached(
                "SELECT p.title, p.actor, r.title FROM cust_hist h JOIN products p ON p.prod_id = h.prod_id \
                 JOIN products r ON r.prod_id = p.common_prod_id WHERE h.customerid = ?1 ORDER BY h.orderid DESC LIMIT 10",
            )?;
            let mut rows = st.query([id])?;
            while rows.next()?.is_some() {}
        }
        Ok(id)
    }

    fn new_customer(&mut self, c: &Customer, rec: &mut UnitRecorder) -> Result<Option<i64>> {
        self.0.write(rec, |conn| {
            let exists = conn
                .prepare_cached("SELECT 1 FROM customers WHERE username = ?1")?
                .query_row([&c.username], |_| Ok(()))
                .optional()?
                .is_some();
            if exists {
                return Ok(None);
            }
            conn.prepare_cached(INSERT_CUSTOMER_WITH_ID)?.execute(customer_params(c, &None))?;
            Ok(Some(conn.last_insert_rowid()))
        })
    }

    fn browse(&mut self, by: Browse<'_>, limit: u32) -> Result<usize> {
        let mut n = 0;
        let mut count = |mut rows: rusqlite::Rows<'_>| -> rusqlite::Result<()> {
            while rows.next()?.is_some() {
                n += 1;
            }
            Ok(())
        };
        match by {
            Browse::Category(cat) => {
                let sql = format!(
                    "SELECT {PRODUCT_COLUMNS} FROM products p WHERE p.category = ?1 AND p.special = 1 LIMIT ?2"
                );
                count(self.0.prepare_cached(&sql)?.query(params![cat, limit])?)?;
            }
            Browse::Actor(text) | Browse::Title(text) => {
                let column = if matches!(by, Browse::Actor(_)) { "actor" } else { "title" };
                let sql = format!(
                    "SELECT {PRODUCT_COLUMNS} FROM products_fts f JOIN products p ON p.prod_id = f.rowid \
                     WHERE products_fts MATCH ?1 LIMIT ?2"
                );
                count(self.0.prepare_cached(&sql)?.query(params![all_words(column, text), limit])?)?;
            }
        }
        Ok(n)
    }

    fn price(&mut self, product: i64) -> Result<f64> {
        Ok(self
            .0
            .prepare_cached("SELECT price FROM products WHERE prod_id = ?1")?
            .query_row([product], |r| r.get(0))?)
    }

    fn purchase(&mut self, customer: i64, cart: &Cart, rec: &mut UnitRecorder) -> Result<Outcome> {
        self.0.write(rec, |conn| {
            let outcome = place_order(&mut Steps(conn), customer, cart)?;
            if outcome == Outcome::RolledBack {
                conn.execute_batch("ROLLBACK")?;
            }
            Ok(outcome)
        })
    }

    fn take_lock_waits(&mut self) -> u64 {
        take_lock_waits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_terms_are_quoted_and_anded() {
        assert_eq!(all_words("title", "FOO  BAR"), "title : (\"FOO\" AND \"BAR\")");
        assert_eq!(all_words("actor", "A\"B"), "actor : (\"A\"\"B\")");
    }
}
