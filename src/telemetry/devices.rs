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

/// A parsed line of /proc/self/mountinfo.
#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    pub major_minor: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
}

/// mountinfo escapes spaces and the like as octal (`\040`).
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = (0..3).filter_map(|_| chars.next()).collect();
            match u8::from_str_radix(&code, 8) {
                Ok(b) => out.push(b as char),
                Err(_) => out.push_str(&code),
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            Some(Mount {
                major_minor: f.get(2)?.to_string(),
                mount_point: unescape(f.get(4)?),
                fs_type: r.first()?.to_string(),
                source: unescape(r.get(1)?),
            })
        })
        .collect()
}

/// The mount holding `path` (longest mount-point prefix; later mounts shadow earlier ones).
pub fn mount_of<'m>(mounts: &'m [Mount], path: &Path) -> Option<&'m Mount> {
    mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| path.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (m.mount_point.len(), *i))
        .map(|(_, m)| m)
}

/// The diskstats name of a block device number, from sysfs.
fn device_name(major_minor: &str) -> Option<String> {
    let link = std::fs::read_link(format!("/sys/dev/block/{major_minor}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// The layers under `dir`, top first. Stops after a few hops (loops of loops are rare).
pub fn layers(dir: &Path) -> Vec<Layer> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").map(|t| parse_mountinfo(&t)).unwrap_or_default();
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

    const INFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 7:0 / /mnt/my\\040data rw shared:20 - ext4 /dev/loop0 rw
41 22 0:50 / /mnt/plain rw,nosuid - fuse.gocryptfs /srv/cipher rw,user_id=0
";

    #[test]
    fn mountinfo_parses_and_the_longest_prefix_wins() {
        let m = parse_mountinfo(INFO);
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].mount_point, "/mnt/my data");
        assert_eq!(m[2].fs_type, "fuse.gocryptfs");
        assert_eq!(m[2].source, "/srv/cipher");
        assert_eq!(mount_of(&m, Path::new("/mnt/my data/db/x")).unwrap().major_minor, "7:0");
        assert_eq!(mount_of(&m, Path::new("/var/lib")).unwrap().major_minor, "254:1");
    }

    #[test]
    fn this_machine_resolves_its_root_to_a_device() {
        let l = layers(Path::new("/"));
        assert_eq!(l[0].mount_point, "/");
    }
}
