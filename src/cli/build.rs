//! `dbvs build`: create the pristine database a workload runs against.

use super::DbArgs;
use crate::workloads::ensure_identity;
use anyhow::{Context, Result};
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub struct BuildArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Rebuild even if a pristine database already exists at the target.
    #[arg(long)]
    force: bool,
}

pub fn main(args: BuildArgs) -> Result<ExitCode> {
    let (target, workload) = args.db.db(false)?.open(&[], None)?;
    if !args.force {
        if let Some(meta) = target.pristine()? {
            ensure_identity(&workload.build_identity(), &meta, &target.info().location)
                .context("pass --force to replace it")?;
            eprintln!("{} is already built with these settings; pass --force to rebuild", target.info().location);
            return Ok(ExitCode::SUCCESS);
        }
    }
    crate::run::build(target.as_ref(), workload.as_ref())?;
    Ok(ExitCode::SUCCESS)
}
