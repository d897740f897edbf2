//! Runs `dbvs build` and `dbvs run` as child processes for a variant: arguments, the
//! variant's environment, logs, Ctrl-C forwarding, and the run record read back as JSON.

use super::canary::{self, CanaryResult};
use super::file::StudyFile;
use crate::interrupt;
use crate::variants::{Prepared, VariantConfig};
use anyhow::{bail, Context as _, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub struct Context<'a> {
    pub exe: &'a Path,
    pub study: &'a StudyFile,
    pub out: &'a Path,
}

const DB_FILE: &str = "ds2.db";
const SCAN_COPY: &str = "canary-scan.db";

/// Arguments that pick the database: target, workload, size, seed and encryption.
fn db_args(ctx: &Context, p: &Prepared) -> Vec<OsString> {
    let w = &ctx.study.workload;
    let server_dir = p.data_dir.join("server");
    let mut a: Vec<OsString> = match ctx.study.target.engine.as_str() {
        "postgres" => vec!["--target".into(), "managed-postgres".into(), "--data-dir".into(), server_dir.into()],
        "mariadb" => vec!["--target".into(), "managed-mariadb".into(), "--data-dir".into(), server_dir.into()],
        _ => vec!["--target".into(), format!("sqlite:{}", p.data_dir.join(DB_FILE).display()).into()],
    };
    for (k, v) in ctx.study.target.settings.iter().chain(p.server_settings.iter().map(|(k, v)| (k, v))) {
        a.extend(["--server-setting".into(), format!("{k}={v}").into()]);
    }
    a.extend([
        "--workload".into(),
        w.name.clone().into(),
        "--size".into(),
        w.size.clone().into(),
        "--seed".into(),
        ctx.study.seed.to_string().into(),
    ]);
    if let Some((key, kind)) = &p.key {
        a.extend(["--key-file".into(), key.into(), "--key-kind".into(), format!("{kind:?}").to_lowercase().into()]);
    }
    for c in &p.cipher_pragmas {
        a.extend(["--cipher-pragma".into(), c.into()]);
    }
    a
}

fn log_file(ctx: &Context, name: &str) -> Result<(PathBuf, std::fs::File)> {
    let path = ctx.out.join("logs").join(name);
    let f = std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok((path, f))
}

/// Runs a child to completion, forwarding Ctrl-C; returns whether it succeeded.
fn wait(mut cmd: Command, log: std::fs::File) -> Result<std::process::ExitStatus> {
    let mut child = cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn()?;
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if interrupt::interrupted() && !forwarded {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last lines of a log, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(2)..].join(" / ")
}

/// Builds the variant's pristine database inside its storage.
pub fn build(ctx: &Context, v: &VariantConfig, p: &Prepared) -> Result<()> {
    let (log_path, log) = log_file(ctx, &format!("build-{}.log", v.name))?;
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("build").args(db_args(ctx, p)).envs(p.env.iter().map(|(k, v)| (k, v)));
    let status = wait(cmd, log)?;
    if interrupt::interrupted() {
        return Err(interrupt::Interrupted.into());
    }
    if !status.success() {
        bail!("building its database failed: {}", tail(&log_path));
    }
    Ok(())
}

/// One measured run; returns the child's run record. With `keep_for_scan` the run's
/// database is kept in the variant's storage for the canary scan.
pub fn run(
    ctx: &Context,
    v: &VariantConfig,
    p: &Prepared,
    block: usize,
    keep_for_scan: bool,
) -> Result<serde_json::Value> {
    let w = &ctx.study.workload;
    let name = format!("block{:02}-{}", block + 1, v.name);
    let json = ctx.out.join("runs").join(format!("{name}.json"));
    let (log_path, log) = log_file(ctx, &format!("{name}.log"))?;
    let mix = w.mix();
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("run").args(db_args(ctx, p)).args([
        "--no-store".to_string(),
        "--threads".into(),
        w.threads.to_string(),
        "--duration".into(),
        format!("{}", w.duration.as_secs_f64()),
        "--warmup".into(),
        format!("{}", w.warmup.as_secs_f64()),
        "--think-time".into(),
        format!("{}", w.think_time.as_secs_f64()),
        "--ramp-rate".into(),
        w.ramp_rate.to_string(),
        "--pct-newcustomers".into(),
        mix.pct_newcustomers.to_string(),
        "--n-searches".into(),
        mix.n_searches.to_string(),
        "--search-batch-size".into(),
        mix.search_batch_size.to_string(),
        "--n-line-items".into(),
        mix.n_line_items.to_string(),
    ]);
    // About a dozen samples per run for the over-time chart, at least 1 s apart.
    let interval = (w.duration / 12).clamp(Duration::from_secs(1), Duration::from_secs(10));
    cmd.args(["--report-interval".to_string(), format!("{}", interval.as_secs_f64())]);
    cmd.arg("--json").arg(&json).args(&p.run_args).envs(p.env.iter().map(|(k, v)| (k, v)));
    // A server's data directory already holds the pristine database, its logs and WAL;
    // SQLite's run copy is kept so the scan also sees what a run wrote.
    if w.cold {
        cmd.arg("--cold");
    }
    if keep_for_scan && ctx.study.target.engine == "sqlite" {
        cmd.arg("--keep-db").arg(p.data_dir.join(SCAN_COPY));
    }
    let status = wait(cmd, log)?;
    match std::fs::read_to_string(&json) {
        Ok(text) if !text.trim().is_empty() => {
            serde_json::from_str(&text).with_context(|| format!("unreadable run record {}", json.display()))
        }
        _ => bail!("the run produced no record ({status}): {}", tail(&log_path)),
    }
}

/// Scans the variant's bytes at rest for the build's plaintext marker, then removes the
/// database kept for the scan.
pub fn scan_canary(variant: &str, p: &Prepared) -> Result<CanaryResult> {
    // Push everything written through the layers (FUSE, loop device) down to the backing files.
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    let (hits, bytes) = canary::scan(&p.backing, crate::workloads::CANARY.as_bytes())?;
    let _ = std::fs::remove_file(p.data_dir.join(SCAN_COPY));
    Ok(CanaryResult {
        variant: variant.into(),
        scanned: p.backing.clone(),
        bytes_scanned: bytes,
        hits,
        encrypted: p.encrypted,
        ok: if p.encrypted { hits == 0 } else { hits > 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(dir: &Path, encrypted: bool, contents: &str) -> Prepared {
        let mut p = crate::variants::VariantConfig {
            name: "v".into(),
            kind: toml::from_str("kind = 'plain'").unwrap(),
            aesni: true,
        }
        .setup(dir)
        .unwrap();
        std::fs::write(p.data_dir.join("f"), contents).unwrap();
        p.encrypted = encrypted;
        p
    }

    #[test]
    fn an_encrypted_variant_with_plaintext_fails_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let leak = prepared(dir.path(), true, crate::workloads::CANARY);
        assert!(!scan_canary("v", &leak).unwrap().ok);
    }

    #[test]
    fn a_plain_variant_without_plaintext_means_the_scan_is_blind() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!scan_canary("v", &prepared(dir.path(), false, "nothing")).unwrap().ok);
        let dir = tempfile::tempdir().unwrap();
        assert!(scan_canary("v", &prepared(dir.path(), false, crate::workloads::CANARY)).unwrap().ok);
    }
}
