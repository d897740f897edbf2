//! The study file (TOML): what to compare, on what, for how long, to what precision.
//! Errors point at the file, line and key.

pub use super::redact::redact_key_commands;
pub use super::text::syntax_error;
use super::text::Places;
pub use crate::run::config::{TargetConfig, WorkloadConfig};
use crate::variants::VariantConfig;
use anyhow::{bail, Result};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    pub name: String,
    /// Seeds the data, the workers and the block order.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Wall-clock budget for the measured blocks; no block starts that would overrun it.
    #[serde(default = "default_budget", deserialize_with = "duration")]
    pub budget: Duration,
    /// Stop once every ratio's 95% CI half-width is at most this (0.01 = 1%); unset, half
    /// the verdict's threshold ([`Self::ci_target`]).
    #[serde(default, rename = "ci_target")]
    ci_target_given: Option<f64>,
    /// A tighter (or looser) half-width for some variants' comparisons, e.g.
    /// `ci_targets = { sqlcipher = 0.005 }`: the study gives their variants more slices.
    #[serde(default)]
    pub ci_targets: BTreeMap<String, f64>,
    #[serde(default)]
    pub blocks: Blocks,
    #[serde(default)]
    pub target: TargetConfig,
    /// One workload (`[workload]`)...
    #[serde(default, skip_serializing)]
    workload: Option<WorkloadConfig>,
    /// ...or several (`[[workloads]]`); every block runs each on every variant. `load`
    /// folds `[workload]` into this list.
    #[serde(default)]
    pub workloads: Vec<WorkloadConfig>,
    /// The first variant is the baseline.
    pub variants: Vec<VariantConfig>,
    /// Power source for every run: auto, none, rapl, ipmi or cmd:COMMAND (see `dbvs run --power`).
    #[serde(default = "default_power")]
    pub power: String,
    /// With a power source, idle power is read this long before each run's load.
    #[serde(default = "default_idle_power", deserialize_with = "duration")]
    pub idle_power: Duration,
    /// The slice length when a block's variants take turns in one run (e.g. "100ms"), or
    /// "off"; unset, each workload gets the default design (see `study::design`).
    #[serde(default)]
    pub interleave: Option<super::design::Interleave>,
    /// When a change is called: `verdict = { confidence = 0.95, threshold = 0.01 }`.
    #[serde(default)]
    pub verdict: crate::stats::Rules,
    /// Pairs of variants to compare beside each with the baseline and its control, e.g.
    /// `compare = [["tde", "nle"]]` (seed 003's headline: one encryptor against the other);
    /// the first of a pair is measured against the second.
    #[serde(default)]
    pub compare: Vec<(String, String)>,
    /// Each change also stated another way beside the paired ratio: `"share-of-larger"`,
    /// seed 003's convention (see `stats::share_of_larger`).
    #[serde(default)]
    pub also_as: Option<AlsoAs>,
    /// Seed 000's AES table, measured once before the blocks: `aes_table = { sizes =
    /// ["100KB", "1MB"], runs = 3, ciphers = ["aes-256-xts"] }` (see `cipher::table`).
    #[serde(default)]
    pub aes_table: Option<AesTableConfig>,
    /// Add each encrypted variant's control (its stack without the encryption) when the
    /// study lacks it (see `study::controls`).
    #[serde(default = "yes")]
    pub controls: bool,
    /// The variants are the steps of an upgrade ladder (see [`super::ladder`]): each takes
    /// the previous step's keys and changes what it names; each is compared with the one
    /// before it too.
    #[serde(default)]
    pub ladder: bool,
    /// A ladder's steps, in order (the study file's variants, without the controls added).
    #[serde(skip)]
    pub steps: Vec<String>,
    /// What the study should say before it starts (verdicts that mix in other layers).
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// Hosts that run every run's workers (see `dbvs run --clients`): `hosts`, and
    /// optionally `dbvs` (its path there) and `ssh_config`.
    #[serde(default)]
    pub clients: Option<crate::remote::ClientsSpec>,
    /// The quick form's keys (`dbvs study --quick`, see `study::quick`); the full form
    /// ignores them.
    #[serde(default, skip_serializing)]
    pub(crate) quick: Option<toml::Table>,
}

impl StudyFile {
    /// The engines the variants run, the baseline's first.
    pub fn engines(&self) -> Vec<crate::targets::Engine> {
        let mut engines = vec![];
        for v in &self.variants {
            let e = v.engine.unwrap_or(self.target.engine);
            if !engines.contains(&e) {
                engines.push(e);
            }
        }
        engines
    }

    /// The half-width every ratio is held to: the file's `ci_target`, or half the verdict's
    /// threshold. A change is called only when its whole interval lies beyond the threshold,
    /// so an interval as wide as the threshold calls a change of twice the threshold only
    /// half the time; at half its width, nineteen times in twenty or more (docs/methodology.md,
    /// "Stopping on precision").
    pub fn ci_target(&self) -> f64 {
        // Without a threshold (significance alone) half the default one.
        let threshold = match self.verdict.threshold > 0.0 {
            true => self.verdict.threshold,
            false => crate::stats::Rules::default().threshold,
        };
        self.ci_target_given.unwrap_or(threshold / 2.0)
    }

    pub fn targets(&self) -> crate::report::Targets<'_> {
        crate::report::Targets { all: self.ci_target(), own: &self.ci_targets }
    }

    /// A workload's memory limit moves the run (and its server) into a group of its own;
    /// a variant's limits hold the same processes. On cgroup v2, where a process is in one
    /// group, the run's group goes inside the variant's (`run::memory`), which holds the
    /// run process itself for SQLite; a server's limits hold the server alone, and the run
    /// process could only share its memory group by taking on the server's limits.
    fn check_memory_beside_limits(&self) -> Result<()> {
        let v2 = crate::sys::cgroup::version(&["memory"]).is_ok_and(|v| v == crate::sys::cgroup::Version::V2);
        self.check_memory_beside_limits_on(v2)
    }

    fn check_memory_beside_limits_on(&self, v2: bool) -> Result<()> {
        for v in &self.variants {
            let server = v.engine.unwrap_or(self.target.engine) != crate::targets::Engine::Sqlite;
            match &v.limits {
                Some(l) if l.memory.is_some() => {
                    bail!("workload.memory and the limits.memory of variant '{}' both limit memory; keep one", v.name)
                }
                Some(_) if v2 && server => bail!(
                    "workload.memory and the limits of variant '{}' cannot both hold its server's processes on cgroup \
                     v2 (a process is in one group there); limit memory through the variants' limits.memory instead",
                    v.name
                ),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Which AES table a study measures before its blocks (`aes_table`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AesTableConfig {
    /// Buffer sizes (`dbvs cipher --sizes`); every one that fits in memory when empty.
    #[serde(default)]
    pub sizes: Vec<String>,
    /// Runs per figure; the table shows their median.
    #[serde(default = "three")]
    pub runs: usize,
    #[serde(default = "xts")]
    pub ciphers: Vec<crate::cipher::Algo>,
}

fn three() -> usize {
    3
}

fn xts() -> Vec<crate::cipher::Algo> {
    vec![crate::cipher::Algo::Xts]
}

impl AesTableConfig {
    /// The sizes it names, checked.
    pub fn sizes(&self) -> Result<Vec<(&'static str, usize)>> {
        self.sizes.iter().map(|s| crate::cipher::parse_size(s).map_err(|e| anyhow::anyhow!("aes_table: {e}"))).collect()
    }

    fn check(&self) -> Result<()> {
        self.sizes()?;
        if !(1..=100).contains(&self.runs) {
            bail!("aes_table: runs = {} must be from 1 to 100", self.runs);
        }
        if self.ciphers.is_empty() {
            bail!("aes_table: ciphers names at least one of aes-256-xts, aes-256-gcm, aes-256-cbc");
        }
        Ok(())
    }
}

/// A second way to state each change (`also_as`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlsoAs {
    /// Per block, the difference as a share of the larger side, averaged over blocks.
    ShareOfLarger,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Blocks {
    pub min: usize,
    pub max: usize,
}

/// At least as many blocks as the signed-rank test needs to reach p < 0.05; at most as
/// many as short blocks fill the default budget with (two variants in cache reached +-0.5%
/// in 18-38 blocks of about 15 s), so the budget and the target decide when it stops.
impl Default for Blocks {
    fn default() -> Self {
        Self { min: crate::stats::fewest_for_significance(0.05), max: 200 }
    }
}

fn default_power() -> String {
    "auto".into()
}
fn default_idle_power() -> Duration {
    crate::run::TelemetrySpec::default().idle_power
}
fn default_seed() -> u64 {
    42
}
fn default_budget() -> Duration {
    Duration::from_secs(600)
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    crate::sys::units::duration_text::deserialize(d)
}

impl StudyFile {
    /// Names become paths and terminal text (see `sys::names`): a study, variant or workload
    /// label too long or with control characters is refused before anything shows it.
    fn check_names(&self, places: &Places) -> Result<()> {
        let refuse = |at: String, what: &str, name: &str| match crate::sys::names::problem(name) {
            Some(p) => Err(anyhow::anyhow!("{at}the {what} {p}")),
            None => Ok(()),
        };
        refuse(places.line(places.name.as_ref(), ""), "study name", &self.name)?;
        for (i, v) in self.variants.iter().enumerate() {
            refuse(places.line(places.variants.get(i), "name"), "variant name", &v.name)?;
        }
        for w in &self.workloads {
            if let Some(label) = &w.label {
                refuse(places.line(places.workloads.get(w.entry), "label"), "workload label", label)?;
            }
        }
        Ok(())
    }

    /// How the study launches its runs (see `run::launch`).
    pub fn launcher<'a>(
        &'a self,
        exe: &'a Path,
        out: &'a Path,
        work: &'a crate::run::workdir::WorkDir,
        live: Option<&'a Path>,
    ) -> crate::run::launch::Context<'a> {
        crate::run::launch::Context {
            exe,
            out,
            work,
            live,
            target: &self.target,
            seed: self.seed,
            power: &self.power,
            idle_power: self.idle_power,
            clients: self.clients.as_ref(),
        }
    }

    /// Reads and checks a study file, in its quick form with `quick` (see [`super::quick`]).
    /// The full form of a file that has a quick form checks that one too, so a mistake in it
    /// shows before the run that needs it.
    pub fn load(path: &Path, quick: bool) -> Result<(Self, String)> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read study file {shown}: {e}"))?;
        let folded = |text: &str| super::quick::fold(text).map_err(|e| anyhow::anyhow!("{shown}: {e:#}"));
        let text = if quick { folded(&text)? } else { text };
        let file = Self::parse(&shown, &text)?;
        if file.quick.is_some() || file.workloads.iter().any(|w| w.quick.is_some()) {
            Self::parse(&format!("{shown} (its quick form)"), &folded(&text)?)?;
        }
        Ok((file, redact_key_commands(&text)))
    }

    pub(super) fn parse(shown: &str, text: &str) -> Result<Self> {
        let mut file: StudyFile = toml::from_str(text).map_err(|e| syntax_error(&shown, text, &e))?;
        if let Some(w) = file.workload.take() {
            if !file.workloads.is_empty() {
                bail!("{shown}: use either one [workload] or a list of [[workloads]], not both");
            }
            file.workloads.push(w);
        }
        for (i, w) in file.workloads.iter_mut().enumerate() {
            w.entry = i;
        }
        file.workloads = file.workloads.into_iter().flat_map(WorkloadConfig::split).collect();
        let places = Places::of(text);
        if file.ladder {
            super::ladder::climb(&mut file, text, &places).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
        }
        // Engine against engine: every variant says its engine, so the stacks show it.
        if file.variants.iter().any(|v| v.engine.is_some()) {
            let engine = file.target.engine;
            for v in &mut file.variants {
                v.engine.get_or_insert(engine);
            }
        }
        file.check(&places).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
        file.warnings =
            super::controls::resolve(&mut file.variants, file.controls).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
        // Each variant, its automatic controls included, gets a share of the RAM disk size.
        let at = places.line(None, "disk");
        file.target.disk.ram_bytes_each(file.variants.len()).map_err(|e| anyhow::anyhow!("{shown}: {at}{e}"))?;
        file.warnings.extend(file.engine_warnings());
        Ok(file)
    }

    /// A variant on another engine than the baseline's differs from it in more than one
    /// thing, whatever its stack says: the verdict compares the engines as configured.
    fn engine_warnings(&self) -> Vec<String> {
        let base = &self.variants[0];
        let others = self.variants.iter().filter(|v| v.engine != base.engine);
        others
            .map(|v| {
                format!(
                    "variant '{}' runs {}, the baseline '{}' {}: engines differ in more than one thing (storage engine, \
                     durability and memory defaults, planner, the SQL each workload sends them), so its verdict \
                     compares the two engines as configured, not one feature",
                    v.name,
                    v.engine.unwrap_or(self.target.engine),
                    base.name,
                    base.engine.unwrap_or(self.target.engine)
                )
            })
            .collect()
    }

    fn check(&self, places: &Places) -> Result<()> {
        self.check_names(places)?;
        let at = |needle: &str| places.line(None, needle);
        self.power
            .parse::<crate::telemetry::power::PowerSpec>()
            .map_err(|e| anyhow::anyhow!("{}power: {e}", at("power")))?;
        if self.workloads.is_empty() {
            bail!("a study needs a [workload] (or a list of [[workloads]])");
        }
        self.check_workloads(places)?;
        self.check_variants(places)?;
        if self.blocks.min < 2 || self.blocks.min > self.blocks.max {
            bail!("{}blocks: need 2 <= min <= max, got min {} max {}", at("min"), self.blocks.min, self.blocks.max);
        }
        if self.budget.is_zero() || self.budget > Duration::from_secs(30 * 24 * 3600) {
            bail!("{}budget must be longer than 0 and at most 30 days, e.g. budget = \"10m\"", at("budget"));
        }
        if !(self.ci_target() > 0.0 && self.ci_target() < 1.0) {
            bail!("{}ci_target must be a fraction between 0 and 1, e.g. 0.01 for 1%", at("ci_target"));
        }
        for (name, t) in &self.ci_targets {
            if !self.variants[1..].iter().any(|v| v.name == *name) {
                bail!("{}ci_targets: '{name}' is not a variant other than the baseline; name one of the variants compared", at("ci_targets"));
            }
            if !(*t > 0.0 && *t < 1.0) {
                bail!(
                    "{}ci_targets: {name} = {t} must be a fraction between 0 and 1, e.g. 0.005 for 0.5%",
                    at("ci_targets")
                );
            }
        }
        if let Some(problem) = self.verdict.problem() {
            bail!("{}verdict: {problem}", at("verdict"));
        }
        if let Some(n) = self.target.nodes {
            let sizes = crate::targets::galera::NODES;
            if self.target.engine != crate::targets::Engine::Mariadb || !sizes.contains(&n) {
                bail!(
                    "{}nodes makes each server a Galera cluster: engine = \"mariadb\" with {} to {} nodes",
                    at("nodes"),
                    sizes.start(),
                    sizes.end()
                );
            }
        }
        if let Some(t) = &self.aes_table {
            t.check().map_err(|e| anyhow::anyhow!("{}{e}", at("aes_table")))?;
        }
        if let Some(c) = &self.clients {
            if matches!(self.interleave, Some(super::design::Interleave::Every(_))) {
                bail!("{}[clients] runs the workers on other hosts; interleaved variants take turns in one process here: drop interleave", at("interleave"));
            }
            c.reach(self.target.engine, self.target.listen.as_deref())
                .map_err(|e| anyhow::anyhow!("{}{e}", at("clients")))?;
        }
        Ok(())
    }

    /// Every workload entry: its options, load, instances, memory and label.
    fn check_workloads(&self, places: &Places) -> Result<()> {
        for (i, w) in self.workloads.iter().enumerate() {
            let at = |needle: &str| places.line(places.workloads.get(w.entry), needle);
            w.kind().map_err(|e| anyhow::anyhow!("{}workload {}: {e}", at("size"), w.name()))?;
            if let Some((key, what)) = w.load.problem() {
                bail!("{}workload.{key} {what}", at(key));
            }
            let throughput = crate::workloads::throughput_names();
            if w.instances == 0 || (w.instances > 1 && !throughput.contains(&w.name())) {
                bail!("{}workload.instances must be 1, or more for {}", at("instances"), throughput.join(", "));
            }
            if w.instances > 256 {
                bail!("{}workload.instances must be at most 256", at("instances"));
            }
            if w.memory_bytes().map_err(|e| anyhow::anyhow!("{}workload.memory: {e}", at("memory")))?.is_some() {
                self.check_memory_beside_limits().map_err(|e| anyhow::anyhow!("{}{e}", at("memory")))?;
            }
            if self.workloads[..i].iter().any(|o| o.label() == w.label()) {
                bail!("two workloads are both called '{}'; give one a label = \"...\"", w.label());
            }
        }
        Ok(())
    }

    /// The variants: at least two, each valid, each named once, and the pairs to compare.
    fn check_variants(&self, places: &Places) -> Result<()> {
        let at = |needle: &str| places.line(None, needle);
        if self.variants.len() < 2 {
            bail!("a study needs at least two [[variants]]: a baseline (the first) and something to compare");
        }
        for (i, v) in self.variants.iter().enumerate() {
            let at = |needle: &str| places.line(places.variants.get(i), needle);
            v.validate().map_err(|e| anyhow::anyhow!("{}{e}", at(&format!("\"{}\"", v.name))))?;
            v.check_server(v.engine.unwrap_or(self.target.engine), self.target.nodes)
                .map_err(|e| anyhow::anyhow!("{}{e:#}", at("server")))?;
            if self.variants[..i].iter().any(|w| w.name == v.name) {
                bail!(
                    "{}variant name '{}' is used twice; names must be unique",
                    at(&format!("\"{}\"", v.name)),
                    v.name
                );
            }
        }
        self.check_settings(places)?;
        for (a, b) in &self.compare {
            let at = at("compare");
            for name in [a, b] {
                if !self.variants.iter().any(|v| v.name == *name) {
                    bail!("{at}compare: no variant is called '{name}'");
                }
            }
            if a == b || [a, b].contains(&&self.variants[0].name) {
                bail!("{at}compare: '{a}' against '{b}': pair two different variants other than the baseline, which every variant is compared with already");
            }
        }
        Ok(())
    }
}

impl StudyFile {
    /// The study's and each variant's engine settings, by the engine's own list of names:
    /// the list of the binaries each variant runs, since the study's apply to every one.
    fn check_settings(&self, places: &Places) -> Result<()> {
        use crate::targets::settings::{check_names, check_text};
        for (i, v) in self.variants.iter().enumerate() {
            let engine = v.engine.unwrap_or(self.target.engine);
            // The study's settings are its engine's, for the variants on it.
            let none = BTreeMap::new();
            let study = if engine == self.target.engine { &self.target.settings } else { &none };
            for (entry, settings, what) in
                [(None, study, "[target] settings"), (places.variants.get(i), &v.settings, "settings")]
            {
                for (name, value) in settings {
                    check_text(engine, name, value)
                        .and_then(|_| check_names(engine, &v.server, [name.as_str()]))
                        .map_err(|e| anyhow::anyhow!("{}{what}: {e}", places.line(entry, name)))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
