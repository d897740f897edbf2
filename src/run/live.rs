//! What a run exposes live (`--metrics-addr`, or a study's file): each report interval's
//! figures per instance (or interleaved side), the same ones the DS2-format progress lines
//! print.

use super::spec::{LiveFile, RunSpec};
use crate::driver::IntervalSample;
use crate::openmetrics::{gauge, Exporter, Family};
use anyhow::Result;

const MEASURING: Family = gauge("dbvs_run_measuring", "1 in the measured window, 0 in the warm-up.");
const UNITS: Family = gauge("dbvs_run_units", "Units of work finished since the statistics were last reset.");
const RATE: Family = gauge("dbvs_run_units_per_minute", "Units per minute within the last report interval.");
const LATENCY_AVG: Family =
    gauge("dbvs_run_unit_latency_avg_ms", "Mean latency of the units finished in the last report interval.");
const LATENCY_MAX: Family = gauge("dbvs_run_unit_latency_max_ms", "Longest unit latency in the last report interval.");
const LATENCY: Family =
    gauge("dbvs_run_unit_latency_ms", "Unit latency percentiles of the units finished in the last report interval.");
const ROLLBACKS: Family = gauge("dbvs_run_rollback_percent", "Rolled-back units since the reset, percent.");

/// Where a run's live figures go: an endpoint of its own, or (a study's child) a file the
/// study serves, with the study's names for the run's sides.
pub struct Live {
    exporter: Exporter,
    variants: Vec<String>,
}

impl Live {
    /// The run's live metrics, when `--metrics-addr` or its study asks for them.
    pub fn of(spec: &RunSpec) -> Result<Option<Self>> {
        let t = &spec.telemetry;
        Ok(match (&t.metrics_addr, &t.live_file) {
            (Some(addr), _) => Some(Self { exporter: Exporter::serve(addr, None)?, variants: vec![] }),
            (None, Some(LiveFile { path, variants })) => {
                Some(Self { exporter: Exporter::to_file(path.clone()), variants: variants.clone() })
            }
            (None, None) => None,
        })
    }

    /// Publishes one report interval of instance (or side) `index`.
    pub fn interval(&self, index: usize, workload: &str, s: &IntervalSample, warmup: bool) {
        let e = &self.exporter;
        let instance = index.to_string();
        let mut labels = vec![("workload", workload), ("instance", instance.as_str())];
        if let Some(v) = self.variants.get(index) {
            labels.push(("variant", v));
        }
        e.set(MEASURING, &labels, if warmup { 0.0 } else { 1.0 });
        e.set(UNITS, &labels, s.units as f64);
        e.set(RATE, &labels, s.interval_per_min);
        e.set(LATENCY_AVG, &labels, s.sampled_ms);
        e.set(LATENCY_MAX, &labels, s.lastn_max_ms);
        for (q, v) in [("0.5", s.p50_ms), ("0.95", s.p95_ms), ("0.99", s.p99_ms)] {
            e.set(LATENCY, &[labels.as_slice(), &[("quantile", q)]].concat(), v);
        }
        e.set(ROLLBACKS, &labels, s.rollback_pct);
        e.publish();
    }
}
