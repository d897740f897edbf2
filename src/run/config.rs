//! A run's target and workload in a file's words: the `[target]` and `[[workloads]]`
//! sections the study file and the capacity file share, and how they become a run's spec.

use super::load::Load;
use crate::workloads::{Kind, Options, WorkloadSpec};
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Where the variants run: embedded SQLite, or a private PostgreSQL or MariaDB instance per
/// variant, whose data directory lives on the variant's storage.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    #[serde(default)]
    pub engine: crate::targets::Engine,
    /// Engine settings for every variant: a managed server's settings, e.g.
    /// { shared_buffers = "256MB" }, or SQLite's pragmas, e.g. { synchronous = "normal" }.
    #[serde(default)]
    pub settings: std::collections::BTreeMap<String, String>,
    /// Managed PostgreSQL instances also listen on this address of this machine, for the
    /// study's `[clients]` (see `dbvs run --listen`).
    #[serde(default)]
    pub listen: Option<String>,
    /// With `engine = "mariadb"`: each variant's server is a Galera cluster of this many
    /// nodes (`managed-galera:N`), the variant's settings on every node.
    #[serde(default)]
    pub nodes: Option<usize>,
    /// The disk under every variant's storage, pristine databases and copies: the host's
    /// (the output directory's file system), or `"ram"`, a RAM disk model for each variant.
    #[serde(default, skip_serializing_if = "Disk::is_host")]
    pub disk: Disk,
}

impl Default for TargetConfig {
    fn default() -> Self {
        Self {
            engine: crate::targets::Engine::Sqlite,
            settings: Default::default(),
            listen: None,
            nodes: None,
            disk: Disk::Host,
        }
    }
}

/// The disk a study's (or capacity search's) variants are set up on. `"ram"` is
/// [`crate::sys::ramdisk`]'s model: page-cache misses read from a block device that takes the
/// same time for every read, so a run larger than memory reads the same bytes per unit
/// every time; `{ model = "ram", size = "4GB" }` sizes it (2GB by default, taken from RAM), shared
/// evenly by the variants, each of which gets a disk of its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum Disk {
    #[default]
    Host,
    Ram {
        size: String,
    },
}

impl Disk {
    fn is_host(&self) -> bool {
        *self == Disk::Host
    }

    /// The size in bytes of each of `places` RAM disks, the size shared evenly (`None` on the
    /// host's disk).
    pub fn ram_bytes_each(&self, places: usize) -> Result<Option<u64>> {
        let Disk::Ram { size } = self else { return Ok(None) };
        let bytes = crate::sys::units::parse_bytes(size).map_err(|e| anyhow::anyhow!("disk size: {e}"))?;
        if bytes < SMALLEST_RAM_DISK {
            anyhow::bail!("disk size '{size}' is too small for a RAM disk: at least 64MB");
        }
        let places = places.max(1) as u64;
        if bytes / places < SMALLEST_RAM_DISK {
            anyhow::bail!(
                "disk size '{size}' gives each of {places} variants (controls included) a RAM disk of less than 64MB; \
                 give at least {}MB",
                places * (SMALLEST_RAM_DISK >> 20)
            );
        }
        Ok(Some(bytes / places))
    }
}

/// The smallest RAM disk a variant gets.
pub const SMALLEST_RAM_DISK: u64 = 64 << 20;

/// `disk = "ram"` (or `"host"`), or `disk = { model = "ram", size = "4GB" }`.
impl<'de> Deserialize<'de> for Disk {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let forms = "disk is \"host\", \"ram\" or { model = \"ram\", size = \"4GB\" }";
        let (model, size) = match toml::Value::deserialize(d)? {
            toml::Value::String(m) => (m, None),
            toml::Value::Table(t) => {
                let text = |k: &str| t.get(k).map(|v| v.as_str().map(str::to_string));
                match (text("model"), text("size"), t.keys().all(|k| k == "model" || k == "size")) {
                    (Some(Some(model)), None, true) => (model, None),
                    (Some(Some(model)), Some(Some(size)), true) => (model, Some(size)),
                    _ => return Err(D::Error::custom(forms)),
                }
            }
            _ => return Err(D::Error::custom(forms)),
        };
        match (model.as_str(), size) {
            ("host", None) => Ok(Disk::Host),
            ("ram", size) => Ok(Disk::Ram { size: size.unwrap_or_else(|| "2GB".into()) }),
            ("host", Some(_)) => {
                Err(D::Error::custom("disk \"host\" takes no size: it is the disk the output directory is on"))
            }
            (other, _) => Err(D::Error::custom(format!("no disk model '{other}': {forms}"))),
        }
    }
}

/// One `[[workloads]]` entry: `name = "..."` and that workload's own options (see
/// [`Options`]), beside what every workload takes. A key neither knows is an error.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct WorkloadConfig {
    /// Threads, duration, warm-up, iterations, think time, ramp rate and stagger. Before
    /// `options` on purpose: flattened fields read in order, and this one takes its keys
    /// out, where the options' own struct refuses any key it does not know.
    #[serde(flatten)]
    pub load: Load,
    #[serde(flatten)]
    pub options: Options,
    /// How reports name this workload [default: the name, plus the TPC-C profile].
    pub label: Option<String>,
    /// In the workload's own terms (see `dbvs run --help`) [default: the workload's].
    pub size: Option<String>,
    /// Repetitions of a fixed-work workload's unit (batch, bignw, fileio, cipher).
    pub repeat: Option<u32>,
    /// Drop the OS page cache before every run.
    #[serde(default)]
    pub cold: bool,
    /// Idle this long before every run, after its fresh copy is settled (seeds 000 and 001
    /// idled 10-20 minutes after each restore).
    #[serde(default, with = "crate::sys::units::duration_text")]
    pub idle: Duration,
    /// The memory each run may use, page cache included (e.g. "64MB"), so a database larger
    /// than it reads from storage (see `run::memory`).
    pub memory: Option<String>,
    /// Which entry of the file this came from (bignw entries split into one per benchmark),
    /// so errors point at its lines.
    #[serde(skip)]
    pub(crate) entry: usize,
    /// Independent databases run side by side, each with `threads` workers (ds2, tpcb,
    /// tpcc); the measure is their total.
    #[serde(default = "one")]
    pub instances: u32,
    /// This entry's keys in the study's quick form (see `study::quick`).
    #[serde(default, skip_serializing)]
    pub(crate) quick: Option<toml::Table>,
}

impl WorkloadConfig {
    pub fn name(&self) -> &'static str {
        self.options.name()
    }

    /// The name reports use: the label, else the workload name and its TPC-C profile.
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.options.describe())
    }

    /// The workload's arguments, as `dbvs run` would build them.
    pub fn args(&self, seed: u64) -> WorkloadSpec {
        WorkloadSpec {
            options: self.options.clone(),
            size: self.size.clone(),
            repeat: self.repeat,
            seed,
            cold: self.cold,
            keep_backup: false,
        }
    }

    /// The workload itself; checks its size and options.
    pub fn kind(&self) -> Result<Kind> {
        self.args(0).kind()
    }

    /// Why variants cannot take turns on this workload within one run, if they cannot: only
    /// a throughput workload over a timed window with one instance can.
    pub fn why_alone(&self) -> Option<String> {
        if !self.kind().is_ok_and(|k| k.as_driven().is_some_and(|w| w.supports_instances())) {
            return Some(format!("{} has no timed throughput to share out in slices", self.name()));
        }
        if self.load.iterations.is_some() {
            return Some("it runs a fixed amount of work (iterations), not a timed window".into());
        }
        if self.a_process_per_variant() && !self.turns_across_processes() {
            return Some(
                "under its memory limit each variant needs a run process of its own, and after dropped caches \
                 (cold) processes cannot take turns"
                    .into(),
            );
        }
        (self.instances > 1).then(|| format!("it runs {} instances side by side", self.instances))
    }

    /// Whether variants that need a run process of their own can take turns with the
    /// others from it. Not when the page cache is dropped before each run (one process's
    /// drop would hit another's start).
    pub fn turns_across_processes(&self) -> bool {
        !self.cold
    }

    /// This workload as an interleaved run of `sides` variants runs it. Each variant works
    /// only in its own turns, so the run warms up for `warmup` and measures for `duration`
    /// per variant: each measures the same stretch of its database's life as it would alone,
    /// from as far from its fresh copy to as far. Under a memory limit its cache warms only
    /// in its turns; in cache too a fresh copy's first units write more per unit than later
    /// ones (among four in-cache places sharing one 2 s warm-up, SQLCipher's bytes written
    /// per order against plain's were 1.04, where alone they are 1.008), and a window a
    /// quarter as long measured plain's bytes written per order 1.5% below a whole one's.
    pub fn taking_turns(&self, sides: usize) -> WorkloadConfig {
        let mut w = self.clone();
        let sides = sides.max(1) as u32;
        w.load.warmup = Some(self.load.warmup() * sides);
        w.load.duration = Some(self.load.window() * sides);
        w
    }

    /// Whether every variant takes its turns from a process of its own: under a memory
    /// limit, so that each has the whole limit and keeps its own cache between its slices,
    /// as it would run alone. Sharing one limit, the variants would evict each other's
    /// pages, and a slice's rate would depend on who ran before it.
    pub fn a_process_per_variant(&self) -> bool {
        self.memory.is_some()
    }

    /// Whether a block's slices may go to the variants by need (`study::allocate`). Not when
    /// their databases share a memory limit or start from a dropped cache: a variant that
    /// runs more keeps more of its data cached, so its share would change its rate.
    pub fn shares_by_need(&self) -> bool {
        self.memory.is_none() && !self.cold
    }

    /// Whether a pilot run must calibrate this workload before the blocks.
    pub fn needs_calibration(&self) -> bool {
        self.kind().is_ok_and(|k| k.as_driven().is_some_and(|w| w.needs_calibration()))
    }

    /// Folds in what a pilot run calibrated, so every later run does the same work.
    pub fn calibrate(&mut self, found: &str) -> Result<()> {
        let kind = self.kind()?;
        let options = kind.as_driven().and_then(|w| w.calibrated(found));
        self.options = options.with_context(|| format!("{} calibrates nothing", self.label()))?;
        Ok(())
    }

    /// The entry as the workloads a study compares: one per part the workload names
    /// (bignw: per benchmark), else itself.
    pub(crate) fn split(self) -> Vec<WorkloadConfig> {
        let parts = self.kind().map(|k| k.as_driven().map(|w| w.parts()).unwrap_or_default()).unwrap_or_default();
        if parts.is_empty() {
            return vec![self];
        }
        parts
            .into_iter()
            .map(|p| WorkloadConfig {
                label: Some(format!("{} {}", self.label(), p.about)),
                options: p.options,
                ..self.clone()
            })
            .collect()
    }
}

impl WorkloadConfig {
    /// The keys every workload entry takes beside its own options, for a "did you mean"
    /// (see `text::syntax_error`): read off the struct itself, as a workload without options
    /// of its own writes them.
    pub(crate) fn common_keys() -> Vec<String> {
        let plain: Option<WorkloadConfig> = toml::from_str("name = \"tpcb\"").ok();
        let json = plain.and_then(|w| serde_json::to_value(w).ok());
        let keys = json.as_ref().and_then(|j| j.as_object()).map(|o| o.keys().filter(|k| *k != "name").cloned());
        keys.map(Iterator::collect).unwrap_or_default()
    }

    /// `memory` in bytes.
    pub fn memory_bytes(&self) -> Result<Option<u64>> {
        self.memory.as_deref().map(|m| crate::sys::units::parse_bytes(m).map_err(anyhow::Error::msg)).transpose()
    }
}

fn one() -> u32 {
    1
}
