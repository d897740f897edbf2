//! The TPC-C statements, each written once in portable SQL (the engine seam in
//! `targets::sql` translates them); no engine needs an override. New-Order is set-oriented,
//! as go-tpc's: an order's items in one query, its stock rows (per supplying warehouse) in
//! one locking read, its lines in one multi-row INSERT; those statements come in one form
//! per list length, after [`LIST`].

use crate::targets::sql::{statements, Q};

/// The most lines a New-Order has (clause 2.4.1.3: 5 to 15).
pub const MAX_LINES: usize = 15;

/// Every statement in portable SQL: [`LIST`], then the set-oriented New-Order forms.
pub fn all() -> Vec<String> {
    let marks = |n: usize, one: &str| vec![one; n].join(", ");
    let stock_columns = "s_i_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, \
        s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10";
    let mut all: Vec<String> = LIST.iter().map(|s| s.to_string()).collect();
    for n in 1..=MAX_LINES {
        all.push(format!("SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({})", marks(n, "?")));
        all.push(format!(
            "SELECT {stock_columns} FROM stock WHERE s_w_id = ? AND s_i_id IN ({}) ORDER BY s_i_id FOR UPDATE",
            marks(n, "?")
        ));
        all.push(format!(
            "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, \
             ol_quantity, ol_amount, ol_dist_info) VALUES {}",
            marks(n, "(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)")
        ));
    }
    all
}

/// The items with these `n` ids (a missing one is not among the rows).
pub fn no_items(n: usize) -> Q {
    set_form(n, 0)
}

/// The stock rows of `n` items of one warehouse, locked, in item order.
pub fn no_stocks(n: usize) -> Q {
    set_form(n, 1)
}

/// `n` order lines.
pub fn no_insert_lines(n: usize) -> Q {
    set_form(n, 2)
}

fn set_form(n: usize, which: usize) -> Q {
    assert!((1..=MAX_LINES).contains(&n), "a New-Order has 1 to {MAX_LINES} lines, not {n}");
    LIST.len() + 3 * (n - 1) + which
}

statements!(LIST {
    NO_CUSTOMER_WAREHOUSE = "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
        WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?";
    NO_DISTRICT = "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ? FOR UPDATE";
    NO_NEXT_ORDER = "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?";
    NO_INSERT_ORDER = "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) \
        VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)";
    NO_INSERT_NEW_ORDER = "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)";
    NO_UPDATE_STOCK = "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, \
        s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?";

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
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_forms_follow_the_list_one_per_length() {
        let all = all();
        assert_eq!(all.len(), LIST.len() + 3 * MAX_LINES);
        assert!(all[no_items(3)].ends_with("WHERE i_id IN (?, ?, ?)"), "{}", all[no_items(3)]);
        assert!(all[no_stocks(1)].contains("s_w_id = ? AND s_i_id IN (?) ORDER BY s_i_id FOR UPDATE"));
        assert_eq!(all[no_insert_lines(15)].matches('?').count(), 15 * 9);
    }
}
