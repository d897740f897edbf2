//! What a study compares for each workload: the measures the workload declares (its
//! throughput, or each statement's or benchmark's time), then what the run engine
//! measures itself, under the workload's label; and for a suite (bignw's benchmarks,
//! batch's statements) the geometric mean over its measures.

use super::file::WorkloadConfig;
pub use crate::report::Measure;
use crate::targets::Engine;
use anyhow::Result;
use std::collections::BTreeMap;

/// What a study measures beside the workloads.
#[derive(Clone)]
pub struct Setting {
    /// The engines the variants run (more than one when variants name their own).
    pub engines: Vec<Engine>,
    /// The variants' runs of this workload have the machine to themselves (not interleaved).
    pub alone: bool,
    /// The study reads a power source.
    pub power: bool,
}

/// The measures of one workload, in the order the workload declares them, then what the
/// run engine measures itself (see [`crate::run::cost_measures`]) and, when the runs are
/// alone and the workload is a throughput, the machine's figures (see
/// [`crate::telemetry::Telemetry::measures`]).
pub fn of(w: &WorkloadConfig, seed: u64, setting: Setting) -> Result<Vec<Measure>> {
    let kind = w.args(seed).kind()?;
    let limited = w.memory.is_some();
    // A study's PostgreSQL and MariaDB are servers dbvs manages. Engine against engine, only
    // what every engine gives is compared: SQLite's CPU is its workers' (the driver's own
    // work in it), a server's is the server's, and one is no measure of the other.
    let own_of = |engine: Engine| {
        let server = engine != Engine::Sqlite;
        kind.as_driven().map(|d| crate::run::cost_measures(engine, d, None, server, limited)).unwrap_or_default()
    };
    let mut own = setting.engines.first().map(|&e| own_of(e)).unwrap_or_default();
    for &engine in setting.engines.iter().skip(1) {
        let theirs = own_of(engine);
        own.retain(|m| theirs.iter().any(|t| t.name == m.name));
    }
    // Throughput workloads only: a suite's short timed units may end between two samples.
    let machine = match kind.as_driven().is_some_and(|d| d.supports_instances()) && setting.alone {
        true => crate::telemetry::Telemetry::measures(None, setting.power),
        false => vec![],
    };
    Ok(kind
        .measures()
        .into_iter()
        .chain(own)
        .chain(machine)
        .map(|m| Measure {
            workload: w.label(),
            name: m.name,
            unit: m.unit,
            higher_is_better: m.higher_is_better,
            cost: m.cost,
        })
        .collect())
}

/// A suite needs at least this many measures of one direction.
const SUITE: usize = 3;

/// One study entry's measures taken together: seed 003's "overhead over the ten
/// benchmarks". Per block, a variant's value is the geometric mean of its values of the
/// members, so its ratio to the baseline is the geometric mean of the members' ratios, and
/// it gets its own paired CI over blocks.
pub struct Suite {
    pub measure: Measure,
    /// The `[workload]` entry it summarizes.
    pub entry: usize,
    members: Vec<String>,
}

/// The suites of a study: each `[workload]` entry (bignw's benchmarks are a workload each,
/// batch's statements measures of one) whose declared measures, at least three, all point
/// one way.
pub fn suites(workloads: &[WorkloadConfig], seed: u64) -> Result<Vec<Suite>> {
    let mut entries: BTreeMap<usize, Vec<&WorkloadConfig>> = BTreeMap::new();
    for w in workloads {
        entries.entry(w.entry).or_default().push(w);
    }
    let mut out = vec![];
    for (&entry, group) in &entries {
        let mut declared = vec![];
        for w in group {
            declared.extend(w.args(seed).kind()?.measures().into_iter().map(|m| (w.label(), m)));
        }
        let Some((_, first)) = declared.first() else { continue };
        if declared.len() < SUITE || declared.iter().any(|(_, m)| m.higher_is_better != first.higher_is_better) {
            continue;
        }
        let label = entry_label(group);
        let same_unit = declared.iter().all(|(_, m)| m.unit == first.unit);
        out.push(Suite {
            measure: Measure {
                workload: label,
                name: format!("geometric mean of {}", declared.len()),
                unit: if same_unit { first.unit.clone() } else { String::new() },
                higher_is_better: first.higher_is_better,
                cost: first.cost,
            },
            entry,
            members: declared.iter().map(|(l, m)| format!("{l} / {}", m.name)).collect(),
        });
    }
    Ok(out)
}

/// The label of the `[workload]` entry the group was split from: what its parts' labels
/// ("bignw b1 ...", "bignw b8 ...") begin with.
fn entry_label(group: &[&WorkloadConfig]) -> String {
    let labels: Vec<String> = group.iter().map(|w| w.label()).collect();
    if labels.len() == 1 {
        return labels[0].clone();
    }
    let words = |l: &str| l.split(' ').map(String::from).collect::<Vec<_>>();
    let first = words(&labels[0]);
    let common = (0..first.len()).take_while(|&i| labels.iter().all(|l| words(l).get(i) == Some(&first[i]))).count();
    first[..common.max(1)].join(" ")
}

impl Suite {
    /// The suite's per-block values from its members' (a block lacking any member has none).
    pub fn values(&self, per_measure: &BTreeMap<String, Vec<Option<f64>>>) -> Vec<Option<f64>> {
        let series: Vec<&[Option<f64>]> =
            self.members.iter().map(|k| per_measure.get(k).map_or(&[][..], Vec::as_slice)).collect();
        let blocks = series.iter().map(|s| s.len()).max().unwrap_or(0);
        (0..blocks)
            .map(|b| {
                let logs: Vec<f64> = series
                    .iter()
                    .map(|s| s.get(b).copied().flatten().filter(|v| *v > 0.0).map(f64::ln))
                    .collect::<Option<_>>()?;
                Some((logs.iter().sum::<f64>() / logs.len() as f64).exp())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_is_an_entrys_measures_and_its_mean_their_geometric_mean_per_block() {
        let bignw: WorkloadConfig = toml::from_str("name = 'bignw'\nbenchmarks = [1, 8, 10]").unwrap();
        let parts = bignw.split();
        let tpcc: WorkloadConfig = toml::from_str("name = 'tpcc'").unwrap();
        let found = suites(&[parts, vec![WorkloadConfig { entry: 1, ..tpcc }]].concat(), 1).unwrap();
        assert_eq!(found.len(), 1, "tpcc's TPM and NOPM are two measures, not a suite");
        let s = &found[0];
        assert_eq!((s.measure.key(), s.measure.higher_is_better), ("bignw / geometric mean of 3".into(), false));
        let mut per_measure = BTreeMap::new();
        for (k, v) in s.members.iter().zip([[Some(1.0), Some(2.0)], [Some(4.0), None], [Some(16.0), Some(1.0)]]) {
            per_measure.insert(k.clone(), v.to_vec());
        }
        assert_eq!(s.values(&per_measure), [Some(4.0), None], "(1*4*16)^(1/3) = 4; block 2 lacks one");
        let batch: WorkloadConfig = toml::from_str("name = 'batch'").unwrap();
        assert_eq!(suites(&[batch], 1).unwrap()[0].measure.key(), "batch / geometric mean of 5");
    }

    fn interleaved(engine: Engine) -> Setting {
        Setting { engines: vec![engine], alone: false, power: false }
    }

    #[test]
    fn runs_alone_also_compare_the_machines_cpu_and_with_a_power_source_its_power() {
        let w: WorkloadConfig = toml::from_str("name = 'tpcb'").unwrap();
        let names = |alone, power| {
            of(&w, 1, Setting { engines: vec![Engine::Postgres], alone, power })
                .unwrap()
                .into_iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
        };
        let costs = ["TPS", "server CPU per unit", "storage KB written per unit"];
        assert_eq!(names(false, true), costs);
        let cpu = ["system CPU busy %", "system CPU busy % at the end"];
        assert_eq!(names(true, false), [&costs[..], &cpu].concat());
        assert_eq!(names(true, true), [&costs[..], &cpu, &["power", "work per watt"]].concat());
        let bignw: WorkloadConfig = toml::from_str("name = 'bignw'\nbenchmarks = [1]").unwrap();
        let alone = Setting { engines: vec![Engine::Sqlite], alone: true, power: true };
        let b1 = of(&bignw.split().remove(0), 1, alone).unwrap();
        assert_eq!(b1.len(), 1, "a suite's short units are not sampled: {b1:?}");
    }

    #[test]
    fn batch_compares_latencies_and_tpcc_throughput() {
        let w: WorkloadConfig = toml::from_str("name = 'batch'").unwrap();
        let m = of(&w, 1, interleaved(Engine::Postgres)).unwrap();
        assert_eq!(
            m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
            ["q1 latency", "q2 latency", "q3 latency", "q4 latency", "q5 latency"]
        );
        assert!(!m[0].higher_is_better);
        let w: WorkloadConfig = toml::from_str("name = 'tpcc'\nprofile = 'update'").unwrap();
        let m = of(&w, 1, interleaved(Engine::Postgres)).unwrap();
        assert_eq!((m[0].key(), m[0].higher_is_better), ("tpcc hammerora-update / TPM".to_string(), true));
        let w: WorkloadConfig = toml::from_str("name = 'fileio'").unwrap();
        assert_eq!(of(&w, 1, interleaved(Engine::Postgres)).unwrap()[1].name, "read time");
    }

    #[test]
    fn a_throughput_workload_also_compares_the_engines_cpu_per_unit() {
        let w: WorkloadConfig = toml::from_str("name = 'ds2'").unwrap();
        let names = |e| of(&w, 1, interleaved(e)).unwrap().into_iter().map(|m| m.name).collect::<Vec<_>>();
        assert_eq!(names(Engine::Sqlite), ["OPM", "in-process CPU per unit", "storage KB written per unit"]);
        assert_eq!(names(Engine::Mariadb), ["OPM", "server CPU per unit", "storage KB written per unit"]);
        // Engine against engine: what both give.
        let engines = |engines: Vec<Engine>| {
            let m = of(&w, 1, Setting { engines, alone: false, power: false }).unwrap();
            m.into_iter().map(|m| m.name).collect::<Vec<_>>()
        };
        assert_eq!(engines(vec![Engine::Sqlite, Engine::Postgres]), ["OPM", "storage KB written per unit"]);
        assert_eq!(engines(vec![Engine::Postgres, Engine::Mariadb]), names(Engine::Postgres));
        let batch: WorkloadConfig = toml::from_str("name = 'batch'").unwrap();
        assert_eq!(
            of(&batch, 1, interleaved(Engine::Sqlite)).unwrap().len(),
            5,
            "a suite's statements are timed already"
        );
    }
}
