//! The DS2 statements, written once in portable SQL. Engines override only what has no
//! portable spelling: full-text search, and MariaDB's upsert. Every engine searches for all
//! the words of a title or actor ([`search_text`] phrases them for its engine).

use crate::targets::sql::{statements, Statements, Q};
use crate::targets::Engine;

pub const STATEMENTS: Statements = Statements { portable: LIST, overrides };

/// The columns a new customer fills, in the order [`super::order`] passes them.
macro_rules! customer_columns {
    () => {
        "firstname, lastname, address1, address2, city, state, zip, country, region, email, phone, creditcardtype, \
         creditcard, creditcardexpiration, username, password, age, income, gender"
    };
}

statements!(LIST {
    LOGIN = "SELECT customerid FROM customers WHERE username = ? AND password = ?";
    HISTORY = "SELECT p.title, p.actor, r.title FROM cust_hist h JOIN products p ON p.prod_id = h.prod_id \
        JOIN products r ON r.prod_id = p.common_prod_id WHERE h.customerid = ? ORDER BY h.orderid DESC LIMIT 10";
    NEW_CUSTOMER = concat!("INSERT INTO customers (", customer_columns!(), ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, \
        ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (username) DO NOTHING RETURNING customerid");
    BY_CATEGORY = "SELECT prod_id, category, title, actor, price, special, common_prod_id FROM products \
        WHERE category = ? AND special = 1 LIMIT ?";
    // PostgreSQL's spelling; the others override it.
    BY_ACTOR = "SELECT prod_id, category, title, actor, price, special, common_prod_id FROM products \
        WHERE to_tsvector('simple', actor) @@ plainto_tsquery('simple', ?) LIMIT ?";
    BY_TITLE = "SELECT prod_id, category, title, actor, price, special, common_prod_id FROM products \
        WHERE to_tsvector('simple', title) @@ plainto_tsquery('simple', ?) LIMIT ?";
    PRICE = "SELECT price FROM products WHERE prod_id = ?";
    INSERT_ORDER = "INSERT INTO orders (orderdate, customerid, netamount, tax, totalamount) \
        VALUES (CURRENT_DATE, ?, ?, ?, ?) RETURNING orderid";
    STOCK = "SELECT quan_in_stock FROM inventory WHERE prod_id = ? FOR UPDATE";
    ADD_SALES = "UPDATE inventory SET sales = sales + ? WHERE prod_id = ?";
    REORDER = "INSERT INTO reorder (prod_id, date_low, quan_low) VALUES (?, CURRENT_DATE, ?)";
    SET_STOCK = "UPDATE inventory SET quan_in_stock = ?, sales = sales + ? WHERE prod_id = ?";
    INSERT_LINE = "INSERT INTO orderlines VALUES (?, ?, ?, ?, CURRENT_DATE)";
    INSERT_HIST = "INSERT INTO cust_hist VALUES (?, ?, ?)";
});

const SQLITE_SEARCH: &str = "SELECT p.prod_id, p.category, p.title, p.actor, p.price, p.special, p.common_prod_id \
     FROM products_fts f JOIN products p ON p.prod_id = f.rowid WHERE products_fts MATCH ? LIMIT ?";

fn overrides(engine: Engine, q: Q) -> Option<&'static str> {
    match (engine, q) {
        // FTS5 names the column inside the match text (see search_text).
        (Engine::Sqlite, BY_ACTOR | BY_TITLE) => Some(SQLITE_SEARCH),
        (Engine::Mariadb, BY_ACTOR) => Some(
            "SELECT prod_id, category, title, actor, price, special, common_prod_id FROM products \
             WHERE MATCH(actor) AGAINST (? IN BOOLEAN MODE) LIMIT ?",
        ),
        (Engine::Mariadb, BY_TITLE) => Some(
            "SELECT prod_id, category, title, actor, price, special, common_prod_id FROM products \
             WHERE MATCH(title) AGAINST (? IN BOOLEAN MODE) LIMIT ?",
        ),
        // MariaDB has no ON CONFLICT; INSERT IGNORE returns no row for a taken username.
        (Engine::Mariadb, NEW_CUSTOMER) => Some(concat!(
            "INSERT IGNORE INTO customers (",
            customer_columns!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING customerid"
        )),
        _ => None,
    }
}

/// The search text that finds rows whose `column` ("title" or "actor") holds every word.
pub fn search_text(engine: Engine, column: &str, text: &str) -> String {
    let words = text.split_whitespace();
    match engine {
        // An FTS5 query: each word quoted, ANDed, within the column.
        Engine::Sqlite => {
            let terms: Vec<String> = words.map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect();
            format!("{column} : ({})", terms.join(" AND "))
        }
        // plainto_tsquery ANDs the words itself.
        Engine::Postgres => text.to_string(),
        // `+w1 +w2`: every word required, InnoDB's boolean-mode AND.
        Engine::Mariadb => {
            words.map(|w| format!("+{}", w.replace(|c: char| !c.is_alphanumeric(), ""))).collect::<Vec<_>>().join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_text_requires_every_word_on_every_engine() {
        assert_eq!(search_text(Engine::Sqlite, "title", "FOO  BAR"), "title : (\"FOO\" AND \"BAR\")");
        assert_eq!(search_text(Engine::Sqlite, "actor", "A\"B"), "actor : (\"A\"\"B\")");
        assert_eq!(search_text(Engine::Mariadb, "title", "FOO  BAR"), "+FOO +BAR");
        assert_eq!(search_text(Engine::Mariadb, "title", "A*B"), "+AB");
        assert_eq!(search_text(Engine::Postgres, "title", "FOO BAR"), "FOO BAR");
    }

    #[test]
    fn only_search_and_the_upsert_are_overridden() {
        for engine in [Engine::Sqlite, Engine::Postgres, Engine::Mariadb] {
            for q in 0..LIST.len() {
                let own = overrides(engine, q).is_some();
                assert!(!own || [BY_ACTOR, BY_TITLE, NEW_CUSTOMER].contains(&q), "{engine} overrides {q}");
            }
        }
    }
}
