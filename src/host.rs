//! Facts about the machine under test, for the report's system-under-test section.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// dbvs's version and the commit it was built from (see build.rs), as records and reports
/// name it.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("DBVS_COMMIT"), ")");

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct HostInfo {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    pub os: String,
    /// Whether the CPU advertises AES-NI (it decides what encryption costs).
    pub aes_ni: bool,
    /// Reclaim the kernel runs on its own, with memory to spare (a running DAMON scheme
    /// that pages cold memory out): what a run finds cached from earlier ones depends on it.
    #[serde(default)]
    pub proactive_reclaim: Option<String>,
}

/// The machine and the software versions a run ran with.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Env {
    #[serde(flatten)]
    pub host: HostInfo,
    pub engine_versions: std::collections::BTreeMap<String, String>,
    pub dbvs_version: String,
    /// The run's process had AES-NI masked from OpenSSL (a variant's `aesni = false`).
    #[serde(default)]
    pub aes_ni_masked: bool,
}

impl Env {
    pub fn new(engine_versions: std::collections::BTreeMap<String, String>) -> Self {
        Env { host: collect(), engine_versions, dbvs_version: VERSION.into(), aes_ni_masked: crate::cipher::masked() }
    }
}

pub fn collect() -> HostInfo {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let field = |text: &str, key: &str| -> Option<String> {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
    };
    let meminfo = read("/proc/meminfo");
    let mem_kb: u64 =
        field(&meminfo, "MemTotal").and_then(|v| v.trim_end_matches("kB").trim().parse().ok()).unwrap_or(0);
    HostInfo {
        cpu_model: field(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: mem_kb * 1024,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        os: field(&read("/etc/os-release").replace('=', ":"), "PRETTY_NAME").unwrap_or_else(|| "unknown".into()),
        aes_ni: field(&cpuinfo, "flags").is_some_and(|f| f.split_whitespace().any(|x| x == "aes")),
        proactive_reclaim: damon_schemes(Path::new(DAMON)),
    }
}

/// Where DAMON's sysfs interface lives.
const DAMON: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// The actions of the DAMON schemes running under `kdamonds` that take memory away
/// (`pageout`, `lru_deprio`), as "DAMON pageout (kdamond 0)"; `None` when none runs.
fn damon_schemes(kdamonds: &Path) -> Option<String> {
    let read = |p: PathBuf| std::fs::read_to_string(p).map(|t| t.trim().to_string()).unwrap_or_default();
    let mut found = Vec::new();
    for kdamond in std::fs::read_dir(kdamonds).ok()?.flatten().map(|e| e.path()) {
        if read(kdamond.join("state")) != "on" {
            continue;
        }
        let schemes = std::fs::read_dir(kdamond.join("contexts")).into_iter().flatten().flatten().flat_map(|c| {
            std::fs::read_dir(c.path().join("schemes")).into_iter().flatten().flatten().map(|s| s.path())
        });
        let name = kdamond.file_name().unwrap_or_default().to_string_lossy().into_owned();
        for action in schemes.map(|s| read(s.join("action"))).filter(|a| a == "pageout" || a == "lru_deprio") {
            found.push(format!("DAMON {action} (kdamond {name})"));
        }
    }
    found.sort();
    found.dedup();
    (!found.is_empty()).then(|| found.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machine() {
        let h = collect();
        assert!(h.cores >= 1 && h.memory_bytes > 0 && !h.kernel.is_empty(), "{h:?}");
    }

    #[test]
    fn a_running_damon_scheme_that_pages_out_is_named_and_a_stopped_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let scheme = |kdamond: &str, state: &str, action: &str| {
            let s = dir.path().join(kdamond).join("contexts/0/schemes/0");
            std::fs::create_dir_all(&s).unwrap();
            std::fs::write(dir.path().join(kdamond).join("state"), format!("{state}\n")).unwrap();
            std::fs::write(s.join("action"), format!("{action}\n")).unwrap();
        };
        assert_eq!(damon_schemes(dir.path()), None);
        scheme("0", "off", "pageout");
        scheme("1", "on", "stat");
        assert_eq!(damon_schemes(dir.path()), None, "stopped, or only counting");
        scheme("2", "on", "pageout");
        assert_eq!(damon_schemes(dir.path()).as_deref(), Some("DAMON pageout (kdamond 2)"));
        assert_eq!(damon_schemes(&dir.path().join("absent")), None);
    }
}
