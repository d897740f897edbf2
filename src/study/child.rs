//! Runs `dbvs build` and `dbvs run` as child processes for a variant: arguments, the
//! variant's environment, logs, Ctrl-C forwarding, and the run record read back as JSON.

use super::canary::{self, CanaryResult};
use super::file::{StudyFile, WorkloadConfig};
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

const SCAN_COPY: &str = "canary-scan.db";

/// A file name for text such as a workload label.
fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// The SQLite file of a workload's build; workloads sharing a build (tpcc and batch) share it.
pub fn db_file(w: &WorkloadConfig) -> String {
    let build = if w.name == "batch" { "tpcc" } else { &w.name };
    format!("{build}-{}.db", slug(w.size.as_deref().unwrap_or("default")))
}

/// Arguments that pick the database: target, workload, size, seed and encryption. A
/// managed server keeps every workload's database in its one data directory.
fn db_args(ctx: &Context, p: &Prepared, w: &WorkloadConfig) -> Vec<OsString> {
    let server_dir = p.data_dir.join("server");
    let mut a: Vec<OsString> = match ctx.study.target.engine.as_str() {
        "postgres" => vec!["--target".into(), "managed-postgres".into(), "--data-dir".into(), server_dir.into()],
        "mariadb" => vec!["--target".into(), "managed-mariadb".into(), "--data-dir".into(), server_dir.into()],
        _ => vec!["--target".into(), format!("sqlite:{}", p.data_dir.join(db_file(w)).display()).into()],
    };
    for (k, v) in ctx.study.target.settings.iter().chain(p.server_settings.iter().map(|(k, v)| (k, v))) {
        a.extend(["--server-setting".into(), format!("{k}={v}").into()]);
    }
    a.extend(["--workload".into(), w.name.clone().into(), "--seed".into(), ctx.study.seed.to_string().into()]);
    if let Some(size) = &w.size {
        a.extend(["--size".into(), size.into()]);
    }
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

/// Builds the variant's pristine database for `w` inside its storage (a no-op when an
/// earlier workload already built the same database).
pub fn build(ctx: &Context, v: &VariantConfig, p: &Prepared, w: &WorkloadConfig) -> Result<()> {
    if matches!(w.name.as_str(), "fileio" | "cipher") {
        return Ok(());
    }
    let (log_path, log) = log_file(ctx, &format!("build-{}-{}.log", v.name, slug(&w.label())))?;
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("build").args(db_args(ctx, p, w)).envs(p.env.iter().map(|(k, v)| (k, v)));
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
    w: &WorkloadConfig,
    tag: &str,
    keep_for_scan: bool,
) -> Result<serde_json::Value> {
    let name = format!("{tag}-{}-{}", v.name, slug(&w.label()));
    let json = ctx.out.join("runs").join(format!("{name}.json"));
    let (log_path, log) = log_file(ctx, &format!("{name}.log"))?;
    let mut cmd = Command::new(ctx.exe);
    if w.name == "cipher" {
        // In memory: the variant's environment (AES-NI masking) is what it measures.
        cmd.args(["cipher", "--aesni", "on", "--threads", &w.threads.to_string()]);
        cmd.args([
            "--cipher",
            w.cipher.as_deref().unwrap_or("aes-256-xts"),
            "--sizes",
            w.size.as_deref().unwrap_or("1MB"),
        ]);
        cmd.args(["--runs".to_string(), w.repeat.unwrap_or(3).to_string()]);
        cmd.arg("--json").arg(&json).envs(p.env.iter().map(|(k, v)| (k, v)));
        crate::variants::cgroup::join_on_spawn(&mut cmd, &p.cgroups)?;
        return finish(cmd, log, &json, &log_path);
    }
    if w.name == "fileio" {
        cmd.arg("fileio").arg("--dir").arg(crate::workloads::fileio::dir_in(&p.data_dir));
        cmd.args([
            "--runs".to_string(),
            w.repeat.unwrap_or(5).to_string(),
            "--seed".into(),
            ctx.study.seed.to_string(),
        ]);
        if let Some(size) = &w.size {
            cmd.args(["--size", size]);
        }
        if keep_for_scan {
            cmd.arg("--keep");
        }
        cmd.arg("--json").arg(&json).envs(p.env.iter().map(|(k, v)| (k, v)));
        crate::variants::cgroup::join_on_spawn(&mut cmd, &p.cgroups)?;
        return finish(cmd, log, &json, &log_path);
    }
    cmd.arg("run").args(db_args(ctx, p, w)).args([
        "--no-store".to_string(),
        "--threads".into(),
        w.threads.to_string(),
        "--instances".into(),
        w.instances.to_string(),
        "--ramp-rate".into(),
        w.ramp_rate.to_string(),
    ]);
    // A fixed amount of work per user (seed 002: 1000 requests each), or a timed window.
    match w.iterations {
        Some(n) => cmd.args(["--iterations".to_string(), n.to_string()]),
        None => cmd.args([
            "--duration".to_string(),
            format!("{}", w.duration.as_secs_f64()),
            "--warmup".into(),
            format!("{}", w.warmup.as_secs_f64()),
        ]),
    };
    match w.random_sleep {
        Some(max) => cmd.args(["--random-sleep".to_string(), format!("{}", max.as_secs_f64())]),
        None => cmd.args(["--think-time".to_string(), format!("{}", w.think_time.as_secs_f64())]),
    };
    match w.name.as_str() {
        "ds2" => {
            let mix = w.mix();
            cmd.args([
                "--pct-newcustomers".to_string(),
                mix.pct_newcustomers.to_string(),
                "--n-searches".into(),
                mix.n_searches.to_string(),
                "--search-batch-size".into(),
                mix.search_batch_size.to_string(),
                "--n-line-items".into(),
                mix.n_line_items.to_string(),
            ]);
        }
        "tpcc" => {
            cmd.args(["--profile", w.profile.as_deref().unwrap_or("standard")]);
            if w.spec_pacing {
                cmd.arg("--spec-pacing");
            }
        }
        "batch" => {
            cmd.args(["--repeat".to_string(), w.repeat.unwrap_or(5).to_string()]);
        }
        // One unit per run: the blocks are the repetitions, in the balanced order.
        "bignw" => {
            let b = w.benchmarks.as_ref().and_then(|b| b.first()).copied().unwrap_or(1);
            cmd.args(["--benchmark".to_string(), b.to_string(), "--repeat".into(), w.repeat.unwrap_or(1).to_string()]);
            if let Some(t) = w.unit_time {
                cmd.args(["--unit-time".to_string(), t.as_secs_f64().to_string()]);
            }
            if let Some(k) = w.unit_iterations {
                cmd.args(["--unit-iterations".to_string(), k.to_string()]);
            }
        }
        _ => {}
    }
    // About a dozen samples per run for the over-time chart, at least 1 s apart.
    let interval = (w.duration / 12).clamp(Duration::from_secs(1), Duration::from_secs(10));
    cmd.args(["--report-interval".to_string(), format!("{}", interval.as_secs_f64())]);
    cmd.args(["--power", &ctx.study.power, "--idle-power", &ctx.study.idle_power.as_secs_f64().to_string()]);
    cmd.arg("--json").arg(&json).args(&p.run_args).envs(p.env.iter().map(|(k, v)| (k, v)));
    // A server's data directory already holds the pristine database, its logs and WAL;
    // SQLite's run copy is kept so the scan also sees what a run wrote.
    if w.cold {
        cmd.arg("--cold");
    }
    // Limits apply where the engine runs: the run process for SQLite, else the server.
    if ctx.study.target.engine == "sqlite" {
        crate::variants::cgroup::join_on_spawn(&mut cmd, &p.cgroups)?;
    } else if !p.cgroups.is_empty() {
        cmd.env(crate::variants::cgroup::SCOPE_ENV, "server");
    }
    if keep_for_scan && ctx.study.target.engine == "sqlite" {
        cmd.arg("--keep-db").arg(p.data_dir.join(SCAN_COPY));
    }
    finish(cmd, log, &json, &log_path)
}

/// Waits for a child run and reads its record back.
fn finish(cmd: Command, log: std::fs::File, json: &Path, log_path: &Path) -> Result<serde_json::Value> {
    let status = wait(cmd, log)?;
    match std::fs::read_to_string(json) {
        Ok(text) if !text.trim().is_empty() => {
            serde_json::from_str(&text).with_context(|| format!("unreadable run record {}", json.display()))
        }
        _ => bail!("the run produced no record ({status}): {}", tail(log_path)),
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
    let _ = std::fs::remove_dir_all(crate::workloads::fileio::dir_in(&p.data_dir));
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
