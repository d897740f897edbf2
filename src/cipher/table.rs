//! The whole AES table, as `dbvs cipher` prints it and a study with `aes_table` keeps it:
//! every cipher at every buffer size that fits in memory, with AES-NI on (in this process)
//! and off (in a child of this binary whose OpenSSL starts with AES-NI masked, since
//! OpenSSL reads `OPENSSL_ia32cap` once, at start-up).

use super::{Algo, Series, OPENSSL_NO_AESNI, SIZES};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// Which AES-NI settings a table measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub on: bool,
    pub off: bool,
}

/// What a table measured, and with what.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AesTable {
    /// OpenSSL's version string.
    pub openssl: String,
    pub threads: usize,
    /// Runs per measurement; each figure is their median.
    pub runs: usize,
    pub series: Vec<Series>,
    /// Sizes left out because the machine lacks the memory for them.
    #[serde(default)]
    pub skipped_sizes: Vec<String>,
}

/// A buffer size: its label in [`SIZES`] and its bytes.
pub type Size = (&'static str, usize);

/// The sizes of `wanted` (every one of [`SIZES`] when empty) that fit in half the memory
/// available now, and the labels of those that do not.
pub fn sizes_that_fit(wanted: &[Size]) -> Result<(Vec<Size>, Vec<String>)> {
    let wanted = if wanted.is_empty() { SIZES } else { wanted };
    // Half the free memory at most, so the page cache and other work keep the rest.
    let budget = crate::sys::available_memory()? / 2;
    let (fit, skipped): (Vec<_>, Vec<_>) = wanted.iter().partition(|(_, b)| super::memory_needed(*b) <= budget);
    if fit.is_empty() {
        bail!("not enough free memory for any of the buffer sizes; free some memory or choose smaller sizes");
    }
    Ok((fit, skipped.iter().map(|(l, _)| l.to_string()).collect()))
}

/// Measures the table: `ciphers` at `sizes`, each figure the median of `runs`.
pub fn measure(ciphers: &[Algo], sizes: &[Size], threads: usize, runs: usize, aesni: Settings) -> Result<AesTable> {
    let (fit, skipped_sizes) = sizes_that_fit(sizes)?;
    let mut series = Vec::new();
    if aesni.on {
        series.extend(super::measure_here(ciphers, &fit, threads, runs)?);
    }
    if aesni.off {
        series.extend(measure_masked(ciphers, &fit, threads, runs)?);
    }
    let openssl = openssl::version::version().to_string();
    Ok(AesTable { openssl, threads, runs, series, skipped_sizes })
}

/// Measures in a child whose OpenSSL has AES-NI masked.
fn measure_masked(ciphers: &[Algo], sizes: &[Size], threads: usize, runs: usize) -> Result<Vec<Series>> {
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("off.json");
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["cipher", "--aesni", "on", "--threads", &threads.to_string(), "--runs", &runs.to_string()]);
    for c in ciphers {
        cmd.args(["--cipher", c.name()]);
    }
    cmd.arg("--sizes").arg(sizes.iter().map(|(l, _)| l.replace(' ', "")).collect::<Vec<_>>().join(","));
    cmd.arg("--json").arg(&json).env("OPENSSL_ia32cap", OPENSSL_NO_AESNI).stdout(std::process::Stdio::null());
    let status = cmd.status().context("cannot start the AES-NI-masked child")?;
    if crate::interrupt::interrupted() {
        return Err(crate::interrupt::Interrupted.into());
    }
    if !status.success() {
        bail!("the AES-NI-masked measurement failed ({status})");
    }
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    Ok(serde_json::from_value(r["series"].clone())?)
}
