//! `dbvs study FILE`: run a study and write its reports.

use crate::status::{Status, VariantStatus};
use crate::study::{self, design::Interleave, Options};
use crate::sys::units::parse_duration;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct StudyArgs {
    /// The study file (TOML): variants (the first is the baseline), workload, blocks, budget, CI target.
    file: PathBuf,
    /// Override the study file's time budget for measured blocks (e.g. 10m).
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    budget: Option<Duration>,
    /// Directory for the reports (report.html, .md, .csv, .json), run records and logs
    /// [default: results/<study name>-<study id>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Take up study ID (aborted, interrupted or failed) again with the same study file: its
    /// stored blocks count, and it goes on from the first incomplete one. With --budget 0 it
    /// only writes the report of the blocks it has.
    #[arg(long, value_name = "ID")]
    resume: Option<i64>,
    /// Serve the study's progress for Prometheus at http://ADDR/metrics (OpenMetrics text:
    /// blocks done, each comparison's CI half-width, each variant's means so far), e.g.
    /// 127.0.0.1:9100. Off unless given.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<String>,
    /// Run the file's quick form: its [quick] table and each workload's quick = { ... }
    /// replace those keys (the seed studies' minutes-long form).
    #[arg(long)]
    quick: bool,
    /// Override the study file's `interleave`: a slice length from 10ms to 10m (e.g. 50ms),
    /// or "off" to run each variant alone in each block.
    #[arg(long, value_name = "SLICE|off", conflicts_with = "resume")]
    interleave: Option<Interleave>,
    /// Then run the study again with each variant alone in each block (as a user running each
    /// configuration by itself would), for the same budget, into OUT/alone, and check that
    /// every ratio agrees with the first study's within their joint interval (OUT/validate.md).
    /// With --interleave SLICE, the study at that slice length is the one checked.
    #[arg(long, conflicts_with = "resume")]
    validate: bool,
}

pub fn main(args: StudyArgs) -> Result<ExitCode> {
    if args.validate && args.interleave == Some(Interleave::Off) {
        anyhow::bail!(
            "--validate checks an interleaved study against one with each variant alone; drop --interleave off"
        );
    }
    let outcome = run(&args, args.interleave, args.out.clone())?;
    print_outcome(&outcome);
    let code = exit_code(&outcome);
    if !args.validate || outcome.report.status != Status::Completed {
        return Ok(code);
    }
    println!("validating: the same study with each variant alone in each block");
    let alone = run(&args, Some(Interleave::Off), Some(outcome.out_dir.join("alone")))?;
    print_outcome(&alone);
    if alone.report.status == Status::Completed {
        super::validate::report(&outcome, &alone)?;
    }
    Ok(exit_code(&alone))
}

fn run(args: &StudyArgs, interleave: Option<Interleave>, out: Option<PathBuf>) -> Result<study::Outcome> {
    study::run(
        &args.file,
        Options {
            budget: args.budget,
            out,
            store: crate::store::default_path(),
            resume: args.resume,
            metrics_addr: args.metrics_addr.clone(),
            quick: args.quick,
            interleave,
        },
    )
}

/// The study's verdicts, noise, controls, other measures and canary scan, on stdout.
fn print_outcome(outcome: &study::Outcome) {
    let r = &outcome.report;
    println!("study {} '{}': {} ({})", r.study_id, r.name, r.status, r.stop_reason);
    for v in &r.variants {
        let mean = v.summary.as_ref().map_or(String::new(), |s| {
            use crate::report::number;
            format!("{} {} [{}, {}]", r.metric.to_uppercase(), number(s.mean), number(s.ci.0), number(s.ci.1))
        });
        let what = match (v.status, &v.reason) {
            (VariantStatus::Ran, _) => crate::report::verdict_text(r, &v.info.name),
            (s, Some(why)) => format!("{s}: {why}"),
            (s, None) => s.to_string(),
        };
        println!("  {:<12} {mean:<28} {what}", v.info.name);
    }
    for warning in r.regime.iter().filter_map(crate::report::Regime::warning) {
        println!("  warning: {warning}");
    }
    for t in &r.turn_starts {
        println!("  turn starts: {}", t.text());
        if let Some(warning) = t.warning(r.rules.threshold) {
            println!("  warning: {warning}");
        }
    }
    // What the noise allows, beside every headline verdict.
    for c in &r.comparisons {
        println!(
            "  {:<12} noise: {}",
            c.variant,
            crate::report::noise(&c.estimate, r.targets().of(&c.variant, None), r.seconds_per_block)
        );
    }
    for m in &r.measures {
        for c in &m.controls {
            let e = &c.estimate;
            let pct = |x: f64| format!("{:+.1}%", 100.0 * (x - 1.0));
            let against = c.against.as_deref().unwrap_or_default();
            let what = if r.measures.len() > 1 { format!("{} ", m.measure.key()) } else { String::new() };
            println!(
                "  {what}{} vs its control {against}: {} [{}, {}]  {}",
                c.variant,
                pct(e.ratio),
                pct(e.ci.0),
                pct(e.ci.1),
                c.verdict_text()
            );
        }
    }
    if r.measures.len() > 1 {
        for m in &r.measures {
            for c in &m.comparisons {
                let e = &c.estimate;
                let pct = |x: f64| format!("{:+.1}%", 100.0 * (x - 1.0));
                println!(
                    "  {:<28} {:<10} {} [{}, {}]  {}",
                    m.measure.key(),
                    c.variant,
                    pct(e.ratio),
                    pct(e.ci.0),
                    pct(e.ci.1),
                    c.verdict_text()
                );
            }
        }
    }
    for c in &r.canary {
        println!(
            "  canary {:<12} {} hits in {} bytes at rest: {}",
            c.variant,
            c.hits,
            c.bytes_scanned,
            if c.ok { "ok" } else { "FAILED" }
        );
    }
    println!("report: {}", outcome.out_dir.join("report.html").display());
}

fn exit_code(outcome: &study::Outcome) -> ExitCode {
    let r = &outcome.report;
    match r.status {
        Status::Completed => ExitCode::SUCCESS,
        _ if outcome.report_only => {
            eprintln!(
                "study {} stays {}: resume it with --resume {} to run more blocks",
                r.study_id, r.status, r.study_id
            );
            ExitCode::SUCCESS
        }
        Status::Interrupted => ExitCode::from(130),
        _ => {
            eprintln!("error: study failed: {}", r.cause.as_deref().unwrap_or("see the report"));
            ExitCode::FAILURE
        }
    }
}
