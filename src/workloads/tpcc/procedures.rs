//! `--procedures`: each TPC-C transaction as one call of a stored procedure the run creates
//! in its database, as HammerDB runs TPC-C: one round trip per statement becomes one per
//! transaction. The procedures do what [`super::txn`] does, statement for statement where
//! the engine allows, on the same requests (the lines travel as `item:warehouse:qty,...`
//! in the terminal's order, so both modes number and lock them alike). The client still
//! opens and ends each transaction, so a New-Order whose item is missing rolls back as in
//! the client-side form.
//!
//! The procedure bodies are each engine's own language (PL/pgSQL, MariaDB's SQL/PSM), the
//! one place in TPC-C that cannot be written once. Their names carry a version, so a
//! database that already has them keeps them.

use super::txn::{Delivery, Line, NewOrder, OrderStatus, Payment, StockLevel, Transactions, Who};
use crate::driver::Outcome;
use crate::targets::sql::{self as seam, Arg, DbError, Tx, Q};
use crate::targets::{Connection, Engine};
use anyhow::{bail, Context, Result};

const NEW_ORDER: Q = 0;
const PAYMENT: Q = 1;
const ORDER_STATUS: Q = 2;
const DELIVERY: Q = 3;
const STOCK_LEVEL: Q = 4;

/// Each call's procedure and argument count, indexed by the constants above.
const CALLS: [(&str, usize); 5] = [
    ("dbvs_tpcc1_new_order", 4),
    ("dbvs_tpcc1_payment", 7),
    ("dbvs_tpcc1_order_status", 4),
    ("dbvs_tpcc1_delivery", 2),
    ("dbvs_tpcc1_stock_level", 3),
];

/// New-Order's result when an item does not exist (clause 2.4.2.3): the client rolls back.
const ITEM_NOT_FOUND: i64 = 1;

/// The calls, in portable SQL: PostgreSQL selects a function, MariaDB calls a procedure
/// whose last statement selects its result.
pub fn calls(engine: Engine) -> Vec<String> {
    let verb = if engine == Engine::Postgres { "SELECT" } else { "CALL" };
    CALLS.iter().map(|(name, n)| format!("{verb} {name}({})", vec!["?"; *n].join(", "))).collect()
}

/// Creates the procedures in `conn`'s database unless all are there (a set left half made
/// is completed); workers opening at once take turns under a lock.
pub fn install(conn: &mut Connection) -> Result<()> {
    let engine = conn.engine();
    let (lock, present, unlock, bodies) = match engine {
        Engine::Sqlite => {
            bail!("tpcc --procedures needs PostgreSQL or MariaDB (SQLite has no stored procedures); drop --procedures")
        }
        Engine::Postgres => (
            "SELECT pg_advisory_lock(7265237)",
            "SELECT count(*) FROM pg_proc WHERE proname LIKE 'dbvs\\_tpcc1\\_%'",
            "SELECT pg_advisory_unlock(7265237)",
            POSTGRES,
        ),
        Engine::Mariadb => (
            "SELECT GET_LOCK('dbvs_tpcc1', 120)",
            "SELECT count(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() \
             AND ROUTINE_NAME LIKE 'dbvs\\_tpcc1\\_%'",
            "SELECT RELEASE_LOCK('dbvs_tpcc1')",
            MARIADB,
        ),
    };
    seam::exec(conn, lock)?;
    let created = (|| -> Result<()> {
        if seam::number(conn, present)? as usize == bodies.len() {
            return Ok(());
        }
        for body in bodies {
            seam::exec(conn, body)?;
        }
        Ok(())
    })();
    seam::exec(conn, unlock)?;
    created.context(
        "creating tpcc's stored procedures (--procedures needs the right to create them in the run's database)",
    )
}

/// The lines as the procedures read them.
fn lines_arg(lines: &[Line]) -> String {
    lines.iter().map(|l| format!("{}:{}:{}", l.item, l.supply_w, l.qty)).collect::<Vec<_>>().join(",")
}

/// A customer by id (and no name), or by last name (id 0).
fn customer_args(who: &Who) -> (i64, &str) {
    match who {
        Who::Id(c) => (*c, ""),
        Who::LastName(last) => (0, last),
    }
}

/// The transactions as procedure calls.
pub struct Procedures;

impl Transactions for Procedures {
    fn new_order(&self, tx: &mut dyn Tx, r: &NewOrder) -> Result<Outcome, DbError> {
        use Arg::*;
        let lines = lines_arg(&r.lines);
        let status = tx.query(NEW_ORDER, &[Int(r.w), Int(r.d), Int(r.c), Text(&lines)])?.int(0, 0)?;
        Ok(if status == ITEM_NOT_FOUND { Outcome::RolledBack } else { Outcome::Committed })
    }

    fn payment(&self, tx: &mut dyn Tx, r: &Payment) -> Result<Outcome, DbError> {
        use Arg::*;
        let (c, last) = customer_args(&r.who);
        tx.query(PAYMENT, &[Int(r.w), Int(r.d), Int(r.c_w), Int(r.c_d), Int(c), Text(last), Real(r.amount)])?;
        Ok(Outcome::Committed)
    }

    fn order_status(&self, tx: &mut dyn Tx, r: &OrderStatus) -> Result<Outcome, DbError> {
        use Arg::*;
        let (c, last) = customer_args(&r.who);
        tx.query(ORDER_STATUS, &[Int(r.w), Int(r.d), Int(c), Text(last)])?;
        Ok(Outcome::Committed)
    }

    fn delivery(&self, tx: &mut dyn Tx, r: &Delivery) -> Result<u32, DbError> {
        let skipped = tx.query(DELIVERY, &[Arg::Int(r.w), Arg::Int(r.carrier)])?.int(0, 0)?;
        Ok(skipped as u32)
    }

    fn stock_level(&self, tx: &mut dyn Tx, r: &StockLevel) -> Result<Outcome, DbError> {
        use Arg::*;
        std::hint::black_box(tx.query(STOCK_LEVEL, &[Int(r.w), Int(r.d), Int(r.threshold)])?.int(0, 0)?);
        Ok(Outcome::Committed)
    }
}

/// PL/pgSQL. Clause 2's steps in txn.rs's order; a missing row raises (P0001), which fails
/// the run as a client-side `DbError::Data` does.
const POSTGRES: &[&str] = &[
    r#"CREATE OR REPLACE FUNCTION dbvs_tpcc1_customer_by_name(p_w int, p_d int, p_last text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_n int;
    v_c int;
BEGIN
    SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
    IF v_n = 0 THEN
        RAISE EXCEPTION 'no customer named % in warehouse %, district %', p_last, p_w, p_d;
    END IF;
    SELECT c_id INTO v_c FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last
        ORDER BY c_first OFFSET (v_n + 1) / 2 - 1 LIMIT 1;
    RETURN v_c;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION dbvs_tpcc1_new_order(p_w int, p_d int, p_c int, p_lines text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_items int[];
    v_supply int[];
    v_qty int[];
    v_n int;
    v_cw record;
    v_o_id int;
    v_d_tax double precision;
    v_price double precision;
    v_amount double precision;
    v_total double precision := 0;
    v_info varchar(24);
BEGIN
    SELECT array_agg(split_part(x, ':', 1)::int ORDER BY k), array_agg(split_part(x, ':', 2)::int ORDER BY k),
           array_agg(split_part(x, ':', 3)::int ORDER BY k)
        INTO v_items, v_supply, v_qty FROM unnest(string_to_array(p_lines, ',')) WITH ORDINALITY AS t(x, k);
    v_n := array_length(v_items, 1);
    SELECT c_discount, c_last, c_credit, w_tax INTO v_cw FROM customer, warehouse
        WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
    UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d
        RETURNING d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        VALUES (v_o_id, p_d, p_w, p_c, CURRENT_TIMESTAMP, NULL, v_n, (SELECT bool_and(s = p_w) FROM unnest(v_supply) s)::int);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
    IF (SELECT count(*) FROM item WHERE i_id = ANY (v_items)) < (SELECT count(DISTINCT x) FROM unnest(v_items) x) THEN
        RETURN 1;
    END IF;
    FOR k IN 1 .. v_n LOOP
        SELECT i_price INTO v_price FROM item WHERE i_id = v_items[k];
        UPDATE stock SET s_quantity = CASE WHEN s_quantity >= v_qty[k] + 10 THEN s_quantity - v_qty[k]
                                           ELSE s_quantity - v_qty[k] + 91 END,
                         s_ytd = s_ytd + v_qty[k], s_order_cnt = s_order_cnt + 1,
                         s_remote_cnt = s_remote_cnt + (v_supply[k] <> p_w)::int
            WHERE s_i_id = v_items[k] AND s_w_id = v_supply[k]
            RETURNING CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                               WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                               WHEN 9 THEN s_dist_09 ELSE s_dist_10 END INTO v_info;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no stock row for item % of warehouse %', v_items[k], v_supply[k];
        END IF;
        v_amount := round(v_qty[k] * v_price * 100) / 100;
        v_total := v_total + v_amount;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                ol_quantity, ol_amount, ol_dist_info)
            VALUES (v_o_id, p_d, p_w, k, v_items[k], v_supply[k], NULL, v_qty[k], v_amount, v_info);
    END LOOP;
    PERFORM v_total * (1 - v_cw.c_discount) * (1 + v_cw.w_tax + v_d_tax);
    RETURN 0;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION dbvs_tpcc1_payment(p_w int, p_d int, p_c_w int, p_c_d int, p_c int, p_last text,
                                   p_amount double precision) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_c int := p_c;
    v_wh record;
    v_di record;
    v_cust record;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w
        RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip INTO v_wh;
    UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d
        RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip INTO v_di;
    IF p_last <> '' THEN
        v_c := dbvs_tpcc1_customer_by_name(p_c_w, p_c_d, p_last);
    END IF;
    SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit,
           c_credit_lim, c_discount, c_balance INTO v_cust
        FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'customer % of warehouse %, district % is missing', v_c, p_c_w, p_c_d;
    END IF;
    IF v_cust.c_credit = 'BC' THEN
        UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                            c_payment_cnt = c_payment_cnt + 1,
                            c_data = left(format('%s %s %s %s %s %s | %s', v_c, p_c_d, p_c_w, p_d, p_w,
                                                 to_char(p_amount, 'FM9999990.00'), c_data), 500)
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    ELSE
        UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                            c_payment_cnt = c_payment_cnt + 1
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        VALUES (v_c, p_c_d, p_c_w, p_d, p_w, CURRENT_TIMESTAMP, p_amount, v_wh.w_name || '    ' || v_di.d_name);
    RETURN 0;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION dbvs_tpcc1_order_status(p_w int, p_d int, p_c int, p_last text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_c int := p_c;
    v_cust record;
    v_o_id int;
    v_lines int := 0;
    v_line record;
BEGIN
    IF p_last <> '' THEN
        v_c := dbvs_tpcc1_customer_by_name(p_w, p_d, p_last);
    END IF;
    SELECT c_balance, c_first, c_middle, c_last INTO v_cust FROM customer
        WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
    SELECT o_id INTO v_o_id FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c
        ORDER BY o_id DESC LIMIT 1;
    IF FOUND THEN
        FOR v_line IN SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
                      WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o_id LOOP
            v_lines := v_lines + 1;
        END LOOP;
    END IF;
    RETURN v_lines;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION dbvs_tpcc1_delivery(p_w int, p_carrier int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_skipped int := 0;
    v_o int;
    v_c int;
    v_total double precision;
    v_deleted int;
BEGIN
    FOR d IN 1 .. 10 LOOP
        SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = d
            ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF NOT FOUND THEN
            v_skipped := v_skipped + 1;
            CONTINUE;
        END IF;
        DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = d AND no_o_id = v_o;
        GET DIAGNOSTICS v_deleted = ROW_COUNT;
        IF v_deleted = 0 THEN
            -- A concurrent Delivery took it first (possible under read committed).
            v_skipped := v_skipped + 1;
            CONTINUE;
        END IF;
        SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = d AND o_id = v_o;
        UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = d AND o_id = v_o;
        UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = p_w AND ol_d_id = d AND ol_o_id = v_o;
        SELECT sum(ol_amount) INTO v_total FROM order_line WHERE ol_w_id = p_w AND ol_d_id = d AND ol_o_id = v_o;
        UPDATE customer SET c_balance = c_balance + coalesce(v_total, 0), c_delivery_cnt = c_delivery_cnt + 1
            WHERE c_w_id = p_w AND c_d_id = d AND c_id = v_c;
    END LOOP;
    RETURN v_skipped;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION dbvs_tpcc1_stock_level(p_w int, p_d int, p_threshold int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_next int;
    v_low int;
BEGIN
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
    SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line, stock
        WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
          AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
    RETURN v_low;
END $$"#,
];

/// MariaDB's SQL/PSM. A SELECT ... INTO that finds no row leaves its variables as they
/// were, so each is reset to NULL first and tested after; the result is the procedure's
/// last statement, a one-row SELECT.
const MARIADB: &[&str] = &[
    r#"CREATE PROCEDURE IF NOT EXISTS dbvs_tpcc1_customer_by_name(p_w INT, p_d INT, p_last VARCHAR(16), OUT p_c INT)
BEGIN
    DECLARE v_n INT;
    DECLARE v_skip INT;
    DECLARE v_message VARCHAR(128);
    SELECT COUNT(*) INTO v_n FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
    IF v_n = 0 THEN
        SET v_message = CONCAT('no customer named ', p_last, ' in warehouse ', p_w, ', district ', p_d);
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_message;
    END IF;
    SET v_skip = (v_n + 1) DIV 2 - 1;
    SELECT c_id INTO p_c FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last
        ORDER BY c_first LIMIT v_skip, 1;
END"#,
    r#"CREATE PROCEDURE IF NOT EXISTS dbvs_tpcc1_new_order(p_w INT, p_d INT, p_c INT, p_lines VARCHAR(1000))
body: BEGIN
    DECLARE v_n, v_k, v_item, v_supply, v_qty, v_all_local, v_o_id, v_s_qty INT;
    DECLARE v_discount, v_w_tax, v_d_tax, v_price, v_amount DOUBLE;
    DECLARE v_total DOUBLE DEFAULT 0;
    DECLARE v_last VARCHAR(16);
    DECLARE v_credit VARCHAR(2);
    DECLARE v_line VARCHAR(40);
    DECLARE v_info VARCHAR(24);
    DECLARE v_message VARCHAR(128);
    SET v_n = 1 + LENGTH(p_lines) - LENGTH(REPLACE(p_lines, ',', ''));
    SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_w_tax FROM customer, warehouse
        WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
    SELECT d_next_o_id, d_tax INTO v_o_id, v_d_tax FROM district WHERE d_w_id = p_w AND d_id = p_d FOR UPDATE;
    UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d;
    SET v_k = 0, v_all_local = 1;
    WHILE v_k < v_n DO
        SET v_k = v_k + 1;
        SET v_line = SUBSTRING_INDEX(SUBSTRING_INDEX(p_lines, ',', v_k), ',', -1);
        IF CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(v_line, ':', 2), ':', -1) AS SIGNED) <> p_w THEN
            SET v_all_local = 0;
        END IF;
    END WHILE;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        VALUES (v_o_id, p_d, p_w, p_c, CURRENT_TIMESTAMP, NULL, v_n, v_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
    SET v_k = 0;
    WHILE v_k < v_n DO
        SET v_k = v_k + 1;
        SET v_line = SUBSTRING_INDEX(SUBSTRING_INDEX(p_lines, ',', v_k), ',', -1);
        SET v_item = CAST(SUBSTRING_INDEX(v_line, ':', 1) AS SIGNED);
        SET v_supply = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(v_line, ':', 2), ':', -1) AS SIGNED);
        SET v_qty = CAST(SUBSTRING_INDEX(v_line, ':', -1) AS SIGNED);
        SET v_price = NULL;
        SELECT i_price INTO v_price FROM item WHERE i_id = v_item;
        IF v_price IS NULL THEN
            SELECT 1 AS outcome;
            LEAVE body;
        END IF;
        SET v_s_qty = NULL;
        SELECT s_quantity, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                                    WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                                    WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                                    ELSE s_dist_10 END
            INTO v_s_qty, v_info FROM stock WHERE s_i_id = v_item AND s_w_id = v_supply FOR UPDATE;
        IF v_s_qty IS NULL THEN
            SET v_message = CONCAT('no stock row for item ', v_item, ' of warehouse ', v_supply);
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_message;
        END IF;
        UPDATE stock SET s_quantity = IF(v_s_qty >= v_qty + 10, v_s_qty - v_qty, v_s_qty - v_qty + 91),
                         s_ytd = s_ytd + v_qty, s_order_cnt = s_order_cnt + 1,
                         s_remote_cnt = s_remote_cnt + IF(v_supply <> p_w, 1, 0)
            WHERE s_i_id = v_item AND s_w_id = v_supply;
        SET v_amount = ROUND(v_qty * v_price * 100) / 100;
        SET v_total = v_total + v_amount;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                ol_quantity, ol_amount, ol_dist_info)
            VALUES (v_o_id, p_d, p_w, v_k, v_item, v_supply, NULL, v_qty, v_amount, v_info);
    END WHILE;
    SELECT 0 AS outcome, v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax) AS total;
END"#,
    r#"CREATE PROCEDURE IF NOT EXISTS dbvs_tpcc1_payment(p_w INT, p_d INT, p_c_w INT, p_c_d INT, p_c INT,
                                                 p_last VARCHAR(16), p_amount DOUBLE)
BEGIN
    DECLARE v_c INT;
    DECLARE v_w_name, v_d_name VARCHAR(10);
    DECLARE v_street_1, v_street_2, v_city VARCHAR(20);
    DECLARE v_state VARCHAR(2);
    DECLARE v_zip VARCHAR(9);
    DECLARE v_first, v_last, v_phone VARCHAR(16);
    DECLARE v_middle, v_credit VARCHAR(2);
    DECLARE v_since DATETIME;
    DECLARE v_credit_lim, v_discount, v_balance DOUBLE;
    DECLARE v_message VARCHAR(128);
    SET v_c = p_c;
    UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
    SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip
        INTO v_w_name, v_street_1, v_street_2, v_city, v_state, v_zip FROM warehouse WHERE w_id = p_w;
    UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
    SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip
        INTO v_d_name, v_street_1, v_street_2, v_city, v_state, v_zip FROM district WHERE d_w_id = p_w AND d_id = p_d;
    IF p_last <> '' THEN
        CALL dbvs_tpcc1_customer_by_name(p_c_w, p_c_d, p_last, v_c);
    END IF;
    SET v_credit = NULL;
    SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit,
           c_credit_lim, c_discount, c_balance
        INTO v_first, v_middle, v_last, v_street_1, v_street_2, v_city, v_state, v_zip, v_phone, v_since, v_credit,
             v_credit_lim, v_discount, v_balance
        FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
    IF v_credit IS NULL THEN
        SET v_message = CONCAT('customer ', v_c, ' of warehouse ', p_c_w, ', district ', p_c_d, ' is missing');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_message;
    END IF;
    IF v_credit = 'BC' THEN
        UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                            c_payment_cnt = c_payment_cnt + 1,
                            c_data = LEFT(CONCAT_WS(' ', v_c, p_c_d, p_c_w, p_d, p_w, CAST(p_amount AS DECIMAL(12, 2)), '|', c_data), 500)
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    ELSE
        UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                            c_payment_cnt = c_payment_cnt + 1
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        VALUES (v_c, p_c_d, p_c_w, p_d, p_w, CURRENT_TIMESTAMP, p_amount, CONCAT(v_w_name, '    ', v_d_name));
    SELECT 0 AS outcome;
END"#,
    r#"CREATE PROCEDURE IF NOT EXISTS dbvs_tpcc1_order_status(p_w INT, p_d INT, p_c INT, p_last VARCHAR(16))
BEGIN
    DECLARE v_c INT;
    DECLARE v_balance DOUBLE;
    DECLARE v_first, v_last VARCHAR(16);
    DECLARE v_middle VARCHAR(2);
    DECLARE v_o_id, v_lines, v_quantity, v_items INT;
    DECLARE v_amount DOUBLE;
    DECLARE v_delivered INT;
    SET v_c = p_c;
    IF p_last <> '' THEN
        CALL dbvs_tpcc1_customer_by_name(p_w, p_d, p_last, v_c);
    END IF;
    SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last FROM customer
        WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
    SET v_o_id = NULL, v_lines = 0;
    SELECT o_id INTO v_o_id FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c
        ORDER BY o_id DESC LIMIT 1;
    IF v_o_id IS NOT NULL THEN
        SELECT COUNT(*), SUM(ol_i_id + ol_supply_w_id), SUM(ol_quantity), SUM(ol_amount), COUNT(ol_delivery_d)
            INTO v_lines, v_items, v_quantity, v_amount, v_delivered
            FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o_id;
    END IF;
    SELECT v_lines AS outcome;
END"#,
    r#"CREATE PROCEDURE IF NOT EXISTS dbvs_tpcc1_delivery(p_w INT, p_carrier INT)
BEGIN
    DECLARE v_d INT DEFAULT 0;
    DECLARE v_skipped INT DEFAULT 0;
    DECLARE v_o, v_c INT;
    DECLARE v_total DOUBLE;
    WHILE v_d < 10 DO
        SET v_d = v_d + 1, v_o = NULL;
        SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d
            ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF v_o IS NULL THEN
            SET v_skipped = v_skipped + 1;
        ELSE
            DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
            IF ROW_COUNT() = 0 THEN
                SET v_skipped = v_skipped + 1;
            ELSE
                SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
                UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
                UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP
                    WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
                SELECT SUM(ol_amount) INTO v_total FROM order_line
                    WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
                UPDATE customer SET c_balance = c_balance + COALESCE(v_total, 0), c_delivery_cnt = c_delivery_cnt + 1
                    WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
            END IF;
        END IF;
    END WHILE;
    SELECT v_skipped AS outcome;
END"#,
    r#"CREATE PROCEDURE IF NOT EXISTS dbvs_tpcc1_stock_level(p_w INT, p_d INT, p_threshold INT)
BEGIN
    DECLARE v_next, v_low INT;
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
    SELECT COUNT(DISTINCT s_i_id) INTO v_low FROM order_line, stock
        WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
          AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
    SELECT v_low AS outcome;
END"#,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_take_each_procedures_arguments_and_lines_travel_in_order() {
        let pg = calls(Engine::Postgres);
        assert_eq!(pg[PAYMENT], "SELECT dbvs_tpcc1_payment(?, ?, ?, ?, ?, ?, ?)");
        assert_eq!(calls(Engine::Mariadb)[DELIVERY], "CALL dbvs_tpcc1_delivery(?, ?)");
        // Every procedure a call names is created, on both engines, with its argument count.
        for (name, n) in CALLS {
            let pg_body = POSTGRES.iter().find(|b| b.contains(&format!("FUNCTION {name}("))).expect(name);
            let my_body = MARIADB.iter().find(|b| b.contains(&format!("EXISTS {name}("))).expect(name);
            for body in [pg_body, my_body] {
                let signature = &body[..body.find("RETURNS").or_else(|| body.find("BEGIN")).unwrap()];
                assert_eq!(signature.matches(',').count() + 1, n, "{name}: {signature}");
            }
        }
        let lines = [Line { item: 7, supply_w: 1, qty: 3 }, Line { item: 9, supply_w: 2, qty: 10 }];
        assert_eq!(lines_arg(&lines), "7:1:3,9:2:10");
    }
}
