//! Which block devices hold a directory. A path resolves to its mount (mountinfo); a block
//! mount to its device; a loop device to the device holding its backing file; a FUSE
//! file system (gocryptfs) to the device holding its source directory. Encrypted layers
//! thus report the upper and the backing device, as the seeds' per-volume tables did. Each
//! layer names the volume it lies under (data, or a server's log on storage of its own).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One layer under a directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub mount_point: String,
    pub fs_type: String,
    /// The block device (as /proc/diskstats names it), when the layer has one.
    pub device: Option<String>,
    /// The volume this layer lies under: "data", or "log" for a write-ahead log kept apart.
    #[serde(default = "data_volume")]
    pub volume: String,
    /// The device's readahead (`queue/read_ahead_kb`): under a memory limit, how much a
    /// page-cache miss reads beside the page it wants.
    #[serde(default)]
    pub read_ahead_kb: Option<u32>,
}

/// A block device's readahead in KB; a partition's is its disk's.
fn read_ahead_kb(device: &str) -> Option<u32> {
    let queue = |dir: PathBuf| std::fs::read_to_string(dir.join("queue/read_ahead_kb")).ok();
    let dir = PathBuf::from(format!("/sys/class/block/{device}"));
    let text = queue(dir.clone()).or_else(|| queue(dir.canonicalize().ok()?.parent()?.to_path_buf()))?;
    text.trim().parse().ok()
}

fn data_volume() -> String {
    "data".into()
}

use crate::sys::mounts::mount_of;

/// The diskstats name of a block device number, from sysfs.
fn device_name(major_minor: &str) -> Option<String> {
    let link = std::fs::read_link(format!("/sys/dev/block/{major_minor}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

fn block_device(name: &str) -> bool {
    Path::new(&format!("/sys/class/block/{name}")).exists()
}

/// The device a mount's source names (`/dev/loop3`): btrfs gives its mounts anonymous
/// device numbers, which name no block device.
fn source_device(source: &str) -> Option<String> {
    if !source.starts_with("/dev/") {
        return None;
    }
    let path = std::fs::canonicalize(source).ok()?;
    Some(path.strip_prefix("/dev").ok()?.to_str()?.to_string())
}

/// The layers under `dir`, top first, as part of `volume`. Stops after a few hops (loops of
/// loops are rare).
pub fn layers(dir: &Path, volume: &str) -> Vec<Layer> {
    let mounts = crate::sys::mounts::current();
    let mut out = Vec::new();
    let mut path: PathBuf = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for _ in 0..4 {
        let Some(m) = mount_of(&mounts, &path) else { break };
        let device = device_name(&m.major_minor)
            .filter(|d| block_device(d))
            .or_else(|| source_device(&m.source).filter(|d| block_device(d)));
        out.push(Layer {
            mount_point: m.mount_point.clone(),
            fs_type: m.fs_type.clone(),
            read_ahead_kb: device.as_deref().and_then(read_ahead_kb),
            device: device.clone(),
            volume: volume.to_string(),
        });
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

/// The block devices a database's writes land on first: for each volume, the top-most layer
/// that is a block device (a loop device under an encrypted file system, not the disk that
/// holds its image, whose writes arrive later and from the loop's own worker; the disk
/// under a FUSE layer, which has no device of its own).
pub fn written_devices(volumes: &[(String, PathBuf)]) -> Vec<String> {
    let mut devs: Vec<String> = Vec::new();
    for (volume, d) in volumes {
        if let Some(dev) = layers(d, volume).into_iter().find_map(|l| l.device) {
            if !devs.contains(&dev) {
                devs.push(dev);
            }
        }
    }
    devs
}

/// The layers under each volume's directory, and the distinct block devices among them.
pub fn devices(volumes: &[(String, PathBuf)]) -> (Vec<Layer>, Vec<String>) {
    let mut all = Vec::new();
    for (volume, d) in volumes {
        for l in layers(d, volume) {
            if !all.contains(&l) {
                all.push(l);
            }
        }
    }
    let mut devs: Vec<String> = Vec::new();
    for d in all.iter().filter_map(|l| l.device.clone()) {
        if !devs.contains(&d) {
            devs.push(d);
        }
    }
    (all, devs)
}

/// A mount point as a reader wants it: inside a study's temporary work directory
/// (`OUT/.work-9K2NpV/v2/...`), just the variant's part ("variant dir/ext4-mnt").
fn shown(mount: &str) -> String {
    let Some(at) = mount.find("/.work-") else { return mount.to_string() };
    let inside: Vec<&str> = mount[at + 1..].splitn(3, '/').collect();
    match inside.as_slice() {
        [_, _, rest] => format!("variant dir/{rest}"),
        _ => "variant dir".into(),
    }
}

/// How a report names a device: its file system and mount, what lies above it, and, when
/// a log is kept apart, the volumes it serves.
pub fn describe(device: &str, layers: &[Layer]) -> String {
    let Some(at) = layers.iter().position(|l| l.device.as_deref() == Some(device)) else {
        return device.to_string();
    };
    let l = &layers[at];
    let volume_of_layer = |i: usize| &layers[i].volume;
    let above: Vec<String> = (0..at)
        .rev()
        .take_while(|&i| volume_of_layer(i) == &l.volume)
        .map(|i| format!("{} {}", layers[i].fs_type, shown(&layers[i].mount_point)))
        .collect();
    let mut text = format!("{device} ({} on {}", l.fs_type, shown(&l.mount_point));
    if let Some(kb) = l.read_ahead_kb {
        text += &format!(", readahead {kb} KB");
    }
    if !above.is_empty() {
        text += &format!(", under {}", above.into_iter().rev().collect::<Vec<_>>().join(", "));
    }
    text.push(')');
    let mut volumes: Vec<&str> = Vec::new();
    for v in layers.iter().filter(|x| x.device.as_deref() == Some(device)).map(|x| x.volume.as_str()) {
        if !volumes.contains(&v) {
            volumes.push(v);
        }
    }
    if layers.iter().any(|x| x.volume != "data") {
        text += &format!(" [{} volume]", volumes.join(" + "));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_resolves_its_root_to_a_device() {
        let l = layers(Path::new("/"), "data");
        assert_eq!(l[0].mount_point, "/");
        if let Some(device) = &l[0].device {
            assert!(l[0].read_ahead_kb.is_some(), "a block device ({device}) has a readahead, a partition its disk's");
        }
    }

    #[test]
    fn a_mount_s_source_names_its_device_where_its_numbers_do_not() {
        assert_eq!(source_device("none"), None, "tmpfs and the like have no source device");
        assert_eq!(source_device("/dev/no-such-device"), None);
        assert_eq!(source_device("/dev/null").as_deref(), Some("null"));
        assert!(!block_device("null"), "a device that is not a block device is left out");
    }

    fn layer(mount: &str, fs: &str, device: Option<&str>, volume: &str) -> Layer {
        let device = device.map(String::from);
        Layer { mount_point: mount.into(), fs_type: fs.into(), device, volume: volume.into(), read_ahead_kb: None }
    }

    #[test]
    fn a_device_is_named_with_what_lies_above_it_and_the_volumes_it_serves() {
        let one = [layer("/w/ext4-mnt", "ext4", Some("loop3"), "data"), layer("/", "ext4", Some("vda"), "data")];
        assert_eq!(describe("vda", &one), "vda (ext4 on /, under ext4 /w/ext4-mnt)");
        assert_eq!(describe("loop3", &one), "loop3 (ext4 on /w/ext4-mnt)");
        assert_eq!(describe("sdb", &one), "sdb");
        let apart = [
            layer("/w/data", "fuse.gocryptfs", None, "data"),
            layer("/", "ext4", Some("vda"), "data"),
            layer("/w/log/ext4-mnt", "ext4", Some("loop4"), "log"),
            layer("/", "ext4", Some("vda"), "log"),
        ];
        assert_eq!(describe("vda", &apart), "vda (ext4 on /, under fuse.gocryptfs /w/data) [data + log volume]");
        assert_eq!(describe("loop4", &apart), "loop4 (ext4 on /w/log/ext4-mnt) [log volume]");
        let work = [layer("/r/out/.work-9K2NpV/v2/log/ext4-mnt", "ext4", Some("loop5"), "data")];
        assert_eq!(describe("loop5", &work), "loop5 (ext4 on variant dir/log/ext4-mnt)");
        let ahead = [Layer { read_ahead_kb: Some(8192), ..layer("/", "ext4", Some("vda1"), "data") }];
        assert_eq!(describe("vda1", &ahead), "vda1 (ext4 on /, readahead 8192 KB)");
    }
}
