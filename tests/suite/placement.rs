//! Where a study's managed servers run: on the CPUs its pinned workers leave, or the last
//! one, the same in every variant (`sys::placement`), as the kernel reports it for the
//! running server in the record's `target.location`.

use crate::common::*;

/// "0-2,5" as [0, 1, 2, 5], the kernel's way of writing a CPU list.
fn cpu_list(text: &str) -> Vec<usize> {
    let cpu = |n: &str| n.parse::<usize>().unwrap_or_else(|_| panic!("not a CPU list: {text}"));
    text.split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => (cpu(a)..=cpu(b)).collect(),
            None => vec![cpu(part)],
        })
        .collect()
}

fn every_variant_s_server_runs_on_the_cpus_the_workers_leave(engine: &str) {
    let _share = share();
    let dir = reachable_tempdir();
    let f = write_study(
        dir.path(),
        &format!(
            "name = \"cpus\"\nblocks = {{ min = 2, max = 2 }}\n[target]\nengine = \"{engine}\"\n\
             [workload]\nname = \"tpcb\"\nsize = \"1\"\nthreads = 2\nduration = \"1s\"\nwarmup = \"0.3s\"\n\
             [[variants]]\nname = \"a\"\n[[variants]]\nname = \"b\"\n"
        ),
    );
    let out = dir.path().join("out");
    ok(&["study", &f, "--out", out.to_str().unwrap()]);
    let want = dbvs::sys::placement::server_cpus(2).unwrap();
    for variant in ["a", "b"] {
        let runs = records(&out, variant);
        assert_eq!(runs.len(), 2, "{variant}: two blocks");
        for r in runs {
            let location = r["target"]["location"].as_str().unwrap();
            let list = location.split(" on CPUs ").nth(1).and_then(|s| s.split(" in ").next());
            assert_eq!(list.map(cpu_list), Some(want.clone()), "{location}");
        }
    }
}

#[test]
fn postgres() {
    every_variant_s_server_runs_on_the_cpus_the_workers_leave("postgres");
}

#[test]
fn mariadb() {
    every_variant_s_server_runs_on_the_cpus_the_workers_leave("mariadb");
}

#[test]
fn a_run_of_its_own_leaves_its_server_where_the_scheduler_puts_it() {
    let _share = share();
    let dir = reachable_tempdir();
    let (data, json) = (dir.path().join("pg"), dir.path().join("run.json"));
    ok(&["run", "--target", "managed-postgres", "--data-dir", data.to_str().unwrap(), "--workload", "tpcb"]
        .into_iter()
        .chain(["--size", "1", "--duration", "1s", "--warmup", "0s", "--no-store", "--json", json.to_str().unwrap()])
        .collect::<Vec<_>>());
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let location = r["target"]["location"].as_str().unwrap();
    assert!(!location.contains(" on CPUs "), "{location}");
}
