//! `dbvs fileio`: seed 002's copy test on a directory (the storage under test).

use crate::driver::RunStatus;
use crate::record::RunRecord;
use crate::sys::create_output;
use crate::workloads::fileio;
use anyhow::{Context, Result};
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
    let size = args.size.unwrap_or_else(fileio::default_size);
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}; choose a writable --dir", args.dir.display()))?;
    let free = free_bytes(&args.dir).unwrap_or(u64::MAX);
    if free < size + (64 << 20) {
        anyhow::bail!(
            "{} has {} MB free but the test writes {} MB; choose a smaller --size or another --dir",
            args.dir.display(),
            free >> 20,
            size >> 20
        );
    }
    let json_out = args.json.as_deref().map(create_output).transpose()?;
    let mut runs = Vec::new();
    let mut status = RunStatus::Completed;
    for i in 0..args.runs {
        match fileio::run_once(&args.dir, size, args.seed ^ u64::from(i)) {
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
            Err(e) if e.is::<crate::interrupt::Interrupted>() => {
                status = RunStatus::Interrupted;
                break;
            }
            Err(e) => {
                status = RunStatus::Failed(format!("{e:#}"));
                break;
            }
        }
    }
    if !args.keep || status != RunStatus::Completed {
        let _ = std::fs::remove_file(args.dir.join(fileio::FILE));
    }
    let summary = (!runs.is_empty()).then(|| fileio::summarize(&runs));
    let measures = fileio::measures(summary.as_ref());
    let record = RunRecord::standalone(
        "fileio",
        status.clone(),
        serde_json::json!({ "dir": args.dir, "size_bytes": size, "runs": runs.len() }),
        measures[0].clone(),
        measures,
        fileio::metrics(&runs),
    );
    if let Some(s) = summary {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(["step", "mean seconds [95% CI]", "MB/s"]);
        t.add_row([
            "write + fsync".to_string(),
            format!("{:.3} +- {:.3}", s.write_s, s.write_ci95_s),
            format!("{:.0}", s.write_mbs),
        ]);
        t.add_row([
            "read".to_string(),
            format!("{:.3} +- {:.3}", s.read_s, s.read_ci95_s),
            format!("{:.0}", s.read_mbs),
        ]);
        println!(
            "fileio: {} MB file in {}, {} runs, page cache dropped before each step\n{t}",
            size >> 20,
            args.dir.display(),
            runs.len()
        );
    }
    if let (Some(mut f), Some(p)) = (json_out, &args.json) {
        serde_json::to_writer_pretty(&mut f, &record)?;
        writeln!(f)?;
        eprintln!("run record written to {}", p.display());
    }
    Ok(match status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::Interrupted => ExitCode::from(130),
        RunStatus::Failed(cause) => {
            eprintln!("error: fileio failed: {cause}");
            ExitCode::FAILURE
        }
    })
}

/// Space available to us on the file system holding `dir`.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path and `s` a zeroed out-parameter statvfs fills.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statvfs(c.as_ptr(), &mut s) } == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
}
