//! Study reports: one data model, one exporter per format (html, md, csv, json). Exporters
//! only format; every number in them was computed by the study and the stats module.

mod answer;
mod charts;
pub mod cipher;
mod csv;
pub(crate) mod html;
mod json;
mod ladder;
pub(crate) mod markdown;
pub(crate) mod tables;
mod turn_starts;
pub use tables::noise;
pub(crate) use tables::number;
pub use turn_starts::TurnStartsReport;

pub(crate) use charts::PALETTE;

use crate::driver::LatencySummary;
use crate::host::HostInfo;
use crate::stats::{RatioEstimate, Summary, Verdict};
use crate::status::{Status, VariantStatus};
use crate::variants::VariantInfo;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub use crate::record::CanaryResult;

/// How a study measured one workload's variants in each block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Design {
    pub workload: String,
    /// The slice length when the variants took turns within one run per block.
    #[serde(default, with = "crate::sys::units::optional_duration_text")]
    pub slice: Option<std::time::Duration>,
    /// Why each variant ran alone in each block instead.
    pub alone_because: Option<String>,
    /// Variants that ran alone in each block while the others took turns, each with why
    /// (`name: reason`).
    #[serde(default)]
    pub variants_alone: Vec<String>,
    /// Why each variant took its turns from a run process of its own, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_processes_because: Option<String>,
    /// Variants that took turns though part of their work runs in the background, each
    /// with what does it (`name (a FUSE daemon)`): `--validate` checks their ratios. Empty
    /// when the variants ran alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<String>,
    /// Under a memory limit, what the runs read from: a disk model, or the host's disk and
    /// what that costs the precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// When the slices are long for the run: how few turns each variant gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub few_turns: Option<String>,
}

impl Design {
    /// One line for the report and the study's log.
    pub fn text(&self) -> String {
        let runs = match &self.own_processes_because {
            Some(why) => format!("each variant from a run process of its own ({why})"),
            None => "within one run per block".into(),
        };
        let mut line = self.how_measured(&runs);
        for note in [&self.few_turns, &self.disk].into_iter().flatten() {
            line = format!("{line}; {note}");
        }
        if self.background.is_empty() {
            return line;
        }
        format!(
            "{line}; {} work partly in the background, where an interleaved run may count some of their cost in \
             the others' slices: dbvs study --validate checks their ratios against each variant alone",
            self.background.join(", ")
        )
    }

    fn how_measured(&self, runs: &str) -> String {
        match (&self.slice, &self.alone_because) {
            (Some(slice), _) if self.variants_alone.is_empty() => format!(
                "{}: the variants took turns in {} slices, {runs}",
                self.workload,
                humantime::format_duration(*slice)
            ),
            (Some(slice), _) => format!(
                "{}: the variants took turns in {} slices, {runs}, but for {}",
                self.workload,
                humantime::format_duration(*slice),
                self.variants_alone.join("; ")
            ),
            (None, Some(why)) => format!("{}: each variant ran alone in each block, because {why}", self.workload),
            (None, None) => format!("{}: each variant ran alone in each block", self.workload),
        }
    }
}

/// One thing a study compares: a workload's measure (e.g. `tpcc query / TPM`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// The workload's label (e.g. `tpcc hammerora-query`).
    pub workload: String,
    /// What is measured, e.g. `TPM` or `q1 latency`.
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// An amount spent, not a speed (see [`crate::measure::Measure::cost`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost: bool,
}

impl Measure {
    /// A unique key: `workload / name`.
    pub fn key(&self) -> String {
        format!("{} / {}", self.workload, self.name)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StudyReport {
    /// See [`crate::record::SCHEMA_VERSION`].
    #[serde(default = "crate::record::schema_version")]
    pub schema_version: u32,
    pub study_id: i64,
    pub name: String,
    pub status: Status,
    pub cause: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    /// Why the study stopped adding blocks.
    pub stop_reason: String,
    /// The headline measure (the first workload's first), which the detailed tables and
    /// charts show, and its direction.
    pub metric: String,
    pub higher_is_better: bool,
    pub baseline: String,
    pub ci_target: f64,
    /// The variants with targets of their own (see [`Targets`]).
    #[serde(default)]
    pub ci_targets: BTreeMap<String, f64>,
    /// When a change was called (confidence, practical threshold).
    #[serde(default)]
    pub rules: crate::stats::Rules,
    pub blocks_completed: usize,
    pub seconds_per_block: f64,
    pub variants: Vec<VariantReport>,
    /// The headline measure's comparisons with the baseline.
    pub comparisons: Vec<Comparison>,
    /// The headline measure's comparisons of variants with their controls (the same stack
    /// without the encryption layer), where the control is not the baseline.
    #[serde(default)]
    pub controls: Vec<Comparison>,
    /// Every measure of every workload (the headline first): per variant means and
    /// comparisons, for the seed-style table of changes.
    #[serde(default)]
    pub measures: Vec<MeasureReport>,
    pub runs: Vec<RunRow>,
    pub canary: Vec<CanaryResult>,
    pub sut: Sut,
    /// How each workload's variants were measured (see [`Design`]).
    #[serde(default)]
    pub design: Vec<Design>,
    /// Whether the study was in the regime it asked for (see [`Regime`]).
    #[serde(default)]
    pub regime: Vec<Regime>,
    /// Per workload whose variants took turns, what their turns' starts cost them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_starts: Vec<TurnStartsReport>,
    /// The AES table the study measured before its blocks (`aes_table`), seed 000's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aes_table: Option<crate::cipher::table::AesTable>,
    /// An upgrade ladder's steps after the first, in order, each with what it changes from
    /// the step before (`layer: its value`); empty unless the study is a ladder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ladder: Vec<(String, Vec<String>)>,
}

/// A workload whose runs had a memory limit, so that its database would be larger than
/// memory: how many of its runs read anything from storage, and which did not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    pub workload: String,
    pub runs: usize,
    /// `block N variant` of each run that read nothing from storage: it ran in cache.
    pub in_cache: Vec<String>,
}

impl Regime {
    /// What the answer says when some runs missed the regime.
    pub fn warning(&self) -> Option<String> {
        let shown: Vec<&str> = self.in_cache.iter().take(6).map(String::as_str).collect();
        let more = self.in_cache.len().saturating_sub(shown.len());
        (!self.in_cache.is_empty()).then(|| {
            format!(
                "{}: larger than memory not reached in {} of {} runs, which read nothing from storage ({}{}): \
                 those ran in cache, so the verdicts mix in the in-cache regime",
                self.workload,
                self.in_cache.len(),
                self.runs,
                shown.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            )
        })
    }
}

/// How precise a study's intervals must be: every comparison's half-width at most `all`,
/// or, where one of its two variants is in `own`, the tighter of theirs.
pub struct Targets<'a> {
    pub all: f64,
    pub own: &'a BTreeMap<String, f64>,
}

impl Targets<'_> {
    /// The target of the comparison of `variant` with `against` (the baseline when `None`).
    pub fn of(&self, variant: &str, against: Option<&str>) -> f64 {
        let own = |n: &str| self.own.get(n).copied();
        [Some(variant), against].into_iter().flatten().filter_map(own).reduce(f64::min).unwrap_or(self.all)
    }

    /// In words, e.g. "+-1.0% (sqlcipher +-0.5%)".
    pub fn text(&self) -> String {
        let own: Vec<String> = self.own.iter().map(|(n, t)| format!("{n} +-{:.1}%", 100.0 * t)).collect();
        let all = format!("+-{:.1}%", 100.0 * self.all);
        if own.is_empty() {
            all
        } else {
            format!("{all} ({})", own.join(", "))
        }
    }
}

impl StudyReport {
    pub fn targets(&self) -> Targets<'_> {
        Targets { all: self.ci_target, own: &self.ci_targets }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VariantReport {
    pub info: VariantInfo,
    pub status: VariantStatus,
    pub reason: Option<String>,
    /// The metric over this variant's completed runs.
    pub summary: Option<Summary>,
    /// Per operation, the median over runs of each latency statistic.
    pub latency: BTreeMap<String, LatencySummary>,
    /// (seconds into the run, metric per minute within the interval), averaged over runs.
    pub series: Vec<(f64, f64)>,
    /// The machine during the headline workload's runs, averaged over them.
    #[serde(default)]
    pub telemetry: Option<VariantTelemetry>,
    /// The same for each of the study's other workloads (by label), in the study's order.
    #[serde(default)]
    pub other_workloads: Vec<(String, VariantTelemetry)>,
    /// What the variant's cgroup limits did per run, averaged over those runs.
    #[serde(default)]
    pub limits: Option<crate::sys::cgroup::Usage>,
    /// With several instances per run: each instance's headline, averaged over the runs.
    #[serde(default)]
    pub per_instance: Vec<f64>,
    /// The engine settings the variant asked for, as the engine read them back in its
    /// first completed run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings_in_force: BTreeMap<String, String>,
}

/// Telemetry window averages over a variant's runs (seeds 000 and 001's CPU and disk tables).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VariantTelemetry {
    pub runs: usize,
    pub window: crate::telemetry::Sample,
    pub power: crate::telemetry::PowerReport,
    pub server_cpu: String,
    /// The storage layers under the data, top first (an encrypted layer and its backing device).
    #[serde(default)]
    pub layers: Vec<crate::telemetry::devices::Layer>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MeasureReport {
    pub measure: Measure,
    /// (variant, summary over its completed runs)
    pub summaries: Vec<(String, Summary)>,
    pub comparisons: Vec<Comparison>,
    #[serde(default)]
    pub controls: Vec<Comparison>,
    /// Variant against variant, as the study file's `compare` asks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<Comparison>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    pub variant: String,
    /// What it is compared with: the baseline when absent, else the variant's control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    pub estimate: RatioEstimate,
    pub verdict: Verdict,
    /// Blocks the ratio leaves out because a side measured zero there (a stalled run's
    /// throughput), each with the variant that did: a log ratio cannot hold a zero,
    /// and hiding one would flatter the side that stalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<(usize, String)>,
    /// Of a measure that is an amount spent: its verdict reads "higher"/"lower".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost: bool,
    /// The change stated as a share of the larger side, when the study asks (`also_as`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_larger: Option<crate::stats::ShareOfLarger>,
}

impl Comparison {
    /// The verdict in words, with the blocks it leaves out.
    pub fn verdict_text(&self) -> String {
        format!("{}{}", self.verdict.text(self.cost), self.left_out_note())
    }

    /// The verdict's one word ("slower", or "higher" for a cost), with the blocks it leaves out.
    pub fn word(&self) -> String {
        format!("{}{}", self.verdict.word_for(self.cost), self.left_out_note())
    }

    /// " (block 5 left out: tde measured 0)", or nothing.
    pub fn left_out_note(&self) -> String {
        if self.left_out.is_empty() {
            return String::new();
        }
        let each: Vec<String> = self.left_out.iter().map(|(b, v)| format!("block {b}: {v} measured 0")).collect();
        format!(" (left out, {})", each.join("; "))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRow {
    pub run_id: i64,
    pub block: usize,
    pub variant: String,
    /// The workload's label.
    #[serde(default)]
    pub workload: String,
    pub status: Status,
    pub cause: Option<String>,
    pub metric: Option<f64>,
    pub orders: Option<u64>,
    pub rollback_rate: Option<f64>,
    pub p95_ms: Option<f64>,
    pub cpu_pct: Option<f64>,
    /// The machine's CPU busy % over the run's window (shared with the other variants in
    /// an interleaved run).
    #[serde(default)]
    pub system_cpu_pct: Option<f64>,
}

/// The system under test.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sut {
    pub host: HostInfo,
    pub engine: crate::targets::Engine,
    pub engine_versions: BTreeMap<String, String>,
    pub dbvs_version: String,
    pub workload: serde_json::Value,
    pub study_file: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Html,
    Md,
    Csv,
    Json,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Html, Format::Md, Format::Csv, Format::Json];

    pub fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Md => "md",
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }

    pub fn render(self, r: &StudyReport) -> Result<String> {
        match self {
            Format::Html => html::render(r),
            Format::Md => Ok(markdown::render(r)),
            Format::Csv => Ok(csv::render(r)),
            Format::Json => json::render(r),
        }
    }
}

/// Writes every format into `dir` as `report.<ext>`.
pub fn write_all(r: &StudyReport, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for f in Format::ALL {
        std::fs::write(dir.join(format!("report.{}", f.extension())), f.render(r)?)?;
    }
    Ok(())
}

/// Writes the study's runs' samples over time beside its report: `intervals.csv` (the
/// driver's) and `telemetry.csv` (the machine's), from the runs the store holds.
pub fn write_samples(runs: &[crate::store::RunRow], dir: &Path) -> Result<()> {
    let records: Vec<(&crate::store::RunRow, crate::record::RunRecord)> =
        runs.iter().filter_map(|r| Some((r, serde_json::from_str(r.record_json.as_deref()?).ok()?))).collect();
    let placed: Vec<csv::Placed> = records
        .iter()
        .map(|(r, record)| csv::Placed {
            run_id: r.id,
            block: r.block,
            variant: r.variant.as_deref().unwrap_or(""),
            record,
        })
        .collect();
    std::fs::write(dir.join("intervals.csv"), csv::intervals(&placed))?;
    std::fs::write(dir.join("telemetry.csv"), csv::telemetry(&placed))?;
    Ok(())
}

/// "slower by 3.1% [...]" or the skip reason, for tables.
pub fn verdict_text(r: &StudyReport, variant: &str) -> String {
    r.comparisons.iter().find(|c| c.variant == variant).map(Comparison::verdict_text).unwrap_or_else(|| {
        if variant == r.baseline {
            "baseline".into()
        } else {
            "not compared".into()
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_verdict_names_the_blocks_it_leaves_out() {
        let mut c = super::sample::report().comparisons.remove(0);
        let word = c.word();
        assert_eq!(c.left_out_note(), "");
        c.left_out = vec![(5, "tde".into()), (7, "plain".into())];
        assert_eq!(c.word(), format!("{word} (left out, block 5: tde measured 0; block 7: plain measured 0)"));
        assert!(c.verdict_text().ends_with("(left out, block 5: tde measured 0; block 7: plain measured 0)"));
    }
}

#[cfg(test)]
pub(crate) mod sample {
    //! A small report for exporter tests.
    use super::*;
    use crate::stats::{paired_ratio, summarize, verdict};

    pub fn report() -> StudyReport {
        let base = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0];
        let enc = [90.0, 91.0, 88.0, 92.0, 89.0, 90.5];
        let est = paired_ratio(&base, &enc, 1, 0.95, 1);
        let near = paired_ratio(&enc, &enc.map(|x| x * 0.99), 1, 0.95, 1);
        let control = Comparison {
            variant: "sqlcipher".into(),
            against: Some("plain on ext4 image".into()),
            verdict: verdict(&near, true, &Default::default()),
            estimate: near,
            left_out: vec![],
            cost: false,
            share_of_larger: None,
        };
        let info = |n: &str| VariantInfo {
            name: n.into(),
            layer: "none".into(),
            cipher: "none".into(),
            key_bits: None,
            aesni: true,
            settings: BTreeMap::new(),
            stack: vec![("storage".into(), "host directory".into())],
            control: None,
            differs_from_baseline: vec![],
        };
        let lat = BTreeMap::from([(
            "purchase".to_string(),
            LatencySummary {
                count: 10,
                avg_ms: 1.0,
                stdev_ms: 0.5,
                p50_ms: 0.9,
                p90_ms: 1.5,
                p95_ms: 2.0,
                p99_ms: 3.0,
                max_ms: 4.0,
            },
        )]);
        let v = |n: &str, xs: &[f64]| VariantReport {
            info: info(n),
            status: VariantStatus::Ran,
            reason: None,
            summary: Some(summarize(xs)),
            latency: lat.clone(),
            series: xs.iter().take(2).enumerate().map(|(i, x)| (10.0 * (i + 1) as f64, *x)).collect(),
            telemetry: None,
            other_workloads: vec![],
            limits: None,
            per_instance: vec![],
            settings_in_force: BTreeMap::new(),
        };
        let mut skipped = v("fscrypt", &[1.0]);
        skipped.status = VariantStatus::Skipped;
        skipped.reason = Some("mkfs.ext4 not found: install it with 'apt-get install e2fsprogs'".into());
        skipped.summary = None;
        StudyReport {
            schema_version: crate::record::SCHEMA_VERSION,
            study_id: 1,
            name: "sample".into(),
            status: Status::Completed,
            cause: None,
            started_at: "2026-11-21T10:00:00Z".into(),
            finished_at: "2026-11-21T10:05:00Z".into(),
            stop_reason: "precision reached".into(),
            metric: "opm".into(),
            higher_is_better: true,
            baseline: "plain".into(),
            ci_target: 0.01,
            ci_targets: BTreeMap::new(),
            rules: Default::default(),
            blocks_completed: 6,
            seconds_per_block: 20.0,
            variants: vec![v("plain", &base), v("sqlcipher", &enc), skipped],
            comparisons: vec![Comparison {
                variant: "sqlcipher".into(),
                against: None,
                verdict: verdict(&est, true, &Default::default()),
                estimate: est.clone(),
                left_out: vec![],
                cost: false,
                share_of_larger: None,
            }],
            controls: vec![control.clone()],
            measures: vec![MeasureReport {
                measure: Measure {
                    workload: "ds2".into(),
                    name: "OPM".into(),
                    unit: "orders/min".into(),
                    higher_is_better: true,
                    cost: false,
                },
                summaries: vec![("plain".into(), summarize(&base)), ("sqlcipher".into(), summarize(&enc))],
                comparisons: vec![Comparison {
                    variant: "sqlcipher".into(),
                    against: None,
                    verdict: verdict(&est, true, &Default::default()),
                    estimate: est,
                    left_out: vec![],
                    cost: false,
                    share_of_larger: crate::stats::share_of_larger(&base, &enc, 0.95),
                }],
                controls: vec![control],
                pairs: vec![],
            }],
            runs: (0..6)
                .flat_map(|b| {
                    [("plain", base[b]), ("sqlcipher", enc[b])].map(|(n, x)| RunRow {
                        run_id: (2 * b) as i64 + 1,
                        block: b,
                        variant: n.into(),
                        workload: "ds2".into(),
                        status: Status::Completed,
                        cause: None,
                        metric: Some(x),
                        orders: Some(1000),
                        rollback_rate: Some(0.02),
                        p95_ms: Some(2.0),
                        cpu_pct: Some(50.0),
                        system_cpu_pct: Some(70.0),
                    })
                })
                .collect(),
            canary: vec![],
            sut: Sut {
                host: crate::host::collect(),
                engine: crate::targets::Engine::Sqlite,
                engine_versions: BTreeMap::from([("sqlite".into(), "3.x".into())]),
                dbvs_version: "0.1.0".into(),
                workload: serde_json::json!({"name": "ds2"}),
                study_file: "name = \"sample\"".into(),
            },
            design: vec![Design {
                workload: "ds2".into(),
                slice: Some(std::time::Duration::from_millis(10)),
                alone_because: None,
                variants_alone: vec![],
                own_processes_because: None,
                background: vec![],
                disk: None,
                few_turns: None,
            }],
            regime: vec![Regime { workload: "ds2".into(), runs: 6, in_cache: vec!["block 2 plain".into()] }],
            turn_starts: vec![TurnStartsReport::new(
                "ds2".into(),
                ["plain", "sqlcipher"]
                    .map(|v| (v.into(), crate::record::TurnStarts { turns: 500, excess_s: 0.01, at_work_s: 4.0 }))
                    .to_vec(),
            )],
            aes_table: Some(crate::cipher::table::AesTable {
                openssl: "OpenSSL 3.0.17".into(),
                threads: 2,
                runs: 1,
                series: [true, false]
                    .map(|aesni| crate::cipher::Series {
                        cipher: "aes-256-xts".into(),
                        aesni,
                        threads: 2,
                        points: vec![crate::cipher::Point {
                            label: "1 MB".into(),
                            bytes: 1 << 20,
                            encrypt_mbs: if aesni { 3000.0 } else { 1000.0 },
                            decrypt_mbs: if aesni { 3000.0 } else { 1000.0 },
                            mean_mbs: if aesni { 3000.0 } else { 1000.0 },
                            runs: vec![],
                        }],
                    })
                    .to_vec(),
                skipped_sizes: vec![],
            }),
            ladder: vec![],
        }
    }
}
