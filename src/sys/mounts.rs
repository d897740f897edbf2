//! The mount table (/proc/self/mountinfo): what is mounted where, and of what type.

use std::path::Path;

/// A parsed line of /proc/self/mountinfo.
#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    pub major_minor: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    /// The mount's own options and its file system's, comma-separated (`rw,noatime,...`).
    pub options: String,
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
                options: [f.get(5).copied(), r.get(2).copied()].into_iter().flatten().collect::<Vec<_>>().join(","),
            })
        })
        .collect()
}

/// This process's view of the mount table.
pub fn current() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mountinfo").map(|t| parse_mountinfo(&t)).unwrap_or_default()
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

/// The file system mounted exactly at `path` (the topmost, when several are stacked).
pub fn mounted_at(path: &Path) -> Option<Mount> {
    let path = path.canonicalize().ok()?;
    current().into_iter().rev().find(|m| Path::new(&m.mount_point) == path)
}

pub fn is_mount_point(path: &Path) -> bool {
    mounted_at(path).is_some()
}

/// Whether anything is mounted at or below `dir`.
pub fn any_under(dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else { return false };
    current().iter().any(|m| Path::new(&m.mount_point).starts_with(&dir))
}

/// The FUSE daemon serving the mount at `mount` (gocryptfs, bindfs): the process whose
/// arguments end with the mount point.
pub fn fuse_daemon(mount: &Path) -> Option<u32> {
    let want = mount.canonicalize().ok()?;
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let last = cmdline.split(|b| *b == 0).rfind(|a| !a.is_empty())?;
        (Path::new(std::str::from_utf8(last).ok()?) == want).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 0:45 / /mnt/with\\040space rw - fuse.gocryptfs /src/cipher rw
41 22 7:0 / /mnt/img rw - ext4 /dev/loop0 rw
";

    #[test]
    fn mountinfo_parses_and_the_longest_prefix_wins() {
        let m = parse_mountinfo(INFO);
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].mount_point, "/mnt/with space");
        assert_eq!(m[1].fs_type, "fuse.gocryptfs");
        assert_eq!(mount_of(&m, Path::new("/mnt/img/data/x.db")).unwrap().source, "/dev/loop0");
        assert_eq!(mount_of(&m, Path::new("/etc")).unwrap().mount_point, "/");
    }

    #[test]
    fn the_root_is_a_mount_point_and_a_plain_directory_is_not() {
        assert!(is_mount_point(Path::new("/")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mount_point(dir.path()));
        assert!(!any_under(dir.path()));
    }
}
