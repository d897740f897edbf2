//! The integration tests: one binary (so the helpers in `common` and the crate are compiled
//! once), one module per subject. They drive the real `dbvs` binary on real databases,
//! mounts and servers. Tests that measure take turns (`common::turn`).

mod common;

mod bignw;
mod binaries;
mod capacity;
mod cipher;
mod cli;
mod command;
mod ds2_sqlite;
mod engines;
mod faults;
mod fileio;
mod galera;
mod ladder;
mod limits;
mod mariadb;
mod placement;
mod postgres;
mod remote;
mod replay;
mod results_docs;
mod seeds;
mod settings;
mod stacks;
mod study;
mod study_file_fuzz;
mod telemetry;
mod tpcc;
mod verdicts;
mod versus;
