//! From per-block values to the study report: paired ratios on complete blocks, verdicts,
//! per-variant summaries, latency and time series.

use super::file::StudyFile;
use super::measures::Measure;
use super::{Active, CanaryResult};
use crate::driver::{LatencySummary, RunStatus};
use crate::record::RunRecord;
use crate::report::{Comparison, MeasureReport, RunRow, StudyReport, Sut, VariantReport};
use crate::stats::{median, paired_ratio, summarize, verdict, verdict_among, Family, RatioEstimate, Rules};
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

fn estimate(base: &Active, a: &Active, key: &str, seed: u64, rules: &Rules) -> Option<RatioEstimate> {
    let (b, v) = pairs(base, a, key);
    (b.len() >= 2).then(|| paired_ratio(&b, &v, seed, rules.confidence))
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
    with_baseline.chain(with_control).chain(named).collect()
}

/// A measure the runs do not give (power without a meter): the baseline has values of
/// its workload's first measure, none of this one.
fn silent(active: &[Active], measures: &[Measure], m: &Measure) -> bool {
    let first = measures.iter().find(|x| x.workload == m.workload).unwrap_or(m);
    let any = |key: &str| values(&active[0], key).iter().any(Option::is_some);
    any(&first.key()) && !any(&m.key())
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
    let measures: Vec<&Measure> = measures.iter().filter(|m| !silent(active, measures, m)).collect();
    pairings(active, &study.compare)
        .into_iter()
        .filter(|&(i, c)| active[i].failed.is_none() && c.other().is_none_or(|c| active[c].failed.is_none()))
        .flat_map(|(i, c)| {
            let a = &active[i];
            let other = c.other().unwrap_or(0);
            let reference = &active[other];
            let target = study.targets().of(&a.cfg.name, Some(&reference.cfg.name));
            measures.iter().map(move |m| {
                let mut name = a.cfg.name.clone();
                if c != Against::Baseline {
                    name = format!("{name} vs {}", reference.cfg.name);
                }
                if many {
                    name = format!("{name} {}", m.key());
                }
                let e = estimate(reference, a, &m.key(), study.seed, &study.verdict);
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

/// Every measure's per-variant summaries and comparisons.
fn measure_reports(
    active: &[Active],
    measures: &[Measure],
    pairs: &[(String, String)],
    also_as: Option<super::file::AlsoAs>,
    seed: u64,
    rules: &Rules,
) -> Vec<MeasureReport> {
    let mut reports: Vec<MeasureReport> = measures
        .iter()
        .map(|m| {
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
            for (i, c) in pairings(active, pairs) {
                let a = &active[i];
                let reference = &active[c.other().unwrap_or(0)];
                let Some(e) = estimate(reference, a, &key, seed, rules) else { continue };
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
                    family: None,
                };
                match c {
                    Against::Baseline => report.comparisons.push(comparison),
                    Against::Control(_) => report.controls.push(comparison),
                    Against::Pair(_) => report.pairs.push(comparison),
                }
            }
            report
        })
        .collect();
    test_as_families(&mut reports, rules);
    reports
}

/// Tests each comparison's measures as one family (see [`crate::stats::family`]): a
/// variant's comparison with its baseline, its control or its pair, over every measure the
/// study compares, and gives each verdict the adjusted p-value.
fn test_as_families(reports: &mut [MeasureReport], rules: &Rules) {
    // By which list (baseline, control, pair), variant and reference: where the members are,
    // as (measure, place in its list).
    type Key = (usize, String, Option<String>);
    let mut families: BTreeMap<Key, Vec<(usize, usize)>> = BTreeMap::new();
    for (r, report) in reports.iter_mut().enumerate() {
        for (kind, list) in lists(report).into_iter().enumerate() {
            for (i, c) in list.iter().enumerate() {
                families.entry((kind, c.variant.clone(), c.against.clone())).or_default().push((r, i));
            }
        }
    }
    for ((kind, ..), members) in families {
        let ps: Vec<f64> = members.iter().map(|&(r, i)| lists(&mut reports[r])[kind][i].estimate.p_value).collect();
        for (&(r, i), p_adjusted) in members.iter().zip(crate::stats::holm(&ps)) {
            let higher_is_better = reports[r].measure.higher_is_better;
            let c = &mut lists(&mut reports[r])[kind][i];
            let family = Family { measures: ps.len(), p_adjusted };
            c.family = Some(family);
            c.verdict = verdict_among(&c.estimate, Some(family), higher_is_better, rules);
        }
    }
}

/// A measure's comparisons with the baseline, with controls and in pairs, in that order.
fn lists(report: &mut MeasureReport) -> [&mut Vec<Comparison>; 3] {
    [&mut report.comparisons, &mut report.controls, &mut report.pairs]
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
    let given: Vec<Measure> = i.measures.iter().filter(|m| !silent(i.active, i.measures, m)).cloned().collect();
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
    use super::{read_nothing, test_as_families, zeros};
    use crate::report::{Comparison, Measure, MeasureReport};
    use crate::stats::{verdict, RatioEstimate, Rules, Verdict};

    fn compared(variant: &str, against: Option<&str>, ratio: f64, ci: (f64, f64), p_value: f64) -> Comparison {
        let estimate = RatioEstimate {
            n: 12,
            ratio,
            ci,
            bootstrap_ci: ci,
            p_value,
            test: Default::default(),
            sd_log: 0.01,
            confidence: 0.95,
        };
        Comparison {
            variant: variant.into(),
            against: against.map(Into::into),
            verdict: verdict(&estimate, true, &Rules::default()),
            estimate,
            left_out: vec![],
            cost: false,
            share_of_larger: None,
            family: None,
        }
    }

    fn measure(name: &str, comparisons: Vec<Comparison>, controls: Vec<Comparison>) -> MeasureReport {
        let measure = Measure {
            workload: "ds2".into(),
            name: name.into(),
            unit: "u".into(),
            higher_is_better: true,
            cost: false,
        };
        MeasureReport { measure, summaries: vec![], comparisons, controls, pairs: vec![] }
    }

    /// A 2% drop at p = 0.03 is "slower" on its own; second smallest of four measures, its
    /// adjusted p is 3 x 0.03, so a chance low p among a comparison's measures calls nothing.
    /// A large change stays called, and a control comparison is a family of its own.
    #[test]
    fn a_comparisons_measures_are_tested_as_one_family() {
        let chance = || compared("x", None, 0.98, (0.97, 0.989), 0.03);
        let mut reports = vec![
            measure("OPM", vec![chance()], vec![compared("x", Some("x-control"), 0.98, (0.97, 0.989), 0.03)]),
            measure("CPU", vec![compared("x", None, 0.95, (0.93, 0.97), 0.001)], vec![]),
            measure("read", vec![compared("x", None, 1.0, (0.99, 1.01), 0.5)], vec![]),
            measure("written", vec![compared("x", None, 1.0, (0.99, 1.01), 0.6)], vec![]),
        ];
        assert!(matches!(reports[0].comparisons[0].verdict, Verdict::Slower { .. }), "alone it is called");
        test_as_families(&mut reports, &Rules::default());
        let opm = &reports[0].comparisons[0];
        assert_eq!(opm.family.map(|f| (f.measures, (f.p_adjusted * 1000.0).round())), Some((4, 90.0)));
        let words = opm.verdict.to_string();
        assert!(words.contains("p = 0.030, 0.090 over its 4 measures >= 0.050"), "{words}");
        assert!(matches!(reports[1].comparisons[0].verdict, Verdict::Slower { .. }), "0.001 x 4 is still called");
        let control = &reports[0].controls[0];
        assert_eq!(control.family.map(|f| f.measures), Some(1));
        assert!(matches!(control.verdict, Verdict::Slower { .. }), "{}", control.verdict);
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
