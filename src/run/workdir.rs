//! The directory a study (or a capacity search) sets its variants up in, under its output
//! directory, removed at the end, or by the watchdog or the next dbvs command if this
//! process is killed.
//!
//! On the RAM disk model (`disk = "ram"`) each place (a study's variant) gets a RAM disk of
//! its own, the size shared evenly. Its device then counts only that variant's writes, so an
//! interleaved run can count them over the variant's whole window: a server's checkpointer
//! and background writer write in other variants' slices too, and on one shared device
//! their writes landed in whichever variant's slice was running (docs/methodology.md, "The
//! disk under a memory limit").

use super::config::Disk;
use crate::sys::lease::{Lease, Step};
use crate::sys::ramdisk::RamDisk;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

pub struct WorkDir {
    places: Vec<PathBuf>,
    rams: Vec<RamDisk>,
    /// Undone (the RAM disks unmounted, then the directory removed) before `dir` drops.
    _lease: Lease,
    dir: tempfile::TempDir,
}

impl WorkDir {
    /// A work directory in `out` with `count` places to set variants up in, each on a RAM
    /// disk of its own when `disk` is the RAM disk model.
    pub fn new(out: &Path, what: &str, disk: &Disk, count: usize) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix(".work-").tempdir_in(out)?;
        // Managed servers run as their own system users and must be able to reach their data.
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let mut lease = Lease::new(what)?;
        lease.push(Step::RemoveDir { path: dir.path().to_path_buf() })?;
        let count = count.max(1);
        let names = (0..count).map(|i| dir.path().join(format!("v{i}")));
        let (places, rams) = match disk.ram_bytes_each(count)? {
            Some(each) => {
                check_memory(each * count as u64)?;
                let rams = RamDisk::make_each(&names.collect::<Vec<_>>(), each, &mut lease)?;
                (rams.iter().map(|r| r.path().to_path_buf()).collect(), rams)
            }
            None => (names.collect(), vec![]),
        };
        Ok(Self { places, rams, _lease: lease, dir })
    }

    /// The work directory itself (scratch files, the turn boards of interleaved runs).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where place `i` (a study's variant `i`) is set up.
    pub fn place(&self, i: usize) -> &Path {
        &self.places[i]
    }

    /// What the variants' storage stands on, when it is not the host's disk.
    pub fn disk_model(&self) -> Option<String> {
        match &self.rams[..] {
            [] => None,
            [one] => Some(one.describe()),
            all => Some(RamDisk::describe_each(all)),
        }
    }

    /// Whether each place's storage is a disk no other place writes to.
    pub fn disks_of_their_own(&self) -> bool {
        !self.rams.is_empty()
    }
}

/// Whether this machine has the memory for RAM disks of `bytes` in all.
fn check_memory(bytes: u64) -> Result<()> {
    let available = crate::sys::available_memory()?;
    if bytes > available / 2 {
        bail!(
            "disk = \"ram\" of {:.1} GB would take more than half the memory available now ({:.1} GB); give a \
             smaller size, e.g. disk = {{ model = \"ram\", size = \"1GB\" }}",
            bytes as f64 / 1e9,
            available as f64 / 1e9
        );
    }
    Ok(())
}
