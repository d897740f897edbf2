//! `fileio`: seed 002's file-system test. A file of random bytes on plain storage is copied
//! onto the storage under test (the write) and back again (the read), as the seed copied its
//! files onto the encrypted volume and off it. Each timed copy starts with the page cache
//! dropped and ends with fsync of what it wrote, so both go through the storage layer (an
//! encrypting FUSE or kernel layer included) rather than memory. N runs, averaged, with a
//! 95% CI.
//!
//! It needs no database, so it is a [`Standalone`] workload: `dbvs fileio --dir DIR`, and in
//! studies a run on each variant's storage.

use super::{Measure, Standalone, StandaloneRun, WorkloadSpec};
use crate::driver::RunStatus;
use anyhow::{bail, Context, Result};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bytes per write and read call.
const CHUNK: usize = 8 << 20;
/// The file's name inside the directory under test.
pub const FILE: &str = "dbvs-fileio.bin";
/// The plain storage the file is copied from and back to, unless the options name another.
pub const DEFAULT_FROM: &str = "/var/tmp";

/// The workload's own option: where the plain copy lives.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// A directory on plain storage (the seed's unencrypted volume) [default: /var/tmp].
    #[serde(default)]
    pub from: Option<PathBuf>,
}

/// The default file size: an eighth of the machine's memory, between 256 MB and 2 GB (the
/// seed's smaller file), so the test is about storage and fits the machine.
pub fn default_size() -> u64 {
    let total = crate::host::collect().memory_bytes;
    (total / 8).clamp(256 << 20, 2 << 30) / (1 << 20) * (1 << 20)
}

#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub seconds: f64,
    pub mbs: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub write: Step,
    pub read: Step,
}

/// Mean and 95% CI half-width over runs.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub write_s: f64,
    pub write_ci95_s: f64,
    pub read_s: f64,
    pub read_ci95_s: f64,
    pub write_mbs: f64,
    pub read_mbs: f64,
}

pub fn summarize(runs: &[Run]) -> Summary {
    let ci = |xs: &[f64]| {
        if xs.len() < 2 {
            f64::NAN
        } else {
            crate::stats::t_critical(xs.len() as f64 - 1.0) * crate::stats::sd(xs) / (xs.len() as f64).sqrt()
        }
    };
    let w: Vec<f64> = runs.iter().map(|r| r.write.seconds).collect();
    let r: Vec<f64> = runs.iter().map(|r| r.read.seconds).collect();
    let mean = crate::stats::mean;
    Summary {
        write_s: mean(&w),
        write_ci95_s: ci(&w),
        read_s: mean(&r),
        read_ci95_s: ci(&r),
        write_mbs: mean(&runs.iter().map(|r| r.write.mbs).collect::<Vec<_>>()),
        read_mbs: mean(&runs.iter().map(|r| r.read.mbs).collect::<Vec<_>>()),
    }
}

/// The file's contents: random bytes, with the plaintext canary at the start of every
/// chunk so the study's scan of the storage can tell whether it is encrypted at rest.
fn chunk(rng: &mut impl RngCore, n: u64) -> Vec<u8> {
    let mut buf = vec![0u8; CHUNK];
    rng.fill_bytes(&mut buf);
    let canary = crate::workloads::CANARY.as_bytes();
    buf[..canary.len()].copy_from_slice(canary);
    buf[canary.len()..canary.len() + 8].copy_from_slice(&n.to_le_bytes());
    buf
}

/// The source file on plain storage: `size` random bytes, written once and untimed.
pub fn write_source(path: &Path, size: u64, seed: u64) -> Result<()> {
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    let chunks: Vec<Vec<u8>> = (0..4).map(|n| chunk(&mut rng, n)).collect();
    let mut f = std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut left = size;
    let mut n = 0;
    while left > 0 {
        let take = left.min(CHUNK as u64) as usize;
        f.write_all(&chunks[n % chunks.len()][..take])?;
        left -= take as u64;
        n += 1;
        if crate::interrupt::interrupted() {
            return Err(crate::interrupt::Interrupted.into());
        }
    }
    Ok(f.sync_all()?)
}

/// Copies `from` to `to` through a buffer and fsyncs `to`, from a cold page cache; returns
/// the seconds it took. Read and write calls, not `copy_file_range`: a file system that
/// clones extents would otherwise copy nothing, and the layer under test must see the bytes.
fn timed_copy(from: &Path, to: &Path, size: u64) -> Result<Step> {
    let _ = std::fs::remove_file(to);
    crate::sys::drop_caches()?;
    let t = Instant::now();
    let mut src = std::fs::File::open(from).with_context(|| format!("cannot read {}", from.display()))?;
    let mut dst = std::fs::File::create(to).with_context(|| format!("cannot write {}", to.display()))?;
    let mut buf = vec![0u8; CHUNK];
    let mut copied = 0u64;
    loop {
        let n = src.read(&mut buf).with_context(|| format!("cannot read {}", from.display()))?;
        if n == 0 {
            break;
        }
        dst.write_all(&buf[..n]).with_context(|| format!("cannot write {}", to.display()))?;
        copied += n as u64;
        if crate::interrupt::interrupted() {
            return Err(crate::interrupt::Interrupted.into());
        }
    }
    dst.sync_all().with_context(|| format!("cannot fsync {}", to.display()))?;
    let seconds = t.elapsed().as_secs_f64();
    if copied != size {
        bail!("copied {copied} bytes of the {size} in {}", from.display());
    }
    Ok(Step { seconds, mbs: size as f64 / seconds / 1e6 })
}

/// One run: the source copied onto `dir` (write) and that copy back to `back` (read);
/// the file in `dir` stays for the caller.
pub fn run_once(source: &Path, dir: &Path, back: &Path, size: u64) -> Result<Run> {
    let onto = dir.join(FILE);
    let write = timed_copy(source, &onto, size)?;
    let read = timed_copy(&onto, back, size)?;
    let _ = std::fs::remove_file(back);
    Ok(Run { write, read })
}

/// The write and read times studies compare (lower is better), from the runs' summary.
pub fn measures(summary: Option<&Summary>) -> Vec<Measure> {
    let seconds = |f: fn(&Summary) -> f64| summary.map(f).filter(|v| v.is_finite());
    vec![
        Measure::lower("write time", "s", seconds(|s| s.write_s)),
        Measure::lower("read time", "s", seconds(|s| s.read_s)),
    ]
}

/// The workload's details for its run record: the summary and every run.
pub fn metrics(runs: &[Run]) -> serde_json::Value {
    let mut metrics = serde_json::to_value(summarize(runs)).unwrap_or_default();
    metrics["runs"] = serde_json::to_value(runs).unwrap_or_default();
    metrics
}

/// The workload: `size` bytes copied onto the storage under test and back, `runs` times.
pub struct Fileio {
    size: u64,
    runs: u32,
    seed: u64,
    from: PathBuf,
}

/// What the runs found, and their summary for the table `dbvs fileio` prints.
pub struct Outcome {
    pub run: StandaloneRun,
    pub summary: Option<Summary>,
    /// The runs done.
    pub runs: usize,
}

impl Fileio {
    pub fn new(spec: &WorkloadSpec, options: &Options) -> Result<Self> {
        let size = match &spec.size {
            Some(s) => crate::sys::units::parse_bytes(s).map_err(anyhow::Error::msg)?,
            None => default_size(),
        };
        let from = options.from.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_FROM));
        Ok(Self { size, runs: spec.repeat_or(5)?, seed: spec.seed, from })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn from(&self) -> &Path {
        &self.from
    }

    /// The runs in `dir`, stopping at the first failure; with `keep` the last file stays.
    pub fn measure(&self, dir: &Path, keep: bool) -> Result<Outcome> {
        ensure_room(dir, self.size, "a smaller size or another directory")?;
        // The source and the copy back: twice the size on the plain storage.
        ensure_room(&self.from, 2 * self.size, "a smaller size or another --from directory")?;
        let name = |what: &str| self.from.join(format!("dbvs-fileio-{}.{what}", std::process::id()));
        let (source, back) = (name("source"), name("back"));
        let mut lease = crate::sys::lease::Lease::new(&format!("fileio copies in {}", self.from.display()))?;
        for path in [&source, &back] {
            lease.push(crate::sys::lease::Step::RemoveFile { path: path.clone() })?;
        }
        let mut runs = Vec::new();
        let outcome = write_source(&source, self.size, self.seed).and_then(|()| {
            (0..self.runs).try_for_each(|i| {
                let r = run_once(&source, dir, &back, self.size)?;
                eprintln!(
                    "run {}: copy onto {:.2} s ({:.0} MB/s), copy back {:.2} s ({:.0} MB/s)",
                    i + 1,
                    r.write.seconds,
                    r.write.mbs,
                    r.read.seconds,
                    r.read.mbs
                );
                runs.push(r);
                Ok(())
            })
        });
        drop(lease);
        let status = match outcome {
            Ok(()) => RunStatus::Completed,
            Err(e) if e.is::<crate::interrupt::Interrupted>() => RunStatus::Interrupted,
            Err(e) => RunStatus::Failed(format!("{e:#}")),
        };
        if !keep || status != RunStatus::Completed {
            let _ = std::fs::remove_file(dir.join(FILE));
        }
        let summary = (!runs.is_empty()).then(|| summarize(&runs));
        let params = serde_json::json!({ "dir": dir, "from": self.from, "size_bytes": self.size, "runs": runs.len() });
        let measures = measures(summary.as_ref());
        let headline = measures[0].clone();
        let run = StandaloneRun { status, params, headline, measures, metrics: metrics(&runs) };
        Ok(Outcome { run, summary, runs: runs.len() })
    }
}

impl Standalone for Fileio {
    fn measures(&self) -> Vec<Measure> {
        measures(None)
    }

    fn leaves_data(&self) -> bool {
        true
    }

    fn run(&self, dir: Option<&Path>, _threads: usize, keep: bool) -> Result<StandaloneRun> {
        let dir = dir.context("fileio needs the directory to test (dbvs fileio --dir DIR)")?;
        Ok(self.measure(dir, keep)?.run)
    }
}

/// Refuses a test whose files would not fit in `dir`'s free space (with room to spare).
fn ensure_room(dir: &Path, bytes: u64, instead: &str) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}; choose a writable directory", dir.display()))?;
    let free = free_bytes(dir).unwrap_or(u64::MAX);
    if free < bytes + (64 << 20) {
        bail!(
            "{} has {} MB free but the test writes {} MB there; choose {instead}",
            dir.display(),
            free >> 20,
            bytes >> 20
        );
    }
    Ok(())
}

/// Space available to us on the file system holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path and `s` a zeroed out-parameter statvfs fills.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statvfs(c.as_ptr(), &mut s) } == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_size_fits_the_machine() {
        let d = default_size();
        assert!((256 << 20..=2 << 30).contains(&d));
    }

    #[test]
    fn summaries_average_with_a_confidence_interval() {
        let run = |w, r| Run { write: Step { seconds: w, mbs: 100.0 / w }, read: Step { seconds: r, mbs: 100.0 / r } };
        let s = summarize(&[run(1.0, 2.0), run(2.0, 2.0), run(3.0, 2.0)]);
        assert_eq!((s.write_s, s.read_s, s.read_ci95_s), (2.0, 2.0, 0.0));
        assert!((s.write_ci95_s - 4.303 * 1.0 / 3f64.sqrt()).abs() < 0.01, "{}", s.write_ci95_s);
    }
}
