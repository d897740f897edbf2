//! `dbvs cipher`: the AES throughput table by buffer size, with AES-NI on, off or both.
//! "Off" runs in a child process whose OpenSSL starts with AES-NI, PCLMULQDQ, VAES and
//! VPCLMULQDQ masked (OPENSSL_ia32cap is read once, at start-up).

use crate::cipher::table::Settings;
use crate::cipher::{self, Algo};
use crate::report::cipher::{self as report, CipherReport};
use crate::sys::create_output;
use anyhow::{bail, Result};
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
    let wanted = args.sizes.iter().map(|s| cipher::parse_size(s)).collect::<Result<Vec<_>>>()?;
    let (json_out, html_out) =
        (args.json.as_deref().map(create_output).transpose()?, args.html.as_deref().map(create_output).transpose()?);
    let aesni = Settings { on: args.aesni != AesNi::Off, off: args.aesni != AesNi::On };
    let table = cipher::table::measure(&args.ciphers, &wanted, threads, args.runs as usize, aesni)?;
    let r = CipherReport::new(table, crate::host::collect());
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
