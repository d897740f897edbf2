//! Bytes block devices have written, from their counters in sysfs (`/sys/class/block/<dev>/stat`,
//! sectors written). This is what a run's storage KB written counts: the kernel's per-task
//! accounting (`/proc/<pid>/io` write_bytes) counts a whole page-cache folio each time a
//! write dirties it, and with large folios (ext4 from Linux 6.16) one 8 KB WAL write after
//! an fsync counted 256 KB: PostgreSQL's TPC-B showed 217 KB per transaction where the disk
//! wrote 10.5 KB, and the figure moved with folio sizes, not with the work.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The sectors of the stat file that count bytes written (the 7th field).
const SECTORS_WRITTEN: usize = 6;
const SECTOR: u64 = 512;

/// Open counters of some block devices, read together.
#[derive(Debug, Default)]
pub struct DiskWrites {
    stats: Vec<File>,
}

impl DiskWrites {
    /// The devices named as /proc/diskstats names them (`vda`, `loop3`, `nvme0n1p2`); one
    /// whose counters cannot be opened is left out.
    pub fn open(devices: &[String]) -> Self {
        Self::of_stat_files(devices.iter().map(|d| format!("/sys/class/block/{d}/stat")))
    }

    /// Counters in files laid out as a block device's `stat` (tests write their own).
    pub fn of_stat_files(paths: impl IntoIterator<Item = impl AsRef<std::path::Path>>) -> Self {
        Self { stats: paths.into_iter().filter_map(|p| File::open(p).ok()).collect() }
    }

    /// Whether no device is counted (then there is no figure to give).
    pub fn is_empty(&self) -> bool {
        self.stats.is_empty()
    }

    /// Bytes the devices have written since they appeared.
    pub fn bytes(&self) -> u64 {
        let mut buf = [0u8; 256];
        self.stats
            .iter()
            .filter_map(|f| {
                let n = f.read_at(&mut buf, 0).ok()?;
                sectors_written(std::str::from_utf8(&buf[..n]).ok()?)
            })
            .sum::<u64>()
            * SECTOR
    }
}

fn sectors_written(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(SECTORS_WRITTEN)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seventh_field_counts_sectors_written() {
        let line =
            " 2320949   753288 165138756  1978166 17830453   896473 555647392  8420531        0  2882156 12309033";
        assert_eq!(sectors_written(line), Some(555647392));
        assert_eq!(sectors_written("1 2 3"), None);
    }

    #[test]
    fn a_device_that_is_not_there_is_left_out() {
        let none = DiskWrites::open(&["no-such-device".into()]);
        assert!(none.is_empty());
        assert_eq!(none.bytes(), 0);
    }

    #[test]
    fn a_real_device_counts_what_it_wrote() {
        let Some(dev) = std::fs::read_to_string("/proc/diskstats")
            .ok()
            .and_then(|t| t.lines().filter_map(|l| l.split_whitespace().nth(2).map(String::from)).next())
        else {
            return;
        };
        let w = DiskWrites::open(&[dev]);
        assert!(!w.is_empty());
        let (a, b) = (w.bytes(), w.bytes());
        assert!(b >= a, "a counter never goes back");
    }
}
