//! `dbvs capacity FILE`: the most instances each configuration holds at an SLA.

use crate::capacity::{self, CapacityFile};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct CapacityArgs {
    /// The capacity file (TOML): workload, SLA, search limits and configurations.
    file: PathBuf,
    /// Where the report and the runs' records and logs go [default: results/<name>-capacity].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run the file's quick form: its [quick] table and the workload's quick = { ... }
    /// replace those keys.
    #[arg(long)]
    quick: bool,
}

pub fn main(args: CapacityArgs) -> Result<ExitCode> {
    let (file, text) = CapacityFile::load(&args.file, args.quick)?;
    let out = capacity::out_dir(&file, args.out);
    let report = capacity::run(&file, &text, &out)?;
    report.write_all(&out)?;
    println!("capacity '{}' ({:.0} s):", report.name, report.wall_s);
    for o in &report.outcomes {
        match &o.error {
            Some(e) => println!("  {:<16} error: {e}", o.configuration),
            None => println!(
                "  {:<16} {} instances{} at >= {} {} each: total {}, {} per instance, CPU {}%",
                o.configuration,
                o.max_instances,
                if o.capped { " (the search's cap)" } else { "" },
                report.sla.min_per_instance,
                report.headline,
                o.total_at_max.map_or("-".into(), |v| format!("{v:.0}")),
                o.per_instance_at_max.map_or("-".into(), |v| format!("{v:.0}")),
                o.cpu_busy_pct_at_max.map_or("-".into(), |v| format!("{v:.0}")),
            ),
        }
    }
    println!("report: {}", out.join("capacity.html").display());
    Ok(if report.outcomes.iter().any(|o| o.error.is_some()) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
