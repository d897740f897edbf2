//! What a study compares for each workload: the measures the workload declares (its
//! throughput, or each statement's or benchmark's time), under the workload's label.

use super::file::WorkloadConfig;
pub use crate::report::Measure;
use crate::targets::Engine;
use anyhow::Result;

/// The measures of one workload, in the order the workload declares them, then what the
/// run engine measures itself on `engine` (see [`crate::run::cost_measures`]).
pub fn of(w: &WorkloadConfig, seed: u64, engine: Engine) -> Result<Vec<Measure>> {
    let kind = w.args(seed).kind()?;
    let limited = w.memory.is_some();
    // A study's PostgreSQL and MariaDB are servers dbvs manages.
    let server = engine != Engine::Sqlite;
    let own = kind.as_driven().map(|d| crate::run::cost_measures(engine, d, None, server, limited)).unwrap_or_default();
    let declared = kind.measures().into_iter().chain(own);
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
        let m = of(&w, 1, Engine::Postgres).unwrap();
        assert_eq!(
            m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
            ["q1 latency", "q2 latency", "q3 latency", "q4 latency", "q5 latency"]
        );
        assert!(!m[0].higher_is_better);
        let w: WorkloadConfig = toml::from_str("name = 'tpcc'\nprofile = 'update'").unwrap();
        let m = of(&w, 1, Engine::Postgres).unwrap();
        assert_eq!((m[0].key(), m[0].higher_is_better), ("tpcc hammerora-update / TPM".to_string(), true));
        let w: WorkloadConfig = toml::from_str("name = 'fileio'").unwrap();
        assert_eq!(of(&w, 1, Engine::Postgres).unwrap()[1].name, "read time");
    }

    #[test]
    fn a_throughput_workload_also_compares_the_engines_cpu_per_unit() {
        let w: WorkloadConfig = toml::from_str("name = 'ds2'").unwrap();
        let names = |e| of(&w, 1, e).unwrap().into_iter().map(|m| m.name).collect::<Vec<_>>();
        assert_eq!(names(Engine::Sqlite), ["OPM", "in-process CPU per unit"]);
        assert_eq!(names(Engine::Mariadb), ["OPM", "server CPU per unit"]);
        let batch: WorkloadConfig = toml::from_str("name = 'batch'").unwrap();
        assert_eq!(of(&batch, 1, Engine::Sqlite).unwrap().len(), 5, "a suite's statements are timed already");
    }
}
