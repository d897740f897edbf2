//! Workloads: what a run does to the database.
//!
//! A workload is a self-contained module (schema, data generator, transactions and per-engine
//! SQL) behind the [`Workload`] trait; the driver loop, pacing and statistics live once in
//! [`crate::driver`]. Adding a workload is one module plus one arm in [`by_name`].

pub mod batch;
pub mod bignw;
pub mod ds2;
pub mod fileio;
pub mod measure;
pub mod tpcb;
pub mod tpcc;

use crate::driver::{FromStart, IntervalSample, RunResult, Worker};
use crate::targets::{BuildMeta, Database};
use anyhow::Result;
use indicatif::ProgressBar;
pub use measure::Measure;
use serde::{Deserialize, Serialize};

/// Every workload's build writes this marker into its data, so the plaintext canary scan
/// can tell whether the bytes at rest are readable.
pub const CANARY: &str = "DBVS-CANARY-PLAINTEXT-7F3A";

/// The workload names `--workload` accepts.
pub const NAMES: &[&str] = &["ds2", "tpcb", "tpcc", "batch", "bignw"];

/// The throughput workloads: those that run side by side (instances), interleave in slices
/// and suit a capacity search, as each says of itself.
pub fn throughput_names() -> Vec<&'static str> {
    NAMES
        .iter()
        .copied()
        .filter(|n| {
            by_name(&WorkloadSpec { name: n.to_string(), ..Default::default() }).is_ok_and(|w| w.supports_instances())
        })
        .collect()
}

/// One invariant checked against the database after a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Check {
    pub name: std::borrow::Cow<'static, str>,
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
    /// Everything the workload reports about a run, in its own shape (DS2: orders,
    /// rollbacks, latency per operation...), for people and reports.
    fn metrics(&self, run: &RunResult) -> serde_json::Value;
    /// The measures a study compares, with their values in `run`; declared only (no
    /// values) without one.
    fn measures(&self, run: Option<&RunResult>) -> Vec<Measure>;
    /// The one figure listings, multi-instance totals and capacity searches use (OPM,
    /// TPS, NOPM, a suite's time).
    fn headline(&self, run: Option<&RunResult>) -> Measure;
    /// Whether independent instances can run side by side (throughput workloads).
    fn supports_instances(&self) -> bool {
        false
    }
    /// The workload's own lines in the run summary (per statement, per benchmark).
    fn details(&self, _run: &RunResult) -> Vec<String> {
        vec![]
    }
    /// What the run calibrated (bignw: iterations per unit), in the form the workload's
    /// options take it back, so later runs on other variants do the same work.
    fn calibration(&self) -> Option<String> {
        None
    }
    /// The periodic progress line (DS2 prints these every 10 s, and parsers exist for them).
    fn interval_line(&self, sample: &IntervalSample) -> String;
    /// The closing summary line.
    fn final_line(&self, run: &RunResult) -> String;
}

/// Which workload, and the parameters every workload may use; each takes what applies
/// to it. Built once from the command line or a study file, and handed to child runs whole.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadSpec {
    pub name: String,
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

/// What a study compares for workload `name`: its measures as declared before any run.
/// `fileio` and `cipher` measure storage and memory without the driver, so they are not
/// [`Workload`]s; their measures are declared here too.
pub fn declared_measures(spec: &WorkloadSpec) -> Result<Vec<Measure>> {
    match spec.name.as_str() {
        "fileio" => Ok(fileio::measures(None)),
        "cipher" => Ok(vec![crate::cipher::throughput(&[])]),
        _ => Ok(by_name(spec)?.measures(None)),
    }
}

/// Looks a workload up by name.
pub fn by_name(args: &WorkloadSpec) -> Result<Box<dyn Workload>> {
    match args.name.as_str() {
        "ds2" => Ok(Box::new(ds2::Ds2::new(args)?)),
        "tpcb" => Ok(Box::new(tpcb::Tpcb::new(args)?)),
        "tpcc" => Ok(Box::new(tpcc::Tpcc::new(args)?)),
        "batch" => Ok(Box::new(batch::Batch::new(args)?)),
        "bignw" => Ok(Box::new(bignw::Bignw::new(args)?)),
        name => anyhow::bail!("unknown workload '{name}': available: {}", NAMES.join(", ")),
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
