//! The pristine database: built once per target and workload build, checked before every run.

use crate::targets::{BuildMeta, Target};
use crate::workloads::{ensure_identity, Workload};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Instant;

/// Returns the pristine database's metadata, building it first if it does not exist yet.
pub fn ensure_built(target: &dyn Target, workload: &dyn Workload) -> Result<BuildMeta> {
    let meta = match target.pristine()? {
        Some(meta) => meta,
        None => {
            build(target, workload)?;
            target.pristine()?.context("the database vanished right after it was built")?
        }
    };
    ensure_identity(&workload.build_identity(), &meta, &target.info().location)?;
    Ok(meta)
}

pub fn build(target: &dyn Target, workload: &dyn Workload) -> Result<()> {
    let location = target.info().location;
    let staged = target.stage_build()?;
    let progress = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    progress.set_style(
        ProgressStyle::with_template("building {prefix} [{bar:30}] {percent:>3}% {per_sec} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    progress.set_prefix(location.clone());
    let t = Instant::now();
    let rows = workload.build(staged.as_ref(), &progress)?;
    staged.publish()?;
    progress.finish_and_clear();
    let secs = t.elapsed().as_secs_f64();
    eprintln!("built {location}: {rows} rows in {secs:.1} s ({:.0} rows/s)", rows as f64 / secs);
    Ok(())
}
