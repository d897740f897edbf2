//! `dbvs check`: the workload's consistency checks on a database as it stands, without a
//! run (so only the checks that need no run counts).

use super::DbArgs;
use crate::workloads::ensure_identity;
use anyhow::{Context, Result};
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    db: DbArgs,
}

pub fn main(args: CheckArgs) -> Result<ExitCode> {
    let (target, workload) = args.db.db(false)?.open(&[], None)?;
    let location = target.info().location;
    let meta = target.pristine()?.with_context(|| format!("there is no database at {location} to check"))?;
    ensure_identity(&workload.build_identity(), &meta, &location)?;
    let checks = workload.check(target.existing()?.as_ref(), &meta, None)?;
    for c in &checks {
        println!("check {:<6}: {} ({})", if c.ok { "ok" } else { "FAILED" }, c.name, c.detail);
    }
    if checks.iter().all(|c| c.ok) {
        println!("{location}: all {} checks passed", checks.len());
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("error: {location} failed its consistency checks (see above)");
        Ok(ExitCode::FAILURE)
    }
}
