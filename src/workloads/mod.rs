//! Workloads: what a run does to the database.
//!
//! A workload is a self-contained module (schema, data generator, transactions and per-engine
//! SQL) behind the [`Workload`] trait; the driver loop, pacing and statistics live once in
//! [`crate::driver`]. A workload that needs no database (fileio, cipher) is a
//! [`Standalone`] instead. Adding a workload is one module plus its arm in [`Options`] and
//! in [`WorkloadSpec::kind`].

pub mod batch;
pub mod bignw;
pub mod cipher;
pub mod command;
pub mod ds2;
pub mod fileio;
pub mod oltp;
pub mod replay;
pub mod tpcb;
pub mod tpcc;

use crate::driver::{FromStart, IntervalSample, RunResult, Worker};
pub use crate::measure::Measure;
use crate::targets::{BuildMeta, Database};
use anyhow::Result;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

/// Every workload's build writes this marker into its data, so the plaintext canary scan
/// can tell whether the bytes at rest are readable.
pub const CANARY: &str = "DBVS-CANARY-PLAINTEXT-7F3A";

/// Every workload's name.
pub const ALL: &[&str] = &["ds2", "tpcb", "tpcc", "oltp", "batch", "bignw", "fileio", "cipher", "command", "replay"];

/// The workloads that drive a database, which `dbvs build`, `run` and `check` accept.
pub fn driven_names() -> Vec<&'static str> {
    ALL.iter().copied().filter(|n| Options::named(n).is_ok_and(|o| !o.standalone())).collect()
}

/// The throughput workloads: those that run side by side (instances), interleave in slices
/// and suit a capacity search, as each says of itself.
pub fn throughput_names() -> Vec<&'static str> {
    names(|k| k.as_driven().is_some_and(|w| w.supports_instances()))
}

fn names(keep: impl Fn(&Kind) -> bool) -> Vec<&'static str> {
    let kind = |n: &str| Options::named(n).and_then(|options| WorkloadSpec { options, ..Default::default() }.kind());
    ALL.iter().copied().filter(|n| kind(n).is_ok_and(|k| keep(&k))).collect()
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
    /// Whether its runs take backups (bignw's benchmark 10), which a study's plaintext scan
    /// then covers.
    fn takes_backups(&self) -> bool {
        false
    }
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
    /// Whether a pilot run must calibrate the workload before it is compared (bignw
    /// without fixed iterations per unit).
    fn needs_calibration(&self) -> bool {
        false
    }
    /// Its options with what a pilot run calibrated (see [`Workload::calibration`]) folded
    /// in; `None` for a workload that calibrates nothing.
    fn calibrated(&self, _found: &str) -> Option<Options> {
        None
    }
    /// The parts a study compares one by one (bignw: each benchmark); empty for a workload
    /// compared whole.
    fn parts(&self) -> Vec<Part> {
        vec![]
    }
    /// The periodic progress line (DS2 prints these every 10 s, and parsers exist for them).
    fn interval_line(&self, sample: &IntervalSample) -> String;
    /// The closing summary line.
    fn final_line(&self, run: &RunResult) -> String;
}

/// Which workload, with its own options: one struct per workload serves the command line,
/// the study file (flat beside `name = "..."`) and the run spec.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Options {
    Ds2(ds2::Mix),
    Tpcb(NoOptions),
    Tpcc(tpcc::Options),
    Oltp(oltp::Options),
    Batch(NoOptions),
    Bignw(bignw::Options),
    Fileio(fileio::Options),
    Cipher(cipher::Options),
    Command(command::Options),
    Replay(replay::Options),
}

/// The options of a workload that has none beyond the common ones (so a stray key is an error).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

impl Options {
    /// Workload `name` with its default options.
    pub fn named(name: &str) -> Result<Self> {
        serde_json::from_value(serde_json::json!({ "name": name }))
            .map_err(|_| anyhow::anyhow!("unknown workload '{name}': available: {}", ALL.join(", ")))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Options::Ds2(_) => "ds2",
            Options::Tpcb(_) => "tpcb",
            Options::Tpcc(_) => "tpcc",
            Options::Oltp(_) => "oltp",
            Options::Batch(_) => "batch",
            Options::Bignw(_) => "bignw",
            Options::Fileio(_) => "fileio",
            Options::Cipher(_) => "cipher",
            Options::Command(_) => "command",
            Options::Replay(_) => "replay",
        }
    }

    /// Whether the workload runs without a database ([`Standalone`]).
    fn standalone(&self) -> bool {
        matches!(self, Options::Fileio(_) | Options::Cipher(_))
    }

    /// The name reports use: the workload's, plus what sets this run apart (a TPC-C profile).
    pub fn describe(&self) -> String {
        match self {
            Options::Tpcc(o) => o.describe(),
            Options::Oltp(o) => o.describe(),
            o => o.name().to_string(),
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::Ds2(ds2::Mix::default())
    }
}

/// Which workload with its options, and what every workload takes: built once from the
/// command line or a study file, and handed to child runs whole.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkloadSpec {
    #[serde(flatten)]
    pub options: Options,
    /// The workload's size, in its own terms; `None` takes the workload's default.
    #[serde(default)]
    pub size: Option<String>,
    /// How often a fixed-work workload repeats its unit (batch: executions per statement,
    /// bignw: units per benchmark, fileio and cipher: runs); `None` takes its default.
    #[serde(default)]
    pub repeat: Option<u32>,
    #[serde(default)]
    pub seed: u64,
    /// Runs start from cold caches (the batch suite goes cold before every execution).
    #[serde(default)]
    pub cold: bool,
    /// The run's last backup stays beside the database for a study's plaintext scan
    /// ([`crate::targets::backup::KEPT_FOR_SCAN`]).
    #[serde(default)]
    pub keep_backup: bool,
}

impl WorkloadSpec {
    pub fn name(&self) -> &'static str {
        self.options.name()
    }

    pub fn describe(&self) -> String {
        self.options.describe()
    }

    /// How often to repeat the workload's unit: `repeat`, or the workload's `default`.
    pub fn repeat_or(&self, default: u32) -> Result<u32> {
        match self.repeat.unwrap_or(default) {
            n @ 1..=10_000 => Ok(n),
            n => anyhow::bail!("{} takes repeat from 1 to 10000, not {n}", self.name()),
        }
    }

    /// The workload, driven or standalone.
    pub fn kind(&self) -> Result<Kind> {
        Ok(match &self.options {
            Options::Ds2(mix) => Kind::Driven(Box::new(ds2::Ds2::new(self, mix)?)),
            Options::Tpcb(_) => Kind::Driven(Box::new(tpcb::Tpcb::new(self)?)),
            Options::Tpcc(o) => Kind::Driven(Box::new(tpcc::Tpcc::new(self, o)?)),
            Options::Oltp(o) => Kind::Driven(Box::new(oltp::Oltp::new(self, o)?)),
            Options::Batch(_) => Kind::Driven(Box::new(batch::Batch::new(self)?)),
            Options::Bignw(o) => Kind::Driven(Box::new(bignw::Bignw::new(self, o)?)),
            Options::Fileio(o) => Kind::Standalone(Box::new(fileio::Fileio::new(self, o)?)),
            Options::Cipher(o) => Kind::Standalone(Box::new(cipher::Aes::new(self, o)?)),
            Options::Command(o) => Kind::Driven(Box::new(command::Command::new(self, o)?)),
            Options::Replay(o) => Kind::Driven(Box::new(replay::Replay::new(self, o)?)),
        })
    }

    /// The workload that drives a database; a standalone one (fileio, cipher) is an error.
    pub fn driven(&self) -> Result<Box<dyn Workload>> {
        match self.kind()? {
            Kind::Driven(w) => Ok(w),
            Kind::Standalone(_) => {
                anyhow::bail!("{} needs no database: run it with 'dbvs {}' or in a study", self.name(), self.name())
            }
        }
    }
}

/// A workload that measures without a database or the driver (a file on the storage under
/// test, AES in memory): it runs itself and writes its own record.
pub trait Standalone {
    /// Its measures, declared before any run.
    fn measures(&self) -> Vec<Measure>;
    /// Whether what it writes stays on the storage under test, for the plaintext scan.
    fn leaves_data(&self) -> bool;
    /// One measured run, in `dir` (the storage under test) where it writes at all; with
    /// `keep` its file stays there for the scan.
    fn run(&self, dir: Option<&std::path::Path>, threads: usize, keep: bool) -> Result<StandaloneRun>;
}

/// What a standalone run found, for its run record.
pub struct StandaloneRun {
    pub status: crate::driver::RunStatus,
    /// The run's parameters, for reports.
    pub params: serde_json::Value,
    pub headline: Measure,
    /// Its measures with their values.
    pub measures: Vec<Measure>,
    /// Everything else it reports, in its own shape.
    pub metrics: serde_json::Value,
}

/// What every workload is: one that drives a database, or one that runs on its own.
pub enum Kind {
    Driven(Box<dyn Workload>),
    Standalone(Box<dyn Standalone>),
}

impl Kind {
    /// What a study compares: the measures, declared before any run.
    pub fn measures(&self) -> Vec<Measure> {
        match self {
            Kind::Driven(w) => w.measures(None),
            Kind::Standalone(s) => s.measures(),
        }
    }

    /// Whether the run leaves data on the storage under test for the plaintext scan.
    pub fn leaves_data(&self) -> bool {
        match self {
            Kind::Driven(_) => true,
            Kind::Standalone(s) => s.leaves_data(),
        }
    }

    /// Whether its runs take backups for the plaintext scan to cover.
    pub fn takes_backups(&self) -> bool {
        self.as_driven().is_some_and(|w| w.takes_backups())
    }

    pub fn as_driven(&self) -> Option<&dyn Workload> {
        match self {
            Kind::Driven(w) => Some(w.as_ref()),
            Kind::Standalone(_) => None,
        }
    }
}

/// One part of a workload that a study compares as a workload of its own (a bignw benchmark).
pub struct Part {
    /// What the part adds to the workload's label.
    pub about: String,
    pub options: Options,
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

#[cfg(test)]
mod tests {
    #[test]
    fn every_workload_option_is_in_the_reference() {
        use crate::reference_docs::{fields, Page, STUDY_FILE};
        let page = Page::of(STUDY_FILE);
        let section = |w: &str| format!("[workload] options of {w}");
        page.assert_lists(&section("ds2"), fields::<super::ds2::Mix>());
        page.assert_lists(&section("tpcc"), fields::<super::tpcc::Options>());
        page.assert_lists(&section("oltp"), fields::<super::oltp::Options>());
        page.assert_lists(&section("bignw"), fields::<super::bignw::Options>());
        page.assert_lists(&section("fileio"), fields::<super::fileio::Options>());
        page.assert_lists(&section("cipher"), fields::<super::cipher::Options>());
        page.assert_lists(&section("command"), fields::<super::command::Options>());
        page.assert_lists(&section("replay"), fields::<super::replay::Options>());
    }

    use super::*;

    #[test]
    fn identity_mismatch_names_the_key() {
        let want = BuildMeta::from([("size".into(), "10MB".into())]);
        let have = BuildMeta::from([("size".into(), "1MB".into())]);
        let e = ensure_identity(&want, &have, "/x.db").unwrap_err().to_string();
        assert!(e.contains("size 1MB") && e.contains("--size"), "{e}");
        assert!(ensure_identity(&want, &want, "/x.db").is_ok());
    }

    #[test]
    fn every_name_is_a_workload_and_an_unknown_one_lists_them() {
        for name in ALL {
            assert_eq!(Options::named(name).unwrap().name(), *name);
        }
        let e = Options::named("tpcd").unwrap_err().to_string();
        assert!(e.contains("'tpcd'") && e.contains("cipher"), "{e}");
        assert_eq!(throughput_names(), ["ds2", "tpcb", "tpcc", "oltp"]);
        assert_eq!(driven_names(), ["ds2", "tpcb", "tpcc", "oltp", "batch", "bignw", "command", "replay"]);
    }

    #[test]
    fn options_sit_beside_the_name_and_a_stray_key_is_refused() {
        let w: WorkloadSpec = serde_json::from_str(r#"{"name":"tpcc","profile":"query","size":"2"}"#).unwrap();
        assert_eq!((w.describe(), w.size.as_deref()), ("tpcc hammerora-query".to_string(), Some("2")));
        let e = serde_json::from_str::<WorkloadSpec>(r#"{"name":"batch","profile":"query"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `profile`"), "{e}");
        let back: WorkloadSpec = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
        assert_eq!(back.describe(), w.describe());
    }
}
