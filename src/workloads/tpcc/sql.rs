//! The seam between the TPC-C transactions and the engines.
//!
//! The transactions are written once, as client-side SQL in one portable text with `?`
//! placeholders ([`STATEMENTS`]); each engine only translates that text ([`dialect`]) and
//! runs it through a [`Tx`]. Values cross the seam as [`Arg`] and [`Val`], which each engine
//! maps to its own types, so no engine needs its own copy of the transaction logic.

use std::borrow::Cow;

/// The engine a statement text is translated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
    MariaDb,
}

/// Translates portable SQL: PostgreSQL numbers its placeholders, SQLite has no row locks
/// (its writers are serialized whole).
pub fn dialect(sql: &str, d: Dialect) -> String {
    match d {
        Dialect::Sqlite => sql.replace(" FOR UPDATE", ""),
        Dialect::MariaDb => sql.to_string(),
        Dialect::Postgres => {
            let mut out = String::with_capacity(sql.len() + 16);
            let mut n = 0;
            for c in sql.chars() {
                if c == '?' {
                    n += 1;
                    out.push_str(&format!("${n}"));
                } else {
                    out.push(c);
                }
            }
            out
        }
    }
}

/// A parameter value. Engines convert it to the column's type (PostgreSQL is strict).
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Int(i64),
    Real(f64),
    Text(&'a str),
}

/// A result value. Types the transactions never read back (timestamps) are fetched but
/// not decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Other,
}

/// Rows of one result, stored flat to keep allocations per statement at one.
#[derive(Default, Debug)]
pub struct Rows {
    pub cols: usize,
    pub vals: Vec<Val>,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.vals.len().checked_div(self.cols).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    fn at(&self, row: usize, col: usize) -> Result<&Val, DbError> {
        self.vals
            .get(row * self.cols + col)
            .ok_or_else(|| DbError::Data(format!("no value at row {row}, column {col}")))
    }

    pub fn int(&self, row: usize, col: usize) -> Result<i64, DbError> {
        match self.at(row, col)? {
            Val::Int(v) => Ok(*v),
            Val::Real(v) if v.fract() == 0.0 => Ok(*v as i64),
            // MariaDB returns SUM over integers as DECIMAL, which arrives as text.
            Val::Text(s) if s.parse::<i64>().is_ok() => Ok(s.parse().expect("checked")),
            v => Err(DbError::Data(format!("expected an integer, got {v:?}"))),
        }
    }

    /// A number; NULL reads as 0 (an empty SUM).
    pub fn real(&self, row: usize, col: usize) -> Result<f64, DbError> {
        match self.at(row, col)? {
            Val::Int(v) => Ok(*v as f64),
            Val::Real(v) => Ok(*v),
            Val::Null => Ok(0.0),
            Val::Text(s) if s.parse::<f64>().is_ok() => Ok(s.parse().expect("checked")),
            v => Err(DbError::Data(format!("expected a number, got {v:?}"))),
        }
    }

    pub fn text(&self, row: usize, col: usize) -> Result<Cow<'_, str>, DbError> {
        match self.at(row, col)? {
            Val::Text(s) => Ok(Cow::Borrowed(s)),
            Val::Int(v) => Ok(Cow::Owned(v.to_string())),
            v => Err(DbError::Data(format!("expected text, got {v:?}"))),
        }
    }

    /// Every row as canonical text, for comparing results across engines.
    pub fn canonical(&self) -> Vec<String> {
        let cell = |v: &Val| match v {
            Val::Null => "NULL".to_string(),
            Val::Int(i) => i.to_string(),
            Val::Real(f) => format!("{f:.2}"),
            Val::Text(s) => s.clone(),
            Val::Other => "?".into(),
        };
        self.vals.chunks(self.cols.max(1)).map(|r| r.iter().map(cell).collect::<Vec<_>>().join("|")).collect()
    }
}

/// Why a statement failed. Engine errors keep their type so conflicts can be told apart
/// from real failures and retried.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Postgres(#[from] postgres::Error),
    #[error(transparent)]
    MySql(#[from] mysql::Error),
    /// The database holds something the workload did not put there.
    #[error("{0}")]
    Data(String),
}

impl DbError {
    /// The kind of conflict, when the transaction should simply be run again.
    pub fn conflict(&self) -> Option<&'static str> {
        match self {
            DbError::Sqlite(e) => crate::targets::sqlite::conflict(e),
            DbError::Postgres(e) => crate::targets::postgres::conflict(e),
            DbError::MySql(e) => crate::targets::mysql::conflict(e),
            DbError::Data(_) => None,
        }
    }
}

/// One open transaction on some engine.
pub trait Tx {
    /// Runs statement `q` of [`STATEMENTS`] and returns its rows.
    fn query(&mut self, q: Q, args: &[Arg]) -> Result<Rows, DbError>;
    /// Runs statement `q` and returns the number of rows it matched.
    fn execute(&mut self, q: Q, args: &[Arg]) -> Result<u64, DbError>;
}

/// Index into [`STATEMENTS`].
pub type Q = usize;

macro_rules! statements {
    ($($name:ident = $sql:expr;)*) => {
        statements!(@index 0usize; $($name)*);
        /// Every statement the transactions run, in portable SQL.
        pub const STATEMENTS: &[&str] = &[$($sql),*];
    };
    (@index $n:expr; $name:ident $($rest:ident)*) => {
        pub const $name: Q = $n;
        statements!(@index $n + 1usize; $($rest)*);
    };
    (@index $n:expr;) => {};
}

statements! {
    NO_CUSTOMER_WAREHOUSE = "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
        WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?";
    NO_DISTRICT = "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ? FOR UPDATE";
    NO_NEXT_ORDER = "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?";
    NO_INSERT_ORDER = "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) \
        VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)";
    NO_INSERT_NEW_ORDER = "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)";
    NO_ITEM = "SELECT i_price, i_name, i_data FROM item WHERE i_id = ?";
    NO_STOCK = "SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, \
        s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_i_id = ? AND s_w_id = ? FOR UPDATE";
    NO_UPDATE_STOCK = "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, \
        s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?";
    NO_INSERT_LINE = "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
        ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)";

    PAY_WAREHOUSE_YTD = "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?";
    PAY_WAREHOUSE = "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?";
    PAY_DISTRICT_YTD = "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?";
    PAY_DISTRICT = "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district \
        WHERE d_w_id = ? AND d_id = ?";
    CUSTOMERS_BY_NAME = "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first";
    PAY_CUSTOMER = "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, \
        c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer \
        WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE";
    PAY_CUSTOMER_DATA = "SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";
    PAY_UPDATE_BAD_CREDIT = "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, \
        c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";
    PAY_UPDATE_CUSTOMER = "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, \
        c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";
    PAY_INSERT_HISTORY = "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
        VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)";

    OS_CUSTOMER = "SELECT c_balance, c_first, c_middle, c_last FROM customer \
        WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";
    OS_LAST_ORDER = "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? \
        ORDER BY o_id DESC LIMIT 1";
    OS_LINES = "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
        WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?";

    DL_OLDEST_NEW_ORDER = "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? \
        ORDER BY no_o_id LIMIT 1 FOR UPDATE";
    DL_DELETE_NEW_ORDER = "DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?";
    DL_ORDER_CUSTOMER = "SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?";
    DL_SET_CARRIER = "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?";
    DL_STAMP_LINES = "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP \
        WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?";
    DL_ORDER_TOTAL = "SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?";
    DL_CREDIT_CUSTOMER = "UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 \
        WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";

    SL_NEXT_ORDER = "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?";
    SL_LOW_STOCK = "SELECT count(DISTINCT s_i_id) FROM order_line, stock \
        WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? \
        AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialects_translate_placeholders_locks_and_types() {
        let sql = "SELECT a FROM t WHERE x = ? AND y = ? FOR UPDATE";
        assert_eq!(dialect(sql, Dialect::Postgres), "SELECT a FROM t WHERE x = $1 AND y = $2 FOR UPDATE");
        assert_eq!(dialect(sql, Dialect::Sqlite), "SELECT a FROM t WHERE x = ? AND y = ?");
        let now = "INSERT INTO t VALUES (CURRENT_TIMESTAMP, ?)";
        assert_eq!(dialect(now, Dialect::MariaDb), now);
    }

    #[test]
    fn statement_names_index_the_list() {
        assert_eq!(STATEMENTS[NO_CUSTOMER_WAREHOUSE], STATEMENTS[0]);
        assert!(STATEMENTS[SL_LOW_STOCK].contains("count(DISTINCT s_i_id)"));
        assert_eq!(SL_LOW_STOCK, STATEMENTS.len() - 1);
    }

    #[test]
    fn rows_read_typed_values() {
        let r = Rows { cols: 2, vals: vec![Val::Int(3), Val::Text("x".into()), Val::Null, Val::Real(2.5)] };
        assert_eq!(r.len(), 2);
        assert_eq!(r.int(0, 0).unwrap(), 3);
        assert_eq!(r.real(1, 0).unwrap(), 0.0);
        assert_eq!(r.real(1, 1).unwrap(), 2.5);
        assert!(r.int(0, 1).is_err());
        assert!(r.int(5, 0).is_err());
        assert_eq!(r.canonical(), vec!["3|x", "NULL|2.50"]);
    }
}
