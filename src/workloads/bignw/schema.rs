//! The Northwind-shaped schema: eleven tables with Northwind's columns, keys, foreign keys
//! and indexes (names in snake case), the Invoices view, and the "Employee Sales by
//! Country" query. Portable DDL; engines differ only in a table suffix.

use crate::targets::Engine;

/// In load order: every table after the tables it references.
pub const TABLES: &[(&str, &str)] = &[
    ("categories", "category_id INTEGER NOT NULL PRIMARY KEY, category_name VARCHAR(15) NOT NULL, description VARCHAR(200)"),
    (
        "suppliers",
        "supplier_id INTEGER NOT NULL PRIMARY KEY, company_name VARCHAR(40) NOT NULL, contact_name VARCHAR(30), \
         contact_title VARCHAR(30), address VARCHAR(60), city VARCHAR(15), region VARCHAR(15), \
         postal_code VARCHAR(10), country VARCHAR(15), phone VARCHAR(24)",
    ),
    ("shippers", "shipper_id INTEGER NOT NULL PRIMARY KEY, company_name VARCHAR(40) NOT NULL, phone VARCHAR(24)"),
    (
        "products",
        "product_id INTEGER NOT NULL PRIMARY KEY, product_name VARCHAR(40) NOT NULL, \
         supplier_id INTEGER REFERENCES suppliers (supplier_id), category_id INTEGER REFERENCES categories (category_id), \
         quantity_per_unit VARCHAR(20), unit_price DOUBLE PRECISION, units_in_stock INTEGER, units_on_order INTEGER, \
         reorder_level INTEGER, discontinued INTEGER NOT NULL",
    ),
    ("region", "region_id INTEGER NOT NULL PRIMARY KEY, region_description VARCHAR(50) NOT NULL"),
    (
        "territories",
        "territory_id VARCHAR(20) NOT NULL PRIMARY KEY, territory_description VARCHAR(50) NOT NULL, \
         region_id INTEGER NOT NULL REFERENCES region (region_id)",
    ),
    (
        "employees",
        "employee_id INTEGER NOT NULL PRIMARY KEY, last_name VARCHAR(20) NOT NULL, first_name VARCHAR(10) NOT NULL, \
         title VARCHAR(30), title_of_courtesy VARCHAR(25), birth_date DATE, hire_date DATE, address VARCHAR(60), \
         city VARCHAR(15), region VARCHAR(15), postal_code VARCHAR(10), country VARCHAR(15), home_phone VARCHAR(24), \
         extension VARCHAR(4), notes VARCHAR(400), reports_to INTEGER",
    ),
    (
        "employee_territories",
        "employee_id INTEGER NOT NULL REFERENCES employees (employee_id), \
         territory_id VARCHAR(20) NOT NULL REFERENCES territories (territory_id), PRIMARY KEY (employee_id, territory_id)",
    ),
    (
        "customers",
        "customer_id VARCHAR(10) NOT NULL PRIMARY KEY, company_name VARCHAR(40) NOT NULL, contact_name VARCHAR(30), \
         contact_title VARCHAR(30), address VARCHAR(60), city VARCHAR(15), region VARCHAR(15), \
         postal_code VARCHAR(10), country VARCHAR(15), phone VARCHAR(24), fax VARCHAR(24)",
    ),
    ("orders", ORDER_COLUMNS),
    (
        "order_details",
        "order_id INTEGER NOT NULL REFERENCES orders (order_id), product_id INTEGER NOT NULL REFERENCES products (product_id), \
         unit_price DOUBLE PRECISION NOT NULL, quantity INTEGER NOT NULL, discount DOUBLE PRECISION NOT NULL, \
         PRIMARY KEY (order_id, product_id)",
    ),
];

/// The orders table's columns; benchmark 6 gives its temporary copy the same shape.
pub const ORDER_COLUMNS: &str = "order_id INTEGER NOT NULL PRIMARY KEY, \
     customer_id VARCHAR(10) REFERENCES customers (customer_id), employee_id INTEGER REFERENCES employees (employee_id), \
     order_date DATE, required_date DATE, shipped_date DATE, ship_via INTEGER REFERENCES shippers (shipper_id), \
     freight DOUBLE PRECISION, ship_name VARCHAR(40), ship_address VARCHAR(60), ship_city VARCHAR(15), \
     ship_region VARCHAR(15), ship_postal_code VARCHAR(10), ship_country VARCHAR(15)";

/// Northwind's secondary indexes on the tables the benchmarks touch.
pub const INDEXES: &[&str] = &[
    "CREATE INDEX orders_order_date ON orders (order_date)",
    "CREATE INDEX orders_shipped_date ON orders (shipped_date)",
    "CREATE INDEX orders_customer ON orders (customer_id)",
    "CREATE INDEX orders_employee ON orders (employee_id)",
    "CREATE INDEX orders_ship_postal_code ON orders (ship_postal_code)",
    "CREATE INDEX order_details_product ON order_details (product_id)",
    "CREATE INDEX customers_company_name ON customers (company_name)",
    "CREATE INDEX customers_city ON customers (city)",
    "CREATE INDEX products_category ON products (category_id)",
    "CREATE INDEX products_supplier ON products (supplier_id)",
];

/// Northwind's Invoices view: one row per order line with customer, salesperson, shipper
/// and the extended price.
pub const INVOICES: &str = "CREATE VIEW invoices AS SELECT o.ship_name, o.ship_address, o.ship_city, o.ship_region, \
     o.ship_postal_code, o.ship_country, o.customer_id, c.company_name AS customer_name, c.address, c.city, c.region, \
     c.postal_code, c.country, e.first_name || ' ' || e.last_name AS salesperson, o.order_id, o.order_date, \
     o.required_date, o.shipped_date, s.company_name AS shipper_name, d.product_id, p.product_name, d.unit_price, \
     d.quantity, d.discount, d.unit_price * d.quantity * (1 - d.discount) AS extended_price, o.freight \
     FROM customers c JOIN orders o ON c.customer_id = o.customer_id \
     JOIN employees e ON e.employee_id = o.employee_id \
     JOIN order_details d ON o.order_id = d.order_id \
     JOIN products p ON p.product_id = d.product_id \
     JOIN shippers s ON s.shipper_id = o.ship_via";

/// Northwind's "Employee Sales by Country" procedure body for the whole order history:
/// each shipped order's subtotal with its salesperson's country and name.
pub const EMPLOYEE_SALES_BY_COUNTRY: &str = "SELECT e.country, e.last_name, e.first_name, o.shipped_date, o.order_id, \
     t.subtotal AS sale_amount FROM employees e JOIN orders o ON e.employee_id = o.employee_id \
     JOIN (SELECT order_id, sum(unit_price * quantity * (1 - discount)) AS subtotal FROM order_details \
     GROUP BY order_id) t ON o.order_id = t.order_id \
     WHERE o.shipped_date BETWEEN '1996-01-01' AND '1998-12-31'";

/// `CREATE TABLE` for one table. MariaDB joins strings with CONCAT (its `||` is OR) and
/// stores tables in InnoDB.
pub fn create(name: &str, columns: &str, d: Engine) -> String {
    match d {
        Engine::Mariadb => format!("CREATE TABLE {name} ({columns}) ENGINE=InnoDB"),
        _ => format!("CREATE TABLE {name} ({columns})"),
    }
}

/// The Invoices view in the engine's dialect.
pub fn invoices(d: Engine) -> String {
    match d {
        Engine::Mariadb => {
            INVOICES.replace("e.first_name || ' ' || e.last_name", "CONCAT(e.first_name, ' ', e.last_name)")
        }
        _ => INVOICES.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_come_after_what_they_reference() {
        for (i, (name, cols)) in TABLES.iter().enumerate() {
            for r in cols.split("REFERENCES ").skip(1) {
                let parent = r.split_whitespace().next().unwrap();
                let at = TABLES.iter().position(|(n, _)| *n == parent).unwrap();
                assert!(at < i || parent == *name, "{name} references {parent}, loaded later");
            }
        }
        assert!(invoices(Engine::Mariadb).contains("CONCAT(e.first_name"));
    }
}
