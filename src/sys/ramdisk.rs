//! A RAM disk model: an ext4 file system on a loop device whose backing file lives in a
//! tmpfs. Reads that miss the page cache go through the block layer to the loop device, as
//! on a disk, but every one takes the same short time: no cloud disk's bursts, no host
//! readahead setting. It stands for a fast disk of its own kind, never for this host's disk.
//!
//! The backing file is allocated whole when the disk is made, so its memory is charged to
//! the process that makes the disk. A run under a memory limit then pays only for its own
//! page cache, as on a real disk: the loop driver would otherwise charge the backing pages
//! to the group whose I/O first touched them, pages that no reclaim can free without swap.
//! Disks made together (a study's variants) take their memory in turns: made one after the
//! other, the first variant's runs waited longer on theirs, and SQLite larger than memory ran
//! about 0.5% slower on it in A/A studies (docs/methodology.md, "The disk under a memory
//! limit").

use super::lease::{Lease, Step};
use super::{require, run_tool};
use anyhow::{bail, Context, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The loop device's readahead: the kernel's default for a block device (128 KiB). The
/// host's disk may differ (8 MiB on this project's VMs), and with it the bytes a run reads.
pub const READAHEAD_KB: u32 = 128;

/// A mounted RAM disk. The lease it was made with unmounts it and frees its memory.
pub struct RamDisk {
    mount: PathBuf,
    device: String,
    bytes: u64,
}

impl RamDisk {
    /// The tools and privileges a RAM disk needs, checked before anything is made.
    fn preflight() -> Result<()> {
        require("mkfs.ext4", "e2fsprogs")?;
        require("mount", "mount")?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            bail!("disk = \"ram\" mounts a file system; run dbvs as root, or leave the disk key out");
        }
        super::require_loop_devices()
    }

    /// Makes a RAM disk of `bytes` in each of `dirs` (a `ram` tmpfs holding the image, and
    /// the ext4 mounted at `disk`), their undo steps in `lease`. The images are allocated
    /// together ([`allocate_together`]).
    pub fn make_each(dirs: &[PathBuf], bytes: u64, lease: &mut Lease) -> Result<Vec<Self>> {
        Self::preflight()?;
        let images = dirs.iter().map(|dir| image_in_tmpfs(dir, bytes, lease)).collect::<Result<Vec<_>>>()?;
        allocate_together(&images, bytes)?;
        dirs.iter().zip(&images).map(|(dir, image)| Self::mount_image(dir, image, bytes, lease)).collect()
    }

    /// Formats `image` and loop-mounts it at `dir`'s `disk`.
    fn mount_image(dir: &Path, image: &Path, bytes: u64, lease: &mut Lease) -> Result<Self> {
        let mount = dir.join("disk");
        std::fs::create_dir_all(&mount)?;
        run_tool(Command::new(require("mkfs.ext4", "e2fsprogs")?).args(["-q", "-F", "-E", "nodiscard"]).arg(image))
            .context("mkfs.ext4 failed on the RAM disk's image")?;
        lease.push(Step::Unmount { path: mount.clone(), fuse: false })?;
        run_tool(Command::new(require("mount", "mount")?).args(["-t", "ext4", "-o", "loop"]).arg(image).arg(&mount))
            .context("cannot loop-mount the RAM disk (needs root and loop devices)")?;
        // Managed servers run as their own users and must reach their data directories.
        std::fs::set_permissions(&mount, std::fs::Permissions::from_mode(0o755))?;
        let device = super::mounts::mounted_at(&mount)
            .map(|m| m.source)
            .with_context(|| format!("the RAM disk at {} is not mounted", mount.display()))?;
        set_readahead(&device)?;
        Ok(RamDisk { mount, device, bytes })
    }

    /// Where the file system is mounted.
    pub fn path(&self) -> &Path {
        &self.mount
    }

    /// What a study says of it: "a RAM disk model (ext4 on /dev/loop3 over 2048 MB of RAM,
    /// readahead 128 KB), not this host's disk".
    pub fn describe(&self) -> String {
        format!(
            "a RAM disk model (ext4 on {} over {} MB of RAM, readahead {READAHEAD_KB} KB), not this host's disk",
            self.device,
            self.bytes >> 20
        )
    }

    /// What a study says of one disk per variant: "a RAM disk model for each of 2 variants
    /// (ext4 on /dev/loop3, /dev/loop4, each over 1024 MB of RAM, readahead 128 KB), not this
    /// host's disk".
    pub fn describe_each(disks: &[RamDisk]) -> String {
        let devices: Vec<&str> = disks.iter().map(|d| d.device.as_str()).collect();
        format!(
            "a RAM disk model for each of {} variants (ext4 on {}, each over {} MB of RAM, readahead {READAHEAD_KB} \
             KB), not this host's disk",
            disks.len(),
            devices.join(", "),
            disks.first().map_or(0, |d| d.bytes >> 20)
        )
    }
}

/// Mounts the tmpfs at `dir`'s `ram` that holds an image of `bytes`; returns the path of
/// the image, made empty.
fn image_in_tmpfs(dir: &Path, bytes: u64, lease: &mut Lease) -> Result<PathBuf> {
    let ram = dir.join("ram");
    std::fs::create_dir_all(&ram)?;
    lease.push(Step::Unmount { path: ram.clone(), fuse: false })?;
    // The image and the ext4's metadata: a little more than the disk.
    let tmpfs = format!("size={},mode=0700", bytes + (bytes / 16).max(16 << 20));
    run_tool(Command::new(require("mount", "mount")?).args(["-t", "tmpfs", "-o", &tmpfs, "tmpfs"]).arg(&ram))
        .context("cannot mount the RAM disk's tmpfs")?;
    let image = ram.join("disk.img");
    std::fs::File::create(&image)?;
    Ok(image)
}

/// Each image's memory is allocated in rounds of this much, a round of each in turn.
const ALLOCATION_ROUND: u64 = 16 << 20;

/// Allocates every byte of the images now (see the module's comment on whose memory it
/// is), a round of each in turn, so that disks made together draw their memory from the
/// same stretches of RAM.
fn allocate_together(images: &[PathBuf], bytes: u64) -> Result<()> {
    let files: Vec<std::fs::File> =
        images.iter().map(|i| std::fs::OpenOptions::new().write(true).open(i)).collect::<Result<_, _>>()?;
    let mut at = 0;
    while at < bytes {
        let len = ALLOCATION_ROUND.min(bytes - at);
        for file in &files {
            let (offset, len) = (off_t(at)?, off_t(len)?);
            // SAFETY: the descriptor is open for writing for the duration of the call.
            let rc = unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(file), 0, offset, len) };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                bail!("cannot allocate the RAM disks' {bytes} bytes each ({e}); choose a smaller disk size");
            }
        }
        at += len;
    }
    Ok(())
}

fn off_t(bytes: u64) -> Result<libc::off_t> {
    libc::off_t::try_from(bytes).context("the RAM disk is too large")
}

/// Sets the loop device's readahead to [`READAHEAD_KB`] and reads it back.
fn set_readahead(device: &str) -> Result<()> {
    let name = Path::new(device).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let knob = PathBuf::from(format!("/sys/block/{name}/queue/read_ahead_kb"));
    std::fs::write(&knob, READAHEAD_KB.to_string())
        .with_context(|| format!("cannot set the RAM disk's readahead ({})", knob.display()))?;
    let now = std::fs::read_to_string(&knob)?;
    if now.trim() != READAHEAD_KB.to_string() {
        bail!("the RAM disk's readahead stayed at {} KB", now.trim());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn images_made_together_are_each_allocated_whole_in_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let images: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("{i}.img"))).collect();
        for image in &images {
            std::fs::File::create(image).unwrap();
        }
        // Two whole rounds and a part of one.
        let bytes = 2 * ALLOCATION_ROUND + (1 << 20);
        allocate_together(&images, bytes).unwrap();
        for image in &images {
            let meta = std::fs::metadata(image).unwrap();
            assert_eq!(meta.len(), bytes, "{}", image.display());
            assert!(meta.blocks() * 512 >= bytes, "every byte allocated: {} blocks", meta.blocks());
        }
    }
}
