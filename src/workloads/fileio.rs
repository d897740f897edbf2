//! `fileio`: seed 002's file-system test. A file of random bytes is written onto the
//! storage under test and read back; each timed step starts with the page cache dropped and
//! the write ends with fsync, so both steps go through the storage layer (an encrypting FUSE
//! or kernel layer included) rather than memory. N runs, averaged, with a 95% CI.
//!
//! It needs no database, so it is a [`Standalone`] workload: `dbvs fileio --dir DIR`, and in
//! studies a run on each variant's storage.

use super::{Measure, Standalone, StandaloneRun, WorkloadSpec};
use crate::driver::RunStatus;
use anyhow::{bail, Context, Result};
use rand::RngCore;
use serde::Serialize;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

/// Bytes per write and read call.
const CHUNK: usize = 8 << 20;
/// The file's name inside the directory under test.
pub const FILE: &str = "dbvs-fileio.bin";

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

/// One write and one read of `size` bytes in `dir`; the file stays for the caller.
pub fn run_once(dir: &Path, size: u64, seed: u64) -> Result<Run> {
    let path = dir.join(FILE);
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    let chunks: Vec<Vec<u8>> = (0..4).map(|n| chunk(&mut rng, n)).collect();
    let _ = std::fs::remove_file(&path);
    crate::sys::drop_caches()?;
    let t = Instant::now();
    {
        let mut f = std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
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
        f.sync_all()?;
    }
    let write = t.elapsed().as_secs_f64();
    crate::sys::drop_caches()?;
    let t = Instant::now();
    let mut f = std::fs::File::open(&path)?;
    let mut buf = vec![0u8; CHUNK];
    let mut read = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        read += n as u64;
    }
    let read_s = t.elapsed().as_secs_f64();
    if read != size {
        bail!("read back {read} bytes of the {size} written to {}", path.display());
    }
    let mbs = |s: f64| size as f64 / s / 1e6;
    Ok(Run { write: Step { seconds: write, mbs: mbs(write) }, read: Step { seconds: read_s, mbs: mbs(read_s) } })
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

/// The workload: `size` bytes written and read back `runs` times.
pub struct Fileio {
    size: u64,
    runs: u32,
    seed: u64,
}

/// What the runs found, and their summary for the table `dbvs fileio` prints.
pub struct Outcome {
    pub run: StandaloneRun,
    pub summary: Option<Summary>,
    /// The runs done.
    pub runs: usize,
}

impl Fileio {
    pub fn new(spec: &WorkloadSpec) -> Result<Self> {
        let size = match &spec.size {
            Some(s) => crate::sys::units::parse_bytes(s).map_err(anyhow::Error::msg)?,
            None => default_size(),
        };
        Ok(Self { size, runs: spec.repeat_or(5)?, seed: spec.seed })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The runs in `dir`, stopping at the first failure; with `keep` the last file stays.
    pub fn measure(&self, dir: &Path, keep: bool) -> Result<Outcome> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {}; choose a writable directory", dir.display()))?;
        let free = free_bytes(dir).unwrap_or(u64::MAX);
        if free < self.size + (64 << 20) {
            bail!(
                "{} has {} MB free but the test writes {} MB; choose a smaller size or another directory",
                dir.display(),
                free >> 20,
                self.size >> 20
            );
        }
        let mut runs = Vec::new();
        let mut status = RunStatus::Completed;
        for i in 0..self.runs {
            match run_once(dir, self.size, self.seed ^ u64::from(i)) {
                Ok(r) => {
                    eprintln!(
                        "run {}: write {:.2} s ({:.0} MB/s), read {:.2} s ({:.0} MB/s)",
                        i + 1,
                        r.write.seconds,
                        r.write.mbs,
                        r.read.seconds,
                        r.read.mbs
                    );
                    runs.push(r);
                }
                Err(e) => {
                    status = match e.is::<crate::interrupt::Interrupted>() {
                        true => RunStatus::Interrupted,
                        false => RunStatus::Failed(format!("{e:#}")),
                    };
                    break;
                }
            }
        }
        if !keep || status != RunStatus::Completed {
            let _ = std::fs::remove_file(dir.join(FILE));
        }
        let summary = (!runs.is_empty()).then(|| summarize(&runs));
        let params = serde_json::json!({ "dir": dir, "size_bytes": self.size, "runs": runs.len() });
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
