//! DS2 on MariaDB (InnoDB): schema, multi-row INSERT loader, the four operations.
//!
//! Same semantics as the other engines: AND search (InnoDB FULLTEXT in BOOLEAN MODE with
//! `+w1 +w2`), the same restock rule, purchase in one transaction with stock rows read
//! `FOR UPDATE`. Deadlocks (1213) and lock wait timeouts (1205) restart the transaction and
//! are counted.

use super::build::{Batch, Loader as LoaderTrait};
use super::data::Customer;
use super::order::{place_order, Browse, Cart, PurchaseSteps, Session as SessionTrait};
use crate::driver::{restarting, Outcome, UnitRecorder};
use crate::targets::mysql::conflict;
use anyhow::Result;
use mysql::prelude::Queryable;
use mysql::{Conn, Statement, TxOpts};

const SCHEMA: &[&str] = &[
    "CREATE TABLE customers (
      customerid INT AUTO_INCREMENT PRIMARY KEY, firstname VARCHAR(50) NOT NULL, lastname VARCHAR(50) NOT NULL,
      address1 VARCHAR(50) NOT NULL, address2 VARCHAR(50), city VARCHAR(50) NOT NULL, state VARCHAR(50), zip VARCHAR(9),
      country VARCHAR(50) NOT NULL, region SMALLINT NOT NULL, email VARCHAR(50), phone VARCHAR(50),
      creditcardtype INT NOT NULL, creditcard VARCHAR(50) NOT NULL, creditcardexpiration VARCHAR(50) NOT NULL,
      username VARCHAR(50) NOT NULL, password VARCHAR(50) NOT NULL, age SMALLINT, income INT, gender VARCHAR(1))
      ENGINE=InnoDB",
    "CREATE TABLE cust_hist (customerid INT NOT NULL, orderid INT NOT NULL, prod_id INT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE orders (
      orderid INT AUTO_INCREMENT PRIMARY KEY, orderdate DATE NOT NULL, customerid INT,
      netamount NUMERIC(12,2) NOT NULL, tax NUMERIC(12,2) NOT NULL, totalamount NUMERIC(12,2) NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE orderlines (
      orderlineid SMALLINT NOT NULL, orderid INT NOT NULL, prod_id INT NOT NULL, quantity SMALLINT NOT NULL,
      orderdate DATE NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE products (
      prod_id INT PRIMARY KEY, category SMALLINT NOT NULL, title VARCHAR(50) NOT NULL, actor VARCHAR(50) NOT NULL,
      price NUMERIC(12,2) NOT NULL, special SMALLINT, common_prod_id INT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE inventory (prod_id INT PRIMARY KEY, quan_in_stock INT NOT NULL, sales INT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE categories (category SMALLINT PRIMARY KEY, categoryname VARCHAR(50) NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE reorder (
      prod_id INT NOT NULL, date_low DATE NOT NULL, quan_low INT NOT NULL, date_reordered DATE, quan_reordered INT,
      date_expected DATE) ENGINE=InnoDB",
];

const INDEXES: &[&str] = &[
    "CREATE UNIQUE INDEX ix_cust_username ON customers(username)",
    "CREATE INDEX ix_cust_hist_customerid ON cust_hist(customerid)",
    "CREATE INDEX ix_order_custid ON orders(customerid)",
    "CREATE UNIQUE INDEX ix_orderlines_orderid ON orderlines(orderid, orderlineid)",
    "CREATE INDEX ix_prod_category_special ON products(category, special)",
    "CREATE INDEX ix_prod_special ON products(special)",
    "CREATE FULLTEXT INDEX ix_prod_title_fts ON products(title)",
    "CREATE FULLTEXT INDEX ix_prod_actor_fts ON products(actor)",
    "ALTER TABLE cust_hist ADD FOREIGN KEY (customerid) REFERENCES customers(customerid) ON DELETE CASCADE",
    "ALTER TABLE orders ADD FOREIGN KEY (customerid) REFERENCES customers(customerid) ON DELETE SET NULL",
    "ALTER TABLE orderlines ADD FOREIGN KEY (orderid) REFERENCES orders(orderid) ON DELETE CASCADE",
    "ANALYZE TABLE customers, cust_hist, orders, orderlines, products, inventory",
];

/// Rows per multi-row INSERT.
const ROWS_PER_INSERT: usize = 1000;

pub struct Loader<'c>(pub &'c mut Conn);

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

fn insert(c: &mut Conn, table: &str, rows: impl Iterator<Item = String>) -> Result<()> {
    let rows: Vec<String> = rows.collect();
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        c.query_drop(format!("INSERT INTO {table} VALUES {}", chunk.join(",")))?;
    }
    Ok(())
}

impl LoaderTrait for Loader<'_> {
    fn create_schema(&mut self) -> Result<()> {
        for s in SCHEMA {
            self.0.query_drop(s)?;
        }
        let cats = super::data::CATEGORIES.iter().enumerate().map(|(i, n)| format!("({}, {})", i + 1, quote(n)));
        insert(self.0, "categories", cats)
    }

    fn load(&mut self, batch: &Batch) -> Result<()> {
        let c = &mut *self.0;
        c.query_drop("START TRANSACTION")?;
        match batch {
            Batch::Products(v) => insert(
                c,
                "products",
                v.iter().map(|p| {
                    format!(
                        "({}, {}, {}, {}, {:.2}, {}, {})",
                        p.id,
                        p.category,
                        quote(&p.title),
                        quote(&p.actor),
                        p.price,
                        p.special,
                        p.common_prod_id
                    )
                }),
            )?,
            Batch::Customers(v) => insert(c, "customers", v.iter().map(customer_row))?,
            Batch::Orders(v) => {
                insert(
                    c,
                    "orders",
                    v.iter().map(|o| {
                        format!("({}, '{}', {}, {:.2}, {:.2}, {:.2})", o.id, o.date, o.customer, o.net, o.tax, o.total)
                    }),
                )?;
                let lines = v.iter().flat_map(|o| {
                    o.lines
                        .iter()
                        .enumerate()
                        .map(move |(i, (p, q))| format!("({}, {}, {p}, {q}, '{}')", i + 1, o.id, o.date))
                });
                insert(c, "orderlines", lines)?;
                let hist =
                    v.iter().flat_map(|o| o.lines.iter().map(move |(p, _)| format!("({}, {}, {p})", o.customer, o.id)));
                insert(c, "cust_hist", hist)?;
            }
            Batch::Inventory(v) => insert(c, "inventory", v.iter().map(|(p, s, q)| format!("({p}, {s}, {q})")))?,
        }
        c.query_drop("COMMIT")?;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        for s in INDEXES {
            self.0.query_drop(s)?;
        }
        Ok(())
    }
}

fn customer_row(c: &Customer) -> String {
    format!(
        "({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})",
        c.id,
        quote(&c.firstname),
        quote(&c.lastname),
        quote(&c.address1),
        quote(c.address2),
        quote(&c.city),
        quote(c.state),
        quote(&c.zip),
        quote(c.country),
        c.region,
        quote(&c.email),
        quote(&c.phone),
        c.creditcardtype,
        quote(&c.creditcard),
        quote(&c.creditcardexpiration),
        quote(&c.username),
        quote(c.password),
        c.age,
        c.income,
        quote(c.gender)
    )
}

const PRODUCT_COLUMNS: &str = "prod_id, category, title, actor, CAST(price AS DOUBLE), special, common_prod_id";

struct Steps<'a, 't> {
    tx: &'a mut mysql::Transaction<'t>,
    st: &'a Prepared,
}

impl PurchaseSteps for Steps<'_, '_> {
    type Error = mysql::Error;

    fn insert_order(&mut self, customer: i64, cart: &Cart) -> Result<i64, mysql::Error> {
        self.tx.exec_drop(&self.st.insert_order, (customer, cart.net, cart.tax, cart.total))?;
        Ok(self.tx.last_insert_id().unwrap_or(0) as i64)
    }

    fn stock_for_update(&mut self, product: i64) -> Result<i64, mysql::Error> {
        Ok(self.tx.exec_first::<(i64, i64), _, _>(&self.st.stock, (product,))?.map_or(0, |(stock, _)| stock))
    }

    fn sell_and_reorder(&mut self, product: i64, qty: i32, left: i64) -> Result<(), mysql::Error> {
        self.tx.exec_drop(&self.st.add_sales, (qty, product))?;
        self.tx.exec_drop(&self.st.reorder, (product, left))
    }

    fn sell(&mut self, product: i64, qty: i32, left: i64) -> Result<(), mysql::Error> {
        self.tx.exec_drop(&self.st.set_stock, (left, qty, product))
    }

    fn add_line(&mut self, order: i64, line: usize, product: i64, qty: i32, customer: i64) -> Result<(), mysql::Error> {
        self.tx.exec_drop(&self.st.insert_line, (line, order, product, qty))?;
        self.tx.exec_drop(&self.st.insert_hist, (customer, order, product))
    }
}

struct Prepared {
    login: Statement,
    history: Statement,
    new_customer: Statement,
    by_category: Statement,
    by_actor: Statement,
    by_title: Statement,
    price: Statement,
    insert_order: Statement,
    stock: Statement,
    add_sales: Statement,
    reorder: Statement,
    set_stock: Statement,
    insert_line: Statement,
    insert_hist: Statement,
}

pub struct Session {
    c: Conn,
    st: Prepared,
}

impl Session {
    pub fn new(mut c: Conn) -> Result<Self> {
        let mut p = |sql: &str| c.prep(sql);
        let st = Prepared {
            login: p("SELECT customerid FROM customers WHERE username = ? AND password = ?")?,
            history: p("SELECT p.title, p.actor, r.title FROM cust_hist h JOIN products p ON p.prod_id = h.prod_id \
                 JOIN products r ON r.prod_id = p.common_prod_id WHERE h.customerid = ? ORDER BY h.orderid DESC LIMIT 10")?,
            new_customer: p("INSERT IGNORE INTO customers (firstname, lastname, address1, address2, city, state, zip, \
                 country, region, email, phone, creditcardtype, creditcard, creditcardexpiration, username, password, age, \
                 income, gender) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")?,
            by_category: p(&format!("SELECT {PRODUCT_COLUMNS} FROM products WHERE category = ? AND special = 1 LIMIT ?"))?,
            by_actor: p(&format!(
                "SELECT {PRODUCT_COLUMNS} FROM products WHERE MATCH(actor) AGAINST (? IN BOOLEAN MODE) LIMIT ?"
            ))?,
            by_title: p(&format!(
                "SELECT {PRODUCT_COLUMNS} FROM products WHERE MATCH(title) AGAINST (? IN BOOLEAN MODE) LIMIT ?"
            ))?,
            price: p("SELECT CAST(price AS DOUBLE) FROM products WHERE prod_id = ?")?,
            insert_order: p("INSERT INTO orders (orderdate, customerid, netamount, tax, totalamount) \
                 VALUES (CURDATE(), ?, ?, ?, ?)")?,
            stock: p("SELECT quan_in_stock, sales FROM inventory WHERE prod_id = ? FOR UPDATE")?,
            add_sales: p("UPDATE inventory SET sales = sales + ? WHERE prod_id = ?")?,
            reorder: p("INSERT INTO reorder (prod_id, date_low, quan_low) VALUES (?, CURDATE(), ?)")?,
            set_stock: p("UPDATE inventory SET quan_in_stock = ?, sales = sales + ? WHERE prod_id = ?")?,
            insert_line: p("INSERT INTO orderlines VALUES (?, ?, ?, ?, CURDATE())")?,
            insert_hist: p("INSERT INTO cust_hist VALUES (?, ?, ?)")?,
        };
        Ok(Self { c, st })
    }
}

/// `+w1 +w2`: every word required, InnoDB's boolean-mode AND.
fn all_words(text: &str) -> String {
    text.split_whitespace()
        .map(|w| format!("+{}", w.replace(|c: char| !c.is_alphanumeric(), "")))
        .collect::<Vec<_>>()
        .join(" ")
}

impl SessionTrait for Session {
    fn login(&mut self, username: &str) -> Result<Option<i64>> {
        let Some(id) = self.c.exec_first::<i64, _, _>(&self.st.login, (username, "password"))? else {
            return Ok(None);
        };
        self.c.exec_drop(&self.st.history, (id,))?;
        Ok(Some(id))
    }

    fn new_customer(&mut self, c: &Customer, _rec: &mut UnitRecorder) -> Result<Option<i64>> {
        let params: Vec<mysql::Value> = vec![
            c.firstname.as_str().into(),
            c.lastname.as_str().into(),
            c.address1.as_str().into(),
            c.address2.into(),
            c.city.as_str().into(),
            c.state.into(),
            c.zip.as_str().into(),
            c.country.into(),
            c.region.into(),
            c.email.as_str().into(),
            c.phone.as_str().into(),
            c.creditcardtype.into(),
            c.creditcard.as_str().into(),
            c.creditcardexpiration.as_str().into(),
            c.username.as_str().into(),
            c.password.into(),
            c.age.into(),
            c.income.into(),
            c.gender.into(),
        ];
        self.c.exec_drop(&self.st.new_customer, params)?;
        Ok((self.c.affected_rows() == 1).then(|| self.c.last_insert_id() as i64))
    }

    fn browse(&mut self, by: Browse<'_>, limit: u32) -> Result<usize> {
        type Row = (i64, i64, String, String, f64, i64, i64);
        let rows: Vec<Row> = match by {
            Browse::Category(cat) => self.c.exec(&self.st.by_category, (cat, limit))?,
            Browse::Actor(text) => self.c.exec(&self.st.by_actor, (all_words(text), limit))?,
            Browse::Title(text) => self.c.exec(&self.st.by_title, (all_words(text), limit))?,
        };
        Ok(rows.len())
    }

    fn price(&mut self, product: i64) -> Result<f64> {
        self.c.exec_first(&self.st.price, (product,))?.ok_or_else(|| anyhow::anyhow!("product {product} is missing"))
    }

    fn purchase(&mut self, customer: i64, cart: &Cart, rec: &mut UnitRecorder) -> Result<Outcome> {
        let (c, st) = (&mut self.c, &self.st);
        restarting(rec, conflict, || {
            let mut tx = c.start_transaction(TxOpts::default())?;
            let outcome = place_order(&mut Steps { tx: &mut tx, st }, customer, cart)?;
            match outcome {
                Outcome::Committed => tx.commit()?,
                Outcome::RolledBack => tx.rollback()?,
            }
            Ok(outcome)
        })
    }

    fn take_lock_waits(&mut self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn search_words_are_all_required() {
        assert_eq!(super::all_words("FOO  BAR"), "+FOO +BAR");
        assert_eq!(super::all_words("A*B"), "+AB");
        assert_eq!(super::quote("it's"), "'it''s'");
    }
}
