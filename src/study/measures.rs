//! What a study compares for each workload: the measures the workload declares (its
//! throughput, or each statement's or benchmark's time), under the workload's label.

use super::file::WorkloadConfig;
pub use crate::report::Measure;
use anyhow::Result;

/// The measures of one workload, in the order the workload declares them.
pub fn of(w: &WorkloadConfig, seed: u64) -> Result<Vec<Measure>> {
    let declared = w.args(seed).kind()?.measures();
    Ok(declared
        .into_iter()
        .map(|m| Measure { workload: w.label(), name: m.name, unit: m.unit, higher_is_better: m.higher_is_better })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_compares_latencies_and_tpcc_throughput() {
        let w: WorkloadConfig = toml::from_str("name = 'batch'").unwrap();
        let m = of(&w, 1).unwrap();
        assert_eq!(
            m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
            ["q1 latency", "q2 latency", "q3 latency", "q4 latency", "q5 latency"]
        );
        assert!(!m[0].higher_is_better);
        let w: WorkloadConfig = toml::from_str("name = 'tpcc'\nprofile = 'update'").unwrap();
        let m = of(&w, 1).unwrap();
        assert_eq!((m[0].key(), m[0].higher_is_better), ("tpcc hammerora-update / TPM".to_string(), true));
        let w: WorkloadConfig = toml::from_str("name = 'fileio'").unwrap();
        assert_eq!(of(&w, 1).unwrap()[1].name, "read time");
    }
}
