//! The bottom of a variant's stack: where its bytes live. A host directory (dbvs's work
//! directory), an ext4 file system in a loop-mounted image (what fscrypt needs, and its
//! fair control), a tmpfs, or a directory the user names (another disk's mount, say). The
//! layers above put their files in the directory [`Base`] gives them.

use super::{InForce, Prepared};
use crate::sys::lease::{Lease, Step};
use crate::sys::{require, run_tool};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(tag = "on", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Storage {
    /// A directory in the study's work directory, on the host's file system.
    #[default]
    Host,
    /// A fresh ext4 file system (with the `encrypt` feature) in a sparse image file in the
    /// work directory, mounted through a loop device with direct I/O, so the image's pages
    /// are not cached twice.
    Ext4Image {
        #[serde(default = "default_image_size")]
        size: String,
    },
    /// A tmpfs of this size: storage as fast as memory.
    Tmpfs {
        #[serde(default = "default_image_size")]
        size: String,
    },
    /// A directory on storage of the user's; the variant works in a fresh subdirectory.
    Path { path: PathBuf },
}

pub fn default_image_size() -> String {
    "1GB".into()
}

/// Where the layers above put their files, and what the canary scan reads.
pub struct Base {
    pub dir: PathBuf,
    pub backing: PathBuf,
    /// The ext4 mount, for fscrypt's keyring.
    pub ext4: Option<PathBuf>,
}

impl Storage {
    pub fn describe(&self) -> String {
        match self {
            Storage::Host => "host directory".into(),
            Storage::Ext4Image { size } => format!("ext4 image ({size}, loop device)"),
            Storage::Tmpfs { size } => format!("tmpfs ({size})"),
            Storage::Path { path } => format!("path {}", path.display()),
        }
    }

    fn size_bytes(size: &str) -> Result<u64> {
        let bytes = crate::sys::units::parse_bytes(size).map_err(|e| anyhow::anyhow!("storage size: {e}"))?;
        if bytes < 64 << 20 {
            bail!("storage size '{size}' is too small: at least 64MB");
        }
        Ok(bytes)
    }

    pub fn validate(&self) -> Result<()> {
        match self {
            Storage::Host => Ok(()),
            Storage::Ext4Image { size } | Storage::Tmpfs { size } => Self::size_bytes(size).map(drop),
            Storage::Path { path } if !path.is_dir() => {
                bail!("storage path {} is not a directory; create it or mount the storage there", path.display())
            }
            Storage::Path { .. } => Ok(()),
        }
    }

    pub fn preflight(&self) -> Result<()> {
        self.validate()?;
        if matches!(self, Storage::Ext4Image { .. } | Storage::Tmpfs { .. }) {
            require("mount", "mount")?;
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                bail!("storage '{}' needs root to mount; run dbvs as root", self.describe());
            }
        }
        if let Storage::Ext4Image { .. } = self {
            require("mkfs.ext4", "e2fsprogs")?;
            require("losetup", "mount")?;
            if !Path::new("/dev/loop-control").exists() {
                bail!("no loop devices (/dev/loop-control missing): load the loop module (modprobe loop)");
            }
        }
        Ok(())
    }

    /// Makes the storage inside `dir` (the variant's work directory), its undo steps in `lease`.
    pub fn setup(&self, dir: &Path, name: &str, lease: &mut Lease, p: &mut Prepared) -> Result<Base> {
        match self {
            Storage::Host => {
                let base = dir.join("store");
                std::fs::create_dir_all(&base)?;
                Ok(Base { backing: base.clone(), dir: base, ext4: None })
            }
            Storage::Ext4Image { size } => {
                let image = dir.join("ext4.img");
                let mnt = dir.join("ext4-mnt");
                lease.push(Step::RemoveFile { path: image.clone() })?;
                std::fs::File::create(&image)?.set_len(Self::size_bytes(size)?)?;
                run_tool(
                    Command::new(require("mkfs.ext4", "e2fsprogs")?)
                        .args(["-q", "-F", "-O", "encrypt", "-E", "nodiscard"])
                        .arg(&image),
                )?;
                std::fs::create_dir_all(&mnt)?;
                lease.push(Step::Unmount { path: mnt.clone(), fuse: false })?;
                run_tool(Command::new(require("mount", "mount")?).args(["-o", "loop"]).arg(&image).arg(&mnt))
                    .context("cannot loop-mount the ext4 image (needs root and loop devices)")?;
                direct_io(&mnt)?;
                std::fs::set_permissions(&mnt, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
                p.in_force.push(InForce::Mount { path: mnt.clone(), fs_type: "ext4" });
                Ok(Base { dir: mnt.clone(), backing: image, ext4: Some(mnt) })
            }
            Storage::Tmpfs { size } => {
                let mnt = dir.join("tmpfs-mnt");
                std::fs::create_dir_all(&mnt)?;
                lease.push(Step::Unmount { path: mnt.clone(), fuse: false })?;
                let opts = format!("size={},mode=0755", Self::size_bytes(size)?);
                run_tool(
                    Command::new(require("mount", "mount")?).args(["-t", "tmpfs", "-o", &opts, "tmpfs"]).arg(&mnt),
                )
                .context("cannot mount a tmpfs (needs root)")?;
                p.in_force.push(InForce::Mount { path: mnt.clone(), fs_type: "tmpfs" });
                Ok(Base { backing: mnt.clone(), dir: mnt, ext4: None })
            }
            Storage::Path { path } => {
                let base = path.join(format!("dbvs-{}-{}", std::process::id(), crate::sys::names::slug(name)));
                lease.push(Step::RemoveDir { path: base.clone() })?;
                std::fs::create_dir_all(&base).with_context(|| format!("cannot create {}", base.display()))?;
                std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
                Ok(Base { backing: base.clone(), dir: base, ext4: None })
            }
        }
    }
}

/// Switches the loop device under `mnt` to direct I/O: the image's pages then stay out of
/// the host's page cache, so a database larger than its memory limit really reads from the
/// disk, as it would on a real ext4 volume.
fn direct_io(mnt: &Path) -> Result<()> {
    let m = crate::sys::mounts::mounted_at(mnt).with_context(|| format!("{} is not mounted", mnt.display()))?;
    run_tool(Command::new(require("losetup", "mount")?).args(["--direct-io=on", &m.source]))
        .with_context(|| format!("cannot switch {} to direct I/O", m.source))
}

/// A FUSE file system that passes every call straight through (bindfs): the control for
/// gocryptfs, which adds FUSE and encryption at once. Mounted at `mnt` over `base/plain`.
pub fn passthrough(base: &Base, mnt: &Path, lease: &mut Lease, p: &mut Prepared) -> Result<PathBuf> {
    let src = base.dir.join("plain");
    std::fs::create_dir_all(&src)?;
    std::fs::set_permissions(&src, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    std::fs::create_dir_all(mnt)?;
    let mnt = &mnt.canonicalize()?;
    lease.push(Step::Unmount { path: mnt.to_path_buf(), fuse: true })?;
    // Multithreaded, as gocryptfs is; as root bindfs adds allow_other, so a server's own user
    // sees the files too.
    run_tool(Command::new(require("bindfs", "bindfs")?).arg("--multithreaded").arg(&src).arg(mnt))?;
    p.in_force.push(InForce::Mount { path: mnt.to_path_buf(), fs_type: "fuse" });
    p.daemons.push(fuse_daemon(mnt)?);
    Ok(src)
}

/// Checks that a FUSE file system served by `program` (from `package`) can be mounted here.
pub fn fuse_preflight(program: &str, package: &str) -> Result<()> {
    require(program, package)?;
    require("fusermount3", "fuse3")?;
    if !Path::new("/dev/fuse").exists() {
        bail!("/dev/fuse is missing: load the fuse module (modprobe fuse) or run where FUSE is available");
    }
    Ok(())
}

/// The process serving the FUSE mount at `mnt`.
pub fn fuse_daemon(mnt: &Path) -> Result<u32> {
    crate::sys::mounts::fuse_daemon(mnt)
        .ok_or_else(|| anyhow::anyhow!("cannot find the FUSE daemon serving {}", mnt.display()))
}
