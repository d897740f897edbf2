//! What a study compares for each workload: its throughput (higher is better) or, for the
//! batch suite, each statement's latency (lower is better), as the seeds reported them.

use super::file::WorkloadConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// The workload's label (e.g. `tpcc hammerora-query`).
    pub workload: String,
    /// What is measured, e.g. `TPM` or `q1 latency`.
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// Where the value sits in a run record.
    pub pointer: String,
}

impl Measure {
    /// A unique key: `workload / name`.
    pub fn key(&self) -> String {
        format!("{} / {}", self.workload, self.name)
    }

    pub fn value(&self, record: &serde_json::Value) -> Option<f64> {
        record.pointer(&self.pointer).and_then(serde_json::Value::as_f64)
    }
}

/// The top-level metric the results store lists for a run of workload `name`.
pub fn headline(name: &str) -> &'static str {
    match name {
        "tpcb" => "tps",
        "tpcc" => "nopm",
        "batch" => "suite_ms",
        "bignw" => "suite_s",
        "fileio" => "write_s",
        "cipher" => "mean_mbs",
        _ => "opm",
    }
}

/// The measures of one workload, headline first.
pub fn of(w: &WorkloadConfig) -> Vec<Measure> {
    let label = w.label();
    let up = |name: &str, unit: &str, key: &str| Measure {
        workload: label.clone(),
        name: name.into(),
        unit: unit.into(),
        higher_is_better: true,
        pointer: format!("/metrics/{key}"),
    };
    match w.name.as_str() {
        "ds2" => vec![up("OPM", "orders/min", "opm")],
        "tpcb" => vec![up("TPS", "transactions/s", "tps")],
        // Seed 002 reported TPM for every profile; NOPM is HammerDB's headline.
        "tpcc" => vec![up("TPM", "transactions/min", "tpm"), up("NOPM", "new orders/min", "nopm")],
        "batch" => ["q1", "q2", "q3", "q4", "q5"]
            .map(|q| Measure {
                workload: label.clone(),
                name: format!("{q} latency"),
                unit: "ms".into(),
                higher_is_better: false,
                pointer: format!("/metrics/statements/{q}/mean_ms"),
            })
            .to_vec(),
        "cipher" => vec![up("mean MB/s", "MB/s", "mean_mbs")],
        // The study file gives each bignw benchmark a workload of its own.
        "bignw" => w
            .benchmarks
            .iter()
            .flatten()
            .map(|b| Measure {
                workload: label.clone(),
                name: "unit time".into(),
                unit: "s".into(),
                higher_is_better: false,
                pointer: format!("/metrics/benchmarks/b{b}/mean_s"),
            })
            .collect(),
        "fileio" => [("write", "write_s"), ("read", "read_s")]
            .map(|(step, key)| Measure {
                workload: label.clone(),
                name: format!("{step} time"),
                unit: "s".into(),
                higher_is_better: false,
                pointer: format!("/metrics/{key}"),
            })
            .to_vec(),
        other => unreachable!("the study file check admits only known workloads, not {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_compares_latencies_and_tpcc_throughput() {
        let w: WorkloadConfig = toml::from_str("name = 'batch'").unwrap();
        let m = of(&w);
        assert_eq!(m.len(), 5);
        assert!(!m[0].higher_is_better);
        let rec = serde_json::json!({"metrics": {"statements": {"q1": {"mean_ms": 12.5}}}});
        assert_eq!(m[0].value(&rec), Some(12.5));
        assert_eq!(m[1].value(&rec), None);
        let w: WorkloadConfig = toml::from_str("name = 'tpcc'\nprofile = 'update'").unwrap();
        assert_eq!(of(&w)[0].key(), "tpcc update / TPM");
    }
}
