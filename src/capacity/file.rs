//! The capacity file (TOML): the configurations to search, on what target and workload, at
//! what SLA, and how the search steps. It shares `[target]` and `[workload]` with the study
//! file (`run::config`).

use crate::run::config::{TargetConfig, WorkloadConfig};
use crate::variants::VariantConfig;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityFile {
    pub name: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub target: TargetConfig,
    /// The workload every instance runs (ds2, tpcb or tpcc), with its threads and duration.
    pub workload: WorkloadConfig,
    pub sla: Sla,
    #[serde(default)]
    pub search: Search,
    /// The configurations to compare (variants: `plain`, `limits` for smaller machines...).
    pub configurations: Vec<VariantConfig>,
    /// The configurations are an upgrade ladder's steps: each takes the keys of the one
    /// before it (see `study::ladder`), and the report says what each step did.
    #[serde(default)]
    pub ladder: bool,
    /// A second workload beside every instance (seed 004's mail VMs), on an embedded SQLite
    /// database of its own, held to `sla.companion_max_p95_ms`.
    #[serde(default)]
    pub companion: Option<WorkloadConfig>,
    #[serde(default = "default_power")]
    pub power: String,
    /// Client hosts that run every instance's workers (as a study's `[clients]`), so the
    /// machine under test spends its cores on the servers alone.
    #[serde(default)]
    pub clients: Option<crate::remote::ClientsSpec>,
    /// The quick form's keys (`dbvs capacity --quick`, see `study::quick`).
    #[serde(default, skip_serializing)]
    pub(super) quick: Option<toml::Table>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Sla {
    /// The headline (OPM, TPS or NOPM) every instance (or their average) must reach.
    pub min_per_instance: f64,
    /// Whether every instance must reach it (seed 004: until any DB VM drops below), or
    /// their average.
    #[serde(default)]
    pub of: SlaOf,
    /// Optional: every instance's p95 unit latency must stay under this.
    pub max_p95_ms: Option<f64>,
    /// Optional: every companion's p95 unit latency must stay under this (seed 004's mail
    /// VMs: 20 ms).
    #[serde(default)]
    pub companion_max_p95_ms: Option<f64>,
    /// Runs per probe; the verdict is their majority (a tie takes one more run).
    #[serde(default = "default_confirmations")]
    pub confirmations: u32,
}

/// What must reach the SLA's rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SlaOf {
    #[default]
    Every,
    Average,
}

impl SlaOf {
    /// The SLA's subject, in words.
    pub fn describe(self) -> &'static str {
        match self {
            SlaOf::Every => "every instance",
            SlaOf::Average => "the instances' average",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    pub max_instances: u32,
    /// Linear stepping: `step`, 2 x `step`, ... instances until one fails (seed 004 added
    /// VM pairs); without it, doubling and then bisection.
    #[serde(default)]
    pub step: Option<u32>,
}

impl Default for Search {
    fn default() -> Self {
        Self { max_instances: 64, step: None }
    }
}

impl Search {
    /// How the search steps, in words.
    pub fn describe(&self) -> String {
        match self.step {
            Some(k) => format!("{k} instance{} at a time", if k == 1 { "" } else { "s" }),
            None => "doubling, then bisection".into(),
        }
    }

    /// The most instances the search can try.
    pub fn reach(&self) -> u32 {
        self.step.map_or(self.max_instances, |k| self.max_instances / k * k)
    }
}

fn default_seed() -> u64 {
    42
}
fn default_power() -> String {
    "auto".into()
}
fn default_confirmations() -> u32 {
    2
}

impl CapacityFile {
    /// Reads and checks a capacity file, in its quick form with `quick`.
    pub fn load(path: &Path, quick: bool) -> Result<(Self, String)> {
        let shown = path.display();
        let text =
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read capacity file {shown}: {e}"))?;
        let folded = |text: &str| crate::study::quick::fold(text).map_err(|e| anyhow::anyhow!("{shown}: {e:#}"));
        let text = if quick { folded(&text)? } else { text };
        let parse = |text: &str| -> Result<CapacityFile> {
            let mut file: CapacityFile =
                toml::from_str(text).map_err(|e| crate::study::file::syntax_error(&shown, text, &e))?;
            if file.ladder {
                file.configurations = crate::study::ladder::steps(text, "configurations", |_| String::new())
                    .map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
            }
            file.check().map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
            Ok(file)
        };
        let file = parse(&text)?;
        // A file with a quick form checks it too, as a study file does.
        if file.quick.is_some() || file.workload.quick.is_some() {
            parse(&folded(&text)?).map_err(|e| anyhow::anyhow!("its quick form: {e:#}"))?;
        }
        Ok((file, crate::study::file::redact_key_commands(&text)))
    }

    pub(super) fn check(&self) -> Result<()> {
        // Names become paths and terminal text, as in a study file.
        let names = std::iter::once(("capacity search", &self.name))
            .chain(self.configurations.iter().map(|c| ("configuration", &c.name)));
        for (what, name) in names {
            if let Some(p) = crate::sys::names::problem(name) {
                bail!("the {what} name {p}");
            }
        }
        let throughput = crate::workloads::throughput_names();
        if !throughput.contains(&self.workload.name()) {
            bail!("capacity needs a throughput workload ({}), not '{}'", throughput.join(", "), self.workload.name());
        }
        if self.workload.instances != 1 {
            bail!("leave workload.instances out: the search chooses the number of instances");
        }
        self.workload.kind()?;
        if self.sla.min_per_instance.is_nan() || self.sla.min_per_instance <= 0.0 {
            bail!("sla.min_per_instance must be a positive rate (OPM for ds2, TPS for tpcb, NOPM for tpcc)");
        }
        if self.sla.max_p95_ms.is_some_and(|p| p.is_nan() || p <= 0.0) {
            bail!("sla.max_p95_ms must be a positive number of milliseconds");
        }
        match (&self.companion, self.sla.companion_max_p95_ms) {
            (None, Some(_)) => bail!("sla.companion_max_p95_ms needs a [companion] workload"),
            (_, Some(p)) if p.is_nan() || p <= 0.0 => {
                bail!("sla.companion_max_p95_ms must be a positive number of milliseconds")
            }
            _ => {}
        }
        if let Some(c) = &self.companion {
            if !throughput.contains(&c.name()) {
                bail!("the companion must be a throughput workload ({}), not '{}'", throughput.join(", "), c.name());
            }
            if c.instances != 1 {
                bail!("leave companion.instances out: every instance gets one companion");
            }
            c.kind()?;
        }
        if self.sla.confirmations == 0 {
            bail!("sla.confirmations must be at least 1");
        }
        if !(1..=256).contains(&self.search.max_instances) {
            bail!("search.max_instances must be between 1 and 256");
        }
        if self.search.step.is_some_and(|k| k == 0 || k > self.search.max_instances) {
            bail!("search.step must be between 1 and search.max_instances");
        }
        if self.configurations.is_empty() {
            bail!("a capacity search needs at least one [[configurations]] entry");
        }
        for (i, c) in self.configurations.iter().enumerate() {
            c.validate()?;
            if self.configurations[..i].iter().any(|o| o.name == c.name) {
                bail!("configuration name '{}' is used twice", c.name);
            }
        }
        self.power.parse::<crate::telemetry::power::PowerSpec>().map_err(|e| anyhow::anyhow!("power: {e}"))?;
        self.target.disk.ram_bytes_each(1)?;
        if let Some(c) = &self.clients {
            c.reach(self.target.engine, self.target.listen.as_deref())?;
        }
        Ok(())
    }
}
