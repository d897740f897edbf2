//! `kind = "limits"`: the same database on a smaller or slower machine, emulated with
//! control groups ([`crate::sys::cgroup`]): a CPU quota and a core set ("an older or smaller
//! server"), read/write bandwidth and IOPS caps on the data's device ("HDD vs SSD"), and a
//! memory cap. They apply to a managed server's processes, or to the whole run process on
//! SQLite, whose engine runs inside dbvs.

use super::Prepared;
use crate::sys::cgroup::{Group, Version};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// CPU time in cores (cpu.max), e.g. 0.5 or 1.
    pub cpus: Option<f64>,
    /// The cores to run on (cpuset), e.g. "0" or "0-1".
    pub cpuset: Option<String>,
    /// Memory cap (memory.max), e.g. "512MB".
    pub memory: Option<String>,
    /// Caps on the data's block device (io.max), e.g. "50MB" per second and 200 IOPS.
    pub read_bps: Option<String>,
    pub write_bps: Option<String>,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    /// The shorthand `kind = "limits"`'s `data_path`: becomes the stack's storage path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_path: Option<PathBuf>,
}

fn bytes(s: &str) -> Result<u64> {
    crate::sys::units::parse_bytes(s).map_err(anyhow::Error::msg)
}

impl Settings {
    /// Why a variant with these limits cannot take turns with others in slices: a CPU quota
    /// and I/O caps are rates over time, and a process that waits for its turns stays under
    /// them (a memory cap and a core set hold whatever the waiting).
    pub fn why_alone(&self) -> Option<&'static str> {
        let io = self.read_bps.is_some()
            || self.write_bps.is_some()
            || self.read_iops.is_some()
            || self.write_iops.is_some();
        match (self.cpus.is_some(), io) {
            (false, false) => None,
            (true, false) => Some("its CPU quota is a rate over time, which waiting for its turns would dilute"),
            (false, true) => Some("its I/O caps are rates over time, which waiting for its turns would dilute"),
            (true, true) => {
                Some("its CPU quota and I/O caps are rates over time, which waiting for its turns would dilute")
            }
        }
    }

    fn controllers(&self) -> Vec<&'static str> {
        let mut c = vec![];
        if self.cpus.is_some() {
            c.push("cpu");
        }
        if self.cpuset.is_some() {
            c.push("cpuset");
        }
        if self.memory.is_some() {
            c.push("memory");
        }
        if self.read_bps.is_some() || self.write_bps.is_some() || self.read_iops.is_some() || self.write_iops.is_some()
        {
            c.push("io");
        }
        c
    }

    pub fn describe(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("cpus", self.cpus.map(|c| c.to_string()));
        put("cpuset", self.cpuset.clone());
        put("memory", self.memory.clone());
        put("read_bps", self.read_bps.clone());
        put("write_bps", self.write_bps.clone());
        put("read_iops", self.read_iops.map(|v| v.to_string()));
        put("write_iops", self.write_iops.map(|v| v.to_string()));
        m
    }

    /// Checks the settings themselves (the study file check calls this before anything runs).
    pub fn validate(&self) -> Result<()> {
        if let Some(c) = self.cpus {
            if !(c >= 0.01 && c.is_finite()) {
                bail!("limits: cpus must be at least 0.01 (a share of one core), got {c}");
            }
        }
        for (k, v) in [("memory", &self.memory), ("read_bps", &self.read_bps), ("write_bps", &self.write_bps)] {
            if let Some(v) = v {
                bytes(v).map_err(|e| anyhow::anyhow!("limits: {k}: {e}"))?;
            }
        }
        if let Some(p) = &self.data_path {
            bail!("limits: data_path is the shorthand kind = \"limits\"'s; in a stack write storage = {{ path = \"{}\" }}", p.display());
        }
        Ok(())
    }

    /// Checks that this host can apply the limits.
    pub fn preflight(&self) -> Result<()> {
        self.validate()?;
        let c = self.controllers();
        if !c.is_empty() {
            crate::sys::cgroup::version(&c)?;
        }
        Ok(())
    }

    /// Puts the limits on a control group the runs (or the managed server) will join.
    pub fn setup(&self, name: &str, p: &mut Prepared) -> Result<()> {
        let controllers = self.controllers();
        if controllers.is_empty() {
            return Ok(());
        }
        let group = Group::create(name, &controllers)?;
        let v1 = group.version == Version::V1;
        if let Some(c) = self.cpus {
            let quota = (c * 100_000.0).round() as u64;
            if v1 {
                group.set("cpu.cfs_period_us", "100000")?;
                group.set("cpu.cfs_quota_us", &quota.to_string())?;
            } else {
                group.set("cpu.max", &format!("{quota} 100000"))?;
            }
        }
        if let Some(cores) = &self.cpuset {
            let got = group.set("cpuset.cpus", cores)?;
            if got.is_empty() {
                bail!("limits: the kernel accepted no cores from cpuset = {cores:?}");
            }
        }
        if let Some(m) = &self.memory {
            let file = if v1 { "memory.limit_in_bytes" } else { "memory.max" };
            group.set(file, &bytes(m)?.to_string())?;
        }
        if controllers.contains(&"io") {
            let dev = whole_disk(&p.data_dir)?;
            let caps = [
                ("rbps", "read_bps_device", self.read_bps.as_deref().map(bytes).transpose()?),
                ("wbps", "write_bps_device", self.write_bps.as_deref().map(bytes).transpose()?),
                ("riops", "read_iops_device", self.read_iops),
                ("wiops", "write_iops_device", self.write_iops),
            ];
            if v1 {
                for (_, file, v) in caps {
                    if let Some(v) = v {
                        group.set(&format!("blkio.throttle.{file}"), &format!("{dev} {v}"))?;
                    }
                }
            } else {
                let spec: Vec<String> = caps.iter().filter_map(|(k, _, v)| v.map(|v| format!("{k}={v}"))).collect();
                group.set("io.max", &format!("{dev} {}", spec.join(" ")))?;
            }
        }
        self.admit_daemons(&group, &p.daemons)?;
        p.cgroups = group.dirs.clone();
        p.guards.push(Box::new(group));
        Ok(())
    }

    /// gocryptfs encrypts in its FUSE daemon, which works for the server: it shares the
    /// server's CPU and I/O budget, as the seeds' single-core VMs shared their core with the
    /// encryptor (outside it, gocryptfs would get a core that TDE does not). Not its memory
    /// limit: reclaim there waiting on a FUSE write that only the daemon can finish deadlocks.
    fn admit_daemons(&self, group: &Group, daemons: &[u32]) -> Result<()> {
        let memory = self.memory.is_some().then(|| group.dir_for("memory.limit_in_bytes"));
        if !daemons.is_empty() && memory.is_some() && group.version == Version::V2 {
            bail!(
                "limits: with cgroup v2 the FUSE daemon cannot share these CPU limits without their memory limit; \
                 limit memory for the whole run instead (a study's workload memory = \"...\"), which gives the \
                 daemon a group of its own"
            );
        }
        for dir in group.dirs.iter().filter(|d| Some(d.as_path()) != memory) {
            for &pid in daemons {
                crate::sys::cgroup::move_to(dir, pid)?;
            }
        }
        Ok(())
    }
}

/// `MAJ:MIN` of the whole disk under `dir` (I/O caps apply to disks, not partitions).
fn whole_disk(dir: &Path) -> Result<String> {
    let layers = crate::telemetry::devices::layers(dir, "data");
    let dev = layers
        .iter()
        .rev()
        .find_map(|l| l.device.clone())
        .with_context(|| format!("limits: no block device found under {} for the I/O caps", dir.display()))?;
    let sys = PathBuf::from("/sys/class/block").join(&dev);
    let disk = if sys.join("partition").exists() { sys.join("..").canonicalize()? } else { sys };
    Ok(std::fs::read_to_string(disk.join("dev"))?.trim().to_string())
}
