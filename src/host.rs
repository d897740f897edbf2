//! Facts about the machine under test, for the report's system-under-test section.

use serde::Serialize;

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
}

/// Memory the kernel could hand out now without swapping (MemAvailable), in bytes.
pub fn available_memory() -> anyhow::Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    let kb = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .ok_or_else(|| anyhow::anyhow!("/proc/meminfo has no MemAvailable"))?;
    Ok(kb * 1024)
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
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_machine() {
        let h = super::collect();
        assert!(h.cores >= 1 && h.memory_bytes > 0 && !h.kernel.is_empty(), "{h:?}");
    }
}
