//! From per-block values to the study report: paired ratios on complete blocks, verdicts,
//! per-variant summaries, latency and time series.

use super::file::StudyFile;
use super::{Active, CanaryResult, METRIC};
use crate::driver::LatencySummary;
use crate::report::{Comparison, RunRow, StudyReport, Sut, VariantReport};
use crate::stats::{median, paired_ratio, summarize, verdict, RatioEstimate};
use crate::variants::VariantConfig;
use std::collections::BTreeMap;

/// The blocks in which both the baseline and `a` completed, as paired values.
fn pairs(base: &Active, a: &Active) -> (Vec<f64>, Vec<f64>) {
    base.values.iter().zip(&a.values).filter_map(|(b, v)| Some((((*b)?), (*v)?))).unzip()
}

fn estimate(base: &Active, a: &Active, seed: u64) -> Option<RatioEstimate> {
    let (b, v) = pairs(base, a);
    (b.len() >= 2).then(|| paired_ratio(&b, &v, seed))
}

/// Current relative CI half-width of every comparison still running.
pub(super) fn half_widths(active: &[Active], seed: u64) -> Vec<(String, f64)> {
    active[1..]
        .iter()
        .filter(|a| a.failed.is_none())
        .map(|a| (a.cfg.name.clone(), estimate(&active[0], a, seed).map_or(f64::INFINITY, |e| e.relative_half_width())))
        .collect()
}

pub(super) fn progress_line(widths: &[(String, f64)]) -> String {
    let parts: Vec<String> = widths
        .iter()
        .map(|(n, w)| if w.is_finite() { format!("{n} +-{:.1}%", 100.0 * w) } else { format!("{n} (needs 2 blocks)") })
        .collect();
    format!("CI half-widths: {}", parts.join(", "))
}

pub(super) struct Inputs<'a> {
    pub id: i64,
    pub study: &'a StudyFile,
    /// The study file as written.
    pub text: &'a str,
    pub active: &'a [Active],
    pub skipped: &'a [(VariantConfig, String)],
    pub rows: Vec<RunRow>,
    pub canaries: Vec<CanaryResult>,
    pub status: &'a str,
    pub cause: Option<String>,
    pub stop_reason: String,
    pub started_at: String,
    pub block_times: &'a [f64],
}

/// Median over runs of each latency statistic, per operation.
fn latency(records: &[serde_json::Value]) -> BTreeMap<String, LatencySummary> {
    let mut out = BTreeMap::new();
    let Some(ops) = records.first().and_then(|r| r["metrics"]["latency_ms"].as_object()) else {
        return out;
    };
    for op in ops.keys() {
        let stat = |k: &str| {
            let xs: Vec<f64> = records.iter().filter_map(|r| r["metrics"]["latency_ms"][op][k].as_f64()).collect();
            if xs.is_empty() {
                0.0
            } else {
                median(&xs)
            }
        };
        out.insert(
            op.clone(),
            LatencySummary {
                count: stat("count") as u64,
                avg_ms: stat("avg_ms"),
                stdev_ms: stat("stdev_ms"),
                p50_ms: stat("p50_ms"),
                p90_ms: stat("p90_ms"),
                p95_ms: stat("p95_ms"),
                p99_ms: stat("p99_ms"),
                max_ms: stat("max_ms"),
            },
        );
    }
    out
}

/// Per-interval rate averaged over runs, by interval position.
fn series(records: &[serde_json::Value]) -> Vec<(f64, f64)> {
    let runs: Vec<&Vec<serde_json::Value>> = records.iter().filter_map(|r| r["intervals"].as_array()).collect();
    let len = runs.iter().map(|r| r.len()).min().unwrap_or(0);
    (0..len)
        .map(|i| {
            let et = runs[0][i]["et_s"].as_f64().unwrap_or(0.0);
            let rates: Vec<f64> = runs.iter().filter_map(|r| r[i]["interval_per_min"].as_f64()).collect();
            (et, crate::stats::mean(&rates))
        })
        .collect()
}

pub(super) fn build(i: Inputs) -> StudyReport {
    let base = &i.active[0];
    let mut variants: Vec<VariantReport> = i
        .active
        .iter()
        .map(|a| {
            let done: Vec<f64> = a.values.iter().flatten().copied().collect();
            let completed: Vec<serde_json::Value> =
                a.records.iter().filter(|r| r["status"] == "completed").cloned().collect();
            VariantReport {
                info: a.cfg.info(),
                status: if a.failed.is_some() { "failed".into() } else { "ran".into() },
                reason: a.failed.clone(),
                summary: (!done.is_empty()).then(|| summarize(&done)),
                latency: latency(&completed),
                series: series(&completed),
            }
        })
        .collect();
    variants.extend(i.skipped.iter().map(|(cfg, why)| VariantReport {
        info: cfg.info(),
        status: "skipped".into(),
        reason: Some(why.clone()),
        summary: None,
        latency: BTreeMap::new(),
        series: vec![],
    }));
    let comparisons = i.active[1..]
        .iter()
        .filter_map(|a| {
            let e = estimate(base, a, i.study.seed)?;
            Some(Comparison { variant: a.cfg.name.clone(), verdict: verdict(&e, true), estimate: e })
        })
        .collect();
    let first = i.active.iter().flat_map(|a| a.records.first()).next();
    let env = first.map(|r| r["env"].clone()).unwrap_or_default();
    StudyReport {
        study_id: i.id,
        name: i.study.name.clone(),
        status: i.status.into(),
        cause: i.cause,
        started_at: i.started_at,
        finished_at: super::now(),
        stop_reason: i.stop_reason,
        metric: METRIC.into(),
        higher_is_better: true,
        baseline: base.cfg.name.clone(),
        ci_target: i.study.ci_target,
        blocks_completed: base.values.iter().filter(|v| v.is_some()).count(),
        seconds_per_block: crate::stats::mean(i.block_times).max(0.0),
        variants,
        comparisons,
        runs: i.rows,
        canary: i.canaries,
        sut: Sut {
            host: serde_json::from_value(env.clone()).unwrap_or_else(|_| crate::host::collect()),
            engine: i.study.target.engine.clone(),
            engine_versions: serde_json::from_value(env["engine_versions"].clone()).unwrap_or_default(),
            dbvs_version: env!("CARGO_PKG_VERSION").into(),
            workload: workload_params(&i.study.workload),
            study_file: i.text.into(),
        },
    }
}

fn workload_params(w: &super::file::WorkloadConfig) -> serde_json::Value {
    serde_json::json!({
        "name": w.name,
        "size": w.size,
        "threads": w.threads,
        "duration_s": w.duration.as_secs_f64(),
        "warmup_s": w.warmup.as_secs_f64(),
        "think_time_s": w.think_time.as_secs_f64(),
        "ramp_rate": w.ramp_rate,
        "cold": w.cold,
        "mix": w.mix(),
    })
}
