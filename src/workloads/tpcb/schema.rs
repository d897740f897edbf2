//! pgbench's tables in each engine's DDL. PostgreSQL gets pgbench's exact schema (so
//! pgbench itself can run on a dbvs-built database), with its keys added after the load as
//! pgbench does; SQLite and InnoDB cluster each table on its key from the start.

use crate::targets::Engine;

pub fn tables(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => {
            "
CREATE TABLE pgbench_branches (bid INTEGER PRIMARY KEY, bbalance INTEGER NOT NULL, filler CHAR(88));
CREATE TABLE pgbench_tellers (tid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, tbalance INTEGER NOT NULL, filler CHAR(84));
CREATE TABLE pgbench_accounts (aid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, abalance INTEGER NOT NULL, filler CHAR(84));
CREATE TABLE pgbench_history (tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime TIMESTAMP, filler CHAR(22));
"
        }
        Engine::Postgres => {
            "
CREATE TABLE pgbench_branches (bid INT NOT NULL, bbalance INT, filler CHAR(88)) WITH (fillfactor = 100);
CREATE TABLE pgbench_tellers (tid INT NOT NULL, bid INT, tbalance INT, filler CHAR(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_accounts (aid INT NOT NULL, bid INT, abalance INT, filler CHAR(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT, mtime TIMESTAMP, filler CHAR(22));
"
        }
        Engine::Mariadb => {
            "
CREATE TABLE pgbench_branches (bid INT PRIMARY KEY, bbalance INT, filler CHAR(88)) ENGINE=InnoDB;
CREATE TABLE pgbench_tellers (tid INT PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84)) ENGINE=InnoDB;
CREATE TABLE pgbench_accounts (aid INT PRIMARY KEY, bid INT, abalance INT, filler CHAR(84)) ENGINE=InnoDB;
CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT, mtime TIMESTAMP, filler CHAR(22)) ENGINE=InnoDB;
"
        }
    }
}

/// Keys (PostgreSQL) and planner statistics, after the load.
pub fn finish(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "ANALYZE;",
        Engine::Postgres => {
            "
ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);
"
        }
        Engine::Mariadb => "ANALYZE TABLE pgbench_branches, pgbench_tellers, pgbench_accounts;",
    }
}
