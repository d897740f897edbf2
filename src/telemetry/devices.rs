//! Which block devices hold a directory. A path resolves to its mount (mountinfo); a block
//! mount to its device; a loop device to the device holding its backing file; a FUSE
//! file system (gocryptfs) to the device holding its source directory. Encrypted layers
//! thus report the upper and the backing device, as the seeds' per-volume tables did.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One layer under a directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub mount_point: String,
    pub fs_type: String,
    /// The block device (as /proc/diskstats names it), when the layer has one.
    pub device: Option<String>,
}

use crate::sys::mounts::mount_of;

/// The diskstats name of a block device number, from sysfs.
fn device_name(major_minor: &str) -> Option<String> {
    let link = std::fs::read_link(format!("/sys/dev/block/{major_minor}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// The layers under `dir`, top first. Stops after a few hops (loops of loops are rare).
pub fn layers(dir: &Path) -> Vec<Layer> {
    let mounts = crate::sys::mounts::current();
    let mut out = Vec::new();
    let mut path: PathBuf = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for _ in 0..4 {
        let Some(m) = mount_of(&mounts, &path) else { break };
        let device =
            device_name(&m.major_minor).filter(|d| std::path::Path::new(&format!("/sys/class/block/{d}")).exists());
        out.push(Layer { mount_point: m.mount_point.clone(), fs_type: m.fs_type.clone(), device: device.clone() });
        // What lies underneath: a loop device's backing file, or a FUSE file system's source.
        let below = match &device {
            Some(d) if d.starts_with("loop") => std::fs::read_to_string(format!("/sys/block/{d}/loop/backing_file"))
                .ok()
                .map(|f| PathBuf::from(f.trim())),
            None if m.fs_type.starts_with("fuse") && m.source.starts_with('/') => Some(PathBuf::from(&m.source)),
            _ => None,
        };
        match below {
            Some(p) => path = p,
            None => break,
        }
    }
    out
}

/// The distinct block devices among the layers under `dirs`.
pub fn devices(dirs: &[PathBuf]) -> (Vec<Layer>, Vec<String>) {
    let mut all = Vec::new();
    for d in dirs {
        for l in layers(d) {
            if !all.contains(&l) {
                all.push(l);
            }
        }
    }
    let mut devs: Vec<String> = all.iter().filter_map(|l| l.device.clone()).collect();
    devs.dedup();
    (all, devs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_resolves_its_root_to_a_device() {
        let l = layers(Path::new("/"));
        assert_eq!(l[0].mount_point, "/");
    }
}
