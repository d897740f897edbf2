//! `dbvs fileio`: seed 002's copy test on a directory (the storage under test).

use crate::driver::RunStatus;
use crate::record::RunRecord;
use crate::sys::create_output;
use crate::workloads::{fileio, fileio::Fileio, Options, WorkloadSpec};
use anyhow::Result;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct FileioArgs {
    /// Directory on the storage to test (a mounted encrypted volume, a disk).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Directory on plain storage the file is copied from and back to [default: /var/tmp].
    #[arg(long, value_name = "DIR")]
    from: Option<PathBuf>,
    /// File size, e.g. 512MB or 2GB [default: an eighth of memory, 256MB to 2GB].
    #[arg(long, value_parser = crate::sys::units::parse_bytes)]
    size: Option<u64>,
    /// Runs, averaged.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Seed for the file's random bytes.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Write the run record as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Leave the last file in place (studies scan it for plaintext).
    #[arg(long)]
    keep: bool,
}

pub fn main(args: FileioArgs) -> Result<ExitCode> {
    let spec = WorkloadSpec {
        options: Options::Fileio(Default::default()),
        size: args.size.map(|b| b.to_string()),
        repeat: Some(args.runs),
        seed: args.seed,
        cold: true,
        keep_backup: false,
    };
    let json_out = args.json.as_deref().map(create_output).transpose()?;
    let fileio = Fileio::new(&spec, &fileio::Options { from: args.from })?;
    let outcome = fileio.measure(&args.dir, args.keep)?;
    let record = RunRecord::of_standalone("fileio", outcome.run);
    if let Some(s) = &outcome.summary {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(["step", "mean seconds [95% CI]", "MB/s"]);
        t.add_row([
            format!("copy onto {} (write)", args.dir.display()),
            format!("{:.3} +- {:.3}", s.write_s, s.write_ci95_s),
            format!("{:.0}", s.write_mbs),
        ]);
        t.add_row([
            format!("copy back to {} (read)", fileio.from().display()),
            format!("{:.3} +- {:.3}", s.read_s, s.read_ci95_s),
            format!("{:.0}", s.read_mbs),
        ]);
        println!(
            "fileio: a {} MB file copied onto {} and back, {} runs, page cache dropped and fsync after each copy\n{t}",
            fileio.size() >> 20,
            args.dir.display(),
            outcome.runs
        );
    }
    if let (Some(mut f), Some(p)) = (json_out, &args.json) {
        serde_json::to_writer_pretty(&mut f, &record)?;
        writeln!(f)?;
        eprintln!("run record written to {}", p.display());
    }
    Ok(match record.status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::Interrupted => ExitCode::from(130),
        RunStatus::Failed(cause) => {
            eprintln!("error: fileio failed: {cause}");
            ExitCode::FAILURE
        }
    })
}
