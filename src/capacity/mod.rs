//! `dbvs capacity`: how many database instances a configuration holds at an SLA (seed 004's
//! upgrade ladder: "how many DB VMs still average 25,000 OPM").
//!
//! Per configuration: run N instances side by side (each its own database and driver
//! threads, started together), stepping N up 1, 2, 4, ... until one fails, then bisecting
//! between the last pass and the first fail; or, with `search.step`, adding that many
//! instances at a time as the seed added VM pairs, the last pass being the answer. Every verdict at an N is confirmed by repeating
//! the probe (`confirmations`, a tie broken by one more); the search assumes more instances
//! never make it easier, and reports every probe so a non-monotone curve shows.

mod file;
pub mod report;

pub use file::{CapacityFile, Search, Sla, SlaOf};

use crate::driver::RunStatus;
use crate::record::RunRecord;
use crate::run::config::WorkloadConfig;
use crate::run::launch;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
/// One run at N instances.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Probe {
    pub instances: u32,
    pub passed: bool,
    /// Why it failed: the SLA missed, or the run's own failure.
    pub reason: Option<String>,
    pub total: f64,
    pub per_instance: Vec<f64>,
    pub p95_max_ms: f64,
    pub cpu_busy_pct: Option<f64>,
    /// Megabits per second received and sent over every interface (seed 004's network).
    #[serde(default)]
    pub net_mbit_s: Option<(f64, f64)>,
    /// The worst companion's p95 unit latency, with a companion.
    #[serde(default)]
    pub companion_p95_max_ms: Option<f64>,
    /// With client hosts: the busiest host's dbvs CPU, % of its cores (near 100, the
    /// clients, not the servers, set the pace).
    #[serde(default)]
    pub client_cpu_pct_max: Option<f64>,
}

/// The search's result for one configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    pub configuration: String,
    /// The most instances that met the SLA (0: not even one).
    pub max_instances: u32,
    /// Whether the search stopped at `search.max_instances` while still passing.
    pub capped: bool,
    pub total_at_max: Option<f64>,
    pub per_instance_at_max: Option<f64>,
    pub cpu_busy_pct_at_max: Option<f64>,
    #[serde(default)]
    pub net_mbit_s_at_max: Option<(f64, f64)>,
    pub probes: Vec<Probe>,
    pub error: Option<String>,
}

/// The search `how` asks for: [`linear`] with a step, else [`search`].
pub fn search_by(how: &Search, pass: impl FnMut(u32) -> Result<bool>) -> Result<Option<u32>> {
    match how.step {
        Some(step) => linear(step, how.max_instances, pass),
        None => search(how.max_instances, pass),
    }
}

/// Steps `step`, 2 x `step`, ... up to `max`: the last n with `pass(n)` before the first
/// failure. `None` when the first step fails.
pub fn linear(step: u32, max: u32, mut pass: impl FnMut(u32) -> Result<bool>) -> Result<Option<u32>> {
    let mut last = None;
    let mut n = step;
    while n <= max && pass(n)? {
        last = Some(n);
        n += step;
    }
    Ok(last)
}

/// Steps 1, 2, 4, ... up to `max`, then bisects: the largest n with `pass(n)`, assuming
/// passing is monotone. `None` when even 1 fails.
pub fn search(max: u32, mut pass: impl FnMut(u32) -> Result<bool>) -> Result<Option<u32>> {
    let (mut lo, mut hi) = (0, None);
    let mut n = 1;
    loop {
        if pass(n)? {
            lo = n;
            if n == max {
                break;
            }
            n = (n * 2).min(max);
        } else {
            hi = Some(n);
            break;
        }
    }
    if let Some(mut hi) = hi {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if pass(mid)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    Ok((lo > 0).then_some(lo))
}

/// The majority of `runs` probes, with one more on a tie.
pub fn confirmed(runs: u32, mut probe: impl FnMut() -> Result<bool>) -> Result<bool> {
    let (mut yes, mut no) = (0, 0);
    for _ in 0..runs {
        if probe()? {
            yes += 1;
        } else {
            no += 1;
        }
    }
    if yes == no {
        if probe()? {
            yes += 1;
        } else {
            no += 1;
        }
    }
    Ok(yes > no)
}

/// Judges one multi-instance run record against the SLA.
pub fn judge(record: &RunRecord, sla: &Sla, n: u32) -> Probe {
    let (per, p95): (Vec<f64>, f64) = match &record.instances {
        Some(rows) => (
            rows.iter().map(|r| r.headline.value.unwrap_or(0.0)).collect(),
            rows.iter().map(|r| r.unit_p95_ms).fold(0.0, f64::max),
        ),
        None => (vec![record.headline.value.unwrap_or(0.0)], record.unit_latency.p95_ms),
    };
    let companions = record.companions.as_deref();
    let companion_p95 = companions.map(|rows| rows.iter().map(|r| r.unit_p95_ms).fold(0.0, f64::max));
    let companion_failed = companions.and_then(|rows| {
        rows.iter().find(|r| r.status != RunStatus::Completed || !r.checks_ok).map(|r| match &r.status {
            RunStatus::Failed(cause) => format!("companion {} failed: {cause}", r.instance),
            _ => format!("companion {} did not complete, or failed a check", r.instance),
        })
    });
    let judged = match sla.of {
        SlaOf::Every => per.iter().copied().fold(f64::INFINITY, f64::min),
        SlaOf::Average => per.iter().sum::<f64>() / per.len().max(1) as f64,
    };
    let reason = if record.status != RunStatus::Completed {
        Some(format!("the run did not complete: {}", record.cause().unwrap_or("interrupted")))
    } else if !record.checks.iter().all(|c| c.ok) {
        Some("a post-run check failed".into())
    } else if judged < sla.min_per_instance {
        let who = if sla.of == SlaOf::Every { "an instance" } else { "the instances' average" };
        Some(format!("{who} reached {judged:.0} < {}", sla.min_per_instance))
    } else if sla.max_p95_ms.is_some_and(|m| p95 > m) {
        Some(format!("p95 {p95:.1} ms > {} ms", sla.max_p95_ms.unwrap_or(0.0)))
    } else if companion_failed.is_some() {
        companion_failed
    } else if let Some((worst, max)) = companion_p95.zip(sla.companion_max_p95_ms).filter(|(w, m)| w > m) {
        Some(format!("a companion's p95 {worst:.1} ms > {max} ms"))
    } else {
        None
    };
    let window = record.telemetry.as_ref().and_then(|t| t.window.as_ref());
    Probe {
        instances: n,
        passed: reason.is_none(),
        reason,
        total: per.iter().sum(),
        per_instance: per,
        p95_max_ms: p95,
        cpu_busy_pct: window.map(|w| w.cpu_busy_pct),
        net_mbit_s: window.map(crate::telemetry::Sample::net_total),
        companion_p95_max_ms: companion_p95,
        client_cpu_pct_max: record.clients.as_ref().map(|c| c.hosts.iter().map(|h| h.cpu_pct).fold(0.0, f64::max)),
    }
}

/// Where the capacity search writes.
pub fn out_dir(file: &CapacityFile, out: Option<PathBuf>) -> PathBuf {
    out.unwrap_or_else(|| PathBuf::from(format!("results/{}-capacity", crate::sys::names::slug(&file.name))))
}

/// Runs the search for every configuration; each is set up, searched and torn down in turn.
pub fn run(file: &CapacityFile, text: &str, out: &Path) -> Result<report::CapacityReport> {
    for sub in ["runs", "logs"] {
        std::fs::create_dir_all(out.join(sub)).with_context(|| format!("cannot create {}", out.display()))?;
    }
    let exe = std::env::current_exe()?;
    // The configurations run one after another: one place (one disk) serves them all.
    let what = format!("capacity search {} work directory", file.name);
    let work = crate::run::workdir::WorkDir::new(out, &what, &file.target.disk, 1)?;
    let ctx = launch::Context {
        exe: &exe,
        out,
        work: &work,
        live: None,
        target: &file.target,
        seed: file.seed,
        power: &file.power,
        idle_power: crate::run::TelemetrySpec::default().idle_power,
        clients: file.clients.as_ref(),
    };
    let headline = file.workload.args(file.seed).driven()?.headline(None).name;
    let (started, started_at) = (std::time::Instant::now(), crate::study::now());
    let mut outcomes = Vec::new();
    // The engines' versions as the runs recorded them, for the report's machine record.
    let mut engine_versions = std::collections::BTreeMap::new();
    for (i, c) in file.configurations.iter().enumerate() {
        let mut probes = Vec::new();
        let dir = work.place(0).join(format!("c{i}"));
        let result = launch::prepare(&ctx, c, &dir, std::slice::from_ref(&file.workload)).and_then(|prepared| {
            let mut attempt = 0;
            search_by(&file.search, |n| {
                confirmed(file.sla.confirmations, || {
                    attempt += 1;
                    let w = WorkloadConfig { instances: n, ..file.workload.clone() };
                    let tag = format!("n{n:03}-try{attempt}");
                    let run = match &file.companion {
                        Some(beside) => launch::run_beside(&ctx, c, &prepared, &w, beside, &tag),
                        None => launch::run(&ctx, c, &prepared, &w, &tag, false),
                    };
                    let probe = match run {
                        Ok(record) => {
                            engine_versions.extend(record.env.iter().flat_map(|e| e.engine_versions.clone()));
                            judge(&record, &file.sla, n)
                        }
                        Err(e) if crate::interrupt::interrupted() => return Err(e),
                        Err(e) => Probe { instances: n, reason: Some(format!("{e:#}")), ..Probe::default() },
                    };
                    eprintln!(
                        "{}: {n} instances: {} ({:.0} total{}{})",
                        c.name,
                        if probe.passed { "pass" } else { "FAIL" },
                        probe.total,
                        probe.companion_p95_max_ms.map_or(String::new(), |p| format!(", companions' p95 <= {p:.1} ms")),
                        probe.reason.as_ref().map_or(String::new(), |r| format!("; {r}"))
                    );
                    let passed = probe.passed;
                    probes.push(probe);
                    if crate::interrupt::interrupted() {
                        return Err(crate::interrupt::Interrupted.into());
                    }
                    Ok(passed)
                })
            })
        });
        if crate::interrupt::interrupted() {
            return Err(crate::interrupt::Interrupted.into());
        }
        outcomes.push(report::outcome(&c.name, result, probes, file.search.reach()));
    }
    Ok(report::CapacityReport {
        name: file.name.clone(),
        headline,
        sla: file.sla.clone(),
        search: format!("{}, up to {}", file.search.describe(), file.search.max_instances),
        outcomes,
        wall_s: started.elapsed().as_secs_f64(),
        started_at,
        finished_at: crate::study::now(),
        env: Some(crate::host::Env::new(engine_versions)),
        file: text.to_string(),
        ladder: match file.ladder {
            true => crate::study::ladder::changes(&file.configurations.iter().collect::<Vec<_>>()),
            false => vec![],
        },
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_capacity_file_key_is_in_the_reference() {
        use crate::reference_docs::{fields, Page, STUDY_FILE};
        let page = Page::of(STUDY_FILE);
        page.assert_lists("Capacity file: top level", fields::<CapacityFile>());
        page.assert_lists("[sla]", fields::<Sla>());
        page.assert_lists("[search]", fields::<Search>());
    }

    use super::*;

    #[test]
    fn a_capacity_search_name_is_one_component_of_its_output_directory() {
        let text = std::fs::read_to_string("studies/seed-004.toml").unwrap();
        let file: CapacityFile = toml::from_str(&text).unwrap();
        let out = out_dir(&CapacityFile { name: "../../etc/x".into(), ..file }, None);
        assert_eq!(out, Path::new("results/______etc_x-capacity"));
    }

    #[test]
    fn the_search_steps_up_then_bisects() {
        for truth in [0u32, 1, 2, 3, 5, 12, 64] {
            let mut tried = vec![];
            let got = search(64, |n| {
                tried.push(n);
                Ok(n <= truth)
            })
            .unwrap();
            assert_eq!(got, (truth > 0).then_some(truth), "truth {truth}, tried {tried:?}");
            assert!(tried.len() <= 14, "{tried:?}");
        }
        let mut tried = vec![];
        search(10, |n| {
            tried.push(n);
            Ok(true)
        })
        .unwrap();
        assert_eq!(tried, [1, 2, 4, 8, 10]);
    }

    #[test]
    fn a_bad_step_is_refused_with_its_range() {
        let text = |step: u32| {
            format!(
                "name = \"c\"\n[workload]\nname = \"ds2\"\n[sla]\nmin_per_instance = 1\n\
                 [search]\nmax_instances = 4\nstep = {step}\n[[configurations]]\nname = \"p\"\nkind = \"plain\"\n"
            )
        };
        let check = |step| toml::from_str::<CapacityFile>(&text(step)).unwrap().check();
        for step in [0, 5] {
            assert!(check(step).unwrap_err().to_string().contains("search.step must be between 1"), "{step}");
        }
        assert!(check(2).is_ok());
        // A companion's latency SLA needs a companion, and a companion a throughput workload.
        let with = |extra: &str| {
            let text = text(1).replace("[search]", "companion_max_p95_ms = 20\n[search]") + extra;
            toml::from_str::<CapacityFile>(&text).unwrap().check()
        };
        assert!(with("").unwrap_err().to_string().contains("needs a [companion] workload"));
        assert!(with("[companion]\nname = \"batch\"\n").unwrap_err().to_string().contains("throughput workload"));
        assert!(with("[companion]\nname = \"tpcb\"\nthreads = 2\n").is_ok());
        let search = Search { max_instances: 10, step: Some(3) };
        assert_eq!((search.reach(), search.describe().as_str()), (9, "3 instances at a time"));
    }

    #[test]
    fn linear_stepping_adds_a_step_until_one_fails() {
        let mut tried = vec![];
        let got = linear(2, 16, |n| {
            tried.push(n);
            Ok(n <= 7)
        })
        .unwrap();
        assert_eq!((got, tried), (Some(6), vec![2, 4, 6, 8]));
        assert_eq!(linear(2, 16, |_| Ok(false)).unwrap(), None);
        let mut tried = vec![];
        assert_eq!(
            linear(3, 10, |n| {
                tried.push(n);
                Ok(true)
            })
            .unwrap(),
            Some(9)
        );
        assert_eq!(tried, [3, 6, 9]);
    }

    #[test]
    fn confirmation_takes_the_majority_and_breaks_ties() {
        let mut results = [true, false, true].into_iter();
        assert!(confirmed(2, || Ok(results.next().unwrap())).unwrap());
        let mut results = [false, true, false].into_iter();
        assert!(!confirmed(2, || Ok(results.next().unwrap())).unwrap());
        let mut calls = 0;
        assert!(confirmed(3, || {
            calls += 1;
            Ok(true)
        })
        .unwrap());
        assert_eq!(calls, 3);
    }

    #[test]
    fn judging_reads_every_instance() {
        let sla = Sla {
            min_per_instance: 100.0,
            of: SlaOf::Every,
            max_p95_ms: Some(10.0),
            companion_max_p95_ms: Some(20.0),
            confirmations: 1,
        };
        let opm = |v: f64| crate::workloads::Measure::higher("OPM", "orders/min", Some(v));
        let row = |i: usize, v: f64, p95: f64| crate::record::InstanceRow {
            instance: i,
            status: RunStatus::Completed,
            headline: opm(v),
            measures: vec![opm(v)],
            unit_p95_ms: p95,
            checks_ok: true,
            metrics: serde_json::Value::Null,
        };
        let mut rec = RunRecord::standalone(
            "ds2",
            RunStatus::Completed,
            serde_json::Value::Null,
            opm(240.0),
            vec![opm(240.0)],
            serde_json::Value::Null,
        );
        rec.instances = Some(vec![row(1, 150.0, 5.0), row(2, 90.0, 4.0)]);
        let p = judge(&rec, &sla, 2);
        assert!(!p.passed && p.reason.unwrap().contains("90"));
        assert_eq!(p.total, 240.0);
        // Companions are held to their own latency, and their figures stay out of the total.
        rec.instances = Some(vec![row(1, 150.0, 5.0), row(2, 110.0, 4.0)]);
        rec.companions = Some(vec![row(1, 40.0, 12.0), row(2, 40.0, 25.0)]);
        let p = judge(&rec, &sla, 2);
        assert_eq!((p.total, p.companion_p95_max_ms), (260.0, Some(25.0)));
        assert!(p.reason.unwrap().contains("a companion's p95 25.0 ms > 20 ms"));
        rec.companions = Some(vec![row(1, 40.0, 12.0)]);
        assert!(judge(&rec, &sla, 2).passed);
        rec.companions.as_mut().unwrap()[0].status = RunStatus::Failed("disk full".into());
        assert!(judge(&rec, &sla, 2).reason.unwrap().contains("companion 1 failed: disk full"));
        rec.companions = None;
        rec.instances = Some(vec![row(1, 150.0, 5.0), row(2, 90.0, 4.0)]);
        // On the average instead: 120 per instance passes.
        let average = Sla { of: SlaOf::Average, ..sla.clone() };
        assert!(judge(&rec, &average, 2).passed);
        let strict = Sla { min_per_instance: 130.0, ..average };
        assert!(judge(&rec, &strict, 2).reason.unwrap().contains("average reached 120"));
        rec.instances = None;
        rec.headline = opm(150.0);
        rec.unit_latency.p95_ms = 12.0;
        assert!(judge(&rec, &sla, 1).reason.unwrap().contains("p95"));
        rec.status = RunStatus::Failed("server gone".into());
        assert!(judge(&rec, &sla, 1).reason.unwrap().contains("server gone"));
    }
}
