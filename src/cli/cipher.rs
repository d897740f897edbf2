//! `dbvs cipher`: the AES throughput table by buffer size, with AES-NI on, off or both.
//! "Off" runs in a child process whose OpenSSL starts with AES-NI, PCLMULQDQ, VAES and
//! VPCLMULQDQ masked (OPENSSL_ia32cap is read once, at start-up).

use crate::cipher::OPENSSL_NO_AESNI;
use crate::cipher::{self, Algo, Series};
use crate::report::cipher::{self as report, CipherReport};
use crate::sys::create_output;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AesNi {
    On,
    Off,
    Both,
}

#[derive(Args)]
pub struct CipherArgs {
    /// Ciphers to measure (repeatable).
    #[arg(long = "cipher", value_enum, default_values_t = [Algo::Xts])]
    ciphers: Vec<Algo>,
    /// Buffer sizes, comma-separated, from 100KB, 500KB, 1MB, 5MB, 10MB, 50MB, 100MB, 200MB,
    /// 500MB, 1GB [default: all that fit in memory].
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<String>,
    /// With or without AES-NI, or both and the gain.
    #[arg(long, value_enum, default_value_t = AesNi::Both)]
    aesni: AesNi,
    /// Threads: a number, or "all" for one per core (as TrueCrypt's and VeraCrypt's benchmarks,
    /// and seed 000's table).
    #[arg(long, default_value = "all")]
    threads: String,
    /// Runs per measurement; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write an HTML page with the chart and tables to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

fn threads(s: &str) -> Result<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match s {
        "all" => Ok(cores),
        n => match n.parse::<usize>() {
            Ok(n) if (1..=1024).contains(&n) => Ok(n),
            _ => bail!("--threads takes a number from 1 to 1024, or 'all' (this machine has {cores} cores)"),
        },
    }
}

pub fn main(args: CipherArgs) -> Result<ExitCode> {
    let threads = threads(&args.threads)?;
    let wanted = if args.sizes.is_empty() {
        cipher::SIZES.to_vec()
    } else {
        args.sizes.iter().map(|s| cipher::parse_size(s)).collect::<Result<Vec<_>>>()?
    };
    // Use at most half the free memory, so the page cache and other work keep the rest.
    let budget = crate::host::available_memory()? / 2;
    let (sizes, skipped): (Vec<_>, Vec<_>) = wanted.into_iter().partition(|(_, b)| cipher::memory_needed(*b) <= budget);
    if sizes.is_empty() {
        bail!("not enough free memory for any of the buffer sizes; free some memory or choose smaller --sizes");
    }
    let (json_out, html_out) =
        (args.json.as_deref().map(create_output).transpose()?, args.html.as_deref().map(create_output).transpose()?);
    let mut series = Vec::new();
    if args.aesni != AesNi::Off {
        series.extend(cipher::measure_here(&args.ciphers, &sizes, threads, args.runs as usize)?);
    }
    if args.aesni != AesNi::On {
        series.extend(measure_masked(&args, &sizes)?);
    }
    let r = CipherReport {
        status: crate::status::Status::Completed,
        workload: "cipher",
        headline: cipher::throughput(&series),
        measures: vec![cipher::throughput(&series)],
        metrics: cipher::metrics(&series),
        host: crate::host::collect(),
        openssl: openssl::version::version().to_string(),
        threads,
        runs: args.runs as usize,
        series,
        skipped_sizes: skipped.iter().map(|(l, _)| l.to_string()).collect(),
    };
    print(&r);
    if let (Some(mut f), Some(p)) = (json_out, &args.json) {
        serde_json::to_writer_pretty(&mut f, &r)?;
        writeln!(f)?;
        eprintln!("results written to {}", p.display());
    }
    if let (Some(mut f), Some(p)) = (html_out, &args.html) {
        f.write_all(report::html(&r)?.as_bytes())?;
        eprintln!("report written to {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Measures in a child whose OpenSSL has AES-NI masked.
fn measure_masked(args: &CipherArgs, sizes: &[(&str, usize)]) -> Result<Vec<Series>> {
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("off.json");
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["cipher", "--aesni", "on", "--threads", &args.threads, "--runs", &args.runs.to_string()]);
    for c in &args.ciphers {
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

fn print(r: &CipherReport) {
    println!(
        "{} ({} cores, AES-NI {}); {}; {} thread(s); median of {} runs; MB = 10^6 bytes",
        r.host.cpu_model,
        r.host.cores,
        if r.host.aes_ni { "present" } else { "absent" },
        r.openssl,
        r.threads,
        r.runs
    );
    for c in report::ciphers(r) {
        for of in report::Of::all(r) {
            let (header, rows) = report::rows(r, &c, of);
            let mut t = Table::new();
            t.load_preset(UTF8_FULL_CONDENSED);
            t.set_header(header);
            for row in rows {
                t.add_row(row);
            }
            println!("{}\n{t}", of.title(&c, r.runs));
        }
    }
    if !r.skipped_sizes.is_empty() {
        println!("left out for lack of memory: {}", r.skipped_sizes.join(", "));
    }
}
