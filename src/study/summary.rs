//! From per-block values to the study report: paired ratios on complete blocks, verdicts,
//! per-variant summaries, latency and time series.

use super::file::StudyFile;
use super::measures::Measure;
use super::{Active, CanaryResult};
use crate::driver::{LatencySummary, RunStatus};
use crate::record::RunRecord;
use crate::report::{Comparison, MeasureReport, RunRow, StudyReport, Sut, VariantReport};
use crate::stats::{median, paired_ratio, summarize, verdict, RatioEstimate, Rules};
use crate::status::{Status, VariantStatus};
use crate::sys::cgroup::Usage;
use crate::variants::VariantConfig;
use std::collections::BTreeMap;

/// One measure's completed values for `a`, per block.
fn values<'a>(a: &'a Active, key: &str) -> &'a [Option<f64>] {
    a.values.get(key).map_or(&[], Vec::as_slice)
}

/// The blocks in which both the baseline and `a` completed, as paired values (a ratio needs
/// both positive: a block where a variant read nothing from storage cannot be compared).
fn pairs(base: &Active, a: &Active, key: &str) -> (Vec<f64>, Vec<f64>) {
    values(base, key)
        .iter()
        .zip(values(a, key))
        .filter_map(|(b, v)| Some((((*b)?), (*v)?)))
        .filter(|(b, v)| *b > 0.0 && *v > 0.0)
        .unzip()
}

/// The blocks that [`pairs`] leaves out because a side measured zero there.
fn left_out(base: &Active, a: &Active, key: &str) -> Vec<(usize, String)> {
    zeros([(&base.cfg.name, values(base, key)), (&a.cfg.name, values(a, key))])
}

/// The blocks (numbered from 1) where both sides have a value and one measured zero or
/// less, each with the side that did.
fn zeros(sides: [(&str, &[Option<f64>]); 2]) -> Vec<(usize, String)> {
    let [(base, b), (variant, v)] = sides;
    let zero = |x: &Option<f64>| x.is_some_and(|x| x <= 0.0);
    b.iter()
        .zip(v)
        .enumerate()
        .filter(|(_, (x, y))| x.is_some() && y.is_some())
        .flat_map(|(i, (x, y))| {
            [(x, base), (y, variant)].into_iter().filter(|(x, _)| zero(x)).map(move |(_, n)| (i + 1, n.to_string()))
        })
        .collect()
}

/// One comparison of one measure, as one of the `tested_among` measures of its family.
fn estimate(
    base: &Active,
    a: &Active,
    key: &str,
    seed: u64,
    rules: &Rules,
    tested_among: usize,
) -> Option<RatioEstimate> {
    let (b, v) = pairs(base, a, key);
    (b.len() >= 2).then(|| paired_ratio(&b, &v, seed, rules.confidence, tested_among))
}

/// The size of a comparison's family for `m`: the measures of m's workload that it can
/// compare (two paired blocks or more), tested together (see [`crate::stats::family`]). A
/// workload's measures answer one question, what the change costs that work; a study of
/// several workloads asks one per workload.
fn family_size(active: &[Active], measures: &[Measure], (i, c): (usize, Against), m: &Measure) -> usize {
    let (reference, a) = (&active[c.other().unwrap_or(0)], &active[i]);
    measures.iter().filter(|x| x.workload == m.workload && pairs(reference, a, &x.key()).0.len() >= 2).count()
}

/// What a variant is compared with.
#[derive(Clone, Copy, PartialEq)]
enum Against {
    Baseline,
    /// Its control (the same stack without the encryption), another variant.
    Control(usize),
    /// Another variant, as the study file's `compare` asks.
    Pair(usize),
}

impl Against {
    fn other(self) -> Option<usize> {
        match self {
            Against::Baseline => None,
            Against::Control(c) | Against::Pair(c) => Some(c),
        }
    }
}

/// Every comparison a study makes: each variant with the baseline, each with its control
/// where that is another variant, and the pairs the study file names.
fn pairings(active: &[Active], pairs: &[(String, String)]) -> Vec<(usize, Against)> {
    let index = |name: &str| active.iter().position(|a| a.cfg.name == name);
    let with_baseline = (1..active.len()).map(|i| (i, Against::Baseline));
    let with_control = (1..active.len()).filter_map(|i| {
        let c = index(active[i].cfg.control.as_deref()?)?;
        (c != 0 && c != i).then_some((i, Against::Control(c)))
    });
    let named = pairs.iter().filter_map(|(a, b)| Some((index(a)?, Against::Pair(index(b)?))));
    let mut all: Vec<(usize, Against)> = vec![];
    // A pair named twice is one comparison.
    for p in with_baseline.chain(with_control).chain(named) {
        if !all.contains(&p) {
            all.push(p);
        }
    }
    all
}

/// A measure the runs do not give (power without a meter): the baseline has values of
/// its workload's first measure, none of this one.
fn silent(active: &[Active], measures: &[Measure], m: &Measure) -> bool {
    let first = measures.iter().find(|x| x.workload == m.workload).unwrap_or(m);
    let any = |key: &str| values(&active[0], key).iter().any(Option::is_some);
    any(&first.key()) && !any(&m.key())
}

/// The measures the runs give, all but the [`silent`] ones.
fn given(active: &[Active], measures: &[Measure]) -> Vec<Measure> {
    measures.iter().filter(|m| !silent(active, measures, m)).cloned().collect()
}

/// One running comparison's interval so far.
#[derive(Clone)]
pub(super) struct Width {
    /// The comparison, as progress lines and metrics name it.
    pub name: String,
    /// Relative CI half-width (infinite before two blocks).
    pub half_width: f64,
    /// The half-width the study stops at.
    pub target: f64,
    /// The variant and what it is compared with (indices into the study's variants).
    pub sides: (usize, usize),
    /// The per-block noise of the log ratio its interval reflects, once known.
    pub noise_log: Option<f64>,
    /// A cost measure's (CPU or bytes per unit), not the workload's own.
    pub cost: bool,
}

impl Width {
    /// A cost's ratio that `more` blocks after `done` could not bring to its target: a
    /// half-width shrinks as one over the square root of the blocks, so the target needs
    /// `done * (half-width / target)^2` of them. A server's storage KB written per unit,
    /// whose write-back timing makes it too noisy for +-0.5% in any budget, is one.
    pub fn out_of_reach(&self, done: usize, more: usize) -> bool {
        self.cost && self.half_width.is_finite() && self.blocks_needed(done) > (done + more) as f64
    }

    /// The blocks its target needs, at the noise of the `done` so far.
    pub fn blocks_needed(&self, done: usize) -> f64 {
        done as f64 * (self.half_width / self.target).powi(2)
    }
}

/// Every comparison still running, with its interval so far.
pub(super) fn half_widths(active: &[Active], measures: &[Measure], study: &StudyFile) -> Vec<Width> {
    let many = measures.len() > 1;
    let given = &given(active, measures);
    pairings(active, &study.compare)
        .into_iter()
        .filter(|&(i, c)| active[i].failed.is_none() && c.other().is_none_or(|c| active[c].failed.is_none()))
        .flat_map(|(i, c)| {
            let a = &active[i];
            let other = c.other().unwrap_or(0);
            let reference = &active[other];
            let target = study.targets().of(&a.cfg.name, Some(&reference.cfg.name));
            given.iter().map(move |m| {
                let mut name = a.cfg.name.clone();
                if c != Against::Baseline {
                    name = format!("{name} vs {}", reference.cfg.name);
                }
                if many {
                    name = format!("{name} {}", m.key());
                }
                let tested_among = family_size(active, given, (i, c), m);
                let e = estimate(reference, a, &m.key(), study.seed, &study.verdict, tested_among);
                Width {
                    name,
                    half_width: e.as_ref().map_or(f64::INFINITY, RatioEstimate::relative_half_width),
                    target,
                    sides: (i, other),
                    noise_log: e.as_ref().map(RatioEstimate::noise_log),
                    cost: m.cost,
                }
            })
        })
        .collect()
}

/// Every measure's per-variant summaries and comparisons, each comparison's measures of a
/// workload tested as one family.
fn measure_reports(
    active: &[Active],
    measures: &[Measure],
    pairs: &[(String, String)],
    also_as: Option<super::file::AlsoAs>,
    seed: u64,
    rules: &Rules,
) -> Vec<MeasureReport> {
    let pairings = pairings(active, pairs);
    let mut estimates = family_estimates(active, measures, &pairings, seed, rules);
    measures
        .iter()
        .zip(estimates.iter_mut())
        .map(|(m, estimates)| {
            let key = m.key();
            let summaries = active
                .iter()
                .filter_map(|a| {
                    let done: Vec<f64> = values(a, &key).iter().flatten().copied().collect();
                    (!done.is_empty()).then(|| (a.cfg.name.clone(), summarize(&done)))
                })
                .collect();
            let mut report =
                MeasureReport { measure: m.clone(), summaries, comparisons: vec![], controls: vec![], pairs: vec![] };
            for (&(i, c), e) in pairings.iter().zip(estimates.iter_mut()) {
                let (a, reference) = (&active[i], &active[c.other().unwrap_or(0)]);
                let Some(e) = e.take() else { continue };
                let comparison = Comparison {
                    variant: a.cfg.name.clone(),
                    against: c.other().map(|_| reference.cfg.name.clone()),
                    verdict: verdict(&e, m.higher_is_better, rules),
                    estimate: e,
                    left_out: left_out(reference, a, &key),
                    cost: m.cost,
                    share_of_larger: also_as.and_then(|_| {
                        let (b, v) = self::pairs(reference, a, &key);
                        crate::stats::share_of_larger(&b, &v, rules.confidence)
                    }),
                };
                match c {
                    Against::Baseline => report.comparisons.push(comparison),
                    Against::Control(_) => report.controls.push(comparison),
                    Against::Pair(_) => report.pairs.push(comparison),
                }
            }
            report
        })
        .collect()
}

/// Every measure's estimate for every pairing (by measure, then pairing), each family (a
/// pairing and a workload's measures) tested together.
fn family_estimates(
    active: &[Active],
    measures: &[Measure],
    pairings: &[(usize, Against)],
    seed: u64,
    rules: &Rules,
) -> Vec<Vec<Option<RatioEstimate>>> {
    let mut estimates: Vec<Vec<Option<RatioEstimate>>> = measures
        .iter()
        .map(|m| {
            let key = m.key();
            pairings
                .iter()
                .map(|&(i, c)| {
                    let tested_among = family_size(active, measures, (i, c), m);
                    estimate(&active[c.other().unwrap_or(0)], &active[i], &key, seed, rules, tested_among)
                })
                .collect()
        })
        .collect();
    let workloads: std::collections::BTreeSet<&str> = measures.iter().map(|m| m.workload.as_str()).collect();
    for p in 0..pairings.len() {
        for &workload in &workloads {
            let mut members: Vec<&mut RatioEstimate> = measures
                .iter()
                .zip(estimates.iter_mut())
                .filter(|(m, _)| m.workload == workload)
                .filter_map(|(_, row)| row[p].as_mut())
                .collect();
            crate::stats::test_together(&mut members);
        }
    }
    estimates
}

pub(super) fn progress_line(widths: &[Width]) -> String {
    let parts: Vec<String> = widths
        .iter()
        .map(|w| match w.half_width.is_finite() {
            true => format!("{} +-{:.1}%", w.name, 100.0 * w.half_width),
            false => format!("{} (needs 2 blocks)", w.name),
        })
        .collect();
    format!("CI half-widths: {}", parts.join(", "))
}

pub(super) struct Inputs<'a> {
    pub id: i64,
    pub study: &'a StudyFile,
    /// The study file as written.
    pub text: &'a str,
    pub measures: &'a [Measure],
    pub active: &'a [Active],
    pub skipped: &'a [(VariantConfig, String)],
    pub rows: Vec<RunRow>,
    pub canaries: Vec<CanaryResult>,
    pub status: Status,
    pub cause: Option<String>,
    pub stop_reason: String,
    pub started_at: String,
    pub block_times: &'a [f64],
    pub aes_table: Option<crate::cipher::table::AesTable>,
}

/// The runs' telemetry window averages, averaged; power figures over the runs that have them.
fn telemetry(records: &[&RunRecord]) -> Option<crate::report::VariantTelemetry> {
    use crate::telemetry::{average, Telemetry};
    let runs: Vec<&Telemetry> = records.iter().filter_map(|r| r.telemetry.as_ref()).collect();
    let windows: Vec<&crate::telemetry::Sample> = runs.iter().filter_map(|t| t.window.as_ref()).collect();
    let window = average(&windows)?;
    let mean = |f: fn(&Telemetry) -> Option<f64>| {
        let v: Vec<f64> = runs.iter().copied().filter_map(f).collect();
        (!v.is_empty()).then(|| crate::stats::mean(&v))
    };
    let first = runs[0];
    let power = crate::telemetry::PowerReport {
        source: first.power.source.clone(),
        idle_w: mean(|t| t.power.idle_w),
        window_w: mean(|t| t.power.window_w),
        per_watt: mean(|t| t.power.per_watt),
        per_watt_unit: first.power.per_watt_unit.clone(),
    };
    Some(crate::report::VariantTelemetry {
        runs: windows.len(),
        window,
        power,
        server_cpu: first.server_cpu.clone(),
        layers: first.layers.clone(),
    })
}

/// Each instance's headline averaged over multi-instance runs (empty for single-instance runs).
fn per_instance(records: &[&RunRecord]) -> Vec<f64> {
    let mut sums: Vec<(f64, usize)> = Vec::new();
    for r in records {
        for (i, row) in r.instances.iter().flatten().enumerate() {
            if sums.len() <= i {
                sums.resize(i + 1, (0.0, 0));
            }
            if let Some(v) = row.headline.value {
                sums[i].0 += v;
                sums[i].1 += 1;
            }
        }
    }
    sums.iter().map(|(s, n)| s / (*n).max(1) as f64).collect()
}

/// The runs' cgroup evidence, averaged (the core set is the last run's).
fn limits(records: &[&RunRecord]) -> Option<Usage> {
    let runs: Vec<&Usage> = records.iter().filter_map(|r| r.limits.as_ref()).map(|l| &l.usage).collect();
    let n = runs.len() as f64;
    let avg = |f: fn(&Usage) -> f64| runs.iter().map(|u| f(u)).sum::<f64>() / n;
    Some(Usage {
        cpu_periods: avg(|u| u.cpu_periods as f64).round() as u64,
        cpu_throttled_periods: avg(|u| u.cpu_throttled_periods as f64).round() as u64,
        cpu_throttled_s: avg(|u| u.cpu_throttled_s),
        memory_peak_mb: avg(|u| u.memory_peak_mb),
        memory_limit_hits: avg(|u| u.memory_limit_hits as f64).round() as u64,
        io_read_mb: avg(|u| u.io_read_mb),
        io_write_mb: avg(|u| u.io_write_mb),
        cpus_effective: runs.last()?.cpus_effective.clone(),
    })
}

/// Median over runs of each latency statistic, per operation.
fn latency(records: &[&RunRecord]) -> BTreeMap<String, LatencySummary> {
    let mut out = BTreeMap::new();
    let Some(first) = records.first() else { return out };
    for (op, _) in &first.latency {
        let of_op: Vec<&LatencySummary> =
            records.iter().filter_map(|r| r.latency.iter().find(|(n, _)| n == op).map(|(_, l)| l)).collect();
        let stat = |f: fn(&LatencySummary) -> f64| median(&of_op.iter().map(|l| f(l)).collect::<Vec<_>>());
        out.insert(
            op.clone(),
            LatencySummary {
                count: stat(|l| l.count as f64) as u64,
                avg_ms: stat(|l| l.avg_ms),
                stdev_ms: stat(|l| l.stdev_ms),
                p50_ms: stat(|l| l.p50_ms),
                p90_ms: stat(|l| l.p90_ms),
                p95_ms: stat(|l| l.p95_ms),
                p99_ms: stat(|l| l.p99_ms),
                max_ms: stat(|l| l.max_ms),
            },
        );
    }
    out
}

/// For each workload with a memory limit, the runs that read nothing from storage: the study
/// asked for a database larger than memory, and those ran in cache.
fn regimes(study: &StudyFile, active: &[Active]) -> Vec<crate::report::Regime> {
    let limited = study.workloads.iter().filter(|w| w.memory.is_some());
    limited
        .map(|w| {
            let key = format!("{} / {}", w.label(), crate::run::STORAGE_READ_PER_UNIT);
            let (runs, in_cache) = read_nothing(active.iter().map(|a| (a.cfg.name.as_str(), values(a, &key))));
            crate::report::Regime { workload: w.label(), runs, in_cache }
        })
        .collect()
}

/// For each workload whose variants took turns, what their turns' starts cost each, over
/// its completed runs.
fn turn_starts(study: &StudyFile, active: &[Active]) -> Vec<crate::report::TurnStartsReport> {
    let of = |a: &Active, workload: &str| {
        let runs = a.records.iter().filter(|(w, r)| w == workload && r.status == RunStatus::Completed);
        runs.filter_map(|(_, r)| r.turn_starts).reduce(|mut all, t| {
            all.add(&t);
            all
        })
    };
    study
        .workloads
        .iter()
        .map(|w| w.label())
        .map(|workload| {
            let variants = active.iter().filter_map(|a| Some((a.cfg.name.clone(), of(a, &workload)?))).collect();
            crate::report::TurnStartsReport::new(workload, variants)
        })
        .filter(|t| !t.variants.is_empty())
        .collect()
}

/// How many runs measured a value, and `block N variant` of each whose value was zero.
fn read_nothing<'a>(variants: impl Iterator<Item = (&'a str, &'a [Option<f64>])>) -> (usize, Vec<String>) {
    let mut runs = 0;
    let mut none = Vec::new();
    for (name, per_block) in variants {
        for (block, kb) in per_block.iter().enumerate().filter_map(|(b, v)| Some((b, (*v)?))) {
            runs += 1;
            if kb <= 0.0 {
                none.push(format!("block {} {name}", block + 1));
            }
        }
    }
    (runs, none)
}

/// Per-interval rate averaged over runs, by interval position.
fn series(records: &[&RunRecord]) -> Vec<(f64, f64)> {
    let len = records.iter().map(|r| r.intervals.len()).min().unwrap_or(0);
    (0..len)
        .map(|i| {
            let rates: Vec<f64> = records.iter().map(|r| r.intervals[i].interval_per_min).collect();
            (records[0].intervals[i].et_s, crate::stats::mean(&rates))
        })
        .collect()
}

pub(super) fn build(i: Inputs) -> StudyReport {
    let base = &i.active[0];
    let given = given(i.active, i.measures);
    let measures = measure_reports(i.active, &given, &i.study.compare, i.study.also_as, i.study.seed, &i.study.verdict);
    let headline = &measures[0];
    let key = headline.measure.key();
    let others: Vec<String> =
        i.study.workloads.iter().map(|w| w.label()).filter(|l| *l != headline.measure.workload).collect();
    let mut variants: Vec<VariantReport> = i
        .active
        .iter()
        .map(|a| {
            let completed_of = |workload: &str| -> Vec<&RunRecord> {
                a.records
                    .iter()
                    .filter(|(w, r)| w == workload && r.status == RunStatus::Completed)
                    .map(|(_, r)| r)
                    .collect()
            };
            let completed = completed_of(&headline.measure.workload);
            VariantReport {
                info: a.cfg.info(&base.cfg),
                status: if a.failed.is_some() { VariantStatus::Failed } else { VariantStatus::Ran },
                reason: a.failed.clone(),
                summary: headline.summaries.iter().find(|(n, _)| *n == a.cfg.name).map(|(_, s)| s.clone()),
                latency: latency(&completed),
                series: series(&completed),
                telemetry: telemetry(&completed),
                other_workloads: others
                    .iter()
                    .filter_map(|l| telemetry(&completed_of(l)).map(|t| (l.clone(), t)))
                    .collect(),
                limits: limits(&completed),
                per_instance: per_instance(&completed),
                settings_in_force: completed.first().map(|r| r.settings.clone()).unwrap_or_default(),
            }
        })
        .collect();
    variants.extend(i.skipped.iter().map(|(cfg, why)| VariantReport {
        info: cfg.info(&base.cfg),
        status: VariantStatus::Skipped,
        reason: Some(why.clone()),
        summary: None,
        latency: BTreeMap::new(),
        series: vec![],
        telemetry: None,
        other_workloads: vec![],
        limits: None,
        per_instance: vec![],
        settings_in_force: BTreeMap::new(),
    }));
    let first = i.active.iter().flat_map(|a| a.records.first()).next();
    let env = first.and_then(|(_, r)| r.env.clone()).unwrap_or_else(|| crate::host::Env::new(Default::default()));
    StudyReport {
        schema_version: crate::record::SCHEMA_VERSION,
        study_id: i.id,
        name: i.study.name.clone(),
        status: i.status,
        cause: i.cause,
        started_at: i.started_at,
        finished_at: super::now(),
        stop_reason: i.stop_reason,
        metric: if i.measures.len() > 1 { key.clone() } else { headline.measure.name.clone() },
        higher_is_better: headline.measure.higher_is_better,
        baseline: base.cfg.name.clone(),
        ci_target: i.study.ci_target(),
        ci_targets: i.study.ci_targets.clone(),
        rules: i.study.verdict,
        blocks_completed: values(base, &key).iter().filter(|v| v.is_some()).count(),
        seconds_per_block: crate::stats::mean(i.block_times).max(0.0),
        variants,
        comparisons: headline.comparisons.clone(),
        controls: headline.controls.clone(),
        measures,
        runs: i.rows,
        canary: i.canaries,
        sut: Sut {
            host: env.host,
            engine: i.study.target.engine,
            engine_versions: env.engine_versions,
            dbvs_version: crate::host::VERSION.into(),
            workload: serde_json::Value::Array(i.study.workloads.iter().map(workload_params).collect()),
            study_file: i.text.into(),
        },
        design: i.study.workloads.iter().map(|w| i.study.design(w)).collect(),
        regime: regimes(i.study, i.active),
        turn_starts: turn_starts(i.study, i.active),
        aes_table: i.aes_table,
        ladder: ladder(i.study),
    }
}

/// A ladder's steps with what each changes (see `study::ladder`).
fn ladder(study: &StudyFile) -> Vec<(String, Vec<String>)> {
    let step = |name: &String| study.variants.iter().find(|v| v.name == *name);
    super::ladder::changes(&study.steps.iter().filter_map(step).collect::<Vec<_>>())
}

/// The workload as configured, under its label.
fn workload_params(w: &super::file::WorkloadConfig) -> serde_json::Value {
    let mut v = serde_json::to_value(w).unwrap_or_default();
    v["label"] = w.label().into();
    v
}

#[cfg(test)]
mod tests {
    use super::super::{Active, Prepared};
    use super::{family_estimates, pairings, read_nothing, zeros, Against};
    use crate::report::Measure;
    use crate::stats::Rules;

    fn measure(workload: &str, name: &str) -> Measure {
        Measure { workload: workload.into(), name: name.into(), unit: "u".into(), higher_is_better: true, cost: false }
    }

    /// A variant whose eight blocks of each measure are `value(block)`.
    fn variant(name: &str, measures: &[Measure], value: impl Fn(&Measure, usize) -> f64) -> Active {
        let cfg = toml::from_str(&format!("name = '{name}'")).unwrap();
        let mut a = Active::new(cfg, Prepared::not_set_up());
        for m in measures {
            a.values.insert(m.key(), (0..8).map(|b| Some(value(m, b))).collect());
        }
        a
    }

    /// Each pairing's measures of one workload are one family: "x" 2% slower on tpcb's TPS in
    /// every block (the smallest p eight blocks give, 2 / 2^8) and unchanged give or take 1%
    /// on its CPU is tested among two, its p doubled; ds2's one measure alone; the pair
    /// x-y (named twice, compared once) is a family of its own.
    #[test]
    fn a_pairings_measures_of_one_workload_are_tested_as_one_family() {
        let measures = [measure("tpcb", "TPS"), measure("tpcb", "CPU"), measure("ds2", "OPM")];
        let wobble = |b: usize| if b.is_multiple_of(2) { 101.0 } else { 99.0 + 0.1 * b as f64 };
        let active = [
            variant("base", &measures, |_, _| 100.0),
            variant("x", &measures, |m, b| if m.name == "TPS" { 98.0 - 0.01 * b as f64 } else { wobble(b) }),
            variant("y", &measures, |m, b| if m.name == "CPU" { 95.0 } else { 100.0 + 0.01 * b as f64 }),
        ];
        let pairs = [("x".to_string(), "y".to_string()), ("x".to_string(), "y".to_string())];
        let pairings = pairings(&active, &pairs);
        assert_eq!(pairings.len(), 3, "x and y with the baseline, and x with y once");
        let at = |p: (usize, Against)| pairings.iter().position(|&q| q == p).unwrap();
        let (x, xy) = (at((1, Against::Baseline)), at((1, Against::Pair(2))));
        let estimates = family_estimates(&active, &measures, &pairings, 1, &Rules::default());
        let of = |m: usize, p: usize| estimates[m][p].as_ref().unwrap();
        let tps = of(0, x);
        assert_eq!(tps.tested_among, 2);
        assert!((tps.p_value - 2.0 / 256.0).abs() < 1e-12, "{tps:?}");
        assert_eq!(tps.p_adjusted, Some(2.0 * tps.p_value), "the smaller of two, doubled");
        assert!(of(1, x).p_adjusted.unwrap() >= of(1, x).p_value, "the larger never falls");
        let opm = of(2, x);
        assert_eq!((opm.tested_among, opm.p_adjusted), (1, None), "ds2's OPM is tested alone");
        // x against y: TPS 2% lower and CPU far higher than y's 95 in every block: both p
        // are the smallest, and the family doubles the first.
        let (tps_xy, cpu_xy) = (of(0, xy), of(1, xy));
        assert_eq!((tps_xy.tested_among, cpu_xy.tested_among), (2, 2));
        assert_eq!(tps_xy.p_adjusted, Some(2.0 * tps_xy.p_value), "{tps_xy:?} {cpu_xy:?}");
    }

    #[test]
    fn runs_that_read_nothing_under_a_memory_limit_are_named() {
        let plain = [Some(120.0), Some(0.0), None];
        let tde = [Some(0.0), Some(95.0), Some(101.0)];
        let (runs, none) = read_nothing([("plain", &plain[..]), ("tde", &tde[..])].into_iter());
        assert_eq!((runs, none), (5, vec!["block 2 plain".to_string(), "block 1 tde".to_string()]));
    }

    #[test]
    fn blocks_where_a_side_measured_zero_are_named() {
        let base = [Some(290.0), Some(0.0), None, Some(300.0), Some(0.0)];
        let tde = [Some(280.0), Some(270.0), Some(0.0), Some(0.0), Some(0.0)];
        let left = zeros([("plain", &base), ("tde", &tde)]);
        let want = [(2, "plain"), (4, "tde"), (5, "plain"), (5, "tde")].map(|(b, n)| (b, n.to_string()));
        assert_eq!(left, want, "block 3 has no pair to leave out");
        assert!(zeros([("plain", &base[..1]), ("tde", &tde[..1])]).is_empty());
    }
}
