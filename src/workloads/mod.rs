//! Workloads: what a run does to the database.
//!
//! A workload is a self-contained module (schema, data generator, transactions and per-engine
//! SQL) behind the [`Workload`] trait; the driver loop, pacing and statistics live once in
//! [`crate::driver`]. Adding a workload is one module plus one arm in [`by_name`].

pub mod batch;
pub mod bignw;
pub mod ds2;
pub mod fileio;
pub mod tpcb;
pub mod tpcc;

use crate::driver::{FromStart, IntervalSample, RunResult, Worker};
use crate::targets::{BuildMeta, Database};
use anyhow::Result;
use indicatif::ProgressBar;
use serde::Serialize;

/// Every workload's build writes this marker into its data, so the plaintext canary scan
/// can tell whether the bytes at rest are readable.
pub const CANARY: &str = "DBVS-CANARY-PLAINTEXT-7F3A";

/// The workload names `--workload` accepts.
pub const NAMES: &[&str] = &["ds2", "tpcb", "tpcc", "batch", "bignw"];

/// One invariant checked against the database after a run.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    /// Expected versus found, in words.
    pub detail: String,
}

pub trait Workload: Send + Sync {
    fn name(&self) -> &'static str;
    /// Timed operations, in the order workers index them.
    fn operations(&self) -> &'static [&'static str];
    /// What a pristine database must have been built with for this workload to use it.
    fn build_identity(&self) -> BuildMeta;
    /// Creates the schema, loads the data and records build metadata in an empty database.
    /// Returns the number of rows loaded. Stops early (with an error) on Ctrl-C.
    fn build(&self, db: &dyn Database, progress: &ProgressBar) -> Result<u64>;
    /// A worker for thread `index`, connected to `db`, which was built as `meta` describes.
    fn worker<'a>(&'a self, db: &'a dyn Database, meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>>;
    /// Invariants the database must satisfy: after a run that did `done`, or at any time
    /// (`dbvs check`) when `done` is `None`.
    fn check(&self, db: &dyn Database, meta: &BuildMeta, done: Option<&FromStart>) -> Result<Vec<Check>>;
    /// A counter in the database read at the start and the end of the measured window (TPC-C:
    /// sum(D_NEXT_O_ID), as HammerDB reads it); its change reaches [`Workload::metrics`]
    /// as [`RunResult::window_counter`].
    fn window_counter(&self, _db: &dyn Database) -> Result<Option<i64>> {
        Ok(None)
    }
    /// Pacing the workload insists on (the batch suite runs one session a fixed number of
    /// times); others leave the user's pacing alone.
    fn adjust_pacing(&self, _pacing: &mut crate::driver::Pacing) {}
    /// The workload's run parameters, for reports.
    fn params(&self) -> serde_json::Value;
    /// The workload's headline metrics from a run (DS2: OPM, orders, rollbacks...).
    fn metrics(&self, run: &RunResult) -> serde_json::Value;
    /// The key of the headline metric in [`Workload::metrics`], e.g. `opm` or `tps`.
    fn headline(&self) -> &'static str;
    /// The periodic progress line (DS2 prints these every 10 s, and parsers exist for them).
    fn interval_line(&self, sample: &IntervalSample) -> String;
    /// The closing summary line.
    fn final_line(&self, run: &RunResult) -> String;
}

/// Parameters every workload may use; each takes what applies to it.
#[derive(Default)]
pub struct WorkloadArgs {
    /// The workload's size, in its own terms; `None` takes the workload's default.
    pub size: Option<String>,
    pub seed: u64,
    pub ds2: ds2::Mix,
    pub tpcc: tpcc::Options,
    pub batch: batch::Options,
    pub bignw: bignw::Options,
    /// Runs start from cold caches (the batch suite goes cold before every execution).
    pub cold: bool,
}

/// Checks that a pristine database was built the way this run asks for (same workload,
/// size, seed and data format).
pub fn ensure_identity(wanted: &BuildMeta, found: &BuildMeta, location: &str) -> Result<()> {
    for (k, v) in wanted {
        let have = found.get(k).map_or("(none)", String::as_str);
        if have != v && k == "format" {
            anyhow::bail!(
                "the database at {location} uses data format {have} of an older dbvs (now {v}); \
                 rebuild it with 'dbvs build --force' and the same target"
            );
        }
        if have != v {
            anyhow::bail!(
                "the database at {location} was built with {k} {have}, but this run asks for {k} {v}; \
                 pass the same --{k}, or rebuild it with 'dbvs build --force'"
            );
        }
    }
    Ok(())
}

/// Looks a workload up by name.
pub fn by_name(name: &str, args: &WorkloadArgs) -> Result<Box<dyn Workload>> {
    match name {
        "ds2" => Ok(Box::new(ds2::Ds2::new(args)?)),
        "tpcb" => Ok(Box::new(tpcb::Tpcb::new(args)?)),
        "tpcc" => Ok(Box::new(tpcc::Tpcc::new(args)?)),
        "batch" => Ok(Box::new(batch::Batch::new(args)?)),
        "bignw" => Ok(Box::new(bignw::Bignw::new(args)?)),
        _ => anyhow::bail!("unknown workload '{name}': available: {}", NAMES.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_mismatch_names_the_key() {
        let want = BuildMeta::from([("size".into(), "10MB".into())]);
        let have = BuildMeta::from([("size".into(), "1MB".into())]);
        let e = ensure_identity(&want, &have, "/x.db").unwrap_err().to_string();
        assert!(e.contains("size 1MB") && e.contains("--size"), "{e}");
        assert!(ensure_identity(&want, &want, "/x.db").is_ok());
    }
}
