//! The nine TPC-C tables (clause 1.3), in portable DDL. Money is DOUBLE PRECISION on every
//! engine rather than DECIMAL: the client-side SQL, its parameters and its results are then
//! the same everywhere (PostgreSQL's NUMERIC has no native client type), and the
//! consistency checks compare money to the cent.

use crate::targets::sql::translate;
use crate::targets::Engine;

const TABLES: &[&str] = &[
    "CREATE TABLE item (i_id INTEGER NOT NULL, i_im_id INTEGER, i_name VARCHAR(24), i_price DOUBLE PRECISION, \
     i_data VARCHAR(50), PRIMARY KEY (i_id))",
    "CREATE TABLE warehouse (w_id INTEGER NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20), \
     w_city VARCHAR(20), w_state VARCHAR(2), w_zip VARCHAR(9), w_tax DOUBLE PRECISION, w_ytd DOUBLE PRECISION, \
     PRIMARY KEY (w_id))",
    "CREATE TABLE district (d_id INTEGER NOT NULL, d_w_id INTEGER NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20), \
     d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state VARCHAR(2), d_zip VARCHAR(9), d_tax DOUBLE PRECISION, \
     d_ytd DOUBLE PRECISION, d_next_o_id INTEGER, PRIMARY KEY (d_w_id, d_id))",
    "CREATE TABLE stock (s_i_id INTEGER NOT NULL, s_w_id INTEGER NOT NULL, s_quantity INTEGER, s_dist_01 VARCHAR(24), \
     s_dist_02 VARCHAR(24), s_dist_03 VARCHAR(24), s_dist_04 VARCHAR(24), s_dist_05 VARCHAR(24), s_dist_06 VARCHAR(24), \
     s_dist_07 VARCHAR(24), s_dist_08 VARCHAR(24), s_dist_09 VARCHAR(24), s_dist_10 VARCHAR(24), s_ytd INTEGER, \
     s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))",
    "CREATE TABLE customer (c_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_w_id INTEGER NOT NULL, c_first VARCHAR(16), \
     c_middle VARCHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), \
     c_state VARCHAR(2), c_zip VARCHAR(9), c_phone VARCHAR(16), c_since TIMESTAMP, c_credit VARCHAR(2), \
     c_credit_lim DOUBLE PRECISION, c_discount DOUBLE PRECISION, c_balance DOUBLE PRECISION, \
     c_ytd_payment DOUBLE PRECISION, c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data VARCHAR(500), \
     PRIMARY KEY (c_w_id, c_d_id, c_id))",
    "CREATE TABLE history (h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER, h_w_id INTEGER, \
     h_date TIMESTAMP, h_amount DOUBLE PRECISION, h_data VARCHAR(24))",
    "CREATE TABLE orders (o_id INTEGER NOT NULL, o_c_id INTEGER, o_d_id INTEGER NOT NULL, o_w_id INTEGER NOT NULL, \
     o_entry_d TIMESTAMP, o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER, PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE TABLE new_order (no_o_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL, no_w_id INTEGER NOT NULL, \
     PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "CREATE TABLE order_line (ol_o_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL, ol_w_id INTEGER NOT NULL, \
     ol_number INTEGER NOT NULL, ol_i_id INTEGER, ol_supply_w_id INTEGER, ol_delivery_d TIMESTAMP, ol_quantity INTEGER, \
     ol_amount DOUBLE PRECISION, ol_dist_info VARCHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
];

/// Secondary indexes, created after the load: the last-name lookup and a customer's
/// latest order.
const INDEXES: &[&str] = &[
    "CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
];

/// The tables' DDL for one engine. SQLite stores keyed tables clustered on their key
/// (WITHOUT ROWID), as InnoDB does and as the TPC-C access paths want; MariaDB calls a
/// plain timestamp DATETIME (its TIMESTAMP converts time zones and updates itself).
pub fn tables(engine: Engine) -> Vec<String> {
    TABLES
        .iter()
        .map(|t| {
            let sql = translate(t, engine);
            match engine {
                Engine::Sqlite if t.contains("PRIMARY KEY") => sql + " WITHOUT ROWID",
                Engine::Mariadb => sql.replace(" TIMESTAMP,", " DATETIME,") + " ENGINE=InnoDB",
                _ => sql,
            }
        })
        .collect()
}

pub fn indexes() -> &'static [&'static str] {
    INDEXES
}

/// Refreshes the planner's statistics after the load.
pub fn statistics(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "ANALYZE",
        // VACUUM cannot share a multi-statement batch: that runs as one transaction.
        Engine::Postgres => "VACUUM ANALYZE",
        Engine::Mariadb => {
            "ANALYZE TABLE item, warehouse, district, stock, customer, history, orders, new_order, order_line"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::tpcc::load::Table;

    #[test]
    fn ddl_columns_match_the_generator() {
        let all = [
            Table::Item,
            Table::Warehouse,
            Table::District,
            Table::Stock,
            Table::Customer,
            Table::History,
            Table::Orders,
            Table::NewOrder,
            Table::OrderLine,
        ];
        for (ddl, t) in TABLES.iter().zip(all) {
            assert!(ddl.starts_with(&format!("CREATE TABLE {} (", t.name())), "{ddl}");
            // Column definitions are the top-level comma-separated entries besides the key.
            let body = &ddl[ddl.find('(').unwrap() + 1..ddl.len() - 1];
            let (mut depth, mut cols) = (0, vec![String::new()]);
            for ch in body.chars() {
                match ch {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    ',' if depth == 0 => cols.push(String::new()),
                    _ => {}
                }
                cols.last_mut().unwrap().push(ch);
            }
            let n = cols.iter().filter(|c| !c.trim_start_matches(',').trim().starts_with("PRIMARY KEY")).count();
            assert_eq!(n, t.columns(), "{ddl}");
        }
    }
}
