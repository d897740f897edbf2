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
    /// A directory in the variant's place in the study's work directory: on the host's file
    /// system, or on the variant's RAM disk model (`disk = "ram"`).
    #[default]
    Host,
    /// A fresh ext4 file system (with the `encrypt` feature, for fscrypt) in a sparse image
    /// file in the work directory, mounted through a loop device with direct I/O, so the
    /// image's pages are not cached twice.
    Ext4Image(Image),
    /// The same with XFS.
    XfsImage(Image),
    /// The same with btrfs.
    BtrfsImage(Image),
    /// A tmpfs of this size: storage as fast as memory.
    Tmpfs {
        #[serde(default = "default_image_size")]
        size: String,
    },
    /// A directory on storage of the user's; the variant works in a fresh subdirectory.
    Path { path: PathBuf },
}

/// A file system in a loop-mounted image: its size, and what mkfs and mount are told.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    #[serde(default = "default_image_size")]
    pub size: String,
    /// More arguments for mkfs, e.g. "-b 4096" or "-m 0".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mkfs_options: String,
    /// Mount options, e.g. "noatime" or "data=journal"; each is checked to be in force.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mount_options: String,
}

impl Default for Image {
    fn default() -> Self {
        Image { size: default_image_size(), mkfs_options: String::new(), mount_options: String::new() }
    }
}

impl Image {
    /// The image as a stack table shows it: "xfs image (1GB, loop device; noatime)".
    fn describe(&self, fs: &str) -> String {
        let mut extra: Vec<String> = vec![];
        extra.extend((!self.mkfs_options.is_empty()).then(|| format!("mkfs {}", self.mkfs_options)));
        extra.extend((!self.mount_options.is_empty()).then(|| self.mount_options.clone()));
        let extra = if extra.is_empty() { String::new() } else { format!("; {}", extra.join(", ")) };
        format!("{fs} image ({}, loop device{extra})", self.size)
    }
}

/// Each image file system: its name, its mkfs (and package), mkfs's own arguments, and the
/// smallest image it makes.
struct FileSystem {
    name: &'static str,
    mkfs: &'static str,
    package: &'static str,
    args: &'static [&'static str],
    smallest: u64,
}

const EXT4: FileSystem = FileSystem {
    name: "ext4",
    mkfs: "mkfs.ext4",
    package: "e2fsprogs",
    args: &["-q", "-F", "-O", "encrypt", "-E", "nodiscard"],
    smallest: 64 << 20,
};
const XFS: FileSystem =
    FileSystem { name: "xfs", mkfs: "mkfs.xfs", package: "xfsprogs", args: &["-q", "-f", "-K"], smallest: 300 << 20 };
const BTRFS: FileSystem = FileSystem {
    name: "btrfs",
    mkfs: "mkfs.btrfs",
    package: "btrfs-progs",
    args: &["-q", "-f", "-K"],
    smallest: 128 << 20,
};

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
            Storage::Tmpfs { size } => format!("tmpfs ({size})"),
            Storage::Path { path } => format!("path {}", path.display()),
            image => {
                let (fs, i) = image.image().expect("the other kinds are images");
                i.describe(fs.name)
            }
        }
    }

    /// An image's file system and settings.
    fn image(&self) -> Option<(&'static FileSystem, &Image)> {
        match self {
            Storage::Ext4Image(i) => Some((&EXT4, i)),
            Storage::XfsImage(i) => Some((&XFS, i)),
            Storage::BtrfsImage(i) => Some((&BTRFS, i)),
            _ => None,
        }
    }

    fn size_bytes(size: &str, smallest: u64) -> Result<u64> {
        let bytes = crate::sys::units::parse_bytes(size).map_err(|e| anyhow::anyhow!("storage size: {e}"))?;
        if bytes < smallest {
            bail!("storage size '{size}' is too small: at least {}MB", smallest >> 20);
        }
        Ok(bytes)
    }

    pub fn validate(&self) -> Result<()> {
        match self {
            Storage::Host => Ok(()),
            Storage::Tmpfs { size } => Self::size_bytes(size, 64 << 20).map(drop),
            Storage::Path { path } if !path.is_dir() => {
                bail!("storage path {} is not a directory; create it or mount the storage there", path.display())
            }
            Storage::Path { .. } => Ok(()),
            image => {
                let (fs, i) = image.image().expect("the other kinds are images");
                Self::size_bytes(&i.size, fs.smallest).with_context(|| format!("a {} image", fs.name))?;
                let plain = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() || b" ,=_-.:/".contains(&b));
                if !plain(&i.mkfs_options) || !plain(&i.mount_options) {
                    bail!("mkfs_options and mount_options are letters, digits, spaces and , = _ - . : /");
                }
                Ok(())
            }
        }
    }

    pub fn preflight(&self) -> Result<()> {
        self.validate()?;
        if !matches!(self, Storage::Host | Storage::Path { .. }) {
            require("mount", "mount")?;
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                bail!("storage '{}' needs root to mount; run dbvs as root", self.describe());
            }
        }
        if let Some((fs, _)) = self.image() {
            require(fs.mkfs, fs.package)?;
            crate::sys::require_loop_devices()?;
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
            Storage::Ext4Image(_) | Storage::XfsImage(_) | Storage::BtrfsImage(_) => {
                let (fs, i) = self.image().expect("an image");
                let mnt = mount_image(dir, fs, i, lease)?;
                p.in_force.push(InForce::Mount { path: mnt.clone(), fs_type: fs.name });
                p.images.push(mnt.clone());
                let ext4 = (fs.name == "ext4").then(|| mnt.clone());
                Ok(Base { dir: mnt, backing: dir.join(format!("{}.img", fs.name)), ext4 })
            }
            Storage::Tmpfs { size } => {
                let mnt = dir.join("tmpfs-mnt");
                std::fs::create_dir_all(&mnt)?;
                lease.push(Step::Unmount { path: mnt.clone(), fuse: false })?;
                let opts = format!("size={},mode=0755", Self::size_bytes(size, 64 << 20)?);
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

/// Makes `fs` in a sparse image file in `dir` and loop-mounts it (direct I/O); returns the
/// mount point. Each mount option asked for must show in the mount's options.
fn mount_image(dir: &Path, fs: &FileSystem, i: &Image, lease: &mut Lease) -> Result<PathBuf> {
    let image = dir.join(format!("{}.img", fs.name));
    let mnt = dir.join(format!("{}-mnt", fs.name));
    lease.push(Step::RemoveFile { path: image.clone() })?;
    std::fs::File::create(&image)?.set_len(Storage::size_bytes(&i.size, fs.smallest)?)?;
    let mut mkfs = Command::new(require(fs.mkfs, fs.package)?);
    run_tool(mkfs.args(fs.args).args(i.mkfs_options.split_whitespace()).arg(&image))
        .with_context(|| format!("{} failed (mkfs_options \"{}\")", fs.mkfs, i.mkfs_options))?;
    std::fs::create_dir_all(&mnt)?;
    lease.push(Step::Unmount { path: mnt.clone(), fuse: false })?;
    let options =
        ["loop", i.mount_options.as_str()].into_iter().filter(|o| !o.is_empty()).collect::<Vec<_>>().join(",");
    run_tool(Command::new(require("mount", "mount")?).args(["-t", fs.name, "-o", &options]).arg(&image).arg(&mnt))
        .with_context(|| {
            format!("cannot loop-mount the {} image with options {options} (needs root and loop devices)", fs.name)
        })?;
    direct_io(&mnt)?;
    std::fs::set_permissions(&mnt, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let mounted = crate::sys::mounts::mounted_at(&mnt).with_context(|| format!("{} is not mounted", mnt.display()))?;
    for want in i.mount_options.split(',').filter(|o| !o.is_empty()) {
        if !mounted.options.split(',').any(|o| o == want || o.starts_with(&format!("{want}:"))) {
            bail!(
                "mount option {want} is not in force on the {} image: the kernel mounted it with {}",
                fs.name,
                mounted.options
            );
        }
    }
    Ok(mnt)
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
